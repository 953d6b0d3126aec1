#!/usr/bin/env bash
# lowprof run: windows of profiles in a spool. On a known call chain, with
# 2 s windows: one cpu file per window, numbered without gaps, each whole
# (go tool pprof reads it) with the chain, its window number and duration,
# the windows' samples together those of the run; the partial last window
# written on SIGTERM; a tiny --spool-bytes keeps the newest windows and
# counts the removed ones; a second run on a spool numbers its windows after
# the first's; a spool that is a symlink is refused, so is one another run
# uses, and one the symbolizer cannot write ends the run at once; a
# symbolizer whose spool writer was killed, or that was stopped from
# elsewhere, is started again; a full disk is said once per cause. A window's samples are
# checked against the workload's CPU time in that window (lib.sh: on a
# loaded machine it gets less than 2 s of CPU in 2 s), never the wall time.
source "$(dirname "$0")/lib.sh"
require_root

start_bg "$WL/chain-fp" 600
WPID=$BGPID
sleep 0.3

# --- a run of 9 s, longer where the workload gets little CPU (until it has
# had 1.5 s of it, up to 120 s), stopped with SIGTERM: every window, then
# the partial last one
SP=$TMP/spool
cpu_log "$WPID" "$TMP/cpu.log"
CPULOG=$BGPID
t_start=$EPOCHREALTIME
start_bg "$BIN/lowprof" run --window 2 --spool "$SP" -p "$WPID" >"$TMP/run.out" 2>&1
RUN=$BGPID
wait_log "$TMP/run.out" 'profiling the given processes' || fail "lowprof run never started profiling"
c0=$(cpu_ms "$WPID")
sleep 9
end=$((SECONDS + 120))
while (($(cpu_ms "$WPID") - c0 < 1500 && SECONDS < end)); do sleep 0.2; done
kill -TERM "$RUN"
wait "$RUN"
rc=$?
secs=$(awk -v a="$t_start" -v b="$EPOCHREALTIME" 'BEGIN { printf "%d", b - a + 0.999 }')
kill "$CPULOG"
cat "$TMP/run.out" | tail -5
check "lowprof run exits 0 on SIGTERM (got $rc)" test "$rc" = 0
mapfile -t files < <(ls "$SP" | grep -E '^cpu-[0-9]{8}T[0-9]{6}Z-[0-9]{6}\.pb\.gz$' | sort -t- -k3)
echo "--- spool"; ls -l "$SP"
check "4 to $((secs / 2 + 2)) cpu windows for $secs s of 2 s windows (got ${#files[@]})" \
	test "${#files[@]}" -ge 4 -a "${#files[@]}" -le $((secs / 2 + 2))
check "nothing but cpu windows and the metrics file in the spool (no temporary files)" \
	test "$(ls -A "$SP" | grep -vx metrics.prom | wc -l)" = "${#files[@]}"
check "the symbolizer's metrics file: its user's, 0600, counting the windows written" \
	bash -c "test \"\$(stat -c '%U %a' '$SP/metrics.prom')\" = 'lowprof 600' &&
		grep -qx 'lowprof_spool_windows_written_total ${#files[@]}' '$SP/metrics.prom'"
check "the spool is the symbolizer user's, 0700" \
	test "$(stat -c '%U %a' "$SP")" = "lowprof 700"
# samples_in GOT CPU-MS MAX: enough for CPU-MS (lib.sh), and no more than MAX
samples_in() { enough_samples "$1" "$2" && test "$1" -le "$3"; }
# real_ms RAW: the start of a window (go tool pprof -raw's Time:), in ms
real_ms() { date -d "$(sed -n 's/^Time: \(.*\) UTC$/\1/p' <<<"$1")" +%s%3N 2>/dev/null || echo 0; }
total=0 run_cpu=0
for i in "${!files[@]}"; do
	f=$SP/${files[$i]}
	seq=$(printf '%06d' "$i")
	check "window $i is numbered $seq" test "${files[$i]: -12:6}" = "$seq"
	check "window $i is the symbolizer user's, 0600" test "$(stat -c '%U %a' "$f")" = "lowprof 600"
	raw=$(go tool pprof -raw "$f" 2>&1)
	check "go tool pprof reads window $i" grep -q '^Samples:' <<<"$raw"
	n=$(awk '/^Samples:/ {on = 1; next} on && /^ +[0-9]+ +[0-9]+:/ {s += $1} /^Locations/ {on = 0} END {print s + 0}' <<<"$raw")
	total=$((total + n))
	check "window $i's comments name it" \
		bash -c "go tool pprof -comments '$f' 2>/dev/null | grep -qx 'lowprof window $i'"
	if ((i > 0 && i < ${#files[@]} - 1)); then
		check "window $i lasts 2 s" grep -Eq '^Duration: 2(\.00)?s?$' <<<"$raw"
		traces=$(go tool pprof -traces "$f" 2>/dev/null)
		check "window $i has the chain leaf under chain_one (samples: $n)" \
			bash -c "grep -A4 -w chain_leaf <<<'$traces' | grep -qw chain_one"
		t0=$(real_ms "$raw")
		wcpu=$(cpu_within "$TMP/cpu.log" "$t0" $((t0 + 2000)))
		run_cpu=$((run_cpu + wcpu))
		check "window $i has the samples of the workload's CPU in it ($n for at least $wcpu ms: at least $(samples_floor "$wcpu"); one thread's 2 s at 99 Hz at most: <= 250)" \
			samples_in "$n" "$wcpu" 250
		check "window $i's samples carry the pid" grep -Eq "pid: +$WPID" <<<"$traces"
	fi
done
# the whole windows hold the samples of the workload's CPU in them; all
# the windows together no more than the run's wall time at 99 Hz of one thread
check "the windows hold the run's samples (got $total; the whole windows' CPU time, $run_cpu ms, takes at least $(samples_floor "$run_cpu"); <= $((secs * 99)))" \
	samples_in "$total" "$run_cpu" $((secs * 99))
check "the workload had CPU time in the whole windows to check against ($run_cpu ms)" \
	test "$run_cpu" -ge 500

# --- run and record side by side for 30 s on the same workload: the windows
# together are the record's profile, within sampling noise
SPC=$TMP/spool-cmp
start_bg "$BIN/lowprof" record -p "$WPID" -d 30 -o "$TMP/cmp-rec" >"$TMP/cmp-rec.out" 2>&1
REC=$BGPID
"$BIN/lowprof" run --window 5 --spool "$SPC" -p "$WPID" -d 30 >"$TMP/cmp-run.out" 2>&1
wait "$REC"
# samples of each function a sample is in, summed over files: "name count"
# lines, and "TOTAL count" (a file's location ids are its own)
fn_counts() {
	for f in "$@"; do
		go tool pprof -raw "$f" 2>/dev/null | awk '
			/^Samples:/ {mode = "s"; next} /^Locations/ {mode = "l"; next} /^Mappings/ {mode = ""}
			mode == "s" && /^ +[0-9]+ +[0-9]+:/ {
				n = $1; total += n
				for (i = 3; i <= NF; i++) if ($i ~ /^[0-9]+$/) cnt[$i] += n }
			mode == "l" && /^ +[0-9]+: / {id = $1; sub(/:$/, "", id); name[id] = $4}
			END {for (id in cnt) byfn[name[id]] += cnt[id]
			     for (fn in byfn) print fn, byfn[fn]; print "TOTAL", total}'
	done | awk '{c[$1] += $2} END {for (k in c) print k, c[k]}'
}
mapfile -t cmpf < <(ls "$SPC"/cpu-*.pb.gz 2>/dev/null)
check "30 s of 5 s windows: 6 or 7 files (got ${#cmpf[@]})" test "${#cmpf[@]}" -ge 6 -a "${#cmpf[@]}" -le 7
fn_counts "${cmpf[@]}" | sort >"$TMP/cmp-run.txt"
fn_counts "$TMP/cmp-rec/cpu.pb.gz" | sort >"$TMP/cmp-rec.txt"
join "$TMP/cmp-run.txt" "$TMP/cmp-rec.txt" | grep -E '^(TOTAL|chain_[a-z]+|main) ' | tee "$TMP/cmp.txt"
for fn in TOTAL chain_one chain_two chain_three chain_leaf; do
	read -r r c < <(awk -v f="$fn" '$1 == f {print $2, $3}' "$TMP/cmp.txt")
	# the two started within ~0.5 s of each other; 3 sigma of a count n is ~3 sqrt(n)
	check "$fn: the windows' samples ($r) match the record's ($c) within sampling noise" 		awk -v r="${r:-0}" -v c="${c:-0}" 'BEGIN {d = r - c; if (d < 0) d = -d; exit !(c > 100 && d <= 0.06 * c + 3 * sqrt(c))}'
done

# --- SIGTERM: the partial last window is written, the run ends cleanly
SP2=$TMP/spool2
t_start=$EPOCHREALTIME
start_bg "$BIN/lowprof" run --window 2 --spool "$SP2" -p "$WPID" >"$TMP/run2.out" 2>&1
RUN=$BGPID
wait_log "$TMP/run2.out" 'profiling the given processes' || fail "lowprof run never started profiling"
sleep 3
# the spool's writer: the symbolizer's child, unprivileged, holding nothing else
SYM=$(desc_named "$RUN" lowprof-symboli)
WR=$([[ -n "$SYM" ]] && desc_named "$SYM" lowprof-symboli)
if [[ -n "$WR" ]]; then
	check "the spool writer runs as the symbolizer's user" \
		test "$(awk '/^Uid:/ {print $2}' /proc/$WR/status)" = "$(id -u lowprof)"
	check "the spool writer has no capabilities" \
		grep -q '^CapEff:[[:space:]]*0000000000000000$' /proc/$WR/status
	check "the spool writer has no_new_privs" grep -q '^NoNewPrivs:[[:space:]]*1$' /proc/$WR/status
	check "the spool writer runs under a seccomp filter (Seccomp: 2)" \
		grep -q '^Seccomp:[[:space:]]*2$' /proc/$WR/status
	# (and, while it writes a window, that window's file in the spool)
	fds=$(for f in /proc/$WR/fd/*; do readlink "$f"; done | grep -vc "^$SP2/")
	check "the spool writer holds stdio, its socket, the memory file and the spool (got $fds fds)" \
		test "$fds" = 6
else
	fail "no spool writer below the symbolizer ($SYM) of lowprof run ($RUN)"
fi
sleep 2
t_kill=$((${EPOCHREALTIME/./} / 1000))
kill -TERM "$RUN"
wait "$RUN"
rc=$?
# the run's windows, by the rule: whole ones of 2 s while it ran, then the
# partial last one written on SIGTERM; no more than the wall time from the
# command to its end holds (however long its start-up took here)
secs=$(awk -v a="$t_start" -v b="$EPOCHREALTIME" 'BEGIN { printf "%d", b - a + 0.999 }')
check "lowprof run stops on SIGTERM with 0 (got $rc)" test "$rc" = 0
mapfile -t files2 < <(ls "$SP2" | grep '^cpu-' | sort -t- -k3)
n2=${#files2[@]}
# (-top's header: -raw cuts the duration to 4 characters)
durs=$(for f in "${files2[@]}"; do
	go tool pprof -top -nodecount=1 "$SP2/$f" 2>/dev/null | sed -n 's/^Duration: \([^,]*\),.*/\1/p'; done | tr '\n' ' ')
echo "    $n2 windows in the $secs s from the command to its end, lasting: $durs"
check "after 5 s or more of 2 s windows, whole ones and the partial last: $n2 in $secs s (2 to $((secs / 2 + 1)))" \
	test "$n2" -ge 2 -a "$n2" -le $((secs / 2 + 1))
# (Go durations: 2s, 1.43s, 350.01ms)
check "no window lasts more than 2 s, the last one neither ($durs)" \
	awk -v d="$durs" 'BEGIN { n = split(d, a, " "); for (i = 1; i <= n; i++) {
		v = a[i]; s = (v ~ /ms$/) ? v / 1000 : (v ~ /^[0-9.]+s$/) ? v + 0 : 99
		if (s > 2.001) exit 1 } exit !(n > 0) }'
# the last one is the window open at SIGTERM: it began before the kill, at
# most a window and the 2 s a window waits for late samples (symbolizer
# run.c, WINDOW_GRACE_NS) before it
last_ago=$((t_kill - $(real_ms "$(go tool pprof -raw "$SP2/${files2[n2 - 1]}" 2>/dev/null)")))
check "the last window, written on SIGTERM, is the one open then: it began $last_ago ms before the kill (0 to 4000)" \
	test "$last_ago" -ge 0 -a "$last_ago" -le 4000
check "no lowprof process of the run is left" test -z "$(descendants "$RUN")"
# a run on the same spool numbers its windows after the last one there
"$BIN/lowprof" run --window 2 --spool "$SP2" -p "$WPID" -d 2 >/dev/null 2>&1
seqs=$(ls "$SP2" | grep '^cpu-' | sed 's/.*-\([0-9]\{6\}\)\.pb\.gz$/\1/' | sort | tr '\n' ' ')
check "the next run's windows follow the spool's (got $seqs)" \
	test "$(ls "$SP2" | grep '^cpu-' | sed 's/.*-\([0-9]\{6\}\)\.pb\.gz$/\1/' | sort | uniq -d)" = "" -a \
	"$(ls "$SP2" | grep -c '^cpu-')" -gt "$n2"
first_new=$(printf '%06d' "$n2")
check "the first of them is number $first_new" bash -c "ls '$SP2' | grep -q -- '-$first_new.pb.gz'"

# --- a tiny budget keeps the newest windows and counts what it removed
SP3=$TMP/spool3
"$BIN/lowprof" run --window 1 --spool "$SP3" --spool-bytes 2K -p "$WPID" -d 6 >"$TMP/run3.out" 2>&1
bytes=$(du -b --apparent-size -s "$SP3" | awk '{print $1}')
kept=$(ls "$SP3" | grep -c '^cpu-')
removed=$(sed -n 's/.* \([0-9]\+\) removed for the budget.*/\1/p' "$TMP/run3.out")
grep 'spool:' "$TMP/run3.out"
check "with --spool-bytes 2K the spool keeps a few windows (got $kept)" test "$kept" -ge 1 -a "$kept" -le 3
check "the removed windows are counted (got '$removed')" test "${removed:-0}" -ge 3
last=$(ls "$SP3" | grep '^cpu-' | sort -t- -k3 | tail -1)
check "the newest window is kept ($last)" test "${last: -12:6}" -ge 5

# --- a spool that is a symlink is refused
ln -s "$TMP" "$TMP/link"
"$BIN/lowprof" run --spool "$TMP/link" -p "$WPID" -d 1 >"$TMP/run4.out" 2>&1
rc=$?
check "a symlinked spool is refused (exit $rc)" test "$rc" -ne 0
check "and the error says so" grep -q 'symlink' "$TMP/run4.out"

# --- one run at a time on a spool: a second one is refused while the first
# runs (both numbered their windows from the same start, and each one's
# budget removed the other's windows), and may start once it has ended
start_bg "$BIN/lowprof" run --window 1 --spool "$TMP/spool6" -p "$WPID" -d 4 >"$TMP/run6a.out" 2>&1
RUN6=$BGPID
wait_log "$TMP/run6a.out" 'profiling the given processes' || fail "the first run never started profiling"
"$BIN/lowprof" run --window 1 --spool "$TMP/spool6" -p "$WPID" -d 1 >"$TMP/run6b.out" 2>&1
rc=$?
cat "$TMP/run6b.out"
check "a second run on a spool in use is refused with 1 (got $rc)" test "$rc" = 1
check "and the error says the spool is in use" grep -q 'another lowprof run or lowprof-symbolizer is using it' "$TMP/run6b.out"
wait "$RUN6"
rc=$?
n6=$(ls "$TMP/spool6" | grep -c '^cpu-')
check "the first run went on (exit $rc, $n6 windows)" test "$rc" = 0 -a "$n6" -ge 3
"$BIN/lowprof" run --window 1 --spool "$TMP/spool6" -p "$WPID" -d 1 >"$TMP/run6c.out" 2>&1
rc=$?
check "a run after it ended takes the spool (exit $rc)" test "$rc" = 0

# --- a standalone lowprof-symbolizer on a spool takes the same lock: a run
# is refused on its spool, and it is refused on a run's (both wrote the
# same window numbers, each one's budget removing the other's windows)
SD9=$TMP/sock9
mkdir -m 711 "$SD9"
SP9=$TMP/spool9
mkdir -m 700 "$SP9" && chown lowprof: "$SP9"
collector9() {
	start_bg "$BIN/lowprof-collector" --ring "$SD9/ring.sock" --ring-owner lowprof -p "$WPID" >"$TMP/c9.out" 2>&1
	C9=$BGPID
}
collector9
start_bg "$BIN/lowprof-symbolizer" --ring "$SD9/ring.sock" --spool "$SP9" --window 1 --user lowprof \
	--no-cache >"$TMP/s9.out" 2>&1
S9=$BGPID
for _ in $(seq $((100 * TIME_SCALE))); do ls "$SP9" | grep -q '^cpu-' && break; sleep 0.1; done
check "the standalone symbolizer writes windows" bash -c "ls '$SP9' | grep -q '^cpu-'"
"$BIN/lowprof" run --window 1 --spool "$SP9" -p "$WPID" -d 1 >"$TMP/run9a.out" 2>&1
rc=$?
cat "$TMP/run9a.out"
check "a run on a standalone symbolizer's spool is refused with 1 (got $rc)" test "$rc" = 1
check "and the error says the spool is in use" \
	grep -q 'another lowprof run or lowprof-symbolizer is using it' "$TMP/run9a.out"
kill -TERM "$S9" "$C9"
wait "$S9" "$C9"
start_bg "$BIN/lowprof" run --window 1 --spool "$SP9" -p "$WPID" -d "$(scaled 6)" >"$TMP/run9b.out" 2>&1
RUN9=$BGPID
wait_log "$TMP/run9b.out" 'profiling the given processes' || fail "run 9 never started profiling"
collector9
timeout "$(scaled 30)" "$BIN/lowprof-symbolizer" --ring "$SD9/ring.sock" --spool "$SP9" --window 1 \
	--user lowprof --no-cache >"$TMP/s9b.out" 2>&1
rc=$?
cat "$TMP/s9b.out"
check "a standalone symbolizer on a run's spool is refused (exit $rc)" test "$rc" != 0 -a "$rc" != 124
check "and says the spool is in use" \
	grep -q "spool $SP9: another lowprof run or lowprof-symbolizer is writing to it" "$TMP/s9b.out"
kill -TERM "$C9"
wait "$C9"
wait "$RUN9"
rc=$?
check "the run went on to its end (exit $rc)" test "$rc" = 0
n9=$(ls "$SP9" | grep '^cpu-' | sed 's/.*-\([0-9]\{6\}\)\.pb\.gz$/\1/' | sort | uniq -d | wc -l)
check "no window number was written twice" test "$n9" = 0

# --- the symbolizer's spool writer killed: the symbolizer ends (it went on
# for the whole run writing nothing, an error a window) and lowprof run
# starts it again; windows appear again
SP7=$TMP/spool7
start_bg "$BIN/lowprof" run --window 1 --spool "$SP7" -p "$WPID" -d 9 >"$TMP/run7.out" 2>&1
RUN7=$BGPID
wait_log "$TMP/run7.out" 'profiling the given processes' || fail "run 7 never started profiling"
sleep 2
symbolizer_below() { # symbolizer_below PID: the lowprof-symbolizer child of PID
	for p in $(pgrep -P "$1"); do
		[[ "$(readlink "/proc/$p/exe" 2>/dev/null)" == "$BIN/lowprof-symbolizer" ]] && echo "$p"
	done | head -1
}
writer=
for g in $(pgrep -P "$(symbolizer_below "$RUN7")"); do # the writer holds the window memory file
	ls -l /proc/$g/fd 2>/dev/null | grep -q 'memfd:lowprof-window' && writer=$g
done
check "the spool writer found under the run's symbolizer ($writer)" test -n "$writer"
[[ -n $writer ]] && kill -KILL "$writer"
t_kill=$(date +%s)
wait "$RUN7"
grep -E 'writer|again' "$TMP/run7.out"
check "the symbolizer says its writer is gone, once" test "$(grep -c 'writer process is gone' "$TMP/run7.out")" = 1
check "lowprof run starts the symbolizer again" grep -q 'lowprof-symbolizer died (exit status 1); starting it again' "$TMP/run7.out"
after=$(find "$SP7" -name 'cpu-*.pb.gz' -newermt "@$((t_kill + 1))" | wc -l)
check "windows are written again after the kill (got $after)" test "$after" -ge 2

# --- the symbolizer stopped from elsewhere (SIGTERM: it exits 0) is started
# again too (it ended the whole run, with 0, before its -d)
SP8=$TMP/spool8
start_bg "$BIN/lowprof" run --window 1 --spool "$SP8" -p "$WPID" -d 8 >"$TMP/run8.out" 2>&1
RUN8=$BGPID
wait_log "$TMP/run8.out" 'profiling the given processes' || fail "run 8 never started profiling"
sleep 2
S8=$(symbolizer_below "$RUN8")
check "the run's symbolizer found ($S8)" test -n "$S8"
[[ -n $S8 ]] && kill -TERM "$S8"
t_kill=$(date +%s)
wait "$RUN8"
rc=$?
check "lowprof run exits 0 after its symbolizer was stopped (got $rc)" test "$rc" = 0
check "it starts the symbolizer again" grep -q 'lowprof-symbolizer died (exit status 0); starting it again' "$TMP/run8.out"
after=$(find "$SP8" -name 'cpu-*.pb.gz' -newermt "@$((t_kill + 1))" | wc -l)
check "windows are written after the stop (got $after)" test "$after" -ge 2

# --- a disk full of something else (a tmpfs of 8K, filled before the run)
# fails the windows, said once per cause and not once a window; space
# freed, windows are written again, and that is said too
FULL=$TMP/full
mkdir "$FULL" && mount -t tmpfs -o size=8k tmpfs "$FULL" && chmod 755 "$FULL"
mkdir -m 0700 "$FULL/sp" && chown lowprof: "$FULL/sp"
dd if=/dev/zero of="$FULL/filler" bs=1k count=8 2>/dev/null
start_bg "$BIN/lowprof" run --window 1 --spool "$FULL/sp" -p "$WPID" -d 8 >"$TMP/run9.out" 2>&1
RUN9=$BGPID
wait_log "$TMP/run9.out" 'not written: No space left' 30 || fail "the full spool never failed a window"
sleep 2
rm -f "$FULL/filler" # room again
wait "$RUN9"
umount "$FULL"
grep 'spool' "$TMP/run9.out"
failed=$(sed -n 's/.* \([0-9]\+\) failed$/\1/p' "$TMP/run9.out")
said=$(grep -c 'not written: No space left' "$TMP/run9.out")
check "a full spool's failures are said less often than they happen ($said lines, ${failed:-0} failed)" \
	test "$said" -ge 1 -a "${failed:-0}" -gt "$said"
check "windows written again after room was made are said to be" grep -q 'windows are written again' "$TMP/run9.out"

# --- a disk that fills with windows before the budget does (a tmpfs of
# 16K, --spool-bytes 1G): the oldest windows give way to new ones, as to
# the budget, instead of every new window failing until the exporter
# catches up
mkdir "$FULL" 2>/dev/null; mount -t tmpfs -o size=16k tmpfs "$FULL" && chmod 755 "$FULL"
"$BIN/lowprof" run --window 1 --spool "$FULL/sp" -p "$WPID" -d 8 >"$TMP/run10.out" 2>&1
rc=$?
ls "$FULL/sp" >"$TMP/sp10.ls"
umount "$FULL"
grep 'spool' "$TMP/run10.out"
sed 's/^/  /' "$TMP/sp10.ls"
full=$(sed -n 's/.*(\([0-9]\+\) of them for a full disk).*/\1/p' "$TMP/run10.out")
failed=$(sed -n 's/.* \([0-9]\+\) failed$/\1/p' "$TMP/run10.out")
check "lowprof run on a disk its windows fill exits 0 (got $rc)" test "$rc" = 0
check "the oldest windows gave way ($full removed for a full disk, ${failed:-?} failed)" \
	test "${full:-0}" -ge 1 -a "${failed:-1}" = 0
check "that is said" grep -q 'the disk is full before the spool.s budget' "$TMP/run10.out"
check "the newest windows are kept (window 7 or later is there)" \
	grep -Eq '^cpu-[0-9TZ]+-0*([7-9]|[1-9][0-9]+)\.pb\.gz$' "$TMP/sp10.ls"
check "the oldest is gone (no window 0)" bash -c "! grep -Eq '^cpu-[0-9TZ]+-0+\.pb\.gz$' '$TMP/sp10.ls'"

# --- a spool the symbolizer's user cannot write (root's, 0700): the
# symbolizer fails after it took the ring, and the run ends at once with an
# error (the collector once waited 5 s per kernel-symbol chunk for the
# unread ring, deaf to SIGTERM: minutes)
install -d -m 0700 "$TMP/rootspool"
t0=$SECONDS
timeout 60 "$BIN/lowprof" run --window 1 --spool "$TMP/rootspool" -p "$WPID" -d 1 >"$TMP/run5.out" 2>&1
rc=$?
secs=$((SECONDS - t0))
tail -3 "$TMP/run5.out"
check "a spool the symbolizer cannot write ends the run with 1 (got $rc)" test "$rc" = 1
check "and the error names it" grep -q "spool $TMP/rootspool" "$TMP/run5.out"
check "within 10 s (took $secs s)" test "$secs" -le 10
finish
