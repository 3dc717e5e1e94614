#!/bin/bash
# Benchmark: BFD detection time (3 x 50 ms and 3 x 300 ms, the peer killed
# or its cable cut), the cost of 200 sessions at 3 x 50 ms (alone, then with
# 20,000 checks a second beside) and a 30-minute soak on a lossy link, keepalived
# 2.2.7 and keepalived-rs one after the other on the namespace lab, FRR's
# bfdd measuring in the same runs (benches/bfd.rs has the details). Needs
# root, keepalived and FRR.
#
#   compat-tests/bench-bfd.sh
#   BENCH_CASES (detect,cost; soak, 30 minutes, only when named),
#   BENCH_IMPLS (keepalived,ours), BENCH_SOAK (seconds of the soak, 1800),
#   BENCH_ROUNDS (5), BENCH_WINDOW (seconds of the cost case, 20),
#   BENCH_CHECKS (TCP_CHECKs a second beside in the second cost case, 20000)
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet --bin keepalived --example bench_backends
exec cargo bench --quiet --bench bfd
