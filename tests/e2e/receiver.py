#!/usr/bin/env python3
"""A local receiver for lowprof-exporter's tests: accepts POSTs on
127.0.0.1, keeps each request (body and headers) as files in --out, and
answers as told: 503 (with Retry-After) for the first --fail-for seconds,
always --status CODE, or 200. With --cert/--key it speaks TLS. It decodes
nothing itself: the tests decode what it kept with go tool pprof and
protoc."""
import argparse, http.server, json, os, ssl, sys, threading, time

ap = argparse.ArgumentParser()
ap.add_argument("--out", required=True)
ap.add_argument("--port-file", required=True)
ap.add_argument("--fail-for", type=float, default=0.0)
ap.add_argument("--retry-after", type=int, default=-1)
ap.add_argument("--status", type=int, default=200)
ap.add_argument("--cert")
ap.add_argument("--key")
args = ap.parse_args()
os.makedirs(args.out, exist_ok=True)
start = time.monotonic()
lock = threading.Lock()
counter = [0, 0]  # requests kept, requests answered with a failure


class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def do_POST(self):
        n = int(self.headers.get("Content-Length", "0"))
        body = self.rfile.read(n) if n else b""
        failing = time.monotonic() - start < args.fail_for
        code = 503 if failing else args.status
        with lock:
            if code >= 300:
                counter[1] += 1
                tag = "fail-%04d" % counter[1]
            else:
                counter[0] += 1
                tag = "%04d" % counter[0]
        base = os.path.join(args.out, tag)
        if code < 300:
            with open(base + ".body", "wb") as f:
                f.write(body)
            with open(base + ".json", "w") as f:
                json.dump({"path": self.path, "headers": dict(self.headers.items()),
                           "time": time.time()}, f)
        else:
            with open(base + ".json", "w") as f:
                json.dump({"path": self.path, "code": code, "time": time.time()}, f)
        reply = b"" if code < 300 else b"test receiver says %d" % code
        self.send_response(code)
        if code == 503 and args.retry_after >= 0:
            self.send_header("Retry-After", str(args.retry_after))
        self.send_header("Content-Type", "application/proto")
        self.send_header("Content-Length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)


srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
if args.cert:
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(args.cert, args.key)
    srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
tmp = args.port_file + ".tmp"
with open(tmp, "w") as f:
    f.write(str(srv.server_address[1]))
os.rename(tmp, args.port_file)
try:
    srv.serve_forever()
except KeyboardInterrupt:
    pass
