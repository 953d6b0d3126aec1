#!/usr/bin/env bash
# deploy/systemd and deploy/kubernetes: the units pass `systemd-analyze verify` (with ExecStart
# pointed at the binaries just built), the collector's bounding set is the
# documented one, and the symbolizer's unit gives it no capability at all.
# The unprivileged side runs as a user of its own, never nobody: the
# systemd units as the system user lowprof that their sysusers.d file makes
# (and deploy/install-deps.sh, with the command the binaries print when it
# is missing), the DaemonSet as a uid of its own.
source "$(dirname "$0")/lib.sh"

UNITS="$(cd "$(dirname "$0")/../../deploy/systemd" && pwd)"
if ! command -v systemd-analyze >/dev/null; then
	echo "SKIP: systemd-analyze is not installed"
	exit 77
fi
mkdir -p "$TMP/units"
for u in lowprof-collector.service lowprof-symbolizer@.service lowprof-exporter.service; do
	sed "s#/usr/local/bin/#$BIN/#; s#EnvironmentFile=/etc/lowprof/exporter.env#EnvironmentFile=$TMP/exporter.env#" \
		"$UNITS/$u" >"$TMP/units/$u"
done
echo 'LOWPROF_EXPORTER_ARGS=--pyroscope http://127.0.0.1:4040' >"$TMP/exporter.env"
out=$(systemd-analyze verify "$TMP/units/lowprof-collector.service" \
	"$TMP/units/lowprof-symbolizer@0.service" "$TMP/units/lowprof-symbolizer@1.service" \
	"$TMP/units/lowprof-exporter.service" 2>&1)
rc=$?
echo "$out"
check "systemd-analyze verify passes (exit $rc)" test "$rc" -eq 0
check "systemd-analyze verify has nothing to say about our units" \
	bash -c "! grep -q 'lowprof-' <<<\"\$1\"" _ "$out"

C="$UNITS/lowprof-collector.service"
S="$UNITS/lowprof-symbolizer@.service"
check "collector: bounding set is BPF PERFMON SYS_PTRACE DAC_READ_SEARCH SYSLOG CHOWN SETPCAP SYS_ADMIN CHECKPOINT_RESTORE" \
	grep -qx 'CapabilityBoundingSet=CAP_BPF CAP_PERFMON CAP_SYS_PTRACE CAP_DAC_READ_SEARCH CAP_SYSLOG CAP_CHOWN CAP_SETPCAP CAP_SYS_ADMIN CAP_CHECKPOINT_RESTORE' "$C"
check "collector: no ambient capabilities" grep -qx 'AmbientCapabilities=' "$C"
check "collector: no network" grep -qx 'PrivateNetwork=yes' "$C"
check "symbolizer: the system user lowprof, not a dynamic one" \
	bash -c "grep -qx 'User=lowprof' '$S' && grep -qx 'Group=lowprof' '$S' && ! grep -q '^DynamicUser' '$S'"
check "collector: hands the ring to that user" grep -q -- '--ring-owner lowprof ' "$C"
# the sysusers.d file makes it: a system user, its own group, no shell, no home
mkdir -p "$TMP/root/etc"
check "systemd-sysusers makes the user from lowprof.sysusers.conf" \
	systemd-sysusers --root="$TMP/root" "$UNITS/lowprof.sysusers.conf"
IFS=: read -r name _ uid gid _ home shell < <(grep '^lowprof:' "$TMP/root/etc/passwd")
check "  lowprof, a system uid ($uid < 1000), home /nonexistent, shell nologin" \
	test "$name" = lowprof -a "${uid:-1000}" -lt 1000 -a "$home" = /nonexistent -a "$shell" = /usr/sbin/nologin
check "  with a group of its own" grep -q "^lowprof:x:$gid:$" "$TMP/root/etc/group"
# install-deps.sh makes the same user with the command lowprof prints when it is missing
DEPS="$(dirname "$UNITS")/install-deps.sh"
want=$("$BIN/lowprof-symbolizer" --user lp-no-such-user --check-sandbox 2>&1 |
	sed -n 's/.*error:  *\(useradd .*\) lp-no-such-user$/\1 lowprof/p')
check "install-deps.sh runs what the binaries print: '$want'" grep -qF -- "$want" "$DEPS"
check "install-deps.sh makes it only when it is missing" grep -q 'getent passwd lowprof' "$DEPS"
IFS=: read -r name _ uid _ _ home shell < <(getent passwd lowprof)
check "this host's lowprof (made by install-deps.sh): system uid $uid, no shell, no home" \
	test "${uid:-1000}" -lt 1000 -a "$shell" = /usr/sbin/nologin -a "$home" = /nonexistent \
	-a ! -e /nonexistent
check "symbolizer: empty bounding set" grep -qx 'CapabilityBoundingSet=' "$S"
check "symbolizer: no network" grep -qx 'PrivateNetwork=yes' "$S"
check "symbolizer: no_new_privs" grep -qx 'NoNewPrivileges=yes' "$S"
E="$UNITS/lowprof-exporter.service"
check "exporter: the spool's owner lowprof, empty bounding set, no_new_privs" \
	bash -c "grep -qx 'User=lowprof' '$E' && grep -qx 'CapabilityBoundingSet=' '$E' && grep -qx 'NoNewPrivileges=yes' '$E'"
check "exporter: Internet and Unix sockets only" \
	grep -qx 'RestrictAddressFamilies=AF_INET AF_INET6 AF_UNIX AF_NETLINK' "$E"
for opt in --spool --pyroscope --otlp --pyroscope-headers --otlp-headers --ca-file --metrics \
	--service-name; do
	check "exporter --help documents $opt" bash -c "\"$BIN/lowprof-exporter\" --help | grep -q -- '$opt'"
done
# every option the units pass exists in the binaries' --help
for opt in --ring --ring-owner -F; do
	check "collector --help documents $opt" bash -c "\"$BIN/lowprof-collector\" --help | grep -q -- '$opt'"
done
for opt in --ring --cache --spool --window; do
	check "symbolizer --help documents $opt" bash -c "\"$BIN/lowprof-symbolizer\" --help | grep -q -- '$opt'"
done

# deploy/kubernetes: the DaemonSet, read as YAML (no cluster here): two
# containers sharing a memory-backed volume, the collector with only its
# capabilities and not privileged, the symbolizer non-root with none, and
# every option they pass documented in the binaries' --help.
K="$(cd "$(dirname "$0")/../../deploy/kubernetes" && pwd)/lowprof-daemonset.yaml"
out=$(python3 - "$K" "$BIN" <<'PY' 2>&1
import subprocess, sys, yaml
docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d]
ds = next(d for d in docs if d["kind"] == "DaemonSet")
pod = ds["spec"]["template"]["spec"]
c = {x["name"]: x for x in pod["containers"]}
col, sym, exp = c["collector"], c["symbolizer"], c["exporter"]
cs, ss = col["securityContext"], sym["securityContext"]
def ok(what, cond):
    print(("ok: " if cond else "FAIL: ") + what)
ok("three containers, collector, symbolizer and exporter",
   sorted(c) == ["collector", "exporter", "symbolizer"])
es = exp["securityContext"]
ok("exporter: the symbolizer's uid (the spool's owner), non-root, drops ALL, adds nothing",
   es.get("runAsUser") == ss["runAsUser"] and es.get("runAsNonRoot") is True
   and es["capabilities"]["drop"] == ["ALL"] and not es["capabilities"].get("add"))
ok("exporter: no privilege escalation, read-only root, RuntimeDefault seccomp",
   es.get("allowPrivilegeEscalation") is False and es.get("readOnlyRootFilesystem") is True
   and es["seccompProfile"]["type"] == "RuntimeDefault")
ok("hostPID (the node's processes)", pod.get("hostPID") is True)
ok("collector is not privileged", cs.get("privileged") is False)
ok("collector drops ALL and adds exactly BPF PERFMON SYS_PTRACE DAC_READ_SEARCH SYSLOG CHOWN SETPCAP SYS_ADMIN CHECKPOINT_RESTORE",
   cs["capabilities"]["drop"] == ["ALL"] and sorted(cs["capabilities"]["add"]) ==
   sorted(["BPF", "PERFMON", "SYS_PTRACE", "DAC_READ_SEARCH", "SYSLOG", "CHOWN", "SETPCAP", "SYS_ADMIN",
           "CHECKPOINT_RESTORE"]))
ok("collector: no privilege escalation", cs.get("allowPrivilegeEscalation") is False)
ok("symbolizer is non-root (runAsNonRoot) with a uid of its own, 60101 (not nobody's 65534)",
   ss.get("runAsNonRoot") is True and ss.get("runAsUser") == 60101
   and ss.get("runAsGroup") == 60101)
init = {x["name"]: x for x in pod["initContainers"]}["prepare-dirs"]
script = " ".join(init["command"])
ok("the init container gives the node's directories to that uid, dropping others' cache files",
   "install -d -o 60101 -g 60101 -m 0700 /spool /cache" in script
   and "find /cache -mindepth 1 -maxdepth 1 ! -type d ! -user 60101 -delete" in script)
ok("symbolizer drops ALL and adds nothing",
   ss["capabilities"]["drop"] == ["ALL"] and not ss["capabilities"].get("add"))
ok("symbolizer: no privilege escalation, read-only root, RuntimeDefault seccomp",
   ss.get("allowPrivilegeEscalation") is False and ss.get("readOnlyRootFilesystem") is True
   and ss["seccompProfile"]["type"] == "RuntimeDefault")
mem = [v["name"] for v in pod["volumes"] if v.get("emptyDir", {}).get("medium") == "Memory"]
mounts = lambda x: {m["name"]: m["mountPath"] for m in x.get("volumeMounts", [])}
shared = [v for v in mem if v in mounts(col) and mounts(col)[v] == mounts(sym).get(v)]
ok("a memory-backed volume mounted at the same path in both", len(shared) == 1)
ok("the symbolizer writes windows into the node's spool (service mode)",
   "--spool" in sym["args"] and mounts(sym).get("spool") ==
   sym["args"][sym["args"].index("--spool") + 1])
run = mounts(col)[shared[0]] if shared else "?"
ok("the ring's socket is in it", any(a.startswith(run + "/") for a in col["args"]) and
   any(a.startswith(run + "/") for a in sym["args"]))
owner = col["args"][col["args"].index("--ring-owner") + 1]
ok("the collector hands the ring to the symbolizer's uid", owner == str(ss["runAsUser"]))
ok("the exporter reads the spool the symbolizer writes",
   mounts(exp).get("spool") == mounts(sym).get("spool")
   and exp["args"][exp["args"].index("--spool") + 1] == mounts(sym).get("spool"))
for x, prog in ((col, "lowprof-collector"), (sym, "lowprof-symbolizer"), (exp, "lowprof-exporter")):
    helptext = subprocess.run([sys.argv[2] + "/" + prog, "--help"], capture_output=True,
                              text=True).stdout
    for a in x["args"]:
        if a.startswith("-"):
            ok(prog + " --help documents " + a, a in helptext)
PY
)
echo "$out"
check "the DaemonSet's YAML reads and has the shape above (python3-yaml)" \
	bash -c "grep -q '^ok: ' <<<\"\$1\" && ! grep -qv '^ok: ' <<<\"\$1\"" _ "$out"
finish
