#!/usr/bin/env bash
# The kernel's address layout stays in the collector: kernel addresses cross
# the ring and capture files relative to the kernel's _text, and no output
# holds an absolute kernel address, while kernel frames are still named.
# The workload spends its time in system calls, so samples have kernel
# stacks; the capture is written uncompressed, so its bytes are the records'.
source "$(dirname "$0")/lib.sh"
require_root
export HOME=$TMP # go tool pprof's cache

text=$(awk '$3 == "_text" && NF == 3 { print $1; exit }' /proc/kallsyms)
sys=$(awk '$3 == "do_syscall_64" && NF == 3 { print $1; exit }' /proc/kallsyms)
if [[ -z "$text" || "$text" == 0000000000000000 ]]; then
	echo "SKIP: /proc/kallsyms shows no kernel addresses here"; exit 77
fi

start_bg dd if=/dev/zero of=/dev/null bs=64 count=2000000000
DD=$BGPID
sleep 0.2
"$BIN/lowprof" record -d 3 -F 499 -p "$DD" -o "$TMP/out" --capture "$TMP/run.lpcap" \
	--capture-compress none >"$TMP/summary" 2>&1
rc=$?
kill "$DD" 2>/dev/null
check "record exits 0 (got $rc)" test "$rc" -eq 0
check "kernel frames are named in cpu.folded" grep -q '_\[k\]' "$TMP/out/cpu.folded"
check "the syscall entry is among them" grep -Eq '(do_syscall_64|entry_SYSCALL_64[a-z_]*)_\[k\]' \
	"$TMP/out/cpu.folded"

# bytes: hex string of a u64 in little-endian (a stack frame) and msgpack's
# big-endian uint64 (be, lib.sh: a kernel symbol's address)
le() { echo "$1" | sed -E 's/(..)(..)(..)(..)(..)(..)(..)(..)/\\x\8\\x\7\\x\6\\x\5\\x\4\\x\3\\x\2\\x\1/'; }
for f in "$TMP/run.lpcap" "$TMP/out/cpu.pb.gz" "$TMP/out/cpu.folded" "$TMP/out/cpu.html"; do
	for a in "$text" "$sys"; do
		check "$(basename "$f") holds no $a (msgpack)" absent "$f" "$(be "$a")"
		check "$(basename "$f") holds no $a (little-endian)" absent "$f" "$(le "$a")"
	done
done
# no frame of the kernel's text crossed as it is: the top five bytes of
# _text's address, as a little-endian frame holds them
# (the capture carries the vDSO's image, whose code can hold those five
# bytes by chance: 6.1's has b7 ff ff ff ff in a cmp with 0x7fffffff; the
# search skips that image, taken from a process's own [vdso] here, the same
# for every 64-bit process of a kernel)
python3 - "$TMP/run.lpcap" "$TMP/run-novdso.lpcap" <<'PY'
import sys
with open("/proc/self/maps") as f:
    lo = hi = 0
    for l in f:
        if l.rstrip().endswith("[vdso]"):
            lo, hi = (int(a, 16) for a in l.split()[0].split("-"))
with open("/proc/self/mem", "rb") as m:
    m.seek(lo)
    image = m.read(hi - lo)
data = open(sys.argv[1], "rb").read()
print("    vDSO image of %d bytes found in the capture %d time(s)" % (len(image), data.count(image)))
open(sys.argv[2], "wb").write(data.replace(image, b""))
PY
pat=$(le "$text" | cut -c 13-)
check "the capture holds no kernel text address as a stack frame (the vDSO's image left out)" \
	absent "$TMP/run-novdso.lpcap" "$pat"
if ! absent "$TMP/run-novdso.lpcap" "$pat"; then
	# where, and the 32 bytes around each (at most 5): which record carries it
	LC_ALL=C grep -obaP "$pat" "$TMP/run-novdso.lpcap" | cut -d: -f1 | head -5 | while read -r off; do
		echo "    at byte $off (of the capture less the vDSO's image):"
		od -A d -t x1 -j $((off > 16 ? off - 16 : 0)) -N 40 "$TMP/run-novdso.lpcap" | head -3
	done
	"$BIN/lowprof" capture-info "$TMP/run.lpcap" 2>&1 | head -20
fi

# pprof: kernel locations are offsets in the kernel mapping, not addresses
# (x86-64's kernel text and modules are all at 0xffffffff8... and above)
go tool pprof -raw "$TMP/out/cpu.pb.gz" >"$TMP/raw" 2>/dev/null
nk=$(awk '/^Locations/ {l = 1; next} /^Mappings/ {l = 0} l && $2 ~ /^0xffff0000/' "$TMP/raw" | wc -l)
absolute=$(awk '/^Locations/ {l = 1; next} /^Mappings/ {l = 0} l && $2 ~ /^0xffffffff[89a-f]/' "$TMP/raw")
check "pprof has kernel locations ($nk)" test "$nk" -gt 0
check "no pprof location is at an absolute kernel address: '$absolute'" test -z "$absolute"

# a replay of the capture names the same kernel frames
"$BIN/lowprof" replay "$TMP/run.lpcap" -o "$TMP/replay" >/dev/null 2>&1
check "the replay's cpu.folded equals the live one" cmp -s "$TMP/out/cpu.folded" "$TMP/replay/cpu.folded"
left=$(leftovers)
check "nothing left behind: '$left'" test -z "$left"
finish
