#!/bin/bash
# Benchmark: cold start of SERVICES x DESTS destinations (no checkers, so only
# IPVS programming is timed) for keepalived 2.2.7 and keepalived-rs in the
# same guest, then RELOADS (5) weight changes by SIGHUP on that table: the
# time from the signal until the kernel has the change (the SET_DEST's
# timestamp in an nlmon capture, median) and the IPVS requests the daemon
# sent for them. Prints the figures side by side and the ratio. Needs root
# (guest, tcpdump); builds --release.
#   compat-tests/bench-ipvs.sh [SERVICES [DESTS]]     (default 200 100)
#   BENCH_ONLY=ours|keepalived runs one side only (for quick iterations);
#   RELOADS=N reloads (default 5); OURS_ARGS adds options to ours (-D);
#   HUP_QUIET=S seconds after each signal before /proc/net/ip_vs is polled
#   for the change (default 3, longer than either side's reload).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(dirname "$HERE")
SERVICES=${1:-200}
DESTS=${2:-100}
RELOADS=${RELOADS:-5}
HUP_QUIET=${HUP_QUIET:-3}
cd "$ROOT"
command -v tcpdump >/dev/null || apt-get install -y -q tcpdump
cargo build --release --quiet
SHIP=$(mktemp -d)
PAYLOAD=$(mktemp)
trap 'rm -rf "$SHIP" "$PAYLOAD"' EXIT

gen() { # weight of the first destination of the first service
    local w=$1
    for ((s = 0; s < SERVICES; s++)); do
        echo "virtual_server 192.0.2.$((s % 250 + 1)) $((80 + s / 250)) {"
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
# From /proc, not ipvsadm: the capture must hold the daemon's requests only.
weight_is() { # W: the first destination of the first service has weight W
    awk -v w=\$1 '/^TCP  C0000201:0050/ { f = 1; next }
         f && /^  ->/ { if (\$2 == "7F010001:0050" && \$4 == w) ok = 1; next }
         f { exit }
         END { exit !ok }' /proc/net/ip_vs
}
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
    ip link add nlmon0 type nlmon 2>/dev/null
    ip link set nlmon0 up
    rm -f /tmp/td.err
    tcpdump -i nlmon0 -s 0 -U -Z root -w /tmp/hup.pcap >/dev/null 2>/tmp/td.err &
    tp=\$!
    w=0
    while ! grep -q listening /tmp/td.err 2>/dev/null && [ \$w -lt 100 ]; do sleep 0.2; w=\$((w + 1)); done
    # RELOADS reloads, the weight 7 then 1 again, each with a marker in the
    # capture, in the kernel's clock: an RTM_GETLINK just before the signal
    # (the poll below pays for reading /proc/net/ip_vs, 40,000 lines under
    # TCG, and so is only an upper bound).
    for i in \$(seq $RELOADS); do
        if [ \$((i % 2)) = 1 ]; then w=7; cp /work/bench-w7.conf /tmp/cur.conf; else w=1; cp /work/bench.conf /tmp/cur.conf; fi
        ip -o link show dev lo >/dev/null
        t0=\$(now)
        kill -HUP \$pid
        # The capture times the change. Reading /proc/net/ip_vs (40,000
        # lines, ~0.4 s of a vCPU a read under TCG) from the signal on kept
        # one of the guest's two CPUs busy through the very interval
        # measured, a load no director has during a reload; the poll
        # starts once either side is done (HUP_QUIET=0: at once).
        sleep $HUP_QUIET
        while ! weight_is \$w; do sleep 0.05; done
        t1=\$(now)
        echo "@@HUP \$impl \$t0 \$t1"
        sleep 1
    done
    # Whatever else the reload sends (keepalived re-adds, ours nothing).
    sleep 3
    kill -INT \$tp
    wait \$tp
    echo "@@PCAP \$impl"
    od -An -tx1 -v /tmp/hup.pcap | tr -d ' \n'
    echo
    sleep 1
    kill -TERM \$pid
    wait \$pid
    grep -E 'table programmed|reload:|WARN|ERROR|DEBUG' /tmp/\$impl.log | head -40 | sed "s/^/@@LOG \$impl /"
}
[ "\$(cat /work/impl)" = keepalived ] && run keepalived /usr/sbin/keepalived -C -n -l -f /tmp/cur.conf -p /run/ka.pid -c /run/kac.pid
[ "\$(cat /work/impl)" = ours ] && run ours env RUST_LOG=${RUST_LOG:-info} /usr/sbin/keepalived-rs -n -l ${OURS_ARGS:-} -f /tmp/cur.conf
true
G
# Each implementation gets a fresh guest: the kernel keeps deleted
# destinations in a trash list that every later add searches, so a second
# run in the same kernel would be slowed by the first one's teardown.
OUT=""
for impl in ${BENCH_ONLY:-keepalived ours}; do
    echo "$impl" > "$SHIP/impl"
    OUT="$OUT
$(GUEST_EXTRA_BINS=/usr/bin/tcpdump GUEST_TIMEOUT=1800 GUEST_MEM=2048 "$HERE/guest.sh" target/release/keepalived "$PAYLOAD" "$SHIP")"
done
echo "$OUT" | grep '^@@LOG' | sed 's/^@@LOG /  /'
# IPVS requests in each capture, by command (nlctrl family lookups and
# the kernel's replies left out).
echo "$OUT" | python3 -c '
import sys, struct
reloads = sys.argv[1]
cmds = {1: "NEW_SERVICE", 2: "SET_SERVICE", 3: "DEL_SERVICE", 4: "GET_SERVICE",
        5: "NEW_DEST", 6: "SET_DEST", 7: "DEL_DEST", 8: "GET_DEST", 9: "NEW_DAEMON",
        10: "DEL_DAEMON", 11: "GET_DAEMON", 12: "SET_CONFIG", 13: "GET_CONFIG",
        14: "SET_INFO", 15: "GET_INFO", 16: "ZERO", 17: "FLUSH"}
lines = sys.stdin.read().splitlines()
print("IPVS requests sent for those %s reloads (nlmon capture):" % reloads)
to_kernel = {}
for i, l in enumerate(lines):
    if not l.startswith("@@PCAP "):
        continue
    impl, data = l.split()[1], bytes.fromhex(lines[i + 1].strip())
    off, count, dgrams = 24, {}, 0
    marker = None
    while off + 16 <= len(data):
        sec, usec, incl = struct.unpack("<III", data[off:off + 12])
        at = sec + usec / 1e6
        pkt = data[off + 16:off + 16 + incl]
        off += 16 + incl
        proto = struct.unpack(">H", pkt[14:16])[0]
        if proto == 0 and len(pkt) >= 32:
            # An RTM_GETLINK request: the marker sent just before a SIGHUP.
            ln, ty, flags = struct.unpack("<IHH", pkt[16:24])
            if ty == 18 and flags & 1:
                marker = at
        if proto != 16:
            continue
        pkt, sent = pkt[16:], False
        while len(pkt) >= 20:
            ln, ty, flags = struct.unpack("<IHH", pkt[:8])
            if ln < 16:
                break
            if ty != 0x10 and flags & 1:
                c = cmds.get(pkt[16], str(pkt[16]))
                count[c] = count.get(c, 0) + 1
                sent = True
                if c == "SET_DEST" and marker is not None:
                    to_kernel.setdefault(impl, []).append(at - marker)
                    marker = None
            pkt = pkt[(ln + 3) & ~3:]
        dgrams += sent
    total = sum(count.values())
    detail = ", ".join("%s %d" % kv for kv in sorted(count.items()))
    print("  %-17s %6d request(s) in %d datagram(s)%s" % (impl + ":", total, dgrams, " (" + detail + ")" if detail else ""))
def median(v):
    v = sorted(v)
    return v[len(v) // 2] if len(v) % 2 else (v[len(v) // 2 - 1] + v[len(v) // 2]) / 2
print("One weight change by SIGHUP, signal -> its SET_DEST in the kernel (capture timestamps), median of each:")
for impl, name in (("keepalived", "keepalived 2.2.7"), ("ours", "keepalived-rs")):
    if impl in to_kernel:
        v = to_kernel[impl]
        print("  %-17s %7.3f s   (%s)" % (name + ":", median(v), " ".join("%.3f" % x for x in v)))
if to_kernel.get("ours") and to_kernel.get("keepalived"):
    print("  ratio:            %7.1fx" % (median(to_kernel["keepalived"]) / median(to_kernel["ours"])))
' "$RELOADS"
echo "$OUT" | awk -v total="$TOTAL" -v svcs="$SERVICES" '
/^@@COLD/ { cold[$2] = $4 - $3; prog[$2] = $4 - $5 }
/^@@HUP/  { hup[$2] = hup[$2] sprintf(" %.2f", $4 - $3) }
END {
    printf "IPVS cold start, %d services x %d destinations (%d), guest kernel (TCG):\n", svcs, total / svcs, total
    printf "                    process start -> table complete | first entry -> table complete (programming only)\n"
    printf "  keepalived 2.2.7: %7.2f s %28.2f s\n", cold["keepalived"], prog["keepalived"]
    printf "  keepalived-rs:    %7.2f s %28.2f s\n", cold["ours"], prog["ours"]
    if (cold["ours"] > 0 && prog["ours"] > 0)
        printf "  ratio:            %7.1fx %28.1fx\n", cold["keepalived"] / cold["ours"], prog["keepalived"] / prog["ours"]
    printf "Each weight change by SIGHUP, until seen in /proc/net/ip_vs (polled every 0.05 s from '"$HUP_QUIET"' s on), s:\n"
    printf "  keepalived 2.2.7: %s\n  keepalived-rs:    %s\n", hup["keepalived"], hup["ours"]
}'
