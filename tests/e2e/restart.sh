#!/usr/bin/env bash
# The service's two halves restarted independently while the other runs:
#  - lowprof run: its collector killed (SIGKILL) is started again; the
#    symbolizer, still running (the same process), reads the new one's ring
#    into the same windows: numbers without a gap, samples again after the
#    restart, and the window of the restart says so in its comments; one
#    stopped from elsewhere (SIGTERM) is started again too, and the run
#    ends at its -d
#  - as the systemd units run them (lowprof-collector --ring PATH,
#    lowprof-symbolizer --ring PATH --spool): the collector stopped cleanly,
#    then killed, then started again each time; the symbolizer stays the
#    same process, writes a window every 2 s throughout, and profiles each
#    new collector's samples
source "$(dirname "$0")/lib.sh"
require_root

start_bg "$WL/chain-fp" "$(scaled 90)"
WPID=$BGPID
sleep 0.3
samples() { # samples FILE
	go tool pprof -raw "$1" 2>/dev/null |
		awk '/^Samples:/ {on = 1; next} on && /^ +[0-9]+ +[0-9]+:/ {s += $1} /^Locations/ {on = 0} END {print s + 0}'
}
seqs_contiguous() { # seqs_contiguous DIR: cpu window numbers 0..n-1, none missing
	local n
	n=$(ls "$1" | grep -c '^cpu-')
	test "$n" -gt 0 && test "$(ls "$1" | grep '^cpu-' | sed 's/.*-\([0-9]\{6\}\)\.pb\.gz$/\1/' | sort | tail -1)" = \
		"$(printf '%06d' $((n - 1)))"
}

# --- lowprof run: the collector killed
SP=$TMP/spool
start_bg "$BIN/lowprof" run --window 2 --spool "$SP" -p "$WPID" >"$TMP/run.out" 2>&1
RUN=$BGPID
sleep "$(scaled 5)"
COL=$(desc_named "$RUN" lowprof-collect)
SYM=$(desc_named "$RUN" lowprof-symboli)
[[ -n "$COL" && -n "$SYM" ]] || { fail "lowprof run did not start ($COL, $SYM)"; cat "$TMP/run.out"; finish; }
before=$(ls "$SP" | grep -c '^cpu-')
kill -KILL "$COL"
sleep "$(scaled 7)"
COL2=$(desc_named "$RUN" lowprof-collect)
check "a killed collector is started again (was $COL, now ${COL2:-none})" \
	test -n "$COL2" -a "$COL2" != "$COL"
check "the symbolizer is the same process ($SYM)" test "$(desc_named "$RUN" lowprof-symboli)" = "$SYM"
kill -TERM "$RUN"
wait "$RUN"
rc=$?
grep -E 'warning|ring:' "$TMP/run.out"
check "lowprof run still stops on SIGTERM with 0 (got $rc)" test "$rc" = 0
check "no lowprof process of the run is left" test -z "$(descendants "$RUN")"
mapfile -t files < <(ls "$SP" | grep '^cpu-' | sort -t- -k3)
check "windows before and after the restart ($before, then ${#files[@]})" test "${#files[@]}" -ge $((before + 3))
check "the windows are numbered without a gap" seqs_contiguous "$SP"
restarted=$(for f in "${files[@]}"; do go tool pprof -comments "$SP/$f" 2>/dev/null; done | grep -c 'collector started again')
check "one window says the collector started again (got $restarted)" test "$restarted" = 1
# the windows after the one of the restart: the new collector's samples, with the chain
after=0
seen=""
for f in "${files[@]}"; do
	if [[ -n "$seen" ]]; then
		n=$(samples "$SP/$f")
		after=$((after + n))
		((n > ${most:-0})) && most=$n && last=$f
	fi
	go tool pprof -comments "$SP/$f" 2>/dev/null | grep -q 'collector started again' && seen=$f
done
check "the windows after the restart have the workload's samples (got $after)" test "$after" -ge 100
check "and its chain (${last:-none})" \
	bash -c "go tool pprof -traces '$SP/${last:-none}' 2>/dev/null | grep -A4 -w chain_leaf | grep -qw chain_one"

# --- lowprof run: its collector stopped from elsewhere (SIGTERM: it exits 0)
# is started again too, for what is left of -d (it ended the whole run)
SP3=$TMP/spool3
t0=$(date +%s)
start_bg "$BIN/lowprof" run --window 1 --spool "$SP3" -p "$WPID" -d "$(scaled 14)" >"$TMP/run3.out" 2>&1
RUN3=$BGPID
wait_log "$TMP/run3.out" 'profiling the given processes' || fail "run 3 never started profiling"
sleep "$(scaled 2)"
COL=$(desc_named "$RUN3" lowprof-collect)
SYM=$(desc_named "$RUN3" lowprof-symboli)
[[ -n "$COL" ]] && kill -TERM "$COL"
t_kill=$(date +%s)
COL2=
for _ in $(seq $((50 * TIME_SCALE))); do
	COL2=$(desc_named "$RUN3" lowprof-collect)
	[[ -n "$COL2" && "$COL2" != "$COL" ]] && break
	sleep 0.2
done
check "a collector stopped from elsewhere is started again (was $COL, now ${COL2:-none})" \
	test -n "$COL2" -a "$COL2" != "$COL"
check "the symbolizer is the same process ($SYM)" test "$(desc_named "$RUN3" lowprof-symboli)" = "$SYM"
wait "$RUN3"
rc=$?
grep -E 'collector|again' "$TMP/run3.out"
check "lowprof run ends with 0 at its -d (got $rc, after $(($(date +%s) - t0)) s)" \
	test "$rc" = 0 -a $(($(date +%s) - t0)) -ge "$(scaled 14)"
check "it says the collector was stopped and started again" \
	grep -q 'lowprof-collector was stopped (exit status 0); starting it again' "$TMP/run3.out"
after=$(find "$SP3" -name 'cpu-*.pb.gz' -newermt "@$((t_kill + 2))" | wc -l)
check "windows go on after the stop (got $after)" test "$after" -ge 5
check "the windows are numbered without a gap" seqs_contiguous "$SP3"

# --- the units' way: a collector on a socket, stopped and killed, a symbolizer that stays
SD=$TMP/sock
mkdir -m 711 "$SD"
SP2=$TMP/spool2
mkdir -m 700 "$SP2" && chown lowprof: "$SP2"
collector() { start_bg "$BIN/lowprof-collector" --ring "$SD/ring.sock" --ring-owner lowprof -p "$WPID"; }
collector
C=$BGPID
start_bg "$BIN/lowprof-symbolizer" --ring "$SD/ring.sock" --spool "$SP2" --window 2 --user lowprof \
	--no-cache
S=$BGPID
sleep "$(scaled 5)"
kill -TERM "$C" # stopped: it ends its ring
wait "$C"
sleep "$(scaled 3)"
check "the symbolizer outlives its collector's stop" kill -0 "$S"
collector
C=$BGPID
sleep "$(scaled 5)"
kill -KILL "$C" # killed: its ring is never ended
wait "$C" 2>/dev/null
sleep "$(scaled 3)"
check "the symbolizer outlives its collector's death" kill -0 "$S"
collector
C=$BGPID
sleep "$(scaled 6)"
kill -TERM "$S"
wait "$S"
rc=$?
kill -TERM "$C"
wait "$C" 2>/dev/null
check "the symbolizer stops on SIGTERM with 0 (got $rc)" test "$rc" = 0
check "its windows are numbered without a gap" seqs_contiguous "$SP2"
mapfile -t files2 < <(ls "$SP2" | grep '^cpu-' | sort -t- -k3)
restarted=$(for f in "${files2[@]}"; do go tool pprof -comments "$SP2/$f" 2>/dev/null; done | grep -c 'collector started again')
check "two windows say a collector started again (got $restarted)" test "$restarted" = 2
after=0
for f in "${files2[@]: -3}"; do after=$((after + $(samples "$SP2/$f"))); done
check "the third collector's samples are in its windows (last three: $after)" test "$after" -ge 100
check "no socket is left behind" test ! -e "$SD/ring.sock"
finish
