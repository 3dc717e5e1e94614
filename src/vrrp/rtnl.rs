//! The VRRP side's rtnetlink (I/O shell): virtual addresses added and
//! removed as keepalived 2.2.7's `vrrp_ipaddress.c:netlink_ipaddress()`
//! sends them, and the link events keepalived's netlink reader acts on
//! (`keepalived_netlink.c`: an interface going down or up).

use crate::config::vrrp::encap::{Encap, IpTunnel};
use crate::config::vrrp::iproute::{RTN_UNICAST, RTPROT_KEEPALIVED};
use crate::config::vrrp::{Route, Rule, RuleAction, Vip};
use crate::vrrp::run::{GoneRoute, GoneRule};
use futures_util::StreamExt;
use netlink_packet_core::DefaultNla;
use netlink_packet_core::NetlinkPayload;
use netlink_packet_route::address::{
    AddressAttribute, AddressFlags, AddressHeaderFlags, AddressMessage, AddressScope, CacheInfo,
};
use netlink_packet_route::link::{LinkAttribute, LinkFlags, LinkMessage};
use netlink_packet_route::route::{
    MplsLabel, RouteIp6Tunnel, RouteIp6TunnelFlags, RouteIpTunnel, RouteIpTunnelFlags,
    RouteLwEnCapType, RouteLwTunnelEncap, RouteMplsIpTunnel,
};
use netlink_packet_route::route::{
    RouteAddress, RouteAttribute, RouteFlags, RouteMessage, RouteMetric, RouteNextHop,
    RouteNextHopFlags, RoutePreference, RouteProtocol, RouteRealm, RouteScope, RouteType,
};
use netlink_packet_route::rule::{
    RuleAction as NlRuleAction, RuleAttribute, RuleFlags, RuleMessage, RulePortRange, RuleUidRange,
};
use netlink_packet_route::IpProtocol;
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
const ENOENT: i32 = 2;

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
    /// Adds (`add`) or removes route `r` (out of interface `index` when
    /// one is given), with keepalived's protocol.
    pub async fn route(&self, r: &Route, index: Option<u32>, add: bool) -> Result<(), RtnlError> {
        let what = || {
            format!(
                "{} route {}/{}",
                if add { "adding" } else { "removing" },
                r.dst,
                r.prefix
            )
        };
        let msg =
            route_message(r, index, &|d| nix::net::if_::if_nametoindex(d).ok()).map_err(|e| {
                RtnlError {
                    what: what(),
                    source: io::Error::other(e),
                }
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

    /// Adds (`add`) or removes rule `r`.
    pub async fn rule(&self, r: &Rule, add: bool) -> Result<(), RtnlError> {
        let what = || {
            format!(
                "{} rule {}",
                if add { "adding" } else { "removing" },
                r.priority
            )
        };
        let msg = rule_message(r);
        let res = if add {
            let mut req = self.handle.rule().add();
            *req.message_mut() = msg;
            req.execute().await
        } else {
            self.handle.rule().del(msg).execute().await
        };
        match res.map_err(io_error) {
            Err(e) if add && e.raw_os_error() == Some(EEXIST) => Ok(()),
            Err(e) if !add && matches!(e.raw_os_error(), Some(ENOENT | ENODEV)) => Ok(()),
            r => r.map_err(|source| RtnlError {
                what: what(),
                source,
            }),
        }
    }
}

fn route_address(a: IpAddr) -> RouteAddress {
    match a {
        IpAddr::V4(a) => RouteAddress::Inet(a),
        IpAddr::V6(a) => RouteAddress::Inet6(a),
    }
}

fn metric(id: u16, v: u32) -> Option<RouteMetric> {
    use crate::config::vrrp::iproute::rtax;
    Some(match id {
        rtax::MTU => RouteMetric::Mtu(v),
        rtax::WINDOW => RouteMetric::Window(v),
        rtax::RTT => RouteMetric::Rtt(v),
        rtax::RTTVAR => RouteMetric::RttVar(v),
        rtax::SSTHRESH => RouteMetric::SsThresh(v),
        rtax::CWND => RouteMetric::Cwnd(v),
        rtax::ADVMSS => RouteMetric::Advmss(v),
        rtax::REORDERING => RouteMetric::Reordering(v),
        rtax::HOPLIMIT => RouteMetric::Hoplimit(v),
        rtax::INITCWND => RouteMetric::InitCwnd(v),
        rtax::FEATURES => RouteMetric::Features(v),
        rtax::RTO_MIN => RouteMetric::RtoMin(v),
        rtax::INITRWND => RouteMetric::InitRwnd(v),
        rtax::QUICKACK => RouteMetric::QuickAck(v),
        rtax::FASTOPEN_NO_COOKIE => RouteMetric::FastopenNoCookie(v),
        _ => return None,
    })
}

/// The `RTM_NEWROUTE` / `RTM_DELROUTE` body for `r`: out of `r.dev`
/// (through `index_of`), else interface `index` for a unicast route
/// without a gateway or next hops.
pub fn route_message(
    r: &Route,
    index: Option<u32>,
    index_of: &dyn Fn(&str) -> Option<u32>,
) -> Result<RouteMessage, String> {
    let mut b = RouteMessageBuilder::<IpAddr>::new()
        .destination_prefix(r.dst, r.prefix)
        .map_err(|e| e.to_string())?
        .protocol(RouteProtocol::from(r.protocol.unwrap_or(RTPROT_KEEPALIVED)));
    if let Some(v) = r.via {
        b = b.gateway(v).map_err(|e| e.to_string())?;
    }
    if let Some(s) = r.src {
        b = b.pref_source(s).map_err(|e| e.to_string())?;
    }
    b = b.kind(RouteType::from(r.rtype));
    let oif = match &r.dev {
        Some(d) => Some(index_of(d).ok_or_else(|| format!("no interface {d}"))?),
        None if r.rtype == RTN_UNICAST && r.via.is_none() && r.nexthops.is_empty() => index,
        None => None,
    };
    if let Some(i) = oif {
        b = b.output_interface(i);
    }
    // keepalived sends the scope given, else universe (unlike ip(8), which
    // makes a route without a gateway scope link): so does `ip route` show
    // keepalived's routes.
    let scope = r.scope.unwrap_or(0);
    b = b.scope(RouteScope::from(scope));
    if let Some(m) = r.metric {
        b = b.priority(m);
    }
    b = b.table_id(r.table);
    let mut m = b.build();
    if let Some(t) = r.tos {
        m.header.tos = t;
    }
    if r.onlink {
        m.header.flags |= RouteFlags::Onlink;
    }
    if let Some((a, p)) = r.from {
        m.header.source_prefix_length = p;
        m.attributes.push(RouteAttribute::Source(route_address(a)));
    }
    let mut metrics: Vec<RouteMetric> = r
        .metrics
        .iter()
        .filter_map(|(id, v)| metric(*id, *v))
        .collect();
    if let Some(c) = &r.congctl {
        metrics.push(RouteMetric::CcAlgo(c.clone()));
    }
    if r.locks != 0 {
        metrics.insert(0, RouteMetric::Lock(r.locks));
    }
    if !metrics.is_empty() {
        m.attributes.push(RouteAttribute::Metrics(metrics));
    }
    if let Some(rl) = r.realms {
        m.attributes.push(RouteAttribute::Realm(RouteRealm {
            source: (rl >> 16) as u16,
            destination: rl as u16,
        }));
    }
    if let Some(e) = r.expires {
        m.attributes.push(RouteAttribute::Expires(e));
    }
    if let Some(p) = r.pref {
        m.attributes
            .push(RouteAttribute::Preference(RoutePreference::from(p)));
    }
    if let Some(e) = &r.encap {
        m.attributes.extend(encap_attributes(e));
    }
    if !r.nexthops.is_empty() {
        let mut hops = Vec::new();
        for nh in &r.nexthops {
            let mut h = RouteNextHop::default();
            if let Some(d) = &nh.dev {
                h.interface_index = index_of(d).ok_or_else(|| format!("no interface {d}"))?;
            }
            if let Some(w) = nh.weight {
                h.hops = (w - 1) as u8;
            }
            if nh.onlink {
                h.flags |= RouteNextHopFlags::Onlink;
            }
            if let Some(v) = nh.via {
                h.attributes.push(RouteAttribute::Gateway(route_address(v)));
            }
            if let Some(rl) = nh.realms {
                h.attributes.push(RouteAttribute::Realm(RouteRealm {
                    source: (rl >> 16) as u16,
                    destination: rl as u16,
                }));
            }
            // keepalived 2.2.7 reads a next hop's encap and does not send
            // it (the lab: its multipath route has none): neither does this.
            hops.push(h);
        }
        m.attributes.push(RouteAttribute::MultiPath(hops));
    }
    Ok(m)
}

/// keepalived writes the tunnel flags in host order where the kernel reads
/// them big-endian (`flags 256` is `csum` on x86): the value whose
/// big-endian bytes (as the crate writes them) are those host-order ones.
fn host_order(v: u16) -> u16 {
    u16::from_be_bytes(v.to_ne_bytes())
}

/// `RTA_ENCAP_TYPE` and `RTA_ENCAP` for an encapsulation, as
/// keepalived's `add_encap()` writes them.
fn encap_attributes(e: &Encap) -> [RouteAttribute; 2] {
    fn ip_opts<A: Copy>(
        t: &IpTunnel<A>,
        addr: impl Fn(A, bool) -> RouteLwTunnelEncap,
        tos: impl Fn(u8) -> RouteLwTunnelEncap,
        ttl: impl Fn(u8) -> RouteLwTunnelEncap,
        flags: impl Fn(u16) -> RouteLwTunnelEncap,
        id: impl Fn(u64) -> RouteLwTunnelEncap,
    ) -> Vec<RouteLwTunnelEncap> {
        let mut v = Vec::new();
        v.extend(t.id.map(id));
        v.extend(t.dst.map(|a| addr(a, true)));
        v.extend(t.src.map(|a| addr(a, false)));
        v.extend(t.tos.map(tos));
        v.extend(t.ttl.map(ttl));
        v.extend(t.flags.map(flags));
        v
    }
    let (kind, nlas) = match e {
        Encap::Mpls(labels) => {
            let n = labels.len();
            let stack = labels
                .iter()
                .enumerate()
                .map(|(k, l)| MplsLabel {
                    label: *l,
                    traffic_class: 0,
                    bottom_of_stack: k + 1 == n,
                    ttl: 0,
                })
                .collect();
            (
                RouteLwEnCapType::Mpls,
                vec![RouteLwTunnelEncap::Mpls(RouteMplsIpTunnel::Destination(
                    stack,
                ))],
            )
        }
        Encap::Ip(t) => (
            RouteLwEnCapType::Ip,
            ip_opts(
                t,
                |a, dst| {
                    RouteLwTunnelEncap::Ip(if dst {
                        RouteIpTunnel::Destination(a)
                    } else {
                        RouteIpTunnel::Source(a)
                    })
                },
                |v| RouteLwTunnelEncap::Ip(RouteIpTunnel::Tos(v)),
                |v| RouteLwTunnelEncap::Ip(RouteIpTunnel::Ttl(v)),
                |v| {
                    RouteLwTunnelEncap::Ip(RouteIpTunnel::Flags(
                        RouteIpTunnelFlags::from_bits_retain(host_order(v)),
                    ))
                },
                |v| RouteLwTunnelEncap::Ip(RouteIpTunnel::Id(v)),
            ),
        ),
        Encap::Ip6(t) => (
            RouteLwEnCapType::Ip6,
            ip_opts(
                t,
                |a, dst| {
                    RouteLwTunnelEncap::Ip6(if dst {
                        RouteIp6Tunnel::Destination(a)
                    } else {
                        RouteIp6Tunnel::Source(a)
                    })
                },
                |v| RouteLwTunnelEncap::Ip6(RouteIp6Tunnel::Tc(v)),
                |v| RouteLwTunnelEncap::Ip6(RouteIp6Tunnel::Hoplimit(v)),
                |v| {
                    RouteLwTunnelEncap::Ip6(RouteIp6Tunnel::Flags(
                        RouteIp6TunnelFlags::from_bits_retain(host_order(v)),
                    ))
                },
                |v| RouteLwTunnelEncap::Ip6(RouteIp6Tunnel::Id(v)),
            ),
        ),
        // ILA_ATTR_LOCATOR (1), a u64 in host order as iproute2 sends it.
        Encap::Ila(l) => (
            RouteLwEnCapType::Ila,
            vec![RouteLwTunnelEncap::Other(DefaultNla::new(
                1,
                l.to_ne_bytes().to_vec(),
            ))],
        ),
    };
    [RouteAttribute::EncapType(kind), RouteAttribute::Encap(nlas)]
}

/// The `RTM_NEWRULE` / `RTM_DELRULE` body for `r`.
pub fn rule_message(r: &Rule) -> RuleMessage {
    let mut m = RuleMessage::default();
    m.header.family = if r.ipv6 {
        AddressFamily::Inet6
    } else {
        AddressFamily::Inet
    };
    m.header.action = match r.action {
        RuleAction::ToTable => NlRuleAction::ToTable,
        RuleAction::Goto => NlRuleAction::Goto,
        RuleAction::Nop => NlRuleAction::Nop,
        RuleAction::Blackhole => NlRuleAction::Blackhole,
        RuleAction::Unreachable => NlRuleAction::Unreachable,
        RuleAction::Prohibit => NlRuleAction::Prohibit,
    };
    if r.invert {
        m.header.flags |= RuleFlags::Invert;
    }
    if let Some(t) = r.tos {
        m.header.tos = t;
    }
    if let Some((a, p)) = r.from {
        m.header.src_len = p;
        m.attributes.push(RuleAttribute::Source(a));
    }
    if let Some((a, p)) = r.to {
        m.header.dst_len = p;
        m.attributes.push(RuleAttribute::Destination(a));
    }
    m.attributes.push(RuleAttribute::Priority(r.priority));
    if let Some(t) = r.table {
        m.header.table = if t < 256 { t as u8 } else { 252 };
        m.attributes.push(RuleAttribute::Table(t));
    }
    if let Some(g) = r.goto {
        m.attributes.push(RuleAttribute::Goto(g));
    }
    if let Some((mark, mask)) = r.fwmark {
        m.attributes.push(RuleAttribute::FwMark(mark));
        if let Some(k) = mask {
            m.attributes.push(RuleAttribute::FwMask(k));
        }
    }
    if let Some(rl) = r.realms {
        m.attributes.push(RuleAttribute::Realm(RouteRealm {
            source: (rl >> 16) as u16,
            destination: rl as u16,
        }));
    }
    if let Some(v) = r.suppress_prefixlen {
        m.attributes.push(RuleAttribute::SuppressPrefixLen(v));
    }
    if let Some(v) = r.suppress_ifgroup {
        m.attributes.push(RuleAttribute::SuppressIfGroup(v));
    }
    if let Some(i) = &r.iif {
        m.attributes.push(RuleAttribute::Iifname(i.clone()));
    }
    if let Some(o) = &r.oif {
        m.attributes.push(RuleAttribute::Oifname(o.clone()));
    }
    if let Some(t) = r.tunnel_id {
        m.attributes.push(RuleAttribute::TunId(t));
    }
    if let Some((start, end)) = r.uid_range {
        m.attributes
            .push(RuleAttribute::UidRange(RuleUidRange { start, end }));
    }
    if r.l3mdev {
        m.attributes.push(RuleAttribute::L3MDev(true));
    }
    if let Some(p) = r.protocol {
        m.attributes
            .push(RuleAttribute::Protocol(RouteProtocol::from(p)));
    }
    if let Some(p) = r.ip_proto {
        m.attributes
            .push(RuleAttribute::IpProtocol(IpProtocol::from(i32::from(p))));
    }
    if let Some((start, end)) = r.sport {
        m.attributes
            .push(RuleAttribute::SourcePortRange(RulePortRange { start, end }));
    }
    if let Some((start, end)) = r.dport {
        m.attributes
            .push(RuleAttribute::DestinationPortRange(RulePortRange {
                start,
                end,
            }));
    }
    m
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

/// A link or address event keepalived acts on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NetEvent {
    /// An interface's up-and-running state, now.
    Link {
        /// Interface name.
        name: String,
        /// Up and running.
        up: bool,
    },
    /// An address was deleted (`RTM_DELADDR`).
    AddressGone {
        /// The interface it was on.
        name: String,
        /// The address.
        addr: IpAddr,
    },
    /// A route of keepalived's protocol was deleted (`RTM_DELROUTE`).
    RouteGone(GoneRoute),
    /// A rule of keepalived's protocol was deleted (`RTM_DELRULE`).
    RuleGone(GoneRule),
}

fn route_gone(m: &RouteMessage) -> Option<NetEvent> {
    if m.header.protocol != RouteProtocol::from(RTPROT_KEEPALIVED) {
        return None;
    }
    let ipv6 = m.header.address_family == AddressFamily::Inet6;
    let mut dst = if ipv6 {
        IpAddr::V6(std::net::Ipv6Addr::UNSPECIFIED)
    } else {
        IpAddr::V4(std::net::Ipv4Addr::UNSPECIFIED)
    };
    let mut table = u32::from(m.header.table);
    let mut metric = None;
    for a in &m.attributes {
        match a {
            RouteAttribute::Destination(RouteAddress::Inet(x)) => dst = IpAddr::V4(*x),
            RouteAttribute::Destination(RouteAddress::Inet6(x)) => dst = IpAddr::V6(*x),
            RouteAttribute::Table(t) => table = *t,
            RouteAttribute::Priority(p) => metric = Some(*p),
            _ => {}
        }
    }
    Some(NetEvent::RouteGone(GoneRoute {
        ipv6,
        dst,
        prefix: m.header.destination_prefix_length,
        table,
        metric,
    }))
}

fn rule_gone(m: &RuleMessage) -> Option<NetEvent> {
    let mut priority = 0;
    let mut ours = false;
    for a in &m.attributes {
        match a {
            RuleAttribute::Priority(p) => priority = *p,
            RuleAttribute::Protocol(p) => ours = *p == RouteProtocol::from(RTPROT_KEEPALIVED),
            _ => {}
        }
    }
    ours.then(|| {
        NetEvent::RuleGone(GoneRule {
            ipv6: m.header.family == AddressFamily::Inet6,
            priority,
        })
    })
}

fn link_event(link: &LinkMessage, deleted: bool) -> Option<NetEvent> {
    let name = link.attributes.iter().find_map(|a| match a {
        LinkAttribute::IfName(n) => Some(n.clone()),
        _ => None,
    })?;
    let f = link.header.flags;
    let up = !deleted && f.contains(LinkFlags::Up) && f.contains(LinkFlags::Running);
    Some(NetEvent::Link { name, up })
}

fn address_gone(a: &AddressMessage) -> Option<NetEvent> {
    // IFA_LOCAL is the address itself (IFA_ADDRESS is the peer's on a
    // point-to-point link); IPv6 messages carry IFA_ADDRESS only.
    let addr = a
        .attributes
        .iter()
        .find_map(|x| match x {
            AddressAttribute::Local(l) => Some(*l),
            _ => None,
        })
        .or_else(|| {
            a.attributes.iter().find_map(|x| match x {
                AddressAttribute::Address(l) => Some(*l),
                _ => None,
            })
        })?;
    let name = nix::net::if_::if_indextoname(a.header.index)
        .ok()?
        .into_string()
        .ok()?;
    Some(NetEvent::AddressGone { name, addr })
}

/// Starts a reader of the kernel's link and address notifications; each
/// change of an interface's up-and-running state, and each deleted
/// address, is sent on `tx`.
pub fn watch(tx: mpsc::UnboundedSender<NetEvent>) -> io::Result<()> {
    let (conn, _handle, mut messages) = rtnetlink::new_multicast_connection(&[
        rtnetlink::MulticastGroup::Link,
        rtnetlink::MulticastGroup::Ipv4Ifaddr,
        rtnetlink::MulticastGroup::Ipv6Ifaddr,
        rtnetlink::MulticastGroup::Ipv4Route,
        rtnetlink::MulticastGroup::Ipv6Route,
        rtnetlink::MulticastGroup::Ipv4Rule,
        rtnetlink::MulticastGroup::Ipv6Rule,
    ])?;
    tokio::spawn(conn);
    tokio::spawn(async move {
        while let Some((msg, _)) = messages.next().await {
            let NetlinkPayload::InnerMessage(inner) = msg.payload else {
                continue;
            };
            let ev = match inner {
                RouteNetlinkMessage::NewLink(l) => link_event(&l, false),
                RouteNetlinkMessage::DelLink(l) => link_event(&l, true),
                RouteNetlinkMessage::DelAddress(a) => address_gone(&a),
                RouteNetlinkMessage::DelRoute(r) => route_gone(&r),
                RouteNetlinkMessage::DelRule(r) => rule_gone(&r),
                _ => None,
            };
            if let Some(ev) = ev {
                if tx.send(ev).is_err() {
                    return;
                }
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

#[cfg(test)]
mod route_tests {
    use super::*;
    use crate::config::vrrp::iproute::parse_route;

    use crate::config::vrrp::testing::Eth0;

    fn route(line: &str) -> Route {
        let host = Eth0;
        let mut diags = crate::config::diag::Diagnostics::default();
        let mut cx = crate::config::vrrp::build::Ctx::new(&mut diags, "t".into(), &host, true);
        let w: Vec<String> = line.split_whitespace().map(String::from).collect();
        parse_route(&mut cx, &w, 1).unwrap()
    }

    #[test]
    fn a_route_is_universe_unless_told_as_keepalived_sends_it() {
        let m = route_message(
            &route("198.51.100.0/24 dev eth0 metric 7 table 100"),
            Some(2),
            &|_| Some(2),
        )
        .unwrap();
        assert_eq!(m.header.scope, RouteScope::Universe, "{m:?}");
        let m = route_message(
            &route("198.51.100.0/24 dev eth0 scope link"),
            Some(2),
            &|_| Some(2),
        )
        .unwrap();
        assert_eq!(m.header.scope, RouteScope::Link, "{m:?}");
        assert_eq!(m.header.protocol, RouteProtocol::from(RTPROT_KEEPALIVED));
        let m = route_message(&route("192.0.2.192/26 via 192.0.2.10"), Some(2), &|_| {
            Some(2)
        })
        .unwrap();
        assert_eq!(m.header.scope, RouteScope::Universe, "{m:?}");
    }
}
