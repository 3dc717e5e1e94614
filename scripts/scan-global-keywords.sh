#!/bin/sh
# Lists the global_defs keywords whose `-t` exit code differs from
# keepalived 2.2.7's for a set of values (none, words, numbers, an
# address): the working list for issue 15's "global keywords" class.
# The keywords are those keepalived accepts in global_defs, found by
# trying every word of its binary. Needs /usr/sbin/keepalived and a
# built target/debug/keepalived.
set -eu
ours=${OURS:-$(dirname "$0")/../target/debug/keepalived}
ka=${KEEPALIVED:-/usr/sbin/keepalived}
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
strings "$ka" | grep -E '^[a-z][a-z_0-9]{2,40}$' | sort -u | while read -r w; do
    printf 'global_defs {\n %s\n}\n' "$w" >"$d/g.conf"
    "$ka" -t -f "$d/g.conf" 2>&1 | grep -q "Unknown keyword '$w'" || echo "$w"
done >"$d/accepted"
while read -r w; do
    for v in "" x -1 0 1 yes 192.0.2.1 -0 "1 2"; do
        printf 'global_defs {\n %s %s\n}\n' "$w" "$v" >"$d/g.conf"
        set +e
        timeout 5 "$ka" -t -f "$d/g.conf" >/dev/null 2>&1; k=$?
        "$ours" -t -f "$d/g.conf" >/dev/null 2>&1; o=$?
        set -e
        # keepalived killed by a signal is no reference.
        if [ "$k" -ne "$o" ] && [ "$k" -lt 128 ]; then
            echo "$w [$v] keepalived $k, ours $o"
        fi
    done
done <"$d/accepted"
