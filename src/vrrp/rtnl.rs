//! The VRRP side's rtnetlink (I/O shell): virtual addresses added and
//! removed as keepalived 2.2.7's `vrrp_ipaddress.c:netlink_ipaddress()`
//! sends them, and the link events keepalived's netlink reader acts on
//! (`keepalived_netlink.c`: an interface going down or up).

use super::route::{RouteKind, VRoute};
use crate::config::vrrp::Vip;
use futures_util::StreamExt;
use netlink_packet_core::NetlinkPayload;
use netlink_packet_route::address::{
    AddressAttribute, AddressFlags, AddressHeaderFlags, AddressMessage, AddressScope, CacheInfo,
};
use netlink_packet_route::link::{LinkAttribute, LinkFlags};
use netlink_packet_route::route::{RouteMessage, RouteProtocol, RouteScope, RouteType};
use netlink_packet_route::{AddressFamily, RouteNetlinkMessage};
use rtnetlink::RouteMessageBuilder;
use std::io;
use std::net::IpAddr;
use tokio::sync::mpsc;

/// errno values a caller treats as "already so".
const EEXIST: i32 = 17;
const EADDRNOTAVAIL: i32 = 99;
const ENODEV: i32 = 19;
const ESRCH: i32 = 3;

/// An rtnetlink handle for addresses.
#[derive(Clone)]
pub struct Rtnl {
    handle: rtnetlink::Handle,
}

/// A failed rtnetlink request.
#[derive(Debug, thiserror::Error)]
#[error("{what}: {source}")]
pub struct RtnlError {
    /// What was asked.
    pub what: String,
    /// The kernel's answer.
    pub source: io::Error,
}

fn io_error(e: rtnetlink::Error) -> io::Error {
    match e {
        rtnetlink::Error::NetlinkError(m) => m.to_io(),
        other => io::Error::other(other.to_string()),
    }
}

impl Rtnl {
    /// Opens the connection; its driver runs on the current runtime.
    pub fn open() -> io::Result<Rtnl> {
        let (conn, handle, _) = rtnetlink::new_connection()?;
        tokio::spawn(conn);
        Ok(Rtnl { handle })
    }

    /// Adds `vip` on interface `index` (an address already there is no
    /// error: keepalived's own start leaves it).
    pub async fn add(&self, index: u32, vip: &Vip) -> Result<(), RtnlError> {
        let msg = message(index, vip, true);
        let mut req = self.handle.address().add(index, vip.addr, vip.prefix);
        *req.message_mut() = msg;
        match req.execute().await.map_err(io_error) {
            Err(e) if e.raw_os_error() == Some(EEXIST) => Ok(()),
            r => r.map_err(|source| RtnlError {
                what: format!("adding {}/{}", vip.addr, vip.prefix),
                source,
            }),
        }
    }

    /// Removes `vip` from interface `index`; an address that is not there
    /// (or an interface that went) is no error.
    pub async fn del(&self, index: u32, vip: &Vip) -> Result<(), RtnlError> {
        let msg = message(index, vip, false);
        match self
            .handle
            .address()
            .del(msg)
            .execute()
            .await
            .map_err(io_error)
        {
            Err(e) if matches!(e.raw_os_error(), Some(EADDRNOTAVAIL | ENODEV)) => Ok(()),
            r => r.map_err(|source| RtnlError {
                what: format!("removing {}/{}", vip.addr, vip.prefix),
                source,
            }),
        }
    }
}

impl Rtnl {
    /// Adds (`add`) or removes route `r` (out of interface `index`), with
    /// keepalived's protocol.
    pub async fn route(&self, r: &VRoute, index: Option<u32>, add: bool) -> Result<(), RtnlError> {
        let what = || {
            format!(
                "{} route {}/{}",
                if add { "adding" } else { "removing" },
                r.dst,
                r.prefix
            )
        };
        let msg = route_message(r, index).map_err(|e| RtnlError {
            what: what(),
            source: io::Error::other(e),
        })?;
        let res = if add {
            self.handle.route().add(msg).execute().await
        } else {
            self.handle.route().del(msg).execute().await
        };
        match res.map_err(io_error) {
            Err(e) if add && e.raw_os_error() == Some(EEXIST) => Ok(()),
            Err(e) if !add && matches!(e.raw_os_error(), Some(ESRCH | ENODEV)) => Ok(()),
            r => r.map_err(|source| RtnlError {
                what: what(),
                source,
            }),
        }
    }
}

/// keepalived's routing protocol number (`RTPROT_KEEPALIVED`).
pub const RTPROT_KEEPALIVED: u8 = 18;

/// The `RTM_NEWROUTE` / `RTM_DELROUTE` body for `r`, out of interface
/// `index` when one is given.
pub fn route_message(r: &VRoute, index: Option<u32>) -> Result<RouteMessage, String> {
    let mut b = RouteMessageBuilder::<IpAddr>::new()
        .destination_prefix(r.dst, r.prefix)
        .map_err(|e| e.to_string())?
        .protocol(RouteProtocol::Other(RTPROT_KEEPALIVED));
    if let Some(v) = r.via {
        b = b.gateway(v).map_err(|e| e.to_string())?;
    }
    if let Some(s) = r.src {
        b = b.pref_source(s).map_err(|e| e.to_string())?;
    }
    let kind = match r.kind {
        RouteKind::Unicast => RouteType::Unicast,
        RouteKind::Blackhole => RouteType::BlackHole,
        RouteKind::Unreachable => RouteType::Unreachable,
        RouteKind::Prohibit => RouteType::Prohibit,
        RouteKind::Throw => RouteType::Throw,
    };
    b = b.kind(kind);
    if let (RouteKind::Unicast, Some(i)) = (r.kind, index) {
        b = b.output_interface(i);
    }
    // ip(8)'s default: a route without a gateway is on the link.
    let scope = r
        .scope
        .unwrap_or(if r.via.is_none() && r.kind == RouteKind::Unicast {
            253
        } else {
            0
        });
    b = b.scope(RouteScope::from(scope));
    if let Some(m) = r.metric {
        b = b.priority(m);
    }
    if let Some(t) = r.table {
        b = b.table_id(t);
    }
    Ok(b.build())
}

/// The `RTM_NEWADDR` / `RTM_DELADDR` body keepalived sends for `vip`.
pub fn message(index: u32, vip: &Vip, add: bool) -> AddressMessage {
    let mut m = AddressMessage::default();
    m.header.family = if vip.addr.is_ipv4() {
        AddressFamily::Inet
    } else {
        AddressFamily::Inet6
    };
    m.header.prefix_len = vip.prefix;
    m.header.index = index;
    m.header.scope = AddressScope::from(vip.scope.unwrap_or(0));
    let mut flags = AddressFlags::empty();
    if vip.addr.is_ipv6() && !vip.dad {
        flags |= AddressFlags::Nodad;
    }
    for f in &vip.flags {
        match f.as_str() {
            "home" => flags |= AddressFlags::Homeaddress,
            "mngtmpaddr" => flags |= AddressFlags::Managetempaddr,
            "noprefixroute" => flags |= AddressFlags::Noprefixroute,
            "autojoin" => flags |= AddressFlags::Mcautojoin,
            _ => {}
        }
    }
    m.header.flags = AddressHeaderFlags::from_bits_truncate(flags.bits() as u8);
    m.attributes.push(AddressAttribute::Local(vip.addr));
    m.attributes
        .push(AddressAttribute::Address(vip.peer.unwrap_or(vip.addr)));
    if !add {
        return m;
    }
    if let Some(IpAddr::V4(b)) = vip.broadcast {
        m.attributes.push(AddressAttribute::Broadcast(b));
    }
    if let Some(l) = &vip.label {
        m.attributes.push(AddressAttribute::Label(l.clone()));
    }
    if !flags.is_empty() {
        m.attributes.push(AddressAttribute::Flags(flags));
    }
    // An IPv6 /128 VIP is deprecated at once unless told otherwise, so the
    // kernel never picks it as a source (`vrrp_ipaddress.c`).
    let preferred = match (vip.preferred_lft, vip.addr) {
        (Some(s), _) => Some(s),
        (None, IpAddr::V6(_)) if vip.prefix == 128 => Some(0),
        _ => None,
    };
    if let Some(p) = preferred {
        let mut c = CacheInfo::default();
        c.ifa_preferred = p;
        c.ifa_valid = u32::MAX;
        m.attributes.push(AddressAttribute::CacheInfo(c));
    }
    m
}

/// A link event keepalived acts on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LinkEvent {
    /// Interface name.
    pub name: String,
    /// Up and running now.
    pub up: bool,
}

/// Starts a reader of the kernel's link notifications; each change of an
/// interface's up-and-running state is sent on `tx`.
pub fn watch_links(tx: mpsc::UnboundedSender<LinkEvent>) -> io::Result<()> {
    let (conn, _handle, mut messages) =
        rtnetlink::new_multicast_connection(&[rtnetlink::MulticastGroup::Link])?;
    tokio::spawn(conn);
    tokio::spawn(async move {
        while let Some((msg, _)) = messages.next().await {
            let NetlinkPayload::InnerMessage(inner) = msg.payload else {
                continue;
            };
            let (link, deleted) = match inner {
                RouteNetlinkMessage::NewLink(l) => (l, false),
                RouteNetlinkMessage::DelLink(l) => (l, true),
                _ => continue,
            };
            let Some(name) = link.attributes.iter().find_map(|a| match a {
                LinkAttribute::IfName(n) => Some(n.clone()),
                _ => None,
            }) else {
                continue;
            };
            let f = link.header.flags;
            let up = !deleted && f.contains(LinkFlags::Up) && f.contains(LinkFlags::Running);
            if tx.send(LinkEvent { name, up }).is_err() {
                return;
            }
        }
    });
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vip(text: &str) -> Vip {
        let addr: std::net::IpAddr = text.parse().unwrap();
        Vip::new(addr, if addr.is_ipv6() { 128 } else { 32 }, 1)
    }

    #[test]
    fn ipv6_vips_go_without_dad_and_a_128_is_deprecated() {
        let m = message(3, &vip("2001:db8::100"), true);
        assert!(m.header.flags.contains(AddressHeaderFlags::Nodad));
        assert!(m.attributes.iter().any(|a| matches!(a,
            AddressAttribute::CacheInfo(c) if c.ifa_preferred == 0 && c.ifa_valid == u32::MAX)));
        let mut v = vip("2001:db8::100");
        v.prefix = 64;
        v.dad = true;
        let m = message(3, &v, true);
        assert!(!m.header.flags.contains(AddressHeaderFlags::Nodad));
        assert!(!m
            .attributes
            .iter()
            .any(|a| matches!(a, AddressAttribute::CacheInfo(_))));
    }

    #[test]
    fn ipv4_vips_carry_what_was_written_and_no_invented_broadcast() {
        let mut v = vip("192.0.2.100");
        v.prefix = 24;
        let m = message(2, &v, true);
        assert!(!m
            .attributes
            .iter()
            .any(|a| matches!(a, AddressAttribute::Broadcast(_))));
        v.broadcast = Some("192.0.2.255".parse().unwrap());
        v.label = Some("eth0:vip".into());
        v.peer = Some("192.0.2.1".parse().unwrap());
        let m = message(2, &v, true);
        assert!(m
            .attributes
            .contains(&AddressAttribute::Broadcast("192.0.2.255".parse().unwrap())));
        assert!(m
            .attributes
            .contains(&AddressAttribute::Label("eth0:vip".into())));
        assert!(m
            .attributes
            .contains(&AddressAttribute::Address("192.0.2.1".parse().unwrap())));
        assert!(m
            .attributes
            .contains(&AddressAttribute::Local("192.0.2.100".parse().unwrap())));
    }
}
