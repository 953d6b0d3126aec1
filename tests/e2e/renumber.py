#!/usr/bin/env python3
"""renumber.py IN OUT SEQ: copies the gzip'd pprof IN to OUT with its
comment "lowprof window N" (the symbolizer's) saying SEQ instead, every
other top-level field as it is: a real window under another number, for
tests of spools that one run cannot make (shards' files)."""
import gzip, sys


def varint(b, i):
    v = s = 0
    while True:
        c = b[i]; i += 1
        v |= (c & 0x7f) << s; s += 7
        if c < 0x80:
            return v, i


def put_varint(v):
    out = bytearray()
    while True:
        c = v & 0x7f; v >>= 7
        out.append(c | (0x80 if v else 0))
        if not v:
            return bytes(out)


src, dst, seq = sys.argv[1], sys.argv[2], int(sys.argv[3])
b = gzip.decompress(open(src, "rb").read())
out, i, done = bytearray(), 0, 0
while i < len(b):
    start = i
    key, i = varint(b, i)
    wt = key & 7
    if wt == 0:
        _, i = varint(b, i)
    elif wt == 1:
        i += 8
    elif wt == 5:
        i += 4
    elif wt == 2:
        n, j = varint(b, i)
        v, i = b[j:j + n], j + n
        # string_table (6): the window's comment
        if key >> 3 == 6 and v.startswith(b"lowprof window "):
            v = b"lowprof window %d" % seq
            out += put_varint(key) + put_varint(len(v)) + v
            done += 1
            continue
    else:
        sys.exit("wire type %d" % wt)
    out += b[start:i]
if done != 1:
    sys.exit("%s: %d window comments" % (src, done))
open(dst, "wb").write(gzip.compress(bytes(out)))
