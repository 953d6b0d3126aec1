#!/usr/bin/env bash
# Binaries the unprivileged symbolizer cannot open itself are symbolized:
# one only its owner (daemon) can read, in a directory only it can enter,
# and one that exists only in another mount namespace (a private tmpfs).
# The collector opens them for the symbolizer over the file channel after
# checking they are the mapped files; the symbolizer (lowprof) is shown to
# be unable to open either path on its own.
# Then the files lowprof writes as root: outputs and the directories made
# for them are private (0600, 0700) unless --output-mode says otherwise,
# and neither -o nor --capture is followed through a symlink in any
# component, nor written into a hard-linked file or one of another user.
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
check "lowprof cannot read chain-other's binary" \
	bash -c "! setpriv --reuid=lowprof --regid=lowprof --clear-groups cat '$BASE/priv/chain-other' >/dev/null 2>&1"
check "lowprof cannot reach chain-other's binary through /proc/PID/root either" \
	bash -c "! setpriv --reuid=lowprof --regid=lowprof --clear-groups cat /proc/$P_OTHER/root$BASE/priv/chain-other >/dev/null 2>&1"
check "chain-ns's binary is not in the host's mount namespace" test ! -e "$BASE/ns/chain-ns"
check "lowprof cannot reach it through /proc/PID/root" \
	bash -c "! setpriv --reuid=lowprof --regid=lowprof --clear-groups cat /proc/$P_NS/root$BASE/ns/chain-ns >/dev/null 2>&1"

"$BIN/lowprof" record -d 4 -p "$P_OTHER" -p "$P_NS" -o "$TMP/made/out" \
	--capture "$TMP/run.lpcap" > "$TMP/log" 2>&1
rc=$?
cat "$TMP/log"
check "lowprof record exits 0 (got $rc)" test "$rc" -eq 0
F=$TMP/made/out/cpu.folded
echo "--- cpu.folded"; head -6 "$F"
for comm in chain-other chain-ns; do
	n=$(awk -v c="$comm;" 'index($0, c) == 1 { s += $NF } END { print s + 0 }' "$F")
	full=$(KT=$KTAIL awk -v c="$comm;" 'index($0, c) == 1 && $0 ~ ("main;chain_one;chain_two;chain_three;chain_leaf" ENVIRON["KT"] " [0-9]+$") { s += $NF }
		END { print s + 0 }' "$F")
	check "$comm has samples ($n)" test "$n" -gt 20
	check "$comm: $full of $n samples show main;chain_one;chain_two;chain_three;chain_leaf (>= 90%)" \
		test $((full * 100)) -ge $((n * 90))
done
check "the symbolizer got both binaries from the collector" \
	grep -Eq 'files: asked the collector for [0-9]+ files: ([2-9]|[1-9][0-9]+) received' "$TMP/log"

kill "$P_OTHER" "$P_NS" 2>/dev/null
wait "$P_OTHER" "$P_NS" 2>/dev/null

# ---- the ring's tail: a binary first met after the collector's end is
# still opened for the symbolizer. The symbolizer is held (SIGSTOP) while
# chain-late, only daemon can read, starts and runs past the end of -d 2;
# it then reads the whole tail, chain-late's first samples included, after
# the collector wrote its end.
cp "$WL/chain-fp" "$BASE/priv/chain-late"
chown daemon: "$BASE/priv/chain-late"
chmod 700 "$BASE/priv/chain-late"
"$BIN/lowprof" record -d 2 -o "$TMP/late" > "$TMP/late.log" 2>&1 &
REC=$!
KIDS+=("$REC")
SYMB=
for _ in $(seq 100); do
	SYMB=$(desc_named "$REC" lowprof-symboli)
	[[ -n $SYMB ]] && grep -q "profiling the host" "$TMP/late.log" && break
	sleep 0.05
done
check "the symbolizer of the tail test started ($SYMB)" test -n "$SYMB"
sleep 0.3 # past the kernel symbols, which the collector waits for
[[ -n $SYMB ]] && kill -STOP "$SYMB"
start_bg setpriv --reuid=daemon --regid=daemon --clear-groups "$BASE/priv/chain-late" 30
P_LATE=$BGPID
sleep "$(scaled 3)"
# past -d 2: the collector wrote its end and waits for the held
# symbolizer's file requests (it used to exit, and the tail's binaries
# only it can open stayed chain-late+0x...)
check "the collector waits for the symbolizer after its end" \
	test -n "$(desc_named "$REC" lowprof-collect)"
[[ -n $SYMB ]] && kill -CONT "$SYMB"
wait "$REC"
rc=$?
kill "$P_LATE" 2>/dev/null
wait "$P_LATE" 2>/dev/null
sed 's/^/  /' "$TMP/late.log" | grep -E 'files|warning|error'
check "the tail's record exits 0 (got $rc)" test "$rc" -eq 0
F=$TMP/late/cpu.folded
n=$(awk 'index($0, "chain-late;") == 1 { s += $NF } END { print s + 0 }' "$F")
full=$(KT=$KTAIL awk 'index($0, "chain-late;") == 1 && $0 ~ ("main;chain_one;chain_two;chain_three;chain_leaf" ENVIRON["KT"] " [0-9]+$") { s += $NF }
	END { print s + 0 }' "$F")
check "chain-late, met only in the tail, has samples ($n)" test "$n" -gt 20
check "chain-late: $full of $n samples symbolized to main..chain_leaf (>= 90%; not chain-late+0x...)" \
	test $((full * 100)) -ge $((n * 90))
check "the symbolizer got chain-late from the collector after its end" \
	grep -Eq 'files: asked the collector for [0-9]+ files: [1-9][0-9]* received' "$TMP/late.log"

# ---- outputs: private unless asked, never through a link
for f in cpu.pb.gz cpu.folded cpu.html; do
	check "$f is mode 0600 (got $(stat -c %a "$TMP/made/out/$f"))" \
		test "$(stat -c %a "$TMP/made/out/$f")" = 600
done
for d in made made/out; do
	check "the directory made for them, $d, is 0700 (got $(stat -c %a "$TMP/$d"))" \
		test "$(stat -c %a "$TMP/$d")" = 700
done
check "the capture file is 0600" test "$(stat -c %a "$TMP/run.lpcap")" = 600
"$BIN/lowprof" replay "$TMP/run.lpcap" -o "$TMP/shared/out" --output-mode 0644 >"$TMP/replay.log" 2>&1
check "replay --output-mode 0644 exits 0" test $? -eq 0
check "with --output-mode 0644 the files are 0644 ($(stat -c %a "$TMP/shared/out/cpu.folded"))" \
	test "$(stat -c %a "$TMP/shared/out/cpu.folded")" = 644
check "and the directories made for them 0755 ($(stat -c %a "$TMP/shared") $(stat -c %a "$TMP/shared/out"))" \
	test "$(stat -c %a "$TMP/shared")$(stat -c %a "$TMP/shared/out")" = 755755
check "--output-mode 0777 is refused" bash -c "! '$BIN/lowprof' replay '$TMP/run.lpcap' -o '$TMP/x' --output-mode 0777 2>/dev/null"

# refused(): lowprof record with ARGS fails at once, saying PATTERN
refused() { # refused DESCRIPTION PATTERN ARGS...
	local what=$1 pat=$2 out rc
	shift 2
	out=$("$BIN/lowprof" record -d 1 "$@" 2>&1); rc=$?
	echo "\$ lowprof record -d 1 $*"; echo "$out" | sed 's/^/  /' | head -4
	check "$what: refused (exit $rc)" test "$rc" -eq 1
	check "$what: says '$pat'" grep -q -e "$pat" <<<"$out"
}
# another user's directory, where they plant links and files
mkdir -m 1777 "$TMP/pub"
mkdir -m 700 "$TMP/target"
as_nobody() { setpriv --reuid=nobody --regid=nogroup --clear-groups "$@"; }
echo precious >"$TMP/victim"
as_nobody ln -s "$TMP/target" "$TMP/pub/link"
refused "a symlink in a middle component of -o" 'symlink in its path' -o "$TMP/pub/link/out"
check "nothing was made where the link leads" test -z "$(ls -A "$TMP/target")"
refused "a symlink in the capture file's directory" 'symlink in its path' \
	-o "$TMP/o1" --capture "$TMP/pub/link/cap.lpcap"
check "no capture where the link leads" test -z "$(ls -A "$TMP/target")"
check "the outputs opened before are removed" test -z "$(ls -A "$TMP/o1")"
as_nobody ln -s "$TMP/victim" "$TMP/pub/cap-link.lpcap"
refused "a symlink as the capture file" 'symlink' -o "$TMP/o2" --capture "$TMP/pub/cap-link.lpcap"
ln "$TMP/victim" "$TMP/pub/hard.lpcap"
refused "a hard-linked capture file" 'single link' -o "$TMP/o3" --capture "$TMP/pub/hard.lpcap"
check "the linked files are untouched" grep -qx precious "$TMP/victim"
as_nobody bash -c "echo mine >'$TMP/pub/theirs.lpcap'"
refused "a capture file of another user" 'another user' -o "$TMP/o4" --capture "$TMP/pub/theirs.lpcap"
check "it is untouched" grep -qx mine "$TMP/pub/theirs.lpcap"
as_nobody mkdir "$TMP/pub/dir"
as_nobody bash -c "echo mine >'$TMP/pub/dir/cpu.folded'"
refused "an output file of another user" 'cpu.folded: a file of another user' -o "$TMP/pub/dir"
check "it is untouched" grep -qx mine "$TMP/pub/dir/cpu.folded"
left=$(leftovers)
check "nothing left behind: '$left'" test -z "$left"
finish
