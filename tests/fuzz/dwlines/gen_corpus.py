#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# Regenerates the synthetic seeds of corpus/ (ld-so.blob is a real cache row,
# kept as it is): DWARF results blobs as symbolizer/dwarf/dwarf.c encodes them.
#   python3 gen_corpus.py
import os
import struct

MANGLED = 0x80000000
NO_FILE = 0xFFFFFFFF


def blob(strings, results):
    """results: [(vaddr, [(function index | MANGLED, file index | NO_FILE, line)])]"""
    out = b"LPDL" + struct.pack("<II", len(strings), len(results))
    for s in strings:
        b = s.encode()
        out += struct.pack("<I", len(b)) + b
    for vaddr, frames in results:
        out += struct.pack("<QI", vaddr, len(frames))
        for fn, file, line in frames:
            out += struct.pack("<III", fn, file, line)
    return out


seeds = {
    "empty.blob": blob([], []),
    "miss.blob": blob([], [(0x401000, [])]),
    "plain.blob": blob(["main", "main.c"], [(0x401000, [(0, 1, 12)])]),
    "inline.blob": blob(
        ["fx_leaf", "fx.c", "fx_mid", "fx_outer"],
        [
            (0x1130, [(0, 1, 13), (2, 1, 19), (3, 1, 27)]),
            (0x1140, [(2, 1, 20), (3, 1, 27)]),
            (0x1150, [(3, NO_FILE, 0)]),
        ],
    ),
    "mangled.blob": blob(
        ["_ZN2ns4TypeIlE6methodEl", "t.cc", "_RNvCs1234_7mycrate3foo", "[unknown]"],
        [(0x2000, [(0 | MANGLED, 1, 8)]), (0x2100, [(2 | MANGLED, NO_FILE, 0)]),
         (0xFFFFFFFFFFFFFFF0, [(3, NO_FILE, 0)])],
    ),
}
os.makedirs(os.path.join(os.path.dirname(__file__), "corpus"), exist_ok=True)
for name, data in seeds.items():
    with open(os.path.join(os.path.dirname(__file__), "corpus", name), "wb") as f:
        f.write(data)
