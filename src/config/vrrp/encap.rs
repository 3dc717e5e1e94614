//! A route's (or next hop's) `encap mpls|ip|ip6|ila …` as keepalived
//! 2.2.7's `parse_encap()` reads it (`vrrp_iproute.c`), with its messages
//! and its way of carrying on: a refused option word is read again as a
//! word of the route itself, an unknown type swallows the word after it.
//! Part of the route reader ([`super::iproute`]).

use super::ctx::Ctx;
use super::iproute::{get_num, named};
use super::rttables::Kind;
use crate::config::parser::{parse_ip, strtoul};
use serde::Serialize;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// A lightweight tunnel encapsulation (`RTA_ENCAP`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub enum Encap {
    /// `mpls L[/L…]`: the label stack.
    Mpls(Vec<u32>),
    /// `ip [id N] [dst A] [src A] [tos D] [ttl N] [flags N]`.
    Ip(IpTunnel<Ipv4Addr>),
    /// `ip6 [id N] [dst A] [src A] [tc D] [hoplimit N] [flags N]`.
    Ip6(IpTunnel<Ipv6Addr>),
    /// `ila LOCATOR` (four 16-bit hex groups).
    Ila(u64),
}

/// The options of `encap ip` / `encap ip6`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct IpTunnel<A> {
    pub id: Option<u64>,
    pub dst: Option<A>,
    pub src: Option<A>,
    /// `tos` (ip) / `tc` (ip6).
    pub tos: Option<u8>,
    /// `ttl` (ip) / `hoplimit` (ip6).
    pub ttl: Option<u8>,
    pub flags: Option<u16>,
}

impl<A> Default for IpTunnel<A> {
    fn default() -> Self {
        IpTunnel {
            id: None,
            dst: None,
            src: None,
            tos: None,
            ttl: None,
            flags: None,
        }
    }
}

/// `get_u64()`: an unsigned 64-bit number, else keepalived's two lines.
fn get_u64(cx: &mut Ctx, s: &str, msg: &str) -> Option<u64> {
    let (v, rest, overflow) = strtoul(s);
    if s.trim_start().starts_with('-') || !rest.is_empty() || overflow || s.is_empty() {
        cx.err(format!("invalid number '{s}'"));
        cx.err(msg.replace("%s", s));
        return None;
    }
    Some(v)
}

/// `parse_mpls_address()`: labels of 20 bits separated by `/`.
fn mpls_labels(s: &str) -> Option<Vec<u32>> {
    s.split('/')
        .map(|l| {
            let (v, rest, overflow) = strtoul(l);
            (!l.is_empty() && rest.is_empty() && !overflow && v < (1 << 20)).then_some(v as u32)
        })
        .collect()
}

/// `get_addr64()`: four groups of up to four hex digits.
fn locator(s: &str) -> Option<u64> {
    let groups: Vec<&str> = s.split(':').collect();
    if groups.len() != 4 {
        return None;
    }
    groups.iter().try_fold(0u64, |acc, g| {
        let ok = !g.is_empty() && g.len() <= 4 && g.bytes().all(|c| c.is_ascii_hexdigit());
        ok.then(|| (acc << 16) | u64::from(u16::from_str_radix(g, 16).unwrap_or(0)))
    })
}

/// The `ip`/`ip6` option pairs from `i`: the encapsulation (None after a
/// refusal) and the index the route reader carries on from (the word
/// that ended or broke the options).
fn ip_options<A: Copy>(
    cx: &mut Ctx,
    words: &[String],
    mut i: usize,
    v6: bool,
    addr: fn(IpAddr) -> Option<A>,
) -> (Option<IpTunnel<A>>, usize) {
    let (kind, other) = if v6 { ("ip6", "IPv4") } else { ("ip", "IPv6") };
    let mut t = IpTunnel::<A>::default();
    while i + 1 < words.len() {
        let (k, v) = (words[i].as_str(), words[i + 1].as_str());
        let ok = match k {
            "id" => {
                let msg = if v6 {
                    "id %s value invalid for IPv6 encapsulation"
                } else {
                    "encap id %s value is invalid"
                };
                get_u64(cx, v, msg).map(|n| t.id = Some(n))
            }
            "dst" | "src" => match parse_ip(v) {
                None => {
                    cx.err(format!("Invalid encap {kind} {k} {v}"));
                    None
                }
                Some(a) => match addr(a) {
                    None => {
                        cx.err(format!(
                            "{other} address {v} not valid for {kind} encapsulation"
                        ));
                        None
                    }
                    Some(a) => {
                        if k == "dst" {
                            t.dst = Some(a);
                        } else {
                            t.src = Some(a);
                        }
                        Some(())
                    }
                },
            },
            "tos" if !v6 => named(
                cx,
                Kind::DsField,
                v,
                "dsfield %s not valid for ip encapsulation",
            )
            .map(|n| t.tos = Some(n as u8)),
            // keepalived names the keyword, not the value, here.
            "tc" if v6 => match crate::config::vrrp::rttables::find(Kind::DsField, v) {
                Some(n) => {
                    t.tos = Some(n as u8);
                    Some(())
                }
                None => {
                    cx.err("tc value tc is invalid for ip6 encapsulation");
                    None
                }
            },
            "ttl" if !v6 => get_num(cx, v, 255, "ttl %s is not valid for ip encapsulation")
                .map(|n| t.ttl = Some(n as u8)),
            "hoplimit" if v6 => get_num(
                cx,
                v,
                255,
                "Invalid hoplimit %s specified for ip6 encapsulation",
            )
            .map(|n| t.ttl = Some(n as u8)),
            "flags" => get_num(
                cx,
                v,
                u64::from(u16::MAX),
                &format!("flags %s is not valid for {kind} encapsulation"),
            )
            .map(|n| t.flags = Some(n as u16)),
            _ => break,
        };
        if ok.is_none() {
            return (None, i);
        }
        i += 2;
    }
    if t.dst.is_none() && t.id.is_none() {
        cx.err(format!("address or id missing for {kind} encapsulation"));
        return (None, i);
    }
    (Some(t), i)
}

/// `parse_encap()` at the `encap` word `i`: the encapsulation read (None
/// when refused) and where the route reader goes on.
pub fn parse_encap(cx: &mut Ctx, words: &[String], i: usize) -> (Option<Encap>, usize) {
    let Some(kind) = words.get(i + 1) else {
        cx.err("Missing encap type");
        return (None, i + 1);
    };
    let i = i + 2;
    match kind.as_str() {
        "ip" => {
            let (t, next) = ip_options(cx, words, i, false, |a| match a {
                IpAddr::V4(a) => Some(a),
                IpAddr::V6(_) => None,
            });
            (t.map(Encap::Ip), next)
        }
        "ip6" => {
            let (t, next) = ip_options(cx, words, i, true, |a| match a {
                IpAddr::V6(a) => Some(a),
                IpAddr::V4(_) => None,
            });
            (t.map(Encap::Ip6), next)
        }
        "mpls" | "ila" => {
            let Some(v) = words.get(i) else {
                cx.err(if kind == "mpls" {
                    "missing address for MPLS encapsulation"
                } else {
                    "missing locator for ILA encapsulation"
                });
                return (None, i);
            };
            let e = if kind == "mpls" {
                mpls_labels(v).map(Encap::Mpls)
            } else {
                locator(v).map(Encap::Ila)
            };
            if e.is_none() {
                cx.err(if kind == "mpls" {
                    format!("invalid mpls address {v} for encapsulation")
                } else {
                    format!("invalid locator {v} for ila encapsulation")
                });
            }
            (e, i + 1)
        }
        other => {
            cx.err(format!("Unknown encap type - {other}"));
            // keepalived steps over the word after the type too.
            (None, i + 1)
        }
    }
}

/// keepalived's `print_encap()`: how a route line shows it (MPLS label
/// stack entries in hex, the ILA locator in decimal).
pub fn format_encap(e: &Encap) -> String {
    use std::fmt::Write;
    let mut o = String::new();
    match e {
        Encap::Mpls(labels) => {
            o.push_str(" encap mpls");
            for (k, l) in labels.iter().enumerate() {
                let bos = u32::from(k + 1 == labels.len()) << 8;
                let sep = if k == 0 { " " } else { "/" };
                let _ = write!(o, "{sep}{:x}", (l << 12) | bos);
            }
        }
        Encap::Ip(t) => ip_format(&mut o, "ip", t, "tos", "ttl"),
        Encap::Ip6(t) => ip_format(&mut o, "ip6", t, "tc", "hoplimit"),
        Encap::Ila(l) => {
            let _ = write!(o, " encap ila {l}");
        }
    }
    o
}

fn ip_format<A: std::fmt::Display>(
    o: &mut String,
    kind: &str,
    t: &IpTunnel<A>,
    tos: &str,
    ttl: &str,
) {
    use std::fmt::Write;
    let _ = write!(o, " encap {kind}");
    if let Some(id) = t.id {
        let _ = write!(o, " id {id}");
    }
    if let Some(a) = &t.dst {
        let _ = write!(o, " dst {a}");
    }
    if let Some(a) = &t.src {
        let _ = write!(o, " src {a}");
    }
    if let Some(v) = t.tos {
        let _ = write!(o, " {tos} {v}");
    }
    if let Some(v) = t.ttl {
        let _ = write!(o, " {ttl} {v}");
    }
    if let Some(v) = t.flags {
        let _ = write!(o, " flags 0x{v:x}");
    }
}
