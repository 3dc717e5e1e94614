//! The parts of a `vrrp_instance` read from their own lines: notify
//! scripts, track entries, unicast peers, authentication, GARP repeats.
//! Part of [`super::build`].

use super::ctx::Ctx;
use super::*;
use crate::config::model::{Block, Config, Setting};
use crate::config::parser::parse_ip;

pub(super) fn set_repeat(g: &mut Garp, kw: &str, n: u32) {
    match kw {
        "garp_master_repeat" => g.master_repeat = n,
        "garp_master_refresh_repeat" => g.master_refresh_repeat = n,
        _ => g.lower_prio_repeat = n,
    }
}

/// An instance's GARP timing before its own keywords: keepalived's
/// `alloc_vrrp()` copies the global `vrrp_garp_*` values. Also says whether
/// the lower-priority delay and repeat were given (else they follow the
/// master's, at the end of the instance).
pub(super) fn global_garp(g: &crate::config::model::GlobalDefs) -> (Garp, bool, bool) {
    let mut garp = Garp::default();
    let (mut delay_set, mut rep_set) = (false, false);
    let num = |k: &str| {
        g.other
            .iter()
            .rev()
            .find(|s| s.keyword == k)
            .and_then(|s| s.args.first())
            .and_then(|v| v.parse::<u64>().ok())
    };
    if let Some(n) = num("vrrp_garp_master_delay") {
        garp.master_delay_us = n * 1_000_000;
    }
    if let Some(n) = num("vrrp_garp_master_repeat") {
        garp.master_repeat = n.clamp(1, u64::from(u32::MAX)) as u32;
    }
    if let Some(n) = num("vrrp_garp_master_refresh") {
        garp.master_refresh_us = n * 1_000_000;
    }
    if let Some(n) = num("vrrp_garp_master_refresh_repeat") {
        garp.master_refresh_repeat = n.clamp(1, u64::from(u32::MAX)) as u32;
    }
    if let Some(n) = num("vrrp_garp_lower_prio_delay") {
        garp.lower_prio_delay_us = n * 1_000_000;
        delay_set = true;
    }
    if let Some(n) = num("vrrp_garp_lower_prio_repeat") {
        garp.lower_prio_repeat = n.min(u64::from(u32::MAX)) as u32;
        rep_set = true;
    }
    (garp, delay_set, rep_set)
}

pub(super) fn deprecated_syncd(cx: &mut Ctx, name: &str) {
    cx.err(format!(
        "({name}) Specifying lvs_sync_daemon_interface against a vrrp is deprecated."
    ));
    cx.err("      Please use global lvs_sync_daemon");
}

/// A notify keyword: `SCRIPT [USER [GROUP]]`, once each.
pub(super) fn notify_setting(cx: &mut Ctx, n: &mut Notify, s: &Setting, name: &str) {
    let script = s.args.first().map(|cmd| NotifyScript {
        // keepalived's set_script_params_array(): quotes group, escapes apply.
        args: crate::config::lexer::split_quoted_escaped(cmd).unwrap_or_default(),
        user: s.args.get(1).cloned(),
        group: s.args.get(2).cloned(),
        line: s.line,
    });
    let kw = s.keyword.as_str();
    let slot = match kw {
        "notify_master" => &mut n.master,
        "notify_backup" => &mut n.backup,
        "notify_fault" => &mut n.fault,
        "notify_stop" => &mut n.stop,
        "notify" => &mut n.any,
        "notify_master_rx_lower_pri" => &mut n.master_rx_lower_pri,
        _ => {
            n.deleted = Some(script);
            return;
        }
    };
    if slot.is_some() {
        let what = kw.trim_start_matches("notify_");
        let what = if kw == "notify" { "notify" } else { what };
        cx.err(format!(
            "({name}) notify_{} script already specified - ignoring {}",
            what.trim_start_matches("notify"),
            s.args.first().map(String::as_str).unwrap_or("")
        ));
        return;
    }
    *slot = script;
}

/// The track lists of an instance or a sync group.
pub(super) struct TrackLists<'a> {
    pub ifs: &'a mut Vec<Tracked>,
    pub scripts: &'a mut Vec<Tracked>,
    pub files: &'a mut Vec<Tracked>,
    pub processes: &'a mut Vec<Tracked>,
    pub bfds: &'a mut Vec<Tracked>,
}

/// A `track_interface`, `track_script`, `track_file`, `track_process` or
/// `track_bfd` block of instance (or sync group) `name` (top-level block
/// `at` of the file), each entry checked as keepalived checks it.
pub(super) fn track_block(
    cfg: &Config,
    cx: &mut Ctx,
    (at, c): (usize, &Block),
    name: &str,
    script_names: &[String],
    lists: TrackLists,
) {
    let l = lists;
    let name = name.to_string();
    match c.keyword.as_str() {
        "track_interface" => {
            for v in &c.values {
                cx.line = v.line;
                if let Some(t) = tracked(cx, &v.words, v.line, &name, true) {
                    if l.ifs.iter().any(|o| o.name == t.name) {
                        cx.err(format!(
                            "({name}) duplicate track_interface {} - ignoring",
                            t.name
                        ));
                        continue;
                    }
                    if !cx.interface_known(&t.name) {
                        cx.bad_interface(format!(
                            "({name}) tracked interface {} doesn't exist",
                            t.name
                        ));
                    }
                    l.ifs.push(t);
                }
            }
        }
        "track_script" | "track_file" | "track_process" | "track_bfd" => {
            let what = c.keyword.trim_start_matches("track_");
            for v in &c.values {
                cx.line = v.line;
                let Some(obj) = v.words.first() else { continue };
                // keepalived's order: the object must exist, be tracked
                // once, and only then are its options read.
                // keepalived looks scripts, processes and sessions up as
                // it parses: only one whose block came before is found.
                let before = |keyword: &str| {
                    cfg.other_blocks[..at.min(cfg.other_blocks.len())]
                        .iter()
                        .any(|p| p.keyword == keyword && p.args.first() == Some(obj))
                };
                let known = match what {
                    "script" => script_names.contains(obj) && before("vrrp_script"),
                    // Files are looked up once the whole file is read.
                    "file" => cfg.track_files.iter().any(|f| &f.name == obj),
                    // Only a session read before the block (keepalived
                    // looks it up as it parses: issue #1146).
                    "bfd" => cfg.bfd_instances.iter().any(|f| {
                        f.listed
                            && &f.name == obj
                            && (f.vrrp || !f.checker)
                            && f.blocks_before <= at
                    }),
                    _ => before("vrrp_track_process"),
                };
                if !known {
                    cx.err(format!(
                        "({name}) track {what} {obj} not found, ignoring..."
                    ));
                    continue;
                }
                let list = match what {
                    "script" => &mut *l.scripts,
                    "file" => &mut *l.files,
                    "bfd" => &mut *l.bfds,
                    _ => &mut *l.processes,
                };
                if list.iter().any(|o| &o.name == obj) {
                    cx.err(format!("({name}) duplicate track_{what} {obj} - ignoring"));
                    continue;
                }
                if let Some(t) = tracked(cx, &v.words, v.line, &name, false) {
                    list.push(t);
                }
            }
        }
        _ => {}
    }
}

/// `NAME [weight W [reverse|noreverse]]` of a track block.
pub(super) fn tracked(
    cx: &mut Ctx,
    words: &[String],
    line: usize,
    name: &str,
    interface: bool,
) -> Option<Tracked> {
    let obj = words.first()?.clone();
    let mut t = Tracked {
        name: obj.clone(),
        weight: None,
        reverse: None,
        line,
    };
    let mut k = 1;
    while k < words.len() {
        match words[k].as_str() {
            "weight" => {
                let v = words.get(k + 1).cloned().unwrap_or_default();
                match cx.read_int(&v, -254, 254) {
                    Some(w) if w.abs() == 254 => {
                        cx.err(format!(
                            "({name}) weight for {obj} cannot be +/-254. Setting to +/-253"
                        ));
                        t.weight = Some(if w < 0 { -253 } else { 253 });
                    }
                    Some(w) => t.weight = Some(w as i32),
                    None => {
                        cx.err(format!(
                            "({name}) weight {v} for {obj} must be between [-253..253] inclusive. Ignoring..."
                        ));
                    }
                }
                k += 2;
            }
            "reverse" => {
                t.reverse = Some(true);
                k += 1;
            }
            "noreverse" => {
                t.reverse = Some(false);
                k += 1;
            }
            other => {
                let what = if interface {
                    "track_interface".to_string()
                } else {
                    "track".to_string()
                };
                cx.err(format!(
                    "({name}) unknown {what} {obj} option {other} - ignoring"
                ));
                k += 1;
            }
        }
    }
    Some(t)
}

/// `IP [min_ttl N] [max_ttl N]`.
pub(super) fn unicast_peer(cx: &mut Ctx, words: &[String], name: &str) -> Option<UnicastPeer> {
    let a = words.first()?;
    let Some(addr) = parse_ip(a) else {
        cx.err(format!(
            "Configuration error: VRRP instance[{name}] malformed unicast peer address[{a}]. Skipping..."
        ));
        return None;
    };
    let mut p = UnicastPeer {
        addr,
        min_ttl: 0,
        max_ttl: 255,
        line: cx.line,
    };
    let mut k = 1;
    while k < words.len() {
        let opt = words[k].as_str();
        let Some(v) = words.get(k + 1) else {
            cx.err(format!("({name}) {opt} is missing a value"));
            break;
        };
        match opt {
            "min_ttl" | "max_ttl" => match cx.read_unsigned(v, 0, 255) {
                Some(n) if opt == "min_ttl" => p.min_ttl = n as u8,
                Some(n) => p.max_ttl = n as u8,
                None => cx.err(format!("({name}) invalid {opt} {v} - ignoring")),
            },
            _ => cx.err(format!(
                "({name}) unknown unicast_peer option {opt} - ignoring"
            )),
        }
        k += 2;
    }
    if p.min_ttl > p.max_ttl {
        cx.err(format!(
            "({name}) min_ttl {} > max_ttl {} - all packets will be discarded",
            p.min_ttl, p.max_ttl
        ));
    }
    Some(p)
}

/// `authentication { auth_type PASS|AH ; auth_pass X }`.
pub(super) fn authentication(
    cx: &mut Ctx,
    c: &Block,
    name: &str,
    state_master: bool,
) -> Option<Auth> {
    let mut kind: Option<&str> = None;
    let mut pass: Option<Vec<u8>> = None;
    for s in &c.settings {
        cx.line = s.line;
        if s.args.is_empty() {
            cx.missing(s);
            continue;
        }
        let v = s.args[0].as_str();
        match s.keyword.as_str() {
            "auth_type" => match v {
                "PASS" | "AH" => {
                    if v == "AH" && state_master {
                        cx.line = 0;
                        cx.err_nolines(format!(
                            "({name}) Initial state master is incompatible with AH authentication - clearing"
                        ));
                    }
                    kind = Some(if v == "PASS" { "PASS" } else { "AH" });
                }
                other => cx.err(format!("({name}) unknown authentication type '{other}'")),
            },
            "auth_pass" => {
                let mut b = s.args.join(" ").into_bytes();
                if b.len() > 8 {
                    cx.err("Truncating auth_pass to 8 characters");
                    b.truncate(8);
                }
                pass = Some(b);
            }
            _ => {}
        }
    }
    cx.line = 0;
    let kind = kind?;
    match pass {
        None => {
            cx.err_nolines(format!(
                "({name}) Authentication specified but no password given. Ignoring"
            ));
            None
        }
        Some(p) if kind == "PASS" => Some(Auth::Pass(p)),
        Some(p) => Some(Auth::Ah(p)),
    }
}
