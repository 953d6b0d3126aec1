#!/usr/bin/env bash
# The symbol cache holds what was verified, not what was claimed. A program
# built here claims the build-id of the system's libc (-Wl,--build-id=0x...)
# with its own code, CFI and symbols (the chain workload, static: libc is
# not mapped beside it).
# `lowprof record --cache FILE` of it comes first; then a qsort program,
# whose stacks run through libc, is recorded with the same cache and a
# capture. Its profile must be the one a fresh cache gives (the capture
# replayed with a new cache: the same set of stacks), with main in them
# and libc's frames named, libc's local functions from libc6-dbg's debug
# file included. The forged program must not get that debug file's symbols
# (it claims the build-id it is found by, but it is not the binary it
# belongs to), and keeps its own names when its tables come from the cache.
source "$(dirname "$0")/lib.sh"
require_root

CACHE_DIR="$TMP/cache"
mkdir -p "$CACHE_DIR"
chown lowprof "$CACHE_DIR"
CACHE="$CACHE_DIR/symbols.db"

# the qsort program: tests/workloads/sorter.c; the forged one: the chain
# workload, built static here with libc's build-id
SORTER="$WL/sorter"
LIBC=$(ldd "$SORTER" | awk '$1 ~ /^libc\.so/ { print $3 }')
LIBC_ID=$(readelf -n "$LIBC" 2>/dev/null | awk '/Build ID:/ { print $3 }')
check "libc ($LIBC) has a build-id ($LIBC_ID)" test -n "$LIBC_ID"
DEBUG="/usr/lib/debug/.build-id/${LIBC_ID:0:2}/${LIBC_ID:2}.debug"
check "libc's debug file is installed ($DEBUG; libc6-dbg, deploy/install-deps.sh --test)" \
	test -f "$DEBUG"
gcc -O2 -static -pthread -Wl,--build-id=0x"$LIBC_ID" -o "$TMP/forged" \
	"$(dirname "$0")/../workloads/chain.c" || fail "gcc forged"
forged_id=$(readelf -n "$TMP/forged" 2>/dev/null | awk '/Build ID:/ { print $3 }')
check "the forged program claims libc's build-id ($forged_id)" test "$forged_id" = "$LIBC_ID"
chmod 755 "$TMP/forged"

# record NAME PROGRAM SECONDS OPTIONS...: runs PROGRAM 12, records SECONDS of
# it into $TMP/out-NAME (summary in $TMP/NAME.txt)
record() {
	local name=$1 prog=$2 secs=$3
	shift 3
	start_bg "$prog" 12
	local wpid=$BGPID
	sleep 0.3
	"$BIN/lowprof" record -d "$secs" -p "$wpid" -o "$TMP/out-$name" "$@" >"$TMP/$name.txt" 2>&1
	local rc=$?
	kill "$wpid" 2>/dev/null
	wait "$wpid" 2>/dev/null
	check "$name: lowprof record exits 0 (got $rc)" test "$rc" -eq 0
	grep -E 'binaries|source lines' "$TMP/$name.txt"
}
stacks() { sed -E 's/ [0-9]+$//' "$1" | sort -u; }

# ---- 1. the forged program first: its own names, not libc's debug symbols
FORGED_CHAIN='^forged;(.*;)?main;chain_one;chain_two;chain_three;chain_leaf(;[^;]+_\[k\])*$'
record forged "$TMP/forged" 3 --cache "$CACHE"
echo "--- forged: top stacks"; sort -t' ' -k2 -nr "$TMP/out-forged/cpu.folded" | head -3 | cut -c1-200
pct=$(share "$TMP/out-forged/cpu.folded" "$FORGED_CHAIN")
check "forged: $pct% of samples show main;chain_one;...;chain_leaf, its own symbols (>= 95%)" \
	test "$pct" -ge 95

# ---- 2. the qsort program with the same cache, and a capture of it
record sorter "$SORTER" 4 --cache "$CACHE" --capture "$TMP/sorter.lpcap"
F="$TMP/out-sorter/cpu.folded"
echo "--- sorter: top stacks"; sort -t' ' -k2 -nr "$F" | head -3 | cut -c1-200

# ---- 3. the same samples through a fresh cache
"$BIN/lowprof" replay "$TMP/sorter.lpcap" -o "$TMP/out-fresh" --cache "$CACHE_DIR/fresh.db" \
	>"$TMP/fresh.txt" 2>&1
rc=$?
check "replay with a fresh cache exits 0 (got $rc)" test "$rc" -eq 0
grep -E 'binaries' "$TMP/fresh.txt"
stacks "$F" >"$TMP/sorter.stacks"
check "the sorter's profile has stacks" test -s "$TMP/sorter.stacks"
stacks "$TMP/out-fresh/cpu.folded" >"$TMP/fresh.stacks"
check "the sorter's stacks ($(wc -l <"$TMP/sorter.stacks")) are those of a fresh cache ($(wc -l <"$TMP/fresh.stacks"))" \
	cmp "$TMP/sorter.stacks" "$TMP/fresh.stacks"
if ! cmp -s "$TMP/sorter.stacks" "$TMP/fresh.stacks"; then
	diff "$TMP/sorter.stacks" "$TMP/fresh.stacks" | head -6 | cut -c1-200
fi
for f in "$F" "$TMP/out-fresh/cpu.folded"; do
	pct=$(share "$f" ';main;')
	check "${f#"$TMP"/out-}: main is in $pct% of the samples (>= 95%)" test "$pct" -ge 95
	grep -E ';by_hash( |;[^ ]*_\[k\] )' "$f" >"$f.by_hash"
	pct=$(share "$f.by_hash" ';main;sort_round;[^;]*qsort[^;]*(;[^;]+)*;by_hash(;.*_\[k\])?$')
	check "${f#"$TMP"/out-}: $pct% of by_hash samples run main;sort_round;<libc qsort frames>;by_hash (>= 95%)" \
		test "$pct" -ge 95
	# msort_with_tmp is local to libc: named from libc6-dbg's symbols only
	pct=$(share "$f.by_hash" ';msort_with_tmp;')
	check "${f#"$TMP"/out-}: libc's frames are named from its debug file (msort_with_tmp in $pct% of by_hash samples, >= 95%)" \
		test "$pct" -ge 95
	# (libc's PLT stubs have no symbol: only the chain's frames are checked)
	check "${f#"$TMP"/out-}: no libc frame between sort_round and by_hash is unnamed" \
		bash -c "! grep -Eq 'sort_round;([^;]*;)*libc\\.so\\.6\\+0x' '$f.by_hash'"
done

# ---- 4. the forged program again: its tables from the cache, still its own
record forged-again "$TMP/forged" 3 --cache "$CACHE"
check "forged-again: its tables come from the cache" \
	grep -Eq 'binaries +loaded in [0-9.]+ ms: [1-9][0-9]* tables from the cache, 0 parsed' \
	"$TMP/forged-again.txt"
pct=$(share "$TMP/out-forged-again/cpu.folded" "$FORGED_CHAIN")
check "forged-again: $pct% of samples show main;chain_one;...;chain_leaf (>= 95%)" \
	test "$pct" -ge 95

left=$(leftovers)
check "nothing left behind: '$left'" test -z "$left"
finish
