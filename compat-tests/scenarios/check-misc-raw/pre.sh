# MISC_CHECK scripts that end in every way.
mkdir -p /tmp/misc
mk() { # name body
    printf '#!/bin/sh\n%s\n' "$2" > /tmp/misc/$1
    chmod 755 /tmp/misc/$1
}
mk ok 'exit 0'
mk one 'exit 1'
mk three 'exit 3'
mk killed 'kill -9 $$'
mk hangs 'sleep 30'
# Executable text without "#!": keepalived runs it through the shell.
printf 'exit 0\n' > /tmp/misc/noshebang
chmod 755 /tmp/misc/noshebang
printf '#!/nonexistent/interpreter\nexit 0\n' > /tmp/misc/badinterp
chmod 755 /tmp/misc/badinterp
