#!/usr/bin/env bash
# Processes named right whatever their lifetime, tried as a user would:
# 1. a whole-host record while a loop starts a program that lives about
#    60 ms, over and over (make -j, shell pipelines, cron): at least 90% of
#    its samples carry its whole chain, live and replayed from a capture.
#    The kernel's mmap events give its mappings as it makes them; before
#    them, /proc/PID/maps was read after the process had gone;
# 2. a process whose leader thread ends early (pthread_exit) while another
#    thread works on: its samples stay symbolized, started during a
#    whole-host run and recorded by pid after the leader ended.
source "$(dirname "$0")/lib.sh"
require_root

# copies under names of their own: the profile's comm says which are ours
SHORT="$TMP/lp-shortlived"
LEADX="$TMP/lp-leaderx"
cp "$WL/chain-nofp" "$SHORT"
cp "$WL/chain-nofp" "$LEADX"
CHAIN='main;chain_one;chain_two;chain_three;chain_leaf'
TCHAIN='chain_thread;chain_one;chain_two;chain_three;chain_leaf'

# share_of F COMM PATTERN: "samples of COMM" and "of those, matching PATTERN"
share_of() {
	LP_RE="$3" awk -v comm="$2" '
		{ n = $NF; s = $0; sub(/ [0-9]+$/, "", s) }
		index(s, comm ";") == 1 { t += n; if (s ~ ENVIRON["LP_RE"]) f += n }
		END { printf "%d %d\n", t, f }' "$1"
}

# ---- 1. short-lived processes, whole host, with a capture
touch "$TMP/loop.run"
start_bg bash -c "while [ -e '$TMP/loop.run' ]; do '$SHORT' 0.06; done"
LOOP=$BGPID
"$BIN/lowprof" record -d "$(scaled 8)" -o "$TMP/short" --capture "$TMP/short.lpcap" \
	>"$TMP/short.log" 2>&1
rc=$?
rm -f "$TMP/loop.run"
wait "$LOOP" 2>/dev/null
check "whole-host record exits 0 (got $rc)" test "$rc" -eq 0
read -r tot full < <(share_of "$TMP/short/cpu.folded" lp-shortlived "$CHAIN")
pct=$((tot ? 100 * full / tot : 0))
echo "short-lived: $full of $tot samples with the whole chain ($pct%)"
check "the short-lived program has samples (got $tot, want >= 50)" test "$tot" -ge 50
check "at least 90% of its samples carry its whole chain (got $pct%)" test "$pct" -ge 90
# the rest are its start (exec, ld.so) and exit, named too: none unknown
read -r _ unk < <(share_of "$TMP/short/cpu.folded" lp-shortlived '^lp-shortlived;(\[unknown\]|lp-shortlived\+0x)')
check "at most 3% of them start with an unknown frame (got $unk of $tot)" \
	test $((100 * unk)) -le $((3 * tot))
grep -E 'samples lost|other losses' "$TMP/short.log"
check "the summary counts no lost side-band event" \
	bash -c "! grep -Eq '[1-9][0-9]* mmap events lost' '$TMP/short.log'"
"$BIN/lowprof" replay "$TMP/short.lpcap" -o "$TMP/replayed" >"$TMP/replay.log" 2>&1
rc=$?
check "the capture replays (got $rc)" test "$rc" -eq 0
read -r rtot rfull < <(share_of "$TMP/replayed/cpu.folded" lp-shortlived "$CHAIN")
check "the replay names them as the live run did ($rfull of $rtot, live $full of $tot)" \
	test "$rtot" -eq "$tot" -a "$rfull" -eq "$full"
"$BIN/lowprof" capture-info "$TMP/short.lpcap" >"$TMP/info" 2>&1
check "the capture holds mmap and fork records" \
	bash -c "grep -q ' mmap [1-9]' '$TMP/info' && grep -q ' fork [1-9]' '$TMP/info'"

# ---- 2a. a leader that exits early, started during a whole-host run
start_bg bash -c "sleep $(scaled 1.5); exec '$LEADX' $(scaled 4) 0 leader-exit >/dev/null"
"$BIN/lowprof" record -d "$(scaled 7)" -o "$TMP/leadA" >"$TMP/leadA.log" 2>&1
rc=$?
check "whole-host record exits 0 (got $rc)" test "$rc" -eq 0
read -r tot full < <(share_of "$TMP/leadA/cpu.folded" lp-leaderx "$TCHAIN")
echo "leader gone, whole host: $full of $tot samples with the thread's chain"
check "the process's thread has samples after its leader ended (got $tot, want >= 50)" \
	test "$tot" -ge 50
check "at least 95% of them carry the thread's whole chain ($full of $tot)" \
	test $((100 * full)) -ge $((95 * tot))

# ---- 2b. the same process recorded by pid once its leader has ended
start_bg "$LEADX" "$(scaled 6)" 0 leader-exit
LPID=$BGPID
for _ in $(seq 50); do
	[[ "$(awk '/^State:/ { print $2 }' "/proc/$LPID/status" 2>/dev/null)" == Z ]] && break
	sleep 0.1
done
check "the leader has ended (its thread is a zombie) and the process lives on" \
	bash -c "grep -q '^State:.*Z' /proc/$LPID/status && test -d /proc/$LPID/task"
"$BIN/lowprof" record -d "$(scaled 3)" -p "$LPID" -o "$TMP/leadB" >"$TMP/leadB.log" 2>&1
rc=$?
check "record -p exits 0 (got $rc)" test "$rc" -eq 0
read -r tot full < <(share_of "$TMP/leadB/cpu.folded" lp-leaderx "$TCHAIN")
echo "leader gone, by pid: $full of $tot samples with the thread's chain"
check "it has samples (got $tot, want >= 50), at least 95% with the thread's chain ($full)" \
	test "$tot" -ge 50 -a $((100 * full)) -ge $((95 * tot))
finish
