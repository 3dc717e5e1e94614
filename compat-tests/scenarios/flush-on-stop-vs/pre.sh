ipvsadm -A -t 10.11.0.1:80 -s rr
ipvsadm -a -t 10.11.0.1:80 -r 127.0.11.1:80 -m -w 1
ipvsadm -a -t 10.11.0.1:80 -r 127.0.11.9:80 -m -w 1
ipvsadm -A -t 10.11.0.99:80 -s wlc
ipvsadm -a -t 10.11.0.99:80 -r 127.0.11.1:80 -m -w 1
