#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Writes the seed corpus of fuzz_ring (see the layout in fuzz_ring.c):
192 bytes of struct lp_ring_hdr, then the start of the data area.
Run from this directory: ./gen_corpus.py"""
import os
import struct

MAGIC = 0x474E52504C
WRAP = 1


def hdr(data_size=4096, prod=0, cons=0, closed=0, magic=MAGIC, version=1, hdr_size=4096):
    h = struct.pack("<QIIQ", magic, version, hdr_size, data_size) + bytes(40)
    h += struct.pack("<QQQQI", prod, 0, 0, 0, closed) + bytes(28)
    h += struct.pack("<Q", cons) + bytes(56)
    assert len(h) == 192
    return h


def rec(payload, flags=0, length=None):
    n = len(payload) if length is None else length
    pad = (-len(payload)) % 8
    return struct.pack("<II", n, flags) + payload + bytes(pad)


def records(*payloads):
    return b"".join(rec(p) for p in payloads)


def seed(name, blob):
    with open(os.path.join("corpus", name), "wb") as f:
        f.write(blob)


os.makedirs("corpus", exist_ok=True)
three = records(b"hello", b"", b"x" * 20)
seed("empty", hdr())
seed("three_closed", hdr(prod=len(three), closed=1) + three)
seed("three_open", hdr(prod=len(three)) + three)
# WRAP marker at 4064, then a record at offset 0
area = bytearray(4096)
area[0:24] = rec(b"y" * 16)
area[4064:4072] = rec(b"", WRAP)
seed("wrap", hdr(prod=4096 + 24, cons=4064) + bytes(area))
seed("bad_len", hdr(prod=16) + rec(b"z" * 8, length=4000))
seed("bad_flags", hdr(prod=16) + rec(b"z" * 8, flags=6))
seed("bad_magic", hdr(magic=MAGIC ^ 1, prod=16) + rec(b"z" * 8))
seed("prod_ahead", hdr(prod=8192 + 8) + rec(b"z" * 8))
seed("cons_ahead", hdr(prod=16, cons=4096) + rec(b"z" * 8))
seed("full_8k", hdr(data_size=8192, prod=8192) + records(*([b"abcdefgh"] * 512)))
