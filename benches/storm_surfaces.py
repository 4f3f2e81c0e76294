#!/usr/bin/env python3
"""Every surface at once (issue 31): does PID 1 stay flat, answer, and lose nothing?

ctrlinit runs as PID 1 of its own PID namespace (compare.py's machinery, storm_memory.py's
figures and requests) with [init] http, syslog, sd_notify and the run ledger on, and for --minutes
every surface is attacked at once:

  notify    a program that speaks sd_notify floods its socket (STATUS=, WATCHDOG=1, junk), and
            this script floods the same socket with foreign datagrams
  syslog    a program floods /dev/log (ctrlinit's [init] syslog, here a socket in the run's
            directory) with its own messages, and this script with foreign ones
  fastpeer  an [external] whose ctrlinit address is a fake peer that writes its (valid)
            /v1/peer watch line as fast as the socket takes it
  liar      an [external] whose fake peer lies: 503 busy, another program, a new run every
            line, a keepalive period of a day then silence, garbage with terminal escapes, a
            line that never ends
  slowloris connections to ctrlinit's probe port that send a request a byte every few seconds
  ledger    ledger.jsonl is a file of a small tmpfs that is full (bind-mounted into log_dir);
            now and then a few KiB are freed and filled again, so records are cut by ENOSPC
  kills     SIGKILLs of random main processes (not of `counter`) every 20-200 ms
  reloads   one every ~9 s, half of them invalid

`counter` is attacked by nothing: it writes numbered lines (100 a second), and at the end its log
file must hold every number, without a gap. Every --sample seconds the script prints PID 1's RSS
(file and anonymous), the worst `ctrlinit status` latency since the last sample (the client
binary, run every 0.25 s) and the storm's counts. Then a verdict line per criterion:

  RSS       flat from minute 2 to the end, within 10 % of the minute-2 sample
  status    every `ctrlinit status` under 1 s (a timeout at 10 s counts as 10 s)
  lines     no line of `counter` lost

    sudo benches/storm_surfaces.py --ctrlinit target/release/ctrlinit --minutes 10
    sudo benches/storm_surfaces.py --minutes 1 --sample 10      # smoke test

Run as root (a tmpfs is mounted). The storm stops early, as a failed RSS verdict, when PID 1's RSS
passes --max-rss-mib (512): a peer flood on a build without its bound takes a GiB in seconds.
Everything this script starts is stopped at the end, whatever happened. Exits 0 when every
verdict passed, 1 otherwise.
"""

import argparse
import json
import os
import random
import re
import shutil
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
import storm_memory as sm  # noqa: E402

REPO = os.path.dirname(BENCH_DIR)
PEER_LINE = b"boot=b1 program=api run=1 state=running ready=true\n"
STATUS_LIMIT = 1.0  # seconds: the bound on a `status` answer
RSS_FLAT = 0.10  # the bound on RSS growth from minute 2

# --------------------------------------------------------------------------------------------
# The configuration


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


NOTIFY_FLOOD = r'''
import os, socket, time
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
path = os.environ["NOTIFY_SOCKET"]
s.sendto(b"READY=1", path)
msgs = [b"WATCHDOG=1", b"STATUS=flooding", b"\x00\xff junk", b"X" * 4000, b"WATCHDOG=1\nSTATUS=x"]
i = 0
while True:
    try:
        s.sendto(msgs[i % len(msgs)], path)
    except OSError:
        time.sleep(0.001)
    i += 1
'''

SYSLOG_FLOOD = r'''
import socket, sys, time
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
i = 0
while True:
    try:
        s.sendto(b"<13>sysflood[1]: flood %d \x1b[31m" % i, sys.argv[1])
    except OSError:
        time.sleep(0.001)
    i += 1
'''


def py(script, *args):
    """A python3 command as a TOML array (`$` doubled: ctrlinit interpolates `${VAR}`)."""
    return json.dumps([sys.executable, "-c", script.replace("$", "$$"), *args])


def config(d, ports, reload_no=0):
    """conf.d/storm.toml's text; `reload_no` changes a victim's env (a valid reload)."""
    budget = ['backoff = { initial = "20ms", max = "200ms" }', "max_restarts = 999999",
              'restart_window = "10s"', 'stop_timeout = "1s"']
    lines = ["[init]",
             f"log_dir = {json.dumps(os.path.join(d, 'logs'))}",
             f"crash_dir = {json.dumps(os.path.join(d, 'crash'))}",
             f'http = "127.0.0.1:{ports["probe"]}"',
             f"syslog = {json.dumps(os.path.join(d, 'log.sock'))}",
             'stop_timeout = "5s"', ""]

    def prog(name, command, extra=()):
        lines.extend([f"[program.{name}]", f"command = {command}", *budget, *extra,
                      f"[program.{name}.log]", "console = false", ""])

    # Not attacked: its numbered lines must all reach its file.
    prog("counter", sm.sh('i=0; while :; do echo "counter $i"; i=$((i+1)); sleep 0.01; done'))
    for i in range(3):
        extra = [f'env = {{ GEN = "{reload_no}" }}'] if i == 0 else []
        prog(f"victim{i}", sm.sh(f'i=0; while :; do echo "victim{i} $i PAD"; i=$((i+1)); sleep 0.02; done'), extra)
    prog("forker", sm.sh('sleep 1000 & while :; do echo fork PAD; sleep 0.05; done'))
    prog("notifier", py(NOTIFY_FLOOD), ['ready = { notify = "systemd" }'])
    prog("sysflood", py(SYSLOG_FLOOD, os.path.join(d, "log.sock")))
    for ext in ("fastpeer", "liar"):
        lines.extend([f"[external.{ext}]", f'ctrlinit = "http://127.0.0.1:{ports[ext]}"', 'program = "api"',
                      'interval = "200ms"', 'timeout = "500ms"', ""])
        prog(f"on-{ext}", sm.sh(f"echo on-{ext} up; exec sleep 100000"),
             [f'depends_on = {{ {ext} = {{ condition = "ready", restart = true }} }}'])
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------------------------
# The attackers: each a thread that runs until `stop` is set, with a deadline on every wait


class Counts:
    def __init__(self):
        self.kills = self.reloads = self.bad_reloads = self.notify = self.syslog = 0
        self.fast_bytes = self.lies = self.loris = self.enospc_cycles = self.status = 0


def serve(port, stop, handle, name):
    """A TCP server on 127.0.0.1:port, one thread per connection (at most 32 at once)."""
    ls = socket.socket()
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(("127.0.0.1", port))
    ls.listen(64)
    ls.settimeout(0.2)
    slots = threading.BoundedSemaphore(32)

    def one(conn):
        try:
            conn.settimeout(2)
            try:
                conn.recv(4096)  # the request; its content does not matter
            except OSError:
                return
            handle(conn)
        except OSError:
            pass
        finally:
            conn.close()
            slots.release()

    def loop():
        while not stop.is_set():
            try:
                conn, _ = ls.accept()
            except OSError:
                continue
            if not slots.acquire(timeout=1):
                conn.close()
                continue
            threading.Thread(target=one, args=(conn,), daemon=True, name=name).start()
        ls.close()
    t = threading.Thread(target=loop, daemon=True, name=name)
    t.start()
    return t


def fast_peer(stop, counts):
    """A valid watch answer, then its line as fast as the socket takes it."""
    chunk = PEER_LINE * 1000

    def handle(conn):
        conn.sendall(b"HTTP/1.1 200 OK\r\nX-Ctrlinit-Watch: 100\r\n\r\n")
        while not stop.is_set():
            conn.sendall(chunk)
            counts.fast_bytes += len(chunk)
    return handle


def liar(stop, counts, rng):
    """A different lie on each connection."""
    def handle(conn):
        counts.lies += 1
        kind = rng.randrange(6)
        if kind == 0:
            conn.sendall(b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 5\r\n\r\nbusy\n")
        elif kind == 1:
            conn.sendall(b"HTTP/1.1 200 OK\r\nX-Ctrlinit-Watch: 100\r\n\r\n"
                         b"boot=b1 program=other run=1 state=running ready=true\n")
            stop.wait(rng.uniform(0.1, 3))
        elif kind == 2:
            conn.sendall(b"HTTP/1.1 200 OK\r\nX-Ctrlinit-Watch: 100\r\n\r\n")
            for run in range(rng.randrange(1, 200)):
                state = rng.choice([b"running", b"stopped", b"starting"])
                conn.sendall(b"boot=b%d program=api run=%d state=%s ready=%s\n"
                             % (rng.randrange(3), run, state, rng.choice([b"true", b"false"])))
                if stop.wait(0.01):
                    break
        elif kind == 3:
            conn.sendall(b"HTTP/1.1 200 OK\r\nX-Ctrlinit-Watch: 86400000\r\n\r\n" + PEER_LINE)
            stop.wait(rng.uniform(1, 5))
        elif kind == 4:
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 60\r\n\r\n"
                         b"boot=\x1b]0;owned\x07 program=api\x1b[2J run=1 state=running ready=true\n")
        else:
            conn.sendall(b"HTTP/1.1 200 OK\r\nX-Ctrlinit-Watch: 100\r\n\r\nboot=b1 program=api run=1 ")
            end = time.monotonic() + rng.uniform(0.5, 3)
            while time.monotonic() < end and not stop.is_set():
                conn.sendall(b"x" * 4096)
                stop.wait(0.01)
    return handle


def slowloris(port, stop, counts, n=200):
    """`n` connections to the probe port, each a request a byte every ~3 s; reopened when closed."""
    conns = []
    request = b"GET /livez HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"a" * 10000
    while not stop.wait(0.05):
        while len(conns) < n and not stop.is_set():
            s = socket.socket()
            s.settimeout(0.5)
            try:
                s.connect(("127.0.0.1", port))
                s.setblocking(False)
                conns.append([s, 0, time.monotonic()])
                counts.loris += 1
            except OSError:
                s.close()
                break
        now = time.monotonic()
        for entry in list(conns):
            s, sent, at = entry
            if now - at < 3:
                continue
            try:
                s.send(request[sent % len(request):][:1])
                entry[1], entry[2] = sent + 1, now
            except OSError:
                s.close()
                conns.remove(entry)
    for s, _, _ in conns:
        s.close()


def datagrams(path, stop, counts, field, payloads):
    """Foreign datagrams on `path` as fast as they go (a short pause when refused)."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    s.setblocking(False)
    i = 0
    while not stop.is_set():
        try:
            s.sendto(payloads[i % len(payloads)], path)
            setattr(counts, field, getattr(counts, field) + 1)
        except OSError:
            stop.wait(0.002)
        i += 1
    s.close()


def status_probe(binary, sock, stop, worst, counts):
    """`ctrlinit status` every 0.25 s, timed; `worst[0]` is the worst since the last sample."""
    env = dict(os.environ, CTRLINIT_SOCKET=sock)
    while not stop.wait(0.25):
        t = time.monotonic()
        try:
            subprocess.run([binary, "status"], env=env, capture_output=True, timeout=10)
            took = time.monotonic() - t
        except subprocess.TimeoutExpired:
            took = 10.0
        counts.status += 1
        worst[0] = max(worst[0], took)
        worst[1] = max(worst[1], took)


# --------------------------------------------------------------------------------------------
# The ledger's full tmpfs


class FullLedger:
    """A small tmpfs, filled up, whose ledger.jsonl is bind-mounted into log_dir."""

    def __init__(self, d, logs):
        self.mnt = os.path.join(d, "full")
        self.target = os.path.join(logs, "ledger.jsonl")
        os.makedirs(self.mnt)
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m,mode=0755", "tmpfs", self.mnt], check=True)
        self.file = os.path.join(self.mnt, "ledger.jsonl")
        open(self.file, "w").close()
        open(self.target, "w").close()
        subprocess.run(["mount", "--bind", self.file, self.target], check=True)
        self.fill()

    def fill(self):
        """Writes filler until the tmpfs is full."""
        fd = os.open(os.path.join(self.mnt, "filler"), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            while os.write(fd, b"\0" * 4096) > 0:
                pass
        except OSError:
            pass
        finally:
            os.close(fd)

    def breathe(self, rng):
        """Frees a few KiB (a record or two fits, the next is cut), then fills what is left."""
        os.truncate(os.path.join(self.mnt, "filler"),
                    max(0, os.path.getsize(os.path.join(self.mnt, "filler")) - rng.randrange(1, 4) * 4096))
        time.sleep(rng.uniform(0.05, 0.5))
        self.fill()

    def close(self):
        for m in (self.target, self.mnt):
            subprocess.run(["umount", "-l", m], capture_output=True)


# --------------------------------------------------------------------------------------------
# The run


def reload(d, ports, rng, counts):
    conf = os.path.join(d, "conf.d")
    sock = os.path.join(d, "ctrlinit.sock")
    if rng.random() < 0.5:
        with open(os.path.join(conf, "zz-bad.toml"), "w") as f:
            f.write(sm.BAD)
        sm.request(sock, '{"v":1,"cmd":"reload"}', timeout=10)
        os.unlink(os.path.join(conf, "zz-bad.toml"))
        counts.bad_reloads += 1
    else:
        counts.reloads += 1
        with open(os.path.join(conf, "storm.toml"), "w") as f:
            f.write(config(d, ports, counts.reloads))
        sm.request(sock, '{"v":1,"cmd":"reload"}', timeout=10)


def victims(init):
    """Main processes of ctrlinit that may be killed: all but counter's."""
    return [p for p in sm.mains(init) if "counter" not in (c.read(f"/proc/{p}/cmdline", "") or "")]


def counter_gaps(logs):
    """(lines, runs, [(after, next)] gaps) of `counter`'s numbered lines in its log files, oldest
    first; a number back at 0 is a new run (a restart), not a gap."""
    files = sorted((f for f in os.listdir(logs) if f.startswith("counter.log")),
                   key=lambda f: -int(f.rsplit(".", 1)[1]) if f[-1].isdigit() else 0)
    nums = []
    for f in files:
        with open(os.path.join(logs, f), "rb") as fh:
            for line in fh:
                m = re.search(rb"counter (\d+)\s*$", line)
                if m:
                    nums.append(int(m.group(1)))
    gaps, runs = [], 1 if nums else 0
    for a, b in zip(nums, nums[1:]):
        if b == 0:
            runs += 1
        elif b != a + 1:
            gaps.append((a, b))
    return len(nums), runs, gaps


def start_attackers(binary, d, ports, ns, args, counts, worst, stop):
    rng = random.Random(args.seed + 1)
    threads = []
    if "fastpeer" not in args.skip:
        threads.append(serve(ports["fastpeer"], stop, fast_peer(stop, counts), "fastpeer"))
    if "liar" not in args.skip:
        threads.append(serve(ports["liar"], stop, liar(stop, counts, rng), "liar"))
    for name, target, a in [
            ("slowloris", slowloris, (ports["probe"], stop, counts)),
            ("notify", datagrams, (os.path.join(d, "ctrlinit-notify.sock"), stop, counts, "notify",
                                   [b"READY=1", b"MAINPID=1", b"WATCHDOG=1", b"\xff" * 3000])),
            ("syslog", datagrams, (os.path.join(d, "log.sock"), stop, counts, "syslog",
                                   [b"<13>stranger: foreign \x1b[2J line", b"<999>" + b"y" * 9000])),
            ("status", status_probe, (binary, os.path.join(d, "ctrlinit.sock"), stop, worst, counts))]:
        if name in args.skip:
            continue
        t = threading.Thread(target=target, args=a, daemon=True)
        t.start()
        threads.append(t)
    return threads


def sample_line(t, m, worst, counts, first):
    head = (f"{'min':>6} {'RSS':>8} {'RssFile':>8} {'RssAnon':>8} {'worst status':>12}  counts"
            if first else None)
    line = (f"{t:6.2f} {m['rss']:8d} {m['rssfile']:8d} {m['rssanon']:8d} {worst:11.3f}s  "
            f"kills {counts.kills} reloads {counts.reloads}+{counts.bad_reloads} notify {counts.notify} "
            f"syslog {counts.syslog} fast {counts.fast_bytes >> 20} MiB lies {counts.lies} "
            f"loris {counts.loris} enospc {counts.enospc_cycles} status {counts.status}")
    return line if head is None else head + "\n" + line


def storm(ns, ledger, d, ports, args, counts, worst, curve):
    """The kills, reloads and ledger cycles on this thread, and the samples; False when PID 1's
    RSS passed the guard."""
    rng = random.Random(args.seed)
    t0 = time.monotonic()
    next_sample, next_reload, next_breath = t0 + args.sample, t0 + 5, t0 + 2
    while time.monotonic() - t0 < args.minutes * 60:
        kids = victims(ns.init)
        if kids:
            try:
                os.kill(rng.choice(kids), signal.SIGKILL)
                counts.kills += 1
            except OSError:
                pass
        now = time.monotonic()
        if now >= next_reload:
            next_reload = now + rng.uniform(6, 12)
            reload(d, ports, rng, counts)
        if now >= next_breath:
            next_breath = now + rng.uniform(2, 6)
            ledger.breathe(rng)
            counts.enospc_cycles += 1
        m = sm.smaps_figures(ns.init)
        if m["rss"] > args.max_rss_mib << 10:
            curve.append(((time.monotonic() - t0) / 60, m, worst[0]))
            print(sample_line(curve[-1][0], m, worst[0], counts, len(curve) == 1), flush=True)
            print(f"PID 1's RSS {m['rss']} KiB passed --max-rss-mib {args.max_rss_mib}: storm stopped", flush=True)
            return False
        if time.monotonic() >= next_sample:
            next_sample += args.sample
            curve.append(((time.monotonic() - t0) / 60, m, worst[0]))
            print(sample_line(curve[-1][0], m, worst[0], counts, len(curve) == 1), flush=True)
            worst[0] = 0.0
        time.sleep(rng.uniform(0.02, 0.2))
    return True


def verdicts(args, curve, finished, worst_all, lines):
    """One line per criterion; True when all passed."""
    ok = True
    # From minute 2 (a short smoke run: from its middle).
    frm = min(2.0, args.minutes / 2)
    later = [(t, m) for t, m, _ in curve if t >= frm - 1e-6]
    if finished and len(later) >= 2:
        base = later[0][1]["rss"]
        top = max(m["rss"] for _, m in later)
        growth = (top - base) / base
        good = growth <= RSS_FLAT
        print(f"{'PASS' if good else 'FAIL'} RSS flat from minute {frm:g}: {base} KiB, at most {top} KiB "
              f"({growth * 100:+.1f} %, bound {RSS_FLAT * 100:.0f} %), at the end {later[-1][1]['rss']} KiB")
    else:
        good = False
        why = "the storm was stopped at the RSS guard" if not finished else "fewer than 2 samples from there"
        print(f"FAIL RSS flat from minute {frm:g}: {why} (last RSS {curve[-1][1]['rss'] if curve else '?'} KiB)")
    ok &= good
    good = worst_all < STATUS_LIMIT
    print(f"{'PASS' if good else 'FAIL'} status under {STATUS_LIMIT:g} s: worst {worst_all:.3f} s")
    ok &= good
    n, runs, gaps = lines
    good = n > 0 and not gaps
    print(f"{'PASS' if good else 'FAIL'} no line of counter lost: {n} lines in {runs} run(s), {len(gaps)} gaps"
          + (f" (first: {gaps[0][0]} -> {gaps[0][1]})" if gaps else ""))
    return ok & good


def prepare(d):
    for sub in ("conf.d", "logs", "crash"):
        os.makedirs(os.path.join(d, sub), exist_ok=True)
    return {"probe": free_port(), "fastpeer": free_port(), "liar": free_port()}


def run(binary, args):
    d = tempfile.mkdtemp(prefix="h-storm-surf-")
    ports = prepare(d)
    logs = os.path.join(d, "logs")
    with open(os.path.join(d, "conf.d", "storm.toml"), "w") as f:
        f.write(config(d, ports))
    stop = threading.Event()
    counts, worst, curve = Counts(), [0.0, 0.0], []
    ns, ledger, finished, lines = None, None, False, (0, 0, [])
    try:
        ledger = FullLedger(d, logs)
        env = dict(os.environ, CTRLINIT_SOCKET=os.path.join(d, "ctrlinit.sock"))
        ns = c.Namespace([binary, "--config-dir", os.path.join(d, "conf.d")], cwd=d, env=env,
                         stdout=os.path.join(d, "out"), stderr=os.path.join(d, "err"))
        c.wait_for(lambda: os.path.exists(os.path.join(d, "log.sock")), 30, 0.05, "the syslog socket")
        c.wait_for(lambda: len(sm.mains(ns.init)) >= 7, 60, 0.05, "the programs (all but on-*)")
        print(f"\n== {binary}  (seed {args.seed}, dir {d}, ports {ports})", flush=True)
        start_attackers(binary, d, ports, ns, args, counts, worst, stop)
        finished = storm(ns, ledger, d, ports, args, counts, worst, curve)
    finally:
        stop.set()
        if ns is not None:
            ns.close()
        if ledger is not None:
            ledger.close()
        try:
            lines = counter_gaps(logs)
        except OSError as e:
            print(f"counter's log unreadable: {e}")
        tail = (c.read(os.path.join(d, "err"), "") or "").splitlines()[-5:]
        if tail:
            print("ctrlinit's last lines:\n  " + "\n  ".join(t[:200] for t in tail))
        if not args.keep:
            shutil.rmtree(d, ignore_errors=True)
    return verdicts(args, curve, finished, worst[1], lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ctrlinit", default=os.path.join(REPO, "target", "release", "ctrlinit"))
    ap.add_argument("--minutes", type=float, default=10)
    ap.add_argument("--sample", type=float, default=60, help="seconds between samples")
    ap.add_argument("--seed", type=int, default=31)
    ap.add_argument("--max-rss-mib", type=int, default=512,
                    help="stop the storm (a failed verdict) when PID 1's RSS passes this")
    ap.add_argument("--keep", action="store_true", help="keep the run's directory")
    ap.add_argument("--skip", default="",
                    help="comma-separated attackers left out: fastpeer, liar, slowloris, notify, syslog "
                         "(the script's own floods; the flooding programs stay), status")
    args = ap.parse_args()
    args.skip = set(filter(None, args.skip.split(",")))
    c.set_subreaper()
    sys.exit(0 if run(os.path.abspath(args.ctrlinit), args) else 1)


if __name__ == "__main__":
    main()
