#!/usr/bin/env bash
# Samples in the vDSO keep their callers (issue 24): a program without
# frame pointers that spends its time in clock_gettime(CLOCK_MONOTONIC)
# (main -> vdso_outer -> vdso_loop -> libc -> the vDSO), profiled with
# `lowprof record -p PID --capture`. Of the samples whose leaf user frame
# is in the vDSO, >= 90% must name the vDSO function (__vdso_clock_gettime,
# or its alias clock_gettime) and reach main through the known chain, live
# and again from a replay of the capture (the collector's vDSO image is in
# it: record 13). A symbolizer that cannot name vDSO frames shows them as
# [unknown] (or [vdso]+0xOFFSET): they count as vDSO leaves that fail.
source "$(dirname "$0")/lib.sh"
require_root

VDSO_LEAF='^(__vdso_[a-z_]+|clock_gettime|\[vdso\]\+0x[0-9a-f]+|\[unknown\])$'
CHAIN=';main;vdso_outer;vdso_loop(;[^;]*clock_gettime[^;]*)?;(__vdso_clock_gettime|clock_gettime)$'

# vdso_stats FOLDED: "LEAVES GOOD TOTAL": samples with a vDSO leaf user
# frame (kernel frames, *_[k], dropped from the end), those of them whose
# user stack is the whole chain, and all samples
vdso_stats() {
	awk -v leafre="$VDSO_LEAF" -v chainre="$CHAIN" '{
		n = $NF; line = $0; sub(/ [0-9]+$/, "", line); total += n
		while (line ~ /;[^;]*_\[k\]$/) sub(/;[^;]*_\[k\]$/, "", line)
		leaf = line; sub(/^.*;/, "", leaf)
		if (leaf ~ leafre) { leaves += n; if (line ~ chainre) good += n }
	} END { printf "%d %d %d\n", leaves, good, total }' "$1"
}

# check_vdso WHAT FOLDED
check_vdso() {
	local what=$1 f=$2 leaves good total
	read -r leaves good total < <(vdso_stats "$f")
	echo "--- $what: top stacks"; sort -t' ' -k2 -nr "$f" | head -4
	check "$what: samples ($total), most with a vDSO leaf ($leaves, >= 50%)" \
		test "$total" -gt 50 -a $((100 * leaves)) -ge $((50 * total))
	pct=$((leaves ? 100 * good / leaves : 0))
	check "$what: $pct% of the $leaves vDSO-leaf samples run main;vdso_outer;vdso_loop;...;__vdso_clock_gettime (>= 90%)" \
		test "$pct" -ge 90
}

start_bg "$WL/vdso_loop" 12
wpid=$BGPID
sleep 0.3
"$BIN/lowprof" record -d 5 -p "$wpid" -o "$TMP/out" --capture "$TMP/cap.lpc" >"$TMP/record.txt" 2>&1
rc=$?
kill "$wpid" 2>/dev/null
wait "$wpid" 2>/dev/null
check "lowprof record exits 0 (got $rc)" test "$rc" -eq 0
grep -E 'user stacks' "$TMP/record.txt"
check_vdso live "$TMP/out/cpu.folded"

"$BIN/lowprof" capture-info "$TMP/cap.lpc" >"$TMP/info.txt" 2>&1
check "the capture holds the vDSO image (capture-info: vdso 1)" \
	grep -Eq '^records .* vdso 1( |$)' "$TMP/info.txt"
"$BIN/lowprof" replay "$TMP/cap.lpc" -o "$TMP/replay" >"$TMP/replay.txt" 2>&1
rc=$?
check "lowprof replay exits 0 (got $rc)" test "$rc" -eq 0
check_vdso replay "$TMP/replay/cpu.folded"

left=$(leftovers)
check "nothing left behind: '$left'" test -z "$left"
finish
