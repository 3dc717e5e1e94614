//! SMTP_CHECK: `helo_name` and the deprecated `host` blocks.

use super::*;

pub fn smtp_helo(p: P, w: &[Word]) -> HandlerResult {
    let Some(s) = p.value_or(w, 1, "SMTP_CHECK helo name missing") else {
        return Ok(());
    };
    if let Some(Checker::Smtp(s2)) = p.checker.as_mut() {
        s2.helo_name = Some(s);
    }
    Ok(())
}

/// The deprecated `host { }` block: a copy of the SMTP_CHECK's options so
/// far, filled by the block and kept aside until the SMTP_CHECK ends.
pub fn smtp_host_open(p: P, _w: &[Word]) -> HandlerResult {
    // keepalived only logs this; it is not a config error.
    p.err(
        ErrClass::Ok,
        "The SMTP_CHECK host block is deprecated. Please define additional checkers.",
    );
    if let Some(outer) = p.checker.take() {
        let mut host = outer.clone();
        host.common_mut().line = u32::try_from(p.pos.line).unwrap_or(u32::MAX);
        p.checker = Some(host);
        p.smtp_outer = Some(outer);
    }
    Ok(())
}

pub fn smtp_host_close(p: P) {
    if let Some(host) = p.checker.take() {
        p.smtp_hosts.push(host);
    }
    p.checker = p.smtp_outer.take();
}

/// keepalived's `smtp_check_end_handler()`: the SMTP_CHECK is queued first,
/// then one checker per `host { }` block. (Its "has connection options" test
/// includes `connection_to`, which starts at UINT_MAX, so the SMTP_CHECK's own
/// destination is always kept.)
pub fn smtp_close(p: P) {
    let hosts = std::mem::take(&mut p.smtp_hosts);
    if let Some(outer) = p.checker.take() {
        push_checker(p, outer);
        for h in hosts {
            push_checker(p, h);
        }
    }
}
