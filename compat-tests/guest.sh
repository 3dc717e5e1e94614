#!/bin/bash
# The real-kernel guest: builds a busybox initramfs holding keepalived 2.2.7,
# ipvsadm, our binary and a guest script, boots Debian's cloud kernel under
# qemu (TCG; KVM hangs on these machines), and prints what the guest printed
# on its serial console.
#
# usage: compat-tests/guest.sh OUR_BINARY GUEST_SCRIPT [DIR_TO_SHIP]
#   GUEST_SCRIPT runs as the guest's payload (sh), with DIR_TO_SHIP at /work.
#   Exit status: 0 if the guest ran and printed @@EXIT 0, 3 if the guest
#   could not be built or booted, otherwise the payload's status.
# Environment: GUEST_TIMEOUT (seconds, default 900), GUEST_MEM (MiB, 1024),
#   GUEST_SMP (vCPUs, 2),
#   GUEST_EXTRA_BINS (more host binaries to copy in, with their libraries).
set -euo pipefail

OURS=$(readlink -f "$1")
PAYLOAD=$(readlink -f "$2")
SHIP=${3:-}
HERE=$(cd "$(dirname "$0")" && pwd)
TIMEOUT=${GUEST_TIMEOUT:-900}

need_pkgs() {
    local missing=()
    command -v qemu-system-x86_64 >/dev/null || missing+=(qemu-system-x86)
    ls /boot/vmlinuz-*-cloud-amd64 >/dev/null 2>&1 || missing+=(linux-image-cloud-amd64)
    [ -x /bin/busybox ] && /bin/busybox --list 2>/dev/null | grep -qx modprobe || missing+=(busybox-static)
    [ -x /usr/sbin/keepalived ] || missing+=(keepalived)
    [ -x /usr/sbin/ipvsadm ] || missing+=(ipvsadm)
    command -v cpio >/dev/null || missing+=(cpio)
    if [ ${#missing[@]} -gt 0 ]; then
        echo "guest: installing ${missing[*]}" >&2
        if [ "$(id -u)" != 0 ]; then
            echo "guest: need root to apt-get install ${missing[*]}" >&2
            return 1
        fi
        DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}" >&2 ||
            { apt-get update -q >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}" >&2; }
    fi
}

need_pkgs || exit 3
KERNEL=$(ls /boot/vmlinuz-*-cloud-amd64 | sort -V | tail -1)
KVER=${KERNEL#/boot/vmlinuz-}
MODS=/lib/modules/$KVER

WORK=$(mktemp -d /tmp/kagest.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
ROOT=$WORK/root
mkdir -p "$ROOT"/{bin,sbin,etc,proc,sys,dev,tmp,run,work,usr/sbin,usr/bin,var/run,lib/modules/$KVER/kernel/drivers}

# Static busybox provides the shell and every tool but ipvsadm.
cp /bin/busybox "$ROOT/bin/busybox"
for app in $(/bin/busybox --list); do
    [ -e "$ROOT/bin/$app" ] || ln -s busybox "$ROOT/bin/$app"
done
ln -sf ../bin/busybox "$ROOT/sbin/modprobe"

# Modules: netfilter/ipvs and their dependencies, nlmon for captures.
cp -a "$MODS/kernel/net" "$MODS/kernel/lib" "$MODS/kernel/crypto" "$ROOT/lib/modules/$KVER/kernel/"
mkdir -p "$ROOT/lib/modules/$KVER/kernel/drivers/net"
for m in nlmon dummy veth; do
    f=$(find "$MODS/kernel/drivers/net" -name "$m.ko*" | head -1)
    [ -n "$f" ] && cp "$f" "$ROOT/lib/modules/$KVER/kernel/drivers/net/"
done
cp "$MODS"/modules.* "$ROOT/lib/modules/$KVER/"

copy_with_libs() {
    local src=$1 dst=$2
    mkdir -p "$ROOT$(dirname "$dst")"
    cp "$src" "$ROOT$dst"
    ldd "$src" 2>/dev/null | grep -o '/[^ ]*' | while read -r lib; do
        [ -e "$ROOT$lib" ] && continue
        mkdir -p "$ROOT$(dirname "$lib")"
        cp -L "$lib" "$ROOT$lib"
    done
}
copy_with_libs /usr/sbin/keepalived /usr/sbin/keepalived
copy_with_libs /usr/sbin/ipvsadm /usr/sbin/ipvsadm
copy_with_libs "$OURS" /usr/sbin/keepalived-rs
# iproute2's ip as ip-full (busybox's cannot make a veth pair: the VRRP
# scenarios' LAN).
copy_with_libs /bin/ip /usr/sbin/ip-full
# Extra tools for a payload (e.g. GUEST_EXTRA_BINS=/usr/bin/tcpdump).
for b in ${GUEST_EXTRA_BINS:-}; do copy_with_libs "$b" "$b"; done

cat > "$ROOT/etc/passwd" <<'P'
root:x:0:0:root:/root:/bin/sh
keepalived_script:x:999:999::/nonexistent:/bin/false
nobody:x:65534:65534:nobody:/nonexistent:/bin/false
P
cat > "$ROOT/etc/group" <<'G'
root:x:0:
keepalived_script:x:999:
nogroup:x:65534:
G
echo guest > "$ROOT/etc/hostname"

cp "$PAYLOAD" "$ROOT/payload.sh"
if [ -n "$SHIP" ]; then cp -a "$SHIP"/. "$ROOT/work/"; fi

cat > "$ROOT/init" <<'INIT'
#!/bin/sh
export PATH=/usr/sbin:/usr/bin:/sbin:/bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
mount -t tmpfs tmp /tmp
mount -t tmpfs run /run
hostname guest
ip link set lo up
# A syslog daemon, so that programs' syslog messages (keepalived's, with
# LOG_CONS) go to a file instead of the console that carries the results.
syslogd -O /tmp/messages
modprobe ip_vs
for s in rr wrr lc wlc lblc lblcr dh sh sed nq fo ovf mh pe_sip; do modprobe ip_vs_$s 2>/dev/null; done
echo "@@GUEST-UP"
cd /work
sh /payload.sh
echo "@@EXIT $?"
poweroff -f
INIT
chmod +x "$ROOT/init"

(cd "$ROOT" && find . | cpio -o -H newc --quiet | gzip -1) > "$WORK/initrd.gz"

LOG=$WORK/console.log
set +e
timeout "$TIMEOUT" qemu-system-x86_64 -accel tcg,thread=multi -smp "${GUEST_SMP:-2}" -cpu max \
    -m "${GUEST_MEM:-1024}" -nographic -no-reboot \
    -kernel "$KERNEL" -initrd "$WORK/initrd.gz" \
    -append "console=ttyS0 panic=-1 quiet" </dev/null >"$LOG" 2>&1
qrc=$?
set -e
tr -d '\r' < "$LOG"
if ! grep -q '@@GUEST-UP' "$LOG"; then
    echo "guest: the guest did not start (qemu exit $qrc)" >&2
    exit 3
fi
rc=$(tr -d '\r' < "$LOG" | sed -n 's/^@@EXIT \([0-9]*\)$/\1/p' | tail -1)
if [ -z "$rc" ]; then
    echo "guest: the payload did not finish (qemu exit $qrc, timeout ${TIMEOUT}s)" >&2
    exit 3
fi
exit "$rc"
