#!/bin/bash
# Benchmark: VRRP failover and advert spacing, keepalived 2.2.7 and
# keepalived-rs side by side in the namespace lab (benches/vrrp.rs has
# the details). Needs root, keepalived, tcpdump and gcc (the IPVS shim
# that lets keepalived's checker run here).
#
#   compat-tests/bench-vrrp.sh
#   BENCH_RUNS (failovers per case, 3), BENCH_WINDOW (seconds of adverts, 30),
#   BENCH_CHECKS (TCP checks per second of checker load, 20000)
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet --example bench_backends
exec cargo bench --quiet --bench vrrp
