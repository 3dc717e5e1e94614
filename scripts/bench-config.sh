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
        f.write(f"virtual_server 10.{v // 250}.{v % 250}.1 80 {{\n  lb_algo wlc\n  lb_kind NAT\n  protocol TCP\n  delay_loop 1\n")
        for r in range(100):
            f.write(f"  real_server 10.200.{v % 250}.{r + 1} {8000 + v // 250} {{\n    weight 1\n    TCP_CHECK {{\n      connect_timeout 2\n    }}\n  }}\n")
        f.write("}\n")
PY
command -v bc >/dev/null || { echo "needs bc (apt-get install bc)"; exit 1; }
t() { local s=$(date +%s.%N); "$@" >/dev/null 2>&1 || true; echo "$(date +%s.%N) - $s" | bc; }
ours=$(t ./target/release/keepalived -t -f "$tmp/big.conf")
theirs=$(t /usr/sbin/keepalived -t -f "$tmp/big.conf")
printf 'config: 500 virtual servers, 50000 real servers (%s bytes)\n' "$(stat -c %s "$tmp/big.conf")"
printf 'keepalived-rs -t: %.3f s\nkeepalived 2.2.7 -t: %.3f s\nratio (keepalived / ours): %.1fx\n' "$ours" "$theirs" "$(echo "$theirs / $ours" | bc -l)"
rm -rf "$tmp"
