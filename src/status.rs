//! What the checker sees, for operators: the status document served on the
//! status socket (`keepalived --status`), its table for humans, and the
//! transition records behind the structured log line.
//!
//! Beside the pipeline, read-only: built from the configuration, the live
//! health, each check's status (the engine's [`Board`]) and the table the
//! reconciler believes the kernel holds. Pure: the daemon passes the
//! state in and serves the text ([`crate::control`] does the I/O).
//!
//! States use words operators know from cloud load balancers:
//! `initialising` (no result yet), `healthy`, `retrying` (failing, still in
//! the pool), `unhealthy`, `recovering` (passing, not yet back),
//! `not checked` (no checker: always in). `disabled` (ha_suspend) needs
//! address monitoring, which is not built yet. Beside them, the seeds'
//! (cloud load balancers') words as `health_status`: `not enabled`,
//! `initialising`, `healthy`, `unhealthy`, `unused`, and `no target` for a
//! virtual server without real servers.

use crate::check::engine::{Board, CheckStatus, Plan};
use crate::config::model::Config;
use crate::config::validate::format_vs;
use crate::health::{real_weight, Health, Tracker};
use crate::ipvs::Table;
use crate::lvs::desired::kernel_weights;
use serde::Serialize;
use serde_json::{json, Value};
use std::collections::VecDeque;
use std::fmt::Write as _;
use std::time::{SystemTime, UNIX_EPOCH};

/// How many transitions the status document keeps.
pub const TRANSITIONS_KEPT: usize = 200;

/// One checker transition.
#[derive(Debug, Clone, Serialize)]
pub struct TransitionRecord {
    /// Unix time, seconds.
    pub at: f64,
    /// Virtual server, as keepalived names it.
    pub vs: String,
    /// Real server, as keepalived names it.
    pub rs: String,
    /// Checker type.
    pub checker: &'static str,
    /// State before.
    pub from: &'static str,
    /// State after.
    pub to: &'static str,
    /// Why, in words.
    pub reason: String,
}

impl TransitionRecord {
    /// The structured log line: `transition {json}`.
    pub fn log_line(&self) -> String {
        format!(
            "transition {}",
            serde_json::to_string(self).unwrap_or_default()
        )
    }
}

/// Counters of the daemon's life, kept across reloads.
#[derive(Debug, Clone, Default)]
pub struct Counters {
    /// When the daemon started (Unix seconds).
    pub started: f64,
    /// Real-server transitions to up.
    pub rs_up: u64,
    /// Real-server transitions to down.
    pub rs_down: u64,
    /// IPVS operations the kernel accepted.
    pub ipvs_ok: u64,
    /// IPVS operations the kernel refused.
    pub ipvs_errors: u64,
    /// Reloads applied.
    pub reloads: u64,
    /// Reloads refused (the new file had errors).
    pub reloads_refused: u64,
    /// Duration of the last reload, seconds.
    pub last_reload_seconds: f64,
    /// Sum of the reloads' durations, seconds.
    pub reload_seconds_total: f64,
    /// Last time the event loop went round (Unix seconds): a stalled loop
    /// shows as a timestamp that stops moving.
    pub heartbeat: f64,
    /// The latest transitions, oldest first.
    pub transitions: VecDeque<TransitionRecord>,
}

impl Counters {
    /// Counts a programming's operations.
    pub fn ipvs(&mut self, r: &crate::lvs::reconcile::Report) {
        let errors = r.errors.len() as u64;
        self.ipvs_ok += (r.sent as u64).saturating_sub(errors);
        self.ipvs_errors += errors;
    }

    /// Records a transition and logs its structured line.
    pub fn transition(&mut self, t: TransitionRecord) {
        log::info!("{}", t.log_line());
        if self.transitions.len() == TRANSITIONS_KEPT {
            self.transitions.pop_front();
        }
        self.transitions.push_back(t);
    }
}

/// Unix time now, seconds.
pub fn unix_now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

/// Everything the document is made of.
pub struct View<'a> {
    /// The running configuration.
    pub cfg: &'a Config,
    /// Its checks.
    pub plan: &'a Plan,
    /// Checker states per real server.
    pub tracker: &'a Tracker,
    /// Alive, weights, quorum.
    pub health: &'a Health,
    /// Each check's status.
    pub board: &'a Board,
    /// The table the kernel holds (as last programmed and checked).
    pub kernel: &'a Table,
    /// Daemon counters.
    pub counters: &'a Counters,
    /// The clock the checks' `next_run` is on.
    pub now: tokio::time::Instant,
    /// The configuration file.
    pub config_file: &'a str,
    /// A dry run (no kernel).
    pub dry_run: bool,
}

/// A checker's state word.
pub fn checker_state(up: bool, st: &CheckStatus) -> &'static str {
    if !st.now.state.has_run && st.last.is_none() {
        return "initialising";
    }
    match (up, st.failures > 0, st.successes > 0) {
        (true, true, _) => "retrying",
        (true, false, _) => "healthy",
        (false, _, true) => "recovering",
        (false, _, false) => "unhealthy",
    }
}

/// A real server's state word from its checkers'.
pub fn rs_state(alive: bool, checkers: &[&'static str]) -> &'static str {
    if checkers.is_empty() {
        return "not checked";
    }
    let any = |w: &str| checkers.contains(&w);
    if !alive {
        if any("recovering") {
            "recovering"
        } else if any("initialising") && !any("unhealthy") {
            "initialising"
        } else {
            "unhealthy"
        }
    } else if any("retrying") {
        "retrying"
    } else if any("initialising") {
        "initialising"
    } else {
        "healthy"
    }
}

/// The table's window: how soon failures would take the checker out
/// (`out 3.0s`), or successes put it back (`back 9.0s`).
fn window_words(c: &Value) -> String {
    if let Some(f) = c["failure_window_s"].as_f64() {
        format!("out {f:.1}s")
    } else if let Some(r) = c["recovery_window_s"].as_f64() {
        format!("back {r:.1}s")
    } else {
        "-".to_string()
    }
}

/// Until the next run, then the runs still needed, each taking its
/// timeout at most.
fn from_now(st: &CheckStatus, now: tokio::time::Instant, window: std::time::Duration) -> f64 {
    let next = st
        .next_run
        .map(|t| t.saturating_duration_since(now))
        .unwrap_or_default();
    (next + window).as_secs_f64()
}

/// For a checker that is up: how long from now failures would take to
/// take it out (the failures it still needs, `fast_interval` or
/// `delay_before_retry` apart). None while it is down.
pub fn failure_window(
    c: &crate::check::plan::Planned,
    st: &CheckStatus,
    up: bool,
    now: tokio::time::Instant,
) -> Option<f64> {
    if !up {
        return None;
    }
    let t = &c.timing;
    let remaining = (t.retry + 1).saturating_sub(st.now.state.retry_it).max(1);
    Some(from_now(st, now, t.window(remaining, t.failing_interval())))
}

/// For a checker that is down: how long from now successes would take to
/// put it back (those it still needs for `healthy_threshold`,
/// `fast_interval` or `delay_loop` apart). None while it is up.
pub fn recovery_window(
    c: &crate::check::plan::Planned,
    st: &CheckStatus,
    up: bool,
    now: tokio::time::Instant,
) -> Option<f64> {
    if up {
        return None;
    }
    let t = &c.timing;
    let remaining = u32::from(t.rise.saturating_sub(st.now.state.rise_it).max(1));
    Some(from_now(
        st,
        now,
        t.window(remaining, t.recovering_interval()),
    ))
}

/// The cloud load balancers' word for a real server (the seeds' target
/// health), from its state word and its weight in the kernel: `not
/// enabled` (no checker), `initialising`, `healthy`, `unhealthy`, `unused`
/// (in the table at weight 0: no new connections).
pub fn seed_state(state: &str, kernel_weight: Option<u32>) -> &'static str {
    match state {
        "not checked" if kernel_weight == Some(0) => "unused",
        "not checked" => "not enabled",
        "initialising" => "initialising",
        "healthy" | "retrying" if kernel_weight == Some(0) => "unused",
        "healthy" | "retrying" => "healthy",
        _ => "unhealthy",
    }
}

/// The seeds' word for a virtual server from its real servers' words:
/// `no target` without real servers, else `healthy` while one is,
/// `initialising` while one is and none is healthy, else `unhealthy`.
pub fn seed_vs_state(rs: &[&str]) -> &'static str {
    if rs.is_empty() {
        "no target"
    } else if rs.iter().any(|w| matches!(*w, "healthy" | "not enabled")) {
        "healthy"
    } else if rs.contains(&"initialising") {
        "initialising"
    } else {
        "unhealthy"
    }
}

/// The state words of real server `ri` of virtual server `vi`'s checkers.
pub fn checker_words(v: &View, vi: usize, ri: usize) -> Vec<&'static str> {
    v.plan
        .checks_of(vi, ri)
        .iter()
        .enumerate()
        .filter_map(|(n, &id)| {
            let id = id as usize;
            let sub = crate::check::engine::Subscriber {
                vs: vi,
                rs: ri,
                checker: n,
            };
            let up = v.tracker.checker_up(&sub);
            v.board.read(id, |st| checker_state(up, st))
        })
        .collect()
}

fn ms(d: std::time::Duration) -> f64 {
    (d.as_secs_f64() * 1e6).round() / 1e3
}

/// The status document.
pub fn document(v: &View) -> Value {
    let mut vss = Vec::new();
    for (vi, vs) in v.cfg.virtual_servers.iter().enumerate() {
        let Some(h) = v.health.vs.get(vi) else {
            continue;
        };
        let mut rss = Vec::new();
        let mut seeds = Vec::new();
        let in_kernel = kernel_weights(v.cfg, vi, v.kernel);
        for (ri, rs) in vs.real_servers.iter().enumerate() {
            let Some(r) = h.rs.get(ri) else { continue };
            let ids = v.plan.checks_of(vi, ri);
            let mut words = Vec::new();
            let mut checkers = Vec::new();
            for (n, &id) in ids.iter().enumerate() {
                let id = id as usize;
                let (Some(c), Some(st)) = (v.plan.checks.get(id), v.board.get(id)) else {
                    continue;
                };
                let sub = crate::check::engine::Subscriber {
                    vs: vi,
                    rs: ri,
                    checker: n,
                };
                let up = v.tracker.checker_up(&sub);
                let word = checker_state(up, &st);
                words.push(word);
                let last = st.last.as_ref();
                checkers.push(json!({
                    "type": c.kind.type_name(),
                    "state": word,
                    "up": up,
                    "consecutive_successes": st.successes,
                    "consecutive_failures": st.failures,
                    "runs": st.runs,
                    "retry": c.timing.retry,
                    "retries_counted": st.now.state.retry_it,
                    "last_result": last.map(|l| if l.ok { "success" } else { "failure" }),
                    "last_error": last.filter(|l| !l.ok).map(|l| l.error.clone()),
                    "last_latency_ms": last.map(|l| ms(l.latency)),
                    "last_run_ago_s": last.map(|l| v.now.saturating_duration_since(l.at).as_secs_f64()),
                    "next_run_in_s": st.next_run.map(|t| t.saturating_duration_since(v.now).as_secs_f64()),
                    "dynamic_weight": v.tracker.checker_weight(&sub),
                    "healthy_threshold": c.timing.rise,
                    "successes_counted": st.now.state.rise_it,
                    "failure_window_s": failure_window(c, &st, up, v.now),
                    "recovery_window_s": recovery_window(c, &st, up, v.now),
                }));
            }

            let state = rs_state(r.alive, &words);
            let kernel_weight = in_kernel.get(ri).copied().flatten();
            seeds.push(seed_state(state, kernel_weight));
            rss.push(json!({
                "name": crate::check::engine::format_rs(rs, vs),
                "address": rs.ip.to_string(),
                "port": rs.port,
                "state": state,
                "health_status": seed_state(state, kernel_weight),
                "alive": r.alive,
                "draining": r.draining,
                "slow_start_percent": (r.ramp < crate::health::RAMP_FULL).then_some(r.ramp / 10),
                "weight": rs.iweight(),
                "effective_weight": real_weight(r.effective_weight),
                "kernel_weight": in_kernel.get(ri).copied().flatten(),
                "checkers": checkers,
            }));
        }
        let open = crate::lvs::desired::fail_open(vs, h);
        let sorry_in_use = !open && vs.sorry_server.is_some() && !h.quorum_up;
        vss.push(json!({
            "name": format_vs(vs),
            "health_status": seed_vs_state(&seeds),
            "quorum": if h.quorum_up { "up" } else { "down" },
            "quorum_threshold": vs.quorum,
            "hysteresis": vs.hysteresis,
            "live_weight": h.live_weight(),
            "sorry_server": vs.sorry_server.as_ref().map(|s| format!("[{}]:{}", s.ip, s.port)),
            "sorry_server_in_use": sorry_in_use,
            "fail_open": vs.fail_open,
            "fail_open_in_force": open,
            "real_servers": rss,
        }));
    }
    let c = v.counters;
    json!({
        "daemon": daemon_section(&Daemon {
            config_file: v.config_file,
            dry_run: v.dry_run,
            started: c.started,
            reloads: c.reloads,
            reloads_refused: c.reloads_refused,
            checks: v.plan.checks.len(),
        }),
        "virtual_servers": vss,
        "transitions": c.transitions.iter().collect::<Vec<_>>(),
    })
}

/// What the `daemon` section of the status says.
pub struct Daemon<'a> {
    /// The configuration file.
    pub config_file: &'a str,
    /// `--dry-run`.
    pub dry_run: bool,
    /// Start, Unix seconds.
    pub started: f64,
    /// Reloads done.
    pub reloads: u64,
    /// Reloads refused (the file did not load).
    pub reloads_refused: u64,
    /// Checks planned (0 without a checker).
    pub checks: usize,
}

/// The `daemon` section, the same for a daemon with a checker and for a
/// VRRP-only one.
pub fn daemon_section(d: &Daemon) -> Value {
    json!({
        "version": env!("CARGO_PKG_VERSION"),
        "pid": std::process::id(),
        "config_file": d.config_file,
        "dry_run": d.dry_run,
        "uptime_s": (unix_now() - d.started).max(0.0),
        "reloads": d.reloads,
        "reloads_refused": d.reloads_refused,
        "checks": d.checks,
    })
}

fn s<'a>(v: &'a Value, k: &str) -> &'a str {
    v.get(k).and_then(Value::as_str).unwrap_or("")
}

/// The document as a table for humans (`keepalived --status`).
pub fn table(doc: &Value) -> String {
    let mut o = String::new();
    let d = &doc["daemon"];
    let _ = writeln!(
        o,
        "keepalived-rs {} pid {}, {}{}, up {:.0} s, {} reload(s)",
        s(d, "version"),
        d["pid"],
        s(d, "config_file"),
        if d["dry_run"].as_bool() == Some(true) {
            " (dry run)"
        } else {
            ""
        },
        d["uptime_s"].as_f64().unwrap_or(0.0),
        d["reloads"]
    );
    for vs in doc["virtual_servers"].as_array().into_iter().flatten() {
        let _ = writeln!(
            o,
            "\nVS {}  quorum {} (live weight {}, needs {}){}",
            s(vs, "name"),
            s(vs, "quorum"),
            vs["live_weight"],
            vs["quorum_threshold"],
            if vs["fail_open_in_force"].as_bool() == Some(true) {
                ", FAIL OPEN: every real server failed, all kept in".to_string()
            } else if vs["sorry_server_in_use"].as_bool() == Some(true) {
                format!(", sorry server {} in use", s(vs, "sorry_server"))
            } else {
                String::new()
            }
        );
        let _ = writeln!(
            o,
            "  {:<28} {:<13} {:>6} {:>6}  CHECKER       STATE        OK/FAIL  LATENCY  NEXT   WINDOW      LAST ERROR",
            "REAL SERVER", "STATE", "WEIGHT", "KERNEL"
        );
        for rs in vs["real_servers"].as_array().into_iter().flatten() {
            let kernel = rs["kernel_weight"]
                .as_u64()
                .map_or("-".to_string(), |w| w.to_string());
            let head = format!(
                "  {:<28} {:<13} {:>6} {:>6}",
                s(rs, "name"),
                s(rs, "state"),
                rs["effective_weight"].to_string(),
                kernel
            );
            let checkers = rs["checkers"].as_array().cloned().unwrap_or_default();
            if checkers.is_empty() {
                let _ = writeln!(o, "{head}");
            }
            for (i, c) in checkers.iter().enumerate() {
                let lead = if i == 0 {
                    head.clone()
                } else {
                    " ".repeat(head.len())
                };
                let _ = writeln!(
                    o,
                    "{lead}  {:<13} {:<12} {:>3}/{:<4} {:>7} {:>5}  {:<10}  {}",
                    s(c, "type"),
                    s(c, "state"),
                    c["consecutive_successes"].to_string(),
                    c["consecutive_failures"].to_string(),
                    c["last_latency_ms"]
                        .as_f64()
                        .map_or("-".to_string(), |m| format!("{m:.1}ms")),
                    c["next_run_in_s"]
                        .as_f64()
                        .map_or("-".to_string(), |n| format!("{n:.1}s")),
                    window_words(c),
                    s(c, "last_error")
                );
            }
        }
    }
    crate::vrrp::status::table(&doc["vrrp"], &mut o);
    crate::bfd::status::table(&doc["bfd"], &mut o);
    let ts = doc["transitions"].as_array().cloned().unwrap_or_default();
    if !ts.is_empty() {
        let _ = writeln!(o, "\nRecent transitions (oldest first):");
        for t in ts.iter().rev().take(20).rev() {
            let _ = writeln!(
                o,
                "  {:.3}  {} {}  {}: {} -> {}  {}",
                t["at"].as_f64().unwrap_or(0.0),
                s(t, "vs"),
                s(t, "rs"),
                s(t, "checker"),
                s(t, "from"),
                s(t, "to"),
                s(t, "reason")
            );
        }
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_seeds_words_from_ours_and_the_kernel_weight() {
        assert_eq!(seed_state("not checked", Some(1)), "not enabled");
        assert_eq!(seed_state("not checked", Some(0)), "unused");
        assert_eq!(seed_state("initialising", None), "initialising");
        assert_eq!(seed_state("retrying", Some(3)), "healthy");
        assert_eq!(seed_state("healthy", Some(0)), "unused");
        assert_eq!(seed_state("recovering", Some(0)), "unhealthy");
        assert_eq!(seed_state("unhealthy", None), "unhealthy");
        assert_eq!(seed_vs_state(&[]), "no target");
        assert_eq!(seed_vs_state(&["unhealthy", "not enabled"]), "healthy");
        assert_eq!(
            seed_vs_state(&["unhealthy", "initialising"]),
            "initialising"
        );
        assert_eq!(seed_vs_state(&["unhealthy", "unused"]), "unhealthy");
    }

    #[test]
    fn real_server_words_follow_their_checkers() {
        assert_eq!(rs_state(true, &[]), "not checked");
        assert_eq!(rs_state(true, &["healthy", "retrying"]), "retrying");
        assert_eq!(rs_state(false, &["healthy", "unhealthy"]), "unhealthy");
        assert_eq!(rs_state(false, &["recovering"]), "recovering");
        assert_eq!(rs_state(false, &["initialising"]), "initialising");
        assert_eq!(rs_state(true, &["initialising", "healthy"]), "initialising");
    }
}

/// What the subsystems publish.
#[derive(Clone, Default)]
pub struct Boards {
    /// VRRP's instances, when it runs.
    pub vrrp: Option<crate::vrrp::status::Board>,
    /// BFD's sessions, when it runs.
    pub bfd: Option<crate::bfd::status::Board>,
}

/// `doc` with what each board holds (the checker's status document too).
pub fn add_boards(doc: &mut serde_json::Value, boards: &Boards) {
    if let Some(b) = &boards.vrrp {
        let l = b.lock().map(|l| l.clone()).unwrap_or_default();
        doc["vrrp"] = serde_json::to_value(&l.instances).unwrap_or_default();
        doc["vrrp_receive"] = serde_json::to_value(l.receive).unwrap_or_default();
    }
    if let Some(b) = &boards.bfd {
        let l = b.lock().map(|l| l.clone()).unwrap_or_default();
        doc["bfd"] = serde_json::to_value(&l.sessions).unwrap_or_default();
        doc["bfd_discards"] = serde_json::to_value(l.discards).unwrap_or_default();
    }
}

/// The boards' metrics (the checker's metrics too).
pub fn board_metrics(boards: &Boards) -> String {
    let mut m = String::new();
    if let Some(b) = &boards.vrrp {
        m += &crate::vrrp::status::metrics(&b.lock().map(|l| l.clone()).unwrap_or_default());
    }
    if let Some(b) = &boards.bfd {
        m += &crate::bfd::status::metrics(&b.lock().map(|l| l.clone()).unwrap_or_default());
    }
    m
}
