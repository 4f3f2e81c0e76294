#!/usr/bin/env bash
# Runs the tests of the three example scenarios (examples/*/test.sh):
#   role-container   provisioning from env (idempotent), ordered services, logs and crashes on the
#                    host, exit 75 when a service keeps failing;
#   netns-holder     the holder dies, its dependents come back after it, in order;
#   ordered-restart  cleanup of stale state, engine -> plugin -> agent, finish hooks deregister.
#
# Each runs directly as PID 1 of a PID namespace (host mode: needs root and unshare, no Docker),
# and, when `docker info` works, also as a real container from its image (docker mode).
#
# Usage: tests/examples.sh [host|docker|both] [NAME…]     (default: both, every example)
#        EXAMPLES_MODE=host tests/examples.sh              (the same, from the environment)
# Binaries: CTRLINIT_BIN (host mode; default cargo's debug build), CTRLINIT_STATIC_BIN and
# CTRLINIT_BASE_IMAGE (docker mode; default: built here once, removed afterwards).
# Exit status: 0 when every example passed (or was skipped), 1 otherwise.
set -eu

REPO=$(cd "$(dirname "$0")/.." && pwd)
. "$REPO/docker/lib.sh"

mode=${EXAMPLES_MODE:-both}
case ${1:-} in host | docker | both) mode=$1; shift ;; esac
names=("$@")
if [ ${#names[@]} -eq 0 ]; then
    for t in "$REPO"/examples/*/test.sh; do names+=("$(basename "$(dirname "$t")")"); done
fi

modes=()
case $mode in
host) modes=(host) ;;
docker) modes=(docker) ;;
both) modes=(host docker) ;;
*)
    say "usage: $0 [host|docker|both] [NAME…]"
    exit 2
    ;;
esac

OWN_IMAGE=
cleanup() {
    if [ -n "$OWN_IMAGE" ]; then docker rmi -f "$OWN_IMAGE" >/dev/null 2>&1 || true; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Build once for all examples.
if [[ " ${modes[*]} " == *" host "* ]]; then
    if [ "$(id -u)" != 0 ]; then
        echo "examples [host]: skipped: unshare --pid needs root"
        modes=("${modes[@]/host/}")
    elif ! command -v unshare >/dev/null 2>&1; then
        echo "examples [host]: FAIL: no unshare (util-linux) on PATH"
        exit 1
    else
        CTRLINIT_BIN=$(ctrlinit_host_bin) || { echo "examples: FAIL: building ctrlinit"; exit 1; }
        export CTRLINIT_BIN
    fi
fi
if [[ " ${modes[*]} " == *" docker "* ]]; then
    if docker_usable; then
        if [ -z "${CTRLINIT_BASE_IMAGE:-}" ]; then
            CTRLINIT_BASE_IMAGE="ctrlinit-examples-base:$$-$(date +%s)"
            OWN_IMAGE=$CTRLINIT_BASE_IMAGE
            if ! build_base_image "$CTRLINIT_BASE_IMAGE" \
                2> >(grep -v -E 'DEPRECATED|BuildKit|environment-variable|^ *$' >&2); then
                echo "examples: FAIL: building the base image"
                exit 1
            fi
        fi
        export CTRLINIT_BASE_IMAGE
    else
        echo "examples [docker]: skipped: $DOCKER_WHY"
        modes=("${modes[@]/docker/}")
    fi
fi

results=()
failed=0
started=$(date +%s)
for name in "${names[@]}"; do
    t=$REPO/examples/$name/test.sh
    if [ ! -x "$t" ]; then
        echo "examples: FAIL: no executable $t"
        failed=1
        continue
    fi
    for m in "${modes[@]}"; do
        [ -n "$m" ] || continue
        echo "==== examples/$name [$m]"
        t0=$(date +%s)
        if "$t" "$m"; then
            results+=("PASS: examples/$name [$m] ($(($(date +%s) - t0)) s)")
        else
            results+=("FAIL: examples/$name [$m] ($(($(date +%s) - t0)) s)")
            failed=1
        fi
    done
done

echo "==== examples: summary ($(($(date +%s) - started)) s)"
printf '%s\n' "${results[@]}"
exit $failed
