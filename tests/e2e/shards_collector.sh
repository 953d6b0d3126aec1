#!/usr/bin/env bash
# The collector feeds several symbolizers (lowprof-collector --ring PATH
# --shards 2): each symbolizer that connects gets the lowest shard without
# one, and each process's samples go to its shard's ring only
# (lowprof/shard.h), while every ring gets the mappings and metadata. Two
# workloads whose pids fall in different shards: each symbolizer's profile
# has its own workload's whole chain and none of the other's, the loss
# counters add up, and the collector says what each ring took. Then the
# symbolizer of shard 1 dies and a new one takes shard 1 over (it resumes)
# while shard 0's goes on.
source "$(dirname "$0")/lib.sh"
require_root

SOCK=$TMP/ring.sock
# the shard of a pid among n: lp_shard_of of lowprof/shard.h
shard_of() { echo $(((($1 * 0x9e3779b1) & 0xFFFFFFFF) * $2 >> 32)); }
CHAIN='main;chain_one;chain_two;chain_three;chain_leaf'"$KTAIL"'$'

start_bg "$WL/chain-fp" "$(scaled 120)"
WFP=$BGPID
# chain-nofp, started again until its pid falls in the other shard
for i in $(seq 30); do
	start_bg "$WL/chain-nofp" "$(scaled 120)"
	WNOFP=$BGPID
	[[ $(shard_of "$WFP" 2) != $(shard_of "$WNOFP" 2) ]] && break
	kill "$WNOFP"; wait "$WNOFP" 2>/dev/null
done
S_FP=$(shard_of "$WFP" 2)
S_NOFP=$(shard_of "$WNOFP" 2)
echo "chain-fp $WFP: shard $S_FP; chain-nofp $WNOFP: shard $S_NOFP"
check "the two workloads are in different shards" test "$S_FP" != "$S_NOFP"
declare -A COMM_OF=([$S_FP]=chain-fp [$S_NOFP]=chain-nofp)

wait_sock() { for i in $(seq 100); do [[ -S $SOCK ]] && return 0; sleep 0.1; done; return 1; }
# the shard a symbolizer says it took ("ring: shard K of 2")
took() { sed -n 's/.*ring: shard \([0-9]*\) of \([0-9]*\)$/\1 \2/p' "$1" | tail -1; }
samples() { awk '{s += $NF} END {print s + 0}' "$1" 2>/dev/null; }

# --- two symbolizers on one collector
start_bg "$BIN/lowprof-collector" --ring "$SOCK" --shards 2 -d 8 \
	-p "$WFP" -p "$WNOFP" -v 2>"$TMP/col.err"
COL=$BGPID
wait_sock
check "the collector listens on $SOCK" test -S "$SOCK"
start_bg "$BIN/lowprof-symbolizer" --ring "$SOCK" -o "$TMP/s1" >"$TMP/s1.out" 2>&1
SA=$BGPID
start_bg "$BIN/lowprof-symbolizer" --ring "$SOCK" -o "$TMP/s2" >"$TMP/s2.out" 2>&1
SB=$BGPID
for i in $(seq 100); do
	[[ -n "$(took "$TMP/s1.out")" && -n "$(took "$TMP/s2.out")" ]] && break
	sleep 0.1
done
out=$(timeout 20 "$BIN/lowprof-symbolizer" --ring "$SOCK" -o "$TMP/s3" 2>&1)
rc=$?
check "a third symbolizer is refused: every shard has one (rc $rc)" test "$rc" -ne 0
wait "$SA"; ra=$?
wait "$SB"; rb=$?
wait "$COL"; crc=$?
check "the symbolizers exit 0 (got $ra, $rb)" test "$ra" = 0 -a "$rb" = 0
check "the collector exits 0 (got $crc)" test "$crc" = 0
declare -A DIR
for s in s1 s2; do
	read -r k n <<<"$(took "$TMP/$s.out")"
	echo "$s took shard $k of $n"
	check "$s says which shard it took, of 2" test "${n:-}" = 2
	DIR[$k]=$TMP/$s
done
check "the symbolizers took shards 0 and 1" test -n "${DIR[0]:-}" -a -n "${DIR[1]:-}"
for k in 0 1; do
	d=${DIR[$k]:-/nonexistent}
	own=${COMM_OF[$k]}
	other=${COMM_OF[$((1 - k))]}
	n=$(samples "$d/cpu.folded")
	pct=$(share "$d/cpu.folded" "^$own;.*$CHAIN")
	# the CPUs are shared with whatever else runs: a floor, not a rate
	check "shard $k: $own's whole chain in $pct% of its $n samples (>= 90%, >= 50)" \
		test "${pct:-0}" -ge 90 -a "${n:-0}" -ge 50
	check "shard $k: no sample of $other" bash -c "! grep -q '^$other;' '$d/cpu.folded'"
done
# the rings' losses: each its own, none here; the run's counters once
for s in s1 s2; do
	check "$s: no sample lost" grep -Eq 'samples lost +0 \(BPF ring full 0, shared ring full 0\)' "$TMP/$s.out"
done
# the collector's -v lines: per shard, records written and dropped
for k in 0 1; do
	check "the collector says what ring $k took" \
		grep -Eq "ring: shard $k of 2: [1-9][0-9]* records written \(.* MiB\), 0 dropped" \
		"$TMP/col.err"
done

# --- the symbolizer of shard 1 dies; a new one takes shard 1 over
start_bg "$BIN/lowprof-collector" --ring "$SOCK" --shards 2 -d "$(scaled 14)" \
	-p "$WFP" -p "$WNOFP" -v 2>"$TMP/col2.err"
COL=$BGPID
wait_sock
start_bg "$BIN/lowprof-symbolizer" --ring "$SOCK" -o "$TMP/r0" >"$TMP/r0.out" 2>&1
R0=$BGPID
for i in $(seq 50); do [[ -n "$(took "$TMP/r0.out")" ]] && break; sleep 0.1; done
start_bg "$BIN/lowprof-symbolizer" --ring "$SOCK" -o "$TMP/r1" >"$TMP/r1.out" 2>&1
R1=$BGPID
sleep "$(scaled 4)"
check "the first symbolizer took shard 0" test "$(took "$TMP/r0.out")" = "0 2"
check "the second took shard 1" test "$(took "$TMP/r1.out")" = "1 2"
kill -KILL "$R1"
wait "$R1" 2>/dev/null
sleep 1
check "the collector keeps running" kill -0 "$COL"
"$BIN/lowprof-symbolizer" --ring "$SOCK" -o "$TMP/r1b" >"$TMP/r1b.out" 2>&1
rc=$?
wait "$R0"; r0rc=$?
wait "$COL"; crc=$?
grep -E 'shard|resum' "$TMP/r1b.out"
check "the new symbolizer exits 0 (got $rc), shard 0's too (got $r0rc)" test "$rc" = 0 -a "$r0rc" = 0
check "the collector exits 0 (got $crc)" test "$crc" = 0
check "the new symbolizer took shard 1 again" test "$(took "$TMP/r1b.out")" = "1 2"
check "it resumed a run in progress" grep -q 'resuming a run in progress' "$TMP/r1b.out"
check "the collector sent shard 1 alone the state again" \
	grep -q 'a new symbolizer on shard(s) 0x2' "$TMP/col2.err"
own=${COMM_OF[1]}
n1=$(samples "$TMP/r1b/cpu.folded")
pct=$(share "$TMP/r1b/cpu.folded" "^$own;.*$CHAIN")
check "the new shard 1: $own's whole chain in $pct% of its $n1 samples (>= 90%, >= 30)" \
	test "${pct:-0}" -ge 90 -a "${n1:-0}" -ge 30
check "the new shard 1: no sample of ${COMM_OF[0]}" \
	bash -c "! grep -q '^${COMM_OF[0]};' '$TMP/r1b/cpu.folded'"
own=${COMM_OF[0]}
n=$(samples "$TMP/r0/cpu.folded")
pct=$(share "$TMP/r0/cpu.folded" "^$own;.*$CHAIN")
# shard 0 went on through the restart: it saw the whole run, two equal
# spinning workloads sharing the CPUs, the new shard 1 only the part after it
check "shard 0 went on: $own's whole chain in $pct% of its $n samples (>= 90%, more than the new shard 1's $n1)" \
	test "${pct:-0}" -ge 90 -a "${n:-0}" -gt "${n1:-0}"

check "nothing left behind" test -z "$(leftovers)"
finish
