#!/bin/bash
# Benchmark: cold start of SERVICES x DESTS destinations (no checkers, so only
# IPVS programming is timed) for keepalived 2.2.7 and keepalived-rs in the
# same guest, then one weight change by SIGHUP on that table. Prints the
# figures side by side and the ratio. Needs root (guest); builds --release.
#   compat-tests/bench-ipvs.sh [SERVICES [DESTS]]     (default 200 100)
#   BENCH_ONLY=ours|keepalived runs one side only (for quick iterations).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(dirname "$HERE")
SERVICES=${1:-200}
DESTS=${2:-100}
cd "$ROOT"
cargo build --release --quiet
SHIP=$(mktemp -d)
PAYLOAD=$(mktemp)
trap 'rm -rf "$SHIP" "$PAYLOAD"' EXIT

gen() { # weight of the first destination of the first service
    local w=$1
    for ((s = 0; s < SERVICES; s++)); do
        echo "virtual_server 10.20.$((s / 250)).$((s % 250 + 1)) 80 {"
        echo "    lvs_sched wlc"
        echo "    lvs_method NAT"
        echo "    protocol TCP"
        for ((d = 0; d < DESTS; d++)); do
            if ((s == 0 && d == 0)); then wt=$w; else wt=1; fi
            echo "    real_server 127.1.$((d / 250)).$((d % 250 + 1)) 80 {"
            echo "        weight $wt"
            echo "    }"
        done
        echo "}"
    done
}
gen 1 > "$SHIP/bench.conf"
gen 7 > "$SHIP/bench-w7.conf"
TOTAL=$((SERVICES * DESTS))

cat > "$PAYLOAD" <<G
TOTAL=$TOTAL
now() { cut -d' ' -f1 /proc/uptime; }
count() { grep -c -- '->' /proc/net/ip_vs; }
weight7() { ipvsadm -L -n -t 10.20.0.1:80 | grep -q '127.1.0.1:80 *Masq *7 '; }
run() { # impl, command...
    impl=\$1; shift
    ipvsadm -C
    cp /work/bench.conf /tmp/cur.conf
    t0=\$(now)
    "\$@" >/tmp/\$impl.log 2>&1 &
    pid=\$!
    while [ "\$(wc -l < /proc/net/ip_vs)" -le 3 ]; do sleep 0.02; done
    tf=\$(now)
    while [ "\$(count)" -lt \$TOTAL ]; do sleep 0.05; done
    t1=\$(now)
    echo "@@COLD \$impl \$t0 \$t1 \$tf"
    sleep 2
    cp /work/bench-w7.conf /tmp/cur.conf
    t0=\$(now)
    kill -HUP \$pid
    while ! weight7; do sleep 0.05; done
    t1=\$(now)
    echo "@@HUP \$impl \$t0 \$t1"
    sleep 1
    kill -TERM \$pid
    wait \$pid
    grep -E 'table programmed|reload:|WARN|ERROR|DEBUG' /tmp/\$impl.log | head -20 | sed "s/^/@@LOG \$impl /"
}
[ "\$(cat /work/impl)" = keepalived ] && run keepalived /usr/sbin/keepalived -C -n -l -f /tmp/cur.conf -p /run/ka.pid -c /run/kac.pid
[ "\$(cat /work/impl)" = ours ] && run ours env RUST_LOG=${RUST_LOG:-info} /usr/sbin/keepalived-rs -n -l -f /tmp/cur.conf
true
G
# Each implementation gets a fresh guest: the kernel keeps deleted
# destinations in a trash list that every later add searches, so a second
# run in the same kernel would be slowed by the first one's teardown.
OUT=""
for impl in ${BENCH_ONLY:-keepalived ours}; do
    echo "$impl" > "$SHIP/impl"
    OUT="$OUT
$(GUEST_TIMEOUT=1800 GUEST_MEM=2048 "$HERE/guest.sh" target/release/keepalived "$PAYLOAD" "$SHIP")"
done
echo "$OUT" | grep '^@@LOG' | sed 's/^@@LOG /  /'
echo "$OUT" | awk -v total="$TOTAL" -v svcs="$SERVICES" '
/^@@COLD/ { cold[$2] = $4 - $3; prog[$2] = $4 - $5 }
/^@@HUP/  { hup[$2] = $4 - $3 }
END {
    printf "IPVS cold start, %d services x %d destinations (%d), guest kernel (TCG):\n", svcs, total / svcs, total
    printf "                    process start -> table complete | first entry -> table complete (programming only)\n"
    printf "  keepalived 2.2.7: %7.2f s %28.2f s\n", cold["keepalived"], prog["keepalived"]
    printf "  keepalived-rs:    %7.2f s %28.2f s\n", cold["ours"], prog["ours"]
    if (cold["ours"] > 0 && prog["ours"] > 0)
        printf "  ratio:            %7.1fx %28.1fx\n", cold["keepalived"] / cold["ours"], prog["keepalived"] / prog["ours"]
    printf "One weight change by SIGHUP on that table, until visible in the kernel:\n"
    printf "  keepalived 2.2.7: %7.2f s\n  keepalived-rs:    %7.2f s\n", hup["keepalived"], hup["ours"]
}'
