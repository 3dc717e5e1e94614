# Raw HTTP answers, served by busybox nc: each script reads the request
# head (so that closing sends no reset), prints its answer and closes.
mkdir -p /tmp/raw
mk() { # port answer (printf format)
    printf '#!/bin/sh\nwhile read -r l; do [ ${#l} -le 1 ] && break; done\nprintf %s\n' "'$2'" > /tmp/raw/$1.sh
    chmod 755 /tmp/raw/$1.sh
    busybox nc -ll -p "$1" -e /tmp/raw/$1.sh >/dev/null 2>&1 &
}
mk 8091 'HTTP/1.0 200\r\n\r\nok'
mk 8092 'garbage\r\n\r\n'
mk 8093 'HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokEXTRA'
mk 8094 'HTTP/1.0 20'
mk 8095 'HTTP/1.0 404 Not Found\r\n\r\ngone'
mk 8096 'HTTP/1.0 200 OK\r\ncontent-length: 2\r\n\r\nokEXTRA'
sleep 0.5
