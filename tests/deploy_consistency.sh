#!/usr/bin/env bash
# The deployment's files agree (deploy/check_consistency.py: roles' conf.d, roles.yaml +
# compose.yaml + stack.yaml, kubernetes.yaml, nomad.hcl), and the check can fail: each mutation
# below, made in a copy of deploy/, must be caught with a message naming it. Fast, no Docker.
# Needs python3 (3.11) and python3-yaml.
set -eu
REPO=$(cd "$(dirname "$0")/.." && pwd)
check=$REPO/deploy/check_consistency.py
failed=0

if python3 "$check" "$REPO/deploy"; then
    echo "PASS: deploy/ files agree"
else
    echo "FAIL: deploy/ files disagree"
    exit 1
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/ctrlinit-consistency.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# mutate WHAT FILE SED EXPECTED: in a fresh copy, FILE edited by SED must fail with EXPECTED.
mutate() {
    local what=$1 file=$2 expr=$3 expected=$4 out
    rm -rf "$tmp/deploy"
    cp -R "$REPO/deploy" "$tmp/deploy"
    sed -i "$expr" "$tmp/deploy/$file"
    if cmp -s "$REPO/deploy/$file" "$tmp/deploy/$file"; then
        echo "FAIL: mutation '$what' changed nothing in $file (fix the test)"
        failed=1
        return
    fi
    if out=$(python3 "$check" "$tmp/deploy" 2>&1); then
        echo "FAIL: the check accepted: $what"
        failed=1
    elif printf '%s\n' "$out" | grep -q -- "$expected"; then
        echo "PASS: caught: $what ($(printf '%s\n' "$out" | grep -m1 -- "$expected" | sed 's/^ *FAIL: //'))"
    else
        echo "FAIL: '$what' failed without saying '$expected': $out"
        failed=1
    fi
}

mutate "config's Kubernetes grace period 11 -> 12" kubernetes.yaml \
    '0,/terminationGracePeriodSeconds: 11/s//terminationGracePeriodSeconds: 12/' \
    'config: kubernetes terminationGracePeriodSeconds is 12s'
mutate "control's Nomad kill_timeout 9s -> 10s" nomad.hcl \
    's/kill_timeout = "9s"/kill_timeout = "10s"/' 'control: nomad kill_timeout is 10s'
mutate "web's stop_grace_period 8s -> 10s" roles.yaml \
    's/stop_grace_period: 8s/stop_grace_period: 10s/' 'web: compose/swarm stop_grace_period is 10s'
mutate "config's stop budget 8s -> 9s without the engines" roles/config/conf.d/00-init.toml \
    's/^stop_timeout = "8s"/stop_timeout = "9s"/' 'config: compose/swarm stop_grace_period is 11s'
mutate "redis's stop_timeout past the role's budget" roles/config/conf.d/20-store.toml \
    's/^stop_timeout = "4s"/stop_timeout = "6s"/' 'is less than its longest stop chain, 9s'
mutate "an environment value in one engine" nomad.hcl \
    's/REDIS_MAXMEMORY          = "64mb"/REDIS_MAXMEMORY          = "32mb"/' 'REDIS_MAXMEMORY differs'
mutate "a variable missing in one engine" kubernetes.yaml \
    '/name: SEQUENCE_INTERVAL/d' 'kubernetes lacks'
mutate "another image" kubernetes.yaml \
    's/image: ctrlinit-deploy-web:latest/image: ctrlinit-deploy-web:1.0/' 'web: images differ'
# Liveness is not readiness: an engine that restarts the container on a check must ask /livez
# (ctrlinit health --live), or it kills a container whose program restarts within its budget.
mutate "Kubernetes liveness on /readyz" kubernetes.yaml \
    '/livenessProbe:/{n;s|path: /livez|path: /readyz|}' 'kubernetes livenessProbe is not httpGet /livez'
mutate "the Swarm/compose HEALTHCHECK back to readiness" roles.yaml \
    's/"health", "--live"\]/"health"]/' 'Swarm replaces an unhealthy task'
mutate "the image's HEALTHCHECK back to readiness" roles/Dockerfile \
    's/"health", "--live"\]/"health"]/' "roles/Dockerfile's HEALTHCHECK is not CMD"
mutate "Nomad's check_restart on the readiness check" nomad.hcl \
    '0,/args     = \["health", "--live"\]/s//args     = ["health"]/' 'check_restart must be on one check'
mutate "a Kubernetes probe address that differs from the role's port" kubernetes.yaml \
    's/value: "0.0.0.0:9101"/value: "0.0.0.0:9109"/' 'config: kubernetes PROBE_ADDR is 0.0.0.0:9109, not 0.0.0.0:9101'
mutate "the probe endpoint on the loopback in Kubernetes" kubernetes.yaml \
    's/value: "0.0.0.0:9102"/value: "127.0.0.1:9102"/' 'control: kubernetes PROBE_ADDR is 127.0.0.1:9102, not 0.0.0.0:9102'
mutate "two roles on one probe port" roles/web/conf.d/00-init.toml \
    's/127.0.0.1:9103}/127.0.0.1:9102}/' "probe port 9102 is another role's too"
mutate "another restart policy" compose.yaml \
    '0,/^    restart: on-failure/s//    restart: always/' "config: compose restart is 'always'"
mutate "Nomad restarts that differ from Swarm's" nomad.hcl \
    '0,/attempts = 10/s//attempts = 3/' 'max_attempts 10 != nomad restart.attempts 3'
# The roles follow config's api through its ctrlinit (external config-api at CONFIG_PEER).
mutate "control's CONFIG_PEER on another port than config's probe endpoint" nomad.hcl \
    '0,/CONFIG_PEER              = "http:\/\/config.service.consul:9101"/s//CONFIG_PEER              = "http:\/\/config.service.consul:9102"/' \
    "nomad CONFIG_PEER is 'http://config.service.consul:9102', not http://HOST:9101"
mutate "an external following a program config does not have" roles/web/conf.d/05-config-api.toml \
    's/^program = "api"/program = "apii"/' "follows program 'apii', which config does not have"
mutate "config's probe endpoint back on the loopback (the peers cannot reach it)" roles.yaml \
    's/PROBE_ADDR: 0.0.0.0:9101/PROBE_ADDR: 127.0.0.1:9101/' 'compose/swarm PROBE_ADDR is 127.0.0.1:9101, not 0.0.0.0:9101'

exit $failed
