#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# A long fuzzing campaign over every fuzz target (or the ones named):
#
#   tests/fuzz/campaign.sh [-n RUNS | -t SECONDS] [-j JOBS] [--build DIR] [TARGET...]
#
# Each target (built with ASan and UBSan by the normal build: build/tests/
# fuzz/NAME/fuzz_NAME*) runs from a copy of its checked-in seed corpus, for
# RUNS executions (default 1000000) or SECONDS, in JOBS parallel processes
# (default 1). Prints a table of targets, executions, time, executions per
# second, corpus growth and crashes, and keeps every crash, leak or timeout
# input under OUT/NAME/ (OUT: build/fuzz-campaign). Exit status: 0 when no
# target crashed, 1 otherwise, 2 on usage errors. The short bounded runs in
# ctest (-L fuzz) are the same targets; this is the long one.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
build="$root/build"
runs=1000000
secs=0
jobs=1
targets=()

usage() { sed -n '3,17p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; }

while [[ $# -gt 0 ]]; do
	case "$1" in
	-n) runs=${2:?}; secs=0; shift 2 ;;
	-t) secs=${2:?}; shift 2 ;;
	-j) jobs=${2:?}; shift 2 ;;
	--build) build=$(cd "${2:?}" && pwd); shift 2 ;;
	-h | --help) usage; exit 0 ;;
	-*) usage >&2; exit 2 ;;
	*) targets+=("$1"); shift ;;
	esac
done
if [[ ! "$runs$secs$jobs" =~ ^[0-9]+$ ]] || [[ "$jobs" -lt 1 ]]; then
	usage >&2
	exit 2
fi
if [[ ${#targets[@]} -eq 0 ]]; then
	for d in "$here"/*/; do
		n=$(basename "$d")
		[[ -d "$d/corpus" ]] && targets+=("$n")
	done
fi
out="$build/fuzz-campaign"
mkdir -p "$out"

printf '%-10s %12s %8s %10s %16s %8s\n' target executions seconds execs/s corpus crashes
status=0
for t in "${targets[@]}"; do
	bin="$build/tests/fuzz/$t/fuzz_$t"
	# a directory's target may be named after what it reads (fuzz_symb_stream)
	[[ -x "$bin" ]] || bin=$(find "$build/tests/fuzz/$t" -maxdepth 1 -type f -name 'fuzz_*' \
		-perm -u+x 2>/dev/null | sort | head -1)
	seeds="$here/$t/corpus"
	if [[ ! -x "$bin" || ! -d "$seeds" ]]; then
		printf '%-10s %s\n' "$t" "not built (cmake --build $build) or no corpus"
		status=1
		continue
	fi
	work="$out/$t"
	rm -rf "$work"
	mkdir -p "$work/corpus" "$work/artifacts"
	cp -r "$seeds/." "$work/corpus/"
	before=$(find "$work/corpus" -type f | wc -l)
	limit=(-runs="$runs")
	[[ "$secs" -gt 0 ]] && limit=(-max_total_time="$secs")
	start=$(date +%s.%N)
	par=()
	# each job runs the whole budget (-runs is per process); their logs go to $work
	[[ "$jobs" -gt 1 ]] && par=(-jobs="$jobs" -workers="$jobs")
	(cd "$work" && exec "$bin" "${limit[@]}" "${par[@]}" -timeout=10 -rss_limit_mb=2048 \
		-print_final_stats=1 -artifact_prefix="$work/artifacts/" "$work/corpus") \
		>"$work/log" 2>&1
	rc=$?
	end=$(date +%s.%N)
	logs=("$work/log")
	[[ "$jobs" -gt 1 ]] && logs=("$work"/fuzz-*.log)
	execs=$(grep -h '^stat::number_of_executed_units' "${logs[@]}" | awk '{s += $2} END {print s + 0}')
	after=$(find "$work/corpus" -type f | wc -l)
	crashes=$(find "$work/artifacts" -type f | wc -l)
	dt=$(awk -v a="$start" -v b="$end" 'BEGIN {printf "%.1f", b - a}')
	rate=$(awk -v e="$execs" -v d="$dt" 'BEGIN {printf "%.0f", (d > 0 ? e / d : 0)}')
	printf '%-10s %12s %8s %10s %16s %8s\n' "$t" "$execs" "$dt" "$rate" "$before -> $after" "$crashes"
	if [[ "$rc" -ne 0 || "$crashes" -gt 0 ]]; then
		status=1
		echo "  $t: exit $rc; inputs in $work/artifacts/, log $work/log" >&2
		cat "${logs[@]}" | grep -m3 -E 'ERROR: |runtime error|Assertion|fuzz_.*: ' | sed 's/^/  /' >&2
	fi
done
exit $status
