#!/usr/bin/env bash
# Fresh machine to a full test run: installs the dependencies (with the test
# tools: go tool pprof, Chromium), builds into build/, runs every test.
# Needs root: the BPF and end-to-end tests load the real programs.
# LOWPROF_FUZZ_SECONDS (default 10) bounds each fuzz target's run; a second
# pass runs the tests again on an ASan+UBSan build.
set -euo pipefail
cd "$(dirname "$0")/.."

deploy/install-deps.sh --test
cmake -S . -B build -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	-DLOWPROF_FUZZ_SECONDS="${LOWPROF_FUZZ_SECONDS:-10}" >/dev/null
cmake --build build -j"$(nproc)"
ctest --test-dir build --output-on-failure --timeout 900 "$@"

# The same tests (fuzz targets aside: they are sanitized already) on a build
# with AddressSanitizer and UBSan. LOWPROF_SKIP_ASAN=1 skips this pass.
if [[ "${LOWPROF_SKIP_ASAN:-0}" != 1 ]]; then
	cmake -S . -B build-asan -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=Asan \
		-DLOWPROF_FUZZ=OFF >/dev/null
	cmake --build build-asan -j"$(nproc)"
	ctest --test-dir build-asan --output-on-failure --timeout 900 -L 'unit|bpf|e2e' "$@"
fi
