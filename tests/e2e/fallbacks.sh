#!/usr/bin/env bash
# Each fallback for a kernel feature lowprof can do without, forced on this
# kernel (LOWPROF_FALLBACKS, see collector/kfeatures.h), gives the same
# profile: the summary names it once, on-CPU stacks reach the spinning
# function, off-CPU stacks reach the sleeping one through its syscall
# (whose user registers come from the kernel stack without
# bpf_task_pt_regs), and a syscall-bound process's samples taken in the
# kernel have both its kernel and its user frames. The real kernels are in
# tests/vm/; this runs the fallback paths on the newest one too.
source "$(dirname "$0")/lib.sh"
require_root

"$WL/secrets" "$TMP/secrets" 1 0 "$(scaled 300)" &
WPID=$!
KIDS+=("$WPID")
start_bg dd if=/dev/zero of=/dev/null bs=64 count=20000000000
DD=$BGPID
sleep 0.3

for fb in none no-task-btf no-task-storage no-task-pt-regs no-switch-state no-procmap-query \
	no-task-work all; do
	env=()
	[[ $fb != none ]] && env=(LOWPROF_FALLBACKS=$fb)
	env "${env[@]}" "$BIN/lowprof" record -d 2 -F 499 -p "$WPID" -p "$DD" -o "$TMP/$fb" \
		--off-cpu --off-cpu-period-us 1000 --capture "$TMP/$fb.lpcap" >"$TMP/$fb.txt" 2>&1
	check "$fb: record exits 0" test $? -eq 0
	# the capture replays to the same stacks
	"$BIN/lowprof" replay "$TMP/$fb.lpcap" -o "$TMP/$fb-replay" >/dev/null 2>&1
	check "$fb: the replay's cpu.folded equals the live one" \
		cmp -s "$TMP/$fb/cpu.folded" "$TMP/$fb-replay/cpu.folded"
	if [[ $fb == no-procmap-query || $fb == all ]]; then
		"$BIN/lowprof" capture-info "$TMP/$fb.lpcap" >"$TMP/$fb.info" 2>&1
		check "$fb: the capture's build-ids are the live symbolizer's notes" \
			grep -Eq '^binaries .* with a build-id \([1-9][0-9]* noted by the live symbolizer' \
			"$TMP/$fb.info"
	fi
	if [[ $fb == none ]]; then
		check "$fb: no fallback named" bash -c "! grep -q '^  fallback' '$TMP/$fb.txt'"
	else
		# without task BTF pointers, neither task storage nor
		# bpf_task_pt_regs can be used; without task storage, no task
		# work (on a kernel that has it)
		tw=0
		grep -q 'bpf_task_work_schedule_resume_impl' /proc/kallsyms && tw=1
		case $fb in
		all) want=$((5 + tw)) ;; no-task-btf) want=$((3 + tw)) ;;
		no-task-storage) want=$((1 + tw)) ;; *) want=1 ;;
		esac
		n=$(grep -c '^  fallback' "$TMP/$fb.txt")
		check "$fb: the summary names $want fallback(s) ($n)" test "$n" -eq "$want"
	fi
	pct=$(share "$TMP/$fb/cpu.folded" '^secrets;.*;spin(;[^;]+_\[k\])*$')
	check "$fb: the workload's on-CPU stacks reach spin ($pct% of all)" test "$pct" -ge 30
	# of dd's samples taken in the kernel, those whose user stack reached its start
	pct=$(awk '/^dd;.*_\[k\] [0-9]+$/ { t += $NF; if (/;__libc_start_call_main;/) h += $NF }
		END { print t ? int(100 * h / t) : 0 }' "$TMP/$fb/cpu.folded")
	check "$fb: dd's samples in the kernel have its whole user stack under the kernel frames ($pct%)" \
		test "$pct" -ge 90
	pct=$(share "$TMP/$fb/offcpu.folded" '^secrets;.*;sleeper;.*nanosleep.*_\[k\]$')
	check "$fb: off-CPU stacks reach sleeper and its nanosleep ($pct%)" test "$pct" -ge 80
done
kill "$WPID" "$DD" 2>/dev/null
left=$(leftovers)
check "nothing left behind: '$left'" test -z "$left"
finish
