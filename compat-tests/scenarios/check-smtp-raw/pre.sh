# SMTP servers answering in various ways, served by busybox nc.
mkdir -p /tmp/raw
mk() { # port banner helo-reply quit-reply (printf formats; '-' = close)
    {
        echo '#!/bin/sh'
        echo "printf '$2'"
        echo 'read -r l'
        echo "printf '$3'"
        if [ "$4" != - ]; then
            echo 'read -r l'
            echo "printf '$4'"
        fi
    } > /tmp/raw/$1.sh
    chmod 755 /tmp/raw/$1.sh
    busybox nc -ll -p "$1" -e /tmp/raw/$1.sh >/dev/null 2>&1 &
}
mk 2525 '220 mx ESMTP\r\n' '250 mx\r\n' '221 bye\r\n'
mk 2526 '220-mx first\r\n220 mx\r\n' '250 mx\r\n' '221 bye\r\n'
mk 2527 '220 mx\r\n' '550 go away\r\n' '221 bye\r\n'
mk 2528 '220\r\n' '250 mx\r\n' '221 bye\r\n'
mk 2529 '220 mx\r\n' '250-mx\r\n250 ok\r\n' '221 bye\r\n'
mk 2530 '220 mx\r\n' '250 mx\r\n' -
sleep 0.5
