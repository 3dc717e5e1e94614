#!/bin/bash
# Benchmark: the checker at scale. TCP real servers with TCP_CHECK and HTTP
# real servers with HTTP_GET, delay_loop 1, against loopback backends
# (examples/bench_backends.rs, which counts the checks it receives, so both
# implementations are measured from outside the same way).
#
#   1. host, keepalived-rs with the dry-run backend: checks/s, CPU seconds
#      per 1,000 checks, peak memory (VmHWM);
#   2. host, keepalived-rs, TCP_CHECK only at delay_loop 0.2 (50,000 checks/s
#      offered for 10,000 servers): sustained rate and CPU;
#   3. guest (real IPVS, TCG), keepalived 2.2.7 then keepalived-rs on the same
#      config: CPU per check for both and the ratio (keepalived cannot run
#      without IPVS, which this host lacks). Emulation makes a check ~15x
#      dearer, so the guest gets a load both can keep up with (GUEST_TCP +
#      GUEST_HTTP servers, default 500 + 500 at delay_loop 1): a saturated
#      checker times out and flaps, and then measures its failure handling.
#
#   compat-tests/bench-checkers.sh [TCP_SERVERS [HTTP_SERVERS]]  (10000 10000)
#   BENCH_WINDOW=seconds measured (default 20), BENCH_SKIP_GUEST=1,
#   BENCH_SKIP_HOST=1, GUEST_TCP, GUEST_HTTP, GUEST_IMPLS (default
#   "keepalived ours"; "oursN" runs ours with --checker-threads N).
#   BENCH_METRICS=1 measures instead the cost of the metrics: the host load
#   of step 1 without `metrics_listen`, then with it and /metrics scraped
#   every second, twice each, alternating.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(dirname "$HERE")
NTCP=${1:-10000}
NHTTP=${2:-10000}
WINDOW=${BENCH_WINDOW:-20}
cd "$ROOT"
cargo build --release --quiet --bin keepalived --example bench_backends
OURS=$ROOT/target/release/keepalived
BACKENDS=$ROOT/target/release/examples/bench_backends
WORK=$(mktemp -d)
trap 'jobs -p | xargs -r kill 2>/dev/null; rm -rf "$WORK"; true' EXIT
# One process holds at most 20,000 descriptors here (no CAP_SYS_RESOURCE):
# the backends run as one process per checker type.
ulimit -n 20000 2>/dev/null || true

addr() { # prefix index
    echo "127.$1.$(($2 / 250)).$(($2 % 250 + 1))"
}

block() { # kind(tcp|http) count delay_loop net-octet: virtual servers of 200
    local kind=$1 n=$2 delay=$3 net=$4 per=200 i a
    for ((i = 0; i < n; i++)); do
        if ((i % per == 0)); then
            ((i > 0)) && echo "}"
            echo "virtual_server 192.0.2.$((i / per % 250 + 1)) $((net * 100 + i / per / 250)) {"
            echo "    delay_loop $delay"
            echo "    lb_algo rr"
            echo "    lb_kind NAT"
            echo "    protocol TCP"
        fi
        a=$(addr "$((net - 29))" "$i")
        echo "$a 80 $kind" >> "$WORK/list.$kind"
        echo "    real_server $a 80 {"
        if [ "$kind" = tcp ]; then
            echo "        TCP_CHECK {"
        else
            echo "        HTTP_GET {"
            echo "            url {"
            echo "                path /"
            echo "            }"
        fi
        echo "            connect_timeout 5"
        echo "        }"
        echo "    }"
    done
    ((n > 0)) && echo "}"
    return 0
}

gen() { # ntcp nhttp delay_loop > config; also writes $WORK/list.{tcp,http}
    : > "$WORK/list.tcp"
    : > "$WORK/list.http"
    block tcp "$1" "$3" 30
    block http "$2" "$3" 31
}

# The measuring part runs on the host and in the guest's busybox sh alike.
cat > "$WORK/measure.sh" <<'M'
# cpu_ticks PID: utime+stime of PID and its children (keepalived's checker
# is a child process).
cpu_ticks() {
    t=0
    for st in /proc/[0-9]*/stat; do
        set -- $(cat "$st" 2>/dev/null) || continue
        [ "$1" = "$P" ] || [ "$4" = "$P" ] || continue
        t=$((t + ${14} + ${15}))
    done
    echo $t
}
hwm_kb() {
    m=0
    for s in /proc/[0-9]*/status; do
        pp=$(awk '/^PPid:/{print $2}' "$s" 2>/dev/null)
        pd=$(awk '/^Pid:/{print $2}' "$s" 2>/dev/null)
        [ "$pd" = "$P" ] || [ "$pp" = "$P" ] || continue
        h=$(awk '/^VmHWM:/{print $2}' "$s")
        m=$((m + ${h:-0}))
    done
    echo $m
}
last_count() { # logs... -> "tcp http", summed
    tt=0 hh=0
    for l in "$@"; do
        set -- $(grep '^@@COUNT' "$l" | tail -n 1 | awk '{print $3, $4}') 
        tt=$((tt + ${1:-0})); hh=$((hh + ${2:-0}))
    done
    echo "$tt $hh"
}
# backends LISTS... : starts one counting server per list (logs LIST.log)
backends() {
    BPIDS=""
    for l in "$@"; do
        [ -s "$l" ] || continue
        "$BACKENDS" "$l" 100000 > "$l.log" 2>&1 &
        BPIDS="$BPIDS $!"
        while ! grep -q '^@@LISTENING' "$l.log"; do sleep 0.2; done
        BLOGS="${BLOGS:-} $l.log"
    done
}
# measure NAME PID WARMUP WINDOW  (counts from the logs in $BLOGS)
measure() {
    P=$2
    name=$1; window=$4
    sleep "$3"
    set -- $(last_count $BLOGS) $(cpu_ticks) $(date +%s)
    t0=$1; h0=$2; c0=$3; s0=$4
    sleep "$window"
    set -- $(last_count $BLOGS) $(cpu_ticks) $(date +%s)
    t1=$1; h1=$2; c1=$3; s1=$4
    echo "@@MEASURE $name checks=$((t1 - t0 + h1 - h0)) tcp=$((t1 - t0)) http=$((h1 - h0)) seconds=$((s1 - s0)) cpu_ticks=$((c1 - c0)) hwm_kb=$(hwm_kb)"
}
M

report() { # @@MEASURE line
    python3 - "$@" <<'PY'
import sys
for line in sys.argv[1:]:
    f = dict(kv.split("=") for kv in line.split()[2:])
    name = line.split()[1]
    checks, secs, cpu = int(f["checks"]), int(f["seconds"]), int(f["cpu_ticks"]) / 100
    per_k = cpu / checks * 1000 if checks else float("nan")
    print(f"{name:<34} {checks / secs:>10.0f} checks/s  {per_k:>8.4f} CPU s/1000 checks  "
          f"{int(f['hwm_kb']) / 1024:>7.1f} MiB peak  (tcp {f['tcp']}, http {f['http']}, {secs} s, {cpu:.2f} CPU s)")
PY
}

run_host() { # name delay ntcp nhttp [metrics-port]
    {
        if [ -n "${5:-}" ]; then
            printf 'global_defs {\n    metrics_listen 127.0.0.1 %s\n}\n' "$5"
        fi
        gen "$3" "$4" "$2"
    } > "$WORK/bench.conf"
    # The measuring functions are plain sh, shared with the guest.
    set +u
    # shellcheck disable=SC1091
    . "$WORK/measure.sh"
    BLOGS=""
    backends "$WORK/list.tcp" "$WORK/list.http"
    "$OURS" --dry-run -n -l -f "$WORK/bench.conf" --status-socket "$WORK/status.sock" > "$WORK/ours.log" 2>&1 &
    local pid=$!
    local m scraper=""
    if [ -n "${5:-}" ]; then
        # Outside the daemon's process tree: its CPU is not counted.
        (while sleep 1; do curl -s "http://127.0.0.1:$5/metrics" > "$WORK/metrics.txt"; done) &
        scraper=$!
    fi
    m=$(measure "$1" "$pid" 8 "$WINDOW")
    [ -n "$scraper" ] && kill "$scraper"
    kill -INT "$pid"
    wait "$pid" || true
    # shellcheck disable=SC2086
    kill $BPIDS
    wait 2>/dev/null || true
    set -u
    echo "$m"
}

if [ "${BENCH_METRICS:-0}" = 1 ]; then
    echo "== host: metrics cost, $NTCP TCP_CHECK + $NHTTP HTTP_GET, delay_loop 1, ${WINDOW} s windows"
    for round in 1 2; do
        report "$(run_host "round$round-no-metrics" 1 "$NTCP" "$NHTTP")"
        report "$(run_host "round$round-metrics-scraped-1s" 1 "$NTCP" "$NHTTP" 19651)"
    done
    echo "last scrape: $(wc -l < "$WORK/metrics.txt") lines, $(wc -c < "$WORK/metrics.txt") bytes"
    exit 0
fi

if [ "${BENCH_SKIP_HOST:-0}" != 1 ]; then
    echo "== host: keepalived-rs (dry run), $NTCP TCP_CHECK + $NHTTP HTTP_GET, delay_loop 1, ${WINDOW} s window"
    M1=$(run_host "ours-host-tcp+http-delay1" 1 "$NTCP" "$NHTTP")
    report "$M1"
    echo "== host: keepalived-rs (dry run), $NTCP TCP_CHECK, delay_loop 0.2 (offered $((NTCP * 5)) checks/s)"
    M2=$(run_host "ours-host-tcp-delay0.2" 0.2 "$NTCP" 0)
    report "$M2"
fi

if [ "${BENCH_SKIP_GUEST:-0}" = 1 ]; then
    exit 0
fi

GTCP=${GUEST_TCP:-500}
GHTTP=${GUEST_HTTP:-500}
echo "== guest (TCG, real IPVS): keepalived 2.2.7 vs keepalived-rs, $GTCP TCP_CHECK + $GHTTP HTTP_GET, delay_loop 1"
gen "$GTCP" "$GHTTP" 1 > "$WORK/bench.conf"
SHIP=$WORK/ship
mkdir -p "$SHIP"
cp "$WORK/bench.conf" "$WORK/list.tcp" "$WORK/list.http" "$WORK/measure.sh" "$SHIP/"
cat > "$WORK/payload.sh" <<G
ulimit -n 100000
. /work/measure.sh
BACKENDS='$BACKENDS'
for impl in ${GUEST_IMPLS:-keepalived ours}; do
    ipvsadm -C
    cp /work/list.tcp /work/list.http /tmp/
    BLOGS=""
    backends /tmp/list.tcp /tmp/list.http
    if [ \$impl = keepalived ]; then
        /usr/sbin/keepalived -C -n -f /work/bench.conf -p /run/ka.pid -c /run/ka_c.pid > /tmp/\$impl.log 2>&1 &
    else
        threads=\${impl#ours}
        /usr/sbin/keepalived-rs -n -l -f /work/bench.conf \${threads:+--checker-threads \$threads} > /tmp/\$impl.log 2>&1 &
    fi
    pid=\$!
    measure "\$impl-guest-tcp+http-delay1" \$pid 15 $WINDOW
    echo "@@FLAPS \$impl \$(grep -c 'Removing service' /tmp/\$impl.log)"
    kill -TERM \$pid
    i=0
    while kill -0 \$pid 2>/dev/null && [ \$i -lt 600 ]; do sleep 0.5; i=\$((i + 1)); done
    kill -KILL \$pid 2>/dev/null
    kill \$BPIDS
done
G
OUT=$(GUEST_EXTRA_BINS="$BACKENDS" GUEST_TIMEOUT=1800 GUEST_MEM=3072 \
    "$HERE/guest.sh" "$OURS" "$WORK/payload.sh" "$SHIP" 2>"$WORK/guest.err") || {
    cat "$WORK/guest.err" >&2
    exit 1
}
KA=$(echo "$OUT" | grep '^@@MEASURE keepalived' || true)
RS=$(echo "$OUT" | grep "^@@MEASURE ours" | head -n 1 || true)
report "$KA" "$RS"
echo "$OUT" | grep '^@@FLAPS' | sed 's/^@@FLAPS/servers removed during the run:/' 
python3 - "$KA" "$RS" <<'PY'
import sys
def per(line):
    f = dict(kv.split("=") for kv in line.split()[2:])
    return int(f["cpu_ticks"]) / 100 / max(int(f["checks"]), 1)
ka, rs = per(sys.argv[1]), per(sys.argv[2])
print(f"CPU per check: keepalived {ka * 1e6:.1f} us, keepalived-rs {rs * 1e6:.1f} us, ratio {ka / rs:.2f}x")
PY
