#!/usr/bin/env python3
"""Same-run A/B of two ctrlinit builds: is a change a regression?

Runs compare.py's workloads (idle, restart, logs, reap, start, stop) against two ctrlinit
binaries, BASE (for example the commit before a change) and NEW, interleaved repetition by
repetition (BASE, NEW, BASE, NEW, …) so that drift in the machine's load falls on both alike, and
prints for each headline metric both medians and NEW/BASE. A ratio is a regression only when it
is worse than --noise (default 15 %) in the metric's bad direction: single figures move that much
between runs on a loaded 2-core machine (see RESULTS.md), a same-run ratio much less.

    sudo benches/versus.py --base /tmp/base/ctrlinit --new target/release/ctrlinit --reps 3
    sudo benches/versus.py --base A --new B --quick          # smoke test, seconds
    sudo benches/versus.py --base B --new B --base-init 'ledger = false' --workloads restart,idle
                                                             # one build, a setting off vs on

Build BASE from a clean checkout of the earlier commit (`git worktree add /tmp/base REV &&
cargo build --release --manifest-path /tmp/base/Cargo.toml`). Results: a Markdown table on
stdout, and with --out a file too. Run as root.
"""

import argparse
import os
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compare  # noqa: E402  (the workloads and their measurement)

# (workload, metric, unit, which direction is worse)
HEADLINES = [
    ("idle", "pss_kib", "KiB", "higher"),
    ("idle", "cpu_ms", "ms", "higher"),
    ("idle", "switches", "", "higher"),
    ("idle100", "pss_kib", "KiB", "higher"),
    ("restart", "median_ms", "ms", "higher"),
    ("restart", "p90_ms", "ms", "higher"),
    ("logs", "mb_s", "MB/s", "lower"),
    ("logs", "cpu_ms_per_mib", "ms", "higher"),
    ("reap", "clear_ms", "ms", "higher"),
    ("start", "all_ms", "ms", "higher"),
    ("stop", "ms", "ms", "higher"),
    ("stop_ignore", "late_ms", "ms", "higher"),
]


def run_one(ctx, tool, key, fn, root):
    d = tempfile.mkdtemp(prefix=f"{key}-", dir=root)
    try:
        return fn(d)
    except Exception as e:  # a failed run is reported, not fatal
        return {"error": f"{type(e).__name__}: {e}"}
    finally:
        import shutil

        shutil.rmtree(d, ignore_errors=True)


def workloads(ctx, tool, args):
    """(key, fn(d)) for each workload asked for."""
    w = args.workloads.split(",")
    out = []
    if "idle" in w:
        out.append(("idle", lambda d: compare.idle(ctx, tool, d, args.idle_programs, args.idle_seconds)))
        out.append(("idle100", lambda d: compare.idle(ctx, tool, d, args.pss_programs, 0)))
    if "restart" in w:
        out.append(("restart", lambda d: compare.restart(ctx, tool, d, args.kills, args.kill_spacing)))
    if "logs" in w:
        out.append(("logs", lambda d: compare.logs(ctx, tool, d, args.log_mib)))
    if "reap" in w:
        out.append(("reap", lambda d: compare.reap(ctx, tool, d, args.orphans, args.reap_deadline)))
    if "start" in w:
        out.append(("start", lambda d: compare.start(ctx, tool, d, args.start_programs)))
    if "stop" in w:
        out.append(("stop", lambda d: compare.stop(ctx, tool, d, args.stop_programs)))
        out.append(("stop_ignore", lambda d: compare.stop_ignore(ctx, tool, d, args.stop_timeout)))
    return out


def value(res, metric):
    v = res.get(metric)
    if metric == "switches" and v is None:
        v = res.get("ctx_switches", res.get("voluntary_switches"))
    return v if isinstance(v, (int, float)) else None


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--base", required=True, help="the earlier ctrlinit binary")
    ap.add_argument("--new", required=True, help="the ctrlinit binary under test")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--noise", type=float, default=0.15, help="ratio change below this is noise")
    ap.add_argument("--workloads", default="idle,restart,logs,reap,start,stop")
    ap.add_argument("--idle-seconds", type=float, default=10.0)
    ap.add_argument("--settle", type=float, default=1.0)
    ap.add_argument("--idle-programs", type=int, default=10)
    ap.add_argument("--pss-programs", type=int, default=100)
    ap.add_argument("--kills", type=int, default=40)
    ap.add_argument("--kill-spacing", type=float, default=0.6)
    ap.add_argument("--log-mib", type=int, default=256)
    ap.add_argument("--log-deadline", type=float, default=180.0)
    ap.add_argument("--orphans", type=int, default=10000)
    ap.add_argument("--reap-deadline", type=float, default=30.0)
    ap.add_argument("--start-programs", type=int, default=100)
    ap.add_argument("--stop-programs", type=int, default=50)
    ap.add_argument("--stop-deadline", type=float, default=30.0)
    ap.add_argument("--stop-timeout", type=float, default=2.0)
    ap.add_argument("--ignore-grace", type=float, default=13.0)
    ap.add_argument("--out", default=None)
    ap.add_argument("--base-init", action="append", default=[], help="an [init] line for BASE only (repeatable)")
    ap.add_argument("--new-init", action="append", default=[], help="an [init] line for NEW only (repeatable)")
    args = ap.parse_args()
    if args.quick:
        args.reps, args.idle_seconds, args.settle = 1, 1.0, 0.3
        args.pss_programs, args.kills, args.log_mib = 20, 5, 8
        args.orphans, args.start_programs, args.stop_programs = 500, 20, 10
    if os.geteuid() != 0:
        sys.exit("versus.py: run as root (it creates PID namespaces)")

    ctx = compare.Ctx()
    ctx.args = args
    ctx.commands = {}
    ctx.which = {}
    ctx.helper = compare.build_helper(ctx)
    compare.set_subreaper()
    root = tempfile.mkdtemp(prefix="ctrlinit-versus.")
    compare._WORKDIR[0] = root
    binaries = {"base": os.path.abspath(args.base), "new": os.path.abspath(args.new)}
    raw = {"base": {}, "new": {}}
    began = time.time()
    for rep in range(args.reps):
        for side in ("base", "new") if rep % 2 == 0 else ("new", "base"):
            ctx.ctrlinit = binaries[side]
            tool = compare.Ctrlinit(ctx)
            tool.init_extra = args.base_init if side == "base" else args.new_init
            for key, fn in workloads(ctx, tool, args):
                res = run_one(ctx, tool, key, fn, root)
                compare.log(f"rep {rep + 1} {side:<4} {key:<12} {str(res)[:160]}")
                raw[side].setdefault(key, []).append(res)

    rows = ["| workload | metric | base | new | new/base | verdict |", "|---|---|---|---|---|---|"]
    regressions = []
    for key, metric, unit, worse in HEADLINES:
        b = [value(r, metric) for r in raw["base"].get(key, [])]
        n = [value(r, metric) for r in raw["new"].get(key, [])]
        b, n = [x for x in b if x is not None], [x for x in n if x is not None]
        if not b or not n:
            continue
        mb, mn = statistics.median(b), statistics.median(n)
        ratio = mn / mb if mb else float("inf") if mn else 1.0
        bad = ratio > 1 + args.noise if worse == "higher" else ratio < 1 - args.noise
        # A difference of a few units of something near zero is no regression.
        if abs(mn - mb) < {"ms": 0.5, "KiB": 64, "": 5}.get(unit, 0):
            bad = False
        verdict = "worse" if bad else "same (within noise)"
        if bad:
            regressions.append(f"{key} {metric}")
        rows.append(f"| {key} | {metric} | {mb:.3g} {unit} | {mn:.3g} {unit} | {ratio:.2f} | {verdict} |")
    text = "\n".join(
        [
            f"ctrlinit A/B, same run: base `{binaries['base']}`, new `{binaries['new']}`, "
            f"{args.reps} interleaved repetitions, {time.time() - began:.0f} s, noise band ±{args.noise:.0%}",
            "",
        ]
        + rows
        + ["", f"regressions: {', '.join(regressions) or 'none'}"]
    )
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text + "\n")


if __name__ == "__main__":
    main()
