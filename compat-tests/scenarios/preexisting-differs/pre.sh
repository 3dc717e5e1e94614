ipvsadm -A -t 10.15.0.1:80 -s wlc
ipvsadm -a -t 10.15.0.1:80 -r 127.0.15.1:80 -m -w 5
