# Sourced inside the test VM by the job script that tests/vm/run.sh writes:
# runs tests the way ctest would (working directory, environment, timeout,
# skip code) and reports each one on stdout (the second serial port) between
# markers the host reads:
#   @@LPVM begin NAME
#   ...the test's output...
#   @@LPVM end NAME pass|fail|skip|timeout EXIT-STATUS SECONDS
# LPVM_TIME_SCALE (set by run.sh: larger under TCG) multiplies each test's
# timeout; the tests see it as LOWPROF_TEST_TIME_SCALE.

LPVM_TIME_SCALE=${LPVM_TIME_SCALE:-1}
export LOWPROF_TEST_TIME_SCALE=$LPVM_TIME_SCALE

lpvm_now() { cut -d' ' -f1 /proc/uptime; }

# lpvm_info: what the kernel offers lowprof, once, before the tests
lpvm_info() {
	echo "kernel $(uname -r), $(nproc) CPUs online, $(awk '/MemTotal/ { print int($2 / 1024) " MiB" }' /proc/meminfo)"
	if [[ -e /sys/kernel/btf/vmlinux ]]; then
		echo "BTF: /sys/kernel/btf/vmlinux ($(stat -c %s /sys/kernel/btf/vmlinux) bytes)"
	else
		echo "BTF: MISSING (/sys/kernel/btf/vmlinux does not exist): CO-RE programs cannot load"
	fi
	echo "mounts: $(awk '$3 ~ /^(tracefs|debugfs|bpf|cgroup2|virtiofs|overlay)$/ {
		printf "%s%s %s", n++ ? ", " : "", $3, $2 }' /proc/mounts)"
}

# lpvm_test NAME TIMEOUT SKIP-CODE WORKDIR [VAR=VALUE...] -- COMMAND...
lpvm_test() {
	local name=$1 tmo=$2 skip=$3 wd=$4
	shift 4
	local envs=()
	while [[ $# -gt 0 && $1 != -- ]]; do
		envs+=("$1")
		shift
	done
	shift
	local t0 t1 rc status
	tmo=$(awk -v t="$tmo" -v s="$LPVM_TIME_SCALE" 'BEGIN { printf "%d", t * s + 0.5 }')
	echo "@@LPVM begin $name"
	echo "(timeout ${tmo} s, in $wd)"
	t0=$(lpvm_now)
	# timeout(1) runs the test in its own process group and kills the whole
	# group when time is up
	(cd "$wd" && exec timeout -k 10 "$tmo" env "${envs[@]}" "$@") </dev/null 2>&1
	rc=$?
	t1=$(lpvm_now)
	if [[ $rc -eq 0 ]]; then
		status=pass
	elif [[ $rc -eq $skip ]]; then
		status=skip
	elif [[ $rc -eq 124 || $rc -eq 137 ]]; then
		status=timeout
	else
		status=fail
	fi
	echo "@@LPVM end $name $status $rc $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')"
}
