#!/bin/bash
# Benchmark: BFD detection time (3 x 50 ms and 3 x 300 ms, the peer killed
# or its cable cut) and the cost of 200 sessions at 3 x 50 ms, keepalived
# 2.2.7 and keepalived-rs one after the other on the namespace lab, FRR's
# bfdd measuring in the same runs (benches/bfd.rs has the details). Needs
# root, keepalived and FRR.
#
#   compat-tests/bench-bfd.sh
#   BENCH_CASES (detect,cost), BENCH_IMPLS (keepalived,ours),
#   BENCH_ROUNDS (5), BENCH_WINDOW (seconds of the cost case, 20)
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet --bin keepalived
exec cargo bench --quiet --bench bfd
