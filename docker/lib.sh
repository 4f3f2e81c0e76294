# shellcheck shell=bash
# Shared helpers for the image build (docker/build.sh), the Docker end-to-end test
# (tests/docker_e2e.sh) and the example tests (examples/*/test.sh). Source it from bash:
#
#     . "$REPO/docker/lib.sh"
#
# What it gives:
#   ctrlinit_static_bin       build (once) and print the path of a static ctrlinit (images)
#   ctrlinit_host_bin         build and print the path of an ordinary ctrlinit (host runs)
#   busybox_static_bin        print the path of a static busybox (Debian's busybox-static)
#   build_base_image TAG      assemble the FROM-scratch root filesystem and build the base image
#   docker_usable             0 when a Docker daemon answers; else sets DOCKER_WHY
#   pass / fail / check       PASS:/FAIL: lines and counters; finish_checks prints the tally
#   quiet CMD...              CMD with its output discarded
#   wait_for SECS CMD...      poll CMD until it succeeds or the deadline passes (no fixed sleeps)
#   line_of FILE PATTERN      line number of the first line matching PATTERN (grep -E), or empty

# The repository root (this file lives in docker/).
REPO=${REPO:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}

# No BuildKit here (no buildx plugin, and nothing may be pulled): the classic builder resolves
# FROM of a local image without a registry.
export DOCKER_BUILDKIT=0

PASSES=${PASSES:-0}
FAILS=${FAILS:-0}

say() { printf '%s\n' "$*" >&2; }

pass() {
    PASSES=$((PASSES + 1))
    printf 'PASS: %s\n' "$*"
}

fail() {
    FAILS=$((FAILS + 1))
    printf 'FAIL: %s\n' "$*"
}

# check DESCRIPTION CMD...: PASS when CMD succeeds, FAIL otherwise.
check() {
    local what=$1
    shift
    if "$@"; then pass "$what"; else fail "$what"; fi
}

# quiet CMD...: runs CMD with its output discarded (for `check` lines).
quiet() { "$@" >/dev/null 2>&1; }

# Prints the tally; returns non-zero when anything failed.
finish_checks() {
    local name=$1
    printf '%s: %d passed, %d failed\n' "$name" "$PASSES" "$FAILS"
    [ "$FAILS" -eq 0 ]
}

# wait_for SECONDS CMD...: runs CMD until it succeeds (0) or SECONDS pass (1). Polls every
# 100 ms: the deadline bounds the wait, nothing relies on a pause being long enough.
wait_for() {
    local secs=$1
    shift
    local deadline=$(($(date +%s%N) / 1000000 + secs * 1000))
    while :; do
        if "$@"; then return 0; fi
        if [ $(($(date +%s%N) / 1000000)) -ge "$deadline" ]; then return 1; fi
        sleep 0.1
    done
}

# line_of FILE PATTERN: the number of the first line of FILE matching the extended regex.
line_of() {
    grep -n -E -m1 -- "$2" "$1" 2>/dev/null | cut -d: -f1
}

# before FILE PATTERN_A PATTERN_B: both lines exist and the first A comes before the first B.
before() {
    local a b
    a=$(line_of "$1" "$2")
    b=$(line_of "$1" "$3")
    [ -n "$a" ] && [ -n "$b" ] && [ "$a" -lt "$b" ]
}

# after_line FILE N PATTERN: a line matching PATTERN exists after line N.
after_line() {
    tail -n +"$(($2 + 1))" "$1" | grep -q -E -- "$3"
}

# json_field FIELD: reads `ctrlinit status --json NAME` output on stdin and prints the
# top-level FIELD of the first program (numbers, strings, booleans, null).
json_field() {
    sed -n "s/^    \"$1\": \"\{0,1\}\([^\",]*\)\"\{0,1\},\{0,1\}\$/\1/p" | head -n1
}

# Where cargo puts what it builds: $CARGO_TARGET_DIR when set (relative to the repository,
# where cargo runs), else the repository's target/.
cargo_target_dir() {
    case ${CARGO_TARGET_DIR:-} in
        "") printf '%s\n' "$REPO/target" ;;
        /*) printf '%s\n' "$CARGO_TARGET_DIR" ;;
        *) printf '%s\n' "$REPO/$CARGO_TARGET_DIR" ;;
    esac
}

# The static binary: $CTRLINIT_STATIC_BIN when set, else built with cargo (crt-static, glibc).
# User lookups by name go through glibc's built-in files backend: images need /etc/passwd and
# /etc/group, which the base image has.
ctrlinit_static_bin() {
    if [ -n "${CTRLINIT_STATIC_BIN:-}" ]; then
        [ -x "$CTRLINIT_STATIC_BIN" ] || { say "CTRLINIT_STATIC_BIN=$CTRLINIT_STATIC_BIN is not executable"; return 1; }
        printf '%s\n' "$CTRLINIT_STATIC_BIN"
        return 0
    fi
    if ! command -v cargo >/dev/null 2>&1 || ! command -v rustc >/dev/null 2>&1; then
        say "cargo/rustc not on PATH: cannot build a static ctrlinit (or set CTRLINIT_STATIC_BIN)"
        return 1
    fi
    local triple
    triple=$(rustc -vV | sed -n 's/^host: //p')
    say "building a static ctrlinit (cargo build --release --target $triple, +crt-static)"
    (cd "$REPO" && RUSTFLAGS="-C target-feature=+crt-static" \
        cargo build --quiet --release --target "$triple") >&2 || return 1
    local bin
    bin="$(cargo_target_dir)/$triple/release/ctrlinit"
    # Its checksum beside it, as a release would publish it (`sha256sum -c ctrlinit.sha256`
    # in that directory checks a copy).
    (cd "$(dirname "$bin")" && sha256sum ctrlinit >ctrlinit.sha256) || return 1
    printf '%s\n' "$bin"
}

# A ctrlinit for running on this host (examples' host mode): $CTRLINIT_BIN when set, else the
# ordinary (dynamically linked) debug build, which `cargo test` has usually built already. Not
# the static one: a static glibc binary must not load the host's NSS modules (a user or group
# lookup that falls through `files` to e.g. `systemd` in /etc/nsswitch.conf crashes it).
ctrlinit_host_bin() {
    if [ -n "${CTRLINIT_BIN:-}" ]; then
        [ -x "$CTRLINIT_BIN" ] || { say "CTRLINIT_BIN=$CTRLINIT_BIN is not executable"; return 1; }
        printf '%s\n' "$CTRLINIT_BIN"
        return 0
    fi
    if ! command -v cargo >/dev/null 2>&1; then
        say "cargo not on PATH: cannot build ctrlinit (or set CTRLINIT_BIN)"
        return 1
    fi
    (cd "$REPO" && cargo build --quiet --bin ctrlinit) >&2 || return 1
    printf '%s\n' "$(cargo_target_dir)/debug/ctrlinit"
}

# A static busybox: $BUSYBOX, else /bin/busybox (Debian's busybox-static installs it there).
busybox_static_bin() {
    local bb=${BUSYBOX:-/bin/busybox}
    if [ ! -x "$bb" ]; then
        say "no busybox at $bb: install Debian's busybox-static (apt-get install -y busybox-static)"
        return 1
    fi
    # A dynamically linked busybox names its program interpreter (ld-linux…) in its header.
    if head -c 4096 "$bb" | grep -q -a 'ld-linux'; then
        say "$bb is dynamically linked: install busybox-static (apt-get install -y busybox-static)"
        return 1
    fi
    printf '%s\n' "$bb"
}

# build_base_image TAG: a FROM-scratch image with /usr/bin/ctrlinit, /bin/busybox and links for
# every applet (/bin/sh, sleep, nc, httpd …), /etc/passwd and /etc/group, /tmp, /run and the
# default log and crash directories. docker build gets only that root filesystem as context.
build_base_image() {
    local tag=$1 bin bb ctx applet
    bin=$(ctrlinit_static_bin) || return 1
    bb=$(busybox_static_bin) || return 1
    ctx=$(mktemp -d "${TMPDIR:-/tmp}/ctrlinit-base.XXXXXX") || return 1
    local r=$ctx/rootfs rc=0
    # (Checked step by step: `set -e` does not apply inside a function called from `if` or `||`.)
    mkdir -p "$r/bin" "$r/usr/bin" "$r/etc/ctrlinit/conf.d" "$r/tmp" "$r/run" "$r/root" \
        "$r/var/log/ctrlinit" "$r/var/crash/ctrlinit" "$r/var/tmp" &&
        cp "$bin" "$r/usr/bin/ctrlinit" &&
        cp "$bb" "$r/bin/busybox" &&
        cp "$REPO/docker/etc/passwd" "$REPO/docker/etc/group" "$r/etc/" &&
        chmod 1777 "$r/tmp" "$r/var/tmp" &&
        cp "$REPO/docker/Dockerfile" "$ctx/Dockerfile" || rc=1
    if [ $rc -eq 0 ]; then
        for applet in $("$bb" --list); do
            [ "$applet" = busybox ] || ln -s busybox "$r/bin/$applet" || rc=1
        done
    fi
    if [ $rc -eq 0 ]; then
        # Podman (podman-docker's `docker`) writes OCI images by default, which drop the
        # HEALTHCHECK; its docker format keeps it.
        local format=()
        docker --version 2>/dev/null | grep -qi podman && format=(--format docker)
        docker build --quiet "${format[@]}" --tag "$tag" "$ctx" >/dev/null || rc=1
    fi
    rm -rf "$ctx"
    return $rc
}

# docker_usable: 0 when `docker info` works; otherwise 1 with the reason in DOCKER_WHY.
docker_usable() {
    DOCKER_WHY=
    if ! command -v docker >/dev/null 2>&1; then
        DOCKER_WHY="no docker command on PATH"
        return 1
    fi
    local err
    # Plain `docker info`: Podman's (podman-docker) has no .ServerVersion for a --format.
    if ! err=$(docker info 2>&1 >/dev/null); then
        DOCKER_WHY="docker info failed: $(printf '%s\n' "$err" | grep -v '^$' | head -n1)"
        return 1
    fi
    return 0
}
