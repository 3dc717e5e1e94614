#!/bin/bash
# Lists, per block, the words keepalived 2.2.7 accepts there (every word of
# its binary, tried as a keyword) that our parser does not know: each
# would get an "Unknown keyword" error and a did-you-mean hint from ours
# where keepalived is silent. Prints "SECTION WORD"; nothing when all are
# known. Needs /usr/sbin/keepalived and a built target/debug/keepalived.
# Slow (a keepalived run per word and block): about 25 minutes.
set -u
here=$(cd "$(dirname "$0")/.." && pwd)
ours=${OURS:-$here/target/debug/keepalived}
ka=${KEEPALIVED:-/usr/sbin/keepalived}
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
cd "$d"
strings "$ka" | grep -E '^[a-z_A-Z][a-zA-Z_0-9]{2,40}$' | sort -u >words
opener() {
    case "$1" in
    virtual_server) echo "virtual_server 192.0.2.1 80 {" ;;
    real_server) echo "real_server 192.0.2.2 80 {" ;;
    global_defs | SSL | authentication | url | host) echo "$1 {" ;;
    *_CHECK | *_GET) echo "$1 {" ;;
    *) echo "$1 X {" ;;
    esac
}
grep -o '^### `[^`]*`$' "$here/grammar/keywords.md" | tr -d '#` ' | grep -v '^(root)$' |
    while read -r section; do
        IFS=/ read -ra segs <<<"$section"
        while read -r w; do
            {
                for s in "${segs[@]}"; do opener "$s"; done
                echo "$w 1"
                for _ in "${segs[@]}"; do echo "}"; done
            } >k.conf
            if ! "$ka" -t -f "$d/k.conf" 2>&1 | grep -q "Unknown keyword '$w'"; then
                if "$ours" -t -f "$d/k.conf" 2>&1 | grep -q "Unknown keyword '$w'"; then
                    echo "$section $w"
                fi
            fi
        done <words
    done
