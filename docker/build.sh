#!/usr/bin/env bash
# Builds the shared ctrlinit base image, FROM scratch, without the network:
#   1. a static ctrlinit (cargo, glibc with +crt-static), or $CTRLINIT_STATIC_BIN;
#   2. Debian's static busybox ($BUSYBOX, default /bin/busybox from busybox-static) with a link
#      for every applet;
#   3. /etc/passwd and /etc/group from docker/etc (root, app = 1000, nobody);
#   4. docker build with docker/Dockerfile (ENTRYPOINT /usr/bin/ctrlinit, HEALTHCHECK ctrlinit health).
#
# Usage: docker/build.sh [TAG]        (default TAG: ctrlinit-base:latest)
#
# Then build a role image FROM it, e.g. `docker build -t role examples/role-container`
# (each example's Dockerfile takes --build-arg BASE=TAG when the tag differs).
set -eu
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"

tag=${1:-ctrlinit-base:latest}
docker_usable || { say "docker/build.sh: $DOCKER_WHY"; exit 1; }
build_base_image "$tag" || { say "docker/build.sh: building $tag failed"; exit 1; }
say "built $tag"
# The static binary the image holds, for a Dockerfile's COPY --from=$tag or a download.
bin=$(ctrlinit_static_bin)
say "static binary: $bin (sha256 $(cut -d' ' -f1 "$bin.sha256" 2>/dev/null || sha256sum "$bin" | cut -d' ' -f1))"
docker image ls "$tag"
