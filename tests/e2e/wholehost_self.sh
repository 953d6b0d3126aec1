#!/usr/bin/env bash
# lowprof leaves itself out of a whole-host profile, in BPF: a whole-host
# lowprof record (on-CPU and --off-cpu) has no sample of its own processes
# (lowprof record, the collector, the symbolizer and what they start: this
# run's, found through the process tree of the record this test started,
# never by name; another lowprof running beside the tests is not this
# run's), while a CPU-bound workload and a blocking one of the test's own
# are there with their call chains; with --include-self its processes are
# there too (off-CPU for certain: the collector and lowprof record wait the
# whole run; on-CPU, at -F 999, the collector's draining and the
# symbolizer's reading). The same for lowprof run's windows. A service's
# collector (--ring, no --self-pid) leaves out its symbolizer (the peer that
# took the ring) and every process of the ring owner's uid.
source "$(dirname "$0")/lib.sh"
require_root
command -v go >/dev/null || { echo "SKIP: needs go (go tool pprof)"; exit 77; }

cat >"$TMP/selfwait.c" <<'C'
#include <stdlib.h>
#include <time.h>
__attribute__((noinline)) void block_inner(void)
{
	struct timespec t = {0, 20 * 1000 * 1000};
	nanosleep(&t, NULL);
	__asm__ volatile("" ::: "memory");
}
__attribute__((noinline)) void block_outer(void)
{
	block_inner();
	__asm__ volatile("" ::: "memory");
}
int main(int argc, char **argv)
{
	time_t end = time(NULL) + (argc > 1 ? atoi(argv[1]) : 60);
	while (time(NULL) < end)
		block_outer();
	return 0;
}
C
gcc -O2 -g -fno-omit-frame-pointer -o "$TMP/selfwait" "$TMP/selfwait.c" || fail "gcc selfwait"

start_bg "$WL/chain-fp" "$(scaled 60)"
CHAIN=$BGPID
start_bg "$TMP/selfwait" "$(scaled 60)"
WAIT=$BGPID

# pids_of PROFILE: "PID VALUE" for every pid label in a pprof profile, the
# value in samples (on-CPU) or ns (off-CPU: pprof prints 4.9s, 696.9ms ...)
pids_of() {
	go tool pprof -tags "$1" 2>/dev/null |
		awk 'BEGIN { u["ns"] = 1; u["us"] = 1e3; u["ms"] = 1e6; u["s"] = 1e9; u["min"] = 6e10; u["hrs"] = 3.6e12 }
		     /^ pid:/ {on = 1; next} /^ [^ ]/ {on = 0}
		     on && NF >= 3 { v = $1; unit = v; sub(/^[0-9.]+/, "", unit); sub(/[a-z]+$/, "", v)
				     printf "%s %.0f\n", $NF, v * (unit == "" ? 1 : u[unit]) }'
}

# watch NAME PID: until PID (started in the background) ends, the pids of
# its process tree in $TMP/NAME.pids (one per line); its exit status in RC
watch() {
	local name=$1 pid=$2
	KIDS+=("$pid")
	: >"$TMP/$name.tree"
	while kill -0 "$pid" 2>/dev/null; do
		{ echo "$pid"; descendants "$pid"; } >>"$TMP/$name.tree"
		sleep 0.1
	done
	wait "$pid"
	RC=$?
	sort -un "$TMP/$name.tree" >"$TMP/$name.pids"
	echo "--- $name: exited $RC; its processes: $(tr '\n' ' ' <"$TMP/$name.pids")"
}

# record NAME OPTIONS...: a whole-host record into $TMP/NAME, watched
record() {
	local name=$1
	shift
	"$BIN/lowprof" record -d "$(scaled 5)" -F 999 --off-cpu -o "$TMP/$name" -v "$@" \
		>"$TMP/$name.out" 2>&1 &
	watch "$name" $!
}

# ours PROFILE NAME: samples (or ns) of the run's own processes in PROFILE
ours() {
	pids_of "$1" | awk -v f="$TMP/$2.pids" 'BEGIN { while ((getline p < f) > 0) own[p] = 1 }
		($1 in own) { s += $2; print "  own pid " $1 ": " $2 > "/dev/stderr" } END { printf "%.0f", s }'
}

# chain_samples FOLDED: on-CPU samples of the workload with its whole chain
# (a count, not a share: the host is shared with whatever else runs)
chain_samples() {
	awk '/^chain-fp;.*main;chain_one;chain_two;chain_three;chain_leaf/ { n += $NF } END { print n + 0 }' "$1"
}

# --- the default: lowprof's own processes are left out
record self
check "lowprof record exits 0 (got $RC)" test "$RC" -eq 0
check "its tree was seen: lowprof record, the collector, the symbolizer" \
	test "$(wc -l <"$TMP/self.pids")" -ge 3
n=$(ours "$TMP/self/cpu.pb.gz" self)
check "on-CPU: no sample of this run's own processes (got $n)" test "$n" = 0
n=$(ours "$TMP/self/offcpu.pb.gz" self)
check "off-CPU: no sample of this run's own processes (got $n ns)" test "$n" = 0
left=$(sed -n "s/.* \([0-9]*\) of lowprof's own,.*/\1/p" "$TMP/self.out")
check "the collector left out samples of lowprof's own in BPF (counted: ${left:-none})" \
	test "${left:-0}" -gt 0
n=$(chain_samples "$TMP/self/cpu.folded")
check "on-CPU: the workload is there with its chain ($n samples, >= 20)" test "$n" -ge 20
check "off-CPU: the blocking workload is there with its chain" \
	grep -q '^selfwait;.*main;block_outer;block_inner;.*nanosleep' "$TMP/self/offcpu.folded"

# --- --include-self: they are there
record incl --include-self
check "lowprof record --include-self exits 0 (got $RC)" test "$RC" -eq 0
n=$(ours "$TMP/incl/offcpu.pb.gz" incl)
check "off-CPU with --include-self: this run's processes are there (got $n ns)" test "$n" -gt 0
n=$(ours "$TMP/incl/cpu.pb.gz" incl)
check "on-CPU with --include-self: this run's processes are there (got $n samples)" \
	test "$n" -gt 0
n=$(chain_samples "$TMP/incl/cpu.folded")
check "... and the workload still is, with its chain ($n samples, >= 20)" test "$n" -ge 20

# --- lowprof run: its symbolizer's helpers start while the collector waits
# for the symbolizer, before on_fork is attached (the collector walks run's
# process tree again around attaching); the windows hold none of the tree
"$BIN/lowprof" run --window 2 -d "$(scaled 5)" --off-cpu --spool "$TMP/sp" --no-cache \
	>"$TMP/run.out" 2>&1 &
watch run $!
check "lowprof run exits 0 (got $RC)" test "$RC" -eq 0
own=0 wl=0
for f in "$TMP"/sp/*.pb.gz; do
	own=$((own + $(ours "$f" run)))
	[[ "$f" == */cpu-* ]] && wl=$((wl + $(pids_of "$f" | awk -v p="$CHAIN" '$1 == p { n += $2 } END { print n + 0 }')))
done
check "lowprof run: no window has a sample of its processes (got $own)" test "$own" = 0
check "lowprof run: the workload is in its windows ($wl samples, >= 20)" test "$wl" -ge 20

# --- a service's collector (--ring, as deploy/'s units start it): its
# symbolizer is the peer that takes the ring, and every process of the
# ring owner's uid is lowprof's (the exporter's service runs as it): a
# busy loop as that user stands for it
if id lowprof >/dev/null 2>&1 && command -v setpriv >/dev/null; then
	mkdir -m 777 "$TMP/svc"
	cp /bin/sh "$TMP/busyloop-lp"
	start_bg setpriv --reuid=lowprof --regid=lowprof --clear-groups \
		"$TMP/busyloop-lp" -c 'while :; do :; done'
	LPLOOP=$BGPID
	start_bg "$BIN/lowprof-collector" --ring "$TMP/svc/ring.sock" --ring-owner lowprof \
		-d "$(scaled 5)" -F 999 --off-cpu -v 2>"$TMP/svc-coll.out"
	COL=$BGPID
	for i in $(seq 100); do [[ -S "$TMP/svc/ring.sock" ]] && break; sleep 0.05; done
	"$BIN/lowprof-symbolizer" --ring "$TMP/svc/ring.sock" -o "$TMP/svc/out" --off-cpu \
		--user lowprof --no-cache >"$TMP/svc.out" 2>&1 &
	SYM=$!
	KIDS+=("$SYM")
	: >"$TMP/svc.tree"
	while kill -0 "$SYM" 2>/dev/null; do
		{ echo "$COL"; echo "$SYM"; echo "$LPLOOP"; descendants "$COL"; descendants "$SYM"; } \
			>>"$TMP/svc.tree"
		sleep 0.1
	done
	wait "$SYM"
	RC=$?
	check "the --ring symbolizer exits 0 (got $RC)" test "$RC" -eq 0
	sort -un "$TMP/svc.tree" >"$TMP/svc.pids"
	n=$(ours "$TMP/svc/out/cpu.pb.gz" svc)
	check "--ring: no on-CPU sample of the collector, its symbolizer or the owner's busy loop (got $n)" \
		test "$n" = 0
	n=$(ours "$TMP/svc/out/offcpu.pb.gz" svc)
	check "--ring: none off-CPU either (got $n ns)" test "$n" = 0
	wait "$COL"
	left=$(sed -n "s/.* \([0-9]*\) of lowprof's own,.*/\1/p" "$TMP/svc-coll.out")
	check "--ring: the collector left them out in BPF (counted: ${left:-none}, >= 100)" \
		test "${left:-0}" -ge 100
	n=$(chain_samples "$TMP/svc/out/cpu.folded")
	check "--ring: the workload is there with its chain ($n samples, >= 20)" test "$n" -ge 20
	kill "$LPLOOP" 2>/dev/null
else
	fail "no lowprof user or no setpriv: the --ring service case is not checked"
fi

kill "$CHAIN" "$WAIT" 2>/dev/null
left=$(leftovers)
check "nothing left behind${left:+: $left}" test -z "$left"
finish
