#!/usr/bin/env bash
# Fresh machine to first profile: installs the dependencies, builds into
# build/, and records a 10-second whole-host profile into lowprof-out/.
set -euo pipefail
cd "$(dirname "$0")/.."

deploy/install-deps.sh
cmake -S . -B build -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$(nproc)"
build/lowprof record -d 10 -o lowprof-out
echo
echo "Open them with:"
echo "  go tool pprof -top lowprof-out/cpu.pb.gz     (or -http=:8080)"
echo "  less lowprof-out/cpu.folded"
echo "  a browser on file://$PWD/lowprof-out/cpu.html"
