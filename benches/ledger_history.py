#!/usr/bin/env python3
"""How long `ctrlinit history` takes over a large run ledger (issue 25: 100,000 lines under a
second).

Writes a ledger of N lines (default 100,000) as a crash-looping container's would look: boots of
twenty programs starting, becoming ready, crashing and restarting, each boot ending cleanly or
not, a few torn and foreign lines among them; then times `ctrlinit history --ledger FILE` (text
and --json), best and median of --reps runs.

    benches/ledger_history.py --bin target/release/ctrlinit [--lines 100000] [--reps 5]
"""

import argparse
import json
import os
import statistics
import subprocess
import tempfile
import time


def records(n):
    """`n` ledger lines (str, newline-terminated)."""
    out, t, boot, run = [], 1_764_000_000.0, 0, {}
    programs = [f"prog{i:02d}" for i in range(20)]

    def line(kind, **fields):
        nonlocal t
        t += 0.05
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + f".{int(t * 1000) % 1000:03d}Z"
        out.append(json.dumps({"t": stamp, "boot": f"boot-{boot:04d}", "kind": kind, **fields}) + "\n")

    while len(out) < n:
        boot += 1
        line("boot", version="0.1.0", config_hash="0123456789abcdef", hostname="role", pid1=True, previous="clean")
        for _ in range(200):
            p = programs[len(out) % len(programs)]
            run[p] = run.get(p, 0) + 1
            line("start", program=p, run=run[p], pid=1000 + len(out))
            line("ready", program=p, run=run[p], latency_ms=len(out) % 700)
            line("exit", program=p, run=run[p], code=3, cause="crash", uptime_ms=1234)
            line("restart", program=p, delay_ms=100, in_window=2, max_restarts=10)
        if boot % 3:
            line("end", reason="received SIGTERM", exit_status=0, shutdown_ms=420)
        out.append("not a ledger line\n")
        out.append('{"t":"2026-01-01T00:00:00.000Z","boot":"x","kind":"ex')
        out.append("\n")
    return out[:n]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", default="target/release/ctrlinit")
    ap.add_argument("--lines", type=int, default=100_000)
    ap.add_argument("--reps", type=int, default=5)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="ledger-history.") as d:
        path = os.path.join(d, "ledger.jsonl")
        with open(path, "w") as f:
            f.writelines(records(args.lines))
        size = os.path.getsize(path)
        print(f"{args.lines} lines, {size / 2**20:.1f} MiB: {path}")
        for extra in ([], ["--json"]):
            times = []
            for _ in range(args.reps):
                began = time.perf_counter()
                r = subprocess.run([args.bin, "history", "--ledger", path, *extra], capture_output=True)
                times.append(time.perf_counter() - began)
                if r.returncode != 0:
                    raise SystemExit(f"history failed: {r.stderr.decode()}")
            label = "history " + " ".join(extra) if extra else "history"
            print(f"{label:<16} best {min(times) * 1000:.0f} ms, median {statistics.median(times) * 1000:.0f} ms ({args.reps} runs)")


if __name__ == "__main__":
    main()
