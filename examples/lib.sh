# shellcheck shell=bash
# Runs an example the same way in two places, so one test script covers both:
#
#   docker  the example's image (FROM the shared base image, see docker/) as a real container;
#           PID 1 is ctrlinit, programs use busybox.
#   host    ctrlinit directly as PID 1 of a new PID namespace (`unshare --pid --fork
#           --mount-proc`) with the same conf.d; programs use the host's /bin/sh and coreutils.
#           Needs root (as CI is), no Docker.
#
# Directories the example mounts from the host in Docker are plain directories under $WORK in
# both modes: `ex_mount log /var/log/ctrlinit CTRLINIT_LOG_DIR` bind-mounts $WORK/log on
# /var/log/ctrlinit in Docker, and sets CTRLINIT_LOG_DIR=$WORK/log for ctrlinit on the host
# (the example's conf.d reads its paths as ${VAR:-container default}). So a test reads the same
# files, $WORK/log/api.log and so on, whichever mode ran.
#
#   ex_setup NAME MODE         MODE: docker | host | auto (docker when usable, else host)
#   ex_mount SUB PATH VAR      see above
#   ex_host_env VAR=VALUE      set only in host mode (e.g. where the example's scripts are)
#   ex_build                   docker: build the base image (unless $CTRLINIT_BASE_IMAGE) and the
#                              example's image; host: find or build the ctrlinit binary
#   ex_start [VAR=VALUE…]      start the init with this environment (nothing else leaks in)
#   ex_restart                 stop, then start again with the same environment and mounts
#                              (docker restart)
#   ex_ctl ARGS…               a ctrlinit client command against the running init
#   ex_wait_exit SECS          wait for the init to end; its exit status in EX_EXIT
#   ex_stop                    SIGTERM to PID 1 (docker stop) and wait; exit status in EX_EXIT
#   ex_kill                    SIGKILL to PID 1 (docker kill) and wait
#   ex_console                 what the init printed since the last ex_start (docker logs)
#   ex_pid NAME                the program's pid (in the init's PID namespace) from status --json
#   ex_field NAME FIELD        a top-level field of `status --json NAME`
#   ex_finish                  print the tally and exit 0/1 (cleanup runs from the EXIT trap)
#
# Binaries: CTRLINIT_BIN (host mode; default: cargo's debug build), CTRLINIT_STATIC_BIN (docker mode),
# CTRLINIT_BASE_IMAGE (docker mode: an already built base image; not removed afterwards).

. "$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/docker/lib.sh"

EX_MOUNTS=()
EX_HOST_ENV=()
EX_ENV=()
EX_PID=
EX_RUN=0
EX_IMAGE=
EX_OWN_IMAGES=()
EX_CONTAINER=
EX_BIN=

ex_setup() {
    EX_NAME=$1
    EX_MODE=${2:-auto}
    EX_DIR=$REPO/examples/$EX_NAME
    case $EX_MODE in
    auto)
        if docker_usable; then EX_MODE=docker; else
            say "$EX_NAME: Docker not usable ($DOCKER_WHY): running ctrlinit directly as PID 1"
            EX_MODE=host
        fi
        ;;
    docker)
        if ! docker_usable; then
            echo "$EX_NAME [docker]: skipped: $DOCKER_WHY"
            exit 0
        fi
        ;;
    host)
        if [ "$(id -u)" != 0 ]; then
            echo "$EX_NAME [host]: skipped: unshare --pid needs root"
            exit 0
        fi
        ;;
    *)
        say "usage: $0 [docker|host|auto]"
        exit 2
        ;;
    esac
    EX_ID="$$-$(date +%s)"
    EX_CONTAINER="ctrlinit-example-$EX_NAME-$EX_ID"
    WORK=$(mktemp -d "${TMPDIR:-/tmp}/ctrlinit-$EX_NAME.XXXXXX")
    trap ex_cleanup EXIT
    trap 'exit 130' INT TERM
    trap 'echo "FAIL: $EX_NAME [$EX_MODE]: unexpected error (status $?) at line $LINENO: $BASH_COMMAND"' ERR
    echo "$EX_NAME [$EX_MODE]: work directory $WORK"
}

ex_mount() {
    mkdir -p "$WORK/$1"
    EX_MOUNTS+=("$1:$2:$3")
}

ex_host_env() { EX_HOST_ENV+=("$1"); }

ex_build() {
    if [ "$EX_MODE" = host ]; then
        EX_BIN=$(ctrlinit_host_bin) || { fail "$EX_NAME: building ctrlinit"; ex_finish; }
        return 0
    fi
    local base=${CTRLINIT_BASE_IMAGE:-}
    if [ -z "$base" ]; then
        base="ctrlinit-example-base:$EX_ID"
        EX_OWN_IMAGES+=("$base")
        build_base_image "$base" 2> >(grep -v -E 'DEPRECATED|BuildKit|environment-variable|^ *$' >&2) ||
            { fail "$EX_NAME: building the base image"; ex_finish; }
    fi
    EX_IMAGE="ctrlinit-example-$EX_NAME:$EX_ID"
    EX_OWN_IMAGES+=("$EX_IMAGE")
    local out
    if out=$(docker build --quiet --build-arg "BASE=$base" --tag "$EX_IMAGE" "$EX_DIR" 2>&1); then
        pass "$EX_NAME: image built FROM $base (RUN ctrlinit check passed at build time)"
    else
        printf '%s\n' "$out" | grep -v -E 'DEPRECATED|BuildKit|environment-variable' >&2
        fail "$EX_NAME: docker build $EX_DIR"
        ex_finish
    fi
}

ex_start() {
    EX_ENV=("$@")
    EX_RUN=$((EX_RUN + 1))
    local m sub path var args=()
    if [ "$EX_MODE" = docker ]; then
        docker rm -f "$EX_CONTAINER" >/dev/null 2>&1 || true
        for m in "${EX_MOUNTS[@]}"; do
            IFS=: read -r sub path var <<<"$m"
            args+=(-v "$WORK/$sub:$path")
        done
        for m in "${EX_ENV[@]}"; do args+=(-e "$m"); done
        docker run -d --name "$EX_CONTAINER" "${args[@]}" "$EX_IMAGE" >/dev/null
        EX_SINCE=$(date +%s)
        return
    fi
    for m in "${EX_MOUNTS[@]}"; do
        IFS=: read -r sub path var <<<"$m"
        args+=("$var=$WORK/$sub")
    done
    # A clean environment, as a container gets: only PATH, the mounts, the example's host
    # settings and the test's variables.
    env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
        CTRLINIT_SOCKET="$WORK/ctrlinit.sock" CTRLINIT_CONFIG_DIR="$EX_DIR/conf.d" \
        "${args[@]}" "${EX_HOST_ENV[@]}" "${EX_ENV[@]}" \
        unshare --pid --fork --mount-proc --kill-child "$EX_BIN" \
        >"$WORK/console.$EX_RUN.log" 2>&1 </dev/null &
    EX_PID=$!
}

# ctrlinit's pid on the host (host mode): the child of unshare.
ex_host_pid1() {
    local c
    c=$(cat "/proc/$EX_PID/task/$EX_PID/children" 2>/dev/null) || return 1
    c=${c%% *}
    [ -n "$c" ] && printf '%s\n' "$c"
}

ex_ctl() {
    if [ "$EX_MODE" = docker ]; then
        docker exec "$EX_CONTAINER" /usr/bin/ctrlinit "$@"
    else
        CTRLINIT_SOCKET="$WORK/ctrlinit.sock" "$EX_BIN" "$@"
    fi
}

ex_console() {
    if [ "$EX_MODE" = docker ]; then
        docker logs --since "$EX_SINCE" "$EX_CONTAINER" 2>&1
    else
        cat "$WORK/console.$EX_RUN.log"
    fi
}

_ex_host_gone() { ! kill -0 "$EX_PID" 2>/dev/null; }
_ex_docker_gone() { [ "$(docker inspect -f '{{.State.Running}}' "$EX_CONTAINER" 2>/dev/null)" = false ]; }

ex_wait_exit() {
    EX_EXIT=
    if [ "$EX_MODE" = docker ]; then
        wait_for "$1" _ex_docker_gone || return 1
        EX_EXIT=$(docker inspect -f '{{.State.ExitCode}}' "$EX_CONTAINER")
        return 0
    fi
    wait_for "$1" _ex_host_gone || return 1
    EX_EXIT=0
    wait "$EX_PID" || EX_EXIT=$?
    EX_PID=
}

ex_stop() {
    if [ "$EX_MODE" = docker ]; then
        docker stop -t 10 "$EX_CONTAINER" >/dev/null
        EX_EXIT=$(docker inspect -f '{{.State.ExitCode}}' "$EX_CONTAINER")
        return 0
    fi
    local pid1
    pid1=$(ex_host_pid1) && kill -TERM "$pid1"
    ex_wait_exit 15 || { kill -KILL "$EX_PID" 2>/dev/null; return 1; }
}

# ex_kill: SIGKILL to PID 1 (docker kill): nothing gets to clean up, as in a power cut.
ex_kill() {
    if [ "$EX_MODE" = docker ]; then
        docker kill "$EX_CONTAINER" >/dev/null
    else
        local pid1
        pid1=$(ex_host_pid1) && kill -KILL "$pid1"
    fi
    ex_wait_exit 15
}

ex_restart() {
    if [ "$EX_MODE" = docker ]; then
        EX_SINCE=$(date +%s)
        docker restart -t 10 "$EX_CONTAINER" >/dev/null
        return
    fi
    ex_stop
    ex_start "${EX_ENV[@]}"
}

ex_field() { ex_ctl status --json "$1" | json_field "$2"; }
ex_pid() { ex_field "$1" pid; }

# ex_wait SECS NAME=STATE…: `ctrlinit status --wait` (the init may still be starting: it retries).
ex_wait() {
    local secs=$1
    shift
    ex_ctl status --wait "$@" --timeout "${secs}s" >/dev/null
}

ex_show() {
    say "---- $EX_NAME [$EX_MODE] console (last 60 lines)"
    ex_console | tail -n 60 >&2 || true
}

ex_cleanup() {
    if [ "$EX_MODE" = docker ]; then
        docker rm -f "$EX_CONTAINER" >/dev/null 2>&1 || true
        # Files the container wrote on the bind mounts belong to root: when this runs as
        # another user (in the docker group), a container removes them.
        if [ -n "${WORK:-}" ] && ! rm -rf "$WORK" 2>/dev/null && [ -n "$EX_IMAGE" ]; then
            docker run --rm -v "$WORK:/w" --entrypoint /bin/rm "$EX_IMAGE" -rf /w/ >/dev/null 2>&1 || true
        fi
        local img
        for img in "${EX_OWN_IMAGES[@]}"; do docker rmi -f "$img" >/dev/null 2>&1 || true; done
    elif [ -n "$EX_PID" ]; then
        kill -KILL "$EX_PID" 2>/dev/null || true # --kill-child takes the namespace down
        wait "$EX_PID" 2>/dev/null || true
    fi
    if [ -n "${WORK:-}" ]; then rm -rf "$WORK" 2>/dev/null || true; fi
}

ex_finish() {
    finish_checks "$EX_NAME [$EX_MODE]" && exit 0
    exit 1
}
