#!/usr/bin/env bash
# Parse + validation of a 50,000-real-server config (500 virtual servers), ours
# against keepalived 2.2.7's `-t`, in the same run; prints both and the ratio.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -q
tmp=$(mktemp -d)
python3 - "$tmp/big.conf" <<'PY'
import sys
with open(sys.argv[1], "w") as f:
    for v in range(500):
        f.write(f"virtual_server 192.0.2.{v % 250 + 1} {80 + v // 250} {{\n  lb_algo wlc\n  lb_kind NAT\n  protocol TCP\n  delay_loop 1\n")
        for r in range(100):
            f.write(f"  real_server 192.0.2.{r + 1} {8000 + v} {{\n    weight 1\n    TCP_CHECK {{\n      connect_timeout 2\n    }}\n  }}\n")
        f.write("}\n")
PY
# Alternating rounds, medians: this host's timings drift by a third between
# minutes, so each figure is the median of ROUNDS runs taken in turn.
ROUNDS=${ROUNDS:-7}
t() { local s=$(date +%s%N); "$@" >/dev/null 2>&1 || true; echo $(( $(date +%s%N) - s )); }
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR + 1) / 2)]}'; }
: > "$tmp/ours"; : > "$tmp/theirs"
for ((i = 0; i < ROUNDS; i++)); do
    t ./target/release/keepalived -t -f "$tmp/big.conf" >> "$tmp/ours"
    t /usr/sbin/keepalived -t -f "$tmp/big.conf" >> "$tmp/theirs"
done
ours=$(median < "$tmp/ours")
theirs=$(median < "$tmp/theirs")
printf 'config: 500 virtual servers, 50000 real servers (%s bytes)\n' "$(stat -c %s "$tmp/big.conf")"
python3 - "$ours" "$theirs" "$ROUNDS" <<'PY2'
import sys
ours, theirs, rounds = int(sys.argv[1]) / 1e6, int(sys.argv[2]) / 1e6, sys.argv[3]
print(f"keepalived-rs -t: {ours:.1f} ms (median of {rounds})")
print(f"keepalived 2.2.7 -t: {theirs:.1f} ms (median of {rounds})")
print(f"ratio (keepalived / ours): {theirs / ours:.1f}x")
PY2
rm -rf "$tmp"
