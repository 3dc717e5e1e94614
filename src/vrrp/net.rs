//! The VRRP side's sockets (I/O shell over the pure [`super::packet`] and
//! [`super::announce`]): the raw socket an instance sends and receives its
//! adverts on, as keepalived 2.2.7 opens them (`vrrp.c:open_vrrp_send_socket`,
//! `open_vrrp_read_socket`), the packet socket for gratuitous ARPs and
//! unsolicited NAs, and the interface facts they need (index, MAC,
//! addresses, link state) read with `getifaddrs(3)`.
//!
//! IPv4: `IPPROTO_VRRP` (51 with AH) with `IP_HDRINCL`, our own header
//! (TOS 0xc0, TTL 255 or `unicast_ttl`), bound to the interface, the group
//! joined on it, no loopback of our own adverts. IPv6: the kernel builds the
//! header (traffic class 0xc0, hop limit 255); the checksum is ours, over
//! the pseudo-header; the hop limit and destination of what arrives come
//! from `IPV6_HOPLIMIT` / `IPV6_PKTINFO`.

use super::announce::Mac;
use super::packet::{IPPROTO_VRRP, TOS, TTL};
use nix::ifaddrs::getifaddrs;
use nix::net::if_::InterfaceFlags;
use nix::sys::socket::{
    recvmmsg, sendto, setsockopt, sockopt, ControlMessageOwned, LinkAddr, MsgFlags, MultiHeaders,
    SockaddrIn6, SockaddrStorage,
};
use socket2::{Domain, InterfaceIndexOrAddress, Protocol, Socket, Type};
use std::io::{self, IoSliceMut};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddrV6};
use std::os::fd::AsRawFd;
use tokio::io::unix::AsyncFd;

/// IP protocol number of IPsec AH.
pub const IPPROTO_AH: u8 = 51;

/// What the VRRP side needs to know of an interface.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Iface {
    /// Its name.
    pub name: String,
    /// Its index.
    pub index: u32,
    /// Its hardware address (Ethernet-like links).
    pub mac: Option<Mac>,
    /// Administratively up and running (carrier): keepalived's
    /// `IF_ISUP()` (`IFF_UP && IFF_RUNNING`).
    pub up: bool,
    /// Its IPv4 addresses, the primary first.
    pub ipv4: Vec<Ipv4Addr>,
    /// Its IPv6 addresses, in the kernel's order.
    pub ipv6: Vec<Ipv6Addr>,
    link: Option<LinkAddr>,
}

impl Iface {
    /// The interface called `name`, if there is one.
    pub fn lookup(name: &str) -> io::Result<Option<Iface>> {
        let mut found: Option<Iface> = None;
        for a in getifaddrs().map_err(io::Error::from)? {
            if a.interface_name != name {
                continue;
            }
            let f = found.get_or_insert_with(|| Iface {
                name: name.to_string(),
                index: 0,
                mac: None,
                up: false,
                ipv4: Vec::new(),
                ipv6: Vec::new(),
                link: None,
            });
            f.up = a.flags.contains(InterfaceFlags::IFF_UP)
                && a.flags.contains(InterfaceFlags::IFF_RUNNING);
            let Some(addr) = a.address else { continue };
            if let Some(l) = addr.as_link_addr() {
                f.index = l.ifindex() as u32;
                f.mac = l.addr();
                f.link = Some(*l);
            } else if let Some(v4) = addr.as_sockaddr_in() {
                f.ipv4.push(v4.ip());
            } else if let Some(v6) = addr.as_sockaddr_in6() {
                f.ipv6.push(v6.ip());
            }
        }
        if let Some(f) = &mut found {
            if f.index == 0 {
                f.index = nix::net::if_::if_nametoindex(name).map_err(io::Error::from)?;
            }
        }
        Ok(found)
    }

    /// The IPv6 link-local address (the VRRPv3 source over IPv6).
    pub fn link_local(&self) -> Option<Ipv6Addr> {
        self.ipv6
            .iter()
            .copied()
            .find(|a| a.segments()[0] & 0xffc0 == 0xfe80)
    }

    /// The address adverts go from: the configured one, else the primary
    /// IPv4 address or the IPv6 link-local.
    pub fn source(&self, ipv6: bool) -> Option<IpAddr> {
        if ipv6 {
            self.link_local().map(IpAddr::V6)
        } else {
            self.ipv4.first().copied().map(IpAddr::V4)
        }
    }
}

/// One advert as it arrived, borrowed from the buffer it was read into.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Received<'a> {
    /// IP source.
    pub from: IpAddr,
    /// IP destination.
    pub to: IpAddr,
    /// TTL / hop limit.
    pub ttl: u8,
    /// The IP protocol (112, or 51 when AH wraps it).
    pub proto: u8,
    /// The IPv4 header (empty for IPv6): AH's ICV covers it.
    pub ip_header: &'a [u8],
    /// What follows the IP header.
    pub payload: &'a [u8],
}

/// Datagrams read by one `recvmmsg`.
pub const BATCH: usize = 32;

/// A datagram's room: an advert is at most 1,140 bytes over IPv4 and 4,088
/// over IPv6 (255 addresses), and a link's MTU bounds it below that; one
/// that does not fit is cut and refused as too long.
const SLOT: usize = 2048;

/// What a batch of reads needs, made once and reused: [`BATCH`] slots
/// and what the kernel said of each datagram in them.
pub struct RecvBuffer {
    data: Box<[[u8; SLOT]; BATCH]>,
    got: Vec<Datagram>,
    next: usize,
}

impl Default for RecvBuffer {
    fn default() -> Self {
        RecvBuffer {
            data: Box::new([[0; SLOT]; BATCH]),
            got: Vec::with_capacity(BATCH),
            next: 0,
        }
    }
}

impl RecvBuffer {
    /// The next datagram of the batch read last, if any is left.
    pub fn take(&mut self) -> Option<Datagram> {
        let d = self.got.get(self.next).copied()?;
        self.next += 1;
        Some(d)
    }
}

/// The raw socket of one instance: sends its adverts, receives everyone's
/// on its interface (the caller picks its VRID).
pub struct AdvertSocket {
    fd: AsyncFd<Socket>,
    /// What the kernel dropped on it so far (its buffer full), as the
    /// last packet read said (`SO_RXQ_OVFL`).
    dropped: std::sync::atomic::AtomicU32,
    ipv6: bool,
    ifindex: u32,
}

impl AdvertSocket {
    /// Opens the socket for `proto` on `iface`, joining `group` when the
    /// instance is multicast; IPv6 unicast adverts leave with hop limit
    /// `unicast_hops` (`unicast_ttl`; IPv4 carries it in its own header).
    pub fn open(
        iface: &Iface,
        ipv6: bool,
        proto: u8,
        group: Option<IpAddr>,
        bind_src: Option<IpAddr>,
        unicast_hops: u8,
    ) -> io::Result<AdvertSocket> {
        let domain = if ipv6 { Domain::IPV6 } else { Domain::IPV4 };
        let s = Socket::new(domain, Type::RAW, Some(Protocol::from(i32::from(proto))))?;
        s.set_nonblocking(true)?;
        s.bind_device(Some(iface.name.as_bytes()))?;
        setsockopt(&s, sockopt::RxqOvfl, &1).map_err(io::Error::from)?;
        if ipv6 {
            setsockopt(&s, sockopt::Ipv6RecvPacketInfo, &true).map_err(io::Error::from)?;
            setsockopt(&s, sockopt::Ipv6RecvHopLimit, &true).map_err(io::Error::from)?;
            setsockopt(&s, sockopt::Ipv6TClass, &i32::from(TOS)).map_err(io::Error::from)?;
            s.set_multicast_hops_v6(u32::from(TTL))?;
            s.set_unicast_hops_v6(u32::from(unicast_hops))?;
            s.set_multicast_loop_v6(false)?;
            s.set_multicast_if_v6(iface.index)?;
            if let Some(IpAddr::V6(src)) = bind_src {
                let scope = if src.segments()[0] & 0xffc0 == 0xfe80 {
                    iface.index
                } else {
                    0
                };
                s.bind(&SocketAddrV6::new(src, 0, 0, scope).into())?;
            }
            if let Some(IpAddr::V6(g)) = group {
                s.set_multicast_all_v6(false)?;
                s.join_multicast_v6(&g, iface.index)?;
            }
        } else {
            s.set_header_included_v4(true)?;
            s.set_multicast_loop_v4(false)?;
            if let Some(IpAddr::V4(g)) = group {
                s.set_multicast_all_v4(false)?;
                s.join_multicast_v4_n(&g, &InterfaceIndexOrAddress::Index(iface.index))?;
            }
        }
        // Readable only: sends never wait (an advert that finds the buffer
        // full is lost, as keepalived's is), and interest in writing woke
        // the thread after every advert the kernel sent.
        // SAFETY: the AsyncFd owns the socket, and so its descriptor, which
        // stays open and the same until the AsyncFd is dropped.
        let fd = unsafe { AsyncFd::register_with_interest(s, tokio::io::Interest::READABLE) }
            .map_err(io::Error::from)?;
        Ok(AdvertSocket {
            fd,
            dropped: Default::default(),
            ipv6,
            ifindex: iface.index,
        })
    }

    /// Sends one advert to `dst`: over IPv4 the whole packet from its IP
    /// header on (`IP_HDRINCL`), over IPv6 the VRRP message.
    pub fn send(&self, pkt: &[u8], dst: IpAddr) -> io::Result<()> {
        let sock = self.fd.get_ref();
        match dst {
            IpAddr::V4(d) => {
                // keepalived's MSG_DONTROUTE for multicast: the group is
                // on the link, whatever the routing table says.
                let flags = if d.is_multicast() {
                    nix::libc::MSG_DONTROUTE
                } else {
                    0
                };
                sock.send_to_with_flags(pkt, &std::net::SocketAddr::new(dst, 0).into(), flags)?;
            }
            IpAddr::V6(d) => {
                let scope = if d.is_multicast() || d.segments()[0] & 0xffc0 == 0xfe80 {
                    self.ifindex
                } else {
                    0
                };
                let to = SockaddrIn6::from(SocketAddrV6::new(d, 0, 0, scope));
                sendto(sock.as_raw_fd(), pkt, &to, MsgFlags::empty()).map_err(io::Error::from)?;
            }
        }
        Ok(())
    }

    /// Whether a packet may be waiting (registers `cx` to be woken when
    /// one comes).
    pub fn poll_ready(&self, cx: &mut std::task::Context<'_>) -> std::task::Poll<()> {
        self.fd.poll_read_ready(cx).map(|_| ())
    }

    /// Reads the packets waiting into `buf`, up to a [`BATCH`], without
    /// waiting: `None` when none waits (the socket's readiness is then
    /// cleared); else how many, each then [`RecvBuffer::take`]n and
    /// [`RecvBuffer::received`].
    pub fn try_recv(&self, buf: &mut RecvBuffer) -> Option<io::Result<usize>> {
        let waker = std::task::Waker::noop();
        let mut cx = std::task::Context::from_waker(waker);
        let std::task::Poll::Ready(Ok(mut guard)) = self.fd.poll_read_ready(&mut cx) else {
            return None;
        };
        let RecvBuffer { data, got, next } = buf;
        got.clear();
        *next = 0;
        // Err: it would block (and the readiness is cleared).
        let r = guard
            .try_io(|s| read_batch(s.get_ref(), data, got, self.ipv6))
            .ok()?;
        // A short batch emptied the queue: no call to hear EAGAIN. A
        // datagram come since has woken the poller again, and the clear
        // is then refused (the readiness it saw has changed).
        if r.as_ref().is_ok_and(|&n| n < BATCH) {
            guard.clear_ready();
        }
        if let Some(n) = got.iter().rev().find_map(|d| d.dropped) {
            self.dropped.store(n, std::sync::atomic::Ordering::Relaxed);
        }
        Some(r.map(|_| got.len()))
    }

    /// The packets the kernel dropped on this socket since it opened, its
    /// buffer full, as far as the packets read so far tell.
    pub fn dropped(&self) -> u32 {
        self.dropped.load(std::sync::atomic::Ordering::Relaxed)
    }
}

/// Where a datagram read into a [`RecvBuffer`] is, checked to hold an
/// IPv4 header when it is IPv4.
#[derive(Debug, Clone, Copy)]
pub struct Datagram {
    /// Its slot in the batch.
    slot: usize,
    len: usize,
    /// The socket's drop count, when the kernel says it (not zero).
    dropped: Option<u32>,
    /// IPv6 only: what the kernel told of it (source, destination, hop
    /// limit); IPv4's are in its header.
    ipv6: Option<(IpAddr, IpAddr, u8)>,
}

impl RecvBuffer {
    /// The datagram `d` just read, as the runner reads it: over IPv4 its
    /// header taken apart (borrowed, not copied), over IPv6 the message
    /// with what the kernel told of it.
    pub fn received(&self, d: Datagram) -> Received<'_> {
        let buf = &self.data[d.slot][..d.len];
        if let Some((from, to, ttl)) = d.ipv6 {
            return Received {
                from,
                to,
                ttl,
                proto: IPPROTO_VRRP,
                ip_header: &[],
                payload: buf,
            };
        }
        let ihl = usize::from(buf[0] & 0x0f) * 4;
        let (ip_header, payload) = buf.split_at(ihl);
        Received {
            from: IpAddr::V4(Ipv4Addr::new(buf[12], buf[13], buf[14], buf[15])),
            to: IpAddr::V4(Ipv4Addr::new(buf[16], buf[17], buf[18], buf[19])),
            ttl: buf[8],
            proto: buf[9],
            ip_header,
            payload,
        }
    }
}

/// The datagrams waiting, up to a [`BATCH`], into the slots of `data`
/// with one `recvmmsg`, each checked (an IPv4 one must hold its header;
/// one cut short by its slot is passed over) and described in `got`.
fn read_batch(
    s: &Socket,
    data: &mut [[u8; SLOT]; BATCH],
    got: &mut Vec<Datagram>,
    ipv6: bool,
) -> io::Result<usize> {
    // Made for each batch: the kernel writes each header's address and
    // control lengths back into it, and a header reused would take a
    // shorter control buffer into the next call (its hop limit or
    // destination lost).
    let cmsg = nix::cmsg_space!(nix::libc::in6_pktinfo, nix::libc::c_int, u32);
    let mut hdrs = MultiHeaders::<SockaddrStorage>::preallocate(BATCH, Some(cmsg));
    let mut meta = Vec::with_capacity(BATCH);
    let read;
    {
        let mut iovs: Vec<[IoSliceMut<'_>; 1]> =
            data.iter_mut().map(|b| [IoSliceMut::new(b)]).collect();
        let res = recvmmsg(
            s.as_raw_fd(),
            &mut hdrs,
            iovs.iter_mut(),
            MsgFlags::MSG_DONTWAIT,
            None,
        )
        .map_err(io::Error::from)?;
        for (slot, m) in res.enumerate() {
            let cut = m.flags.contains(MsgFlags::MSG_TRUNC);
            let mut to = IpAddr::V6(Ipv6Addr::UNSPECIFIED);
            let mut ttl = 0u8;
            let mut dropped = None;
            if let Ok(cms) = m.cmsgs() {
                for c in cms {
                    match c {
                        ControlMessageOwned::Ipv6PacketInfo(p) => {
                            to = IpAddr::V6(Ipv6Addr::from(p.ipi6_addr.s6_addr))
                        }
                        ControlMessageOwned::Ipv6HopLimit(h) => ttl = h.clamp(0, 255) as u8,
                        ControlMessageOwned::RxqOvfl(n) => dropped = Some(n),
                        _ => {}
                    }
                }
            }
            let from = m
                .address
                .as_ref()
                .and_then(|a| a.as_sockaddr_in6())
                .map(|a| IpAddr::V6(a.ip()));
            meta.push((slot, m.bytes, cut, from, to, ttl, dropped));
        }
        read = meta.len();
    }
    for (slot, len, cut, from, to, ttl, dropped) in meta {
        if cut {
            log::debug!("VRRP: a datagram longer than {SLOT} bytes passed over");
            continue;
        }
        if ipv6 {
            let Some(from) = from else { continue };
            got.push(Datagram {
                slot,
                len,
                dropped,
                ipv6: Some((from, to, ttl)),
            });
            continue;
        }
        let b = &data[slot];
        let ihl = usize::from(b[0] & 0x0f) * 4;
        if len < 20 || ihl < 20 || len < ihl {
            log::debug!("VRRP: a short IPv4 datagram passed over");
            continue;
        }
        got.push(Datagram {
            slot,
            len,
            dropped,
            ipv6: None,
        });
    }
    Ok(read)
}

/// A packet socket that only sends: whole Ethernet frames (GARP, NA) out
/// of one interface. Protocol 0, so nothing is ever queued to it.
pub struct FrameSocket {
    sock: Socket,
}

impl FrameSocket {
    /// Opens it.
    pub fn open() -> io::Result<FrameSocket> {
        let sock = Socket::new(Domain::PACKET, Type::RAW, Some(Protocol::from(0)))?;
        sock.set_nonblocking(true)?;
        Ok(FrameSocket { sock })
    }

    /// Sends `frame` out of `iface` (the kernel reads the protocol from
    /// the frame's EtherType).
    pub fn send(&self, iface: &Iface, frame: &[u8]) -> io::Result<()> {
        let to = iface
            .link
            .ok_or_else(|| io::Error::other(format!("{} has no link address", iface.name)))?;
        sendto(self.sock.as_raw_fd(), frame, &to, MsgFlags::empty()).map_err(io::Error::from)?;
        Ok(())
    }
}

/// Whether IPv6 forwarding is on for `iface` (the NA's Router flag).
pub fn ipv6_forwarding(iface: &str) -> bool {
    std::fs::read_to_string(format!("/proc/sys/net/ipv6/conf/{iface}/forwarding"))
        .is_ok_and(|s| s.trim() == "1")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_loopback_interface_is_found_with_its_addresses() {
        let lo = Iface::lookup("lo").unwrap().expect("lo exists");
        assert_eq!(lo.index, 1);
        assert!(lo.ipv4.contains(&Ipv4Addr::LOCALHOST), "{lo:?}");
        assert!(Iface::lookup("no-such-if0").unwrap().is_none());
    }
}
