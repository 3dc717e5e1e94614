#!/bin/bash
# Benchmark: VRRP at scale and under a flood, keepalived 2.2.7 and
# keepalived-rs one after the other on the same namespaces
# (benches/vrrp_scale.rs has the details). Needs root, keepalived and
# tcpdump.
#
#   compat-tests/bench-vrrp-scale.sh
#   BENCH_CASES (1,50,200,1000,v3,flood), BENCH_IMPLS (keepalived,ours),
#   BENCH_WINDOW (seconds measured per case, 30; 600 for the ten-minute
#   run), BENCH_FLOOD (seconds of flood, 60)
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet --bin keepalived --example vrrp_flood
exec cargo bench --quiet --bench vrrp_scale
