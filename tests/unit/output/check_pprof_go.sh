#!/bin/sh
# SPDX-License-Identifier: MIT
# Loads the sample profile written by symb_write_pprof into `go tool pprof`,
# the reference reader, and checks what it reports.
# usage: check_pprof_go.sh WRITE_SAMPLE WORKDIR   (exit 77: go not installed)
set -eu

writer=$1
work=$2

if ! command -v go >/dev/null 2>&1; then
	echo "SKIP: go is not installed, cannot run go tool pprof"
	exit 77
fi

fail() {
	echo "FAIL: $*"
	exit 1
}

rm -rf "$work"
mkdir -p "$work/home"
"$writer" "$work"
prof=$work/profile.pb.gz

# pprof keeps state under $HOME/pprof; keep it out of the real home and make
# sure no symbolization source outside the profile is found.
export HOME="$work/home"
export PPROF_BINARY_PATH="$work/home/no-binaries"
export PPROF_TMPDIR="$work/home"

# First row under the header of -top output.
top_row() {
	awk '/^ *flat +flat%/ { getline; print; exit }'
}

# Sample counts: the leaf is listed first with its 80 of 100 samples.
out=$(go tool pprof -symbolize=none -sample_index=samples -top "$prof" 2>&1) ||
	fail "go tool pprof -top failed: $out"
echo "$out"
row=$(echo "$out" | top_row)
echo "$row" | grep -Eq '^ *80 +80\.00% +80\.00% +80 +80\.00% +leaf_compute$' ||
	fail "expected leaf_compute first with flat 80, got: $row"
echo "$out" | grep -q 'Total samples = 100' || fail "total is not 100 samples"

# Plain invocation (local symbolization attempted): the default sample type
# is cpu nanoseconds, 80 samples of 10 ms each.
out=$(go tool pprof -top "$prof" 2>&1) || fail "plain go tool pprof -top failed: $out"
echo "$out"
row=$(echo "$out" | top_row)
echo "$row" | grep -Eq '^ *800ms +80\.00% +80\.00% +800ms +80\.00% +leaf_compute$' ||
	fail "expected leaf_compute first with flat 800ms, got: $row"
echo "$out" | grep -Eq '^ *150ms .* do_syscall_64$' || fail "kernel frame missing"

# Whole stacks, leaf first, with their labels.
out=$(go tool pprof -symbolize=none -traces "$prof" 2>&1) || fail "go tool pprof -traces failed: $out"
echo "$out"
chain=$(echo "$out" | awk '/ 700ms +leaf_compute$/ { n = 6 } n-- > 0 { print $NF }' | tr '\n' ' ')
[ "$chain" = "leaf_compute func_c func_b func_a main [unknown] " ] ||
	fail "unexpected chain under the 700ms sample: $chain"
echo "$out" | grep -Eq '^ *comm: +demo$' || fail "comm label missing"
echo "$out" | grep -Eq '^ *pid: +101$' || fail "pid label missing"

# Inlined functions (the inline profile): one location, several lines; pprof
# marks all but the last "(inline)" and shows each line's file:line.
inl=$work/inline.pb.gz
out=$(go tool pprof -symbolize=none -lines -traces "$inl" 2>&1) ||
	fail "go tool pprof -lines -traces failed: $out"
echo "$out"
chain=$(echo "$out" | awk '/ 600ms +inner_fn / { n = 4 } n-- > 0 { sub(/^ *(600ms)? +/, ""); print }' |
	tr '\n' '|')
[ "$chain" = "inner_fn /src/inl.h:12 (inline)|mid_fn /src/inl.h:30 (inline)|outer_fn /src/main.c:77|main /src/main.c:5|" ] ||
	fail "unexpected inline chain under the 600ms sample: $chain"
out=$(go tool pprof -symbolize=none -top "$inl" 2>&1) || fail "go tool pprof -top (inline) failed: $out"
echo "$out"
row=$(echo "$out" | top_row)
echo "$row" | grep -Eq '^ *900ms +90\.00% +90\.00% +900ms +90\.00% +inner_fn \(inline\)$' ||
	fail "expected inner_fn first with flat 900ms (both call sites), got: $row"
echo "PASS"
