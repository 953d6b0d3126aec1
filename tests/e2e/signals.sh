#!/usr/bin/env bash
# Ctrl-C writes what was collected; no exit path leaves processes, BPF
# programs or shared memory behind. The symbolizer killed again and again is
# started again each time, by the rule (not within a second of its start),
# and the collector never stops. Nothing here waits a fixed time for lowprof
# or the workload: it waits for what lowprof says and for the workload's own
# CPU time, and compares sample counts with that CPU time (lib.sh).
source "$(dirname "$0")/lib.sh"
require_root

start_bg "$WL/chain-fp" 1200
WPID=$BGPID

# record_started NAME OPTIONS...: lowprof record -p the workload, its output
# in $TMP/NAME.log; REC its pid, once the collector says it is profiling
record_started() {
	local name=$1
	shift
	start_bg "$BIN/lowprof" record -p "$WPID" -o "$TMP/out-$name" "$@" >"$TMP/$name.log" 2>&1
	REC=$BGPID
	wait_log "$TMP/$name.log" 'profiling the given processes' ||
		fail "$name: the collector never said it was profiling"
}
folded_total() { awk '{s += $NF} END {print s + 0}' "$1" 2>/dev/null; }

for sig in INT TERM; do
	record_started "$sig"
	# ~2 s of the workload's CPU, however long that takes here
	c0=$(cpu_ms "$WPID")
	wait_cpu "$WPID" 2000
	c1=$(cpu_ms "$WPID")
	kill -"$sig" "$REC"
	wait "$REC"; rc=$?
	check "SIG$sig: lowprof record exits 0 (got $rc)" test "$rc" -eq 0
	n=$(folded_total "$TMP/out-$sig/cpu.folded")
	check "SIG$sig: cpu.folded has the samples of the workload's $((c1 - c0)) ms of CPU ($n, at least $(samples_floor $((c1 - c0))))" \
		enough_samples "$n" $((c1 - c0))
	check "SIG$sig: cpu.pb.gz written" test -s "$TMP/out-$sig/cpu.pb.gz"
	left=$(leftovers)
	check "SIG$sig: nothing left behind" test -z "$left"
done

# lowprof killed outright: its children must not outlive it
record_started kill
kill -KILL "$REC"
wait "$REC" 2>/dev/null
left=$(leftovers)
check "SIGKILL of lowprof: collector and symbolizer exit, BPF programs gone: '$left'" test -z "$left"

# the collector killed outright: the symbolizer still writes what it got
# (the samples of c0..c1: the collector had the workload's next 300 ms of
# CPU to drain them before it was killed)
record_started ckill
c0=$(cpu_ms "$WPID")
wait_cpu "$WPID" 2000
c1=$(cpu_ms "$WPID")
wait_cpu "$WPID" 300
kill -KILL "$(desc_named "$REC" lowprof-collect)"
wait "$REC"; rc=$?
check "collector killed: lowprof record reports failure (got $rc)" test "$rc" -ne 0
n=$(folded_total "$TMP/out-ckill/cpu.folded")
check "collector killed: the samples of the workload's $((c1 - c0)) ms of CPU before it are kept ($n, at least $(samples_floor $((c1 - c0))))" \
	enough_samples "$n" $((c1 - c0))
left=$(leftovers)
check "collector killed: nothing left behind: '$left'" test -z "$left"

# the symbolizer killed ten times: lowprof record starts it again each time,
# the collector never stops, and the profile covers the last stretch. The
# rule (cli/record.c): a symbolizer that dies within a second of its start
# is not started again (a start-up failure), one that dies later is, up to
# 20 times. So each is killed only once its own start time (/proc, which is
# after the supervisor took its start time) is 1.2 s past, whatever the
# machine's load: every kill must then bring a restart.
# age_ms PID: how long ago PID started, in ms (field 22 of /proc/PID/stat,
# in clock ticks since boot, against /proc/uptime)
age_ms() {
	local s up
	s=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
	s=${s##*) }
	# shellcheck disable=SC2086
	set -- $s
	read -r up _ </proc/uptime
	awk -v u="$up" -v st="${20}" -v hz="$CLK_TCK" 'BEGIN { printf "%d", u * 1000 - st * 1000 / hz }'
}
# next_symbolizer NOT-PID: waits (up to 60 s) for a symbolizer of REC other
# than NOT-PID, then until it is 1.2 s old; prints its pid
next_symbolizer() {
	local s end=$((SECONDS + 60))
	while :; do
		s=$(desc_named "$REC" lowprof-symboli)
		[[ -n "$s" && "$s" != "$1" ]] && break
		((SECONDS >= end)) && return 1
		sleep 0.05
	done
	while (($(age_ms "$s" || echo -1) < 1200)); do
		((SECONDS >= end)) && return 1
		sleep 0.05
	done
	echo "$s"
}
record_started skill
COL0=$(desc_named "$REC" lowprof-collect)
kills=0 SYM=""
for i in $(seq 10); do
	SYM=$(next_symbolizer "$SYM") || break
	kill -KILL "$SYM" && kills=$((kills + 1))
	COL=$(desc_named "$REC" lowprof-collect)
	[[ "$COL" == "$COL0" ]] || break
done
c0=$(cpu_ms "$WPID")
# the last one started again, then ~3 s of the workload's CPU
last=$(next_symbolizer "$SYM")
wait_cpu "$WPID" 3000
c1=$(cpu_ms "$WPID")
COL=$(desc_named "$REC" lowprof-collect)
check "symbolizer killed $kills times, each 1.2 s or more after its start: the collector kept running (pid ${COL:-none} = $COL0)" \
	test -n "$COL0" -a "$COL" = "$COL0" -a "$kills" -eq 10
check "symbolizer killed: the last kill brought a new one too (${last:-none})" test -n "$last"
kill -INT "$REC"
wait "$REC"; rc=$?
grep -E 'died|restarted' "$TMP/skill.log"
check "symbolizer killed: lowprof record completes (got $rc)" test "$rc" -eq 0
restarts=$(grep -c 'lowprof-symbolizer died .*; starting it again' "$TMP/skill.log")
check "symbolizer killed $kills times: started again each time ($restarts)" test "$restarts" -eq "$kills"
check "symbolizer killed: the summary counts the $kills restarts" \
	grep -q "the symbolizer was restarted $kills times" "$TMP/skill.log"
# the kernel symbols sent again after the capabilities are gone still have
# addresses (the collector reads the fd it opened with CAP_SYSLOG)
check "symbolizer killed: the kernel symbols resent had their addresses" \
	bash -c "! grep -q 'addresses are hidden' '$TMP/skill.log'"
# the last symbolizer reads the ring from where the killed one stopped: the
# profile holds at least the samples since the last kill
n=$(folded_total "$TMP/out-skill/cpu.folded")
check "symbolizer killed: the profile has the samples of the workload's $((c1 - c0)) ms of CPU since the last kill ($n, at least $(samples_floor $((c1 - c0))))" \
	enough_samples "$n" $((c1 - c0))
pct=$(share "$TMP/out-skill/cpu.folded" 'chain_one;chain_two;chain_three;chain_leaf'"$KTAIL"'$')
check "symbolizer killed: those samples have the whole chain ($pct%)" test "${pct:-0}" -ge 90
left=$(leftovers)
check "symbolizer killed: nothing left behind: '$left'" test -z "$left"
finish
