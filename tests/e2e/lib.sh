# Helpers for the end-to-end tests. Sourced; expects LOWPROF_BIN and
# LOWPROF_WORKLOADS from ctest.
set -uo pipefail

BIN=${LOWPROF_BIN:?}
WL=${LOWPROF_WORKLOADS:?}
TMP=$(mktemp -d /tmp/lowprof-e2e.XXXXXX)
chmod 755 "$TMP"
KIDS=()
FAILS=0

cleanup() {
	for p in "${KIDS[@]}"; do kill -9 "$p" 2>/dev/null; done
	wait 2>/dev/null
	rm -rf "$TMP"
}
trap cleanup EXIT

fail() { echo "FAIL: $*"; FAILS=$((FAILS + 1)); }
pass() { echo "ok: $*"; }
check() { # check DESCRIPTION COMMAND...
	local what=$1; shift
	if "$@"; then pass "$what"; else fail "$what"; fi
}
finish() {
	if [[ $FAILS -gt 0 ]]; then echo "$FAILS check(s) failed"; exit 1; fi
	echo "all checks passed"; exit 0
}

require_root() {
	if [[ $(id -u) -ne 0 ]]; then
		echo "SKIP: needs root (loads BPF programs)"; exit 77
	fi
}

# start_bg CMD...: runs CMD in the background, records its pid in BGPID
start_bg() {
	"$@" &
	BGPID=$!
	KIDS+=("$BGPID")
}

# leftovers: prints anything lowprof left behind (processes, BPF programs),
# after giving the kernel up to 5 s: BPF programs are freed after an RCU
# grace period once the last fd is gone, not at the instant a process dies
leftovers() {
	local i left
	for i in $(seq 50); do
		left=$(leftovers_now)
		[[ -z "$left" ]] && return 0
		sleep 0.1
	done
	echo "$left"
}
leftovers_now() {
	pgrep -a -f 'lowprof-(collector|symbolizer)' || true
	if command -v bpftool >/dev/null; then
		bpftool prog show 2>/dev/null | grep -E 'on_cpu_sample|on_exec|on_exit|offcpu_' || true
	fi
	ls /dev/shm 2>/dev/null | grep -i lowprof || true
}

# share FOLDED REGEX: percent (integer) of samples whose stack matches REGEX
share() {
	awk -v re="$2" '{ n = $NF; total += n; line = $0; sub(/ [0-9]+$/, "", line);
		if (line ~ re) hit += n } END { if (!total) print 0; else print int(100 * hit / total) }' "$1"
}

chromium_dom() { # chromium_dom FILE: the DOM after scripts ran
	timeout 120 chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
		--disable-background-networking --disable-component-update --disable-sync \
		--user-data-dir="$TMP/chromium" --virtual-time-budget=5000 --dump-dom "file://$1" 2>/dev/null
}
