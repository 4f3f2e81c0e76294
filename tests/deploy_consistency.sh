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
mutate "another health command" kubernetes.yaml \
    '0,/command: \["\/usr\/bin\/ctrlinit", "health"\]/s//command: ["\/usr\/bin\/ctrlinit", "status"]/' 'does not exec'
mutate "another restart policy" compose.yaml \
    '0,/^    restart: on-failure/s//    restart: always/' "config: compose restart is 'always'"
mutate "Nomad restarts that differ from Swarm's" nomad.hcl \
    '0,/attempts = 10/s//attempts = 3/' 'max_attempts 10 != nomad restart.attempts 3'

exit $failed
