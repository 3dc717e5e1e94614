#!/usr/bin/env bash
# Runs the loader's fuzz target (fuzz/fuzz_targets/load.rs) for a bounded
# time: ./scripts/fuzz.sh [SECONDS] (default 60). libFuzzer, on stable Rust:
# the coverage instrumentation cargo-fuzz would add, without a sanitizer.
# A crash, a hang (an input over 10 s) or an input over 2 GiB fails it.
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-60}
target_dir=${FUZZ_TARGET_DIR:-target/fuzz}
triple=$(rustc -vV | sed -n 's/^host: //p')
export RUSTFLAGS="-Cpasses=sancov-module -Cllvm-args=-sanitizer-coverage-level=4 \
-Cllvm-args=-sanitizer-coverage-inline-8bit-counters -Cllvm-args=-sanitizer-coverage-pc-table \
-Cllvm-args=-sanitizer-coverage-trace-compares --cfg fuzzing"
(cd fuzz && cargo build --release --quiet --target "$triple" --target-dir "../$target_dir")
corpus=$(mktemp -d)
trap 'rm -rf "$corpus"' EXIT
cp tests/fixtures/valid/*.conf examples/*.conf "$corpus"/
"$target_dir/$triple/release/load" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
    -max_len=4096 -print_final_stats=1 "$corpus" 2>&1 | tail -n 12
