#!/usr/bin/env python3
"""A loopback HTTP server for tests/hkt_data_test.sh (tools/hkt-data's downloads).

    data_server.py ROOT PORT_FILE LOG [MAX_SECONDS]

Serves the files under ROOT (GET /a/b -> ROOT/a/b) on 127.0.0.1 and a free port
(written to PORT_FILE once it listens), with Range requests ("bytes=N-" and
"bytes=N-M": 206, or 416 past the end) and 404 for a missing file. One behaviour
a test switches on per file: when FILE.drop holds a count K > 0, the next K
responses for FILE send half of the body they announce and close the connection
(the count goes down by one each time). When FILE.endless exists, FILE is answered
with 200, no Content-Length and a body that never ends (zeros, for at most 30 s: a
hostile server). Each request is appended to LOG as
"GET /PATH RANGE" (RANGE: the header, or -). The server stops by itself after
MAX_SECONDS (default 120), so a test that dies cannot leave it behind.
"""
import http.server
import os
import re
import sys
import threading
import time


class Handler(http.server.BaseHTTPRequestHandler):
    root = "."
    log_path = ""

    def log_message(self, *args):  # quiet: the log file records what matters
        pass

    def do_GET(self):
        rng = self.headers.get("Range")
        with open(self.log_path, "a") as log:
            log.write(f"GET {self.path} {rng or '-'}\n")
        rel = os.path.normpath(self.path.split("?")[0].lstrip("/"))
        path = os.path.join(self.root, rel)
        if rel.startswith("..") or rel.endswith((".drop", ".endless")) or not os.path.isfile(path):
            self.send_error(404, "not found")
            return
        if os.path.isfile(path + ".endless"):
            self.send_response(200)
            self.send_header("Content-Type", "application/octet-stream")
            self.end_headers()
            chunk = bytes(1 << 16)
            deadline = time.monotonic() + 30
            try:
                while time.monotonic() < deadline:
                    self.wfile.write(chunk)
            except OSError:
                pass
            self.close_connection = True
            return
        with open(path, "rb") as f:
            data = f.read()
        size = len(data)
        start, end = 0, size - 1
        status = 200
        if rng:
            m = re.fullmatch(r"bytes=(\d+)-(\d*)", rng.strip())
            if not m:
                self.send_error(400, "bad range")
                return
            start = int(m.group(1))
            if m.group(2):
                end = min(int(m.group(2)), size - 1)
            if start >= size:
                self.send_response(416)
                self.send_header("Content-Range", f"bytes */{size}")
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            status = 206
        body = data[start:end + 1]
        self.send_response(status)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Accept-Ranges", "bytes")
        if status == 206:
            self.send_header("Content-Range", f"bytes {start}-{end}/{size}")
        self.end_headers()
        drop = path + ".drop"
        if os.path.isfile(drop):
            with open(drop) as f:
                count = int(f.read().strip() or 0)
            if count > 0:
                with open(drop, "w") as f:
                    f.write(str(count - 1))
                self.wfile.write(body[:len(body) // 2])
                self.wfile.flush()
                self.close_connection = True
                return
        self.wfile.write(body)


def main():
    if len(sys.argv) not in (4, 5):
        sys.exit(__doc__)
    Handler.root = sys.argv[1]
    Handler.log_path = sys.argv[3]
    max_seconds = float(sys.argv[4]) if len(sys.argv) == 5 else 120.0
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    tmp = sys.argv[2] + ".tmp"
    with open(tmp, "w") as f:
        f.write(str(server.server_address[1]))
    os.replace(tmp, sys.argv[2])
    timer = threading.Timer(max_seconds, server.shutdown)
    timer.daemon = True
    timer.start()
    server.serve_forever()


if __name__ == "__main__":
    main()
