#!/usr/bin/env python3
"""Idle cost of `[init.network]` and externals (issue 22's bound: on, with two externals at a
10 s interval, no wake-ups beyond the checks' own, <= 3 per check, and under 64 KiB of PSS).

ctrlinit as PID 1 of its own PID namespace (compare.py's machinery) with one `sleep infinity`
program, in three configurations, each measured over --seconds after --settle:

  base       nothing else
  network    `[init.network] on_lost = "warn"` only (the resolver must not be built: no external)
  externals  `[init.network]` and two externals every 10 s: a tcp check on a listener of this
             script by name (`localhost`, so the resolver is built and used) and one by IP

Context switches of every thread of the init (each is a wake-up), checks made, and PSS.
Run as root: `sudo benches/externals_idle.py [--ctrlinit target/release/ctrlinit]`.
"""

import argparse
import json
import os
import shutil
import socket
import sys
import tempfile
import time

BENCH_DIR = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, BENCH_DIR)
import compare as c  # noqa: E402


def conf(d, kind, port):
    lines = ["[init]", f"log_dir = {json.dumps(os.path.join(d, 'logs'))}",
             f"crash_dir = {json.dumps(os.path.join(d, 'crash'))}", ""]
    if kind in ("network", "externals", "by-ip"):
        lines += ["[init.network]", 'on_lost = "warn"', ""]
    if kind == "by-ip":
        for n in ("ip1", "ip2"):
            lines += [f"[external.{n}]", f'tcp = "127.0.0.1:{port}"', 'interval = "10s"', ""]
    if kind == "externals":
        lines += ["[external.byname]", f'tcp = "localhost:{port}"', 'interval = "10s"', "",
                  "[external.byip]", f'tcp = "127.0.0.1:{port}"', 'interval = "10s"', ""]
    lines += ["[program.s000]", f"command = {json.dumps([c.SLEEP, 'infinity'])}", ""]
    os.makedirs(os.path.join(d, "conf.d"), exist_ok=True)
    with open(os.path.join(d, "conf.d", "a.toml"), "w") as f:
        f.write("\n".join(lines))


def one(args, kind, port):
    d = tempfile.mkdtemp(prefix=f"externals-idle-{kind}-")
    conf(d, kind, port)
    env = dict(os.environ, CTRLINIT_SOCKET=os.path.join(d, "ctrlinit.sock"))
    ns = c.Namespace([args.ctrlinit, "--config-dir", os.path.join(d, "conf.d")], cwd=d, env=env,
                     stdout=os.path.join(d, "out"), stderr=os.path.join(d, "err"))
    try:
        sleep_exe = os.path.realpath(c.SLEEP)
        c.wait_for(lambda: any(c.exe(p) == sleep_exe for p in ns.procs()), 60, 0.01, "the program")
        time.sleep(args.settle)
        sw_a = c.thread_switches(ns.init)
        time.sleep(args.seconds)  # the measured window
        sw_b = c.thread_switches(ns.init)
        # Each thread's share, by name, so a change shows where the wake-ups are.
        by_thread = {thread_name(tid): sw_b[tid] - sw_a.get(tid, 0) for tid in sw_b}
        return {"switches": sum(by_thread.values()), "pss_kib": c.pss_kib(ns.init),
                "by_thread": by_thread}
    finally:
        ns.close()
        if not os.environ.get("KEEP"):
            shutil.rmtree(d, ignore_errors=True)


def thread_name(tid):
    """`comm` of one thread (pid, tid), with its tid so two threads of one name stay apart."""
    pid, t = tid
    return f"{c.read(f'/proc/{pid}/task/{t}/comm', '?').strip()}:{t}"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--ctrlinit", default=os.path.join(c.REPO, "target", "release", "ctrlinit"))
    ap.add_argument("--seconds", type=float, default=60)
    ap.add_argument("--settle", type=float, default=3)
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--kinds", default="base,network,by-ip,externals",
                    help="by-ip: two externals by IP literal (no resolver)")
    args = ap.parse_args()
    args.ctrlinit = os.path.abspath(args.ctrlinit)
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(128)
    port = listener.getsockname()[1]
    checks = 2 * args.seconds / 10.0
    print(f"binary {args.ctrlinit}; window {args.seconds:g} s; {args.reps} reps; "
          f"load {os.getloadavg()[0]:.1f}; checks expected in the window: {checks:g}")
    rows = {}
    for rep in range(args.reps):
        for kind in args.kinds.split(","):
            rows.setdefault(kind, []).append(one(args, kind, port))
    base_sw = min(r["switches"] for r in rows["base"])
    base_pss = min(r["pss_kib"] for r in rows["base"])
    print("config     switches (each rep)     PSS KiB (each rep)   +PSS vs base   switches/check")
    for kind, rs in rows.items():
        sw = min(r["switches"] for r in rs)
        pss = min(r["pss_kib"] for r in rs)
        per = f"{(sw - base_sw) / checks:.2f}" if kind in ("externals", "by-ip") else "-"
        print(f"{kind:<10} {str([r['switches'] for r in rs]):<22} {str([r['pss_kib'] for r in rs]):<20} "
              f"{pss - base_pss:+6d}        {per}")
    for kind, rs in rows.items():
        print(f"{kind} by thread (each rep): {[r['by_thread'] for r in rs]}")


if __name__ == "__main__":
    main()
