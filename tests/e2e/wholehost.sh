#!/usr/bin/env bash
# Whole-host profile: a busy loop in a shell shows up, and a process that
# lives in system calls shows kernel frames (a pure user-space loop is
# interrupted in the kernel too rarely to count on in 5 s).
source "$(dirname "$0")/lib.sh"
require_root

cp /bin/sh "$TMP/busyloop-sh"
start_bg "$TMP/busyloop-sh" -c 'while :; do :; done'
LOOP=$BGPID
cp "$(command -v dd)" "$TMP/syscall-dd"
start_bg "$TMP/syscall-dd" if=/dev/zero of=/dev/null bs=16
DD=$BGPID
"$BIN/lowprof" record -d 5 -o "$TMP/out" > "$TMP/summary" 2>&1
rc=$?
cat "$TMP/summary"
check "lowprof record exits 0 (got $rc)" test "$rc" -eq 0
F="$TMP/out/cpu.folded"
pct=$(share "$F" '^busyloop-sh;')
check "the busy loop has $pct% of the host's samples (>= 20%)" test "$pct" -ge 20
check "kernel frames are present and suffixed _[k]" grep -q '_\[k\]' "$F"
check "the system-call loop's stacks go through do_syscall_64_[k]" \
	grep -q '^syscall-dd;.*do_syscall_64_\[k\]' "$F"
check "the summary names the duration, samples, losses and processes" \
	grep -q 'processes seen' "$TMP/summary"
check "the summary lists top functions by self and total" \
	bash -c "grep -q 'Top functions by self' '$TMP/summary' && grep -q 'Top functions by total' '$TMP/summary'"
kill "$LOOP" "$DD"
finish
