#!/usr/bin/env bash
# JIT symbols from a perf map: lowprof record -p on node --perf-basic-prof
# running jit-chain.js (outer -> middle -> hotLeaf). The collector copies
# /tmp/perf-PID.map into the stream, the symbolizer names the JIT frames
# from it: hotLeaf is the leaf of most samples, middle and outer under it,
# then node's native frames down to node::Start and __libc_start_call_main
# (node's main is a tail call to node::Start: it has no frame of its own).
# A replay of the capture gives the same stacks, from the perf map bytes in
# the capture alone: the map file is gone by then.
source "$(dirname "$0")/lib.sh"
require_root
command -v node >/dev/null || { fail "node is not installed (deploy/install-deps.sh --test)"; finish; }

cp "$(dirname "$0")/jit-chain.js" "$TMP/chain.js"
# node's own logs (isolate-*.log with some V8 flags) go to its cwd: our own
mkdir -p "$TMP/cwd"
cd "$TMP/cwd" || exit 1
# --interpreted-frames-native-stack: frames of code not yet compiled get a
# perf map entry too (the JS below hotLeaf: the module, node's loader)
start_bg node --perf-basic-prof --interpreted-frames-native-stack --allow-natives-syntax \
	"$TMP/chain.js" "$(scaled 60)"
NPID=$BGPID
MAP=/tmp/perf-$NPID.map
# ready when V8 has optimized hotLeaf (and so written it to the map)
for _ in $(seq 1 200); do
	grep -q 'JS:\*hotLeaf ' "$MAP" 2>/dev/null && break
	sleep 0.1
done
check "node wrote its perf map with an optimized hotLeaf" grep -q 'JS:\*hotLeaf ' "$MAP"
grep -E 'JS:.?(hotLeaf|middle|outer) ' "$MAP"

"$BIN/lowprof" record -d "$(scaled 5)" -p "$NPID" -o "$TMP/out" \
	--capture "$TMP/jit.lpcap" >"$TMP/rec.out" 2>&1
rc=$?
cat "$TMP/rec.out"
check "lowprof record exits 0 (got $rc)" test "$rc" -eq 0
kill "$NPID" 2>/dev/null
wait "$NPID" 2>/dev/null
rm -f "$MAP" # node leaves it; the replay below must not need it

F=$TMP/out/cpu.folded
check "cpu.folded is not empty" test -s "$F"
echo "--- cpu.folded, the heaviest stacks"
sort -k2 -t' ' -nr "$F" | head -3 | cut -c1-1500
# a name in the map is "JS:" + a tier mark (* optimized, ^ baseline, ~
# interpreted, none) + the function + its source position
js() { echo "JS:[*^~]?$1 [^;]*$TMP/chain.js:[0-9:]+"; }
leaf=$(share "$F" "^node;.*;$(js hotLeaf)(;[^;]+_\\[k\\])*\$")
check "$leaf% of node's samples have hotLeaf as their leaf (> 50%)" test "$leaf" -gt 50
chain=$(share "$F" "^node;_start;__libc_start_main_impl;__libc_start_call_main;node::Start;.*;Builtins_JSEntry;.*;$(js outer);$(js middle);$(js hotLeaf)(;[^;]+_\\[k\\])*\$")
check "$chain% of them are node::Start ... Builtins_JSEntry ... outer;middle;hotLeaf (> 50%)" \
	test "$chain" -gt 50
check "no sample ends in an unnamed JIT frame under JSEntry (was: one [unknown] frame)" \
	bash -c "! grep -Eq 'Builtins_JSEntryTrampoline;\\[unknown\\]( |;)' '$F'"
check "the summary counts the JIT frames it named" \
	grep -Eq '^ +JIT symbols +[1-9][0-9]* read from perf maps and jitdumps, [1-9][0-9]* frames named' \
	"$TMP/rec.out"

export HOME=$TMP
top=$(go tool pprof -top "$TMP/out/cpu.pb.gz" 2>&1)
echo "--- go tool pprof -top"; echo "$top" | head -8
first=$(echo "$top" | awk '/flat%/ {getline; sub(/^ *[^ ]+ +[^ ]+ +[^ ]+ +[^ ]+ +[^ ]+ +/, ""); print; exit}')
check "go tool pprof -top lists hotLeaf first (got '$first')" \
	bash -c "grep -Eq '^$(js hotLeaf)\$' <<<\"\$1\"" _ "$first"
check "the pprof profile has a [jit] mapping" \
	bash -c "go tool pprof -raw '$TMP/out/cpu.pb.gz' 2>/dev/null | grep -q '\\[jit\\]'"

info=$("$BIN/lowprof" capture-info "$TMP/jit.lpcap" 2>&1)
check "the capture holds perfmap records" grep -Eq '^records .* perfmap [1-9]' <<<"$info"
"$BIN/lowprof" replay "$TMP/jit.lpcap" -o "$TMP/replay" >"$TMP/replay.out" 2>&1
rrc=$?
check "lowprof replay exits 0 (got $rrc)" test "$rrc" -eq 0
check "the replay's cpu.folded is the record's, but for samples the record dropped (the map file is gone)" \
	same_as_live "$F" "$TMP/replay/cpu.folded" "$TMP/rec.out"

left=$(leftovers)
check "nothing left behind: '$left'" test -z "$left"
finish
