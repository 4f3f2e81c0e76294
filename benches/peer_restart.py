#!/usr/bin/env python3
"""From a peer ctrlinit's program restart to the local dependent's restart (issue 22, section 2).

Two ctrlinit instances, each PID 1 of its own PID namespace (compare.py's machinery), on the
host's loopback:

  peer   `[init] http` on a free port and a program `api` (`sh` that writes a ns timestamp to
         api.stamps, then `exec sleep infinity`);
  local  `[external.config-api] ctrlinit = "http://127.0.0.1:PORT", program = "api"` at
         --interval, and a program `control` that depends on it with `restart = true` and
         writes its own start timestamp to control.stamps.

Each repetition SIGKILLs api's `sleep` (the peer restarts it at once), and measures from api's
new start stamp to control's new start stamp: the propagation through the peer's endpoint,
the local check, and the local stop and start of control. The phase of the kill within the
interval is random (a uniform wait of 0..interval before it), so polling is sampled fairly.

Two modes:
  stream  local talks to the peer directly: it follows `/v1/peer?program=api&watch=MS`
  poll    local talks through a proxy (this script, outside the namespaces) that drops the
          `watch` parameter from the request, so the peer answers once as an older ctrlinit
          does, and local falls back to polling every --interval

Bounds (issue 22): stream under 200 ms; poll under interval + 200 ms.

Run as root: `sudo benches/peer_restart.py [--ctrlinit target/release/ctrlinit] [--reps 30]`.
"""

import argparse
import json
import os
import random
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

BENCH_DIR = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, BENCH_DIR)
import compare as c  # noqa: E402

REPO = os.path.dirname(BENCH_DIR)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class NoWatchProxy:
    """Forwards each connection to the peer with `&watch=…` taken out of the request line."""

    def __init__(self, target_port):
        self.target = target_port
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.port = self.sock.getsockname()[1]
        threading.Thread(target=self.serve, daemon=True).start()

    def serve(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self.one, args=(conn,), daemon=True).start()

    def one(self, conn):
        try:
            conn.settimeout(5)
            head = b""
            while b"\r\n\r\n" not in head and len(head) < 8192:
                chunk = conn.recv(4096)
                if not chunk:
                    return
                head += chunk
            head = re.sub(rb"&watch=\d+", b"", head, count=1)
            with socket.create_connection(("127.0.0.1", self.target), timeout=5) as up:
                up.sendall(head)
                while True:
                    data = up.recv(4096)
                    if not data:
                        break
                    conn.sendall(data)
        except OSError:
            pass
        finally:
            conn.close()


def stamp_cmd(path):
    return json.dumps(["/bin/sh", "-c", f"date +%s%N >> {path}; exec sleep infinity"])


def start(ctx, d, name, toml):
    conf = os.path.join(d, name)
    os.makedirs(conf, exist_ok=True)
    with open(os.path.join(conf, "a.toml"), "w") as f:
        f.write(toml)
    env = dict(os.environ, CTRLINIT_SOCKET=os.path.join(d, f"{name}.sock"))
    ns = c.Namespace([ctx.ctrlinit, "--config-dir", conf], cwd=d, env=env,
                     stdout=os.path.join(d, f"{name}.out"), stderr=os.path.join(d, f"{name}.err"))
    return ns, env


def status(ctx, env, name):
    out = subprocess.run([ctx.ctrlinit, "status", "--json"], env=env, capture_output=True,
                         text=True, timeout=30)
    try:
        return next((p for p in json.loads(out.stdout) if p.get("name") == name), None)
    except (ValueError, TypeError):
        return None


def stamps(path):
    return c.read_stamps(path)


def run_mode(ctx, mode):
    d = tempfile.mkdtemp(prefix=f"peer-restart-{mode}-")
    probe = free_port()
    init_dirs = lambda n: (f'log_dir = {json.dumps(os.path.join(d, n + "-logs"))}\n'
                           f'crash_dir = {json.dumps(os.path.join(d, n + "-crash"))}\n')
    api_stamps, control_stamps = os.path.join(d, "api.stamps"), os.path.join(d, "control.stamps")
    peer, _ = start(ctx, d, "peer", (
        f'[init]\nhttp = "127.0.0.1:{probe}"\n{init_dirs("peer")}\n'
        f'[program.api]\ncommand = {stamp_cmd(api_stamps)}\nbackoff = {{ initial = "10ms", max = "10ms", factor = 1.0 }}\n'
        'max_restarts = 1000\n'))
    proxy = NoWatchProxy(probe) if mode == "poll" else None
    port = proxy.port if proxy else probe
    local, local_env = start(ctx, d, "local", (
        f'[init]\n{init_dirs("local")}\n'
        f'[external.config-api]\nctrlinit = "http://127.0.0.1:{port}"\nprogram = "api"\n'
        f'interval = "{ctx.args.interval}ms"\ntimeout = "1s"\nfailures = 1\n\n'
        f'[program.control]\ncommand = {stamp_cmd(control_stamps)}\n'
        'depends_on = { config-api = { condition = "ready", restart = true } }\n'))
    out = []
    try:
        c.wait_for(lambda: len(stamps(control_stamps)) >= 1, 30, 0.01, "control's first start")
        for _ in range(ctx.args.reps):
            c.wait_for(lambda: (status(ctx, local_env, "control") or {}).get("state") == "running",
                       30, 0.01, "control running")
            n_api, n_control = len(stamps(api_stamps)), len(stamps(control_stamps))
            # api's `sleep`, by its pid outside the namespace (status says the inner one).
            sleep_exe = os.path.realpath(c.SLEEP)
            api = c.wait_for(lambda: [p for p in peer.procs() if c.exe(p) == sleep_exe], 30,
                             0.01, "api's sleep")[0]
            time.sleep(random.uniform(0, ctx.args.interval / 1000.0))  # a random phase
            os.kill(api, signal.SIGKILL)
            c.wait_for(lambda: len(stamps(api_stamps)) > n_api, 30, 0.001, "api's restart")
            c.wait_for(lambda: len(stamps(control_stamps)) > n_control, 30, 0.001,
                       "control's restart")
            out.append((stamps(control_stamps)[-1] - stamps(api_stamps)[-1]) / 1e6)
            # Wait out any late second restart before the next repetition.
            time.sleep(0.3)
        return out
    finally:
        local.close()
        peer.close()
        shutil.rmtree(d, ignore_errors=True)


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100.0 * (len(xs) - 1))))]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--ctrlinit", default=None, help="binary (default: target/release, else debug)")
    ap.add_argument("--reps", type=int, default=30)
    ap.add_argument("--interval", type=int, default=1000, help="the external's interval, ms")
    ap.add_argument("--modes", default="stream,poll")
    args = ap.parse_args()
    if args.ctrlinit is None:
        rel = os.path.join(REPO, "target", "release", "ctrlinit")
        args.ctrlinit = rel if os.path.exists(rel) else os.path.join(REPO, "target", "debug", "ctrlinit")
    ctx = argparse.Namespace(args=args, ctrlinit=os.path.abspath(args.ctrlinit))
    print(f"binary: {ctx.ctrlinit}; interval {args.interval} ms; {args.reps} repetitions; "
          f"load {os.getloadavg()[0]:.1f}")
    print("mode     p50 ms   p95 ms   max ms   bound ms")
    for mode in args.modes.split(","):
        xs = run_mode(ctx, mode)
        bound = 200 if mode == "stream" else args.interval + 200
        print(f"{mode:<7} {statistics.median(xs):7.1f}  {pct(xs, 95):7.1f}  {max(xs):7.1f}  {bound:8d}")
        print("         all: " + " ".join(f"{x:.0f}" for x in xs))


if __name__ == "__main__":
    main()
