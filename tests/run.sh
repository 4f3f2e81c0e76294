#!/usr/bin/env bash
# Runs every check of the project, as CI does (after .ci/run installed the packages): format and
# lint, the book (mdbook build docs, and no broken internal link), the deployment files'
# agreement (tests/deploy_consistency.sh), unit and integration tests
# (the real binary as PID 1 of fresh PID namespaces, the chaos suite's short run, fuzz
# regressions), the background examples, the Docker end-to-end script (skipped, saying why, when
# Docker does not work), and the Criterion benchmarks in smoke mode. (.ci/run then runs the
# deployment scenario, deploy/test.sh.)
# Needs root (PID namespaces, setpriv).
set -euo pipefail
self=$(realpath "$0")
cd "$(dirname "$0")/.."

# Every step, in order: when one fails, the ones after it are named as skipped, so a failed run
# says what it did not check.
mapfile -t STEPS < <(sed -n 's/^step "\(.*\)"$/\1/p' "$self")
current=-1
step() {
    current=$((current + 1))
    printf '\n=== %s ===\n' "$*"
}
skipped() {
    local rc=$? i
    [ "$rc" -eq 0 ] && return
    printf '\ntests/run.sh: step "%s" failed (status %s); not run:\n' "${STEPS[$current]:-setup}" "$rc" >&2
    for ((i = current + 1; i < ${#STEPS[@]}; i++)); do printf '  - %s\n' "${STEPS[$i]}" >&2; done
    [ $((current + 1)) -lt ${#STEPS[@]} ] || printf '  (none: it was the last step)\n' >&2
}
trap skipped EXIT
started=$(date +%s)

step "format and lint"
cargo fmt --all -- --check
cargo clippy --all-targets -- -D warnings

step "the book builds, with no broken internal link (mdbook build docs, tests/book_links.py)"
mdbook build docs
python3 tests/book_links.py --html docs/book

step "deployment files agree (deploy/: conf.d, compose, swarm, kubernetes, nomad)"
tests/deploy_consistency.sh

step "unit and integration tests"
log=$(mktemp /tmp/ctrlinit-test.XXXXXX.log)
if ! cargo test --no-fail-fast -- --nocapture >"$log" 2>&1; then
    grep -E '^test .*FAILED|panicked at' "$log" | head -50
    grep -E -A60 '^---- ' "$log" | head -600
    echo "tests failed (full log: $log)" >&2
    exit 1
fi
grep -E '^(     Running|test result)|^chaos' "$log"

step "install (cargo install --locked, as docs/src/guide/install.md says)"
# Into a scratch root, from the debug build the tests just made (the same target directory, so
# nothing is rebuilt twice); offline: the locked crates are the ones the tests built with.
root=$(mktemp -d /tmp/ctrlinit-install.XXXXXX)
cargo install --quiet --locked --offline --debug --path . --root "$root" --target-dir target
"$root/bin/ctrlinit" --version | grep -q '^ctrlinit '
"$root/bin/ctrlinit" check --config-dir conf.d >/dev/null
rm -rf "$root"
echo "cargo install --locked: ctrlinit installed and ran"

step "background examples"
tests/examples.sh

step "docker end to end"
tests/docker_e2e.sh

step "containers that share another container's network (docker, podman)"
tests/network_holder.sh

step "benchmarks (smoke)"
# A target directory of their own: the bench profile would otherwise relink target/release/ctrlinit
# with its own settings, and the side-by-side benchmark measures that binary.
for b in benches/*.rs; do
    name=$(basename "$b" .rs)
    CARGO_TARGET_DIR=target/bench-smoke cargo bench --bench "$name" -- --warm-up-time 0.1 --measurement-time 0.2 --sample-size 10 >/dev/null
    echo "bench $name: ok"
done

echo
echo "all checks passed in $(( $(date +%s) - started )) s"
