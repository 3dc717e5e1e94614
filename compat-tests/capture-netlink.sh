#!/bin/bash
# Captures the generic netlink traffic of ipvsadm in the guest (nlmon +
# tcpdump) and writes one fixture per command to tests/fixtures/netlink/:
# the command on a comment line, then each datagram as hex, prefixed with
# `>` (to the kernel) or `<` (from the kernel). tests/netlink_captures.rs
# decodes and re-encodes them. Run by hand when adding a fixture (needs root):
#   cargo build && compat-tests/capture-netlink.sh
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(dirname "$HERE")
OUT=$ROOT/tests/fixtures/netlink
command -v tcpdump >/dev/null || apt-get install -y -q tcpdump
PAYLOAD=$(mktemp)
trap 'rm -f "$PAYLOAD"' EXIT
cat > "$PAYLOAD" <<'G'
ip link add nlmon0 type nlmon && ip link set nlmon0 up || { echo "no nlmon"; exit 1; }
n=0
cap() { # name, then the command
    name=$1; shift
    rm -f /tmp/c.err
    tcpdump -i nlmon0 -s 0 -U -Z root -w /tmp/c.pcap >/dev/null 2>/tmp/c.err &
    tp=$!
    w=0
    while ! grep -q listening /tmp/c.err 2>/dev/null && [ $w -lt 100 ]; do sleep 0.2; w=$((w + 1)); done
    sleep 0.5
    "$@" >/dev/null 2>&1
    sleep 0.5
    kill -INT $tp; wait $tp
    echo "@@CAP $name $*"
    od -An -tx1 -v /tmp/c.pcap | tr -d ' \n'
    echo
    echo "@@ENDCAP"
}
cap info ipvsadm -L -n
cap add-service-tcp ipvsadm -A -t 10.0.0.1:80 -s rr
cap add-dest-masq ipvsadm -a -t 10.0.0.1:80 -r 127.0.0.2:8080 -m -w 3 -x 100 -y 10
cap edit-dest ipvsadm -e -t 10.0.0.1:80 -r 127.0.0.2:8080 -m -w 5
cap add-service-persistent ipvsadm -A -t 10.0.0.2:443 -s wlc -p 300 -M 255.255.255.0
cap add-service-sh-flags ipvsadm -A -t 10.0.0.3:80 -s sh -b sh-port,sh-fallback
cap add-service-udp-ops ipvsadm -A -u 10.0.0.4:53 -s rr -o
cap add-service-pe-sip ipvsadm -A -u 10.0.0.5:5060 -s rr -p 60 --pe sip
cap add-service-fwmark ipvsadm -A -f 7 -s wrr
cap add-dest-fwmark-dr ipvsadm -a -f 7 -r 127.0.0.3 -g -w 2
cap add-service-v6 ipvsadm -A -t [2001:db8::1]:80 -s lc -p 60 -M 64
cap add-dest-v6 ipvsadm -a -t [2001:db8::1]:80 -r [::1]:8080 -m
cap add-dest-tun-gue ipvsadm -a -t 10.0.0.1:80 -r 127.0.0.4:80 -i --tun-type gue --tun-port 6080 --tun-csum
cap add-dest-tun-gre ipvsadm -a -t 10.0.0.1:80 -r 127.0.0.5:80 -i --tun-type gre --tun-csum
cap edit-service ipvsadm -E -t 10.0.0.1:80 -s wrr
cap dump-table ipvsadm -S -n
cap del-dest ipvsadm -d -t 10.0.0.1:80 -r 127.0.0.2:8080
cap del-service ipvsadm -D -t 10.0.0.2:443
cap error-exists ipvsadm -A -t 10.0.0.1:80 -s rr
cap error-no-service ipvsadm -a -t 10.9.9.9:80 -r 127.0.0.2:80 -m
cap set-timeouts ipvsadm --set 1000 100 200
cap get-timeouts ipvsadm -L --timeout
cap start-daemon ipvsadm --start-daemon master --mcast-interface lo --syncid 5
cap start-daemon-attrs ipvsadm --start-daemon backup --mcast-interface lo --syncid 6 --sync-maxlen 1400 --mcast-group 224.0.0.81 --mcast-port 8848 --mcast-ttl 2
cap list-daemons ipvsadm -L --daemon
cap stop-daemon ipvsadm --stop-daemon master
cap flush ipvsadm -C
G
cd "$ROOT"
GUEST_EXTRA_BINS=/usr/bin/tcpdump "$HERE/guest.sh" target/debug/keepalived "$PAYLOAD" > /tmp/capture.out 2>&1 || { tail -30 /tmp/capture.out; exit 1; }
python3 - "$OUT" /tmp/capture.out <<'PY'
import sys, struct, os
out, log = sys.argv[1], open(sys.argv[2]).read().splitlines()
i = 0
while i < len(log):
    l = log[i]
    if l.startswith('@@CAP '):
        name, cmd = l[6:].split(' ', 1)
        data = bytes.fromhex(log[i + 1].strip())
        i += 2
        # pcap: 24-byte global header, then 16-byte record headers.
        magic = struct.unpack('<I', data[:4])[0]
        assert magic == 0xa1b2c3d4, hex(magic)
        linktype = struct.unpack('<I', data[20:24])[0]
        off, lines = 24, []
        while off + 16 <= len(data):
            incl = struct.unpack('<I', data[off + 8:off + 12])[0]
            pkt = data[off + 16:off + 16 + incl]
            off += 16 + incl
            # LINKTYPE_NETLINK (253): a 16-byte cooked header, then the
            # datagram; its last two bytes are the netlink protocol.
            assert linktype == 253, linktype
            if struct.unpack('>H', pkt[14:16])[0] != 16:  # NETLINK_GENERIC
                continue
            pkt = pkt[16:]
            ty, flags = struct.unpack('<HH', pkt[4:8])
            if ty == 0x10:  # nlctrl: family resolution, not IPVS
                continue
            lines.append(('>' if flags & 1 else '<') + ' ' + pkt.hex())
        with open(os.path.join(out, name + '.txt'), 'w') as f:
            f.write('# ' + cmd + '\n# captured with nlmon in the guest (compat-tests/capture-netlink.sh)\n')
            f.write('\n'.join(lines) + '\n')
    else:
        i += 1
PY
ls "$OUT"
