# A LAN for the VRRP instance (a veth pair; documentation addresses), the
# instance held in FAULT until the events let it go.
modprobe veth 2>/dev/null
ip-full link show eth0 >/dev/null 2>&1 || ip-full link add eth0 type veth peer name eth9
ip-full link set eth9 up
ip-full link set eth0 up
ip-full addr add 192.0.2.1/24 dev eth0 2>/dev/null
echo 1 > /tmp/vrrp-sync-daemon-crash.tf
