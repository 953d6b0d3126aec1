#!/usr/bin/env bash
# lowprof run killed outright (SIGKILL): its children (collector,
# symbolizer, and the exporter, whose uid change cleared the parent-death
# signal) do not outlive it, and the directory of its ring's socket
# (/run/lowprof-run.XXXXXX), which it could not remove, is removed by the
# next run, because its lock is free. A live run's directory, one whose lock
# is held (a lowprof service), and one without a pid file (a run still
# making it, or another lowprof's) are left alone.
source "$(dirname "$0")/lib.sh"
require_root

start_bg "$WL/chain-fp" "$(scaled 60)"
WPID=$BGPID
BASE=/run
[[ -w /run ]] || BASE=/tmp

# run_dir RUN: the socket directory of lowprof run RUN (its collector's --ring)
run_dir() {
	local c
	c=$(desc_named "$1" lowprof-collect)
	[[ -n "$c" ]] || return 1
	tr '\0' '\n' <"/proc/$c/cmdline" | sed -n '/^--ring$/{n;p;q}' | xargs -r dirname
}

# A: a run that stays alive throughout
start_bg "$BIN/lowprof" run --window 1 --spool "$TMP/spool-a" -p "$WPID" >"$TMP/a.log" 2>&1
A=$BGPID
wait_log "$TMP/a.log" 'profiling the given processes' || fail "run A never started profiling"
DA=$(run_dir "$A")
check "run A's socket directory ($DA) holds its pid" test "$(cat "$DA/pid" 2>/dev/null)" = "$A"

# B: killed outright, with an exporter (its destination need not answer)
start_bg "$BIN/lowprof" run --window 1 --spool "$TMP/spool-b" -p "$WPID" \
	--otlp http://127.0.0.1:9 >"$TMP/b.log" 2>&1
B=$BGPID
wait_log "$TMP/b.log" 'profiling the given processes' || fail "run B never started profiling"
DB=$(run_dir "$B")
check "run B has an exporter" test -n "$(desc_named "$B" lowprof-exporte)"
kill -KILL "$B"
wait "$B" 2>/dev/null
# b_left: what is left of run B below the test (A runs on): its processes name its spool or ring
b_left() {
	local end=$((SECONDS + $(scaled 30))) left
	while :; do
		left=$(leftovers_now | grep -e "spool-b" -e "$DB" | grep '^process')
		[[ -z "$left" || SECONDS -ge end ]] && break
		sleep 0.1
	done
	echo "$left"
}
left=$(b_left)
check "SIGKILL of lowprof run: collector, symbolizer and exporter exit: '$left'" test -z "$left"
check "run B's socket directory ($DB) is still there, as nobody removed it" test -d "$DB"

# a directory whose pid names nobody but whose lock is held (a lowprof
# service's), and one without a pid file
HELD=$(mktemp -d "$BASE/lowprof-run.XXXXXX")
echo 999999999 >"$HELD/pid"
start_bg flock -x "$HELD" sleep "$(scaled 60)"
HOLDER=$BGPID
NOPID=$(mktemp -d "$BASE/lowprof-run.XXXXXX")
sleep 0.5

# C: the next run removes B's directory, and only that (unless another
# lowprof run on this host started meanwhile and removed it first)
b_there=$(test -d "$DB" && echo yes)
"$BIN/lowprof" run --window 1 --spool "$TMP/spool-c" -p "$WPID" -d 2 >"$TMP/c.log" 2>&1
rc=$?
check "run C exits 0 (got $rc)" test "$rc" = 0
check "run C removed run B's directory" test ! -e "$DB"
if [[ -n "$b_there" ]]; then
	check "run C said so, naming B's pid" grep -q "removed ${DB##*/}, left behind by lowprof run $B, which is gone" "$TMP/c.log"
else
	echo "note: another lowprof run removed B's directory before run C started"
fi
check "live run A's directory is kept" test -S "$DA/ring.sock" -a -f "$DA/pid"
check "a directory whose lock is held is kept" test -f "$HELD/pid"
check "a directory without a pid file is kept" test -d "$NOPID"
check "run A is still running" kill -0 "$A"
kill "$HOLDER"
rm -rf "$HELD" "$NOPID"

kill -TERM "$A"
wait "$A"
rc=$?
check "run A stops with 0 (got $rc)" test "$rc" = 0
check "run A removed its own directory" test ! -e "$DA"
finish
