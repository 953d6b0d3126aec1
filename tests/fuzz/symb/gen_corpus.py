#!/usr/bin/env python3
"""Writes the seed corpus of fuzz_symb_stream: record streams framed as
[u32 le length][msgpack record]. Run from this directory: python3 gen_corpus.py"""
import struct


def pk(v):
    if v is None:
        return b"\xc0"
    if v is True:
        return b"\xc3"
    if v is False:
        return b"\xc2"
    if isinstance(v, int):
        if v < 0x80:
            return bytes([v])
        if v < 1 << 8:
            return b"\xcc" + struct.pack(">B", v)
        if v < 1 << 16:
            return b"\xcd" + struct.pack(">H", v)
        if v < 1 << 32:
            return b"\xce" + struct.pack(">I", v)
        return b"\xcf" + struct.pack(">Q", v)
    if isinstance(v, str):
        b = v.encode()
        return (bytes([0xA0 | len(b)]) if len(b) < 32 else b"\xd9" + bytes([len(b)])) + b
    if isinstance(v, bytes):
        if len(v) >= 1 << 8:
            return b"\xc5" + struct.pack(">H", len(v)) + v
        return b"\xc4" + bytes([len(v)]) + v
    if isinstance(v, list):
        head = bytes([0x90 | len(v)]) if len(v) < 16 else b"\xdc" + struct.pack(">H", len(v))
        return head + b"".join(pk(x) for x in v)
    raise TypeError(v)


def stack(*addrs):
    return b"".join(struct.pack("<Q", a) for a in addrs)


def frame(*records):
    out = b""
    for r in records:
        b = pk(r)
        out += struct.pack("<I", len(b)) + b
    return out


meta = [1, 1, 0, "host", "6.1.0", "CLOCK_MONOTONIC", 100, 1700000000000000000, 99, 2, 100,
        131072, 4194304, [], "gen", None]
ksyms = [6, 0, True, [[0xFFFFFFFF81000000, "_stext", ""], [0xFFFFFFFF81001000, "do_syscall_64", ""]]]
maps = [3, 150, 42, False, [[0x400000, 0x401000, 0, 8, 1, 12345, 13, "/usr/bin/true"],
                     [0x7F0000000000, 0x7F0000010000, 0x1000, 8, 1, 99, 13, "/lib/libc.so.6"],
                     [0x7FFF0000, 0x7FFF1000, 0, 0, 0, 0, 5, "[vdso]"]]]
s1 = [2, 0, 200, 42, 42, 0, "true", 10101010, 0x400010, 0x7FFE0000, 0x7FFE0040,
      stack(0xFFFFFFFF81001010, 0xFFFFFFFF81000010), stack(0x400010, 0x7F0000000100, 0x1234)]
s2 = [2, 0, 210, 42, 43, 1, "true", 10101010, 0x400020, 0, 0, b"", stack(0x400020)]
loss = [7, 300, 2, 0, 0, 0, 0, 0, 0, 0]
end = [8, 400, "duration"]

open("corpus/full-stream", "wb").write(frame(meta, ksyms, maps, s1, s2, s1, loss, end))
open("corpus/exec-exit", "wb").write(frame(meta, maps, s1, [4, 250, 42, "sh"], s1, [5, 260, 42], s2))
open("corpus/no-meta", "wb").write(frame(s2, maps, s1))
# one process's mappings split across two records (append), then replaced
maps_a = [3, 150, 42, False, maps[4][:1]]
maps_b = [3, 151, 42, True, maps[4][1:]]
open("corpus/maps-append", "wb").write(frame(meta, maps_a, maps_b, s1, maps_b, s1, maps, s2, end))
# a record beyond the old u16 framing: 2000 distinct files (> 64 KiB)
big = [3, 160, 43, False, [[0x10000000 + i * 0x1000, 0x10001000 + i * 0x1000, 0, 8, 1, 5000 + i, 13,
                            "/usr/lib/x86_64-linux-gnu/lib%05d.so" % i] for i in range(2000)]]
s3 = [2, 0, 220, 43, 43, 0, "big", 10101010, 0x10000010, 0, 0, b"", stack(0x10000010, 0x107CF010)]
open("corpus/big-maps", "wb").write(frame(meta, big, s3, end))
# off-CPU samples (kind 1, weight = blocked ns) between on-CPU ones: blocked
# in the kernel below the scheduler, with the same user stack as s1
oksyms = [6, 0, True, [[0xFFFFFFFF81000000, "__schedule", ""], [0xFFFFFFFF81001000, "futex_wait_queue", ""],
                       [0xFFFFFFFF81002000, "do_syscall_64", ""]]]
o1 = [2, 1, 230, 42, 44, 0, "true", 3000000, 0x400010, 0x7FFE0000, 0x7FFE0040,
      stack(0xFFFFFFFF81000010, 0xFFFFFFFF81001010, 0xFFFFFFFF81002010), stack(0x400010, 0x7F0000000100)]
o2 = [2, 1, 240, 42, 42, 1, "true", 500000, 0x400010, 0, 0, b"", stack(0x400010, 0x7F0000000100, 0x1234)]
open("corpus/offcpu-stream", "wb").write(frame(meta, oksyms, maps, s1, o1, o2, o1, s2, loss, end))
# 1.5: what a process runs, and the cgroups its samples name (a Kubernetes
# pod's container, a systemd service, one never named)
proc = [11, 149, 42, "/usr/bin/true"]
cg1 = [10, 199, 77, "/kubepods.slice/kubepods-pod0a1b2c3d_4e5f_6789_abcd_ef0123456789.slice/"
                    "cri-containerd-" + "ab" * 32 + ".scope"]
cg2 = [10, 199, 78, "/system.slice/docker-" + "0f" * 32 + ".scope"]
c1 = s1 + [b"", 0, 77]
c2 = s2 + [b"", 0, 78]
c3 = s1 + [b"", 0, 79]
open("corpus/labels-stream", "wb").write(frame(meta, proc, maps, cg1, cg2, c1, c2, c3, c1, end))

# JIT: an anonymous executable mapping named by the perf map's chunks (one
# cutting a line, one repeated), renamed, then void after exec
jmaps = [3, 150, 77, False, [[0x7F1000000000, 0x7F1000100000, 0, 0, 0, 0, 13, ""]]]
pm1 = b"7f1000001000 100 JS:*hot /a.js:1\n7f10000020"
pm2 = b"00 80 JS:^caller /a.js:9\n"
pm3 = b"7f1000001000 40 JS:*reused /a.js:20\n"
j1 = [2, 0, 200, 77, 77, 0, "node", 10101010, 0x7F1000001010, 0, 0, b"",
      stack(0x7F1000001010, 0x7F1000002010, 0x7F1000003000)]
open("corpus/jit-stream", "wb").write(frame(
    meta, jmaps, [12, 160, 77, 0, pm1], [12, 161, 77, len(pm1), pm2],
    [12, 161, 77, len(pm1), pm2], j1, [12, 170, 77, len(pm1) + len(pm2), pm3], j1,
    [4, 250, 77, "node"], jmaps, j1, [12, 260, 77, 0, pm3], j1, [5, 300, 77], end))
# the vDSO image (record 13) and a sample at its clock_gettime, unwound
# through its CFI to /usr/bin/true (a real x86_64 vDSO: ../vdso/corpus)
image = open("../vdso/corpus/x86_64-linux-6.18", "rb").read()
vmaps = [3, 150, 42, False, [[0x400000, 0x401000, 0, 8, 1, 12345, 13, "/usr/bin/true"],
                      [0x7FFFF7FC0000, 0x7FFFF7FC2000, 0, 0, 0, 0, 5, "[vdso]"]]]
vs = [2, 0, 200, 42, 42, 0, "true", 10101010, 0x7FFFF7FC0AF0, 0x7FFE0000, 0, b"", b"",
      stack(0x400010, 0, 0, 0)]
open("corpus/vdso-stream", "wb").write(frame(meta, [13, 100, image], vmaps, vs, vs, end))
# 1.6: mappings as the kernel's mmap events give them (one replacing part of
# another), a fork that inherits them, an exec that voids them
mm1 = [14, 160, 42, [0x7F0000004000, 0x7F0000008000, 0x5000, 8, 1, 100, 13, "/lib/libm.so.6", b""]]
mm2 = [14, 161, 42, [0x3FF000, 0x400800, 0, 0, 0, 0, 5, ""]]
fork = [15, 170, 50, 42]
s4 = [2, 0, 225, 50, 50, 0, "kid", 10101010, 0x7F0000004010, 0, 0, b"", stack(0x7F0000004010, 0x400900)]
open("corpus/mmap-fork", "wb").write(frame(meta, maps, mm1, mm2, s1, fork, s4, mm1,
                                           [4, 250, 50, "kid"], mm1, s4, [5, 260, 50], end))
