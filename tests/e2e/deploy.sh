#!/usr/bin/env bash
# deploy/systemd: the units pass `systemd-analyze verify` (with ExecStart
# pointed at the binaries just built), the collector's bounding set is the
# documented one, and the symbolizer's unit gives it no capability at all.
source "$(dirname "$0")/lib.sh"

UNITS="$(cd "$(dirname "$0")/../../deploy/systemd" && pwd)"
if ! command -v systemd-analyze >/dev/null; then
	echo "SKIP: systemd-analyze is not installed"
	exit 77
fi
mkdir -p "$TMP/units"
for u in lowprof-collector.service lowprof-symbolizer.service; do
	sed "s#/usr/local/bin/#$BIN/#" "$UNITS/$u" >"$TMP/units/$u"
done
out=$(systemd-analyze verify "$TMP/units/lowprof-collector.service" \
	"$TMP/units/lowprof-symbolizer.service" 2>&1)
rc=$?
echo "$out"
check "systemd-analyze verify passes (exit $rc)" test "$rc" -eq 0
check "systemd-analyze verify has nothing to say about our units" \
	bash -c "! grep -q 'lowprof-' <<<\"\$1\"" _ "$out"

C="$UNITS/lowprof-collector.service"
S="$UNITS/lowprof-symbolizer.service"
check "collector: bounding set is BPF PERFMON SYS_PTRACE DAC_READ_SEARCH SYSLOG CHOWN SETPCAP" \
	grep -qx 'CapabilityBoundingSet=CAP_BPF CAP_PERFMON CAP_SYS_PTRACE CAP_DAC_READ_SEARCH CAP_SYSLOG CAP_CHOWN CAP_SETPCAP' "$C"
check "collector: no ambient capabilities" grep -qx 'AmbientCapabilities=' "$C"
check "collector: no network" grep -qx 'PrivateNetwork=yes' "$C"
check "symbolizer: dynamic user" grep -qx 'DynamicUser=yes' "$S"
check "symbolizer: empty bounding set" grep -qx 'CapabilityBoundingSet=' "$S"
check "symbolizer: no network" grep -qx 'PrivateNetwork=yes' "$S"
check "symbolizer: no_new_privs" grep -qx 'NoNewPrivileges=yes' "$S"
# every option the units pass exists in the binaries' --help
for opt in --ring --ring-owner -F; do
	check "collector --help documents $opt" bash -c "\"$BIN/lowprof-collector\" --help | grep -q -- '$opt'"
done
for opt in --ring --cache -o; do
	check "symbolizer --help documents $opt" bash -c "\"$BIN/lowprof-symbolizer\" --help | grep -q -- '$opt'"
done
finish
