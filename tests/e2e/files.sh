#!/usr/bin/env bash
# Binaries the unprivileged symbolizer cannot open itself are symbolized:
# one only its owner (daemon) can read, in a directory only it can enter,
# and one that exists only in another mount namespace (a private tmpfs).
# The collector opens them for the symbolizer over the file channel after
# checking they are the mapped files; the symbolizer (nobody) is shown to
# be unable to open either path on its own.
source "$(dirname "$0")/lib.sh"
require_root
command -v unshare >/dev/null || { fail "unshare (util-linux) is missing"; finish; }
command -v setpriv >/dev/null || { fail "setpriv (util-linux) is missing"; finish; }

# not under $TMP: daemon must be able to reach its own directory
BASE=$(mktemp -d /tmp/lowprof-files.XXXXXX)
chmod 711 "$BASE"
mkdir -m 700 "$BASE/priv" "$BASE/ns"
cp "$WL/chain-fp" "$BASE/priv/chain-other"
chown -R daemon: "$BASE/priv"
chmod 700 "$BASE/priv/chain-other"
trap 'cleanup; umount "$BASE/ns" 2>/dev/null; rm -rf "$BASE"' EXIT

# a process of another user, from a file only that user can read
start_bg setpriv --reuid=daemon --regid=daemon --clear-groups "$BASE/priv/chain-other" 60
P_OTHER=$BGPID
# a process whose binary exists only in its own mount namespace
start_bg unshare -m --propagation private bash -c \
	"mount -t tmpfs lowprof-ns '$BASE/ns' && cp '$WL/chain-fp' '$BASE/ns/chain-ns' &&
	 exec '$BASE/ns/chain-ns' 60"
P_NS=$BGPID
sleep 0.5
check "chain-other runs as daemon" test "$(stat -c %U /proc/$P_OTHER)" = daemon
check "chain-ns runs in another mount namespace" \
	test "$(readlink /proc/$P_NS/ns/mnt)" != "$(readlink /proc/self/ns/mnt)"
check "nobody cannot read chain-other's binary" \
	bash -c "! setpriv --reuid=nobody --regid=nogroup --clear-groups cat '$BASE/priv/chain-other' >/dev/null 2>&1"
check "nobody cannot reach chain-other's binary through /proc/PID/root either" \
	bash -c "! setpriv --reuid=nobody --regid=nogroup --clear-groups cat /proc/$P_OTHER/root$BASE/priv/chain-other >/dev/null 2>&1"
check "chain-ns's binary is not in the host's mount namespace" test ! -e "$BASE/ns/chain-ns"
check "nobody cannot reach it through /proc/PID/root" \
	bash -c "! setpriv --reuid=nobody --regid=nogroup --clear-groups cat /proc/$P_NS/root$BASE/ns/chain-ns >/dev/null 2>&1"

"$BIN/lowprof" record -d 4 -p "$P_OTHER" -p "$P_NS" -o "$TMP/out" > "$TMP/log" 2>&1
rc=$?
cat "$TMP/log"
check "lowprof record exits 0 (got $rc)" test "$rc" -eq 0
F=$TMP/out/cpu.folded
echo "--- cpu.folded"; head -6 "$F"
for comm in chain-other chain-ns; do
	n=$(awk -v c="$comm;" 'index($0, c) == 1 { s += $NF } END { print s + 0 }' "$F")
	full=$(awk -v c="$comm;" 'index($0, c) == 1 && /main;chain_one;chain_two;chain_three;chain_leaf [0-9]+$/ { s += $NF }
		END { print s + 0 }' "$F")
	check "$comm has samples ($n)" test "$n" -gt 20
	check "$comm: $full of $n samples show main;chain_one;chain_two;chain_three;chain_leaf (>= 90%)" \
		test $((full * 100)) -ge $((n * 90))
done
check "the symbolizer got both binaries from the collector" \
	grep -Eq 'files: asked the collector for [0-9]+ files: ([2-9]|[1-9][0-9]+) received' "$TMP/log"

kill "$P_OTHER" "$P_NS" 2>/dev/null
wait "$P_OTHER" "$P_NS" 2>/dev/null
left=$(leftovers)
check "nothing left behind: '$left'" test -z "$left"
finish
