#!/usr/bin/env bash
# Fresh machine to a full test run: installs the dependencies (with the test
# tools: go tool pprof, Chromium), builds into build/, runs every test.
# Needs root: the BPF and end-to-end tests load the real programs.
# LOWPROF_FUZZ_SECONDS (default 10) bounds each fuzz target's run; a second
# pass runs the tests again on an ASan+UBSan build. The first pass ends
# with the VM tests (label vm: tests/vm/run.sh for each Debian kernel, a few
# minutes each, two at a time); LOWPROF_SKIP_VM=1 leaves them out.
set -euo pipefail
cd "$(dirname "$0")/.."

deploy/install-deps.sh --test
cmake -S . -B build -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	-DLOWPROF_FUZZ_SECONDS="${LOWPROF_FUZZ_SECONDS:-10}" >/dev/null
cmake --build build -j"$(nproc)"

# A whole-host lowprof record runs beside the tests, as a deployed one would:
# the tests touch only what they started, so it must come through untouched
# (still running at the end, then stopping cleanly with its outputs).
# LOWPROF_NO_BYSTANDER=1 leaves it out.
bystander=""
if [[ "${LOWPROF_NO_BYSTANDER:-0}" != 1 ]]; then
	bdir=$(mktemp -d /tmp/lowprof-bystander.XXXXXX)
	build/lowprof record -o "$bdir/out" >"$bdir/log" 2>&1 &
	bystander=$!
fi
rc=0
ctest --test-dir build --output-on-failure --timeout 900 -LE vm "$@" || rc=$?
# the VM tests after the others, two at a time where there are two CPUs
# (tests/vm/CMakeLists.txt): ~12 minutes instead of ~23
if [[ "${LOWPROF_SKIP_VM:-0}" != 1 ]]; then
	ctest --test-dir build --output-on-failure --timeout 900 -L vm \
		-j "$(($(nproc) >= 2 ? 2 : 1))" "$@" || rc=$?
fi
if [[ -n "$bystander" ]]; then
	if ! kill -0 "$bystander" 2>/dev/null; then
		echo "FAIL: the lowprof record running beside the tests was stopped by them:" >&2
		cat "$bdir/log" >&2
		rc=1
	else
		kill -INT "$bystander"
		brc=0
		wait "$bystander" || brc=$?
		if [[ $brc -ne 0 || ! -s "$bdir/out/cpu.pb.gz" ]]; then
			echo "FAIL: the lowprof record running beside the tests exited $brc:" >&2
			cat "$bdir/log" >&2
			rc=1
		else
			echo "the lowprof record beside the tests came through: $(grep -m1 -i 'samples' "$bdir/log")"
		fi
	fi
	rm -rf "$bdir"
fi
[[ $rc -eq 0 ]] || exit "$rc"

# The same tests (fuzz targets aside: they are sanitized already) on a build
# with AddressSanitizer and UBSan. LOWPROF_SKIP_ASAN=1 skips this pass.
if [[ "${LOWPROF_SKIP_ASAN:-0}" != 1 ]]; then
	cmake -S . -B build-asan -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=Asan \
		-DLOWPROF_FUZZ=OFF >/dev/null
	cmake --build build-asan -j"$(nproc)"
	ctest --test-dir build-asan --output-on-failure --timeout 900 -L 'unit|bpf|e2e' "$@"
fi
