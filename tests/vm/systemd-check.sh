#!/usr/bin/env bash
# deploy/systemd's units under a real systemd (PID 1 of the VM that
# tests/vm/run.sh --systemd boots; tests/vm/systemd-boot.sh installed the
# units, lowprof.conf and the binaries as shipped). Started with systemctl,
# whole host, with a busy program of known call chain running as a service
# of its own:
#   - systemd-sysusers made the user lowprof at boot;
#   - the privilege split in /proc: the collector root with CAP_SYS_PTRACE
#     and CAP_DAC_READ_SEARCH alone (effective, permitted, bounding), the
#     symbolizer and its spool writer the user lowprof with no capability,
#     no_new_privs, and a seccomp filter of their own on top of the unit's
#     (more filters than the same unit running a plain program has);
#   - systemctl restart of the collector: the symbolizer stays the same
#     process, and its windows have the chain again
#   - systemctl stop, some seconds into a window: both exit 0 and nothing
#     of theirs is left (processes, cgroups, /run/lowprof, BPF programs);
#   - the collector with --shards 2 (a drop-in) and lowprof-symbolizer@0 and
#     @1: both shards write their windows, the workload's samples in one;
#   - the windows in /var/lib/lowprof/spool: two or more written while it
#     ran and the partial last one, numbered without gap, the user's, whole
#     gzip'd pprof that go tool pprof reads, 10 s each but the first and
#     the last, each with the chain and the workload's pid.
source "$(dirname "$0")/../e2e/lib.sh"
require_root

SPOOL=/var/lib/lowprof/spool
UNITS="lowprof-collector.service lowprof-symbolizer@0.service"
# the file of a unit: a template's for an instance
ufile() { sed 's/@[^.]*\./@./' <<<"$1"; }
export HOME=$TMP
# go tool pprof's own binary: the go command around it costs seconds under emulation
PPROF=$(go env GOTOOLDIR 2>/dev/null)/pprof
[[ -x $PPROF ]] || PPROF="go tool pprof"
prop() { systemctl show -p "$2" --value "$1"; } # prop UNIT PROPERTY
st() { awk -v k="$2:" '$1 == k { $1 = ""; sub(/^ /, ""); print }' "/proc/$1/status"; } # st PID FIELD
windows() { ls "$SPOOL" 2>/dev/null | grep -E '^cpu-[0-9]{8}T[0-9]{6}Z-[0-9]{6}\.pb\.gz$' | sort -t- -k3; }
journal() {
	echo "--- journal of the lowprof units"
	journalctl -b --no-pager -o short-monotonic -u lowprof-collector -u 'lowprof-symbolizer@*' \
		-u lowprof-exporter | tail -n 40
}

check "PID 1 is systemd" test "$(cat /proc/1/comm)" = systemd
echo "systemd $(systemctl --version | head -1 | cut -d' ' -f2), state $(systemctl is-system-running)," \
	"kernel.perf_event_paranoid $(cat /proc/sys/kernel/perf_event_paranoid)," \
	"kernel.kptr_restrict $(cat /proc/sys/kernel/kptr_restrict)"
failed=$(systemctl list-units --failed --plain --no-legend | awk '{print $1}' | tr '\n' ' ')
[[ -z "$failed" ]] || echo "units that failed at boot (not ours to judge): $failed"
for u in $UNITS; do
	check "$u is deploy/systemd's, unchanged, with no drop-in" \
		bash -c "cmp -s /etc/systemd/system/$(ufile $u) '$LOWPROF_SRC/deploy/systemd/$(ufile $u)' &&
			test -z \"\$(systemctl show -p DropInPaths --value $u)\""
done

# ---- the user, from /etc/sysusers.d/lowprof.conf at this boot
IFS=: read -r _ _ LUID LGID _ home shell < <(getent passwd lowprof) || true
check "systemd-sysusers made lowprof at boot: system uid ${LUID:-none}, no home, no shell" \
	test "${LUID:-1000}" -lt 1000 -a "$home" = /nonexistent -a "$shell" = /usr/sbin/nologin
check "  systemd-sysusers.service ran" test "$(prop systemd-sysusers.service Result)" = success -a \
	"$(prop systemd-sysusers.service ConditionResult)" = yes

# ---- what each unit alone gives a process: a copy of it that runs grep
# (before lowprof starts: the copies share its directories)
# probe UNIT: /proc/self/status of a process made with UNIT's settings (cat
# in place of its program)
probe() {
	sed -e 's|^ExecStart=.*|ExecStart=/bin/cat /proc/self/status|' -e 's/^Type=.*/Type=oneshot/' \
		-e 's/^Restart=.*/Restart=no/' -e '/^RuntimeDirectory/d' -e '/^Wants=/d' \
		-e 's|^\[Service\]|&\nStandardOutput=file:/run/lpvm-probe.out|' \
		"/etc/systemd/system/$1" >/run/systemd/system/lpvm-probe.service
	rm -f /run/lpvm-probe.out
	systemctl daemon-reload
	systemctl start lpvm-probe.service
	cat /run/lpvm-probe.out 2>/dev/null
	rm -f /run/systemd/system/lpvm-probe.service
	systemctl daemon-reload
}
caps() { capsh --decode="0x$1" | sed 's/.*=//; s/,/ /g'; } # caps HEX: their names
# the bounding set systemd gives the collector is the one its unit names:
# no other setting of the unit takes one away (ProtectKernelLogs= takes
# CAP_SYSLOG, ProtectClock= CAP_SYS_TIME...)
P=$(probe lowprof-collector.service)
got=$(caps "$(awk '$1 == "CapBnd:" {print $2}' <<<"$P")")
want=$(sed -n 's/^CapabilityBoundingSet=//p' /etc/systemd/system/lowprof-collector.service | tr 'A-Z' 'a-z')
check "the collector's unit gives it the bounding set it names: '$got'" \
	test "$(tr ' ' '\n' <<<"$got" | sort | xargs)" = "$(tr ' ' '\n' <<<"$want" | sort | xargs)"
# the filters systemd itself puts on a process of the symbolizer's unit
# (SystemCallFilter=, SystemCallArchitectures=, MemoryDenyWriteExecute=...)
P=$(probe lowprof-symbolizer@.service)
UNITF=$(awk '$1 == "Seccomp_filters:" {print $2}' <<<"$P")
check "the symbolizer's unit alone puts a process under ${UNITF:-no} seccomp filters" \
	bash -c "grep -q '^Seccomp:[[:space:]]*2$' <<<\"\$1\" && test '${UNITF:-0}' -gt 0" _ "$P"

# ---- a busy program with a known call chain, a service of its own
systemd-run --quiet --unit=lpvm-chain --property=Type=exec "$WL/chain-fp" 3600
WPID=$(prop lpvm-chain.service MainPID)
check "the chain workload runs (pid $WPID)" test "${WPID:-0}" -gt 0
t0=$(cut -d' ' -f1 /proc/uptime)
systemctl start $UNITS
rc=$?
check "systemctl start $UNITS (exit $rc)" test "$rc" = 0

# ---- two windows
wait_s=$(scaled 45)
end=$((SECONDS + wait_s))
while ((SECONDS < end)); do
	[[ $(windows | wc -l) -ge 2 ]] && break
	for u in $UNITS; do [[ $(prop $u ActiveState) == active ]] || break 2; done
	sleep 0.5
done
mapfile -t WIN < <(windows)
echo "after $(awk -v a="$t0" -v b="$(cut -d' ' -f1 /proc/uptime)" 'BEGIN { printf "%.0f", b - a }') s: ${#WIN[@]} windows"
check "two windows in $SPOOL within $wait_s s (got ${#WIN[@]})" test "${#WIN[@]}" -ge 2
for u in $UNITS; do
	check "$u is active (restarts: $(prop $u NRestarts))" \
		test "$(prop $u ActiveState)" = active -a "$(prop $u NRestarts)" = 0
done

# ---- the privilege split, while they run
COL=$(prop lowprof-collector.service MainPID)
SYM=$(prop lowprof-symbolizer@0.service MainPID)
WR=0
[[ ${SYM:-0} -gt 0 ]] && WR=$(pgrep -P "$SYM" | head -1)
[[ -n "$WR" ]] || WR=0
echo "collector $COL, symbolizer $SYM, its spool writer $WR"
for p in $COL $SYM $WR; do
	[[ -r /proc/$p/status ]] && grep -E '^(Name|Uid|Gid|Groups|Cap[A-Za-z]+|NoNewPrivs|Seccomp[_a-z]*):' /proc/$p/status | tr '\n\t' '  ' && echo
done
if [[ $COL -gt 0 && $SYM -gt 0 && $WR -gt 0 ]]; then
	check "collector runs as root (Uid, Gid: 0)" \
		test "$(st "$COL" Uid)" = "0 0 0 0" -a "$(st "$COL" Gid)" = "0 0 0 0"
	# CAP_SYS_PTRACE is bit 19, CAP_DAC_READ_SEARCH bit 2, and
	# CAP_CHECKPOINT_RESTORE bit 40 where the kernel knows it (5.9+)
	keep=0000000000080004
	[[ $(cat /proc/sys/kernel/cap_last_cap) -ge 40 ]] && keep=0000010000080004
	for set in CapEff CapPrm CapBnd; do
		check "collector $set is CAP_SYS_PTRACE + CAP_DAC_READ_SEARCH (+ CAP_CHECKPOINT_RESTORE) only ($(st "$COL" $set))" \
			test "$(st "$COL" $set)" = "$keep"
	done
	check "collector CapInh and CapAmb are 0" \
		test "$(st "$COL" CapInh)" = 0000000000000000 -a "$(st "$COL" CapAmb)" = 0000000000000000
	check "collector has no_new_privs" test "$(st "$COL" NoNewPrivs)" = 1
	for p in "symbolizer $SYM" "spool writer $WR"; do
		pid=${p##* }
		what=${p% *}
		check "$what runs as lowprof (Uid $(st "$pid" Uid), Gid $(st "$pid" Gid))" \
			test "$(st "$pid" Uid)" = "$LUID $LUID $LUID $LUID" -a "$(st "$pid" Gid)" = "$LGID $LGID $LGID $LGID"
		check "$what has no supplementary group but its own ($(st "$pid" Groups))" \
			bash -c "[[ '$(st "$pid" Groups)' == '' || '$(st "$pid" Groups)' == '$LGID' ]]"
		for set in CapEff CapPrm CapBnd CapInh CapAmb; do
			check "$what $set is 0" test "$(st "$pid" $set)" = 0000000000000000
		done
		check "$what has no_new_privs" test "$(st "$pid" NoNewPrivs)" = 1
		check "$what runs under seccomp filters (Seccomp: 2)" test "$(st "$pid" Seccomp)" = 2
		n=$(st "$pid" Seccomp_filters)
		check "$what has a filter of its own: $n filters, the unit's alone ${UNITF:-?}" \
			test "${n:-0}" -gt "${UNITF:-99}"
	done
	check "the spool writer is the symbolizer's child (comm lowprof-symboli)" \
		test "$(cat /proc/$WR/comm)" = lowprof-symboli
else
	fail "no collector ($COL), symbolizer ($SYM) or spool writer ($WR) to look at"
fi

# ---- the collector restarted: the symbolizer stays, its windows go on
n0=$(windows | wc -l)
systemctl restart lowprof-collector.service
rc=$?
check "systemctl restart lowprof-collector.service (exit $rc)" test "$rc" = 0
for ((i = 0; i < 90; i++)); do
	[[ $(windows | wc -l) -ge $((n0 + 2)) ]] && break
	sleep 2
done
check "the symbolizer is the same process ($SYM) after the collector's restart" \
	test "$(prop lowprof-symbolizer@0.service MainPID)" = "$SYM"
check "  and systemd did not restart it ($(prop lowprof-symbolizer@0.service NRestarts))" \
	test "$(prop lowprof-symbolizer@0.service NRestarts)" = 0
said=$(for f in $(windows); do go tool pprof -comments "$SPOOL/$f" 2>/dev/null; done |
	grep -c 'collector started again')
check "one window says the collector started again (got $said)" test "$said" = 1
last=$(windows | tail -1)
check "the newest window has the chain again ($last)" \
	bash -c "go tool pprof -traces '$SPOOL/$last' 2>/dev/null | grep -qw chain_leaf"

# ---- systemctl stop: exit 0, nothing left, and the partial last window
# (stopped some seconds into a window, so that the last one has samples)
for ((i = 0; i < 60; i++)); do
	last=$(windows | tail -1)
	age=$(($(date +%s) - $(stat -c %Y "$SPOOL/$last" 2>/dev/null || echo 0)))
	[[ $age -ge 4 && $age -le 7 ]] && break
	sleep 0.5
done
mapfile -t WIN < <(windows)
echo "stopping $age s after window ${last:-none} was written"
systemctl stop $UNITS
rc=$?
check "systemctl stop $UNITS (exit $rc)" test "$rc" = 0
for u in $UNITS; do
	check "$u exited 0 ($(prop $u Result), code $(prop $u ExecMainCode), status $(prop $u ExecMainStatus))" \
		test "$(prop $u Result)" = success -a "$(prop $u ExecMainCode)" = 1 -a "$(prop $u ExecMainStatus)" = 0
done

# ---- the windows: those closed while it ran, then the last
check "the spool is lowprof's, 0700 ($(stat -c '%U %a' "$SPOOL"))" \
	test "$(stat -c '%U %a' "$SPOOL")" = "lowprof 700"
# chain: 0 if a sample's stack in TRACES is the workload's chain, leaf
# first (kernel frames may sit above it: an interrupt taken there)
chain() {
	awk '
		/^-+\+-+$/ { if (s ~ / chain_leaf chain_three chain_two chain_one main( |$)/) f = 1; s = ""; next }
		/^ *[a-z_]+: / { next }
		NF { s = s " " $NF }
		END { exit !f }' <<<"$TRACES"
}
# pprof_check FILE INDEX: a whole window in the spool; its duration (s) in
# DUR, its sample count in SAMPLES, its stacks (pprof -traces) in TRACES
pprof_check() {
	local f=$SPOOL/$1 i=$2 raw
	check "window $i ($1) is lowprof's, 0600" test "$(stat -c '%U %a' "$f")" = "lowprof 600"
	check "window $i is whole gzip" gzip -t "$f"
	# (-top's header: -raw cuts the duration to 4 characters, unit and all)
	raw=$($PPROF -top -nodecount=1 "$f" 2>&1)
	check "go tool pprof reads window $i" grep -Eq '^Duration: .*, Total samples = [0-9]+' <<<"$raw"
	check "window $i's comments name it" \
		bash -c "$PPROF -comments '$f' 2>/dev/null | grep -qx 'lowprof window $((10#${1: -12:6}))'"
	# (a Go duration: 10s, 1.43s, 350.01ms, 1m0s)
	DUR=$(awk '$1 == "Duration:" { d = $2; sub(/,$/, "", d); t = 0
		while (match(d, /^[0-9.]+(h|m|s|ms|us|µs|ns)/)) {
			n = substr(d, 1, RLENGTH); d = substr(d, RLENGTH + 1); u = n; sub(/^[0-9.]+/, "", u)
			t += n * (u == "h" ? 3600 : u == "m" ? 60 : u == "s" ? 1 : u == "ms" ? 1e-3 : u == "ns" ? 1e-9 : 1e-6)
		}
		printf "%.3f", t; exit }' <<<"$raw")
	TRACES=$($PPROF -traces "$f" 2>/dev/null)
	SAMPLES=$(sed -n 's/^Duration: .*, Total samples = \([0-9]*\).*/\1/p' <<<"$raw")
}
for i in "${!WIN[@]}"; do
	pprof_check "${WIN[$i]}" "$i"
	# the first window starts with the first sample, not on the clock
	((i > 0)) && check "window $i lasts 10 s (${DUR:-?} s)" awk -v d="${DUR:-0}" 'BEGIN { exit !(d > 9.99 && d < 10.01) }'
	check "window $i (${SAMPLES:-no} samples) holds the chain main;chain_one;chain_two;chain_three;chain_leaf" chain
	check "window $i's samples carry the workload's pid" grep -Eq "pid: +$WPID\$" <<<"$TRACES"
done
echo "--- go tool pprof -top ${WIN[-1]:-}"
[[ ${#WIN[@]} -gt 0 ]] && $PPROF -top "$SPOOL/${WIN[-1]}" 2>&1 | sed -n '1,12p'

mapfile -t AFTER < <(windows)
new=$((${#AFTER[@]} - ${#WIN[@]}))
check "the symbolizer wrote the partial last window when stopped ($new new)" test "$new" -ge 1
if [[ $new -ge 1 ]]; then
	pprof_check "${AFTER[-1]}" "$((${#AFTER[@]} - 1))"
	check "the last window is partial (${DUR:-?} s)" awk -v d="${DUR:-10}" 'BEGIN { exit !(d > 0 && d < 9.99) }'
	check "the last window has samples (${SAMPLES:-none}) and the chain among them" \
		eval '[[ ${SAMPLES:-0} -gt 0 ]] && chain'
fi
check "windows are numbered without gap ($(windows | sed 's/.*-\([0-9]*\)\.pb\.gz/\1/' | tr '\n' ' '))" \
	test "$(windows | sed 's/.*-\([0-9]*\)\.pb\.gz/\1/' | awk '$1 != NR - 1 {print}')" = ""
check "no temporary file in the spool (the metrics file aside)" \
	test "$(ls -A "$SPOOL" | grep -vx metrics.prom | wc -l)" = "$(windows | wc -l)"

# ---- lowprof-exporter.service: the spool's windows to a receiver on 127.0.0.1
mapfile -t WIN < <(windows)
RECV=/run/lpvm-recv
python3 "$LOWPROF_SRC/tests/e2e/receiver.py" --out "$RECV" --port-file /run/lpvm-recv.port &
RPID=$!
for ((i = 0; i < 100; i++)); do [[ -s /run/lpvm-recv.port ]] && break; sleep 0.1; done
mkdir -p /etc/lowprof
echo "LOWPROF_EXPORTER_ARGS=--pyroscope http://127.0.0.1:$(cat /run/lpvm-recv.port) --metrics 127.0.0.1:9464" \
	>/etc/lowprof/exporter.env
check "lowprof-exporter.service is deploy/systemd's" \
	cmp -s /etc/systemd/system/lowprof-exporter.service "$LOWPROF_SRC/deploy/systemd/lowprof-exporter.service"
systemctl start lowprof-exporter.service
rc=$?
check "systemctl start lowprof-exporter.service (exit $rc)" test "$rc" = 0
for ((i = 0; i < $(scaled 60) * 2; i++)); do
	[[ $(ls "$RECV" 2>/dev/null | grep -c '\.body$') -ge ${#WIN[@]} ]] && break
	sleep 0.5
done
got=$(ls "$RECV" 2>/dev/null | grep -c '\.body$')
check "every window in the spool was pushed (${got} of ${#WIN[@]})" test "$got" = "${#WIN[@]}"
check "and removed from the spool once delivered ($(windows | wc -l) left)" test "$(windows | wc -l)" = 0
EXPID=$(prop lowprof-exporter.service MainPID)
if [[ ${EXPID:-0} -gt 0 ]]; then
	grep -E '^(Name|Uid|Cap[A-Za-z]+|NoNewPrivs|Seccomp[_a-z]*):' /proc/$EXPID/status | tr '\n\t' '  '
	echo
	check "the exporter runs as lowprof with no capability, no_new_privs, under seccomp" \
		test "$(st "$EXPID" Uid)" = "$LUID $LUID $LUID $LUID" -a "$(st "$EXPID" CapEff)" = 0000000000000000 \
		-a "$(st "$EXPID" CapBnd)" = 0000000000000000 -a "$(st "$EXPID" NoNewPrivs)" = 1 \
		-a "$(st "$EXPID" Seccomp)" = 2
	check "  with a filter of its own beside the unit's ($(st "$EXPID" Seccomp_filters))" \
		test "$(st "$EXPID" Seccomp_filters)" -gt 1
	M=$(curl -s http://127.0.0.1:9464/metrics)
	check "its /metrics counts the windows sent and has the symbolizer's" \
		bash -c "grep -qx 'lowprof_exporter_windows_sent_total{destination=\"pyroscope\"} ${#WIN[@]}' <<<\"\$1\" &&
			grep -q '^lowprof_symbolizer_samples_total ' <<<\"\$1\"" _ "$M"
else
	fail "lowprof-exporter.service has no main process"
fi
# (the whole host: one series per executable; the workload's is among them)
python3 "$LOWPROF_SRC/tests/e2e/pushsplit.py" "$RECV/0002.body" /run/lpvm-push >/run/lpvm-push.series
cat /run/lpvm-push.series
check "the second push has the workload's series with its chain" \
	bash -c "grep -q 'service_name=chain-fp' /run/lpvm-push.series &&
		for f in /run/lpvm-push-*.pb.gz; do $PPROF -traces \$f 2>/dev/null; done | grep -qw chain_leaf"
systemctl stop lowprof-exporter.service
check "lowprof-exporter.service stops and exited 0 ($(prop lowprof-exporter.service Result))" \
	test "$(prop lowprof-exporter.service Result)" = success -a "$(prop lowprof-exporter.service ExecMainStatus)" = 0
kill "$RPID" 2>/dev/null
wait "$RPID" 2>/dev/null

# ---- two symbolizers, as lowprof-symbolizer@.service's comment says: the
# collector with --shards 2 (a drop-in), instances 0 and 1 of the template
shard_windows() { # shard_windows K: shard K of 2's windows
	# (a shard's window number is the clock's multiple of the window)
	ls "$SPOOL" 2>/dev/null | grep -E "^cpu-[0-9]{8}T[0-9]{6}Z-[0-9]+\.s$1of2\.pb\.gz\$"
}
DROP=/run/systemd/system/lowprof-collector.service.d
mkdir -p "$DROP"
{
	echo '[Service]'
	echo 'ExecStart='
	sed -n 's/^ExecStart=.*/& --shards 2/p' /etc/systemd/system/lowprof-collector.service
} >"$DROP/shards.conf"
systemctl daemon-reload
SH_UNITS="lowprof-collector.service lowprof-symbolizer@0.service lowprof-symbolizer@1.service"
systemctl start $SH_UNITS
rc=$?
check "systemctl start the collector with --shards 2 and symbolizers @0 and @1 (exit $rc)" test "$rc" = 0
# the workload's samples are all in its shard's windows (lp_shard_of its
# pid): its pid label in one shard's windows, never in the other's. Not
# from the first window on: each ring (2 MiB) first takes the kernel symbol
# snapshot (~4.4 MiB here), and under emulation samples are dropped (and
# counted) until the symbolizer has drained it
pid_in() { # pid_in K: the number of shard K's windows with the workload's samples
	local f
	for f in $(shard_windows "$1"); do
		$PPROF -traces "$SPOOL/$f" 2>/dev/null | grep -Eq "pid: +$WPID\$" && echo "$f"
	done | wc -l
}
t1=$SECONDS
c1=0 c2=0
while ((SECONDS - t1 < $(scaled 60))); do
	if [[ $(shard_windows 1 | wc -l) -ge 2 && $(shard_windows 2 | wc -l) -ge 2 ]]; then
		c1=$(pid_in 1)
		c2=$(pid_in 2)
		((c1 + c2 > 0)) && break
	fi
	sleep 2
done
echo "after $((SECONDS - t1)) s: $(shard_windows 1 | wc -l) and $(shard_windows 2 | wc -l) windows"
S0=$(prop lowprof-symbolizer@0.service MainPID)
S1=$(prop lowprof-symbolizer@1.service MainPID)
check "two symbolizer processes ($S0, $S1), both lowprof's" \
	test "${S0:-0}" -gt 0 -a "${S1:-0}" -gt 0 -a "$S0" != "$S1" -a \
	"$(st "${S0:-0}" Uid 2>/dev/null)" = "$LUID $LUID $LUID $LUID" -a "$(st "${S1:-0}" Uid 2>/dev/null)" = "$LUID $LUID $LUID $LUID"
check "shard 1 of 2 wrote two windows or more ($(shard_windows 1 | xargs))" test "$(shard_windows 1 | wc -l)" -ge 2
check "shard 2 of 2 wrote two windows or more ($(shard_windows 2 | xargs))" test "$(shard_windows 2 | wc -l)" -ge 2
check "the workload's samples are in one shard's windows, not the other's ($c1 and $c2 windows)" \
	test "$((c1 > 0 && c2 == 0 || c1 == 0 && c2 > 0))" = 1
for k in 1 2; do
	f=$(shard_windows $k | tail -1)
	echo "--- shard $k's $f"
	$PPROF -top -nodecount=6 "$SPOOL/$f" 2>&1 | sed -n '/flat%/,$p'
done
systemctl stop $SH_UNITS
for u in $SH_UNITS; do
	check "$u exited 0 ($(prop $u Result))" test "$(prop $u Result)" = success
done
rm -rf "$DROP"
systemctl daemon-reload

sleep "$(scaled 1)"
for u in $SH_UNITS; do
	check "$u stays stopped: $(prop $u ActiveState), MainPID $(prop $u MainPID)" \
		test "$(prop $u ActiveState)" = inactive -a "$(prop $u MainPID)" = 0
	check "$u's cgroup is gone" test -z "$(find /sys/fs/cgroup/system.slice -name "$u")"
done
left=$(ps -e -o pid=,comm= | awk '$2 ~ /^lowprof/')
check "no lowprof process left: '$left'" test -z "$left"
check "the ring's runtime directory is gone" test ! -e /run/lowprof
left=$(leftovers)
check "no BPF program of theirs left: '$left'" test -z "$left"
systemctl stop lpvm-chain.service
journal
finish
