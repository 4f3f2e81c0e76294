#!/usr/bin/env python3
"""ctrlinit's memory through a long chaos storm (issue 26): does PID 1's RSS stay flat?

ctrlinit runs as PID 1 of its own PID namespace (compare.py's machinery) with 17 programs:
counters (two on the console), forkers whose children hold the pipes, a diamond with restart
propagation (`restart = true`), three heartbeat programs with a liveness check, one that exits
with a random status now and then. Then, for --minutes, a seeded storm:

  kills     two SIGKILLs of random main processes every 5-50 ms (the bulk of the work)
  hangs     a heartbeat program SIGSTOPped every ~5 s (its liveness check restarts it)
  reloads   one every ~9 s, half of them invalid (a bad file in conf.d, then removed)
  requests  on another thread: status, restart by hand, garbage lines, oversized lines,
            half-open connections on the control socket

Every --sample seconds it prints ctrlinit's RSS, PSS and anonymous PSS, the main heap's
resident size and each other malloc arena's (from /proc/PID/smaps: a glibc arena heap is an
anonymous mapping aligned to 64 MiB), and the kills so far. After the storm it waits for the
release thread (ctrlinit's idle memory release, 5 s after the last work) and prints the settled
figures. Finally the slope: RSS at the end of the storm against minute 2, and settled against
the start (before the storm, every program up and every ring of recent lines full).

    sudo benches/storm_memory.py --ctrlinit target/release/ctrlinit --minutes 10
    sudo benches/storm_memory.py --ctrlinit A --ctrlinit B --minutes 10   # one after the other
    sudo benches/storm_memory.py --minutes 1 --sample 10                  # smoke test

Run as root. --arenas names the thread each arena belongs to at the end of the storm (gdb
attaches once and calls malloc on each thread; costs a pause of about a second).
"""

import argparse
import json
import os
import random
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

BENCH_DIR = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, BENCH_DIR)
import compare as c  # noqa: E402

REPO = os.path.dirname(BENCH_DIR)
PAD = "x" * 60  # lines of about 100 bytes: every ring of recent lines fills within a minute
ARENA_ALIGN = 64 << 20  # glibc's HEAP_MAX_SIZE on 64-bit: every non-main arena heap is aligned to it

# --------------------------------------------------------------------------------------------
# The programs


def sh(script):
    """A shell command as a TOML array; `$` doubled (ctrlinit interpolates `${VAR}`)."""
    return json.dumps(["/bin/sh", "-c", script.replace("$", "$$").replace("PAD", PAD)])


def config(d, reload_no=0):
    """conf.d/storm.toml's text; `reload_no` changes one counter's env (a valid reload)."""
    ready = os.path.join(d, "ready")
    beats = os.path.join(d, "beats")
    lines = [
        "[init]",
        f"log_dir = {json.dumps(os.path.join(d, 'logs'))}",
        f"crash_dir = {json.dumps(os.path.join(d, 'crash'))}",
        'stop_timeout = "5s"',
        "",
    ]
    budget = [
        'backoff = { initial = "10ms", max = "100ms" }',
        "max_restarts = 999999",
        'restart_window = "10s"',
        'stop_timeout = "1s"',
    ]

    def prog(name, script, extra=(), console=False):
        lines.extend([f"[program.{name}]", f"command = {sh(script)}", *budget, *extra])
        lines.extend([f"[program.{name}.log]", f"console = {str(console).lower()}", ""])

    counter = 'i=0; while :; do echo "$0 line $i $(date +%s%N) PAD"; i=$((i+1)); sleep 0.02; done'
    for i in range(5):
        extra = [f'env = {{ GEN = "{reload_no}" }}'] if i == 0 else []
        prog(f"count{i}", counter.replace("$0", f"count{i}"), extra, console=i < 2)
    forker = 'sleep 1000 & i=0; while :; do echo "fork $i PAD"; i=$((i+1)); sleep 0.05; done'
    for i in range(3):
        prog(f"fork{i}", forker)
    # The diamond: dtop (ready by file) -> dleft, dright (restart with it) -> dbottom.
    prog("dtop", f"touch {ready}/dtop; i=0; while :; do echo top $i PAD; i=$((i+1)); sleep 0.05; done",
         [f'ready = {{ file = "{ready}/dtop", interval = "10ms" }}',
          f'finish = ["/bin/rm", "-f", "{ready}/dtop"]'])
    for side in ("dleft", "dright"):
        prog(side, f"while :; do echo {side} PAD; sleep 0.05; done",
             ['depends_on = { dtop = { condition = "ready", restart = true } }'])
    prog("dbottom", "while :; do echo bottom PAD; sleep 0.05; done", ['depends_on = ["dleft", "dright"]'])
    for i in range(3):
        beat = f"{beats}/hb{i}"
        prog(f"hb{i}", f"while :; do touch {beat}; echo beat PAD; sleep 0.1; done")
        lines.extend([f"[program.hb{i}.health]",
                      f'check = {{ heartbeat = "{beat}", max_age = "1s" }}',
                      'interval = "250ms"', "failures = 2", ""])
    prog("talker", 'i=0; while :; do echo "out $i PAD"; echo "err $i $(seq -s, 1 $((i % 60)))" >&2; '
                   'i=$((i+1)); sleep 0.03; done')
    prog("exiter", 'seq -f "start %g PAD" 1 50; sleep 0.$(($$ % 9 + 1)); exit $(($$ % 4))', ['restart = "always"'])
    return "\n".join(lines) + "\n"


BAD = '[program.broken]\ncommand = ["/bin/true"]\nrestart = "sometimes"\nnot_a_key = 1\n'

# --------------------------------------------------------------------------------------------
# Talking to ctrlinit


def request(sock_path, line, timeout=30.0):
    """One raw protocol line; the answer's first line (or an error string)."""
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(timeout)
    try:
        s.connect(sock_path)
        s.sendall(line if isinstance(line, bytes) else line.encode() + b"\n")
        buf = b""
        while b"\n" not in buf:
            chunk = s.recv(65536)
            if not chunk:
                break
            buf += chunk
        return buf.split(b"\n", 1)[0].decode(errors="replace")
    except OSError as e:
        return f"error: {e}"
    finally:
        s.close()


def mains(init):
    """Host pids of ctrlinit's children (the programs' main processes, and hooks)."""
    return c.children(init)


# --------------------------------------------------------------------------------------------
# Memory figures


def smaps_figures(pid):
    """{"rss", "pss", "anon", "heap", "arenas": {start: rss KiB}} from /proc/PID."""
    out = {"rss": 0, "pss": c.pss_kib(pid), "anon": c.anon_kib(pid), "heap": 0, "arenas": {}}
    for line in (c.read(f"/proc/{pid}/status", "") or "").splitlines():
        for key in ("VmRSS", "RssAnon", "RssFile"):
            if line.startswith(key + ":"):
                out[key.lower().replace("vm", "")] = int(line.split()[1])
    cur = None
    for line in (c.read(f"/proc/{pid}/smaps", "") or "").splitlines():
        head = line.split()
        if head and "-" in head[0] and len(head) >= 5 and ":" not in head[0]:
            start = int(head[0].split("-")[0], 16)
            name = head[5] if len(head) > 5 else ""
            if name == "[heap]":
                cur = "heap"
            elif not name and head[1] == "rw-p" and start % ARENA_ALIGN == 0:
                cur = start
            else:
                cur = None
        elif cur is not None and line.startswith("Rss:"):
            kib = int(line.split()[1])
            if cur == "heap":
                out["heap"] += kib
            else:
                out["arenas"][cur] = kib
    return out


def figures(m):
    return (f"RSS {m['rss']} KiB (file {m['rssfile']}, anon {m['rssanon']}), PSS {m['pss']} KiB (anon {m['anon']}), "
            f"heap {m['heap']} KiB, arenas {sum(m['arenas'].values())} KiB")


def malloc_info(pid):
    """[(arena, mapped KiB, free KiB)] from glibc's malloc_info, called in ctrlinit by gdb (a
    pause of about a second). Mapped minus free is what live allocations hold; a mapped size
    that grows while that stays flat is fragmentation, a growing in-use size a leak."""
    path = f"/tmp/h-storm-mi-{pid}-{time.monotonic_ns()}.xml"
    subprocess.run(["gdb", "-p", str(pid), "-batch", "-nx",
                    "-ex", f'set $f = (void*)fopen("{path}", "w")',
                    "-ex", "call (int)malloc_info(0, $f)", "-ex", "call (int)fclose($f)"],
                   capture_output=True, text=True, timeout=120)
    text = c.read(path, "") or ""
    try:
        os.unlink(path)
    except OSError:
        pass
    out = []
    for part in text.split("<heap nr=")[1:]:
        nr = int(part.split('"')[1])
        part = part.split("</heap>")[0]

        def attr(tag):
            i = part.find(tag)
            return int(part[i:].split('size="')[1].split('"')[0]) if i >= 0 else 0
        free = attr('<total type="fast"') + attr('<total type="rest"')
        out.append((nr, attr('<system type="current"') >> 10, free >> 10))
    return out


def arena_threads(pid):
    """{arena start: thread name}: gdb calls malloc(64) on each thread; the arena is the 64 MiB
    aligned region the pointer falls in (the main arena's is the heap)."""
    script = []
    tids = sorted(int(t) for t in os.listdir(f"/proc/{pid}/task"))
    for n in range(1, len(tids) + 1):
        script += ["-ex", f"thread {n}", "-ex", "printf \"T %d %lx\\n\", $_gthread, (long)malloc(64)"]
    r = subprocess.run(["gdb", "-p", str(pid), "-batch", "-nx", *script],
                       capture_output=True, text=True, timeout=120)
    names = {}
    lwps = {}
    for line in r.stdout.splitlines():
        if line.startswith("[Switching to thread"):
            # [Switching to thread 2 (Thread 0x7f... (LWP 1234))]
            parts = line.replace("(", " ").replace(")", " ").split()
            if "LWP" in parts:
                lwps[int(parts[3])] = int(parts[parts.index("LWP") + 1])
        if line.startswith("T "):
            _, n, ptr = line.split()
            tid = lwps.get(int(n))
            who = c.comm(f"{pid}/task/{tid}") if tid else f"thread {n}"
            names.setdefault(int(ptr, 16) // ARENA_ALIGN * ARENA_ALIGN, []).append(who)
    return names


# --------------------------------------------------------------------------------------------
# The storm


class Counts:
    def __init__(self):
        self.kills = self.hangs = self.reloads = self.bad_reloads = 0
        self.requests = self.garbage = self.restarts = 0


def socket_abuse(sock_path, rng, counts, stop):
    """Requests and garbage on the control socket until `stop` is set."""
    names = [f"count{i}" for i in range(2, 5)] + ["fork2", "dbottom", "exiter"]
    while not stop.wait(rng.uniform(0.05, 0.3)):
        kind = rng.random()
        if kind < 0.35:
            request(sock_path, '{"v":1,"cmd":"status"}')
            counts.requests += 1
        elif kind < 0.5:
            name = rng.choice(names)
            request(sock_path, json.dumps({"v": 1, "cmd": "restart", "names": [name], "timeout_ms": 20000}))
            counts.restarts += 1
        elif kind < 0.65:
            request(sock_path, bytes(rng.getrandbits(8) for _ in range(rng.randint(1, 300))) + b"\n", 10)
            counts.garbage += 1
        elif kind < 0.7:
            request(sock_path, b"{" + b"x" * (70 << 10) + b"}\n", 10)  # over the 64 KiB bound
            counts.garbage += 1
        elif kind < 0.8:
            s = socket.socket(socket.AF_UNIX)  # half-open: connect, say nothing, go
            try:
                s.connect(sock_path)
            except OSError:
                pass
            s.close()
            counts.garbage += 1
        elif kind < 0.9:
            request(sock_path, '{"v":1,"cmd":"health"}')
            counts.requests += 1
        else:
            request(sock_path, '{"v":1,"cmd":"logs","names":["count0"],"lines":50}')
            counts.requests += 1


def storm_step(ns, d, rng, counts, state):
    """One turn of the storm: two kills, and now and then a hang or a reload."""
    kids = mains(ns.init)
    for pid in rng.sample(kids, min(2, len(kids))):
        try:
            os.kill(pid, signal.SIGKILL)
            counts.kills += 1
        except OSError:
            pass
    now = time.monotonic()
    if now >= state["next_hang"]:
        state["next_hang"] = now + rng.uniform(3, 7)
        hb = [p for p in kids if "beats/hb" in (c.read(f"/proc/{p}/cmdline", "") or "")]
        if hb:
            try:
                os.kill(rng.choice(hb), signal.SIGSTOP)
                counts.hangs += 1
            except OSError:
                pass
    if now >= state["next_reload"]:
        state["next_reload"] = now + rng.uniform(6, 12)
        reload(ns, d, rng, counts)


def reload(ns, d, rng, counts):
    conf = os.path.join(d, "conf.d")
    sock = os.path.join(d, "ctrlinit.sock")
    if rng.random() < 0.5:
        with open(os.path.join(conf, "zz-bad.toml"), "w") as f:
            f.write(BAD)
        request(sock, '{"v":1,"cmd":"reload"}')
        os.unlink(os.path.join(conf, "zz-bad.toml"))
        counts.bad_reloads += 1
    else:
        counts.reloads += 1
        with open(os.path.join(conf, "storm.toml"), "w") as f:
            f.write(config(d, counts.reloads))
        request(sock, '{"v":1,"cmd":"reload"}')


def fmt_sample(t, m, counts, first):
    arenas = " ".join(f"{k:x}:{v}" for k, v in sorted(m["arenas"].items()))
    other = m["rssanon"] - m["heap"] - sum(m["arenas"].values())
    line = (f"{t:7.1f} {m['rss']:8d} {m['rssfile']:8d} {m['rssanon']:8d} {m['pss']:8d} {m['anon']:8d} "
            f"{m['heap']:6d} {sum(m['arenas'].values()):7d} {other:6d} {counts.kills:8d}  {arenas}")
    if first:
        head = (f"{'min':>7} {'RSS':>8} {'RssFile':>8} {'RssAnon':>8} {'PSS':>8} {'PssAnon':>8} "
                f"{'heap':>6} {'arenas':>7} {'other':>6} {'kills':>8}  arena:KiB")
        return head + "\n" + line
    return line


def run(binary, args):
    d = tempfile.mkdtemp(prefix="h-storm-mem-")
    for sub in ("conf.d", "logs", "crash", "ready", "beats"):
        os.makedirs(os.path.join(d, sub), exist_ok=True)
    with open(os.path.join(d, "conf.d", "storm.toml"), "w") as f:
        f.write(config(d))
    env = dict(os.environ, CTRLINIT_SOCKET=os.path.join(d, "ctrlinit.sock"))
    ns = c.Namespace([binary, "--config-dir", os.path.join(d, "conf.d")], cwd=d, env=env,
                     stdout=os.path.join(d, "out"), stderr=os.path.join(d, "err"))
    rng = random.Random(args.seed)
    counts = Counts()
    curve = []
    try:
        # Up, and every ring of recent lines full (64 KiB each: over 80 KiB in each log file).
        logs = os.path.join(d, "logs")
        c.wait_for(lambda: len(mains(ns.init)) >= 17, 60, 0.05, "17 programs")
        c.wait_for(lambda: all(os.path.getsize(os.path.join(logs, f)) > 80 << 10
                               for f in os.listdir(logs) if f != "ctrlinit.log"),
                   600, 0.5, "every log over 80 KiB")
        time.sleep(args.quiet)  # the release after start-up: the start figure is a quiet one
        start = smaps_figures(ns.init)
        print(f"\n== {binary}  (seed {args.seed}, dir {d})\nstart (quiet, all up, rings full): "
              f"RSS {start['rss']} KiB, PSS {start['pss']} KiB, heap {start['heap']} KiB, "
              f"arenas {sum(start['arenas'].values())} KiB", flush=True)
        stop = threading.Event()
        abuse = threading.Thread(target=socket_abuse,
                                 args=(os.path.join(d, "ctrlinit.sock"), random.Random(args.seed + 1), counts, stop))
        abuse.start()
        t0 = time.monotonic()
        state = {"next_hang": t0 + 3, "next_reload": t0 + 5}
        next_sample = t0 + args.sample
        while time.monotonic() - t0 < args.minutes * 60:
            storm_step(ns, d, rng, counts, state)
            if time.monotonic() >= next_sample:
                next_sample += args.sample
                m = smaps_figures(ns.init)
                curve.append(((time.monotonic() - t0) / 60, m))
                print(fmt_sample(curve[-1][0], m, counts, len(curve) == 1), flush=True)
                if args.malloc_info:
                    print("        malloc_info (arena: mapped/free/in use KiB): " + "  ".join(
                        f"{nr}: {sys_}/{free}/{sys_ - free}" for nr, sys_, free in malloc_info(ns.init)),
                        flush=True)
            time.sleep(rng.uniform(0.005, 0.05))  # the storm's pacing: the workload itself
        if args.arenas:
            for start_addr, who in sorted(arena_threads(ns.init).items()):
                print(f"arena {start_addr:x}: {', '.join(sorted(set(who)))}")
        stop.set()
        abuse.join()
        # Every program back up (SIGSTOPped ones are cured by their check), then quiet.
        for p in mains(ns.init):
            try:
                os.kill(p, signal.SIGCONT)
            except OSError:
                pass
        time.sleep(args.quiet)
        end = smaps_figures(ns.init)
        print(f"settled ({args.quiet:g} s after the storm): {figures(end)} "
              f"({' '.join(f'{k:x}:{v}' for k, v in sorted(end['arenas'].items()))})")
        print(f"storm: {counts.kills} kills, {counts.hangs} hangs, {counts.reloads} reloads + "
              f"{counts.bad_reloads} invalid, {counts.requests} requests, {counts.restarts} restarts "
              f"by hand, {counts.garbage} garbage/oversized/half-open connections")
        summary(start, curve, end)
        return start, curve, end
    finally:
        ns.close()
        if not args.keep:
            import shutil
            shutil.rmtree(d, ignore_errors=True)


def summary(start, curve, end):
    at2 = [m for t, m in curve if t >= 2 - 1e-6]
    if len(at2) >= 2:
        a, b = at2[0]["rss"], curve[-1][1]["rss"]
        print(f"RSS from minute 2 to the end: {a} -> {b} KiB ({(b - a) / a * 100:+.1f} %)")
    print(f"settled against the start: {start['rss']} -> {end['rss']} KiB ({end['rss'] - start['rss']:+d} KiB)")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ctrlinit", action="append",
                    help="binary to measure (repeat for several, run one after the other); "
                         "default target/release/ctrlinit")
    ap.add_argument("--minutes", type=float, default=10)
    ap.add_argument("--sample", type=float, default=60, help="seconds between samples")
    ap.add_argument("--quiet", type=float, default=8,
                    help="seconds of quiet before the start and settled figures (the release comes after 5)")
    ap.add_argument("--seed", type=int, default=26)
    ap.add_argument("--arenas", action="store_true", help="name each arena's thread (gdb) after the storm")
    ap.add_argument("--malloc-info", action="store_true",
                    help="with each sample, glibc's own figures per arena (gdb; a pause of a second)")
    ap.add_argument("--keep", action="store_true", help="keep the run's directory")
    args = ap.parse_args()
    c.set_subreaper()
    for binary in args.ctrlinit or [os.path.join(REPO, "target", "release", "ctrlinit")]:
        run(os.path.abspath(binary), args)


if __name__ == "__main__":
    main()
