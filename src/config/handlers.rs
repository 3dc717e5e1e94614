//! Keyword handlers for the sections this daemon runs: `global_defs`, the
//! root settings, `SSL`, `track_file`, `virtual_server_group`,
//! `virtual_server`, `real_server` and every checker.
//!
//! Called by [`super::parser`] through the tables of [`super::keywords`];
//! each reads one keyword's words into the model with keepalived 2.2.7's
//! ranges, defaults and messages (a bad value is reported and ignored, as
//! keepalived does, unless keepalived substitutes a value).

use super::diag::ErrClass;
use super::lexer::Word;
use super::model::*;
use super::parser::{parse_ip, parse_port, HandlerResult, Parser};
use super::reader::IncludeCheck;

type P<'a, 'r, 'l> = &'a mut Parser<'r, 'l>;

const U32MAX: u64 = u32::MAX as u64;

// ---- global_defs ----

pub fn router_id(p: P, w: &[Word]) -> HandlerResult {
    match w.get(1) {
        Some(x) => p.cfg.global_defs.router_id = Some(x.text.clone()),
        None => p.err(ErrClass::GeneralError, "routerid name missing - ignoring"),
    }
    Ok(())
}
pub fn lvs_flush(p: P, _w: &[Word]) -> HandlerResult {
    p.cfg.global_defs.lvs_flush = true;
    Ok(())
}
pub fn lvs_flush_on_stop(p: P, w: &[Word]) -> HandlerResult {
    p.cfg.global_defs.lvs_flush_on_stop = match w.get(1).map(|x| x.text.as_str()) {
        None => FlushOnStop::Full,
        Some("VS") => FlushOnStop::Vs,
        Some(o) => {
            p.err_hint(
                ErrClass::GeneralError,
                format!("Invalid lvs_flush_on_stop parameter {o}"),
                "use 'lvs_flush_on_stop' alone or 'lvs_flush_on_stop VS'",
            );
            return Ok(());
        }
    };
    Ok(())
}
pub fn lvs_timeouts(p: P, w: &[Word]) -> HandlerResult {
    if w.len() < 3 {
        p.err(
            ErrClass::GeneralError,
            "lvs_timeouts requires at least one option",
        );
        return Ok(());
    }
    let mut t = p.cfg.global_defs.lvs_timeouts.unwrap_or_default();
    let mut i = 1;
    while i < w.len() {
        let key = w[i].text.clone();
        let Some(v) = w.get(i + 1) else {
            p.err(
                ErrClass::GeneralError,
                format!("No value specified for lvs_timeout {key} - ignoring"),
            );
            break;
        };
        let val = p
            .read_unsigned(&v.text, 0, 86400 * 31, true)
            .map(|x| x as u32);
        match (key.as_str(), val) {
            ("tcp", Some(v)) => t.tcp = Some(v),
            ("tcpfin", Some(v)) => t.tcpfin = Some(v),
            ("udp", Some(v)) => t.udp = Some(v),
            ("tcp" | "tcpfin" | "udp", None) => p.err(
                ErrClass::GeneralError,
                format!("Invalid lvs_timeout {key} ({}) - ignoring", v.text),
            ),
            _ => p.err(
                ErrClass::GeneralError,
                format!("Unknown option {key} specified for lvs_timeouts"),
            ),
        }
        i += 2;
    }
    p.cfg.global_defs.lvs_timeouts = Some(t);
    Ok(())
}
pub fn lvs_sync_daemon(p: P, w: &[Word]) -> HandlerResult {
    p.arg(w, 1)?;
    p.cfg.global_defs.lvs_sync_daemon = Some(w[1..].iter().map(|x| x.text.clone()).collect());
    Ok(())
}
pub fn script_user(p: P, w: &[Word]) -> HandlerResult {
    let u = p.arg(w, 1)?.to_string();
    let g = w.get(2).map(|x| x.text.trim_start_matches(':').to_string());
    p.cfg.global_defs.script_user = Some((u, g));
    Ok(())
}
pub fn enable_script_security(p: P, _w: &[Word]) -> HandlerResult {
    p.cfg.global_defs.enable_script_security = true;
    Ok(())
}
pub fn checker_log_all_failures(p: P, w: &[Word]) -> HandlerResult {
    if let Some(b) = p.opt_bool(w, "checker_log_all_failures") {
        p.cfg.global_defs.checker_log_all_failures = b;
    }
    Ok(())
}
pub fn rs_init_notifies(p: P, w: &[Word]) -> HandlerResult {
    if let Some(b) = p.opt_bool(w, "rs_init_notifies") {
        p.cfg.global_defs.rs_init_notifies = b;
    }
    Ok(())
}
pub fn no_checker_emails(p: P, w: &[Word]) -> HandlerResult {
    if let Some(b) = p.opt_bool(w, "no_checker_emails") {
        p.cfg.global_defs.no_checker_emails = b;
    }
    Ok(())
}
pub fn global_smtp_alert(p: P, w: &[Word]) -> HandlerResult {
    if let Some(b) = p.opt_bool(w, "smtp_alert") {
        p.cfg.global_defs.smtp_alert = Some(b);
    }
    Ok(())
}
pub fn global_smtp_alert_checker(p: P, w: &[Word]) -> HandlerResult {
    if let Some(b) = p.opt_bool(w, "smtp_alert_checker") {
        p.cfg.global_defs.smtp_alert_checker = Some(b);
    }
    Ok(())
}
fn fifo(p: P, w: &[Word]) -> Result<Fifo, super::parser::MissingParameter> {
    Ok(Fifo {
        path: p.arg(w, 1)?.to_string(),
        user: w.get(2).map(|x| x.text.clone()),
        group: w.get(3).map(|x| x.text.clone()),
    })
}
pub fn notify_fifo(p: P, w: &[Word]) -> HandlerResult {
    let f = fifo(p, w)?;
    p.cfg.global_defs.notify_fifo = Some(f);
    Ok(())
}
pub fn lvs_notify_fifo(p: P, w: &[Word]) -> HandlerResult {
    let f = fifo(p, w)?;
    p.cfg.global_defs.lvs_notify_fifo = Some(f);
    Ok(())
}
pub fn notify_fifo_script(p: P, w: &[Word]) -> HandlerResult {
    p.cfg.global_defs.notify_fifo_script = p.script(w)?;
    Ok(())
}
pub fn lvs_notify_fifo_script(p: P, w: &[Word]) -> HandlerResult {
    p.cfg.global_defs.lvs_notify_fifo_script = p.script(w)?;
    Ok(())
}
pub fn notification_email(p: P, w: &[Word]) -> HandlerResult {
    let vals = p.read_value_block(w);
    for (v, _) in vals {
        p.cfg
            .global_defs
            .notification_email
            .extend(v.into_iter().map(|x| x.text));
    }
    Ok(())
}
pub fn notification_email_from(p: P, w: &[Word]) -> HandlerResult {
    p.cfg.global_defs.notification_email_from = Some(p.arg(w, 1)?.to_string());
    Ok(())
}
pub fn smtp_server(p: P, w: &[Word]) -> HandlerResult {
    let host = p.arg(w, 1)?.to_string();
    let port = match w.get(2) {
        Some(x) => match parse_port(&x.text) {
            Some(pt) if pt > 0 => pt,
            _ => {
                p.err(
                    ErrClass::GeneralError,
                    format!("Invalid smtp_server port '{}'", x.text),
                );
                25
            }
        },
        None => 25,
    };
    p.cfg.global_defs.smtp_server = Some((host, port));
    Ok(())
}
pub fn smtp_helo_name(p: P, w: &[Word]) -> HandlerResult {
    p.cfg.global_defs.smtp_helo_name = Some(p.arg(w, 1)?.to_string());
    Ok(())
}
pub fn smtp_connect_timeout(p: P, w: &[Word]) -> HandlerResult {
    let s = p.arg(w, 1)?.to_string();
    match p.read_unsigned(&s, 1, U32MAX, true) {
        Some(v) => p.cfg.global_defs.smtp_connect_timeout = v * TIMER_HZ,
        None => p.err(
            ErrClass::GeneralError,
            format!("smtp_connect_timeout '{s}' must be greater than 0"),
        ),
    }
    Ok(())
}
pub fn checker_process_name(p: P, w: &[Word]) -> HandlerResult {
    p.cfg.global_defs.checker_process_name = Some(p.arg(w, 1)?.to_string());
    Ok(())
}
pub fn random_seed(p: P, w: &[Word]) -> HandlerResult {
    let s = p.arg(w, 1)?.to_string();
    if let Some(v) = p.read_unsigned(&s, 0, U32MAX, true) {
        p.cfg.global_defs.random_seed = Some(v as u32);
        p.r.set_random_seed(v);
    }
    Ok(())
}
pub fn reload_check_config(p: P, w: &[Word]) -> HandlerResult {
    p.cfg.global_defs.reload_check_config = Some(
        w.get(1)
            .map(|x| x.text.clone())
            .unwrap_or_else(|| "/dev/null".into()),
    );
    Ok(())
}
/// `status_socket PATH`: an extension of ours.
pub fn status_socket(p: P, w: &[Word]) -> HandlerResult {
    match w.get(1) {
        Some(x) if x.text.starts_with('/') => {
            p.cfg.global_defs.status_socket = Some(x.text.clone())
        }
        Some(x) => p.err_hint(
            ErrClass::GeneralError,
            format!(
                "status_socket {} is not an absolute path - ignoring",
                x.text
            ),
            "give the socket's full path, e.g. /run/keepalived/status.sock",
        ),
        None => p.err(
            ErrClass::GeneralError,
            "status_socket path missing - ignoring",
        ),
    }
    Ok(())
}
/// `metrics_listen ADDR PORT`: an extension of ours.
pub fn metrics_listen(p: P, w: &[Word]) -> HandlerResult {
    let addr = w
        .get(1)
        .and_then(|a| a.text.parse::<std::net::IpAddr>().ok());
    let port = w.get(2).and_then(|a| a.text.parse::<u16>().ok());
    match (addr, port) {
        (Some(a), Some(port)) => {
            p.cfg.global_defs.metrics_listen = Some(std::net::SocketAddr::new(a, port))
        }
        _ => p.err_hint(
            ErrClass::GeneralError,
            "metrics_listen needs an address and a port - ignoring",
            "e.g. metrics_listen 127.0.0.1 9650",
        ),
    }
    Ok(())
}
pub fn include_check(p: P, w: &[Word]) -> HandlerResult {
    if w.len() == 1 {
        p.r.set_include_check(IncludeCheck::ALL);
        return Ok(());
    }
    let mut c = IncludeCheck::default();
    for x in &w[1..] {
        let (set, name) = match x.text.strip_prefix('-') {
            Some(n) => (false, n),
            None => (true, x.text.strip_prefix('+').unwrap_or(&x.text)),
        };
        match name {
            "readable" => c.readable = set,
            "match" => c.matched = set,
            "wildcard_match" => c.wildcard_match = set,
            "brace_match" => c.brace_match = set,
            other => p.err(
                ErrClass::GeneralError,
                format!("Unknown include_check type {other}"),
            ),
        }
    }
    p.r.set_include_check(c);
    Ok(())
}

// ---- root settings ----

pub fn net_namespace(p: P, w: &[Word]) -> HandlerResult {
    p.cfg.root.net_namespace = Some(p.arg(w, 1)?.to_string());
    Ok(())
}
pub fn net_namespace_ipvs(p: P, w: &[Word]) -> HandlerResult {
    p.cfg.root.net_namespace_ipvs = Some(w.get(1).map(|x| x.text.clone()).unwrap_or_default());
    Ok(())
}
pub fn namespace_with_ipsets(p: P, _w: &[Word]) -> HandlerResult {
    p.cfg.root.namespace_with_ipsets = true;
    Ok(())
}
pub fn use_pid_dir(p: P, _w: &[Word]) -> HandlerResult {
    p.cfg.root.use_pid_dir = true;
    Ok(())
}
pub fn instance(p: P, w: &[Word]) -> HandlerResult {
    p.cfg.root.instance = Some(p.arg(w, 1)?.to_string());
    Ok(())
}
pub fn child_wait_time(p: P, w: &[Word]) -> HandlerResult {
    let s = p.arg(w, 1)?.to_string();
    if let Some(v) = p.read_unsigned(&s, 1, 1000, true) {
        p.cfg.root.child_wait_time = Some(v as u32);
    } else {
        p.err(
            ErrClass::GeneralError,
            format!("Invalid child_wait_time {s}"),
        );
    }
    Ok(())
}
pub fn linkbeat_use_polling(p: P, _w: &[Word]) -> HandlerResult {
    p.cfg.root.linkbeat_use_polling = true;
    Ok(())
}

// ---- SSL ----

pub fn ssl_block_open(p: P, _w: &[Word]) -> HandlerResult {
    p.cfg.ssl.get_or_insert_with(SslBlock::default);
    Ok(())
}
fn ssl_mut<'a>(p: &'a mut Parser<'_, '_>) -> &'a mut SslBlock {
    p.cfg.ssl.get_or_insert_with(SslBlock::default)
}
pub fn ssl_password(p: P, w: &[Word]) -> HandlerResult {
    let v = p.arg(w, 1)?.to_string();
    ssl_mut(p).password = Some(v);
    Ok(())
}
pub fn ssl_ca(p: P, w: &[Word]) -> HandlerResult {
    let v = p.arg(w, 1)?.to_string();
    ssl_mut(p).ca = Some(v);
    Ok(())
}
pub fn ssl_certificate(p: P, w: &[Word]) -> HandlerResult {
    let v = p.arg(w, 1)?.to_string();
    ssl_mut(p).certificate = Some(v);
    Ok(())
}
pub fn ssl_key(p: P, w: &[Word]) -> HandlerResult {
    let v = p.arg(w, 1)?.to_string();
    ssl_mut(p).key = Some(v);
    Ok(())
}

// ---- track_file ----

pub fn tf_open(p: P, w: &[Word]) -> HandlerResult {
    let name = p.arg(w, 1)?.to_string();
    if w[0].text == "vrrp_track_file" {
        p.err(
            ErrClass::Deprecated,
            "\"vrrp_track_file\" is deprecated, please use \"track_file\"",
        );
    }
    p.track_file = Some(TrackFile {
        name,
        file: None,
        weight: 1,
        reverse: false,
        init_file: None,
        line: p.pos.line,
    });
    Ok(())
}
pub fn tf_file(p: P, w: &[Word]) -> HandlerResult {
    let f = p.arg(w, 1)?.to_string();
    if let Some(t) = p.track_file.as_mut() {
        t.file = Some(f);
    }
    Ok(())
}
pub fn tf_weight(p: P, w: &[Word]) -> HandlerResult {
    let s = p.arg(w, 1)?.to_string();
    let Some(v) = p.read_int(&s, -254, 254, true) else {
        p.err(
            ErrClass::GeneralError,
            format!("Weight for {} must be between [-254:254]", w[0].text),
        );
        return Ok(());
    };
    let reverse = w.get(2).is_some_and(|x| x.text == "reverse");
    if let Some(t) = p.track_file.as_mut() {
        t.weight = v as i32;
        t.reverse = reverse;
    }
    Ok(())
}
pub fn tf_init_file(p: P, w: &[Word]) -> HandlerResult {
    if let Some(t) = p.track_file.as_mut() {
        t.init_file = Some(w[1..].iter().map(|x| x.text.clone()).collect());
    }
    Ok(())
}
pub fn tf_close(p: P) {
    if let Some(t) = p.track_file.take() {
        if t.file.is_none() {
            p.err(
                ErrClass::GeneralError,
                format!("No file set for track_file {} - removing", t.name),
            );
            return;
        }
        p.cfg.track_files.push(t);
    }
}

// ---- virtual_server_group ----

pub fn vsg(p: P, w: &[Word]) -> HandlerResult {
    let name = p.arg(w, 1)?.to_string();
    let line = p.pos.line;
    let lines = p.read_value_block(&w[..1]);
    let mut entries = Vec::new();
    for (v, l) in lines {
        let pos = super::diag::Pos {
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
    p.pos.line = line;
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

// ---- virtual_server ----

pub fn vs_open(p: P, w: &[Word]) -> HandlerResult {
    let a1 = p.arg(w, 1)?.to_string();
    let address = match a1.as_str() {
        "group" => VsAddress::Group {
            name: p.arg(w, 2)?.to_string(),
        },
        "fwmark" => {
            let s = p.arg(w, 2)?.to_string();
            match p.read_unsigned(&s, 0, U32MAX, false) {
                Some(m) => VsAddress::Fwmark { fwmark: m as u32 },
                None => {
                    p.err(
                        ErrClass::GeneralError,
                        format!(
                            "virtual server fwmark '{s}' must be in [0, {}] - skipping",
                            u32::MAX
                        ),
                    );
                    p.skip_block();
                    return Ok(());
                }
            }
        }
        _ => {
            let port_s = w.get(2).map(|x| x.text.clone());
            let ip = parse_ip(&a1);
            let port = match &port_s {
                None => Some(0),
                Some(s) => parse_port(s),
            };
            match (ip, port) {
                (Some(ip), Some(port)) => VsAddress::Addr { ip, port },
                _ => {
                    p.err_hint(
                        ErrClass::GeneralError,
                        format!(
                            "Invalid virtual server ip address/port {}/{} - skipping",
                            a1,
                            port_s.unwrap_or_default()
                        ),
                        "use a numeric IPv4 or IPv6 address and a port 1-65535; the whole block is ignored",
                    );
                    p.skip_block();
                    return Ok(());
                }
            }
        }
    };
    p.vs = Some(VirtualServer {
        address,
        line: p.pos.line,
        protocol: None,
        lvs_sched: None,
        lvs_method: None,
        persistence_timeout: 0,
        persistence_granularity: None,
        persistence_engine: None,
        ops: false,
        sched_flags: [false; 3],
        ha_suspend: false,
        alpha: false,
        omega: false,
        quorum: 1,
        hysteresis: 0,
        quorum_up: None,
        quorum_down: None,
        sorry_server: None,
        ip_family: None,
        virtualhost: None,
        smtp_alert: None,
        snmp_name: None,
        weight: 1,
        delay_loop: None,
        connect_timeout: None,
        retry: None,
        delay_before_retry: None,
        warmup: None,
        inhibit_on_failure: false,
        real_servers: Vec::new(),
    });
    Ok(())
}

pub fn vs_close(p: P) {
    let Some(mut vs) = p.vs.take() else {
        return;
    };
    // vs_end_handler(): a sorry server that is not tunnelled must have the
    // virtual server's family.
    if let Some(s) = &vs.sorry_server {
        let tun = matches!(s.lvs_method, Some(Forwarding::Tun { .. }));
        if !tun && parse_family(&vs).is_some_and(|v6| v6 != s.ip.is_ipv6()) {
            p.err(
                ErrClass::GeneralError,
                format!(
                    "Address family of virtual server and sorry server {} don't match - skipping sorry server.",
                    s.ip
                ),
            );
            vs.sorry_server = None;
        }
    }
    p.cfg.virtual_servers.push(vs);
}

fn vs<'a>(p: &'a mut Parser<'_, '_>) -> Option<&'a mut VirtualServer> {
    p.vs.as_mut()
}

const SCHEDULERS: &[&str] = &[
    "rr", "wrr", "lc", "wlc", "lblc", "sh", "mh", "dh", "fo", "ovf", "lblcr", "sed", "nq", "twos",
];

pub fn vs_sched(p: P, w: &[Word]) -> HandlerResult {
    let s = p.arg(w, 1)?.to_string();
    if SCHEDULERS.contains(&s.as_str()) {
        if let Some(v) = vs(p) {
            v.lvs_sched = Some(s);
        }
    } else {
        p.err_hint(
            ErrClass::GeneralError,
            format!("Invalid lvs_scheduler '{s}' - ignoring"),
            format!("one of: {}", SCHEDULERS.join(" ")),
        );
    }
    Ok(())
}

/// What a TUN method with a bad tunnel option becomes: keepalived has
/// already set the method to plain TUN when it meets the error.
const TUN_IPIP: Forwarding = Forwarding::Tun {
    tunnel: TunnelType::Ipip,
    csum: None,
};

fn forwarding(p: P, w: &[Word], what: &str) -> Option<Forwarding> {
    let m = w.get(1)?.text.clone();
    match m.as_str() {
        "NAT" => Some(Forwarding::Nat),
        "DR" => Some(Forwarding::Dr),
        "TUN" => {
            let mut tunnel = TunnelType::Ipip;
            let mut csum = None;
            let mut i = 2;
            while i < w.len() {
                match w[i].text.as_str() {
                    "type" => {
                        match w.get(i + 1).map(|x| x.text.as_str()) {
                            Some("ipip") => tunnel = TunnelType::Ipip,
                            Some("gue") => tunnel = TunnelType::Gue { port: 0 },
                            Some("gre") => tunnel = TunnelType::Gre,
                            o => {
                                p.err(
                                    ErrClass::GeneralError,
                                    format!("Unknown tunnel type {}", o.unwrap_or("")),
                                );
                                return Some(TUN_IPIP);
                            }
                        }
                        i += 2;
                    }
                    "port" => {
                        let port = w
                            .get(i + 1)
                            .and_then(|x| parse_port(&x.text))
                            .filter(|&x| x > 0);
                        match (port, &mut tunnel) {
                            (Some(pt), TunnelType::Gue { port }) => *port = pt,
                            _ => {
                                p.err(ErrClass::GeneralError, "Invalid gue tunnel port");
                                return Some(TUN_IPIP);
                            }
                        }
                        i += 2;
                    }
                    "nocsum" => {
                        csum = Some(TunnelCsum::Nocsum);
                        i += 1;
                    }
                    "csum" => {
                        csum = Some(TunnelCsum::Csum);
                        i += 1;
                    }
                    "remcsum" => {
                        csum = Some(TunnelCsum::Remcsum);
                        i += 1;
                    }
                    o => {
                        p.err(ErrClass::GeneralError, format!("Unknown TUN option {o}"));
                        i += 1;
                    }
                }
            }
            if let TunnelType::Gue { port: 0 } = tunnel {
                p.err(ErrClass::GeneralError, "gue tunnel requires a port");
                return Some(TUN_IPIP);
            }
            if tunnel == TunnelType::Ipip && csum.is_some() {
                p.err(
                    ErrClass::GeneralError,
                    "ipip tunnels do not support checksum options",
                );
                csum = None;
            }
            if tunnel == TunnelType::Gre && csum == Some(TunnelCsum::Remcsum) {
                p.err(ErrClass::GeneralError, "gre tunnels do not support remcsum");
                csum = None;
            }
            Some(Forwarding::Tun { tunnel, csum })
        }
        other => {
            p.err_hint(
                ErrClass::GeneralError,
                format!("PARSER : unknown [{other}] routing method for {what}."),
                "use NAT, DR or TUN",
            );
            None
        }
    }
}

pub fn vs_method(p: P, w: &[Word]) -> HandlerResult {
    p.arg(w, 1)?;
    if let Some(f) = forwarding(p, w, "virtual server") {
        if let Some(v) = vs(p) {
            v.lvs_method = Some(f);
        }
    }
    Ok(())
}

pub fn vs_protocol(p: P, w: &[Word]) -> HandlerResult {
    let s = p.arg(w, 1)?.to_string();
    let proto = match s.to_ascii_uppercase().as_str() {
        "TCP" => Protocol::Tcp,
        "UDP" => Protocol::Udp,
        "SCTP" => Protocol::Sctp,
        _ => {
            p.err_hint(
                ErrClass::GeneralError,
                format!("Unknown protocol {s} - ignoring"),
                "use TCP, UDP or SCTP",
            );
            return Ok(());
        }
    };
    if let Some(v) = vs(p) {
        v.protocol = Some(proto);
    }
    Ok(())
}

pub fn vs_persistence_timeout(p: P, w: &[Word]) -> HandlerResult {
    let t = match w.get(1) {
        None => 360,
        Some(x) => {
            let s = x.text.clone();
            match p.read_unsigned(&s, 1, 2678400, true) {
                Some(v) => v as u32,
                None => {
                    p.err(ErrClass::GeneralError, "persistence_timeout invalid");
                    return Ok(());
                }
            }
        }
    };
    if let Some(v) = vs(p) {
        v.persistence_timeout = t;
    }
    Ok(())
}

pub fn vs_persistence_granularity(p: P, w: &[Word]) -> HandlerResult {
    let s = p.arg(w, 1)?.to_string();
    let ok = if s.contains('.') {
        s.parse::<std::net::Ipv4Addr>().is_ok()
    } else {
        matches!(s.parse::<u32>(), Ok(1..=128))
    };
    if !ok {
        p.err(
            ErrClass::GeneralError,
            format!("Invalid persistence_granularity specified - {s}"),
        );
        return Ok(());
    }
    if let Some(v) = vs(p) {
        v.persistence_granularity = Some(s);
        if v.persistence_timeout == 0 {
            v.persistence_timeout = 360;
        }
    }
    Ok(())
}

pub fn vs_persistence_engine(p: P, w: &[Word]) -> HandlerResult {
    let s = p.arg(w, 1)?.to_string();
    if s.len() > 15 {
        p.err(
            ErrClass::GeneralError,
            format!("persistence_engine name too long - {s}"),
        );
        return Ok(());
    }
    if let Some(v) = vs(p) {
        v.persistence_engine = Some(s);
    }
    Ok(())
}

pub fn vs_ops(p: P, _w: &[Word]) -> HandlerResult {
    if let Some(v) = vs(p) {
        v.ops = true;
    }
    Ok(())
}

pub fn vs_flag(p: P, w: &[Word]) -> HandlerResult {
    let k = w[0].text.as_str();
    let sched = p.vs.as_ref().and_then(|v| v.lvs_sched.clone());
    let idx = match k {
        "flag-1" => 0,
        "flag-2" => 1,
        "flag-3" => 2,
        "sh-port" | "mh-port" => 1,
        "sh-fallback" | "mh-fallback" => 0,
        _ => return Ok(()),
    };
    if let Some(prefix) = k
        .strip_suffix("-port")
        .or_else(|| k.strip_suffix("-fallback"))
    {
        // lbflags_handler(): with sh or mh already chosen, the other's
        // flags are dropped silently; with any other (or no) scheduler it is
        // an error, worded for sh whichever flag it was.
        match sched.as_deref() {
            Some(s) if s == prefix => {}
            Some("sh" | "mh") => return Ok(()),
            _ => {
                p.err_hint(
                    ErrClass::GeneralError,
                    format!("{k} only applies to sh scheduler - ignoring"),
                    format!("put 'lvs_sched {prefix}' before '{k}'"),
                );
                return Ok(());
            }
        }
    }
    if let Some(v) = vs(p) {
        v.sched_flags[idx] = true;
    }
    Ok(())
}

macro_rules! vs_flag_setter {
    ($name:ident, $field:ident) => {
        pub fn $name(p: P, _w: &[Word]) -> HandlerResult {
            if let Some(v) = vs(p) {
                v.$field = true;
            }
            Ok(())
        }
    };
}
vs_flag_setter!(vs_ha_suspend, ha_suspend);
vs_flag_setter!(vs_alpha, alpha);
vs_flag_setter!(vs_omega, omega);
vs_flag_setter!(vs_inhibit, inhibit_on_failure);

pub fn vs_quorum(p: P, w: &[Word]) -> HandlerResult {
    let s = p.arg(w, 1)?.to_string();
    let q = match p.read_unsigned(&s, 1, U32MAX, true) {
        Some(v) => v as u32,
        None => {
            p.err(
                ErrClass::GeneralError,
                format!("Quorum {s} must be in [1, {}]. Setting to 1.", u32::MAX),
            );
            1
        }
    };
    if let Some(v) = vs(p) {
        v.quorum = q;
    }
    Ok(())
}

pub fn vs_hysteresis(p: P, w: &[Word]) -> HandlerResult {
    let s = p.arg(w, 1)?.to_string();
    match p.read_unsigned(&s, 0, U32MAX, true) {
        Some(h) => {
            if let Some(v) = vs(p) {
                v.hysteresis = h as u32;
            }
        }
        None => p.err(
            ErrClass::GeneralError,
            format!("Hysteresis {s} must be in [0, {}] - ignoring", u32::MAX),
        ),
    }
    Ok(())
}

pub fn vs_quorum_up(p: P, w: &[Word]) -> HandlerResult {
    let s = p.script(w)?;
    if let Some(v) = vs(p) {
        if v.quorum_up.is_some() {
            p.err(
                ErrClass::GeneralError,
                "quorum_up script already specified - ignoring",
            );
            return Ok(());
        }
        v.quorum_up = s;
    }
    Ok(())
}

pub fn vs_quorum_down(p: P, w: &[Word]) -> HandlerResult {
    let s = p.script(w)?;
    if let Some(v) = vs(p) {
        if v.quorum_down.is_some() {
            p.err(
                ErrClass::GeneralError,
                "quorum_down script already specified - ignoring",
            );
            return Ok(());
        }
        v.quorum_down = s;
    }
    Ok(())
}

pub fn vs_sorry_server(p: P, w: &[Word]) -> HandlerResult {
    let a = p.arg(w, 1)?.to_string();
    let ps = w.get(2).map(|x| x.text.clone());
    let ip = parse_ip(&a);
    let port = match &ps {
        None => Some(0),
        Some(s) => parse_port(s),
    };
    match (ip, port) {
        (Some(ip), Some(port)) => {
            if let Some(v) = vs(p) {
                // keepalived copies the virtual server's method as it stands
                // at this line (alloc_ssvr()); a later lvs_method does not
                // change the sorry server's.
                let lvs_method = v.lvs_method;
                v.sorry_server = Some(SorryServer {
                    ip,
                    port,
                    lvs_method,
                    inhibit: false,
                });
            }
        }
        _ => p.err(
            ErrClass::GeneralError,
            format!(
                "Invalid sorry server ip address/port {}/{} - skipping",
                a,
                ps.unwrap_or_default()
            ),
        ),
    }
    Ok(())
}

pub fn vs_sorry_server_inhibit(p: P, _w: &[Word]) -> HandlerResult {
    match p.vs.as_mut().and_then(|v| v.sorry_server.as_mut()) {
        Some(s) => s.inhibit = true,
        None => p.err_hint(
            ErrClass::GeneralError,
            "No sorry server defined for sorry_server_inhibit",
            "sorry_server_inhibit must come after sorry_server",
        ),
    }
    Ok(())
}

pub fn vs_sorry_server_lvs_method(p: P, w: &[Word]) -> HandlerResult {
    p.arg(w, 1)?;
    let f = forwarding(p, w, "sorry server");
    match (f, p.vs.as_mut().and_then(|v| v.sorry_server.as_mut())) {
        (Some(f), Some(s)) => s.lvs_method = Some(f),
        (_, None) => p.err(
            ErrClass::GeneralError,
            "No sorry server defined for sorry_server_lvs_method",
        ),
        _ => {}
    }
    Ok(())
}

pub fn vs_ip_family(p: P, w: &[Word]) -> HandlerResult {
    let s = p.arg(w, 1)?.to_string();
    let f = match s.as_str() {
        "inet" => Family::Inet,
        "inet6" => Family::Inet6,
        _ => {
            p.err(
                ErrClass::GeneralError,
                format!("unknown address family {s}"),
            );
            return Ok(());
        }
    };
    if let Some(v) = vs(p) {
        v.ip_family = Some(f);
    }
    Ok(())
}

pub fn vs_virtualhost(p: P, w: &[Word]) -> HandlerResult {
    let s = p.arg(w, 1)?.to_string();
    if let Some(v) = vs(p) {
        v.virtualhost = Some(s);
    }
    Ok(())
}

pub fn vs_smtp_alert(p: P, w: &[Word]) -> HandlerResult {
    if let Some(b) = p.opt_bool(w, "smtp_alert") {
        if let Some(v) = vs(p) {
            v.smtp_alert = Some(b);
        }
    }
    Ok(())
}

pub fn vs_snmp_name(p: P, w: &[Word]) -> HandlerResult {
    let s = p.arg(w, 1)?.to_string();
    if let Some(v) = vs(p) {
        v.snmp_name = Some(s);
    }
    Ok(())
}

pub fn vs_weight(p: P, w: &[Word]) -> HandlerResult {
    let s = p.arg(w, 1)?.to_string();
    match p.read_int(&s, 1, i32::MAX as i64, true) {
        Some(x) => {
            if let Some(v) = vs(p) {
                v.weight = x as i32;
            }
        }
        None => p.err(
            ErrClass::GeneralError,
            format!("Virtual server weight {s} is outside range 1-{}", i32::MAX),
        ),
    }
    Ok(())
}

// ---- numeric keywords ----

/// How a numeric keyword's value is read.
enum Num {
    /// Seconds with up to 6 decimals, stored in µs (`read_timer()`).
    Timer,
    /// An unsigned integer (`read_unsigned()`).
    Unsigned,
}

/// Reads word 1 as a number in `[min, max]`. The reader reports a rejected
/// value; `bad` is the handler's own second line that keepalived adds
/// (`{}` = the value as written).
fn num_arg(
    p: P,
    w: &[Word],
    kind: Num,
    min: u64,
    max: u64,
    bad: Option<&str>,
) -> Result<Option<u64>, super::parser::MissingParameter> {
    let s = p.arg(w, 1)?.to_string();
    let v = match kind {
        Num::Timer => p.read_timer(&s, min, max, true),
        Num::Unsigned => p.read_unsigned(&s, min, max, true),
    };
    if let (None, Some(b)) = (v, bad) {
        p.err(ErrClass::GeneralError, b.replace("{}", &s));
    }
    Ok(v)
}

/// A handler that reads one number into a field of the current VS, RS or checker.
macro_rules! num_kw {
    ($name:ident, $target:ident . $field:ident, $kind:ident, $min:expr, $max:expr, $bad:expr, $conv:expr) => {
        pub fn $name(p: P, w: &[Word]) -> HandlerResult {
            if let Some(v) = num_arg(p, w, Num::$kind, $min, $max, $bad)? {
                if let Some(t) = $target(p) {
                    t.$field = ($conv)(v);
                }
            }
            Ok(())
        }
    };
}

fn some_u32(v: u64) -> Option<u32> {
    Some(v as u32)
}

fn some_u16(v: u64) -> Option<u16> {
    Some(v as u16)
}

num_kw!(
    vs_delay_loop,
    vs.delay_loop,
    Timer,
    1,
    0,
    Some("virtual server delay loop '{}' invalid - ignoring"),
    Some
);
num_kw!(
    vs_connect_timeout,
    vs.connect_timeout,
    Timer,
    1,
    U32MAX,
    None,
    Some
);
num_kw!(
    vs_retry,
    vs.retry,
    Unsigned,
    1,
    U32MAX,
    Some("retry value invalid - {}"),
    some_u32
);
num_kw!(
    vs_delay_before_retry,
    vs.delay_before_retry,
    Timer,
    0,
    0,
    Some("Delay before retry value invalid - {}"),
    Some
);
num_kw!(
    vs_warmup,
    vs.warmup,
    Timer,
    0,
    0,
    Some("Warmup value invalid - {}"),
    Some
);

num_kw!(
    rs_retry,
    rs.retry,
    Unsigned,
    1,
    U32MAX,
    Some("retry value invalid - {}"),
    some_u32
);
num_kw!(
    rs_uthreshold,
    rs.uthreshold,
    Unsigned,
    0,
    U32MAX,
    Some("Invalid real_server uthreshold '{}' - ignoring"),
    |v| v as u32
);
num_kw!(
    rs_lthreshold,
    rs.lthreshold,
    Unsigned,
    0,
    U32MAX,
    Some("Invalid real_server lthreshold '{}' - ignoring"),
    |v| v as u32
);
num_kw!(
    rs_delay_before_retry,
    rs.delay_before_retry,
    Timer,
    0,
    0,
    Some("Delay before retry value invalid - {}"),
    Some
);
num_kw!(
    rs_warmup,
    rs.warmup,
    Timer,
    0,
    0,
    Some("Warmup value invalid - {}"),
    Some
);
num_kw!(
    rs_connect_timeout,
    rs.connect_timeout,
    Timer,
    1,
    U32MAX,
    Some("Connect timeout value invalid - {}"),
    Some
);
num_kw!(
    rs_delay_loop,
    rs.delay_loop,
    Timer,
    1,
    0,
    Some("real server delay loop '{}' invalid - ignoring"),
    Some
);

num_kw!(
    ck_connect_port,
    common.connect_port,
    Unsigned,
    1,
    65535,
    Some("Invalid checker connect_port '{}'"),
    some_u16
);
num_kw!(
    ck_bind_port,
    common.bind_port,
    Unsigned,
    1,
    65535,
    Some("Invalid bind_port '{}'"),
    some_u16
);
num_kw!(
    ck_fwmark,
    common.fwmark,
    Unsigned,
    0,
    U32MAX,
    Some("Invalid fwmark connection value '{}'"),
    some_u32
);
num_kw!(
    ck_connect_timeout,
    common.connect_timeout,
    Timer,
    1,
    U32MAX,
    Some("Invalid connect_timeout value '{}'"),
    Some
);
num_kw!(
    ck_retry,
    common.retry,
    Unsigned,
    0,
    U32MAX,
    Some("Invalid retry connection value '{}'"),
    some_u32
);
num_kw!(
    ck_delay_before_retry,
    common.delay_before_retry,
    Timer,
    0,
    0,
    Some("Invalid delay_before_retry connection value '{}'"),
    Some
);
num_kw!(
    ck_delay_loop,
    common.delay_loop,
    Timer,
    1,
    0,
    Some("Invalid delay_loop value '{}'"),
    Some
);
num_kw!(
    ck_warmup,
    common.warmup,
    Timer,
    0,
    0,
    Some("Invalid warmup value '{}'"),
    Some
);

// ---- real_server ----

pub fn rs_open(p: P, w: &[Word]) -> HandlerResult {
    let a = p.arg(w, 1)?.to_string();
    let ps = w.get(2).map(|x| x.text.clone());
    let ip = parse_ip(&a);
    let port = match &ps {
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
                notify_up: None,
                notify_down: None,
                uthreshold: 0,
                lthreshold: 0,
                alpha: None,
                retry: None,
                delay_before_retry: None,
                warmup: None,
                connect_timeout: None,
                delay_loop: None,
                smtp_alert: None,
                virtualhost: None,
                snmp_name: None,
                checkers: Vec::new(),
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
                return;
            }
        }
    }
    vs.real_servers.push(rs);
}

/// The address family keepalived knows for a virtual server while parsing
/// (`vs->af`), as "is IPv6": its address; else `ip_family`; else a
/// persistence granularity's; else its first real server that is not
/// tunnelled. `None` while still unknown (fwmark or group so far).
fn parse_family(vs: &VirtualServer) -> Option<bool> {
    if let VsAddress::Addr { ip, .. } = &vs.address {
        return Some(ip.is_ipv6());
    }
    if let Some(f) = vs.ip_family {
        return Some(f == Family::Inet6);
    }
    if let Some(g) = &vs.persistence_granularity {
        return Some(!g.contains('.'));
    }
    vs.real_servers
        .iter()
        .find(|r| !matches!(r.lvs_method.or(vs.lvs_method), Some(Forwarding::Tun { .. })))
        .map(|r| r.ip.is_ipv6())
}

fn rs<'a>(p: &'a mut Parser<'_, '_>) -> Option<&'a mut RealServer> {
    p.rs.as_mut()
}

pub fn rs_weight(p: P, w: &[Word]) -> HandlerResult {
    let s = p.arg(w, 1)?.to_string();
    match p.read_int(&s, 0, i32::MAX as i64, true) {
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
    let s = p.script(w)?;
    if let Some(r) = rs(p) {
        if r.notify_up.is_some() {
            p.err(
                ErrClass::GeneralError,
                "notify_up script already specified - ignoring",
            );
            return Ok(());
        }
        r.notify_up = s;
    }
    Ok(())
}

pub fn rs_notify_down(p: P, w: &[Word]) -> HandlerResult {
    let s = p.script(w)?;
    if let Some(r) = rs(p) {
        if r.notify_down.is_some() {
            p.err(
                ErrClass::GeneralError,
                "notify_down script already specified - ignoring",
            );
            return Ok(());
        }
        r.notify_down = s;
    }
    Ok(())
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
            r.smtp_alert = Some(b);
        }
    }
    Ok(())
}

pub fn rs_virtualhost(p: P, w: &[Word]) -> HandlerResult {
    let s = p.arg(w, 1)?.to_string();
    if let Some(r) = rs(p) {
        r.virtualhost = Some(s);
    }
    Ok(())
}

pub fn rs_snmp_name(p: P, w: &[Word]) -> HandlerResult {
    let s = p.arg(w, 1)?.to_string();
    if let Some(r) = rs(p) {
        r.snmp_name = Some(s);
    }
    Ok(())
}

// ---- checkers ----

fn new_common(p: &Parser<'_, '_>) -> CheckerCommon {
    CheckerCommon {
        line: p.pos.line,
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
    p.checker = Some(Checker::Http(HttpCheck {
        common: new_common(p),
        http_protocol: "1.0".into(),
        ..HttpCheck::default()
    }));
    Ok(())
}
pub fn ssl_open(p: P, _w: &[Word]) -> HandlerResult {
    p.checker = Some(Checker::Ssl(HttpCheck {
        common: new_common(p),
        http_protocol: "1.0".into(),
        ..HttpCheck::default()
    }));
    Ok(())
}
pub fn misc_open(p: P, _w: &[Word]) -> HandlerResult {
    p.checker = Some(Checker::Misc(MiscCheck {
        common: new_common(p),
        ..MiscCheck::default()
    }));
    Ok(())
}
pub fn smtp_open(p: P, _w: &[Word]) -> HandlerResult {
    p.checker = Some(Checker::Smtp(SmtpCheck {
        common: new_common(p),
        helo_name: None,
    }));
    Ok(())
}
pub fn dns_open(p: P, _w: &[Word]) -> HandlerResult {
    p.checker = Some(Checker::Dns(DnsCheck {
        common: new_common(p),
        r#type: "SOA".into(),
        name: ".".into(),
    }));
    Ok(())
}
pub fn udp_open(p: P, _w: &[Word]) -> HandlerResult {
    p.checker = Some(Checker::Udp(UdpCheck {
        common: new_common(p),
        max_reply_length: 255,
        ..UdpCheck::default()
    }));
    Ok(())
}
pub fn file_open(p: P, _w: &[Word]) -> HandlerResult {
    p.checker = Some(Checker::File(FileCheck {
        common: new_common(p),
        ..FileCheck::default()
    }));
    Ok(())
}
pub fn bfd_open(p: P, _w: &[Word]) -> HandlerResult {
    p.checker = Some(Checker::Bfd(BfdCheck {
        common: new_common(p),
        name: None,
    }));
    Ok(())
}

fn push_checker(p: P, c: Checker) {
    if let Some(r) = p.rs.as_mut() {
        r.checkers.push(c);
    }
}

pub fn checker_close(p: P) {
    if let Some(c) = p.checker.take() {
        push_checker(p, c);
    }
}

pub fn http_close(p: P) {
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
            if m.misc_path.is_none() {
                p.err(
                    ErrClass::GeneralError,
                    "No script path has been specified for MISC_CHECKER - skipping",
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
                p.err(
                    ErrClass::GeneralError,
                    format!("track_file {name} not found for FILE_CHECK - ignoring"),
                );
                return;
            }
        }
        push_checker(p, c);
    }
}

pub fn bfd_close(p: P) {
    if let Some(c) = p.checker.take() {
        if let Checker::Bfd(b) = &c {
            let Some(name) = &b.name else {
                p.err(
                    ErrClass::GeneralError,
                    "BFD_CHECK has no name specified - ignoring",
                );
                return;
            };
            let known = p
                .cfg
                .other_blocks
                .iter()
                .any(|b| b.keyword == "bfd_instance" && b.args.first() == Some(name));
            if !known {
                p.err(
                    ErrClass::GeneralError,
                    format!("BFD_CHECK - {name} not configured"),
                );
                return;
            }
        }
        push_checker(p, c);
    }
}

fn common<'a>(p: &'a mut Parser<'_, '_>) -> Option<&'a mut CheckerCommon> {
    p.checker.as_mut().map(Checker::common_mut)
}

pub fn ck_connect_ip(p: P, w: &[Word]) -> HandlerResult {
    let s = p.arg(w, 1)?.to_string();
    match parse_ip(&s) {
        Some(ip) => {
            let other = common(p).and_then(|c| c.bindto);
            if other.is_some_and(|b| b.is_ipv6() != ip.is_ipv6()) {
                p.err(
                    ErrClass::GeneralError,
                    format!(
                        "connect_ip address {s} does not match address family of bindto - skipping"
                    ),
                );
            } else if let Some(c) = common(p) {
                c.connect_ip = Some(ip);
            }
        }
        None => p.err(
            ErrClass::GeneralError,
            format!("Invalid connect_ip address {s} - ignoring"),
        ),
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
            let other = common(p).and_then(|c| c.connect_ip).or(rs_ip);
            if other.is_some_and(|c| c.is_ipv6() != ip.is_ipv6()) {
                p.err(
                    ErrClass::GeneralError,
                    format!(
                        "bindto address {s} does not match address family of connect_ip - skipping"
                    ),
                );
            } else if let Some(c) = common(p) {
                c.bindto = Some(ip);
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
        c.bind_if = Some(s);
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
pub fn ck_log_all_failures(p: P, w: &[Word]) -> HandlerResult {
    if let Some(b) = p.opt_bool(w, "log_all_failures") {
        if let Some(c) = common(p) {
            c.log_all_failures = Some(b);
        }
    }
    Ok(())
}

fn http<'a>(p: &'a mut Parser<'_, '_>) -> Option<&'a mut HttpCheck> {
    match p.checker.as_mut() {
        Some(Checker::Http(h)) | Some(Checker::Ssl(h)) => Some(h),
        _ => None,
    }
}

pub fn http_protocol(p: P, w: &[Word]) -> HandlerResult {
    let s = p.arg(w, 1)?.to_string();
    let v = match s.as_str() {
        "1.0" => "1.0",
        "1.0C" | "1.0c" => "1.0C",
        "1.1" => "1.1",
        _ => {
            p.err(
                ErrClass::GeneralError,
                format!("Invalid http_protocol '{s}'"),
            );
            return Ok(());
        }
    };
    if let Some(h) = http(p) {
        h.http_protocol = v.to_string();
    }
    Ok(())
}
pub fn http_virtualhost(p: P, w: &[Word]) -> HandlerResult {
    let s = p.arg(w, 1)?.to_string();
    if let Some(h) = http(p) {
        h.virtualhost = Some(s);
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
    p.url = Some(Url {
        line: p.pos.line,
        ..Url::default()
    });
    Ok(())
}
pub fn url_close(p: P) {
    let Some(u) = p.url.take() else {
        return;
    };
    if u.path.is_none() {
        p.err(
            ErrClass::GeneralError,
            "HTTP/SSL_GET checker url has no path - ignoring",
        );
        return;
    }
    if let Some(h) = http(p) {
        h.urls.push(u);
    }
}
fn url<'a>(p: &'a mut Parser<'_, '_>) -> Option<&'a mut Url> {
    p.url.as_mut()
}
pub fn url_path(p: P, w: &[Word]) -> HandlerResult {
    let s = p.arg(w, 1)?.to_string();
    if let Some(u) = url(p) {
        u.path = Some(s);
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
        u.digest = Some(s.to_ascii_lowercase());
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
            None => t.parse::<u16>().ok().map(|v| (v, v)),
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
pub fn url_virtualhost(p: P, w: &[Word]) -> HandlerResult {
    let s = p.arg(w, 1)?.to_string();
    if let Some(u) = url(p) {
        u.virtualhost = Some(s);
    }
    Ok(())
}
pub fn url_regex(p: P, w: &[Word]) -> HandlerResult {
    p.arg(w, 1)?;
    let raw = p.raw_line.clone();
    let re = match super::lexer::split_quoted_escaped(&raw) {
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
        u.regex = Some(re);
    }
    Ok(())
}
pub fn url_regex_no_match(p: P, _w: &[Word]) -> HandlerResult {
    if let Some(u) = url(p) {
        u.regex_no_match = true;
    }
    Ok(())
}
pub fn url_regex_options(p: P, w: &[Word]) -> HandlerResult {
    let opts: Vec<String> = w[1..].iter().map(|x| x.text.clone()).collect();
    if let Some(u) = url(p) {
        u.regex_options.extend(opts);
    }
    Ok(())
}
pub fn url_regex_min_offset(p: P, w: &[Word]) -> HandlerResult {
    let s = p.arg(w, 1)?.to_string();
    if let Some(v) = p.read_unsigned(&s, 0, U32MAX, false) {
        if let Some(u) = url(p) {
            u.regex_min_offset = Some(v as u32);
        }
    }
    Ok(())
}
pub fn url_regex_max_offset(p: P, w: &[Word]) -> HandlerResult {
    let s = p.arg(w, 1)?.to_string();
    if let Some(v) = p.read_unsigned(&s, 1, U32MAX, false) {
        if let Some(u) = url(p) {
            u.regex_max_offset = Some(v as u32);
        }
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
            u.regex_stack = Some((x as u32, y as u32));
        }
    }
    Ok(())
}

pub fn misc_path(p: P, w: &[Word]) -> HandlerResult {
    let s = p.script(w)?;
    if let Some(Checker::Misc(m)) = p.checker.as_mut() {
        m.misc_path = s.map(|s| s.args);
    }
    Ok(())
}
pub fn misc_timeout(p: P, w: &[Word]) -> HandlerResult {
    let s = p.arg(w, 1)?.to_string();
    match p.read_unsigned(&s, 0, U32MAX / TIMER_HZ, true) {
        Some(v) => {
            if let Some(Checker::Misc(m)) = p.checker.as_mut() {
                m.misc_timeout = Some(v * TIMER_HZ);
            }
        }
        None => p.err(
            ErrClass::GeneralError,
            format!("Invalid misc_timeout value '{s}'"),
        ),
    }
    Ok(())
}
pub fn misc_dynamic(p: P, _w: &[Word]) -> HandlerResult {
    if let Some(Checker::Misc(m)) = p.checker.as_mut() {
        m.misc_dynamic = true;
    }
    Ok(())
}
pub fn misc_user(p: P, w: &[Word]) -> HandlerResult {
    let u = p.arg(w, 1)?.to_string();
    let g = w.get(2).map(|x| x.text.trim_start_matches(':').to_string());
    if let Some(Checker::Misc(m)) = p.checker.as_mut() {
        m.user = Some((u, g));
    }
    Ok(())
}

pub fn smtp_helo(p: P, w: &[Word]) -> HandlerResult {
    let s = p.arg(w, 1)?.to_string();
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
        host.common_mut().line = p.pos.line;
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
    p.arg(w, 1)?;
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

pub fn file_track_file(p: P, w: &[Word]) -> HandlerResult {
    let s = p.arg(w, 1)?.to_string();
    if let Some(Checker::File(f)) = p.checker.as_mut() {
        f.track_file = Some(s);
    }
    Ok(())
}
pub fn file_weight(p: P, w: &[Word]) -> HandlerResult {
    let s = p.arg(w, 1)?.to_string();
    let Some(v) = p.read_int(&s, -(i32::MAX as i64), i32::MAX as i64, true) else {
        p.err(
            ErrClass::GeneralError,
            format!("Invalid FILE_CHECK weight {s}"),
        );
        return Ok(());
    };
    let reverse = match w.get(2).map(|x| x.text.as_str()) {
        None => None,
        Some("reverse") => Some(true),
        Some("noreverse") => Some(false),
        Some(o) => {
            p.err(
                ErrClass::GeneralError,
                format!("Unknown FILE_CHECK weight option {o}"),
            );
            None
        }
    };
    if let Some(Checker::File(f)) = p.checker.as_mut() {
        f.weight = Some(v as i32);
        f.reverse = reverse;
    }
    Ok(())
}

pub fn bfd_name(p: P, w: &[Word]) -> HandlerResult {
    let s = p.arg(w, 1)?.to_string();
    if let Some(Checker::Bfd(b)) = p.checker.as_mut() {
        b.name = Some(s);
    }
    Ok(())
}
