#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Off-CPU cost of several builds on the pipe ping-pong, interleaved:
#
#   sudo tests/bench/pipe_ab.sh ROUNDS BUILD_DIR...
#
# Each round runs `taskset -c 0 perf bench sched pipe -l 300000` alone, then
# under `lowprof record --off-cpu` (time mode, whole host, --no-cache) of
# each build in turn, and prints the ops/s of each. bench.sh's section 2b
# runs each configuration once per round; on a loaded machine the
# throughput varies by tens of percent between minutes, so comparing builds
# needs them side by side, each against the alone run of its own round.
# Prints one line per round and the median ratio to alone of each build.
set -uo pipefail

rounds=${1:?rounds}
shift
(($# > 0)) || { echo "usage: $0 ROUNDS BUILD_DIR..." >&2; exit 2; }
tmp=$(mktemp -d /tmp/lowprof-pipe-ab.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

# run BUILD_DIR|alone: the pipe benchmark's ops/s
run() {
	local b=$1 lp="" ops
	if [[ $b != alone ]]; then
		"$b/lowprof" record -d 120 --off-cpu --no-cache -v -o "$tmp/out" >"$tmp/lp.log" 2>&1 &
		lp=$!
		for _ in $(seq 100); do
			grep -q "profiling" "$tmp/lp.log" 2>/dev/null && break
			sleep 0.1
		done
		sleep 1
	fi
	ops=$(taskset -c 0 perf bench sched pipe -l 300000 2>&1 | awk '/ops\/sec/ {print $1}')
	if [[ -n $lp ]]; then
		kill -INT "$lp"
		wait "$lp"
		rm -rf "$tmp/out"
	fi
	echo "${ops:-0}"
}

declare -A ratios
for ((r = 1; r <= rounds; r++)); do
	alone=$(run alone)
	line="round $r: alone $alone"
	for b in "$@"; do
		ops=$(run "$b")
		line+=", $b $ops"
		ratios[$b]+="$(awk -v o="$ops" -v a="$alone" 'BEGIN {printf "%.4f", a ? o / a : 0}') "
	done
	echo "$line"
done
for b in "$@"; do
	# shellcheck disable=SC2086
	printf '%s: median throughput %+.1f%% against alone\n' "$b" \
		"$(printf '%s\n' ${ratios[$b]} | sort -g | awk '{v[NR] = $1} END {m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2; print (m - 1) * 100}')"
done
