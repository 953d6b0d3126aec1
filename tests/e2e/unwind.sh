#!/usr/bin/env bash
# Correct user stacks for binaries lowprof has never seen, the way a user
# checks them: C programs with a chain of four noinline functions under
# main, built -O2 with and without frame pointers (no debug info: CFI from
# .eh_frame only), a C++ program whose hot code is a template member
# function, a program whose hot code is a callback libc's qsort calls, and
# a thread that was running before lowprof started.
# Each is profiled with `lowprof record -d 5 -p PID`; the chain must be
# whole in >= 95% of samples. The same workload under
# `perf record --call-graph dwarf` gives the same top chain. A second run
# takes its tables from the cache; a cache damaged by hand is moved aside,
# rebuilt, and the profile is still right.
source "$(dirname "$0")/lib.sh"
require_root

CACHE_DIR="$TMP/cache"
mkdir -p "$CACHE_DIR"
chown lowprof "$CACHE_DIR"
CACHE="$CACHE_DIR/symbols.db"

cat >"$TMP/walk.c" <<'C'
#include <stdint.h>
#include <stdlib.h>
#include <time.h>
static volatile uint64_t sink;
__attribute__((noinline)) void walk_leaf(uint64_t n)
{
	uint64_t x = n;
	for (int i = 0; i < 2000000; i++)
		x = x * 2862933555777941757ull + 3037000493ull;
	sink += x;
}
__attribute__((noinline)) void walk_three(uint64_t n) { walk_leaf(n ^ 3); sink++; }
__attribute__((noinline)) void walk_two(uint64_t n) { walk_three(n ^ 2); sink++; }
__attribute__((noinline)) void walk_one(uint64_t n) { walk_two(n ^ 1); sink++; }
int main(int argc, char **argv)
{
	time_t end = time(NULL) + (argc > 1 ? atoi(argv[1]) : 30);
	for (uint64_t n = 0; time(NULL) < end; n++)
		walk_one(n);
	return 0;
}
C
cat >"$TMP/tmpl.cc" <<'C'
#include <cstdint>
#include <cstdlib>
#include <ctime>
namespace ns {
template <class T> struct Type {
	T state;
	__attribute__((noinline)) T method(T n)
	{
		for (int i = 0; i < 2000000; i++)
			state = state * 6364136223846793005ull + n;
		return state;
	}
};
} // namespace ns
static volatile long sink;
__attribute__((noinline)) static void drive(ns::Type<long> &t, long n) { sink += t.method(n); }
int main(int argc, char **argv)
{
	ns::Type<long> t{1};
	time_t end = time(nullptr) + (argc > 1 ? atoi(argv[1]) : 30);
	for (long n = 0; time(nullptr) < end; n++)
		drive(t, n);
	return 0;
}
C
gcc -O2 -fomit-frame-pointer -o "$TMP/walk-nofp" "$TMP/walk.c" || fail "gcc walk-nofp"
gcc -O2 -fno-omit-frame-pointer -o "$TMP/walk-fp" "$TMP/walk.c" || fail "gcc walk-fp"
g++ -O2 -o "$TMP/tmpl" "$TMP/tmpl.cc" || fail "g++ tmpl"

# profile NAME PROGRAM [ARGS...]: runs PROGRAM 12 ARGS... (12 s), records 5 s
# of it into $TMP/out-NAME, keeps the summary in $TMP/NAME.txt
profile() {
	local name=$1 prog=$2; shift 2
	start_bg "$prog" 12 "$@"
	local wpid=$BGPID
	sleep 0.3
	"$BIN/lowprof" record -d 5 -p "$wpid" -o "$TMP/out-$name" --cache "$CACHE" \
		>"$TMP/$name.txt" 2>&1
	local rc=$?
	kill "$wpid" 2>/dev/null
	wait "$wpid" 2>/dev/null
	check "$name: lowprof record exits 0 (got $rc)" test "$rc" -eq 0
	grep -E 'user stacks|ended early|binaries' "$TMP/$name.txt"
}

for v in nofp fp; do
	profile "walk-$v" "$TMP/walk-$v"
	F="$TMP/out-walk-$v/cpu.folded"
	echo "--- walk-$v: top stacks"; sort -t' ' -k2 -nr "$F" | head -3
	# the chain, whole and in order, from libc's start code down to the leaf
	# (libc's local __libc_start_call_main is named from libc6-dbg's symbols,
	# else shown as libc.so.6+0xOFFSET: a frame either way)
	pct=$(share "$F" '^walk-'$v';(.*;)?(__libc_start_call_main|libc\.so\.6\+0x[0-9a-f]+);main;walk_one;walk_two;walk_three;walk_leaf$')
	check "walk-$v: $pct% of samples show ...;main;walk_one;walk_two;walk_three;walk_leaf (>= 95%)" \
		test "$pct" -ge 95
done

# a thread that was running before lowprof started: its stack copies end at
# its thread pointer, and still hold its frames up to clone
profile thread "$WL/chain-nofp" 0 thread
pct=$(share "$TMP/out-thread/cpu.folded" '^chain-nofp;(.*;)?start_thread;chain_thread;chain_one;chain_two;chain_three;chain_leaf'"$KTAIL"'$')
check "thread: $pct% of samples show ...;start_thread;chain_thread;chain_one;...;chain_leaf (>= 95%)" \
	test "$pct" -ge 95

profile tmpl "$TMP/tmpl"
F="$TMP/out-tmpl/cpu.folded"
echo "--- tmpl: top stacks"; sort -t' ' -k2 -nr "$F" | head -3
pct=$(share "$F" ';main;drive\(ns::Type<long>&, long\);ns::Type<long>::method$|;main;drive;ns::Type<long>::method$')
check "tmpl: $pct% of samples end main;drive;ns::Type<long>::method, demangled (>= 95%)" \
	test "$pct" -ge 95

profile sorter "$WL/sorter"
F="$TMP/out-sorter/cpu.folded"
echo "--- sorter: top stacks"; sort -t' ' -k2 -nr "$F" | head -3
# main -> sort_round -> qsort (libc: qsort_r, msort_with_tmp...) -> by_hash
# of the samples in the callback (the rest is libc's own merging)
grep -E ';by_hash( |;[^ ]*_\[k\] )' "$F" >"$TMP/by_hash.folded"
pct=$(share "$TMP/by_hash.folded" ';main;sort_round;[^;]*qsort[^;]*(;[^;]+)*;by_hash(;.*_\[k\])?$')
check "sorter: $pct% of by_hash samples run main;sort_round;<libc qsort frames>;by_hash (>= 95%)" \
	test "$pct" -ge 95
libc_frames=$(grep -Eo 'sort_round;[^ ]*;by_hash' "$F" | head -1)
echo "    e.g. $libc_frames"

# the same workload under perf --call-graph dwarf: the same top chain
if command -v perf >/dev/null; then
	start_bg "$TMP/walk-nofp" 12
	wpid=$BGPID
	sleep 0.3
	perf record -q --call-graph dwarf -F 99 -p "$wpid" -o "$TMP/perf.data" -- sleep 4 \
		>/dev/null 2>&1
	kill "$wpid" 2>/dev/null
	# fold perf script's stacks (leaf first) into root-first chains of user functions
	perf script -i "$TMP/perf.data" 2>/dev/null | awk '
		function flush(  s, i) {
			if (n) { s = ""; for (i = n; i >= 1; i--) s = s (s == "" ? "" : ";") f[i]; c[s]++ }
			n = 0
		}
		/^[^ \t]/ || /^$/ { flush(); next }
		{ sym = $2; sub(/\+0x[0-9a-f]+$/, "", sym); if (sym != "[unknown]") f[++n] = sym }
		END { flush(); for (s in c) print s, c[s] }' >"$TMP/perf.folded"
	perf_top=$(sort -k2 -nr "$TMP/perf.folded" | head -1 | grep -Eo 'main;walk_one;[^ ]*')
	ours_top=$(sort -t' ' -k2 -nr "$TMP/out-walk-nofp/cpu.folded" | head -1 | grep -Eo 'main;walk_one;[^ ]*')
	echo "    perf --call-graph dwarf top chain: $perf_top"
	echo "    lowprof top chain:                 $ours_top"
	check "perf --call-graph dwarf and lowprof agree on the top chain" \
		test -n "$perf_top" -a "$perf_top" = "$ours_top"
fi

# second run on the same binaries: everything from the cache, nothing parsed
profile walk-again "$TMP/walk-nofp"
check "second run takes tables from the cache" \
	grep -Eq 'binaries +loaded in [0-9.]+ ms: [1-9][0-9]* tables from the cache, 0 parsed' \
	"$TMP/walk-again.txt"

# a cache damaged by hand (cut short, then its header overwritten): each
# time warned, moved aside, rebuilt, and the profile is the same
damaged() {
	local name=$1
	profile "$name" "$TMP/walk-nofp"
	check "$name: a warning names the cache" grep -Eq "cache: $CACHE.*damaged" "$TMP/$name.txt"
	check "$name: moved aside to $CACHE.corrupt" test -e "$CACHE.corrupt"
	check "$name: rebuilt (tables parsed and stored again)" \
		grep -Eq 'binaries .* [1-9][0-9]* parsed .* [1-9][0-9]* stored' "$TMP/$name.txt"
	pct=$(share "$TMP/out-$name/cpu.folded" ';main;walk_one;walk_two;walk_three;walk_leaf$')
	check "$name: $pct% of samples still show the whole chain (>= 95%)" test "$pct" -ge 95
	rm -f "$CACHE.corrupt"*
}
truncate -s $(($(stat -c %s "$CACHE") * 6 / 10)) "$CACHE"
damaged cache-truncated
dd if=/dev/urandom of="$CACHE" bs=100 count=1 conv=notrunc status=none
damaged cache-garbage

left=$(leftovers)
check "nothing left behind: '$left'" test -z "$left"
finish
