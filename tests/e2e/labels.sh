#!/usr/bin/env bash
# Labels and the cgroup filter, as a container runtime would lay cgroups
# out: the chain workload runs in a cgroup of the v2 hierarchy named like a
# Docker container's scope (docker-<64 hex>.scope) below a pod-like slice
# (kubepods-pod<UID>.slice), another one in a plain scope beside it.
#  - a whole-host record: the workload's samples carry pid, comm, exe (its
#    binary), cgroup (the path), container.id and k8s.pod.uid in go tool
#    pprof's tags; the other workload's carry its cgroup and no container id
#  - --cgroup naming the other scope: the container's workload is not
#    sampled at all, the other one is
#  - --cgroup naming the pod slice: its descendant (the container) is
#  - a --cgroup that does not exist is refused before anything starts
# The cgroups are the test's own (a unique name), removed at the end.
source "$(dirname "$0")/lib.sh"
require_root

ROOT=""
for d in /sys/fs/cgroup /sys/fs/cgroup/unified; do
	if [[ "$(stat -f -c %T "$d" 2>/dev/null)" == cgroup2fs ]]; then
		ROOT=$d
		break
	fi
done
if [[ -z "$ROOT" ]]; then
	echo "SKIP: no cgroup v2 hierarchy (/sys/fs/cgroup or /sys/fs/cgroup/unified)"
	exit 77
fi

CID=$(od -An -N32 -tx1 /dev/urandom | tr -d ' \n')
POD=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n' |
	sed 's/^\(.\{8\}\)\(.\{4\}\)\(.\{4\}\)\(.\{4\}\)\(.\{12\}\)$/\1_\2_\3_\4_\5/')
POD_UID=${POD//_/-}
TOP=lowprof-test-$$.slice
SLICE=$TOP/kubepods-pod$POD.slice
SCOPE=$SLICE/docker-$CID.scope
OTHER=$TOP/other-$$.scope
mkdir -p "$ROOT/$SCOPE" "$ROOT/$OTHER" || { echo "FAIL: cannot make cgroups under $ROOT"; exit 1; }
rm_cgroups() {
	cleanup
	rmdir "$ROOT/$SCOPE" "$ROOT/$SLICE" "$ROOT/$OTHER" "$ROOT/$TOP" 2>/dev/null
}
trap rm_cgroups EXIT

# start_in CGROUP CMD...: CMD in CGROUP (moved there before it execs)
start_in() {
	local cg=$1
	shift
	start_bg bash -c 'echo $$ > "$0/cgroup.procs" && exec "$@"' "$ROOT/$cg" "$@"
}
start_in "$SCOPE" "$WL/chain-fp" "$(scaled 60)"
WIN=$BGPID
start_in "$OTHER" "$WL/chain-fp" "$(scaled 60)"
WOUT=$BGPID
sleep 0.3
check "the workload is in the container's cgroup" grep -q "^0::/.*docker-$CID.scope\$" /proc/$WIN/cgroup

# tags of one pid in a profile: "key=value" lines (go tool pprof -tags, -tagfocus on its pid)
tags_of() { # tags_of PROFILE PID
	go tool pprof -tags -tagfocus="pid=$2" "$1" 2>/dev/null |
		awk '/^ [^ ].*: Total/ {k = $1; sub(/:$/, "", k); next}
		     /^ +[0-9.]+ \(/ {v = $0; sub(/^ +[0-9.]+ \( *[0-9.]+%\): /, "", v); print k "=" v}'
}
samples_of() { # samples_of PROFILE PID: the pid's samples
	go tool pprof -raw -tagfocus="pid=$2" "$1" 2>/dev/null |
		awk '/^Samples:/ {on = 1; next} on && /^ +[0-9]+ +[0-9]+:/ {s += $1} /^Locations/ {on = 0} END {print s + 0}'
}

# --- the whole host: labels
"$BIN/lowprof" record -d "$(scaled 3)" -o "$TMP/all" >"$TMP/all.out" 2>&1
check "lowprof record of the host exits 0" test $? = 0
T=$(tags_of "$TMP/all/cpu.pb.gz" "$WIN")
echo "$T"
check "the container's workload is labelled with its comm" grep -qx 'comm=chain-fp' <<<"$T"
check "... its executable" grep -qx "exe=$WL/chain-fp" <<<"$T"
check "... its cgroup path" grep -qx "cgroup=/$SCOPE" <<<"$T"
check "... the container id" grep -qx "container.id=$CID" <<<"$T"
check "... the pod UID" grep -qx "k8s.pod.uid=$POD_UID" <<<"$T"
T2=$(tags_of "$TMP/all/cpu.pb.gz" "$WOUT")
check "the other workload carries its own cgroup" grep -qx "cgroup=/$OTHER" <<<"$T2"
check "... and no container id" bash -c "! grep -q '^container.id=' <<<'$T2'"

# --- --cgroup: only processes in the named cgroup (or below it)
"$BIN/lowprof" record -d "$(scaled 3)" --cgroup "$OTHER" -o "$TMP/other" >"$TMP/other.out" 2>&1
check "lowprof record --cgroup $OTHER exits 0" test $? = 0
nin=$(samples_of "$TMP/other/cpu.pb.gz" "$WIN")
nout=$(samples_of "$TMP/other/cpu.pb.gz" "$WOUT")
check "with --cgroup naming another cgroup, the container's workload is not sampled (got $nin)" \
	test "$nin" = 0
check "... and the named cgroup's workload is (got $nout)" test "$nout" -ge 100
others=$(go tool pprof -tags "$TMP/other/cpu.pb.gz" 2>/dev/null | awk '/^ pid:/ {on = 1; next} /^ [^ ]/ {on = 0} on && NF' | wc -l)
check "... and nothing else (pids: $others)" test "$others" = 1
"$BIN/lowprof" record -d "$(scaled 3)" --cgroup "$ROOT/$SLICE" -o "$TMP/pod" >/dev/null 2>&1
nin=$(samples_of "$TMP/pod/cpu.pb.gz" "$WIN")
check "--cgroup naming the pod's slice (absolute) samples the container below it (got $nin)" \
	test "$nin" -ge 100
check "... and not the workload beside it" test "$(samples_of "$TMP/pod/cpu.pb.gz" "$WOUT")" = 0

# --- a cgroup that does not exist: refused before anything runs
"$BIN/lowprof" record -d 1 --cgroup "$TOP/nosuch" -o "$TMP/bad" >"$TMP/bad.out" 2>&1
rc=$?
cat "$TMP/bad.out"
check "a --cgroup that does not exist is refused (exit $rc)" test "$rc" = 1
check "... saying which and where it looked" grep -q "nosuch.*No such file or directory" "$TMP/bad.out"
check "... before anything started (no outputs)" test ! -e "$TMP/bad/cpu.pb.gz"
finish
