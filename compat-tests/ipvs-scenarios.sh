#!/bin/sh
# Guest payload: for every scenario directory under /work (or those named in
# /work/ONLY), run keepalived 2.2.7 and then keepalived-rs on the same config
# over the same starting table, and print `ipvsadm -S -n` snapshots while
# each runs and after each stops, between @@BEGIN/@@END markers.
#
# A scenario directory holds keepalived.conf and optionally:
#   pre.sh    ipvsadm commands run before each daemon starts (pre-existing entries)
#   args      extra daemon arguments (e.g. -I)
#   backends  one "ADDR PORT" per line: an HTTP (and TCP) backend started on
#             loopback (busybox httpd) before each daemon, stopped after it
#   vrrp      keepalived runs its VRRP process too (no -C): an instance of
#             the config drives IPVS (lvs_sync_daemon IF INSTANCE)
#   settle    seconds to wait after the table settles, before the "running"
#             snapshot (lets first checks finish when they change the table)
#   events    steps run after the table has settled, one per line:
#               down ADDR PORT | up ADDR PORT   stop / restart that backend
#               wait SECONDS                    let checkers notice
#               snapshot NAME                   another snapshot, phase NAME
#               sh COMMAND...                   run a shell command (files
#                                               backends serve, script input;
#                                               $DAEMON_PID is the daemon)
#               reload FILE                     FILE (in the scenario) becomes
#                                               keepalived.conf, then SIGHUP;
#                                               waits until the table settles,
#                                               snapshot reloaded-FILE
#               plan FILE                       snapshot plan-FILE-before; for
#                                               ours also `--plan -f FILE` as
#                                               phase plan-FILE (its ipvsadm
#                                               lines), run before `reload FILE`
#               dump NAME                       SIGUSR1: the VRRP instances'
#                                               state and priorities from
#                                               keepalived.data, phase dump-NAME
#               status NAME                     ours: `--status --json` as
#                                               phase status-NAME
#               crash NAME                      kill -9 the daemon (all its
#                                               processes) and start it again
#                                               over the live table; phases
#                                               NAME-0.. are snapshots taken
#                                               every 0.2 s meanwhile
# keepalived.conf is restored after each run, so both daemons start alike.
# While ours runs, `keepalived-rs --ipvs-save` (our netlink dump) is printed
# right after the "running" snapshot, to be compared with ipvsadm's view of
# the same table.

snapshot() { # name impl phase
    echo "@@BEGIN $1 $2 $3"
    ipvsadm -S -n | sort
    echo "@@END"
    # -S leaves thresholds and timeouts out; the listing has them.
    echo "@@BEGIN $1 $2 $3-thresholds"
    ipvsadm -L -n --thresholds | grep -- '->' | grep -v RemoteAddress | sort
    echo "@@END"
    echo "@@BEGIN $1 $2 $3-timeouts"
    ipvsadm -L --timeout
    echo "@@END"
    echo "@@BEGIN $1 $2 $3-daemons"
    ipvsadm -L --daemon | sort
    echo "@@END"
}

settle() { # log marker: wait for the daemon to say it has started, then
    # until the table stops changing (max ~8 s)
    i=0
    while ! grep -q "$2" "$1" 2>/dev/null && [ $i -lt 60 ]; do sleep 0.25; i=$((i + 1)); done
    sleep 0.5
    settle_table
}

settle_table() { # until the table stops changing (max ~8 s)
    prev=""
    i=0
    while [ $i -lt 16 ]; do
        cur=$(ipvsadm -S -n | md5sum)
        [ "$cur" = "$prev" ] && return 0
        prev=$cur
        sleep 0.5
        i=$((i + 1))
    done
}

start_daemon() { # dir name impl; sets pid
    if [ "$3" = keepalived ] && [ -f "$1/vrrp" ]; then
        # Its VRRP process too (the scenario's instance drives IPVS).
        /usr/sbin/keepalived -n -l -f "$1/keepalived.conf" -p /run/ka.pid -c /run/ka_c.pid -r /run/ka_v.pid $args </dev/null >>/tmp/$2.$3.log 2>&1 &
    elif [ "$3" = keepalived ]; then
        /usr/sbin/keepalived -C -n -l -f "$1/keepalived.conf" -p /run/ka.pid -c /run/ka_c.pid $args </dev/null >>/tmp/$2.$3.log 2>&1 &
    else
        /usr/sbin/keepalived-rs -n -l -f "$1/keepalived.conf" $args </dev/null >>/tmp/$2.$3.log 2>&1 &
    fi
    pid=$!
}

crash() { # dir name impl phase
    if [ "$3" = keepalived ]; then
        # Its checker child would otherwise outlive the parent.
        killall -9 keepalived 2>/dev/null
    else
        kill -9 "$pid"
    fi
    wait "$pid" 2>/dev/null
    (
        n=0
        while [ $n -lt 40 ]; do
            echo "@@BEGIN $2 $3 $4-$n"
            ipvsadm -S -n | sort
            echo "@@END"
            n=$((n + 1))
            sleep 0.2
        done
    ) &
    snaps=$!
    start_daemon "$1" "$2" "$3"
    wait "$snaps"
    settle_table
}

backend_up() { # addr port
    mkdir -p /tmp/www
    [ -f /tmp/www/index.html ] || echo ok > /tmp/www/index.html
    busybox httpd -f -p "$1:$2" -h /tmp/www &
    echo $! > "/tmp/backend.$1.$2.pid"
}

backend_down() { # addr port
    f="/tmp/backend.$1.$2.pid"
    [ -f "$f" ] && kill "$(cat "$f")" 2>/dev/null && rm -f "$f"
    true
}

all_backends() { # up|down dir
    [ -f "$2/backends" ] || return 0
    while read -r a p; do
        [ -n "$a" ] && "backend_$1" "$a" "$p"
    done < "$2/backends"
}

run_events() { # dir name impl
    [ -f "$1/events" ] || return 0
    while read -r what rest; do
        a=${rest%% *}
        b=${rest#* }
        case "$what" in
            down) backend_down "$a" "$b" ;;
            up) backend_up "$a" "$b" ;;
            wait) sleep "$a" ;;
            snapshot) snapshot "$2" "$3" "$a" ;;
            sh) DAEMON_PID=$pid sh -c "$rest" ;;
            reload)
                cp "$1/$a" "$1/keepalived.conf"
                kill -HUP "$pid"
                sleep 1
                settle_table
                echo "@@BEGIN $2 $3 reloaded-$a"
                ipvsadm -S -n | sort
                echo "@@END"
                ;;
            crash) crash "$1" "$2" "$3" "$a" ;;
            plan)
                echo "@@BEGIN $2 $3 plan-$a-before"
                ipvsadm -S -n | sort
                echo "@@END"
                if [ "$3" = ours ]; then
                    echo "@@BEGIN $2 $3 plan-$a"
                    /usr/sbin/keepalived-rs --plan -f "$1/$a" 2>&1 | sed -n 's/^ipvsadm //p' | sort
                    echo "@@END"
                fi
                ;;
            dump)
                # SIGUSR1 (keepalived's parent hands it to its VRRP
                # process): the instances' state and priorities as the
                # data file shows them.
                rm -f /tmp/keepalived.data
                kill -USR1 "$pid"
                i=0
                while [ ! -s /tmp/keepalived.data ] && [ $i -lt 20 ]; do sleep 0.25; i=$((i + 1)); done
                sleep 0.5
                echo "@@BEGIN $2 $3 dump-$a"
                sed -n '/VRRP Topology/,/------< VRRP Sockpool\|------< VRRP Sync\|------< VRRP Scripts\|------< Interfaces/p' /tmp/keepalived.data |
                    grep -E '^ +(VRRP Instance|State|Wantstate|Priority|Effective priority|Total priority) = '
                echo "@@END"
                ;;
            status)
                if [ "$3" = ours ]; then
                    echo "@@BEGIN $2 $3 status-$a"
                    /usr/sbin/keepalived-rs --status --json 2>&1
                    echo "@@END"
                fi
                ;;
            "") ;;
            *) echo "unknown event $what" ;;
        esac
    done < "$1/events"
}

run_one() { # dir impl
    dir=$1
    impl=$2
    name=$(basename "$dir")
    args=""
    [ -f "$dir/args" ] && args=$(cat "$dir/args")
    ipvsadm -C
    [ -f "$dir/pre.sh" ] && sh "$dir/pre.sh"
    mkdir -p /tmp/www
    echo ok > /tmp/www/index.html
    all_backends up "$dir"
    cp "$dir/keepalived.conf" "/tmp/$name.conf.orig"
    : > "/tmp/$name.$impl.log"
    start_daemon "$dir" "$name" "$impl"
    if [ "$impl" = keepalived ]; then
        settle "/tmp/$name.$impl.log" "Startup complete"
    else
        settle "/tmp/$name.$impl.log" "table programmed"
    fi
    [ -f "$dir/settle" ] && sleep "$(cat "$dir/settle")"
    snapshot "$name" "$impl" running
    # Our dump of the same table, before events change it.
    if [ "$impl" = ours ]; then
        echo "@@BEGIN $name ours save"
        /usr/sbin/keepalived-rs --ipvs-save 2>&1 | sort
        echo "@@END"
    fi
    run_events "$dir" "$name" "$impl"
    kill -TERM $pid
    i=0
    # keepalived deletes one entry per message at stop: a large table takes
    # many seconds under TCG, and more than a minute on a loaded host (2,510
    # entries were cut at 371 left after 60 s in a run beside a build).
    while kill -0 $pid 2>/dev/null && [ $i -lt 720 ]; do sleep 0.25; i=$((i + 1)); done
    kill -KILL $pid 2>/dev/null
    wait $pid 2>/dev/null
    snapshot "$name" "$impl" stopped
    cp "/tmp/$name.conf.orig" "$dir/keepalived.conf"
    # Every backend, including those events started.
    for f in /tmp/backend.*.pid; do
        [ -f "$f" ] && kill "$(cat "$f")" 2>/dev/null
        rm -f "$f"
    done
    echo "@@BEGIN $name $impl log"
    tail -n 40 /tmp/$name.$impl.log
    echo "@@END"
}

for dir in /work/*/; do
    dir=${dir%/}
    [ -f "$dir/keepalived.conf" ] || continue
    if [ -f /work/ONLY ] && ! grep -qx "$(basename "$dir")" /work/ONLY; then continue; fi
    run_one "$dir" keepalived
    run_one "$dir" ours
done
exit 0
