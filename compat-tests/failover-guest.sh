#!/bin/sh
# Guest payload (compat-tests/guest.sh) for tests/guest_beyond.rs: a planned
# failover of an LVS-DR pair. Two directors (namespaces d1, d2, each with
# its own IPVS table), a real server (r) and a client (c) on one bridge;
# the VIP 192.0.2.100 floats by VRRP (d1 at 150, d2 at 100, keepalived
# 2.2.7 on d2 throughout). The client fetches http://192.0.2.100/ in a
# loop while d1 gets SIGTERM, for keepalived and for ours on d1 in turn.
# The instance holds VIPS addresses (200: the VIP under test last, so that
# their removal takes a while, as on a director with many VIPs).
# busybox's static wget crashes here: the client speaks HTTP through nc.
# Prints "@@R IMPL ROUND ok N refused N reset N timeout N other N".
set -u
VIPS=${VIPS:-200}
ROUNDS=${ROUNDS:-3}
ipf=ip-full
modprobe veth 2>/dev/null
modprobe bridge 2>/dev/null
$ipf link add br0 type bridge
$ipf link set br0 up
mkdir -p /run/netns
n=0
for ns in d1 d2 r c; do
    n=$((n + 1))
    $ipf netns add $ns
    $ipf link add v$ns type veth peer name eth0 netns $ns
    $ipf link set v$ns master br0 up
    $ipf -n $ns link set lo up
    $ipf -n $ns link set eth0 up
done
$ipf -n d1 addr add 192.0.2.1/24 dev eth0
$ipf -n d2 addr add 192.0.2.2/24 dev eth0
$ipf -n c addr add 192.0.2.50/24 dev eth0
# The real server: the VIP on lo, not answered for on the LAN (LVS-DR).
$ipf netns exec r sh -c '
    echo 1 > /proc/sys/net/ipv4/conf/all/arp_ignore
    echo 2 > /proc/sys/net/ipv4/conf/all/arp_announce
    ip-full addr add 192.0.2.10/24 dev eth0
    ip-full addr add 192.0.2.100/32 dev lo
    mkdir -p /tmp/www && echo hello > /tmp/www/index.html
    httpd -p 80 -h /tmp/www'

conf() { # priority
    echo "vrrp_instance VI_1 {
    state BACKUP
    interface eth0
    virtual_router_id 51
    priority $1
    advert_int 1
    virtual_ipaddress {"
    i=1
    while [ $i -lt "$VIPS" ]; do
        echo "        203.0.113.$((i % 250 + 1))/32 dev eth0 label eth0:$i"
        i=$((i + 1))
    done
    echo "        192.0.2.100/24
    }
}
virtual_server 192.0.2.100 80 {
    delay_loop 1
    lb_algo rr
    lb_kind DR
    protocol TCP
    real_server 192.0.2.10 80 {
        TCP_CHECK {
            connect_timeout 2
        }
    }
}"
}
conf 150 > /tmp/d1.conf
conf 100 > /tmp/d2.conf

start() { # ns binary
    $ipf netns exec "$1" "$2" -n -l -D -f /tmp/"$1".conf -p /tmp/"$1".pid \
        -r /tmp/"$1".vrrp.pid -c /tmp/"$1".check.pid >>/tmp/"$1".log 2>&1 &
    echo $! > /tmp/"$1".main
}
has_vip() { $ipf -n "$1" addr show dev eth0 | grep -q 'inet 192.0.2.100/'; }
has_service() { $ipf netns exec "$1" cat /proc/net/ip_vs | grep -q '^TCP  C0000264:0050'; }
wait_for() { # what, seconds, command...
    what=$1 t=$(($2 * 4)); shift 2
    i=0
    while ! "$@" && [ $i -lt $t ]; do sleep 0.25; i=$((i + 1)); done
    "$@" || { echo "@@FAIL $what"; tail -50 /tmp/d1.log /tmp/d2.log; return 1; }
}
cat > /tmp/client.sh <<'C'
while [ -f /tmp/go ]; do
    out=$(printf 'GET / HTTP/1.0\r\n\r\n' | nc -w 4 192.0.2.100 80 2>&1)
    case $out in
    *hello*) echo ok ;;
    '') echo "fail timed out" ;;
    *) echo "fail $out" ;;
    esac
done
C

start d2 /usr/sbin/keepalived
sleep 1
for impl in keepalived ours; do
    bin=/usr/sbin/keepalived
    [ $impl = ours ] && bin=/usr/sbin/keepalived-rs
    round=1
    while [ $round -le "$ROUNDS" ]; do
        start d1 $bin
        wait_for "d1 master" 40 has_vip d1 || exit 1
        wait_for "d1 service" 20 has_service d1 || exit 1
        wait_for "d2 service" 20 has_service d2 || exit 1
        # d2 has heard d1 and dropped the VIP.
        wait_for "d2 backup" 20 sh -c '! ip-full -n d2 addr show dev eth0 | grep -q "inet 192.0.2.100/"' || exit 1
        sleep 2
        touch /tmp/go
        $ipf netns exec c sh /tmp/client.sh > /tmp/client.log 2>&1 &
        cpid=$!
        sleep 3
        kill -TERM "$(cat /tmp/d1.main)"
        wait "$(cat /tmp/d1.main)"
        sleep 5
        rm /tmp/go
        wait $cpid
        ok=$(grep -c '^ok' /tmp/client.log)
        refused=$(grep -c 'refused' /tmp/client.log)
        reset=$(grep -c 'reset' /tmp/client.log)
        timeout=$(grep -c 'timed out' /tmp/client.log)
        other=$(grep '^fail' /tmp/client.log | grep -vc 'refused\|reset\|timed out')
        echo "@@R $impl $round ok $ok refused $refused reset $reset timeout $timeout other $other"
        grep '^fail' /tmp/client.log | sort | uniq -c | sed 's/^/@@F /'
        has_vip d2 || echo "@@FAIL d2 did not take the VIP"
        round=$((round + 1))
    done
done
$ipf netns exec d2 sh -c "kill -TERM \$(cat /tmp/d2.pid)"
sleep 2
exit 0
