#!/usr/bin/env bash
# The collector's file broker never stalls the drain, and honours -p.
#
# 1. A program runs from a FUSE file system (lp-hangfs) whose daemon serves
#    the exec's open and then never answers another open: the symbolizer
#    (lowprof, refused by FUSE) asks the collector for the binary, and the
#    collector's open of it hangs in the kernel, uninterruptibly. Recorded
#    together with a normal program (-p both, 999 Hz), the normal one keeps
#    all its samples (nothing lost in the BPF ring or the shared ring), the
#    request is answered with a timeout and counted, and lowprof record
#    ends on time with the stuck worker left in the kernel; it dies once
#    the file system is gone.
# 2. A request for a process not given with -p is refused and counted; one
#    for a process given is served (lp-filereq on a collector's --ring).
# 3. A process maps a file of a FUSE file system whose reads all hang: the
#    collector does not ask the kernel for its build-id (which reads the
#    file), so the run ends on time with nothing lost.
# 4. A process whose /tmp, in a mount namespace of its own (which any user
#    can make), is a FUSE file system whose lookups hang: the collector,
#    looking for its JIT perf map there, asks that file system nothing (it
#    finds the mount's type first), so the run ends on time with the
#    process sampled, and says why its perf map was not read.
source "$(dirname "$0")/lib.sh"
require_root
for t in lp-hangfs lp-filereq; do
	[[ -x "$WL/$t" ]] || { fail "$WL/$t is missing (libfuse3-dev: deploy/install-deps.sh --test)"; finish; }
done
grep -qw fuse /proc/filesystems || modprobe fuse 2>/dev/null
[[ -c /dev/fuse ]] || { fail "/dev/fuse is missing"; finish; }

# hangfs_mount DIR ARGS...: lp-hangfs of chain-fp on DIR (made), its pid in
# FS_PID; checks it is mounted
hangfs_mount() {
	local dir=$1
	shift
	mkdir "$dir"
	start_bg "$WL/lp-hangfs" "$WL/chain-fp" "$dir" "$@"
	FS_PID=$BGPID
	for i in $(seq 50); do
		grep -q " $dir fuse" /proc/mounts && break
		sleep 0.1
	done
	check "lp-hangfs $* is mounted on $dir" grep -q " $dir fuse" /proc/mounts
}
# record_on_time FS_PID K ARGS...: lowprof record ARGS --no-cache -o
# $TMP/outK (log $TMP/logK), given up to 20 s to end on its own; then the
# file system FS_PID serves is killed (whatever waits on it fails) and the
# record checked to have ended with 0 within 15 s
record_on_time() {
	local fs=$1 k=$2 t0=$SECONDS rec secs rc
	shift 2
	"$BIN/lowprof" record "$@" --no-cache -o "$TMP/out$k" >"$TMP/log$k" 2>&1 &
	rec=$!
	KIDS+=("$rec")
	for i in $(seq 200); do
		kill -0 "$rec" 2>/dev/null || break
		sleep 0.1
	done
	secs=$((SECONDS - t0))
	kill -9 "$fs" 2>/dev/null
	wait "$rec"
	rc=$?
	cat "$TMP/log$k"
	check "lowprof record ends on its own, on time (exit $rc after $secs s, <= 15)" \
		test "$rc" -eq 0 -a "$secs" -le 15
}
MNT=$TMP/mnt MNT2=$TMP/mnt2 FS= FS2= FS4=
trap 'kill -9 $FS $FS2 $FS4 2>/dev/null; umount -l "$MNT" "$MNT2" 2>/dev/null; cleanup' EXIT
hangfs_mount "$MNT" --serve-opens 1
FS=$FS_PID

start_bg "$MNT/bin" 200
P_FUSE=$BGPID
start_bg "$WL/chain-nofp" 200
P_NORM=$BGPID
sleep 0.5
check "the FUSE program runs from the FUSE file" grep -q " $MNT/bin\$" "/proc/$P_FUSE/maps"
# the hang is real: a second open of the file never returns, whatever signal
start_bg cat "$MNT/bin"
P_CAT=$BGPID
sleep 0.3
kill -9 "$P_CAT" 2>/dev/null
sleep 0.3
check "an open of the FUSE file hangs, even through SIGKILL ($(awk '{print $3}' /proc/$P_CAT/stat 2>/dev/null))" \
	test "$(awk '{print $3}' "/proc/$P_CAT/stat" 2>/dev/null)" = D

cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
c0=$(cpu_ticks "$P_NORM")
t0=$(date +%s.%N)
timeout -k 5 60 "$BIN/lowprof" record -d 6 -F 999 -p "$P_FUSE" -p "$P_NORM" --no-cache \
	-o "$TMP/out" >"$TMP/log" 2>&1
rc=$?
t1=$(date +%s.%N)
c1=$(cpu_ticks "$P_NORM")
cat "$TMP/log"
wall=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }')
check "lowprof record exits 0 (got $rc) within 20 s ($wall s)" \
	awk -v rc="$rc" -v w="$wall" 'BEGIN { exit !(rc == 0 && w < 20) }'
check "nothing was lost" grep -Eq '^  samples lost +0 \(BPF ring full 0, shared ring full 0\)' "$TMP/log"
# the normal program's samples against its CPU time over the run (the run
# samples 6 s of it; the CPU time spans start-up and exit too)
n=$(awk -v c="chain-nofp;" 'index($0, c) == 1 { s += $NF } END { print s + 0 }' "$TMP/out/cpu.folded")
hz=$(getconf CLK_TCK)
share=$(awk -v c="$((c1 - c0))" -v hz="$hz" -v w="$wall" 'BEGIN { printf "%.2f", c / hz / w }')
# (a program that got under a tenth of a CPU cannot show this)
want=$(awk -v s="$share" 'BEGIN { printf "%d", s < 0.1 ? 999999 : s * 6 * 999 * 0.85 }')
check "the normal program keeps its samples: $n (>= $want, 85% of 6 s x 999 Hz x its CPU share $share)" \
	test "$n" -ge "$want"
check "the FUSE program was sampled too" \
	bash -c "awk -v c='bin;' 'index(\$0, c) == 1 { s += \$NF } END { exit !(s > 0) }' '$TMP/out/cpu.folded'"
check "the collector answered the request with a timeout" \
	grep -Eq 'files: opening pid [0-9]+.s file .* has not returned after 1000 ms' "$TMP/log"
check "and counted it" grep -Eq 'files: .*[1-9][0-9]* timed out' "$TMP/log"
check "the symbolizer asked for the FUSE binary and got no file" \
	grep -Eq 'files: asked the collector for [1-9][0-9]* files: .* [1-9][0-9]* not found or refused' "$TMP/log"
# the worker is still in the kernel: lowprof record did not wait for it
W=$(desc_named $$ lowprof-collect)
check "a collector worker is left stuck in the kernel (pid ${W:-none}, state $(awk '{print $3}' "/proc/$W/stat" 2>/dev/null))" \
	test -n "$W" -a "$(awk '{print $3}' "/proc/$W/stat" 2>/dev/null)" = D
# its descriptors: stdio, its socket, the file it opens; nothing of the collector's
fds=$(for f in /proc/$W/fd/*; do readlink "$f"; done 2>/dev/null | tr '\n' ' ')
check "it holds no BPF object, perf event, ring or capture ($fds)" \
	bash -c "! grep -Eq 'bpf|perf_event|memfd|io_uring|lowprof-ring' <<<'$fds'"
# the file system goes away: its requests fail, the stuck worker returns and dies
kill -9 "$FS"
wait "$FS" 2>/dev/null
umount -l "$MNT" 2>/dev/null
kill "$P_FUSE" 2>/dev/null

# ---- 2. -p: a request for another process is refused
"$BIN/lowprof-collector" --ring "$TMP/ring.sock" --ring-owner root -d 4 -p "$P_NORM" \
	>"$TMP/coll.log" 2>&1 &
COLL=$!
KIDS+=("$COLL")
"$WL/lp-filereq" "$TMP/ring.sock" "$P_NORM:$WL/chain-nofp" "$$:$(readlink /proc/$$/exe)" \
	"$P_NORM:$WL/chain-nofp" >"$TMP/req.out" 2>&1
wait "$COLL"
rc=$?
cat "$TMP/req.out" "$TMP/coll.log"
check "the collector exits 0 (got $rc)" test "$rc" -eq 0
check "a request for a process given with -p is served" \
	grep -qx "$P_NORM $WL/chain-nofp ok" "$TMP/req.out"
check "a request for one not given is refused with EPERM" \
	grep -Eq "^$$ .* error -1 \(" "$TMP/req.out"
check "the collector warns about it" grep -q "refusing a request for pid $$: not a process given with -p" "$TMP/coll.log"
check "and counts it" grep -Eq 'files: 2 mapped files handed to the symbolizer, 0 not found or replaced, 1 requests refused \(1 for a process not given with -p\)' "$TMP/coll.log"

# ---- 3. a mapped file whose reads hang (a dead NFS server): the collector
# never reads it in the drain loop. A process maps (PROT_EXEC) a file of a
# FUSE file system that serves the open and hangs every read, and runs.
# The kernel's build-id for it (PROCMAP_QUERY reads the file's note) would
# wait on that read, uninterruptibly: the collector is not to ask, for a
# file without a block device. Before, the whole run stalled until the
# file system went away, losing every sample meanwhile.
hangfs_mount "$MNT2" --serve-opens 1 --hang-reads
FS2=$FS_PID
start_bg python3 -c '
import mmap, os, sys
f = os.open(sys.argv[1], os.O_RDONLY)
m = mmap.mmap(f, 4096, mmap.MAP_PRIVATE, mmap.PROT_READ | mmap.PROT_EXEC)
print("mapped", flush=True)
while True:
    pass' "$MNT2/bin"
P_MAP=$BGPID
sleep 0.5
check "a process maps the file whose reads hang" grep -q " $MNT2/bin\$" "/proc/$P_MAP/maps"
record_on_time "$FS2" 3 -d 4 -F 999 -p "$P_MAP" -p "$P_NORM"
umount -l "$MNT2" 2>/dev/null
check "nothing was lost" grep -Eq '^  samples lost +0 \(BPF ring full 0, shared ring full 0\)' "$TMP/log3"
n=$(awk -v c="chain-nofp;" 'index($0, c) == 1 { s += $NF } END { print s + 0 }' "$TMP/out3/cpu.folded")
check "the normal program was sampled ($n samples)" test "$n" -gt 100
check "the mapping process was sampled too" \
	bash -c "awk 'index(\$0, \"python3\") == 1 { s += \$NF } END { exit !(s > 0) }' '$TMP/out3/cpu.folded'"

# ---- 4. a JIT perf map's /tmp on a FUSE file system whose lookups hang.
# In a mount namespace of its own (its mounts private: nothing reaches the
# host's), chain-fp is copied to a tmpfs on /mnt (the build may be under
# /tmp, which the FUSE file system then hides), lp-hangfs mounts over /tmp
# and the shell becomes /mnt/chain-fp (it touches no file of /tmp).
# Before, the collector's lookup of /tmp/perf-PID.map waited in the kernel
# until the daemon died.
start_bg unshare -m --propagation private bash -c '
mount -t tmpfs lp-e2e /mnt && cp "$1" /mnt/chain-fp || exit 3
"$0" "$1" /tmp --hang-lookups &
for i in $(seq 50); do grep -q " /tmp fuse" /proc/self/mounts && break; sleep 0.1; done
exec /mnt/chain-fp 200' "$WL/lp-hangfs" "$WL/chain-fp"
P_TMP=$BGPID
for i in $(seq 50); do
	[[ "$(readlink "/proc/$P_TMP/exe")" == /mnt/chain-fp ]] && break
	sleep 0.1
done
FS4=$(desc_named "$P_TMP" lp-hangfs)
check "a process runs with a FUSE /tmp of its own (pid $P_TMP, lp-hangfs ${FS4:-none})" \
	bash -c "[[ -n '$FS4' && '$(readlink "/proc/$P_TMP/exe")' == /mnt/chain-fp ]] &&
		grep -q ' /tmp fuse' /proc/$P_TMP/mounts && ! grep -q ' /tmp fuse' /proc/self/mounts"
# the hang is real: a lookup in that /tmp does not return
start_bg stat "/proc/$P_TMP/root/tmp/perf-$P_TMP.map"
P_STAT=$BGPID
sleep 0.5
check "a lookup in that /tmp hangs (state $(awk '{print $3}' "/proc/$P_STAT/stat" 2>/dev/null))" \
	bash -c "[[ \$(awk '{print \$3}' /proc/$P_STAT/stat 2>/dev/null) == [SD] ]]"
record_on_time "$FS4" 4 -d 3 -F 999 -p "$P_TMP"
n=$(awk -v c="chain-fp;" 'index($0, c) == 1 { s += $NF } END { print s + 0 }' "$TMP/out4/cpu.folded")
check "the process was sampled ($n samples)" test "$n" -gt 100
check "the collector says why its perf map was not read" \
	grep -q "perfmap: 1 processes' JIT perf maps not read: on a file system that is not local" "$TMP/log4"

kill "$P_NORM" "$P_MAP" "$P_TMP" 2>/dev/null
wait "$P_NORM" "$P_FUSE" "$P_MAP" "$P_TMP" "$P_STAT" 2>/dev/null
left=$(leftovers)
check "nothing left behind: '$left'" test -z "$left"
finish
