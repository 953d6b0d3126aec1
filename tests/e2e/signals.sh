#!/usr/bin/env bash
# Ctrl-C writes what was collected; no exit path leaves processes, BPF
# programs or shared memory behind.
source "$(dirname "$0")/lib.sh"
require_root

start_bg "$WL/chain-fp" 90
WPID=$BGPID

for sig in INT TERM; do
	start_bg "$BIN/lowprof" record -p "$WPID" -o "$TMP/out-$sig"
	REC=$BGPID
	sleep 3
	kill -"$sig" "$REC"
	wait "$REC"; rc=$?
	check "SIG$sig: lowprof record exits 0 (got $rc)" test "$rc" -eq 0
	n=$(awk '{s += $NF} END {print s + 0}' "$TMP/out-$sig/cpu.folded" 2>/dev/null)
	check "SIG$sig: cpu.folded has the samples collected so far ($n)" test "${n:-0}" -gt 50
	check "SIG$sig: cpu.pb.gz written" test -s "$TMP/out-$sig/cpu.pb.gz"
	left=$(leftovers)
	check "SIG$sig: nothing left behind" test -z "$left"
done

# lowprof killed outright: its children must not outlive it
start_bg "$BIN/lowprof" record -p "$WPID" -o "$TMP/out-kill"
REC=$BGPID
sleep 3
kill -KILL "$REC"
wait "$REC" 2>/dev/null
left=$(leftovers)
check "SIGKILL of lowprof: collector and symbolizer exit, BPF programs gone: '$left'" test -z "$left"

# the collector killed outright: the symbolizer still writes what it got
start_bg "$BIN/lowprof" record -p "$WPID" -o "$TMP/out-ckill"
REC=$BGPID
sleep 3
kill -KILL "$(desc_named "$REC" lowprof-collect)"
wait "$REC"; rc=$?
check "collector killed: lowprof record reports failure (got $rc)" test "$rc" -ne 0
n=$(awk '{s += $NF} END {print s + 0}' "$TMP/out-ckill/cpu.folded" 2>/dev/null)
check "collector killed: the samples collected so far are kept ($n)" test "${n:-0}" -gt 50
left=$(leftovers)
check "collector killed: nothing left behind: '$left'" test -z "$left"
# the symbolizer killed ten times: lowprof record starts it again each time,
# the collector never stops, and the profile covers the last stretch
start_bg "$BIN/lowprof" record -d 22 -p "$WPID" -o "$TMP/out-skill" 2> "$TMP/skill.log"
REC=$BGPID
sleep 2
COL0=$(desc_named "$REC" lowprof-collect)
kills=0
for i in $(seq 10); do
	SYM=$(desc_named "$REC" lowprof-symboli)
	if [[ -n "$SYM" ]] && kill -KILL "$SYM"; then
		kills=$((kills + 1))
	fi
	sleep 1.4
	COL=$(desc_named "$REC" lowprof-collect)
	[[ "$COL" == "$COL0" ]] || break
done
check "symbolizer killed $kills times: the collector kept running (pid ${COL:-none} = $COL0)" \
	test -n "$COL0" -a "$COL" = "$COL0" -a "$kills" -eq 10
wait "$REC"; rc=$?
check "symbolizer killed: lowprof record completes (got $rc)" test "$rc" -eq 0
check "symbolizer killed: it was started again (log says so)" \
	grep -q 'starting it again' "$TMP/skill.log"
# the kernel symbols sent again after the capabilities are gone still have
# addresses (the collector reads the fd it opened with CAP_SYSLOG)
check "symbolizer killed: the kernel symbols resent had their addresses" \
	bash -c "! grep -q 'addresses are hidden' '$TMP/skill.log'"
n=$(awk '{s += $NF} END {print s + 0}' "$TMP/out-skill/cpu.folded" 2>/dev/null)
check "symbolizer killed: the profile has the samples since its last start ($n)" test "${n:-0}" -gt 300
pct=$(share "$TMP/out-skill/cpu.folded" 'chain_one;chain_two;chain_three;chain_leaf$')
check "symbolizer killed: those samples have the whole chain ($pct%)" test "${pct:-0}" -ge 90
left=$(leftovers)
check "symbolizer killed: nothing left behind: '$left'" test -z "$left"
finish
