//! BFD_CHECK: the BFD instance it follows.

use super::*;

/// The real server being read, as keepalived's BFD_CHECK messages name it.
pub(super) fn bfd_rs(p: &P) -> String {
    let proto = p.vs.as_ref().and_then(|v| v.protocol);
    p.rs.as_ref().map_or_else(String::new, |r| {
        crate::config::validate::format_rs(r.ip, r.port, proto)
    })
}

pub fn bfd_name(p: P, w: &[Word]) -> HandlerResult {
    // One name exactly, else keepalived drops the checker.
    if w.len() != 2 {
        let rs = bfd_rs(&p);
        p.err(
            ErrClass::GeneralError,
            format!("({rs}) BFD_CHECK - No or too many names specified - skipping checker"),
        );
        p.checker = None;
        return Ok(());
    }
    let s = w[1].text.clone();
    if !super::bfd_instance::for_checker(&p, &s) {
        let rs = bfd_rs(&p);
        p.err(
            ErrClass::GeneralError,
            format!("({rs}) BFD_CHECK - BFD {s} not configured"),
        );
        p.checker = None;
        return Ok(());
    }
    if let Some(Checker::Bfd(b)) = p.checker.as_mut() {
        b.name = Some(s);
    }
    Ok(())
}
