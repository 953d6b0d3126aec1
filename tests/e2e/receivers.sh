# Helpers for the tests that deliver to local receivers (export.sh,
# spool_shards.sh); sourced after lib.sh, with HERE set to tests/e2e.

# receiver NAME [ARGS...]: a receiver keeping requests in $TMP/NAME; its port in PORT
receiver() {
	local name=$1; shift
	start_bg python3 "$HERE/receiver.py" --out "$TMP/$name" --port-file "$TMP/$name.port" "$@"
	for _ in $(seq 50); do [[ -s $TMP/$name.port ]] && break; sleep 0.1; done
	PORT=$(cat "$TMP/$name.port")
}
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
# push_windows NAME: the window numbers of the Pyroscope deliveries kept, in arrival order
push_windows() {
	local b
	for b in "$TMP/$1"/[0-9]*.body; do
		[[ -e $b ]] || continue
		python3 "$HERE/pushsplit.py" "$b" "${b%.body}" >/dev/null
		go tool pprof -comments "${b%.body}-0.pb.gz" 2>/dev/null | sed -n 's/^lowprof window //p'
	done
}
