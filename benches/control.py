#!/usr/bin/env python3
"""Control-plane benchmark (issue 4): `ctrlinit status` round trips with 50 programs, and whether a
storm of status requests changes restart latency.

ctrlinit runs as PID 1 of its own PID namespace with 50 `sleep infinity` programs and one program
whose start appends a nanosecond timestamp (zero backoff). Measured:
  - round trip of one raw protocol request (connect, one JSON line, one answer line), sequential;
  - round trip of the `ctrlinit status --json` client binary (what scripts pay: process start too);
  - restart latency (SIGKILL -> new start) quiet, then during a storm of 1,000 status requests
    from 8 client threads at once, repeated while the kills happen;
  - for reference, restart latency while the same number of CPUs is kept busy by plain busy loops
    that send no request at all: what any load on this machine does to a fork+exec, so the storm's
    own effect is the difference between the two;
  - the CPU ctrlinit itself spent serving the storm.

Run as root: `sudo benches/control.py` (writes benches/RESULTS-control.md). `--quick` for a smoke run.
"""

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

BENCH_DIR = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(BENCH_DIR)
CTRLINIT = os.path.join(REPO, "target", "release", "ctrlinit")
HELPER = os.path.join(REPO, "target", "bench-helper", "benchhelper")


def build():
    subprocess.run(["cargo", "build", "--release", "--quiet"], cwd=REPO, check=True)
    os.makedirs(os.path.dirname(HELPER), exist_ok=True)
    subprocess.run(
        ["rustc", "-O", "--edition", "2021", "-o", HELPER, os.path.join(BENCH_DIR, "helper", "benchhelper.rs")],
        check=True,
    )


def wait_for(pred, deadline_s, what):
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        v = pred()
        if v:
            return v
        time.sleep(0.002)
    raise RuntimeError(f"timed out waiting for {what}")


def request(sock_path, body):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(10)
    s.connect(sock_path)
    s.sendall((json.dumps(body) + "\n").encode())
    buf = b""
    while not buf.endswith(b"\n"):
        chunk = s.recv(65536)
        if not chunk:
            break
        buf += chunk
    s.close()
    return json.loads(buf)


def percentile(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]


def start_init(d, programs):
    conf = os.path.join(d, "conf.d")
    os.makedirs(conf)
    with open(os.path.join(conf, "a.toml"), "w") as f:
        f.write(f'[init]\nlog_dir = "{d}/log"\ncrash_dir = "{d}/crash"\n')
        for i in range(programs):
            f.write(f'[program.s{i:02}]\ncommand = ["sleep", "infinity"]\n')
        f.write(
            f'[program.r]\ncommand = ["{HELPER}", "stamp", "{d}/stamps"]\n'
            'backoff = { initial = "0s", max = "0s" }\nmax_restarts = 999999\n'
        )
    sock = os.path.join(d, "ctrlinit.sock")
    env = dict(os.environ, CTRLINIT_SOCKET=sock)
    p = subprocess.Popen(
        ["unshare", "--pid", "--fork", "--mount-proc", "--kill-child", CTRLINIT, "--config-dir", conf],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )

    def all_up():
        try:
            r = request(sock, {"v": 1, "cmd": "status"})
            return all(x["state"] == "running" for x in r["programs"]) and len(r["programs"]) == programs + 1
        except OSError:
            return False

    wait_for(all_up, 30, "every program to run")
    return p, sock


def stamps(d):
    try:
        with open(os.path.join(d, "stamps")) as f:
            return [int(x) for x in f.read().split()]
    except OSError:
        return []


def restart_pid(sock):
    r = request(sock, {"v": 1, "cmd": "status", "names": ["r"]})
    return r["programs"][0]["pid"], r["programs"][0]["run"]


def host_pid(ns_pid, init_pid):
    """The host pid of the namespace's `ns_pid` (NSpid's last field)."""
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/status") as f:
                for line in f:
                    if line.startswith("NSpid:"):
                        ids = line.split()[1:]
                        if len(ids) > 1 and int(ids[-1]) == ns_pid and os.readlink(f"/proc/{entry}/ns/pid") == os.readlink(f"/proc/{init_pid}/ns/pid"):
                            return int(entry)
        except OSError:
            continue
    return None


def kill_latencies(d, sock, init_pid, kills, spacing):
    out = []
    for _ in range(kills):
        ns_pid, run = restart_pid(sock)
        pid = host_pid(ns_pid, init_pid)
        before = len(stamps(d))
        t = time.time_ns()
        os.kill(pid, 9)
        wait_for(lambda: len(stamps(d)) > before, 10, "the restart")
        out.append((stamps(d)[-1] - t) / 1e6)
        wait_for(lambda: restart_pid(sock)[1] > run, 10, "the new run")
        time.sleep(spacing)  # pacing between kills, not synchronisation
    return out


def storm(sock, total, threads, stop):
    done = [0]
    lock = threading.Lock()

    def worker():
        while not stop.is_set():
            with lock:
                if done[0] >= total:
                    return
                done[0] += 1
            request(sock, {"v": 1, "cmd": "status"})

    ts = [threading.Thread(target=worker) for _ in range(threads)]
    for t in ts:
        t.start()
    return ts, done


def busy_loops(n):
    """n processes that only burn CPU (no requests): the reference load."""
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)]


def cpu_ms(pid):
    """utime + stime of a process (all its threads), in ms."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) * 1000 / os.sysconf("SC_CLK_TCK")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--programs", type=int, default=50)
    ap.add_argument("--requests", type=int, default=2000)
    ap.add_argument("--kills", type=int, default=40)
    ap.add_argument("--out", default=os.path.join(BENCH_DIR, "RESULTS-control.md"))
    ap.add_argument("--no-build", action="store_true")
    ap.add_argument("--ctrlinit", default=None,
                    help="measure this binary instead of building target/release/ctrlinit")
    a = ap.parse_args()
    if a.ctrlinit:
        global CTRLINIT
        CTRLINIT = os.path.abspath(a.ctrlinit)
        a.no_build = True
    if a.quick:
        a.requests, a.kills = 200, 8
    if not a.no_build:
        build()
    d = tempfile.mkdtemp(prefix="ctrlinit-control-")
    p, sock = start_init(d, a.programs)
    init_pid = int(open(f"/proc/{p.pid}/task/{p.pid}/children").read().split()[0])
    try:
        raw = []
        for _ in range(a.requests):
            t = time.perf_counter_ns()
            request(sock, {"v": 1, "cmd": "status"})
            raw.append((time.perf_counter_ns() - t) / 1e6)
        cli = []
        for _ in range(max(20, a.requests // 20)):
            t = time.perf_counter_ns()
            subprocess.run([CTRLINIT, "status", "--json"], env=dict(os.environ, CTRLINIT_SOCKET=sock),
                           stdout=subprocess.DEVNULL, check=True)
            cli.append((time.perf_counter_ns() - t) / 1e6)
        quiet = kill_latencies(d, sock, init_pid, a.kills, 0.3)
        stop = threading.Event()
        stormy = []
        answered = 0
        cpu_before, wall_before = cpu_ms(init_pid), time.monotonic()
        for _ in range(a.kills):
            threads, done = storm(sock, 1000, 8, stop)
            stormy.extend(kill_latencies(d, sock, init_pid, 1, 0.0))
            for t in threads:
                t.join()
            answered += done[0]
        stop.set()
        storm_cpu = cpu_ms(init_pid) - cpu_before
        storm_wall = (time.monotonic() - wall_before) * 1000
        burners = busy_loops(os.cpu_count() or 2)
        try:
            busy = kill_latencies(d, sock, init_pid, a.kills, 0.05)
        finally:
            for b in burners:
                b.kill()
                b.wait()
    finally:
        p.kill()
        p.wait()
    m = lambda xs: statistics.median(xs)
    lines = [
        "# ctrlinit control plane: status latency and restarts under a request storm",
        "",
        f"Generated by `benches/control.py` on {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; "
        f"{a.programs} programs plus one restarting program; ctrlinit as PID 1 of its own PID namespace. "
        "Reproduce with `sudo benches/control.py`.",
        "",
        "| measure | median | p99 |",
        "|---|---|---|",
        f"| raw protocol `status` round trip ({len(raw)} sequential, new connection each) | {m(raw):.3f} ms | {percentile(raw, 99):.3f} ms |",
        f"| `ctrlinit status --json` client binary ({len(cli)} runs, process start included) | {m(cli):.2f} ms | {percentile(cli, 99):.2f} ms |",
        f"| restart after SIGKILL, quiet ({len(quiet)} kills) | {m(quiet):.2f} ms | {percentile(quiet, 99):.2f} ms |",
        f"| restart after SIGKILL, during a storm of 1,000 status requests from 8 threads ({len(stormy)} kills; {answered} requests answered) | {m(stormy):.2f} ms | {percentile(stormy, 99):.2f} ms |",
        f"| reference: restart after SIGKILL while {os.cpu_count()} busy loops keep every CPU busy, no requests ({len(busy)} kills) | {m(busy):.2f} ms | {percentile(busy, 99):.2f} ms |",
        "",
        f"Storm / quiet restart median: {m(stormy) / m(quiet):.2f}×; busy loops / quiet: {m(busy) / m(quiet):.2f}×. "
        f"ctrlinit spent {storm_cpu:.0f} ms of CPU serving {answered} requests over {storm_wall / 1000:.1f} s "
        f"({storm_cpu / max(answered, 1) * 1000:.1f} µs per request; {storm_cpu / storm_wall * 100:.0f}% of one CPU).",
        "",
    ]
    with open(a.out, "w") as f:
        f.write("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    sys.exit(main())
