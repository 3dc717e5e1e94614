//! HTTP_GET and SSL_GET: the checker's options and its `url` blocks.

use super::*;

pub(super) fn http<'a>(p: &'a mut Parser<'_, '_>) -> Option<&'a mut HttpCheck> {
    match p.checker.as_mut() {
        Some(Checker::Http(h)) | Some(Checker::Ssl(h)) => Some(h),
        _ => None,
    }
}

pub fn http_protocol(p: P, w: &[Word]) -> HandlerResult {
    let s = p.arg(w, 1)?;
    let v = match s {
        "1.0" => HttpProtocol::V10,
        "1.0C" | "1.0c" => HttpProtocol::V10C,
        "1.1" => HttpProtocol::V11,
        _ => {
            p.err(
                ErrClass::GeneralError,
                format!("Invalid http_protocol '{s}'"),
            );
            return Ok(());
        }
    };
    if let Some(h) = http(p) {
        h.http_protocol = v;
    }
    Ok(())
}
pub fn http_virtualhost(p: P, w: &[Word]) -> HandlerResult {
    let s = p.arg(w, 1)?.to_string();
    if let Some(h) = http(p) {
        h.virtualhost = Some(s.into());
    }
    Ok(())
}
pub fn http_fast_recovery(p: P, w: &[Word]) -> HandlerResult {
    if let Some(b) = p.opt_bool(w, "fast_recovery") {
        if let Some(h) = http(p) {
            h.fast_recovery = b;
        }
    }
    Ok(())
}
pub fn http_enable_sni(p: P, w: &[Word]) -> HandlerResult {
    if let Some(b) = p.opt_bool(w, "enable_sni") {
        if let Some(h) = http(p) {
            h.enable_sni = b;
        }
    }
    Ok(())
}
pub fn http_nb_get_retry(p: P, w: &[Word]) -> HandlerResult {
    p.err_hint(
        ErrClass::Deprecated,
        "nb_get_retry is deprecated - please use 'retry'",
        "replace nb_get_retry with retry",
    );
    ck_retry(p, w)
}

pub fn url_open(p: P, _w: &[Word]) -> HandlerResult {
    p.url = Some(Url::at(p.pos.line));
    Ok(())
}
pub fn url_close(p: P) {
    let Some(mut u) = p.url.take() else {
        return;
    };
    if u.path.is_none() {
        p.err(
            ErrClass::GeneralError,
            "HTTP/SSL_GET checker url has no path - ignoring",
        );
        return;
    }
    u.share(&mut p.url_bodies);
    if let Some(h) = http(p) {
        h.urls.push(u);
    }
}
pub(super) fn url<'a>(p: &'a mut Parser<'_, '_>) -> Option<&'a mut Url> {
    p.url.as_mut()
}
pub fn url_path(p: P, w: &[Word]) -> HandlerResult {
    let s = p.arg(w, 1)?.to_string();
    if let Some(u) = url(p) {
        u.path = Some(s.into());
    }
    Ok(())
}
pub fn url_digest(p: P, w: &[Word]) -> HandlerResult {
    let s = p.arg(w, 1)?.to_string();
    if s.len() != 32 {
        p.err(
            ErrClass::GeneralError,
            format!(
                "digest '{s}' character length should be 32 rather than {}",
                s.len()
            ),
        );
        return Ok(());
    }
    if !s.bytes().all(|b| b.is_ascii_hexdigit()) {
        p.err(
            ErrClass::GeneralError,
            format!("digest '{s}' is not a valid hex string"),
        );
        return Ok(());
    }
    if let Some(u) = url(p) {
        u.digest = Some(s.to_ascii_lowercase().into());
    }
    Ok(())
}
pub fn url_status_code(p: P, w: &[Word]) -> HandlerResult {
    p.arg(w, 1)?;
    let mut ranges = Vec::new();
    for x in &w[1..] {
        let t = &x.text;
        let parsed = match t.split_once('-') {
            Some((a, b)) => a.parse::<u16>().ok().zip(b.parse::<u16>().ok()),
            None => t
                .parse::<u16>()
                .ok()
                .map(|v| (v, v))
                .or_else(|| status_class(t)),
        };
        match parsed {
            Some((a, b)) if (100..=599).contains(&a) && (100..=599).contains(&b) && a <= b => {
                ranges.push((a, b))
            }
            _ => p.err_at(
                x,
                ErrClass::GeneralError,
                format!("Invalid HTTP_GET status code '{t}'"),
            ),
        }
    }
    if let Some(u) = url(p) {
        u.status_code.extend(ranges);
    }
    Ok(())
}
/// A status class, `2xx` (extension of keepalived-rs; keepalived reads
/// only codes and ranges): 200-299.
fn status_class(t: &str) -> Option<(u16, u16)> {
    let b = t.as_bytes();
    match b {
        [c @ b'1'..=b'5', x, y]
            if x.eq_ignore_ascii_case(&b'x') && y.eq_ignore_ascii_case(&b'x') =>
        {
            let base = u16::from(c - b'0') * 100;
            Some((base, base + 99))
        }
        _ => None,
    }
}

pub fn url_virtualhost(p: P, w: &[Word]) -> HandlerResult {
    let s = p.arg(w, 1)?.to_string();
    if let Some(u) = url(p) {
        u.virtualhost = Some(s.into());
    }
    Ok(())
}
pub fn url_regex(p: P, w: &[Word]) -> HandlerResult {
    p.arg(w, 1)?;
    let raw = p.raw_line.clone();
    let re = match crate::config::lexer::split_quoted_escaped(&raw) {
        Some(v) if v.len() == 2 => v[1].clone(),
        _ => {
            p.err(
                ErrClass::GeneralError,
                "Invalid regex specification - ignoring",
            );
            return Ok(());
        }
    };
    if let Some(u) = url(p) {
        u.re.set().regex = Some(re);
    }
    Ok(())
}
pub fn url_regex_no_match(p: P, _w: &[Word]) -> HandlerResult {
    if let Some(u) = url(p) {
        u.re.set().regex_no_match = true;
    }
    Ok(())
}
pub fn url_regex_options(p: P, w: &[Word]) -> HandlerResult {
    let opts: Vec<String> = w[1..].iter().map(|x| x.text.clone()).collect();
    if let Some(u) = url(p) {
        u.re.set().regex_options.extend(opts);
    }
    Ok(())
}
/// keepalived's `regex_offset_handler()`: `strtoul()` of the one value,
/// 0 when it is missing, doubled or not a number, and nothing reported
/// (keepalived only logs those).
fn regex_offset(w: &[Word]) -> u32 {
    if w.len() != 2 {
        return 0;
    }
    let s = w[1].text.trim_start();
    let (neg, t) = match s.strip_prefix('-') {
        Some(t) => (true, t),
        None => (false, s.strip_prefix('+').unwrap_or(s)),
    };
    let (val, rest, _) = crate::config::parser::strtoul(t);
    if !rest.is_empty() {
        return 0;
    }
    let v = if neg { val.wrapping_neg() } else { val };
    v.min(U32MAX) as u32
}
pub fn url_regex_min_offset(p: P, w: &[Word]) -> HandlerResult {
    let v = regex_offset(w);
    if let Some(u) = url(p) {
        u.re.set().regex_min_offset = Some(v);
    }
    Ok(())
}
pub fn url_regex_max_offset(p: P, w: &[Word]) -> HandlerResult {
    let v = regex_offset(w);
    if let Some(u) = url(p) {
        u.re.set().regex_max_offset = Some(v);
    }
    Ok(())
}
pub fn url_regex_stack(p: P, w: &[Word]) -> HandlerResult {
    let a = p.arg(w, 1)?.to_string();
    let b = p.arg(w, 2)?.to_string();
    let x = p.read_unsigned(&a, 0, U32MAX, false);
    let y = p.read_unsigned(&b, 0, U32MAX, false);
    if let (Some(x), Some(y)) = (x, y) {
        if let Some(u) = url(p) {
            u.re.set().regex_stack = Some((x as u32, y as u32));
        }
    }
    Ok(())
}
