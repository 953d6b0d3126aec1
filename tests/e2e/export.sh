#!/usr/bin/env bash
# lowprof-exporter: windows delivered to local receivers on 127.0.0.1 that
# keep what they are sent, decoded here with the real tools (go tool pprof
# for Pyroscope's raw profiles, protoc with the OTLP protos for OTLP):
# - lowprof run with --pyroscope and --otlp: one delivery per window and
#   destination, in order, with the known chain, the series labels and the
#   resource attributes; headers from a file reach only their destination;
#   /metrics answers while it runs; the spool is empty after.
# - a receiver that answers 503 (Retry-After: 1) for 20 s, then recovers:
#   every window arrives, in order, none twice.
# - lowprof run's exporter killed (or stopped by SIGTERM) mid-run: started
#   again, every window arrives; a standalone exporter killed mid-way and
#   started again: nothing lost.
# - no receiver, and a spool budget too small for the backlog: the oldest
#   windows are dropped and counted, collection loses nothing.
# - TLS with a test CA: delivered with --ca-file, refused without.
# - 400: the window is set aside in rejected/, said once; bad header files
#   and URLs with credentials are refused before anything starts.
source "$(dirname "$0")/lib.sh"
require_root
HERE=$(cd "$(dirname "$0")" && pwd)
PROTO=$HERE/../../exporter/proto
EXP=$BIN/lowprof-exporter
OTLP_MSG=opentelemetry.proto.collector.profiles.v1development.ExportProfilesServiceRequest
for t in protoc go python3 openssl curl; do
	command -v "$t" >/dev/null || { echo "FAIL: $t is missing (deploy/install-deps.sh --test)"; exit 1; }
done

source "$HERE/receivers.sh"
in_order_once() { # in_order_once N LIST: LIST is 0..N-1 in order
	[[ "$(tr '\n' ' ' <<<"$2")" == "$(seq -s ' ' 0 $(($1 - 1))) " ]]
}

start_bg "$WL/chain-fp" "$(scaled 200)"
WPID=$BGPID
sleep 0.3

# --- 1: lowprof run delivering to Pyroscope and OTLP
receiver pyro
P1=$PORT
receiver otlp
P2=$PORT
MPORT=$(free_port)
H=$TMP/headers
printf '# test\nAuthorization: Bearer test-secret-123\nX-Scope-OrgID: tenant-7\n' >"$H"
chown lowprof "$H"
chmod 600 "$H"
SP=$TMP/spool1
start_bg "$BIN/lowprof" run --window 2 --spool "$SP" -p "$WPID" -d 9 \
	--pyroscope "http://127.0.0.1:$P1" --pyroscope-headers "$H" --otlp "http://127.0.0.1:$P2/" \
	--metrics "127.0.0.1:$MPORT"
RUN=$BGPID
sleep 6
curl -s "http://127.0.0.1:$MPORT/metrics" >"$TMP/metrics1"
EPID=$(for p in $(descendants "$RUN"); do
	[[ "$(readlink "/proc/$p/exe" 2>/dev/null)" == "$EXP" ]] && echo "$p"; done | head -1)
if [[ -n "$EPID" ]]; then
	status=$(cat "/proc/$EPID/status")
	check "the running exporter: lowprof's uid, no capabilities, seccomp filter, no_new_privs" \
		bash -c "grep -Eq '^Uid:\s+$(id -u lowprof)\s' <<<'$status' &&
			grep -Eq '^CapEff:\s+0+$' <<<'$status' && grep -Eq '^CapBnd:\s+0+$' <<<'$status' &&
			grep -Eq '^Seccomp:\s+2$' <<<'$status' && grep -Eq '^NoNewPrivs:\s+1$' <<<'$status'"
else
	fail "lowprof run started no exporter below it"
fi
wait "$RUN"
rc=$?
check "lowprof run with two destinations exits 0 (got $rc)" test "$rc" = 0
grep -E 'windows_sent_total|spool_windows |resident' "$TMP/metrics1"
check "/metrics counts windows sent to pyroscope while it runs" \
	grep -Eq '^lowprof_exporter_windows_sent_total\{destination="pyroscope"\} [1-9]' "$TMP/metrics1"
check "/metrics gives the exporter's resident memory" \
	grep -Eq '^lowprof_process_resident_bytes\{process="exporter"\} [1-9][0-9]{5,}' "$TMP/metrics1"
for m in lowprof_symbolizer_samples_total 'lowprof_lost_total{cause="bpf_ring_full"}' \
	'lowprof_lost_total{cause="shm_ring_full"}' lowprof_spool_windows_written_total \
	lowprof_symbolizer_window_lag_seconds lowprof_symbolizer_cache_hits_total \
	lowprof_symbolizer_records_total lowprof_symbolizer_lag_peak_seconds \
	lowprof_symbolizer_ring_fill_peak_ratio \
	'lowprof_process_resident_bytes{process="symbolizer"}' \
	'lowprof_process_resident_bytes{process="collector"}' lowprof_spool_bytes; do
	check "/metrics has the symbolizer's and the spool's $m" grep -qF "$m " "$TMP/metrics1"
done
check "/metrics: samples counted ($(grep '^lowprof_symbolizer_samples_total' "$TMP/metrics1"))" \
	grep -Eq '^lowprof_symbolizer_samples_total [1-9][0-9]{2,}$' "$TMP/metrics1"
check "/metrics: each metric family declared once" \
	bash -c "test -z \"\$(grep '^# TYPE' '$TMP/metrics1' | sort | uniq -d)\""
check "curl gets 404 for another path" \
	test "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$MPORT/x" || true)" != 200
left=$(ls "$SP" | grep -c '\.pb\.gz$')
check "every window left the spool once delivered (left: $left)" test "$left" = 0
mapfile -t W < <(push_windows pyro)
n=${#W[@]}
echo "pyroscope got windows: ${W[*]}"
check "4 to 6 windows pushed for 9 s of 2 s windows (got $n)" test "$n" -ge 4 -a "$n" -le 6
check "each window pushed once, in order" in_order_once "$n" "$(printf '%s\n' "${W[@]}")"
b=$TMP/pyro/0002
series=$(python3 "$HERE/pushsplit.py" "$b.body" "$b")
echo "series: $series"
check "one series, labelled __name__=process_cpu, service_name=chain-fp, host_name" \
	grep -qx "0 __name__=process_cpu,host_name=$(hostname),service_name=chain-fp 1" <<<"$series"
traces=$(go tool pprof -traces "$b-0.pb.gz" 2>/dev/null)
check "the pushed pprof has the chain (chain_leaf under chain_one)" \
	bash -c "grep -A4 -w chain_leaf <<<'$traces' | grep -qw chain_one"
check "pid stays a sample label of the pushed pprof" grep -Eq "pid: +$WPID" <<<"$traces"
check "the header file's headers reached Pyroscope" \
	python3 -c "import json,sys; h=json.load(open('$b.json'))['headers']; sys.exit(not (h.get('Authorization')=='Bearer test-secret-123' and h.get('X-Scope-OrgID')=='tenant-7' and h.get('Content-Type')=='application/proto'))"
check "... and not OTLP" bash -c "! grep -q test-secret $TMP/otlp/*.json"
no=$(ls "$TMP/otlp" | grep -c '^[0-9]*\.body$')
check "one OTLP request per window ($no for $n)" test "$no" = "$n"
ob=$TMP/otlp/0002
check "the OTLP request was sent to /v1development/profiles, gzip'd protobuf" \
	python3 -c "import json,sys; j=json.load(open('$ob.json')); h=j['headers']; sys.exit(not (j['path']=='/v1development/profiles' and h.get('Content-Encoding')=='gzip' and h.get('Content-Type')=='application/x-protobuf'))"
gunzip -c <"$ob.body" >"$ob.bin"
protoc --decode="$OTLP_MSG" --proto_path="$PROTO" otlp_profiles_service.proto <"$ob.bin" >"$ob.txt" 2>"$ob.err"
check "protoc decodes the OTLP request with the published messages" test -s "$ob.txt" -a ! -s "$ob.err"
check "no field protoc does not know" bash -c "! grep -Eq '^ *[0-9]+:' '$ob.txt'"
for want in '"host.name"' '"service.name"' '"process.pid"' '"process.executable.path"' \
	'"process.executable.name"' '"process.executable.build_id.gnu"' "int_value: $WPID" \
	'"chain_leaf"' '"chain_one"' 'string_value: "chain-fp"'; do
	check "the OTLP request has $want" grep -q -- "$want" "$ob.txt"
done

# --- 1b: lowprof run's exporter killed mid-run: started again, it delivers
# the windows written meanwhile (they waited in the spool)
receiver pyrok
SPK=$TMP/spoolk
start_bg "$BIN/lowprof" run --window 1 --spool "$SPK" -p "$WPID" -d "$(scaled 8)" \
	--pyroscope "http://127.0.0.1:$PORT" >"$TMP/runk.out" 2>"$TMP/runk.err"
RUN=$BGPID
exporter_below() { # exporter_below PID: lowprof-exporter's pid below PID, found by the tree
	for p in $(descendants "$1"); do
		[[ "$(readlink "/proc/$p/exe" 2>/dev/null)" == "$EXP" ]] && echo "$p"
	done | head -1
}
# signal_exporter SIG RUN: sends SIG to RUN's exporter, then waits up to 5 s
# for another; the two pids in OLD and NEW (empty when not found)
signal_exporter() {
	OLD=$(exporter_below "$2")
	NEW=
	[[ -n "$OLD" ]] && kill "-$1" "$OLD"
	for _ in $(seq 1 50); do
		NEW=$(exporter_below "$2")
		[[ -n "$NEW" && "$NEW" != "$OLD" ]] && break
		sleep 0.1
	done
}
sleep 3 # the exporter is older than the second under which it is not restarted
signal_exporter KILL "$RUN"
K1=$OLD K2=$NEW
wait "$RUN"
rc=$?
cat "$TMP/runk.err"
check "lowprof run exits 0 after its exporter was killed (got $rc)" test "$rc" = 0
check "a new exporter ($K2) replaced the killed one ($K1)" test -n "$K1" -a -n "$K2" -a "$K2" != "$K1"
mapfile -t W < <(push_windows pyrok)
echo "pushed around the kill: ${W[*]}"
check "every window was delivered, none left in the spool ($(ls "$SPK" | grep -c '\.pb\.gz$') left)" \
	test "$(ls "$SPK" | grep -c '\.pb\.gz$')" = 0
uniq_w=$(printf '%s\n' "${W[@]}" | sort -nu | tr '\n' ' ')
nu=$(wc -w <<<"$uniq_w")
# a window the receiver had accepted may arrive twice (the killed one had not
# removed it yet), never one missing
check "windows 0 to $((nu - 1)) all arrived ($nu: at least 6 for 8 s of 1 s windows)" \
	test "$nu" -ge 6 -a "$uniq_w" = "$(seq -s ' ' 0 $((nu - 1))) "
check "lowprof run said the exporter died and was started again" \
	grep -q 'lowprof-exporter died (.*); starting it again' "$TMP/runk.err"

# --- 1c: the exporter stopped from elsewhere (SIGTERM: it exits 0) is
# started again too: run left it stopped, windows piling up, unsaid
receiver pyrot
SPT=$TMP/spoolt
start_bg "$BIN/lowprof" run --window 1 --spool "$SPT" -p "$WPID" -d "$(scaled 6)" \
	--pyroscope "http://127.0.0.1:$PORT" >"$TMP/runt.out" 2>"$TMP/runt.err"
RUN=$BGPID
sleep 3
signal_exporter TERM "$RUN"
T1=$OLD T2=$NEW
wait "$RUN"
rc=$?
grep 'lowprof: ' "$TMP/runt.err"
check "lowprof run exits 0 after its exporter was stopped (got $rc)" test "$rc" = 0
check "a new exporter ($T2) replaced the stopped one ($T1)" test -n "$T1" -a -n "$T2" -a "$T2" != "$T1"
check "and delivered every window ($(ls "$SPT" | grep -c '\.pb\.gz$') left in the spool)" \
	test "$(ls "$SPT" | grep -c '\.pb\.gz$')" = 0

# --- 2: 503 (Retry-After: 1) for the first 20 s, then 200
receiver slow --fail-for 20 --retry-after 1
SP2=$TMP/spool2
"$BIN/lowprof" run --window 2 --spool "$SP2" -p "$WPID" -d 30 \
	--pyroscope "http://127.0.0.1:$PORT" >"$TMP/run2.out" 2>&1
rc=$?
tail -4 "$TMP/run2.out"
check "lowprof run exits 0 after the backend recovered (got $rc)" test "$rc" = 0
fails=$(ls "$TMP/slow" | grep -c '^fail-.*json$')
check "the receiver refused tries for 20 s ($fails)" test "$fails" -ge 5
mapfile -t W < <(push_windows slow)
echo "after 503s: ${W[*]}"
check "every window arrived, in order, none twice (${#W[@]})" \
	bash -c "test ${#W[@]} -ge 14 && [[ '$(tr '\n' ' ' <<<"$(printf '%s\n' "${W[@]}")")' == '$(seq -s ' ' 0 $((${#W[@]} - 1))) ' ]]"
check "the failures were said once" test "$(grep -c 'HTTP 503' "$TMP/run2.out")" = 1

# --- a spool of windows for the standalone exporter's cases
SPB=$TMP/spool-base
"$BIN/lowprof" run --window 1 --spool "$SPB" -p "$WPID" -d 4 >/dev/null 2>&1
nb=$(ls "$SPB" | grep -c '\.pb\.gz$')
check "a spool of 4 or 5 windows to deliver ($nb)" test "$nb" -ge 4 -a "$nb" -le 5
spool_copy() { rm -rf "$1"; cp -a "$SPB" "$1"; }

# --- 3: killed mid-way, started again: nothing lost
receiver down --fail-for 100000
SP3=$TMP/spool3
spool_copy "$SP3"
start_bg "$EXP" --spool "$SP3" --pyroscope "http://127.0.0.1:$PORT" --max-backoff 1
EX=$BGPID
sleep 3
kill -9 "$EX"
wait "$EX" 2>/dev/null
check "windows stay in the spool while undelivered" test "$(ls "$SP3" | grep -c '\.pb\.gz$')" = "$nb"
receiver up
timeout 30 "$EXP" --spool "$SP3" --pyroscope "http://127.0.0.1:$PORT" --oneshot 2>"$TMP/ex3.err"
rc=$?
check "the restarted exporter delivers everything and exits (got $rc)" test "$rc" = 0
mapfile -t W < <(push_windows up)
check "after the restart every window arrived once, in order (${W[*]})" \
	in_order_once "$nb" "$(printf '%s\n' "${W[@]}")"

# --- 4: no receiver, a budget too small for the backlog
DEAD=$(free_port)
MPORT=$(free_port)
SP4=$TMP/spool4
start_bg "$BIN/lowprof" run --window 1 --spool "$SP4" --spool-bytes 3K -p "$WPID" -d 12 \
	--pyroscope "http://127.0.0.1:$DEAD" --metrics "127.0.0.1:$MPORT" >"$TMP/run4.out" 2>&1
RUN=$BGPID
sleep 5
curl -s "http://127.0.0.1:$MPORT/metrics" >"$TMP/m4a"
sleep 5
curl -s "http://127.0.0.1:$MPORT/metrics" >"$TMP/m4b"
wait "$RUN"
rc=$?
cat "$TMP/run4.out" | grep -v '^lowprof-collector'
check "lowprof run exits 0 with its backend away (got $rc)" test "$rc" = 0
dropped=$(sed -n 's/^lowprof_spool_windows_dropped_total //p' "$TMP/m4b")
check "/metrics counts windows the budget dropped ($dropped)" test "${dropped:-0}" -ge 3
removed=$(sed -En 's/.*windows written .*, ([0-9]+) removed for the budget.*/\1/p' "$TMP/run4.out")
check "the exporter's count of dropped windows is the spool's ($removed)" \
	grep -q "spool: $removed windows were removed by its byte budget" "$TMP/run4.out"
failed=$(sed -n 's/^lowprof_exporter_failed_total{destination="pyroscope"} //p' "$TMP/m4b")
check "and its failed tries ($failed)" test "${failed:-0}" -ge 3
r1=$(sed -n 's/^lowprof_process_resident_bytes{process="exporter"} //p' "$TMP/m4a")
r2=$(sed -n 's/^lowprof_process_resident_bytes{process="exporter"} //p' "$TMP/m4b")
check "the exporter's memory stays flat ($r1 -> $r2 bytes)" test "$((r2 - r1))" -lt 1048576
for f in "$SP4"/cpu-*.pb.gz; do
	check "window $(basename "$f") lost no sample" \
		bash -c "go tool pprof -comments '$f' 2>/dev/null | grep -q '^lost: 0 bpf ring full, 0 shm ring full'"
done

# --- 5: TLS with a test CA
C=$TMP/ca
mkdir -p "$C"
openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=lowprof-test-ca -keyout "$C/ca.key" \
	-out "$C/ca.pem" -addext basicConstraints=critical,CA:TRUE 2>/dev/null
openssl req -newkey rsa:2048 -nodes -subj /CN=127.0.0.1 -keyout "$C/srv.key" -out "$C/srv.csr" 2>/dev/null
printf 'subjectAltName=IP:127.0.0.1\n' >"$C/ext"
openssl x509 -req -in "$C/srv.csr" -CA "$C/ca.pem" -CAkey "$C/ca.key" -CAcreateserial -days 2 \
	-extfile "$C/ext" -out "$C/srv.pem" 2>/dev/null
chmod 755 "$C"
chmod 644 "$C/ca.pem"
receiver tls --cert "$C/srv.pem" --key "$C/srv.key"
SP5=$TMP/spool5
spool_copy "$SP5"
# the symbolizer's metrics file, as a compromised symbolizer could write it
printf '%s\n' 'lowprof_exporter_windows_sent_total{destination="pyroscope"} 999' \
	'evil_metric 1' 'lowprof_fake{x="a"} 1 # trailing' 'lowprof_ok_gauge 7' >"$SP5/metrics.prom"
MPORT=$(free_port)
timeout 8 "$EXP" --spool "$SP5" --pyroscope "https://127.0.0.1:$PORT" --oneshot \
	--metrics "127.0.0.1:$MPORT" 2>"$TMP/ex5a.err" &
EX=$!
sleep 3
curl -s "http://127.0.0.1:$MPORT/metrics" >"$TMP/m5"
wait "$EX"
rc=$?
check "the symbolizer's metrics are checked line by line: bad and spoofed lines dropped" \
	bash -c "grep -qx 'lowprof_ok_gauge 7' '$TMP/m5' && ! grep -q 'evil_metric\|999\|lowprof_fake' '$TMP/m5'"
cat "$TMP/ex5a.err"
check "without --ca-file the test CA's server is refused (got $rc, no delivery)" \
	bash -c "test $rc != 0 && ! ls '$TMP/tls' | grep -q body"
check "... and the log says why (certificate)" grep -qi certificate "$TMP/ex5a.err"
timeout 20 "$EXP" --spool "$SP5" --pyroscope "https://127.0.0.1:$PORT" --ca-file "$C/ca.pem" \
	--oneshot 2>"$TMP/ex5b.err"
rc=$?
mapfile -t W < <(push_windows tls)
check "with --ca-file every window arrives over TLS (got $rc; ${W[*]})" \
	bash -c "test $rc = 0 && test ${#W[@]} = $nb"

# --- 6: 400: set aside, said once
receiver bad --status 400
SP6=$TMP/spool6
spool_copy "$SP6"
timeout 20 "$EXP" --spool "$SP6" --pyroscope "http://127.0.0.1:$PORT" --oneshot --keep-rejected 3 \
	2>"$TMP/ex6.err"
rc=$?
cat "$TMP/ex6.err"
check "refused windows leave the spool (got $rc)" \
	bash -c "test $rc = 0 && test \$(ls '$SP6' | grep -c pb.gz) = 0"
check "the newest 3 are kept in rejected/" test "$(ls "$SP6/rejected" | grep -c pb.gz)" = 3
check "the cause is said once, with the receiver's answer" \
	test "$(grep -c 'HTTP 400: test receiver says 400.*said once' "$TMP/ex6.err")" = 1

# --- the exporter's own filter, tried from inside
CS=$TMP/check-sandbox
mkdir "$CS" && chown lowprof "$CS"
"$EXP" --check-sandbox "$CS" >"$TMP/cs.out" 2>&1
rc=$?
cat "$TMP/cs.out"
if grep -q '^sanitizer build' "$TMP/cs.out"; then
	echo "(the allowlist is checked on the production build)"
else
	check "--check-sandbox: all 13 refused, the two needs met (got $rc)" \
		bash -c "test $rc = 0 && test \$(grep -c ' denied ' '$TMP/cs.out') = 13 &&
			test \$(grep -c 'allowed (needed)' '$TMP/cs.out') = 2"
fi

# --- 7: refusals before anything starts
chmod 644 "$H"
"$BIN/lowprof" run --window 2 --spool "$TMP/spool7" -p "$WPID" -d 5 \
	--pyroscope "http://127.0.0.1:$P1" --pyroscope-headers "$H" >"$TMP/run7.out" 2>&1
rc=$?
cat "$TMP/run7.out"
check "a header file others may read stops lowprof run (got $rc)" \
	bash -c "test $rc = 1 && grep -q 'readable by nobody else' '$TMP/run7.out' && grep -q 'nothing was collected' '$TMP/run7.out'"
"$EXP" --spool "$SPB" --otlp "http://user:pw@127.0.0.1:$P2" >"$TMP/ex7.out" 2>&1
rc=$?
check "a URL with credentials is refused (got $rc)" \
	bash -c "test $rc = 2 && grep -q 'credentials' '$TMP/ex7.out'"
finish
