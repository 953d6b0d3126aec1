#!/usr/bin/env bash
# Installs the Debian packages lowprof needs to build and run (and, with
# --test, to run its whole test suite), and creates the system user the
# unprivileged side runs as. Idempotent; needs root.
set -euo pipefail

build_pkgs=(
	clang llvm libclang-rt-14-dev make cmake pkg-config binutils libc6-dev
	bpftool libbpf-dev libelf-dev libdw-dev zlib1g-dev libdeflate-dev
	libmsgpack-dev libprotobuf-c-dev protobuf-c-compiler
	libcap-dev libiberty-dev libseccomp-dev liburing-dev libsqlite3-dev libzstd-dev libssl-dev
	libcurl4-openssl-dev ca-certificates
	procps util-linux
)
# go tool pprof and headless Chromium check the outputs in the tests; gcc
# and g++ build the test workloads (their frame-pointer behaviour is the one
# users see); linux-perf is the peer the unwinding test compares against;
# bpftrace, jq and GNU time serve the benchmark (tests/bench/bench.sh), jq
# also tests/e2e/offcpu.sh (bpftool -j);
# libc6-dbg gives the tests a separate debug file found by build-id (libc's
# local symbols); python3-yaml reads the Kubernetes manifest in
# tests/e2e/deploy.sh; libfuse3-dev builds the hanging file system of
# tests/e2e/broker.sh; qemu-system-x86 (with virtiofsd), busybox-static,
# kmod (depmod) and xz-utils boot other kernels for tests/vm/run.sh;
# protoc decodes the exporter's OTLP requests, openssl makes the test CA,
# python3 runs the local receivers and curl scrapes /metrics (export.sh);
# nodejs is the JIT that writes a perf map (tests/e2e/jit.sh), installed
# only when no node is on PATH (a node of its own, e.g. from NodeSource,
# serves as well).
test_pkgs=(libcmocka-dev golang-go chromium gcc g++ linux-perf bpftrace jq time libc6-dbg python3-yaml
	protobuf-compiler openssl curl python3
	libfuse3-dev qemu-system-x86 busybox-static kmod xz-utils)

want=("${build_pkgs[@]}" libcmocka-dev)
if [[ "${1:-}" == "--test" ]]; then
	want+=("${test_pkgs[@]}")
	command -v node >/dev/null || want+=(nodejs)
elif [[ $# -gt 0 ]]; then
	echo "usage: $0 [--test]" >&2
	exit 2
fi

if [[ $(id -u) -ne 0 ]]; then
	echo "install-deps: run as root (apt-get install)" >&2
	exit 1
fi

# The symbolizer's user (lowprof record --user, lowprof-collector
# --ring-owner, the owner of /var/cache/lowprof): a system user of its own,
# never nobody, whom every daemon and container that wants "no one" shares.
# Its own group; no login shell; its home is /nonexistent, never created,
# so it owns no directory but the cache lowprof hands it. The same command
# is printed by lowprof when the user is missing (common/include/lowprof/user.h).
make_user() {
	if getent passwd lowprof >/dev/null; then
		echo "install-deps: user lowprof exists ($(getent passwd lowprof | cut -d: -f3))"
		return
	fi
	useradd --system --user-group --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin lowprof
	echo "install-deps: created the system user lowprof ($(id -u lowprof))"
}

missing=()
for p in "${want[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [[ ${#missing[@]} -eq 0 ]]; then
	echo "install-deps: all ${#want[@]} packages already installed"
else
	echo "install-deps: installing ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
make_user
