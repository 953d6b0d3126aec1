#!/usr/bin/env bash
# A shortened soak of lowprof run: for ~30 s of 1 s windows, the whole host
# at 999 Hz while short processes start and end one after another, each a
# binary of its own (copies of one program: distinct files, distinct
# objects). The symbolizer's tables follow what is alive (processes and
# objects of the dead are dropped at each window), and neither process's
# private memory (RssAnon) grows by more than a leak bound after warm-up.
# Prints both over the run (the host's own activity moves them).
source "$(dirname "$0")/lib.sh"
require_root

N=150
mkdir -p "$TMP/bins"
for i in $(seq 1 $N); do cp "$WL/chain-fp" "$TMP/bins/short-$i"; done
chmod 755 "$TMP/bins" "$TMP/bins"/*

DUR=$(scaled 36)
start_bg "$BIN/lowprof" run -v --window 1 --spool "$TMP/spool" -F 999 -d "$DUR" \
	>"$TMP/run.out" 2>&1
RUN=$BGPID
sleep 2
SYM=$(desc_named "$RUN" lowprof-symboli)
COL=$(desc_named "$RUN" lowprof-collect)
[[ -n "$SYM" && -n "$COL" ]] || { fail "lowprof run did not start ($SYM, $COL)"; cat "$TMP/run.out"; finish; }

# private memory (RssAnon): the tables; not the ring's shared pages (RssShmem),
# which both map and whose resident part follows the host's activity
rss() { awk '/^RssAnon:/ {print $2}' "/proc/$1/status" 2>/dev/null || echo 0; }
# the short processes, one after another, each ~0.15 s, each a new binary
(
	i=0
	end=$((SECONDS + DUR - 4))
	while ((SECONDS < end)); do
		i=$((i % N + 1))
		"$TMP/bins/short-$i" 0.15 >/dev/null 2>&1
	done
) &
KIDS+=($!)
LOAD=$!
declare -a srss crss
for t in $(seq 0 $((DUR - 5))); do
	srss[t]=$(rss "$SYM")
	crss[t]=$(rss "$COL")
	sleep 1
done
wait "$LOAD" 2>/dev/null
wait "$RUN"
rc=$?
echo "--- RssAnon (KiB) every second: symbolizer / collector"
for t in "${!srss[@]}"; do printf '%3ds %8s %8s\n' "$t" "${srss[t]}" "${crss[t]}"; done
check "lowprof run ends cleanly (got $rc)" test "$rc" = 0

windows=$(grep -c 'window [0-9]* written; now' "$TMP/run.out")
maxobj=$(sed -n 's/.*written; now [0-9]* processes, \([0-9]*\) objects.*/\1/p' "$TMP/run.out" | sort -n | tail -1)
dropped=$(sed -n 's/.*objects (\([0-9]*\) dropped so far).*/\1/p' "$TMP/run.out" | tail -1)
started=$(ls "$TMP/spool" | grep -c '^cpu-')
echo "windows $windows, most objects at a window's start $maxobj, dropped $dropped"
check "a window a second ($windows windows, $started files)" test "$windows" -ge $((DUR - 6))
# the short binaries the profiles name (how many the collector caught
# depends on the machine: a process must live until its maps are read)
seen=$(for f in "$TMP/spool"/cpu-*.pb.gz; do
	go tool pprof -raw "$f" 2>/dev/null | sed -n '/^Mappings/,$p' | grep -o 'short-[0-9]*'
done | sort -u | wc -l)
echo "short binaries in the profiles: $seen"
check "the profiles name at least 10 of the short binaries (got $seen)" test "$seen" -ge 10
# each one's object is dropped once its process has exited (a few may still run at the end)
check "objects of exited processes are dropped ($dropped dropped, $seen short binaries seen)" \
	test "${dropped:-0}" -ge $((seen - 5))
# the host's own binaries and a handful of the short ones, never all of them
check "the object table follows what is alive (at most $maxobj, of $N+ binaries run)" \
	test "${maxobj:-999999}" -le $((N / 2 + 100))
# flat after warm-up: the last third against the end of the first third
third=$((${#srss[@]} / 3))
s0=${srss[third]} s1=${srss[${#srss[@]} - 1]} c0=${crss[third]} c1=${crss[${#crss[@]} - 1]}
if grep -q AddressSanitizer "$BIN/lowprof-symbolizer"; then
	# ASan keeps freed memory in quarantine (256 MiB): the memory is its, not ours
	echo "note: sanitizer build: RssAnon ${s0} -> ${s1} KiB (symbolizer), ${c0} -> ${c1} KiB" \
		"(collector), not checked"
else
	# a gross-leak guard: the exact rule is the object table's, above. The
	# whole host is profiled, and a host process sampled for the first
	# time can bring a large binary's tables (+17 MiB in one step, seen
	# here): growth, not a leak. The figures over time are the benchmark's.
	check "symbolizer RssAnon flat after warm-up (${s0} -> ${s1} KiB, at most +48 MiB)" \
		test "$s1" -le $((s0 + 49152))
	check "collector RssAnon flat after warm-up (${c0} -> ${c1} KiB, at most +8 MiB)" \
		test "$c1" -le $((c0 + 8192))
fi
finish
