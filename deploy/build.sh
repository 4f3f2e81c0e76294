#!/usr/bin/env bash
# Builds the deployment's images, from Debian's packages, without any registry:
#
#   1. the base image ${DEPLOY_IMAGE_PREFIX}-base:<hash>: a minimal Debian root file system made
#      by mmdebstrap (--variant=minbase, bookworm, the packages of deploy/packages.txt; docs,
#      man pages and locales left out) and `docker import`ed. <hash> is derived from the package
#      list and this recipe: when an image with that tag exists, nothing is rebuilt
#      (DEPLOY_REBUILD_BASE=1 forces a new one, e.g. for the latest security updates);
#   2. a static ctrlinit (docker/lib.sh's ctrlinit_static_bin: cargo, +crt-static, or
#      $CTRLINIT_STATIC_BIN);
#   3. one image per role, ${DEPLOY_IMAGE_PREFIX}-{config,control,web}:${DEPLOY_TAG}, FROM the
#      base: ctrlinit as PID 1, the role's conf.d and programs (roles/ROLE/bin and the shared
#      roles/common/bin, in /opt/role/bin; deploy/roles/Dockerfile; the build
#      runs `ctrlinit check --strict`, so a config error or a missing command fails it here).
#
# Usage: deploy/build.sh               (needs root for mmdebstrap, Docker, cargo or CTRLINIT_STATIC_BIN)
# Environment: DEPLOY_IMAGE_PREFIX (ctrlinit-deploy), DEPLOY_TAG (latest), DEPLOY_MIRROR
# (http://deb.debian.org/debian), DEPLOY_SECURITY_MIRROR (http://deb.debian.org/debian-security).
# Prints the images it built or reused; exit status 1 on any failure.
set -euo pipefail

DEPLOY=$(cd "$(dirname "$0")" && pwd)
. "$DEPLOY/../docker/lib.sh"

PREFIX=${DEPLOY_IMAGE_PREFIX:-ctrlinit-deploy}
TAG=${DEPLOY_TAG:-latest}
MIRROR=${DEPLOY_MIRROR:-http://deb.debian.org/debian}
SECURITY_MIRROR=${DEPLOY_SECURITY_MIRROR:-http://deb.debian.org/debian-security}
SUITE=bookworm
ROLES=(config control web)

die() {
    say "deploy/build.sh: $*"
    exit 1
}

docker_usable || die "$DOCKER_WHY"
command -v mmdebstrap >/dev/null 2>&1 || die "no mmdebstrap: apt-get install -y mmdebstrap"

# The packages: deploy/packages.txt without comments and blank lines, sorted.
packages=$(sed -e 's/#.*//' -e 's/[[:space:]]//g' -e '/^$/d' "$DEPLOY/packages.txt" | sort -u)
[ -n "$packages" ] || die "deploy/packages.txt lists no package"

# Everything that decides the root file system's content, except the mirror (the same packages
# from another mirror are the same packages). The hash of this text names the base image.
# merged-usr: set /usr up as bookworm expects without the usrmerge package (and the perl it pulls).
mmdebstrap_args=(
    --variant=minbase
    --include="$(printf '%s\n' "$packages" | paste -s -d, -)"
    --hook-dir=/usr/share/mmdebstrap/hooks/merged-usr
    --dpkgopt='path-exclude=/usr/share/man/*'
    --dpkgopt='path-exclude=/usr/share/doc/*'
    --dpkgopt='path-include=/usr/share/doc/*/copyright'
    --dpkgopt='path-exclude=/usr/share/locale/*'
    --dpkgopt='path-exclude=/usr/share/info/*'
)
recipe=$(printf 'ctrlinit deploy base, recipe 1\nsuite %s\ncomponents main\n' "$SUITE"
    printf '%s\n' "${mmdebstrap_args[@]}")
hash=$(printf '%s\n' "$recipe" | sha256sum | cut -c1-64)
BASE="$PREFIX-base:${hash:0:12}"

if [ "${DEPLOY_REBUILD_BASE:-0}" != 1 ] && docker image inspect "$BASE" >/dev/null 2>&1; then
    say "base image $BASE exists (same package list and recipe): reused"
else
    say "building base image $BASE: mmdebstrap $SUITE minbase + $(printf '%s\n' "$packages" | paste -s -d' ' -)"
    tmp=$(mktemp -d "${TMPDIR:-/tmp}/ctrlinit-deploy-base.XXXXXX")
    trap 'rm -rf "$tmp"' EXIT
    t0=$(date +%s)
    if ! mmdebstrap --quiet "${mmdebstrap_args[@]}" "$SUITE" "$tmp/rootfs.tar" \
        "deb $MIRROR $SUITE main" "deb $MIRROR $SUITE-updates main" \
        "deb $SECURITY_MIRROR $SUITE-security main" >"$tmp/mmdebstrap.log" 2>&1; then
        tail -n 30 "$tmp/mmdebstrap.log" >&2
        die "mmdebstrap failed"
    fi
    # Imported under a temporary name and tagged only once complete: a failed import never
    # leaves an image under the cached name.
    docker import \
        --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
        --change "LABEL org.ctrlinit.deploy.recipe=$hash" \
        --change "LABEL org.ctrlinit.deploy.packages=$(printf '%s\n' "$packages" | paste -s -d, -)" \
        "$tmp/rootfs.tar" "$BASE-partial" >/dev/null || die "docker import failed"
    docker tag "$BASE-partial" "$BASE" || die "tagging $BASE failed"
    docker rmi "$BASE-partial" >/dev/null
    rm -rf "$tmp"
    trap - EXIT
    say "built $BASE in $(($(date +%s) - t0)) s"
fi

bin=$(ctrlinit_static_bin) || die "building the static ctrlinit failed"

ctx=$(mktemp -d "${TMPDIR:-/tmp}/ctrlinit-deploy-role.XXXXXX")
trap 'rm -rf "$ctx"' EXIT
for role in "${ROLES[@]}"; do
    rm -rf "${ctx:?}"/*
    cp "$bin" "$ctx/ctrlinit"
    cp "$DEPLOY/roles/Dockerfile" "$ctx/Dockerfile"
    cp -R "$DEPLOY/roles/$role/conf.d" "$ctx/"
    mkdir "$ctx/bin"
    cp "$DEPLOY/roles/common/bin/"* "$DEPLOY/roles/$role/bin/"* "$ctx/bin/"
    t0=$(date +%s%N)
    if ! out=$(docker build --quiet --build-arg "BASE=$BASE" --build-arg "ROLE=$role" \
        --tag "$PREFIX-$role:$TAG" "$ctx" 2>&1); then
        printf '%s\n' "$out" | grep -v -E 'DEPRECATED|BuildKit|environment-variable|^ *$' >&2
        die "building the $role image failed"
    fi
    say "built $PREFIX-$role:$TAG ($((($(date +%s%N) - t0) / 1000000)) ms)"
done
docker image ls --format '{{.Repository}}:{{.Tag}}  {{.Size}}' | grep -E "^$PREFIX-" | sort >&2
