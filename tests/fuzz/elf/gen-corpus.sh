#!/bin/sh
# SPDX-License-Identifier: MIT
# Regenerates the checked-in seed corpus from seed.c: small ELF files that
# cover each path the parser has (.symtab, .dynsym only after strip, ELF32,
# big-endian, 4- and 8-byte aligned note segments). Run by hand, not by the
# build; needs clang, ld.bfd, ld.lld and llvm-objcopy. Keep the corpus small
# (a few KB per file) so libFuzzer's inferred -max_len stays small.
set -eu
cd "$(dirname "$0")"
out=corpus
mkdir -p "$out"
common="-Os -nostdlib -fno-asynchronous-unwind-tables -fno-stack-protector -Wl,--build-id
	-Wl,-z,noseparate-code -Wl,-z,max-page-size=16 -Wl,-z,norelro"
be="--target=aarch64_be-linux-gnu -fuse-ld=lld"
# shellcheck disable=SC2086 # word splitting of the flag lists is intended
{
	clang $common -static -fno-pie -o "$out/x86_64-exe" seed.c
	clang $common -static -fno-pie -fcf-protection=full -o "$out/x86_64-exe-cet" seed.c
	clang $common -shared -fPIC -o "$out/x86_64-so" seed.c
	llvm-objcopy --strip-all "$out/x86_64-so" "$out/x86_64-so.stripped"
	clang $common -m32 -static -fno-pie -o "$out/i386-exe" seed.c
	clang $common $be -static -o "$out/aarch64be-exe" seed.c
	clang $common $be -shared -fPIC -o "$out/aarch64be-so" seed.c
	llvm-objcopy --strip-all "$out/aarch64be-so" "$out/aarch64be-so.stripped"
	rm "$out/aarch64be-so"
}
