#!/usr/bin/env bash
# Containers that share another container's network (issue 22 §1, §3), on the real engines:
#
# Docker: a holder container (`--restart=always`, a FROM-scratch image holding only busybox-static,
# running `httpd`) and two dependents in its namespace (`--network container:HOLDER
# --restart=always`), each with ctrlinit as PID 1 running a program that serves on port 8080:
#   - "watched": [init.network] on_lost = "exit";  - "unwatched": no [init.network].
# `kill -9` of each holder's process: Docker restarts the holder in a new namespace; the watched
# dependent's ctrlinit sees eth0 go, exits 76 after the grace, Docker restarts it in the holder's
# new namespace and its program answers again; the unwatched one stays in the old namespace and
# stays offline (so the test can fail). Prints the time from the kill to the first answer, split
# into: the holder's restart, ctrlinit's detection and grace, the dependent's way down, Docker's
# restart delay, and the program's own start.
#
# Podman (when `podman info` works): the same as a pod, whose infra container holds the
# namespaces; the infra container's process is killed. Shows what Podman does on its own (eth0
# removed, pod Degraded, nothing restarted), what ctrlinit in the app container makes of it
# (exit 76), and the recipe that heals it (`podman pod restart`).
#
# Images are built FROM scratch (docker/lib.sh; nothing is pulled); Podman gets them with
# `podman load` of the same image tarball. Assertions are on answers and log lines, never on
# timings; deadlines are generous. Environment as tests/docker_e2e.sh (CTRLINIT_STATIC_BIN,
# BUSYBOX, CTRLINIT_BASE_IMAGE). Skips, saying why, when neither engine works.
set -eu

REPO=$(cd "$(dirname "$0")/.." && pwd)
. "$REPO/docker/lib.sh"

ID="$$-$(date +%s)"
P="h-netwatch-$ID"
WORK=$(mktemp -d "${TMPDIR:-/tmp}/ctrlinit-netholder.XXXXXX")
GRACE_S=2
OWN_IMAGES=()

now_ms() { echo $(($(date +%s%N) / 1000000)); }
# An RFC 3339 time (Docker's StartedAt, a log timestamp) in epoch milliseconds.
ms_of() { echo $(($(date -d "$1" +%s%N) / 1000000)); }

cleanup() {
    local ids
    if command -v docker >/dev/null 2>&1; then
        ids=$(docker ps -aq --filter "name=^$P-" 2>/dev/null || true)
        # shellcheck disable=SC2086
        [ -z "$ids" ] || docker rm -f $ids >/dev/null 2>&1 || true
        for i in "${OWN_IMAGES[@]}"; do docker rmi -f "$i" >/dev/null 2>&1 || true; done
    fi
    if command -v podman >/dev/null 2>&1; then
        podman pod rm -f "$P-pod" >/dev/null 2>&1 || true
        podman rmi -f "localhost/$P-base:latest" "localhost/$P-holder:latest" >/dev/null 2>&1 || true
    fi
    rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# The dependent's configuration: one program serving /www on 8080; with $1 = watched,
# [init.network] on_lost = "exit".
dependent_conf() {
    local dir=$WORK/$1
    mkdir -p "$dir/conf.d" "$dir/www"
    echo "answer from $1" >"$dir/www/index.html"
    {
        if [ "$1" = watched ]; then
            printf '[init.network]\non_lost = "exit"\ngrace = "%ss"\nexit_code = 76\n\n' "$GRACE_S"
        fi
        printf '[program.web]\ncommand = ["httpd", "-f", "-p", "8080", "-h", "/www"]\n'
    } >"$dir/conf.d/10-test.toml"
}

# A FROM-scratch image with only busybox-static: the holder.
build_holder_image() {
    local tag=$1 bb ctx
    bb=$(busybox_static_bin) || return 1
    ctx=$WORK/holder-image
    mkdir -p "$ctx/rootfs/bin" "$ctx/rootfs/www"
    cp "$bb" "$ctx/rootfs/bin/busybox"
    echo holder >"$ctx/rootfs/www/index.html"
    printf 'FROM scratch\nCOPY rootfs/ /\nENTRYPOINT ["/bin/busybox"]\nCMD ["httpd", "-f", "-p", "8081", "-h", "/www"]\n' >"$ctx/Dockerfile"
    docker build --quiet --tag "$tag" "$ctx" >/dev/null
}

# docker_answers CONTAINER PORT: a request from inside CONTAINER's network namespace (the holder's,
# whichever it is now) to 127.0.0.1:PORT gets the dependent's page. (No `wget -T`: Debian's static
# busybox 1.35 segfaults with it; the host's timeout bounds the request instead.)
docker_answers() {
    timeout 10 docker exec "$1" /bin/busybox wget -q -O - "http://127.0.0.1:$2/" 2>/dev/null | grep -q answer
}

started_ms() { ms_of "$(docker inspect -f '{{.State.StartedAt}}' "$1")"; }
finished_ms() { ms_of "$(docker inspect -f '{{.State.FinishedAt}}' "$1")"; }

docker_scenario() {
    local base holder kind t0 t1
    if [ -n "${CTRLINIT_BASE_IMAGE:-}" ]; then
        base=$CTRLINIT_BASE_IMAGE
    else
        base="$P-base:latest"
        build_base_image "$base" || { fail "docker: build the base image"; return; }
        OWN_IMAGES+=("$base")
    fi
    holder="$P-holder:latest"
    build_holder_image "$holder" || { fail "docker: build the holder image"; return; }
    OWN_IMAGES+=("$holder")
    for kind in watched unwatched; do
        dependent_conf "$kind"
        docker run -d --name "$P-holder-$kind" --restart=always "$holder" >/dev/null
        docker run -d --name "$P-$kind" --network "container:$P-holder-$kind" --restart=always \
            -v "$WORK/$kind/conf.d:/etc/ctrlinit/conf.d:ro" -v "$WORK/$kind/www:/www:ro" \
            "$base" >/dev/null
    done
    for kind in watched unwatched; do
        check "docker: $kind dependent answers through the holder's namespace" \
            wait_for 60 docker_answers "$P-holder-$kind" 8080
    done
    check "docker: the watched dependent's ctrlinit watches eth0" \
        wait_for 30 sh -c "docker logs $P-watched 2>&1 | grep -q 'network: watching eth0'"
    local before_w before_u
    before_w=$(docker inspect -f '{{.State.StartedAt}}' "$P-watched")
    before_u=$(docker inspect -f '{{.State.StartedAt}}' "$P-unwatched")
    t0=$(now_ms)
    kill -9 "$(docker inspect -f '{{.State.Pid}}' "$P-holder-watched")" \
        "$(docker inspect -f '{{.State.Pid}}' "$P-holder-unwatched")"
    if wait_for 120 docker_answers "$P-holder-watched" 8080; then
        t1=$(now_ms)
        pass "docker: after kill -9 of the holder, the watched dependent answers again through the holder's new namespace"
    else
        fail "docker: the watched dependent did not answer again within 120 s"
        docker logs "$P-watched" 2>&1 | tail -n 20 >&2
        return
    fi
    check "docker: its ctrlinit named the interface lost and when" \
        sh -c "docker logs $P-watched 2>&1 | grep -q 'network lost: eth0 gone at .*exit code 76'"
    check "docker: Docker restarted the watched dependent (exit 76)" \
        test "$(docker inspect -f '{{.State.StartedAt}}' "$P-watched")" != "$before_w"
    # The unwatched one: its holder is back (and answers on its own port) while it stays in the
    # old namespace with lo only; give it the watched one's time again and more.
    wait_for 60 sh -c "timeout 10 docker exec $P-holder-unwatched /bin/busybox wget -q -O - http://127.0.0.1:8081/ >/dev/null 2>&1" || true
    if wait_for $(((t1 - t0) / 1000 + 10)) docker_answers "$P-holder-unwatched" 8080; then
        fail "docker: the unwatched dependent answered again (expected it to stay offline)"
    else
        pass "docker: without [init.network], the dependent stays offline in the old namespace"
    fi
    check "docker: the unwatched dependent was never restarted" \
        test "$(docker inspect -f '{{.State.StartedAt}}' "$P-unwatched")" = "$before_u"
    check "docker: it has only lo left" \
        sh -c "! docker exec $P-unwatched /bin/busybox ip -o link | grep -q eth0"
    local holder_up gone lost down up
    holder_up=$(started_ms "$P-holder-watched")
    gone=$(docker logs --timestamps "$P-watched" 2>&1 | grep 'network: eth0 is gone' | tail -n1 | cut -d' ' -f1)
    gone=$(ms_of "$gone")
    lost=$(docker logs --timestamps "$P-watched" 2>&1 | grep 'network lost: eth0' | tail -n1 | cut -d' ' -f1)
    lost=$(ms_of "$lost")
    down=$(finished_ms "$P-watched")
    up=$(started_ms "$P-watched")
    echo "docker: from kill -9 of the holder to the dependent's first answer: $((t1 - t0)) ms"
    echo "  holder restarted by Docker:              +$((holder_up - t0)) ms"
    echo "  eth0 removed by Docker, seen by ctrlinit: +$((gone - t0)) ms"
    echo "  grace (${GRACE_S}s) over, ctrlinit gives up: +$((lost - t0)) ms"
    echo "  dependent's way down (exit 76):          $((down - lost)) ms"
    echo "  Docker's restart delay:                  $((up - down)) ms"
    echo "  program start to first answer (polled):  $((t1 - up)) ms"
}

podman_usable() {
    PODMAN_WHY=
    command -v podman >/dev/null 2>&1 || { PODMAN_WHY="no podman on PATH"; return 1; }
    local err
    if ! err=$(podman info --format '{{.Host.OCIRuntime.Name}}' 2>&1 >/dev/null); then
        PODMAN_WHY="podman info failed: $(printf '%s\n' "$err" | grep -v '^$' | head -n1)"
        return 1
    fi
}

pod_answers() {
    timeout 10 podman exec "$P-pod-infra-probe" /bin/busybox wget -q -O - "http://127.0.0.1:8080/" 2>/dev/null | grep -q answer
}

# docker/build.sh with Podman as its `docker` (what the podman-docker package installs): the
# base image builds, keeps its HEALTHCHECK (docker format), and runs a command.
podman_builds_the_base_image() {
    local shim=$WORK/podman-docker tag="$P-podbuilt:latest" out
    mkdir -p "$shim"
    printf '#!/bin/sh\nexec podman "$@"\n' >"$shim/docker" && chmod +x "$shim/docker"
    if ! PATH="$shim:$PATH" CTRLINIT_STATIC_BIN=$(ctrlinit_static_bin) "$REPO/docker/build.sh" "$tag" \
        >"$WORK/podbuild.log" 2>&1; then
        fail "podman: docker/build.sh with podman as docker: $(tail -n3 "$WORK/podbuild.log")"
        return
    fi
    pass "podman: docker/build.sh builds the base image with podman as docker (podman-docker)"
    check "podman: the image keeps its HEALTHCHECK" \
        quiet grep -q '"Healthcheck"' <(podman inspect "localhost/$tag" 2>/dev/null)
    out=$(podman run --rm --no-healthcheck "localhost/$tag" -- /bin/echo from-podman 2>&1) || true
    check "podman: it runs a command with --no-healthcheck, and says nothing of systemd (got: $out)" \
        test "$out" = from-podman
    podman rmi -f "localhost/$tag" >/dev/null 2>&1 || true
}

podman_scenario() {
    local base=${CTRLINIT_BASE_IMAGE:-$P-base:latest} tar=$WORK/images.tar
    docker save -o "$tar" "$base" "$P-holder:latest" || { fail "podman: docker save"; return; }
    podman load -q -i "$tar" >/dev/null || { fail "podman: podman load"; return; }
    base="docker.io/library/$base"
    podman image exists "$base" || base="localhost/$P-base:latest"
    podman image exists "$base" || base=$(podman images --format '{{.Repository}}:{{.Tag}}' | grep "$P-base" | head -n1)
    dependent_conf watched
    podman pod create --name "$P-pod" >/dev/null
    # A second app container, plain busybox, to ask from inside the pod's namespace.
    podman run -d --pod "$P-pod" --name "$P-pod-infra-probe" --entrypoint /bin/busybox \
        "localhost/$P-holder:latest" sleep 1000000 >/dev/null 2>&1 ||
        podman run -d --pod "$P-pod" --name "$P-pod-infra-probe" --entrypoint /bin/busybox \
            "$P-holder:latest" sleep 1000000 >/dev/null
    podman run -d --pod "$P-pod" --name "$P-pod-app" --restart=always --no-healthcheck \
        -v "$WORK/watched/conf.d:/etc/ctrlinit/conf.d:ro" -v "$WORK/watched/www:/www:ro" \
        "$base" >/dev/null
    check "podman: the app answers in the pod" wait_for 60 pod_answers
    local infra t0
    infra=$(podman pod inspect -f '{{.InfraContainerID}}' "$P-pod")
    t0=$(now_ms)
    kill -9 "$(podman inspect -f '{{.State.Pid}}' "$infra")"
    check "podman: ctrlinit in the app saw eth0 go and gave up (exit 76)" \
        wait_for 60 sh -c "podman logs $P-pod-app 2>&1 | grep -q 'network lost: eth0 gone at .*exit code 76'"
    wait_for 30 sh -c "[ \"\$(podman inspect -f '{{.State.Status}}' $P-pod-app)\" != running ]" || true
    echo "podman: on its own: pod $(podman pod inspect -f '{{.State}}' "$P-pod"), infra $(podman inspect -f '{{.State.Status}}' "$infra"), app $(podman inspect -f '{{.State.Status}} (exit {{.State.ExitCode}}, restarts {{.RestartCount}})' "$P-pod-app")"
    if pod_answers; then
        fail "podman: the app answered before the pod was restarted (Podman healed it on its own?)"
    else
        pass "podman: nothing answers until the pod is restarted (Podman restarts nothing)"
    fi
    podman pod restart "$P-pod" >/dev/null 2>&1 || true
    check "podman: the recipe, podman pod restart, heals it: the app answers again" wait_for 60 pod_answers
    echo "podman: from kill -9 of the infra container to the answer after podman pod restart: $(($(now_ms) - t0)) ms"
}

ran=0
if docker_usable; then
    ran=1
    docker_scenario
else
    echo "network holder (docker): skipped: $DOCKER_WHY"
fi
if [ "$ran" = 1 ] && podman_usable; then
    podman_builds_the_base_image
    podman_scenario
elif [ "$ran" = 1 ]; then
    echo "network holder (podman): skipped: $PODMAN_WHY"
else
    echo "network holder (podman): skipped: its images come from docker save"
fi
finish_checks "network holder"
