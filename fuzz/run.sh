#!/usr/bin/env bash
# Runs the fuzz targets for a bounded time each, from /work/main (or wherever the repo is).
#
#   fuzz/run.sh [SECONDS] [TARGET...]     default: 300 s each, every target, one after another
#
# Needs the nightly toolchain and cargo-fuzz (`cargo install cargo-fuzz`). The corpus grows in
# fuzz/corpus/<target>/ (not in git), seeded from fuzz/seeds/; crashes land in
# fuzz/artifacts/<target>/. Minimize one with `cargo +nightly fuzz tmin -s none <target> <file>` and
# keep it in tests/fuzz_inputs/<target>/ so `cargo test --test fuzz_regressions` replays it.
#
# Built without a sanitizer (`-s none`): ctrlinit's parsers are safe Rust, and ASan made the
# config targets ~7x slower. Overflow checks and debug assertions stay on.
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-300}
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(config_toml config_bytes protocol units framer run_config)

for t in "${targets[@]}"; do
  case $t in
    config_toml|config_bytes|run_config) seeds=fuzz/seeds/config; args=(-dict=fuzz/dict/config.dict -max_len=8192) ;;
    protocol) seeds=fuzz/seeds/protocol; args=(-dict=fuzz/dict/protocol.dict -max_len=4096) ;;
    units) seeds=fuzz/seeds/units; args=(-dict=fuzz/dict/config.dict -max_len=1024) ;;
    framer) seeds=fuzz/seeds/framer; args=(-max_len=512) ;;
    *) echo "unknown target $t" >&2; exit 2 ;;
  esac
  mkdir -p "fuzz/corpus/$t"
  echo "== $t for ${secs}s"
  cargo +nightly fuzz run -s none "$t" "fuzz/corpus/$t" "$seeds" -- "${args[@]}" \
    -timeout=10 -rss_limit_mb=4096 -max_total_time="$secs" -print_final_stats=1 \
    ${FUZZ_KEEP_GOING:+-fork=1 -ignore_crashes=1}
done
