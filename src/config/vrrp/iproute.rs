//! One `virtual_routes` / `static_routes` line, read as keepalived
//! 2.2.7's `vrrp_iproute.c:alloc_route()` reads it, with its messages:
//! `[inet|inet6] [src IP] [from PREFIX] [via|gw [inet|inet6] IP] [or IP]
//! [dev|oif IF] [table T] [scope S] [protocol P] [metric|priority|
//! preference N] [tos|dsfield D] [onlink] [mtu|advmss|rtt|rttvar|
//! reordering|window|cwnd|ssthresh|rto_min [lock] V] [hoplimit|initcwnd|
//! initrwnd|quickack|fastopen_no_cookie N] [features ecn] [congctl [lock]
//! NAME] [realms R] [expires N] [pref P] [ttl-propagate on|off] [encap …]
//! [no_track] [[to] [TYPE] PREFIX] [nexthop via IP [dev IF] [weight N]
//! [onlink] …]`. Pure; the VRRP side adds what is kept through rtnetlink.

use super::address::parse_prefix;
use super::ctx::Ctx;
use super::encap::{parse_encap, Encap};
use super::nexthop::parse_nexthops;
pub use super::nexthop::NextHop;
use super::rttables::{self, Kind};
use crate::config::parser::parse_ip;
use serde::Serialize;
use std::net::IpAddr;

/// keepalived's routing protocol number (`RTPROT_KEEPALIVED`).
pub const RTPROT_KEEPALIVED: u8 = 18;

/// `RTN_UNICAST`.
pub const RTN_UNICAST: u8 = 1;

/// The kernel's `RTAX_*` metric numbers keepalived sets.
pub mod rtax {
    /// `RTAX_MTU`.
    pub const MTU: u16 = 2;
    /// `RTAX_WINDOW`.
    pub const WINDOW: u16 = 3;
    /// `RTAX_RTT`.
    pub const RTT: u16 = 4;
    /// `RTAX_RTTVAR`.
    pub const RTTVAR: u16 = 5;
    /// `RTAX_SSTHRESH`.
    pub const SSTHRESH: u16 = 6;
    /// `RTAX_CWND`.
    pub const CWND: u16 = 7;
    /// `RTAX_ADVMSS`.
    pub const ADVMSS: u16 = 8;
    /// `RTAX_REORDERING`.
    pub const REORDERING: u16 = 9;
    /// `RTAX_HOPLIMIT`.
    pub const HOPLIMIT: u16 = 10;
    /// `RTAX_INITCWND`.
    pub const INITCWND: u16 = 11;
    /// `RTAX_FEATURES`.
    pub const FEATURES: u16 = 12;
    /// `RTAX_RTO_MIN`.
    pub const RTO_MIN: u16 = 13;
    /// `RTAX_INITRWND`.
    pub const INITRWND: u16 = 14;
    /// `RTAX_QUICKACK`.
    pub const QUICKACK: u16 = 15;
    /// `RTAX_CC_ALGO`.
    pub const CC_ALGO: u16 = 16;
    /// `RTAX_FASTOPEN_NO_COOKIE`.
    pub const FASTOPEN_NO_COOKIE: u16 = 17;
}

/// A virtual or static route.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Route {
    /// IPv6 route.
    pub ipv6: bool,
    /// Destination (the unspecified address for `default`).
    pub dst: IpAddr,
    /// Its prefix length.
    pub prefix: u8,
    /// `src`: the preferred source.
    pub src: Option<IpAddr>,
    /// `from`: the source prefix (IPv6 only).
    pub from: Option<(IpAddr, u8)>,
    /// `via`/`gw`.
    pub via: Option<IpAddr>,
    /// `dev`/`oif`.
    pub dev: Option<String>,
    /// `metric`/`priority`/`preference`.
    pub metric: Option<u32>,
    /// `table` (main unless given).
    pub table: u32,
    /// `scope`, when given.
    pub scope: Option<u8>,
    /// Route type (`RTN_*`, unicast unless given).
    pub rtype: u8,
    /// Routing protocol (keepalived's 18 for every tracked route).
    pub protocol: Option<u8>,
    /// `tos`/`dsfield`.
    pub tos: Option<u8>,
    /// `onlink`.
    pub onlink: bool,
    /// Metrics (`RTAX_*`, value) in the order given.
    pub metrics: Vec<(u16, u32)>,
    /// `lock` bits (1 << RTAX).
    pub locks: u32,
    /// `congctl`.
    pub congctl: Option<String>,
    /// `realms`.
    pub realms: Option<u32>,
    /// `expires` (IPv6).
    pub expires: Option<u32>,
    /// `pref` (IPv6 router preference).
    pub pref: Option<u8>,
    /// `ttl-propagate`.
    pub ttl_propagate: Option<u8>,
    /// `nexthop`s (or the two of `via A or B`).
    pub nexthops: Vec<NextHop>,
    /// `encap`: a lightweight tunnel encapsulation.
    pub encap: Option<Encap>,
    /// `no_track`, or a route that cannot be tracked (no `dev`).
    pub no_track: bool,
    /// Line of the route.
    pub line: usize,
}

/// The word at `i`, or keepalived's missing-parameter stop.
pub(super) fn slot<'w>(cx: &mut Ctx, words: &'w [String], i: usize) -> Option<&'w str> {
    match words.get(i) {
        Some(w) => Some(w.as_str()),
        None => {
            cx.missing_word(words, i);
            None
        }
    }
}

/// A name or number of `kind` (`/etc/iproute2`), or keepalived's message
/// (`%s` the word).
pub(super) fn named(cx: &mut Ctx, kind: Kind, s: &str, msg: &str) -> Option<u32> {
    let v = rttables::find(kind, s);
    if v.is_none() {
        cx.err(msg.replace("%s", s));
    }
    v
}

/// The interface word at `i` of a route or next hop, or keepalived's
/// message (the same for both) when it does not exist.
pub(super) fn dev(cx: &mut Ctx, words: &[String], i: usize) -> Option<String> {
    let s = slot(cx, words, i)?;
    if !cx.interface_known(s) {
        cx.bad_interface(format!(
            "WARNING - interface {s} for VROUTE nexthop doesn't exist"
        ));
        return None;
    }
    Some(s.to_string())
}

/// `get_u32()`/`get_u8()`: `read_unsigned()` with keepalived's message.
pub(super) fn get_num(cx: &mut Ctx, s: &str, max: u64, msg: &str) -> Option<u32> {
    match cx.read_unsigned(s, 0, max) {
        Some(v) => Some(v as u32),
        None => {
            cx.err(msg.replace("%s", s));
            None
        }
    }
}

/// `get_time_rtt()`: a time with an optional unit (`s`, `sec`, `secs`,
/// `ms`, `msec`, `msecs`), the number read by keepalived's decimal reader
/// (its messages; extra decimals are warned of and dropped). `raw` = no
/// unit: the kernel's own units.
fn time_rtt(cx: &mut Ctx, s: &str) -> Option<(u32, bool)> {
    let units = [
        ("msecs", 1),
        ("msec", 1),
        ("ms", 1),
        ("secs", 1000),
        ("sec", 1000),
        ("s", 1000),
    ];
    let (num, mult, raw) = units
        .iter()
        .find_map(|(u, m)| s.strip_suffix(u).map(|n| (n, *m, false)))
        .unwrap_or((s, 1, true));
    let v = match crate::config::numbers::read_decimal(cx, num, 0, u64::from(u32::MAX), 0) {
        Ok(v) => v,
        Err(crate::config::numbers::Decimal::TooManyPlaces) => {
            num.split('.').next()?.parse::<u64>().ok()?
        }
        Err(_) => return None,
    };
    let v = v.checked_mul(mult)?;
    (v <= u64::from(u32::MAX)).then_some((v as u32, raw))
}

/// A single address as `parse_ipaddress()` reads one: an invalid one is
/// keepalived's two lines, the second `what` (`%s` the word).
pub(super) fn address(cx: &mut Ctx, s: &str, what: &str) -> Option<IpAddr> {
    let a = parse_ip(s);
    if a.is_none() {
        cx.err(format!("VRRP parsed invalid IP {s}. skipping IP..."));
        cx.err(what.replace("%s", s));
    }
    a
}

/// One address of the route's own (`src`, `via`): family checked.
fn family_address(cx: &mut Ctx, family: &mut Option<bool>, s: &str, what: &str) -> Option<IpAddr> {
    let a = address(cx, s, what)?;
    if !set_family(family, a.is_ipv6()) {
        cx.err(MIX);
        return None;
    }
    Some(a)
}

/// Family bookkeeping as `alloc_route()` keeps it.
pub(super) fn set_family(family: &mut Option<bool>, v6: bool) -> bool {
    match *family {
        None => {
            *family = Some(v6);
            true
        }
        Some(f) => f == v6,
    }
}

const MIX: &str = "Cannot mix IPv4 and IPv6 addresses for route";

/// Reads one route line; `None` when keepalived drops it (reported).
pub fn parse_route(cx: &mut Ctx, words: &[String], line: usize) -> Option<Route> {
    cx.line = line;
    let mut r = Route {
        ipv6: false,
        dst: IpAddr::from([0, 0, 0, 0]),
        prefix: 0,
        src: None,
        from: None,
        via: None,
        dev: None,
        metric: None,
        table: 254,
        scope: None,
        rtype: RTN_UNICAST,
        protocol: None,
        tos: None,
        onlink: false,
        metrics: Vec::new(),
        locks: 0,
        congctl: None,
        realms: None,
        expires: None,
        pref: None,
        ttl_propagate: None,
        nexthops: Vec::new(),
        encap: None,
        no_track: false,
        line,
    };
    let mut family: Option<bool> = None;
    let mut dst: Option<(Option<IpAddr>, u8)> = None;
    let mut dest_text = String::new();
    let mut do_nexthop = false;
    let mut i = 0;
    while i < words.len() {
        let w = words[i].as_str();
        match w {
            "inet6" | "inet" => {
                let v6 = w == "inet6";
                if !set_family(&mut family, v6) {
                    cx.err(if v6 {
                        "inet6 specified for IPv4 route"
                    } else {
                        "inet specified for IPv6 route"
                    });
                    return None;
                }
                // keepalived steps past the word after it too.
                i += 1;
            }
            "src" => {
                i += 1;
                let s = slot(cx, words, i)?;
                r.src = Some(family_address(
                    cx,
                    &mut family,
                    s,
                    "invalid route src address %s",
                )?);
            }
            "as" => {
                i += 1;
                if slot(cx, words, i)? == "to" {
                    i += 1;
                }
                cx.err("\"as to\" for MPLS only - ignoring");
            }
            "via" | "gw" => {
                if w == "gw" {
                    cx.err("\"gw\" for routes is deprecated. Please use \"via\"");
                }
                i += 1;
                let mut s = slot(cx, words, i)?;
                let fam = match s {
                    "inet" | "inet6" => {
                        let f = Some(s == "inet6");
                        i += 1;
                        s = slot(cx, words, i)?;
                        f
                    }
                    _ => family,
                };
                if let Some(f) = fam {
                    if !set_family(&mut family, f) {
                        cx.err(MIX);
                        return None;
                    }
                }
                r.via = Some(family_address(
                    cx,
                    &mut family,
                    s,
                    "invalid route via address %s",
                )?);
            }
            "from" => {
                i += 1;
                let s = slot(cx, words, i)?;
                let Some((a, p)) = parse_prefix(cx, s) else {
                    cx.err(format!("invalid route from address {s}"));
                    return None;
                };
                if !a.is_some_and(|a| a.is_ipv6()) {
                    cx.err(format!("route from address only supported with IPv6 ({s})"));
                    return None;
                }
                if !set_family(&mut family, true) {
                    cx.err(MIX);
                    return None;
                }
                r.from = a.map(|a| (a, p));
            }
            "tos" | "dsfield" => {
                i += 1;
                let s = slot(cx, words, i)?;
                r.tos = Some(named(cx, Kind::DsField, s, "TOS value %s is invalid")? as u8);
            }
            "table" => {
                i += 1;
                let s = slot(cx, words, i)?;
                r.table = named(cx, Kind::Table, s, "Routing table %s not found for route")?;
            }
            "protocol" => {
                i += 1;
                let s = slot(cx, words, i)?;
                let msg = "Protocol %s not found or invalid for route";
                r.protocol = Some(named(cx, Kind::Proto, s, msg)? as u8);
            }
            "scope" => {
                i += 1;
                let s = slot(cx, words, i)?;
                let msg = "Scope %s not found or invalid for route";
                r.scope = Some(named(cx, Kind::Scope, s, msg)? as u8);
            }
            "metric" | "priority" | "preference" => {
                i += 1;
                let s = slot(cx, words, i)?;
                r.metric = Some(get_num(
                    cx,
                    s,
                    u64::from(u32::MAX),
                    "Invalid metric %s specified for route",
                )?);
            }
            "dev" | "oif" => {
                i += 1;
                r.dev = Some(dev(cx, words, i)?);
            }
            "onlink" => r.onlink = true,
            "encap" => {
                let (e, next) = parse_encap(cx, words, i);
                r.encap = e.or(r.encap.take());
                i = next;
                continue;
            }
            "expires" => {
                i += 1;
                if family == Some(false) {
                    cx.err("expires is only valid for IPv6");
                    return None;
                }
                family = Some(true);
                let s = slot(cx, words, i)?;
                r.expires = Some(get_num(
                    cx,
                    s,
                    u64::from(u32::MAX),
                    "Invalid expires time %s specified for route",
                )?);
            }
            "mtu" | "advmss" | "reordering" | "cwnd" | "ssthresh" => {
                let (id, msg) = match w {
                    "mtu" => (rtax::MTU, "Invalid MTU %s specified for route"),
                    "advmss" => (rtax::ADVMSS, "Invalid advmss %s specified for route"),
                    "reordering" => (
                        rtax::REORDERING,
                        "Invalid reordering value %s specified for route",
                    ),
                    "cwnd" => (rtax::CWND, "Invalid cwnd value %s specified for route"),
                    _ => (
                        rtax::SSTHRESH,
                        "Invalid ssthresh value %s specified for route",
                    ),
                };
                i += 1;
                if slot(cx, words, i)? == "lock" {
                    r.locks |= 1 << id;
                    i += 1;
                }
                let s = slot(cx, words, i)?;
                let v = get_num(cx, s, u64::from(u32::MAX), msg)?;
                r.metrics.push((id, v));
            }
            "window" | "initcwnd" | "initrwnd" => {
                let (id, msg) = match w {
                    "window" => (rtax::WINDOW, "Invalid window value %s specified for route"),
                    "initcwnd" => (
                        rtax::INITCWND,
                        "Invalid initcwnd value %s specified for route",
                    ),
                    _ => (
                        rtax::INITRWND,
                        "Invalid initrwnd value %s specified for route",
                    ),
                };
                i += 1;
                let s = slot(cx, words, i)?;
                let v = get_num(cx, s, u64::from(u32::MAX), msg)?;
                r.metrics.push((id, v));
            }
            "hoplimit" => {
                i += 1;
                let s = slot(cx, words, i)?;
                let v = get_num(cx, s, 255, "Invalid hoplimit %s specified for route")?;
                r.metrics.push((rtax::HOPLIMIT, v));
            }
            "quickack" | "fastopen_no_cookie" => {
                let (id, msg) = if w == "quickack" {
                    (
                        rtax::QUICKACK,
                        "Invalid quickack value %s specified for route",
                    )
                } else {
                    (
                        rtax::FASTOPEN_NO_COOKIE,
                        "Invalid fastopen_no_cookie value %s specified for route",
                    )
                };
                i += 1;
                let s = slot(cx, words, i)?;
                let v = get_num(cx, s, 1, msg)?;
                r.metrics.push((id, v));
            }
            "rtt" | "rttvar" | "rto_min" => {
                let id = match w {
                    "rtt" => rtax::RTT,
                    "rttvar" => rtax::RTTVAR,
                    _ => rtax::RTO_MIN,
                };
                i += 1;
                if slot(cx, words, i)? == "lock" {
                    r.locks |= 1 << id;
                    i += 1;
                }
                let s = slot(cx, words, i)?;
                let limit = match id {
                    rtax::RTT => u32::MAX / 8,
                    rtax::RTTVAR => u32::MAX / 4,
                    _ => u32::MAX,
                };
                let v = match time_rtt(cx, s) {
                    Some((v, raw)) if raw || v < limit || id == rtax::RTO_MIN => match (id, raw) {
                        (rtax::RTT, true) => v.saturating_mul(8),
                        (rtax::RTTVAR, true) => v.saturating_mul(4),
                        _ => v,
                    },
                    _ => {
                        cx.err(if id == rtax::RTO_MIN {
                            format!("Invalid rto_min value {s} specified for route")
                        } else {
                            format!("Invalid {w} {s} for route")
                        });
                        return None;
                    }
                };
                r.metrics.push((id, v));
            }
            "features" => {
                i += 1;
                let s = slot(cx, words, i)?;
                if s == "ecn" {
                    r.metrics.push((rtax::FEATURES, 1));
                } else {
                    cx.err(format!("feature {s} not supported"));
                }
            }
            "congctl" => {
                i += 1;
                if slot(cx, words, i)? == "lock" {
                    r.locks |= 1 << rtax::CC_ALGO;
                    i += 1;
                }
                r.congctl = Some(slot(cx, words, i)?.to_string());
            }
            "realms" => {
                i += 1;
                let s = slot(cx, words, i)?;
                let Some(v) = rttables::realms(s) else {
                    cx.err(format!("Invalid realms {s} for route"));
                    return None;
                };
                if family == Some(true) {
                    cx.err("realms are only valid for IPv4");
                    return None;
                }
                family = Some(false);
                r.realms = Some(v);
            }
            "pref" => {
                i += 1;
                if family == Some(false) {
                    cx.err("pref is only valid for IPv6");
                    return None;
                }
                family = Some(true);
                let s = slot(cx, words, i)?;
                r.pref = Some(match s {
                    "low" => 3,
                    "medium" => 0,
                    "high" => 1,
                    _ => get_num(cx, s, 255, "Invalid pref value %s specified for route")? as u8,
                });
            }
            "ttl-propagate" => {
                i += 1;
                let s = slot(cx, words, i)?;
                match s {
                    "enabled" => r.ttl_propagate = Some(1),
                    "disabled" => r.ttl_propagate = Some(0),
                    _ => cx.err(format!("ttl-propagate value {s} not recognised")),
                }
            }
            "or" => {
                cx.err("\"or\" for routes is deprecated. Please use \"nexthop\"");
                if !r.nexthops.is_empty() {
                    cx.err("\"or\" route already specified - ignoring subsequent");
                    i += 2;
                    continue;
                }
                let first = NextHop {
                    via: r.via.take(),
                    dev: None,
                    weight: None,
                    onlink: false,
                    realms: None,
                    encap: None,
                };
                i += 1;
                let s = slot(cx, words, i)?;
                let a = address(cx, s, "Invalid \"or\" address %s")?;
                r.nexthops.push(first);
                r.nexthops.push(NextHop {
                    via: Some(a),
                    dev: None,
                    weight: None,
                    onlink: false,
                    realms: None,
                    encap: None,
                });
            }
            "nexthop" => {
                if !r.nexthops.is_empty() {
                    cx.err("Cannot specify nexthops with \"or\" route");
                } else {
                    do_nexthop = true;
                }
                break;
            }
            "no_track" => r.no_track = true,
            _ => {
                if w == "to" {
                    i += 1;
                }
                if let Some(t) = rttables::rtntype(w) {
                    r.rtype = t;
                    i += 1;
                }
                let d = slot(cx, words, i)?;
                dest_text = d.to_string();
                let Some((a, p)) = parse_prefix(cx, d) else {
                    cx.err(format!("unknown route keyword {d}"));
                    return None;
                };
                // `default` has no family of its own (keepalived's
                // AF_UNSPEC): after a word that set one, it is a mix too.
                let mixed = match a {
                    Some(a) => !set_family(&mut family, a.is_ipv6()),
                    None => family.is_some(),
                };
                if mixed {
                    cx.err(format!("{MIX} ({d})"));
                    return None;
                }
                dst = Some((a, p));
            }
        }
        i += 1;
    }
    if do_nexthop {
        parse_nexthops(cx, words, i, &mut r, &mut family)?;
    } else if i < words.len() {
        cx.err(format!("Route has trailing nonsense - {}", words[i]));
        return None;
    }
    let Some((dst_addr, prefix)) = dst else {
        cx.err("Route must have a destination");
        return None;
    };
    if !r.no_track {
        if r.protocol.is_some_and(|p| p != RTPROT_KEEPALIVED) {
            cx.err(format!(
                "Route cannot be tracked if protocol is not RTPROT_KEEPALIVED({RTPROT_KEEPALIVED}), resetting protocol"
            ));
        }
        r.protocol = Some(RTPROT_KEEPALIVED);
        if r.dev.is_none() {
            cx.err(format!(
                "Warning - cannot track route {dest_text} with no interface specified, not tracking"
            ));
            r.no_track = true;
        }
    }
    r.ipv6 = family.unwrap_or(false);
    r.dst = dst_addr.unwrap_or(if r.ipv6 {
        IpAddr::from([0u16; 8])
    } else {
        IpAddr::from([0, 0, 0, 0])
    });
    r.prefix = prefix;
    Some(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::config::vrrp::ctx::testing::{assert_reported, w, Eth0};

    #[test]
    fn route_lines_read_as_keepalived_reads_them() {
        let host = Eth0;
        let mut diags = crate::config::diag::Diagnostics::default();
        let mut cx = Ctx::new(&mut diags, "t.conf".into(), &host, true);
        let r = parse_route(
            &mut cx,
            &w("src 192.0.2.100 to 198.51.100.0/24 via 192.0.2.254 dev eth0 metric 5 table 100 mtu lock 1400"),
            3,
        )
        .unwrap();
        assert_eq!((r.dst, r.prefix), ("198.51.100.0".parse().unwrap(), 24));
        assert_eq!(r.via, Some("192.0.2.254".parse().unwrap()));
        assert_eq!(r.src, Some("192.0.2.100".parse().unwrap()));
        assert_eq!(
            (r.dev.as_deref(), r.metric, r.table),
            (Some("eth0"), Some(5), 100)
        );
        assert_eq!(
            (r.metrics.clone(), r.locks),
            (vec![(rtax::MTU, 1400)], 1 << rtax::MTU)
        );
        assert_eq!((r.protocol, r.no_track), (Some(RTPROT_KEEPALIVED), false));
        let r = parse_route(&mut cx, &w("blackhole 2001:db8:1::/48"), 4).unwrap();
        assert_eq!((r.rtype, r.prefix, r.ipv6, r.no_track), (6, 48, true, true));
        let r = parse_route(&mut cx, &w("default via 2001:db8::1 dev eth0"), 5).unwrap();
        assert_eq!((r.dst, r.prefix), ("::".parse().unwrap(), 0));
        let r = parse_route(
            &mut cx,
            &w("198.51.100.0/24 dev eth0 nexthop via 192.0.2.1 weight 2 nexthop via 192.0.2.2"),
            6,
        )
        .unwrap();
        assert_eq!(r.nexthops.len(), 2);
        assert_eq!(r.nexthops[0].weight, Some(2));
        let r = parse_route(
            &mut cx,
            &w("198.51.100.0/24 dev eth0 encap ip id 5 dst 192.0.2.1 metric 3"),
            6,
        )
        .unwrap();
        assert_eq!(
            r.encap,
            Some(Encap::Ip(super::super::encap::IpTunnel {
                id: Some(5),
                dst: Some("192.0.2.1".parse().unwrap()),
                ..Default::default()
            }))
        );
        assert_eq!(r.metric, Some(3), "the words after the encap are read");
        assert!(parse_route(&mut cx, &w("192.0.2.0/24 via 2001:db8::1"), 7).is_none());
        assert!(parse_route(&mut cx, &w("metric 5 dev eth0"), 8).is_none());
        assert!(parse_route(&mut cx, &w("198.51.100.0/24 dev nosuch"), 9).is_none());
        assert!(cx.bad_if);
        assert_reported(
            &diags,
            &[
            (4, "Warning - cannot track route 2001:db8:1::/48 with no interface specified, not tracking"),
            (7, "Cannot mix IPv4 and IPv6 addresses for route"),
            (8, "Route must have a destination"),
            (9, "WARNING - interface nosuch for VROUTE nexthop doesn't exist"),
],
        );
    }
}
