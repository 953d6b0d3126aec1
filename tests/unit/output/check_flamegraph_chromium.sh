#!/bin/sh
# SPDX-License-Identifier: MIT
# Opens the sample flame graph written by symb_write_flamegraph in headless
# Chromium from file:// with networking off, lets its script run, and checks
# the rendered DOM: the page reports "ready" and lists the leaf function.
# usage: check_flamegraph_chromium.sh WRITE_SAMPLE WORKDIR  (exit 77: no chromium)
set -eu

writer=$1
work=$2

browser=
for b in chromium chromium-browser google-chrome; do
	if command -v "$b" >/dev/null 2>&1; then
		browser=$b
		break
	fi
done
if [ -z "$browser" ]; then
	echo "SKIP: chromium is not installed, cannot render the flame graph"
	exit 77
fi

fail() {
	echo "FAIL: $*"
	[ -f "$work/chromium.log" ] && tail -n 20 "$work/chromium.log"
	exit 1
}

rm -rf "$work"
mkdir -p "$work/profile-dir"
"$writer" "$work"

# --no-sandbox: tests may run as root, where the sandbox refuses to start.
timeout 120 "$browser" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
	--disable-background-networking --disable-component-update --disable-sync \
	--user-data-dir="$work/profile-dir" --dump-dom "file://$work/profile.html" \
	>"$work/dom.html" 2>"$work/chromium.log" || fail "chromium failed"

state=$(grep -o 'data-fg-state="[^"]*"' "$work/dom.html" || true)
[ "$state" = 'data-fg-state="ready"' ] || fail "page script did not finish: ${state:-no state}"
# The top-functions table is built by the script, so this proves it ran on
# the embedded data; the leaf has the most self time and comes first.
grep -q '<tbody id="top"><tr><td class="num">800.00 ms</td><td class="num">80.00%</td>.*<td class="fn">leaf_compute</td></tr>' "$work/dom.html" ||
	fail "leaf_compute is not the first row of the rendered top-functions table"
grep -q '<td class="fn">do_syscall_64</td>' "$work/dom.html" || fail "kernel frame missing"
grep -q '<h1 id="title">lowprof cpu: test host</h1>' "$work/dom.html" || fail "title not rendered"
echo "PASS"
