#!/usr/bin/env bash
# The two programs run on their own: the collector hands its sealed ring to
# the symbolizer over a Unix socket, only to the ring's owner, and each
# symbolizer a consumer page of its own; the symbolizer takes a ring only
# from a socket served by root (or --collector-uid); and run as deployed,
# each with only its privileges.
source "$(dirname "$0")/lib.sh"
require_root

SOCK=$TMP/ring.sock
start_bg "$WL/chain-fp" 180
WPID=$BGPID

start_bg "$BIN/lowprof-collector" --ring "$SOCK" -d 4 -p "$WPID"
COL=$BGPID
for i in $(seq 50); do [[ -S $SOCK ]] && break; sleep 0.1; done
check "the collector listens on $SOCK" test -S "$SOCK"
check "the socket belongs to lowprof (the default --ring-owner), mode 0600" \
	test "$(stat -c '%U %a' "$SOCK")" = "lowprof 600"

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
pct=$(share "$TMP/out/cpu.folded" '^chain-fp;.*main;chain_one;chain_two;chain_three;chain_leaf'"$KTAIL"'$')
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

# The symbolizer dies (SIGKILL) and another takes its place on the same
# socket, as systemd's Restart= or a container restart would do: the
# collector keeps collecting, refuses a second symbolizer while one is
# attached, and the new one resumes and writes the stretch it saw.
start_bg "$BIN/lowprof-collector" --ring "$SOCK" -d 9 -p "$WPID"
COL=$BGPID
for i in $(seq 50); do [[ -S $SOCK ]] && break; sleep 0.1; done
start_bg "$BIN/lowprof-symbolizer" --ring "$SOCK" -o "$TMP/outA"
SYMA=$BGPID
sleep 2
out=$(timeout 20 "$BIN/lowprof-symbolizer" --ring "$SOCK" -o "$TMP/outC" 2>&1)
rc=$?
check "a second symbolizer is refused while one is attached (rc $rc)" test "$rc" -ne 0
kill -KILL "$SYMA"
wait "$SYMA" 2>/dev/null
sleep 1
check "the collector keeps running without its symbolizer" kill -0 "$COL"
c0=$(cpu_ms "$WPID")
"$BIN/lowprof-symbolizer" --ring "$SOCK" -o "$TMP/outB" > "$TMP/sB" 2>&1
rc=$?
c1=$(cpu_ms "$WPID")
grep -E 'resum|samples ' "$TMP/sB"
check "a new symbolizer takes over and exits 0 (got $rc)" test "$rc" -eq 0
check "it says it resumed a run in progress" grep -q 'resuming a run in progress' "$TMP/sB"
wait "$COL"; crc=$?
check "the collector exits 0 (got $crc)" test "$crc" -eq 0
n=$(awk '{s += $NF} END {print s + 0}' "$TMP/outB/cpu.folded" 2>/dev/null)
pct=$(share "$TMP/outB/cpu.folded" '^chain-fp;.*main;chain_one;chain_two;chain_three;chain_leaf'"$KTAIL"'$')
# the workload's CPU while it was attached, less 0.5 s for attaching (what
# it reads before the metadata sent again is skipped): samples of a loaded
# host's share of a CPU, not of the wall time
ms=$((${c1:-0} - ${c0:-0} - 500))
check "the workload ran meanwhile ($ms ms of CPU, >= 1000)" test "$ms" -ge 1000
check "the new symbolizer's profile has the run since it came ($n samples, >= $(samples_floor "$ms") for $ms ms of the workload's CPU)" \
	enough_samples "${n:-0}" "$ms"
check "with the whole chain ($pct% >= 90%)" test "${pct:-0}" -ge 90

# A "collector" that is not one: a socket served by daemon, handing over a
# well-formed (empty, closed) ring. A symbolizer running as daemon itself
# refuses it before reading anything, as it would a socket served by its
# own user; told the collector runs as daemon (--collector-uid) it takes
# the same ring: the uid alone made the difference.
mkdir -m 700 "$TMP/fake" && chown daemon: "$TMP/fake"
FAKE=$TMP/fake/ring.sock
cat >"$TMP/fake-collector.py" <<'PY'
import fcntl, os, socket, struct, sys
def sealed(name, size, head=b""):
    fd = os.memfd_create(name, os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
    os.ftruncate(fd, size)
    os.pwrite(fd, head, 0)
    fcntl.fcntl(fd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW)
    return fd
# lp_ring_hdr: magic, version 2, hdr_size, data_size; closed (offset 96) = 1
hdr = struct.pack("<QIIQ", 0x474E52504C, 2, 4096, 4096).ljust(96, b"\0") + struct.pack("<I", 1)
data, cons = sealed("lowprof-ring", 8192, hdr), sealed("lowprof-ring-consumer", 4096)
srv = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
srv.bind(sys.argv[1]); os.chmod(sys.argv[1], 0o777); srv.listen(4)
while True:
    c, _ = srv.accept()
    try:
        socket.send_fds(c, [b"F"], [data, cons])
        c.recv(1)  # until the symbolizer hangs up
    except OSError:
        pass
    c.close()
PY
start_bg setpriv --reuid=daemon --regid=daemon --clear-groups /usr/bin/python3 "$TMP/fake-collector.py" "$FAKE"
FAKEPID=$BGPID
for i in $(seq 50); do [[ -S $FAKE ]] && break; sleep 0.1; done
check "the fake collector (daemon) listens" test -S "$FAKE"
chmod 711 "$TMP/fake"
out=$(timeout 20 "$BIN/lowprof-symbolizer" --ring "$FAKE" --user daemon -o "$TMP/fakeout" 2>&1)
rc=$?
echo "$out" | sed 's/^/  /'
check "a symbolizer refuses a ring from a socket served by daemon (rc $rc)" test "$rc" -ne 0
check "it says who serves the socket and how to allow it" \
	grep -q "served by uid $(id -u daemon).*not by the collector.*--collector-uid" <<<"$out"
check "it wrote no profile" test ! -s "$TMP/fakeout/cpu.pb.gz"
out=$(timeout 20 "$BIN/lowprof-symbolizer" --ring "$FAKE" --user daemon --collector-uid daemon \
	-o "$TMP/fakeout2" --no-cache 2>&1)
rc=$?
check "with --collector-uid daemon the same ring is taken (rc $rc)" test "$rc" -eq 0
kill "$FAKEPID"

# A consumer that left keeps its consumer page mapped and, once the next
# symbolizer is attached, writes garbage positions there: that page is no
# longer the ring's (each consumer gets a fresh one), so the collector sees
# no bad position and the new symbolizer gets every record. While it is
# attached it consumes whatever is written, as a symbolizer would.
start_bg "$BIN/lowprof-collector" --ring "$SOCK" -d 8 -p "$WPID" 2>"$TMP/col-stale.log"
COL=$BGPID
for i in $(seq 50); do [[ -S $SOCK ]] && break; sleep 0.1; done
cat >"$TMP/stale-consumer.py" <<'PY'
import mmap, os, socket, struct, sys, time
sock, seconds, started, attached = sys.argv[1], float(sys.argv[2]), sys.argv[3], sys.argv[4]
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
s.connect(sock)
_, fds, _, _ = socket.recv_fds(s, 16, 2)
hdr = mmap.mmap(fds[0], 4096, mmap.MAP_SHARED, mmap.PROT_READ)
page = mmap.mmap(fds[1], 4096, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
for fd in fds:
    os.close(fd)
while not os.path.exists(started):  # consume everything: prod_pos is at 64
    page[0:8] = hdr[64:72]
    time.sleep(0.001)
s.close()  # gone, as far as the collector can tell; the page stays mapped
while not os.path.exists(attached):
    time.sleep(0.01)
end = time.time() + seconds
while time.time() < end:
    for v in (0xFFFFFFFFFFFFFFF8, 0, 3, 1 << 62):
        page[0:8] = struct.pack("<Q", v)
        time.sleep(0.0005)
PY
start_bg setpriv --reuid=lowprof --regid=lowprof --clear-groups /usr/bin/python3 \
	"$TMP/stale-consumer.py" "$SOCK" 10 "$TMP/started" "$TMP/attached"
STALE=$BGPID
for i in $(seq 100); do grep -q '^lowprof-collector: profiling' "$TMP/col-stale.log" && break; sleep 0.1; done
touch "$TMP/started"
for i in $(seq 100); do grep -q 'symbolizer is gone' "$TMP/col-stale.log" && break; sleep 0.1; done
check "the collector saw the first consumer leave" grep -q 'symbolizer is gone' "$TMP/col-stale.log"
start_bg "$BIN/lowprof-symbolizer" --ring "$SOCK" -o "$TMP/outS" > "$TMP/sS" 2>&1
SYMS=$BGPID
for i in $(seq 100); do grep -q 'new symbolizer attached' "$TMP/col-stale.log" && break; sleep 0.1; done
touch "$TMP/attached"
wait "$SYMS"
rc=$?
grep -E 'resum|samples |losses' "$TMP/sS"
check "the next symbolizer exits 0 (got $rc)" test "$rc" -eq 0
wait "$COL"; crc=$?
check "the collector exits 0 (got $crc)" test "$crc" -eq 0
check "the first consumer was still writing its old page all along" kill -0 "$STALE"
check "the collector saw no invalid consumer position" \
	bash -c "! grep -q 'invalid consumer position' '$TMP/col-stale.log'"
check "the symbolizer's summary counts no invalid ring position" \
	bash -c "! grep -Eq '[1-9][0-9]* invalid ring positions' '$TMP/sS'"
n=$(awk '{s += $NF} END {print s + 0}' "$TMP/outS/cpu.folded" 2>/dev/null)
pct=$(share "$TMP/outS/cpu.folded" '^chain-fp;.*main;chain_one;chain_two;chain_three;chain_leaf'"$KTAIL"'$')
check "it has the run since it came ($n samples, >= 300), the whole chain ($pct% >= 90%)" \
	test "${n:-0}" -ge 300 -a "${pct:-0}" -ge 90
kill "$STALE"

# As deployed (deploy/systemd, deploy/kubernetes): the collector limited to
# its bounding set, the symbolizer started directly as the manifest's uid
# 60101 (no passwd entry names it) with no capabilities (not by root),
# owner given as that number; a binary only its owner (daemon) can read is
# still symbolized, through the collector.
BASE=$(mktemp -d /tmp/lowprof-standalone.XXXXXX)
chmod 711 "$BASE"
mkdir -m 700 "$BASE/priv"
cp "$WL/chain-fp" "$BASE/priv/chain-daemon"
chown -R daemon: "$BASE/priv"
trap 'cleanup; rm -rf "$BASE"' EXIT
start_bg setpriv --reuid=daemon --regid=daemon --clear-groups "$BASE/priv/chain-daemon" 60
DPID=$BGPID
mkdir -m 700 "$TMP/out60101" && chown 60101:60101 "$TMP/out60101"
start_bg setpriv --bounding-set=-all,+bpf,+perfmon,+sys_ptrace,+dac_read_search,+syslog,+chown,+setpcap \
	"$BIN/lowprof-collector" --ring "$SOCK" --ring-owner 60101 -d 4 -p "$DPID"
COL=$BGPID
setpriv --reuid=60101 --regid=60101 --clear-groups --bounding-set=-all --no-new-privs \
	"$BIN/lowprof-symbolizer" --ring "$SOCK" -o "$TMP/out60101" --no-cache -v > "$TMP/s60101" 2>&1
rc=$?
grep -E 'files:|summary|samples  ' "$TMP/s60101"
check "deployed layout: the symbolizer (uid 60101, no capabilities) exits 0 (got $rc)" test "$rc" -eq 0
# a symbolizer that failed leaves the collector waiting: say why, stop it
[[ $rc -eq 0 ]] || { sed 's/^/  /' "$TMP/s60101"; kill "$COL"; }
wait "$COL"; crc=$?
check "deployed layout: the collector (bounded capabilities) exits 0 (got $crc)" test "$crc" -eq 0
pct=$(share "$TMP/out60101/cpu.folded" '^chain-daemon;.*main;chain_one;chain_two;chain_three;chain_leaf'"$KTAIL"'$')
check "deployed layout: $pct% of samples show daemon's unreadable binary's chain (>= 90%)" \
	test "$pct" -ge 90
check "deployed layout: the symbolizer got that binary from the collector" \
	grep -Eq 'files: asked the collector for [0-9]+ files: [1-9][0-9]* received' "$TMP/s60101"
kill "$DPID"

kill "$WPID"
left=$(leftovers)
check "nothing left behind: '$left'" test -z "$left"
finish
