#!/usr/bin/env python3
"""Side-by-side benchmark of ctrlinit against supervisord, s6, runit, tini and dumb-init (issue 6).

Every run starts the init under test as PID 1 of its own PID namespace
(`unshare --pid --fork --mount-proc --kill-child INIT ...`), drives one workload, measures from
outside through /proc, and kills the namespace. Workloads (see benches/README.md):

  idle      10 `sleep infinity` programs: PSS (smaps_rollup, summed over every process of the
            supervisor), CPU time and context switches over --idle-seconds; PSS with 100 programs
  restart   SIGKILL a program whose start writes a ns timestamp; kill -> new start; + fork/exec floor
  logs      one program writes --log-mib of 100-byte numbered lines; time until all bytes are in the
            log file, supervisor CPU, every line verified; reference: the writer piped into `cat`
  reap      a program leaves --orphans orphans that exit at once; zombies at burst end, time to none
  start     --start-programs programs until all wrote their start marker, from the init's exec
  stop      --stop-programs programs that exit on TERM: SIGTERM -> namespace empty, graceful count;
            one program that ignores TERM: when it dies versus its stop timeout (2 s)

Run as root on Linux. `benches/run.sh` installs the peers and builds everything first.
Results: benches/RESULTS.md (and the raw numbers in benches/results-raw.json).
"""

import argparse
import ctypes
import json
import os
import platform
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import traceback

BENCH_DIR = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(BENCH_DIR)
CLK_TCK = os.sysconf("SC_CLK_TCK")
TOOLS = ["ctrlinit", "supervisord", "s6", "runit", "tini", "dumb-init"]
PEERS = TOOLS[1:]
SLEEP = shutil.which("sleep") or "/usr/bin/sleep"
LINE = 100


def log(*a):
    print(*a, file=sys.stderr, flush=True)


def now_ns():
    return time.time_ns()


# --------------------------------------------------------------------------------------------
# /proc helpers


def read(path, default=None):
    try:
        with open(path, "rb") as f:
            return f.read().decode(errors="replace")
    except OSError:
        return default


def children(pid):
    """Children of every thread of `pid`."""
    out = []
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for t in tids:
        text = read(f"/proc/{pid}/task/{t}/children", "")
        out.extend(int(x) for x in text.split())
    return out


def descendants(pid):
    """`pid` and every process below it (the whole namespace when `pid` is its init)."""
    seen, todo = [], [pid]
    while todo:
        p = todo.pop()
        if p in seen:
            continue
        seen.append(p)
        todo.extend(children(p))
    return seen


def stat_fields(pid):
    text = read(f"/proc/{pid}/stat")
    if text is None:
        return None
    # comm may contain spaces and parentheses: split after the last ')'.
    rest = text[text.rfind(")") + 2 :].split()
    return rest  # rest[0] = state (field 3), rest[11] = utime (14), rest[12] = stime (15)


def state(pid):
    f = stat_fields(pid)
    return f[0] if f else None


def cpu_ticks(pid):
    f = stat_fields(pid)
    return int(f[11]) + int(f[12]) if f else 0


def exe(pid):
    try:
        return os.path.realpath(os.readlink(f"/proc/{pid}/exe"))
    except OSError:
        return ""


def comm(pid):
    return (read(f"/proc/{pid}/comm", "") or "").strip()


def pss_kib(pid, field="Pss:"):
    text = read(f"/proc/{pid}/smaps_rollup", "")
    for line in text.splitlines():
        if line.startswith(field):
            return int(line.split()[1])
    return 0


def anon_kib(pid):
    """Private memory (Pss_Anon): what each container pays on its own. File-backed pages (the
    binary, libraries) are shared by every container of a host that runs the same image."""
    return pss_kib(pid, "Pss_Anon:")


def thread_switches(pid):
    """{tid: voluntary + nonvoluntary context switches} over every thread of `pid`."""
    out = {}
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for t in tids:
        text = read(f"/proc/{pid}/task/{t}/status", "")
        n = 0
        for line in text.splitlines():
            if line.startswith(("voluntary_ctxt_switches", "nonvoluntary_ctxt_switches")):
                n += int(line.split()[1])
        out[(pid, int(t))] = n
    return out


def alive(pid):
    s = state(pid)
    return s is not None and s not in ("Z", "X")


def wait_for(pred, deadline_s, interval=0.002, what="condition"):
    """Polls `pred` until it returns a truthy value or the deadline passes (then raises)."""
    end = time.monotonic() + deadline_s
    while True:
        v = pred()
        if v:
            return v
        if time.monotonic() > end:
            raise TimeoutError(f"timed out after {deadline_s:g} s waiting for {what}")
        time.sleep(interval)


def set_subreaper():
    """Orphans of our namespaces' unshare processes come back to us, so we can reap them."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
    except Exception:
        pass


def reap_strays():
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


# --------------------------------------------------------------------------------------------
# Namespaces


class Namespace:
    """One init as PID 1 of a fresh PID namespace."""

    def __init__(self, argv, cwd, env=None, stdout=None, stderr=None):
        self.argv = ["unshare", "--pid", "--fork", "--mount-proc", "--kill-child"] + argv
        self.out = open(stdout or os.devnull, "wb")
        self.err = open(stderr or os.devnull, "wb")
        self.t_spawn = now_ns()
        self.proc = subprocess.Popen(
            self.argv,
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=self.out,
            stderr=self.err,
            start_new_session=True,
        )
        kids = wait_for(lambda: children(self.proc.pid), 10, 0.0005, "the namespace's init")
        self.init = kids[0]
        self.t_exit = None

    def procs(self):
        return descendants(self.init)

    def running(self):
        return self.proc.poll() is None

    def wait_exit(self, timeout):
        """Waits for the namespace to end (its init gone, so every process in it is gone)."""
        try:
            self.proc.wait(timeout=timeout)
            self.t_exit = now_ns()
            return True
        except subprocess.TimeoutExpired:
            return False

    def close(self):
        if self.proc.poll() is None:
            try:
                self.proc.kill()  # --kill-child: the init gets SIGKILL, the kernel the rest
            except OSError:
                pass
            self.proc.wait()
        try:
            os.kill(self.init, signal.SIGKILL)
        except OSError:
            pass
        end = time.monotonic() + 60
        while os.path.exists(f"/proc/{self.init}") and time.monotonic() < end:
            reap_strays()
            time.sleep(0.005)
        reap_strays()
        self.out.close()
        self.err.close()


# --------------------------------------------------------------------------------------------
# Tools: how each one is configured and started for a list of programs


class Program:
    def __init__(self, name, argv, log=False, stop_timeout=None, notify=False):
        self.name, self.argv, self.log = name, argv, log
        self.stop_timeout, self.notify = stop_timeout, notify


def toml_str(s):
    return json.dumps(s)


class Tool:
    name = "?"
    multi = True  # supervises several programs
    restarts = True
    logs = False

    def __init__(self, ctx):
        self.ctx = ctx

    def log_files(self, d, prog):
        return []

    def supervisor_pids(self, ns, workload_exes):
        return [p for p in ns.procs() if exe(p) not in workload_exes]


class Ctrlinit(Tool):
    name = "ctrlinit"
    logs = True

    def setup(self, d, programs):
        conf = os.path.join(d, "conf.d")
        os.makedirs(conf, exist_ok=True)
        lines = [
            "[init]",
            'stop_timeout = "9s"',
            f"log_dir = {toml_str(os.path.join(d, 'logs'))}",
            f"crash_dir = {toml_str(os.path.join(d, 'crash'))}",
            # versus.py --base-init/--new-init: more [init] keys for one side (`ledger = false`).
            *getattr(self, "init_extra", []),
            "",
        ]
        for p in programs:
            lines += [
                f"[program.{p.name}]",
                f"command = {json.dumps(p.argv)}",
                'backoff = { initial = "0s", max = "0s" }',
                "max_restarts = 999999",
            ]
            if p.stop_timeout is not None:
                lines.append(f'stop_timeout = "{p.stop_timeout}s"')
            if p.log:
                lines += [
                    f"[program.{p.name}.log]",
                    "file = true",
                    "console = false",
                    'max_size = "10GiB"',
                ]
            lines.append("")
        with open(os.path.join(conf, "bench.toml"), "w") as f:
            f.write("\n".join(lines))
        env = dict(os.environ, CTRLINIT_SOCKET=os.path.join(d, "ctrlinit.sock"))
        return [self.ctx.ctrlinit, "--config-dir", conf], env

    def log_files(self, d, prog):
        base = os.path.join(d, "logs", f"{prog}.log")
        rotated = sorted(
            (f for f in os.listdir(os.path.dirname(base)) if f.startswith(f"{prog}.log.")),
            key=lambda f: -int(f.rsplit(".", 1)[1]) if f.rsplit(".", 1)[1].isdigit() else 0,
        ) if os.path.isdir(os.path.dirname(base)) else []
        return [os.path.join(d, "logs", f) for f in rotated] + [base]


class Supervisord(Tool):
    name = "supervisord"
    logs = True

    def setup(self, d, programs):
        os.makedirs(os.path.join(d, "logs"), exist_ok=True)
        conf = os.path.join(d, "supervisord.conf")
        lines = [
            "[supervisord]",
            "nodaemon=true",
            f"logfile={d}/supervisord.log",
            "logfile_maxbytes=0",
            f"pidfile={d}/supervisord.pid",
            f"childlogdir={d}",
            "user=root",
            "",
        ]
        for p in programs:
            lines += [
                f"[program:{p.name}]",
                "command=" + " ".join(shlex.quote(a) for a in p.argv),
                "autorestart=true",
                "startsecs=0",
                "startretries=1000000",
                f"stdout_logfile={d}/logs/{p.name}.log" if p.log else "stdout_logfile=NONE",
                "stdout_logfile_maxbytes=0",
                "stderr_logfile=NONE",
            ]
            if p.stop_timeout is not None:
                lines.append(f"stopwaitsecs={max(1, round(p.stop_timeout))}")
            lines.append("")
        with open(conf, "w") as f:
            f.write("\n".join(lines))
        return [self.ctx.which["supervisord"], "-n", "-c", conf], None

    def log_files(self, d, prog):
        return [os.path.join(d, "logs", f"{prog}.log")]


class ServiceDirTool(Tool):
    """s6 and runit: a scan directory of service directories whose `run` execs the program."""

    logs = True

    def service(self, scan, p):
        sd = os.path.join(scan, p.name)
        os.makedirs(sd, exist_ok=True)
        run = os.path.join(sd, "run")
        if os.path.realpath(p.argv[0]) == os.path.realpath(self.ctx.helper):
            # Exec the helper directly (no shell): it reads its arguments from ./bench-args.
            os.symlink(self.ctx.helper, run)
            with open(os.path.join(sd, "bench-args"), "w") as f:
                f.write("\n".join(p.argv[1:]) + "\n")
        else:
            with open(run, "w") as f:
                f.write("#!/bin/sh\nexec " + " ".join(shlex.quote(a) for a in p.argv) + "\n")
            os.chmod(run, 0o755)
        return sd


class S6(ServiceDirTool):
    name = "s6"

    def __init__(self, ctx, readiness=False):
        super().__init__(ctx)
        self.readiness = readiness
        if readiness:
            self.name = "s6+notify"

    def setup(self, d, programs):
        scan = os.path.join(d, "scan")
        os.makedirs(scan, exist_ok=True)
        for p in programs:
            if self.readiness and os.path.realpath(p.argv[0]) == os.path.realpath(self.ctx.helper):
                p = Program(p.name, p.argv + ["--notify", "3"], p.log, p.stop_timeout)
            sd = self.service(scan, p)
            if self.readiness:
                with open(os.path.join(sd, "notification-fd"), "w") as f:
                    f.write("3\n")
            if p.stop_timeout is not None:
                with open(os.path.join(sd, "timeout-kill"), "w") as f:
                    f.write(f"{int(p.stop_timeout * 1000)}\n")
            if p.log:
                ld = os.path.join(d, "logs", p.name)
                os.makedirs(ld, exist_ok=True)
                os.makedirs(os.path.join(sd, "log"), exist_ok=True)
                with open(os.path.join(sd, "log", "run"), "w") as f:
                    f.write(f"#!/bin/sh\nexec s6-log -b n100 s1000000000 {shlex.quote(ld)}\n")
                os.chmod(os.path.join(sd, "log", "run"), 0o755)
        return [self.ctx.which["s6-svscan"], scan], None

    def log_files(self, d, prog):
        return archived_and_current(os.path.join(d, "logs", prog))


class Runit(ServiceDirTool):
    name = "runit"

    def setup(self, d, programs):
        scan = os.path.join(d, "scan")
        os.makedirs(scan, exist_ok=True)
        for p in programs:
            sd = self.service(scan, p)
            if p.log:
                ld = os.path.join(d, "logs", p.name)
                os.makedirs(ld, exist_ok=True)
                with open(os.path.join(ld, "config"), "w") as f:
                    f.write("s0\n")  # no rotation: every line stays in ./current
                os.makedirs(os.path.join(sd, "log"), exist_ok=True)
                with open(os.path.join(sd, "log", "run"), "w") as f:
                    f.write(f"#!/bin/sh\nexec svlogd {shlex.quote(ld)}\n")
                os.chmod(os.path.join(sd, "log", "run"), 0o755)
        return [self.ctx.which["runsvdir"], scan], None

    def log_files(self, d, prog):
        return archived_and_current(os.path.join(d, "logs", prog))


def archived_and_current(ld):
    if not os.path.isdir(ld):
        return []
    old = sorted(f for f in os.listdir(ld) if f.startswith("@"))
    # s6-log rotates by renaming `current` to `previous`, then `previous` to `@….s`: a file caught
    # between the two renames is still part of the log (s6-log caps a file at 256 MiB, so the
    # 512 MiB workload rotates once).
    return [os.path.join(ld, f) for f in old] + [os.path.join(ld, "previous"), os.path.join(ld, "current")]


class SingleChild(Tool):
    """tini and dumb-init run one child; several programs become `sh -c 'a & b & wait'`."""

    multi = False
    restarts = False
    logs = False

    def child(self, programs):
        if len(programs) == 1:
            return programs[0].argv
        script = " ".join(" ".join(shlex.quote(a) for a in p.argv) + " &" for p in programs)
        return ["/bin/sh", "-c", script + " wait"]


class Tini(SingleChild):
    name = "tini"

    def setup(self, d, programs):
        return [self.ctx.which["tini"], "--"] + self.child(programs), None


class DumbInit(SingleChild):
    name = "dumb-init"

    def setup(self, d, programs):
        return [self.ctx.which["dumb-init"]] + self.child(programs), None


# --------------------------------------------------------------------------------------------
# Workloads. Each returns a dict of metrics (or raises: the cell becomes "–").


class Ctx:
    pass


def start_ns(ctx, tool, d, programs, stdout=None, wrap=None):
    argv, env = tool.setup(d, programs)
    if wrap:
        argv = wrap + argv
    ctx.commands.setdefault(tool.name, " ".join(["unshare --pid --fork --mount-proc --kill-child"] + [
        shlex.quote(a.replace(d, "$DIR")) for a in argv]))
    return Namespace(
        argv,
        cwd=d,
        env=env,
        stdout=stdout if stdout is not None else os.path.join(d, "init.stdout"),
        stderr=os.path.join(d, "init.stderr"),
    )


def workload_exes(ctx):
    return {os.path.realpath(ctx.helper), os.path.realpath(SLEEP), os.path.realpath("/bin/sh")}


def sup_snapshot(ns, tool, ctx):
    pids = tool.supervisor_pids(ns, workload_exes(ctx))
    return {
        "pids": pids,
        "cpu": {p: cpu_ticks(p) for p in pids},
        "sw": {k: v for p in pids for k, v in thread_switches(p).items()},
    }


def idle(ctx, tool, d, n, seconds):
    if tool.multi:
        programs = [Program(f"s{i:03d}", [SLEEP, "infinity"]) for i in range(n)]
    else:
        programs = [Program("s000", [SLEEP, "infinity"])]
        n = 1
    ns = start_ns(ctx, tool, d, programs)
    try:
        sleep_exe = os.path.realpath(SLEEP)
        wait_for(
            lambda: sum(1 for p in ns.procs() if exe(p) == sleep_exe) >= n,
            60, 0.01, f"{n} sleep programs",
        )
        if seconds <= 0:  # PSS only
            time.sleep(ctx.args.settle)
            pids = tool.supervisor_pids(ns, workload_exes(ctx))
            return {"pss_kib": sum(pss_kib(p) for p in pids), "procs": len(pids)}
        time.sleep(ctx.args.settle)
        a = sup_snapshot(ns, tool, ctx)
        time.sleep(seconds)  # the idle window: the one fixed wait
        b = sup_snapshot(ns, tool, ctx)
        pss = sum(pss_kib(p) for p in b["pids"])
        anon = sum(anon_kib(p) for p in b["pids"])
        common = set(a["sw"]) & set(b["sw"])
        born = set(b["sw"]) - set(a["sw"])
        died = set(a["sw"]) - set(b["sw"])
        switches = sum(b["sw"][k] - a["sw"][k] for k in common)
        switches += sum(b["sw"][k] for k in born) + len(died)
        cpu = sum(b["cpu"].get(p, 0) - a["cpu"].get(p, 0) for p in b["pids"])
        return {
            "pss_kib": pss,
            "anon_kib": anon,
            "procs": len(b["pids"]),
            "threads": len(b["sw"]),
            "threads_born": len(born),
            "threads_died": len(died),
            "switches": switches,
            "cpu_ms": cpu * 1000.0 / CLK_TCK,
        }
    finally:
        ns.close()


def read_stamps(path):
    text = read(path, "") or ""
    return [int(x) for x in text.split() if x.isdigit()]


def helper_pids(ns, ctx):
    h = os.path.realpath(ctx.helper)
    return [p for p in ns.procs() if exe(p) == h and alive(p)]


def restart(ctx, tool, d, kills, spacing):
    stamps = os.path.join(d, "stamps")
    programs = [Program("r", [ctx.helper, "stamp", stamps])]
    ns = start_ns(ctx, tool, d, programs)
    lat = []
    try:
        wait_for(lambda: read_stamps(stamps), 30, 0.002, "the first start")
        for _ in range(kills):
            starts = read_stamps(stamps)
            pid = wait_for(lambda: helper_pids(ns, ctx), 10, 0.001, "the program's pid")
            if len(pid) != 1:
                pid = wait_for(
                    lambda: (lambda l: l if len(l) == 1 else None)(helper_pids(ns, ctx)),
                    10, 0.001, "exactly one program process",
                )
            pid = pid[0]
            # Kills spaced > 1 s from the last start, so no "died too soon" throttle applies.
            wait_until = starts[-1] / 1e9 + spacing
            while time.time() < wait_until:
                time.sleep(min(0.05, max(0.0, wait_until - time.time())))
            t_kill = now_ns()
            os.kill(pid, signal.SIGKILL)
            new = wait_for(
                lambda: (lambda s: s if len(s) > len(starts) else None)(read_stamps(stamps)),
                10, 0.002, "the restart",
            )
            lat.append((new[len(starts)] - t_kill) / 1e6)
        return {
            "median_ms": statistics.median(lat),
            "p90_ms": percentile(lat, 90),
            "min_ms": min(lat),
            "max_ms": max(lat),
            "kills": len(lat),
            # Every restart, for the distribution in restart.svg (plots.py).
            "samples_ms": [round(x, 3) for x in lat],
        }
    finally:
        ns.close()


def percentile(xs, p):
    xs = sorted(xs)
    if not xs:
        return None
    k = (len(xs) - 1) * p / 100.0
    lo, hi = int(k), min(int(k) + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)


def floor(ctx, d, n):
    out = subprocess.run(
        [ctx.helper, "floor", str(n), os.path.join(d, "floor.stamps")],
        check=True, capture_output=True, text=True,
    ).stdout
    lat = [x / 1e6 for x in json.loads(out)]
    return {"median_ms": statistics.median(lat), "p90_ms": percentile(lat, 90), "n": len(lat)}


def files_size(paths):
    total = 0
    for p in paths:
        try:
            total += os.stat(p).st_size
        except OSError:
            pass
    return total


def writer_stamps(path):
    out = {}
    for line in (read(path, "") or "").splitlines():
        k, _, v = line.partition(" ")
        if v.isdigit():
            out[k] = int(v)
    return out


def verify(ctx, n_lines, paths):
    r = subprocess.run([ctx.helper, "verify", str(n_lines)] + paths, capture_output=True, text=True)
    try:
        return json.loads(r.stdout)
    except ValueError:
        return {"ok": False, "error": (r.stdout + r.stderr).strip()[:300]}


def logs(ctx, tool, d, mib):
    n_lines = mib * 1024 * 1024 // LINE
    want = n_lines * LINE
    go, wst = os.path.join(d, "go"), os.path.join(d, "writer.stamps")
    programs = [Program("w", [ctx.helper, "lines", str(n_lines), go, wst], log=True)]
    # ctrlinit's console is off for this program; anything else it prints is not wanted here.
    ns = start_ns(ctx, tool, d, programs, stdout=os.devnull)
    try:
        wait_for(lambda: helper_pids(ns, ctx), 30, 0.005, "the writer")
        if isinstance(tool, (S6, Runit)):
            logger = "s6-log" if isinstance(tool, S6) else "svlogd"
            wait_for(lambda: any(comm(p) == logger for p in ns.procs()), 30, 0.005, logger)
        time.sleep(0.2)  # let the start-up settle so its CPU is not counted
        a = sup_snapshot(ns, tool, ctx)
        open(go, "w").close()
        deadline = time.monotonic() + ctx.args.log_deadline
        pending_since = None
        t_done = None
        while time.monotonic() < deadline:
            files = tool.log_files(d, "w")
            size = files_size(files)
            if size >= want:
                t_done = now_ns()
                break
            ws = writer_stamps(wst)
            if "end" in ws and size == 0 and not any(os.path.exists(f) for f in files):
                # The writer is done and no log file exists at all.
                pending_since = pending_since or time.monotonic()
                if time.monotonic() - pending_since > 5:
                    break
            time.sleep(0.003)
        b = sup_snapshot(ns, tool, ctx)
        files = tool.log_files(d, "w")
        size = files_size(files)
        ws = writer_stamps(wst)
        if t_done is None:
            if size == 0 and tool.name == "ctrlinit":
                return {"pending": True, "note": "no log file written (log files pending)"}
            raise RuntimeError(f"only {size} of {want} bytes reached the log file(s)")
        secs = (t_done - ws["start"]) / 1e9
        cpu = sum(b["cpu"].get(p, 0) - a["cpu"].get(p, 0) for p in b["pids"]) * 1000.0 / CLK_TCK
        v = verify(ctx, n_lines, [f for f in files if os.path.exists(f)])
        for _ in range(3):
            if v.get("ok"):
                break
            # A logger may have been renaming a file while it was listed: list and verify again.
            time.sleep(0.5)
            files = tool.log_files(d, "w")
            v = verify(ctx, n_lines, [f for f in files if os.path.exists(f)])
        return {
            "mb_s": want / secs / 1e6,
            "seconds": secs,
            "cpu_ms": cpu,
            "cpu_ms_per_mib": cpu / mib,
            "files": len([f for f in files if os.path.exists(f)]),
            "verified": bool(v.get("ok")),
            "verify": v,
        }
    finally:
        ns.close()
        shutil.rmtree(os.path.join(d, "logs"), ignore_errors=True)


def logs_reference(ctx, d, mib, sink):
    """The writer piped into `cat > file` (sink='cat') or writing to /dev/null (sink='null')."""
    n_lines = mib * 1024 * 1024 // LINE
    want = n_lines * LINE
    go, wst = os.path.join(d, "go"), os.path.join(d, "writer.stamps")
    out = os.path.join(d, "cat.out")
    open(go, "w").close()
    if sink == "null":
        with open(os.devnull, "wb") as null:
            subprocess.run([ctx.helper, "lines", str(n_lines), go, wst, "--exit"], stdout=null, check=True)
        ws = writer_stamps(wst)
        return {"mb_s": want / ((ws["end"] - ws["start"]) / 1e9) / 1e6}
    with open(out, "wb") as f:
        w = subprocess.Popen([ctx.helper, "lines", str(n_lines), go, wst, "--exit"], stdout=subprocess.PIPE)
        c = subprocess.Popen(["cat"], stdin=w.stdout, stdout=f)
        w.stdout.close()
        t_done = None
        end = time.monotonic() + ctx.args.log_deadline
        while time.monotonic() < end:
            if files_size([out]) >= want:
                t_done = now_ns()
                break
            time.sleep(0.003)
        _, status, ru = os.wait4(c.pid, 0)
        c.returncode = os.waitstatus_to_exitcode(status)
        w.wait()
    ws = writer_stamps(wst)
    secs = (t_done - ws["start"]) / 1e9
    v = verify(ctx, n_lines, [out])
    os.unlink(out)
    cpu = (ru.ru_utime + ru.ru_stime) * 1000
    return {"mb_s": want / secs / 1e6, "seconds": secs, "cpu_ms": cpu, "cpu_ms_per_mib": cpu / mib,
            "verified": bool(v.get("ok"))}


def reap(ctx, tool, d, n, deadline_s):
    ready, go = os.path.join(d, "ready"), os.path.join(d, "go")
    programs = [Program("o", [ctx.helper, "orphans", str(n), ready, go])]
    ns = start_ns(ctx, tool, d, programs)
    try:
        wait_for(lambda: "made" in (read(ready, "") or ""), 180, 0.01, "the orphans")
        orphans = set()
        for p in children(ns.init):
            if comm(p) == "bh-orphan":
                orphans.add(p)
        if len(orphans) < n * 0.99:
            raise RuntimeError(f"only {len(orphans)} of {n} orphans are children of the init")
        sup = [p for p in tool.supervisor_pids(ns, workload_exes(ctx)) if p not in orphans]
        time.sleep(0.2)
        cpu0 = {p: cpu_ticks(p) for p in sup}
        open(go, "w").close()
        t_go = None
        burst_end = zombies_at_end = None
        t_clear = None
        left = None
        end = time.monotonic() + deadline_s
        while time.monotonic() < end:
            kids = orphans.intersection(children(ns.init))
            left = len(kids)
            if t_go is None:
                for line in (read(ready, "") or "").splitlines():
                    if line.startswith("go "):
                        t_go = int(line.split()[1])
            if burst_end is None and t_go is not None:
                running = False
                for p in kids:
                    s = state(p)
                    if s is not None and s not in ("Z", "X"):
                        running = True
                        break
                if not running:
                    burst_end = now_ns()
                    zombies_at_end = sum(1 for p in kids if state(p) in ("Z", "X"))
            if not kids and t_go is not None:
                t_clear = now_ns()
                break
            time.sleep(0.002)
        if t_go is None:
            raise RuntimeError("the orphan program never saw the go file")
        res = {
            "orphans": len(orphans),
            "zombies_at_burst_end": zombies_at_end,
            "burst_ms": (burst_end - t_go) / 1e6 if burst_end else None,
            "clear_ms": (t_clear - t_go) / 1e6 if t_clear else None,
            "left_at_deadline": 0 if t_clear else left,
            "cpu_ms": sum(cpu_ticks(p) - cpu0[p] for p in sup) * 1000.0 / CLK_TCK,
        }
        if not t_clear:
            elapsed = deadline_s
            res["reaped_per_s"] = (len(orphans) - left) / elapsed
        return res
    finally:
        ns.close()


def start(ctx, tool, d, n):
    sd = os.path.join(d, "starts")
    os.makedirs(sd)
    programs = [Program(f"p{i:03d}", [ctx.helper, "stamp", os.path.join(sd, f"p{i:03d}")]) for i in range(n)]
    t0f = os.path.join(d, "exec.stamp")
    ns = start_ns(ctx, tool, d, programs, wrap=[ctx.helper, "execstamp", t0f])
    try:
        def all_started():
            got = []
            for i in range(n):
                s = read_stamps(os.path.join(sd, f"p{i:03d}"))
                if not s:
                    return None
                got.append(s[0])
            return got
        got = wait_for(all_started, 60, 0.005, f"{n} start markers")
        t0 = read_stamps(t0f)[0]
        return {
            "all_ms": (max(got) - t0) / 1e6,
            "first_ms": (min(got) - t0) / 1e6,
            "spawn_to_exec_ms": (t0 - ns.t_spawn) / 1e6,
        }
    finally:
        ns.close()


def stop(ctx, tool, d, n):
    sd = os.path.join(d, "starts")
    os.makedirs(sd)
    marker = os.path.join(d, "term.marker")
    programs = [
        Program(f"t{i:03d}", [ctx.helper, "stamp", os.path.join(sd, f"t{i:03d}"), "--on-term", marker])
        for i in range(n)
    ]
    ns = start_ns(ctx, tool, d, programs)
    try:
        wait_for(
            lambda: all(read_stamps(os.path.join(sd, f"t{i:03d}")) for i in range(n)),
            60, 0.005, f"{n} programs up",
        )
        wait_for(lambda: len(helper_pids(ns, ctx)) >= n, 10, 0.005, f"{n} program processes")
        time.sleep(0.2)
        t_term = now_ns()
        os.kill(ns.init, signal.SIGTERM)
        done = ns.wait_exit(ctx.args.stop_deadline)
        graceful = len((read(marker, "") or "").splitlines())
        if not done:
            return {"ms": None, "graceful": graceful, "killed": n - graceful,
                    "note": f"namespace still up {ctx.args.stop_deadline:g} s after SIGTERM"}
        return {"ms": (ns.t_exit - t_term) / 1e6, "graceful": graceful, "killed": n - graceful}
    finally:
        ns.close()


def stop_ignore(ctx, tool, d, timeout_s):
    st = os.path.join(d, "stamps")
    programs = [Program("i", [ctx.helper, "stamp", st, "--ignore-term"], stop_timeout=timeout_s)]
    ns = start_ns(ctx, tool, d, programs)
    try:
        wait_for(lambda: read_stamps(st), 30, 0.005, "the program")
        pid = wait_for(lambda: helper_pids(ns, ctx), 10, 0.005, "its pid")[0]
        time.sleep(0.2)
        t_term = now_ns()
        os.kill(ns.init, signal.SIGTERM)
        deadline = time.monotonic() + timeout_s + ctx.args.ignore_grace
        t_dead = None
        while time.monotonic() < deadline:
            if not alive(pid):
                t_dead = now_ns()
                break
            time.sleep(0.001)
        if t_dead is None:
            return {"killed_ms": None, "late_ms": None,
                    "note": f"still running {timeout_s + ctx.args.ignore_grace:g} s after SIGTERM"}
        ms = (t_dead - t_term) / 1e6
        return {"killed_ms": ms, "late_ms": ms - timeout_s * 1000}
    finally:
        ns.close()


# --------------------------------------------------------------------------------------------
# Driver


def machine():
    cpu = "?"
    for line in (read("/proc/cpuinfo", "") or "").splitlines():
        if line.startswith("model name"):
            cpu = line.split(":", 1)[1].strip()
            break
    mem = "?"
    for line in (read("/proc/meminfo", "") or "").splitlines():
        if line.startswith("MemTotal"):
            mem = f"{int(line.split()[1]) / 1024 / 1024:.1f} GiB"
    osr = "?"
    for line in (read("/etc/os-release", "") or "").splitlines():
        if line.startswith("PRETTY_NAME="):
            osr = line.split("=", 1)[1].strip('"')
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "kernel": platform.release(),
        "memory": mem,
        "os": osr,
        "fs": " ".join(subprocess.run(["df", "--output=source,fstype", ctx_workdir()],
                                      capture_output=True, text=True).stdout.split()[2:4]),
    }


_WORKDIR = [None]


def ctx_workdir():
    return _WORKDIR[0] or tempfile.gettempdir()


def cmd_version(argv):
    try:
        r = subprocess.run(argv, capture_output=True, text=True, timeout=10)
        return (r.stdout + r.stderr).strip().splitlines()[0]
    except Exception as e:
        return f"? ({e})"


def dpkg_version(pkg):
    r = subprocess.run(["dpkg-query", "-W", "-f", "${Version}", pkg], capture_output=True, text=True)
    return r.stdout.strip() or "?"


def versions(ctx):
    git = subprocess.run(["git", "-C", REPO, "describe", "--always", "--dirty"],
                         capture_output=True, text=True).stdout.strip()
    return {
        "ctrlinit": f"{cmd_version([ctx.ctrlinit, '--version'])} (git {git or '?'})",
        "supervisord": f"{cmd_version([ctx.which['supervisord'], '--version'])} (Debian supervisor {dpkg_version('supervisor')})",
        "s6": f"Debian s6 {dpkg_version('s6')} (skalibs {dpkg_version('libskarnet2.13')}, execline {dpkg_version('execline')})",
        "runit": f"Debian runit {dpkg_version('runit')}",
        "tini": cmd_version([ctx.which["tini"], "--version"]),
        "dumb-init": cmd_version([ctx.which["dumb-init"], "--version"]),
        "unshare": cmd_version(["unshare", "--version"]),
        "python": sys.version.split()[0],
        "rustc": cmd_version(["rustc", "--version"]),
    }


def build_helper(ctx):
    src = os.path.join(BENCH_DIR, "helper", "benchhelper.rs")
    out_dir = os.path.join(REPO, "target", "bench-helper")
    os.makedirs(out_dir, exist_ok=True)
    out = os.path.join(out_dir, "benchhelper")
    base = ["rustc", "--edition", "2024", "-C", "opt-level=3", src, "-o", out]
    r = subprocess.run(base + ["-C", "target-feature=+crt-static"], capture_output=True, text=True)
    if r.returncode != 0:
        log("static build of the helper failed; building it dynamically:", r.stderr[-500:])
        subprocess.run(base, check=True)
    return out


def make_tool(ctx, name):
    return {
        "ctrlinit": Ctrlinit,
        "supervisord": Supervisord,
        "s6": S6,
        "runit": Runit,
        "tini": Tini,
        "dumb-init": DumbInit,
    }[name](ctx)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="tiny sizes, 1 repetition (smoke test, < 2 min)")
    ap.add_argument("--idle-seconds", type=float, default=20.0)
    ap.add_argument("--settle", type=float, default=1.0,
                    help="seconds between every program being up and the idle window opening")
    ap.add_argument("--idle-programs", type=int, default=10)
    ap.add_argument("--pss-programs", type=int, default=100)
    ap.add_argument("--kills", type=int, default=60)
    ap.add_argument("--kill-spacing", type=float, default=1.1, help="seconds from a start to the next kill")
    ap.add_argument("--log-mib", type=int, default=512)
    ap.add_argument("--log-deadline", type=float, default=180.0)
    ap.add_argument("--orphans", type=int, default=20000)
    ap.add_argument("--reap-deadline", type=float, default=30.0)
    ap.add_argument("--start-programs", type=int, default=100)
    ap.add_argument("--stop-programs", type=int, default=50)
    ap.add_argument("--stop-deadline", type=float, default=30.0)
    ap.add_argument("--stop-timeout", type=float, default=2.0, help="stop timeout of the TERM-ignoring program")
    ap.add_argument("--ignore-grace", type=float, default=13.0,
                    help="how long past the stop timeout to wait for the TERM-ignoring program to die")
    ap.add_argument("--workloads", default="idle,restart,logs,reap,start,stop")
    ap.add_argument("--tools", default=",".join(TOOLS))
    ap.add_argument("--ctrlinit", default=os.path.join(REPO, "target", "release", "ctrlinit"))
    ap.add_argument("--workdir", default=None, help="where the namespaces' files go (default: a temp dir)")
    ap.add_argument("--out", default=os.path.join(BENCH_DIR, "RESULTS.md"))
    ap.add_argument("--raw", default=os.path.join(BENCH_DIR, "results-raw.json"))
    ap.add_argument("--render-only", metavar="RAW_JSON",
                    help="rewrite --out from a results-raw.json of an earlier run, measuring nothing")
    args = ap.parse_args()
    if args.render_only:
        with open(args.render_only) as f:
            data = json.load(f)
        tools = [t for t in TOOLS if t not in data["info"].get("missing", {})]
        md = repo_relative(render(data["info"], data["raw"], data["errors"], tools))
        with open(args.out, "w") as f:
            f.write(md)
        print(md)
        return
    if args.quick:
        args.reps = 1
        args.idle_seconds = min(args.idle_seconds, 1.0)
        args.settle = min(args.settle, 0.3)
        args.pss_programs = min(args.pss_programs, 30)
        args.kills = min(args.kills, 3)
        args.log_mib = min(args.log_mib, 16)
        args.orphans = min(args.orphans, 1000)
        args.reap_deadline = min(args.reap_deadline, 3.0)
        args.start_programs = min(args.start_programs, 20)
        args.stop_programs = min(args.stop_programs, 10)
        args.stop_deadline = min(args.stop_deadline, 10.0)
        args.ignore_grace = min(args.ignore_grace, 1.5)
    if os.geteuid() != 0:
        sys.exit("compare.py: run as root (it creates PID namespaces)")

    ctx = Ctx()
    ctx.args = args
    ctx.commands = {}
    ctx.ctrlinit = os.path.abspath(args.ctrlinit)
    ctx.which = {}
    for b in ["supervisord", "s6-svscan", "s6-log", "runsvdir", "svlogd", "tini", "dumb-init"]:
        ctx.which[b] = shutil.which(b)
    ctx.helper = build_helper(ctx)
    set_subreaper()

    tools = [t for t in args.tools.split(",") if t]
    available = []
    missing = {}
    need = {"ctrlinit": ctx.ctrlinit, "supervisord": ctx.which["supervisord"], "s6": ctx.which["s6-svscan"],
            "runit": ctx.which["runsvdir"], "tini": ctx.which["tini"], "dumb-init": ctx.which["dumb-init"]}
    for t in tools:
        if need.get(t) and os.access(need[t], os.X_OK):
            available.append(t)
        else:
            missing[t] = "not installed"
    workloads = [w for w in args.workloads.split(",") if w]
    root = args.workdir or tempfile.mkdtemp(prefix="ctrlinit-bench.")
    os.makedirs(root, exist_ok=True)
    _WORKDIR[0] = root
    t_begin = time.time()
    load_before = (read("/proc/loadavg", "") or "").split()[:3]

    raw = {}  # key -> tool -> [per-rep result]
    errors = {}
    loads = []  # 1-min load average when each run started

    def run(key, tool_name, fn, *a):
        d = tempfile.mkdtemp(prefix=f"{key}-{tool_name}-", dir=root)
        t = time.monotonic()
        load1 = float((read("/proc/loadavg", "0") or "0").split()[0])
        loads.append(load1)
        try:
            res = fn(d, *a)
            res["load1_at_start"] = load1
            log(f"  {key:<12} {tool_name:<12} {json.dumps(res)[:200]}  ({time.monotonic() - t:.1f} s)")
        except Exception as e:
            res = {"error": f"{type(e).__name__}: {e}"}
            errors.setdefault(key, {})[tool_name] = res["error"]
            log(f"  {key:<12} {tool_name:<12} FAILED: {res['error']}")
            if os.environ.get("BENCH_DEBUG"):
                traceback.print_exc()
        finally:
            shutil.rmtree(d, ignore_errors=True)
        raw.setdefault(key, {}).setdefault(tool_name, []).append(res)

    for rep in range(args.reps):
        log(f"repetition {rep + 1}/{args.reps}")
        for name in available:
            tool = make_tool(ctx, name)
            if "idle" in workloads:
                run("idle", name, lambda d, t=tool: idle(ctx, t, d, args.idle_programs, args.idle_seconds))
                if tool.multi:
                    run("idle100", name, lambda d, t=tool: idle(ctx, t, d, args.pss_programs, 0))
            if "restart" in workloads and tool.restarts:
                run("restart", name, lambda d, t=tool: restart(ctx, t, d, args.kills, args.kill_spacing))
                if name == "s6":
                    t6 = S6(ctx, readiness=True)
                    run("restart", "s6+notify", lambda d: restart(ctx, t6, d, args.kills, args.kill_spacing))
            if "logs" in workloads and tool.logs:
                run("logs", name, lambda d, t=tool: logs(ctx, t, d, args.log_mib))
            if "reap" in workloads:
                run("reap", name, lambda d, t=tool: reap(ctx, t, d, args.orphans, args.reap_deadline))
            if "start" in workloads and tool.multi:
                run("start", name, lambda d, t=tool: start(ctx, t, d, args.start_programs))
            if "stop" in workloads:
                run("stop", name, lambda d, t=tool: stop(ctx, t, d, args.stop_programs))
                run("stop_ignore", name, lambda d, t=tool: stop_ignore(ctx, t, d, args.stop_timeout))
        if "restart" in workloads:
            run("restart", "floor", lambda d: floor(ctx, d, max(args.kills, 20)))
        if "logs" in workloads:
            run("logs", "cat", lambda d: logs_reference(ctx, d, args.log_mib, "cat"))
            run("logs", "writer", lambda d: logs_reference(ctx, d, args.log_mib, "null"))

    elapsed = time.time() - t_begin
    info = {
        "machine": machine(),
        "versions": versions(ctx),
        "args": vars(args),
        "elapsed_s": elapsed,
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "missing": missing,
        "loadavg": {"before": load_before, "after": (read("/proc/loadavg", "") or "").split()[:3],
                    "at_run_starts": {"median": statistics.median(loads) if loads else None,
                                      "max": max(loads) if loads else None,
                                      "over_2": sum(1 for x in loads if x > 2.0), "runs": len(loads)}},
        "commands": ctx.commands,
        "configs": sample_configs(ctx),
    }
    with open(args.raw, "w") as f:
        json.dump({"info": info, "raw": raw, "errors": errors}, f, indent=1, default=str)
    md = repo_relative(render(info, raw, errors, available))
    with open(args.out, "w") as f:
        f.write(md)
    # The plots next to the table (benches/plots.py; `plots.py --from-results` redraws them).
    import plots
    out_dir = os.path.dirname(os.path.abspath(args.out))
    plots.write_compare({"info": info, "raw": raw}, os.path.join(out_dir, "compare.svg"))
    plots.write_restart({"info": info, "raw": raw}, os.path.join(out_dir, "restart.svg"))
    print(md)
    if not args.workdir:
        shutil.rmtree(root, ignore_errors=True)


def sample_configs(ctx):
    """The configuration each tool got for the restart workload, for RESULTS.md."""
    out = {}
    with tempfile.TemporaryDirectory() as d:
        prog = [Program("r", [ctx.helper, "stamp", "$DIR/stamps"], stop_timeout=2)]
        for name in ["ctrlinit", "supervisord"]:
            sub = os.path.join(d, name)
            os.makedirs(sub)
            make_tool(ctx, name).setup(sub, prog)
            f = os.path.join(sub, "conf.d", "bench.toml") if name == "ctrlinit" else os.path.join(sub, "supervisord.conf")
            out[name] = (read(f, "") or "").replace(sub, "$DIR")
        for name in ["s6", "runit"]:
            sub = os.path.join(d, name)
            os.makedirs(sub)
            make_tool(ctx, name).setup(sub, [Program("w", [ctx.helper, "lines", "N", "go", "st"], log=True, stop_timeout=2)])
            lines = []
            for dp, _, fs in sorted(os.walk(os.path.join(sub, "scan"))):
                for fn in sorted(fs):
                    p = os.path.join(dp, fn)
                    rel = os.path.relpath(p, sub)
                    if os.path.islink(p):
                        lines.append(f"{rel} -> {os.readlink(p)}")
                    else:
                        lines.append(f"{rel}: " + (read(p, "") or "").strip().replace("\n", " | ").replace(sub, "$DIR"))
            out[name] = "\n".join(lines)
    return out


# --------------------------------------------------------------------------------------------
# Report


def repo_relative(md):
    """The results with the checkout's own path cut from every path in them: where the repository
    sat on the machine that measured says nothing to a reader, and RESULTS.md is committed."""
    return md.replace(REPO + "/", "")


def med(results, key):
    xs = [r.get(key) for r in results if isinstance(r, dict) and r.get(key) is not None and "error" not in r]
    xs = [x for x in xs if isinstance(x, (int, float)) and not isinstance(x, bool)]
    return statistics.median(xs) if xs else None


def fmt(x, unit="", digits=None):
    if x is None:
        return "–"
    if digits is None:
        digits = 0 if abs(x) >= 100 else (1 if abs(x) >= 10 else 2)
    return f"{x:,.{digits}f}{unit}"


def ratio(a, b):
    if a is None or b is None:
        return ""
    if b == 0:
        return " (=)" if a == 0 else " (peer 0)"
    return f" ({a / b:.2f}×)"


def render(info, raw, errors, available):
    a = info["args"]
    R = lambda key, tool: raw.get(key, {}).get(tool, [])

    def cell_error(key, tool):
        rs = R(key, tool)
        return rs and all("error" in r for r in rs)

    rows = []  # (label, better, {tool: (value, text)})

    def row(label, better, key, metric, unit="", digits=None, text=None, tools=TOOLS):
        vals = {}
        for t in tools:
            rs = R(key, t)
            if not rs:
                vals[t] = (None, "–")
                continue
            if t == "ctrlinit" and any(r.get("pending") for r in rs):
                vals[t] = (None, "n/a (pending)")
                continue
            v = med(rs, metric)
            vals[t] = (v, text(v, rs) if text else fmt(v, unit, digits))
        rows.append((label, better, vals))

    mib = lambda v, rs: "–" if v is None else f"{v / 1024:.2f} MiB"
    row(f"idle PSS, {a['idle_programs']} programs (tini/dumb-init: 1 child)", "lower", "idle", "pss_kib", text=lambda v, rs: "–" if v is None else f"{v / 1024:.2f} MiB ({int(med(rs, 'procs'))} proc{'s' if med(rs, 'procs') != 1 else ''})")
    row(f"idle private memory (Pss_Anon), {a['idle_programs']} programs", "lower", "idle", "anon_kib", text=mib)
    row(f"idle PSS, {a['pss_programs']} programs", "lower", "idle100", "pss_kib", text=mib)
    row(f"idle context switches / {a['idle_seconds']:g} s (all threads)", "lower", "idle", "switches", digits=0)
    row(f"idle CPU / {a['idle_seconds']:g} s (utime+stime)", "lower", "idle", "cpu_ms", " ms", 0)
    row("restart after SIGKILL, median", "lower", "restart", "median_ms", " ms", 2)
    row("restart after SIGKILL, p90", "lower", "restart", "p90_ms", " ms", 2)
    row(f"log file throughput, {a['log_mib']} MiB of 100-byte lines", "higher", "logs", "mb_s", " MB/s", 0)
    row("supervisor CPU per MiB logged", "lower", "logs", "cpu_ms_per_mib", " ms", 2)
    row("every line in the log, in order, once", "", "logs", "verified",
        text=lambda v, rs: "–" if not rs else ("yes" if all(r.get("verified") for r in rs) else "NO"))
    row(f"{a['orphans']:,} orphans: zombies at burst end", "lower", "reap", "zombies_at_burst_end", digits=0)
    row(f"{a['orphans']:,} orphans: time until none left (from the go)", "lower", "reap", "clear_ms",
        text=lambda v, rs: (fmt(v, ' ms', 1) if v is not None else
                            (f"> {a['reap_deadline']:g} s ({int(med(rs, 'left_at_deadline') or 0):,} left)"
                             if med(rs, 'left_at_deadline') else "–")))
    row(f"{a['start_programs']} programs started (from the init's exec)", "lower", "start", "all_ms", " ms", 1)
    row(f"{a['stop_programs']} programs stopped: SIGTERM → namespace empty", "lower", "stop", "ms",
        text=lambda v, rs: fmt(v, ' ms', 1) if v is not None else (f"> {a['stop_deadline']:g} s" if rs and "error" not in rs[0] else "–"))
    row(f"{a['stop_programs']} programs stopped: graceful (handled TERM)", "higher", "stop", "graceful",
        text=lambda v, rs: "–" if v is None else f"{v:.0f} / {a['stop_programs']}")
    row(f"TERM-ignoring program (stop timeout {a['stop_timeout']:g} s): dies after", "", "stop_ignore", "killed_ms",
        text=lambda v, rs: fmt(v, ' ms', 1) if v is not None else (f"never (> {a['stop_timeout'] + a['ignore_grace']:g} s)" if rs and "error" not in rs[0] else "–"))

    out = []
    out.append("# ctrlinit vs supervisord, s6, runit, tini and dumb-init\n")
    out.append(f"Generated by `benches/compare.py` on {info['date']} in {info['elapsed_s'] / 60:.1f} min "
               f"({a['reps']} repetition{'s' if a['reps'] != 1 else ''}; medians across repetitions"
               f"{'; QUICK smoke mode, tiny sizes: not representative' if a['quick'] else ''}). "
               "Reproduce with `sudo benches/run.sh` (or `benches/run.sh --quick` for a smoke test).\n")
    m = info["machine"]
    out.append("## Machine\n")
    out.append(f"- CPU: {m['cpu']}, {m['cores']} cores; memory {m['memory']}")
    out.append(f"- Kernel: {m['kernel']}; OS: {m['os']}")
    out.append(f"- Work directory file system (logs are written there): {m['fs'] or '?'}")
    la = info.get("loadavg", {})
    rs = la.get("at_run_starts") or {}
    out.append(f"- Load average (1/5/15 min) before the run: {' '.join(la.get('before', []))}. "
               f"1-min load average when each of the {rs.get('runs')} runs started: median {fmt(rs.get('median'), '', 2)}, "
               f"max {fmt(rs.get('max'), '', 1)}, above 2 (the core count) for {rs.get('over_2')} runs. "
               "The reap workload's 20,000 processes raise it for a minute by themselves; anything else "
               "running on the machine (other builds, tests) shows here too and makes timings noisier.\n")
    out.append("## Versions\n")
    for k, v in info["versions"].items():
        out.append(f"- {k}: {v}")
    out.append("")
    out.append("## Results\n")
    out.append("Each peer cell shows its value and, in parentheses, the ratio ctrlinit / peer. "
               "'–' means the tool cannot do the workload (or the run failed: see Notes).\n")
    out.append("| workload | better | " + " | ".join(TOOLS) + " |")
    out.append("|---|---|" + "---|" * len(TOOLS))
    for label, better, vals in rows:
        cv = vals["ctrlinit"][0]
        cells = [vals["ctrlinit"][1]]
        for t in PEERS:
            v, txt = vals[t]
            r = ratio(cv, v) if better and txt not in ("–",) and vals["ctrlinit"][1] != "n/a (pending)" else ""
            cells.append(txt + r)
        out.append(f"| {label} | {better} | " + " | ".join(cells) + " |")
    out.append("")
    fl = R("restart", "floor")
    s6n = R("restart", "s6+notify")
    cat = R("logs", "cat")
    wr = R("logs", "writer")
    out.append("References measured in the same run:\n")
    if fl:
        out.append(f"- fork+exec floor (the same static helper, fork + execv from a tiny parent, no supervisor): "
                   f"median {fmt(med(fl, 'median_ms'), ' ms', 3)}, p90 {fmt(med(fl, 'p90_ms'), ' ms', 3)}")
        c = med(R("restart", "ctrlinit"), "median_ms")
        f = med(fl, "median_ms")
        if c and f:
            out.append(f"  - ctrlinit's restart median is {c / f:.1f}× the floor")
    if s6n:
        out.append(f"- s6 with a readiness notification fd (`notification-fd` = 3; the program writes a newline after its "
                   f"stamp): restart median {fmt(med(s6n, 'median_ms'), ' ms', 2)}, p90 {fmt(med(s6n, 'p90_ms'), ' ms', 2)}")
    if cat:
        out.append(f"- the same writer piped into `cat > file`: {fmt(med(cat, 'mb_s'), ' MB/s', 0)} "
                   f"(cat's CPU {fmt(med(cat, 'cpu_ms_per_mib'), ' ms', 2)} per MiB; lines verified: "
                   f"{'yes' if all(r.get('verified') for r in cat) else 'NO'})")
        c = med(R("logs", "ctrlinit"), "mb_s")
        k = med(cat, "mb_s")
        if c and k:
            out.append(f"  - ctrlinit's log file throughput is {c / k:.2f}× cat's")
    if wr:
        out.append(f"- the writer alone into /dev/null: {fmt(med(wr, 'mb_s'), ' MB/s', 0)} (so the writer is not the bottleneck)")
    out.append("")
    out.append("Per-repetition values and every other metric (burst duration, min/max latencies, thread counts, "
               "verification details) are in `benches/results-raw.json`.\n")

    out.append("## Notes\n")
    if info["missing"]:
        for t, why in info["missing"].items():
            out.append(f"- {t}: not measured ({why}).")
    for key, per in errors.items():
        for t, e in per.items():
            out.append(f"- {key} / {t}: {e}")
    for key, per in raw.items():
        for t, rs in per.items():
            for r in rs:
                if isinstance(r, dict) and r.get("note"):
                    out.append(f"- {key} / {t}: {r['note']}")
                    break
    out.append("")
    out.append("## How each workload is measured\n")
    out.append(f"""Every init runs as PID 1 of its own namespace: `unshare --pid --fork --mount-proc --kill-child INIT ...`;
the script observes it from outside through `/proc`, and kills the `unshare` process (so the kernel kills the whole
namespace) after every run. The programs are one static helper (`benches/helper/benchhelper.rs`, built with
`rustc -O`), exec'd directly by every tool: s6 and runit get a `run` symlink to it that reads its arguments from
`./bench-args`, so no shell runs in any tool's start path.

- **idle**: {a['idle_programs']} `sleep infinity` programs (tini and dumb-init: one child). Once every program is up,
  {a['settle']:g} s settle, then a {a['idle_seconds']:g} s window. PSS = `Pss:` of `/proc/PID/smaps_rollup` summed over
  every process of the supervisor (everything in the namespace but the programs: s6-svscan + s6-supervise per service,
  runsvdir + runsv per service, supervisord's python, the tini/dumb-init process). Context switches =
  voluntary + nonvoluntary of every thread (`/proc/PID/task/*/status`); a thread that appears or exits in the window
  counts too. CPU = utime + stime (clock ticks, {1000 // CLK_TCK} ms resolution).
- **restart**: the program appends its `CLOCK_REALTIME` ns at start; the script SIGKILLs it and takes
  (new start − time of the kill), {a['kills']} kills per repetition, each ≥ {a['kill_spacing']:g} s after the previous
  start. Zero backoff where the tool allows: ctrlinit `backoff = {{ initial = "0s", max = "0s" }}`, supervisord
  `startsecs=0` (s6 and runit restart at once by default). Floor: the helper forking and exec'ing itself.
- **logs**: the program waits for a go file, writes {a['log_mib']} MiB of 100-byte numbered lines to stdout in 131 kB
  writes and records its start; the script polls the log file(s) until every byte is there. Throughput =
  bytes / (last byte seen − writer start). Supervisor CPU = utime+stime of the supervisor processes over the
  transfer (s6-log / svlogd included). Sinks: ctrlinit `[program.w.log] file = true, console = false,
  max_size = "10GiB"`; supervisord `stdout_logfile`, `stdout_logfile_maxbytes=0`; s6 `log/run` =
  `s6-log -b n100 s1000000000 DIR` (s6-log caps a file at 256 MiB, so it rotates once; archives, `previous` and `current` are all read); runit `log/run` = `svlogd DIR` with `s0` (no rotation). Verification
  (`benchhelper verify`): every line 0..N once, in order, intact, across rotated files if any.
- **reap**: the program forks a child that forks {a['orphans']:,} grandchildren and exits, so they are orphans
  re-parented to PID 1; they block on a pipe whose last write end the program closes on a go file, so they all exit at
  once. The script polls the init's children: zombies when none of the orphans is still running (burst end), and the
  time from the go until none is left (deadline {a['reap_deadline']:g} s).
- **start**: {a['start_programs']} programs that each write a start stamp; time from the init's exec (the helper
  stamps, then execs the init: `benchhelper execstamp FILE INIT ...`) until the last stamp.
- **stop**: {a['stop_programs']} programs that append to a marker file on SIGTERM and exit; SIGTERM to the init; time
  until the namespace is empty (`unshare` exits, which it does once every process in the namespace is gone);
  graceful = marker lines. tini and dumb-init run them under `sh -c 'p1 & ... wait'`. Then one program that ignores
  SIGTERM with a {a['stop_timeout']:g} s stop timeout (ctrlinit `stop_timeout`, supervisord `stopwaitsecs`,
  s6 `timeout-kill`; runit, tini and dumb-init have no such setting): time from SIGTERM to its death. runsvdir
  exits at once on SIGTERM without stopping its services, so there the kernel SIGKILLs everything when PID 1 is
  gone (hence ~1 ms and 0 graceful); tini forwards TERM to its child only and waits; dumb-init forwards it to the
  child's process group and exits when its child does.
""")
    out.append("## Commands\n")
    out.append("Each init was started as (`$DIR` is a fresh temp directory per run; the first command line recorded "
               "per tool):\n")
    for t, c in info["commands"].items():
        out.append(f"- {t}: `{c}`")
    out.append("")
    out.append("<details><summary>Configurations (restart workload; s6/runit shown for the logs workload)</summary>\n")
    for t, c in info["configs"].items():
        out.append(f"**{t}**\n\n```\n{c}\n```\n")
    out.append("</details>\n")
    out.append("Script arguments: `" + json.dumps({k: v for k, v in a.items() if k not in ('out', 'raw', 'ctrlinit', 'workdir')}) + "`\n")
    return "\n".join(out)


if __name__ == "__main__":
    main()
