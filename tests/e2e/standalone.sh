#!/usr/bin/env bash
# The two programs run on their own: the collector hands its sealed ring to
# the symbolizer over a Unix socket, only to the ring's owner.
source "$(dirname "$0")/lib.sh"
require_root

SOCK=$TMP/ring.sock
start_bg "$WL/chain-fp" 60
WPID=$BGPID

start_bg "$BIN/lowprof-collector" --ring "$SOCK" -d 4 -p "$WPID"
COL=$BGPID
for i in $(seq 50); do [[ -S $SOCK ]] && break; sleep 0.1; done
check "the collector listens on $SOCK" test -S "$SOCK"
check "the socket belongs to nobody, mode 0600" \
	test "$(stat -c '%U %a' "$SOCK")" = "nobody 600"

# a symbolizer of another user is refused and the collector keeps waiting
out=$(timeout 20 "$BIN/lowprof-symbolizer" --ring "$SOCK" --user daemon -o "$TMP/wrong" 2>&1)
rc=$?
echo "$out" | sed 's/^/  /'
check "a symbolizer running as daemon is refused (rc $rc)" test "$rc" -ne 0
check "the collector is still waiting" kill -0 "$COL"

"$BIN/lowprof-symbolizer" --ring "$SOCK" -o "$TMP/out" > "$TMP/summary" 2>&1
rc=$?
cat "$TMP/summary"
check "the symbolizer exits 0 (got $rc)" test "$rc" -eq 0
wait "$COL"; crc=$?
check "the collector exits 0 (got $crc)" test "$crc" -eq 0
pct=$(share "$TMP/out/cpu.folded" '^chain-fp;.*main;chain_one;chain_two;chain_three;chain_leaf$')
check "$pct% of samples show the chain (>= 90%)" test "$pct" -ge 90
check "root-owned output files written before the symbolizer dropped privileges" \
	test "$(stat -c %U "$TMP/out/cpu.folded")" = root
check "the socket is gone" test ! -e "$SOCK"

# stopped while waiting for a symbolizer: exits 0, removes its socket
start_bg "$BIN/lowprof-collector" --ring "$SOCK"
COL=$BGPID
for i in $(seq 50); do [[ -S $SOCK ]] && break; sleep 0.1; done
kill -INT "$COL"
wait "$COL"; crc=$?
check "a collector interrupted while waiting exits 0 (got $crc)" test "$crc" -eq 0
check "and removes its socket" test ! -e "$SOCK"

kill "$WPID"
left=$(leftovers)
check "nothing left behind: '$left'" test -z "$left"
finish
