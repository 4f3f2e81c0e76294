#!/usr/bin/env python3
"""What `[program.NAME.limits]` guards cost (issue 24): ctrlinit's CPU, wake-ups and PSS with
--programs `sleep infinity` programs, each guarded (`memory = "1GiB"`, `fds = 20000`, `interval =
--interval`), against the same programs with no limits, in the same run (variants interleaved
repetition by repetition, so the machine's load falls on both alike). With --base, a second
binary (the commit before limits existed) runs the unguarded variant too: idle PSS and wake-ups
with no limits configured, before and after.

Every init runs as PID 1 of its own PID namespace (compare.py's machinery); its CPU is utime +
stime of all its threads from /proc/PID/stat over --seconds, after --settle.

    sudo benches/guard_cost.py --ctrlinit target/release/ctrlinit \
        [--base /tmp/base/target/release/ctrlinit] [--programs 100] [--seconds 120] [--reps 2]
"""

import argparse
import json
import os
import statistics
import sys
import tempfile
import time

BENCH_DIR = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, BENCH_DIR)
import compare as c  # noqa: E402


def conf(d, programs, interval, guarded):
    """Writes conf.d with `programs` sleepers, guarded or not; returns (argv tail, env)."""
    path = os.path.join(d, "conf.d")
    os.makedirs(path, exist_ok=True)
    lines = [
        "[init]",
        f"log_dir = {json.dumps(os.path.join(d, 'logs'))}",
        f"crash_dir = {json.dumps(os.path.join(d, 'crash'))}",
        "",
    ]
    for i in range(programs):
        lines += [f"[program.s{i:03d}]", f"command = {json.dumps([c.SLEEP, 'infinity'])}"]
        if guarded:
            lines += [
                f"[program.s{i:03d}.limits]",
                'memory = "1GiB"',
                "fds = 20000",
                f'interval = "{interval}"',
            ]
        lines.append("")
    with open(os.path.join(path, "bench.toml"), "w") as f:
        f.write("\n".join(lines))
    env = dict(os.environ, CTRLINIT_SOCKET=os.path.join(d, "ctrlinit.sock"))
    return ["--config-dir", path], env


def measure(binary, programs, interval, guarded, seconds, settle):
    """One init: CPU (ms), context switches and PSS (KiB) of ctrlinit over `seconds`."""
    with tempfile.TemporaryDirectory(prefix="ctrlinit-guards-") as d:
        tail, env = conf(d, programs, interval, guarded)
        ns = c.Namespace([os.path.abspath(binary)] + tail, cwd=d, env=env)
        try:
            sleep_exe = os.path.realpath(c.SLEEP)
            c.wait_for(
                lambda: sum(1 for p in ns.procs() if c.exe(p) == sleep_exe) >= programs,
                120, 0.01, f"{programs} sleepers",
            )
            time.sleep(settle)
            cpu0 = c.cpu_ticks(ns.init)
            sw0 = sum(c.thread_switches(ns.init).values())
            time.sleep(seconds)  # the measured window: the one fixed wait
            cpu1 = c.cpu_ticks(ns.init)
            sw1 = sum(c.thread_switches(ns.init).values())
            return {
                "cpu_ms": (cpu1 - cpu0) * 1000.0 / c.CLK_TCK,
                "switches": sw1 - sw0,
                "pss_kib": c.pss_kib(ns.init),
            }
        finally:
            ns.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ctrlinit", default=os.path.join(os.path.dirname(BENCH_DIR), "target/release/ctrlinit"))
    ap.add_argument("--base", help="a ctrlinit without limits, for the unguarded A/B")
    ap.add_argument("--programs", type=int, default=100)
    ap.add_argument("--interval", default="10s")
    ap.add_argument("--seconds", type=float, default=120)
    ap.add_argument("--settle", type=float, default=8, help="after start, before measuring (past the idle release)")
    ap.add_argument("--reps", type=int, default=1)
    args = ap.parse_args()
    variants = [("new, no limits", args.ctrlinit, False), ("new, guarded", args.ctrlinit, True)]
    if args.base:
        variants.insert(0, ("base, no limits", args.base, False))
    results = {name: [] for name, _, _ in variants}
    for rep in range(args.reps):
        for name, binary, guarded in variants:
            r = measure(binary, args.programs, args.interval, guarded, args.seconds, args.settle)
            c.log(f"rep {rep + 1} {name}: {r}")
            results[name].append(r)
    looks = args.programs * args.seconds / float(args.interval.rstrip("s"))
    print(f"\n{args.programs} programs, interval {args.interval}, {args.seconds:.0f} s window, {args.reps} rep(s)\n")
    print("| variant | CPU ms (median) | % of a core | switches | PSS KiB |")
    print("|---|---|---|---|---|")
    for name, _, _ in variants:
        rs = results[name]
        cpu = statistics.median(r["cpu_ms"] for r in rs)
        print(
            f"| {name} | {cpu:.0f} | {cpu / (args.seconds * 10):.3f} | "
            f"{statistics.median(r['switches'] for r in rs):.0f} | "
            f"{statistics.median(r['pss_kib'] for r in rs):.0f} |"
        )
    print(f"\nguarded: about {looks:.0f} program measurements in the window")


if __name__ == "__main__":
    main()
