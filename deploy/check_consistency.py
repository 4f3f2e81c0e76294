#!/usr/bin/env python3
"""Holds the deployment's files to each other: the roles' conf.d, roles.yaml + compose.yaml +
stack.yaml (docker-compose, Swarm), kubernetes.yaml and nomad.hcl.

For every role it checks that the engines agree on what they share:
  - the image;
  - the environment: the same variables everywhere, with the same values, except the few that
    name another engine's addresses (ADDRESSES below) or files;
  - the stop budget: the role's [init] stop_timeout covers its longest chain of program
    stop_timeouts (stopped in reverse dependency order, one after the other), and every engine's
    grace (stop_grace_period, terminationGracePeriodSeconds, kill_timeout) is that stop_timeout
    plus MARGIN (ctrlinit's own 2 s SIGKILL grace and 1 s to spare);
  - liveness is not readiness: what an engine restarts the container on is liveness
    (`ctrlinit health --live`, or /livez: the image's HEALTHCHECK, compose and Swarm's
    healthcheck, Kubernetes' livenessProbe and startupProbe, the only Nomad check with
    check_restart), readiness (`ctrlinit health`, /readyz) only routes traffic (Kubernetes'
    readinessProbe, Nomad's other check); all with the same interval, timeout, retries and start
    period;
  - the probe endpoint: the role's [init] http reads PROBE_ADDR (default 127.0.0.1:<port>, a
    port of its own per role); every engine sets PROBE_ADDR to that port, on 0.0.0.0 in
    Kubernetes (the kubelet probes the pod's address) and on 127.0.0.1 elsewhere (the checks run
    inside the container), and Kubernetes' httpGet probes use it;
  - restarts: on failure (compose, Swarm), Always (Kubernetes' only choice for a Deployment),
    Swarm's max_attempts/window/delay = Nomad's attempts/interval/delay;
  - host mounts of the log and crash directories ([init] log_dir, crash_dir) and control's state;
  - exit_code 75 everywhere, and in Kubernetes CTRLINIT_TERMINATION_LOG = terminationMessagePath.

Usage: deploy/check_consistency.py [DEPLOY_DIR]     (default: the directory of this script)
Prints one line per role and check; exit status 1 with every disagreement listed.
Needs python3 (3.11: tomllib) and python3-yaml; no Docker.
"""

import glob
import os
import re
import sys
import tomllib

try:
    import yaml
except ImportError:
    sys.exit("deploy/check_consistency.py needs PyYAML: apt-get install -y python3-yaml")

ROLES = ["config", "control", "web"]
MARGIN = 3.0  # seconds: grace = [init] stop_timeout + MARGIN
EXIT_CODE = 75
# Liveness (what an engine may restart the container on) and readiness (what routes traffic).
LIVE = ["/usr/bin/ctrlinit", "health", "--live"]
READY = ["/usr/bin/ctrlinit", "health"]
# Where each engine's PROBE_ADDR listens: the kubelet probes the pod's address; the others'
# checks run inside the container. Config's is on every address everywhere: it is the peer
# endpoint control and web follow (PEER_ROLE, their external config-api at CONFIG_PEER).
PROBE_HOSTS = {"compose/swarm": "127.0.0.1", "kubernetes": "0.0.0.0", "nomad": "127.0.0.1"}
PEER_ROLE = "config"
# Variables whose values name an engine's own addresses or files: the same names everywhere,
# values of each engine's own.
ADDRESSES = {"CONFIG_URL", "API_UPSTREAM", "NGINX_RESOLVER", "CTRLINIT_TERMINATION_LOG",
             "PROBE_ADDR", "CONFIG_PEER"}
# Host mounts every engine must give a role (container paths).
MOUNTS = {"config": ["/var/log/ctrlinit", "/var/crash/ctrlinit"],
          "control": ["/var/log/ctrlinit", "/var/crash/ctrlinit", "/var/lib/control"],
          "web": ["/var/log/ctrlinit", "/var/crash/ctrlinit"]}

problems = []


def problem(role, what):
    problems.append("%s: %s" % (role, what))


# ---- durations -------------------------------------------------------------------------------

UNITS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600}


def seconds(v, where):
    """'8s', '1m 30s', '500ms', '2m', or a number of seconds."""
    if isinstance(v, (int, float)):
        return float(v)
    total, rest = 0.0, str(v).strip()
    parts = re.findall(r"(\d+(?:\.\d+)?)\s*(ms|s|m|h)", rest)
    if not parts or re.sub(r"(\d+(?:\.\d+)?)\s*(ms|s|m|h)|\s", "", rest):
        raise SystemExit("%s: cannot read the duration %r" % (where, v))
    for n, unit in parts:
        total += float(n) * UNITS[unit]
    return total


# ---- a small HCL reader (enough for nomad.hcl) -------------------------------------------------

TOKEN = re.compile(r'''
    (?P<space>\s+|\#[^\n]*|//[^\n]*|/\*.*?\*/)
  | (?P<string>"(?:[^"\\\n]|\\.)*")
  | (?P<number>-?\d+(?:\.\d+)?)
  | (?P<ident>[A-Za-z_][A-Za-z0-9_-]*)
  | (?P<punct>[{}\[\]=,])
''', re.VERBOSE | re.DOTALL)


def hcl_tokens(text, path):
    pos, out = 0, []
    while pos < len(text):
        m = TOKEN.match(text, pos)
        if not m:
            line = text.count("\n", 0, pos) + 1
            raise SystemExit("%s:%d: the HCL reader does not know %r" % (path, line, text[pos:pos + 20]))
        pos = m.end()
        kind = m.lastgroup
        if kind == "space":
            continue
        val = m.group(kind)
        if kind == "string":
            if "${" in val:
                raise SystemExit("%s: interpolation is not supported by the HCL reader: %s" % (path, val))
            val = bytes(val[1:-1], "utf-8").decode("unicode_escape")
        elif kind == "number":
            val = float(val) if "." in val else int(val)
        out.append((kind, val))
    return out


class Block:
    def __init__(self, kind, labels):
        self.kind, self.labels, self.attrs, self.blocks = kind, labels, {}, []

    def all(self, kind):
        return [b for b in self.blocks if b.kind == kind]

    def one(self, kind, label=None):
        found = [b for b in self.all(kind) if label is None or b.labels[:1] == [label]]
        if len(found) != 1:
            raise LookupError("%d %s %s blocks in %s %s" % (len(found), kind, label or "", self.kind, self.labels))
        return found[0]


def hcl_parse(path):
    toks = hcl_tokens(open(path).read(), path)
    i = 0

    def expect(kind, val=None):
        nonlocal i
        if i >= len(toks) or toks[i][0] != kind or (val is not None and toks[i][1] != val):
            raise SystemExit("%s: expected %s %s, found %s" % (path, kind, val or "", toks[i] if i < len(toks) else "the end"))
        i += 1
        return toks[i - 1][1]

    def value():
        nonlocal i
        kind, val = toks[i]
        if kind in ("string", "number"):
            i += 1
            return val
        if kind == "ident" and val in ("true", "false"):
            i += 1
            return val == "true"
        if (kind, val) == ("punct", "["):
            i += 1
            items = []
            while toks[i] != ("punct", "]"):
                items.append(value())
                if toks[i] == ("punct", ","):
                    i += 1
            i += 1
            return items
        raise SystemExit("%s: the HCL reader does not know the value %r" % (path, val))

    def body(block, closing):
        nonlocal i
        while i < len(toks) and toks[i] != ("punct", "}"):
            name = expect("ident")
            if toks[i] == ("punct", "="):
                i += 1
                if name in block.attrs:
                    raise SystemExit("%s: %s set twice in %s" % (path, name, block.kind))
                block.attrs[name] = value()
                continue
            labels = []
            while toks[i][0] == "string":
                labels.append(toks[i][1])
                i += 1
            expect("punct", "{")
            child = Block(name, labels)
            body(child, True)
            expect("punct", "}")
            block.blocks.append(child)
        if not closing and i != len(toks):
            raise SystemExit("%s: unexpected %r" % (path, toks[i]))

    root = Block("file", [])
    body(root, False)
    return root


# ---- compose interpolation ---------------------------------------------------------------------

def interpolate(v):
    """${VAR:-default} and ${VAR-default} give the default; ${VAR:?msg} and ${VAR} a placeholder."""
    if not isinstance(v, str):
        return v

    def sub(m):
        name, op, arg = m.group(1), m.group(2), m.group(3)
        if op in (":-", "-"):
            return arg
        return "<%s>" % name

    return re.sub(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?[-?])([^}]*))?\}", sub, v)


def compose_env(service):
    env = service.get("environment", {})
    if isinstance(env, list):
        env = dict(e.split("=", 1) for e in env)
    return {k: str(interpolate(v)) for k, v in env.items()}


def merged(*docs):
    """compose's merge of service definitions, for the keys read here (mappings merge)."""
    out = {}
    for d in docs:
        for name, svc in (d.get("services") or {}).items():
            cur = out.setdefault(name, {})
            for k, v in svc.items():
                if isinstance(v, dict) and isinstance(cur.get(k), dict):
                    cur[k] = {**cur[k], **v}
                else:
                    cur[k] = v
    return out


# ---- the roles' own configuration ----------------------------------------------------------------

def role_conf(deploy, role):
    init, programs, externals = {}, {}, {}
    for path in sorted(glob.glob(os.path.join(deploy, "roles", role, "conf.d", "*.toml"))):
        with open(path, "rb") as f:
            doc = tomllib.load(f)
        init.update(doc.get("init", {}))
        programs.update(doc.get("program", {}))
        externals.update(doc.get("external", {}))
    return init, programs, externals


def check_peers(role, externals, envs, peer_programs, peer_port):
    """An external that follows another role's ctrlinit reads its address from CONFIG_PEER, which
    every engine sets to the peer role's probe port, and follows a program that role has."""
    for name, ext in externals.items():
        if "ctrlinit" not in ext:
            continue
        if not re.fullmatch(r"\$\{CONFIG_PEER:-http://[^}]+\}", str(ext["ctrlinit"])):
            problem(role, "external %s: ctrlinit = %r does not read CONFIG_PEER" % (name, ext["ctrlinit"]))
        if ext.get("program") not in peer_programs:
            problem(role, "external %s follows program %r, which %s does not have"
                    % (name, ext.get("program"), PEER_ROLE))
        for engine, env in envs.items():
            got = env.get("CONFIG_PEER", "")
            if not re.fullmatch(r"http://[A-Za-z0-9.-]+:%s" % peer_port, got):
                problem(role, "external %s: %s CONFIG_PEER is %r, not http://HOST:%s (%s's probe port)"
                        % (name, engine, got or None, peer_port, PEER_ROLE))


def longest_stop(role, programs):
    """The longest chain of stop_timeouts: a service is stopped once everything that depends on
    it has stopped (oneshots are not running)."""
    services = {n: p for n, p in programs.items() if p.get("type", "service") == "service"}
    deps = {}
    for n, p in services.items():
        d = p.get("depends_on", [])
        deps[n] = [x for x in (d if isinstance(d, list) else d.keys()) if x in services]
    memo = {}

    def worst(n):  # n's own stop plus the longest chain of its dependents before it
        if n not in memo:
            own = seconds(services[n].get("stop_timeout", "5s"), "%s program.%s.stop_timeout" % (role, n))
            memo[n] = own + max([worst(m) for m in services if n in deps[m]] or [0.0])
        return memo[n]

    return max([worst(n) for n in services] or [0.0])


def check_health(role, c, kc, task):
    """Liveness where an engine restarts the container on the check, readiness where it only
    routes traffic, with compose's timings everywhere; returns those timings."""
    hc = c.get("healthcheck", {})
    if hc.get("test") != ["CMD"] + LIVE:
        problem(role, "compose/swarm healthcheck is %s, not CMD %s: Swarm replaces an unhealthy task, "
                "so it must be liveness" % (hc.get("test"), LIVE))
    want = {"interval": seconds(hc.get("interval", "30s"), role), "timeout": seconds(hc.get("timeout", "30s"), role),
            "retries": hc.get("retries", 3), "start": seconds(hc.get("start_period", "0s"), role)}
    for probe, path in (("livenessProbe", "/livez"), ("startupProbe", "/livez"), ("readinessProbe", "/readyz")):
        p = kc.get(probe) or {}
        got_path = (p.get("httpGet") or {}).get("path")
        if got_path != path:
            problem(role, "kubernetes %s is not httpGet %s (got %s)" % (probe, path, got_path or p))
            continue
        got = {"interval": float(p.get("periodSeconds", 10)), "timeout": float(p.get("timeoutSeconds", 1))}
        if probe != "startupProbe":
            got["retries"] = p.get("failureThreshold", 3)
        elif p.get("periodSeconds", 10) * p.get("failureThreshold", 3) < want["start"]:
            problem(role, "kubernetes startupProbe allows less than start_period %gs" % want["start"])
        for k, v in got.items():
            if v != want[k]:
                problem(role, "kubernetes %s %s is %s, compose has %s" % (probe, k, v, want[k]))
    try:
        checks = task.one("service").all("check")
    except LookupError as e:
        problem(role, "nomad: no service: %s" % e)
        return want
    argv = lambda ch: [ch.attrs.get("command")] + ch.attrs.get("args", [])
    restarting = [ch for ch in checks if ch.all("check_restart")]
    live = [ch for ch in restarting if argv(ch) == LIVE and ch.attrs.get("type") == "script"]
    if len(restarting) != 1 or len(live) != 1:
        problem(role, "nomad: check_restart must be on one check, a script check running %s (liveness); "
                "it is on %s" % (LIVE, [argv(ch) for ch in restarting]))
    if not any(argv(ch) == READY and not ch.all("check_restart") for ch in checks):
        problem(role, "nomad: no readiness check running %s (without check_restart)" % READY)
    for ch in checks:
        got = {"interval": seconds(ch.attrs.get("interval"), role), "timeout": seconds(ch.attrs.get("timeout"), role)}
        for cr in ch.all("check_restart"):
            got.update(retries=cr.attrs.get("limit"), start=seconds(cr.attrs.get("grace", "1s"), role))
        for k, v in got.items():
            if v != want[k]:
                problem(role, "nomad check %r %s is %s, compose has %s" % (ch.attrs.get("name"), k, v, want[k]))
    return want


def check_probe_endpoint(role, init, envs, kc):
    """[init] http is ${PROBE_ADDR:-127.0.0.1:PORT}; every engine's PROBE_ADDR is that port on
    its host; Kubernetes' probes use it. Returns the port."""
    m = re.fullmatch(r"\$\{PROBE_ADDR:-127\.0\.0\.1:(\d+)\}", str(init.get("http", "")))
    if not m:
        problem(role, "[init] http is %r, not \"${PROBE_ADDR:-127.0.0.1:PORT}\"" % init.get("http"))
        return None
    port = int(m.group(1))
    for engine, host in PROBE_HOSTS.items():
        host = "0.0.0.0" if role == PEER_ROLE else host
        got = envs[engine].get("PROBE_ADDR")
        if got != "%s:%d" % (host, port):
            problem(role, "%s PROBE_ADDR is %s, not %s:%d" % (engine, got, host, port))
    named = {p.get("name"): p.get("containerPort") for p in kc.get("ports", [])}
    if port not in named.values():
        problem(role, "kubernetes declares no containerPort %d (the probe endpoint)" % port)
    for probe in ("livenessProbe", "readinessProbe", "startupProbe"):
        target = ((kc.get(probe) or {}).get("httpGet") or {}).get("port")
        if named.get(target, target) != port:
            problem(role, "kubernetes %s port %s is not the probe port %d" % (probe, target, port))
    return port


def main():
    deploy = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(__file__))
    load = lambda name: yaml.safe_load(open(os.path.join(deploy, name)))
    roles_doc, compose_doc, stack_doc = load("roles.yaml"), load("compose.yaml"), load("stack.yaml")
    compose = merged(roles_doc, compose_doc)
    stack = merged(roles_doc, stack_doc)
    kube = [d for d in yaml.safe_load_all(open(os.path.join(deploy, "kubernetes.yaml"))) if d]
    deployments = {d["metadata"]["name"]: d for d in kube if d.get("kind") == "Deployment"}
    nomad = hcl_parse(os.path.join(deploy, "nomad.hcl")).one("job")
    dockerfile = open(os.path.join(deploy, "roles", "Dockerfile")).read()

    m = re.search(r"^HEALTHCHECK .*CMD (\[.*\])\s*$", dockerfile, re.M)
    if not m or yaml.safe_load(m.group(1)) != LIVE:
        problem("image", "roles/Dockerfile's HEALTHCHECK is not CMD %s (liveness)" % LIVE)
    health_x = roles_doc.get("x-health", {})
    probe_ports = {}
    peers = {}  # role: (its externals, its engines' environments), checked once config is read

    for role in ROLES:
        init, programs, externals = role_conf(deploy, role)
        if role == PEER_ROLE:
            peer_programs = set(programs)
        budget = seconds(init.get("stop_timeout", "9s"), "%s [init] stop_timeout" % role)
        grace = budget + MARGIN
        chain = longest_stop(role, programs)
        if chain > budget:
            problem(role, "[init] stop_timeout %gs is less than its longest stop chain, %gs" % (budget, chain))
        if init.get("exit_code", 75) != EXIT_CODE:
            problem(role, "[init] exit_code is %s, not %d" % (init.get("exit_code"), EXIT_CODE))
        if init.get("log_dir") != "/var/log/ctrlinit" or init.get("crash_dir") != "/var/crash/ctrlinit":
            problem(role, "[init] log_dir/crash_dir are not /var/log/ctrlinit and /var/crash/ctrlinit")

        c, s = compose.get(role), stack.get(role)
        try:
            dep = deployments[role]
            pod = dep["spec"]["template"]["spec"]
            kc = next(x for x in pod["containers"] if x["name"] == role)
            group = nomad.one("group", role)
            task = group.one("task", role)
        except (KeyError, StopIteration, LookupError) as e:
            problem(role, "missing from a manifest: %s" % e)
            continue
        if c is None or s is None:
            problem(role, "missing from roles.yaml")
            continue

        # image
        images = {"compose": interpolate(c.get("image")), "kubernetes": kc.get("image"),
                  "nomad": task.one("config").attrs.get("image")}
        if len(set(images.values())) != 1 or images["compose"] != "ctrlinit-deploy-%s:latest" % role:
            problem(role, "images differ: %s" % images)

        # environment
        envs = {"compose/swarm": compose_env(c),
                "kubernetes": {e["name"]: str(e.get("value")) for e in kc.get("env", [])},
                "nomad": {k: str(v) for k, v in task.one("env").attrs.items()}}
        names = {k: set(v) for k, v in envs.items()}
        if len({frozenset(v) for v in names.values()}) != 1:
            allnames = set().union(*names.values())
            problem(role, "environment variables differ: " + "; ".join(
                "%s lacks %s" % (k, sorted(allnames - v)) for k, v in names.items() if allnames - v))
        for var in sorted(set.intersection(*names.values()) - ADDRESSES):
            values = {k: v[var] for k, v in envs.items()}
            if len(set(values.values())) != 1:
                problem(role, "%s differs: %s" % (var, values))
        tl = envs["kubernetes"].get("CTRLINIT_TERMINATION_LOG")
        if tl != kc.get("terminationMessagePath"):
            problem(role, "kubernetes: CTRLINIT_TERMINATION_LOG %s is not terminationMessagePath %s"
                    % (tl, kc.get("terminationMessagePath")))

        # grace periods against the stop budget
        graces = {"compose/swarm stop_grace_period": seconds(c.get("stop_grace_period", "10s"), role),
                  "kubernetes terminationGracePeriodSeconds": float(pod.get("terminationGracePeriodSeconds", 30)),
                  "nomad kill_timeout": seconds(task.attrs.get("kill_timeout", "5s"), role)}
        for where, g in graces.items():
            if g != grace:
                problem(role, "%s is %gs; the stop budget is [init] stop_timeout %gs + %gs = %gs"
                        % (where, g, budget, MARGIN, grace))
        if task.attrs.get("kill_signal", "SIGINT") != "SIGTERM":
            problem(role, "nomad kill_signal is not SIGTERM")

        # health: liveness for what restarts the container, readiness for what routes traffic
        want = check_health(role, c, kc, task)

        # the probe endpoint
        port = check_probe_endpoint(role, init, envs, kc)
        if port is not None:
            if port in probe_ports.values():
                problem(role, "probe port %d is another role's too (Nomad shares the host's network)" % port)
            probe_ports[role] = port
        peers[role] = (externals, envs)

        # restarts
        if c.get("restart") != "on-failure":
            problem(role, "compose restart is %r, not on-failure" % c.get("restart"))
        rp = (s.get("deploy") or {}).get("restart_policy") or {}
        if rp.get("condition") != "on-failure":
            problem(role, "swarm restart_policy.condition is %r, not on-failure" % rp.get("condition"))
        if pod.get("restartPolicy", "Always") != "Always":
            problem(role, "kubernetes restartPolicy must be Always (a Deployment's only choice)")
        try:
            nr = group.one("restart").attrs
        except LookupError:
            problem(role, "nomad group has no restart block")
        else:
            pairs = [("max_attempts", rp.get("max_attempts"), "attempts", nr.get("attempts")),
                     ("window", seconds(rp.get("window", "0s"), role), "interval", seconds(nr.get("interval", "0s"), role)),
                     ("delay", seconds(rp.get("delay", "5s"), role), "delay", seconds(nr.get("delay", "15s"), role))]
            for a, av, b, bv in pairs:
                if av != bv:
                    problem(role, "swarm restart_policy.%s %s != nomad restart.%s %s" % (a, av, b, bv))
            if nr.get("mode") != "delay":
                problem(role, "nomad restart.mode is %r, not delay" % nr.get("mode"))

        # host mounts
        targets = {"compose/swarm": [str(interpolate(v)).split(":")[1] for v in c.get("volumes", [])],
                   "kubernetes": [v["mountPath"] for v in kc.get("volumeMounts", [])],
                   "nomad": [mt.attrs.get("target") for mt in task.one("config").all("mount")]}
        for where, got in targets.items():
            if sorted(got) != sorted(MOUNTS[role]):
                problem(role, "%s mounts %s, not %s" % (where, sorted(got), sorted(MOUNTS[role])))
        kvols = {v["name"]: v for v in pod.get("volumes", [])}
        for vm in kc.get("volumeMounts", []):
            if "hostPath" not in kvols.get(vm["name"], {}):
                problem(role, "kubernetes volume %s is not a hostPath" % vm["name"])

        print("%-8s image %s; stop budget %gs (longest stop chain %gs), so grace %gs; %d variables; "
              "liveness %s every %gs; probe port %s" % (role, images["compose"], budget, chain, grace,
                                                        len(envs["nomad"]), " ".join(LIVE), want["interval"], port))

    for role, (externals, envs) in peers.items():
        check_peers(role, externals, envs, peer_programs, probe_ports.get(PEER_ROLE))
    if health_x.get("test") != ["CMD"] + LIVE:
        problem("roles.yaml", "x-health is not CMD %s (liveness)" % LIVE)
    if problems:
        print("deploy consistency: %d problem(s):" % len(problems))
        for p in problems:
            print("  FAIL: " + p)
        return 1
    print("deploy consistency: compose, swarm, kubernetes and nomad agree with the roles' conf.d")
    return 0


if __name__ == "__main__":
    sys.exit(main())
