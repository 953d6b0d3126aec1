#!/bin/sh
# SPDX-License-Identifier: MIT
# Regenerates the checked-in seed corpus: the CFI sections (and table blobs)
# of binaries built from tests/unit/cfi/fixture.c with and without frame
# pointers, with .debug_frame only, by clang and gcc, plus the head of the
# system's libc .eh_frame (which has the 'S' signal CIE near its start).
# Run by hand, not by the build; needs clang, gcc and libelf. Sections are
# cut at 8 KiB to keep the corpus small (libFuzzer infers -max_len from it).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$here/../../..
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fx=$root/tests/unit/cfi/fixture.c
flags="-O2 -fcf-protection=none -fPIE -pie -Wl,-z,lazy"
# shellcheck disable=SC2086 # word splitting of the flag lists is intended
{
	clang $flags -fno-omit-frame-pointer -o "$tmp/clang-fp" "$fx"
	clang $flags -fomit-frame-pointer -o "$tmp/clang-nofp" "$fx"
	clang $flags -fno-asynchronous-unwind-tables -g -o "$tmp/clang-dbg" "$fx"
	gcc $flags -fno-omit-frame-pointer -o "$tmp/gcc-fp" "$fx"
	gcc $flags -fno-asynchronous-unwind-tables -g -o "$tmp/gcc-dbg" "$fx"
	gcc $flags -gdwarf-4 -fno-asynchronous-unwind-tables -o "$tmp/gcc-dbg4" "$fx"
	clang -O1 -g -I"$root/symbolizer/unwind" -o "$tmp/gen_corpus" "$here/gen_corpus.c" \
		"$root"/symbolizer/unwind/cfi_*.c "$root/common/src/log.c" "$root/common/src/grow.c" \
		-I"$root/common/include" -lelf
}
cp /lib/x86_64-linux-gnu/libc.so.6 "$tmp/libc"
rm -rf "$here/corpus"
mkdir -p "$here/corpus"
"$tmp/gen_corpus" "$here/corpus" 8192 "$tmp/clang-fp" "$tmp/clang-nofp" "$tmp/clang-dbg" \
	"$tmp/gcc-fp" "$tmp/gcc-dbg" "$tmp/gcc-dbg4" "$tmp/libc"
# libc.blob (the table of the cut .eh_frame) is kept: it spans several
# blocks of the blob format, which the fixtures' small tables do not.
