//! `real_server`: weight, forwarding, notify scripts, `inhibit_on_failure`.

use super::*;

pub fn rs_open(p: P, w: &[Word]) -> HandlerResult {
    let a = p.arg(w, 1)?;
    let ps = w.get(2).map(|x| x.text.as_str());
    let ip = parse_ip(a);
    let port = match ps {
        None => Some(0),
        Some(s) => parse_port(s),
    };
    match (ip, port) {
        (Some(ip), Some(port)) => {
            p.rs = Some(RealServer {
                ip,
                port,
                line: p.pos.line,
                weight: None,
                lvs_method: None,
                inhibit_on_failure: None,
                seldom: Rare::default(),
                alpha: None,
                retry: None,
                delay_before_retry: Micros::NONE,
                warmup: Micros::NONE,
                connect_timeout: Micros::NONE,
                delay_loop: Micros::NONE,
                checkers: Default::default(),
            });
        }
        _ => {
            p.err_hint(
                ErrClass::GeneralError,
                format!(
                    "Invalid real server ip address/port {}/{} - skipping",
                    a,
                    ps.unwrap_or_default()
                ),
                "use a numeric IPv4 or IPv6 address and a port 1-65535; the whole block is ignored",
            );
            p.skip_block();
        }
    }
    Ok(())
}

pub fn rs_close(p: P) {
    let Some(rs) = p.rs.take() else {
        return;
    };
    let Some(vs) = p.vs.as_mut() else {
        return;
    };
    let tun = matches!(
        rs.lvs_method.or(vs.lvs_method),
        Some(Forwarding::Tun { .. })
    );
    if !tun {
        if let Some(v6) = parse_family(vs) {
            if v6 != rs.ip.is_ipv6() {
                p.err(
                    ErrClass::GeneralError,
                    format!(
                        "Address family of virtual server and real server {} don't match - skipping real server.",
                        rs.ip
                    ),
                );
                if let Some(vs) = p.vs.as_mut() {
                    vs.orphaned_misc
                        .extend(rs.checkers.into_iter().filter_map(|c| match c {
                            Checker::Misc(m) => Some(*m),
                            _ => None,
                        }));
                }
                return;
            }
        }
    }
    if !tun && vs.first_rs_af.is_none() {
        vs.first_rs_af = Some(rs.ip.is_ipv6());
    }
    vs.real_servers.push(rs);
}

/// The address family keepalived knows for a virtual server while parsing
/// (`vs->af`), as "is IPv6": its address; else `ip_family`; else a
/// persistence granularity's; else its first real server that is not
/// tunnelled. `None` while still unknown (fwmark or group so far).
pub(in crate::config) fn parse_family(vs: &VirtualServer) -> Option<bool> {
    if let VsAddress::Addr { ip, .. } = &vs.address {
        return Some(ip.is_ipv6());
    }
    if let Some(f) = vs.ip_family {
        return Some(f == Family::Inet6);
    }
    if let Some(g) = &vs.persistence_granularity {
        return Some(!g.contains('.'));
    }
    vs.first_rs_af
}

pub(super) fn rs<'a>(p: &'a mut Parser<'_, '_>) -> Option<&'a mut RealServer> {
    p.rs.as_mut()
}

/// The real server's seldom-given settings, to set one of them.
pub(super) fn rs_seldom<'a>(p: &'a mut Parser<'_, '_>) -> Option<&'a mut RsSeldom> {
    rs(p).map(|r| r.seldom.set())
}

pub fn rs_weight(p: P, w: &[Word]) -> HandlerResult {
    let s = p.arg(w, 1)?;
    match p.read_unsigned(s, 0, i32::MAX as u64, true) {
        Some(x) => {
            if let Some(r) = rs(p) {
                r.weight = Some(x as i32);
            }
        }
        None => p.err(
            ErrClass::GeneralError,
            format!("Real server weight {s} is outside range 0-{}", i32::MAX),
        ),
    }
    Ok(())
}

pub fn rs_lvs_method(p: P, w: &[Word]) -> HandlerResult {
    p.arg(w, 1)?;
    if let Some(f) = forwarding(p, w, "real server") {
        if let Some(r) = rs(p) {
            r.lvs_method = Some(f);
        }
    }
    Ok(())
}

pub fn rs_inhibit(p: P, w: &[Word]) -> HandlerResult {
    if let Some(b) = p.opt_bool(w, "inhibit_on_failure") {
        if let Some(r) = rs(p) {
            r.inhibit_on_failure = Some(b);
        }
    }
    Ok(())
}

pub fn rs_notify_up(p: P, w: &[Word]) -> HandlerResult {
    let s = p.notify_script(w)?.map(Box::new);
    set_once(p, "notify_up script", s, |p| {
        rs(p).map(|r| &mut r.seldom.set().notify_up)
    })
}

pub fn rs_notify_down(p: P, w: &[Word]) -> HandlerResult {
    let s = p.notify_script(w)?.map(Box::new);
    set_once(p, "notify_down script", s, |p| {
        rs(p).map(|r| &mut r.seldom.set().notify_down)
    })
}

pub fn rs_alpha(p: P, w: &[Word]) -> HandlerResult {
    if let Some(b) = p.opt_bool(w, "alpha") {
        if let Some(r) = rs(p) {
            r.alpha = Some(b);
        }
    }
    Ok(())
}

pub fn rs_smtp_alert(p: P, w: &[Word]) -> HandlerResult {
    if let Some(b) = p.opt_bool(w, "smtp_alert") {
        if let Some(r) = rs(p) {
            r.seldom.set().smtp_alert = Some(b);
        }
    }
    Ok(())
}

pub fn rs_virtualhost(p: P, w: &[Word]) -> HandlerResult {
    let Some(s) = p.value_or(w, 1, "real server virtualhost missing") else {
        return Ok(());
    };
    if let Some(r) = rs(p) {
        r.seldom.set().virtualhost = Some(s.into());
    }
    Ok(())
}

pub fn rs_snmp_name(p: P, w: &[Word]) -> HandlerResult {
    let Some(s) = p.value_or(w, 1, "real server snmp_name missing or extra parameters") else {
        return Ok(());
    };
    if let Some(r) = rs(p) {
        r.seldom.set().snmp_name = Some(s.into());
    }
    Ok(())
}
