//! The value checks keepalived 2.2.7 makes on the `global_defs` keywords
//! this daemon keeps as written (process tuning, VRRP and BFD globals,
//! nftables, start/shutdown scripts...): what `-t` says about their
//! values, keyword by keyword, although they have no effect here yet.
//! Called by [`super::global_defs::global_other`]; reads words, reports
//! through the parser, stores nothing.

use super::*;

/// `global_defs` keywords kept as written whose handler in keepalived
/// 2.2.7 reads its first value unchecked: without one, keepalived's
/// missing-parameter error (exit 2).
pub(super) const GLOBAL_NEEDS_VALUE: &[&str] = &[
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
pub(super) fn check_global_value(p: P, w: &[Word]) {
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
        "vrrp_process_name" | "bfd_process_name" | "lvs_process_name" => {
            if let Some(v) = v {
                process_name_length(p, &v);
            }
        }
        "vrrp_cpu_affinity" | "checker_cpu_affinity" | "bfd_cpu_affinity" => {
            cpu_affinity(p, w, proc_)
        }
        "dbus_service_name" if v.is_none() => p.err(
            ErrClass::GeneralError,
            "dbus_service_name missing - ignoring",
        ),
        "default_interface" => match v {
            None => p.err(
                ErrClass::GeneralError,
                "default_interface requires interface name",
            ),
            Some(v) => p.cfg.global_defs.default_interface = Some(v),
        },
        "tmp_config_directory" if v.is_none() => p.err(
            ErrClass::GeneralError,
            "tmp_config_directory missing directory name",
        ),
        "vrrp_notify_fifo" if v.is_none() => p.err(
            ErrClass::GeneralError,
            "No vrrp_notify_fifo name specified",
        ),
        "vrrp_notify_fifo_script" if v.is_none() => p.err(
            ErrClass::GeneralError,
            "No vrrp_notify_fifo_script specified",
        ),
        "reload_time_file" if w.len() != 2 => {
            p.err(ErrClass::GeneralError, "reload_time_file invalid")
        }
        "snmp_socket" if w.len() > 2 => p.err(
            ErrClass::GeneralError,
            "Too many parameters specified for snmp_socket - ignoring",
        ),
        "snmp_socket" if v.is_none() => p.err(
            ErrClass::GeneralError,
            "SNMP error : snmp socket name missing",
        ),
        "dynamic_interfaces" => {
            if let Some(o) = v.filter(|o| o != "allow_if_changes") {
                p.err(
                    ErrClass::GeneralError,
                    format!("Unknown dynamic_interfaces option '{o}'"),
                );
            }
        }
        "max_auto_priority" => {
            if let Some(v) = v {
                if p.read_int(&v, -1, 99, false).is_none() {
                    p.err(
                        ErrClass::GeneralError,
                        format!("{kw} '{v}' must be in [0, 99] (or -1 to disable) - ignoring"),
                    );
                }
            }
        }
        "min_auto_priority_delay" => match v {
            None => p.err(ErrClass::GeneralError, format!("{kw} requires delay time")),
            Some(v) => {
                if p.read_int(&v, 1, 10_000_000, false).is_none() {
                    p.err(
                        ErrClass::GeneralError,
                        format!("{kw} '{v}' must be in [1, 10000000] - ignoring"),
                    );
                }
            }
        },
        "startup_script_timeout" | "shutdown_script_timeout" => match v {
            None => p.err(ErrClass::GeneralError, format!("{kw} requires value")),
            Some(v) => {
                if p.read_unsigned(&v, 1, 1000, false).is_none() {
                    p.err(
                        ErrClass::GeneralError,
                        format!("{kw} '{v}' must be in [1, 1000] - ignoring"),
                    );
                }
            }
        },
        "nftables_priority" | "nftables_ipvs_priority" => {
            if let Some(v) = v {
                if p.read_int(&v, i32::MIN as i64, i32::MAX as i64, false).is_none() {
                    let what = if kw == "nftables_priority" { "" } else { "ipvs " };
                    p.err(
                        ErrClass::GeneralError,
                        format!("invalid {what}nftables chain priority '{v}'"),
                    );
                }
            }
        }
        "nftables_ipvs_start_fwmark" => {
            if let Some(v) = v {
                if p.read_unsigned(&v, 1, u32::MAX as u64, false).is_none() {
                    p.err(
                        ErrClass::GeneralError,
                        format!("invalid ipvs nftables start_fwmark priority '{v}'"),
                    );
                }
            }
        }
        "nftables" => {
            if crate::config::vrrp::firewall::nftables(&p.cfg.global_defs.other).is_some() {
                p.err(ErrClass::GeneralError, "nftables already specified - ignoring");
            } else if v
                .as_ref()
                .is_some_and(|v| v.len() >= crate::config::vrrp::firewall::NFT_TABLE_MAXNAMELEN)
            {
                p.err(ErrClass::GeneralError, "nftables table name too long - ignoring");
            }
        }
        "umask" => umask(p, w),
        "vrrp_garp_extra_if" | "vrrp_vmac_garp_intvl" => garp_extra_if(p, w),
        "vrrp_iptables" => p.err(
            ErrClass::GeneralError,
            "iptables not supported, using nftables instead. Please replace 'vrrp_iptables and 'vrrp_ipsets' with 'nftables' config option",
        ),
        "vrrp_rx_bufs_multiplier" => {
            if w.len() != 2 {
                p.err(ErrClass::GeneralError, format!("Invalid {kw}"));
            } else if let Some(v) = v {
                if p.read_unsigned(&v, 1, u32::MAX as u64, false).is_none() {
                    p.err(ErrClass::GeneralError, format!("Invalid {kw} {v}"));
                }
            }
        }
        "vrrp_rx_bufs_policy" => rx_bufs_policy(p, w),
        "vrrp_startup_delay" => {
            if let Some(v) = v {
                if crate::config::numbers::read_decimal(p, &v, 1_000, u32::MAX as u64, 6).is_err() {
                    p.err(ErrClass::GeneralError, format!("{kw} '{v}' is invalid"));
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

/// `*_cpu_affinity CPU...`: each CPU a number below the machine's count;
/// the first bad one ends the list with keepalived's two lines (the second
/// with the value as C's `atoi()` reads it).
fn cpu_affinity(p: P, w: &[Word], proc_: &str) {
    if w.len() < 2 {
        p.err(
            ErrClass::GeneralError,
            format!("No {proc_} cpu_id set specified"),
        );
        return;
    }
    let cpus = online_cpus() as i64;
    for x in &w[1..] {
        if p.read_int(&x.text, 0, cpus - 1, false).is_none() {
            p.err(
                ErrClass::GeneralError,
                format!(
                    "Invalid cpu_id:{} specified for {proc_} process",
                    atoi(&x.text)
                ),
            );
            return;
        }
    }
}

/// The CPUs online, as glibc's `get_nprocs()` counts them (the kernel's
/// list, not this process's affinity or cgroup share).
fn online_cpus() -> usize {
    let counted = std::fs::read_to_string("/sys/devices/system/cpu/online")
        .ok()
        .map(|list| {
            list.trim()
                .split(',')
                .filter_map(|r| match r.split_once('-') {
                    Some((a, b)) => Some(b.parse::<usize>().ok()? + 1 - a.parse::<usize>().ok()?),
                    None => r.parse::<usize>().ok().map(|_| 1),
                })
                .sum::<usize>()
        })
        .filter(|n| *n > 0);
    counted.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

/// C's `atoi()`: leading digits with an optional sign, wrapped to an int.
fn atoi(s: &str) -> i32 {
    let t = s.trim_start();
    let (neg, digits) = match t.as_bytes().first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    let mut v: i64 = 0;
    for c in digits.bytes().take_while(u8::is_ascii_digit) {
        v = v.wrapping_mul(10).wrapping_add(i64::from(c - b'0'));
    }
    let v = if neg { v.wrapping_neg() } else { v };
    v as i32
}

/// `umask NUMBER` (octal, hex or decimal as `strtoul(…, 0)` reads it, at
/// most 0777) or `umask BIT[|BIT]...` with the `S_I*` names.
fn umask(p: P, w: &[Word]) {
    let Some(first) = w.get(1) else { return };
    // What the process applies (read there with `-u` first; the last line
    // wins).
    p.cfg.global_defs.umask = Some(w[1..].iter().map(|x| x.text.as_str()).collect());
    if first.text.starts_with(|c: char| c.is_ascii_digit()) {
        let (val, rest, overflow) = strtoul_base0(&first.text);
        if !rest.is_empty() || overflow || val > 0o777 {
            p.err(
                ErrClass::GeneralError,
                format!("invalid umask value {}", first.text),
            );
        } else if w.len() > 2 {
            p.err(ErrClass::GeneralError, "Extra parameter(s) to umask option");
        }
        return;
    }
    const BITS: &[&str] = &[
        "IRUSR", "IWUSR", "IXUSR", "IRWXU", "IRGRP", "IWGRP", "IXGRP", "IRWXG", "IROTH", "IWOTH",
        "IXOTH", "IRWXO",
    ];
    // The words joined are BIT|BIT|...: a word must be a bit, `|`, or
    // bits joined by `|`; two bits without `|` between them are a syntax error.
    let mut want_bit = true;
    for x in &w[1..] {
        let t = x.text.as_str();
        if t == "|" {
            want_bit = true;
            continue;
        }
        if !want_bit && !t.starts_with('|') {
            p.err(ErrClass::GeneralError, format!("Invalid umask syntax {t}"));
            return;
        }
        let parts: Vec<&str> = t.split('|').collect();
        if parts.iter().any(|b| !b.is_empty() && !BITS.contains(b)) {
            p.err(ErrClass::GeneralError, format!("Unknown umask bit {t}"));
            return;
        }
        want_bit = t.ends_with('|');
    }
}

/// `vrrp_garp_extra_if [all] SECONDS` (and its deprecated name, which
/// keepalived warns about whatever the value).
fn garp_extra_if(p: P, w: &[Word]) {
    let kw = w[0].text.as_str();
    if kw == "vrrp_vmac_garp_intvl" {
        p.err(
            ErrClass::Deprecated,
            "Keyword \"vrrp_vmac_garp_intvl\" is deprecated - please use \"vrrp_garp_extra_if\"",
        );
    }
    let mut have_time = false;
    for x in &w[1..] {
        if x.text == "all" {
            continue;
        }
        if p.read_unsigned(&x.text, 1, 86400, false).is_none() {
            p.err(
                ErrClass::GeneralError,
                format!("{kw} '{}' invalid - ignoring", x.text),
            );
            return;
        }
        have_time = true;
    }
    if !have_time {
        p.err(
            ErrClass::GeneralError,
            format!("{kw} specified without time - ignoring"),
        );
    }
}

/// `vrrp_rx_bufs_policy MTU|ADVERT|SIZE...`: the two names (not both) or
/// a size. keepalived 2.2.7 reads the size from the first word whichever
/// word it is at, and names the word it is at when that fails.
fn rx_bufs_policy(p: P, w: &[Word]) {
    if w.len() < 2 {
        p.err(ErrClass::GeneralError, "vrrp_rx_bufs_policy missing");
        return;
    }
    let (mut mtu, mut advert, mut size) = (false, false, false);
    for x in &w[1..] {
        match x.text.to_ascii_uppercase().as_str() {
            "MTU" => mtu = true,
            "ADVERT" => advert = true,
            _ => {
                let first = w[1].text.clone();
                if p.read_unsigned(&first, 0, u32::MAX as u64, false).is_some() {
                    size = true;
                } else {
                    p.err(
                        ErrClass::GeneralError,
                        format!("Invalid vrrp_rx_bufs_policy {}", x.text),
                    );
                }
            }
        }
    }
    if mtu && advert {
        p.err(
            ErrClass::GeneralError,
            "Cannot set both vrrp_rx_bufs_policy MTU and ADVERT, ignoring ADVERT",
        );
    }
    if size && (mtu || advert) {
        p.err(
            ErrClass::GeneralError,
            "Cannot set vrrp_rx_bufs_policy size and policy, ignoring policy",
        );
    }
}

/// C's `strtoul(s, &end, 0)` for a non-negative number: `0x` hex, a leading
/// `0` octal, else decimal; (value, rest, overflowed).
fn strtoul_base0(s: &str) -> (u64, &str, bool) {
    let (radix, digits) = if let Some(h) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        (16, h)
    } else if s.len() > 1 && s.starts_with('0') {
        (8, &s[1..])
    } else {
        (10, s)
    };
    let end = digits
        .find(|c: char| !c.is_digit(radix))
        .unwrap_or(digits.len());
    if end == 0 {
        return (0, if radix == 8 { digits } else { s }, false);
    }
    match u64::from_str_radix(&digits[..end], radix) {
        Ok(v) => (v, &digits[end..], false),
        Err(_) => (u64::MAX, &digits[end..], true),
    }
}

/// keepalived's limit on a process name (the kernel's comm is 16 bytes).
pub(super) fn process_name_length(p: P, name: &str) {
    if name.len() > 15 {
        p.err(
            ErrClass::GeneralError,
            format!("Process name {name} more than 15 characters, truncating"),
        );
    }
}
