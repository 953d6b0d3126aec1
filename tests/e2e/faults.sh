#!/usr/bin/env bash
# A symbolizer stopped (SIGSTOP): the collector goes on, drops the newest
# records with exact counts once the ring is full, and its memory stays
# flat; after SIGCONT the profile resumes. Every sample the BPF program
# emitted is either in the profile or counted as lost. The ring is sized for
# 2 s of the largest samples, which these are made to be (below); the stop
# lasts 20 s.
source "$(dirname "$0")/lib.sh"
require_root

# two busy processes: ~200 samples a second. Each runs its chain 64 KB
# below the top of its stack, so every sample carries the whole 16 KiB
# stack copy: the ring (2 s of such samples) then overflows during the stop
# (with the chain near the top, samples are a few hundred bytes and a 20 s
# stop fits in the ring)
start_bg "$WL/chain-fp" 45 65536
WPID=$BGPID
start_bg "$WL/chain-fp" 45 65536
WPID2=$BGPID
sleep 0.3
"$BIN/lowprof" record -d 28 -p "$WPID" -p "$WPID2" -o "$TMP/out" --capture "$TMP/run.lpcap" \
	>"$TMP/summary" 2>&1 &
REC=$!
sleep 3
SYM=$(desc_named "$REC" lowprof-symboli)
COL=$(desc_named "$REC" lowprof-collect)
# private memory: the shared ring's pages count in VmRSS as the producer
# first reaches them (RssShmem), up to the ring's size, whatever the consumer
rss() { awk '/^RssAnon:/ {print $2}' "/proc/$1/status"; }
if [[ -n "$SYM" && -n "$COL" ]]; then
	rss0=$(rss "$COL")
	kill -STOP "$SYM"
	sleep 10
	rss5=$(rss "$COL")
	sleep 10
	rss10=$(rss "$COL")
	kill -CONT "$SYM"
	echo "collector RssAnon: $rss0 kB before, $rss5 kB after 10 s, $rss10 kB after 20 s stopped"
	grep -E '^(VmRSS|RssShmem)' "/proc/$COL/status"
	check "collector private memory flat while the symbolizer is stopped ($rss0 -> $rss10 kB)" \
		test $((rss10 - rss0)) -lt 256
else
	fail "collector ($COL) and symbolizer ($SYM) should both be running"
fi
wait "$REC"; rc=$?
cat "$TMP/summary"
check "lowprof record exits 0 after the stop (got $rc)" test "$rc" -eq 0
info=$("$BIN/lowprof" capture-info "$TMP/run.lpcap")
echo "$info"
emitted=$(sed -n 's/^losses *of \([0-9]*\) samples the BPF programs emitted.*/\1/p' <<<"$info")
shm=$(sed -n 's/.* \([0-9]*\) dropped by the shared ring.*/\1/p' <<<"$info")
ringfull=$(sed -n 's/.*emitted: \([0-9]*\) BPF ring full.*/\1/p' <<<"$info")
inprof=$(awk '{s += $NF} END {print s + 0}' "$TMP/out/cpu.folded")
incap=$(sed -n 's/^samples *on-CPU \([0-9]*\) .*/\1/p' <<<"$info")
echo "emitted $emitted, in the profile $inprof, dropped by the shared ring $shm, BPF ring full $ringfull, in the capture $incap"
check "the capture kept every sample emitted ($incap of $emitted)" test "${incap:-0}" -eq "${emitted:--1}"
check "records were dropped while the symbolizer was stopped ($shm)" test "${shm:-0}" -gt 200
# the 20 s at 99 Hz on two busy CPUs are ~3960 samples; the ring held some
check "the drops are at most the samples of those 20 s ($shm <= 4000)" test "${shm:-99999}" -le 4000
# the shared ring counts records, not samples: the collector's loss records
# (one a second) that came while the ring was full are among the drops too;
# the stop lasts 20 s, so at most 21 of them (with every sample now the
# largest, the ring is full after ~2 s and ~18 are dropped)
missing=$((${emitted:-0} - inprof))
check "every emitted sample is in the profile or counted as dropped ($emitted - $inprof = $missing <= $shm <= $missing + 21)" \
	test "$missing" -le "${shm:-0}" -a "${shm:-0}" -le $((missing + 21))
check "the summary reports the loss" grep -Eq "samples lost +$shm " "$TMP/summary"
kill "$WPID" "$WPID2" 2>/dev/null
sleep 0.3
left=$(leftovers)
check "nothing left behind: '$left'" test -z "$left"
finish
