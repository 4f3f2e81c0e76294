#!/usr/bin/env python3
"""Benchmarks of failure detection (issue 14), side by side where a peer does the same work.

Every init runs as PID 1 of its own PID namespace (compare.py's machinery). The check target is
a small counting server run by this script outside the namespaces (its CPU is nobody's under
test): it accepts TCP connections and answers any HTTP request with 200.

  idle-checks  --idle-programs `sleep infinity` programs, each with a tcp check every
               --idle-interval: ctrlinit's context switches per check (all its threads), CPU, and
               PSS over --idle-seconds; the same again with the probe endpoint on (`[init] http`,
               one GET /livez before the window, none during it: the endpoint's cost at rest);
               PSS beside ctrlinit without checks and runit (which has no checks) with the same
               programs
  checks-cpu   --cpu-programs programs with a tcp check, then an http check, every 1 s:
               ctrlinit's CPU over --cpu-seconds as % of one core and per check; Horust (http
               checks only, its fixed 1 s period) in the same run when --horust is given
  hang         one HTTP service with an http check (interval I, failures F, timeout T) is
               SIGSTOPped (it keeps its pid and its port, and answers nothing): the time until
               its next run is spawned, against the bound I*F + T + 50 ms

Run as root: `sudo benches/health.py [--horust PATH]` (build Horust from its repository with
`cargo build --release -p horust`; nothing of it is committed here). Results: printed, and
written to benches/RESULTS-health.md with --out. `--quick`: tiny sizes, for a smoke run of a
few seconds (not representative).
"""

import argparse
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request

BENCH_DIR = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, BENCH_DIR)
import compare as c  # noqa: E402

REPO = os.path.dirname(BENCH_DIR)
HTTPD = os.path.join(REPO, "tests", "programs", "httpd.py")


class Target:
    """Accepts connections on a loopback port; answers an HTTP request with 200; counts both."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(1024)
        self.port = self.sock.getsockname()[1]
        self.connections = 0
        self.requests = 0
        self.lock = threading.Lock()
        threading.Thread(target=self.serve, daemon=True).start()

    def serve(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with self.lock:
                self.connections += 1
            threading.Thread(target=self.one, args=(conn,), daemon=True).start()

    def one(self, conn):
        conn.settimeout(2)
        try:
            data = conn.recv(4096)
            if data:
                with self.lock:
                    self.requests += 1
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
        except OSError:
            pass
        finally:
            conn.close()

    def counts(self):
        with self.lock:
            return self.connections, self.requests


def free_port():
    """A loopback port nothing listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get(port, path):
    """GET http://127.0.0.1:PORT/PATH: the status (503 is an answer too)."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=10) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code


def ctrlinit_conf(d, programs, check, interval, extra_init=""):
    conf = os.path.join(d, "conf.d")
    os.makedirs(conf, exist_ok=True)
    lines = [
        "[init]",
        f"log_dir = {json.dumps(os.path.join(d, 'logs'))}",
        f"crash_dir = {json.dumps(os.path.join(d, 'crash'))}",
        extra_init,
        "",
    ]
    for i in range(programs):
        lines += [f"[program.s{i:03d}]", f"command = {json.dumps([c.SLEEP, 'infinity'])}"]
        if check:
            lines += [f"[program.s{i:03d}.health]", f"check = {check}", f'interval = "{interval}"', ""]
        lines.append("")
    with open(os.path.join(conf, "bench.toml"), "w") as f:
        f.write("\n".join(lines))
    env = dict(os.environ, CTRLINIT_SOCKET=os.path.join(d, "ctrlinit.sock"))
    return conf, env


def status(ctx, d):
    out = subprocess.run(
        [ctx.ctrlinit, "status", "--json"],
        env=dict(os.environ, CTRLINIT_SOCKET=os.path.join(d, "ctrlinit.sock")),
        capture_output=True, text=True, timeout=30,
    )
    return json.loads(out.stdout) if out.stdout.strip().startswith("[") else []


def checks_made(ctx, d):
    return sum((p.get("health") or {}).get("checks_total", 0) for p in status(ctx, d))


def init_usage(pid):
    """CPU ticks and context switches of every thread of `pid` (the init alone)."""
    return c.cpu_ticks(pid), sum(c.thread_switches(pid).values())


def wait_sleepers(ns, n):
    sleep_exe = os.path.realpath(c.SLEEP)
    c.wait_for(lambda: sum(1 for p in ns.procs() if c.exe(p) == sleep_exe) >= n, 60, 0.01, f"{n} sleepers")


def run_ctrlinit(ctx, d, programs, check, interval, seconds, extra_init="", before=None):
    """ctrlinit with `programs` sleepers over a window of `seconds`; `extra_init` goes into its
    [init] table, and `before()` runs once it settled, before the window."""
    conf, env = ctrlinit_conf(d, programs, check, interval, extra_init)
    ns = c.Namespace([ctx.ctrlinit, "--config-dir", conf], cwd=d, env=env,
                     stdout=os.path.join(d, "out"), stderr=os.path.join(d, "err"))
    try:
        wait_sleepers(ns, programs)
        if before:
            before()
        time.sleep(ctx.args.settle)
        made_a = checks_made(ctx, d) if check else 0
        cpu_a, sw_a = init_usage(ns.init)
        time.sleep(seconds)  # the measured window: the one fixed wait
        cpu_b, sw_b = init_usage(ns.init)
        # Before the status request below, which would page in the control plane's code.
        pss = c.pss_kib(ns.init)
        made_b = checks_made(ctx, d) if check else 0
        return {
            "checks": made_b - made_a,
            "switches": sw_b - sw_a,
            "cpu_ms": (cpu_b - cpu_a) * 1000.0 / c.CLK_TCK,
            "pss_kib": pss,
            "seconds": seconds,
        }
    finally:
        ns.close()


def run_runit_pss(ctx, d, programs):
    ctx.which = {"runsvdir": shutil.which("runsvdir")}
    if not ctx.which["runsvdir"]:
        return None
    return c.idle(ctx, c.Runit(ctx), d, programs, 0)["pss_kib"]


def run_horust(ctx, d, programs, target, seconds):
    services = os.path.join(d, "services")
    os.makedirs(services, exist_ok=True)
    for i in range(programs):
        with open(os.path.join(services, f"s{i:03d}.toml"), "w") as f:
            f.write(f'command = "{c.SLEEP} infinity"\n\n[healthiness]\n'
                    f'http-endpoint = "http://127.0.0.1:{target.port}/healthz"\n')
    ns = c.Namespace([ctx.args.horust, "--services-path", services], cwd=d,
                     stdout=os.path.join(d, "out"), stderr=os.path.join(d, "err"))
    try:
        wait_sleepers(ns, programs)
        time.sleep(ctx.args.settle + 1)
        _, req_a = target.counts()
        cpu_a, sw_a = init_usage(ns.init)
        time.sleep(seconds)
        cpu_b, sw_b = init_usage(ns.init)
        _, req_b = target.counts()
        return {
            "checks": req_b - req_a,
            "switches": sw_b - sw_a,
            "cpu_ms": (cpu_b - cpu_a) * 1000.0 / c.CLK_TCK,
            "pss_kib": c.pss_kib(ns.init),
            "seconds": seconds,
        }
    finally:
        ns.close()


def hang(ctx, d, interval, failures, timeout, times):
    port = Target().port  # a free port: its listener is closed at once below
    conf = os.path.join(d, "conf.d")
    os.makedirs(conf, exist_ok=True)
    with open(os.path.join(conf, "hang.toml"), "w") as f:
        f.write(f"""[init]
log_dir = {json.dumps(os.path.join(d, 'logs'))}
crash_dir = {json.dumps(os.path.join(d, 'crash'))}

[program.web]
command = ["/usr/bin/python3", {json.dumps(HTTPD)}, "{port + 1}", {json.dumps(d)}]
ready = {{ http = "http://127.0.0.1:{port + 1}/ready", interval = "20ms" }}
backoff = {{ initial = "0s", max = "0s" }}
max_restarts = 1000
stop_timeout = "1s"
[program.web.health]
check = {{ http = "http://127.0.0.1:{port + 1}/healthz" }}
interval = "{interval}s"
timeout = "{timeout}s"
failures = {failures}
""")
    env = dict(os.environ, CTRLINIT_SOCKET=os.path.join(d, "ctrlinit.sock"))
    ns = c.Namespace([ctx.ctrlinit, "--config-dir", conf], cwd=d, env=env,
                     stdout=os.path.join(d, "out"), stderr=os.path.join(d, "err"))
    python = os.path.realpath("/usr/bin/python3")
    latencies = []
    try:
        for _ in range(times):
            def healthy_pid():
                for p in status(ctx, d):
                    if p["name"] == "web" and (p.get("health") or {}).get("status") == "healthy":
                        return p["pid"]
                return None
            c.wait_for(healthy_pid, 60, 0.05, "web healthy")
            pids = [p for p in ns.procs() if c.exe(p) == python]
            assert len(pids) == 1, pids
            victim = pids[0]
            t0 = time.monotonic()
            os.kill(victim, signal.SIGSTOP)
            c.wait_for(lambda: [p for p in ns.procs() if c.exe(p) == python and p != victim
                                and c.state(p) not in ("Z", None)], 60, 0.001, "a new run")
            latencies.append(time.monotonic() - t0)
        bound = interval * failures + timeout + 0.05
        return {
            "bound_s": bound,
            "median_s": statistics.median(latencies),
            "max_s": max(latencies),
            "min_s": min(latencies),
            "within_bound": sum(1 for x in latencies if x <= bound),
            "runs": len(latencies),
        }
    finally:
        ns.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ctrlinit", default=os.path.join(REPO, "target", "release", "ctrlinit"))
    ap.add_argument("--horust", default=None, help="a Horust binary, for the checks-cpu comparison")
    ap.add_argument("--workloads", default="idle-checks,checks-cpu,hang")
    ap.add_argument("--settle", type=float, default=1.0)
    ap.add_argument("--idle-programs", type=int, default=10)
    ap.add_argument("--idle-interval", default="10s")
    ap.add_argument("--idle-seconds", type=float, default=60.0)
    ap.add_argument("--cpu-programs", type=int, default=100)
    ap.add_argument("--cpu-seconds", type=float, default=30.0)
    ap.add_argument("--hang-times", type=int, default=10)
    ap.add_argument("--hang-interval", type=float, default=1.0)
    ap.add_argument("--hang-failures", type=int, default=2)
    ap.add_argument("--hang-timeout", type=float, default=0.5)
    ap.add_argument("--out", default=None, help="also write the results here (markdown)")
    ap.add_argument("--quick", action="store_true",
                    help="tiny sizes and windows: a smoke run of a few seconds, not representative")
    args = ap.parse_args()
    if args.quick:
        args.settle, args.idle_programs, args.idle_interval, args.idle_seconds = 0.2, 2, "1s", 2.0
        args.cpu_programs, args.cpu_seconds = 3, 1.0
        args.hang_times, args.hang_interval, args.hang_failures, args.hang_timeout = 1, 0.2, 2, 0.2
    ctx = c.Ctx()
    ctx.args, ctx.ctrlinit, ctx.commands = args, args.ctrlinit, {}
    ctx.helper = os.path.join(REPO, "target", "bench-helper", "benchhelper")
    c.set_subreaper()
    target = Target()
    work = tempfile.mkdtemp(prefix="ctrlinit-health-bench.")
    results = {}
    workloads = args.workloads.split(",")

    def d(name):
        p = os.path.join(work, name)
        os.makedirs(p, exist_ok=True)
        return p

    if "idle-checks" in workloads:
        tcp = f'{{ tcp = "127.0.0.1:{target.port}" }}'
        r = run_ctrlinit(ctx, d("idle-checks"), args.idle_programs, tcp, args.idle_interval, args.idle_seconds)
        r["switches_per_check"] = r["switches"] / max(r["checks"], 1)
        port = free_port()

        def probe_once():
            c.wait_for(lambda: get(port, "/livez") == 200, 60, 0.05, "/livez 200")

        h = run_ctrlinit(ctx, d("idle-checks-http"), args.idle_programs, tcp, args.idle_interval,
                         args.idle_seconds, extra_init=f'http = "127.0.0.1:{port}"', before=probe_once)
        h["switches_per_check"] = h["switches"] / max(h["checks"], 1)
        r["http"] = h
        r["pss_without_checks_kib"] = run_ctrlinit(ctx, d("idle-plain"), args.idle_programs, None, None, 1)["pss_kib"]
        r["runit_pss_kib"] = run_runit_pss(ctx, d("idle-runit"), args.idle_programs)
        results["idle-checks"] = r
        c.log("idle-checks:", r)
    if "checks-cpu" in workloads:
        for kind, check in [("tcp", f'{{ tcp = "127.0.0.1:{target.port}" }}'),
                            ("http", f'{{ http = "http://127.0.0.1:{target.port}/healthz" }}')]:
            r = run_ctrlinit(ctx, d(f"cpu-{kind}"), args.cpu_programs, check, "1s", args.cpu_seconds)
            r["cpu_percent"] = 100.0 * r["cpu_ms"] / 1000.0 / r["seconds"]
            r["us_per_check"] = 1000.0 * r["cpu_ms"] / max(r["checks"], 1)
            results[f"checks-cpu-ctrlinit-{kind}"] = r
            c.log(f"checks-cpu ctrlinit {kind}:", r)
        if args.horust:
            r = run_horust(ctx, d("cpu-horust"), args.cpu_programs, target, args.cpu_seconds)
            r["cpu_percent"] = 100.0 * r["cpu_ms"] / 1000.0 / r["seconds"]
            r["us_per_check"] = 1000.0 * r["cpu_ms"] / max(r["checks"], 1)
            results["checks-cpu-horust-http"] = r
            c.log("checks-cpu horust http:", r)
    if "hang" in workloads:
        r = hang(ctx, d("hang"), args.hang_interval, args.hang_failures, args.hang_timeout, args.hang_times)
        results["hang"] = r
        c.log("hang:", r)
    text = render(results, args)
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)
    shutil.rmtree(work, ignore_errors=True)


def render(results, args):
    out = ["# Failure detection benchmarks (issue 14)", "",
           f"Machine: {os.cpu_count()} CPUs, {os.uname().release}. ctrlinit: `{os.path.relpath(args.ctrlinit, REPO) if args.ctrlinit.startswith(REPO + '/') else args.ctrlinit}`. "
           f"Command: `sudo benches/health.py{' --quick' if args.quick else ''}{' --horust PATH' if args.horust else ''}`"
           f"{' (QUICK smoke mode, tiny sizes: not representative)' if args.quick else ''}.", ""]
    r = results.get("idle-checks")
    if r:
        out += ["## Idle with checks", "",
                f"{args.idle_programs} programs, a tcp check each every {args.idle_interval}, over {r['seconds']:.0f} s.", "",
                "| metric | value |", "|---|---|",
                f"| checks made | {r['checks']} |",
                f"| ctrlinit context switches (all threads) | {r['switches']} |",
                f"| switches per check | {r['switches_per_check']:.2f} |",
                f"| ctrlinit CPU | {r['cpu_ms']:.0f} ms |",
                f"| ctrlinit PSS with checks | {r['pss_kib']} KiB |",
                f"| ctrlinit PSS without checks | {r['pss_without_checks_kib']} KiB |",
                f"| with `[init] http` on: checks made | {r['http']['checks']} |",
                f"| with `[init] http` on: switches per check | {r['http']['switches_per_check']:.2f} |",
                f"| with `[init] http` on: ctrlinit CPU | {r['http']['cpu_ms']:.0f} ms |",
                f"| with `[init] http` on: ctrlinit PSS with checks | {r['http']['pss_kib']} KiB |",
                f"| runit PSS (runsvdir + runsv, no checks) | {r['runit_pss_kib']} KiB |", ""]
    rows = [(k, v) for k, v in results.items() if k.startswith("checks-cpu")]
    if rows:
        out += ["## 100 checks per second", "",
                f"{args.cpu_programs} programs, one check each every second, over {args.cpu_seconds:.0f} s.", "",
                "| init, check | checks | CPU (% of one core) | CPU per check | switches | PSS |",
                "|---|---|---|---|---|---|"]
        for k, v in rows:
            name = k.replace("checks-cpu-", "").replace("-", ", ")
            out.append(f"| {name} | {v['checks']} | {v['cpu_percent']:.2f} % | {v['us_per_check']:.0f} µs |"
                       f" {v['switches']} | {v['pss_kib']} KiB |")
        out.append("")
    r = results.get("hang")
    if r:
        out += ["## A hung daemon to its restart", "",
                f"http check every {args.hang_interval} s, failures = {args.hang_failures}, timeout = "
                f"{args.hang_timeout} s; SIGSTOP to the next run spawned, {r['runs']} times.", "",
                "| bound (I×F + T + 50 ms) | min | median | max | within the bound |", "|---|---|---|---|---|",
                f"| {r['bound_s']*1000:.0f} ms | {r['min_s']*1000:.0f} ms | {r['median_s']*1000:.0f} ms |"
                f" {r['max_s']*1000:.0f} ms | {r['within_bound']} of {r['runs']} |", ""]
    return "\n".join(out)


if __name__ == "__main__":
    main()
