#!/usr/bin/env bash
# lowprof record -p on a CPU-bound program with a known call chain
# (main -> chain_one -> chain_two -> chain_three -> chain_leaf, -O2
# -fno-omit-frame-pointer): the chain in cpu.folded, the leaf first in
# go tool pprof -top, the leaf visible in the HTML rendered by Chromium,
# the privilege split visible in /proc while it runs (lowprof record runs
# on a terminal of its own, its helpers without one), the sandbox refusing
# what it must (--check-sandbox), and the symbol cache working inside it:
# the record fills a new cache, a replay of its capture hits it.
source "$(dirname "$0")/lib.sh"
require_root

# the cache's directory is the symbolizer's user's (lowprof record only
# prepares the default one)
mkdir -m 700 "$TMP/cache" && chown lowprof: "$TMP/cache"
CACHE=$TMP/cache/symbols.db

# (under emulation the checks below take seconds: the recording lasts longer)
start_bg "$WL/chain-fp" "$(scaled 30)"
WPID=$BGPID
sleep 0.3
# lowprof record runs under a pseudo-terminal (util-linux script, in a new
# session whose controlling terminal it is), as from a user's shell: its
# helpers must still have none (cli_spawn's setsid). Its output goes to a
# file as before; script's exit status is lowprof's (-e).
rec_cmd=$(printf '%q ' "$BIN/lowprof" record -d "$(scaled 5)" -p "$WPID" -o "$TMP/out" \
	--cache "$CACHE" --capture "$TMP/chain.lpcap")
start_bg script -qec "exec $rec_cmd >$(printf '%q' "$TMP/rec.out") 2>&1" /dev/null </dev/null
TERM_PID=$BGPID
# tty_nr PID: field 7 of /proc/PID/stat, its controlling terminal (0: none)
tty_nr() { sed 's/.*) //' "/proc/$1/stat" | awk '{print $5}'; }

# while it runs: the symbolizer is unprivileged, the collector keeps one capability
wait_log "$TMP/rec.out" 'profiling the given processes' ||
	fail "the collector never said it was profiling"
# looked for again for a while: under emulation and load one walk of the
# tree has missed the collector (vm_6.12) though it ran to the end
for _ in $(seq "$(scaled 5)"); do
	REC=$(desc_named "$TERM_PID" lowprof)
	SYM=$(desc_named "$TERM_PID" lowprof-symboli)
	COL=$(desc_named "$TERM_PID" lowprof-collect)
	[[ -n "$REC" && -n "$SYM" && -n "$COL" ]] && break
	sleep 1
done
if [[ -n "$REC" && -n "$SYM" && -n "$COL" ]]; then
	suid=$(awk '/^Uid:/ {print $2}' /proc/$SYM/status)
	check "symbolizer runs as uid $suid (non-zero)" test "$suid" -ne 0
	check "symbolizer CapEff is 0" grep -q '^CapEff:[[:space:]]*0000000000000000$' /proc/$SYM/status
	check "symbolizer CapBnd is 0" grep -q '^CapBnd:[[:space:]]*0000000000000000$' /proc/$SYM/status
	check "symbolizer CapPrm is 0" grep -q '^CapPrm:[[:space:]]*0000000000000000$' /proc/$SYM/status
	check "symbolizer CapAmb is 0" grep -q '^CapAmb:[[:space:]]*0000000000000000$' /proc/$SYM/status
	check "symbolizer has no_new_privs" grep -q '^NoNewPrivs:[[:space:]]*1$' /proc/$SYM/status
	check "symbolizer runs under a seccomp filter (Seccomp: 2)" \
		grep -q '^Seccomp:[[:space:]]*2$' /proc/$SYM/status
	# CAP_SYS_PTRACE is bit 19, CAP_DAC_READ_SEARCH bit 2, and
	# CAP_CHECKPOINT_RESTORE bit 40 where the kernel knows it (5.9+)
	keep=0000000000080004
	[[ $(cat /proc/sys/kernel/cap_last_cap) -ge 40 ]] && keep=0000010000080004
	for set in CapEff CapPrm CapBnd; do
		check "collector $set is CAP_SYS_PTRACE + CAP_DAC_READ_SEARCH (+ CAP_CHECKPOINT_RESTORE) only" \
			grep -q "^$set:[[:space:]]*$keep$" /proc/$COL/status
	done
	check "collector CapInh and CapAmb are 0" \
		bash -c "grep -q '^CapInh:[[:space:]]*0000000000000000$' /proc/$COL/status &&
			grep -q '^CapAmb:[[:space:]]*0000000000000000$' /proc/$COL/status"
	# the ring's data is mapped read-only by the symbolizer, the consumer page read-write
	check "symbolizer maps the ring read-only" \
		grep -Eq ' r--s .*/memfd:lowprof-ring ' /proc/$SYM/maps
	check "symbolizer maps no writable view of the ring" \
		bash -c "! grep -E ' rw.s .*/memfd:lowprof-ring ' /proc/$SYM/maps"
	check "symbolizer maps the consumer page read-write" \
		grep -Eq ' rw-s .*/memfd:lowprof-ring-consumer ' /proc/$SYM/maps
	check "collector has no_new_privs" grep -q '^NoNewPrivs:[[:space:]]*1$' /proc/$COL/status
	# lowprof record has the terminal (else the next checks prove nothing),
	# its helpers have none
	check "lowprof record ($REC) has a controlling terminal (tty_nr $(tty_nr "$REC"))" \
		test "$(tty_nr "$REC")" != 0
	check "the collector ($COL) has no controlling terminal (tty_nr $(tty_nr "$COL"))" \
		test "$(tty_nr "$COL")" = 0
	check "the symbolizer ($SYM) has no controlling terminal (tty_nr $(tty_nr "$SYM"))" \
		test "$(tty_nr "$SYM")" = 0
else
	fail "lowprof record ($REC), its collector ($COL) and symbolizer ($SYM) should all be running"
fi

wait "$TERM_PID"; rc=$?
cat "$TMP/rec.out"
# from inside the sandbox, as lowprof: ptrace, bpf, perf_event_open, sockets,
# /proc/1/mem and execve all fail; so do making, changing or removing a
# file in a directory it may write, signalling another process of its own,
# and executable memory
mkdir -m 700 "$TMP/chk" && chown lowprof: "$TMP/chk"
out=$(TMPDIR=$TMP/chk "$BIN/lowprof-symbolizer" --check-sandbox 2>&1); src=$?
echo "$out"
check "symbolizer --check-sandbox: everything it tries is denied (exit $src)" test "$src" -eq 0
check "symbolizer --check-sandbox tried bpf and execve" \
	grep -q 'bpf.*denied' <<<"$out"
check "the sandbox, not the uid, stops execve (ENOSYS)" \
	grep -q 'execve.*denied (Function not implemented)' <<<"$out"
for what in 'mprotect(ring data, PROT_WRITE)' 'mmap(ring fd, PROT_WRITE' 'pwrite(ring fd)' \
	'open(ring fd again, O_RDWR)'; do
	check "from the sandbox, writing the ring's data fails: $what" \
		grep -qF "$what" <<<"$(grep denied <<<"$out")"
done
# what its uid would allow, the filter refuses (ENOSYS, not EACCES or EPERM)
for what in 'open(O_CREAT, a new file)' 'open(its own file, O_WRONLY)' \
	'open(its own file, O_TRUNC)' 'mkdir' 'symlink' 'link(its own file)' \
	'fchmod(its own file)' 'rename(its own file)' 'unlink(its own file)' \
	'kill(another process)' 'tgkill(another process)' 'tkill(another process)' \
	'rt_sigqueueinfo(another process)' 'mmap(PROT_EXEC)' 'mprotect(PROT_EXEC)' \
	'pkey_mprotect(PROT_EXEC)' 'personality(READ_IMPLIES_EXEC)'; do
	check "from the sandbox, $what is denied by the filter (ENOSYS)" \
		awk -v w="$what" 'index($0, w " ") == 1 && /denied \(Function not implemented\)$/ { f = 1 }
			END { exit !f }' <<<"$out"
done
check "from the sandbox, it can still signal itself (abort)" \
	grep -Eq '^tgkill\(itself, 0\) +allowed$' <<<"$out"
check "the check's own files are gone from its directory" test -z "$(ls -A "$TMP/chk")"
check "lowprof record exits 0 (got $rc)" test "$rc" -eq 0
F="$TMP/out/cpu.folded"
check "cpu.folded is not empty" test -s "$F"
echo "--- cpu.folded"; head -5 "$F"
# unwound with CFI: no frame is missing (frame pointers alone lose chain_three,
# as gcc gives the leaf no frame)
# (kernel frames may follow the leaf: an interrupt taken in user mode, whose
# way back to it was sampled; under emulation, tests/vm, a tenth of them)
pct=$(share "$F" '^chain-fp;.*main;chain_one;chain_two;chain_three;chain_leaf(;[^;]+_\[k\])*$')
check "$pct% of samples show main;chain_one;chain_two;chain_three;chain_leaf (>= 95%)" \
	test "$pct" -ge 95

export HOME=$TMP
top=$(go tool pprof -top "$TMP/out/cpu.pb.gz" 2>&1)
echo "--- go tool pprof -top"; echo "$top" | head -12
first=$(echo "$top" | awk '/flat%/ {getline; print $NF; exit}')
check "go tool pprof -top lists chain_leaf first (got '$first')" test "$first" = chain_leaf
check "pprof labels samples with pid and comm" \
	bash -c "go tool pprof -traces '$TMP/out/cpu.pb.gz' 2>/dev/null | grep -Eq 'pid: +$WPID'"

# the symbol cache, inside the sandbox: the record made it and stored the
# tables it parsed; SQLite made nothing but its three files (no journal, no
# temporary file: the sandbox would refuse them); a replay of the capture
# takes the tables from it and writes the same stacks
loaded() { # loaded FILE FIELD: from the summary's "binaries" line
	sed -nE "s/^ +binaries +loaded in .*: ([0-9]+) tables from the cache, ([0-9]+) parsed.*, ([0-9]+) stored.*/\\$2/p" "$1"
}
grep -E '^ +binaries' "$TMP/rec.out"
check "the record stored the tables it parsed ($(loaded "$TMP/rec.out" 3) stored)" \
	test "$(loaded "$TMP/rec.out" 3)" -gt 0
size1=$(stat -c %s "$CACHE" 2>/dev/null || echo 0)
check "the cache file grew from nothing to $size1 bytes" test "$size1" -gt 0
check "its directory holds the database, its WAL and -shm, nothing else" \
	test "$(ls -A "$TMP/cache" | tr '\n' ' ')" = "symbols.db symbols.db-shm symbols.db-wal "
"$BIN/lowprof" replay "$TMP/chain.lpcap" -o "$TMP/replay" --cache "$CACHE" >"$TMP/replay.out" 2>&1
rrc=$?
grep -E '^ +binaries' "$TMP/replay.out"
check "lowprof replay with the cache exits 0 (got $rrc)" test "$rrc" -eq 0
# the vDSO's tables come from the image in the stream, never from the cache
# (8 KiB): parsed again whenever a sample is in it (clock_gettime)
vdso_parsed=0
grep -q '__vdso_' "$F" && vdso_parsed=2
check "the replay took $(loaded "$TMP/replay.out" 1) tables from the cache and parsed none (but the vDSO's: $vdso_parsed)" \
	test "$(loaded "$TMP/replay.out" 1)" -gt 0 -a "$(loaded "$TMP/replay.out" 2)" -le "$vdso_parsed"
check "the replay's cpu.folded is the record's" cmp -s "$F" "$TMP/replay/cpu.folded"
check "still only the three files" \
	test "$(ls -A "$TMP/cache" | tr '\n' ' ')" = "symbols.db symbols.db-shm symbols.db-wal "

dom=$(chromium_dom "$TMP/out/cpu.html")
check "cpu.html renders in Chromium with chain_leaf visible" \
	bash -c "grep -q chain_leaf <<<\"\$1\"" _ "$dom"
check "cpu.html needs no network" bash -c "! grep -Eq '(src|href)=\"https?:' '$TMP/out/cpu.html'"

kill "$WPID" 2>/dev/null
sleep 0.3
left=$(leftovers)
check "nothing left behind: '$left'" test -z "$left"
finish
