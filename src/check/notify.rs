//! What the checker tells the world when a real server or a quorum
//! changes: keepalived's log lines, the `notify_up`/`notify_down` and
//! `quorum_up`/`quorum_down` scripts, and lines on the notify FIFO
//! (`ipwrapper.c`: `perform_svr_state()`, `do_rs_notifies()`,
//! `do_vs_notifies()`, `notify_fifo_rs/vs()`).
//!
//! I/O shell after the pure [`crate::health::Tracker`]: it receives the
//! effects of a change, after the state is updated.

use super::engine::{format_rs, script_identity};
use crate::config::model::{Config, RealServer, Script, VirtualServer, VsAddress};
use crate::config::validate::format_vs;
use crate::health::{Effect, Health, Transition};
use crate::services::fifo::{open_fifo, start_fifo_script};
use crate::services::scripts::{secured, ScriptSpec, Scripts};
use crate::services::smtp_alert::{Alert, Alerter};
use std::collections::HashMap;
use std::io::Write;
use std::net::IpAddr;
use std::time::Duration;

/// How long a notify script may run; keepalived does not wait for them at
/// all, we reap them, and cut only a script that runs for a day.
const SCRIPT_LIMIT: Duration = Duration::from_secs(86_400);
/// Shutdown notifiers get one second (`omega`).
const SHUTDOWN_LIMIT: Duration = Duration::from_secs(1);

/// `Gained quorum q+h=t <= w` (keepalived's log line and alert body).
pub fn gained_quorum(vs: &VirtualServer, weight_sum: u64) -> String {
    let (q, h) = (u64::from(vs.quorum), u64::from(vs.hysteresis));
    format!("Gained quorum {q}+{h}={} <= {weight_sum}", q + h)
}

/// `q-h=t > w`, after "Lost quorum" or "Starting with quorum down".
pub fn quorum_down_figures(vs: &VirtualServer, weight_sum: u64) -> String {
    let (q, h) = (i64::from(vs.quorum), i64::from(vs.hysteresis));
    format!("{q}-{h}={} > {weight_sum}", q - h)
}

/// keepalived's startup lines: quorum state per virtual server (not for
/// those a reload `kept`, whose quorum carries on) and one "Activating
/// healthchecker" per checked real server.
pub fn log_startup(
    cfg: &Config,
    checked: impl Fn(usize, usize) -> bool,
    health: &Health,
    kept: impl Fn(&VirtualServer) -> bool,
) {
    for (vi, vs) in cfg.virtual_servers.iter().enumerate() {
        let w = health.vs[vi].live_weight();
        let fresh = !kept(vs);
        if fresh && health.vs[vi].quorum_up {
            log::info!("{} for VS {}", gained_quorum(vs, w), format_vs(vs));
        } else if fresh && vs.sorry_server.is_some() {
            log::info!(
                "Starting with quorum down {} for VS {}",
                quorum_down_figures(vs, w),
                format_vs(vs)
            );
        }
        for (ri, rs) in vs.real_servers.iter().enumerate() {
            if checked(vi, ri) {
                log::info!(
                    "Activating healthchecker for service {} for VS {}",
                    format_rs(rs, vs),
                    format_vs(vs)
                );
            }
        }
    }
}

/// Sends notifications.
pub struct Notifier {
    scripts: Scripts,
    alerter: Option<Alerter>,
    fifos: Vec<OpenFifo>,
    /// Each notify script's identity and secured argv, resolved at its
    /// first run and kept for the configuration's life (keepalived checks
    /// its scripts once, at load; a flapping server must not re-stat them).
    resolved: HashMap<ScriptKey, Option<ScriptSpec>>,
}

/// A configured script: argv, user, group.
type ScriptKey = (Vec<String>, Option<String>, Option<String>);

/// A notify FIFO the checker writes to, with its script.
struct OpenFifo {
    file: std::fs::File,
    path: String,
    /// We made it, so we remove it at close (`fifo_close()`).
    created: bool,
    script: Option<tokio::process::Child>,
}

/// Whether a real server sends alerts: its own `smtp_alert`, else its
/// virtual server's, else `smtp_alert_checker`, else `smtp_alert`.
pub fn rs_alerts(cfg: &Config, vs: &VirtualServer, rs: &RealServer) -> bool {
    rs.seldom
        .smtp_alert
        .or(vs.smtp_alert)
        .or(cfg.global_defs.smtp_alert_checker)
        .or(cfg.global_defs.smtp_alert)
        .unwrap_or(false)
}

/// Whether a virtual server sends quorum alerts.
pub fn vs_alerts(cfg: &Config, vs: &VirtualServer) -> bool {
    vs.smtp_alert
        .or(cfg.global_defs.smtp_alert_checker)
        .or(cfg.global_defs.smtp_alert)
        .unwrap_or(false)
}

/// The alert for a real server entering (`up`) or leaving the pool.
pub fn rs_alert(a: &Alerter, rs: &RealServer, vs: &VirtualServer, up: bool) -> Alert {
    a.alert(
        &format!(
            "Realserver {} of virtual server {}",
            format_rs(rs, vs),
            format_vs(vs)
        ),
        if up { "UP" } else { "DOWN" },
        if up {
            "=> CHECK succeed on service <="
        } else {
            "=> CHECK failed on service <="
        },
    )
}

/// The alert for a virtual server's quorum.
pub fn vs_alert(a: &Alerter, vs: &VirtualServer, up: bool, weight_sum: u64) -> Alert {
    a.alert(
        &format!("Virtualserver {}", format_vs(vs)),
        if up { "UP" } else { "DOWN" },
        if up {
            format!("=> {} <=", gained_quorum(vs, weight_sum))
        } else {
            format!("=> Lost quorum {} <=", quorum_down_figures(vs, weight_sum))
        },
    )
}

impl Notifier {
    /// Opens the checker's FIFOs (`notify_fifo` and `lvs_notify_fifo`, as
    /// keepalived's checker opens both) and starts their scripts.
    pub fn new(cfg: &Config, scripts: Scripts) -> Notifier {
        let g = &cfg.global_defs;
        let mut fifos = Vec::new();
        for (f, script) in [
            (&g.notify_fifo, &g.notify_fifo_script),
            (&g.lvs_notify_fifo, &g.lvs_notify_fifo_script),
        ] {
            let Some(f) = f else { continue };
            match open_fifo(f) {
                Ok((file, created)) => fifos.push(OpenFifo {
                    file,
                    path: f.path.clone(),
                    created,
                    script: script
                        .as_ref()
                        .and_then(|s| start_fifo_script(cfg, s, &f.path)),
                }),
                Err(e) => log::error!("cannot open notify FIFO {}: {e}", f.path),
            }
        }
        Notifier {
            scripts,
            alerter: Alerter::new(cfg),
            fifos,
            resolved: HashMap::new(),
        }
    }

    fn fifo_line(&mut self, line: String) {
        // keepalived writes the terminating NUL too.
        let mut b = line.into_bytes();
        b.push(0);
        for f in &mut self.fifos {
            if let Err(e) = f.file.write_all(&b) {
                log::warn!("notify FIFO {}: {e}", f.path);
            }
        }
    }

    fn script(&mut self, cfg: &Config, s: &Script, limit: Duration) {
        let key = (s.args.clone(), s.user.clone(), s.group.clone());
        let spec = self
            .resolved
            .entry(key)
            .or_insert_with(|| {
                let user = s.user.clone().map(|u| (u, s.group.clone()));
                let run_as = match script_identity(cfg, user.as_ref()) {
                    Ok(r) => r,
                    Err(e) => {
                        log::error!("script {}: {e}", s.args.first().map_or("", |a| a));
                        return None;
                    }
                };
                let argv = secured(cfg, &s.args, run_as)?;
                Some(ScriptSpec { argv, run_as })
            })
            .clone();
        let Some(spec) = spec else {
            return;
        };
        let scripts = self.scripts.clone();
        tokio::spawn(async move {
            if let Err(e) = scripts.run(&spec, limit).await {
                log::warn!("notify script {}: {e}", spec.argv.join(" "));
            }
        });
    }

    fn rs_alert(&self, cfg: &Config, vs: &VirtualServer, rsi: usize, up: bool) {
        let rs = &vs.real_servers[rsi];
        if let Some(a) = self.alerter.as_ref().filter(|_| rs_alerts(cfg, vs, rs)) {
            a.send(rs_alert(a, rs, vs, up));
        }
    }

    fn vs_alert(&self, cfg: &Config, vs: &VirtualServer, up: bool, weight_sum: u64) {
        if let Some(a) = self.alerter.as_ref().filter(|_| vs_alerts(cfg, vs)) {
            a.send(vs_alert(a, vs, up, weight_sum));
        }
    }

    fn rs_notify(
        &mut self,
        cfg: &Config,
        vs: &VirtualServer,
        rsi: usize,
        up: bool,
        limit: Duration,
    ) {
        let rs = &vs.real_servers[rsi];
        let script = if up {
            &rs.seldom.notify_up
        } else {
            &rs.seldom.notify_down
        };
        if let Some(s) = script {
            self.script(cfg, s, limit);
        }
        self.fifo_line(format!(
            "RS {} {} {}\n",
            format_rs(rs, vs),
            format_vs(vs),
            if up { "UP" } else { "DOWN" }
        ));
    }

    fn vs_notify(&mut self, cfg: &Config, vs: &VirtualServer, up: bool, limit: Duration) {
        let script = if up { &vs.quorum_up } else { &vs.quorum_down };
        if let Some(s) = script {
            log::info!("Executing [{}] for VS {}", s.args.join(" "), format_vs(vs));
            self.script(cfg, s, limit);
        }
        self.fifo_line(format!(
            "VS {} {}\n",
            format_vs(vs),
            if up { "UP" } else { "DOWN" }
        ));
    }

    /// Logs and notifies what a change did; `health` is the state after it.
    pub fn effects(&mut self, cfg: &Config, health: &Health, effects: &[Effect]) {
        for e in effects {
            match *e {
                Effect::Transition(
                    t @ (Transition::RsUp { vs, rs } | Transition::RsDown { vs, rs }),
                ) => {
                    let up = matches!(t, Transition::RsUp { .. });
                    let v = &cfg.virtual_servers[vs];
                    let inhibit = v.real_servers[rs].inhibit();
                    let (verb, prep) = match (up, inhibit) {
                        (true, false) => ("Adding", "to"),
                        (true, true) => ("Enabling", "of"),
                        (false, false) => ("Removing", "from"),
                        (false, true) => ("Disabling", "of"),
                    };
                    log::info!(
                        "{verb} service {} {prep} VS {}",
                        format_rs(&v.real_servers[rs], v),
                        format_vs(v)
                    );
                    self.rs_notify(cfg, v, rs, up, SCRIPT_LIMIT);
                    self.rs_alert(cfg, v, rs, up);
                }
                Effect::ConfirmedDown { vs, rs } => {
                    let v = &cfg.virtual_servers[vs];
                    self.rs_notify(cfg, v, rs, false, SCRIPT_LIMIT);
                }
                Effect::Transition(Transition::QuorumGained { vs, weight_sum }) => {
                    let v = &cfg.virtual_servers[vs];
                    log::info!("{} for VS {}", gained_quorum(v, weight_sum), format_vs(v));
                    if let Some(s) = &v.sorry_server {
                        log::info!(
                            "{} sorry server [{}]:{} from VS {}",
                            if s.inhibit { "Disabling" } else { "Removing" },
                            s.ip,
                            s.port,
                            format_vs(v)
                        );
                    }
                    self.vs_notify(cfg, v, true, SCRIPT_LIMIT);
                    self.vs_alert(cfg, v, true, weight_sum);
                }
                Effect::Transition(Transition::QuorumLost { vs, weight_sum }) => {
                    let v = &cfg.virtual_servers[vs];
                    log::info!(
                        "Lost quorum {} for VS {}",
                        quorum_down_figures(v, weight_sum),
                        format_vs(v)
                    );
                    if let Some(s) = &v.sorry_server {
                        log::info!(
                            "{} sorry server [{}]:{} to VS {}",
                            if s.inhibit { "Enabling" } else { "Adding" },
                            s.ip,
                            s.port,
                            format_vs(v)
                        );
                    }
                    self.vs_notify(cfg, v, false, SCRIPT_LIMIT);
                    self.vs_alert(cfg, v, false, weight_sum);
                }
                Effect::Weight { vs, rs, from, to } => {
                    let v = &cfg.virtual_servers[vs];
                    let alive = health.vs[vs].rs[rs].alive;
                    log::info!(
                        "Changing weight from {from} to {to} for {}active service {} of VS {}",
                        if alive { "" } else { "in" },
                        format_rs(&v.real_servers[rs], v),
                        format_vs(v)
                    );
                }
            }
        }
    }

    /// A reload removed virtual or real servers (§6.8, `clear_service_vs()`,
    /// `clear_service_rs(..., false)`): the live ones get their down
    /// notifications whatever `omega` says, as the servers still exist.
    pub fn removed_by_reload(&mut self, old: &Config, health: &Health, new: &Config) {
        let new_vs: HashMap<String, &VirtualServer> = new
            .virtual_servers
            .iter()
            .map(|v| (format_vs(v), v))
            .collect();
        for (vi, v) in old.virtual_servers.iter().enumerate() {
            let Some(h) = health.vs.get(vi) else { continue };
            let name = format_vs(v);
            let kept = new_vs.get(&name);
            if kept.is_none() {
                match &v.address {
                    VsAddress::Group { name } => {
                        log::info!("Removing Virtual Server Group [{name}]")
                    }
                    _ => log::info!("Removing Virtual Server {name}"),
                }
            }
            // The same servers in the same order (most reloads): nothing
            // removed, found without hashing any.
            if kept.is_some_and(|k| {
                k.real_servers.len() == v.real_servers.len()
                    && k.real_servers
                        .iter()
                        .zip(&v.real_servers)
                        .all(|(a, b)| (a.ip, a.port) == (b.ip, b.port))
            }) {
                continue;
            }
            // A set, not a scan per server: a virtual server of thousands
            // of real servers made the reload quadratic.
            let kept_rs: crate::health::FxSet<(IpAddr, u16)> = kept
                .map(|k| k.real_servers.iter().map(|r| (r.ip, r.port)).collect())
                .unwrap_or_default();
            for (ri, rs) in v.real_servers.iter().enumerate() {
                let still = kept_rs.contains(&(rs.ip, rs.port));
                if still {
                    continue;
                }
                if kept.is_some() {
                    log::info!("service {} no longer exist", format_rs(rs, v));
                }
                if h.rs.get(ri).is_some_and(|r| r.alive) {
                    log::info!("Removing service {} from VS {name}", format_rs(rs, v));
                    self.rs_notify(old, v, ri, false, SCRIPT_LIMIT);
                }
            }
            if kept.is_none() && h.quorum_up {
                self.vs_notify(old, v, false, SCRIPT_LIMIT);
            }
        }
    }

    /// `rs_init_notifies`: the live real servers' notify_up at start.
    pub fn init_notifies(&mut self, cfg: &Config, health: &Health) {
        for (vi, v) in cfg.virtual_servers.iter().enumerate() {
            for ri in 0..v.real_servers.len() {
                if health.vs[vi].rs[ri].alive {
                    self.rs_notify(cfg, v, ri, true, SCRIPT_LIMIT);
                }
            }
        }
    }

    /// At shutdown: for virtual servers with `omega`, the live real
    /// servers' notify_down and the quorum_down, with a 1 s limit.
    pub fn shutdown(&mut self, cfg: &Config, health: &Health) {
        for (vi, v) in cfg.virtual_servers.iter().enumerate() {
            if !v.omega {
                continue;
            }
            for ri in 0..v.real_servers.len() {
                if health.vs[vi].rs[ri].alive {
                    self.rs_notify(cfg, v, ri, false, SHUTDOWN_LIMIT);
                }
            }
            if health.vs[vi].quorum_up {
                self.vs_notify(cfg, v, false, SHUTDOWN_LIMIT);
            }
        }
    }

    /// Stops the FIFO scripts and removes the FIFOs we made.
    pub async fn close(self) {
        for mut f in self.fifos {
            if let Some(mut c) = f.script.take() {
                // The script's whole group: nothing it started outlives it.
                if let Some(pid) = c.id() {
                    let _ = nix::sys::signal::killpg(
                        nix::unistd::Pid::from_raw(pid as i32),
                        nix::sys::signal::Signal::SIGKILL,
                    );
                }
                let _ = c.wait().await;
            }
            if f.created {
                let _ = std::fs::remove_file(&f.path);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::engine::{plan, PlanOptions};
    use crate::config::load_str;
    use crate::health::{Change, Event, Tracker};
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;

    fn tmp(tag: &str) -> std::path::PathBuf {
        let d = std::env::temp_dir().join(format!("krs-notify-{tag}-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    fn script(dir: &std::path::Path, name: &str) -> String {
        use std::os::unix::fs::PermissionsExt;
        let p = dir.join(name);
        std::fs::write(
            &p,
            format!("#!/bin/sh\necho \"$@\" >> {}/{name}.out\n", dir.display()),
        )
        .unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        p.display().to_string()
    }

    async fn wait_for(path: &std::path::Path, want: &str) -> String {
        for _ in 0..100 {
            let s = std::fs::read_to_string(path).unwrap_or_default();
            if s.contains(want) {
                return s;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("{} never got {want:?}", path.display());
    }

    #[tokio::test]
    async fn fifo_lines_and_scripts_follow_the_transitions() {
        let d = tmp("fifo");
        let fifo = d.join("fifo");
        let (up, down, qup, qdown) = (
            script(&d, "up"),
            script(&d, "down"),
            script(&d, "qup"),
            script(&d, "qdown"),
        );
        // Scripts run as whoever runs the tests.
        let me = nix::unistd::User::from_uid(nix::unistd::getuid())
            .unwrap()
            .unwrap()
            .name;
        let text = format!(
            "global_defs {{\n enable_script_security\n script_user {me}\n rs_init_notifies\n \
             lvs_notify_fifo {fifo}\n}}\n\
             virtual_server 10.0.0.1 80 {{\n lb_algo rr\n lb_kind NAT\n protocol TCP\n omega\n \
             quorum_up \"{qup} q\"\n quorum_down \"{qdown} q\"\n \
             real_server 127.0.0.1 8080 {{\n notify_up \"{up} rs\"\n notify_down \"{down} rs\"\n TCP_CHECK {{\n }}\n }}\n}}\n",
            fifo = fifo.display()
        );
        let l = load_str(&text);
        assert!(
            l.diagnostics.items().is_empty(),
            "{:?}",
            l.diagnostics.items()
        );
        let cfg = l.config;
        let (p, _) = plan(&cfg, &PlanOptions::default());
        let (mut tracker, mut health) = Tracker::start(&cfg, &p);
        let mut n = Notifier::new(&cfg, Scripts::new(4));
        // Our own read end, opened after the notifier made the FIFO.
        let mut reader = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(nix::libc::O_NONBLOCK)
            .open(&fifo)
            .unwrap();
        n.init_notifies(&cfg, &health);
        wait_for(&d.join("up.out"), "rs").await;
        let ev = |change| Event {
            check: 0,
            change,
            reason: String::new(),
        };
        let effects = tracker.apply(&cfg, &p, &mut health, &ev(Change::Down));
        n.effects(&cfg, &health, &effects);
        wait_for(&d.join("down.out"), "rs").await;
        wait_for(&d.join("qdown.out"), "q").await;
        let effects = tracker.apply(&cfg, &p, &mut health, &ev(Change::Up));
        n.effects(&cfg, &health, &effects);
        wait_for(&d.join("qup.out"), "q").await;
        // omega: at shutdown the live server's notify_down and quorum_down.
        n.shutdown(&cfg, &health);
        let downs = wait_for(&d.join("down.out"), "rs\nrs").await;
        assert_eq!(downs, "rs\nrs\n");
        let mut got = Vec::new();
        let _ = reader.read_to_end(&mut got);
        let rs = "RS [127.0.0.1]:tcp:8080 [10.0.0.1]:tcp:80";
        let vs = "VS [10.0.0.1]:tcp:80";
        let want = format!(
            "{rs} UP\n\0{rs} DOWN\n\0{vs} DOWN\n\0{rs} UP\n\0{vs} UP\n\0{rs} DOWN\n\0{vs} DOWN\n\0"
        );
        assert_eq!(String::from_utf8_lossy(&got), want);
        n.close().await;
        std::fs::remove_dir_all(&d).unwrap();
    }
}
