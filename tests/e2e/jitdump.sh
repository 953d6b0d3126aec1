#!/usr/bin/env bash
# JIT symbols from a jitdump file: lowprof record -p on node --perf-prof
# (no --perf-basic-prof: no perf map) running jit-chain.js (outer -> middle
# -> hotLeaf). node writes jit-PID.dump in its cwd and maps it executable
# for perf to find; the collector learns the path from that mapping, copies
# the file into the stream (jitdump records), and the symbolizer names the
# JIT frames from its JIT_CODE_LOAD records: hotLeaf is the leaf of most
# samples. A replay of the capture gives the same stacks without the file.
source "$(dirname "$0")/lib.sh"
require_root
command -v node >/dev/null || { fail "node is not installed (deploy/install-deps.sh --test)"; finish; }

cp "$(dirname "$0")/jit-chain.js" "$TMP/chain.js"
mkdir -p "$TMP/cwd"
cd "$TMP/cwd" || exit 1
start_bg node --perf-prof --interpreted-frames-native-stack --allow-natives-syntax \
	"$TMP/chain.js" "$(scaled 60)" flush-jitdump
NPID=$BGPID
DUMP=$TMP/cwd/jit-$NPID.dump
# ready when the file has hotLeaf's optimized code and outer's baseline
# code: node writes the file through a 2 MiB buffer, which chain.js's
# burst of code (flush-jitdump) fills after a second
ready() { grep -aq '\*hotLeaf ' "$DUMP" && grep -aq '\^outer ' "$DUMP"; } 2>/dev/null
for _ in $(seq 1 300); do
	ready && break
	sleep 0.1
done
check "node wrote its jitdump with an optimized hotLeaf and a baseline outer" ready
check "node mapped its jitdump executable (perf's marker)" \
	grep -Eq " r-xp .*/jit-$NPID\\.dump\$" "/proc/$NPID/maps"
check "there is no perf map" test ! -e "/tmp/perf-$NPID.map"

"$BIN/lowprof" record -d "$(scaled 5)" -p "$NPID" -o "$TMP/out" \
	--capture "$TMP/jit.lpcap" >"$TMP/rec.out" 2>&1
rc=$?
cat "$TMP/rec.out"
check "lowprof record exits 0 (got $rc)" test "$rc" -eq 0
kill "$NPID" 2>/dev/null
wait "$NPID" 2>/dev/null
rm -f "$DUMP" # the replay below must not need it

F=$TMP/out/cpu.folded
check "cpu.folded is not empty" test -s "$F"
echo "--- cpu.folded, the heaviest stacks"
sort -k2 -t' ' -nr "$F" | head -3 | cut -c1-1500
# a name in the jitdump is "JS:" + a tier mark + the function + its source position
js() { echo "JS:[*^~]?$1 [^;]*$TMP/chain.js:[0-9:]+"; }
leaf=$(share "$F" "^node;.*;$(js hotLeaf)(;[^;]+_\\[k\\])*\$")
check "$leaf% of node's samples have hotLeaf as their leaf (> 50%)" test "$leaf" -gt 50
chain=$(share "$F" "^node;.*;$(js outer);$(js middle);$(js hotLeaf)(;[^;]+_\\[k\\])*\$")
check "$chain% of them are ... outer;middle;hotLeaf (> 50%)" test "$chain" -gt 50

info=$("$BIN/lowprof" capture-info "$TMP/jit.lpcap" 2>&1)
check "the capture holds jitdump records" grep -Eq '^records .* jitdump [1-9]' <<<"$info"
check "the capture holds no perfmap records" bash -c "! grep -Eq '^records .* perfmap [1-9]' <<<\"\$1\"" _ "$info"
"$BIN/lowprof" replay "$TMP/jit.lpcap" -o "$TMP/replay" >"$TMP/replay.out" 2>&1
rrc=$?
check "lowprof replay exits 0 (got $rrc)" test "$rrc" -eq 0
check "the replay's cpu.folded is the record's, but for samples the record dropped (the dump file is gone)" \
	same_as_live "$F" "$TMP/replay/cpu.folded" "$TMP/rec.out"
rleaf=$(share "$TMP/replay/cpu.folded" "^node;.*;$(js hotLeaf)(;[^;]+_\\[k\\])*\$")
check "replay: $rleaf% of node's samples have hotLeaf as their leaf (> 50%)" test "$rleaf" -gt 50

cd / || exit 1
left=$(leftovers)
check "nothing left behind: '$left'" test -z "$left"
finish
