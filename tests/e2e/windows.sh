#!/usr/bin/env bash
# lowprof windows and lowprof merge on the spool of a real lowprof run (2 s
# windows of the chain workload, on- and off-CPU, 7 s):
#  - windows lists every window file with its start, duration, samples,
#    seconds, losses and size; its total line sums them; temporary files are
#    skipped; a window removed from the middle shows as a gap; a corrupt
#    file is listed with its error, the others still are, and it exits 1
#  - merge of all cpu windows: go tool pprof reads it; its samples are the
#    windows' sum; the chain main -> chain_one -> ... -> chain_leaf is there,
#    and so are the pid, comm and exe labels; the comments say which windows
#    it holds; the same merge from the directory gives the same bytes
#  - a cpu window merged with an off-CPU one is refused, naming them, and
#    writes nothing; a corrupt input is refused, naming it
#  - both run as an unprivileged user on a copy of the spool
#  - with 1 s windows, every window says its losses, the first one too
source "$(dirname "$0")/lib.sh"
require_root
command -v go >/dev/null || { echo "SKIP: go (for go tool pprof) is not installed"; exit 77; }

start_bg "$WL/chain-fp" "$(scaled 60)"
WPID=$BGPID
sleep 0.3
SP=$TMP/spool
"$BIN/lowprof" run --window 2 --spool "$SP" -p "$WPID" -d 7 --off-cpu >"$TMP/run.out" 2>&1
rc=$?
check "lowprof run -d 7 --window 2 exits 0 (got $rc)" test "$rc" = 0
ls -l "$SP"
ncpu=$(ls "$SP" | grep -c '^cpu-.*\.pb\.gz$')
check "the spool has 4 or 5 cpu windows (got $ncpu)" test "$ncpu" -ge 4 -a "$ncpu" -le 5
# a file being written: skipped
touch "$SP/.tmp-cpu-20261126T000000Z-000099.pb.gz" "$SP/notes.txt"

# --- lowprof windows
"$BIN/lowprof" windows "$SP" >"$TMP/win.out" 2>&1
rc=$?
cat "$TMP/win.out"
check "lowprof windows exits 0 (got $rc)" test "$rc" = 0
check "it starts with a header line" bash -c "head -1 '$TMP/win.out' | grep -q '^kind *seq *start(UTC) *duration *samples *seconds *lost *bytes$'"
rows() { awk -v k="$2" '$1 == k && $2 ~ /^[0-9]+$/' "$1"; } # rows FILE KIND
check "one cpu line per cpu window file" test "$(rows "$TMP/win.out" cpu | wc -l)" = "$ncpu"
check "... in order of their numbers, named as the files" \
	test "$(rows "$TMP/win.out" cpu | awk '{print $2}' | tr '\n' ' ')" = \
	"$(ls "$SP" | sed -n 's/^cpu-.*-\([0-9]*\)\.pb\.gz$/\1/p' | sort -n | tr '\n' ' ')"
check "the temporary file and the other file are not listed" bash -c "! grep -q '000099\|notes' '$TMP/win.out'"
bad=$(rows "$TMP/win.out" cpu | awk '$3 !~ /^20[0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9:]+Z$/ || $4 <= 0 || $4 > 2.5 || $5 < 0 || $7 != 0 || $8 <= 0')
check "every cpu line has a UTC start, a duration of at most 2.5 s, samples, no loss and a size" test -z "$bad"
sum=$(rows "$TMP/win.out" cpu | awk '{s += $5} END {print s}')
tot=$(awk '$1 == "cpu" && $2 == "total" {print $5}' "$TMP/win.out")
check "the cpu total line sums the samples ($sum = $tot)" test "$sum" = "$tot"
check "... and says how many windows" grep -q "^cpu  *total .*($ncpu windows)$" "$TMP/win.out"
check "the workload is in the windows ($sum samples, >= 100)" test "$sum" -ge 100
sizes=$(rows "$TMP/win.out" cpu | awk '{s += $8} END {print s}')
check "... and the sizes are the files' ($sizes)" test "$sizes" = "$(cat "$SP"/cpu-*.pb.gz | wc -c)"
check "the offcpu windows are listed too" test "$(rows "$TMP/win.out" offcpu | wc -l)" -ge 4
check "no gap in a whole spool" bash -c "! grep -q '^gap' '$TMP/win.out'"

# --- lowprof merge of every cpu window
"$BIN/lowprof" merge -o "$TMP/all.pb.gz" --folded "$TMP/all.folded" --html "$TMP/all.html" \
	"$SP"/cpu-*.pb.gz >"$TMP/merge.out" 2>&1
rc=$?
cat "$TMP/merge.out"
check "lowprof merge of the cpu windows exits 0 (got $rc)" test "$rc" = 0
go tool pprof -raw "$TMP/all.pb.gz" >"$TMP/all.raw" 2>"$TMP/raw.err"
check "go tool pprof reads the merged profile" test $? = 0 -a -s "$TMP/all.raw"
msum=$(awk '/^Samples:/ {on = 1; next} /^Locations/ {on = 0} on && /^ +[0-9]+ +[0-9]+:/ {s += $1} END {print s + 0}' "$TMP/all.raw")
check "its samples are the windows' sum ($msum = $sum)" test "$msum" = "$sum"
check "the folded output has them too" test "$(awk '{s += $NF} END {print s}' "$TMP/all.folded")" = "$sum"
check "the chain main;chain_one;chain_two;chain_three;chain_leaf is in it" \
	grep -q 'main;chain_one;chain_two;chain_three;chain_leaf' "$TMP/all.folded"
check "... with the most samples (>= 80%)" test "$(share "$TMP/all.folded" 'chain_three;chain_leaf')" -ge 80
go tool pprof -top "$TMP/all.pb.gz" 2>/dev/null | grep -q ' chain_leaf$'
check "go tool pprof -top shows chain_leaf" test $? = 0
tags=$(go tool pprof -tags "$TMP/all.pb.gz" 2>/dev/null)
check "the pid label is kept" grep -q "): $WPID\$" <<<"$tags"
check "the comm label is kept" grep -q '): chain-fp$' <<<"$tags"
check "the exe label is kept" grep -q "): $WL/chain-fp\$" <<<"$tags"
last=$((ncpu - 1))
check "the comments say which windows it holds" \
	grep -q "^Comment: lowprof merge: $ncpu windows, SEQ 0..$last" "$TMP/all.raw"
check "... and keep the loss counters (summed)" grep -q '^Comment: lost: 0 bpf ring full' "$TMP/all.raw"
check "... and no window's own number" bash -c "! grep -q '^Comment: lowprof window' '$TMP/all.raw'"
check "the HTML flame graph is written" grep -q 'chain_leaf' "$TMP/all.html"
"$BIN/lowprof" merge -o "$TMP/dir.pb.gz" "$SP" >/dev/null 2>&1
check "the same merge from the directory gives the same bytes" cmp -s "$TMP/all.pb.gz" "$TMP/dir.pb.gz"
"$BIN/lowprof" merge --last 2 -o "$TMP/last.pb.gz" "$SP" >"$TMP/last.out" 2>&1
check "--last 2 merges the two newest windows" grep -q "2 windows, SEQ $((last - 1))..$last" "$TMP/last.out"

# --- refused: cpu with off-CPU, and a corrupt input
off=$(ls "$SP"/offcpu-*.pb.gz | head -1)
"$BIN/lowprof" merge -o "$TMP/mixed.pb.gz" "$SP"/cpu-*.pb.gz "$off" >"$TMP/mixed.out" 2>&1
rc=$?
cat "$TMP/mixed.out"
check "merging a cpu window with an off-CPU one is refused (exit $rc)" test "$rc" = 1
check "... saying why, naming the file" grep -q "$(basename "$off"): its sample types .*off_cpu/nanoseconds.* are not those of .*cpu/nanoseconds" "$TMP/mixed.out"
check "... and writes nothing" test ! -e "$TMP/mixed.pb.gz"
"$BIN/lowprof" merge -o "$TMP/all.pb.gz" "$TMP/all.pb.gz" >"$TMP/self.out" 2>&1
check "an output that is an input is refused" grep -q 'is an input too' "$TMP/self.out"

# --- a gap and a corrupt file, in a copy of the spool
CP=$TMP/copy
cp -a "$SP" "$CP"
mid=$(ls "$CP"/cpu-*-000001.pb.gz)
rm "$mid"
two=$(ls "$CP"/cpu-*-000002.pb.gz)
head -c 100 "$two" >"$two.cut" && mv "$two.cut" "$two"
# an empty file with a window's name (a full disk, a copy cut short)
empty=$CP/cpu-20200101T000000Z-999999.pb.gz
: >"$empty"
"$BIN/lowprof" windows "$CP" >"$TMP/win2.out" 2>&1
rc=$?
cat "$TMP/win2.out"
check "... an empty window file is said to be empty" \
	grep -q "^cpu  *999999  error: $(basename "$empty"): an empty file$" "$TMP/win2.out"
rm "$empty"
"$BIN/lowprof" windows "$CP" >"$TMP/win2.out" 2>&1
rc=$?
check "with a corrupt file, lowprof windows exits 1 (got $rc)" test "$rc" = 1
check "... the removed window shows as a gap" grep -q '^gap: cpu window 1 missing (removed for the budget or not written)$' "$TMP/win2.out"
check "... the corrupt one is listed with its error" grep -q "^cpu  *000002  error: $(basename "$two"): " "$TMP/win2.out"
check "... and the others still are" test "$(rows "$TMP/win2.out" cpu | grep -vc error)" = "$((ncpu - 2))"
"$BIN/lowprof" merge -o "$TMP/bad.pb.gz" "$CP"/cpu-*.pb.gz >"$TMP/bad.out" 2>&1
rc=$?
check "merging a corrupt window is refused (exit $rc), naming it" \
	bash -c "test $rc = 1 && grep -q '$(basename "$two"): ' '$TMP/bad.out' && test ! -e '$TMP/bad.pb.gz'"

# a directory with no window: the error names only the options given
mkdir "$TMP/nowin"
"$BIN/lowprof" merge -o "$TMP/none.pb.gz" "$TMP/nowin" >"$TMP/none.out" 2>&1
rc=$?
check "merging an empty directory fails (exit $rc), saying so" \
	bash -c "test $rc = 1 && grep -q 'no window files to merge (of --kind cpu)\$' '$TMP/none.out'"

# --- 1 s windows: every window has its loss figure, the first too (it
# closed before the collector's first loss record, a second in, and showed '-')
SP1=$TMP/spool1
"$BIN/lowprof" run --window 1 --spool "$SP1" -p "$WPID" -d 4 --off-cpu >"$TMP/run1.out" 2>&1
rc=$?
check "lowprof run -d 4 --window 1 exits 0 (got $rc)" test "$rc" = 0
"$BIN/lowprof" windows "$SP1" >"$TMP/win1.out" 2>&1
cat "$TMP/win1.out"
n1=$(rows "$TMP/win1.out" cpu | wc -l)
check "it wrote 1 s windows (got $n1 cpu windows)" test "$n1" -ge 3
bad=$( (rows "$TMP/win1.out" cpu; rows "$TMP/win1.out" offcpu) | awk '$7 !~ /^[0-9]+$/')
check "every window, the first included, says its losses: '$bad'" test -z "$bad"
check "window 0's profile has its 'lost:' comment" \
	bash -c "go tool pprof -comments '$SP1'/cpu-*-000000.pb.gz 2>/dev/null | grep -q '^lost: 0 bpf ring full'"

# --- as an unprivileged user, on a copy of the spool
U=$TMP/user
cp -a "$SP" "$U"
chown -R 65534:65534 "$U"
setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all \
	"$BIN/lowprof" windows "$U" >"$TMP/u.out" 2>&1
check "an unprivileged user lists the windows" bash -c "test $? = 0 && test \"\$(grep -c '^cpu  *[0-9]' '$TMP/u.out')\" = $ncpu"
setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all \
	"$BIN/lowprof" merge -o "$U/merged.pb.gz" "$U"/cpu-*.pb.gz >"$TMP/u2.out" 2>&1
rc=$?
check "... and merges them (exit $rc), into a file of theirs, 0600" \
	test "$rc" = 0 -a "$(stat -c %u:%a "$U/merged.pb.gz" 2>/dev/null)" = 65534:600
check "... the same bytes as root's merge" cmp -s "$U/merged.pb.gz" "$TMP/all.pb.gz"
finish
