#!/usr/bin/env bash
# Real Docker, end to end: builds the FROM-scratch ctrlinit image (static ctrlinit + static
# busybox, docker/build.sh's recipe; nothing is pulled) and checks ctrlinit as PID 1 of real
# containers:
#   1. `docker run --restart on-failure:3` with a program that exhausts its restart budget: every
#      run exits with [init] exit_code, RestartCount grows to 3, and Docker stops restarting;
#   2. `docker stop` on a container with several programs: they stop in reverse dependency order
#      within the grace period, exit status 0, nothing SIGKILLed (each stops on TERM);
#   3. `docker logs` shows the prefixed lines of every program (stderr marked `!`), and the
#      bind-mounted log directory holds each program's file and ctrlinit.log;
#   4. programs with core_dumps = true that segfault: the bind-mounted crash directory holds the
#      reports and the cores (moved there from the programs' working directories), for a crash
#      the container lives on after, and for the main program's, which ends the container;
#   5. HEALTHCHECK `ctrlinit health`: unhealthy while a service crashes (backoff), healthy after;
#      a service stopped by hand is healthy for `health` and unhealthy for `health --strict`;
#   6. `docker exec … ctrlinit status` (table and --json) inside the container; the tini-style
#      `ctrlinit -- CMD` passes CMD's exit status through;
#   8. as tini: `docker run -i` (piped stdin), `-t` (a terminal) and `-it` (an interactive shell
#      typed into through script(1), its exit status the container's); a program's setsid
#      daemons are its own (counted, not leaked by restarts, stopped with it);
#   9. tini's zero requirements: `--user 1000`, `--read-only` and both, in `--` mode and with a
#      config: the command runs, one warning says what is off; a chosen unwritable path is an error.
#
# When `docker info` fails, prints "docker e2e: skipped: <why>" and exits 0.
# Environment: CTRLINIT_STATIC_BIN (use this binary instead of building one), BUSYBOX (a static
# busybox, default /bin/busybox), CTRLINIT_BASE_IMAGE (use this already built base image).
# Output: one PASS:/FAIL: line per check; exit status 1 when any check failed.
set -eu

REPO=$(cd "$(dirname "$0")/.." && pwd)
. "$REPO/docker/lib.sh"

if ! docker_usable; then
    echo "docker e2e: skipped: $DOCKER_WHY"
    exit 0
fi

ID="$$-$(date +%s)"
PREFIX="ctrlinit-e2e-$ID"
WORK=$(mktemp -d "${TMPDIR:-/tmp}/ctrlinit-e2e.XXXXXX")
OWN_IMAGE=
if [ -n "${CTRLINIT_BASE_IMAGE:-}" ]; then
    IMAGE=$CTRLINIT_BASE_IMAGE
else
    IMAGE="ctrlinit-e2e-base:$ID"
    OWN_IMAGE=$IMAGE
fi
STARTED=$(date +%s)

EVENTS_PID=
cleanup() {
    local ids
    if [ -n "$EVENTS_PID" ]; then kill "$EVENTS_PID" 2>/dev/null || true; fi
    ids=$(docker ps -aq --filter "name=^$PREFIX-" 2>/dev/null || true)
    if [ -n "$ids" ]; then
        # shellcheck disable=SC2086
        docker rm -f $ids >/dev/null 2>&1 || true
    fi
    # Files the containers wrote on the bind mounts belong to root: when this runs as another
    # user (in the docker group), a container removes them.
    rm -rf "$WORK" 2>/dev/null ||
        docker run --rm -v "$WORK:/w" --entrypoint /bin/rm "$IMAGE" -rf /w/ >/dev/null 2>&1 || true
    rm -rf "$WORK" 2>/dev/null || true
    docker rmi -f "$PREFIX-copied:latest" >/dev/null 2>&1 || true
    if [ -n "$OWN_IMAGE" ]; then docker rmi -f "$OWN_IMAGE" >/dev/null 2>&1 || true; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM
trap 'echo "FAIL: unexpected error (status $?) at line $LINENO: $BASH_COMMAND"' ERR

# Dumps what a failed check needs: the container's console and state.
show() {
    local c=$1
    say "---- docker logs $c (last 40 lines)"
    docker logs "$c" 2>&1 | tail -n 40 >&2 || true
    say "---- state: $(docker inspect -f '{{json .State}}' "$c" 2>/dev/null || true)"
}

# conf NAME: creates $WORK/NAME/{conf.d,log,crash,journal} and reads conf.d/10-test.toml from stdin.
conf() {
    mkdir -p "$WORK/$1/conf.d" "$WORK/$1/log" "$WORK/$1/crash" "$WORK/$1/journal"
    touch "$WORK/$1/journal/stop.order"
    chmod 0777 "$WORK/$1/journal"
    chmod 0666 "$WORK/$1/journal/stop.order"
    cat >"$WORK/$1/conf.d/10-test.toml"
}

# run NAME [docker run options…]: starts container $PREFIX-NAME from $IMAGE
# with conf.d, log, crash and journal of $WORK/NAME bind-mounted.
run() {
    local name=$1
    shift
    local d=$WORK/$name
    docker run -d --name "$PREFIX-$name" \
        -v "$d/conf.d:/etc/ctrlinit/conf.d:ro" \
        -v "$d/log:/var/log/ctrlinit" \
        -v "$d/crash:/var/crash/ctrlinit" \
        -v "$d/journal:/journal" \
        "$@" "$IMAGE" >/dev/null
}

state_of() { docker inspect -f "$2" "$PREFIX-$1" 2>/dev/null; }
health_of() { state_of "$1" '{{.State.Health.Status}}'; }
is_health() { [ "$(health_of "$1")" = "$2" ]; }
ctl() { local c=$1; shift; docker exec "$PREFIX-$c" /usr/bin/ctrlinit "$@"; }

echo "docker e2e: building image $IMAGE (static ctrlinit + busybox, FROM scratch)"
if [ -z "$OWN_IMAGE" ]; then
    pass "using prebuilt base image $IMAGE"
elif build_base_image "$IMAGE" 2> >(grep -v -E 'DEPRECATED|BuildKit|environment-variable|^ *$' >&2); then
    pass "built $IMAGE FROM scratch without the network"
else
    fail "building $IMAGE"
    finish_checks "docker e2e"
    exit 1
fi

# ---------------------------------------------------------------------------------------------
# 0. Where users get it: the image holds the static binary the build made (its checksum
#    matches the one written beside it), and a Dockerfile of one's own takes it with
#    COPY --from=, as tini's users do.
bin_sum=$(ls "$(cargo_target_dir)"/*/release/ctrlinit.sha256 2>/dev/null | head -n1)
if [ -n "$OWN_IMAGE" ] && [ -n "$bin_sum" ]; then
    want=$(cut -d' ' -f1 "$bin_sum")
    got=$(docker run --rm --entrypoint /bin/busybox "$IMAGE" sha256sum /usr/bin/ctrlinit | cut -d' ' -f1)
    check "install: the image's /usr/bin/ctrlinit is the static binary of $bin_sum (sha256 $want)" \
        test "$want" = "$got"
fi
mkdir -p "$WORK/copied"
cat >"$WORK/copied/Dockerfile" <<EOF
FROM scratch
COPY --from=$IMAGE /bin/busybox /bin/busybox
COPY --from=$IMAGE /usr/bin/ctrlinit /sbin/ctrlinit
ENTRYPOINT ["/sbin/ctrlinit", "--"]
CMD ["/bin/busybox", "echo", "hello from an image that took ctrlinit with COPY --from"]
EOF
if docker build --quiet --tag "$PREFIX-copied:latest" "$WORK/copied" >/dev/null 2>"$WORK/copied/build.err"; then
    code=0
    out=$(docker run --rm "$PREFIX-copied:latest" 2>&1) || code=$?
    check "install: an image of one's own with COPY --from=$IMAGE runs its command under ctrlinit (exit $code: $out)" \
        test "$code" = 0 -a "$out" = "hello from an image that took ctrlinit with COPY --from"
else
    fail "install: docker build with COPY --from=$IMAGE: $(cat "$WORK/copied/build.err")"
fi

# ---------------------------------------------------------------------------------------------
# 1. Restart budget → exit_code → Docker's on-failure:3 restarts, then gives up.
conf budget <<'EOF'
[init]
exit_code = 75
stop_timeout = "5s"

[program.steady]
command = ["/bin/sh", "-c", "echo steady up; exec sleep infinity"]

[program.flaky]
command = ["/bin/sh", "-c", "echo flaky run; exit 3"]
max_restarts = 2
restart_window = "60s"
backoff = { initial = "100ms", max = "200ms" }
EOF
# Docker's own record of the container's lives, streamed from now on (the daemon keeps only its
# last 256 events for `--since`, too few when other containers are busy).
docker events --since "$(date +%s)" --filter "container=$PREFIX-budget" \
    --format '{{.Action}} {{index .Actor.Attributes "exitCode"}}' >"$WORK/budget.events" 2>/dev/null &
EVENTS_PID=$!
run budget --restart on-failure:3
# Started first: it runs its four container lives while the other checks are set up.

# ---------------------------------------------------------------------------------------------
# 2-3, 6. A stack of programs: start order, logs, docker exec status, docker stop order.
conf stack <<'EOF'
[init]
stop_timeout = "9s"

# db <- api <- web, api <- worker (as user app), metrics independent, slow independent.
# Each program records its TERM in /journal/stop.order (bind-mounted) and exits 0.
[program.db]
command = ["/bin/sh", "-c", '''
trap 'echo db >> /journal/stop.order; echo "db: got TERM"; exit 0' TERM
echo "db: up"; echo "db: a warning on stderr" >&2
touch /run/db.ready
sleep infinity & wait $!
''']
ready = { file = "/run/db.ready" }

[program.api]
command = ["/bin/sh", "-c", '''
trap 'echo api >> /journal/stop.order; echo "api: got TERM"; exit 0' TERM
echo "api: up"
touch /run/api.ready
sleep infinity & wait $!
''']
depends_on = ["db"]
ready = { file = "/run/api.ready" }

[program.web]
command = ["/bin/sh", "-c", '''
trap 'echo web >> /journal/stop.order; echo "web: got TERM"; exit 0' TERM
echo "web: up"
sleep infinity & wait $!
''']
depends_on = ["api"]

[program.worker]
command = ["/bin/sh", "-c", '''
trap 'echo worker >> /journal/stop.order; exit 0' TERM
echo "worker: up as $(id -un):$(id -gn)"
sleep infinity & wait $!
''']
depends_on = ["api"]
user = "app"
group = "app"

[program.metrics]
command = ["/bin/sh", "-c", '''
trap 'echo metrics >> /journal/stop.order; exit 0' TERM
echo "metrics: up"
sleep infinity & wait $!
''']

# Takes a second to shut down after TERM: waited for, not killed.
[program.slow]
command = ["/bin/sh", "-c", '''
trap 'sleep 1; echo slow >> /journal/stop.order; echo "slow: done after TERM"; exit 0' TERM
echo "slow: up"
sleep infinity & wait $!
''']
stop_timeout = "5s"
EOF
run stack

# ---------------------------------------------------------------------------------------------
# 4. Crash artifacts: the main program segfaults with core_dumps = true.
conf crash <<'EOF'
# Segfaults on its first run (the container lives on and restarts it), then runs.
[program.crasher]
command = ["/bin/sh", "-c", '''
if [ ! -e /tmp/crashed ]; then
  touch /tmp/crashed
  echo "crasher: about to segfault"
  kill -SEGV $$$$
fi
echo "crasher: second run"
exec sleep infinity
''']
workdir = "/tmp"
core_dumps = true
backoff = { initial = "100ms" }

# The container's main program: segfaults when told (USR1), which ends the container.
[program.lastword]
command = ["/bin/sh", "-c", '''
trap 'echo "lastword: segfaulting"; kill -SEGV $$$$' USR1
echo "lastword: up"
sleep infinity & wait $!
''']
workdir = "/var/tmp"
core_dumps = true
main = true
restart = "never"
EOF
run crash

# ---------------------------------------------------------------------------------------------
# 5. Health: `svc` fails while /tmp/fail exists (a crash loop in backoff); USR1 makes it exit 1.
for h in health strict; do
    conf $h <<'EOF'
[init]
stop_timeout = "5s"

[program.svc]
command = ["/bin/sh", "-c", '''
if [ -e /tmp/fail ]; then echo "svc: failing (/tmp/fail exists)"; exit 1; fi
trap 'echo "svc: USR1, exiting 1"; exit 1' USR1
touch /tmp/svc.ready
echo "svc: up"
sleep infinity & wait $!
''']
ready = { file = "/tmp/svc.ready" }
finish = ["/bin/rm", "-f", "/tmp/svc.ready"]
backoff = { initial = "2s", max = "2s", factor = 1.0 }
max_restarts = 1000

[program.side]
command = ["/bin/sleep", "infinity"]
EOF
done
HEALTH_FLAGS=(--health-interval 1s --health-timeout 5s --health-retries 1 --health-start-period 0s)
run health "${HEALTH_FLAGS[@]}"
run strict "${HEALTH_FLAGS[@]}" --health-cmd "/usr/bin/ctrlinit health --strict"

# ---- checks for 2, 3, 6 (stack) ----------------------------------------------------------------
if docker exec "$PREFIX-stack" /usr/bin/ctrlinit status --wait db=running api=running \
    web=running worker=running metrics=running slow=running --timeout 30s >/dev/null; then
    pass "stack: every program running (docker exec ctrlinit status --wait)"
else
    fail "stack: programs did not all reach running"
    show "$PREFIX-stack"
fi
out=$(ctl stack status 2>&1) && rc=0 || rc=$?
if [ "$rc" -eq 0 ] && [ "$(printf '%s\n' "$out" | grep -c -E ' running ')" -eq 6 ]; then
    pass "stack: docker exec ctrlinit status exits 0 with 6 programs running"
else
    fail "stack: docker exec ctrlinit status (exit $rc): $out"
fi
out=$(ctl stack status --json 2>&1) || true
check "stack: docker exec ctrlinit status --json lists every program as running" \
    test "$(printf '%s\n' "$out" | grep -c '"state": "running"')" -eq 6
check "stack: docker exec ctrlinit health says healthy" quiet ctl stack health

logs=$(docker logs "$PREFIX-stack" 2>&1)
missing=
for p in db api web metrics slow; do
    printf '%s\n' "$logs" | grep -q -E "^$p +\| $p: up" || missing="$missing $p"
done
printf '%s\n' "$logs" | grep -q -E '^worker +\| worker: up as app:app' || missing="$missing worker(as app)"
printf '%s\n' "$logs" | grep -q -E '^db +! db: a warning on stderr' || missing="$missing db-stderr"
printf '%s\n' "$logs" | grep -q -E '^ctrlinit +\| ' || missing="$missing ctrlinit"
if [ -z "$missing" ]; then
    pass "stack: docker logs shows prefixed lines of every program (stderr as '!', worker ran as app)"
else
    fail "stack: docker logs lacks prefixed lines of:$missing"
    show "$PREFIX-stack"
fi
missing=
for p in db api web worker metrics slow; do
    grep -q "$p: up" "$WORK/stack/log/$p.log" 2>/dev/null || missing="$missing $p.log"
done
grep -q 'db: a warning on stderr' "$WORK/stack/log/db.log" 2>/dev/null || missing="$missing db.log(stderr)"
grep -q 'starting 6 programs' "$WORK/stack/log/ctrlinit.log" 2>/dev/null || missing="$missing ctrlinit.log"
if [ -z "$missing" ]; then
    pass "stack: host-mounted log dir holds every program's file and ctrlinit.log"
else
    fail "stack: host-mounted log dir lacks:$missing ($(ls "$WORK/stack/log" | tr '\n' ' '))"
fi

t0=$(date +%s%N)
docker stop -t 10 "$PREFIX-stack" >/dev/null
ms=$((($(date +%s%N) - t0) / 1000000))
code=$(state_of stack '{{.State.ExitCode}}')
check "stack: docker stop took ${ms} ms, within the 10 s grace period" test "$ms" -lt 10000
check "stack: exit status after docker stop is 0 (got $code)" test "$code" = 0
order=$(tr '\n' ' ' <"$WORK/stack/journal/stop.order" 2>/dev/null || true)
ok=1
for p in db api web worker metrics slow; do
    grep -qx "$p" "$WORK/stack/journal/stop.order" 2>/dev/null || ok=0
done
j=$WORK/stack/journal/stop.order
before "$j" '^web$' '^api$' && before "$j" '^worker$' '^api$' && before "$j" '^api$' '^db$' || ok=0
if [ "$ok" = 1 ]; then
    pass "stack: every program stopped on TERM in reverse dependency order ($order)"
else
    fail "stack: stop order wrong or incomplete: $order"
    show "$PREFIX-stack"
fi
if grep -q 'SIGKILL' "$WORK/stack/log/ctrlinit.log" 2>/dev/null; then
    fail "stack: something was SIGKILLed: $(grep SIGKILL "$WORK/stack/log/ctrlinit.log" | head -n3)"
else
    pass "stack: nothing was SIGKILLed (no SIGKILL in ctrlinit.log)"
fi
n=$(grep -c -E '(db|api|web|worker|metrics|slow): pid [0-9]+ ended \(exit status 0\)' "$WORK/stack/log/ctrlinit.log" || true)
check "stack: all 6 programs ended with exit status 0 from their TERM handlers (got $n)" test "$n" = 6
check "stack: ctrlinit logged its exit with status 0" \
    grep -q 'exiting with status 0' "$WORK/stack/log/ctrlinit.log"

# ---- checks for 4 (crash) ----------------------------------------------------------------------
CR=$WORK/crash/crash
pattern=$(cat /proc/sys/kernel/core_pattern)
# a) a crash the container lives on after: report and core on the host mount
has_report() { grep -l -s "$2" "$CR/$1/"*-SIGSEGV.json >/dev/null; }
if wait_for 20 has_report crasher 'crasher: about to segfault'; then
    report=$(ls "$CR/crasher/"*-SIGSEGV.json | head -n1)
    check "crash: the report $(basename "$report") names the signal and holds the last lines" \
        grep -q '"SIGSEGV"' "$report"
else
    fail "crash: no crash report for crasher in the host-mounted crash dir ($(ls -R "$CR" | tr '\n' ' '))"
    show "$PREFIX-crash"
fi
has_core() { ls "$CR/$1/"*.core >/dev/null 2>&1; }
case $pattern in
'|'*) pass "crash: core_pattern pipes cores to the host ($pattern): reports only, as documented" ;;
*)
    if wait_for 20 has_core crasher; then
        core=$(ls "$CR/crasher/"*.core | head -n1)
        pass "crash: the core ($(stat -c %s "$core") bytes) was moved from the workdir to the host mount ($(basename "$core"))"
    else
        fail "crash: no core file for crasher in the host-mounted crash dir (core_pattern $pattern)"
    fi
    ;;
esac
if ctl crash status --wait crasher=running lastword=running --timeout 20s >/dev/null; then
    pass "crash: crasher restarted after its crash and runs"
else
    fail "crash: crasher not running again"
fi
check "crash: docker logs shows the crasher's last line before the crash" \
    sh -c "docker logs '$PREFIX-crash' 2>&1 | grep -q -E '^crasher +\| crasher: about to segfault'"

# b) the main program crashes: the container ends with 128+11; its report must not be lost
ctl crash signal USR1 lastword >/dev/null
if timeout 30 docker wait "$PREFIX-crash" >/dev/null; then
    code=$(state_of crash '{{.State.ExitCode}}')
    check "crash: the main program's SIGSEGV ends the container with 139 (got $code)" test "$code" = 139
else
    fail "crash: container did not exit after its main program crashed"
    show "$PREFIX-crash"
fi
# Nothing writes after the container has exited: no waiting here.
if has_report lastword 'lastword: segfaulting'; then
    pass "crash: the main program's crash report is on the host mount"
else
    fail "crash: the main program's crash report is missing after the container exited (crash dir: $(cd "$CR" && find . -type f | tr '\n' ' '))"
    show "$PREFIX-crash"
fi
case $pattern in
'|'*) ;;
*) check "crash: the main program's core was moved to the host mount" has_core lastword ;;
esac

# ---- checks for 5 (health) -----------------------------------------------------------------------
if wait_for 30 is_health health healthy && wait_for 30 is_health strict healthy; then
    pass "health: both containers become healthy"
else
    fail "health: not healthy: health=$(health_of health) strict=$(health_of strict)"
    show "$PREFIX-health"
    show "$PREFIX-strict"
fi
docker exec "$PREFIX-health" touch /tmp/fail
ctl health signal USR1 svc >/dev/null
if wait_for 20 is_health health unhealthy; then
    st=$(ctl health status --json svc | json_field state)
    pass "health: unhealthy while svc crashes and backs off (svc is $st)"
else
    fail "health: still $(health_of health) while svc crash-loops"
    show "$PREFIX-health"
fi
out=$(ctl health health) && rc=0 || rc=$?
if [ "$rc" = 1 ] && printf '%s' "$out" | grep -q svc; then
    pass "health: docker exec ctrlinit health exits 1 and says why ($out)"
else
    fail "health: docker exec ctrlinit health exited $rc: $out"
fi
docker exec "$PREFIX-health" rm -f /tmp/fail
if wait_for 20 is_health health healthy; then
    pass "health: healthy again once svc runs"
else
    fail "health: still $(health_of health) after svc recovered"
    show "$PREFIX-health"
fi

# A probe that starts after a point in time: the newest Health.Log entry's start time.
# The newest Health.Log entry as "EXITCODE START" (START as Docker prints it, e.g.
# "2026-01-02 03:04:05.678 +0000 UTC").
last_probe() {
    state_of "$1" '{{range .State.Health.Log}}{{.ExitCode}} {{.Start}}{{"\n"}}{{end}}' | grep -v '^$' | tail -n1
}
# probe_after NAME NANOS: the newest probe started after NANOS (epoch ns).
probe_after() {
    local l t
    l=$(last_probe "$1")
    [ -n "$l" ] || return 1
    l=${l#* }
    t=$(date -d "${l% UTC}" +%s%N) || return 1
    [ "$t" -gt "$2" ]
}

ctl health stop svc >/dev/null
ctl strict stop svc >/dev/null
t_stop=$(date +%s%N)
if wait_for 20 probe_after health "$t_stop" && [ "$(last_probe health | cut -d' ' -f1)" = 0 ] &&
    is_health health healthy; then
    pass "health: svc stopped by hand stays healthy for 'ctrlinit health'"
else
    fail "health: svc stopped by hand made plain health fail ($(last_probe health), $(health_of health))"
fi
if wait_for 20 is_health strict unhealthy; then
    pass "health: svc stopped by hand is unhealthy for 'ctrlinit health --strict'"
else
    fail "health: --strict still $(health_of strict) with svc stopped by hand"
    show "$PREFIX-strict"
fi
ctl strict start svc >/dev/null
if wait_for 20 is_health strict healthy; then
    pass "health: --strict healthy again after ctrlinit start svc"
else
    fail "health: --strict still $(health_of strict) after start"
fi

# ---- checks for 1 (budget) -----------------------------------------------------------------------
budget_done() {
    [ "$(state_of budget '{{.State.Status}} {{.State.Restarting}} {{.RestartCount}}')" = "exited false 3" ]
}
if wait_for 60 budget_done; then
    code=$(state_of budget '{{.State.ExitCode}}')
    check "budget: container exits with [init] exit_code 75 (got $code)" test "$code" = 75
    pass "budget: Docker restarted it 3 times (RestartCount 3) and stopped"
else
    fail "budget: not done: $(state_of budget '{{.State.Status}} restarting={{.State.Restarting}} count={{.RestartCount}} exit={{.State.ExitCode}}')"
    show "$PREFIX-budget"
fi
# Docker's own record: four starts and four deaths, every one with exit code 75.
four_deaths() { [ "$(grep -c '^die' "$WORK/budget.events")" -ge 4 ]; }
wait_for 10 four_deaths || true
kill "$EVENTS_PID" 2>/dev/null || true
wait "$EVENTS_PID" 2>/dev/null || true
EVENTS_PID=
starts=$(grep -c '^start' "$WORK/budget.events" || true)
dies=$(grep -c '^die 75$' "$WORK/budget.events" || true)
check "budget: docker events show 4 starts and 4 deaths with exit code 75 (got $starts, $dies)" \
    test "$starts" = 4 -a "$dies" = 4
logs=$(docker logs "$PREFIX-budget" 2>&1)
check "budget: each run logged flaky's exhaustion (4 times)" \
    test "$(printf '%s\n' "$logs" | grep -c 'flaky.*exhausted\|exhausted.*flaky')" -ge 4
check "budget: the steady program was stopped, not left behind (logs say so)" \
    sh -c "printf '%s\n' \"\$1\" | grep -q 'steady: .*stopped'" _ "$logs"

# ---- 6b. tini-style -------------------------------------------------------------------------------
code=$(timeout 30 docker run --rm --name "$PREFIX-tini" "$IMAGE" -- /bin/sh -c 'echo main here; exit 7' >/dev/null 2>&1; echo $?)
check "tini-style: 'ctrlinit -- CMD' exits with CMD's status (7, got $code)" test "$code" = 7

# ---- 8. drop-in for tini: -i, -t, -it; escaped processes (issue 15) ------------------------------
out=$(echo hi | timeout 30 docker run -i --rm --name "$PREFIX-stdin" "$IMAGE" -- /bin/cat 2>&1)
check "docker run -i: piped stdin reaches the command, unprefixed ('hi', got '$out')" test "$out" = hi
out=$(timeout 30 docker run -t --rm --name "$PREFIX-tty" "$IMAGE" -- /bin/sh -c tty 2>&1 | tr -d '\r')
check "docker run -t: the command has the terminal ('/dev/pts/0', got '$out')" test "$out" = /dev/pts/0
# -it needs a terminal on the client's side too: script(1) gives docker one, and types for us.
if command -v script >/dev/null 2>&1; then
    code=0
    out=$(printf 'echo typed-$((6*7)); tty\nexit 3\n' |
        timeout 60 script -qec "docker run -it --rm --name $PREFIX-it $IMAGE -- /bin/sh -i" /dev/null 2>&1 | tr -d '\r'
        exit "${PIPESTATUS[1]}") || code=$?
    check "docker run -it: an interactive shell reads typed lines on a terminal (got: $(printf '%s' "$out" | tr '\n' '|'))" \
        sh -c 'printf "%s\n" "$1" | grep -qx "typed-42" && printf "%s\n" "$1" | grep -qx "/dev/pts/0"' _ "$out"
    check "docker run -it: the shell's exit status is the container's (3, got $code)" test "$code" = 3
    check "docker run -it: nothing of ctrlinit's own is printed ('main |' absent)" \
        sh -c '! printf "%s\n" "$1" | grep -q "main |"' _ "$out"
else
    say "skipped: docker run -it (no script(1) to give docker a terminal)"
fi

conf escape <<'EOF'
[program.leaker]
command = ["/bin/sh", "-c", "setsid sh -c 'exec sleep 1001' & (setsid sh -c 'exec sleep 1002' &); exec sleep 1000"]
stop_timeout = "2s"
EOF
run escape
escaped_count() { ctl escape status --json leaker 2>/dev/null | grep -o '"processes": *[0-9]*' | grep -o '[0-9]*$'; }
has_three() { [ "$(escaped_count)" = 3 ]; }
if wait_for 20 has_three; then
    pass "escape: a program's setsid daemons count as its own (3 processes)"
else
    fail "escape: leaker has $(escaped_count) processes, not 3"
    show "$PREFIX-escape"
fi
mode=$(docker logs "$PREFIX-escape" 2>&1 | grep -o 'tracked by [a-z]*' | head -n1)
say "escape: in a default container the processes are $mode"
ctl escape restart leaker >/dev/null
ctl escape restart leaker >/dev/null
sleeps() { docker exec "$PREFIX-escape" /bin/ps -o args 2>/dev/null | grep -c '^sleep 100[0-2]$'; }
three_sleeps() { [ "$(sleeps)" = 3 ]; }
# Both at once, polled: a subshell that forked a daemon may live a moment longer than it.
settled() { three_sleeps && has_three; }
if wait_for 20 settled; then
    pass "escape: two restarts leaked nothing (3 sleeps in the container, as after the start)"
else
    fail "escape: after two restarts the container has $(sleeps) sleeps"
    docker exec "$PREFIX-escape" /bin/ps -o pid,ppid,pgid,args >&2 || true
fi
ctl escape stop leaker >/dev/null
no_sleeps() { [ "$(sleeps)" = 0 ]; }
if wait_for 20 no_sleeps; then
    pass "escape: ctrlinit stop leaker stopped its setsid daemons too"
else
    fail "escape: $(sleeps) sleeps left after ctrlinit stop leaker"
    docker exec "$PREFIX-escape" /bin/ps -o pid,ppid,pgid,args >&2 || true
fi
docker rm -f "$PREFIX-escape" >/dev/null 2>&1 || true

# ---- 7. PID 1 hardens itself (issue 13) ---------------------------------------------------------
# With CAP_SYS_RESOURCE ctrlinit sets its own OOM score to -1000; its program gets the score the
# container started with (0). Without the capability (Docker's default) it keeps its own. Some
# hosts cannot grant the capability at all (a sandbox whose bounding set lacks it): then that half
# is skipped, saying so.
scores_of() {
    timeout 30 docker run --rm "$@" --name "$PREFIX-oom" "$IMAGE" -- \
        /bin/sh -c 'echo "scores $(cat /proc/1/oom_score_adj) $(cat /proc/self/oom_score_adj)"' 2>&1 |
        sed -n 's/.*scores \(.*\)$/\1/p' | tail -n1
}
if out=$(timeout 30 docker run --rm --cap-add SYS_RESOURCE "$IMAGE" -- /bin/true 2>&1); then
    scores=$(scores_of --cap-add SYS_RESOURCE)
    check "hardening: with CAP_SYS_RESOURCE PID 1's OOM score is -1000 and the program's 0 (got '$scores')" \
        test "$scores" = "-1000 0"
else
    say "skipped: this Docker cannot grant CAP_SYS_RESOURCE ($(printf '%s' "$out" | grep -o 'unable to apply caps[^:]*' | head -n1))"
fi
scores=$(scores_of)
check "hardening: without CAP_SYS_RESOURCE both keep the container's score (got '$scores')" test "$scores" = "0 0"

# ---- 9. tini's zero requirements: --user, --read-only, both (issue 23) --------------------------
# Nothing of ctrlinit's defaults can be written (/var/log/ctrlinit, /var/crash/ctrlinit, /run are
# root's, or the root is read-only): the command still runs, logs go to the console only, crash
# reports are off, and the socket is in a private directory (/tmp, or /dev/shm under
# --read-only), said in one warning with the CTRLINIT_* fix. With a config, a client of the same
# user finds that socket.
mkdir -p "$WORK/zero/conf.d"
cat >"$WORK/zero/conf.d/10-test.toml" <<'TOML'
[program.job]
main = true
restart = "never"
command = ["/bin/sh", "-c", "/usr/bin/ctrlinit status job && echo client-reached-init"]
TOML
chmod 0755 "$WORK/zero/conf.d"
chmod 0644 "$WORK/zero/conf.d/10-test.toml"
for flags in "--user 1000" "--read-only" "--user 1000 --read-only"; do
    # shellcheck disable=SC2086
    out=$(timeout 30 docker run --rm $flags --name "$PREFIX-zero" "$IMAGE" -- /bin/sh -c 'echo ran as $(id -u)' 2>&1) &&
        code=0 || code=$?
    check "zero requirements ($flags): 'ctrlinit -- CMD' runs CMD and exits 0 (got $code)" test "$code" = 0
    check "zero requirements ($flags): CMD ran" grep -q '^ran as ' <<<"$out"
    n=$(grep -c "default places cannot be written" <<<"$out" || true)
    check "zero requirements ($flags): one warning line says what is off (got $n)" test "$n" = 1
    check "zero requirements ($flags): the warning names CTRLINIT_LOG_DIR, CTRLINIT_CRASH_DIR and CTRLINIT_SOCKET" \
        sh -c 'grep "default places" | grep CTRLINIT_LOG_DIR | grep CTRLINIT_CRASH_DIR | grep -q CTRLINIT_SOCKET' <<<"$out"
    # shellcheck disable=SC2086
    out=$(timeout 30 docker run --rm $flags --name "$PREFIX-zero" \
        -v "$WORK/zero/conf.d:/etc/ctrlinit/conf.d:ro" "$IMAGE" 2>&1) && code=0 || code=$?
    check "zero requirements ($flags): a config runs and exits 0 (got $code)" test "$code" = 0
    check "zero requirements ($flags): ctrlinit status inside reached the init at its private socket" \
        grep -q client-reached-init <<<"$out"
    [ "$code" = 0 ] || say "$out"
done
# A place chosen explicitly that cannot be written stays an error.
out=$(timeout 30 docker run --rm --read-only -e CTRLINIT_LOG_DIR=/var/log/chosen --name "$PREFIX-zero" \
    "$IMAGE" -- /bin/true 2>&1) && code=0 || code=$?
check "zero requirements: a chosen CTRLINIT_LOG_DIR that cannot be written is an error (exit 1, got $code)" test "$code" = 1
check "zero requirements: the error names the chosen log_dir" grep -q 'cannot use \[init\] log_dir /var/log/chosen' <<<"$out"

echo "docker e2e: took $(($(date +%s) - STARTED)) s"
finish_checks "docker e2e"
