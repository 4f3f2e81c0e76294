#!/usr/bin/python3
"""A small HTTP service for the health tests.

Usage: httpd.py PORT STATE_DIR

GET /healthz answers 200, or 500 while STATE_DIR/sick exists, and never answers while
STATE_DIR/hang exists (the handler blocks). GET /ready answers 200. Writes STATE_DIR/pid.PORT
with its pid once it listens, and logs one line per request to stdout.
"""
import http.server
import os
import sys
import time

port, state = int(sys.argv[1]), sys.argv[2]


class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        if self.path.startswith("/healthz"):
            while os.path.exists(os.path.join(state, "hang")):
                time.sleep(0.05)
            if os.path.exists(os.path.join(state, "sick")):
                self.send_response(500, "Sick")
            else:
                self.send_response(200, "OK")
        elif self.path.startswith("/redirect"):
            self.send_response(302, "Found")
            self.send_header("Location", "/nowhere")
        else:
            self.send_response(200, "OK")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, fmt, *args):
        print("request " + (fmt % args), flush=True)


server = http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler)
with open(os.path.join(state, f"pid.{port}.tmp"), "w") as f:
    f.write(str(os.getpid()))
os.rename(os.path.join(state, f"pid.{port}.tmp"), os.path.join(state, f"pid.{port}"))
print(f"listening on {port}", flush=True)
server.serve_forever()
