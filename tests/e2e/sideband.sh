#!/usr/bin/env bash
# Mappings whose side-band events were lost. The collector learns of a
# process's new mappings from the kernel's mmap events (a per-CPU buffer of
# its own); when that buffer overflows, the kernel drops events and says
# how many. A process that loads a library then, and runs code it knew
# before called from that library, has samples whose instruction is in a
# known mapping but whose callers are not: the unwinder stops at the first
# return address in no known mapping. After a loss the collector reads the
# mappings of each process it samples again (once), so the chain is whole.
#
# The loss is made certain, not hoped for: the test stops the collector
# (its own child, found through the process tree) while the workload maps
# a file 4,000 times and then dlopens the library, so that the buffer is
# full when the library's events come; it lets the collector go on after.
# The workload: main -> late_outer (liblate.so) -> late_inner (liblate.so)
# -> late_leaf (the main program, the hot loop).
source "$(dirname "$0")/lib.sh"
require_root
CC=$(command -v gcc || command -v cc || command -v clang) # as tests/workloads

cat >"$TMP/late_lib.c" <<'C'
#include <stdint.h>
typedef void (*late_cb)(uint64_t);
volatile uint64_t late_sink;
__attribute__((noinline)) void late_inner(late_cb cb, uint64_t n) { cb(n + 1); late_sink++; }
__attribute__((noinline)) void late_outer(late_cb cb, uint64_t n) { late_inner(cb, n + 1); late_sink++; }
C
cat >"$TMP/late.c" <<'C'
#include <dlfcn.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
static volatile uint64_t sink;
__attribute__((noinline)) void late_leaf(uint64_t n)
{
	uint64_t x = n;
	for (int i = 0; i < 1000000; i++)
		x = x * 6364136223846793005ull + 1442695040888963407ull;
	sink += x;
}
static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}
/* argv: the library, seconds of the first part, seconds of the second */
int main(int argc, char **argv)
{
	void (*outer)(void (*)(uint64_t), uint64_t);
	sigset_t set;
	double end;
	void *h;
	int fd, sig;

	if (argc < 4)
		return 2;
	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	sigprocmask(SIG_BLOCK, &set, NULL);
	end = now() + atof(argv[2]);
	for (uint64_t n = 0; now() < end; n++)
		late_leaf(n); /* sampled: the collector reads the mappings */
	printf("ready\n");
	fflush(stdout);
	sigwait(&set, &sig); /* the collector is stopped now */
	fd = open(argv[1], O_RDONLY);
	if (fd < 0)
		return 3;
	/*
	 * an mmap event each: 64 KiB holds ~500 of them, so the buffer fills;
	 * no more than that, as a lowprof running beside the tests sees them too
	 */
	for (int i = 0; i < 4000; i++) {
		void *p = mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0);
		if (p != MAP_FAILED)
			munmap(p, 4096);
	}
	h = dlopen(argv[1], RTLD_NOW);
	if (!h || !(outer = (void (*)(void (*)(uint64_t), uint64_t))dlsym(h, "late_outer")))
		return 4;
	printf("loaded\n");
	fflush(stdout);
	end = now() + atof(argv[3]);
	for (uint64_t n = 0; now() < end; n++)
		outer(late_leaf, n);
	return 0;
}
C
"$CC" -O2 -g -shared -fPIC -o "$TMP/liblate.so" "$TMP/late_lib.c" &&
	"$CC" -O2 -g -o "$TMP/late" "$TMP/late.c" -ldl ||
	{ echo "FAIL: building the workload"; exit 1; }
chmod 755 "$TMP/late" "$TMP/liblate.so"

mkfifo "$TMP/wl.out"
exec 3<>"$TMP/wl.out" # opened for reading first: the workload's open does not wait
start_bg "$TMP/late" "$TMP/liblate.so" "$(scaled 3)" "$(scaled 5)" >"$TMP/wl.out"
WPID=$BGPID
start_bg "$BIN/lowprof" record -p "$WPID" -F 99 --no-cache -v -o "$TMP/out" >"$TMP/rec.log" 2>&1
LP=$BGPID

read -r -t "$(scaled 30)" line <&3
[[ "${line:-}" == ready ]] || { fail "the workload's first part ended (got '${line:-}')"; finish; }
COLL=$(desc_named "$LP" lowprof-collect)
[[ -n "$COLL" ]] || { fail "the collector runs below lowprof record"; cat "$TMP/rec.log"; finish; }
kill -STOP "$COLL"
kill -USR1 "$WPID"
read -r -t "$(scaled 60)" line <&3
stopped_ok=$([[ "${line:-}" == loaded ]] && echo yes)
sleep 0.2
kill -CONT "$COLL"
check "the workload mapped its file and loaded the library while the collector was stopped" \
	test "$stopped_ok" = yes
wait "$WPID"
check "the workload ended well" test $? -eq 0
kill -INT "$LP"
wait "$LP"
check "lowprof record ends with 0 after SIGINT" test $? -eq 0

lost=$(sed -n 's/.*side-band events, \([0-9]*\) lost$/\1/p' "$TMP/rec.log" | tail -n 1)
again=$(sed -n 's/.*maps records (\([0-9]*\) read again after side-band losses).*/\1/p' "$TMP/rec.log" | tail -n 1)
check "the kernel lost side-band events while the collector was stopped (${lost:-none} lost)" \
	test "${lost:-0}" -gt 0
check "the collector read the workload's mappings again after the loss (${again:-none})" \
	test "${again:-0}" -ge 1

F="$TMP/out/cpu.folded"
chain='late_outer;late_inner;late_leaf'"$KTAIL"' [0-9]+$'
called=$(awk '/;late_leaf/ { s += $NF } END { print s + 0 }' "$F")
whole=$(grep -E ";main;$chain" "$F" | awk '{ s += $NF } END { print s + 0 }')
check "samples of late_leaf called from the library ($whole) with main above" test "$whole" -gt 0
# the first part's samples are main;late_leaf; the second part's must be
# whole but for a few taken before the mappings were read again
first=$(grep -E ';main;late_leaf'"$KTAIL"' [0-9]+$' "$F" | awk '{ s += $NF } END { print s + 0 }')
rest=$((called - first - whole))
check "the second part's chains are whole: $whole whole, $rest not (of $called in late_leaf)" \
	test $((rest * 10)) -le "$whole"
[[ $FAILS -eq 0 ]] || { echo "--- folded"; grep late "$F" | head -20; echo "--- log"; tail -20 "$TMP/rec.log"; }
finish
