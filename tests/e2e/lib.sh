# Helpers for the end-to-end tests. Sourced; expects LOWPROF_BIN and
# LOWPROF_WORKLOADS from ctest.
set -uo pipefail

BIN=${LOWPROF_BIN:?}
WL=${LOWPROF_WORKLOADS:?}
# The test runs as a child subreaper: what it starts, even orphaned, stays
# below it, and is found through its own process tree, never by name (a
# deployed lowprof may be running beside the tests).
if [[ "${LP_SUBREAPED:-}" != "$$" ]]; then
	export LP_SUBREAPED=$$
	exec "$WL/lp-subreaper" bash "$0" "$@"
fi
TMP=$(mktemp -d /tmp/lowprof-e2e.XXXXXX)
chmod 755 "$TMP"
KIDS=()
FAILS=0
# LOWPROF_TEST_TIME_SCALE (default 1; tests/vm/run.sh sets it in an emulated
# VM, where everything is several times slower): durations that only have
# to be long enough for the test's own steps are multiplied by it
TIME_SCALE=${LOWPROF_TEST_TIME_SCALE:-1}
# KTAIL: kernel frames a folded line may end with after its user leaf (an
# interrupt, a preemption: more of them on a loaded host), for checks of
# whole user chains: '...;chain_leaf'"$KTAIL"'$' (an ERE, for awk and grep -E)
KTAIL='(;[^; ]+_\[k\])*'
scaled() { # scaled SECONDS: SECONDS x TIME_SCALE, rounded up to a whole second
	awk -v t="$1" -v s="$TIME_SCALE" 'BEGIN { v = t * s; printf "%d", (v == int(v)) ? v : int(v) + 1 }'
}

# Kills what the test started and is still running: only processes below
# the test in the process tree (a pid in KIDS that has exited may belong to
# another process by now), then everything else left below it.
cleanup() {
	local p ours
	ours=" $(descendants $$ | tr '\n' ' ') "
	for p in "${KIDS[@]}"; do
		[[ "$ours" == *" $p "* ]] && kill -9 "$p" 2>/dev/null
	done
	for p in $(descendants $$); do kill -9 "$p" 2>/dev/null; done
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

# descendants PID: every process below PID in the process tree (by parent
# pid, never by name), one per line
descendants() {
	local p
	for p in $(pgrep -P "$1"); do
		echo "$p"
		descendants "$p"
	done
}

# desc_named PID COMM: the first process below PID whose command name (as in
# /proc/PID/comm, at most 15 characters) is COMM; empty if none
desc_named() {
	local p
	for p in $(descendants "$1"); do
		if [[ "$(cat "/proc/$p/comm" 2>/dev/null)" == "$2" ]]; then
			echo "$p"
			return 0
		fi
	done
}

# ids of the BPF programs lowprof loads that exist now, one per line
lowprof_prog_ids() {
	command -v bpftool >/dev/null || return 0
	bpftool prog show 2>/dev/null |
		awk '/ name (on_cpu_sample|on_exec|on_exit|on_fork|on_exec_raw|on_exit_raw|offcpu_[a-z_]+) / {
			sub(/:$/, "", $1); print $1 }'
}
# the lowprof programs that existed before this test: not ours
PROGS_BEFORE=" $(lowprof_prog_ids | tr '\n' ' ') "

# lowprof shared memory in /dev/shm before this test (it uses memfds: none)
SHM_BEFORE=" $(ls /dev/shm 2>/dev/null | grep -i lowprof | tr '\n' ' ') "

# ids of programs held open by processes outside this test's tree (one grep
# over every fdinfo: a process per file takes tens of seconds on a busy host)
progs_held_by_others() {
	local ours
	ours=" $$ $(descendants $$ | tr '\n' ' ') "
	printf '%s\0' /proc/[0-9]*/fdinfo/* | xargs -0 grep -H '^prog_id:' 2>/dev/null |
		awk -v ours="$ours" '{ split($0, p, "/"); if (index(ours, " " p[3] " ") == 0) print $2 }' |
		sort -u
}

# leftovers: prints anything this test's lowprof runs left behind (processes,
# BPF programs), after giving the kernel time to finish what they started:
# BPF programs are freed after an RCU grace period once the last fd is gone,
# and a process whose user space has ended (empty cmdline) may still be
# closing its perf events and BPF links in the kernel. That took over 5 s
# once in CI on a loaded host (e2e_signals, after lowprof was SIGKILLed), so the
# wait is 30 s (scaled), and it ends as soon as nothing is left. What is
# still there after it is printed with its state and kernel wait channel.
leftovers() {
	local end left
	end=$((SECONDS + $(scaled 30)))
	while :; do
		left=$(leftovers_now)
		[[ -z "$left" ]] && return 0
		((SECONDS >= end)) && break
		sleep 0.1
	done
	echo "$left"
}
leftovers_now() {
	local p id others=""
	# lowprof processes in this test's tree: orphans are reparented to it
	for p in $(descendants $$); do
		case "$(cat "/proc/$p/comm" 2>/dev/null)" in
		lowprof*) echo "process $p: $(tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null)$(proc_state "$p")" ;;
		esac
	done
	# programs loaded since the test began and not held by anyone else's
	# process (a lowprof service started meanwhile)
	for id in $(lowprof_prog_ids); do
		[[ "$PROGS_BEFORE" == *" $id "* ]] && continue
		[[ -z "$others" ]] && others=" $(progs_held_by_others | tr '\n' ' ') "
		[[ "$others" == *" $id "* ]] || echo "BPF program $id"
	done
	for id in $(ls /dev/shm 2>/dev/null | grep -i lowprof); do
		[[ "$SHM_BEFORE" == *" $id "* ]] || echo "/dev/shm/$id"
	done
}

# proc_state PID: " (state S, wchan W, in FUNC)": how far PID got (Z is a
# zombie; an empty cmdline with another state is a process ending in the
# kernel), where it waits, and the top of its kernel stack (root only)
proc_state() {
	local st wchan top
	st=$(cat "/proc/$1/stat" 2>/dev/null) || return 0
	st=${st##*) }
	wchan=$(cat "/proc/$1/wchan" 2>/dev/null)
	top=$(head -3 "/proc/$1/stack" 2>/dev/null | awk '{ printf "%s%s", sep, $2; sep = " < " }')
	echo " (state ${st%% *}, wchan ${wchan:-?}, in ${top:-?})"
}

# share FOLDED REGEX: percent (integer) of samples whose stack matches REGEX
# (the regex reaches awk through the environment: -v would turn its \[ into
# [ in gawk, not in mawk)
share() {
	LP_RE="$2" awk '{ n = $NF; total += n; line = $0; sub(/ [0-9]+$/, "", line);
		if (line ~ ENVIRON["LP_RE"]) hit += n } END { if (!total) print 0; else print int(100 * hit / total) }' "$1"
}

# same_as_live LIVE REPLAY SUMMARY: a replay's folded FILE is the live run's,
# but for the samples the live run dropped because its shared ring was full
# (SUMMARY's "shared ring full N"): the capture is written before that ring,
# so it keeps them. With N = 0 the files are byte-identical; otherwise every
# live stack is in the replay at least as often, and the replay has at most N
# samples more. Says why when it fails.
same_as_live() {
	local n
	n=$(sed -nE 's/.*shared ring full ([0-9]+).*/\1/p' "$3" | head -1)
	n=${n:-0}
	if [ "$n" -eq 0 ]; then
		cmp "$1" "$2"
		return
	fi
	echo "note: the live run dropped $n samples (shared ring full); the capture has them"
	awk -v n="$n" '
		{ c = $NF; k = substr($0, 1, length($0) - length(c) - 1) }
		FNR == NR { live[k] += c; lt += c; next }
		{ rep[k] += c; rt += c }
		END {
			for (k in live) if (rep[k] < live[k]) { print "a live stack is rarer in the replay: " substr(k, 1, 200); bad = 1 }
			if (rt < lt || rt - lt > n) { print "the replay has " rt " samples, the live run " lt " (" n " dropped)"; bad = 1 }
			exit bad
		}' "$1" "$2"
}
chromium_dom() { # chromium_dom FILE: the DOM after scripts ran
	timeout 120 chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
		--disable-background-networking --disable-component-update --disable-sync \
		--user-data-dir="$TMP/chromium" --virtual-time-budget=5000 --dump-dom "file://$1" 2>/dev/null
}

# --- sample counts that follow what the workload got ------------------------
# On a loaded machine a busy workload gets a share of a CPU, not all of it,
# and cpu-clock sampling at HZ sees it HZ times per second of the CPU it got.
# So the tests compare a sample count with the workload's own CPU time over
# the same stretch (never with the wall time), and run until the workload
# has had enough CPU (never for a fixed time).
CLK_TCK=$(getconf CLK_TCK)

# cpu_ms PID: CPU time (user + system, all threads) PID has used so far, in
# ms (/proc/PID/stat fields 14 and 15, in clock ticks); fails once it is gone
cpu_ms() {
	local s
	read -r s 2>/dev/null <"/proc/$1/stat" || return 1
	s=${s##*) }
	# shellcheck disable=SC2086
	set -- $s
	echo $(((${12} + ${13}) * 1000 / CLK_TCK))
}

# cpu_log PID FILE: in the background (BGPID), until PID is gone, appends
# "CPU-MS-BEFORE REAL-MS CPU-MS-AFTER" to FILE every 0.1 s: PID's CPU time
# read just before and just after the real clock
cpu_log() {
	start_bg bash -c "CLK_TCK=$CLK_TCK; $(declare -f cpu_ms)"'
		while a=$(cpu_ms "$1"); do
			t=${EPOCHREALTIME/./}; b=$(cpu_ms "$1") || break
			echo "$a $((t / 1000)) $b"; sleep 0.1
		done >>"$2"' _ "$1" "$2"
}

# cpu_within FILE FROM-MS TO-MS: the CPU time of cpu_log's FILE surely spent
# between those real times (ms): from the first reading at or after FROM to
# the last at or before TO (its CPU time read after the first time, before
# the last), so no more than the true amount; 0 if no two readings are in it
cpu_within() {
	awk -v f="$2" -v t="$3" '$2 >= f && $2 <= t { if (a == "") a = $3; b = $1 }
		END { d = (a == "" ? 0 : b - a); print (d > 0 ? d : 0) }' "$1"
}

# wait_cpu PID MS [DEADLINE-S]: waits until PID has used MS ms of CPU more
# than now (default deadline 120 s; fails if it is reached or PID is gone)
wait_cpu() {
	local c0 c end=$((SECONDS + ${3:-120}))
	c0=$(cpu_ms "$1") || return 1
	while c=$(cpu_ms "$1") && ((c - c0 < $2)); do
		((SECONDS >= end)) && return 1
		sleep 0.1
	done
	[[ -n "$c" ]]
}

# wait_log FILE REGEX [DEADLINE-S]: waits until FILE has a line matching REGEX
wait_log() {
	local end=$((SECONDS + ${3:-120}))
	until grep -Eq "$2" "$1" 2>/dev/null; do
		((SECONDS >= end)) && return 1
		sleep 0.05
	done
}

# samples_for CPU-MS [HZ]: the samples HZ (default 99) cpu-clock sampling
# takes of CPU-MS ms of one process's CPU time
samples_for() { echo $(((${1:-0} * ${2:-99} + 500) / 1000)); }

# enough_samples GOT CPU-MS [HZ]: GOT is no fewer than sampling at HZ takes
# of CPU-MS ms of CPU time (E samples), within its noise: on a shared CPU
# the workload runs in slices shorter than the period, each seen with
# probability its length / period, so the count's standard deviation is up
# to sqrt(E); GOT >= E - 4 sqrt(E) - 3 (3 for the CPU time's 10 ms ticks;
# 4 deviations: these checks run many times a day on loaded machines).
# A count this low means samples were lost or missed. (Alone on a CPU the
# workload is seen at every period: E exactly.) The caller makes sure the
# workload had enough CPU for the check to mean something.
enough_samples() {
	local want
	want=$(samples_for "$2" "${3:-99}")
	awk -v g="${1:-0}" -v e="$want" 'BEGIN { exit !(g >= e - 4 * sqrt(e) - 3) }'
}
# samples_floor CPU-MS [HZ]: the least count enough_samples takes, for messages
samples_floor() {
	awk -v e="$(samples_for "$1" "${2:-99}")" 'BEGIN { v = e - 4 * sqrt(e) - 3; printf "%d", v < 0 ? 0 : v + 0.999 }'
}
# be HEX: a grep -P pattern of msgpack's uint64 of the hex string HEX (0xcf +
# 8 bytes big-endian), e.g. a kernel symbol's address in a ksyms record
be() { echo "\\xcf$(echo "$1" | sed -E 's/(..)/\\x\1/g')"; }
# absent FILE BYTES-REGEX: FILE has no match of the grep -P pattern
absent() { ! LC_ALL=C grep -qaP "$2" "$1"; }
