#!/usr/bin/env bash
# Binaries deleted or replaced under a running process (an upgrade, a
# redeploy): /proc/PID/maps says "PATH (deleted)" and the path leads
# nowhere, or to another file. lowprof record -p still symbolizes them from
# the mapping itself (collector/files.c): the executable through
# /proc/PID/exe, a shared library through /proc/PID/map_files (the
# collector keeps CAP_CHECKPOINT_RESTORE for it, collector/caps.c). A
# capture of such a process replays with the binary found by build-id
# under --debug-dir, or at the path it had (the build-id checked).
#   1. the executable deleted;
#   2. the executable replaced by another file at the same path;
#   3. its libc (a copy, loaded through LD_LIBRARY_PATH) deleted;
#   4. the same, recorded without CAP_CHECKPOINT_RESTORE: said, not fatal.
source "$(dirname "$0")/lib.sh"
require_root

CHAIN='main;chain_one;chain_two;chain_three;chain_leaf(;[^;]+_\[k\])*$'
LIBC=$(ldd "$WL/chain-nofp" | awk '$1 == "libc.so.6" { print $3 }')

# run NAME [ENV...]: starts a copy of chain-nofp in $TMP/NAME/, sets WPID
run() {
	local d=$TMP/$1
	shift
	mkdir -p "$d" && cp "$WL/chain-nofp" "$d/chain-nofp"
	start_bg env "$@" "$d/chain-nofp" "$(scaled 60)"
	WPID=$BGPID
	sleep 0.3
}

# record NAME [ARGS...]: records WPID for 3 s into $TMP/NAME.out/ (summary in NAME.log)
record() {
	local name=$1
	shift
	"$BIN/lowprof" record -p "$WPID" -d "$(scaled 3)" -o "$TMP/$name.out" --no-cache "$@" \
		>"$TMP/$name.log" 2>&1
	RC=$?
	grep -E '^ +binaries|files:|warning' "$TMP/$name.log"
	head -3 "$TMP/$name.out/cpu.folded" 2>/dev/null | cut -c1-200
}

# symbolized NAME REGEX WHAT: the record exited 0 and >= 90% of samples match
symbolized() {
	local pct
	check "$1: lowprof record exits 0 (got $RC)" test "$RC" -eq 0
	pct=$(share "$TMP/$1.out/cpu.folded" "$2")
	check "$1: $pct% of samples show $3 (>= 90%)" test "$pct" -ge 90
}

# ---- 1. the executable deleted
run exe
rm "$TMP/exe/chain-nofp"
check "exe: maps says it is deleted" grep -q "$TMP/exe/chain-nofp (deleted)\$" "/proc/$WPID/maps"
record exe --capture "$TMP/exe.lpcap"
symbolized exe "^chain-nofp;.*$CHAIN" "main;chain_one;chain_two;chain_three;chain_leaf"
check "exe: the collector handed the file over" \
	grep -Eq 'files: [1-9][0-9]* mapped files handed' "$TMP/exe.log"
kill "$WPID" 2>/dev/null

# the capture, replayed: the deleted path is no more, the build-id finds it
id=$(readelf -n "$WL/chain-nofp" | awk '/Build ID:/ { print $3 }')
check "the workload has a build-id ($id)" test -n "$id"
mkdir -p "$TMP/dbg/.build-id/${id:0:2}"
cp "$WL/chain-nofp" "$TMP/dbg/.build-id/${id:0:2}/${id:2}"
chmod -R a+rX "$TMP/dbg"
"$BIN/lowprof" replay "$TMP/exe.lpcap" -o "$TMP/replay" --no-cache --debug-dir "$TMP/dbg" \
	>"$TMP/replay.log" 2>&1
rc=$?
check "replay: exits 0 (got $rc)" test "$rc" -eq 0
pct=$(share "$TMP/replay/cpu.folded" "^chain-nofp;.*$CHAIN")
check "replay: $pct% of samples show the chain, binary found under --debug-dir (>= 90%)" \
	test "$pct" -ge 90
# or, without --debug-dir, the same build installed again at the path it had
cp "$WL/chain-nofp" "$TMP/exe/chain-nofp"
"$BIN/lowprof" replay "$TMP/exe.lpcap" -o "$TMP/replay2" --no-cache >"$TMP/replay2.log" 2>&1
rc=$?
grep -E 'warning' "$TMP/replay2.log"
check "replay at the path: exits 0 (got $rc)" test "$rc" -eq 0
pct=$(share "$TMP/replay2/cpu.folded" "^chain-nofp;.*$CHAIN")
check "replay at the path: $pct% of samples show the chain, the same build found where it was (>= 90%)" \
	test "$pct" -ge 90

# ---- 2. the executable replaced: another file (another inode) at its path
run replaced
cp "$WL/chain-fp" "$TMP/replaced/new" && mv "$TMP/replaced/new" "$TMP/replaced/chain-nofp"
record replaced
symbolized replaced "^chain-nofp;.*$CHAIN" "main;chain_one;chain_two;chain_three;chain_leaf"
kill "$WPID" 2>/dev/null

# ---- 3. a shared library deleted: only /proc/PID/map_files reaches it
check "chain-nofp links libc.so.6 ($LIBC)" test -f "$LIBC"
mkdir -p "$TMP/lib" && cp "$LIBC" "$TMP/lib/libc.so.6"
run lib LD_LIBRARY_PATH="$TMP/lib"
check "lib: the workload maps the copy of libc" grep -q "$TMP/lib/libc.so.6\$" "/proc/$WPID/maps"
rm "$TMP/lib/libc.so.6"
start_bg "$BIN/lowprof" record -p "$WPID" -d "$(scaled 3)" -o "$TMP/lib.out" --no-cache >"$TMP/lib.log" 2>&1
REC=$BGPID
sleep 1.5
COL=$(desc_named "$REC" lowprof-collect)
# CAP_CHECKPOINT_RESTORE is bit 40, where the kernel knows it (5.9+)
if [[ -n "$COL" && $(cat /proc/sys/kernel/cap_last_cap) -ge 40 ]]; then
	eff=$(awk '/^CapEff:/ { print $2 }' "/proc/$COL/status")
	check "lib: the collector kept CAP_CHECKPOINT_RESTORE (CapEff $eff)" \
		test $((0x$eff >> 40 & 1)) -eq 1
fi
wait "$REC"
RC=$?
grep -E '^ +binaries|files:|warning' "$TMP/lib.log"
head -3 "$TMP/lib.out/cpu.folded" 2>/dev/null | cut -c1-200
symbolized lib "^chain-nofp;_start;__libc_start_main_impl;__libc_start_call_main;$CHAIN" \
	"the deleted libc's frames and the chain"
kill "$WPID" 2>/dev/null

# ---- 4. the same without CAP_CHECKPOINT_RESTORE (a unit or pod not given
# it): the record still runs, says why, and shows the library's frames as
# offsets
if [[ $(cat /proc/sys/kernel/cap_last_cap) -ge 40 ]]; then
	cp "$LIBC" "$TMP/lib/libc.so.6"
	run nocap LD_LIBRARY_PATH="$TMP/lib"
	rm "$TMP/lib/libc.so.6"
	setpriv --bounding-set=-checkpoint_restore -- "$BIN/lowprof" record -p "$WPID" \
		-d "$(scaled 3)" -o "$TMP/nocap.out" --no-cache >"$TMP/nocap.log" 2>&1
	rc=$?
	grep -E '^ +binaries|files:|warning' "$TMP/nocap.log" | cut -c1-300
	head -2 "$TMP/nocap.out/cpu.folded" 2>/dev/null | cut -c1-200
	check "nocap: lowprof record exits 0 (got $rc)" test "$rc" -eq 0
	check "nocap: the collector says the deleted library needs CAP_CHECKPOINT_RESTORE" \
		grep -Eq "warning: files: pid $WPID's $TMP/lib/libc.so.6 \(deleted\) is deleted or replaced.*CAP_CHECKPOINT_RESTORE" \
		"$TMP/nocap.log"
	pct=$(share "$TMP/nocap.out/cpu.folded" "^chain-nofp;(.*;)?libc.so.6 \(deleted\)\+0x[0-9a-f]+;.*$CHAIN")
	check "nocap: $pct% of samples show libc's frames as offsets, then the chain (>= 90%)" \
		test "$pct" -ge 90
	kill "$WPID" 2>/dev/null
fi

sleep 0.3
left=$(leftovers)
check "nothing left behind: '$left'" test -z "$left"
finish
