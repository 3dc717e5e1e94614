#!/usr/bin/env bash
# The project's test command (README): installs what the tests need on a
# fresh Debian machine (as root), then formatting, lints and every test,
# the side-by-side runs against keepalived 2.2.7, the qemu guest and the
# package test included (`--features full`).
#
# Without root nothing is installed and only what an unprivileged user
# can run is run: plain `cargo test` (the gated tests are listed as ignored).
set -euo pipefail
cd "$(dirname "$0")/.."

# What the gated tests need: keepalived/ipvsadm (the side-by-side
# reference), qemu with Debian's cloud kernel, busybox and cpio (the IPVS
# guest), debhelper, lintian, debootstrap (the package test), tcpdump and
# iproute2 (the VRRP namespace lab), nftables (its no_accept test reads
# the ruleset with nft), FRR (its bfdd is the BFD lab's second peer),
# net-snmp (snmpd as the AgentX master of the SNMP lab, snmpwalk).
need_cmds=(keepalived ipvsadm qemu-system-x86_64 cpio dh lintian debootstrap tcpdump nft vtysh snmpd snmpwalk snmptrapd)
need_pkgs=(keepalived ipvsadm qemu-system-x86 cpio debhelper lintian debootstrap
    busybox-static linux-image-cloud-amd64 tcpdump iproute2 nftables frr snmpd snmp snmptrapd)

install_deps() {
    local missing=0
    for c in "${need_cmds[@]}"; do
        command -v "$c" >/dev/null 2>&1 || PATH="$PATH:/usr/sbin:/sbin" command -v "$c" >/dev/null 2>&1 || missing=1
    done
    ls /boot/vmlinuz-*-cloud-amd64 >/dev/null 2>&1 || missing=1
    [ -x /bin/busybox ] || missing=1
    [ "$missing" = 0 ] && return 0
    echo "test.sh: installing ${need_pkgs[*]}" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    # No service starts from the packages (keepalived's, FRR's zebra, snmpd): the
    # tests start what they need in namespaces of their own.
    local policy=/usr/sbin/policy-rc.d placed=0
    if [ ! -e "$policy" ]; then
        printf '#!/bin/sh\nexit 101\n' > "$policy" && chmod 755 "$policy" && placed=1
    fi
    apt-get install -y -qq "${need_pkgs[@]}" >/dev/null
    [ "$placed" = 1 ] && rm -f "$policy"
    return 0
}

cargo fmt --check
cargo clippy --all-targets --features full -- -D warnings
if [ "$(id -u)" = 0 ]; then
    install_deps
    cargo test --features full
else
    echo "test.sh: not root: the tests that need root, keepalived, qemu or a mirror are ignored" >&2
    cargo test
fi
# The loader's fuzz target, for a bounded time (a crash or hang fails).
./scripts/fuzz.sh "${FUZZ_SECONDS:-60}"
