//! The `nexthop via IP [dev IF] [weight N] [onlink] [realms R] …` groups
//! that may end a route line (keepalived's `parse_nexthops()`), each with
//! its own `encap` ([`super::encap`]). Part of [`super::iproute`].

use super::ctx::Ctx;
use super::iproute::{address, get_num, set_family, slot, Route};
use super::rttables;
use serde::Serialize;
use std::net::IpAddr;

/// One next hop of a multipath route (`nexthop …`, or `via A or B`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NextHop {
    /// `via`.
    pub via: Option<IpAddr>,
    /// `dev`.
    pub dev: Option<String>,
    /// `weight` (1..256, as given).
    pub weight: Option<u16>,
    /// `onlink`.
    pub onlink: bool,
    /// `realms`.
    pub realms: Option<u32>,
    /// `encap`.
    pub encap: Option<super::encap::Encap>,
}

/// `parse_nexthops()`: the `nexthop …` groups ending a route line.
pub(super) fn parse_nexthops(
    cx: &mut Ctx,
    words: &[String],
    mut i: usize,
    r: &mut Route,
    family: &mut Option<bool>,
) -> Option<()> {
    while i < words.len() && words[i] == "nexthop" {
        i += 1;
        let mut nh = NextHop {
            via: None,
            dev: None,
            weight: None,
            onlink: false,
            realms: None,
            encap: None,
        };
        while i < words.len() {
            match words[i].as_str() {
                "via" => {
                    i += 1;
                    let mut s = slot(cx, words, i)?;
                    if s == "inet" || s == "inet6" {
                        if !set_family(family, s == "inet6") {
                            cx.err("IPv4/6 mismatch for nexthop");
                            return None;
                        }
                        i += 1;
                        s = slot(cx, words, i)?;
                    }
                    let a = address(cx, s, "invalid nexthop address %s")?;
                    if !set_family(family, a.is_ipv6()) {
                        cx.err("Address family mismatch for next hop");
                        return None;
                    }
                    nh.via = Some(a);
                }
                "dev" => {
                    i += 1;
                    nh.dev = Some(super::iproute::dev(cx, words, i)?);
                }
                "weight" => {
                    i += 1;
                    let s = slot(cx, words, i)?;
                    let v = get_num(cx, s, 256, "Invalid weight %s specified for route")?;
                    if v == 0 {
                        cx.err("Invalid weight 0 specified for route");
                        return None;
                    }
                    nh.weight = Some(v as u16);
                }
                "onlink" => nh.onlink = true,
                "encap" => {
                    let (e, next) = super::encap::parse_encap(cx, words, i);
                    nh.encap = e.or(nh.encap.take());
                    i = next;
                    continue;
                }
                "realms" => {
                    i += 1;
                    let s = slot(cx, words, i)?;
                    let Some(v) = rttables::realms(s) else {
                        cx.err(format!("Invalid realms {s} for route"));
                        return None;
                    };
                    if !set_family(family, false) {
                        cx.err("realms are only supported for IPv4");
                        return None;
                    }
                    nh.realms = Some(v);
                }
                "as" => {
                    // `as [to]` is read (a missing word stops as anywhere).
                    slot(cx, words, i + 1)?;
                    cx.err("'as [to]' (nat) not supported");
                    return None;
                }
                _ => break,
            }
            i += 1;
        }
        r.nexthops.push(nh);
    }
    if i < words.len() {
        cx.err(format!(
            "Route has trailing nonsense after nexthops - {}",
            words[i]
        ));
        return None;
    }
    Some(())
}
