#!/usr/bin/env bash
# Off-CPU profiling the way a user checks it: a program the project has never
# seen alternates between two blocking functions (one sleeps, one waits in
# poll) while a second thread keeps moving it between the CPUs, so that its
# blocks start on one CPU and end on the other.
# It measures its own time off CPU per function (wall time less its CPU
# time), from when lowprof says it profiles to the end of its run (it then
# waits elsewhere, and lowprof is stopped). lowprof record --off-cpu
# must attribute each function's off-CPU time within 15% at --off-cpu-rate 1
# (25% at 0.1 over a longer run), with the ratio right; during the run no BPF
# map may be sized by possible CPUs, and the summary reports BPF memory.
# dd's O_DSYNC writes, which block several times per call, must have full
# user stacks for every block.
source "$(dirname "$0")/lib.sh"
require_root

cat >"$TMP/waiter.c" <<'C'
#define _GNU_SOURCE
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}
/*
 * this thread's time off CPU so far, give or take a constant: wall time less
 * its CPU time, so a call's own CPU time (large where the CPU is emulated)
 * is not counted as blocked
 */
static double off(void)
{
	struct timespec t;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	return now() - (t.tv_sec + t.tv_nsec / 1e9);
}
static pid_t waiter_tid;
/* moves the waiting thread to the other CPU every 7 ms, mostly while it is blocked */
static void *mover(void *arg)
{
	for (int i = 0;; i++) {
		cpu_set_t s;
		CPU_ZERO(&s);
		CPU_SET(i % 2, &s);
		sched_setaffinity(waiter_tid, sizeof(s), &s);
		usleep(7000);
	}
	return arg;
}
static double slept, polled;
__attribute__((noinline)) void wait_sleeping(int us)
{
	struct timespec ts = {us / 1000000, (us % 1000000) * 1000L};
	double t0 = off();
	nanosleep(&ts, NULL);
	slept += off() - t0;
}
__attribute__((noinline)) void wait_polling(int us)
{
	double t0 = off();
	poll(NULL, 0, us / 1000);
	polled += off() - t0;
}
/* after the run: blocked here until killed, in no function the test counts */
__attribute__((noinline)) void waiter_done(void)
{
	for (;;)
		pause();
}
/*
 * waiter SECONDS TRUTH-FILE SLEEP-US POLL-US GO-FIFO: starts when a line
 * comes on GO-FIFO, runs SECONDS, then writes its totals (ns) to TRUTH-FILE
 */
int main(int argc, char **argv)
{
	int sleep_us = atoi(argv[3]), poll_us = atoi(argv[4]);
	int go = open(argv[5], O_RDONLY);
	char c, tmp[4096];
	pthread_t t;
	if (go < 0 || read(go, &c, 1) != 1)
		return 1;
	double end = now() + atof(argv[1]);
	waiter_tid = (pid_t)syscall(SYS_gettid);
	pthread_create(&t, NULL, mover, NULL);
	while (now() < end) {
		wait_sleeping(sleep_us);
		wait_polling(poll_us);
	}
	/* written aside and renamed: a reader never sees a half-written file */
	snprintf(tmp, sizeof(tmp), "%s.tmp", argv[2]);
	FILE *f = fopen(tmp, "w");
	if (f) {
		fprintf(f, "%.0f %.0f\n", slept * 1e9, polled * 1e9);
		fclose(f);
		rename(tmp, argv[2]);
	}
	waiter_done();
	return 0;
}
C
gcc -O2 -pthread -o "$TMP/waiter" "$TMP/waiter.c" || fail "gcc waiter"

# collector_maps REC: the BPF maps (bpftool -j map show) of the collector of
# the lowprof record REC, as a JSON array: those whose fd a lowprof-collector
# process below REC holds (map_id in its /proc/PID/fdinfo), and those
# bpftool says it holds (its "pids", where bpftool is built with them; the
# Debian one is not). Found by the process tree, never by name: a lowprof
# running beside the test has maps of the same names.
collector_maps() {
	local p pids="" ids=""
	for p in $(descendants "$1"); do
		[[ "$(cat "/proc/$p/comm" 2>/dev/null)" == lowprof-collect ]] || continue
		pids+="$p "
		ids+="$(awk '/^map_id:/ { printf "%s ", $2 }' /proc/"$p"/fdinfo/* 2>/dev/null)"
	done
	bpftool -j map show 2>/dev/null | jq -c --arg ids "$ids" --arg pids "$pids" '
		($ids | split(" ") | map(select(. != "") | tonumber)) as $ids |
		($pids | split(" ") | map(select(. != "") | tonumber)) as $pids |
		[.[] | select(.id as $i | ($ids | index($i)) != null or
			any(.pids[]?; .pid as $p | ($pids | index($p)) != null))]'
}

# offcpu_run NAME SECONDS SLEEP-US POLL-US LOWPROF-OPTIONS...: profiles the waiter; sets
# SLEPT/POLLED (true ns of its run) and GOT_SLEEP/GOT_POLL (ns in offcpu.folded)
offcpu_run() {
	local name=$1 secs=$2 sleep_us=$3 poll_us=$4; shift 4
	# The waiter's whole run lies inside the profile: it starts once the
	# collector says it is profiling, and lowprof is stopped (Ctrl-C) once
	# it has written its totals. It runs at a real-time priority where
	# allowed: its own measure of a block (wall time less CPU time) then
	# holds no wait for a CPU outside the block, which no off-CPU sample
	# stands for, however loaded the machine.
	local rt=(chrt -f 1) i
	chrt -f 1 true 2>/dev/null || rt=()
	mkfifo "$TMP/$name.go"
	"${rt[@]}" "$TMP/waiter" "$secs" "$TMP/$name.truth" "$sleep_us" "$poll_us" "$TMP/$name.go" &
	local wpid=$!
	KIDS+=("$wpid")
	"$BIN/lowprof" record -p "$wpid" -o "$TMP/out-$name" --no-cache "$@" >"$TMP/$name.txt" 2>&1 &
	local rec=$!
	KIDS+=("$rec")
	wait_log "$TMP/$name.txt" 'profiling the given processes' ||
		fail "$name: the collector never said it was profiling"
	echo go >"$TMP/$name.go"
	sleep 2
	collector_maps "$rec" >"$TMP/$name.maps.json"
	for i in $(seq $(((secs + 60) * 10))); do
		[[ -s "$TMP/$name.truth" ]] && break
		sleep 0.1
	done
	kill -INT "$rec"
	wait "$rec"; local rc=$?
	kill "$wpid" 2>/dev/null
	check "$name: lowprof record exits 0 (got $rc)" test "$rc" -eq 0
	read -r SLEPT POLLED <"$TMP/$name.truth"
	local F="$TMP/out-$name/offcpu.folded"
	# (%.0f: nanosecond sums overflow awk's %d)
	GOT_SLEEP=$(awk '/;wait_sleeping;/ { s += $NF } END { printf "%.0f", s }' "$F")
	GOT_POLL=$(awk '/;wait_polling;/ { s += $NF } END { printf "%.0f", s }' "$F")
	echo "--- $name: top off-CPU stacks"; sort -t' ' -k2 -nr "$F" | head -3 | cut -c1-220
	echo "    truth: sleeping $((SLEPT / 1000000)) ms, polling $((POLLED / 1000000)) ms;" \
		"recorded: $((GOT_SLEEP / 1000000)) ms, $((GOT_POLL / 1000000)) ms"
}

# within PCT GOT WANT: |GOT - WANT| <= PCT% of WANT
within() { awk -v p="$1" -v g="$2" -v w="$3" 'BEGIN { d = g - w; if (d < 0) d = -d; exit !(w > 0 && d <= w * p / 100) }'; }

# 30 ms sleeps, 10 ms polls: every block recorded
offcpu_run rate1 6 30000 10000 --off-cpu --off-cpu-rate 1
check "rate 1: wait_sleeping's off-CPU time within 15% of its blocked time" within 15 "$GOT_SLEEP" "$SLEPT"
check "rate 1: wait_polling's off-CPU time within 15% of its blocked time" within 15 "$GOT_POLL" "$POLLED"
check "rate 1: the sleeping/polling ratio within 15%" \
	within 15 "$((GOT_SLEEP * 1000 / (GOT_POLL + 1)))" "$((SLEPT * 1000 / (POLLED + 1)))"
check "rate 1: stacks run from main to the blocking function and the kernel" \
	grep -Eq ';main;wait_sleeping;[^ ]*nanosleep[^ ]*;.*_\[k\] [0-9]+$' "$TMP/out-rate1/offcpu.folded"
check "rate 1: the summary shows total off-CPU time" grep -Eq 'off-CPU' "$TMP/rate1.txt"
check "rate 1: the summary reports the BPF memory in use" grep -Eq 'BPF memory' "$TMP/rate1.txt"
check "rate 1: offcpu.pb.gz written" test -s "$TMP/out-rate1/offcpu.pb.gz"
check "rate 1: cpu.folded written beside it" test -e "$TMP/out-rate1/cpu.folded"
export HOME=$TMP
check "rate 1: go tool pprof reads offcpu.pb.gz with off_cpu/nanoseconds" \
	bash -c "go tool pprof -raw '$TMP/out-rate1/offcpu.pb.gz' 2>/dev/null | grep -q 'off_cpu/nanoseconds'"
grep -E 'off-CPU|BPF memory|blocking' -A3 "$TMP/rate1.txt" | head -12

# Memory scales with the online CPUs, never the possible ones (DESIGN.md),
# checked on the maps of the collector of the rate-1 run while it ran:
# - the maps indexed by CPU id (profile's scratch; off-CPU's scratch and
#   counts) are arrays of highest online id + 1 entries;
# - off-CPU's pending hash is sized from the online CPUs (sizing.c:
#   max(128, 64 x online));
# - no per-CPU map type at all (the kernel gives each entry a value per
#   possible CPU), and a perf event array has no more entries than CPU ids
#   online;
# - where possible > online, no map has as many entries as possible CPUs.
# The maps it expects must be there, so that the check cannot pass on an
# empty list (a map renamed, bpftool's format changed, the wrong process).
cpu_count() { # cpu_count LIST (0-3,5): how many CPUs
	tr ',' '\n' <<<"$1" | awk -F- '{ n += (NF == 2 ? $2 - $1 + 1 : 1) } END { print n + 0 }'
}
possible=$(cat /sys/devices/system/cpu/possible)
online=$(cat /sys/devices/system/cpu/online)
ONLINE_IDS=$(($(sed 's/.*[-,]//' <<<"$online") + 1))
ONLINE_N=$(cpu_count "$online")
POSSIBLE_IDS=$(($(sed 's/.*[-,]//' <<<"$possible") + 1))
POSSIBLE_N=$(cpu_count "$possible")
PENDING_MAX=$((64 * ONLINE_N > 128 ? 64 * ONLINE_N : 128))
echo "    possible CPUs: $possible; online: $online (ids below $ONLINE_IDS)"
# cpu_sized_maps FILE: "name type max_entries verdict" for each map of FILE
# that could be sized by CPUs; verdict is ok or what is wrong
cpu_sized_maps() {
	jq -r --argjson ids "$ONLINE_IDS" --argjson pend "$PENDING_MAX" \
		--argjson pn "$POSSIBLE_N" --argjson pids "$POSSIBLE_IDS" --argjson on "$ONLINE_N" '
		.[] | (.name // "") as $n | .type as $t | .max_entries as $m |
		(if ($t | test("percpu")) then "a per-CPU map: a value per possible CPU"
		 elif $t == "perf_event_array" then
			(if $m > $ids then "more entries than online CPU ids" else "ok" end)
		 elif $n == "scratch" or $n == "counts" then
			(if $t != "array" or $m != $ids then "not an array of \($ids) (online CPU ids)"
			 else "ok" end)
		 elif $n == "pending" then
			(if $m > $pend then "more than \($pend) (64 x online CPUs)" else "ok" end)
		 elif $pn > $on and ($m == $pn or $m == $pids) then "as many entries as possible CPUs"
		 else "ok" end) as $v |
		select(($t | test("percpu")) or $t == "perf_event_array" or
			($n | test("^(scratch|counts|pending)$")) or
			($pn > $on and ($m == $pn or $m == $pids))) |
		"\($n) \($t) \($m) \($v)"' "$1"
}
cpu_sized_maps "$TMP/rate1.maps.json" >"$TMP/rate1.cpumaps"
echo "    the collector's $(jq length "$TMP/rate1.maps.json") maps; those that could be sized by CPUs:"
sed 's/^/      /' "$TMP/rate1.cpumaps"
got=$(cut -d' ' -f1 "$TMP/rate1.cpumaps" | sort | uniq -c | awk '{ printf "%s x%d ", $2, $1 }')
check "the collector's CPU-sized maps are all there: scratch x2, counts, pending (got: $got)" \
	bash -c '[[ "$1" == *"counts x1 "* && "$1" == *"pending x1 "* && "$1" == *"scratch x2 "* ]]' _ "$got"
bad=$(grep -v ' ok$' "$TMP/rate1.cpumaps")
check "no map of the collector sized beyond the online CPUs: '$bad'" test -z "$bad"

# one block in ten: 3 ms sleeps and 1 ms polls give ~370 samples of each in
# 15 s, so 25% is ~5 standard deviations of the estimate
offcpu_run rate01 15 3000 1000 --off-cpu --off-cpu-rate 0.1
check "rate 0.1: wait_sleeping's off-CPU time within 25%" within 25 "$GOT_SLEEP" "$SLEPT"
check "rate 0.1: wait_polling's off-CPU time within 25%" within 25 "$GOT_POLL" "$POLLED"

# T = 20 ms: the 30 ms sleeps always kept, the 10 ms polls half the time
offcpu_run timemode 6 30000 10000 --off-cpu --off-cpu-mode time --off-cpu-period-us 20000
check "time mode: wait_sleeping's off-CPU time within 15% (blocks longer than the period always kept)" \
	within 15 "$GOT_SLEEP" "$SLEPT"
check "time mode: wait_polling's off-CPU time within 25%" within 25 "$GOT_POLL" "$POLLED"

# One system call that blocks several times: dd's O_DSYNC writes wait for
# the page's writeback, the buffer and the cache flush in one write(2). Each
# block's user stack must be the full one (before the fix, every block but
# the last of a call had none and stopped at the libc write). Rule, by
# off-CPU weight (time mode, T = 10 ms: dd's blocks are mostly shorter, so
# each weighs T and weight follows count): >= 95% of dd's stacks run from
# __libc_start_call_main through main (dd is stripped: its main is the
# dd+0x... frame right after it; main where it has symbols) to a libc write
# as the user leaf, then the kernel. O_DSYNC on tmpfs never blocks: the file
# goes to a disk-backed directory of the test's own.
DDDIR=$TMP
in_memory() { [[ $(stat -f -c %T "$1") =~ ^(tmpfs|ramfs)$ ]]; }
if in_memory "$TMP" && ! in_memory /var/tmp; then
	DDDIR=$(mktemp -d /var/tmp/lowprof-e2e-dd.XXXXXX)
fi
start_bg dd if=/dev/zero of="$DDDIR/dd.out" bs=4k count=250000 oflag=dsync status=none
ddpid=$BGPID
# dd's own count of its blocks (voluntary switches) over the recording
vcs() { awk '/^voluntary_ctxt_switches/ { print $2 }' "/proc/$ddpid/status" 2>/dev/null; }
vcs0=$(vcs)
"$BIN/lowprof" record -d "$(scaled 4)" -p "$ddpid" -o "$TMP/out-dd" --no-cache --off-cpu \
	>"$TMP/dd.txt" 2>&1
rc=$?
blocks=$(($(vcs) - vcs0))
kill "$ddpid" 2>/dev/null
wait "$ddpid" 2>/dev/null
[[ "$DDDIR" != "$TMP" ]] && rm -rf "$DDDIR"
check "dd: lowprof record exits 0 (got $rc)" test "$rc" -eq 0
F="$TMP/out-dd/offcpu.folded"
# prints "FULL TOTAL" (ns) over dd's off-CPU stacks
dd_full() {
	awk '$1 ~ /^dd;/ { w = $NF; line = $0; sub(/ [0-9]+$/, "", line)
		n = split(line, f, ";"); total += w
		for (i = 2; i < n && f[i] != "__libc_start_call_main"; i++) ;
		if (i >= n || f[i + 1] !~ /^(main|dd\+0x[0-9a-f]+)$/) next
		for (k = i + 2; k <= n && f[k] !~ /_\[k\]$/; k++) ;
		if (k <= n && f[k - 1] ~ /write/) full += w }
		END { printf "%.0f %.0f\n", full, total }' "$1"
}
read -r full total <<<"$(dd_full "$F")"
pct=$(awk -v a="$full" -v b="$total" 'BEGIN { if (b > 0) printf "%d", 100 * a / b; else print 0 }')
echo "--- dd: blocked $blocks times; $pct% of $((total / 1000000)) ms off CPU in stacks from main to write"
grep -E 'user stacks|ended early' "$TMP/dd.txt"
sort -t' ' -k2 -nr "$F" | head -4 | cut -c1-240
if [[ $blocks -lt 200 ]]; then
	# (tests/vm: /tmp and /var/tmp are in memory)
	echo "SKIP dd checks: its writes to $(stat -f -c %T "$DDDIR") did not block"
else
	# dd waits on the disk most of the time
	check "dd: at least 1 s of off-CPU time recorded (got $((total / 1000000)) ms)" \
		test "$total" -ge 1000000000
	check "dd: >= 95% of its off-CPU time (by weight) in stacks from main to write (got $pct%)" \
		test "$pct" -ge 95
fi

left=$(leftovers)
check "nothing left behind: '$left'" test -z "$left"
finish
