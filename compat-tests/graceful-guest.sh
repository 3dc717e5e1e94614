#!/bin/sh
# Guest payload (compat-tests/guest.sh) for tests/guest_beyond.rs: slow
# start and drain (extensions) against the kernel's IPVS. A real server
# checked by MISC_CHECK (a file), so that it can fail while a connection
# through the virtual server stays open; the kernel's weight and active
# connection count for it are sampled from /proc/net/ip_vs over time.
# Prints "@@S PHASE UPTIME WEIGHT ACTIVE" (or "absent") per sample.
ip link add kars0 type dummy
ip link set kars0 up
ip addr add 192.0.2.1/32 dev kars0
ip addr add 192.0.2.10/32 dev kars0
touch /tmp/up
cat > /tmp/g.conf <<'C'
virtual_server 192.0.2.1 80 {
    delay_loop 1
    lb_algo wlc
    lb_kind NAT
    protocol TCP
    slow_start 6
    drain_timeout 120
    real_server 192.0.2.10 8080 {
        weight 12
        MISC_CHECK {
            misc_path "/bin/test -f /tmp/up"
            misc_timeout 5
            warmup 0
        }
    }
}
C
RS=C000020A:1F90
sample() { # phase
    l=$(grep "$RS" /proc/net/ip_vs)
    if [ -n "$l" ]; then
        set -- "$1" $l
        echo "@@S $1 $(cut -d' ' -f1 /proc/uptime) $5 $6"
    else
        echo "@@S $1 $(cut -d' ' -f1 /proc/uptime) absent"
    fi
}
# "  -> C000020A:1F90  Masq  WEIGHT  ACTIVECONN  INACTCONN"
weight_is() { grep "$RS" /proc/net/ip_vs | awk -v w="$1" '$4 == w { f = 1 } END { exit !f }'; }
wait_for() { # what, command...: up to 60 s
    what=$1; shift
    i=0
    while ! "$@" && [ $i -lt 240 ]; do sleep 0.25; i=$((i + 1)); done
    "$@" || { echo "@@FAIL $what"; cat /proc/net/ip_vs /proc/net/ip_vs_conn; ps; cat /tmp/k.log; exit 1; }
}
/usr/sbin/keepalived-rs -n -l -f /tmp/g.conf >/tmp/k.log 2>&1 &
kpid=$!
wait_for "start" weight_is 12
sample start

# A connection through the virtual server, held open.
sleep 600 | nc -l -p 8080 >/dev/null &
spid=$!
sleep 0.5
sleep 600 | nc 192.0.2.1 80 >/dev/null &
cpid=$!
active() { grep "$RS" /proc/net/ip_vs | awk '$5 >= 1 { f = 1 } END { exit !f }'; }
wait_for "a connection" active
sample held

# The check fails: weight 0, and it stays while the connection does.
rm /tmp/up
wait_for "weight 0" weight_is 0
for i in 1 2 3 4 5 6 7 8 9 10; do sample draining; sleep 0.5; done

# The connection ends: the server goes.
kill $cpid $spid
sleep 1
sample closed
cat /proc/net/ip_vs_conn | sed 's/^/@@CONN /'
gone() { ! grep -q "$RS" /proc/net/ip_vs; }
wait_for "removal" gone
sample drained

# It passes again: weight 1, then up to 12 over slow_start.
touch /tmp/up
present() { grep -q "$RS" /proc/net/ip_vs; }
wait_for "back" present
i=0
while [ $i -lt 30 ]; do sample ramp; sleep 0.5; i=$((i + 1)); done

# Drift: someone else's service is left alone; one of our entries deleted
# behind the daemon's back is put back at its next drift check (every 10 s,
# the table read one service at a time).
ipvsadm -A -t 192.0.2.2:81 -s rr
ipvsadm -d -t 192.0.2.1:80 -r 192.0.2.10:8080
sample deleted
wait_for "drift repair" weight_is 12
sample repaired
sleep 11
if grep -q "^TCP  C0000202:0051" /proc/net/ip_vs; then echo "@@FOREIGN kept"; else echo "@@FOREIGN gone"; fi
kill -TERM $kpid
wait $kpid
grep -E 'drain|slow|drift|ERROR|WARN' /tmp/k.log | sed 's/^/@@LOG /'
