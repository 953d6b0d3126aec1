#!/usr/bin/env python3
"""pushsplit.py BODY OUTPREFIX: the series of a Pyroscope PushRequest
(push.v1: series 1 {labels 1 {name 1, value 2}, samples 2 {raw_profile 1}})
as lines "N name=value,name=value" on stdout, each series' first raw
profile written to OUTPREFIX-N.pb.gz for go tool pprof. A second decoder
beside protoc --decode, which shows the structure but not the bytes."""
import sys


def fields(b):
    i = 0
    while i < len(b):
        key, i = varint(b, i)
        num, wt = key >> 3, key & 7
        if wt == 0:
            v, i = varint(b, i)
        elif wt == 2:
            n, i = varint(b, i)
            v = b[i:i + n]
            if len(v) != n:
                raise SystemExit("truncated")
            i += n
        elif wt == 1:
            v = b[i:i + 8]; i += 8
        elif wt == 5:
            v = b[i:i + 4]; i += 4
        else:
            raise SystemExit("wire type %d" % wt)
        yield num, v


def varint(b, i):
    v = s = 0
    while True:
        c = b[i]; i += 1
        v |= (c & 0x7f) << s; s += 7
        if not c & 0x80:
            return v, i


body = open(sys.argv[1], "rb").read()
for n, (num, ser) in enumerate(f for f in fields(body) if f[0] == 1):
    labels, raws = [], []
    for k, v in fields(ser):
        if k == 1:
            d = dict(fields(v))
            labels.append("%s=%s" % (d.get(1, b"").decode(), d.get(2, b"").decode()))
        elif k == 2:
            raws.append(dict(fields(v)).get(1, b""))
    if raws:
        open("%s-%d.pb.gz" % (sys.argv[2], n), "wb").write(raws[0])
    print(n, ",".join(labels), len(raws))
