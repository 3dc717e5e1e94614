//! UDP_CHECK: the payload and what a reply must be.

use super::*;

fn hex_bytes(s: &str, allow_wild: bool) -> Option<Vec<(u8, u8)>> {
    // Free-form hex: whitespace separates groups; an odd group gets a
    // leading 0 nibble on its last byte, as keepalived's read_hex_str().
    let mut out = Vec::new();
    for group in s.split_whitespace() {
        let nib: Vec<(u8, u8)> = group
            .chars()
            .map(|c| match c {
                'x' | 'X' if allow_wild => Some((0, 0)),
                c => c.to_digit(16).map(|d| (d as u8, 0xf)),
            })
            .collect::<Option<Vec<_>>>()?;
        let mut i = 0;
        while i < nib.len() {
            if i + 1 < nib.len() {
                out.push((nib[i].0 << 4 | nib[i + 1].0, nib[i].1 << 4 | nib[i + 1].1));
                i += 2;
            } else {
                out.push((nib[i].0, nib[i].1));
                i += 1;
            }
        }
    }
    Some(out)
}

pub fn udp_payload(p: P, w: &[Word]) -> HandlerResult {
    if p.value_or(w, 1, "UDP_CHECK payload requires a payload")
        .is_none()
    {
        return Ok(());
    }
    let text: Vec<&str> = w[1..].iter().map(|x| x.text.as_str()).collect();
    match hex_bytes(&text.join(" "), false) {
        Some(b) => {
            if let Some(Checker::Udp(u)) = p.checker.as_mut() {
                u.payload = Some(b.into_iter().map(|(v, _)| v).collect());
            }
        }
        None => p.err(
            ErrClass::GeneralError,
            "Invalid hex string for UDP_CHECK payload",
        ),
    }
    Ok(())
}
pub fn udp_require_reply(p: P, w: &[Word]) -> HandlerResult {
    let pattern = if w.len() > 1 {
        let text: Vec<&str> = w[1..].iter().map(|x| x.text.as_str()).collect();
        match hex_bytes(&text.join(" "), true) {
            Some(b) => Some(b),
            None => {
                p.err(
                    ErrClass::GeneralError,
                    "Invalid hex string for UDP_CHECK require_reply",
                );
                return Ok(());
            }
        }
    } else {
        None
    };
    if let Some(Checker::Udp(u)) = p.checker.as_mut() {
        u.require_reply = true;
        u.reply_pattern = pattern;
    }
    Ok(())
}
pub fn udp_min_reply_length(p: P, w: &[Word]) -> HandlerResult {
    let s = p.arg(w, 1)?.to_string();
    match p.read_unsigned(&s, 0, 65535, true) {
        Some(v) => {
            if let Some(Checker::Udp(u)) = p.checker.as_mut() {
                u.min_reply_length = v as u16;
            }
        }
        None => p.err(
            ErrClass::GeneralError,
            format!("Invalid UDP_CHECK min_reply length {s}"),
        ),
    }
    Ok(())
}
pub fn udp_max_reply_length(p: P, w: &[Word]) -> HandlerResult {
    let s = p.arg(w, 1)?.to_string();
    match p.read_unsigned(&s, 0, 65535, true) {
        Some(v) => {
            if let Some(Checker::Udp(u)) = p.checker.as_mut() {
                u.max_reply_length = v as u16;
            }
        }
        None => p.err(
            ErrClass::GeneralError,
            format!("Invalid UDP_CHECK max_reply length {s}"),
        ),
    }
    Ok(())
}
