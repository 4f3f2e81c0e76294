#!/usr/bin/env python3
"""How ctrlinit scales with the number of programs (issue 21, item 14).

For each size (default 100, 1000, 3000, 5000 `sleep` programs, default settings: two output
pipes and a log file each), ctrlinit runs as PID 1 of its own PID namespace (compare.py's
machinery) and this measures:

- start_ms: from spawning the namespace until every program's process exists (ctrlinit's
  children counted from /proc, polled every 10 ms);
- status_ms: `ctrlinit status --json` (the client binary, end to end: connect, answer, parse,
  print), the median of --status-reps runs spaced 1.2 s apart, so each misses the one-second
  cache of processes a storm of requests would hit (p90 too);
- raw_status_ms: the same request on the socket without the client (the answer alone);
- status_cpu_ms: the CPU time (user and system, every thread) the init spent on each raw
  request, the mean: on a loaded machine wall times are mostly waiting for a core, CPU time
  is the work (10 ms ticks);
- pss_kib: ctrlinit's PSS (smaps_rollup) after --settle seconds of quiet (idle memory is
  handed back 0.5 s after start), and per program;
- stop_ms: from SIGTERM to the namespace being gone (every program stopped, ctrlinit exited).

    sudo benches/scale.py --ctrlinit target/release/ctrlinit
    sudo benches/scale.py --ctrlinit A --base B            # both, interleaved, same run
    sudo benches/scale.py --sizes 100,1000 --status-reps 5  # quicker

The descriptor limit must fit the largest size (3 a program and 160): the script raises its
own RLIMIT_NOFILE (inherited by each init) to 5 a program and 1,000 when it is lower, which
needs root (or CAP_SYS_RESOURCE) past the hard limit. Prints a Markdown table, and says which
tracking the inits used (cgroup or marker, from their log); --out writes it to a file too.
"""

import argparse
import json
import os
import resource
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compare  # noqa: E402  (namespaces, /proc helpers)


def setup(d, binary, n):
    conf = os.path.join(d, "conf.d")
    os.makedirs(conf)
    lines = [
        "[init]",
        f"log_dir = {json.dumps(os.path.join(d, 'logs'))}",
        f"crash_dir = {json.dumps(os.path.join(d, 'crash'))}",
        "",
    ]
    for i in range(n):
        lines += [f"[program.s{i:04d}]", f"command = {json.dumps([compare.SLEEP, 'infinity'])}", ""]
    with open(os.path.join(conf, "scale.toml"), "w") as f:
        f.write("\n".join(lines))
    sock = os.path.join(d, "ctrlinit.sock")
    env = dict(os.environ, CTRLINIT_SOCKET=sock)
    return [binary, "--config-dir", conf], env, sock


def raise_nofile(largest):
    """Lets an init hold `largest` programs' descriptors (it inherits this process's limit)."""
    need = 5 * largest + 1000
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft >= need:
        return
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (need, max(hard, need)))
    except (ValueError, OSError) as e:
        # The hard limit is what the init may use (it raises its soft limit to it, and refuses
        # a configuration that needs more, saying how many it needs).
        compare.log(f"cannot raise RLIMIT_NOFILE to {need} (soft {soft}, hard {hard}): {e}; "
                    f"using the hard limit")
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


def tracking_of(paths):
    """`cgroup` or `marker`, as the init's log (its stdout or stderr) said at start."""
    for path in paths:
        try:
            with open(path, errors="replace") as f:
                for line in f:
                    if "tracked by cgroup" in line:
                        return "cgroup"
                    if "tracked by environment marker" in line:
                        return "marker"
        except OSError:
            pass
    return "?"


def client_status(binary, env):
    t0 = time.perf_counter()
    out = subprocess.run([binary, "status", "--json"], env=env, capture_output=True)
    ms = (time.perf_counter() - t0) * 1000
    if out.returncode != 0:
        raise RuntimeError(f"status --json failed: {out.stderr.decode(errors='replace')}")
    return ms, out.stdout


STATUS = {"v": 1, "cmd": "status"}


def raw_status(sock):
    """One `status` request on the socket, the answer read to its end (no client process)."""
    t0 = time.perf_counter()
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(sock)
    s.sendall(json.dumps(STATUS).encode() + b"\n")
    buf = b""
    while not buf.endswith(b"\n"):
        chunk = s.recv(1 << 20)
        if not chunk:
            break
        buf += chunk
    s.close()
    return (time.perf_counter() - t0) * 1000


def cpu_ms(pid):
    """The CPU time process `pid` (all its threads) has used, in ms: on a loaded machine the
    work a request costs the init, where its wall time is mostly waiting for a core."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) * 1000 / os.sysconf("SC_CLK_TCK")


def one(binary, n, args):
    d = tempfile.mkdtemp(prefix=f"scale-{n}-", dir=args.workdir)
    argv, env, sock = setup(d, binary, n)
    logs = [os.path.join(d, "init.out"), os.path.join(d, "init.err")]
    ns = compare.Namespace(argv, cwd=d, env=env, stdout=logs[0], stderr=logs[1])
    res = {}
    try:
        compare.wait_for(lambda: len(compare.children(ns.init)) >= n, max(300, n // 5), 0.01, f"{n} programs")
        res["start_ms"] = (compare.now_ns() - ns.t_spawn) / 1e6
        compare.wait_for(lambda: os.path.exists(sock), 30, 0.01, "the socket")
        time.sleep(args.settle)
        res["pss_kib"] = compare.pss_kib(ns.init)
        res["pss_per_program_kib"] = res["pss_kib"] / n
        times, raw = [], []
        for _ in range(args.status_reps):
            ms, out = client_status(binary, env)
            got = json.loads(out)
            programs = got["programs"] if isinstance(got, dict) else got
            if len(programs) != n:
                raise RuntimeError(f"status listed {len(programs)} programs, not {n}")
            times.append(ms)
            time.sleep(1.2)
        cpu = []
        for _ in range(args.status_reps):
            before = cpu_ms(ns.init)
            raw.append(raw_status(sock))
            cpu.append(cpu_ms(ns.init) - before)
            time.sleep(1.2)
        res["status_cpu_ms"] = statistics.mean(cpu)
        res["status_ms"] = statistics.median(times)
        res["status_p90_ms"] = compare.percentile(times, 90)
        res["raw_status_ms"] = statistics.median(raw)
        t = compare.now_ns()
        os.kill(ns.init, signal.SIGTERM)
        if not ns.wait_exit(300):
            raise RuntimeError("still up 300 s after SIGTERM")
        res["stop_ms"] = (ns.t_exit - t) / 1e6
        res["tracking"] = tracking_of(logs)
        return res
    finally:
        ns.close()
        shutil.rmtree(d, ignore_errors=True)


COLUMNS = [
    ("start_ms", "start all (ms)", 0),
    ("status_ms", "status --json (ms)", 1),
    ("status_p90_ms", "p90 (ms)", 1),
    ("raw_status_ms", "raw status (ms)", 1),
    ("status_cpu_ms", "init CPU a status (ms)", 1),
    ("pss_kib", "idle PSS (KiB)", 0),
    ("pss_per_program_kib", "KiB/program", 2),
    ("stop_ms", "stop all (ms)", 0),
]


def table(results):
    head = "| build | programs | " + " | ".join(c[1] for c in COLUMNS) + " |"
    out = [head, "|" + "---|" * (len(COLUMNS) + 2)]
    for (label, n), reps in results.items():
        cells = []
        for key, _, digits in COLUMNS:
            vals = [r[key] for r in reps if key in r]
            cells.append(f"{statistics.median(vals):.{digits}f}" if vals else "–")
        out.append(f"| {label} | {n} | " + " | ".join(cells) + " |")
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ctrlinit", default="target/release/ctrlinit")
    ap.add_argument("--base", help="a second build, measured interleaved with --ctrlinit")
    ap.add_argument("--sizes", default="100,1000,3000,5000")
    ap.add_argument("--reps", type=int, default=1, help="runs of each size and build")
    ap.add_argument("--status-reps", type=int, default=7)
    ap.add_argument("--settle", type=float, default=2.0)
    ap.add_argument("--workdir", default=None)
    ap.add_argument("--out")
    args = ap.parse_args()
    compare.set_subreaper()
    raise_nofile(max(int(x) for x in args.sizes.split(",")))
    builds = [("new", os.path.abspath(args.ctrlinit))]
    if args.base:
        builds.append(("base", os.path.abspath(args.base)))
    results = {}
    for n in [int(x) for x in args.sizes.split(",")]:
        for rep in range(args.reps):
            order = builds if rep % 2 == 0 else list(reversed(builds))
            for label, binary in order:
                compare.log(f"{label} {n} programs, run {rep + 1}")
                try:
                    r = one(binary, n, args)
                except Exception as e:  # reported, not fatal
                    r = {"error": f"{type(e).__name__}: {e}"}
                    compare.log(f"  failed: {r['error']}")
                compare.log(f"  {r}")
                results.setdefault((label, n), []).append(r)
    text = table(results)
    modes = sorted({r.get("tracking", "?") for reps in results.values() for r in reps})
    text += f"\n\ntracking: {', '.join(modes)}"
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text + "\n")
        import plots  # the curves next to the table (plots.py --from-results redraws them)
        plots.write_scale(results, os.path.join(os.path.dirname(os.path.abspath(args.out)), "scale.svg"))


if __name__ == "__main__":
    main()
