#!/usr/bin/env python3
"""Syslog throughput (issue 24): messages a second read from a datagram socket and written to a
file, by ctrlinit (`[init] syslog`, PID 1 of its own PID namespace, each sender one of its
programs, so each line is attributed and lands in that program's log file) and by rsyslogd
(imuxsock on a socket of its own, rate limiting off, one omfile action), in the same run,
alternating rep by rep so the machine's load falls on both alike.

The senders are the same small Python program for both: --senders processes, each sending
--messages RFC 3164 datagrams (`<14>bench[PID]: bench-msg N ...`, about 100 bytes) as fast as a
blocking send allows. They start together (each says it is ready, then waits for a gate file
the bench creates once all are), so the clock starts at the gate. The end is when the files hold
every message, or when their count stopped growing for 3 s (then the rest was dropped: ctrlinit
lets each source log 10,000 messages a second after a burst of 20,000, counted; rsyslogd's rate
limit is off here). Reported: messages delivered, seconds, messages a second.

    sudo benches/syslog_throughput.py --ctrlinit target/release/ctrlinit \
        [--senders 4] [--messages 20000] [--reps 3]
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

BENCH_DIR = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, BENCH_DIR)
import compare as c  # noqa: E402

SENDER = r"""
import os, socket, sys
import time
sock_path, gate, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
pid = os.getpid()
open(f"{gate}.ready.{pid}", "w").close()
while not os.path.exists(gate):  # every sender starts when the bench opens the gate
    time.sleep(0.001)
pad = "x" * 60
for i in range(n):
    s.sendto(f"<14>bench[{pid}]: bench-msg {i} {pad}".encode(), sock_path)
"""

MARK = b"bench-msg "


def count_lines(paths):
    """Lines holding a bench message, across `paths` (missing files count 0)."""
    n = 0
    for p in paths:
        try:
            with open(p, "rb") as f:
                for chunk in iter(lambda: f.read(1 << 20), b""):
                    n += chunk.count(MARK)
        except FileNotFoundError:
            pass
    return n


def files_under(d, suffix):
    out = []
    for root, _, names in os.walk(d):
        out += [os.path.join(root, x) for x in names if x.endswith(suffix)]
    return out


def drain(paths_fn, expected, start):
    """Waits until `expected` lines are in, or the count stalls for 3 s; returns (count, seconds)."""
    last, last_change = -1, time.monotonic()
    t_last = start
    while True:
        n = count_lines(paths_fn())
        t = time.monotonic()
        if n != last:
            last, last_change, t_last = n, t, t
        if n >= expected or t - last_change > 3.0:
            return n, t_last - start
        time.sleep(0.02)  # a bench's sampling period, not a synchronisation


def go(gate, senders):
    """Waits for every sender to be ready, then opens the gate; returns when it opened."""
    d, name = os.path.split(gate)
    c.wait_for(lambda: sum(1 for x in os.listdir(d) if x.startswith(name + ".ready.")) >= senders,
               60, 0.005, f"{senders} senders ready")
    t = time.monotonic()
    open(gate, "w").close()
    return t


def run_ctrlinit(binary, senders, messages, sender_py):
    with tempfile.TemporaryDirectory(prefix="ctrlinit-syslog-") as d:
        sock, gate = os.path.join(d, "log.sock"), os.path.join(d, "go")
        conf = os.path.join(d, "conf.d")
        os.makedirs(conf)
        lines = [
            "[init]",
            f"log_dir = {json.dumps(os.path.join(d, 'logs'))}",
            f"crash_dir = {json.dumps(os.path.join(d, 'crash'))}",
            f"syslog = {json.dumps(sock)}",
            "",
        ]
        for i in range(senders):
            argv = [sys.executable, sender_py, sock, gate, str(messages)]
            lines += [f"[program.sender{i}]", f"command = {json.dumps(argv)}",
                      'type = "oneshot"', ""]
        with open(os.path.join(conf, "bench.toml"), "w") as f:
            f.write("\n".join(lines))
        env = dict(os.environ, CTRLINIT_SOCKET=os.path.join(d, "ctrlinit.sock"))
        ns = c.Namespace([os.path.abspath(binary), "--config-dir", conf], cwd=d, env=env)
        try:
            start = go(gate, senders)
            return drain(lambda: files_under(os.path.join(d, "logs"), ".log"),
                         senders * messages, start)
        finally:
            ns.close()


def run_rsyslogd(rsyslogd, senders, messages, sender_py):
    with tempfile.TemporaryDirectory(prefix="rsyslog-bench-") as d:
        sock, gate, out = os.path.join(d, "log.sock"), os.path.join(d, "go"), os.path.join(d, "out.log")
        conf = os.path.join(d, "rsyslog.conf")
        with open(conf, "w") as f:
            f.write(f'global(workDirectory="{d}")\n'
                    'module(load="imuxsock" SysSock.Use="off")\n'
                    f'input(type="imuxsock" Socket="{sock}" RateLimit.Interval="0")\n'
                    f'action(type="omfile" file="{out}")\n')
        daemon = subprocess.Popen([rsyslogd, "-n", "-f", conf, "-i", os.path.join(d, "pid")],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        procs = []
        try:
            c.wait_for(lambda: os.path.exists(sock), 30, 0.01, "rsyslogd's socket")
            procs = [subprocess.Popen([sys.executable, sender_py, sock, gate, str(messages)])
                     for _ in range(senders)]
            start = go(gate, senders)
            return drain(lambda: [out], senders * messages, start)
        finally:
            for p in procs:
                p.kill()
                p.wait()
            daemon.terminate()
            daemon.wait()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ctrlinit", required=True)
    ap.add_argument("--rsyslogd", default=shutil.which("rsyslogd") or "/usr/sbin/rsyslogd")
    ap.add_argument("--senders", type=int, default=4)
    ap.add_argument("--messages", type=int, default=20000)
    ap.add_argument("--reps", type=int, default=3)
    a = ap.parse_args()
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
        f.write(SENDER)
        sender_py = f.name
    os.chmod(sender_py, 0o755)
    rows = {"ctrlinit": [], "rsyslogd": []}
    try:
        for rep in range(a.reps):
            for tool in ("ctrlinit", "rsyslogd"):
                if tool == "ctrlinit":
                    n, s = run_ctrlinit(a.ctrlinit, a.senders, a.messages, sender_py)
                else:
                    n, s = run_rsyslogd(a.rsyslogd, a.senders, a.messages, sender_py)
                rate = n / s if s > 0 else float("nan")
                rows[tool].append((n, s, rate))
                c.log(f"rep {rep + 1} {tool}: {n} of {a.senders * a.messages} messages "
                      f"in {s:.2f} s: {rate:,.0f}/s")
    finally:
        os.unlink(sender_py)
    print(f"\n{a.senders} senders x {a.messages} messages, {a.reps} reps (median)")
    print("| tool | delivered | seconds | messages/s |")
    print("|---|---|---|---|")
    for tool, r in rows.items():
        print(f"| {tool} | {statistics.median(x[0] for x in r):,.0f} "
              f"| {statistics.median(x[1] for x in r):.2f} "
              f"| {statistics.median(x[2] for x in r):,.0f} |")


if __name__ == "__main__":
    main()
