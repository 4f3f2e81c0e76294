#!/usr/bin/env bash
# Reproduces benches/RESULTS.md: installs the peers from Debian's packages, builds ctrlinit in
# release mode, and runs benches/compare.py (every init as PID 1 of its own PID namespace).
#
#   sudo benches/run.sh                 # full run: 3 repetitions, ~40 min on 2 vCPUs
#   sudo benches/run.sh --quick         # smoke test: tiny sizes, 1 repetition, < 2 min
#   sudo benches/run.sh --reps 1 --workloads idle,restart --tools ctrlinit,runit
#
# Every argument is passed to compare.py (see `python3 benches/compare.py --help`).
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "$(id -u)" != 0 ]; then
    echo "benches/run.sh: run as root (it installs packages and creates PID namespaces)" >&2
    exit 1
fi

pkgs=(supervisor s6 runit tini dumb-init)
missing=()
for p in "${pkgs[@]}"; do
    dpkg-query -W -f '${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
    # Package scripts must not start anything (there is no init system to ask anyway):
    # policy-rc.d exit 101 makes invoke-rc.d skip every start; removed again if we made it.
    made_policy=""
    if [ ! -e /usr/sbin/policy-rc.d ]; then
        printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d
        chmod +x /usr/sbin/policy-rc.d
        made_policy=1
    fi
    trap '[ -n "$made_policy" ] && rm -f /usr/sbin/policy-rc.d' EXIT
    echo "installing ${missing[*]}" >&2
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
fi

cargo build --release >&2
python3 benches/compare.py "$@"
