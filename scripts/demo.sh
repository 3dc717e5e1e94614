#!/usr/bin/env bash
# The main job on any machine (no root, no IPVS): two local web backends,
# keepalived-rs checking them with HTTP_GET and programming the dry-run
# backend. One backend is stopped and started again, so the table is seen to
# follow; then the daemon is stopped. About 20 seconds.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet --bin keepalived --example bench_backends
WORK=$(mktemp -d)
trap 'jobs -p | xargs -r kill 2>/dev/null; rm -rf "$WORK"; true' EXIT
echo "127.0.0.1 8081 http" > "$WORK/a"
echo "127.0.0.1 8082 http" > "$WORK/b"
backend() { ./target/release/examples/bench_backends "$1" > /dev/null 2>&1 & echo $!; }
A=$(backend "$WORK/a")
B=$(backend "$WORK/b")
sleep 0.5
./target/release/keepalived --dry-run -n -l -f examples/nat-http.conf &
K=$!
sleep 5
echo "### demo: stopping the backend on 127.0.0.1:8082"
kill "$B"
sleep 7
echo "### demo: starting it again"
B=$(backend "$WORK/b")
sleep 6
echo "### demo: stopping keepalived-rs"
kill -INT "$K"
wait "$K"
