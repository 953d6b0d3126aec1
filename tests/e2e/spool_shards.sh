#!/usr/bin/env bash
# A spool written by a run split over symbolizers (--symbolizers 2): each
# shard's windows as KIND-TIME-SEQ.sKofN.pb.gz and metrics-sKofN.prom. The
# window files are real ones (lowprof run of the chain workload, 2 s
# windows), copied under shard names with their "lowprof window N" comment
# set to the name's number (renumber.py); window 101 lacks shard 2's file.
#  - lowprof windows: a line per file with its shard, totals over every
#    shard ("3 windows in 5 files"), the missing shard file as a gap and no
#    gap in the numbers
#  - lowprof merge of a number's two shard files: one profile (go tool
#    pprof), the files' samples summed, "1 window in 2 shard files"; of the
#    directory: "3 windows in 5 shard files", the missing file said once;
#    --last 1 takes both files of the newest number
#  - lowprof-exporter --oneshot to a local Pyroscope receiver: every shard's
#    window pushed once, in order (number, then shard), decoded with go tool
#    pprof; the spool empty after
#  - a shard's window that lands after its sibling's later ones were sent is
#    still delivered; /metrics passes both shards' metrics files on with a
#    shard label, each family declared once
source "$(dirname "$0")/lib.sh"
require_root
HERE=$(cd "$(dirname "$0")" && pwd)
EXP=$BIN/lowprof-exporter
for t in go python3 curl; do
	command -v "$t" >/dev/null || { echo "SKIP: $t is not installed"; exit 77; }
done

source "$HERE/receivers.sh"
bodies() { ls "$TMP/$1" 2>/dev/null | grep -c '^[0-9]*\.body$'; }
wait_bodies() { # wait_bodies NAME N: until the receiver kept N requests (at most 30 s)
	for _ in $(seq 300); do [[ $(bodies "$1") -ge $2 ]] && return 0; sleep 0.1; done
	return 1
}
raw_samples() { # raw_samples FILE: the samples of a pprof, as go tool pprof -raw lists them
	go tool pprof -raw "$1" 2>/dev/null |
		awk '/^Samples:/ {on = 1; next} /^Locations/ {on = 0} on && /^ +[0-9]+ +[0-9]+:/ {s += $1} END {print s + 0}'
}

# --- real windows
start_bg "$WL/chain-fp" "$(scaled 60)"
WPID=$BGPID
sleep 0.3
SRC=$TMP/src
"$BIN/lowprof" run --window 2 --spool "$SRC" -p "$WPID" -d 5 >"$TMP/run.out" 2>&1
rc=$?
check "lowprof run -d 5 --window 2 exits 0 (got $rc)" test "$rc" = 0
mapfile -t WIN < <(ls "$SRC"/cpu-*.pb.gz | head -2)
check "it wrote two cpu windows at least (${#WIN[@]})" test "${#WIN[@]}" = 2
A=${WIN[0]}
B=${WIN[1]}
sa=$(raw_samples "$A")
sb=$(raw_samples "$B")
echo "window A: $sa samples, B: $sb samples"
check "both have samples of the workload ($sa, $sb)" test "$sa" -gt 0 -a "$sb" -gt 0

# --- the shards' spool: 100 {A, B}, 101 {A, -}, 102 {B, A}
SP=$TMP/spool
mkdir -m 700 "$SP"
chown lowprof "$SP" # the exporter runs as the spool's user
shard() { # shard SRC SEQ K: SRC as shard K of 2's window SEQ
	python3 "$HERE/renumber.py" "$1" "$SP/cpu-20261126T0000$((($2 - 100) * 2 + 10))Z-000$2.s${3}of2.pb.gz" "$2"
}
shard "$A" 100 1 && shard "$B" 100 2 && shard "$A" 101 1 && shard "$B" 102 1 && shard "$A" 102 2
check "renumbered copies of the windows made" test "$(ls "$SP" | wc -l)" = 5
ls -l "$SP"
check "go tool pprof reads a renumbered copy, with its new number" \
	bash -c "go tool pprof -comments '$SP/cpu-20261126T000012Z-000101.s1of2.pb.gz' 2>/dev/null | grep -qx 'lowprof window 101'"

# --- lowprof windows
"$BIN/lowprof" windows "$SP" >"$TMP/win.out" 2>&1
rc=$?
cat "$TMP/win.out"
check "lowprof windows exits 0 (got $rc)" test "$rc" = 0
check "a line per file, with its shard, in order" \
	test "$(awk '$1 == "cpu" && $2 != "total" {print $2}' "$TMP/win.out" | tr '\n' ' ')" = \
	"000100.s1of2 000100.s2of2 000101.s1of2 000102.s1of2 000102.s2of2 "
tot=$(awk '$1 == "cpu" && $2 == "total" {print $5}' "$TMP/win.out")
want=$((3 * sa + 2 * sb))
check "the total sums every shard's samples ($tot = $want)" test "$tot" = "$want"
check "... and counts numbers as windows" grep -q '^cpu  *total .*(3 windows in 5 files)$' "$TMP/win.out"
check "the missing shard file is a gap of that shard" \
	grep -qx "gap: cpu window 101 missing shard 2of2's file (others have it)" "$TMP/win.out"
check "... and the only gap" test "$(grep -c '^gap' "$TMP/win.out")" = 1

# --- lowprof merge
"$BIN/lowprof" merge -o "$TMP/m100.pb.gz" "$SP"/cpu-*-000100.s*.pb.gz >"$TMP/m100.out" 2>&1
rc=$?
cat "$TMP/m100.out"
check "lowprof merge of window 100's two shard files exits 0 (got $rc)" test "$rc" = 0
ms=$(raw_samples "$TMP/m100.pb.gz")
check "one profile (go tool pprof) with both files' samples ($ms = $sa + $sb)" test "$ms" = $((sa + sb))
go tool pprof -raw "$TMP/m100.pb.gz" >"$TMP/m100.raw" 2>/dev/null
check "its comment: one window in two shard files, nothing repeated or missing" \
	grep -q '^Comment: lowprof merge: 1 window in 2 shard files, SEQ 100..100;' "$TMP/m100.raw"
go tool pprof -traces "$TMP/m100.pb.gz" 2>/dev/null | grep -A4 -w chain_leaf | grep -qw chain_one
check "the chain (chain_leaf under chain_one) is in it" test $? = 0
"$BIN/lowprof" merge -o "$TMP/all.pb.gz" "$SP" >"$TMP/all.out" 2>&1
cat "$TMP/all.out"
check "merge of the directory: 3 windows in 5 shard files, one lacking a shard's file" \
	grep -q '^lowprof merge: 3 windows in 5 shard files, SEQ 100..102 (1 number lacks a shard.s file);' \
	"$TMP/all.out"
check "... with every file's samples ($(raw_samples "$TMP/all.pb.gz") = $want)" \
	test "$(raw_samples "$TMP/all.pb.gz")" = "$want"
"$BIN/lowprof" merge --last 1 -o "$TMP/last.pb.gz" "$SP" >"$TMP/last.out" 2>&1
check "--last 1 takes both files of the newest number" \
	grep -q '^lowprof merge: 1 window in 2 shard files, SEQ 102..102;' "$TMP/last.out"

# --- the exporter: every shard's window, in order, once
receiver pyro
cp -a "$SP" "$TMP/spool-copy"
timeout 60 "$EXP" --spool "$SP" --pyroscope "http://127.0.0.1:$PORT" --oneshot 2>"$TMP/ex1.err"
rc=$?
cat "$TMP/ex1.err"
check "lowprof-exporter --oneshot exits 0 (got $rc)" test "$rc" = 0
got=$(push_windows pyro | tr '\n' ' ')
check "one push per shard file, by number then shard ($got)" test "$got" = "100 100 101 102 102 "
n1=$(python3 "$HERE/pushsplit.py" "$TMP/pyro/0001.body" "$TMP/p1")
n2=$(python3 "$HERE/pushsplit.py" "$TMP/pyro/0002.body" "$TMP/p2")
check "the two pushes of window 100 carry each shard's samples ($(raw_samples "$TMP/p1-0.pb.gz"), $(raw_samples "$TMP/p2-0.pb.gz"))" \
	test "$(raw_samples "$TMP/p1-0.pb.gz") $(raw_samples "$TMP/p2-0.pb.gz")" = "$sa $sb"
check "... under the same series labels (Pyroscope sums them): $n1" test -n "$n1" -a "${n1% *}" = "${n2% *}"
check "every window left the spool" test -z "$(ls "$SP" | grep '\.pb\.gz$')"

# --- a shard's window landing late, and the shards' metrics
SP2=$TMP/spool2
mkdir -m 700 "$SP2"
chown lowprof "$SP2"
cp "$TMP/spool-copy"/cpu-*-000100.s1of2.pb.gz "$TMP/spool-copy"/cpu-*-000101.s1of2.pb.gz "$SP2"/
metrics() { # metrics K SAMPLES: shard K of 2's metrics file
	printf '# HELP lowprof_symbolizer_samples_total On-CPU samples aggregated.\n# TYPE lowprof_symbolizer_samples_total counter\nlowprof_symbolizer_samples_total %s\n# HELP lowprof_lost_total Samples and records lost, by cause.\n# TYPE lowprof_lost_total counter\nlowprof_lost_total{cause="bpf_ring_full"} 0\nlowprof_process_resident_bytes{process="symbolizer"} 1000\n' "$2" >"$SP2/metrics-s${1}of2.prom"
}
metrics 1 "$sa"
metrics 2 "$sb"
receiver late
MPORT=$(free_port)
start_bg "$EXP" --spool "$SP2" --pyroscope "http://127.0.0.1:$PORT" --metrics "127.0.0.1:$MPORT"
EPID=$BGPID
wait_bodies late 2
check "shard 1's windows 100 and 101 delivered" test "$(bodies late)" = 2
cp "$TMP/spool-copy"/cpu-*-000100.s2of2.pb.gz "$SP2"/
wait_bodies late 3
got=$(push_windows late | tr '\n' ' ')
check "shard 2's window 100, come after 101 was sent, is delivered too ($got)" test "$got" = "100 101 100 "
curl -s "http://127.0.0.1:$MPORT/metrics" >"$TMP/metrics"
grep -E 'shard=' "$TMP/metrics"
check "/metrics has each shard's samples, labelled" \
	bash -c "grep -qx 'lowprof_symbolizer_samples_total{shard=\"1of2\"} $sa' '$TMP/metrics' &&
		grep -qx 'lowprof_symbolizer_samples_total{shard=\"2of2\"} $sb' '$TMP/metrics'"
check "... labels put before the file's own" \
	grep -qx 'lowprof_lost_total{shard="2of2",cause="bpf_ring_full"} 0' "$TMP/metrics"
check "... each shard's resident memory" \
	grep -qx 'lowprof_process_resident_bytes{shard="1of2",process="symbolizer"} 1000' "$TMP/metrics"
check "... and each metrics file's age" grep -q '^lowprof_symbolizer_metrics_age_seconds{shard="2of2"} ' "$TMP/metrics"
check "each metric family declared once" \
	bash -c "test -z \"\$(grep '^# TYPE' '$TMP/metrics' | sort | uniq -d)\""
kill -TERM "$EPID"
wait "$EPID"
check "the exporter stops on SIGTERM and leaves no window ($(ls "$SP2" | grep -c 'pb.gz$'))" \
	test -z "$(ls "$SP2" | grep '\.pb\.gz$')"
finish
