#!/usr/bin/env bash
# Runs lowprof's kernel-dependent tests in a VM that boots a Debian cloud
# kernel, against the binaries built on this host.
#
#   tests/vm/run.sh SERIES                  the tests (default: the BPF tests and
#                                           the core end-to-end tests)
#   tests/vm/run.sh SERIES -- COMMAND...    one command in the guest, its output
#                                           here, its exit status ours
#   tests/vm/run.sh SERIES --shell          a shell on the guest's console
#   tests/vm/run.sh SERIES --systemd        deploy/systemd's units under systemd
#                                           as PID 1 (tests/vm/systemd-check.sh)
#
# SERIES is a kernel series: 5.10 (bullseye), 6.1 (bookworm), 6.12
# (bookworm-backports), or any other series of a linux-image-*-cloud-amd64
# package in those suites; the newest version of the series is used.
#
# How: the kernel package is fetched with apt from the Debian archive into
# LOWPROF_VM_CACHE (default /var/cache/lowprof-vm) through a private apt
# configuration (its own sources, lists and cache; the host's apt is not
# touched), and unpacked there. An initramfs (busybox-static, the modules
# this kernel needs that it does not build in, tests/vm/init) mounts the
# host's root read-only over virtiofs (the cloud kernels have no 9p), with
# tmpfs on /tmp /run /var/tmp /dev/shm and overlays in memory on /var /root
# /home (lowprof's /var/cache/lowprof and /var/lib/lowprof start empty), so
# the guest runs the host's tools and the build directory unchanged and
# writes only to its own memory. QEMU runs with KVM where a
# probe guest comes up under it, else under TCG. The tests run as ctest
# defines them; their output comes back on a second serial port.
# With --systemd, /etc and /usr/local get overlays too,
# tests/vm/systemd-boot.sh installs the binaries and the units as deploy/
# ships them and a unit that runs the check, and the guest's init then
# becomes /lib/systemd/systemd, which boots to that unit and powers off
# when it ends.
#
# Environment:
#   LOWPROF_VM_TESTS    ctest -R regex of the tests to run (default: those
#                       of tests/bpf, e2e chain, offcpu, capture, errors,
#                       secrets, kaslr, labels)
#   LOWPROF_VM_BUILD    build directory (default: build/ of this checkout)
#   LOWPROF_VM_CACHE    cache directory (default /var/cache/lowprof-vm)
#   LOWPROF_VM_ACCEL    auto (default), kvm or tcg
#   LOWPROF_VM_TIMEOUT  seconds before the VM is killed (default 1500; 600 with
#                       --, 800 with --systemd)
#   LOWPROF_VM_MEM      guest memory in MiB (default 3584)
#   LOWPROF_VM_CPUS     guest CPUs (default 2)
#   LOWPROF_VM_MIRROR   Debian mirror (default http://deb.debian.org/debian)
#   LOWPROF_VM_APPEND   more kernel command line
#   LOWPROF_VM_TIME_SCALE  under TCG (default 3): multiplies the tests'
#                       timeouts; the tests see it as LOWPROF_TEST_TIME_SCALE
#   LOWPROF_VM_OVERLAY  1: the guest's whole root is one writable overlay on
#                       the host's, as in a container (default: the host's
#                       root read-only as it is, overlays on /var /root /home)
#   LOWPROF_*           other LOWPROF_ variables are passed to the guest
# Logs of the last run: BUILD/vm-logs/SERIES/ (console.log: the kernel's
# console; out.log: the tests' output). Needs root (a private mount
# namespace for the read-only share). Exit status: 0 if every test passed or
# was skipped, 1 if one failed or the guest did not finish, 77 if the VM
# cannot run here (no QEMU, not root), 2 for a usage error.
set -euo pipefail

SRC=$(cd "$(dirname "$0")/../.." && pwd)
usage() {
	sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2
	exit 2
}

SERIES=""
MODE=tests
CMD=()
while [[ $# -gt 0 ]]; do
	case "$1" in
	--shell) MODE=shell ;;
	--systemd) MODE=systemd ;;
	--)
		shift
		MODE=cmd
		CMD=("$@")
		break
		;;
	-h | --help) usage ;;
	-*) echo "run.sh: unknown option $1" >&2; usage ;;
	*)
		[[ -z "$SERIES" ]] || usage
		SERIES=$1
		;;
	esac
	shift
done
[[ "$SERIES" =~ ^[0-9]+\.[0-9]+$ ]] || usage
[[ $MODE != cmd || ${#CMD[@]} -gt 0 ]] || usage

BUILD=$(realpath -m "${LOWPROF_VM_BUILD:-$SRC/build}")
CACHE=${LOWPROF_VM_CACHE:-/var/cache/lowprof-vm}
ACCEL=${LOWPROF_VM_ACCEL:-auto}
MEM=${LOWPROF_VM_MEM:-3584}
CPUS=${LOWPROF_VM_CPUS:-2}
MIRROR=${LOWPROF_VM_MIRROR:-http://deb.debian.org/debian}
TESTS=${LOWPROF_VM_TESTS:-'^(test_bpf_.*|e2e_(chain|offcpu|capture|errors|secrets|kaslr|labels))$'}
if [[ $MODE == cmd ]]; then
	TIMEOUT=${LOWPROF_VM_TIMEOUT:-600}
elif [[ $MODE == systemd ]]; then
	TIMEOUT=${LOWPROF_VM_TIMEOUT:-800}
else
	TIMEOUT=${LOWPROF_VM_TIMEOUT:-1500}
fi
VIRTIOFSD=/usr/lib/qemu/virtiofsd
# the modules the guest loads if the kernel does not build them in
MODULES=(virtio_pci virtiofs overlay)

log() { echo "vm $SERIES: $*" >&2; }
die() {
	log "error: $*"
	exit 1
}
skip() {
	log "SKIP: $*"
	exit 77
}

[[ $(id -u) -eq 0 ]] || skip "needs root (a private mount namespace shares / read-only)"
for t in qemu-system-x86_64 "$VIRTIOFSD" busybox depmod modprobe dpkg-deb apt-get jq unshare flock setpriv; do
	command -v "$t" >/dev/null || skip "$t is missing: deploy/install-deps.sh --test installs it"
done
[[ $MODE == shell || -x "$BUILD/lowprof" ]] || die "no $BUILD/lowprof: build first (cmake --build build)"
if [[ $MODE == systemd ]]; then
	[[ -x /lib/systemd/systemd ]] || skip "no /lib/systemd/systemd on this host to boot the guest with"
	for b in lowprof-collector lowprof-symbolizer tests/workloads/chain-fp; do
		[[ -x "$BUILD/$b" ]] || die "no $BUILD/$b: build first (cmake --build build)"
	done
fi

# ---- everything this run starts is stopped and removed on every exit path
JOB=""
QPID=""
VPID=""
cleanup() {
	local p i
	trap - EXIT INT TERM HUP
	for p in $QPID $VPID; do kill -TERM "$p" 2>/dev/null || true; done
	for i in $(seq 30); do
		p=""
		for q in $QPID $VPID; do kill -0 "$q" 2>/dev/null && p=1; done
		[[ -z "$p" ]] && break
		sleep 0.1
	done
	for p in $QPID $VPID; do kill -KILL "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	if [[ -n "$JOB" ]]; then
		save_logs
		rm -rf "$JOB"
	fi
}
# the guest's console and output, kept in BUILD/vm-logs/SERIES
save_logs() {
	[[ -n "${LOGS:-}" && -d "$LOGS" ]] || return 0
	cp "$JOB/vm.console" "$LOGS/console.log" 2>/dev/null || true
	cp "$JOB/vm.out" "$LOGS/out.log" 2>/dev/null || true
	if [[ -s "$JOB/virtiofsd.log" ]]; then cp "$JOB/virtiofsd.log" "$LOGS/"; fi
}
trap cleanup EXIT
[[ $MODE != shell ]] || exec 7<&0 # the terminal, for the guest's console
trap 'log "interrupted"; exit 130' INT
trap 'log "terminated"; exit 143' TERM
trap 'log "hung up"; exit 129' HUP

mkdir -p "$CACHE"/{debs,kernels,apt}
exec 9>"$CACHE/lock"
flock 9

# ---- 1. the kernel package, through a private apt configuration
APTDIR=$CACHE/apt
apt_setup() {
	mkdir -p "$APTDIR"/etc/{apt.conf.d,preferences.d,trusted.gpg.d} "$APTDIR"/state/lists/partial \
		"$APTDIR"/cache/archives/partial
	local key=/usr/share/keyrings/debian-archive-keyring.gpg s
	: >"$APTDIR/etc/sources.list.new"
	for s in bullseye bookworm bookworm-backports; do
		echo "deb [signed-by=$key] $MIRROR $s main" >>"$APTDIR/etc/sources.list.new"
	done
	mv "$APTDIR/etc/sources.list.new" "$APTDIR/etc/sources.list"
	# APT_CONFIG is read before the configuration directories, so pointing
	# those here leaves out the host's apt.conf.d (its hooks, pins, its
	# Default-Release); only its proxy settings are carried over
	{
		cat <<-EOF
			Dir::Etc "$APTDIR/etc/";
			Dir::Etc::main "/dev/null";
			Dir::Etc::parts "apt.conf.d";
			Dir::Etc::sourcelist "sources.list";
			Dir::Etc::sourceparts "-";
			Dir::Etc::preferences "/dev/null";
			Dir::Etc::preferencesparts "preferences.d";
			Dir::State "$APTDIR/state/";
			Dir::State::status "/dev/null";
			Dir::Cache "$APTDIR/cache/";
			Acquire::Languages "none";
			Acquire::GzipIndexes "true";
			APT::Architectures { "amd64"; };
			APT::Sandbox::User "root";
		EOF
		apt-config dump 2>/dev/null | grep -E '^Acquire::(https?|ftp)::Proxy' || true
	} >"$APTDIR/apt.conf.new"
	mv "$APTDIR/apt.conf.new" "$APTDIR/apt.conf"
}
papt() { APT_CONFIG=$APTDIR/apt.conf "$@"; }
apt_refresh() {
	log "apt-get update (private lists in $APTDIR)"
	papt apt-get update -qq >"$APTDIR/update.log" 2>&1 || {
		cat "$APTDIR/update.log" >&2
		return 1
	}
	touch "$APTDIR/updated"
}
# newest_pkg: "PACKAGE VERSION" of the newest linux-image-SERIES.*-cloud-amd64
newest_pkg() {
	local names best="" bestv="" n v
	names=$(papt apt-cache pkgnames linux-image- 2>/dev/null |
		grep -E "^linux-image-${SERIES//./\\.}\.[0-9].*-cloud-amd64$" || true)
	[[ -n "$names" ]] || return 1
	# shellcheck disable=SC2086
	while read -r n v; do
		[[ $v == "$SERIES".* ]] || continue
		if [[ -z "$bestv" ]] || dpkg --compare-versions "$v" gt "$bestv"; then
			best=$n
			bestv=$v
		fi
	done < <(papt apt-cache madison $names 2>/dev/null | awk -F' *[|] *' '{ gsub(/ /, "", $1); print $1, $2 }')
	[[ -n "$best" ]] && echo "$best $bestv"
}

apt_setup
refreshed=0
if [[ -z $(find "$APTDIR/updated" -mmin -1440 2>/dev/null) ]]; then
	apt_refresh && refreshed=1 || log "warning: apt-get update failed; using the lists and packages cached"
fi
if ! pv=$(newest_pkg) && [[ $refreshed == 0 ]]; then
	apt_refresh && refreshed=1
	pv=$(newest_pkg) || true
fi
[[ -n "${pv:-}" ]] || die "no linux-image-$SERIES.*-cloud-amd64 package in bullseye, bookworm or bookworm-backports"
read -r PKG VER <<<"$pv"
DEB=$(ls "$CACHE/debs/${PKG}_${VER//:/%3a}_amd64.deb" 2>/dev/null || true)
if [[ -z "$DEB" ]]; then
	log "fetching $PKG $VER"
	get() { (cd "$CACHE/debs" && papt apt-get download -qq "$PKG=$VER" >"$APTDIR/download.log" 2>&1); }
	if ! get; then
		[[ $refreshed == 1 ]] || { apt_refresh && refreshed=1; }
		get || {
			cat "$APTDIR/download.log" >&2
			die "cannot download $PKG $VER"
		}
	fi
	DEB=$(ls "$CACHE/debs/${PKG}_"*"_amd64.deb" | grep -F "_${VER//:/%3a}_" | head -1)
	# older packages of the same series are of no more use
	for old in "$CACHE/debs/linux-image-$SERIES".*-cloud-amd64_*.deb; do
		[[ "$old" == "$DEB" ]] || rm -f "$old"
	done
fi

# ---- 2. the kernel, its modules and the initramfs
KDIR=$CACHE/kernels/$VER
if [[ ! -f "$KDIR/vmlinuz" ]]; then
	log "unpacking $(basename "$DEB")"
	rm -rf "$KDIR" "$KDIR.tmp"
	mkdir -p "$KDIR.tmp/x"
	dpkg-deb -x "$DEB" "$KDIR.tmp/x"
	mdir=$(find "$KDIR.tmp/x" -maxdepth 3 -type d -path '*/lib/modules' | head -1)
	kver=$(ls "$mdir" | head -1)
	[[ -n "$kver" ]] || die "no lib/modules/VERSION in $DEB"
	cp "$KDIR.tmp/x/boot/vmlinuz-$kver" "$KDIR.tmp/vmlinuz"
	cp "$KDIR.tmp/x/boot/config-$kver" "$KDIR.tmp/config"
	echo "$kver" >"$KDIR.tmp/kver"
	# the modules wanted and those they depend on (modprobe over the whole
	# package's tree), uncompressed: busybox's modprobe need not unpack them
	depmod -b "$KDIR.tmp/x" "$kver"
	mkdir -p "$KDIR.tmp/modules/lib/modules/$kver"
	: >"$KDIR.tmp/modules.list"
	builtin=()
	for m in "${MODULES[@]}"; do
		deps=$(modprobe -d "$KDIR.tmp/x" -S "$kver" --show-depends "$m") || die "$m: not in $PKG"
		if grep -q '^builtin ' <<<"$deps"; then
			builtin+=("$m")
			continue
		fi
		echo "$m" >>"$KDIR.tmp/modules.list"
		while read -r _ f _; do
			rel=${f#"$mdir/$kver/"}
			dst="$KDIR.tmp/modules/lib/modules/$kver/${rel%.xz}"
			dst=${dst%.zst}
			mkdir -p "$(dirname "$dst")"
			case "$f" in
			*.xz) xz -dc "$f" >"$dst" ;;
			*.zst) zstd -qdc "$f" >"$dst" ;;
			*) cp "$f" "$dst" ;;
			esac
		done < <(grep '^insmod ' <<<"$deps")
	done
	for f in modules.builtin modules.builtin.modinfo modules.order; do
		[[ -f "$mdir/$kver/$f" ]] && cp "$mdir/$kver/$f" "$KDIR.tmp/modules/lib/modules/$kver/"
	done
	depmod -b "$KDIR.tmp/modules" "$kver"
	echo "$PKG $VER" >"$KDIR.tmp/package"
	rm -rf "$KDIR.tmp/x"
	mv "$KDIR.tmp" "$KDIR"
	log "kernel $kver: the guest loads $(tr '\n' ' ' <"$KDIR/modules.list" | sed 's/ $//;s/^$/no module/')$([[ ${#builtin[@]} -gt 0 ]] && echo "; built in: ${builtin[*]}")"
	# other versions of this series are of no more use
	for old in "$CACHE/kernels/$SERIES".*; do
		[[ "$old" == "$KDIR" ]] || rm -rf "$old"
	done
fi
KVER=$(cat "$KDIR/kver")
# rebuilt whenever the init script, busybox or the module set change
ihash=$( (cat "$SRC/tests/vm/init" /bin/busybox "$KDIR/modules.list") | sha256sum | cut -c1-16)
INITRD=$KDIR/initrd-$ihash.img
if [[ ! -f "$INITRD" ]]; then
	ir=$(mktemp -d "$KDIR/initrd.XXXXXX")
	mkdir -p "$ir"/{bin,dev,proc,sys,lib}
	cp /bin/busybox "$ir/bin/busybox"
	for a in $(busybox --list); do
		[[ $a == busybox ]] || ln -s busybox "$ir/bin/$a"
	done
	ln -s bin "$ir/sbin"
	mknod -m 600 "$ir/dev/console" c 5 1
	cp -a "$KDIR/modules/lib/modules" "$ir/lib/"
	cp "$KDIR/modules.list" "$ir/modules.list"
	install -m 755 "$SRC/tests/vm/init" "$ir/init"
	(cd "$ir" && find . | busybox cpio -o -H newc 2>/dev/null) | gzip -1 >"$INITRD.tmp"
	rm -rf "$ir" "$KDIR"/initrd-*.img
	mv "$INITRD.tmp" "$INITRD"
fi
flock -u 9

# ---- 3. the guest
# what a run killed outright (SIGKILL) left: its job directory
for d in /tmp/lowprof-vm.*; do
	[[ -f "$d/pid" ]] || continue
	read -r p _ <"$d/pid" || continue
	[[ "$(cat "/proc/$p/comm" 2>/dev/null)" == bash ]] && continue
	rm -rf "$d"
done
JOB=$(mktemp -d /tmp/lowprof-vm.XXXXXX)
chmod 755 "$JOB"
echo "$$" >"$JOB/pid"
LOGS=$BUILD/vm-logs/$SERIES
[[ $MODE == systemd ]] && LOGS+=-systemd
if [[ $MODE == shell ]]; then
	LOGS=""
else
	rm -rf "$LOGS"
	mkdir -p "$LOGS"
fi

# qemu_start ACCEL CMDLINE-EXTRA LOG-PREFIX: QEMU in the background, pid in QPID
qemu_start() {
	local accel=$1 extra=$2 pre=$3 serial cpu=host
	# TCG: "max" less 5-level paging and cmpxchg16b, whose emulation by
	# QEMU 7.2's multi-threaded TCG corrupts EFLAGS (random early oopses);
	# and one host thread for all vCPUs: multi-threaded TCG also let a
	# vCPU run a kernel text site another one was patching (a tracepoint's
	# static branch, flipped at every attach of sched_switch) and panic in
	# __schedule. LOWPROF_VM_TCG_THREAD=multi brings it back.
	if [[ $accel == tcg ]]; then
		cpu=max,la57=off,cx16=off
		accel=tcg,thread=${LOWPROF_VM_TCG_THREAD:-single}
	fi
	# (a command put in the background reads /dev/null unless told otherwise)
	local in=/dev/null
	if [[ $MODE == shell && $pre == "$JOB/vm" ]]; then
		serial=(-serial mon:stdio -serial "file:$pre.out")
		in=/dev/fd/7
	else
		serial=(-serial "file:$pre.console" -serial "file:$pre.out")
	fi
	# (killed with this script, even by SIGKILL)
	setpriv --pdeathsig KILL qemu-system-x86_64 -machine q35 -accel "$accel" -cpu "$cpu" -smp "$CPUS" -m "$MEM" \
		-object "memory-backend-memfd,id=mem,size=${MEM}M,share=on" -numa node,memdev=mem \
		-chardev "socket,id=vfs,path=$JOB/vfs.sock" \
		-device vhost-user-fs-pci,chardev=vfs,tag=hostroot,queue-size=1024 \
		-kernel "$KDIR/vmlinuz" -initrd "$INITRD" \
		-append "console=ttyS0 panic=-1 mitigations=off loglevel=4 $extra ${LOWPROF_VM_APPEND:-}" \
		-nographic -nic none -no-reboot -monitor none "${serial[@]}" \
		${QEMU_EXTRA:-} 2>>"$pre.qemu" <"$in" &
	QPID=$!
}
# virtiofsd serving the host's root, read-only: a read-only bind mount of
# / in a mount namespace of its own (the guest mounts it read-only too)
virtiofsd_start() {
	rm -f "$JOB/vfs.sock"
	mkdir -p "$JOB/root"
	setpriv --pdeathsig KILL unshare -m --propagation private sh -c '
		mount --bind / "$1" && mount -o remount,bind,ro "$1" &&
		exec "$3" --socket-path="$2" -o source="$1" -o cache=always -o sandbox=chroot \
			-o log_level=err' _ "$JOB/root" "$JOB/vfs.sock" "$VIRTIOFSD" 2>>"$JOB/virtiofsd.log" &
	VPID=$!
	local i
	for i in $(seq 100); do
		[[ -S "$JOB/vfs.sock" ]] && return 0
		kill -0 "$VPID" 2>/dev/null || break
		sleep 0.05
	done
	cat "$JOB/virtiofsd.log" >&2
	die "virtiofsd did not start"
}
# qemu_wait SECONDS: waits for QEMU to exit, at most SECONDS; 1 if it had to be killed
qemu_wait() {
	local end=$((SECONDS + $1))
	while kill -0 "$QPID" 2>/dev/null; do
		if [[ $SECONDS -ge $end ]]; then
			kill -KILL "$QPID" 2>/dev/null
			wait "$QPID" 2>/dev/null || true
			QPID=""
			return 1
		fi
		sleep 0.2
	done
	wait "$QPID" 2>/dev/null || true
	QPID=""
}

# KVM only where a guest actually runs under it: probed once per host boot
if [[ $ACCEL == auto ]]; then
	ACCEL=tcg
	if [[ -w /dev/kvm ]]; then
		boot_id=$(cat /proc/sys/kernel/random/boot_id)
		read -r pid_boot pid_res 2>/dev/null <"$CACHE/kvm-probe" || true
		if [[ "${pid_boot:-}" != "$boot_id" ]]; then
			# (bash's own word on a QEMU that aborts goes to the probe's log too)
			{
				virtiofsd_start
				qemu_start kvm "lpvm.probe=1" "$JOB/probe"
				pid_res=no
				why="no guest under KVM within 20 s"
				if qemu_wait 20; then
					if grep -q '^@@LPVM alive' "$JOB/probe.console" 2>/dev/null; then
						pid_res=yes
					else
						why="QEMU stopped under KVM ($(grep -m1 '^qemu-system' "$JOB/probe.qemu" 2>/dev/null | cut -c 21-))"
					fi
				fi
				kill -KILL "$VPID" 2>/dev/null || true
				wait "$VPID" 2>/dev/null || true
				VPID=""
			} 2>>"$JOB/probe.qemu"
			echo "$boot_id $pid_res" >"$CACHE/kvm-probe"
			log "KVM probe: $([[ $pid_res == yes ]] && echo "a guest runs under KVM" || echo "$why: TCG")"
		fi
		[[ "$pid_res" == yes ]] && ACCEL=kvm
	fi
fi
if [[ $ACCEL == kvm ]]; then SCALE=1; else SCALE=${LOWPROF_VM_TIME_SCALE:-3}; fi

# the job: a script the guest runs with the host's bash, from the host's root
{
	echo "# written by tests/vm/run.sh"
	echo "export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
	echo "export LPVM_TIME_SCALE=$SCALE"
	while IFS='=' read -r k v; do
		[[ $k == LOWPROF_VM_* ]] || printf 'export %s=%q\n' "$k" "$v"
	done < <(env | grep -E '^LOWPROF_[A-Z0-9_]*=' || true)
	printf 'source %q\n' "$SRC/tests/vm/guest.sh"
	if [[ $MODE == cmd ]]; then
		printf 'cd %q || exit 1\n' "$PWD"
		printf '%q ' "${CMD[@]}"
		echo
	elif [[ $MODE == systemd ]]; then
		# run by lpvm-test.service; init, now systemd, reports no "done"
		echo "lpvm_info"
		printf "lpvm_test 'systemd' 220 77 / LOWPROF_BIN=%q LOWPROF_WORKLOADS=%q LOWPROF_SRC=%q -- bash %q\n" \
			"$BUILD" "$BUILD/tests/workloads" "$SRC" "$SRC/tests/vm/systemd-check.sh"
		echo 'echo "@@LPVM done $? $(lpvm_now)"'
	else
		echo "lpvm_info"
		ctest --test-dir "$BUILD" --show-only=json-v1 -R "$TESTS" | jq -r '
			.tests[] | (reduce (.properties // [])[] as $p ({}; .[$p.name] = $p.value)) as $pr |
			"lpvm_test \(.name | @sh) \($pr.TIMEOUT // 1500) \($pr.SKIP_RETURN_CODE // -1) " +
			"\(($pr.WORKING_DIRECTORY // "/") | @sh) \(($pr.ENVIRONMENT // []) | @sh) -- \(.command | @sh)"'
	fi
} >"$JOB/job.sh"
if [[ $MODE == systemd ]]; then
	# run by the guest's init before it becomes systemd
	{
		echo "# written by tests/vm/run.sh"
		echo "export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
		printf 'LPVM_SRC=%q LPVM_BUILD=%q\n' "$SRC" "$BUILD"
		printf 'source %q\n' "$SRC/tests/vm/systemd-boot.sh"
	} >"$JOB/boot.sh"
fi
if [[ $MODE == tests || $MODE == systemd ]]; then
	NTESTS=$(grep -c '^lpvm_test ' "$JOB/job.sh" || true)
	[[ $NTESTS -gt 0 ]] || die "no test in $BUILD matches '$TESTS'"
fi

virtiofsd_start
T0=$SECONDS
log "booting $PKG $VER ($KVER) under $ACCEL, $CPUS CPUs, $MEM MiB$([[ $MODE == tests ]] && echo ", $NTESTS tests")$([[ $MODE == systemd ]] && echo ", systemd as PID 1")"
# the source and build trees stay visible where the guest puts fresh tmpfs
# (a clean clone under /tmp, as CI may make)
for d in "$SRC" "$BUILD"; do
	if [[ "$d" =~ [[:space:],] ]]; then
		echo "vm: the path $d has a space or a comma; the guest cannot be told it" >&2
		exit 2
	fi
done
extra="lpvm.job=$JOB lpvm.keep=$SRC,$BUILD"
[[ ${LOWPROF_VM_OVERLAY:-0} == 1 ]] && extra+=" lpvm.overlay=1"
# (not the whole root under an overlay: the binaries profiled stay on the
# host's file system as on a host; through overlayfs their device and
# inode in /proc/PID/maps are not what stat() says, and lowprof then
# refuses to read them)
[[ $MODE == systemd ]] && extra+=" lpvm.rw=etc,usr/local lpvm.systemd=1 systemd.show_status=error"
[[ $MODE == shell ]] && extra="lpvm.shell=1"
qemu_start "$ACCEL" "$extra" "$JOB/vm"
if [[ $MODE == shell ]]; then
	wait "$QPID" || true
	QPID=""
	exit 0
fi

# follow the guest's output as it comes: the tests' results (or the
# command's output) are printed as they finish
OUT=$JOB/vm.out
pos=0
declare -A RES
ORDER=()
START_AT="" DONE_RC="" IN_TEST=0
follow() {
	local chunk line
	[[ -f "$OUT" ]] || return 0
	chunk=$(tail -c +"$((pos + 1))" "$OUT" | head -c 10000000; echo x)
	chunk=${chunk%x}
	# complete lines only
	[[ "$chunk" == *$'\n'* ]] || return 0
	chunk=${chunk%$'\n'*}$'\n'
	pos=$((pos + $(printf %s "$chunk" | wc -c)))
	while IFS= read -r line; do
		line=${line%$'\r'}
		# a marker after output that did not end its line
		if [[ "$line" == ?*"@@LPVM "* ]]; then
			if [[ $MODE == cmd ]]; then printf '%s\n' "${line%%@@LPVM *}"; fi
			line=@@LPVM\ ${line#*@@LPVM }
		fi
		case "$line" in
		"@@LPVM start "*)
			START_AT=${line#@@LPVM start }
			log "guest up in ${START_AT%.*} s (guest clock), $((SECONDS - T0)) s here; running"
			;;
		"@@LPVM done "*)
			read -r _ _ DONE_RC _ <<<"$line"
			;;
		"@@LPVM fatal "*) log "guest: ${line#@@LPVM }" ;;
		"@@LPVM begin "*) IN_TEST=1 ;;
		"@@LPVM end "*)
			IN_TEST=0
			read -r _ _ n st rc secs <<<"$line"
			RES[$n]="$st $rc $secs"
			ORDER+=("$n")
			printf '  %-28s %-8s %6s s%s\n' "$n" "${st^^}" "$secs" \
				"$([[ $st == fail || $st == timeout ]] && echo "  (exit $rc)")" >&2
			;;
		*)
			if [[ $MODE == cmd ]]; then
				printf '%s\n' "$line"
			elif [[ $IN_TEST == 0 && -n "$line" ]]; then
				log "guest: $line" # what the kernel offers (BTF, mounts), between tests
			fi
			;;
		esac
	done <<<"${chunk%$'\n'}"
}
end=$((SECONDS + TIMEOUT))
finished=1
while kill -0 "$QPID" 2>/dev/null; do
	follow
	if [[ $SECONDS -ge $end ]]; then
		log "the guest did not finish within $TIMEOUT s: killed"
		finished=0
		break
	fi
	sleep 0.5
done
qemu_wait 5 || true
follow
ELAPSED=$((SECONDS - T0))
save_logs

console_tail() {
	echo "---- last 40 lines of the guest's console ($LOGS/console.log)" >&2
	tail -n 40 "$LOGS/console.log" >&2 || true
}
if [[ -z "$DONE_RC" ]]; then
	finished=0
	log "the guest did not finish its job"
	console_tail
fi
if [[ $MODE == cmd ]]; then
	log "done in $ELAPSED s (boot ${START_AT:-?} s)"
	[[ $finished == 1 ]] || exit 1
	exit "$DONE_RC"
fi

# per test: the result, and the output of those that failed
npass=0 nfail=0 nskip=0
failed=()
for n in "${ORDER[@]}"; do
	read -r st _ _ <<<"${RES[$n]}"
	case $st in
	pass) npass=$((npass + 1)) ;;
	skip) nskip=$((nskip + 1)) ;;
	*)
		nfail=$((nfail + 1))
		failed+=("$n")
		;;
	esac
done
# tests that never reported an end (the guest died or was killed mid-test)
while read -r n; do
	[[ -n "${RES[$n]:-}" ]] && continue
	nfail=$((nfail + 1))
	failed+=("$n")
	ORDER+=("$n")
	RES[$n]="unfinished - -"
	printf '  %-28s %-8s\n' "$n" UNFINISHED >&2
done < <(sed -n "s/^lpvm_test '\([^']*\)'.*/\1/p" "$JOB/job.sh")
shown=("${failed[@]}")
# (--systemd: its one test's checks, passed or not)
[[ $MODE == systemd ]] && shown=("${ORDER[@]}")
for n in "${shown[@]}"; do
	echo "---- output of $n (${RES[$n]%% *}) on $KVER" >&2
	awk -v n="$n" '{ sub(/\r$/, "") } $0 == "@@LPVM begin " n { on = 1; next }
		on && /@@LPVM end / { sub(/@@LPVM end .*/, ""); if ($0 != "") print; exit } on' "$OUT" >&2
done
[[ ${#failed[@]} -gt 0 && $finished == 1 ]] && console_tail
log "kernel $KVER under $ACCEL: boot ${START_AT:-?} s (guest clock), total $ELAPSED s; logs in $LOGS"
echo "vm $SERIES: $npass passed, $nfail failed, $nskip skipped"
[[ $nfail -eq 0 && $finished == 1 ]]
