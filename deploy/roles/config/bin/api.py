#!/usr/bin/python3
"""The config role's API: a small HTTP server in front of redis.

  GET /config   the cluster's registration (redis hash "cluster") as JSON
  GET /hits     increments and returns a counter kept in redis (the web role's canary reads it)
  GET /healthz  200 when redis answers PING, 503 otherwise

Written for Debian's python3-minimal, which has socket and signal but neither http.server nor
json: HTTP/1.0-style requests (one per connection) and RESP, the redis protocol, are handled here.
Settings come from the environment (api.env, rendered by provision): API_PORT, REDIS_PORT.
SIGTERM closes the listener and exits 0.
"""

import os
import signal
import socket
import sys


def log(msg):
    print("api: " + msg, flush=True)


class RedisError(Exception):
    pass


class Redis:
    """One connection to redis, made again when it breaks."""

    def __init__(self, port):
        self.port = port
        self.sock = None
        self.rfile = None

    def close(self):
        if self.sock is not None:
            try:
                self.sock.close()
            except OSError:
                pass
        self.sock = None
        self.rfile = None

    def call(self, *args):
        data = b"*%d\r\n" % len(args)
        for a in args:
            a = str(a).encode()
            data += b"$%d\r\n%s\r\n" % (len(a), a)
        for attempt in (1, 2):
            try:
                if self.sock is None:
                    self.sock = socket.create_connection(("127.0.0.1", self.port), timeout=2)
                    self.rfile = self.sock.makefile("rb")
                self.sock.sendall(data)
                return self.reply()
            except OSError:
                self.close()
                if attempt == 2:
                    raise

    def reply(self):
        line = self.rfile.readline()
        if not line.endswith(b"\r\n"):
            raise OSError("connection to redis closed")
        kind, rest = line[:1], line[1:-2]
        if kind == b"+":
            return rest.decode()
        if kind == b"-":
            raise RedisError(rest.decode())
        if kind == b":":
            return int(rest)
        if kind == b"$":
            n = int(rest)
            if n < 0:
                return None
            return self.rfile.read(n + 2)[:-2].decode()
        if kind == b"*":
            return [self.reply() for _ in range(int(rest))]
        raise OSError("unexpected reply from redis: %r" % line)


def js(value):
    """JSON for the few shapes the API returns (strings, ints, flat dicts)."""
    if isinstance(value, dict):
        return "{" + ", ".join("%s: %s" % (js(k), js(v)) for k, v in value.items()) + "}"
    if isinstance(value, int):
        return str(value)
    out = ['"']
    for c in str(value):
        if c in '"\\':
            out.append("\\" + c)
        elif ord(c) < 0x20:
            out.append("\\u%04x" % ord(c))
        else:
            out.append(c)
    out.append('"')
    return "".join(out)


def answer(redis, path):
    if path == "/healthz":
        try:
            return 200, "ok\n" if redis.call("PING") == "PONG" else "no PONG\n"
        except (OSError, RedisError) as e:
            return 503, "redis: %s\n" % e
    if path == "/config":
        flat = redis.call("HGETALL", "cluster")
        return 200, js(dict(zip(flat[::2], flat[1::2]))) + "\n"
    if path == "/hits":
        return 200, js({"hits": redis.call("INCR", "hits")}) + "\n"
    return 404, "not found: %s\n" % path


REASONS = {200: "OK", 400: "Bad Request", 404: "Not Found", 503: "Service Unavailable"}


def serve(conn, redis):
    conn.settimeout(2)
    data = b""
    while b"\r\n\r\n" not in data and len(data) < 8192:
        chunk = conn.recv(4096)
        if not chunk:
            break
        data += chunk
    parts = data.split(b"\r\n", 1)[0].split()
    if len(parts) >= 2 and parts[0] in (b"GET", b"HEAD"):
        try:
            status, body = answer(redis, parts[1].decode("latin-1").split("?", 1)[0])
        except (OSError, RedisError) as e:
            status, body = 503, "redis: %s\n" % e
    else:
        status, body = 400, "bad request\n"
    if status >= 500:
        log("%s -> %d %s" % (parts[1].decode("latin-1") if len(parts) > 1 else "?", status, body.strip()))
    payload = body.encode()
    head = "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %d\r\nConnection: close\r\n\r\n" % (
        status,
        REASONS.get(status, "Error"),
        "application/json" if body.startswith("{") else "text/plain",
        len(payload),
    )
    conn.sendall(head.encode() + (b"" if parts[:1] == [b"HEAD"] else payload))


class Stop(Exception):
    pass


def on_term(signum, frame):
    raise Stop()


def main():
    port = int(os.environ.get("API_PORT", "8080"))
    redis = Redis(int(os.environ.get("REDIS_PORT", "6379")))
    signal.signal(signal.SIGTERM, on_term)
    listener = socket.create_server(("0.0.0.0", port), backlog=64)
    log("cluster %s: listening on :%d, redis on 127.0.0.1:%d" % (os.environ.get("CLUSTER_NAME", "?"), port, redis.port))
    served = 0
    try:
        while True:
            conn, _ = listener.accept()
            try:
                serve(conn, redis)
                served += 1
            except OSError as e:
                log("client: %s" % e)
            finally:
                conn.close()
    except Stop:
        pass
    listener.close()
    redis.close()
    log("SIGTERM: stopped after %d requests" % served)
    return 0


if __name__ == "__main__":
    sys.exit(main())
