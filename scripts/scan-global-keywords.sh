#!/bin/sh
# Lists the global_defs keyword/value pairs whose `-t` verdict differs
# from keepalived 2.2.7's: the exit code, or the lines reported, for a set
# of values (none, words, numbers in and out of every range, an address,
# keyword-specific forms). The keywords are those keepalived accepts in
# global_defs, found by trying every word of its binary, plus those of
# our table (a keyword that is a suffix of another is not a separate
# string in the binary). Needs /usr/sbin/keepalived and a built
# target/debug/keepalived.
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
ours=${OURS:-$here/target/debug/keepalived}
ka=${KEEPALIVED:-/usr/sbin/keepalived}
src=$here/src/config/keywords.rs
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
# Relative paths in values (config_save_dir x) land in the scratch directory.
cd "$d"
{
    strings "$ka" | grep -E '^[a-z][a-z_0-9]{2,40}$' | sort -u | while read -r w; do
        printf 'global_defs {\n %s\n}\n' "$w" >"$d/g.conf"
        "$ka" -t -f "$d/g.conf" 2>&1 | grep -q "Unknown keyword '$w'" || echo "$w"
    done
    sed -n '/^pub const GLOBAL_DEFS_OTHER/,/^];/p;/^fn global_defs/,/^}/p' "$src" |
        grep -o '"[a-z_0-9]*"' | tr -d '"' | grep -v -e '^status_socket$' -e '^metrics_listen$'
} | sort -u >"$d/accepted"
lines() { grep -o "$1"'[0-9]*' | sed "s/.*[: ]//" | sort -u | tr '\n' ' '; }
while read -r w; do
    for v in "" x -1 0 1 yes 192.0.2.1 -0 "1 2" 99999999999 1.5 "1 x" 0x10 0-1 "all 5" MTU "MTU ADVERT" "IWGRP|IWOTH" 01000; do
        printf 'global_defs {\n %s %s\n}\n' "$w" "$v" >"$d/g.conf"
        set +e
        kout=$(timeout 5 "$ka" -t -f "$d/g.conf" 2>&1); k=$?
        oout=$("$ours" -t -f "$d/g.conf" 2>&1); o=$?
        set -e
        kl=$(echo "$kout" | lines 'Line ')
        ol=$(echo "$oout" | lines 'g.conf:')
        # keepalived killed by a signal is no reference.
        if [ "$k" -lt 128 ] && { [ "$k" -ne "$o" ] || [ "$kl" != "$ol" ]; }; then
            echo "$w [$v] keepalived $k {$kl}, ours $o {$ol}"
        fi
    done
done <"$d/accepted"
