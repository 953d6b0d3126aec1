# Sourced by the job's boot.sh (tests/vm/run.sh --systemd), which the
# guest's init runs in the guest's root just before it execs
# /lib/systemd/systemd. The root is the host's, read-only, with overlays in
# memory on /etc, /usr/local, /var, /root and /home (lpvm.rw); this makes
# it a machine that has just had lowprof installed the way deploy/systemd
# says:
#   - the binaries in /usr/local/bin, where the units run them;
#   - the units in /etc/systemd/system and the sysusers.d file as
#     /etc/sysusers.d/lowprof.conf, byte for byte as deploy/ ships them;
#   - no lowprof user: systemd-sysusers.service makes it at boot from that
#     file (the host's user, made by install-deps.sh, would hide a broken
#     one);
#   - a default target, lpvm.target, that holds only basic.target and
#     lpvm-test.service, which runs job.sh (tests/vm/systemd-check.sh) with
#     its output on the report port and powers off when it ends;
#   - the host's own units that would only slow the emulated boot down
#     (timers, time sync) masked.
# Expects LPVM_SRC and LPVM_BUILD (the host's source and build trees).
set -euo pipefail
say() { echo "lpvm-systemd: $*"; }

for d in /etc /usr/local; do
	[[ "$(stat -f -c %T $d)" == overlayfs ]] || {
		say "$d has no overlay of its own (lpvm.rw=etc,usr/local)"
		exit 1
	}
done
mkdir -p /usr/local/bin
install -m 755 "$LPVM_BUILD/lowprof-collector" "$LPVM_BUILD/lowprof-symbolizer" \
	"$LPVM_BUILD/lowprof-exporter" /usr/local/bin/
ETC=/etc/systemd/system
mkdir -p "$ETC" /etc/sysusers.d
install -m 644 "$LPVM_SRC/deploy/systemd/lowprof-collector.service" \
	"$LPVM_SRC/deploy/systemd/lowprof-symbolizer@.service" \
	"$LPVM_SRC/deploy/systemd/lowprof-exporter.service" "$ETC/"
install -m 644 "$LPVM_SRC/deploy/systemd/lowprof.sysusers.conf" /etc/sysusers.d/lowprof.conf
# no drop-in may change them
rm -rf "$ETC"/lowprof-*.service.d /run/systemd/system/lowprof-*

for f in /etc/passwd /etc/group /etc/shadow /etc/gshadow; do
	[[ -f $f ]] && sed -i '/^lowprof:/d' "$f"
done
# systemd-sysusers.service runs when /etc "needs an update"
# (ConditionNeedsUpdate=|/etc): when /etc/.updated is missing or older
# than /usr, as on a machine's first boot or after a package update
rm -f /etc/.updated

cat >"$ETC/lpvm.target" <<-'EOF'
	[Unit]
	Description=lowprof's systemd test (tests/vm/run.sh --systemd)
	# not ordered after what it wants (a target's default): its job, and
	# the timeout below, end at basic.target, not with the test, which
	# has its own timeout (tests/vm/run.sh)
	DefaultDependencies=no
	Requires=basic.target
	After=basic.target
	Wants=lpvm-test.service
	AllowIsolate=yes
	# a boot that hangs before basic.target ends the VM
	JobTimeoutSec=300
	JobTimeoutAction=poweroff-force
EOF
cat >"$ETC/lpvm-test.service" <<-'EOF'
	[Unit]
	Description=lowprof's systemd test: tests/vm/systemd-check.sh
	After=basic.target
	# (also keeps them loaded once stopped: their exit status stays to see)
	After=lowprof-collector.service lowprof-symbolizer@0.service lowprof-symbolizer@1.service lowprof-exporter.service
	SuccessAction=poweroff-force
	FailureAction=poweroff-force

	[Service]
	Type=oneshot
	ExecStart=/bin/bash /run/vm/job/job.sh
	StandardOutput=file:/dev/ttyS1
	StandardError=inherit
	Environment=HOME=/root
EOF
ln -sfn lpvm.target "$ETC/default.target"
for u in timers.target systemd-timesyncd.service systemd-pstore.service; do
	ln -sfn /dev/null "$ETC/$u"
done
say "lowprof's units, binaries and lowprof.conf installed; booting systemd to lpvm.target"
