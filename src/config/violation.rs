//! keepalived's SECURITY VIOLATION audits, one per process as keepalived
//! runs them: the checker's `check_check_script_security()` and the VRRP
//! process's. Every script is judged by [`super::script_security::check`];
//! a process that would not start (no `virtual_server` left, no
//! `vrrp_instance`) judges nothing. Part of validation; reads the file
//! system, nothing else.

use super::diag::{Diagnostics, ErrClass, Pos};
use super::model::*;
use std::collections::HashSet;
use std::sync::Arc;

/// `USER [GROUP]` of a script.
type UserGroup = (String, Option<String>);

/// What keepalived's judgement of every script found (`SC_*` flags).
#[derive(Default)]
struct Judged {
    /// Some script exists (`SC_ISSCRIPT`), runnable or not.
    is_script: bool,
    /// Some script's path is changeable by others (`SC_INSECURE`).
    insecure: bool,
}

impl Judged {
    /// Judges the script `argv0` run as its user (else the default) and
    /// says whether it stays: one that cannot run for a reason other than
    /// insecurity is dropped here with keepalived's line (a MISC_CHECK with
    /// a missing script is removed, leaving its server always up); an
    /// insecure one is dropped by the checker, which logs why, when it
    /// plans the scripts it runs.
    fn keep(
        &mut self,
        cfg: &Config,
        argv0: &str,
        user: Option<&UserGroup>,
        diags: &mut Diagnostics,
    ) -> bool {
        use super::script_security::{check, identity, RunAs};
        // A user that cannot be set was reported, and the script removed,
        // where it was read.
        let Ok(who) = identity(cfg, user) else {
            return false;
        };
        let v = check(
            argv0,
            who.unwrap_or_else(RunAs::ours),
            cfg.global_defs.enable_script_security,
        );
        self.is_script |= v.found;
        self.insecure |= v.insecure;
        let keep = v.runnable || v.insecure;
        if !keep {
            for l in v.lines {
                diags.report(&Pos::none(), ErrClass::Ok, l);
            }
        }
        keep
    }

    /// The SECURITY VIOLATION when a script exists and security is off,
    /// with " There are insecure scripts." when one is.
    fn report(&self, cfg: &Config, diags: &mut Diagnostics, msg: &str) {
        if !self.is_script || cfg.global_defs.enable_script_security {
            return;
        }
        let suffix = if self.insecure {
            " There are insecure scripts."
        } else {
            ""
        };
        diags.report_hint(
            &Pos::none(),
            ErrClass::SecurityError,
            format!("{msg}{suffix}"),
            "add enable_script_security to global_defs (and a script_user)",
        );
    }
}

/// keepalived's `check_check_script_security()`: every script of the
/// checker side judged as `check_script_secure()` judges it, then, when
/// any exists and `enable_script_security` is off, the SECURITY VIOLATION
/// (`-t` exit 6) — with " There are insecure scripts." when one is.
pub(super) fn check_scripts(cfg: &mut Config, diags: &mut Diagnostics) {
    let mut judged = Judged::default();
    let own = |s: &Script| s.user.clone().map(|u| (u, s.group.clone()));
    // keepalived judges nothing of the checker side when no virtual server
    // is left (its check returns at an empty list).
    let checker_side = !cfg.virtual_servers.is_empty();
    let mut vss = std::mem::take(&mut cfg.virtual_servers);
    for vs in &mut vss {
        for rs in &mut vs.real_servers {
            rs.checkers.retain(|c| match c {
                Checker::Misc(m) => m
                    .misc_path
                    .as_ref()
                    .and_then(|a| a.first())
                    .is_some_and(|p| judged.keep(cfg, p, m.user.as_ref(), diags)),
                _ => true,
            });
        }
    }
    // Checkers of real servers dropped for their address family stay in
    // keepalived's queue and are judged too.
    for m in vss.iter().flat_map(|vs| &vs.orphaned_misc) {
        if let Some(p) = m.misc_path.as_ref().and_then(|a| a.first()) {
            judged.keep(cfg, p, m.user.as_ref(), diags);
        }
    }
    for vs in &mut vss {
        for sc in [&mut vs.quorum_up, &mut vs.quorum_down] {
            if sc
                .as_ref()
                .is_some_and(|x| !judged.keep(cfg, &x.args[0], own(x).as_ref(), diags))
            {
                *sc = None;
            }
        }
        for rs in vs.real_servers.iter_mut().filter(|r| r.seldom.is_set()) {
            let s = rs.seldom.set();
            for sc in [&mut s.notify_up, &mut s.notify_down] {
                if sc
                    .as_ref()
                    .is_some_and(|x| !judged.keep(cfg, &x.args[0], own(x).as_ref(), diags))
                {
                    *sc = None;
                }
            }
        }
    }
    cfg.virtual_servers = vss;
    for sc in [
        cfg.global_defs.notify_fifo_script.clone(),
        cfg.global_defs.lvs_notify_fifo_script.clone(),
    ]
    .into_iter()
    .flatten()
    .filter(|_| checker_side)
    {
        judged.keep(cfg, &sc.args[0], own(&sc).as_ref(), diags);
    }
    judged.report(
        cfg,
        diags,
        "SECURITY VIOLATION - check scripts are being executed but script_security not enabled.",
    );
}

/// keepalived's parent audit of `startup_script` and `shutdown_script`
/// (it runs them itself, whatever else the config holds).
pub(super) fn start_stop_scripts(cfg: &Config, diags: &mut Diagnostics) {
    let mut judged = Judged::default();
    let mut scratch = Diagnostics::default();
    let g = &cfg.global_defs;
    for s in [&g.startup_script, &g.shutdown_script]
        .into_iter()
        .flatten()
    {
        let user = s.user.clone().map(|u| (u, s.group.clone()));
        judged.keep(cfg, &s.args[0], user.as_ref(), &mut scratch);
    }
    judged.report(
        cfg,
        diags,
        "SECURITY VIOLATION - start/shutdown scripts are being executed but script_security not enabled.",
    );
}

/// The VRRP process's audit: every `vrrp_script`'s script (tracked or
/// not), the instances' and sync groups' notify scripts and the global
/// FIFO scripts, judged when there is a `vrrp_instance` (else keepalived
/// starts no VRRP process). Its own message: "scripts", not "check
/// scripts". Nothing is removed here: VRRP does not run yet.
pub(super) fn vrrp_scripts(cfg: &Config, dropped: &VrrpDropped, diags: &mut Diagnostics) {
    if !cfg
        .other_blocks
        .iter()
        .any(|b| b.keyword == "vrrp_instance")
    {
        return;
    }
    let mut judged = Judged::default();
    let mut scratch = Diagnostics::default();
    // `KEYWORD "CMD ARGS" [USER [GROUP]]`: the command's first word.
    let command = |args: &[String]| -> Option<String> {
        args.first()
            .and_then(|a| a.split_whitespace().next())
            .map(str::to_string)
    };
    let user_of = |args: &[String]| -> Option<UserGroup> {
        args.first().map(|u| (u.clone(), args.get(1).cloned()))
    };
    for b in &cfg.other_blocks {
        match b.keyword.as_str() {
            "vrrp_script"
                if dropped
                    .names
                    .contains(&b.args.first().cloned().unwrap_or_default()) => {}
            "vrrp_script" => {
                let script = b.settings.iter().rev().find(|s| s.keyword == "script");
                let user = b
                    .settings
                    .iter()
                    .rev()
                    .find(|s| s.keyword == "user")
                    .and_then(|s| user_of(&s.args));
                if let Some(cmd) = script.and_then(|s| command(&s.args)) {
                    judged.keep(cfg, &cmd, user.as_ref(), &mut scratch);
                }
            }
            "vrrp_instance" | "vrrp_sync_group" => {
                for s in &b.settings {
                    if !is_notify(&s.keyword) || dropped.lines.contains(&s.line) {
                        continue;
                    }
                    if let Some(cmd) = command(&s.args) {
                        judged.keep(cfg, &cmd, user_of(&s.args[1..]).as_ref(), &mut scratch);
                    }
                }
            }
            _ => {}
        }
    }
    let own = |s: &Script| s.user.clone().map(|u| (u, s.group.clone()));
    if let Some(sc) = &cfg.global_defs.notify_fifo_script {
        judged.keep(cfg, &sc.args[0], own(sc).as_ref(), &mut scratch);
    }
    for s in cfg
        .global_defs
        .other
        .iter()
        .filter(|s| s.keyword == "vrrp_notify_fifo_script")
    {
        if let Some(cmd) = command(&s.args) {
            judged.keep(cfg, &cmd, user_of(&s.args[1..]).as_ref(), &mut scratch);
        }
    }
    judged.report(
        cfg,
        diags,
        "SECURITY VIOLATION - scripts are being executed but script_security not enabled.",
    );
}

fn is_notify(keyword: &str) -> bool {
    keyword.starts_with("notify") && keyword != "notify_priority_changes"
}

/// The VRRP scripts keepalived's VRRP parse drops for their users.
#[derive(Debug, Default)]
pub(super) struct VrrpDropped {
    /// `vrrp_script` blocks removed, by name.
    pub names: HashSet<String>,
    /// Lines of notify scripts dropped.
    pub lines: HashSet<usize>,
}

/// The VRRP process's own parse resolves script users as the checker's
/// does, separately: a `vrrp_script`'s `user` that cannot be set removes
/// it; a script without a user takes the default, resolved once at the
/// first script that needs it — with `enable_script_security`, no
/// `script_user` and no `keepalived_script` user, that fails, once with
/// its line, and removes every `vrrp_script` (each with its line) and
/// notify script that needed it.
pub(super) fn vrrp_script_users(
    cfg: &Config,
    diags: &mut Diagnostics,
    file: &Arc<str>,
) -> VrrpDropped {
    let mut dropped = VrrpDropped::default();
    // None: not resolved yet; Some(ok).
    let mut default: Option<bool> =
        cfg.default_user_ok
            .or(cfg.global_defs.script_user.as_ref().map(|_| true));
    let at = |line| Pos {
        file: file.clone(),
        line,
    };
    let mut need_default = |line: usize, diags: &mut Diagnostics| -> bool {
        *default.get_or_insert_with(|| {
            let ok = matches!(
                nix::unistd::User::from_name("keepalived_script"),
                Ok(Some(_))
            ) || !cfg.global_defs.enable_script_security;
            if !ok {
                diags.report(
                    &at(line),
                    ErrClass::GeneralError,
                    "Unable to set default user keepalived_script for script",
                );
            }
            ok
        })
    };
    for s in &cfg.global_defs.other {
        if s.keyword == "vrrp_notify_fifo_script" && s.args.len() < 2 {
            need_default(s.line, diags);
        }
    }
    for b in &cfg.other_blocks {
        match b.keyword.as_str() {
            "vrrp_script" => {
                let name = b.args.first().cloned().unwrap_or_default();
                let Some(script) = b.settings.iter().rev().find(|s| s.keyword == "script") else {
                    continue;
                };
                let mut removed = false;
                let mut user_set = false;
                for u in b.settings.iter().filter(|s| s.keyword == "user") {
                    if u.args.is_empty() {
                        // keepalived's parse stops at a missing parameter.
                        diags.push(
                            &at(u.line),
                            ErrClass::MissingParameter,
                            "*** Configuration line starting `user` is missing a parameter after keyword `user` at word position 2".to_string(),
                            None,
                            None,
                        );
                        diags.missing_parameter = true;
                        removed = true;
                        continue;
                    }
                    let ok = u.args.first().is_some_and(|n| {
                        crate::config::parser::user_exists(n, u.args.get(1).map(String::as_str))
                    });
                    if ok {
                        (removed, user_set) = (false, true);
                    } else {
                        let cmd: Vec<String> = script
                            .args
                            .first()
                            .map(|a| a.split_whitespace().map(|w| format!("'{w}'")).collect())
                            .unwrap_or_default();
                        diags.report(
                            &at(u.line),
                            ErrClass::GeneralError,
                            format!("Unable to set uid/gid for script {}", cmd.join(" ")),
                        );
                        removed = true;
                    }
                }
                if !removed && !user_set && !need_default(b.end_line, diags) {
                    diags.report(
                        &at(b.end_line),
                        ErrClass::GeneralError,
                        format!("Unable to set default user for vrrp script {name} - removing"),
                    );
                    removed = true;
                }
                if removed {
                    dropped.names.insert(name);
                }
            }
            "vrrp_instance" | "vrrp_sync_group" => {
                for s in b.settings.iter().filter(|s| is_notify(&s.keyword)) {
                    if s.args.len() < 2 && !need_default(s.line, diags) {
                        dropped.lines.insert(s.line);
                    }
                }
            }
            _ => {}
        }
    }
    dropped
}
