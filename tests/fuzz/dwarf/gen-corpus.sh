#!/bin/sh
# SPDX-License-Identifier: MIT
# Regenerates the checked-in seed corpus of the dwarf fuzz target from seed.c
# and seed.cc: small ELF files with DWARF 4 and 5 from gcc and clang (with
# and without .debug_aranges), compressed debug sections, split DWARF (a
# skeleton unit whose .dwo is absent), a separate --only-keep-debug file and
# C++ names. Run by hand, not by the build; needs gcc, g++, clang and objcopy.
# Keep the corpus small (a few KB per file, under 300 KB in all).
set -eu
cd "$(dirname "$0")"
out=corpus
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$out"
common="-Os -g -nostdlib -static -fno-pie -fno-asynchronous-unwind-tables
	-fno-stack-protector -Wl,--build-id -Wl,-z,noseparate-code -Wl,-z,max-page-size=16
	-Wl,-z,norelro"
cxx="-fno-exceptions -fno-rtti"
# shellcheck disable=SC2086 # word splitting of the flag lists is intended
{
	gcc $common -gdwarf-5 -o "$out/gcc-dwarf5" seed.c
	gcc $common -gdwarf-4 -o "$out/gcc-dwarf4" seed.c
	gcc $common -gdwarf-5 -gz=zlib -o "$out/gcc-dwarf5-gz" seed.c
	gcc $common -gdwarf-5 -O2 -o "$out/gcc-O2" seed.c
	clang $common -gdwarf-5 -o "$out/clang-dwarf5" seed.c
	clang $common -gdwarf-4 -o "$out/clang-dwarf4" seed.c
	clang $common -gdwarf-5 -gsplit-dwarf -o "$tmp/split" seed.c
	cp "$tmp/split" "$out/clang-split-skeleton"
	g++ $common $cxx -gdwarf-5 -o "$out/gxx-dwarf5" seed.cc
	clang++ $common $cxx -gdwarf-4 -o "$out/clangxx-dwarf4" seed.cc
	objcopy --only-keep-debug "$out/gcc-dwarf5" "$out/gcc-dwarf5.debug"
	objcopy --remove-section=.comment "$out/gcc-dwarf5.debug"
}
rm -f ./*.dwo
for f in "$out"/*; do
	objcopy --remove-section=.comment "$f" 2>/dev/null || true
done
ls -l "$out"
