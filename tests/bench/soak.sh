#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# lowprof's soak: memory of a long service run under process churn.
#
#   sudo tests/bench/soak.sh [-d SECONDS] [-n BINARIES] [-o DIR] [--build DIR]
#
# Not part of the test run (tests/e2e/soak.sh is its 30-second version,
# with a bound it asserts). lowprof run, whole host at 99 Hz with 10 s
# windows into a spool of its own, for SECONDS (default 3600), while
# short processes start and end one after another: each runs a binary of
# its own (BINARIES copies of the chain workload, default 2000, so every
# one is a new object to the symbolizer), busy for 50 ms, then exits, with
# 0.2 s between them (about 14,000 processes an hour). Every minute it
# records the collector's and the symbolizer's resident memory (VmRSS,
# and RssAnon: private memory, without the shared ring's pages) and, from
# the symbolizer's -v lines, the processes and objects its tables hold.
#
# Prints a table over time and a summary: memory at warm-up (after 5
# minutes) and at the end, the growth between them and the growth per
# hour, the processes started, the windows written; writes DIR/soak.md
# (DIR defaults to build/bench/). A flat run grows by less than the
# noise of the host's own activity (a few MiB). Figures, not assertions:
# the exit status is 0 whenever the soak itself ran.
set -uo pipefail

SRC=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=$SRC/build
DUR=3600
NBIN=2000
OUT=""
while (($#)); do
	case $1 in
	-d) DUR=$2; shift 2 ;;
	-n) NBIN=$2; shift 2 ;;
	-o) OUT=$2; shift 2 ;;
	--build) BUILD=$2; shift 2 ;;
	-h | --help) sed -n '4,25p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "soak.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
	esac
done
[[ $(id -u) = 0 ]] || { echo "soak.sh: run as root (lowprof run loads BPF)" >&2; exit 2; }
OUT=${OUT:-$BUILD/bench}
mkdir -p "$OUT"
WL=$BUILD/tests/workloads
[[ -x $BUILD/lowprof && -x $WL/chain-fp ]] || { echo "soak.sh: build first ($BUILD)" >&2; exit 2; }

TMP=$(mktemp -d /tmp/lowprof-soak.XXXXXX)
chmod 755 "$TMP"
RUN=""
LOAD=""
cleanup() {
	[[ -n "$LOAD" ]] && kill "$LOAD" 2>/dev/null
	[[ -n "$RUN" ]] && kill -TERM "$RUN" 2>/dev/null && wait "$RUN" 2>/dev/null
	rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

echo "soak: $NBIN binaries, $DUR s; lowprof run -F 99 --window 10 (whole host)"
mkdir "$TMP/bins"
for i in $(seq 1 "$NBIN"); do cp "$WL/chain-fp" "$TMP/bins/short-$i"; done
chmod 755 "$TMP/bins" "$TMP/bins"/*

"$BUILD/lowprof" run -v --window 10 --spool "$TMP/spool" -F 99 -d "$DUR" >"$TMP/run.out" 2>&1 &
RUN=$!
sleep 3
kids() { pgrep -P "$1"; }
SYM=""
COL=""
for p in $(kids "$RUN"); do
	case $(cat /proc/$p/comm 2>/dev/null) in
	lowprof-symboli) SYM=$p ;;
	lowprof-collect) COL=$p ;;
	esac
done
[[ -n "$SYM" && -n "$COL" ]] || { echo "soak: lowprof run did not start"; cat "$TMP/run.out"; exit 1; }

# the churn: one short process after another, each a new binary
(
	i=0
	n=0
	while :; do
		i=$((i % NBIN + 1))
		"$TMP/bins/short-$i" 0.05 >/dev/null 2>&1
		n=$((n + 1))
		echo "$n" >"$TMP/started"
		sleep 0.2
	done
) &
LOAD=$!

kib() { awk -v k="$2:" '$1 == k {print $2}' "/proc/$1/status" 2>/dev/null; }
tables() { # the last "now P processes, O objects" of the symbolizer's -v lines
	sed -n 's/.*written; now \([0-9]*\) processes, \([0-9]*\) objects.*/\1 \2/p' "$TMP/run.out" | tail -1
}
T0=$SECONDS
printf '%6s %12s %12s %12s %12s %8s %8s %9s\n' min sym_rss sym_anon col_rss col_anon procs objects started |
	tee "$TMP/table"
m=0
while :; do
	now=$((SECONDS - T0))
	read -r procs objs < <(tables)
	printf '%6d %12s %12s %12s %12s %8s %8s %9s\n' "$m" "$(kib "$SYM" VmRSS)" "$(kib "$SYM" RssAnon)" \
		"$(kib "$COL" VmRSS)" "$(kib "$COL" RssAnon)" "${procs:--}" "${objs:--}" \
		"$(cat "$TMP/started" 2>/dev/null || echo 0)" | tee -a "$TMP/table"
	((now + 60 > DUR - 5)) && break
	sleep $((60 - (SECONDS - T0) % 60))
	m=$((m + 1))
done
kill "$LOAD" 2>/dev/null
wait "$LOAD" 2>/dev/null
LOAD=""
wait "$RUN"
rc=$?
RUN=""
started=$(cat "$TMP/started" 2>/dev/null || echo 0)
windows=$(ls "$TMP/spool" | grep -c '^cpu-')
names=$(for f in "$TMP"/spool/cpu-*.pb.gz; do go tool pprof -raw "$f" 2>/dev/null; done |
	grep -o 'short-[0-9]*' | sort -u | wc -l)

# warm-up: the row at 5 minutes (or the first, for a short soak)
summary=$(awk -v dur="$DUR" 'NR == 1 {next}
	{m = $1; if (!w || m <= 5) {ws = $2; wa = $3; wc = $4; wca = $5; wm = m; w = 1}
	 es = $2; ea = $3; ec = $4; eca = $5; em = m}
	END {h = (em - wm) / 60; if (h <= 0) h = 1
	     printf "warm-up (min %d) -> end (min %d): symbolizer VmRSS %.1f -> %.1f MiB (%+.1f, %+.1f MiB/h), RssAnon %.1f -> %.1f MiB (%+.1f MiB/h); collector VmRSS %.1f -> %.1f MiB (%+.1f MiB/h), RssAnon %.1f -> %.1f MiB (%+.1f MiB/h)\n",
		wm, em, ws / 1024, es / 1024, (es - ws) / 1024, (es - ws) / 1024 / h, wa / 1024, ea / 1024, (ea - wa) / 1024 / h,
		wc / 1024, ec / 1024, (ec - wc) / 1024 / h, wca / 1024, eca / 1024, (eca - wca) / 1024 / h}' "$TMP/table")
{
	echo "# lowprof soak, $(date -u +%Y-%m-%dT%H:%MZ), $(git -C "$SRC" rev-parse --short HEAD 2>/dev/null)"
	echo
	echo "lowprof run -F 99 --window 10, whole host, $DUR s; $started short processes of $NBIN distinct binaries (50 ms busy, 0.2 s apart)."
	echo "lowprof run exit status $rc; $windows windows written; $names of the short binaries named in the profiles."
	echo
	echo '```'
	cat "$TMP/table"
	echo '```'
	echo
	echo "$summary"
	echo
	grep -E 'memory:|spool:' "$TMP/run.out" | sed 's/^/    /'
} >"$OUT/soak.md"
echo
echo "$summary"
echo "processes started $started; windows $windows; short binaries named $names; exit status $rc"
grep -E 'memory:|spool:' "$TMP/run.out"
echo "written: $OUT/soak.md"
