#!/bin/sh
# SPDX-License-Identifier: MIT
# Regenerates the checked-in seed corpus: the blob of every ELF seed of
# tests/fuzz/elf/corpus (x86_64, i386, big-endian; .symtab and .dynsym-only;
# with build-ids), of any further ELF files given (the checked-in corpus adds
# the unit test's fixture: nested, aliased and zero-size functions), and the
# empty object's blob. Run by hand with absolute paths:
#   gen-corpus.sh $PWD/build/tests/fuzz/elfblob/elfblob_encode \
#	$PWD/build/tests/unit/elf/elf_fixture
set -eu
enc=${1:?usage: gen-corpus.sh <elfblob_encode> [elf file]...}
shift
cd "$(dirname "$0")"
mkdir -p corpus
for f in ../elf/corpus/* "$@"; do
	"$enc" "$f" "corpus/$(basename "$f").blob"
done
# "LPSY", version 1, then five zero counts: nothing indexed.
printf 'LPSY\001\000\000\000\000\000\000\000\000' >corpus/empty.blob
