#!/usr/bin/env bash
# lowprof replay -j N the way a user runs it on a capture of several
# processes, on-CPU and off-CPU: each shard reads the file and symbolizes
# its processes, and the outputs are those of -j 1 (folded
# and HTML byte for byte, pprof the same samples), every shard's summary is
# printed with what the capture held; a capture cut in the middle replays
# the same with -j 2 as with -j 1; nothing is left running.
source "$(dirname "$0")/lib.sh"
require_root
export HOME=$TMP # go tool pprof's cache

CACHE_DIR="$TMP/cache"
mkdir -p "$CACHE_DIR"
chown lowprof "$CACHE_DIR"
CACHE="$CACHE_DIR/symbols.db"
HERE=$(dirname "$0")

# the shard (0..n-1) of a pid among n, as lowprof/shard.h computes it
shard_of() { echo $(((($1 * 0x9e3779b1) & 0xffffffff) * $2 >> 32)); }

# three chains without frame pointers, one blocking (off-CPU) python loop;
# more chains until the processes cover every shard of -j 2 and of -j 3
PIDS=()
for i in 1 2 3; do
	start_bg "$WL/chain-nofp" 60
	PIDS+=("$BGPID")
done
start_bg /usr/bin/python3 -c 'import time
while True:
    time.sleep(0.002)
    sum(range(2000))'
PIDS+=("$BGPID")
covered() {
	local n k p seen
	for n in 2 3; do
		for ((k = 0; k < n; k++)); do
			seen=0
			for p in "${PIDS[@]}"; do [[ $(shard_of "$p" $n) -eq $k ]] && seen=1; done
			((seen)) || return 1
		done
	done
}
for i in $(seq 12); do
	covered && break
	start_bg "$WL/chain-nofp" 60
	PIDS+=("$BGPID")
done
check "the workload's ${#PIDS[@]} processes cover every shard of -j 2 and -j 3" covered
sleep 0.3

popts=()
for p in "${PIDS[@]}"; do popts+=(-p "$p"); done
"$BIN/lowprof" record -d "$(scaled 4)" -F 999 --off-cpu "${popts[@]}" --no-symbolize \
	--capture "$TMP/run.lpcap" >"$TMP/rec.out" 2>"$TMP/rec.err"
rc=$?
check "record --capture exits 0 (got $rc)" test "$rc" -eq 0
for p in "${KIDS[@]}"; do kill "$p" 2>/dev/null; done
wait 2>/dev/null

# replay NAME FILE JOBS: lowprof replay FILE -j JOBS -o $TMP/NAME; RC, NAME.out, NAME.err
replay() {
	"$BIN/lowprof" replay "$2" -j "$3" -o "$TMP/$1" --cache "$CACHE" >"$TMP/$1.out" 2>"$TMP/$1.err"
	RC=$?
}
# same NAME REF: NAME's outputs are REF's
same() {
	local f
	for f in cpu.folded cpu.html offcpu.folded offcpu.html; do
		check "$1: $f is -j 1's byte for byte" cmp -s "$TMP/$2/$f" "$TMP/$1/$f"
	done
	for f in cpu offcpu; do
		[[ -s "$TMP/$2/$f.pb.gz" ]] || fail "$2: no $f.pb.gz to compare with"
		go tool pprof -raw "$TMP/$1/$f.pb.gz" >"$TMP/$1.$f.raw" 2>&1
		check "$1: $f.pb.gz has -j 1's samples and comments" \
			python3 "$HERE/pprof_same.py" "$TMP/$2.$f.raw" "$TMP/$1.$f.raw"
	done
}

replay j1 "$TMP/run.lpcap" 1
check "-j 1: exits 0 (got $RC)" test "$RC" -eq 0
for f in cpu offcpu; do go tool pprof -raw "$TMP/j1/$f.pb.gz" >"$TMP/j1.$f.raw" 2>&1; done
pct=$(share "$TMP/j1/cpu.folded" ';main;chain_one;chain_two;chain_three;chain_leaf')
check "-j 1: $pct% of the samples show the chain (>= 50%)" test "$pct" -ge 50
check "-j 1: off-CPU samples of the python loop" grep -q '^python3;' "$TMP/j1/offcpu.folded"
for j in 2 3; do
	replay "j$j" "$TMP/run.lpcap" "$j"
	check "-j $j: exits 0 (got $RC)" test "$RC" -eq 0
	same "j$j" j1
	for ((k = 0; k < j; k++)); do
		check "-j $j: shard $k's summary, with samples of its own" \
			grep -Eq "^lowprof summary: shard $k of $j \\([0-9]+ records" "$TMP/j$j.out"
	done
	check "-j $j: the merged summary" grep -q "^lowprof summary: the $j shards merged" "$TMP/j$j.out"
	check "-j $j: what the capture held, in each shard's summary (each reads it whole)" \
		test "$(grep -c '^  capture  ' "$TMP/j$j.out")" -eq "$j"
	check "-j $j: the warnings of -j 1, and no error" \
		bash -c "! grep -q error '$TMP/j$j.err' && diff <(sort -u '$TMP/j1.err') <(sort -u '$TMP/j$j.err')"
done
# the shards' samples: each has some (the pids cover every shard)
for ((k = 0; k < 3; k++)); do
	n=$(awk -v k="$k" '$0 ~ "^lowprof summary: shard " k " of 3" { getline; getline; print $2 }' "$TMP/j3.out")
	check "-j 3: shard $k has samples (${n:-none})" test "${n:-0}" -gt 0
done

# a capture cut inside a block of samples (the kernel symbols fill the first
# blocks, of a few records each): the same outputs with -j 2 as with -j 1.
# The cut: the middle of the second block of many records (samples before
# it replay, its own are lost), from the headers
# (64-byte file header; each block's 32-byte header has nrecords at 12 and
# stored_len at 20)
cut=$(python3 -c '
import struct, sys
d = open(sys.argv[1], "rb").read()
off = struct.unpack_from("<I", d, 12)[0]
many = 0
while off + 32 <= len(d):
    nrec, stored = struct.unpack_from("<I", d, off + 12)[0], struct.unpack_from("<I", d, off + 20)[0]
    many += nrec >= 50
    if many == 2:
        print(off + 32 + stored // 2)
        break
    off += 32 + stored
' "$TMP/run.lpcap")
check "a block of samples to cut (${cut:-none})" test -n "$cut"
cp "$TMP/run.lpcap" "$TMP/cut.lpcap"
truncate -s "${cut:-100000}" "$TMP/cut.lpcap"
replay cut1 "$TMP/cut.lpcap" 1
for f in cpu offcpu; do go tool pprof -raw "$TMP/cut1/$f.pb.gz" >"$TMP/cut1.$f.raw" 2>&1; done
replay cut2 "$TMP/cut.lpcap" 2
check "cut: -j 2 exits as -j 1 does (got $RC)" test "$RC" -eq 0
check "cut: the capture's damage is reported" grep -q '^  capture damage' "$TMP/cut2.out"
n=$(awk '{ s += $NF } END { print s + 0 }' "$TMP/cut1/cpu.folded")
check "cut: -j 1 replays samples of the part that is whole ($n)" test "$n" -gt 0
same cut2 cut1

left=$(leftovers)
check "nothing left running${left:+: $left}" test -z "$left"
finish
