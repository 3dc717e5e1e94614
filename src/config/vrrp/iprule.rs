//! One `virtual_rules` / `static_rules` line, read as keepalived 2.2.7's
//! `vrrp_iprule.c:alloc_rule()` reads it, with its messages: `[inet|
//! inet6] [from PREFIX] [to PREFIX] [not] [preference|order|priority N]
//! [tos|dsfield D] [fwmark M[/MASK]] [realms R] [suppress_prefixlength N]
//! [suppress_ifgroup G] [dev|iif IF] [oif IF] [tunnel-id N] [uidrange
//! A-B] [l3mdev] [protocol N] [ipproto P] [sport A[-B]] [dport A[-B]]
//! [no_track] ACTION` where ACTION is `table|lookup T`, `goto N`, `nop`,
//! `blackhole`, `unreachable` or `prohibit`. A rule without a preference
//! gets the next of keepalived's descending numbers (16384 down, one
//! counter per family across the whole file), with its warning. Pure.

use super::address::parse_prefix;
use super::ctx::Ctx;
use super::iproute::{named, slot, RTPROT_KEEPALIVED};
use super::rttables::{self, strtoul_whole, Kind};
use serde::Serialize;
use std::net::IpAddr;

/// The kernel's `FR_ACT_*`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum RuleAction {
    /// `table T` (or `l3mdev`).
    ToTable,
    /// `goto N`.
    Goto,
    /// `nop`.
    Nop,
    /// `blackhole`.
    Blackhole,
    /// `unreachable`.
    Unreachable,
    /// `prohibit`.
    Prohibit,
}

/// A virtual or static rule.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Rule {
    /// IPv6 rule.
    pub ipv6: bool,
    /// `from` (None for `all`).
    pub from: Option<(IpAddr, u8)>,
    /// `to`.
    pub to: Option<(IpAddr, u8)>,
    /// `not`.
    pub invert: bool,
    /// `preference`, or the number keepalived gave it.
    pub priority: u32,
    /// `tos`.
    pub tos: Option<u8>,
    /// `fwmark` and its mask.
    pub fwmark: Option<(u32, Option<u32>)>,
    /// `realms`.
    pub realms: Option<u32>,
    /// `suppress_prefixlength`.
    pub suppress_prefixlen: Option<u32>,
    /// `suppress_ifgroup`.
    pub suppress_ifgroup: Option<u32>,
    /// `iif`/`dev`.
    pub iif: Option<String>,
    /// `oif`.
    pub oif: Option<String>,
    /// `tunnel-id`.
    pub tunnel_id: Option<u64>,
    /// `uidrange`.
    pub uid_range: Option<(u32, u32)>,
    /// `l3mdev`.
    pub l3mdev: bool,
    /// Protocol (18 for tracked rules).
    pub protocol: Option<u8>,
    /// `ipproto`.
    pub ip_proto: Option<u8>,
    /// `sport`.
    pub sport: Option<(u16, u16)>,
    /// `dport`.
    pub dport: Option<(u16, u16)>,
    /// `table`.
    pub table: Option<u32>,
    /// `goto` target.
    pub goto: Option<u32>,
    /// The action.
    pub action: RuleAction,
    /// `no_track`.
    pub no_track: bool,
    /// Line of the rule.
    pub line: usize,
}

/// keepalived's `next_rule_priority_ipv4/6` (`RULE_START_PRIORITY`).
#[derive(Debug, Clone, Copy)]
pub struct NextPriority {
    v4: u32,
    v6: u32,
}

impl Default for NextPriority {
    fn default() -> Self {
        NextPriority {
            v4: 16384,
            v6: 16384,
        }
    }
}

/// `sscanf("%hu-%hu")` as `alloc_rule()` checks it: both numbers are
/// needed (a single port is refused, as keepalived refuses it).
fn port_range(s: &str) -> Option<(u16, u16)> {
    let lead = |t: &str| -> Option<u16> {
        let n = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
        Some(t[..n].parse::<u32>().ok()? as u16)
    };
    let (a, b) = s.split_once('-')?;
    Some((lead(a)?, lead(b)?))
}

/// `inet_proto_a2n()`: a protocol name or number.
fn ip_proto(s: &str) -> Option<u8> {
    let named = match s {
        "tcp" => Some(6),
        "udp" => Some(17),
        "icmp" => Some(1),
        "ipv6-icmp" | "icmpv6" => Some(58),
        "sctp" => Some(132),
        "gre" => Some(47),
        "esp" => Some(50),
        "ah" => Some(51),
        _ => None,
    };
    named.or_else(|| s.parse::<u32>().ok().filter(|v| *v <= 255).map(|v| v as u8))
}

/// Reads one rule line; `None` when keepalived drops it (reported).
pub fn parse_rule(
    cx: &mut Ctx,
    words: &[String],
    line: usize,
    next: &mut NextPriority,
) -> Option<Rule> {
    cx.line = line;
    let mut r = Rule {
        ipv6: false,
        from: None,
        to: None,
        invert: false,
        priority: 0,
        tos: None,
        fwmark: None,
        realms: None,
        suppress_prefixlen: None,
        suppress_ifgroup: None,
        iif: None,
        oif: None,
        tunnel_id: None,
        uid_range: None,
        l3mdev: false,
        protocol: None,
        ip_proto: None,
        sport: None,
        dport: None,
        table: None,
        goto: None,
        action: RuleAction::ToTable,
        no_track: false,
        line,
    };
    let mut action: Option<RuleAction> = None;
    let mut priority: Option<u32> = None;
    let mut family: Option<bool> = None;
    let mut table_option = false;
    const MORE: &str =
        "Cannot specify more than one of table/nop/goto/blackhole/prohibit/unreachable/l3mdev for rule";
    let mut i = 0;
    while i < words.len() {
        let w = words[i].as_str();
        match w {
            "inet6" | "inet" => {
                let v6 = w == "inet6";
                if family.is_some_and(|f| f != v6) {
                    cx.err(if v6 {
                        "inet6 specified for IPv4 rule"
                    } else {
                        "inet specified for IPv6 rule"
                    });
                    return None;
                }
                family = Some(v6);
                // keepalived steps past the word after it too.
                i += 1;
            }
            "from" | "to" => {
                i += 1;
                let s = slot(cx, words, i)?;
                let Some((a, p)) = parse_prefix(cx, s) else {
                    cx.err(format!("Invalid rule {w} address {s}"));
                    return None;
                };
                if let Some(a) = a {
                    if family.is_some_and(|f| f != a.is_ipv6()) {
                        cx.err("rule specification has mixed IPv4 and IPv6");
                        return None;
                    }
                    family = Some(a.is_ipv6());
                }
                let v = a.map(|a| (a, p));
                if w == "from" {
                    r.from = v;
                } else {
                    r.to = v;
                }
            }
            "table" | "lookup" => {
                i += 1;
                let s = slot(cx, words, i)?;
                let t = named(cx, Kind::Table, s, "Routing table %s not found for rule")?;
                if t == 0 {
                    cx.err("Table 0 is not valid");
                    return None;
                }
                r.table = Some(t);
                if action.is_some() {
                    cx.err("Cannot specify more than one of table/nop/goto/blackhole/prohibit/unreachable for rule");
                    return None;
                }
                action = Some(RuleAction::ToTable);
            }
            "not" => r.invert = true,
            "preference" | "order" | "priority" => {
                i += 1;
                let s = slot(cx, words, i)?;
                // read_unsigned_base_strvec(…, 0, …): hex and octal too.
                let v = match strtoul_whole(s) {
                    Some(v) if v <= u64::from(u32::MAX) && !s.trim_start().starts_with('-') => {
                        Some(v)
                    }
                    _ => cx.read_unsigned(s, 0, u64::from(u32::MAX)),
                };
                match v {
                    Some(v) => priority = Some(v as u32),
                    None => {
                        cx.err(format!("Invalid rule preference {w} specified"));
                        return None;
                    }
                }
            }
            "tos" | "dsfield" => {
                i += 1;
                let s = slot(cx, words, i)?;
                r.tos = Some(named(cx, Kind::DsField, s, "TOS value %s is invalid")? as u8);
            }
            "fwmark" => {
                i += 1;
                let s = slot(cx, words, i)?;
                let t = s.trim_start_matches([' ', '\t']);
                let parsed = (!t.starts_with('-'))
                    .then(|| {
                        let (m, mask) = match t.split_once('/') {
                            Some((m, k)) => (m, Some(k)),
                            None => (t, None),
                        };
                        let m = strtoul_whole(m).filter(|v| *v <= u64::from(u32::MAX))?;
                        let mask = match mask {
                            Some(k) if k.starts_with(['-', ' ', '\t']) => return None,
                            Some(k) => {
                                Some(strtoul_whole(k).filter(|v| *v <= u64::from(u32::MAX))? as u32)
                            }
                            None => None,
                        };
                        Some((m as u32, mask))
                    })
                    .flatten();
                match parsed {
                    Some(f) => r.fwmark = Some(f),
                    None => {
                        cx.err(format!("Invalid rule fwmark {s} specified"));
                        return None;
                    }
                }
            }
            "realms" => {
                i += 1;
                let s = slot(cx, words, i)?;
                let Some(v) = rttables::realms(s) else {
                    cx.err(format!("invalid realms {s} for rule"));
                    return None;
                };
                r.realms = Some(v);
                table_option = true;
                if family == Some(true) {
                    cx.err("realms is only valid for IPv4");
                    return None;
                }
                family = Some(false);
            }
            "suppress_prefixlength" | "sup_pl" => {
                i += 1;
                let s = slot(cx, words, i)?;
                match cx.read_unsigned(s, 0, i32::MAX as u64) {
                    Some(v) => r.suppress_prefixlen = Some(v as u32),
                    None => {
                        cx.err(format!("Invalid suppress_prefixlength {w} specified"));
                        return None;
                    }
                }
                table_option = true;
            }
            "suppress_ifgroup" | "sup_group" => {
                i += 1;
                let s = slot(cx, words, i)?;
                r.suppress_ifgroup =
                    Some(named(cx, Kind::Group, s, "suppress_group %s is invalid")?);
                table_option = true;
            }
            "dev" | "iif" | "oif" => {
                i += 1;
                let s = slot(cx, words, i)?;
                if !cx.interface_known(s) {
                    cx.bad_interface(format!("WARNING - interface {s} for rule doesn't exist"));
                    return None;
                }
                if w == "oif" {
                    r.oif = Some(s.to_string());
                } else {
                    r.iif = Some(s.to_string());
                }
            }
            "tunnel-id" => {
                i += 1;
                let s = slot(cx, words, i)?;
                match cx.read_unsigned(s, 0, u64::MAX) {
                    Some(v) => r.tunnel_id = Some(v),
                    None => {
                        cx.err(format!("Invalid tunnel-id {w} specified"));
                        return None;
                    }
                }
            }
            "uidrange" => {
                i += 1;
                let s = slot(cx, words, i)?;
                let range = s.split_once('-').and_then(|(a, b)| {
                    let b = &b[..b.find(|c: char| !c.is_ascii_digit()).unwrap_or(b.len())];
                    Some((a.parse().ok()?, b.parse().ok()?))
                });
                match range {
                    Some(u) => r.uid_range = Some(u),
                    None => {
                        cx.err(format!("Invalid uidrange {w} specified"));
                        return None;
                    }
                }
            }
            "l3mdev" => {
                r.l3mdev = true;
                if action.is_some() {
                    cx.err("Cannot specify l3mdev with other action");
                    return None;
                }
                action = Some(RuleAction::ToTable);
            }
            "protocol" => {
                i += 1;
                let s = slot(cx, words, i)?;
                match cx.read_unsigned(s, 0, 255) {
                    Some(v) => r.protocol = Some(v as u8),
                    None => cx.err(format!("Invalid protocol {s}")),
                }
            }
            "ipproto" => {
                i += 1;
                let s = slot(cx, words, i)?;
                match ip_proto(s) {
                    Some(v) => r.ip_proto = Some(v),
                    None => cx.err(format!("Invalid ipproto {s}")),
                }
            }
            "sport" | "dport" => {
                i += 1;
                let s = slot(cx, words, i)?;
                match port_range(s) {
                    Some(p) if w == "sport" => r.sport = Some(p),
                    Some(p) => r.dport = Some(p),
                    None => cx.err(format!("invalid {w} range {s}")),
                }
            }
            "no_track" => r.no_track = true,
            _ => {
                let mut word = w;
                if word == "type" {
                    i += 1;
                    word = slot(cx, words, i)?;
                }
                let a = match word {
                    "goto" => {
                        i += 1;
                        let s = slot(cx, words, i)?;
                        match cx.read_unsigned(s, 0, u64::from(u32::MAX)) {
                            Some(v) => r.goto = Some(v as u32),
                            None => {
                                cx.err(format!("Invalid target {word} specified"));
                                return None;
                            }
                        }
                        RuleAction::Goto
                    }
                    "nop" => RuleAction::Nop,
                    _ => match rttables::rtntype(word) {
                        Some(6) => RuleAction::Blackhole,
                        Some(7) => RuleAction::Unreachable,
                        Some(8) => RuleAction::Prohibit,
                        Some(_) => {
                            cx.err(format!("Invalid rule action {word}"));
                            return None;
                        }
                        None => {
                            cx.err(format!("Unknown rule option {word}"));
                            return None;
                        }
                    },
                };
                if action.is_some() {
                    cx.err(MORE);
                    return None;
                }
                action = Some(a);
            }
        }
        i += 1;
    }
    if action == Some(RuleAction::Goto) {
        let target = r.goto.unwrap_or(0);
        match priority {
            Some(p) if p >= target => {
                cx.err(format!(
                    "Invalid rule - preference {p} >= goto target {target}"
                ));
                return None;
            }
            Some(_) => {}
            None => {
                cx.err(format!(
                    "Invalid rule - goto target {target} specified without preference"
                ));
                return None;
            }
        }
    }
    let Some(action) = action else {
        cx.err("No action specified for rule - ignoring");
        return None;
    };
    r.action = action;
    if action != RuleAction::ToTable && table_option {
        cx.err("suppressor/realm specified for non table action - skipping");
        return None;
    }
    if r.table.is_some() && r.l3mdev {
        cx.err("table cannot be specified for l3mdev rules");
        return None;
    }
    if !r.no_track {
        if r.protocol.is_some_and(|p| p != RTPROT_KEEPALIVED) {
            cx.err(format!(
                "Rule cannot be tracked if protocol is not RTPROT_KEEPALIVED({RTPROT_KEEPALIVED}), resetting protocol"
            ));
        }
        r.protocol = Some(RTPROT_KEEPALIVED);
    }
    r.ipv6 = family.unwrap_or(false);
    r.priority = match priority {
        Some(p) => p,
        None => {
            let n = if r.ipv6 { &mut next.v6 } else { &mut next.v4 };
            let p = *n;
            *n = n.wrapping_sub(1);
            cx.err(format!(
                "Rule has no preference specified - setting to {p}. This is probably not what you want."
            ));
            p
        }
    };
    Some(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::config::vrrp::ctx::testing::{assert_reported, w, Eth0};

    #[test]
    fn rule_lines_read_as_keepalived_reads_them() {
        let host = Eth0;
        let mut diags = crate::config::diag::Diagnostics::default();
        let mut cx = Ctx::new(&mut diags, "t.conf".into(), &host, true);
        let mut next = NextPriority::default();
        let r = parse_rule(
            &mut cx,
            &w("from 192.0.2.0/24 iif eth0 fwmark 0x10/0xff table 100 priority 0x20"),
            3,
            &mut next,
        )
        .unwrap();
        assert_eq!(r.from, Some(("192.0.2.0".parse().unwrap(), 24)));
        assert_eq!(
            (r.table, r.priority, r.fwmark),
            (Some(100), 32, Some((16, Some(255))))
        );
        assert_eq!(
            (r.action, r.protocol),
            (RuleAction::ToTable, Some(RTPROT_KEEPALIVED))
        );
        // No preference: keepalived's descending numbers, per family.
        let a = parse_rule(&mut cx, &w("to 198.51.100.0/24 lookup main"), 4, &mut next).unwrap();
        let b = parse_rule(&mut cx, &w("from all blackhole"), 5, &mut next).unwrap();
        let c = parse_rule(&mut cx, &w("from 2001:db8::/64 prohibit"), 6, &mut next).unwrap();
        assert_eq!((a.priority, b.priority, c.priority), (16384, 16383, 16384));
        assert_eq!(b.action, RuleAction::Blackhole);
        assert!(parse_rule(&mut cx, &w("from 192.0.2.0/24"), 7, &mut next).is_none());
        assert!(parse_rule(&mut cx, &w("goto 2 priority 3"), 8, &mut next).is_none());
        assert!(parse_rule(&mut cx, &w("sport 80 nop priority 3"), 9, &mut next).is_some());
        assert_reported(
            &diags,
            &[
            (4, "Rule has no preference specified - setting to 16384. This is probably not what you want."),
            (7, "No action specified for rule - ignoring"),
            (8, "Invalid rule - preference 3 >= goto target 2"),
            (9, "invalid sport range 80"),
],
        );
    }
}
