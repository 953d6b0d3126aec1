#!/usr/bin/env bash
# lowprof record --symbolizers 2 (issue 23): the collector splits the
# samples by process over two rings, one symbolizer each, and the outputs
# are the two shards' profiles merged.
#  - a whole-host record with two workloads whose pids fall in different
#    shards (lowprof/shard.h's rule, computed here the same way): both
#    shards carry load, each chain is whole in the merged outputs, and they
#    are the same (folded lines of both workloads) as the capture of the
#    same run replayed by one symbolizer
#  - shard 1's symbolizer killed mid-run: it is started again on its ring
#    (its summary says it resumed), shard 0's goes on untouched (never
#    restarted, nothing lost), and the outputs still hold both chains
#  - lowprof run --symbolizers 2: each shard writes its own windows (named
#    .s1of2 and .s2of2), each with its own workload's pid only, and
#    lowprof merge of the spool has both chains
source "$(dirname "$0")/lib.sh"
require_root

# shard_of PID N: lp_shard_of (common/include/lowprof/shard.h)
shard_of() {
	python3 -c "import sys; p, n = int(sys.argv[1]), int(sys.argv[2]); print(((p * 0x9e3779b1) & 0xffffffff) * n >> 32)" "$1" "$2"
}

# two workloads of different binaries, in shards 0 and 1
start_in_shard() { # start_in_shard PROG SHARD: BGPID, a PROG in SHARD
	local i
	for ((i = 0; i < 64; i++)); do
		start_bg "$WL/$1" "$(scaled 60)"
		[[ $(shard_of "$BGPID" 2) == "$2" ]] && return 0
		kill -9 "$BGPID"
		wait "$BGPID" 2>/dev/null
	done
	return 1
}
start_in_shard chain-fp 0 || { fail "no chain-fp in shard 0 after 64 tries"; finish; }
A=$BGPID
start_in_shard chain-nofp 1 || { fail "no chain-nofp in shard 1 after 64 tries"; finish; }
B=$BGPID
echo "chain-fp $A (shard 0), chain-nofp $B (shard 1)"
sleep 0.3

# chain WORKLOAD: the folded lines of its whole chain
chain_lines() { # chain_lines FILE COMM
	grep "^$2;" "$1" | grep -E ";main;chain_one;chain_two;chain_three;chain_leaf$KTAIL [0-9]+\$" || true
}
samples_of() { # samples_of FILE COMM: its samples in the folded file
	awk -v c="$2" 'index($0, c ";") == 1 {s += $NF} END {print s + 0}' "$1"
}
shard_samples() { # shard_samples LOG K: samples in shard K's summary
	awk -v k="$2" '/^lowprof summary: shard / {on = ($4 == k)} on && $1 == "samples" {print $2; exit}' "$1"
}

# --- a whole-host record with two symbolizers
OUT=$TMP/out
"$BIN/lowprof" record --symbolizers 2 -d "$(scaled 5)" -o "$OUT" --capture "$TMP/run.lpcap" \
	>"$TMP/rec.log" 2>&1
rc=$?
check "record --symbolizers 2 exits 0 (got $rc)" test "$rc" = 0
grep -E 'warning|error' "$TMP/rec.log"
check "each shard's summary is printed" \
	bash -c "grep -q '^lowprof summary: shard 0 of 2' '$TMP/rec.log' && grep -q '^lowprof summary: shard 1 of 2' '$TMP/rec.log'"
check "and the merged one" grep -q '^lowprof summary: the 2 shards merged' "$TMP/rec.log"
s0=$(shard_samples "$TMP/rec.log" 0)
s1=$(shard_samples "$TMP/rec.log" 1)
check "both shards carry load (shard 0: ${s0:-?} samples, shard 1: ${s1:-?})" \
	test "${s0:-0}" -ge 50 -a "${s1:-0}" -ge 50
# each shard's lag: a sample read later than it was taken, within the run
lags=$(awk '/^lowprof summary: shard / {k = $4} $1 == "lag" {printf "%s:%s ", k, $6}' "$TMP/rec.log")
lag_ok=$(awk -v d="$(scaled 5)" '/^lowprof summary: shard / {k = $4} $1 == "lag" {n++; if ($6 <= 0 || $6 >= d) bad++}
	END {print (n == 2 && !bad) ? "yes" : "no"}' "$TMP/rec.log")
check "each shard's summary gives its lag, above 0 and below the run's length ($lags)" \
	test "$lag_ok" = yes
# each shard's ring: how full it came at a read, a share of its own size
rings=$(awk '/^lowprof summary: shard / {k = $4} $1 == "ring" {printf "%s:%s of %s MiB ", k, $4, $8}' "$TMP/rec.log")
ring_ok=$(awk '/^lowprof summary: shard / {k = $4} $1 == "ring" {n++; p = $4 + 0; if (p < 0 || p > 100 || $8 + 0 <= 0) bad++}
	END {print (n == 2 && !bad) ? "yes" : "no"}' "$TMP/rec.log")
check "each shard's summary says how full its ring came ($rings)" test "$ring_ok" = yes
na=$(samples_of "$OUT/cpu.folded" chain-fp)
nb=$(samples_of "$OUT/cpu.folded" chain-nofp)
ca=$(chain_lines "$OUT/cpu.folded" chain-fp | awk '{s += $NF} END {print s + 0}')
cb=$(chain_lines "$OUT/cpu.folded" chain-nofp | awk '{s += $NF} END {print s + 0}')
check "chain-fp (shard 0) has its whole chain in the merged output ($ca of $na)" \
	test "$na" -ge 100 -a "$ca" -ge $((na * 9 / 10))
check "chain-nofp (shard 1) has its whole chain in the merged output ($cb of $nb)" \
	test "$nb" -ge 100 -a "$cb" -ge $((nb * 9 / 10))
check "the merged pprof reads in go tool pprof with both chains" \
	bash -c "go tool pprof -traces '$OUT/cpu.pb.gz' 2>/dev/null | grep -c chain_leaf | awk '{exit !(\$1 >= 2)}'"
"$BIN/lowprof" replay "$TMP/run.lpcap" -o "$TMP/one" >"$TMP/replay.log" 2>&1
check "the capture of the run replays with one symbolizer" test -s "$TMP/one/cpu.folded"
for c in chain-fp chain-nofp; do
	grep "^$c;" "$OUT/cpu.folded" >"$TMP/live.$c"
	grep "^$c;" "$TMP/one/cpu.folded" >"$TMP/one.$c"
	check "$c's stacks: two symbolizers live = one replaying the same records" \
		cmp -s "$TMP/live.$c" "$TMP/one.$c"
done
"$BIN/lowprof" replay "$TMP/run.lpcap" -o "$TMP/two" -j 2 >"$TMP/replay2.log" 2>&1
for f in cpu.folded cpu.html; do
	check "replay -j 2 gives the $f of replay -j 1" cmp -s "$TMP/one/$f" "$TMP/two/$f"
done

# --- shard 1's symbolizer killed mid-run
OUT2=$TMP/out2
start_bg "$BIN/lowprof" record --symbolizers 2 -d "$(scaled 8)" -o "$OUT2" >"$TMP/rec2.log" 2>&1
REC=$BGPID
# shard_pid K: shard K's symbolizer, below the record (by its command line)
shard_pid() {
	local p
	for p in $(descendants "$REC"); do
		tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null | grep -q -- "--shard $1/2 " && echo "$p" && return
	done
}
for ((i = 0; i < 50; i++)); do
	S1=$(shard_pid 1)
	S0=$(shard_pid 0)
	[[ -n "$S1" && -n "$S0" ]] && break
	sleep 0.1
done
sleep "$(scaled 3)"
kill -9 "${S1:-0}"
sleep "$(scaled 2)"
S1b=$(shard_pid 1)
check "shard 1's symbolizer was started again (was ${S1:-none}, now ${S1b:-none})" \
	test -n "$S1b" -a "$S1b" != "${S1:-}"
check "shard 0's symbolizer is the same process (${S0:-none})" test "$(shard_pid 0)" = "${S0:-x}"
wait "$REC"
rc=$?
check "the record still exits 0 (got $rc)" test "$rc" = 0
check "it said shard 1 died and was started again" grep -q 'shard 1 of 2) died' "$TMP/rec2.log"
check "shard 1's summary says it resumed" \
	bash -c "awk '/^lowprof summary: shard 1 of 2/ {on = 1} /^lowprof summary: shard 0/ || /^lowprof summary: the/ {on = 0} on' '$TMP/rec2.log' | grep -q resumed"
check "shard 0's does not, and it lost nothing" \
	bash -c "awk '/^lowprof summary: shard 0 of 2/ {on = 1} /^lowprof summary: shard 1/ || /^lowprof summary: the/ {on = 0} on' '$TMP/rec2.log' >'$TMP/s0.txt'; ! grep -q resumed '$TMP/s0.txt' && grep -q 'samples lost    0 ' '$TMP/s0.txt'"
na=$(chain_lines "$OUT2/cpu.folded" chain-fp | awk '{s += $NF} END {print s + 0}')
nb=$(chain_lines "$OUT2/cpu.folded" chain-nofp | awk '{s += $NF} END {print s + 0}')
check "both chains are in the outputs after the restart (chain-fp $na, chain-nofp $nb)" \
	test "$na" -ge 100 -a "$nb" -ge 20
check "no lowprof process of the runs is left" test -z "$(descendants "$REC")"

# --- lowprof run --symbolizers 2: each shard's windows in the spool, both chains
SP=$TMP/spool
"$BIN/lowprof" run --symbolizers 2 --window 2 --spool "$SP" -d "$(scaled 5)" >"$TMP/run.log" 2>&1
rc=$?
check "run --symbolizers 2 exits 0 (got $rc)" test "$rc" = 0
n1=$(ls "$SP" | grep -c '^cpu-.*\.s1of2\.pb\.gz$')
n2=$(ls "$SP" | grep -c '^cpu-.*\.s2of2\.pb\.gz$')
check "both shards wrote windows ($n1 and $n2)" test "$n1" -ge 2 -a "$n2" -ge 2
"$BIN/lowprof" merge --folded "$TMP/run.folded" "$SP" >"$TMP/merge.log" 2>&1
na=$(chain_lines "$TMP/run.folded" chain-fp | awk '{s += $NF} END {print s + 0}')
nb=$(chain_lines "$TMP/run.folded" chain-nofp | awk '{s += $NF} END {print s + 0}')
check "the shards' windows merged hold both chains (chain-fp $na, chain-nofp $nb)" \
	test "$na" -ge 50 -a "$nb" -ge 50
pids_in() { # pids_in SHARDNAME: the pid labels of its windows
	for f in "$SP"/cpu-*."$1".pb.gz; do go tool pprof -raw "$f" 2>/dev/null; done |
		grep -o 'pid:\[[0-9]*\]' | tr -dc '0-9\n' | sort -u
}
pids_in s1of2 >"$TMP/p1"
pids_in s2of2 >"$TMP/p2"
check "shard 1of2's windows have chain-fp ($A) and not chain-nofp ($B)" \
	bash -c "grep -qx $A '$TMP/p1' && ! grep -qx $B '$TMP/p1'"
check "shard 2of2's windows have chain-nofp ($B) and not chain-fp ($A)" \
	bash -c "grep -qx $B '$TMP/p2' && ! grep -qx $A '$TMP/p2'"
check "no process is in both shards' windows" test -z "$(comm -12 "$TMP/p1" "$TMP/p2")"
finish
