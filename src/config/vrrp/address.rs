//! One line of `virtual_ipaddress`, `virtual_ipaddress_excluded` or
//! `static_ipaddress`, read as keepalived's `parse_ipaddress()` reads it:
//! `IP[/PREFIX] [dev IF] [brd IP|+|-] [scope SCOPE] [label LABEL]
//! [peer IP[/PREFIX]] [home] [-nodad] [mngtmpaddr] [noprefixroute]
//! [autojoin] [no_track] [preferred_lft N|forever] [use_vmac]`.

use super::ctx::Ctx;
use crate::config::parser::parse_ip;
use serde::Serialize;
use std::net::IpAddr;

/// A virtual (or static) address.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Vip {
    /// The address.
    pub addr: IpAddr,
    /// Prefix length (default /32 or /128).
    pub prefix: u8,
    /// `dev`: else the instance's interface.
    pub dev: Option<String>,
    /// `brd` (IPv4).
    pub broadcast: Option<IpAddr>,
    /// `scope` as a number (0 global, 200 site, 253 link, 254 host, 255 nowhere).
    pub scope: Option<u8>,
    /// `label` (IPv4, at most 15 characters).
    pub label: Option<String>,
    /// `peer`.
    pub peer: Option<IpAddr>,
    /// `-nodad`: do duplicate address detection (keepalived adds IPv6 VIPs
    /// without it otherwise).
    pub dad: bool,
    /// `no_track`: removal by others is not acted on.
    pub no_track: bool,
    /// `preferred_lft` in seconds (None = keepalived's default).
    pub preferred_lft: Option<u32>,
    /// `home`, `mngtmpaddr`, `noprefixroute`, `autojoin`: kernel flags as written.
    pub flags: Vec<String>,
    /// Line of the address.
    pub line: usize,
}

impl Vip {
    /// A bare address: no options, keepalived's defaults.
    pub fn new(addr: IpAddr, prefix: u8, line: usize) -> Vip {
        Vip {
            addr,
            prefix,
            dev: None,
            broadcast: None,
            scope: None,
            label: None,
            peer: None,
            dad: false,
            no_track: false,
            preferred_lft: None,
            flags: Vec::new(),
            line,
        }
    }
}

/// keepalived's `parse_route()`: `IP[/PREFIX]`, or `default`/`all`/`any`
/// (no address, prefix 0, the family left to the rest of the line). An
/// invalid address is reported and gives `None`; an invalid prefix is
/// reported and replaced by the full length.
pub fn parse_prefix(cx: &mut Ctx, text: &str) -> Option<(Option<IpAddr>, u8)> {
    if matches!(text, "default" | "all" | "any") {
        return Some((None, 0));
    }
    let (a, p) = address_and_prefix(cx, text)?;
    Some((Some(a), p))
}

/// `IP[/PREFIX]` as `parse_ipaddress()` reads it: an invalid address is
/// reported and gives `None`, an invalid prefix is reported and replaced
/// by the full length (/32, /128).
fn address_and_prefix(cx: &mut Ctx, text: &str) -> Option<(IpAddr, u8)> {
    let (ip_text, prefix_text) = match text.split_once('/') {
        Some((a, p)) => (a, Some(p)),
        None => (text, None),
    };
    let Some(addr) = parse_ip(ip_text) else {
        cx.err(format!("VRRP parsed invalid IP {text}. skipping IP..."));
        return None;
    };
    let max = if addr.is_ipv4() { 32 } else { 128 };
    let prefix = match prefix_text {
        None => max,
        Some(p) => match cx.read_unsigned(p, 0, u64::from(max)) {
            Some(v) => v as u8,
            None => {
                cx.err(format!(
                    "Invalid address prefix len {p} for address {text} - using {max}"
                ));
                max
            }
        },
    };
    Some((addr, prefix))
}

/// Reads one address line; `None` when keepalived drops the address (the
/// reason is reported).
pub fn parse_vip(cx: &mut Ctx, words: &[String], line: usize) -> Option<Vip> {
    cx.line = line;
    let first = words.first()?;
    let ip_text = first.split('/').next().unwrap_or(first);
    let (addr, prefix) = address_and_prefix(cx, first)?;
    let mut vip = Vip::new(addr, prefix, line);
    let mut i = 1;
    while i < words.len() {
        let w = words[i].as_str();
        let value = words.get(i + 1).map(String::as_str);
        match w {
            "dev" => {
                let Some(d) = value else {
                    cx.err(format!("No dev parameter specified for {ip_text}"));
                    return None;
                };
                if !cx.interface_known(d) {
                    cx.bad_interface(format!(
                        "WARNING - interface {d} for ip address {ip_text} doesn't exist"
                    ));
                }
                vip.dev = Some(d.to_string());
                i += 2;
            }
            "brd" | "broadcast" => {
                let b = value.unwrap_or("");
                if addr.is_ipv6() && value.is_some() {
                    cx.err(format!(
                        "VRRP is trying to assign a broadcast {} to the IPv6 address {first} !!?? WTF... skipping VIP...",
                        words[i]
                    ));
                    return None;
                }
                match b {
                    // keepalived computes these from the address: all host
                    // bits set ("+") or clear ("-"), up to a /30.
                    "+" | "-" => match addr {
                        IpAddr::V4(a) if prefix <= 30 => {
                            let host = u32::MAX >> prefix;
                            let v = u32::from(a);
                            let brd = if b == "+" { v | host } else { v & !host };
                            vip.broadcast = Some(IpAddr::V4(brd.into()));
                        }
                        _ => cx.err(format!(
                            "Address prefix length {prefix} too long for broadcast"
                        )),
                    },
                    _ => match parse_ip(b).filter(|a| a.is_ipv4() && addr.is_ipv4()) {
                        Some(a) => vip.broadcast = Some(a),
                        None => {
                            cx.err(format!(
                                "VRRP is trying to assign invalid broadcast {b}. skipping VIP..."
                            ));
                            return None;
                        }
                    },
                }
                i += 2;
            }
            "scope" => {
                let s = value.unwrap_or("");
                let named = match s {
                    "global" => Some(0),
                    "site" => Some(200),
                    "link" => Some(253),
                    "host" => Some(254),
                    "nowhere" => Some(255),
                    _ => s.parse::<u8>().ok(),
                };
                match named {
                    Some(v) => vip.scope = Some(v),
                    None => cx.err(format!(
                        "Invalid scope '{s}' specified for {ip_text} - ignoring"
                    )),
                }
                i += 2;
            }
            "label" => {
                let l = value.unwrap_or("");
                if l.len() > 15 {
                    cx.err(format!(
                        "Address label {l} is longer than maximum length 15 - removing address"
                    ));
                    return None;
                }
                vip.label = Some(l.to_string());
                i += 2;
            }
            "peer" => {
                let pv = value.unwrap_or("");
                let a = pv.split('/').next().unwrap_or(pv);
                match parse_ip(a) {
                    Some(a) => vip.peer = Some(a),
                    None => {
                        cx.err(format!(
                            "VRRP is trying to assign invalid peer {pv}. skipping VIP..."
                        ));
                        return None;
                    }
                }
                i += 2;
            }
            "preferred_lft" => {
                let v = value.unwrap_or("");
                if v == "forever" {
                    vip.preferred_lft = Some(u32::MAX);
                } else {
                    match cx.read_unsigned(v, 0, u64::from(u32::MAX)) {
                        Some(n) => vip.preferred_lft = Some(n as u32),
                        None => cx.err(format!("preferred_lft {v} is invalid")),
                    }
                }
                i += 2;
            }
            "-nodad" => {
                vip.dad = true;
                i += 1;
            }
            "no_track" => {
                vip.no_track = true;
                i += 1;
            }
            "home" | "mngtmpaddr" | "noprefixroute" | "autojoin" | "use_vmac" => {
                vip.flags.push(w.to_string());
                i += 1;
            }
            other => {
                cx.err(format!(
                    "Unknown configuration entry '{other}' for ip address - ignoring"
                ));
                i += 1;
            }
        }
    }
    Some(vip)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_address_line_reads_as_keepalived_reads_it() {
        struct NoInterfaces;
        impl crate::config::validate::Host for NoInterfaces {
            fn interface_exists(&self, _: &str) -> bool {
                false
            }
        }
        let host = NoInterfaces;
        let mut diags = crate::config::diag::Diagnostics::default();
        let mut cx = Ctx::new(&mut diags, "t.conf".into(), &host, true);
        let w: Vec<String> = "192.0.2.100/24 brd 192.0.2.255 scope link label eth0:1 no_track"
            .split(' ')
            .map(String::from)
            .collect();
        let v = parse_vip(&mut cx, &w, 7).unwrap();
        assert_eq!(v.prefix, 24);
        assert_eq!(v.scope, Some(253));
        assert_eq!(v.label.as_deref(), Some("eth0:1"));
        assert!(v.no_track);
        let bad: Vec<String> = vec![
            "192.0.2.1/40".into(),
            "label".into(),
            "a-label-that-is-long".into(),
        ];
        assert!(parse_vip(&mut cx, &bad, 8).is_none());
        let lines: Vec<String> = diags.items().iter().map(|d| d.message.clone()).collect();
        assert!(
            lines
                .iter()
                .any(|m| m.contains("Invalid address prefix len 40")),
            "{lines:?}"
        );
        assert!(
            lines
                .iter()
                .any(|m| m.contains("longer than maximum length 15")),
            "{lines:?}"
        );
    }
}
