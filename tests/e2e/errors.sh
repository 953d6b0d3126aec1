#!/usr/bin/env bash
# Errors are clear and leave nothing behind.
source "$(dirname "$0")/lib.sh"
require_root

expect_error() { # expect_error WANT_RC PATTERN -- ARGS...
	local want=$1 pat=$2; shift 3
	out=$("$@" 2>&1); rc=$?
	echo "\$ ${*##*/}"; echo "$out" | sed 's/^/  /' | head -8
	check "exit status $want (got $rc)" test "$rc" -eq "$want"
	check "message matches '$pat'" grep -Eq -e "$pat" <<<"$out"
	left=$(leftovers)
	check "nothing left behind" test -z "$left"
}

mkdir -m 0777 "$TMP/pub"
expect_error 1 'must run as root.*|missing CAP_BPF' -- \
	setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all \
	"$BIN/lowprof" record -d 1 -o "$TMP/pub/out-nobody"
check "no output written by the unprivileged attempt" test ! -e "$TMP/pub/out-nobody/cpu.folded"

# another user plants a symlink where an output goes: refused, target intact
mkdir -m 0777 "$TMP/evil"
echo precious > "$TMP/victim"
setpriv --reuid=65534 --regid=65534 --clear-groups ln -s "$TMP/victim" "$TMP/evil/cpu.folded"
expect_error 1 'cpu.folded: is a symlink' -- "$BIN/lowprof" record -d 1 -o "$TMP/evil"
check "the symlink's target is untouched" grep -qx precious "$TMP/victim"

expect_error 1 'missing CAP_BPF' -- \
	setpriv --bounding-set=-bpf "$BIN/lowprof" record -d 1 -o "$TMP/out-nobpf"

pid=4194000
while [[ -e /proc/$pid ]]; do pid=$((pid - 1)); done
expect_error 1 "-p $pid: no such process" -- "$BIN/lowprof" record -d 1 -p "$pid" -o "$TMP/out-nopid"

# -p of a thread that is not its process's main one: the filter is by
# process, so it would profile nothing; said, with the process to give
"$WL/secrets" "$TMP/secrets" 1 0 "$(scaled 30)" >/dev/null &
KIDS+=($!)
spid=$!
for i in $(seq 50); do [[ -s "$TMP/secrets" ]] && break; sleep 0.1; done
tid=$(ls "/proc/$spid/task" | grep -vx "$spid" | head -1)
expect_error 1 "-p $tid: a thread of process $spid; give the process \(-p $spid" -- \
	"$BIN/lowprof" record -d 1 -p "$tid" -o "$TMP/out-tid"
check "nothing was made for the thread's -p (no output directory)" test ! -e "$TMP/out-tid"
expect_error 2 "-p $tid: a thread of process $spid" -- \
	"$BIN/lowprof-collector" -d 1 -p "$tid" --capture "$TMP/tid.lpcap"
check "and the collector made no capture" test ! -e "$TMP/tid.lpcap"
kill "$spid"; wait "$spid" 2>/dev/null

# an output that cannot be written (a directory where cpu.folded goes):
# the outputs opened before it are not left behind, empty
mkdir -p "$TMP/out-isdir/cpu.folded"
echo earlier > "$TMP/out-isdir/cpu.html"
expect_error 1 'cpu.folded: names a directory' -- "$BIN/lowprof" record -d 1 -o "$TMP/out-isdir"
check "no empty cpu.pb.gz left beside it" test ! -e "$TMP/out-isdir/cpu.pb.gz"
check "an output it did not open is untouched" grep -qx earlier "$TMP/out-isdir/cpu.html"

# --capture naming one of the outputs: refused, not two streams in one file
expect_error 1 "--capture $TMP/out-same/cpu.folded: that is the output $TMP/out-same/cpu.folded" -- \
	"$BIN/lowprof" record -d 1 -o "$TMP/out-same" --capture "$TMP/out-same/cpu.folded"
check "and nothing was written there" test ! -e "$TMP/out-same/cpu.folded"

# --capture where it cannot be made: the output directories the command
# made for -o are removed again, and only those
mkdir "$TMP/there"
expect_error 1 "--capture $TMP/no/such/x.lpcap: No such file or directory" -- \
	"$BIN/lowprof" record -d 1 -o "$TMP/there/new/out" --capture "$TMP/no/such/x.lpcap"
check "the -o directories it made are gone" test ! -e "$TMP/there/new"
check "the directory that was there stays" test -d "$TMP/there"
mkdir "$TMP/there/old"
echo mine >"$TMP/there/old/notes"
expect_error 1 "--capture $TMP/no/such/x.lpcap" -- \
	"$BIN/lowprof" record -d 1 -o "$TMP/there/old" --capture "$TMP/no/such/x.lpcap"
check "an -o directory that was there stays, with its files" grep -qx mine "$TMP/there/old/notes"
check "and no output is left in it" test ! -e "$TMP/there/old/cpu.folded"

expect_error 1 'output directory /proc/lowprof-test' -- \
	"$BIN/lowprof" record -d 1 -o /proc/lowprof-test
touch "$TMP/a-file"
expect_error 1 'not a directory' -- "$BIN/lowprof" record -d 1 -o "$TMP/a-file"

# a kernel without BTF (here: /sys/kernel/btf hidden in a mount namespace of
# our own): said plainly, with what to install
expect_error 1 'this kernel has no BTF.*CONFIG_DEBUG_INFO_BTF' -- \
	unshare -m sh -c 'mount -t tmpfs none /sys/kernel/btf && exec "$@"' sh \
	"$BIN/lowprof" record -d 1 -o "$TMP/out-nobtf"
check "without BTF nothing started: no output directory, no summary" \
	bash -c "test ! -e '$TMP/out-nobtf' && ! grep -q 'lowprof summary' <<<\"\$1\"" _ "$out"
# a fallback name the collector does not know (LOWPROF_FALLBACKS, for tests)
expect_error 1 "unknown fallback 'no-such-thing'" -- \
	env LOWPROF_FALLBACKS=no-such-thing "$BIN/lowprof" record -d 1 -o "$TMP/out-nofb"

# The symbolizer's user missing (a private mount namespace whose
# /etc/passwd has no lowprof): each command that would run as it stops
# before starting anything, with the command that creates it and the
# option that names another.
grep -v '^lowprof:' /etc/passwd >"$TMP/passwd"
no_lowprof() { # no_lowprof CMD...: CMD where user lowprof does not exist
	unshare -m --propagation private sh -c 'mount --bind "$0" /etc/passwd && exec "$@"' \
		"$TMP/passwd" "$@"
}
create='useradd --system --user-group --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin lowprof'
expect_error 1 "$create" -- no_lowprof "$BIN/lowprof" record -d 1 -o "$TMP/out-nouser"
check "it says to name another user with --user" grep -q 'name another user with --user USER' <<<"$out"
check "nothing was made (no output directory)" test ! -e "$TMP/out-nouser"
expect_error 1 "$create" -- no_lowprof "$BIN/lowprof" replay "$TMP/no.lpcap" -o "$TMP/out-nouser"
check "replay made nothing" test ! -e "$TMP/out-nouser"
expect_error 1 "$create" -- no_lowprof "$BIN/lowprof" capture-info "$TMP/no.lpcap"
expect_error 1 "$create" -- no_lowprof "$BIN/lowprof-symbolizer" --ring "$TMP/no.sock" \
	-o "$TMP/out-nouser"
check "the symbolizer made nothing" test ! -e "$TMP/out-nouser"
expect_error 1 "--ring-owner lowprof: no such user" -- no_lowprof \
	"$BIN/lowprof-collector" --ring "$TMP/nouser.sock" -d 1
check "it says how to create it" grep -q "$create" <<<"$out"
check "the collector made no socket" test ! -e "$TMP/nouser.sock"
expect_error 1 '--user lp-no-such-user: no such user' -- \
	"$BIN/lowprof" record -d 1 --user lp-no-such-user -o "$TMP/out-nouser"
check "and for another name, the command that creates that one" \
	grep -q 'useradd --system .* lp-no-such-user' <<<"$out"

expect_error 2 '-F 0' -- "$BIN/lowprof" record -F 0 -d 1 -o "$TMP/out-f0"
expect_error 2 '-d x' -- "$BIN/lowprof" record -d x -o "$TMP/out-dx"
expect_error 2 '-d 1e8: .*at most 10000000' -- "$BIN/lowprof" record -d 1e8 -o "$TMP/out-dx"
# getopt's own messages name the command
expect_error 2 "^lowprof record: unrecognized option '--no-such-option'" -- \
	"$BIN/lowprof" record --no-such-option
expect_error 2 "^lowprof replay: option requires an argument -- 'j'" -- \
	"$BIN/lowprof" replay x.lpcap -j
expect_error 2 'unknown command' -- "$BIN/lowprof" frobnicate
# a destination libcurl cannot parse is refused before anything starts (it
# was tried again, said once, for as long as the exporter ran)
install -d -m 0700 -o lowprof "$TMP/expspool"
expect_error 2 'not a URL: .*IPv6' -- "$BIN/lowprof-exporter" --spool "$TMP/expspool" \
	--otlp 'http://[::1' --oneshot
expect_error 2 'not a URL: Port' -- "$BIN/lowprof-exporter" --spool "$TMP/expspool" \
	--pyroscope 'http://127.0.0.1:99999' --oneshot
expect_error 1 'not a URL' -- "$BIN/lowprof" run --spool "$TMP/expspool" -d 1 \
	--otlp 'http://127.0.0.1:99999'

out=$("$BIN/lowprof" record --help)
check "record --help documents -d -F -p -o" \
	bash -c "grep -q -- '--duration' <<<\"\$1\" && grep -q -- '--freq' <<<\"\$1\" && grep -q -- '--pid' <<<\"\$1\" && grep -q -- '--output' <<<\"\$1\"" _ "$out"
check "collector --help" "$BIN/lowprof-collector" --help
check "symbolizer --help" "$BIN/lowprof-symbolizer" --help
finish
