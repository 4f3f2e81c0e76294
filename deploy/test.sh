#!/usr/bin/env bash
# The roles on a real engine: builds the images (deploy/build.sh; cached), then runs the three
# roles with docker-compose and then with Docker Swarm (single node), and checks on each:
#
#   up        every role healthy (HEALTHCHECK ctrlinit health --live) and ready (ctrlinit health:
#             every program up); each role's probe endpoint ([init] http at PROBE_ADDR) answers
#             /livez and /readyz; the configuration came from the environment (CLUSTER_NAME
#             differs per engine) through config -> control and web;
#   peer      config's container killed (SIGKILL to its PID 1 from the host on compose, docker
#             kill on Swarm): control's session and web's nginx and canary, which follow config's
#             api through their external config-api (restart = true), stop and start again on new
#             runs, each after config's api is running again, canary after nginx (their
#             ctrlinit.log on the host); the times from the kill printed;
#   crash     `kill -SEGV` of the control role's holder (a signal ctrlinit did not send): a crash
#             report on the host mount, the daemons inside its namespace restarted after it
#             (restart = true), no line of the sequence lost, the role healthy again;
#   budget    the config role's api SIGKILLed until past its restart budget: a crash report for
#             each kill, the container exits 75 ([init] exit_code; the reason in the termination
#             log), the engine brings it back, healthy again, and web's path through nginx to the
#             API works again;
#   update    (Swarm) `docker service update --force` replaces the control role: no gap in the
#             host-mounted sequence.log across the two containers; `docker service ps` printed;
#   chaos     random roles SIGKILLed for DEPLOY_CHAOS_SECONDS (30) on each engine: the time back
#             to healthy, median and worst, printed;
#   down      `docker-compose down` / `docker stack rm`: in ctrlinit's own log on the host mount,
#             every role stopped in reverse dependency order within its grace period, exit 0,
#             no SIGKILL; the programs' last lines are in their host-mounted logs; compose stops
#             web and control before config.
#   holder    (compose, deploy/holder.yaml) a holder and a dependent in its network namespace
#             (network_mode: "service:holder", [init.network] on_lost = "exit", restart: always):
#             SIGKILL of the holder -> the dependent exits 76 and comes back in the holder's new
#             namespace and answers; the time from the kill to the first answer printed, split;
#   kube      deploy/kubernetes.yaml under `podman kube play` (the variant deploy/kube_play.py
#             makes: no Services there), on a network of the run's own: every role ready, control
#             provisioned after config's api, web's path to the API, the probe endpoints; then
#             `podman kube down`, each ctrlinit exiting 0. Skipped, saying why, without Podman.
#
# Skips (exit 0, saying why) when Docker does not work. Needs root (mmdebstrap, files the
# containers write), docker-compose and mmdebstrap. Swarm: uses this node when it is a manager;
# otherwise runs `docker swarm init`. Runs on one host do not collide: everything a run creates is
# named after it (the compose projects `ctrlinit-deploy-PID` and `…-holder`, the stack, their networks, the
# Podman pods `ctrlinit-deploy-PID-ROLE-pod-0` and network `ctrlinit-deploy-PID-net`, and
# the role images, tagged `run-PID` unless DEPLOY_TAG says otherwise), and the swarm, the one
# thing a host has only one of, is shared: each run holds a shared lock on
# /run/lock/ctrlinit-deploy-swarm while it uses it (joining and leaving take turns under a
# second lock), and the last run out leaves it only if a run of this script made it. Cleans up
# everything it created (containers, stacks, pods, networks, its role images in Docker and in
# Podman, the work directory) on
# any exit and nothing of another run's; the base image stays cached (its name is the hash of
# its recipe, and no run changes it).
# Polls with deadlines, never sleeps to synchronise. Output: PASS:/FAIL: lines, exit 1 on a FAIL.
#
# Environment: DEPLOY_CHAOS_SECONDS (30 per engine), DEPLOY_ENGINES ("compose swarm kube"),
# DEPLOY_KEEP=1 (keep the work directory), and build.sh's DEPLOY_IMAGE_PREFIX, DEPLOY_TAG,
# CTRLINIT_STATIC_BIN.
set -eu

DEPLOY=$(cd "$(dirname "$0")" && pwd)
. "$DEPLOY/../docker/lib.sh"

if ! docker_usable; then
    echo "deploy test: skipped: $DOCKER_WHY"
    exit 0
fi
if ! command -v docker-compose >/dev/null 2>&1; then
    echo "FAIL: deploy test: no docker-compose on PATH (apt-get install -y docker-compose)"
    exit 1
fi

STARTED=$(date +%s)
export DEPLOY_IMAGE_PREFIX=${DEPLOY_IMAGE_PREFIX:-ctrlinit-deploy}
# The role images of this run, removed at its end (a tag of the caller's is kept).
OWN_TAG=0
[ -n "${DEPLOY_TAG:-}" ] || OWN_TAG=1
export DEPLOY_TAG=${DEPLOY_TAG:-run-$$}
CHAOS_SECONDS=${DEPLOY_CHAOS_SECONDS:-30}
ENGINES=${DEPLOY_ENGINES:-compose swarm kube}
ROLES=(config control web)
NAME="ctrlinit-deploy-$$"
WORK=$(mktemp -d "${TMPDIR:-/tmp}/ctrlinit-deploy.XXXXXX")

# Stop budgets and grace periods, from the roles' conf.d (grace = [init] stop_timeout + 3 s, as
# roles.yaml and the manifests have it; check_consistency.py holds the files to it).
declare -A GRACE
for r in "${ROLES[@]}"; do
    s=$(sed -n 's/^stop_timeout = "\([0-9]*\)s".*/\1/p' "$DEPLOY/roles/$r/conf.d/00-init.toml")
    GRACE[$r]=$((s + 3))
done
# Which service depends on which inside each role (dependent:dependency), for the stop order
# (oneshots have nothing to stop).
declare -A DEPS=(
    [config]="api:redis"
    [control]="xmpp:rib xmpp:holder rib:holder sequence:holder"
    [web]="canary:nginx"
)

ENGINE=
DATA=
EVENTS_PID=
COMPOSE_UP=0
HOLDER_UP=0
HOLDER_MS=
STACK_UP=0
SWARM_USED=0
# The swarm is shared between runs of this script (see the top): a shared lock on this file while
# a run uses it; the marker says a run of this script made it (and whether docker_gwbridge was
# there before), so the last run out knows to leave it.
SWARM_LOCK_DIR=/run/lock
[ -d "$SWARM_LOCK_DIR" ] || SWARM_LOCK_DIR=/tmp
SWARM_LOCK=$SWARM_LOCK_DIR/ctrlinit-deploy-swarm
SWARM_MARKER=$SWARM_LOCK.made

compose_cmd() {
    docker-compose --no-ansi -p "$NAME" -f "$DEPLOY/roles.yaml" -f "$DEPLOY/compose.yaml" "$@"
}
stack_gone() {
    [ -z "$(docker ps -aq --filter "label=com.docker.stack.namespace=$NAME")" ] &&
        ! docker network inspect "${NAME}_default" >/dev/null 2>&1
}

cleanup() {
    set +e
    [ -n "$EVENTS_PID" ] && kill "$EVENTS_PID" 2>/dev/null
    if [ "$COMPOSE_UP" = 1 ]; then
        DEPLOY_DATA=$WORK/compose compose_cmd down -v --remove-orphans -t 2 >/dev/null 2>&1
    fi
    kube_cleanup
    [ "$HOLDER_UP" = 1 ] && holder_cmd down -v --remove-orphans -t 2 >/dev/null 2>&1
    if [ "$STACK_UP" = 1 ]; then
        docker stack rm "$NAME" >/dev/null 2>&1
        wait_for 60 stack_gone || say "deploy test: stack $NAME still being removed"
    fi
    [ "$SWARM_USED" = 1 ] && swarm_release
    if [ "$OWN_TAG" = 1 ]; then
        for r in "${ROLES[@]}"; do docker image rm "$DEPLOY_IMAGE_PREFIX-$r:$DEPLOY_TAG" >/dev/null 2>&1; done
    fi
    if [ "${DEPLOY_KEEP:-0}" = 1 ]; then say "deploy test: kept $WORK"; else rm -rf "$WORK"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM
trap 'echo "FAIL: unexpected error (status $?) at line $LINENO: $BASH_COMMAND"' ERR

ms_since() { echo $((($(date +%s%N) - $1) / 1000000)); }
secs() { awk -v ms="$1" 'BEGIN { printf "%.1f s", ms / 1000 }'; }

# ---- the engine under test ---------------------------------------------------------------------
# containers ROLE [docker ps options…]: the ids of ROLE's containers on this engine.
containers() {
    local r=$1
    shift
    case $ENGINE in
    compose)
        docker ps -q --filter "label=com.docker.compose.project=$NAME" \
            --filter "label=com.docker.compose.service=$r" "$@"
        ;;
    swarm) docker ps -q --filter "label=com.docker.swarm.service.name=${NAME}_$r" "$@" ;;
    esac
}
cid() { containers "$1" --filter status=running | head -n1; }
# ready CONTAINER: every program of it up (ctrlinit health, readiness). Docker's health status
# is liveness (HEALTHCHECK ctrlinit health --live), which holds while a program restarts within
# its budget, so "healthy" here is both.
ready() { docker exec "$1" /usr/bin/ctrlinit health >/dev/null 2>&1; }
is_healthy() {
    local c
    for c in $(containers "$1" --filter health=healthy); do ready "$c" && return 0; done
    return 1
}
all_healthy() {
    local r
    for r in "${ROLES[@]}"; do is_healthy "$r" || return 1; done
}
# incarnation CONTAINER: its id and start time (a restarted compose container keeps its id).
incarnation() { docker inspect -f '{{.Id}} {{.State.StartedAt}}' "$1" 2>/dev/null; }
# back_healthy ROLE OLD: a healthy and ready container of ROLE that is not the incarnation OLD.
back_healthy() {
    local c
    for c in $(containers "$1" --filter health=healthy); do
        [ "$(incarnation "$c")" != "$2" ] && ready "$c" && return 0
    done
    return 1
}
in_role() {
    local r=$1 c
    shift
    c=$(cid "$r")
    [ -n "$c" ] || { say "no running container for $r"; return 4; }
    docker exec "$c" "$@"
}
ctl() {
    local r=$1
    shift
    in_role "$r" /usr/bin/ctrlinit "$@"
}
field() { ctl "$1" status --json "$2" 2>/dev/null | json_field "$3"; }
web_get() { in_role web sh -c "timeout 3 busybox wget -q -O - http://127.0.0.1/api/$1" 2>/dev/null; }
path_works() { web_get config | grep -q "\"name\": \"$CLUSTER_NAME\""; }

show() {
    local r=$1 c
    c=$(containers "$r" -a | head -n1)
    [ -n "$c" ] || return 0
    say "---- $ENGINE $r: docker logs (last 30 lines); state $(docker inspect -f '{{.State.Status}} {{.State.ExitCode}}' "$c" 2>/dev/null)"
    docker logs "$c" 2>&1 | tail -n 30 >&2 || true
}
show_all() { for r in "${ROLES[@]}"; do show "$r"; done; }

# Docker's own record of this engine's containers (start, die with exit code), from now on.
start_events() {
    local label
    case $ENGINE in
    compose) label="label=com.docker.compose.project=$NAME" ;;
    swarm) label="label=com.docker.stack.namespace=$NAME" ;;
    esac
    docker events --filter "$label" --filter event=start --filter event=die --format \
        '{{.TimeNano}} {{index .Actor.Attributes "com.docker.compose.service"}}{{index .Actor.Attributes "com.docker.swarm.service.name"}} {{.Action}} {{index .Actor.Attributes "exitCode"}}' \
        >"$DATA/events" 2>/dev/null &
    EVENTS_PID=$!
}
# events: what start_events recorded, "TIME ROLE ACTION EXITCODE" (Swarm's service names
# without the stack's prefix).
events() { sed "s/ ${NAME}_/ /" "$DATA/events"; }
stop_events() {
    [ -n "$EVENTS_PID" ] && kill "$EVENTS_PID" 2>/dev/null
    EVENTS_PID=
}
died_with() { events | grep -q "^[0-9]* $1 die $2\$"; }

# ---- the sequence (control role): consecutive numbers in its host-mounted log ----------------
SEQ_LOG=
last_seq() { sed -n 's/^seq \([0-9][0-9]*\)$/\1/p' "$SEQ_LOG" | tail -n1; }
seq_gaps() {
    awk '/^seq [0-9]+$/ { n = $2 + 0; if (p != "" && n != p + 1) printf "%d->%d ", p, n; p = n }' "$SEQ_LOG"
}
seq_past() { local n; n=$(last_seq); [ -n "$n" ] && [ "$n" -gt "$1" ]; }

# ---- phases ------------------------------------------------------------------------------------
phase_up() {
    local t0 r
    t0=$(date +%s%N)
    case $ENGINE in
    compose)
        COMPOSE_UP=1
        if ! out=$(compose_cmd up -d 2>&1); then
            fail "$ENGINE: docker-compose up: $(printf '%s\n' "$out" | tail -n 3 | tr '\n' ' ')"
            show_all
            return 1
        fi
        ;;
    swarm)
        STACK_UP=1
        if ! out=$(docker stack deploy --resolve-image never -c "$DEPLOY/roles.yaml" \
            -c "$DEPLOY/stack.yaml" "$NAME" 2>&1); then
            fail "$ENGINE: docker stack deploy: $(printf '%s\n' "$out" | tail -n 3 | tr '\n' ' ')"
            return 1
        fi
        ;;
    esac
    if wait_for 120 all_healthy; then
        pass "$ENGINE: every role healthy (ctrlinit health --live) and ready (ctrlinit health) $(secs "$(ms_since "$t0")") after starting the stack"
    else
        fail "$ENGINE: not every role became healthy within 120 s"
        show_all
        return 1
    fi
    for r in "${ROLES[@]}"; do
        check "$ENGINE: $r: every program up (docker exec ctrlinit status exits 0)" quiet ctl "$r" status
        # shellcheck disable=SC2016 # $PROBE_ADDR is the container's
        check "$ENGINE: $r: the probe endpoint answers /livez and /readyz (PROBE_ADDR $(in_role "$r" printenv PROBE_ADDR))" \
            quiet in_role "$r" sh -c 'for p in livez readyz; do timeout 3 busybox wget -q -O - "http://$PROBE_ADDR/$p" | grep -qx ok || exit 1; done'
    done
    if wait_for 20 path_works; then
        pass "$ENGINE: web -> nginx -> config API answers with CLUSTER_NAME=$CLUSTER_NAME from the environment"
    else
        fail "$ENGINE: web's path to the config API: $(web_get config)"
    fi
    check "$ENGINE: control provisioned from the config role's API (cluster.json names $CLUSTER_NAME)" \
        quiet sh -c "docker exec \"\$1\" cat /etc/role/cluster.json | grep -q '\"$CLUSTER_NAME\"'" _ "$(cid control)"
    check "$ENGINE: the HEALTHCHECK is liveness, ctrlinit health --live" \
        test "$(docker inspect -f '{{json .Config.Healthcheck.Test}}' "$(cid config)")" = '["CMD","/usr/bin/ctrlinit","health","--live"]'
}

phase_crash() {
    local pid runs r old_gen crash=$DATA/control/crash/holder
    pid=$(field control holder pid)
    runs=$(for r in rib xmpp sequence; do field control "$r" run; done | tr '\n' ' ')
    old_gen=$(in_role control cat /run/control/netns/current || true)
    # shellcheck disable=SC2016 # $1 is the container shell's
    in_role control sh -c 'kill -SEGV "$1"' _ "$pid"
    has_report() { grep -l -s 'holder: created network namespace' "$crash"/*-SIGSEGV.json >/dev/null; }
    if wait_for 20 has_report; then
        local reports=("$crash"/*-SIGSEGV.json)
        pass "$ENGINE: crash: kill -SEGV of the holder left a report on the host mount ($(basename "${reports[0]}"), with its last lines)"
    else
        fail "$ENGINE: crash: no SIGSEGV report in $crash ($(find "$DATA/control/crash" | tr '\n' ' '))"
    fi
    # restart = true: the daemons in its namespace were stopped and came back after it.
    newer_runs() {
        local r i=1 old
        ctl control status --wait holder=running rib=running xmpp=running sequence=running --timeout 1s >/dev/null 2>&1 || return 1
        for r in rib xmpp sequence; do
            old=$(printf '%s\n' "$runs" | cut -d' ' -f$i)
            [ "$(field control "$r" run)" -gt "$old" ] || return 1
            i=$((i + 1))
        done
    }
    if wait_for 30 newer_runs; then
        pass "$ENGINE: crash: rib, xmpp and sequence restarted with the holder (restart = true), in $(in_role control cat /run/control/netns/current) (was $old_gen)"
    else
        fail "$ENGINE: crash: the holder's dependents did not all restart ($(ctl control status 2>&1 | tr -s ' ' | tr '\n' ';'))"
    fi
    check "$ENGINE: crash: the xmpp status page serves the new namespace" quiet sh -c \
        "docker exec \"\$1\" sh -c 'timeout 3 busybox wget -q -O - http://127.0.0.1:5269/netns' | grep -qx \"\$2\"" \
        _ "$(cid control)" "$(in_role control cat /run/control/netns/current)"
    if wait_for 30 is_healthy control; then pass "$ENGINE: crash: control healthy"; else fail "$ENGINE: crash: control not healthy"; fi
    local gaps n
    n=$(last_seq)
    wait_for 10 seq_past "$n" || true
    gaps=$(seq_gaps)
    check "$ENGINE: crash: sequence.log has no gap across the restart (last seq $(last_seq)${gaps:+; gaps: $gaps})" test -z "$gaps"
}

phase_budget() {
    local old c pid=0 i t0 ms
    c=$(cid config)
    old=$(incarnation "$c")
    KILL_PID=
    api_up() {
        local out st p
        out=$(ctl config status --json api 2>/dev/null) || return 1
        st=$(printf '%s\n' "$out" | json_field state)
        p=$(printf '%s\n' "$out" | json_field pid)
        [ "$st" = running ] && [ -n "$p" ] && [ "$p" != "$pid" ] && KILL_PID=$p
    }
    t0=$(date +%s%N)
    # max_restarts = 3: the 4th death is past the budget.
    for i in 1 2 3 4; do
        if ! wait_for 20 api_up; then
            fail "$ENGINE: budget: api not running again before kill $i"
            show config
            return 1
        fi
        pid=$KILL_PID
        # shellcheck disable=SC2016 # $1 is the container shell's
        docker exec "$c" sh -c 'kill -KILL "$1"' _ "$pid" || true
    done
    if wait_for 30 died_with config 75; then
        pass "$ENGINE: budget: api killed 4 times (max_restarts = 3): the config container exited with 75"
    else
        fail "$ENGINE: budget: no exit 75 of config in docker events ($(events | tr '\n' ';'))"
        show config
    fi
    if wait_for 60 back_healthy config "$old"; then
        ms=$(ms_since "$t0")
        pass "$ENGINE: budget: the engine restarted config and it is healthy again ($(secs "$ms") after the first kill)"
    else
        fail "$ENGINE: budget: config not back and healthy"
        show config
        return 1
    fi
    check "$ENGINE: budget: every config program up again" quiet ctl config status --wait \
        provision=completed redis=running seed=completed api=running --timeout 20s
    if wait_for 30 path_works; then
        pass "$ENGINE: budget: web's path through nginx to the API works again"
    else
        fail "$ENGINE: budget: web's path still broken: $(web_get config)"
    fi
    # (their programs that follow config's api restarted after it: ready again, not at once)
    check "$ENGINE: budget: control and web healthy and ready" wait_for 60 all_healthy
    local log=$DATA/config/log/ctrlinit.log
    check "$ENGINE: budget: ctrlinit.log (host) says api exhausted its budget and ctrlinit exited with 75" \
        sh -c "grep -q 'api: .*exhausted' '$log' && grep -q 'exiting with status 75' '$log'"
    local sigkills=("$DATA/config/crash/api/"*-SIGKILL.json)
    check "$ENGINE: budget: a crash report on the host mount for each of api's 4 SIGKILLs (got ${#sigkills[@]})" \
        test "${#sigkills[@]}" -eq 4 -a -e "${sigkills[0]}"
    check "$ENGINE: budget: the termination log holds the reason ($(head -n1 "$DATA/config/log/termination-log" 2>/dev/null))" \
        grep -q 'api exhausted' "$DATA/config/log/termination-log"
    case $ENGINE in
    compose)
        check "$ENGINE: budget: Docker restarted the same container (RestartCount $(docker inspect -f '{{.RestartCount}}' "$c"))" \
            test "$(docker inspect -f '{{.RestartCount}}' "$c")" -ge 1
        check "$ENGINE: budget: provisioning again changed nothing (idempotent: 'unchanged' in provision.log)" \
            grep -q 'unchanged /etc/role/redis.conf' "$DATA/config/log/provision.log"
        ;;
    swarm)
        local ps
        ps=$(docker service ps --no-trunc --format '{{.Name}} {{.DesiredState}} {{.CurrentState}} {{.Error}}' "${NAME}_config")
        check "$ENGINE: budget: docker service ps shows the failed task (non-zero exit (75))" \
            sh -c "printf '%s\n' \"\$1\" | grep -q 'non-zero exit (75)'" _ "$ps"
        echo "docker service ps ${NAME}_config:"
        docker service ps --format '  {{.Name}}  {{.DesiredState}}  {{.CurrentState}}  {{.Error}}' "${NAME}_config"
        ;;
    esac
}

# ---- config's api as the other roles' external dependency ------------------------------------
# log_after ROLE MS PATTERN: the time (epoch ms) of the first line of ROLE's ctrlinit.log (host
# mount) after MS that matches PATTERN (grep -E), or nothing.
log_after() {
    local line t
    while IFS= read -r line; do
        t=$(ts_ms "$line" 2>/dev/null) || continue
        [ "$t" -gt "$2" ] && { echo "$t"; return 0; }
    done < <(grep -E -- "$3" "$DATA/$1/log/ctrlinit.log" 2>/dev/null)
    return 0
}
# log_last ROLE PATTERN: the time (ms) of the last line of ROLE's ctrlinit.log matching PATTERN.
log_last() {
    local line
    line=$(grep -E -- "$2" "$DATA/$1/log/ctrlinit.log" 2>/dev/null | tail -n 1)
    [ -n "$line" ] && ts_ms "$line" 2>/dev/null
    return 0
}
# log_wait ROLE MS PATTERN: log_after, waiting up to 20 s for the line (ctrlinit writes its log
# from a thread of its own: a line may reach the file a little after the state it tells of).
log_wait() {
    local t=
    has_line() { t=$(log_after "$@"); [ -n "$t" ]; }
    wait_for 20 has_line "$@" || true
    echo "$t"
}
# The programs of other roles that follow config's api (restart = true on their external
# config-api), as ROLE:PROGRAM, in the order they start.
FOLLOWERS=(control:session web:nginx web:canary)

# (These phases return 0 after a FAIL: under set -e a non-zero return would end the run before
# the other phases and the tally.)
# Kills config's container (its PID 1 from the host on compose; docker kill on Swarm): the
# dependents in control and web stop (their external config-api goes down, or config's ctrlinit
# comes back with a new boot id), wait, and start again once config's api is ready, in order.
phase_peer() {
    local c old t0 t0ms f r p want=() before=() i t_cfg t stop start prev_start out bad=
    c=$(cid config)
    old=$(incarnation "$c")
    for f in "${FOLLOWERS[@]}"; do before+=("$(field "${f%%:*}" "${f##*:}" run)"); done
    t0ms=$(($(date +%s%N) / 1000000))
    case $ENGINE in
    compose) kill -KILL "$(docker inspect -f '{{.State.Pid}}' "$c")" ;;
    swarm) docker kill "$c" >/dev/null ;;
    esac
    # every follower on a newer run, running
    followers_back() {
        local f i=0 run
        for f in "${FOLLOWERS[@]}"; do
            run=$(field "${f%%:*}" "${f##*:}" run) || return 0
            [ -n "$run" ] && [ "$run" -gt "${before[$i]}" ] || return 0
            [ "$(field "${f%%:*}" "${f##*:}" state)" = running ] || return 0
            i=$((i + 1))
        done
    }
    if ! wait_for 90 back_healthy config "$old"; then
        fail "$ENGINE: peer: config not back and healthy within 90 s of the kill"
        show config
        return 0
    fi
    if wait_for 60 followers_back; then
        pass "$ENGINE: peer: control's session, web's nginx and canary are on new runs and running (runs were ${before[*]})"
    else
        fail "$ENGINE: peer: the followers of config's api did not all restart (runs were ${before[*]}): $(for f in "${FOLLOWERS[@]}"; do printf '%s run %s %s; ' "$f" "$(field "${f%%:*}" "${f##*:}" run)" "$(field "${f%%:*}" "${f##*:}" state)"; done)"
        show control
        show web
        return 0
    fi
    # From the host-mounted ctrlinit logs: when config's api was running again, when each
    # follower stopped (because of the external) and started again.
    t_cfg=$(log_wait config "$t0ms" ' api: starting -> running')
    if [ -z "$t_cfg" ]; then
        fail "$ENGINE: peer: no 'api: starting -> running' in config's ctrlinit.log after the kill"
        return 0
    fi
    echo "peer ($ENGINE): kill of config's container -> config's api running again: +$((t_cfg - t0ms)) ms"
    prev_start=0
    for f in "${FOLLOWERS[@]}"; do
        r=${f%%:*}
        p=${f##*:}
        stop=$(log_wait "$r" "$t0ms" " $p: [a-z]+ -> (stopping|waiting): restarting because (external config-api|nginx) ended")
        start=$(log_wait "$r" "${stop:-$t0ms}" " $p: [a-z]+ -> starting")
        echo "  $r $p: stopped +$((${stop:-$t0ms} - t0ms)) ms$([ -n "$stop" ] || echo ' (no stop line)'), started again +$((${start:-$t0ms} - t0ms)) ms"
        [ -n "$stop" ] || bad="$bad $p-not-stopped-by-the-external"
        [ -n "$start" ] || { bad="$bad $p-not-started"; continue; }
        [ "$start" -ge "$t_cfg" ] || bad="$bad $p-started-before-config's-api"
        # web's canary after its nginx (restart = true on nginx)
        [ "$r" = web ] && [ "$start" -lt "$prev_start" ] && bad="$bad $p-before-nginx"
        [ "$r" = web ] && prev_start=$start
    done
    check "$ENGINE: peer: each follower stopped because of the external, and started again after config's api was running, canary after nginx${bad:+; wrong:$bad}" test -z "$bad"
    # What control's ctrlinit saw: config's api down (two failed checks) or, when config came back
    # sooner, the peer on a new boot id / run; then ready again.
    for r in control web; do
        t=$(log_wait "$r" "$t0ms" 'external config-api: (ready -> down|the peer.s program is on a new run)')
        out=$(grep -E 'external config-api: (ready -> down|the peer.s program is on a new run)' "$DATA/$r/log/ctrlinit.log" | tail -n1 | cut -d' ' -f2-)
        check "$ENGINE: peer: $r's ctrlinit saw it +$((${t:-$t0ms} - t0ms)) ms after the kill: ${out:-nothing}" test -n "$t"
    done
    two_sessions() { [ "$(grep -c '^session: opened with' "$DATA/control/log/session.log")" -ge 2 ]; }
    check "$ENGINE: peer: control's session opened a new session (session.log)" wait_for 60 two_sessions
    if wait_for 30 path_works; then pass "$ENGINE: peer: web's path to the API works again"; else fail "$ENGINE: peer: web's path broken: $(web_get config)"; fi
    check "$ENGINE: peer: every role healthy and ready again" wait_for 60 all_healthy
}

phase_update() {
    local old before gaps after_line n t0
    old=$(incarnation "$(cid control)")
    before=$(last_seq)
    t0=$(date +%s%N)
    if ! out=$(docker service update --force --detach=false --quiet "${NAME}_control" 2>&1); then
        fail "$ENGINE: update: docker service update --force: $out"
        return 1
    fi
    if wait_for 60 back_healthy control "$old"; then
        pass "$ENGINE: update: docker service update --force replaced control, healthy again ($(secs "$(ms_since "$t0")"))"
    else
        fail "$ENGINE: update: control not replaced and healthy"
        show control
        return 1
    fi
    n=$(last_seq)
    wait_for 20 seq_past "$((n + 5))" || true
    gaps=$(seq_gaps)
    after_line=$(grep -c '^sequence: going on after' "$SEQ_LOG" || true)
    check "$ENGINE: update: sequence.log (host) goes on without a gap across the two containers (seq $before before, $(last_seq) now, $after_line runs${gaps:+; gaps: $gaps})" \
        test -z "$gaps"
    echo "docker service ps ${NAME}_control:"
    docker service ps --format '  {{.Name}}  {{.DesiredState}}  {{.CurrentState}}  {{.Error}}' "${NAME}_control"
}

phase_chaos() {
    local end r c old t0 ms times=() kills=0 how round=() i
    case $ENGINE in
    compose) how="SIGKILL to the container's PID 1 from the host" ;;
    swarm) how="docker kill" ;;
    esac
    end=$(($(date +%s) + CHAOS_SECONDS))
    while [ "$(date +%s)" -lt "$end" ]; do
        # Random order, every role once a round.
        [ ${#round[@]} -gt 0 ] || round=("${ROLES[@]}")
        i=$((RANDOM % ${#round[@]}))
        r=${round[$i]}
        round=("${round[@]:0:$i}" "${round[@]:$((i + 1))}")
        c=$(containers "$r" --filter health=healthy | head -n1)
        if [ -z "$c" ]; then
            wait_for 60 is_healthy "$r" || { fail "$ENGINE: chaos: $r not healthy before a kill"; break; }
            continue
        fi
        old=$(incarnation "$c")
        t0=$(date +%s%N)
        case $ENGINE in
        # docker kill counts as stopping by hand for Docker's restart policy (no restart); a
        # SIGKILL from outside, as the OOM killer sends, is a crash it restarts.
        compose) kill -KILL "$(docker inspect -f '{{.State.Pid}}' "$c")" ;;
        swarm) docker kill "$c" >/dev/null ;;
        esac
        kills=$((kills + 1))
        if wait_for 90 back_healthy "$r" "$old"; then
            ms=$(ms_since "$t0")
            times+=("$ms")
            echo "  chaos ($ENGINE): killed $r, healthy again after $(secs "$ms")"
        else
            fail "$ENGINE: chaos: $r not healthy within 90 s of kill $kills"
            show "$r"
            return 1
        fi
    done
    local sorted median worst
    sorted=$(printf '%s\n' "${times[@]}" | sort -n)
    median=$(printf '%s\n' "$sorted" | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : int((v[NR / 2] + v[NR / 2 + 1]) / 2) }')
    worst=$(printf '%s\n' "$sorted" | tail -n1)
    RECOVERY+=("$ENGINE: $kills kills ($how) in ${CHAOS_SECONDS} s; back to healthy: median $(secs "$median"), worst $(secs "$worst")")
    echo "recovery ($ENGINE): $kills kills in ${CHAOS_SECONDS} s, back to healthy: median $(secs "$median"), worst $(secs "$worst")"
    check "$ENGINE: chaos: $kills kills, every role came back (median $(secs "$median"), worst $(secs "$worst"))" test "$kills" -ge 1
    check "$ENGINE: chaos: afterwards every role is healthy" wait_for 60 all_healthy
    if wait_for 30 path_works; then pass "$ENGINE: chaos: web's path to the API works"; else fail "$ENGINE: chaos: web's path broken: $(web_get config)"; fi
    if [ "$ENGINE" = swarm ]; then
        echo "docker service ps (every task of the stack, newest first):"
        docker stack ps --format '  {{.Name}}  {{.DesiredState}}  {{.CurrentState}}  {{.Error}}' "$NAME"
    fi
}

# ts_ms LINE: the time of a ctrlinit.log line (2026-01-02T03:04:05.678Z …) in epoch ms.
ts_ms() { date -d "${1%% *}" +%s%3N; }

declare -A T_SHUT T_EXIT
phase_down() {
    local t0 r log life stop pair a b first last t_shut t_exit
    t0=$(date +%s%N)
    case $ENGINE in
    compose)
        if out=$(compose_cmd down 2>&1); then COMPOSE_UP=0; else fail "$ENGINE: down: $out"; fi
        ;;
    swarm)
        docker stack rm "$NAME" >/dev/null
        wait_for 90 stack_gone || fail "$ENGINE: down: the stack's containers or network still there after 90 s"
        STACK_UP=0
        ;;
    esac
    pass "$ENGINE: down: every role stopped and removed in $(secs "$(ms_since "$t0")")"
    stop_events
    for r in "${ROLES[@]}"; do
        log=$DATA/$r/log/ctrlinit.log
        life=$DATA/$r/last-life.log
        stop=$DATA/$r/last-stop.log
        # The container's last life (from its last "starting N programs"), and in it the stop
        # (from "shutting down").
        awk '/ starting [0-9]+ programs$/ { n = 0 } { l[++n] = $0 } END { for (i = 1; i <= n; i++) print l[i] }' "$log" >"$life"
        sed -n '/shutting down: /,$p' "$life" >"$stop"
        first=$(head -n1 "$stop")
        last=$(tail -n1 "$stop")
        if ! printf '%s\n' "$first" | grep -q 'shutting down: received SIGTERM'; then
            fail "$ENGINE: down: $r: its last life did not stop on SIGTERM (${first:-$(tail -n 3 "$life" | tr '\n' ';')})"
            continue
        fi
        t_shut=$(ts_ms "$first")
        t_exit=$(ts_ms "$last")
        T_SHUT[$r]=$t_shut
        T_EXIT[$r]=$t_exit
        check "$ENGINE: down: $r: ctrlinit exited with status 0, $((t_exit - t_shut)) ms after SIGTERM (grace ${GRACE[$r]} s)" \
            sh -c "printf '%s\n' \"\$1\" | grep -q 'exiting with status 0' && [ $((t_exit - t_shut)) -lt $((GRACE[$r] * 1000)) ]" _ "$last"
        if grep -E -q 'SIGKILL|stop budget|out of time' "$stop"; then
            fail "$ENGINE: down: $r: escalation to SIGKILL: $(grep -E 'SIGKILL|stop budget|out of time' "$stop" | head -n2 | tr '\n' ';')"
        else
            pass "$ENGINE: down: $r: no SIGKILL escalation (every program ended on its stop signal)"
        fi
        local bad=
        for pair in ${DEPS[$r]}; do
            a=${pair%%:*}
            b=${pair##*:}
            # b (a oneshot) may have nothing to stop: then only a's stop is required.
            if grep -q " $b: running -> stopping" "$stop"; then
                before "$stop" " $a: [a-z]+ -> stopped" " $b: running -> stopping" || bad="$bad $a-before-$b"
            else
                grep -E -q " $a: [a-z]+ -> stopped" "$stop" || bad="$bad $a-not-stopped"
            fi
        done
        check "$ENGINE: down: $r: stopped in reverse dependency order (${DEPS[$r]})${bad:+; wrong:$bad}" test -z "$bad"
        check "$ENGINE: down: $r: docker saw exit code 0" \
            sh -c "printf '%s\n' \"\$1\" | grep ' $r die ' | tail -n1 | grep -q ' die 0\$'" _ "$(events)"
    done
    if [ "$ENGINE" = compose ] && [ -n "${T_SHUT[config]:-}" ] && [ -n "${T_EXIT[web]:-}" ] && [ -n "${T_EXIT[control]:-}" ]; then
        check "$ENGINE: down: web and control had exited before config was told to stop (depends_on order)" \
            test "${T_EXIT[web]}" -le "${T_SHUT[config]}" -a "${T_EXIT[control]}" -le "${T_SHUT[config]}"
    fi
    T_SHUT=()
    T_EXIT=()
    # Complete host logs: the last lines programs wrote as they stopped are in their files.
    local missing=
    grep -q 'api: SIGTERM: stopped after' "$DATA/config/log/api.log" || missing="$missing api.log"
    grep -q 'ready to exit' "$DATA/config/log/redis.log" || missing="$missing redis.log"
    grep -q 'registered in redis' "$DATA/config/log/seed.log" || missing="$missing seed.log"
    grep -q 'ready to exit' "$DATA/control/log/rib.log" || missing="$missing rib.log"
    grep -q 'holder: created network namespace' "$DATA/control/log/holder.log" || missing="$missing holder.log"
    grep -q 'canary: SIGTERM after' "$DATA/web/log/canary.log" || missing="$missing canary.log"
    grep -q 'GET /api/hits' "$DATA/web/log/nginx.log" || missing="$missing nginx.log(access)"
    grep -q 'exit' "$DATA/web/log/nginx.log" || missing="$missing nginx.log(exit)"
    local stopped_at
    stopped_at=$(sed -n 's/^sequence: SIGTERM after seq \([0-9]*\)$/\1/p' "$SEQ_LOG" | tail -n1)
    [ -n "$stopped_at" ] && [ "$stopped_at" = "$(last_seq)" ] || missing="$missing sequence.log(last seq $(last_seq), stopped at ${stopped_at:-?})"
    check "$ENGINE: down: host-mounted logs hold every program's last lines${missing:+; missing:$missing}" test -z "$missing"
}

run_engine() {
    ENGINE=$1
    DATA=$WORK/$ENGINE
    local r t0
    t0=$(date +%s)
    for r in "${ROLES[@]}"; do mkdir -p "$DATA/$r/log" "$DATA/$r/crash"; done
    mkdir -p "$DATA/control/state"
    # ctrlinit writes its reason there only when the file exists (as a pod's termination log).
    for r in "${ROLES[@]}"; do : >"$DATA/$r/log/termination-log"; done
    SEQ_LOG=$DATA/control/log/sequence.log
    export DEPLOY_DATA=$DATA CLUSTER_NAME="ci-$ENGINE"
    echo "==== $ENGINE (data on the host in $DATA)"
    start_events
    if phase_up; then
        phase_peer
        phase_crash
        phase_budget
        [ "$ENGINE" = swarm ] && phase_update
        phase_chaos
    fi
    phase_down
    echo "==== $ENGINE: $(($(date +%s) - t0)) s"
}

# ---- a namespace holder and its dependent on compose (deploy/holder.yaml) ------------------------
holder_cmd() { docker-compose --no-ansi -p "$NAME-holder" -f "$DEPLOY/holder.yaml" "$@"; }
holder_cid() { docker ps -q --filter "label=com.docker.compose.project=$NAME-holder" --filter "label=com.docker.compose.service=$1" | head -n1; }
# A request from inside the holder's namespace (whichever it is now) gets the dependent's page.
holder_answers() {
    local h
    h=$(holder_cid holder)
    [ -n "$h" ] && timeout 10 docker exec "$h" sh -c 'timeout 3 busybox wget -q -O - http://127.0.0.1:8080/' 2>/dev/null | grep -q 'answer from the dependent'
}
# ms_at TIME: an RFC 3339 time (Docker's, a log's) in epoch ms.
ms_at() { date -d "$1" +%s%3N; }

phase_holder() {
    local h a t0 t1 before gone lost down up holder_up out
    echo "==== compose: a holder and a dependent in its network namespace (deploy/holder.yaml)"
    HOLDER_UP=1
    if ! out=$(holder_cmd up -d 2>&1); then
        fail "holder: docker-compose up: $(printf '%s\n' "$out" | tail -n 3 | tr '\n' ' ')"
        return 0
    fi
    if ! wait_for 60 holder_answers; then
        fail "holder: the dependent does not answer in the holder's namespace"
        docker logs "$(holder_cid app)" 2>&1 | tail -n 20 >&2
        return 0
    fi
    a=$(holder_cid app)
    h=$(holder_cid holder)
    check "holder: the dependent's ctrlinit watches eth0" wait_for 30 sh -c "docker logs $a 2>&1 | grep -q 'network: watching eth0'"
    before=$(docker inspect -f '{{.State.StartedAt}}' "$a")
    t0=$(($(date +%s%N) / 1000000))
    # SIGKILL to the holder's process from the host, as the OOM killer would (docker kill counts
    # as a stop by hand for Docker's restart policy)
    kill -KILL "$(docker inspect -f '{{.State.Pid}}' "$h")"
    if wait_for 120 holder_answers; then
        t1=$(($(date +%s%N) / 1000000))
        pass "holder: after SIGKILL of the holder, the dependent answers again through the holder's new namespace ($((t1 - t0)) ms)"
    else
        fail "holder: the dependent did not answer again within 120 s of the kill"
        docker logs "$a" 2>&1 | tail -n 20 >&2
        return 0
    fi
    check "holder: its ctrlinit named the interface lost and exited 76" \
        sh -c "docker logs $a 2>&1 | grep -q 'network lost: eth0 gone at .*exit code 76'"
    check "holder: Docker restarted the dependent (restart: always) after its exit 76" \
        test "$(docker inspect -f '{{.State.StartedAt}}' "$a")" != "$before"
    holder_up=$(ms_at "$(docker inspect -f '{{.State.StartedAt}}' "$h")")
    gone=$(docker logs --timestamps "$a" 2>&1 | grep 'network: eth0 is gone' | tail -n1 | cut -d' ' -f1)
    lost=$(docker logs --timestamps "$a" 2>&1 | grep 'network lost: eth0' | tail -n1 | cut -d' ' -f1)
    up=$(ms_at "$(docker inspect -f '{{.State.StartedAt}}' "$a")")
    echo "holder: from SIGKILL of the holder to the dependent's first answer: $((t1 - t0)) ms"
    echo "  holder restarted by Docker (new namespace):  +$((holder_up - t0)) ms"
    [ -n "$gone" ] && echo "  eth0 gone, seen by the dependent's ctrlinit: +$(($(ms_at "$gone") - t0)) ms"
    [ -n "$lost" ] && echo "  grace (2 s) over, ctrlinit stops, exit 76:   +$(($(ms_at "$lost") - t0)) ms"
    echo "  dependent started again by Docker:           +$((up - t0)) ms"
    echo "  its program answering (polled):              +$((t1 - t0)) ms"
    HOLDER_MS=$((t1 - t0))
    holder_cmd down -t 5 >/dev/null 2>&1 && HOLDER_UP=0
}

# ---- deploy/kubernetes.yaml under `podman kube play` (the variant deploy/kube_play.py makes) ------
KUBE_UP=0
KUBE_NET=
KUBE_IMAGES=()
podman_usable() {
    PODMAN_WHY=
    command -v podman >/dev/null 2>&1 || { PODMAN_WHY="no podman on PATH"; return 1; }
    local err
    if ! err=$(podman info --format '{{.Host.OCIRuntime.Name}}' 2>&1 >/dev/null); then
        PODMAN_WHY="podman info failed: $(printf '%s\n' "$err" | grep -v '^$' | head -n1)"
        return 1
    fi
}
# Podman 4 names a Deployment's pod NAME-pod-0, Podman 5 NAME-pod.
KUBE_POD_SUFFIX=-pod-0
kube_ctr() { echo "$NAME-$1$KUBE_POD_SUFFIX-$1"; }
kube_ready() { podman exec "$(kube_ctr "$1")" /usr/bin/ctrlinit health >/dev/null 2>&1; }
kube_all_ready() {
    local r
    for r in "${ROLES[@]}"; do kube_ready "$r" || return 1; done
}
kube_show() {
    local r
    for r in "$@"; do
        say "---- kube $r: $(podman inspect -f 'state {{.State.Status}}, restarts {{.RestartCount}}, started {{.State.StartedAt}}' "$(kube_ctr "$r")" 2>&1)"
        podman exec "$(kube_ctr "$r")" /usr/bin/ctrlinit status >&2 2>&1
        grep -v ' seq [0-9]' "$DATA/$r/log/ctrlinit.log" | tail -n 15 >&2
    done
}
kube_web_get() { podman exec "$(kube_ctr web)" sh -c "timeout 3 busybox wget -q -O - http://127.0.0.1/api/$1" 2>/dev/null; }

phase_kube() {
    local t0 tar gw r out data=$WORK/kube
    echo "==== podman kube play deploy/kubernetes.yaml (data on the host in $data)"
    if ! podman_usable; then
        echo "podman kube play: skipped: $PODMAN_WHY"
        return 0
    fi
    case $(podman version --format '{{.Client.Version}}' 2>/dev/null) in
    [0-4].*) KUBE_POD_SUFFIX=-pod-0 ;;
    *) KUBE_POD_SUFFIX=-pod ;;
    esac
    t0=$(date +%s%N)
    # Podman has its own image store: the role images Docker built, through docker save.
    tar=$WORK/images.tar
    for r in "${ROLES[@]}"; do KUBE_IMAGES+=("$DEPLOY_IMAGE_PREFIX-$r:$DEPLOY_TAG"); done
    if ! docker save -o "$tar" "${KUBE_IMAGES[@]}" || ! out=$(podman load -q -i "$tar" 2>&1); then
        fail "kube: docker save | podman load: $out"
        return 0
    fi
    rm -f "$tar"
    pass "kube: the role images loaded into Podman ($(secs "$(ms_since "$t0")"))"
    # A network of the run's own: aardvark-dns answers for the pods' names on its gateway.
    KUBE_NET=$NAME-net
    podman network create "$KUBE_NET" >/dev/null || { fail "kube: podman network create $KUBE_NET"; return 0; }
    gw=$(podman network inspect -f '{{range .Subnets}}{{.Gateway}}{{end}}' "$KUBE_NET")
    for r in "${ROLES[@]}"; do mkdir -p "$data/$r/log" "$data/$r/crash"; done
    mkdir -p "$data/control/state"
    DATA=$data
    python3 "$DEPLOY/kube_play.py" "$DEPLOY/kubernetes.yaml" --prefix "$NAME" --tag "$DEPLOY_TAG" \
        --data "$data" --resolver "$gw" --pod-suffix="$KUBE_POD_SUFFIX" >"$WORK/kube-play.yaml"
    t0=$(date +%s%N)
    KUBE_UP=1
    if ! out=$(podman kube play --network "$KUBE_NET" "$WORK/kube-play.yaml" 2>&1); then
        fail "kube: podman kube play: $(printf '%s\n' "$out" | tail -n 3 | tr '\n' ' ')"
        return 0
    fi
    if wait_for 120 kube_all_ready; then
        pass "kube: podman kube play: every role ready (ctrlinit health) $(secs "$(ms_since "$t0")") after kube play"
    else
        fail "kube: not every role ready within 120 s"
        for r in "${ROLES[@]}"; do
            say "---- kube $r"
            podman exec "$(kube_ctr "$r")" /usr/bin/ctrlinit status >&2 2>&1 || podman logs --tail 20 "$(kube_ctr "$r")" >&2
        done
        return 0
    fi
    check "kube: control waited for config's api (external config-api) and opened its session" \
        wait_for 60 grep -q '^session: opened with' "$data/control/log/session.log"
    if wait_for 30 sh -c "podman exec $(kube_ctr web) sh -c 'timeout 3 busybox wget -q -O - http://127.0.0.1/api/config' 2>/dev/null | grep -q '\"name\": \"demo\"'"; then
        pass "kube: web -> nginx -> config's API answers (CLUSTER_NAME demo, from the manifest)"
    else
        fail "kube: web's path to config's API: $(kube_web_get config)"
    fi
    for r in "${ROLES[@]}"; do
        # shellcheck disable=SC2016 # $PROBE_ADDR is the container's
        check "kube: $r: the probe endpoint answers /livez and /readyz on the pod's address (PROBE_ADDR 0.0.0.0)" \
            wait_for 20 quiet podman exec "$(kube_ctr "$r")" sh -c 'p=${PROBE_ADDR##*:}; for x in livez readyz; do timeout 3 busybox wget -q -O - "http://127.0.0.1:$p/$x" | grep -qx ok || exit 1; done' ||
            kube_show "$r"
    done
    kube_peer
    echo "podman pod ps:"
    podman pod ps --filter "name=$NAME" --format '  {{.Name}}  {{.Status}}  {{.NumberOfContainers}} containers'
    # `podman kube down` (4.3) removes the pods without a stop signal: ctrlinit would be SIGKILLed
    # with no ordered stop. Stop the pods first, dependents before config as compose's `down`
    # does, with the grace periods the manifest asks for and Podman ignores.
    t0=$(date +%s%N)
    for r in web control config; do
        podman pod stop -t "${GRACE[$r]}" "$NAME-$r$KUBE_POD_SUFFIX" >/dev/null 2>&1 ||
            fail "kube: podman pod stop $NAME-$r$KUBE_POD_SUFFIX"
    done
    if out=$(podman kube down "$WORK/kube-play.yaml" 2>&1); then
        KUBE_UP=0
        pass "kube: podman pod stop (web, control, config), then podman kube down, in $(secs "$(ms_since "$t0")")"
    else
        fail "kube: podman kube down: $out"
    fi
    for r in "${ROLES[@]}"; do
        check "kube: down: $r: ctrlinit stopped on SIGTERM and exited 0 (ctrlinit.log)" \
            sh -c "tail -n 40 '$data/$r/log/ctrlinit.log' | grep -q 'shutting down: received SIGTERM' && tail -n 1 '$data/$r/log/ctrlinit.log' | grep -q 'exiting with status 0'"
    done
}
# config's container killed under kube play (restartPolicy: Always, which Podman honours): control's
# session and web's nginx and canary restart after config's api, as on compose and Swarm.
kube_peer() {
    local f r p before=() t0ms t_cfg first start bad=
    kube_field() { podman exec "$(kube_ctr "$1")" /usr/bin/ctrlinit status --json "$2" 2>/dev/null | json_field "$3"; }
    for f in "${FOLLOWERS[@]}"; do before+=("$(kube_field "${f%%:*}" "${f##*:}" run)"); done
    t0ms=$(($(date +%s%N) / 1000000))
    kill -KILL "$(podman inspect -f '{{.State.Pid}}' "$(kube_ctr config)")"
    kube_followers_back() {
        local f i=0 run
        for f in "${FOLLOWERS[@]}"; do
            run=$(kube_field "${f%%:*}" "${f##*:}" run)
            [ -n "$run" ] && [ "$run" -gt "${before[$i]}" ] || return 0
            [ "$(kube_field "${f%%:*}" "${f##*:}" state)" = running ] || return 0
            i=$((i + 1))
        done
    }
    if ! wait_for 90 kube_followers_back; then
        fail "kube: peer: after config's container was killed, the followers did not all restart (runs were ${before[*]})"
        return 0
    fi
    t_cfg=$(log_wait config "$t0ms" ' api: starting -> running')
    echo "peer (kube): kill of config's container -> config's api running again (Podman restarted it): +$((${t_cfg:-$t0ms} - t0ms)) ms"
    for f in "${FOLLOWERS[@]}"; do
        r=${f%%:*}
        p=${f##*:}
        # The start of the run it is on now (it is running on a new run: the last start line),
        # not the first start after the kill: a follower may also have been started (and
        # stopped again) while config's container was coming back.
        # Waited for first (the log thread may write the line a little after the state).
        first=$(log_wait "$r" "$t0ms" " $p: [a-z]+ -> starting")
        start=$(log_last "$r" " $p: [a-z]+ -> starting")
        [ -n "$start" ] && [ "$start" -gt "$t0ms" ] || start=$first
        echo "  $r $p: its current run started +$((${start:-$t0ms} - t0ms)) ms"
        if ! { [ -n "$start" ] && [ -n "$t_cfg" ] && [ "$start" -ge "$t_cfg" ]; }; then
            bad="$bad $p"
            echo "  $r $p: its last start lines (the kill at $t0ms ms):"
            grep -E -- " $p: [a-z]+ -> " "$DATA/$r/log/ctrlinit.log" 2>/dev/null | tail -n 6 | sed 's/^/    /'
        fi
    done
    check "kube: peer: config restarted by Podman, then control's session, web's nginx and canary on new runs, after config's api${bad:+; not after it:$bad}" test -z "$bad"
    [ -z "$bad" ] || kube_show config control web
    check "kube: every role ready again" wait_for 60 kube_all_ready
}
kube_cleanup() {
    [ "$KUBE_UP" = 1 ] && podman kube down "$WORK/kube-play.yaml" >/dev/null 2>&1
    [ -n "$KUBE_NET" ] && podman network rm -f "$KUBE_NET" >/dev/null 2>&1
    for i in "${KUBE_IMAGES[@]}"; do podman rmi -f "$i" >/dev/null 2>&1; done
}

# Joins the runs that use this node's swarm (a shared lock on $SWARM_LOCK, on descriptor 9, held
# to the end of the run), making the swarm first when there is none. Joining and leaving happen
# under a second, exclusive lock ($SWARM_LOCK.turn, descriptor 8), so two runs never both init,
# and none leaves between another's look and its join.
swarm_ready() {
    local state gwbridge=1
    exec 8>>"$SWARM_LOCK.turn" 9>>"$SWARM_LOCK"
    flock -x 8
    flock -s 9
    SWARM_USED=1
    state=$(docker info --format '{{.Swarm.LocalNodeState}} {{.Swarm.ControlAvailable}}')
    case $state in
    "active true") flock -u 8; return 0 ;;
    "inactive "*)
        docker network inspect docker_gwbridge >/dev/null 2>&1 || gwbridge=0
        if out=$(docker swarm init --advertise-addr 127.0.0.1 2>&1); then
            echo "gwbridge_existed=$gwbridge" >"$SWARM_MARKER"
            echo "swarm: this node was not in a swarm: docker swarm init (left by the last run out)"
            flock -u 8
            return 0
        fi
        flock -u 8
        fail "swarm: docker swarm init: $out"
        return 1
        ;;
    *)
        fail "swarm: this node is in a swarm but not a manager ($state): cannot deploy a stack"
        return 1
        ;;
    esac
}

# Leaves the runs that use the swarm; the last one out (its shared lock turns exclusive at once)
# leaves the swarm if a run of this script made it, and the docker_gwbridge network that
# `swarm init` made (leaving does not remove it). A swarm that was there before is left alone.
swarm_release() {
    flock -x 8
    if flock -x -n 9 && [ -f "$SWARM_MARKER" ]; then
        docker swarm leave --force >/dev/null 2>&1
        grep -qx 'gwbridge_existed=1' "$SWARM_MARKER" || docker network rm docker_gwbridge >/dev/null 2>&1
        rm -f "$SWARM_MARKER"
        say "deploy test: the last run out of the swarm a run of this script made: left it"
    elif [ -f "$SWARM_MARKER" ]; then
        say "deploy test: other runs still use the swarm: left to the last of them"
    fi
    exec 9>&- 8>&-
}

# ---- run -------------------------------------------------------------------------------------------
echo "deploy test: building the images (deploy/build.sh)"
t0=$(date +%s)
if ! "$DEPLOY/build.sh"; then
    fail "deploy/build.sh"
    finish_checks "deploy test"
    exit 1
fi
pass "images built or reused in $(($(date +%s) - t0)) s"

RECOVERY=()
for e in $ENGINES; do
    case $e in
    compose)
        run_engine compose
        phase_holder
        ;;
    swarm) if swarm_ready; then run_engine swarm; fi ;;
    kube) phase_kube ;;
    *) fail "unknown engine $e (DEPLOY_ENGINES: compose swarm kube)" ;;
    esac
done

echo
printf '%s\n' "${RECOVERY[@]/#/recovery: }"
echo "deploy test: took $(($(date +%s) - STARTED)) s"
finish_checks "deploy test"
