# The BFD peer's namespace bp (198.51.100.2), reached over vbp (198.51.100.1);
# made once, kept for the second daemon's run.
if ! ip-full link show vbp >/dev/null 2>&1; then
    modprobe veth 2>/dev/null
    mkdir -p /run/netns
    ip-full netns add bp
    ip-full link add vbp type veth peer name eth0 netns bp
    ip-full addr add 198.51.100.1/30 dev vbp
    ip-full link set vbp up
    ip-full -n bp addr add 198.51.100.2/30 dev eth0
    ip-full -n bp link set eth0 up
    ip-full -n bp link set lo up
fi
