//! Builds the [`VrrpConfig`] from the VRRP blocks as written, with
//! keepalived 2.2.7's checks: the value checks its keyword handlers make
//! (`vrrp_parser.c`) and those of `vrrp_complete_instance()` once a block
//! is read. Pure but for the host's interfaces, passed in.

use super::complete::Written;
use super::ctx::bool_word;
pub use super::ctx::Ctx;
use super::parts::{authentication, deprecated_syncd, notify_setting, set_repeat, unicast_peer};
use super::*;
use crate::config::model::{Block, Config, Setting, TIMER_HZ};
use crate::config::numbers::Quiet;
use crate::config::parser::parse_ip;

/// Keywords whose handler reads its first value unchecked: without one,
/// keepalived's missing-parameter exit 2.
const NEEDS_VALUE: &[&str] = &[
    "state",
    "interface",
    "virtual_router_id",
    "priority",
    "advert_int",
    "version",
    "preempt_delay",
    "debug",
    "mcast_src_ip",
    "unicast_src_ip",
    "unicast_ttl",
    "mcast_dst_ip",
    "lvs_sync_daemon_interface",
    "vrf",
    "notify_master",
    "notify_backup",
    "notify_fault",
    "notify_stop",
    "notify",
    "notify_master_rx_lower_pri",
    "garp_master_delay",
    "garp_master_refresh",
    "garp_master_repeat",
    "garp_master_refresh_repeat",
    "garp_lower_prio_delay",
    "garp_lower_prio_repeat",
    "down_timer_adverts",
];

/// The first address an instance's block gives before line `before` (a
/// VIP or a unicast peer, as written): its line and whether it is IPv6.
fn first_address_family(b: &crate::config::model::Block, before: usize) -> Option<(usize, bool)> {
    b.children
        .iter()
        .filter(|c| c.keyword == "virtual_ipaddress" || c.keyword == "unicast_peer")
        .flat_map(|c| c.values.iter())
        .filter(|l| l.line < before)
        .find_map(|l| {
            let a = l.words.first()?;
            let ip = parse_ip(a.split('/').next().unwrap_or(a))?;
            Some((l.line, ip.is_ipv6()))
        })
}

/// Builds the VRRP model; `script_names` are the `vrrp_script`s that keep
/// their script (the others were reported where they were read).
pub fn build(cfg: &Config, cx: &mut Ctx, script_names: &[String]) -> VrrpConfig {
    let mut out = VrrpConfig {
        globals: globals(cfg),
        ..VrrpConfig::default()
    };
    let mut names: Vec<String> = Vec::new();
    for (at, b) in cfg.other_blocks.iter().enumerate() {
        // The static blocks are read where they stand, as keepalived reads
        // them (rules without a preference are numbered in file order).
        match b.keyword.as_str() {
            "static_ipaddress" => {
                for l in &b.values {
                    if let Some(v) = super::parse_vip(cx, &l.words, l.line) {
                        out.static_addresses.push(v);
                    }
                }
                continue;
            }
            "static_routes" => {
                for l in &b.values {
                    if let Some(r) = super::iproute::parse_route(cx, &l.words, l.line) {
                        out.static_routes.push(r);
                    }
                }
                continue;
            }
            "static_rules" => {
                for l in &b.values {
                    let mut next = cx.rule_priority;
                    if let Some(r) = super::iprule::parse_rule(cx, &l.words, l.line, &mut next) {
                        out.static_rules.push(r);
                    }
                    cx.rule_priority = next;
                }
                continue;
            }
            "interface_up_down_delays" => {
                for l in &b.values {
                    cx.line = l.line;
                    if let Some(d) = up_down_delay(cx, &l.words) {
                        out.up_down_delays.retain(|o| o.0 != d.0);
                        out.up_down_delays.push(d);
                    }
                }
                continue;
            }
            "vrrp_instance" => {}
            _ => continue,
        }
        cx.line = b.line;
        // A nameless block was reported and skipped where it was read.
        let Some(name) = b.args.first().cloned() else {
            continue;
        };
        if names.contains(&name) {
            cx.err(format!("vrrp instance {name} already defined"));
            continue;
        }
        names.push(name.clone());
        if let Some(i) = instance(cfg, cx, (at, b), name, script_names) {
            out.instances.push(i);
        }
    }
    // The values were checked (and reported) where they were read; here
    // the same readers take them.
    let last = |kw: &str| {
        cfg.global_defs
            .other
            .iter()
            .rev()
            .find(|s| s.keyword == kw)
            .and_then(|s| s.args.first())
            .map(String::as_str)
    };
    out.startup_delay_us = last("vrrp_startup_delay")
        .and_then(|v| {
            crate::config::numbers::read_decimal(&mut Quiet, v, 1_000, u32::MAX.into(), 6).ok()
        })
        .unwrap_or(0);
    out.scripts = super::track::scripts(cfg, cx, script_names);
    out.sync_groups = super::track::sync_groups(cfg, cx, &mut out.instances, script_names);
    super::track::sync_group_tracking(
        cfg,
        cx,
        &mut out.sync_groups,
        &mut out.instances,
        &out.scripts,
    );
    super::track::owner_tracking(cfg, cx, &out.sync_groups, &mut out.instances, &out.scripts);
    super::track::disable_unrunnable_scripts(cfg, cx, &mut out);
    // keepalived forgets a track_file nothing tracks.
    out.track_files = cfg
        .track_files
        .iter()
        .filter(|f| {
            out.instances
                .iter()
                .any(|i| i.track_files.iter().any(|t| t.name == f.name))
        })
        .filter_map(|f| {
            Some(VrrpTrackFile {
                name: f.name.clone(),
                path: f.file.clone()?,
                weight: f.weight,
                reverse: f.reverse,
            })
        })
        .collect();
    // keepalived forgets a process nothing tracks.
    out.track_processes = super::track::track_processes(cfg, cx)
        .into_iter()
        .filter(|p| {
            out.instances
                .iter()
                .any(|i| i.track_processes.iter().any(|t| t.name == p.name))
        })
        .collect();
    // VRRP's view of the BFD sessions: the first block of each name.
    out.track_bfds = cfg
        .bfd_instances
        .iter()
        .filter(|b| b.listed)
        .filter(|b| {
            out.instances.iter().any(|i| {
                i.track_bfds.iter().any(|t| t.name == b.name)
                    || i.bfd_takeover.as_ref().is_some_and(|t| t.0 == b.name)
            })
        })
        .map(|b| super::VrrpTrackBfd {
            name: b.name.clone(),
            weight: b.weight,
            reverse: b.weight_reverse,
        })
        .collect();
    out.garp_groups = super::track::garp_groups(cfg, cx);
    let interval = |kw: &str| {
        crate::config::numbers::read_timer(&mut Quiet, last(kw)?, 1, u32::MAX.into(), false)
    };
    out.no_email_faults = global_flag(cfg, "no_email_faults") == Some(true);
    // vrrp_complete_instance(): an instance without accept mode (or with a
    // VMAC) needs a firewall; keepalived takes its default table then.
    let (table, configured) = super::firewall::nftables_settings(&cfg.global_defs.other);
    let needed = out.instances.iter().any(|i| !i.accept || i.vmac.is_some());
    out.nftables_defaulted = needed && !configured;
    out.nftables = (configured || needed).then_some(table);
    out.garp_interval_us = interval("vrrp_garp_interval").unwrap_or(0);
    out.gna_interval_us = interval("vrrp_gna_interval").unwrap_or(0);
    super::track::track_groups(cfg, cx);
    // Two instances may not share a VRID on one interface and family.
    for (n, a) in out.instances.iter().enumerate() {
        for b in &out.instances[n + 1..] {
            if a.vrid == b.vrid
                && a.ipv6 == b.ipv6
                && a.interface.is_some()
                && a.interface == b.interface
                && a.unicast_peers.is_empty() == b.unicast_peers.is_empty()
            {
                let fam = if a.ipv6 { "IPv6" } else { "IPv4" };
                cx.err_nolines(format!(
                    "{} and {} both use VRID {} with {fam} on interface {}",
                    a.name,
                    b.name,
                    a.vrid,
                    a.interface.as_deref().unwrap_or("")
                ));
            }
        }
    }
    out
}

/// `alloc_if_up_down_delay()`: `IF DOWN [UP]`, each 0..255 s; an
/// unknown interface is keepalived's bad-interface error (exit 4), a bad
/// number its number error (what it only logs is not shown by `-t`).
fn up_down_delay(cx: &mut Ctx, w: &[String]) -> Option<(String, u64, u64)> {
    let name = w.first()?;
    if !cx.host.interface_exists(name) {
        crate::config::numbers::Report::report(
            cx,
            crate::config::diag::ErrClass::BadIf,
            format!("unknown interface {name} specified for up/down delay"),
        );
        return None;
    }
    let timer =
        |cx: &mut Ctx, v: &str| crate::config::numbers::read_timer(cx, v, 0, 255 * TIMER_HZ, true);
    let down = timer(cx, w.get(1)?)?;
    let up = match w.get(2) {
        Some(v) => timer(cx, v)?,
        None => 0,
    };
    Some((name.clone(), down, up))
}

/// The VRRP globals the run and the dumps read.
fn globals(cfg: &Config) -> super::VrrpGlobals {
    let flag = |kw: &str| global_flag(cfg, kw);
    let last = |kw: &str| cfg.global_defs.other.iter().rev().find(|s| s.keyword == kw);
    let value = |kw: &str| last(kw).and_then(|s| s.args.first().cloned());
    super::VrrpGlobals {
        smtp_alert_vrrp: flag("smtp_alert_vrrp"),
        dynamic_interfaces: flag("dynamic_interfaces") == Some(true),
        fifo_write_states_on_reload: flag("fifo_write_vrrp_states_on_reload") == Some(true),
        notify_priority_changes: flag("vrrp_notify_priority_changes") == Some(true),
        mcast_group4: value("vrrp_mcast_group4"),
        mcast_group6: value("vrrp_mcast_group6"),
        down_timer_adverts: value("vrrp_down_timer_adverts"),
        lower_prio_no_advert: flag("vrrp_lower_prio_no_advert") == Some(true),
        higher_prio_send_advert: flag("vrrp_higher_prio_send_advert") == Some(true),
        version: value("vrrp_version"),
        check_unicast_src: flag("vrrp_check_unicast_src") == Some(true),
        skip_check_adv_addr: flag("vrrp_skip_check_adv_addr") == Some(true),
        strict: flag("vrrp_strict") == Some(true),
        notify_fifo: last("vrrp_notify_fifo").and_then(|s| {
            Some(crate::config::model::Fifo {
                path: s.args.first()?.clone(),
                user: s.args.get(1).cloned(),
                group: s.args.get(2).cloned(),
            })
        }),
        notify_fifo_script: last("vrrp_notify_fifo_script").and_then(|s| {
            Some(crate::config::model::Script {
                args: crate::config::lexer::split_quoted_escaped(s.args.first()?)?,
                user: s.args.get(1).cloned(),
                group: s.args.get(2).cloned(),
            })
        }),
    }
}

/// A boolean global keyword as written: bare = true, else keepalived's
/// true/false words (checked where it was read); the last one wins.
pub fn global_flag(cfg: &Config, kw: &str) -> Option<bool> {
    let s = cfg
        .global_defs
        .other
        .iter()
        .rev()
        .find(|s| s.keyword == kw)?;
    match s.args.first() {
        None => Some(true),
        Some(v) => bool_word(v),
    }
}

fn first(s: &Setting) -> Option<&str> {
    s.args.first().map(String::as_str)
}

/// One `vrrp_instance`, or `None` when keepalived drops it.
fn instance(
    cfg: &Config,
    cx: &mut Ctx,
    (at, b): (usize, &Block),
    name: String,
    script_names: &[String],
) -> Option<Instance> {
    let g = &cfg.global_defs;
    let (garp, lower_delay_set, lower_rep_set) = super::parts::global_garp(g);
    let mut w = Written {
        lower_delay_set,
        lower_rep_set,
        end_line: b.end_line,
        ..Written::default()
    };
    let global_bool = |k: &str| g.other.iter().any(|s| s.keyword == k);
    let mut i = Instance {
        name: name.clone(),
        line: b.line,
        interface: None,
        vrid: 0,
        priority: 0,
        init_state: InitState::Backup,
        advert_int_us: TIMER_HZ,
        version: g
            .other
            .iter()
            .rev()
            .find(|s| s.keyword == "vrrp_version")
            .and_then(|s| s.args.first())
            .and_then(|v| v.parse().ok())
            .filter(|v| *v == 2 || *v == 3)
            .unwrap_or(2),
        ipv6: false,
        nopreempt: false,
        preempt_delay_us: 0,
        accept: true,
        strict: global_bool("vrrp_strict"),
        dont_track_primary: false,
        bfd_takeover: None,
        track_src_ip: false,
        src_ip: None,
        mcast_dst: None,
        unicast_peers: Vec::new(),
        unicast_ttl: 255,
        unicast_fault_no_peer: false,
        check_unicast_src: g
            .other
            .iter()
            .any(|s| s.keyword == "vrrp_check_unicast_src"),
        old_unicast_checksum: None,
        vips: Vec::new(),
        evips: Vec::new(),
        virtual_routes: Vec::new(),
        virtual_rules: Vec::new(),
        track_interfaces: Vec::new(),
        track_scripts: Vec::new(),
        track_files: Vec::new(),
        track_processes: Vec::new(),
        track_bfds: Vec::new(),
        auth: None,
        garp,
        down_timer_adverts: 3,
        lower_prio_no_advert: global_bool("vrrp_lower_prio_no_advert"),
        higher_prio_send_advert: global_bool("vrrp_higher_prio_send_advert"),
        skip_check_adv_addr: global_bool("vrrp_skip_check_adv_addr"),
        notify: Notify::default(),
        smtp_alert: None,
        notify_priority_changes: None,
        vmac: None,
        vmac_xmit_base: false,
        promote_secondaries: false,
        sync_group: None,
    };
    let mut explicit_version: Option<u8> = None;
    for s in &b.settings {
        cx.line = s.line;
        let kw = s.keyword.as_str();
        if NEEDS_VALUE.contains(&kw) && s.args.is_empty() {
            if kw == "lvs_sync_daemon_interface" {
                deprecated_syncd(cx, &name);
            }
            cx.missing(s);
            continue;
        }
        let v = first(s).unwrap_or("");
        match kw {
            "state" => match v {
                "MASTER" => {
                    i.init_state = InitState::Master;
                    w.state_master = true;
                }
                "BACKUP" if w.state_master => {
                    cx.err(format!("({name}) state previously set as MASTER - ignoring BACKUP"));
                }
                "BACKUP" => i.init_state = InitState::Backup,
                other => {
                    cx.err(format!("({name}) unknown state '{other}', defaulting to BACKUP"));
                    i.init_state = InitState::Backup;
                    w.state_master = false;
                }
            },
            "interface" => {
                if v.len() >= 16 {
                    cx.err(format!("Interface name '{v}' too long - ignoring"));
                } else if v == "lo" {
                    cx.err(format!(
                        "({name}) cannot use a loopback interface ({v}) for vrrp - ignoring"
                    ));
                } else {
                    if !cx.interface_known(v) {
                        cx.bad_interface(format!(
                            "WARNING - interface {v} for vrrp_instance {name} doesn't exist"
                        ));
                    }
                    i.interface = Some(v.to_string());
                }
            }
            "virtual_router_id" => match cx.read_unsigned(v, 1, 255) {
                Some(n) => w.vrid = Some(n as u8),
                None => cx.err(format!(
                    "({name}): VRID '{v}' not valid - must be between 1 & 255"
                )),
            },
            "priority" => match cx.read_unsigned(v, 1, 255) {
                Some(n) => w.priority = Some(n as u8),
                None => {
                    cx.err(format!(
                        "({name}) Priority not valid! must be between 1 & 255. Using default 100"
                    ));
                    w.priority = Some(100);
                }
            },
            "advert_int" => match cx.read_timer(v, 10_000, 255 * TIMER_HZ) {
                Some(us) => {
                    i.advert_int_us = us;
                    w.advert_text = Some(us as f64 / TIMER_HZ as f64);
                }
                None => cx.err(format!(
                    "({name}) Advert interval ({v}) not valid! Must be > 0 - ignoring"
                )),
            },
            "version" => match cx.read_unsigned(v, 2, 3) {
                Some(n) => {
                    // An IPv6 first address read before fixes version 3
                    // (keepalived prints the version as 0 then); only the
                    // instance's first address fixes its family, a later
                    // IPv6 one is dropped and deduces nothing.
                    let v6_before = b
                        .children
                        .iter()
                        .filter(|c| c.keyword == "virtual_ipaddress" && c.line < s.line)
                        .find_map(|c| c.values.first().and_then(|l| l.words.first()))
                        .is_some_and(|a| {
                            parse_ip(a.split('/').next().unwrap_or(a)).is_some_and(|a| a.is_ipv6())
                        });
                    let before = if v6_before { Some(0) } else { explicit_version };
                    match before {
                        Some(old) if old != n as u8 => cx.err(format!(
                            "({name}) vrrp_version {n} conflicts with configured or deduced version {old}; ignoring."
                        )),
                        _ => {
                            i.version = n as u8;
                            explicit_version = Some(n as u8);
                        }
                    }
                }
                None => cx.err(format!("({name}): Version must be either 2 or 3")),
            },
            "nopreempt" => i.nopreempt = true,
            "preempt" => i.nopreempt = false,
            "preempt_delay" => match cx.read_timer(v, 0, 1000 * TIMER_HZ) {
                Some(us) => i.preempt_delay_us = us,
                None => cx.err(format!(
                    "({name}) Preempt_delay not valid! must be between 0-1000"
                )),
            },
            "debug" if cx.read_unsigned(v, 0, 4).is_none() => {
                cx.err(format!(
                    "({name}) Debug value '{v}' not valid; must be between 0-4"
                ));
            }
            "mcast_src_ip" | "unicast_src_ip" => {
                if kw == "unicast_src_ip" {
                    w.unicast_keyword = true;
                }
                match parse_ip(v) {
                    Some(a) => i.src_ip = Some(a),
                    None => cx.err(format!(
                        "Configuration error: VRRP instance[{name}] malformed src address[{v}]. Skipping..."
                    )),
                }
            }
            "mcast_dst_ip" => match parse_ip(v) {
                Some(a) if a.is_multicast() => i.mcast_dst = Some(a),
                _ => cx.err(format!("({name}) mcast_dst_ip {v} not multicast. Skipping...")),
            },
            "unicast_ttl" => match cx.read_unsigned(v, 0, 255) {
                Some(n) => i.unicast_ttl = n as u8,
                None => cx.err(format!(
                    "({name}): TTL '{v}' not valid - must be between 0 & 255"
                )),
            },
            "unicast_fault_no_peer" => i.unicast_fault_no_peer = true,
            "check_unicast_src" => {
                w.unicast_keyword = true;
                i.check_unicast_src = true;
            }
            "old_unicast_checksum" => {
                w.unicast_keyword = true;
                match first(s) {
                    None => i.old_unicast_checksum = Some(true),
                    Some("never") => i.old_unicast_checksum = Some(false),
                    Some(o) => cx.err(format!(
                        "({name}) Unknown old_unicast_chksum mode {o} - ignoring"
                    )),
                }
            }
            "lvs_sync_daemon_interface" => deprecated_syncd(cx, &name),
            "vrf" if i.interface.is_some() => {
                cx.err(format!(
                    "({name}) Cannot specify VRF interface and interface - ignoring"
                ));
            }
            "use_vmac" => {
                i.vmac = Some(first(s).map(str::to_string).unwrap_or_default());
            }
            "vmac_xmit_base" => i.vmac_xmit_base = true,
            "use_ipvlan" if w.ipvlan => {
                cx.err(format!("({name}) use_ipvlan already specified"));
            }
            "use_ipvlan" => w.ipvlan = true,
            // The instance's family is fixed by the first of: an accepted
            // native_ipv6, its first address (a VIP or a unicast peer).
            // keepalived refuses to change it.
            "native_ipv6" if !w.native_ipv6 => {
                if first_address_family(b, s.line).is_some_and(|(_, v6)| !v6) {
                    cx.err(format!(
                        "({name}) Cannot specify native_ipv6 with IPv4 addresses"
                    ));
                } else {
                    w.native_ipv6 = true;
                    w.native_ipv6_line = s.line;
                }
            }
            "dont_track_primary" => i.dont_track_primary = true,
            "bfd_takeover" => {
                let Some(v) = first(s) else {
                    cx.err(format!("({name}) bfd_takeover needs a bfd_instance name"));
                    continue;
                };
                // As track_bfd finds its session: read before this block,
                // its events for VRRP.
                match cfg.bfd_instances.iter().find(|b| {
                    b.listed && b.name == v && (b.vrrp || !b.checker) && b.blocks_before <= at
                }) {
                    Some(b) if b.valid && b.neighbor.is_some() => {
                        i.bfd_takeover = b.neighbor.map(|n| (v.to_string(), n));
                    }
                    _ => cx.err(format!("({name}) bfd_takeover: bfd_instance {v} not found, ignoring...")),
                }
            }
            "track_src_ip" => i.track_src_ip = true,
            "accept" => w.accept = Some(true),
            "no_accept" => w.accept = Some(false),
            "skip_check_adv_addr" | "lower_prio_no_advert" | "higher_prio_send_advert"
            | "notify_priority_changes" => {
                let b = match first(s) {
                    None => Some(true),
                    Some(w) => bool_word(w),
                };
                match (kw, b) {
                    (_, None) => cx.err(format!(
                        "({name}) invalid {kw} {} specified",
                        first(s).unwrap_or("")
                    )),
                    ("skip_check_adv_addr", Some(b)) => i.skip_check_adv_addr = b,
                    ("lower_prio_no_advert", Some(b)) => i.lower_prio_no_advert = b,
                    ("higher_prio_send_advert", Some(b)) => i.higher_prio_send_advert = b,
                    (_, Some(b)) => i.notify_priority_changes = Some(b),
                }
            }
            "strict_mode" => match first(s).map(bool_word) {
                None => i.strict = true,
                Some(Some(b)) => i.strict = b,
                Some(None) => cx.err(format!("({name}) invalid strict_mode {v} specified")),
            },
            "smtp_alert" => match first(s).map(bool_word) {
                None => i.smtp_alert = Some(true),
                Some(Some(b)) => i.smtp_alert = Some(b),
                Some(None) => cx.err(format!("Invalid vrrp_instance smtp_alert parameter {v}")),
            },
            "linkbeat_use_polling" => cx.err(format!(
                "({name}) 'linkbeat_use_polling' in vrrp instance deprecated - use linkbeat_interfaces block"
            )),
            "kernel_rx_buf_size"
                if s.args.is_empty() || cx.read_unsigned(v, 0, u64::from(u32::MAX)).is_none() =>
            {
                cx.err(format!("({name}) invalid kernel_rx_buf_size specified"));
            }
            "garp_extra_if" => {
                let have_time = s.args.iter().any(|a| a != "all");
                if !have_time {
                    cx.err(format!("({name}): garp_extra_if specified without time - ignoring"));
                }
                for a in s.args.iter().filter(|a| *a != "all") {
                    if cx.read_unsigned(a, 1, 86400).is_none() {
                        cx.err(format!("({name}): garp_extra_if '{a}' invalid - ignoring"));
                        break;
                    }
                }
            }
            "garp_master_delay" | "garp_lower_prio_delay" | "garp_master_refresh" => {
                // The delays are kept in µs in an unsigned int (UINT_MAX /
                // TIMER_HZ = 4294 s); the refresh in whole seconds.
                let max = if kw == "garp_master_refresh" {
                    u64::from(u32::MAX)
                } else {
                    u64::from(u32::MAX) / TIMER_HZ
                };
                match cx.read_unsigned(v, 0, max) {
                    Some(n) => {
                        let us = n * TIMER_HZ;
                        match kw {
                            "garp_master_delay" => i.garp.master_delay_us = us,
                            "garp_lower_prio_delay" => {
                                i.garp.lower_prio_delay_us = us;
                                w.lower_delay_set = true;
                            }
                            _ => i.garp.master_refresh_us = us,
                        }
                    }
                    None => cx.err(format!("({name}): {kw} '{v}' invalid - ignoring")),
                }
            }
            "garp_master_repeat" | "garp_master_refresh_repeat" | "garp_lower_prio_repeat" => {
                match cx.read_unsigned(v, 0, u64::from(u32::MAX)) {
                    Some(0) if kw != "garp_lower_prio_repeat" => {
                        cx.err(format!("({name}): {kw} must be greater than 0, setting to 1"));
                        set_repeat(&mut i.garp, kw, 1);
                    }
                    Some(n) => {
                        w.lower_rep_set |= kw == "garp_lower_prio_repeat";
                        set_repeat(&mut i.garp, kw, n as u32)
                    }
                    None if kw == "garp_lower_prio_repeat" => {
                        cx.err(format!("({name}): Invalid {kw} '{v}'"))
                    }
                    None => cx.err(format!("({name}): {kw} '{v}' invalid - ignoring")),
                }
            }
            "down_timer_adverts" => match cx.read_unsigned(v, 1, 100) {
                Some(n) => i.down_timer_adverts = n as u32,
                None => cx.err(format!("({name}): Invalid down_timer_adverts [1:100] '{v}'")),
            },
            "notify_master" | "notify_backup" | "notify_fault" | "notify_stop" | "notify"
            | "notify_master_rx_lower_pri" | "notify_deleted" => {
                notify_setting(cx, &mut i.notify, s, &name);
            }
            "promote_secondaries" => i.promote_secondaries = true,
            _ => {}
        }
    }
    for c in &b.children {
        match c.keyword.as_str() {
            "virtual_ipaddress" | "virtual_ipaddress_excluded" => {
                let excluded = c.keyword.ends_with("excluded");
                for l in &c.values {
                    if let Some(vip) = parse_vip(cx, &l.words, l.line) {
                        if excluded {
                            i.evips.push(vip);
                        } else {
                            i.vips.push(vip);
                        }
                    }
                }
            }
            "virtual_routes" => {
                for l in &c.values {
                    if let Some(r) = super::iproute::parse_route(cx, &l.words, l.line) {
                        i.virtual_routes.push(r);
                    }
                }
            }
            "virtual_rules" => {
                for l in &c.values {
                    let mut next = cx.rule_priority;
                    if let Some(r) = super::iprule::parse_rule(cx, &l.words, l.line, &mut next) {
                        i.virtual_rules.push(r);
                    }
                    cx.rule_priority = next;
                }
            }
            "track_interface" | "track_script" | "track_file" | "track_process" | "track_bfd" => {
                let lists = super::parts::TrackLists {
                    ifs: &mut i.track_interfaces,
                    scripts: &mut i.track_scripts,
                    files: &mut i.track_files,
                    processes: &mut i.track_processes,
                    bfds: &mut i.track_bfds,
                };
                super::parts::track_block(cfg, cx, (at, c), &name, script_names, lists);
            }
            "unicast_peer" => {
                w.unicast_keyword = true;
                for l in &c.values {
                    cx.line = l.line;
                    if let Some(p) = unicast_peer(cx, &l.words, &name) {
                        // The instance's family so far: native_ipv6, else
                        // its first address (a VIP or a peer).
                        let first = first_address_family(b, l.line);
                        let family_v6 = match first {
                            _ if w.native_ipv6
                                && first.is_none_or(|(at, _)| w.native_ipv6_line < at) =>
                            {
                                Some(true)
                            }
                            f => f.map(|(_, v6)| v6),
                        };
                        if family_v6.is_some_and(|v6| v6 != p.addr.is_ipv6()) {
                            cx.err(format!(
                                "Configuration error: VRRP instance[{name}] and unicast peer address[{}] MUST be of the same family !!! Skipping...",
                                p.addr
                            ));
                            continue;
                        }
                        i.unicast_peers.push(p);
                    }
                }
            }
            "authentication" => {
                i.auth = authentication(cx, c, &name, w.state_master);
            }
            _ => {}
        }
    }

    super::complete::complete(cfg, cx, i, w)
}

#[cfg(test)]
mod timing_tests {
    #[test]
    fn startup_delay_and_announce_intervals_are_read_with_keepalived_s_readers() {
        let v = |g: &str| {
            crate::config::load_str(&format!("global_defs {{\n{g}\n}}\n"))
                .config
                .vrrp
        };
        let c = v("vrrp_startup_delay 2.5\nvrrp_garp_interval 0.001\nvrrp_gna_interval 1.25");
        assert_eq!(c.startup_delay_us, 2_500_000);
        assert_eq!((c.garp_interval_us, c.gna_interval_us), (1_000, 1_250_000));
        // Refused where read (too many places, a sign, garbage): no effect.
        let c = v("vrrp_startup_delay 2.1234567\nvrrp_garp_interval -1\nvrrp_gna_interval 1x");
        assert_eq!(c.startup_delay_us, 0);
        assert_eq!((c.garp_interval_us, c.gna_interval_us), (0, 0));
    }
}
