#!/usr/bin/env python3
"""bpf_prog_hold.py NAME SECONDS: loads a two-instruction socket filter
named NAME (bpf(BPF_PROG_LOAD), no attach), says "loaded", holds it for
SECONDS and closes it. The kernel gives the JIT'd program a kallsyms
symbol, bpf_prog_TAG_NAME [bpf], and a ksymbol perf event at its load and
again at its unload: a kernel symbol change that needs no module."""
import ctypes
import os
import struct
import sys
import time

SYS_BPF, BPF_PROG_LOAD, SOCKET_FILTER = 321, 5, 1  # x86_64

libc = ctypes.CDLL(None, use_errno=True)
insns = ctypes.create_string_buffer(bytes.fromhex("b700000000000000" "9500000000000000"), 16)  # r0 = 0; exit
lic = ctypes.create_string_buffer(b"GPL")
attr = bytearray(128)  # union bpf_attr, BPF_PROG_LOAD's fields; prog_name at 48
struct.pack_into("<IIQQ", attr, 0, SOCKET_FILTER, 2, ctypes.addressof(insns), ctypes.addressof(lic))
attr[48:64] = sys.argv[1].encode()[:15].ljust(16, b"\0")
fd = libc.syscall(SYS_BPF, BPF_PROG_LOAD, (ctypes.c_char * 128).from_buffer(attr), 128)
if fd < 0:
    sys.exit("BPF_PROG_LOAD: " + os.strerror(ctypes.get_errno()))
print("loaded", flush=True)
time.sleep(float(sys.argv[2]))
os.close(fd)
