//! `global_defs`: the daemon's global settings (the checker's and the
//! process's; the VRRP and BFD ones are kept as written by [`super::super::keywords`]).

use super::*;

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
/// A keyword whose handler checks its own value count: keepalived's
/// message (a general error, exit 5), not the missing-parameter exit 2.
fn no_value(p: P, w: &[Word], msg: &str) -> bool {
    if w.len() > 1 {
        return false;
    }
    p.err(ErrClass::GeneralError, msg.to_string());
    true
}

pub fn lvs_sync_daemon(p: P, w: &[Word]) -> HandlerResult {
    if let Some(first) = &p.cfg.global_defs.lvs_sync_daemon {
        let msg = format!(
            "lvs_sync_daemon has already been specified as {} {} - ignoring",
            first.written.0, first.written.1
        );
        p.err(ErrClass::GeneralError, msg);
        return Ok(());
    }
    if no_value(p, w, "lvs_sync_daemon requires interface") {
        return Ok(());
    }
    let ifname = &w[1].text;
    if ifname.len() >= 16 {
        p.err(
            ErrClass::GeneralError,
            format!("lvs_sync_daemon interface name '{ifname}' too long - ignoring"),
        );
        return Ok(());
    }
    sync_daemon_options(p, w);
    let words: Vec<String> = w[1..].iter().map(|x| x.text.clone()).collect();
    p.cfg.global_defs.lvs_sync_daemon = crate::config::model::syncd::SyncdConfig::parse(&words);
    Ok(())
}

/// `lvs_sync_daemon IF [INSTANCE] [id N] [maxlen N] [port N] [ttl N]
/// [group IP]`, checked as keepalived 2.2.7 checks it (the options have no
/// effect until the VRRP side drives the sync daemon). A bare number after
/// the instance is the old form of `id`; an option right after the
/// interface (`IF id N`, `IF inst NAME`) means no positional instance.
fn sync_daemon_options(p: P, w: &[Word]) {
    const OPTIONS: &[&str] = &["inst", "id", "maxlen", "port", "ttl", "group"];
    // An option right after the interface: no positional instance.
    let mut i = if w.get(2).is_some_and(|x| OPTIONS.contains(&x.text.as_str())) {
        2
    } else {
        3
    };
    while i < w.len() {
        let opt = w[i].text.clone();
        let value = w.get(i + 1).map(|x| x.text.clone());
        let range = match opt.as_str() {
            "inst" => {
                if p.arg(w, i + 1).is_err() {
                    break;
                }
                i += 2;
                continue;
            }
            "id" => Some((0, 255)),
            "maxlen" => Some((1, 65507)),
            "port" => Some((1, 65535)),
            "ttl" => Some((1, 255)),
            "group" => None,
            _ => {
                if i == 3 {
                    if p.read_unsigned(&opt, 0, 255, false).is_some() {
                        p.err(
                            ErrClass::GeneralError,
                            "Please use keyword \"id\" before lvs_sync_daemon SYNCID",
                        );
                    } else {
                        p.err(
                            ErrClass::GeneralError,
                            format!("Invalid syncid ({opt}) - defaulting to vrid"),
                        );
                    }
                } else {
                    p.err(
                        ErrClass::GeneralError,
                        format!("Unknown option {opt} specified for lvs_sync_daemon"),
                    );
                }
                i += 1;
                continue;
            }
        };
        let Some(v) = value else {
            let tail = if opt == "id" {
                ", defaulting to vrid"
            } else {
                " - ignoring"
            };
            p.err(
                ErrClass::GeneralError,
                format!("No value specified for lvs_sync_daemon {opt}{tail}"),
            );
            break;
        };
        match range {
            Some((min, max)) => {
                if p.read_unsigned(&v, min, max, false).is_none() {
                    let msg = if opt == "id" {
                        format!("Invalid syncid ({v}) - defaulting to vrid")
                    } else {
                        format!("Invalid lvs_sync_daemon {opt} ({v}) - ignoring")
                    };
                    p.err(ErrClass::GeneralError, msg);
                }
            }
            None => match parse_ip(&v) {
                None => p.err(
                    ErrClass::GeneralError,
                    format!("Invalid lvs_sync_daemon group ({v}) - ignoring"),
                ),
                Some(a) if !a.is_multicast() => p.err(
                    ErrClass::GeneralError,
                    format!("lvs_sync_daemon group address {v} is not multicast - ignoring"),
                ),
                Some(_) => {}
            },
        }
        i += 2;
    }
}
pub fn script_user(p: P, w: &[Word]) -> HandlerResult {
    let Some(u) = w.get(1).map(|x| x.text.to_string()) else {
        p.err(ErrClass::GeneralError, "No script username specified");
        return Ok(());
    };
    let g = w.get(2).map(|x| x.text.trim_start_matches(':').to_string());
    // set_default_script_user(): resolved here, once. After a failure
    // keepalived 2.2.7 fails every later script_user too.
    let failed_before = p.default_user == crate::config::parser::DefaultUser::Failed;
    if !failed_before && crate::config::parser::user_exists(&u, g.as_deref()) {
        p.default_user = crate::config::parser::DefaultUser::Resolved;
    } else {
        p.err(
            ErrClass::GeneralError,
            "Error setting global script uid/gid",
        );
        p.default_user = crate::config::parser::DefaultUser::Failed;
    }
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
fn fifo(p: P, w: &[Word]) -> Result<Fifo, crate::config::parser::MissingParameter> {
    Ok(Fifo {
        path: p.arg(w, 1)?.to_string(),
        user: w.get(2).map(|x| x.text.clone()),
        group: w.get(3).map(|x| x.text.clone()),
    })
}
pub fn notify_fifo(p: P, w: &[Word]) -> HandlerResult {
    if no_value(p, w, "No notify_fifo name specified") {
        return Ok(());
    }
    let f = fifo(p, w)?;
    p.cfg.global_defs.notify_fifo = Some(f);
    Ok(())
}
pub fn lvs_notify_fifo(p: P, w: &[Word]) -> HandlerResult {
    if no_value(p, w, "No lvs_notify_fifo name specified") {
        return Ok(());
    }
    let f = fifo(p, w)?;
    p.cfg.global_defs.lvs_notify_fifo = Some(f);
    Ok(())
}
pub fn notify_fifo_script(p: P, w: &[Word]) -> HandlerResult {
    if no_value(p, w, "No notify_fifo_script specified") {
        return Ok(());
    }
    p.cfg.global_defs.notify_fifo_script = p.notify_script(w)?;
    Ok(())
}
pub fn lvs_notify_fifo_script(p: P, w: &[Word]) -> HandlerResult {
    if no_value(p, w, "No lvs_notify_fifo_script specified") {
        return Ok(());
    }
    p.cfg.global_defs.lvs_notify_fifo_script = p.notify_script(w)?;
    Ok(())
}
pub fn notification_email(p: P, w: &[Word]) -> HandlerResult {
    let vals = p.read_value_block(w);
    if vals.is_empty() {
        p.err(
            ErrClass::GeneralError,
            "Warning - empty notification_email block",
        );
    }
    for (v, _) in vals {
        p.cfg
            .global_defs
            .notification_email
            .extend(v.into_iter().map(|x| x.text));
    }
    Ok(())
}
pub fn notification_email_from(p: P, w: &[Word]) -> HandlerResult {
    if no_value(p, w, "emailfrom missing - ignoring") {
        return Ok(());
    }
    p.cfg.global_defs.notification_email_from = Some(p.arg(w, 1)?.to_string());
    Ok(())
}
pub fn smtp_server(p: P, w: &[Word]) -> HandlerResult {
    let host = p.arg(w, 1)?.to_string();
    let port_text = w
        .get(2)
        .map_or_else(|| "25".to_string(), |x| x.text.to_string());
    let port = match w.get(2) {
        Some(x) => {
            let t = x.text.to_string();
            p.read_unsigned(&t, 1, 65535, false).map(|v| v as u16)
        }
        None => Some(25),
    };
    // keepalived resolves the name now (an address, or a name the resolver
    // knows); anything else is its "Invalid smtp server".
    let resolves = host.parse::<std::net::IpAddr>().is_ok()
        || port.is_some_and(|pt| {
            std::net::ToSocketAddrs::to_socket_addrs(&(host.as_str(), pt))
                .is_ok_and(|mut a| a.next().is_some())
        });
    match port {
        Some(pt) if resolves => p.cfg.global_defs.smtp_server = Some((host, pt)),
        _ => p.err(
            ErrClass::GeneralError,
            format!("Invalid smtp server {host} {port_text}"),
        ),
    }
    Ok(())
}
pub fn smtp_helo_name(p: P, w: &[Word]) -> HandlerResult {
    // keepalived ignores it silently without a value.
    if let Some(h) = w.get(1) {
        p.cfg.global_defs.smtp_helo_name = Some(h.text.clone());
    }
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
    let n = p.arg(w, 1)?.to_string();
    super::global_values::process_name_length(p, &n);
    p.cfg.global_defs.checker_process_name = Some(n);
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
/// `startup_script` / `shutdown_script SCRIPT [USER [GROUP]]`: run by the
/// parent at start and stop in keepalived; kept, and judged for the
/// start/shutdown SECURITY VIOLATION.
pub fn start_stop_script(p: P, w: &[Word]) -> HandlerResult {
    let what = w[0].text.trim_end_matches("_script").to_string();
    if no_value(p, w, &format!("{what} script missing")) {
        return Ok(());
    }
    let Some(s) = p.script(w)? else {
        return Ok(());
    };
    let runnable = match &s.user {
        Some(u) => crate::config::parser::user_exists(u, s.group.as_deref()),
        None => p.default_script_user_ok(),
    };
    if !runnable {
        p.err(ErrClass::GeneralError, format!("Invalid {what} script"));
        return Ok(());
    }
    if what == "startup" {
        p.cfg.global_defs.startup_script = Some(s);
    } else {
        p.cfg.global_defs.shutdown_script = Some(s);
    }
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
/// `state_file PATH`: an extension of ours.
pub fn state_file(p: P, w: &[Word]) -> HandlerResult {
    match w.get(1) {
        Some(x) if x.text.starts_with('/') => p.cfg.global_defs.state_file = Some(x.text.clone()),
        Some(x) => p.err_hint(
            ErrClass::GeneralError,
            format!("state_file {} is not an absolute path - ignoring", x.text),
            "give the file's full path, e.g. /var/lib/keepalived/state.json",
        ),
        None => p.err_hint(
            ErrClass::GeneralError,
            "state_file path missing - ignoring",
            "e.g. state_file /var/lib/keepalived/state.json",
        ),
    }
    Ok(())
}
/// `state_file_interval SECONDS`: an extension of ours.
pub fn state_file_interval(p: P, w: &[Word]) -> HandlerResult {
    match w.get(1).map(|x| (x.text.parse::<u64>(), x.text.clone())) {
        Some((Ok(n), _)) if (1..=86_400).contains(&n) => {
            p.cfg.global_defs.state_file_interval = Some(n)
        }
        other => p.err_hint(
            ErrClass::GeneralError,
            format!(
                "state_file_interval '{}' invalid - must be whole seconds from 1 to 86400; ignoring",
                other.map(|o| o.1).unwrap_or_default()
            ),
            "e.g. state_file_interval 30",
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

/// A `global_defs` keyword kept as written (no effect yet), with
/// keepalived's checks of its value.
pub fn global_other(p: P, w: &[Word]) -> HandlerResult {
    if super::global_values::GLOBAL_NEEDS_VALUE.contains(&w[0].text.as_str()) {
        p.arg(w, 1)?;
    }
    super::global_values::check_global_value(p, w);
    snmp_global(p, w);
    let line = p.pos.line;
    p.cfg.global_defs.other.push(Setting {
        keyword: w[0].text.clone(),
        args: w[1..].iter().map(|x| x.text.clone()).collect(),
        line,
    });
    Ok(())
}

/// The SNMP settings, typed (their checks are `check_global_value`'s).
fn snmp_global(p: P, w: &[Word]) {
    let g = &mut p.cfg.global_defs.snmp;
    match w[0].text.as_str() {
        "enable_snmp_vrrp" | "enable_snmp_keepalived" => g.vrrp = true,
        "enable_snmp_checker" => g.checker = true,
        "enable_snmp_rfc" => {
            g.rfcv2 = true;
            g.rfcv3 = true;
        }
        "enable_snmp_rfcv2" => g.rfcv2 = true,
        "enable_snmp_rfcv3" => g.rfcv3 = true,
        "enable_traps" => g.traps = true,
        "snmp_socket" if w.len() == 2 => match &g.socket {
            None => g.socket = Some(w[1].text.clone()),
            Some(s) => {
                let msg = format!("SNMP socket already set to {s} - ignoring");
                p.err(ErrClass::GeneralError, msg);
            }
        },
        _ => {}
    }
}
