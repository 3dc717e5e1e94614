//! keepalived-rs's own checker keywords (grammar/keywords.md, "Extensions
//! of keepalived-rs (checkers)"): thresholds in both directions and
//! state-dependent intervals (in a checker or a virtual server), HTTP_GET's
//! method, User-Agent and a url's expectations, SSL_GET's certificate
//! verification, and a virtual server's slow start and drain.
//!
//! keepalived 2.2.7 reports each as an unknown keyword; a keepalived.conf
//! without them reads exactly as before. Unlike keepalived's numbers, a
//! value out of range is one error naming the keyword, its range and a
//! hint, and the value is ignored.

use super::checkers::common;
use super::virtual_server::vs;
use super::*;

/// Counts: consecutive results before a state changes.
const COUNT_MAX: u32 = 1000;
/// Intervals, seconds.
const INTERVAL_MIN: f64 = 0.001;
const INTERVAL_MAX: f64 = 86_400.0;

/// Word `i`, or an error naming the keyword: keepalived, not knowing an
/// extension, reports its line as an unknown keyword (exit 5), so a
/// missing value is a plain error here too, not keepalived's
/// missing-parameter stop (exit 2).
fn ext_arg(p: P, w: &[Word], i: usize, hint: &str) -> Option<String> {
    match w.get(i) {
        Some(x) => Some(x.text.clone()),
        None => {
            let kw = w.first().map_or("", |x| x.text.as_str()).to_string();
            p.err_hint(
                ErrClass::GeneralError,
                format!("{kw} needs a value - ignoring"),
                hint,
            );
            None
        }
    }
}

/// The words from `i` on, joined by a space, or an error as [`ext_arg`].
fn ext_rest(p: P, w: &[Word], i: usize, hint: &str) -> Option<String> {
    ext_arg(p, w, i, hint)?;
    Some(
        w[i..]
            .iter()
            .map(|x| x.text.as_str())
            .collect::<Vec<_>>()
            .join(" "),
    )
}

/// Reads word 1 as a count in 1..=[`COUNT_MAX`].
fn count(p: P, w: &[Word], keyword: &str, hint: &str) -> Option<u32> {
    let s = ext_arg(p, w, 1, hint)?;
    match s.parse::<u32>() {
        Ok(n) if (1..=COUNT_MAX).contains(&n) && s.bytes().all(|b| b.is_ascii_digit()) => Some(n),
        _ => {
            p.err_hint(
                ErrClass::InvalidNumber,
                format!("{keyword} '{s}' invalid - must be a whole number from 1 to {COUNT_MAX}; ignoring"),
                hint,
            );
            None
        }
    }
}

/// Reads word 1 as seconds (decimals allowed), returned in µs.
fn interval(p: P, w: &[Word], keyword: &str) -> Option<u64> {
    let s = ext_arg(p, w, 1, INTERVAL_HINT)?;
    let v = s
        .parse::<f64>()
        .ok()
        .filter(|v| v.is_finite() && (INTERVAL_MIN..=INTERVAL_MAX).contains(v))
        .filter(|_| s.bytes().all(|b| b.is_ascii_digit() || b == b'.'));
    match v {
        Some(v) => Some((v * 1e6).round() as u64),
        None => {
            p.err_hint(
                ErrClass::InvalidNumber,
                format!(
                    "{keyword} '{s}' invalid - must be seconds from {INTERVAL_MIN} to {INTERVAL_MAX}; ignoring"
                ),
                INTERVAL_HINT,
            );
            None
        }
    }
}

const INTERVAL_HINT: &str = "write seconds, with decimals if needed, e.g. `1` or `0.5`";

const RISE_HINT: &str = "the number of consecutive successes before a server that is down is put back, e.g. `healthy_threshold 3`";
const FALL_HINT: &str = "the number of consecutive failures before a server is taken out, e.g. `unhealthy_threshold 3` (the same as `retry 2`)";

/// Which block's settings a handler writes.
#[derive(Clone, Copy)]
enum Level {
    Checker,
    VirtualServer,
}

fn thresholds<'a>(p: &'a mut Parser<'_, '_>, level: Level) -> Option<&'a mut Thresholds> {
    match level {
        Level::Checker => {
            common(p).map(|c| &mut **c.thresholds.get_or_insert_with(Default::default))
        }
        Level::VirtualServer => vs(p).map(|v| &mut v.thresholds),
    }
}

/// `retry` of this block, if written.
fn retry_of(p: &mut Parser<'_, '_>, level: Level) -> Option<u32> {
    match level {
        Level::Checker => common(p).and_then(|c| c.retry),
        Level::VirtualServer => vs(p).and_then(|v| v.retry),
    }
}

/// `retry` and `unhealthy_threshold` say the same thing: one block may
/// have one of them.
fn both_written(p: P, which_ignored: &str) {
    p.err_hint(
        ErrClass::GeneralError,
        format!(
            "retry and unhealthy_threshold both set in one block - ignoring this {which_ignored}"
        ),
        "unhealthy_threshold N is retry N-1: keep one of the two",
    );
}

fn healthy_threshold(p: P, w: &[Word], level: Level) -> HandlerResult {
    if let Some(n) = count(p, w, "healthy_threshold", RISE_HINT) {
        if let Some(t) = thresholds(p, level) {
            t.healthy_threshold = Some(n);
        }
    }
    Ok(())
}

fn unhealthy_threshold(p: P, w: &[Word], level: Level) -> HandlerResult {
    if let Some(n) = count(p, w, "unhealthy_threshold", FALL_HINT) {
        if retry_of(p, level).is_some() {
            both_written(p, "unhealthy_threshold");
            return Ok(());
        }
        if let Some(t) = thresholds(p, level) {
            t.unhealthy_threshold = Some(n);
        }
    }
    Ok(())
}

fn fast_interval(p: P, w: &[Word], level: Level) -> HandlerResult {
    if let Some(us) = interval(p, w, "fast_interval") {
        if let Some(t) = thresholds(p, level) {
            t.fast_interval = Some(us);
        }
    }
    Ok(())
}

fn down_interval(p: P, w: &[Word], level: Level) -> HandlerResult {
    if let Some(us) = interval(p, w, "down_interval") {
        if let Some(t) = thresholds(p, level) {
            t.down_interval = Some(us);
        }
    }
    Ok(())
}

/// A `retry` after an `unhealthy_threshold` of the same block is refused.
fn retry_after_threshold(p: P, level: Level) {
    let has_threshold = match level {
        Level::Checker => common(p)
            .and_then(|c| c.thresholds.as_ref())
            .is_some_and(|t| t.unhealthy_threshold.is_some()),
        Level::VirtualServer => vs(p).is_some_and(|v| v.thresholds.unhealthy_threshold.is_some()),
    };
    if has_threshold {
        match level {
            Level::Checker => {
                if let Some(c) = common(p) {
                    c.retry = None;
                }
            }
            Level::VirtualServer => {
                if let Some(v) = vs(p) {
                    v.retry = None;
                }
            }
        }
        both_written(p, "retry");
    }
}

/// `retry` in a checker: keepalived's, then the extension's conflict check.
pub fn ck_retry(p: P, w: &[Word]) -> HandlerResult {
    ck_retry_value(p, w)?;
    retry_after_threshold(p, Level::Checker);
    Ok(())
}

/// `retry` in a virtual server.
pub fn vs_retry(p: P, w: &[Word]) -> HandlerResult {
    vs_retry_value(p, w)?;
    retry_after_threshold(p, Level::VirtualServer);
    Ok(())
}

pub fn ck_healthy_threshold(p: P, w: &[Word]) -> HandlerResult {
    healthy_threshold(p, w, Level::Checker)
}
pub fn ck_unhealthy_threshold(p: P, w: &[Word]) -> HandlerResult {
    unhealthy_threshold(p, w, Level::Checker)
}
pub fn ck_fast_interval(p: P, w: &[Word]) -> HandlerResult {
    fast_interval(p, w, Level::Checker)
}
pub fn ck_down_interval(p: P, w: &[Word]) -> HandlerResult {
    down_interval(p, w, Level::Checker)
}
pub fn vs_healthy_threshold(p: P, w: &[Word]) -> HandlerResult {
    healthy_threshold(p, w, Level::VirtualServer)
}
pub fn vs_unhealthy_threshold(p: P, w: &[Word]) -> HandlerResult {
    unhealthy_threshold(p, w, Level::VirtualServer)
}
pub fn vs_fast_interval(p: P, w: &[Word]) -> HandlerResult {
    fast_interval(p, w, Level::VirtualServer)
}
pub fn vs_down_interval(p: P, w: &[Word]) -> HandlerResult {
    down_interval(p, w, Level::VirtualServer)
}

/// The HTTP_GET or SSL_GET being read.
fn http_check<'a>(p: &'a mut Parser<'_, '_>) -> Option<&'a mut HttpCheck> {
    match p.checker.as_mut() {
        Some(Checker::Http(h) | Checker::Ssl(h)) => Some(h),
        _ => None,
    }
}

const METHOD_HINT: &str = "write `method GET` (keepalived's) or `method HEAD` (headers only: no digest, regex or expect_body)";

/// `method GET|HEAD` (HTTP_GET, SSL_GET).
pub fn http_method(p: P, w: &[Word]) -> HandlerResult {
    let Some(m) = ext_arg(p, w, 1, METHOD_HINT) else {
        return Ok(());
    };
    if m != "GET" && m != "HEAD" {
        p.err_hint(
            ErrClass::GeneralError,
            format!("method '{m}' invalid - ignoring"),
            METHOD_HINT,
        );
        return Ok(());
    }
    if let Some(h) = http_check(p) {
        h.ext.get_or_insert_with(Default::default).method = Some(m);
    }
    Ok(())
}

/// `user_agent TEXT` (HTTP_GET, SSL_GET).
pub fn http_user_agent(p: P, w: &[Word]) -> HandlerResult {
    let Some(ua) = ext_rest(
        p,
        w,
        1,
        "write the User-Agent to send, e.g. `user_agent lb-probe/1.0`",
    ) else {
        return Ok(());
    };
    if let Some(h) = http_check(p) {
        h.ext.get_or_insert_with(Default::default).user_agent = Some(ua);
    }
    Ok(())
}

/// `ca_file PATH` (SSL_GET): verify the server's certificate chain.
pub fn ssl_ca_file(p: P, w: &[Word]) -> HandlerResult {
    let Some(path) = ext_arg(p, w, 1, "name a PEM file of CA certificates") else {
        return Ok(());
    };
    if let Err(e) = std::fs::metadata(&path) {
        // A file of the host, not of the configuration: a note (the exit
        // code unchanged), as the checks say why they fail until it is
        // there.
        p.err_hint(
            ErrClass::Ok,
            format!("ca_file {path}: {e} - checks will fail until it can be read"),
            "name a PEM file of the CA certificates the real servers' certificates are issued by",
        );
    }
    if let Some(h) = http_check(p) {
        h.ext.get_or_insert_with(Default::default).ca_file = Some(path);
    }
    Ok(())
}

/// `verify_hostname [NAME]` (SSL_GET, with `ca_file`).
pub fn ssl_verify_hostname(p: P, w: &[Word]) -> HandlerResult {
    let name = w.get(1).map(|x| x.text.clone());
    if let Some(h) = http_check(p) {
        h.ext.get_or_insert_with(Default::default).verify_hostname = Some(name);
    }
    Ok(())
}

/// At the end of an HTTP_GET/SSL_GET block: settings that contradict each
/// other.
pub fn http_extensions_close(p: P) {
    let Some(h) = http_check(p) else {
        return;
    };
    let x = h.ext();
    let head_with_body = x.method.as_deref() == Some("HEAD")
        && h.urls
            .iter()
            .any(|u| u.digest.is_some() || u.re.regex.is_some() || u.ext().expect_body.is_some());
    let name_without_ca = x.verify_hostname.is_some() && x.ca_file.is_none();
    if head_with_body {
        p.err_hint(
            ErrClass::GeneralError,
            "method HEAD with a url that checks the body (digest, regex or expect_body)",
            "a HEAD answer has no body: use GET for these urls, or drop the body checks",
        );
    }
    if name_without_ca {
        p.err_hint(
            ErrClass::GeneralError,
            "verify_hostname without ca_file - the name cannot be verified",
            "add `ca_file PATH` with the CAs the servers' certificates come from",
        );
    }
}

/// The url being read.
fn url_block<'a>(p: &'a mut Parser<'_, '_>) -> Option<&'a mut Url> {
    p.url.as_mut()
}

/// `expect_body TEXT` (url): the body must hold TEXT.
pub fn url_expect_body(p: P, w: &[Word]) -> HandlerResult {
    let Some(text) = ext_rest(
        p,
        w,
        1,
        "write the text the body must hold, e.g. `expect_body ready`",
    ) else {
        return Ok(());
    };
    if let Some(u) = url_block(p) {
        u.ext.get_or_insert_with(Default::default).expect_body = Some(text);
    }
    Ok(())
}

const EXPECT_HEADER_HINT: &str =
    "write the header's name, then the text its value must hold: `expect_header Content-Type json`";

/// `expect_header NAME [TEXT]` (url).
pub fn url_expect_header(p: P, w: &[Word]) -> HandlerResult {
    let Some(name) = ext_arg(p, w, 1, EXPECT_HEADER_HINT) else {
        return Ok(());
    };
    let name = name.trim_end_matches(':').to_string();
    let text = (w.len() > 2).then(|| {
        w[2..]
            .iter()
            .map(|x| x.text.as_str())
            .collect::<Vec<_>>()
            .join(" ")
    });
    if name.is_empty() || !name.bytes().all(|b| b.is_ascii_graphic()) {
        p.err_hint(
            ErrClass::GeneralError,
            format!("expect_header name '{name}' invalid - ignoring"),
            EXPECT_HEADER_HINT,
        );
        return Ok(());
    }
    if let Some(u) = url_block(p) {
        u.ext.get_or_insert_with(Default::default).expect_header = Some((name, text));
    }
    Ok(())
}

/// `slow_start SECONDS` (virtual server).
pub fn vs_slow_start(p: P, w: &[Word]) -> HandlerResult {
    if let Some(us) = interval(p, w, "slow_start") {
        if let Some(v) = vs(p) {
            v.slow_start = Some(us);
        }
    }
    Ok(())
}

/// `drain_timeout SECONDS` (virtual server).
pub fn vs_drain_timeout(p: P, w: &[Word]) -> HandlerResult {
    if let Some(us) = interval(p, w, "drain_timeout") {
        if let Some(v) = vs(p) {
            v.drain_timeout = Some(us);
        }
    }
    Ok(())
}
