//! `virtual_server_group`: addresses, ranges and fwmarks, with
//! keepalived's checks of each entry.

use super::*;

pub fn vsg(p: P, w: &[Word]) -> HandlerResult {
    let name = p.arg(w, 1)?.to_string();
    let line = p.pos.line;
    let lines = p.read_value_block(&w[..1]);
    // keepalived judges the group at its closing line (its end handler).
    let end = p.pos.line;
    let mut entries = Vec::new();
    for (v, l) in lines {
        let pos = crate::config::diag::Pos {
            file: p.pos.file.clone(),
            line: l,
        };
        p.pos = pos;
        if let Some(e) = vsg_entry(p, &v, l) {
            entries.push(e);
        }
    }
    let v4 = entries
        .iter()
        .any(|e| matches!(e, VsgEntry::Range { first, .. } if first.is_ipv4()));
    let v6 = entries
        .iter()
        .any(|e| matches!(e, VsgEntry::Range { first, .. } if first.is_ipv6()));
    let fw = entries
        .iter()
        .any(|e| matches!(e, VsgEntry::Fwmark { family: None, .. }));
    p.pos.line = end;
    if entries.is_empty() {
        p.err(
            ErrClass::GeneralError,
            format!("virtual server group {name} has no entries - removing"),
        );
    } else if v4 && v6 && fw {
        p.err(
            ErrClass::GeneralError,
            format!("virtual server group {name} cannot have IPv4, IPv6 and fwmark without family - removing"),
        );
        entries.clear();
    }
    p.pos.line = line;
    p.cfg.virtual_server_groups.push(VirtualServerGroup {
        name,
        entries,
        line,
    });
    Ok(())
}

fn vsg_entry(p: P, v: &[Word], line: usize) -> Option<VsgEntry> {
    let first = &v[0].text;
    if first == "fwmark" {
        let Some(m) = v.get(1) else {
            p.err(
                ErrClass::GeneralError,
                "virtual server group fwmark entry has no mark",
            );
            return None;
        };
        let mark = p.read_unsigned(&m.text, 0, U32MAX, false)? as u32;
        let family = match v.get(2).map(|x| x.text.as_str()) {
            None => None,
            Some("inet") => Some(Family::Inet),
            Some("inet6") => Some(Family::Inet6),
            Some(o) => {
                p.err(
                    ErrClass::GeneralError,
                    format!("Unknown fwmark address family {o}"),
                );
                return None;
            }
        };
        return Some(VsgEntry::Fwmark {
            fwmark: mark,
            family,
            line,
        });
    }
    let port = match v.get(1) {
        None => 0,
        Some(x) => match parse_port(&x.text) {
            Some(pt) => pt,
            None => {
                p.err(
                    ErrClass::GeneralError,
                    format!("Invalid virtual server group port {}", x.text),
                );
                return None;
            }
        },
    };
    let bad = |p: P| {
        p.err_at(
            &v[0],
            ErrClass::GeneralError,
            format!("Invalid virtual server group IP address {first} - skipping"),
        );
        None
    };
    let Some(ip) = parse_ip(first) else {
        return bad(p);
    };
    if let Some(slash) = first.find('/') {
        let Ok(len) = first[slash + 1..].parse::<u32>() else {
            return bad(p);
        };
        let (bits, raw) = match ip {
            std::net::IpAddr::V4(a) => (32, u32::from(a) as u128),
            std::net::IpAddr::V6(a) => (128, u128::from(a)),
        };
        if len == 0 || len > bits {
            return bad(p);
        }
        let host = if len == bits {
            0
        } else {
            (1u128 << (bits - len)) - 1
        };
        if raw & host != 0 {
            p.err(
                ErrClass::GeneralError,
                format!("Invalid virtual server group IP address {first} - host bits set"),
            );
            return None;
        }
        let last = raw | host;
        let last = match ip {
            std::net::IpAddr::V4(_) => std::net::IpAddr::V4((last as u32).into()),
            std::net::IpAddr::V6(_) => std::net::IpAddr::V6(last.into()),
        };
        return Some(VsgEntry::Range {
            first: ip,
            last,
            port,
            line,
        });
    }
    if let Some(dash) = first.find('-') {
        let end = &first[dash + 1..];
        let last = if end.contains(['.', ':']) {
            match parse_ip(end) {
                Some(l) if l.is_ipv4() == ip.is_ipv4() && l >= ip => l,
                _ => return bad(p),
            }
        } else {
            match ip {
                std::net::IpAddr::V4(a) => {
                    let Ok(e) = end.parse::<u32>() else {
                        return bad(p);
                    };
                    let o = a.octets();
                    if e > 255 || e <= o[3] as u32 {
                        return bad(p);
                    }
                    std::net::IpAddr::V4(std::net::Ipv4Addr::new(o[0], o[1], o[2], e as u8))
                }
                std::net::IpAddr::V6(a) => {
                    let Ok(e) = u32::from_str_radix(end, 16) else {
                        return bad(p);
                    };
                    let mut s = a.segments();
                    if e > 0xffff || e <= s[7] as u32 {
                        return bad(p);
                    }
                    s[7] = e as u16;
                    std::net::IpAddr::V6(s.into())
                }
            }
        };
        return Some(VsgEntry::Range {
            first: ip,
            last,
            port,
            line,
        });
    }
    Some(VsgEntry::Range {
        first: ip,
        last: ip,
        port,
        line,
    })
}
