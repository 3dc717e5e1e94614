//! How keepalived 2.2.7 writes an address, a route and a rule in its log
//! lines ("Restoring deleted static route …"): `format_ipaddress()`,
//! `format_iproute()` and `format_iprule()` of `vrrp_ipaddress.c`,
//! `vrrp_iproute.c` and `vrrp_iprule.c`, for the typed model. Pure.

use crate::config::vrrp::encap::format_encap;
use crate::config::vrrp::rttables::{self, Kind};
use crate::config::vrrp::{Route, Rule, RuleAction, Vip};
use std::fmt::Write;
use std::net::IpAddr;

/// `ipaddresstos()`: the address and its prefix length.
fn prefixed(a: IpAddr, prefix: u8) -> String {
    format!("{a}/{prefix}")
}

/// `format_ipaddress()` of an address on `ifname`, `set` when it is
/// (keepalived appends " set" once the kernel took it).
pub fn format_ipaddress(v: &Vip, ifname: &str, set: bool) -> String {
    // A host address is written bare (keepalived's ipaddresstos()).
    let host = v.prefix == if v.addr.is_ipv4() { 32 } else { 128 };
    let mut o = if host && v.peer.is_none() {
        v.addr.to_string()
    } else {
        prefixed(v.addr, v.prefix)
    };
    if let (IpAddr::V4(_), Some(b)) = (v.addr, v.broadcast) {
        let _ = write!(o, " brd {b}");
    }
    let _ = write!(
        o,
        " dev {ifname} scope {}",
        rttables::name(Kind::Scope, u32::from(v.scope.unwrap_or(0)))
    );
    if let Some(l) = &v.label {
        let _ = write!(o, " label {l}");
    }
    if let Some(p) = v.peer {
        let _ = write!(o, " peer {p}/{}", v.prefix);
    }
    for f in ["home"] {
        if v.flags.iter().any(|x| x == f) {
            let _ = write!(o, " {f}");
        }
    }
    if v.dad {
        o.push_str(" -nodad");
    }
    for f in ["mngtmpaddr", "noprefixroute", "autojoin"] {
        if v.flags.iter().any(|x| x == f) {
            let _ = write!(o, " {f}");
        }
    }
    if v.no_track {
        o.push_str(" no_track");
    }
    if v.addr.is_ipv6() {
        // keepalived's default: a /128 deprecated, others forever.
        let lft = v
            .preferred_lft
            .unwrap_or(if v.prefix == 128 { 0 } else { u32::MAX });
        match lft {
            0 => o.push_str(" deprecated"),
            u32::MAX => o.push_str(" preferred_lft forever"),
            n => {
                let _ = write!(o, " preferred_lft {n}");
            }
        }
    }
    if set {
        o.push_str(" set");
    }
    o
}

/// `format_iproute()` as keepalived 2.2.7 prints it (its lines start with
/// "prepend", the way it adds routes).
pub fn format_iproute(r: &Route) -> String {
    let mut o = String::from("prepend ");
    if r.rtype != 1 {
        let _ = write!(o, "{} ", rttables::rtntype_name(r.rtype));
    }
    if r.dst.is_unspecified() && r.prefix == 0 {
        o.push_str("default");
    } else {
        o.push_str(&prefixed(r.dst, r.prefix));
    }
    if let Some((a, p)) = r.from {
        let _ = write!(o, " from {}", prefixed(a, p));
    }
    if let Some(s) = r.src {
        let full = if s.is_ipv4() { 32 } else { 128 };
        let _ = write!(
            o,
            " src {}",
            prefixed(s, full).trim_end_matches(&format!("/{full}"))
        );
    }
    if let Some(t) = r.tos {
        let _ = write!(o, " tos {t}");
    }
    if let Some(e) = &r.encap {
        o.push_str(&format_encap(e));
    }
    if let Some(v) = r.via {
        let fam = if v.is_ipv6() { "inet6" } else { "inet" };
        let _ = write!(o, " via {fam} {v}");
    }
    if let Some(d) = &r.dev {
        let _ = write!(o, " dev {d}");
    }
    if r.table != 254 {
        let _ = write!(o, " table {}", r.table);
    }
    if let Some(p) = r.protocol {
        let _ = write!(o, " proto {p}");
    }
    if let Some(s) = r.scope {
        let _ = write!(o, " scope {s}");
    }
    if let Some(m) = r.metric {
        let _ = write!(o, " metric {m}");
    }
    if !r.ipv6 && r.onlink {
        o.push_str(" onlink");
    }
    if let Some(re) = r.realms {
        realms(&mut o, re);
    }
    if let Some(e) = r.expires {
        let _ = write!(o, " expires {e}sec");
    }
    for nh in &r.nexthops {
        o.push_str(" nexthop");
        if let Some(v) = nh.via {
            let six = if v.is_ipv6() { "6" } else { "" };
            let _ = write!(o, " via inet{six} {v}");
        }
        if let Some(d) = &nh.dev {
            let _ = write!(o, " dev {d}");
        }
        if let Some(w) = nh.weight {
            let _ = write!(o, " weight {w}");
        }
        if nh.onlink {
            o.push_str(" onlink");
        }
        if let Some(re) = nh.realms {
            realms(&mut o, re);
        }
        if let Some(e) = &nh.encap {
            o.push_str(&format_encap(e));
        }
    }
    if r.no_track {
        o.push_str(" no_track");
    }
    o
}

fn realms(o: &mut String, re: u32) {
    if re & 0xffff_0000 != 0 {
        let _ = write!(o, " realms {}/{}", re >> 16, re & 0xffff);
    } else {
        let _ = write!(o, " realm {}", re & 0xffff);
    }
}

/// `format_iprule()`.
pub fn format_iprule(r: &Rule) -> String {
    let mut o = String::new();
    if r.from.is_none() && r.to.is_none() && r.ipv6 {
        o.push_str("inet6 ");
    }
    if r.invert {
        o.push_str("not ");
    }
    match r.from {
        Some((a, p)) => {
            let _ = write!(o, "from {}", prefixed(a, p));
        }
        None => o.push_str("from all"),
    }
    if let Some((a, p)) = r.to {
        let _ = write!(o, " to {}", prefixed(a, p));
    }
    let _ = write!(o, " priority {}", r.priority);
    let _ = write!(o, " tos 0x{:x}", r.tos.unwrap_or(0));
    if let Some((m, mask)) = r.fwmark {
        let _ = write!(o, " fwmark 0x{m:x}");
        if let Some(k) = mask.filter(|k| *k != u32::MAX) {
            let _ = write!(o, "/0x{k:x}");
        }
    }
    if let Some(i) = &r.iif {
        let _ = write!(o, " iif {i}");
    }
    if let Some(i) = &r.oif {
        let _ = write!(o, " oif {i}");
    }
    if let Some(s) = r.suppress_prefixlen {
        let _ = write!(o, " suppress_prefixlen {s}");
    }
    if let Some(g) = r.suppress_ifgroup {
        let _ = write!(o, " suppress_ifgroup {g}");
    }
    if let Some(t) = r.tunnel_id {
        let _ = write!(o, " tunnel-id {t}");
    }
    if let Some((a, b)) = r.uid_range {
        let _ = write!(o, " uidrange {a}-{b}");
    }
    if r.l3mdev {
        o.push_str(" l3mdev");
    }
    if let Some(p) = r.protocol {
        let _ = write!(o, " protocol {p}");
    }
    if let Some(p) = r.ip_proto {
        let _ = write!(o, " ipproto {p}");
    }
    if let Some((a, b)) = r.sport {
        let _ = write!(o, " sport {a}-{b}");
    }
    if let Some((a, b)) = r.dport {
        let _ = write!(o, " dport {a}-{b}");
    }
    if let Some(re) = r.realms {
        let _ = write!(o, " realms {}/{}", re >> 16, re & 0xffff);
    }
    match r.action {
        RuleAction::ToTable => {
            let _ = write!(o, " lookup {}", r.table.unwrap_or(0));
        }
        RuleAction::Goto => {
            let _ = write!(o, " goto {}", r.goto.unwrap_or(0));
        }
        RuleAction::Nop => o.push_str(" nop"),
        RuleAction::Blackhole => o.push_str(" type blackhole"),
        RuleAction::Unreachable => o.push_str(" type unreachable"),
        RuleAction::Prohibit => o.push_str(" type prohibit"),
    }
    if r.no_track {
        o.push_str(" no_track");
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::vrrp::testing::{w, Eth0};

    fn parse<T>(
        f: impl Fn(&mut crate::config::vrrp::build::Ctx, &[String]) -> Option<T>,
        s: &str,
    ) -> T {
        let mut d = crate::config::diag::Diagnostics::default();
        let mut cx = crate::config::vrrp::build::Ctx::new(&mut d, "t.conf".into(), &Eth0, true);
        f(&mut cx, &w(s)).unwrap_or_else(|| panic!("{s}: {:?}", d.items()))
    }

    // The lines keepalived 2.2.7 logged for these (the lab, "Restoring
    // deleted static …").
    #[test]
    fn addresses_routes_and_rules_read_as_keepalived_logs_them() {
        let vip = |s: &str| parse(|cx, w| crate::config::vrrp::parse_vip(cx, w, 1), s);
        assert_eq!(
            format_ipaddress(&vip("192.0.2.60/24 dev eth0"), "eth0", true),
            "192.0.2.60/24 dev eth0 scope global set"
        );
        assert_eq!(
            format_ipaddress(
                &vip("192.0.2.61/24 dev eth0 brd + label eth0:x"),
                "eth0",
                true
            ),
            "192.0.2.61/24 brd 192.0.2.255 dev eth0 scope global label eth0:x set"
        );
        assert_eq!(
            format_ipaddress(&vip("2001:db8::61/64 dev eth0"), "eth0", true),
            "2001:db8::61/64 dev eth0 scope global preferred_lft forever set"
        );
        let route = |s: &str| {
            parse(
                |cx, w| crate::config::vrrp::iproute::parse_route(cx, w, 1),
                s,
            )
        };
        assert_eq!(
            format_iproute(&route("203.0.113.0/24 via 192.0.2.10 dev eth0")),
            "prepend 203.0.113.0/24 via inet 192.0.2.10 dev eth0 proto 18"
        );
        assert_eq!(
            format_iproute(&route(
                "198.51.101.0/24 dev eth0 metric 7 table 100 src 192.0.2.1 scope link"
            )),
            "prepend 198.51.101.0/24 src 192.0.2.1 dev eth0 table 100 proto 18 scope 253 metric 7"
        );
        assert_eq!(
            format_iproute(&route(
                "198.51.102.0/24 dev eth0 encap ip id 5 dst 192.0.2.1 ttl 30 tos 0x10 flags 1"
            )),
            "prepend 198.51.102.0/24 encap ip id 5 dst 192.0.2.1 tos 16 ttl 30 flags 0x1 dev eth0 proto 18"
        );
        assert_eq!(
            format_iproute(&route("198.51.100.0/24 dev eth0 encap mpls 100/200")),
            "prepend 198.51.100.0/24 encap mpls 64000/c8100 dev eth0 proto 18"
        );
        assert_eq!(
            format_iproute(&route("2001:db8:5::/48 via 2001:db8::10 dev eth0")),
            "prepend 2001:db8:5::/48 via inet6 2001:db8::10 dev eth0 proto 18"
        );
        let rule = |s: &str| {
            parse(
                |cx, w| {
                    let mut next = Default::default();
                    crate::config::vrrp::iprule::parse_rule(cx, w, 1, &mut next)
                },
                s,
            )
        };
        assert_eq!(
            format_iprule(&rule("fwmark 0x10 table 200 priority 200")),
            "from all priority 200 tos 0x0 fwmark 0x10 protocol 18 lookup 200"
        );
        assert_eq!(
            format_iprule(&rule(
                "from 192.0.2.0/24 to 198.51.100.0/24 lookup 100 priority 201"
            )),
            "from 192.0.2.0/24 to 198.51.100.0/24 priority 201 tos 0x0 protocol 18 lookup 100"
        );
        assert_eq!(
            format_iprule(&rule("iif eth0 tos 0x10 blackhole priority 203")),
            "from all priority 203 tos 0x10 iif eth0 protocol 18 type blackhole"
        );
        assert_eq!(
            format_iprule(&rule("from 2001:db8::/64 table 100 priority 202")),
            "from 2001:db8::/64 priority 202 tos 0x0 protocol 18 lookup 100"
        );
    }
}
