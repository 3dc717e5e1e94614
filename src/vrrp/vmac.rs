//! VMAC interfaces (`use_vmac`), as keepalived 2.2.7 makes them
//! (`vrrp_vmac.c:netlink_link_add_vmac`, `vrrp_if_config.c`): a macvlan
//! in private mode on the instance's interface, named `vrrp.VRID` (or the
//! configured name), with the VRRP MAC 00:00:5e:00:01:VRID (IPv4) or
//! 00:00:5e:00:02:VRID (IPv6), up from the start on every node (the VIP
//! alone moves) and deleted at stop. IPv6 address generation is off on it
//! (an IPv6 VMAC gets its interface's link-local, deprecated, as
//! keepalived gives it); an IPv4 VMAC has IPv6 disabled. The sysctls keepalived sets go with it: on the VMAC
//! `arp_ignore=1`, `accept_local=1`, `rp_filter=0`; on its parent
//! `arp_ignore=1`, `arp_filter=1` (left so at stop, as keepalived 2.2.7
//! leaves them).
//!
//! The messages are built with netlink-packet-route ([`new_link`], pure)
//! and sent on a blocking `NETLINK_ROUTE` socket of their own: the link
//! must exist before the instance opens its socket on it, which happens as
//! the runner attaches the instance, outside the async address worker.

use netlink_packet_core::{
    NetlinkHeader, NetlinkMessage, NetlinkPayload, NLM_F_ACK, NLM_F_CREATE, NLM_F_EXCL,
    NLM_F_REQUEST,
};
use netlink_packet_route::link::{
    AfSpecInet6, AfSpecUnspec, In6AddrGenMode, InfoData, InfoKind, InfoMacVlan, LinkAttribute,
    LinkFlags, LinkInfo, LinkMessage, MacVlanMode,
};
use netlink_packet_route::RouteNetlinkMessage;
use netlink_sys::{protocols::NETLINK_ROUTE, Socket, SocketAddr};
use std::io;

/// The VRRP virtual MAC of `vrid` (RFC 3768 §7.3, RFC 5798 §7.3).
pub fn mac(vrid: u8, ipv6: bool) -> [u8; 6] {
    [0x00, 0x00, 0x5e, 0x00, if ipv6 { 0x02 } else { 0x01 }, vrid]
}

/// The `RTM_NEWLINK` body creating VMAC `name` on interface `parent`
/// (down: it is configured before it comes up).
pub fn new_link(name: &str, parent: u32, mac: [u8; 6]) -> LinkMessage {
    let mut m = LinkMessage::default();
    m.attributes = vec![
        LinkAttribute::IfName(name.to_string()),
        LinkAttribute::Link(parent),
        LinkAttribute::Address(mac.to_vec()),
        LinkAttribute::LinkInfo(vec![
            LinkInfo::Kind(InfoKind::MacVlan),
            LinkInfo::Data(InfoData::MacVlan(vec![InfoMacVlan::Mode(
                MacVlanMode::Private,
            )])),
        ]),
    ];
    m
}

/// The `RTM_NEWLINK` body turning IPv6 address generation off on link
/// `index` (keepalived sets the VMAC's link-local itself).
pub fn no_addr_gen(index: u32) -> LinkMessage {
    let mut m = LinkMessage::default();
    m.header.index = index;
    m.attributes = vec![LinkAttribute::AfSpecUnspec(vec![AfSpecUnspec::Inet6(
        vec![AfSpecInet6::AddrGenMode(In6AddrGenMode::None)],
    )])];
    m
}

/// Sends one request and waits for its acknowledgement.
fn request(msg: RouteNetlinkMessage, flags: u16) -> io::Result<()> {
    let mut sock = Socket::new(NETLINK_ROUTE)?;
    sock.bind_auto()?;
    sock.connect(&SocketAddr::new(0, 0))?;
    let tv = nix::sys::time::TimeVal::new(2, 0);
    nix::sys::socket::setsockopt(&sock, nix::sys::socket::sockopt::ReceiveTimeout, &tv)
        .map_err(io::Error::from)?;
    let mut header = NetlinkHeader::default();
    header.flags = flags;
    header.sequence_number = 1;
    let mut nl = NetlinkMessage::new(header, NetlinkPayload::InnerMessage(msg));
    nl.finalize();
    let mut buf = vec![0u8; nl.buffer_len()];
    nl.serialize(&mut buf);
    sock.send(&buf, 0)?;
    let mut rx = vec![0u8; 8192];
    let n = sock.recv(&mut &mut rx[..], 0)?;
    // NLMSG_ERROR carries the errno (0: acknowledged).
    if n >= 20 && u16::from_ne_bytes([rx[4], rx[5]]) == 2 {
        let code = i32::from_ne_bytes([rx[16], rx[17], rx[18], rx[19]]);
        if code != 0 {
            return Err(io::Error::from_raw_os_error(-code));
        }
    }
    Ok(())
}

/// Creates VMAC `name` on `parent` (an existing one of that name is
/// deleted first, as keepalived re-creates a leftover).
pub fn create(name: &str, parent: u32, mac: [u8; 6]) -> io::Result<()> {
    if let Ok(old) = nix::net::if_::if_nametoindex(name) {
        let _ = delete(old);
    }
    let msg = RouteNetlinkMessage::NewLink(new_link(name, parent, mac));
    request(msg, NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE | NLM_F_EXCL)?;
    // A link of its own kind takes the address generation mode once it
    // exists (a kernel without IPv6 refuses it: no matter).
    let index = nix::net::if_::if_nametoindex(name).map_err(io::Error::from)?;
    if let Err(e) = request(
        RouteNetlinkMessage::SetLink(no_addr_gen(index)),
        NLM_F_REQUEST | NLM_F_ACK,
    ) {
        log::debug!("{name}: addrgenmode none: {e}");
    }
    Ok(())
}

/// Gives an IPv6 VMAC its interface's link-local address (keepalived's
/// choice: the adverts keep their source), deprecated and without DAD so
/// that nothing else picks it.
pub fn add_link_local(index: u32, ll: std::net::Ipv6Addr) -> io::Result<()> {
    let mut v = crate::config::vrrp::Vip::new(std::net::IpAddr::V6(ll), 64, 0);
    v.scope = Some(253);
    v.preferred_lft = Some(0);
    let m = super::rtnl::message(index, &v, true);
    request(
        RouteNetlinkMessage::NewAddress(m),
        NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE | NLM_F_EXCL,
    )
}

/// Sets link `index` up (once it is configured: no link-local appears
/// on it meanwhile).
pub fn up(index: u32) -> io::Result<()> {
    let mut m = LinkMessage::default();
    m.header.index = index;
    m.header.flags = LinkFlags::Up;
    m.header.change_mask = LinkFlags::Up;
    request(RouteNetlinkMessage::SetLink(m), NLM_F_REQUEST | NLM_F_ACK)
}

/// Deletes the link of index `index`.
pub fn delete(index: u32) -> io::Result<()> {
    let mut m = LinkMessage::default();
    m.header.index = index;
    request(RouteNetlinkMessage::DelLink(m), NLM_F_REQUEST | NLM_F_ACK)
}

fn sysctl(path: &str, value: &str) {
    if let Err(e) = std::fs::write(path, value) {
        log::debug!("{path}: {e}");
    }
}

/// keepalived's sysctls for VMAC `name` on `parent` (`ipv6`: an IPv6
/// instance's VMAC keeps IPv6).
pub fn configure(name: &str, parent: &str, ipv6: bool) {
    let v4 = |ifname: &str, key: &str, value: &str| {
        sysctl(&format!("/proc/sys/net/ipv4/conf/{ifname}/{key}"), value)
    };
    v4(name, "arp_ignore", "1");
    v4(name, "accept_local", "1");
    v4(name, "rp_filter", "0");
    v4(parent, "arp_ignore", "1");
    v4(parent, "arp_filter", "1");
    if !ipv6 {
        sysctl(&format!("/proc/sys/net/ipv6/conf/{name}/disable_ipv6"), "1");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use netlink_packet_core::Emitable;

    #[test]
    fn a_vmac_is_a_private_macvlan_with_the_vrrp_mac() {
        assert_eq!(mac(51, false), [0, 0, 0x5e, 0, 1, 0x33]);
        assert_eq!(mac(51, true), [0, 0, 0x5e, 0, 2, 0x33]);
        let m = new_link("vrrp.51", 3, mac(51, false));
        assert!(
            !m.header.flags.contains(LinkFlags::Up),
            "up once configured"
        );
        assert!(m
            .attributes
            .contains(&LinkAttribute::IfName("vrrp.51".into())));
        assert!(m.attributes.contains(&LinkAttribute::Link(3)));
        let info = m.attributes.iter().find_map(|a| match a {
            LinkAttribute::LinkInfo(i) => Some(i),
            _ => None,
        });
        assert!(
            info.is_some_and(|i| i.contains(&LinkInfo::Data(InfoData::MacVlan(vec![
                InfoMacVlan::Mode(MacVlanMode::Private)
            ]))))
        );
        // It encodes (the kernel's layout is the crate's).
        let mut buf = vec![0u8; m.buffer_len()];
        m.emit(&mut buf);
        assert!(buf.windows(7).any(|w| w == b"vrrp.51"));
    }
}
