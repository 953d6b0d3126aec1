#!/usr/bin/env bash
# Collect here, symbolize elsewhere: capture files rotated per window.
#  - lowprof run --window 2 --capture-dir D -d 7 on the chain workload (no
#    frame pointers): at least 3 complete captures, named
#    capture-TIME-SEQ.lpcap, mode 0600 in a 0700 directory; a watcher that
#    lists D all through the run only ever sees complete *.lpcap files
#    (capture-info says so the moment one appears) and hidden .tmp names
#  - each capture replays alone (lowprof replay FILE -o OUT) to the whole
#    chain, and its loss counters are its window's (not the run's so far); their samples add up to the spool windows' (no window's samples
#    in two files, none lost); lowprof merge of the replays has them all
#  - lowprof-collector --capture-dir alone (no ring, no symbolizer): numbers
#    continue after a file already there, a temporary file of an earlier run
#    is removed, and a small --capture-bytes removes the oldest files first
#    (the old one included), keeping the newest, and says so
#  - a directory others may write is refused
#  - the kernel symbol snapshot: read once and copied (as compressed blocks)
#    into the next windows' files while the kernel's symbols stay as they
#    were; a copied window replays alone with its kernel frames named; a
#    BPF program loaded in between (bpf_prog_hold.py: a ksymbol event) is
#    in the snapshot of a later window's file, read again, and gone from
#    the last one's, after its unload. On a host where other BPF programs
#    come and go every second no window may copy: that check then fails.
source "$(dirname "$0")/lib.sh"
require_root

CHAIN='main;chain_one;chain_two;chain_three;chain_leaf'
total() { awk '{ s += $NF } END { print s + 0 }' "$1"; }
NAME_RE='^capture-[0-9]{8}T[0-9]{6}Z-[0-9]{6}\.lpcap$'
TMP_RE='^\.capture-[0-9]{8}T[0-9]{6}Z-[0-9]{6}\.lpcap\.tmp$'

# watch DIR LOG: until $TMP/stop-watch exists, lists DIR; every name seen goes
# to LOG, and each new *.lpcap gets capture-info at once ("NAME complete|INCOMPLETE")
watch_dir() {
	local dir=$1 log=$2 f seen=" "
	while [[ ! -e $TMP/stop-watch ]]; do
		for f in $(ls -A "$dir" 2>/dev/null); do
			echo "name $f" >>"$log"
			if [[ $f == *.lpcap && $seen != *" $f "* ]]; then
				seen+="$f "
				if "$BIN/lowprof" capture-info "$dir/$f" 2>/dev/null | grep -Eq '^complete +yes'; then
					echo "info $f complete" >>"$log"
				else
					echo "info $f INCOMPLETE" >>"$log"
				fi
			fi
		done
		sleep 0.05
	done
}

# ---- 1. lowprof run --capture-dir
start_bg "$WL/chain-nofp" "$(scaled 60)"
WPID=$BGPID
sleep 0.3
D=$TMP/cap
SP=$TMP/spool
start_bg watch_dir "$D" "$TMP/watch.log"
WATCH=$BGPID
"$BIN/lowprof" run --window 2 --spool "$SP" --capture-dir "$D" -d 7 -p "$WPID" -v \
	>"$TMP/run.out" 2>&1
rc=$?
touch "$TMP/stop-watch"
wait "$WATCH"
check "lowprof run --capture-dir exits 0 (got $rc)" test "$rc" = 0
check "it says where the captures are" grep -q "^Captures in $D/: lowprof replay" "$TMP/run.out"
ls -la "$D"
caps=("$D"/capture-*.lpcap)
n=${#caps[@]}
check "at least 3 captures ($n)" test "$n" -ge 3
bad=$(ls -A "$D" | grep -Ev "$NAME_RE")
check "only capture-TIME-SEQ.lpcap files are left (${bad:-none other})" test -z "$bad"
check "the directory is 0700" test "$(stat -c %a "$D")" = 700
check "the files are 0600" test "$(stat -c %a "${caps[@]}" | sort -u)" = 600
check "they are numbered from 0 ($(ls "$D" | sed -E 's/.*-([0-9]+)\.lpcap/\1/' | tr '\n' ' '))" \
	test "$(ls "$D" | sed -E 's/.*-([0-9]+)\.lpcap/\1/' | tr '\n' ' ')" = \
	"$(seq -f %06g 0 $((n - 1)) | tr '\n' ' ')"
# the spool's windows start with the symbolizer, the captures with the
# collector's meta a few milliseconds later: the same second, or the next
epoch() { sed -E 's/.*-([0-9]{8})T([0-9]{2})([0-9]{2})([0-9]{2})Z-.*/\1 \2:\3:\4/' | while read -r t; do date -u -d "$t" +%s; done; }
paste <(ls "$D" | epoch) <(ls "$SP" | grep '^cpu-' | epoch) >"$TMP/starts"
cat "$TMP/starts"
check "the captures start when the spool's windows do (within a second)" \
	awk 'NF != 2 || $1 - $2 > 1 || $2 - $1 > 1 { bad = 1 } END { exit bad || NR < 3 }' "$TMP/starts"
grep -c '^name' "$TMP/watch.log" | sed 's/^/watcher: listings /'
seen_bad=$(awk '$1 == "name" { print $2 }' "$TMP/watch.log" | sort -u | grep -Ev "$NAME_RE|$TMP_RE")
check "the watcher saw only final and .tmp names (${seen_bad:-no other})" test -z "$seen_bad"
check "the watcher saw a .tmp name (a window being written)" \
	bash -c "awk '\$1 == \"name\" { print \$2 }' '$TMP/watch.log' | grep -Eq '$TMP_RE'"
check "the watcher saw every capture appear complete ($(grep -c ' complete$' "$TMP/watch.log") of $n)" \
	test "$(grep -c '^info .* complete$' "$TMP/watch.log")" -ge "$((n - 1))" -a \
	"$(grep -c INCOMPLETE "$TMP/watch.log")" = 0

# each replays alone
sum=0
for f in "${caps[@]}"; do
	b=$(basename "$f" .lpcap)
	"$BIN/lowprof" capture-info "$f" >"$TMP/$b.info" 2>&1
	check "capture-info $b: complete" grep -Eq '^complete +yes' "$TMP/$b.info"
	check "capture-info $b: no damage" grep -Eq '^damage +none$' "$TMP/$b.info"
	# the loss counters are the window's, not the run's so far
	emitted=$(sed -nE 's/^losses +of ([0-9]+) samples the BPF programs emitted.*/\1/p' "$TMP/$b.info")
	insamp=$(sed -nE 's/^samples +on-CPU ([0-9]+) .*/\1/p' "$TMP/$b.info")
	check "capture-info $b: the BPF programs emitted ${emitted:-?} samples in its window, it holds ${insamp:-?} (within 3)" \
		awk -v a="${emitted:-x}" -v b="${insamp:-y}" 'BEGIN { d = a - b; exit !(a ~ /^[0-9]+$/ && b ~ /^[0-9]+$/ && d <= 3 && d >= -3) }'
	"$BIN/lowprof" replay "$f" -o "$TMP/out/$b" >"$TMP/$b.replay" 2>&1
	rc=$?
	check "replay $b exits 0 (got $rc)" test "$rc" = 0
	s=$(total "$TMP/out/$b/cpu.folded")
	pct=$(share "$TMP/out/$b/cpu.folded" "$CHAIN")
	check "replay $b: $pct% of its $s samples show $CHAIN (>= 80%)" test "$s" -gt 0 -a "$pct" -ge 80
	check "replay $b: within one window at 99 Hz ($s <= 2 s x 99 + 10)" test "$s" -le 208
	sum=$((sum + s))
done
spool=$("$BIN/lowprof" windows "$SP" | awk '$1 == "cpu" && $2 == "total" { print $5 }')
echo "captures' samples $sum, spool windows' $spool"
check "the captures' samples add up to the spool's ($sum vs ${spool:-?}, within 1% + 2)" \
	awk -v a="$sum" -v b="${spool:-0}" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(b > 0 && d <= b / 100 + 2) }'
"$BIN/lowprof" merge -o "$TMP/all.pb.gz" --folded "$TMP/all.folded" "$TMP"/out/*/cpu.pb.gz \
	>"$TMP/merge.out" 2>&1
check "lowprof merge of the replays exits 0" test $? = 0
check "... and holds every replayed sample ($(total "$TMP/all.folded") = $sum)" \
	test "$(total "$TMP/all.folded")" = "$sum"
check "... with the chain" grep -q "$CHAIN" "$TMP/all.folded"

# ---- 2. the collector alone, a small budget
D2=$TMP/cap2
mkdir -m 700 "$D2"
OLD=capture-20200101T000000Z-000041.lpcap
cp "${caps[0]}" "$D2/$OLD"
touch "$D2/.capture-20200101T000000Z-000042.lpcap.tmp" "$D2/notes.txt"
# each capture here is ~0.9 MiB (the kernel symbols): 2M keeps two
"$BIN/lowprof-collector" --capture-dir "$D2" --capture-rotate 1 --capture-bytes 2M -d 6 \
	-p "$WPID" -v >"$TMP/coll.out" 2>&1
rc=$?
check "lowprof-collector --capture-dir alone exits 0 (got $rc)" test "$rc" = 0
ls -la "$D2"
grep 'window files made' "$TMP/coll.out"
made=$(sed -nE 's/.*capture: ([0-9]+) window files made.*/\1/p' "$TMP/coll.out")
removed=$(sed -nE 's/.* ([0-9]+) oldest removed by the budget.*/\1/p' "$TMP/coll.out")
check "it made 5 or more window files (${made:-?})" test "${made:-0}" -ge 5
check "the budget removed the oldest, and said how many (${removed:-?})" \
	test "${removed:-0}" -ge "$((made - 1))"
check "the old file went first" test ! -e "$D2/$OLD"
check "the unfinished file of an earlier run is gone" test ! -e "$D2/.capture-20200101T000000Z-000042.lpcap.tmp"
check "another file is left alone" test -e "$D2/notes.txt"
left=$(ls "$D2" | grep -E "$NAME_RE" | sed -E 's/.*-([0-9]+)\.lpcap/\1/' | tr '\n' ' ')
last=$(printf '%06d' $((42 + made - 1)))
check "at most two are left, the newest among them ($left; newest $last)" \
	test "$(wc -w <<<"$left")" -le 2 -a "${left% }" != "" -a "$(awk '{print $NF}' <<<"$left")" = "$last"
check "numbers went on after the highest there (42..$last)" grep -q "capture-.*-000042.lpcap" "$TMP/coll.out"
for f in "$D2"/capture-*.lpcap; do
	b=$(basename "$f" .lpcap)
	"$BIN/lowprof" replay "$f" -o "$TMP/out2/$b" >"$TMP/$b.replay2" 2>&1
	check "replay of the collector's $b exits 0 with the chain" \
		grep -q "$CHAIN" "$TMP/out2/$b/cpu.folded"
done

# ---- 3. a directory others may write
mkdir -m 777 "$TMP/open"
"$BIN/lowprof-collector" --capture-dir "$TMP/open" -d 1 -p "$WPID" >"$TMP/open.out" 2>&1
rc=$?
cat "$TMP/open.out"
check "a directory others may write is refused (exit $rc)" test "$rc" = 1
check "... saying why" grep -q "writable by others" "$TMP/open.out"
check "... and nothing is written there" test -z "$(ls -A "$TMP/open")"

# ---- 4. the kernel symbols: read once, copied while they do not change
# (uncompressed, so that a symbol's name can be looked for in the bytes)
start_bg dd if=/dev/zero of=/dev/null bs=64 count=2000000000
DD=$BGPID
D4=$TMP/cap4
PROG=lpks_$$
(sleep 3.5; python3 "$(dirname "$0")/bpf_prog_hold.py" "$PROG" 2.5 >"$TMP/prog.out" 2>&1) &
HOLD=$!
"$BIN/lowprof-collector" --capture-dir "$D4" --capture-rotate 1 --capture-compress none -d 9 \
	-p "$DD" -v >"$TMP/coll4.out" 2>&1
rc=$?
wait "$HOLD"
kill "$DD" 2>/dev/null
check "lowprof-collector --capture-dir (the snapshot's run) exits 0 (got $rc)" test "$rc" = 0
check "the BPF program was loaded ($(cat "$TMP/prog.out"))" grep -q '^loaded$' "$TMP/prog.out"
ls -la "$D4"
grep -E 'kernel symbols (read|copied)|kallsyms: changed' "$TMP/coll4.out"
copied=$(sed -nE 's/.*capture: (capture-[^ ]+\.lpcap) started in .*kernel symbols copied.*/\1/p' "$TMP/coll4.out")
check "windows' files got the snapshot copied: $(wc -w <<<"$copied") of them" test -n "$copied"
check "a ksymbol event made a window read kallsyms again" grep -q 'kallsyms: changed ([1-9]' "$TMP/coll4.out"
c4=("$D4"/capture-*.lpcap)
text=$(awk '$3 == "_text" && NF == 3 { print $1; exit }' /proc/kallsyms)
first=$(stat -c %s "${c4[0]}")
for b in $copied; do
	f=$D4/$b
	[[ -e $f ]] || continue
	"$BIN/lowprof" replay "$f" -o "$TMP/out4/$b" >"$TMP/$b.replay4" 2>&1
	named=$(grep -o '[^;]*_\[k\]' "$TMP/out4/$b/cpu.folded" | grep -vc '^\[unknown\]_\[k\]$')
	unnamed=$(grep -o '\[unknown\]_\[k\]' "$TMP/out4/$b/cpu.folded" | wc -l)
	check "$b (snapshot copied) replays alone: $named kernel frames named, $unnamed not" \
		test "$named" -gt 0 -a "$unnamed" = 0
	check "... among them the system call entry" \
		grep -Eq '(do_syscall_64|entry_SYSCALL_64[a-z_]*)_\[k\]' "$TMP/out4/$b/cpu.folded"
	size=$(stat -c %s "$f")
	check "... and it is as large as the first window's, within 20% ($size, $first)" \
		test "$size" -le $((first * 6 / 5)) -a "$size" -ge $((first * 4 / 5))
	# as kaslr.sh looks for them: _text's address as a ksyms record would carry it
	if [[ -n $text && $text != 0000000000000000 ]]; then
		check "... and holds no absolute kernel address (_text, $text)" absent "$f" "$(be "$text")"
	fi
done
with=$(grep -la "_$PROG" "${c4[@]}" | xargs -rn1 basename | tr '\n' ' ')
echo "files whose snapshot has bpf_prog_..._$PROG: ${with:-none}"
check "a later window's snapshot has the program's symbol" test -n "$with"
check "... the first window's has not" test -z "$(grep -la "_$PROG" "${c4[0]}")"
check "... nor the last one's, after its unload" test -z "$(grep -la "_$PROG" "${c4[-1]}")"

finish
