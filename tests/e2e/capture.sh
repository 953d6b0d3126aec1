#!/usr/bin/env bash
# Capture and replay the way a user tries them, on a program lowprof has never
# seen (built here, -O2, no frame pointers, no debug information):
# `lowprof record --capture` writes the same profile it prints, and
# `lowprof replay` turns the file into the same outputs again and again;
# `lowprof capture-info` describes it; `--no-symbolize` records with the
# collector alone; a binary moved away is found by build-id under
# --debug-dir, and is named once in a warning (never symbolized against the
# file now at its path) when it is not there; a capture cut short or with
# flipped bytes replays what is whole and says what was lost, never crashes;
# capture-info prints a hostile capture's strings sanitized, and does not
# read it as root when it cannot become its --user (lowprof).
source "$(dirname "$0")/lib.sh"
require_root
export HOME=$TMP # go tool pprof's cache

CACHE_DIR="$TMP/cache"
mkdir -p "$CACHE_DIR"
chown lowprof "$CACHE_DIR"
CACHE="$CACHE_DIR/symbols.db"

# VARIANT: a different build at the same path (another build-id)
cat >"$TMP/capwork.c" <<'C'
#include <stdint.h>
#include <stdlib.h>
#include <time.h>
static volatile uint64_t sink;
#ifdef VARIANT
volatile int cap_variant = 1;
#endif
__attribute__((noinline)) void cap_leaf(uint64_t n)
{
	uint64_t x = n;
	for (int i = 0; i < 2000000; i++)
		x = x * 2862933555777941757ull + 3037000493ull;
	sink += x;
}
__attribute__((noinline)) void cap_two(uint64_t n) { cap_leaf(n ^ 2); sink++; }
__attribute__((noinline)) void cap_one(uint64_t n) { cap_two(n ^ 1); sink++; }
int main(int argc, char **argv)
{
	time_t end = time(NULL) + (argc > 1 ? atoi(argv[1]) : 30);
	for (uint64_t n = 0; time(NULL) < end; n++)
		cap_one(n);
	return 0;
}
C
W="$TMP/capwork"
gcc -O2 -fomit-frame-pointer -o "$W" "$TMP/capwork.c" || fail "gcc capwork"
chmod 755 "$W"

# the chain, whole, under libc's start code (kernel frames may follow the leaf)
CHAIN='^capwork;_start;(.*;)?main;cap_one;cap_two;cap_leaf(;[^;]+_\[k\])*$'
total() { awk '{ s += $NF } END { print s + 0 }' "$1"; }

# replay NAME FILE OPTIONS...: lowprof replay FILE -o $TMP/NAME; its stdout and
# stderr in $TMP/NAME.out and .err, its exit status in RC
replay() {
	local name=$1 file=$2; shift 2
	"$BIN/lowprof" replay "$file" -o "$TMP/$name" "$@" >"$TMP/$name.out" 2>"$TMP/$name.err"
	RC=$?
}

# ---- 1. record with --capture, replay twice: the same outputs each time
# (the workload is stopped with section 3; it runs in its loop, everything
# mapped, once it has had some CPU)
start_bg "$W" 900
WPID=$BGPID
wait_cpu "$WPID" 50
# the workload's executable file mappings, as capture-info should count them
nmaps=$(awk '$2 ~ /x/ && $6 ~ /^\// { print $6 }' /proc/$WPID/maps | sort -u | wc -l)
# of them, files without a block device (device major 0: overlayfs, btrfs,
# tmpfs, virtiofs in the VM tests), which the kernel is not asked about
nanon=$(awk '$2 ~ /x/ && $6 ~ /^\// && $4 ~ /^0+:/ { print $6 }' /proc/$WPID/maps | sort -u | wc -l)
# stopped (Ctrl-C) once the workload has had 4 s of CPU while recorded, as it
# has in 4 s alone on a CPU: the capture holds a few seconds of samples,
# however loaded the machine
start_bg "$BIN/lowprof" record -p "$WPID" -o "$TMP/live" --capture "$TMP/run.lpcap" \
	--cache "$CACHE" >"$TMP/live.out" 2>"$TMP/live.err"
REC=$BGPID
wait_log "$TMP/live.err" 'profiling the given processes' || fail "record never started profiling"
wait_cpu "$WPID" 4000 300 || fail "the workload did not get 4 s of CPU in 300 s"
kill -INT "$REC"
wait "$REC"
rc=$?
check "record --capture exits 0 (got $rc)" test "$rc" -eq 0
check "record --capture prints where the capture is" grep -q "^Capture in $TMP/run.lpcap" "$TMP/live.out"
check "the capture file is mode 0600" test "$(stat -c %a "$TMP/run.lpcap")" = 600
LIVE="$TMP/live/cpu.folded"
echo "--- live cpu.folded"; sort -t' ' -k2 -nr "$LIVE" | head -3 | cut -c1-200

replay r1 "$TMP/run.lpcap" --no-cache
check "replay (no cache) exits 0 (got $RC)" test "$RC" -eq 0
replay r2 "$TMP/run.lpcap" --cache "$CACHE"
check "replay (tables from the cache) exits 0 (got $RC)" test "$RC" -eq 0
grep -E 'binaries|capture' "$TMP/r2.out"
check "r1/cpu.folded and r2/cpu.folded are byte-identical" cmp "$TMP/r1/cpu.folded" "$TMP/r2/cpu.folded"
check "the replayed cpu.folded is byte-identical to the live run's" cmp "$LIVE" "$TMP/r1/cpu.folded"
for f in r1 r2 live; do
	go tool pprof -raw "$TMP/$f/cpu.pb.gz" >"$TMP/$f.raw" 2>&1
done
check "go tool pprof reads the replayed cpu.pb.gz" grep -q '^Samples:' "$TMP/r1.raw"
check "go tool pprof -raw of r1 and r2 agree" cmp "$TMP/r1.raw" "$TMP/r2.raw"
check "go tool pprof -raw of the live run and the replay agree" cmp "$TMP/live.raw" "$TMP/r1.raw"
if ! cmp -s "$TMP/r1/cpu.pb.gz" "$TMP/r2/cpu.pb.gz"; then
	echo "note: r1/cpu.pb.gz and r2/cpu.pb.gz differ as bytes (-raw agrees: $(cmp -s "$TMP/r1.raw" "$TMP/r2.raw" && echo yes || echo no))"
else
	echo "    r1/cpu.pb.gz and r2/cpu.pb.gz are byte-identical too"
fi
pct=$(share "$TMP/r1/cpu.folded" "$CHAIN")
check "replay: $pct% of samples show main;cap_one;cap_two;cap_leaf (>= 95%)" test "$pct" -ge 95

# ---- 2. capture-info
"$BIN/lowprof" capture-info "$TMP/run.lpcap" >"$TMP/info.out" 2>&1
rc=$?
echo "--- capture-info"; cat "$TMP/info.out"
check "capture-info exits 0 (got $rc)" test "$rc" -eq 0
check "capture-info: complete" grep -Eq '^complete +yes' "$TMP/info.out"
check "capture-info: no damage" grep -Eq '^damage +none$' "$TMP/info.out"
check "capture-info: schema 1.6" grep -Eq '^schema +1\.6,' "$TMP/info.out"
check "capture-info: the pid filter is the workload" grep -Eq "^pid filter +$WPID\$" "$TMP/info.out"
nsamp=$(awk -v p="$WPID" '$1 == p && $2 == "capwork" { print $3 }' "$TMP/info.out")
check "capture-info lists pid $WPID, comm capwork, with samples ($nsamp)" test "${nsamp:-0}" -gt 0
folded_total=$(total "$LIVE")
check "capture-info's sample count for it ($nsamp) = the sum of cpu.folded ($folded_total)" \
	test "${nsamp:-0}" -eq "$folded_total"
check "capture-info's on-CPU samples = the sum of cpu.folded" \
	grep -Eq "^samples +on-CPU $folded_total \\(" "$TMP/info.out"
# the run's start is stamped before the programs are attached: its first
# sample comes after it (what bench.sh's start-up rows read)
check "capture-info: the first on-CPU sample after the run's start" \
	grep -Eq "^first sample +on-CPU at [0-9]+\\.[0-9]{6} s on the meta clock, \\+[0-9]+\\.[0-9]{6} s from the run's start\$" "$TMP/info.out"
read -r maps maps_id < <(sed -nE 's/^binaries +([0-9]+) executable file mappings, ([0-9]+) with a build-id.*$/\1 \2/p' \
	"$TMP/info.out")
check "capture-info: ${maps_id:-?} mappings with a build-id (> 0)" test "${maps_id:-0}" -gt 0
if grep -Eq '^kernel .*fallbacks .*no-procmap-query' "$TMP/info.out" || ((nanon > 0)); then
	# a kernel without PROCMAP_QUERY gives none, nor one with it for files
	# without a block device: those of the files the live symbolizer read
	# (the ones with frames) are its notes, and say so
	check "capture-info: the build-ids are the live symbolizer's notes ($nanon of $nmaps files without a block device)" \
		grep -Eq '^binaries .* with a build-id \([1-9][0-9]* noted by the live symbolizer' "$TMP/info.out"
	check "capture-info: the files of block devices have theirs (${maps_id:-?} >= ${maps:-?} - $nanon)" \
		test "${maps_id:-0}" -ge $((${maps:-0} - nanon))
else
	check "capture-info: every mapping has a build-id (${maps_id:-?} of ${maps:-?})" \
		test "${maps_id:-0}" -eq "${maps:--1}"
fi
check "capture-info: ${maps:-?} mappings = the workload's $nmaps executable files in /proc/PID/maps" \
	test "${maps:-0}" -eq "$nmaps"

# ---- 3. --no-symbolize: the collector alone, the capture only
start_bg "$BIN/lowprof" record -d 3 -p "$WPID" --capture "$TMP/ns.lpcap" --no-symbolize \
	-o "$TMP/nsout" >"$TMP/ns.out" 2>"$TMP/ns.err"
REC=$BGPID
wait_log "$TMP/ns.err" 'profiling the given processes' || fail "--no-symbolize: never started profiling"
col=$(desc_named "$REC" lowprof-collect)
sym=$(desc_named "$REC" lowprof-symboli)
check "--no-symbolize: the collector runs ($col)" test -n "$col"
check "--no-symbolize: no lowprof-symbolizer runs ('$sym')" test -z "$sym"
wait "$REC"; rc=$?
[[ $rc -ne 0 ]] && cat "$TMP/ns.out" "$TMP/ns.err"
check "--no-symbolize: record exits 0 (got $rc)" test "$rc" -eq 0
check "--no-symbolize: prints the 'Capture in' line" grep -q "^Capture in $TMP/ns.lpcap" "$TMP/ns.out"
check "--no-symbolize: nothing written to $TMP/nsout ($(ls -A "$TMP/nsout" 2>/dev/null | tr '\n' ' '))" \
	test -z "$(ls -A "$TMP/nsout" 2>/dev/null)"
check "--no-symbolize: the capture is not empty" test -s "$TMP/ns.lpcap"
replay ns "$TMP/ns.lpcap" --cache "$CACHE"
check "--no-symbolize: its replay exits 0 (got $RC)" test "$RC" -eq 0
pct=$(share "$TMP/ns/cpu.folded" "$CHAIN")
check "--no-symbolize: $pct% of replayed samples show the chain (>= 95%)" test "$pct" -ge 95
kill "$WPID" 2>/dev/null
wait "$WPID" 2>/dev/null

# ---- 5. damage (before 4 moves the binary): never a crash, always a clear message
# blocks: offset seq nrecords stored_len, walked from the headers
u32() { od -An -t u4 -j "$2" -N 4 "$1" | tr -d ' '; }
SIZE=$(stat -c %s "$TMP/run.lpcap")
BLOCKS=()
off=64
while [[ $off -lt $SIZE ]]; do
	len=$(u32 "$TMP/run.lpcap" $((off + 20)))
	BLOCKS+=("$off $(u32 "$TMP/run.lpcap" $((off + 8))) $(u32 "$TMP/run.lpcap" $((off + 12))) $len")
	off=$((off + 32 + len))
done
nb=${#BLOCKS[@]}
echo "--- $nb blocks in $SIZE bytes"
check "the block headers walk to the end of the file exactly" test "$off" -eq "$SIZE"
# the middle block by offset, and the second block of samples (the kernel
# symbol snapshot fills the first blocks; the samples follow, a second's
# worth to a block, as many as the workload's CPU in that second gives):
# samples before it and after it. A block holds samples when the file cut
# after it has more of them than the file cut before it (capture-info).
mid="" late="" nsampblocks=0 before=0
for b in "${BLOCKS[@]}"; do
	read -r o _ n l <<<"$b"
	if [[ -z "$mid" && $((o + 32 + l)) -gt $((SIZE / 2)) ]]; then mid=$b; fi
	[[ $nsampblocks -ge 3 ]] && continue
	head -c $((o + 32 + l)) "$TMP/run.lpcap" >"$TMP/upto.lpcap"
	upto=$("$BIN/lowprof" capture-info "$TMP/upto.lpcap" 2>/dev/null |
		sed -n 's/^samples *on-CPU \([0-9]*\) .*/\1/p')
	if [[ ${upto:-0} -gt $before ]]; then
		nsampblocks=$((nsampblocks + 1))
		[[ $nsampblocks -eq 2 ]] && late=$b
	fi
	before=${upto:-0}
done
rm -f "$TMP/upto.lpcap"
check "the capture has at least 3 blocks of samples ($nsampblocks)" test "$nsampblocks" -ge 3
read -r mid_off mid_seq _ mid_len <<<"$mid"
read -r late_off late_seq late_n late_len <<<"$late"
echo "    middle block $mid_seq at $mid_off ($mid_len bytes); late block $late_seq at $late_off ($late_n records, $late_len bytes)"

flip() { # flip FILE OFFSET: inverts one byte
	local v
	v=$(od -An -t u1 -j "$2" -N 1 "$1" | tr -d ' ')
	printf "$(printf '\\%03o' $((v ^ 0xff)))" | dd of="$1" bs=1 seek="$2" conv=notrunc status=none
}
# damaged NAME: a replay of $TMP/NAME.lpcap that must not crash; sets RC
damaged() {
	local name=$1
	replay "$name" "$TMP/$name.lpcap" --cache "$CACHE"
	echo "    $name: exit $RC: $(grep -E 'warning|error' "$TMP/$name.err" | head -2 | cut -c1-220)"
	check "$name: replay does not crash (exit $RC < 128)" test "$RC" -lt 128
	check "$name: the symbolizer was not killed by a signal" \
		bash -c "! grep -q 'killed by signal' '$TMP/$name.err'"
}
cut_at() { # cut_at NAME BYTES
	cp "$TMP/run.lpcap" "$TMP/$1.lpcap"
	truncate -s "$2" "$TMP/$1.lpcap"
}

for n in 70 40; do
	cut_at "cut$n" $((SIZE * n / 100))
	damaged "cut$n"
	check "cut$n: replay exits 0, with what was whole (got $RC)" test "$RC" -eq 0
	check "cut$n: a warning says the file was cut short and records lost" \
		grep -Eq 'warning: .*cut short.*|warning: .*lost' "$TMP/cut$n.err"
done
# inside a block of samples near the end: the samples before it replay whole
cut_at cutlate $((late_off + 32 + late_len / 2))
damaged cutlate
check "cutlate: replay exits 0 (got $RC)" test "$RC" -eq 0
check "cutlate: a warning says block $late_seq was cut short and its $late_n records lost" \
	grep -Eq "warning: .*block $late_seq .*its $late_n records are lost.*cut short" "$TMP/cutlate.err"
got=$(total "$TMP/cutlate/cpu.folded")
check "cutlate: fewer samples than the whole capture, but some ($got of $folded_total)" \
	test "$got" -gt 0 -a "$got" -lt "$folded_total"
pct=$(share "$TMP/cutlate/cpu.folded" "$CHAIN")
check "cutlate: $pct% of the remaining samples show the chain (>= 95%)" test "$pct" -ge 95
check "cutlate: the summary reports the capture's damage" \
	grep -Eq "capture damage +$late_n records lost" "$TMP/cutlate.out"

# one byte into a block's header: the count of its records is lost with it,
# and every message says so rather than "0 records lost"
cut_at cuthdr $((late_off + 1))
damaged cuthdr
check "cuthdr: replay exits 0 (got $RC)" test "$RC" -eq 0
check "cuthdr: the warning says 1 byte of a header, its block's records unknown" \
	grep -Eq "warning: .*ends 1 byte into a block header at offset $late_off: .*how many is unknown" \
	"$TMP/cuthdr.err"
check "cuthdr: the summary says the cut block's records are unknown" \
	grep -Eq "capture damage .*cut-off end inside a block's header, whose records are unknown" \
	"$TMP/cuthdr.out"
"$BIN/lowprof" capture-info "$TMP/cuthdr.lpcap" >"$TMP/info-cuthdr.out" 2>&1
check "capture-info cuthdr: its damage line says the last block's records are unknown" \
	grep -Eq "^damage .*cut-off end inside a block's header, whose records are unknown" \
	"$TMP/info-cuthdr.out"

# the capture named as one of replay's outputs: refused before it is emptied
mkdir -p "$TMP/sameout"
cp "$TMP/run.lpcap" "$TMP/sameout/cpu.html"
"$BIN/lowprof" replay "$TMP/sameout/cpu.html" -o "$TMP/sameout" >"$TMP/sameout.out" 2>&1
rc=$?
check "replay of a capture named as its output exits 1 (got $rc)" test "$rc" -eq 1
check "it says the capture is an output" grep -q 'that is the output .*cpu.html' "$TMP/sameout.out"
check "and the capture is intact" cmp -s "$TMP/run.lpcap" "$TMP/sameout/cpu.html"
# a symbolizer that cannot be started (descriptors run out part way through
# -j 16's): replay says so and ends, at every point it can run out
hung=0
for n in $(seq 32 4 72); do
	(ulimit -n "$n"; timeout -s KILL 20 "$BIN/lowprof" replay "$TMP/run.lpcap" -o "$TMP/fds" \
		-j 16 --no-cache >/dev/null 2>&1)
	[[ $? -eq 137 ]] && hung=$((hung + 1))
done
check "replay -j 16 short of descriptors never hangs ($hung of 11 did)" test "$hung" -eq 0

cut_at cut100 100
damaged cut100
check "cut100: replay exits 0 (got $RC)" test "$RC" -eq 0
check "cut100: a warning says the file was cut short and records lost" \
	grep -Eq 'warning: .*(cut short|lost)' "$TMP/cut100.err"

cut_at cut10 10
damaged cut10
check "cut10: replay exits 1 (got $RC)" test "$RC" -eq 1
check "cut10: an error says the header is damaged or cut short" \
	grep -Eq 'error: .*header is damaged or cut short' "$TMP/cut10.err"

cp "$TMP/run.lpcap" "$TMP/fliphdr.lpcap"
flip "$TMP/fliphdr.lpcap" 20
damaged fliphdr
check "fliphdr: replay exits 1 (got $RC)" test "$RC" -eq 1
check "fliphdr: an error says the header is damaged" grep -Eq 'error: .*header is damaged' "$TMP/fliphdr.err"

cp "$TMP/run.lpcap" "$TMP/flipmid.lpcap"
flip "$TMP/flipmid.lpcap" $((mid_off + 32 + mid_len / 2))
damaged flipmid
check "flipmid: replay exits 0 (got $RC)" test "$RC" -eq 0
check "flipmid: a warning names block $mid_seq's checksum" \
	grep -Eq "warning: .*block $mid_seq .*checksum" "$TMP/flipmid.err"

cp "$TMP/run.lpcap" "$TMP/fliplate.lpcap"
flip "$TMP/fliplate.lpcap" $((late_off + 32 + late_len / 2))
damaged fliplate
check "fliplate: replay exits 0 (got $RC)" test "$RC" -eq 0
check "fliplate: a warning names block $late_seq's checksum" \
	grep -Eq "warning: .*block $late_seq .*checksum" "$TMP/fliplate.err"
got=$(total "$TMP/fliplate/cpu.folded")
# (the block's records are samples and perhaps a loss or maps record)
check "fliplate: only that block's samples are lost ($got of $folded_total, at most $late_n fewer)" \
	test "$got" -ge $((folded_total - late_n)) -a "$got" -lt "$folded_total"
pct=$(share "$TMP/fliplate/cpu.folded" "$CHAIN")
check "fliplate: $pct% of the samples show the chain (>= 95%)" test "$pct" -ge 95

# a block header damaged: skipped, and the gap in the sequence reported
cp "$TMP/run.lpcap" "$TMP/flipbhdr.lpcap"
flip "$TMP/flipbhdr.lpcap" $((late_off + 8))
damaged flipbhdr
check "flipbhdr: replay exits 0 (got $RC)" test "$RC" -eq 0
check "flipbhdr: warnings say bytes were skipped and block $late_seq is missing" \
	bash -c "grep -Eq 'warning: .*not a valid block' '$TMP/flipbhdr.err' &&
		grep -Eq 'warning: .*blocks? $late_seq .*missing' '$TMP/flipbhdr.err'"

# a hole of zeros, as a crash can leave
cp "$TMP/run.lpcap" "$TMP/hole.lpcap"
dd if=/dev/zero of="$TMP/hole.lpcap" bs=1 seek=$((SIZE / 3)) count=4096 conv=notrunc status=none
damaged hole
check "hole: replay exits 0 (got $RC)" test "$RC" -eq 0
check "hole: a warning says what was skipped or lost" \
	grep -Eq 'warning: .*(not a valid block|checksum|lost)' "$TMP/hole.err"

cp /etc/hostname "$TMP/notcap.lpcap"
damaged notcap
check "not a capture: replay exits 1 (got $RC)" test "$RC" -eq 1
check "not a capture: says 'not a lowprof capture file'" \
	grep -q 'not a lowprof capture file' "$TMP/notcap.err"

"$BIN/lowprof" capture-info "$TMP/notcap.lpcap" >"$TMP/info-notcap.out" 2>&1
rc=$?
check "capture-info on a non-capture exits 1 (got $rc)" test "$rc" -eq 1
check "capture-info on a non-capture says 'not a lowprof capture file'" \
	grep -q 'not a lowprof capture file' "$TMP/info-notcap.out"
"$BIN/lowprof" capture-info "$TMP/fliphdr.lpcap" >"$TMP/info-fliphdr.out" 2>&1
rc=$?
check "capture-info on a damaged header exits 1 (got $rc)" test "$rc" -eq 1
check "capture-info on a damaged header says so" grep -q 'header is damaged' "$TMP/info-fliphdr.out"
for n in 70 late; do
	"$BIN/lowprof" capture-info "$TMP/cut$n.lpcap" >"$TMP/info-cut$n.out" 2>&1
	rc=$?
	echo "    capture-info cut$n: $(grep -E '^(complete|damage)' "$TMP/info-cut$n.out" | cut -c1-100 | tr '\n' '|')"
	check "capture-info cut$n exits 0 (got $rc)" test "$rc" -eq 0
	check "capture-info cut$n: complete NO" grep -Eq '^complete +NO' "$TMP/info-cut$n.out"
	check "capture-info cut$n: reports records lost" \
		grep -Eq '^damage +[1-9][0-9]* records lost' "$TMP/info-cut$n.out"
done

# ---- off-CPU: a capture with --off-cpu replays to the same offcpu.* as live
cat >"$TMP/capsleep.c" <<'EOS'
#include <time.h>
__attribute__((noinline)) void cap_sleeper(void)
{
	struct timespec t = {0, 20000000};
	nanosleep(&t, 0);
}
int main(void)
{
	for (int i = 0; i < 400; i++)
		cap_sleeper();
	return 0;
}
EOS
gcc -O2 -o "$TMP/capsleep" "$TMP/capsleep.c" || fail "gcc capsleep"
start_bg "$TMP/capsleep"
SPID=$BGPID
sleep 0.3
"$BIN/lowprof" record -d 3 -p "$SPID" --off-cpu -o "$TMP/offlive" --capture "$TMP/off.lpcap" \
	>"$TMP/offlive.out" 2>&1
rc=$?
check "record --off-cpu --capture exits 0 (got $rc)" test "$rc" -eq 0
"$BIN/lowprof" replay "$TMP/off.lpcap" -o "$TMP/offr" --no-cache >"$TMP/offr.out" 2>&1
rc=$?
check "replay of an off-CPU capture exits 0 (got $rc)" test "$rc" -eq 0
check "the replay writes offcpu.folded" test -s "$TMP/offr/offcpu.folded"
check "offcpu.folded of the replay is byte-identical to the live run's" \
	cmp -s "$TMP/offlive/offcpu.folded" "$TMP/offr/offcpu.folded"
pct=$(share "$TMP/offr/offcpu.folded" 'main;cap_sleeper;.*nanosleep')
check "replayed off-CPU time is in main;cap_sleeper;...nanosleep ($pct%)" test "${pct:-0}" -ge 90
check "a capture without off-CPU data replays to no offcpu.* files" \
	test ! -e "$TMP/r1/offcpu.folded" -a ! -e "$TMP/r1/offcpu.pb.gz"
kill "$SPID" 2>/dev/null
# recorded with --off-cpu but no block sampled (the one process profiled is
# stopped throughout): record writes the offcpu.* outputs, without samples,
# and so does replay, with -j 1 and -j 2
start_bg sleep 600
ZPID=$BGPID
kill -STOP "$ZPID"
"$BIN/lowprof" record -d 1 -p "$ZPID" --off-cpu -o "$TMP/zlive" --capture "$TMP/z.lpcap" \
	>"$TMP/zlive.out" 2>&1
check "record --off-cpu of a stopped process writes offcpu.pb.gz" test -s "$TMP/zlive/offcpu.pb.gz"
for j in 1 2; do
	"$BIN/lowprof" replay "$TMP/z.lpcap" -o "$TMP/zr$j" -j $j --no-cache >"$TMP/zr$j.out" 2>&1
	rc=$?
	check "replay -j $j of it exits 0 (got $rc) and writes offcpu.* as record did" \
		test "$rc" -eq 0 -a -s "$TMP/zr$j/offcpu.pb.gz" -a -e "$TMP/zr$j/offcpu.folded" \
		-a -s "$TMP/zr$j/offcpu.html"
	check "replay -j $j names them among the outputs" grep -q '^Outputs in .* offcpu.pb.gz' \
		"$TMP/zr$j.out"
done
kill -9 "$ZPID" 2>/dev/null

# ---- stack copies hold frames, not the environment: a sample's
# copy stops at the top of the main thread's stack frames (start_stack), so
# argv and the environment above it (often secrets) never reach the rings or
# the capture; the chain still unwinds whole to _start
SECRET="lowprof-secret-$RANDOM$RANDOM-not-for-the-capture"
start_bg env LOWPROF_TEST_SECRET="$SECRET" "$W" "$(scaled 6)" "$SECRET"
EPID=$BGPID
sleep 0.3
check "env: the workload's environment and argv hold the secret" \
	grep -qaF "$SECRET" "/proc/$EPID/environ"
"$BIN/lowprof" record -d 3 -p "$EPID" --capture "$TMP/env.lpcap" --capture-compress none \
	--no-symbolize -o "$TMP/envout" >"$TMP/env.out" 2>&1
rc=$?
check "env: record exits 0 (got $rc)" test "$rc" -eq 0
check "env: the uncompressed capture does not hold it" \
	bash -c '! grep -qaF "$1" "$2"' _ "$SECRET" "$TMP/env.lpcap"
replay env "$TMP/env.lpcap" --cache "$CACHE"
check "env: replay exits 0 (got $RC)" test "$RC" -eq 0
pct=$(share "$TMP/env/cpu.folded" "$CHAIN")
check "env: $pct% of samples show the chain to _start (>= 95%)" test "$pct" -ge 95
kill "$EPID" 2>/dev/null

# ---- 4. the binary moved away, found by build-id under --debug-dir
id=$(readelf -n "$W" | awk '/Build ID:/ { print $3 }')
check "the workload has a build-id ($id)" test -n "$id"
DBG="$TMP/dbg"
mkdir -p "$DBG/.build-id/${id:0:2}"
cp "$W" "$DBG/.build-id/${id:0:2}/${id:2}"
chmod -R a+rX "$DBG"
gcc -O2 -fomit-frame-pointer -DVARIANT -o "$W.new" "$TMP/capwork.c" || fail "gcc capwork -DVARIANT"
chmod 755 "$W.new"
mv "$W.new" "$W"
id2=$(readelf -n "$W" | awk '/Build ID:/ { print $3 }')
check "the file now at $W is another build ($id2)" test -n "$id2" -a "$id2" != "$id"

# moved NAME WHY: checks a replay that could not find the binary
moved() {
	local name=$1 why=$2 n
	check "$name: replay exits 0 (got $RC)" test "$RC" -eq 0
	n=$(grep -c -F "$W" "$TMP/$name.err")
	check "$name: exactly one line names $W ($n)" test "$n" -eq 1
	check "$name: the warning says '$why' and gives the build-id" \
		grep -Eq "warning: .*$W: $why, and no --debug-dir has build-id $id" "$TMP/$name.err"
	grep -F "$W" "$TMP/$name.err" | cut -c1-240
	check "$name: its frames are shown as $W+0x..." grep -Eq "^capwork;(.*;)?$W\\+0x[0-9a-f]+[; ]" \
		"$TMP/$name/cpu.folded"
	check "$name: no frame named cap_*" bash -c "! grep -Eq '(^|;)cap_(one|two|leaf)(;| )' '$TMP/$name/cpu.folded'"
	check "$name: the summary counts it not found by build-id" \
		grep -Eq 'binaries .*1 not found by build-id' "$TMP/$name.out"
	echo "    $name: $(sort -t' ' -k2 -nr "$TMP/$name/cpu.folded" | head -1 | cut -c1-160)"
}
# found NAME: checks a replay that found the binary under --debug-dir
found() {
	local name=$1
	check "$name: replay exits 0 (got $RC)" test "$RC" -eq 0
	check "$name: no line names $W" bash -c "! grep -qF '$W' '$TMP/$name.err'"
	check "$name: cpu.folded is byte-identical to the live run's" cmp "$LIVE" "$TMP/$name/cpu.folded"
}

# the default /usr/lib/debug is kept beside our directory: libc's local names
# come from its separate debug file there
DEBUG_DIRS=(--debug-dir "$DBG" --debug-dir /usr/lib/debug)
replay other "$TMP/run.lpcap" --cache "$CACHE"
moved other "the file at that path has another build-id"
replay other-dbg "$TMP/run.lpcap" --cache "$CACHE" "${DEBUG_DIRS[@]}"
found other-dbg
# --debug-dir alone replaces the default: the chain is still whole
# (without the cache: a table cached from a run that had libc's debug file
# would name libc's frames differently again)
replay other-dbg1 "$TMP/run.lpcap" --no-cache --debug-dir "$DBG"
check "other-dbg1: replay exits 0 (got $RC)" test "$RC" -eq 0
pct=$(share "$TMP/other-dbg1/cpu.folded" "$CHAIN")
check "other-dbg1 (--debug-dir $DBG alone): $pct% of samples show the chain (>= 95%)" test "$pct" -ge 95
cmp -s "$LIVE" "$TMP/other-dbg1/cpu.folded" ||
	echo "note: with only --debug-dir $DBG (no /usr/lib/debug) libc frames are named differently:" \
		"$(sort -t' ' -k2 -nr "$TMP/other-dbg1/cpu.folded" | head -1 | cut -c1-120)"

rm -f "$W"
replay gone "$TMP/run.lpcap" --cache "$CACHE"
moved gone "not found"
replay gone-dbg "$TMP/run.lpcap" --cache "$CACHE" "${DEBUG_DIRS[@]}"
found gone-dbg

# ---- 6. capture-info on a hostile file: strings sanitized, privileges or nothing
# (a name from a glob can be hostile too)
H="$TMP/hostile"$'\x1b'"[2J.lpcap"
"$WL/lp-hostile-capture" "$H" || fail "lp-hostile-capture"
"$BIN/lowprof" capture-info "$H" >"$TMP/hostile.out" 2>&1
rc=$?
echo "--- capture-info on the hostile capture (cat -v)"; cat -v "$TMP/hostile.out"
check "capture-info on the hostile capture exits 0 (got $rc)" test "$rc" -eq 0
check "it read every record" grep -Eq '^records +7: meta 1 sample 3 maps 1 exec 1 end 1' "$TMP/hostile.out"
check "no control byte but newline reaches the terminal" \
	bash -c "! LC_ALL=C grep -qP '[\x00-\x09\x0b-\x1f\x7f]' '$TMP/hostile.out'"
check "no 8-bit C1 byte, no UTF-8 C1 character" \
	bash -c "! LC_ALL=C grep -qP '(^|[\x00-\x7f])[\x80-\x9f]|\xc2[\x80-\x9f]' '$TMP/hostile.out'"
check "no bidi override or line separator" \
	bash -c "! LC_ALL=C grep -qP '\xe2\x80[\xa8-\xae]|\xe2\x81[\xa6-\xa9]' '$TMP/hostile.out'"
check "the output is valid UTF-8" iconv -f UTF-8 -t UTF-8 "$TMP/hostile.out" -o /dev/null
check "the strings are there, their escapes replaced" \
	bash -c "grep -qF '?]0;owned?host?[2J' '$TMP/hostile.out' && grep -qF '?[2J?[Hdone' '$TMP/hostile.out' &&
		 grep -qF '?[1;31mEVIL' '$TMP/hostile.out' && grep -qF 'hostile?[2J.lpcap' '$TMP/hostile.out'"
# root that cannot become lowprof does not read the file: in a user namespace
# where only root is mapped (setgroups denied, lowprof's uid unmapped)
out=$(unshare --user --map-root-user "$BIN/lowprof" capture-info "$H" 2>&1)
rc=$?
echo "--- as root that cannot become lowprof"; echo "$out" | cat -v | head -3
check "capture-info that cannot drop privileges exits 1 (got $rc)" test "$rc" -eq 1
check "it says why" grep -q 'could not become lowprof' <<<"$out"
check "and prints nothing of the file" bash -c "! grep -q 'owned' <<<\"\$1\"" _ "$out"
# nor where there is no lowprof to become (users only from files, as
# systemd's NSS module makes some up): said with how to make it
grep -v '^lowprof:' /etc/passwd >"$TMP/passwd"
sed 's/^passwd:.*/passwd: files/' /etc/nsswitch.conf >"$TMP/nsswitch.conf"
out=$(unshare -m bash -c "mount --bind '$TMP/passwd' /etc/passwd &&
	mount --bind '$TMP/nsswitch.conf' /etc/nsswitch.conf && exec '$BIN/lowprof' capture-info '$H'" 2>&1)
rc=$?
check "capture-info with no user lowprof exits 1 (got $rc)" test "$rc" -eq 1
check "it says why, and how to make it" \
	grep -q -- '--user lowprof: no such user; create it with' <<<"$out"
check "and prints nothing of the file" bash -c "! grep -q 'owned' <<<\"\$1\"" _ "$out"

# ---- 7. nothing left behind
left=$(leftovers)
check "nothing left behind: '$left'" test -z "$left"
finish
