cat > /tmp/misc-weight.sh <<'S'
#!/bin/sh
exit $(cat /tmp/misc-weight)
S
chmod 755 /tmp/misc-weight.sh
echo 12 > /tmp/misc-weight
