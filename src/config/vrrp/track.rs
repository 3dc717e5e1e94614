//! The VRRP blocks beside the instances: `vrrp_script`,
//! `vrrp_sync_group`, `vrrp_track_process`, `garp_group`, `track_group`,
//! read with keepalived 2.2.7's value checks (`vrrp_parser.c`,
//! `vrrp_sync.c`). Part of [`super::build`].

use super::build::Ctx;
use super::*;
use crate::config::model::{Config, Setting, TIMER_HZ};

fn first(s: &Setting) -> Option<&str> {
    s.args.first().map(String::as_str)
}

/// Reports keepalived's missing-parameter error for the keywords of
/// `needs` written without a value; true when it did.
fn missing(cx: &mut Ctx, s: &Setting, needs: &[&str]) -> bool {
    if s.args.is_empty() && needs.contains(&s.keyword.as_str()) {
        cx.missing(s);
        return true;
    }
    false
}

/// `vrrp_script NAME { ... }` blocks that keep a script (`kept`: the
/// names the user checks left).
pub fn scripts(cfg: &Config, cx: &mut Ctx, kept: &[String]) -> Vec<VrrpScript> {
    let mut out = Vec::new();
    for b in cfg
        .other_blocks
        .iter()
        .filter(|b| b.keyword == "vrrp_script")
    {
        let name = b.args.first().cloned().unwrap_or_default();
        let mut sc = VrrpScript {
            name: name.clone(),
            line: b.line,
            args: Vec::new(),
            interval_us: TIMER_HZ,
            timeout_us: 0,
            weight: 0,
            reverse: false,
            rise: 1,
            fall: 1,
            user: None,
            init_fail: false,
        };
        for s in &b.settings {
            cx.line = s.line;
            if missing(
                cx,
                s,
                &["interval", "timeout", "weight", "rise", "fall", "user"],
            ) {
                continue;
            }
            let v = first(s).unwrap_or("");
            match s.keyword.as_str() {
                "script" => {
                    // Split as keepalived's set_script_params_array() does.
                    sc.args = crate::config::lexer::split_quoted_escaped(v).unwrap_or_default();
                }
                "interval" | "timeout" => {
                    let kw = s.keyword.as_str();
                    match cx.read_unsigned(v, 0, u64::from(u32::MAX) / TIMER_HZ) {
                        Some(0) => {
                            cx.err(format!(
                                "({name}): vrrp script {kw} must be greater than 0, setting to 1"
                            ));
                            set_time(&mut sc, kw, TIMER_HZ);
                        }
                        Some(n) => set_time(&mut sc, kw, n * TIMER_HZ),
                        None => cx.err(format!(
                            "({name}): vrrp script {kw} '{v}' invalid - ignoring"
                        )),
                    }
                }
                "weight" => {
                    // keepalived keeps an out-of-range weight after saying so.
                    match cx.read_int(v, -253, 253) {
                        Some(w) => sc.weight = w as i32,
                        None => cx.err(format!(
                            "vrrp_script {name} weight {v} must be in [-253, 253]"
                        )),
                    }
                    sc.reverse = s.args.get(1).is_some_and(|r| r == "reverse");
                }
                "rise" | "fall" => {
                    let kw = s.keyword.as_str();
                    let n = match cx.read_unsigned(v, 1, i32::MAX as u64) {
                        Some(n) => n as u32,
                        None => {
                            cx.err(format!(
                                "({name}): vrrp script {kw} value '{v}' invalid, defaulting to 1"
                            ));
                            1
                        }
                    };
                    if kw == "rise" {
                        sc.rise = n;
                    } else {
                        sc.fall = n;
                    }
                }
                "user" => {
                    sc.user = Some((v.to_string(), s.args.get(1).cloned()));
                }
                "init_fail" => sc.init_fail = true,
                _ => {}
            }
        }
        if kept.contains(&name) {
            out.push(sc);
        }
    }
    out
}

fn set_time(sc: &mut VrrpScript, kw: &str, us: u64) {
    if kw == "interval" {
        sc.interval_us = us;
    } else {
        sc.timeout_us = us;
    }
}

/// `vrrp_sync_group`s with their members, each instance in one group.
pub fn sync_groups(
    cfg: &Config,
    cx: &mut Ctx,
    instances: &mut [Instance],
    script_names: &[String],
) -> Vec<SyncGroup> {
    let mut out = Vec::new();
    // Every name a block gave, kept or not (keepalived checks them as it
    // parses).
    let mut seen: Vec<String> = Vec::new();
    for (at, b) in cfg
        .other_blocks
        .iter()
        .enumerate()
        .filter(|(_, b)| b.keyword == "vrrp_sync_group")
    {
        let Some(name) = b.args.first().cloned() else {
            continue;
        };
        if seen.contains(&name) {
            cx.line = b.line;
            cx.err(format!("vrrp sync group {name} already defined"));
            continue;
        }
        seen.push(name.clone());
        let mut g = SyncGroup {
            name: name.clone(),
            line: b.line,
            members: Vec::new(),
            notify: Notify::default(),
            tracking_weight: false,
            smtp_alert: None,
            track_interfaces: Vec::new(),
            track_scripts: Vec::new(),
            track_files: Vec::new(),
            track_processes: Vec::new(),
            track_bfds: Vec::new(),
        };
        for s in &b.settings {
            cx.line = s.line;
            if missing(
                cx,
                s,
                &[
                    "notify_master",
                    "notify_backup",
                    "notify_fault",
                    "notify_stop",
                    "notify",
                ],
            ) {
                continue;
            }
            match s.keyword.as_str() {
                "sync_group_tracking_weight" => g.tracking_weight = true,
                "global_tracking" => {
                    cx.err(format!(
                        "({name}) global_tracking is deprecated. Use track_interface/script/file on the sync group"
                    ));
                    g.tracking_weight = true;
                }
                "smtp_alert" => g.smtp_alert = Some(true),
                k if k.starts_with("notify") && k != "notify_priority_changes" => {
                    super::parts::notify_setting(cx, &mut g.notify, s, &name);
                }
                _ => {}
            }
        }
        for c in &b.children {
            let lists = super::parts::TrackLists {
                ifs: &mut g.track_interfaces,
                scripts: &mut g.track_scripts,
                files: &mut g.track_files,
                processes: &mut g.track_processes,
                bfds: &mut g.track_bfds,
            };
            super::parts::track_block(cfg, cx, (at, c), &name, script_names, lists);
        }
        let mut named = Vec::new();
        let mut listed = false;
        for c in b.children.iter().filter(|c| c.keyword == "group") {
            if listed {
                cx.line = c.line;
                cx.err(format!(
                    "Group list already specified for sync group {name}"
                ));
                continue;
            }
            listed = true;
            if c.values.is_empty() {
                cx.line = c.end_line;
                cx.err(format!("Warning - sync group {name} has empty group block"));
            }
            named.extend(c.values.iter().flat_map(|l| l.words.iter().cloned()));
        }
        cx.line = 0;
        if named.is_empty() {
            cx.err(format!(
                "Sync group {name} has no virtual router(s). removing"
            ));
            continue;
        }
        for m in named {
            match instances.iter_mut().find(|i| i.name == m) {
                None => cx.err(format!(
                    "Virtual router {m} specified in sync group {name} doesn't exist - ignoring"
                )),
                Some(i) if i.sync_group.is_some() => cx.err(format!(
                    "Virtual router {m} cannot exist in more than one sync group; ignoring {name}"
                )),
                Some(i) => {
                    i.sync_group = Some(name.clone());
                    g.members.push(m);
                }
            }
        }
        if g.members.is_empty() {
            cx.err(format!(
                "Sync group {name}, no matching virtual router found in group declaration - removing"
            ));
            continue;
        }
        if g.members.len() == 1 {
            cx.err(format!(
                "Sync group {name} has only 1 virtual router(s) - this probably isn't what you want"
            ));
        }
        out.push(g);
    }
    out
}

/// keepalived's `vrrp_complete_init()` for the members of a sync group
/// without `sync_group_tracking_weight`: weighted tracked interfaces
/// count as unweighted (FAULT when down), weighted scripts and files are
/// dropped — members can only FAULT together, never shift priority —
/// each with keepalived's error. Also resolves each group's `smtp_alert`
/// with the global defaults, as the instances' is.
pub fn sync_group_tracking(
    cfg: &Config,
    cx: &mut Ctx,
    groups: &mut [SyncGroup],
    instances: &mut [Instance],
    scripts: &[VrrpScript],
) {
    cx.line = 0;
    for g in groups.iter_mut() {
        g.smtp_alert = Some(
            g.smtp_alert
                .or_else(|| super::build::global_flag(cfg, "smtp_alert_vrrp"))
                .or(cfg.global_defs.smtp_alert)
                .unwrap_or(false),
        );
        for i in instances
            .iter_mut()
            .filter(|i| i.sync_group.as_deref() == Some(g.name.as_str()))
        {
            if g.tracking_weight {
                join_group_tracking(g, i, true);
                continue;
            }
            let name = i.name.clone();
            for t in &mut i.track_interfaces {
                if t.weight.unwrap_or(0) != 0 {
                    t.weight = Some(0);
                    cx.err_nolines(format!(
                        "({name}) ignoring {} tracked interface weight due to SYNC group",
                        t.name
                    ));
                }
            }
            drop_weighted(cfg, cx, i, scripts, "SYNC group");
            join_group_tracking(g, i, false);
        }
    }
}

/// keepalived's `vrrp_complete_instance()` for an address owner (priority
/// 255) outside a sync group without tracking weights: its weighted
/// scripts, files and BFD sessions dropped (its weighted interfaces are in
/// `complete`).
pub fn owner_tracking(
    cfg: &Config,
    cx: &mut Ctx,
    groups: &[SyncGroup],
    instances: &mut [Instance],
    scripts: &[VrrpScript],
) {
    cx.line = 0;
    for i in instances.iter_mut().filter(|i| i.priority == 255) {
        let unweighted_group = i
            .sync_group
            .as_ref()
            .is_some_and(|g| groups.iter().any(|x| x.name == *g && !x.tracking_weight));
        if unweighted_group {
            continue;
        }
        drop_weighted(cfg, cx, i, scripts, "address_owner");
    }
}

/// keepalived's `vrrp_complete_instance()` for a sync group member
/// without tracking weights or an address owner (`why`): weighted tracked
/// scripts are dropped, a tracked file of the default weight 1 counts as
/// unweighted, one of another weight is dropped, and so is a weighted
/// tracked BFD session, each with keepalived's error.
fn drop_weighted(cfg: &Config, cx: &mut Ctx, i: &mut Instance, scripts: &[VrrpScript], why: &str) {
    let name = i.name.clone();
    i.track_scripts.retain(|t| {
        let own = scripts
            .iter()
            .find(|s| s.name == t.name)
            .map_or(0, |s| s.weight);
        if t.weight.unwrap_or(own) == 0 {
            return true;
        }
        cx.err_nolines(format!(
            "({name}) ignoring tracked script {} with weights due to {why}",
            t.name
        ));
        false
    });
    i.track_files.retain_mut(|t| {
        let own = cfg
            .track_files
            .iter()
            .find(|f| f.name == t.name)
            .map_or(1, |f| f.weight);
        let weight = t.weight.unwrap_or(own);
        if weight == 1 {
            cx.err_nolines(format!(
                "({name}) ignoring weight from tracked file {} due to {why}. specify weight 0",
                t.name
            ));
            t.weight = Some(0);
            return true;
        }
        if weight == 0 {
            return true;
        }
        cx.err_nolines(format!(
            "({name}) ignoring tracked file {} with weight {weight} due to {why}",
            t.name
        ));
        false
    });
    i.track_bfds.retain(|t| {
        let own = cfg
            .bfd_instances
            .iter()
            .find(|b| b.name == t.name)
            .map_or(0, |b| b.weight);
        let weight = t.weight.unwrap_or(own);
        if weight == 0 {
            return true;
        }
        cx.err_nolines(format!(
            "({name}) ignoring tracked bfd {} with weight {weight} due to {why}",
            t.name
        ));
        false
    });
}

/// The group's own tracked objects tracked by member `i` too (what it
/// tracks itself first); their weights only with the group's tracking
/// weight (else a group's object can only FAULT its members).
fn join_group_tracking(g: &SyncGroup, i: &mut Instance, weighted: bool) {
    for (from, to) in [
        (&g.track_interfaces, &mut i.track_interfaces),
        (&g.track_scripts, &mut i.track_scripts),
        (&g.track_files, &mut i.track_files),
        (&g.track_processes, &mut i.track_processes),
        (&g.track_bfds, &mut i.track_bfds),
    ] {
        for t in from {
            if !to.iter().any(|o| o.name == t.name) {
                let mut t = t.clone();
                if !weighted {
                    t.weight = Some(0);
                }
                to.push(t);
            }
        }
    }
}

/// `vrrp_track_process NAME { ... }`, each value checked as keepalived
/// checks it.
pub fn track_processes(cfg: &Config, cx: &mut Ctx) -> Vec<VrrpTrackProcess> {
    let mut out = Vec::new();
    for b in cfg
        .other_blocks
        .iter()
        .filter(|b| b.keyword == "vrrp_track_process")
    {
        let name = b.args.first().cloned().unwrap_or_default();
        let mut process = false;
        let mut tp = VrrpTrackProcess::new(&name, "");
        let mut param_match = None;
        for s in &b.settings {
            cx.line = s.line;
            if missing(
                cx,
                s,
                &[
                    "process",
                    "quorum",
                    "quorum_max",
                    "delay",
                    "terminate_delay",
                    "fork_delay",
                ],
            ) {
                continue;
            }
            let v = first(s).unwrap_or("");
            match s.keyword.as_str() {
                "process" => {
                    process = true;
                    tp.process = v.to_string();
                    tp.params = s.args[1..].to_vec();
                }
                "full_command" => tp.full_command = true,
                "quorum" => match cx.read_unsigned(v, 1, 65535) {
                    Some(q) => tp.quorum = q as u32,
                    None => cx.err(format!(
                        "Quorum ({v}) for vrrp_track_process {name} must be between [1..65535] inclusive. Ignoring..."
                    )),
                },
                "quorum_max" => match cx.read_unsigned(v, 0, 65535) {
                    Some(q) => tp.quorum_max = q as u32,
                    None => cx.err(format!(
                        "quorum_max ({v}) for vrrp_track_process {name} must be between [0..65535] inclusive. Ignoring..."
                    )),
                },
                k @ ("delay" | "terminate_delay" | "fork_delay") => {
                    match cx.read_timer(v, 1, 3600 * TIMER_HZ) {
                        Some(us) => {
                            if k != "fork_delay" {
                                tp.terminate_delay_us = us;
                            }
                            if k != "terminate_delay" {
                                tp.fork_delay_us = us;
                            }
                        }
                        None => cx.err(format!(
                            "{k} ({v}) for vrrp_track_process {name} must be between [0.000001..3600] inclusive. Ignoring..."
                        )),
                    }
                }
                "weight" => {
                    if s.args.is_empty() {
                        cx.err(format!(
                            "No weight specified for track process {name} - ignoring"
                        ));
                    } else {
                        match cx.read_int(v, -254, 254) {
                            Some(w) => {
                                tp.weight = w as i32;
                                tp.reverse = s.args.get(1).map(String::as_str) == Some("reverse");
                            }
                            None => cx.err(format!(
                                "Weight ({v}) for vrrp_track_process {name} must be between [-254..254] inclusive. Ignoring..."
                            )),
                        }
                    }
                }
                "param_match" => match first(s) {
                    Some("initial") => param_match = Some(ParamMatch::Initial),
                    Some("partial") => param_match = Some(ParamMatch::Partial),
                    Some(m) => cx.err(format!("Invalid param_match type {m} - ignoring")),
                    None => {}
                },
                _ => {}
            }
        }
        if !process {
            cx.line = b.end_line;
            cx.err(format!("track process '{name}' process name not specified"));
            continue;
        }
        tp.param_match = match (param_match, tp.params.is_empty()) {
            (Some(m), _) => m,
            (None, false) => ParamMatch::Exact,
            (None, true) => ParamMatch::None,
        };
        out.push(tp);
    }
    out
}

/// `garp_group [NAME] { garp_interval S ; gna_interval S ; interface IF |
/// interfaces { ... } }`, numbered from 0 as keepalived names them.
pub fn garp_groups(cfg: &Config, cx: &mut Ctx) -> Vec<super::GarpGroup> {
    let groups = cfg
        .other_blocks
        .iter()
        .filter(|b| b.keyword == "garp_group");
    let mut out = Vec::new();
    for (n, b) in groups.enumerate() {
        let mut delay = false;
        let mut g = super::GarpGroup::default();
        for s in &b.settings {
            cx.line = s.line;
            if missing(cx, s, &["garp_interval", "gna_interval", "interface"]) {
                continue;
            }
            let v = first(s).unwrap_or("");
            match s.keyword.as_str() {
                "garp_interval" | "gna_interval" => {
                    // keepalived counts the keyword, even with a bad value.
                    let us = cx.read_timer(v, 0, u64::from(u32::MAX));
                    if s.keyword == "garp_interval" {
                        g.garp_interval_us = us.or(g.garp_interval_us);
                    } else {
                        g.gna_interval_us = us.or(g.gna_interval_us);
                    }
                    delay = true;
                }
                "interface" if garp_interface(cx, v) => g.interfaces.push(v.to_string()),
                _ => {}
            }
        }
        for c in b.children.iter().filter(|c| c.keyword == "interfaces") {
            if c.values.is_empty() {
                cx.line = c.end_line;
                cx.err("Warning - empty garp_group interfaces block");
            }
            // keepalived reads the block whole, at its closing line.
            for l in &c.values {
                cx.line = c.end_line;
                for w in &l.words {
                    if garp_interface(cx, w) {
                        g.interfaces.push(w.to_string());
                    }
                }
            }
        }
        if !delay {
            cx.line = b.end_line;
            cx.err(format!(
                "garp group {n} does not have any delay set - removing"
            ));
            continue;
        }
        out.push(g);
    }
    out
}

fn garp_interface(cx: &mut Ctx, ifn: &str) -> bool {
    if !cx.host.interface_exists(ifn) {
        cx.bad_interface(format!(
            "WARNING - interface {ifn} specified for garp_group doesn't exist"
        ));
        return false;
    }
    true
}

/// `track_group NAME { group { ... } }`.
pub fn track_groups(cfg: &Config, cx: &mut Ctx) {
    for b in cfg
        .other_blocks
        .iter()
        .filter(|b| b.keyword == "track_group")
    {
        let Some(name) = b.args.first() else { continue };
        for c in b
            .children
            .iter()
            .filter(|c| c.keyword == "group" && c.values.is_empty())
        {
            cx.line = c.end_line;
            cx.err(format!(
                "Warning - track group {name} has empty group block"
            ));
        }
    }
}

/// keepalived's `check_vrrp_script_security()` (when instances exist): a
/// `vrrp_script` whose script cannot be found ("since not found/
/// accessible") or that script security disables ("due to insecure") is
/// reported and dropped, one its user cannot run dropped silently; every
/// instance and sync group stops tracking it, so none is held in FAULT
/// or lowered by a script that never runs.
pub fn disable_unrunnable_scripts(cfg: &Config, cx: &mut Ctx, out: &mut VrrpConfig) {
    use crate::config::script_security::{self, RunAs};
    if out.instances.is_empty() {
        return;
    }
    let mut gone: Vec<String> = Vec::new();
    for sc in &out.scripts {
        let Some(argv0) = sc.args.first() else {
            continue;
        };
        // A user that cannot be set is the parse's to report.
        let Ok(who) = script_security::identity(cfg, sc.user.as_ref()) else {
            continue;
        };
        let v = script_security::check(
            argv0,
            who.unwrap_or_else(RunAs::ours),
            cfg.global_defs.enable_script_security,
        );
        if v.runnable {
            continue;
        }
        if !v.found {
            cx.err_nolines(format!(
                "Disabling track script {} since not found/accessible",
                sc.name
            ));
        } else if v.insecure {
            cx.err_nolines(format!(
                "Disabling track script {} due to insecure",
                sc.name
            ));
        }
        gone.push(sc.name.clone());
    }
    if gone.is_empty() {
        return;
    }
    out.scripts.retain(|s| !gone.contains(&s.name));
    for i in &mut out.instances {
        i.track_scripts.retain(|t| !gone.contains(&t.name));
    }
    for g in &mut out.sync_groups {
        g.track_scripts.retain(|t| !gone.contains(&t.name));
    }
}
