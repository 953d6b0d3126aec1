#!/usr/bin/env bash
# The stack copy never carries what sits above a stack's frames: the
# environment and the aux vector above the main thread's frames, the thread
# descriptor above a thread's. The workload (tests/workloads/secrets.c)
# spins its threads in a shallow function right below those, while other
# threads mmap and munmap in a tight loop (looking up a stack's mapping in
# the sampling interrupt then often found the mmap lock taken, and lowprof
# used to copy on to --stack-bytes). Its environment holds a unique marker; the
# secrets file holds its pointer guard (the thread descriptor's) and its
# AT_RANDOM bytes (the aux vector's). None may appear in any capture or
# output, over several runs (each a new collector: every thread's stack is
# looked up again), on-CPU and off-CPU, and with every kernel fallback.
source "$(dirname "$0")/lib.sh"
require_root
export HOME=$TMP

MARK=LPSECRET$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')
# under emulation (tests/vm) everything is several times slower: fewer
# threads, fewer runs; the rule checked is the same
if [[ $TIME_SCALE == 1 ]]; then NW=8 NH=2 NRUNS=4; else NW=3 NH=1 NRUNS=1; fi
env LP_MARKER="$MARK" "$WL/secrets" "$TMP/secrets" "$NW" "$NH" "$(scaled 120)" &
WPID=$!
KIDS+=("$WPID")
for i in $(seq 50); do [[ -s "$TMP/secrets" ]] && break; sleep 0.1; done
GUARD=$(sed -n 1p "$TMP/secrets")
RANDOM16=$(sed -n 2p "$TMP/secrets")
check "the workload wrote its secrets" test -n "$GUARD" -a -n "$RANDOM16"
check "its environment holds the marker" grep -qa "$MARK" "/proc/$WPID/environ"

# run NAME OPTIONS...: a 2 s record of the workload, capture uncompressed
run() {
	local name=$1 f n; shift
	"$BIN/lowprof" record -d 2 -F 999 -p "$WPID" -o "$TMP/$name" --capture "$TMP/$name.lpcap" \
		--capture-compress none "$@" >"$TMP/$name.txt" 2>&1
	check "$name: record exits 0" test $? -eq 0
	n=$(awk '/^  samples +[0-9]/ {print $2; exit}' "$TMP/$name.txt")
	check "$name: samples recorded (${n:-0})" test "${n:-0}" -gt 100
	for f in "$TMP/$name.lpcap" "$TMP/$name"/*; do
		check "$name: $(basename "$f") holds no environment marker" absent "$f" "$MARK"
		check "$name: $(basename "$f") holds no pointer guard" absent "$f" "$GUARD"
		check "$name: $(basename "$f") holds no AT_RANDOM" absent "$f" "$RANDOM16"
	done
}
for i in $(seq "$NRUNS"); do
	run "run$i"
done
run offcpu --off-cpu --off-cpu-period-us 1000
check "offcpu: off-CPU samples recorded" test -s "$TMP/offcpu/offcpu.folded"
# a kernel without any of the features lowprof can do without (5.10)
LOWPROF_FALLBACKS=all run fallbacks --off-cpu --off-cpu-period-us 1000
check "fallbacks: the summary names them" grep -q '^  fallback *no task storage' "$TMP/fallbacks.txt"
# of the spinning threads' samples (the workers' and main's), those whose
# stack runs whole from the thread's start to spin (kernel frames may follow)
pct=$(awk '/;(worker|main);/ { t += $NF; if (/^secrets;(_start;.*;main|__clone3;start_thread;worker);spin(;[^;]+_\[k\])* [0-9]+$/) h += $NF }
	END { print t ? int(100 * h / t) : 0 }' "$TMP/fallbacks/cpu.folded")
check "fallbacks: the spinning threads' stacks unwind whole to spin ($pct%)" test "${pct:-0}" -ge 95
kill "$WPID" 2>/dev/null
left=$(leftovers)
check "nothing left behind: '$left'" test -z "$left"
finish
