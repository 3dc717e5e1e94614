//! BFD's sockets as keepalived 2.2.7 opens them (`../shared/reference/bfd.md`
//! §5.1): one listener on `[::]:3784` for every session, dual-stack, with
//! the TTL / hop limit and the destination of each datagram; one sender
//! per session, bound to its `source_ip` and a port in 49152-65535, sending
//! with the session's TTL / hop limit. Beyond keepalived, the listener
//! carries a socket filter admitting only the sessions' neighbours, so a
//! stranger's flood is dropped by the kernel before it can fill the queue
//! the neighbours' packets wait in.

use crate::bfd::random::OsRandom;
use crate::bfd::scheduler::Spec;
use nix::libc;
use nix::sys::socket::{recvmsg, sockopt, ControlMessageOwned, MsgFlags, SockaddrStorage};
use socket2::{Domain, Protocol, SockFilter, Socket, Type};
use std::io::{self, IoSliceMut};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::os::fd::{AsFd, AsRawFd};
use tokio::io::unix::AsyncFd;

/// RFC 5881 §4: single-hop control packets go to this port.
pub const PORT: u16 = 3784;

/// A datagram received: its length, sender, our address it was sent to,
/// and its TTL / hop limit as the kernel told it.
pub type Datagram = (usize, SocketAddr, IpAddr, Option<u8>);

/// Where the daemon's datagrams come from (the listener, or a test's
/// wire).
pub trait Inbox {
    /// The next datagram, read into `buf`.
    fn recv(&mut self, buf: &mut [u8]) -> impl std::future::Future<Output = io::Result<Datagram>>;
    /// From now on only datagrams from `neighbours` need be delivered.
    fn admit(&mut self, _neighbours: &[IpAddr]) -> io::Result<()> {
        Ok(())
    }
}

/// Instructions the kernel takes in one classic BPF program.
const MAX_INSNS: usize = libc::BPF_MAXINSNS as usize;

/// The classic BPF program that admits a UDP datagram only when its
/// source is one of `neighbours` (an IPv4 one also as a v4-mapped IPv6
/// address: on the dual-stack listener it arrives in an IPv4 header).
/// `None` when they would not fit in one program (then all are admitted).
///
/// A UDP socket's filter sees the datagram from its UDP header; the IP
/// header is read at `SKF_NET_OFF`: the version in its first nibble, the
/// IPv4 source at byte 12, the IPv6 source at bytes 8-23.
pub fn admission(neighbours: &[IpAddr]) -> Option<Vec<SockFilter>> {
    let mut v4: Vec<u32> = Vec::new();
    let mut v6: Vec<[u32; 4]> = Vec::new();
    for n in neighbours {
        match n {
            IpAddr::V4(a) => v4.push(u32::from(*a)),
            IpAddr::V6(a) => match a.to_ipv4_mapped() {
                Some(a) => v4.push(u32::from(a)),
                None => {
                    let o = a.octets();
                    v6.push(std::array::from_fn(|i| {
                        u32::from_be_bytes([o[4 * i], o[4 * i + 1], o[4 * i + 2], o[4 * i + 3]])
                    }));
                }
            },
        }
    }
    v4.sort_unstable();
    v4.dedup();
    v6.sort_unstable();
    v6.dedup();
    let (net, accept, drop) = (libc::SKF_NET_OFF as u32, u32::MAX, 0);
    let op = |c: u32| c as u16;
    let ld_b = op(libc::BPF_LD | libc::BPF_B | libc::BPF_ABS);
    let ld_w = op(libc::BPF_LD | libc::BPF_W | libc::BPF_ABS);
    let rsh = op(libc::BPF_ALU | libc::BPF_RSH | libc::BPF_K);
    let jeq = op(libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K);
    let ret = op(libc::BPF_RET | libc::BPF_K);
    let ja = op(libc::BPF_JMP | libc::BPF_JA);
    // Each address: a test that falls through to "accept" on a match and
    // jumps over it otherwise, so no jump is longer than one address.
    let v4_part = 1 + 2 * v4.len() + 1;
    let v6_part = 9 * v6.len() + 1;
    if 4 + v4_part + v6_part > MAX_INSNS {
        return None;
    }
    let mut p = vec![
        SockFilter::new(ld_b, 0, 0, net),
        SockFilter::new(rsh, 0, 0, 4),
        // IPv4: over the jump to the IPv6 part (which may be further than
        // a conditional jump reaches).
        SockFilter::new(jeq, 1, 0, 4),
        SockFilter::new(ja, 0, 0, v4_part as u32),
    ];
    p.push(SockFilter::new(ld_w, 0, 0, net.wrapping_add(12)));
    for a in &v4 {
        p.push(SockFilter::new(jeq, 0, 1, *a));
        p.push(SockFilter::new(ret, 0, 0, accept));
    }
    p.push(SockFilter::new(ret, 0, 0, drop));
    for a in &v6 {
        for (i, w) in a.iter().enumerate() {
            p.push(SockFilter::new(
                ld_w,
                0,
                0,
                net.wrapping_add(8 + 4 * i as u32),
            ));
            // A mismatch skips this address's remaining loads, tests and
            // its accept.
            p.push(SockFilter::new(jeq, 0, (7 - 2 * i) as u8, *w));
        }
        p.push(SockFilter::new(ret, 0, 0, accept));
    }
    p.push(SockFilter::new(ret, 0, 0, drop));
    Some(p)
}

/// Where the daemon's datagrams go: each session's sender.
pub trait Outbox {
    /// Opens session `id`'s sender for `spec` (replacing any).
    fn open(&mut self, id: usize, spec: &Spec) -> io::Result<()>;
    /// Sends `bytes` from session `id`'s sender to `to`.
    fn send(&mut self, id: usize, to: SocketAddr, bytes: &[u8]) -> io::Result<()>;
    /// The senders renumbered after a reload: new session `i` keeps old
    /// sender `from[i]`; the others are closed.
    fn remap(&mut self, from: &[Option<usize>]);
    /// The local address and port of session `id`'s sender (for the dump).
    fn local(&self, id: usize) -> Option<SocketAddr>;
}

/// The listener on `[::]:3784` (or `0.0.0.0:3784` without IPv6).
pub struct Listener {
    fd: AsyncFd<Socket>,
}

impl Listener {
    /// Opens it (keepalived's "Unable to open listening socket" when this
    /// fails).
    pub fn open() -> io::Result<Listener> {
        let s = match Self::socket(Domain::IPV6) {
            Ok(s) => s,
            Err(_) => Self::socket(Domain::IPV4)?,
        };
        // SAFETY: the AsyncFd owns the socket, and so its descriptor, which
        // stays open and the same until the AsyncFd is dropped.
        let fd = unsafe { AsyncFd::register_with_interest(s, tokio::io::Interest::READABLE) }
            .map_err(io::Error::from)?;
        Ok(Listener { fd })
    }

    fn socket(domain: Domain) -> io::Result<Socket> {
        let s = Socket::new(
            domain,
            Type::DGRAM.nonblocking().cloexec(),
            Some(Protocol::UDP),
        )?;
        s.set_reuse_address(true)?;
        let fd = s.as_fd();
        nix::sys::socket::setsockopt(&fd, sockopt::Ipv4RecvTtl, &true).map_err(io::Error::from)?;
        nix::sys::socket::setsockopt(&fd, sockopt::Ipv4PacketInfo, &true)
            .map_err(io::Error::from)?;
        let addr = if domain == Domain::IPV6 {
            s.set_only_v6(false)?;
            nix::sys::socket::setsockopt(&fd, sockopt::Ipv6RecvHopLimit, &true)
                .map_err(io::Error::from)?;
            nix::sys::socket::setsockopt(&fd, sockopt::Ipv6RecvPacketInfo, &true)
                .map_err(io::Error::from)?;
            SocketAddr::new(IpAddr::V6(Ipv6Addr::UNSPECIFIED), PORT)
        } else {
            SocketAddr::new(IpAddr::V4(Ipv4Addr::UNSPECIFIED), PORT)
        };
        s.bind(&addr.into())?;
        Ok(s)
    }
}

impl Inbox for Listener {
    fn admit(&mut self, neighbours: &[IpAddr]) -> io::Result<()> {
        let s = self.fd.get_ref();
        match admission(neighbours) {
            Some(p) => s.attach_filter(&p),
            // Too many to test in one program: all are read.
            None => s.detach_filter().or_else(|e| {
                if e.raw_os_error() == Some(libc::ENOENT) {
                    Ok(())
                } else {
                    Err(e)
                }
            }),
        }
    }

    async fn recv(&mut self, buf: &mut [u8]) -> io::Result<Datagram> {
        loop {
            let mut guard = self.fd.readable().await?;
            match guard.try_io(|s| read_one(s.get_ref(), buf)) {
                Ok(Ok(Some(d))) => return Ok(d),
                // Passed over (no sender address): read on.
                Ok(Ok(None)) => continue,
                Ok(Err(e)) => return Err(e),
                Err(_would_block) => continue,
            }
        }
    }
}

/// One datagram with its control messages; a v4-mapped sender is turned
/// back into IPv4, as keepalived does.
fn read_one(s: &Socket, buf: &mut [u8]) -> io::Result<Option<Datagram>> {
    let mut cmsg = nix::cmsg_space!(
        nix::libc::in6_pktinfo,
        nix::libc::in_pktinfo,
        nix::libc::c_int,
        nix::libc::c_int
    );
    let mut iov = [IoSliceMut::new(buf)];
    let m = recvmsg::<SockaddrStorage>(
        s.as_raw_fd(),
        &mut iov,
        Some(&mut cmsg),
        MsgFlags::MSG_DONTWAIT,
    )
    .map_err(io::Error::from)?;
    let len = if m.flags.contains(MsgFlags::MSG_TRUNC) {
        // Longer than any packet keepalived takes (it reads 32 bytes):
        // its length check will refuse it.
        usize::MAX
    } else {
        m.bytes
    };
    let from = m.address.and_then(|a| {
        if let Some(v6) = a.as_sockaddr_in6() {
            let ip = v6.ip();
            let ip = ip.to_ipv4_mapped().map_or(IpAddr::V6(ip), IpAddr::V4);
            Some(SocketAddr::new(ip, v6.port()))
        } else {
            a.as_sockaddr_in()
                .map(|v4| SocketAddr::new(IpAddr::V4(v4.ip()), v4.port()))
        }
    });
    let mut to = None;
    let mut ttl = None;
    if let Ok(cms) = m.cmsgs() {
        for c in cms {
            match c {
                ControlMessageOwned::Ipv4PacketInfo(p) => {
                    to = Some(IpAddr::V4(Ipv4Addr::from(u32::from_be(p.ipi_addr.s_addr))))
                }
                ControlMessageOwned::Ipv6PacketInfo(p) => {
                    let ip = Ipv6Addr::from(p.ipi6_addr.s6_addr);
                    to = Some(ip.to_ipv4_mapped().map_or(IpAddr::V6(ip), IpAddr::V4));
                }
                ControlMessageOwned::Ipv4Ttl(t) => ttl = Some(t.clamp(0, 255) as u8),
                ControlMessageOwned::Ipv6HopLimit(h) => ttl = Some(h.clamp(0, 255) as u8),
                _ => {}
            }
        }
    }
    let Some(from) = from else { return Ok(None) };
    let to = to.unwrap_or(match from {
        SocketAddr::V4(_) => IpAddr::V4(Ipv4Addr::UNSPECIFIED),
        SocketAddr::V6(_) => IpAddr::V6(Ipv6Addr::UNSPECIFIED),
    });
    Ok(Some((len, from, to, ttl)))
}

/// The sessions' senders.
#[derive(Default)]
pub struct Senders {
    socks: Vec<Option<Socket>>,
    rng: Option<OsRandom>,
}

/// The source ports keepalived draws from: the kernel's ephemeral range
/// cut to 49152-65535 (RFC 5881 §4), or all of 49152-65535 when less than
/// 1024 ports of it remain.
pub fn source_ports() -> (u16, u16) {
    let (lo, hi) = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|t| {
            let mut w = t.split_whitespace().map(|x| x.parse::<u16>().ok());
            Some((w.next()??, w.next()??))
        })
        .unwrap_or((32768, 60999));
    let (lo, hi) = (lo.max(49152), hi);
    if hi < lo || hi - lo < 1023 {
        (49152, 65535)
    } else {
        (lo, hi)
    }
}

impl Senders {
    fn sender(spec: &Spec, port: u16) -> io::Result<Socket> {
        let domain = if spec.neighbor.is_ipv6() {
            Domain::IPV6
        } else {
            Domain::IPV4
        };
        let s = Socket::new(
            domain,
            Type::DGRAM.nonblocking().cloexec(),
            Some(Protocol::UDP),
        )?;
        if spec.neighbor.is_ipv6() {
            s.set_unicast_hops_v6(u32::from(spec.ttl))?;
        } else {
            s.set_ttl_v4(u32::from(spec.ttl))?;
        }
        if let Some(src) = spec.source {
            s.bind(&SocketAddr::new(src, port).into())?;
        }
        Ok(s)
    }
}

impl Outbox for Senders {
    fn open(&mut self, id: usize, spec: &Spec) -> io::Result<()> {
        if self.socks.len() <= id {
            self.socks.resize_with(id + 1, || None);
        }
        self.socks[id] = None;
        if spec.source.is_none() {
            // Unbound: the kernel picks the address and port (keepalived's
            // man page: `source_ip` is needed for a port in range).
            self.socks[id] = Some(Self::sender(spec, 0)?);
            return Ok(());
        }
        let (lo, hi) = source_ports();
        let span = u64::from(hi - lo) + 1;
        let start = self.rng.get_or_insert_with(OsRandom::new).below(span);
        let mut last = io::Error::from(io::ErrorKind::AddrInUse);
        for k in 0..span {
            let port = lo + ((start + k) % span) as u16;
            match Self::sender(spec, port) {
                Ok(s) => {
                    self.socks[id] = Some(s);
                    return Ok(());
                }
                Err(e) if e.kind() == io::ErrorKind::AddrInUse => last = e,
                Err(e) => {
                    log::info!("({}) bind() error ({e})", spec.name);
                    return Err(e);
                }
            }
        }
        Err(last)
    }

    fn send(&mut self, id: usize, to: SocketAddr, bytes: &[u8]) -> io::Result<()> {
        let Some(Some(s)) = self.socks.get(id) else {
            return Err(io::Error::from(io::ErrorKind::NotConnected));
        };
        s.send_to(bytes, &to.into()).map(|_| ())
    }

    fn remap(&mut self, from: &[Option<usize>]) {
        let mut old: Vec<Option<Socket>> = std::mem::take(&mut self.socks);
        self.socks = from
            .iter()
            .map(|f| f.and_then(|i| old.get_mut(i).and_then(Option::take)))
            .collect();
    }

    fn local(&self, id: usize) -> Option<SocketAddr> {
        self.socks.get(id)?.as_ref()?.local_addr().ok()?.as_socket()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bfd::session::Params;

    fn spec(source: &str) -> Spec {
        Spec {
            name: "to_b".into(),
            neighbor: "127.0.0.1".parse().unwrap(),
            source: Some(source.parse().unwrap()),
            params: Params {
                min_tx: 100_000,
                min_rx: 100_000,
                idle_tx: 1_000_000,
                mult: 3,
                passive: false,
            },
            ttl: 255,
            max_hops: 0,
            vrrp: true,
            checker: true,
        }
    }

    #[test]
    fn a_sender_is_bound_in_range_and_kept_by_a_reload_that_keeps_its_session() {
        let mut s = Senders::default();
        s.open(0, &spec("127.0.0.1")).unwrap();
        s.open(1, &spec("127.0.0.1")).unwrap();
        let (lo, hi) = source_ports();
        let a = s.local(0).unwrap();
        let b = s.local(1).unwrap();
        assert_eq!(a.ip(), "127.0.0.1".parse::<IpAddr>().unwrap());
        assert!((lo..=hi).contains(&a.port()) && lo >= 49152, "{a}");
        assert_ne!(a.port(), b.port());
        // Session 1 is now first, session 0 is gone: 1's socket moves.
        s.remap(&[Some(1), None]);
        assert_eq!(s.local(0), Some(b));
        assert_eq!(s.local(1), None);
        // Sends go out of it with the session's TTL.
        let rx = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        s.send(0, rx.local_addr().unwrap(), b"x").unwrap();
        let mut buf = [0u8; 4];
        rx.set_read_timeout(Some(std::time::Duration::from_secs(2)))
            .unwrap();
        let (n, from) = rx.recv_from(&mut buf).unwrap();
        assert_eq!((n, from), (1, b));
    }

    /// Which of `senders` (local addresses) get a datagram through to a
    /// socket bound at `bind` carrying the filter for `neighbours`.
    fn admitted(bind: &str, neighbours: &[&str], senders: &[&str]) -> Vec<String> {
        let rx = Socket::new(
            if bind.starts_with('[') {
                Domain::IPV6
            } else {
                Domain::IPV4
            },
            Type::DGRAM,
            Some(Protocol::UDP),
        )
        .unwrap();
        if bind.starts_with('[') {
            rx.set_only_v6(false).unwrap();
        }
        rx.bind(&bind.parse::<SocketAddr>().unwrap().into())
            .unwrap();
        let n: Vec<IpAddr> = neighbours.iter().map(|a| a.parse().unwrap()).collect();
        rx.attach_filter(&admission(&n).expect("fits")).unwrap();
        let port = rx.local_addr().unwrap().as_socket().unwrap().port();
        for (i, from) in senders.iter().enumerate() {
            let from: IpAddr = from.parse().unwrap();
            let tx = std::net::UdpSocket::bind(SocketAddr::new(from, 0)).unwrap();
            let to = match from {
                IpAddr::V4(_) => SocketAddr::new("127.0.0.1".parse().unwrap(), port),
                IpAddr::V6(_) => SocketAddr::new("::1".parse().unwrap(), port),
            };
            tx.send_to(&[i as u8], to).unwrap();
        }
        rx.set_read_timeout(Some(std::time::Duration::from_millis(300)))
            .unwrap();
        let rx: std::net::UdpSocket = rx.into();
        let mut got = Vec::new();
        let mut buf = [0u8; 4];
        while let Ok((_, from)) = rx.recv_from(&mut buf) {
            let ip = match from.ip() {
                IpAddr::V6(a) => a.to_ipv4_mapped().map_or(IpAddr::V6(a), IpAddr::V4),
                a => a,
            };
            got.push(ip.to_string());
        }
        got.sort();
        got
    }

    #[test]
    fn the_listener_filter_admits_the_neighbours_only() {
        // IPv4, on an IPv4 socket and on a dual-stack one.
        for bind in ["127.0.0.1:0", "[::]:0"] {
            assert_eq!(
                admitted(
                    bind,
                    &["127.0.0.2", "2001:db8::1"],
                    &["127.0.0.2", "127.0.0.3"]
                ),
                ["127.0.0.2"],
                "{bind}"
            );
        }
        // IPv6, and a neighbour given v4-mapped.
        assert_eq!(
            admitted("[::]:0", &["2001:db8::1"], &["::1", "127.0.0.4"]),
            Vec::<String>::new()
        );
        assert_eq!(
            admitted(
                "[::]:0",
                &["::1", "::ffff:127.0.0.4"],
                &["::1", "127.0.0.4", "127.0.0.5"]
            ),
            ["127.0.0.4", "::1"]
        );
        // Hundreds of each family: jumps longer than a conditional one's.
        let mut many: Vec<String> = (0..600)
            .map(|i| format!("127.1.{}.{}", i / 250, i % 250 + 1))
            .collect();
        many.extend((0..300).map(|i| format!("2001:db8::{:x}", i + 2)));
        many.push("::1".into());
        many.push("127.0.0.9".into());
        let many: Vec<&str> = many.iter().map(String::as_str).collect();
        assert_eq!(
            admitted(
                "[::]:0",
                &many,
                &["127.0.0.9", "127.0.0.8", "::1", "127.1.2.100"]
            ),
            ["127.0.0.9", "127.1.2.100", "::1"]
        );
        // Too many for one program: none.
        let all: Vec<IpAddr> = (0..2100u32)
            .map(|i| IpAddr::V4(Ipv4Addr::from(0x7f02_0000 + i)))
            .collect();
        assert!(admission(&all).is_none());
    }
}
