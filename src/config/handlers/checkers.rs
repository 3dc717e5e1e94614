//! The checker blocks: their opening and closing, and the connection options
//! every checker shares (`connect_ip`, `bindto`, `bind_if`, `alpha`, ...).

use super::*;

pub(super) fn new_common(p: &Parser<'_, '_>) -> CheckerCommon {
    CheckerCommon {
        line: u32::try_from(p.pos.line).unwrap_or(u32::MAX),
        ..CheckerCommon::default()
    }
}

pub fn tcp_open(p: P, _w: &[Word]) -> HandlerResult {
    p.checker = Some(Checker::Tcp(new_common(p)));
    Ok(())
}
pub fn ping_open(p: P, _w: &[Word]) -> HandlerResult {
    p.checker = Some(Checker::Ping(new_common(p)));
    Ok(())
}
pub fn http_open(p: P, _w: &[Word]) -> HandlerResult {
    p.checker = Some(Checker::Http(Box::new(HttpCheck {
        common: new_common(p),
        http_protocol: HttpProtocol::V10,
        ..HttpCheck::default()
    })));
    Ok(())
}
pub fn ssl_open(p: P, _w: &[Word]) -> HandlerResult {
    p.checker = Some(Checker::Ssl(Box::new(HttpCheck {
        common: new_common(p),
        http_protocol: HttpProtocol::V10,
        ..HttpCheck::default()
    })));
    Ok(())
}
pub fn misc_open(p: P, _w: &[Word]) -> HandlerResult {
    p.checker = Some(Checker::Misc(Box::new(MiscCheck {
        common: new_common(p),
        ..MiscCheck::default()
    })));
    Ok(())
}
pub fn smtp_open(p: P, _w: &[Word]) -> HandlerResult {
    p.checker = Some(Checker::Smtp(Box::new(SmtpCheck {
        common: new_common(p),
        helo_name: None,
    })));
    Ok(())
}
pub fn dns_open(p: P, _w: &[Word]) -> HandlerResult {
    p.checker = Some(Checker::Dns(Box::new(DnsCheck {
        common: new_common(p),
        r#type: "SOA".into(),
        name: ".".into(),
    })));
    Ok(())
}
pub fn udp_open(p: P, _w: &[Word]) -> HandlerResult {
    p.checker = Some(Checker::Udp(Box::new(UdpCheck {
        common: new_common(p),
        max_reply_length: 255,
        ..UdpCheck::default()
    })));
    Ok(())
}
pub fn file_open(p: P, _w: &[Word]) -> HandlerResult {
    p.checker = Some(Checker::File(Box::new(FileCheck {
        common: new_common(p),
        ..FileCheck::default()
    })));
    Ok(())
}
pub fn bfd_open(p: P, _w: &[Word]) -> HandlerResult {
    p.checker = Some(Checker::Bfd(Box::new(BfdCheck {
        common: new_common(p),
        name: None,
    })));
    Ok(())
}

pub(super) fn push_checker(p: P, c: Checker) {
    if let Some(r) = p.rs.as_mut() {
        // Exact capacity: a real server nearly always has one checker, and
        // a Vec's first push reserves four (a kilobyte per real server).
        r.checkers.reserve_exact(1);
        r.checkers.push(c);
    }
}

pub fn checker_close(p: P) {
    if let Some(c) = p.checker.take() {
        push_checker(p, c);
    }
}

pub fn http_close(p: P) {
    super::extensions::http_extensions_close(p);
    if let Some(c) = p.checker.take() {
        let (Checker::Http(h) | Checker::Ssl(h)) = &c else {
            return;
        };
        if h.urls.is_empty() {
            p.err_hint(
                ErrClass::GeneralError,
                "HTTP/SSL_GET checker has no urls specified - ignoring",
                "add a `url { path / }` block; without one the checker is dropped and the server is always up",
            );
            return;
        }
        push_checker(p, c);
    }
}

pub fn misc_close(p: P) {
    if let Some(c) = p.checker.take() {
        if let Checker::Misc(m) = &c {
            if m.removed {
                return;
            }
            if m.misc_path.is_none() {
                p.err(
                    ErrClass::GeneralError,
                    "No script path has been specified for MISC_CHECKER - skipping",
                );
                return;
            }
            if m.user.is_none() && !p.default_script_user_ok() {
                let cmd = super::misc_check::misc_cmd(m);
                p.err(
                    ErrClass::GeneralError,
                    format!("Unable to set default user for misc script {cmd} - removing"),
                );
                return;
            }
        }
        push_checker(p, c);
    }
}

pub fn file_close(p: P) {
    if let Some(c) = p.checker.take() {
        if let Checker::File(f) = &c {
            let Some(name) = &f.track_file else {
                p.err(
                    ErrClass::GeneralError,
                    "FILE_CHECK has no track_file specified - ignoring",
                );
                return;
            };
            if !p.cfg.track_files.iter().any(|t| &t.name == name) {
                return;
            }
        }
        push_checker(p, c);
    }
}

pub fn bfd_close(p: P) {
    if let Some(c) = p.checker.take() {
        if let Checker::Bfd(b) = &c {
            if b.name.is_none() {
                let rs = super::bfd_check::bfd_rs(&p);
                p.err(
                    ErrClass::GeneralError,
                    format!("({rs}) No name has been specified for BFD_CHECKER - skipping"),
                );
                return;
            }
        }
        push_checker(p, c);
    }
}

pub(super) fn common<'a>(p: &'a mut Parser<'_, '_>) -> Option<&'a mut CheckerCommon> {
    p.checker.as_mut().map(Checker::common_mut)
}

/// The checker's local end, to set one of its settings.
pub(super) fn source<'a>(p: &'a mut Parser<'_, '_>) -> Option<&'a mut CheckerSource> {
    common(p).map(|c| c.source.set())
}

pub fn ck_connect_ip(p: P, w: &[Word]) -> HandlerResult {
    let s = p.arg(w, 1)?.to_string();
    match parse_ip(&s) {
        Some(ip) => {
            let other = common(p).and_then(|c| c.source.bindto);
            if other.is_some_and(|b| b.is_ipv6() != ip.is_ipv6()) {
                p.err(
                    ErrClass::GeneralError,
                    format!(
                        "connect_ip address {s} does not match address family of bindto - skipping"
                    ),
                );
            } else if let Some(c) = common(p) {
                c.connect_ip = Some(ip);
                c.connect_ip_invalid = false;
            }
        }
        None => {
            p.err(
                ErrClass::GeneralError,
                format!("Invalid connect_ip address {s} - ignoring"),
            );
            if let Some(c) = common(p) {
                c.connect_ip_invalid = true;
            }
        }
    }
    Ok(())
}
pub fn ck_bindto(p: P, w: &[Word]) -> HandlerResult {
    let s = p.arg(w, 1)?.to_string();
    match parse_ip(&s) {
        Some(ip) => {
            // The checker's destination: connect_ip, else the real server
            // (SMTP_CHECK fills its destination in only when it ends).
            let smtp = matches!(p.checker, Some(Checker::Smtp(_)));
            let rs_ip = p.rs.as_ref().map(|r| r.ip).filter(|_| !smtp);
            let invalid = common(p).is_some_and(|c| c.connect_ip_invalid);
            let other = common(p)
                .and_then(|c| c.connect_ip)
                .or(rs_ip)
                .filter(|_| !invalid);
            if other.is_some_and(|c| c.is_ipv6() != ip.is_ipv6()) {
                p.err(
                    ErrClass::GeneralError,
                    format!(
                        "bindto address {s} does not match address family of connect_ip - skipping"
                    ),
                );
            } else if let Some(c) = common(p) {
                c.source.set().bindto = Some(ip);
            }
        }
        None => p.err(
            ErrClass::GeneralError,
            format!("Invalid bindto address {s} - ignoring"),
        ),
    }
    Ok(())
}
pub fn ck_bind_if(p: P, w: &[Word]) -> HandlerResult {
    let s = p.arg(w, 1)?.to_string();
    if s.len() > 15 {
        p.err(
            ErrClass::GeneralError,
            format!("Interface name '{s}' too long - ignoring"),
        );
        return Ok(());
    }
    if let Some(c) = common(p) {
        c.source.set().bind_if = Some(s.into());
    }
    Ok(())
}
pub fn ck_alpha(p: P, w: &[Word]) -> HandlerResult {
    if let Some(b) = p.opt_bool(w, "alpha") {
        if let Some(c) = common(p) {
            c.alpha = Some(b);
        }
    }
    Ok(())
}
/// `half_open [BOOL]` (extension, TCP_CHECK).
pub fn ck_half_open(p: P, w: &[Word]) -> HandlerResult {
    if let Some(b) = p.opt_bool(w, "half_open") {
        if let Some(c) = common(p) {
            c.half_open = Some(b);
        }
    }
    Ok(())
}
pub fn ck_log_all_failures(p: P, w: &[Word]) -> HandlerResult {
    if let Some(b) = p.opt_bool(w, "log_all_failures") {
        if let Some(c) = common(p) {
            c.log_all_failures = Some(b);
        }
    }
    Ok(())
}
