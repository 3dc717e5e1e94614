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
    if no_value(p, w, "lvs_sync_daemon requires interface") {
        return Ok(());
    }
    p.cfg.global_defs.lvs_sync_daemon = Some(w[1..].iter().map(|x| x.text.clone()).collect());
    Ok(())
}
pub fn script_user(p: P, w: &[Word]) -> HandlerResult {
    let Some(u) = w.get(1).map(|x| x.text.to_string()) else {
        p.err(ErrClass::GeneralError, "No script username specified");
        return Ok(());
    };
    let g = w.get(2).map(|x| x.text.trim_start_matches(':').to_string());
    // set_default_script_user(): resolved here, once.
    if crate::config::parser::user_exists(&u, g.as_deref()) {
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

/// `global_defs` keywords kept as written whose handler in keepalived
/// 2.2.7 reads its first value unchecked: without one, keepalived's
/// missing-parameter error (exit 2).
const GLOBAL_NEEDS_VALUE: &[&str] = &[
    "bfd_process_name",
    "bfd_rlimit_rtime",
    "bfd_rlimit_rttime",
    "checker_rlimit_rtime",
    "checker_rlimit_rttime",
    "config_save_dir",
    "lvs_process_name",
    "nftables_ipvs_priority",
    "nftables_ipvs_start_fwmark",
    "nftables_priority",
    "process_name",
    "umask",
    "vmac_addr_prefix",
    "vmac_prefix",
    "vrrp_down_timer_adverts",
    "vrrp_garp_interval",
    "vrrp_garp_lower_prio_delay",
    "vrrp_garp_lower_prio_repeat",
    "vrrp_garp_master_delay",
    "vrrp_garp_master_refresh",
    "vrrp_garp_master_refresh_repeat",
    "vrrp_garp_master_repeat",
    "vrrp_gna_interval",
    "vrrp_mcast_group4",
    "vrrp_mcast_group6",
    "vrrp_process_name",
    "vrrp_rlimit_rtime",
    "vrrp_rlimit_rttime",
    "vrrp_startup_delay",
    "vrrp_version",
];

/// The process a `vrrp_`/`checker_`/`bfd_` tuning keyword is for, in
/// keepalived's words.
fn process_of(kw: &str) -> &'static str {
    if kw.starts_with("checker") {
        "checker"
    } else if kw.starts_with("bfd") {
        "bfd"
    } else {
        "vrrp"
    }
}

/// keepalived 2.2.7's value checks of the process tuning and GARP timing
/// globals (no effect here yet; the checks are what `-t` says).
fn check_global_value(p: P, w: &[Word]) {
    let kw = w[0].text.as_str();
    let v = w.get(1).map(|x| x.text.clone());
    let proc_ = process_of(kw);
    match kw {
        "vrrp_priority" | "checker_priority" | "bfd_priority" => match v {
            None => p.err(
                ErrClass::GeneralError,
                format!("No {proc_} process priority specified"),
            ),
            Some(v) => {
                if p.read_int(&v, -20, 19, false).is_none() {
                    p.err(
                        ErrClass::GeneralError,
                        format!("Invalid {proc_} process priority specified"),
                    );
                }
            }
        },
        "vrrp_rt_priority" | "checker_rt_priority" | "bfd_rt_priority" => match v {
            None => p.err(
                ErrClass::GeneralError,
                format!("No {proc_} process real-time priority specified"),
            ),
            Some(v) => match p.read_int(&v, i32::MIN as i64, i32::MAX as i64, false) {
                None => p.err(
                    ErrClass::GeneralError,
                    format!("{proc_} process real-time priority '{v}' invalid"),
                ),
                Some(n) if n < 1 => p.err(
                    ErrClass::GeneralError,
                    format!("{proc_} process real-time priority {n} less than minimum 1 - setting to minimum"),
                ),
                Some(n) if n > 99 => p.err(
                    ErrClass::GeneralError,
                    format!("{proc_} process real-time priority {n} greater than maximum 99 - setting to maximum"),
                ),
                Some(_) => {}
            },
        },
        "vrrp_rlimit_rtime" | "checker_rlimit_rtime" | "bfd_rlimit_rtime" | "vrrp_rlimit_rttime"
        | "checker_rlimit_rttime" | "bfd_rlimit_rttime" => {
            if let Some(v) = v {
                if p.read_unsigned(&v, 1, u32::MAX as u64, false).is_none() {
                    p.err(
                        ErrClass::GeneralError,
                        format!("Invalid {proc_} real-time limit - {v}"),
                    );
                }
            }
        }
        "vrrp_garp_interval" | "vrrp_gna_interval" => {
            if let Some(v) = v {
                if p.read_timer(&v, 1, u32::MAX as u64, false).is_none() {
                    p.err(ErrClass::GeneralError, format!("{kw} '{v}' is invalid"));
                }
            }
        }
        "vrrp_lower_prio_no_advert" | "vrrp_higher_prio_send_advert" | "vrrp_min_garp" => {
            if let Some(v) = v {
                if check_true_false(&v).is_none() {
                    p.err(
                        ErrClass::GeneralError,
                        format!("Invalid value for {kw} specified"),
                    );
                }
            }
        }
        "vrrp_netlink_cmd_rcv_bufs_force"
        | "vrrp_netlink_monitor_rcv_bufs_force"
        | "lvs_netlink_cmd_rcv_bufs_force"
        | "lvs_netlink_monitor_rcv_bufs_force"
        | "process_monitor_rcv_bufs_force"
        | "data_use_instance"
        | "smtp_alert_vrrp"
        | "vrrp_notify_priority_changes" => {
            if let Some(v) = v {
                if check_true_false(&v).is_none() {
                    // keepalived's own spelling for data_use_instance.
                    let name = if kw == "data_use_instance" {
                        "date_use_instance"
                    } else {
                        kw
                    };
                    p.err(
                        ErrClass::GeneralError,
                        format!("Invalid value '{v}' for global {name} specified"),
                    );
                }
            }
        }
        "vrrp_netlink_cmd_rcv_bufs"
        | "vrrp_netlink_monitor_rcv_bufs"
        | "lvs_netlink_cmd_rcv_bufs"
        | "lvs_netlink_monitor_rcv_bufs"
        | "process_monitor_rcv_bufs" => match v {
            None => p.err(ErrClass::GeneralError, format!("{kw} size missing")),
            Some(v) => {
                if p.read_unsigned(&v, 0, u32::MAX as u64, false).is_none() {
                    p.err(ErrClass::GeneralError, format!("{kw} size ({v}) invalid"));
                }
            }
        },
        "vrrp_garp_master_repeat" | "vrrp_garp_master_refresh_repeat" => {
            if let Some(v) = v {
                match p.read_unsigned(&v, 0, u32::MAX as u64, false) {
                    None => p.err(
                        ErrClass::GeneralError,
                        format!("{kw} '{v}' invalid - ignoring"),
                    ),
                    Some(0) => p.err(
                        ErrClass::GeneralError,
                        format!("{kw} must be greater than 0, setting to 1"),
                    ),
                    Some(_) => {}
                }
            }
        }
        "vrrp_garp_master_delay" | "vrrp_garp_lower_prio_delay" | "vrrp_garp_master_refresh"
        | "vrrp_garp_lower_prio_repeat" => {
            if let Some(v) = v {
                if p.read_unsigned(&v, 0, u32::MAX as u64, false).is_none() {
                    let msg = match kw {
                        "vrrp_garp_master_refresh" => format!("Invalid {kw} '{v}' - ignoring"),
                        "vrrp_garp_lower_prio_repeat" => format!("Invalid {kw} '{v}'"),
                        _ => format!("{kw} '{v}' invalid - ignoring"),
                    };
                    p.err(ErrClass::GeneralError, msg);
                }
            }
        }
        "vrrp_version" => {
            if let Some(v) = v {
                if p.read_unsigned(&v, 2, 3, false).is_none() {
                    p.err(
                        ErrClass::GeneralError,
                        "VRRP Error: Version must be either 2 or 3",
                    );
                }
            }
        }
        "vrrp_down_timer_adverts" => {
            if let Some(v) = v {
                if p.read_unsigned(&v, 1, 100, false).is_none() {
                    p.err(
                        ErrClass::GeneralError,
                        format!("Invalid {kw} [1:100] '{v}'"),
                    );
                }
            }
        }
        "vrrp_mcast_group4" | "vrrp_mcast_group6" => {
            if let Some(v) = v {
                let v6 = kw.ends_with('6');
                match v.parse::<std::net::IpAddr>() {
                    Ok(a) if a.is_ipv6() == v6 => {
                        if !a.is_multicast() {
                            p.err(
                                ErrClass::GeneralError,
                                format!("{kw} [{v}] is not multicast. Skipping"),
                            );
                        }
                    }
                    _ => p.err(
                        ErrClass::GeneralError,
                        format!("Can't parse {kw} [{v}]. Skipping"),
                    ),
                }
            }
        }
        _ => {}
    }
}

/// keepalived's `check_true_false()`.
fn check_true_false(v: &str) -> Option<bool> {
    match v {
        "true" | "on" | "yes" => Some(true),
        "false" | "off" | "no" => Some(false),
        _ => None,
    }
}

/// A `global_defs` keyword kept as written (no effect yet), with
/// keepalived's checks of its value.
pub fn global_other(p: P, w: &[Word]) -> HandlerResult {
    if GLOBAL_NEEDS_VALUE.contains(&w[0].text.as_str()) {
        p.arg(w, 1)?;
    }
    check_global_value(p, w);
    let line = p.pos.line;
    p.cfg.global_defs.other.push(Setting {
        keyword: w[0].text.clone(),
        args: w[1..].iter().map(|x| x.text.clone()).collect(),
        line,
    });
    Ok(())
}
