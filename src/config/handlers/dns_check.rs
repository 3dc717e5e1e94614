//! DNS_CHECK: the query's type and name.

use super::*;

pub fn dns_type(p: P, w: &[Word]) -> HandlerResult {
    let s = p.arg(w, 1)?.to_string();
    let up = s.to_ascii_uppercase();
    const TYPES: &[&str] = &[
        "A", "NS", "CNAME", "SOA", "MX", "TXT", "AAAA", "RRSIG", "DNSKEY",
    ];
    if !TYPES.contains(&up.as_str()) {
        p.err_hint(
            ErrClass::GeneralError,
            format!("DNS_CHECK: Unknown type {s}"),
            format!("one of: {}", TYPES.join(" ")),
        );
        return Ok(());
    }
    if let Some(Checker::Dns(d)) = p.checker.as_mut() {
        d.r#type = up;
    }
    Ok(())
}
pub fn dns_name(p: P, w: &[Word]) -> HandlerResult {
    let s = p.arg(w, 1)?.to_string();
    let trimmed = s.strip_suffix('.').unwrap_or(&s);
    if !trimmed.is_empty() && trimmed.split('.').any(|l| l.is_empty() || l.len() > 63) {
        p.err(
            ErrClass::GeneralError,
            format!("DNS_CHECK: invalid name {s}"),
        );
        return Ok(());
    }
    if let Some(Checker::Dns(d)) = p.checker.as_mut() {
        d.name = s;
    }
    Ok(())
}
