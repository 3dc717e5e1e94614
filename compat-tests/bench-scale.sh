#!/bin/bash
# Benchmark: cost at scale, side by side with keepalived 2.2.7 on this host
# (issue 18). keepalived's checker runs here through ../shared/tools/ipvs-shim
# (an LD_PRELOAD that answers its IPVS socket options as our --dry-run does),
# both against the same loopback backends (examples/bench_backends.rs), one
# listener a port on the wildcard address (`--any`): one listener a real
# server's address put 50,000 listening sockets in this kernel, and every
# listener lookup (a SYN's; two for a half-open probe's SYN-ACK, to a port
# nobody listens on) walked chains of them cold in the cache, a cost no
# director whose backends are other hosts pays. The kernel's ListenDrops
# over each window is printed: 0 says the backends kept up.
#
# For each size (real servers, delay_loop 1) and each run:
#   keepalived        keepalived 2.2.7 -C, TCP_CHECK (full connect) / HTTP_GET
#   ours              keepalived-rs --dry-run, the same config
#   ours-half-open    keepalived-rs, TCP_CHECKs with `half_open` (TCP only)
# it prints checks/s achieved (offered: one per server per second), CPU per
# 1,000 checks (utime+stime of the checker process, children included) and
# anonymous memory (RssAnon of the checker process) after the warm-up; then
# memory per real server as the slope between the smallest and largest size.
# Then the half-open rate: SCALE_RATE_SERVERS TCP servers at delay_loop 0.2
# (12,500: 62,500 offered a second; a check's period is delay_loop plus its
# own duration, keepalived's rule as ours, so sustaining 50,000 a second
# takes more than 50,000 offered).
#
# Checks are counted outside the checker, over the CPU window itself: where
# a connection is made the backends count accepts and HTTP answers; a
# half-open probe makes none, but each one that is answered ends in the
# kernel's count of resets received by a half-open (SYN_RECV) connection,
# TcpExt EmbryonicRsts (/proc/net/netstat), our RST to the backend's
# SYN-ACK. It agrees with our own check_duration_seconds_count to 0.3%;
# the metrics are not read (at 50,000 real servers a scrape is 19 MB and
# 0.6 s, which scaled a count taken around it 10% short).
#
#   compat-tests/bench-scale.sh             sizes "1000 5000 20000 50000"
#   SCALE_SIZES="1000 5000" SCALE_KINDS="tcp http" SCALE_WINDOW=10 SCALE_WARMUP=8
#   SCALE_RATE_SERVERS=12500 (0: skip)  SCALE_IMPLS="keepalived ours ours-half-open"
#   SCALE_KEEP=1 keeps the work directory (configs, each run's log), named.
#   SCALE_OURS=BINARY runs that build as ours (an A/B of two builds).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(dirname "$HERE")
SIZES=${SCALE_SIZES:-1000 5000 20000 50000}
KINDS=${SCALE_KINDS:-tcp http}
WINDOW=${SCALE_WINDOW:-10}
WARMUP=${SCALE_WARMUP:-8}
RATE_SERVERS=${SCALE_RATE_SERVERS:-12500}
IMPLS=${SCALE_IMPLS:-keepalived ours ours-half-open}
cd "$ROOT"
cargo build --release --quiet --bin keepalived --example bench_backends
OURS=${SCALE_OURS:-$ROOT/target/release/keepalived}
BACKENDS=$ROOT/target/release/examples/bench_backends
KA=${KEEPALIVED:-/usr/sbin/keepalived}
WORK=$(mktemp -d)
[ -z "${SCALE_KEEP:-}" ] || echo "bench-scale: work directory $WORK" >&2
trap 'jobs -p | xargs -r kill 2>/dev/null; [ -n "${SCALE_KEEP:-}" ] || rm -rf "$WORK"; true' EXIT
gcc -O2 -shared -fPIC -o "$WORK/shim.so" "$ROOT/../shared/tools/ipvs-shim/shim.c" -ldl
ulimit -n 20000 2>/dev/null || true

# gen KIND N DELAY HALF(0|1) > config; writes $WORK/list.N (backends, 15,000 a file)
gen() {
    local kind=$1 n=$2 delay=$3 half=$4
    python3 - "$kind" "$n" "$delay" "$half" "$WORK" <<'PY'
import sys
kind, n, delay, half, work = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4] == "1", sys.argv[5]
per = 200
lists = []
body = []
for i in range(n):
    if i % per == 0:
        if i:
            body.append("}\n")
        v = i // per
        body.append(f"virtual_server 192.0.2.{v % 250 + 1} {80 + v // 250} {{\n    delay_loop {delay}\n    lb_algo rr\n    lb_kind NAT\n    protocol TCP\n")
        if half:
            body.append("    half_open\n")
    a = f"127.{40 + i // 62500}.{(i // 250) % 250}.{i % 250 + 1}"
    if i % 15000 == 0:
        lists.append([])
    lists[-1].append(f"{a} 80 {kind}")
    check = "TCP_CHECK {\n            connect_timeout 5\n        }" if kind == "tcp" else \
        "HTTP_GET {\n            url {\n                path /\n            }\n            connect_timeout 5\n        }"
    body.append(f"    real_server {a} 80 {{\n        {check}\n    }}\n")
if n:
    body.append("}\n")
print("".join(body), end="")
for k, l in enumerate(lists):
    with open(f"{work}/list.{k}", "w") as f:
        f.write("\n".join(l) + "\n")
PY
}

cpu_ticks() { # PID: utime+stime of the process (all its threads)
    local f
    f=$(sed 's/^.*) //' "/proc/$1/stat")
    set -- $f
    echo $((${12} + ${13}))
}
anon_kb() { awk '/^RssAnon:/{print $2}' "/proc/$1/status"; }
backend_count() { # "tcp http", summed over the backends' logs
    local tt=0 hh=0 l
    for l in "$WORK"/list.*.log; do
        set -- $(grep '^@@COUNT' "$l" | tail -n 1 | awk '{print $3, $4}')
        tt=$((tt + ${1:-0})); hh=$((hh + ${2:-0}))
    done
    echo $((tt + hh))
}
tcpext() { # NAME: a TcpExt counter, found by its name in the header
    awk -v n="$1" '/^TcpExt:/ { if (!c) { for (i = 2; i <= NF; i++) if ($i == n) c = i }
                               else { print $c; exit } }' /proc/net/netstat
}

# run NAME IMPL KIND N DELAY: one measurement line
run() {
    local name=$1 impl=$2 kind=$3 n=$4 delay=$5 half=0 pid cpid conf=$WORK/k.conf
    [ "$impl" = ours-half-open ] && half=1
    rm -f "$WORK"/list.*
    gen "$kind" "$n" "$delay" "$half" > "$conf"
    local bpids="" l
    for l in "$WORK"/list.[0-9]*; do
        "$BACKENDS" "$l" 100000 --any > "$l.log" 2>&1 &
        bpids="$bpids $!"
        while ! grep -q '^@@LISTENING' "$l.log"; do sleep 0.2; done
    done
    if [ "$impl" = keepalived ]; then
        LD_PRELOAD=$WORK/shim.so "$KA" -C -n -l -G -f "$conf" -p "$WORK/ka.pid" -c "$WORK/ka_c.pid" > "$WORK/run.log" 2>&1 &
        pid=$!
        for _ in $(seq 50); do [ -s "$WORK/ka_c.pid" ] && break; sleep 0.2; done
        cpid=$(cat "$WORK/ka_c.pid")
    else
        "$OURS" --dry-run -n -l -f "$conf" --status-socket "$WORK/s.sock" > "$WORK/run.log" 2>&1 &
        pid=$!
        cpid=$pid
    fi
    sleep "$WARMUP"
    local c0 b0 e0 d0 t0 c1 b1 e1 d1 t1 anon
    c0=$(cpu_ticks "$cpid"); b0=$(backend_count); e0=$(tcpext EmbryonicRsts); d0=$(tcpext ListenDrops); t0=$(date +%s%N)
    sleep "$WINDOW"
    c1=$(cpu_ticks "$cpid"); b1=$(backend_count); e1=$(tcpext EmbryonicRsts); d1=$(tcpext ListenDrops); t1=$(date +%s%N)
    anon=$(anon_kb "$cpid")
    kill -TERM "$pid" 2>/dev/null || true
    # A daemon that does not stop at SIGTERM is a defect: say so, with its
    # log and its threads, rather than wait for ever.
    local w
    for w in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    if kill -0 "$pid" 2>/dev/null; then
        echo "bench-scale: $name still running 10 s after SIGTERM; its log's end and threads:" >&2
        tail -n 20 "$WORK/run.log" >&2
        for t in /proc/"$cpid"/task/*; do echo "  $(cat "$t/comm") $(cat "$t/wchan")" >&2; done
        cp "$WORK/run.log" "/tmp/bench-scale-$name-no-stop.log" 2>/dev/null || true
        kill -KILL "$pid" 2>/dev/null || true
    fi
    wait "$pid" 2>/dev/null || true
    # shellcheck disable=SC2086
    kill $bpids 2>/dev/null || true
    wait 2>/dev/null || true
    # A half-open run that could not open its raw socket says so.
    grep -h "half_open" "$WORK/run.log" | head -n 3 >&2 || true
    [ -z "${SCALE_KEEP:-}" ] || cp "$WORK/run.log" "$WORK/$name.log"
    local checks=$((b1 - b0))
    [ "$half" = 1 ] && checks=$((e1 - e0))
    echo "@@ $name impl=$impl kind=$kind n=$n delay=$delay checks=$checks counted_outside=$((b1 - b0)) listen_drops=$((d1 - d0)) ns=$((t1 - t0)) cpu_ticks=$((c1 - c0)) anon_kb=$anon"
}

LINES=()
for kind in $KINDS; do
    for n in $SIZES; do
        for impl in $IMPLS; do
            [ "$kind" = http ] && [ "$impl" = ours-half-open ] && continue
            LINES+=("$(run "$impl-$kind-$n" "$impl" "$kind" "$n" 1)")
            echo "${LINES[-1]}" >&2
        done
    done
done
if [ "$RATE_SERVERS" != 0 ]; then
    for impl in $IMPLS; do
        LINES+=("$(run "$impl-tcp-rate" "$impl" tcp "$RATE_SERVERS" 0.2)")
        echo "${LINES[-1]}" >&2
    done
fi

python3 - "${LINES[@]}" <<'PY'
import sys
rows = []
for line in sys.argv[1:]:
    f = dict(kv.split("=", 1) for kv in line.split()[2:])
    rows.append(f)
def num(r, k): return float(r[k])
print(f"{'run':<28} {'offered/s':>10} {'checks/s':>10} {'CPU ms/1000':>12} {'anon MB':>8}")
for r in rows:
    secs = num(r, "ns") / 1e9
    checks = num(r, "checks")
    offered = int(r["n"]) / float(r["delay"])
    cpu = num(r, "cpu_ticks") / 100
    per_k = cpu / checks * 1e6 if checks else float("nan")
    name = f"{r['impl']} {r['kind']} {r['n']}" + (f" @{r['delay']}s" if r["delay"] != "1" else "")
    print(f"{name:<28} {offered:>10.0f} {checks / secs:>10.0f} {per_k:>12.1f} {num(r, 'anon_kb') / 1024:>8.1f}")
print()
print("memory per real server (anonymous memory slope between the smallest and largest size):")
by = {}
for r in rows:
    if r["delay"] == "1":
        by.setdefault((r["impl"], r["kind"]), []).append((int(r["n"]), num(r, "anon_kb") * 1024))
for (impl, kind), pts in sorted(by.items()):
    pts.sort()
    if len(pts) >= 2 and pts[-1][0] > pts[0][0]:
        slope = (pts[-1][1] - pts[0][1]) / (pts[-1][0] - pts[0][0])
        print(f"  {impl:<16} {kind:<5} {slope:>8.0f} B  ({pts[0][0]}..{pts[-1][0]})")
print()
print("CPU per check, ratio to keepalived's TCP_CHECK at the same size:")
ka = {r["n"]: r for r in rows if r["impl"] == "keepalived" and r["kind"] == "tcp" and r["delay"] == "1"}
for r in rows:
    if r["kind"] != "tcp" or r["impl"] == "keepalived" or r["n"] not in ka or r["delay"] != "1":
        continue
    k = ka[r["n"]]
    a = num(r, "cpu_ticks") / max(num(r, "checks"), 1)
    b = num(k, "cpu_ticks") / max(num(k, "checks"), 1)
    print(f"  {r['impl']:<16} {r['n']:>6}: {a / b:.2f}x")
PY
