//! The daemon shell: loads the configuration, opens the backend (kernel or
//! dry run), programs the table, then waits for signals and timers.
//!
//! Outermost layer of the pipeline; everything below it is driven from here.
//! It starts the checkers ([`crate::check::engine`]), programs the startup
//! table (§6.2), then turns checker reports into IPVS changes, batched per
//! wake-up. The full process behaviour (forking, pid files, syslog) is
//! issue 5.

use crate::check::engine::{self, Carry, Engine, Jitter, NetProber, Plan, PlanOptions, ProbeKind};
use crate::check::misc::{self, Scripts};
use crate::check::notify::{self, Notifier};
use crate::check::ping::PingGroupRange;
use crate::cli::Options;
use crate::config::model::{Config, LvsTimeouts};
use crate::config::{self, LoadOptions, Loaded};
use crate::control::{self, Query, Request};
use crate::health::{Change, Effect, Event, Health, RsKey, Tracker, Transition};
use crate::ipvs::dryrun::DryRun;
use crate::ipvs::netlink::IpvsHandle;
use crate::ipvs::{Backend, SyncDaemon, Timeouts};
use crate::lvs::syncd::SyncdConfig;
use crate::lvs::{desired, Reconciler};
use crate::metrics;
use crate::print;
use crate::process::Notify;
use crate::status::{self, Counters, TransitionRecord};
use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;
use tokio::signal::unix::{signal, SignalKind};
use tokio::sync::mpsc;

/// Where keepalived reads its configuration by default.
pub const DEFAULT_CONF: &str = "/etc/keepalived/keepalived.conf";

/// How often the kernel's table is dumped and compared with what was
/// programmed (keepalived never looks; see `docs/compat.md`).
pub const DRIFT_INTERVAL: Duration = Duration::from_secs(10);

fn load_options(opts: &Options) -> LoadOptions {
    LoadOptions {
        config_id: opts
            .config_id
            .clone()
            .unwrap_or_else(config::default_config_id),
        all_config: opts.all_config,
        config_test: false,
    }
}

fn config_path(opts: &Options) -> PathBuf {
    PathBuf::from(opts.use_file.clone().unwrap_or_else(|| DEFAULT_CONF.into()))
}

fn timeouts(t: Option<LvsTimeouts>) -> Option<Timeouts> {
    t.map(|t| Timeouts {
        tcp: t.tcp.unwrap_or(0),
        tcp_fin: t.tcpfin.unwrap_or(0),
        udp: t.udp.unwrap_or(0),
    })
}

/// The errors of a load, without their positions: what a reload compares
/// with the running configuration's.
fn error_set(loaded: &Loaded) -> BTreeSet<String> {
    loaded
        .diagnostics
        .items()
        .iter()
        .filter(|d| d.severity == config::diag::Severity::Error)
        .map(|d| d.message.clone())
        .collect()
}

/// Whether a reload may apply `loaded`: it must load (no missing
/// parameter, no fatal include) and bring no error the running
/// configuration did not already have. Errors the daemon started with were
/// accepted then (keepalived runs with them); a new one means the file is
/// not what the operator meant, so the running configuration stays.
fn reload_refusal(loaded: &Loaded, accepted: &BTreeSet<String>) -> Option<String> {
    if loaded.diagnostics.missing_parameter || loaded.diagnostics.fatal_include {
        return Some("it cannot be loaded".into());
    }
    let new: Vec<String> = error_set(loaded)
        .into_iter()
        .filter(|e| !accepted.contains(e))
        .collect();
    if new.is_empty() {
        None
    } else {
        Some(format!("{} new error(s): {}", new.len(), new.join("; ")))
    }
}

fn log_diagnostics(loaded: &Loaded) {
    for d in loaded.diagnostics.items() {
        match d.severity {
            config::diag::Severity::Warning => log::warn!("{d}"),
            _ => log::error!("{d}"),
        }
    }
}

/// Above this many checks per second (summed over the configured checkers)
/// the checks get one thread per core; below it one thread does them all at
/// the least CPU per check (no cross-thread wake-ups).
pub const THREADED_CHECK_RATE: f64 = 5000.0;

/// Threads for the configured check rate.
fn auto_threads(cfg: &Config) -> usize {
    let rate: f64 = cfg
        .virtual_servers
        .iter()
        .flat_map(|vs| &vs.real_servers)
        .flat_map(|rs| &rs.checkers)
        .filter_map(|c| c.common().delay_loop)
        .map(|us| 1e6 / us.max(1) as f64)
        .sum();
    if rate < THREADED_CHECK_RATE {
        1
    } else {
        std::thread::available_parallelism().map_or(2, |n| n.get().min(4))
    }
}

/// Runs the daemon until SIGTERM/SIGINT. Returns the process exit code.
pub fn run(opts: &Options, loaded: Loaded) -> ExitCode {
    // Checks spread over the machine's cores; the control loop (reports,
    // IPVS, signals) stays on the thread that blocks on it.
    let workers = match opts.checker_threads.as_deref().map(str::parse::<usize>) {
        Some(Ok(n)) if n > 0 => n,
        Some(Err(e)) => {
            log::error!("--checker-threads: {e}");
            return ExitCode::from(1);
        }
        _ => auto_threads(&loaded.config),
    };
    let built = if workers <= 1 {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
    } else {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(workers)
            .thread_name("checker")
            .enable_all()
            .build()
    };
    let rt = match built {
        Ok(rt) => rt,
        Err(e) => {
            log::error!("cannot start the event loop: {e}");
            return ExitCode::from(1);
        }
    };
    rt.block_on(run_async(opts, loaded))
}

async fn run_async(opts: &Options, loaded: Loaded) -> ExitCode {
    let path = config_path(opts);
    log_diagnostics(&loaded);
    if loaded.diagnostics.missing_parameter {
        return ExitCode::from(2);
    }
    if opts.dry_run {
        log::info!("dry run: IPVS changes are computed and logged, the kernel is not touched");
        serve(DryRun::new(), loaded, opts, &path).await
    } else {
        match IpvsHandle::open().await {
            Ok(h) => {
                let (a, b, c) = h.version;
                log::info!(
                    "IPVS: kernel IPVS {a}.{b}.{c}, connection table {}",
                    h.conn_tab_size
                );
                serve(h, loaded, opts, &path).await
            }
            Err(e) => {
                log::error!("{e}");
                log::error!("use --dry-run to run without the kernel's IPVS");
                ExitCode::from(1)
            }
        }
    }
}

/// Tables larger than this are summarised, not printed, after each change.
const SHOW_TABLE_MAX: usize = 100;

fn show_table<B: Backend>(rec: &Reconciler<B>, dry_run: bool) {
    if dry_run {
        let t = rec.expected();
        println!(
            "# dry-run IPVS table: {} service(s), {} destination(s)",
            t.services.len(),
            t.dest_count()
        );
        if t.services.len() + t.dest_count() <= SHOW_TABLE_MAX {
            print!("{}", t.save());
        }
    }
}

/// The running configuration, as queries see it.
#[derive(Clone, Copy)]
struct Running<'a> {
    cfg: &'a Config,
    opts: &'a Options,
    /// Its file.
    path: &'a Path,
    /// The errors it was accepted with (a reload's refusal rule).
    accepted: &'a BTreeSet<String>,
}

/// The running checkers of one configuration.
struct Checking {
    plan: Plan,
    tracker: Tracker,
    health: Health,
    engine: Engine,
    notifier: Notifier,
    /// Per virtual server, those sharing an IPVS service with it.
    sharing: Vec<BTreeSet<usize>>,
    _ping: Option<PingGroupRange>,
}

impl Checking {
    fn start(
        cfg: &Config,
        opts: &Options,
        tx: &mpsc::UnboundedSender<Event>,
        carry: &Carry,
    ) -> Checking {
        // init_file: tracked files are written before they are first read.
        for tf in &cfg.track_files {
            crate::check::file::init_file(tf);
        }
        let (plan, tracker, health) = plan_start(cfg, opts, carry, HashMap::new());
        let ping = plan
            .checks
            .iter()
            .any(|c| matches!(c.kind, ProbeKind::Ping(_)))
            .then(PingGroupRange::ensure);
        notify::log_startup(
            cfg,
            |vs, rs| plan.per_rs.get(&(vs, rs)).is_some_and(|&n| n > 0),
            &health,
            |vs| {
                carry
                    .quorum
                    .contains_key(&crate::config::validate::format_vs(vs))
            },
        );
        let scripts = Scripts::new(misc::DEFAULT_MAX_SCRIPTS);
        let mut notifier = Notifier::new(cfg, scripts.clone());
        if cfg.global_defs.rs_init_notifies {
            notifier.init_notifies(cfg, &health);
        }
        let prober = Arc::new(NetProber::new(scripts));
        let engine = Engine::start(&plan, prober, tx.clone(), Jitter::seeded());
        log::info!(
            "checkers: {} check(s) for {} configured checker(s)",
            plan.checks.len(),
            plan.per_rs.values().sum::<usize>()
        );
        Checking {
            plan,
            tracker,
            health,
            engine,
            notifier,
            sharing: desired::service_sharing(cfg),
            _ping: ping,
        }
    }

    /// Applies a checker report: state, logs and notifications. Returns the
    /// virtual servers whose IPVS services may have to change.
    fn apply(&mut self, cfg: &Config, ev: &Event, counters: &mut Counters) -> BTreeSet<usize> {
        let effects = self.tracker.apply(cfg, &self.plan, &mut self.health, ev);
        self.notifier.effects(cfg, &self.health, &effects);
        self.record(cfg, ev, &effects, counters);
        effects
            .iter()
            .filter_map(Effect::table_vs)
            .flat_map(|vs| self.sharing[vs].iter().copied())
            .collect()
    }

    /// The structured transition lines and counters for a report.
    fn record(&self, cfg: &Config, ev: &Event, effects: &[Effect], counters: &mut Counters) {
        for e in effects {
            match e {
                Effect::Transition(Transition::RsUp { .. }) => counters.rs_up += 1,
                Effect::Transition(Transition::RsDown { .. }) => counters.rs_down += 1,
                _ => {}
            }
        }
        let Some(c) = self.plan.checks.get(ev.check) else {
            return;
        };
        let st = self.engine.board().get(ev.check);
        let (from, to) = match ev.change {
            Change::Up => (
                match st.as_ref() {
                    Some(s) if s.runs <= 1 => "initialising",
                    Some(s) if s.successes > 1 => "recovering",
                    _ => "unhealthy",
                },
                "healthy",
            ),
            Change::Down => (
                match st.as_ref() {
                    Some(s) if s.runs <= 1 => "initialising",
                    Some(s) if s.failures > 1 => "retrying",
                    _ => "healthy",
                },
                "unhealthy",
            ),
            Change::FirstDown => ("initialising", "unhealthy"),
            Change::MiscStatus(_) | Change::FileWeight(_) => return,
        };
        let at = status::unix_now();
        for sub in &c.subscribers {
            let Some(vs) = cfg.virtual_servers.get(sub.vs) else {
                continue;
            };
            counters.transition(TransitionRecord {
                at,
                vs: crate::config::validate::format_vs(vs),
                rs: c.name.clone(),
                checker: c.kind.type_name(),
                from,
                to,
                reason: ev.reason.clone(),
            });
        }
    }

    /// Answers a status-socket or metrics query.
    fn answer<B: Backend>(
        &self,
        q: &Query,
        run: &Running,
        rec: &Reconciler<B>,
        counters: &Counters,
    ) -> String {
        let Running {
            cfg,
            opts,
            path,
            accepted,
        } = *run;
        let board = self.engine.board();
        let file = path.display().to_string();
        let view = status::View {
            cfg,
            plan: &self.plan,
            tracker: &self.tracker,
            health: &self.health,
            board: &board,
            kernel: rec.expected(),
            counters,
            now: tokio::time::Instant::now(),
            config_file: &file,
            dry_run: opts.dry_run,
        };
        match q {
            Query::Status => status::document(&view).to_string() + "\n",
            Query::Metrics => metrics::render(&view),
            Query::Plan(p) => self.preview_reload(cfg, rec, opts, p, &board, accepted),
        }
    }

    /// `--plan`: what a reload of `file` would send to the kernel now,
    /// computed as the reload computes it (carried states, startup rules
    /// for new servers), and sent nowhere.
    fn preview_reload<B: Backend>(
        &self,
        cfg: &Config,
        rec: &Reconciler<B>,
        opts: &Options,
        file: &Path,
        board: &engine::Board,
        accepted: &BTreeSet<String>,
    ) -> String {
        let loaded = config::load(file, &load_options(opts));
        // The reload's own rule: a file it would refuse is reported so.
        if let Some(why) = reload_refusal(&loaded, accepted) {
            return format!(
                "error: a reload of {} would be refused, the running configuration kept: {why}\n",
                file.display()
            );
        }
        let carry = self.tracker.carry(
            cfg,
            &self.plan,
            |id| board.get(id).map(|s| s.now),
            &self.health,
        );
        let (_, _, health) = plan_start(&loaded.config, opts, &carry, HashMap::new());
        let ops = rec.preview(&desired(&loaded.config, &health));
        let mut out = format!(
            "# a reload of {} would make {} IPVS operation(s)\n",
            file.display(),
            ops.len()
        );
        for op in ops {
            out.push_str(&format!("ipvsadm {op}\n"));
        }
        out
    }

    /// Hands over to a reload (§6.8): stops the checks, applies what they
    /// reported meanwhile, notifies what `new` removes, and returns the
    /// state to carry. Nothing of the shutdown path runs.
    async fn hand_over(
        mut self,
        cfg: &Config,
        new: &Config,
        rx: &mut mpsc::UnboundedReceiver<Event>,
        counters: &mut Counters,
    ) -> Carry {
        let board = self.engine.board();
        self.engine.halt().await;
        // A task writes its board entry before it sends, so with the tasks
        // stopped and their events applied the two agree.
        while let Ok(ev) = rx.try_recv() {
            self.apply(cfg, &ev, counters);
        }
        let Checking {
            plan,
            tracker,
            health,
            mut notifier,
            ..
        } = self;
        let carry = tracker.carry(cfg, &plan, |id| board.get(id).map(|s| s.now), &health);
        notifier.removed_by_reload(cfg, &health, new);
        notifier.close().await;
        carry
    }

    /// A virtual server kept by a reload whose quorum the new file changed
    /// (weights, quorum, servers) gets its quorum notifications.
    fn quorum_after_reload(&mut self, carry: &Carry, new: &Config) {
        let mut effects = Vec::new();
        for (vi, v) in new.virtual_servers.iter().enumerate() {
            let Some(&was) = carry.quorum.get(&crate::config::validate::format_vs(v)) else {
                continue;
            };
            let h = &self.health.vs[vi];
            let weight_sum = h.live_weight();
            match (was, h.quorum_up) {
                (false, true) => effects.push(Effect::Transition(Transition::QuorumGained {
                    vs: vi,
                    weight_sum,
                })),
                (true, false) => effects.push(Effect::Transition(Transition::QuorumLost {
                    vs: vi,
                    weight_sum,
                })),
                _ => {}
            }
        }
        self.notifier.effects(new, &self.health, &effects);
    }

    /// SIGUSR1: keepalived's `keepalived_check.data`.
    fn print_data(&self, cfg: &Config, kernel: &crate::ipvs::Table) {
        let board = self.engine.board();
        let live = print::Live {
            plan: &self.plan,
            tracker: &self.tracker,
            health: &self.health,
            board: &board,
            kernel,
        };
        match print::write(cfg, &live) {
            Ok(p) => log::info!("Printing checker data to {}", p.display()),
            Err(e) => log::error!("cannot write {}: {e}", print::data_path().display()),
        }
    }

    async fn stop(self, cfg: &Config) {
        self.engine.stop().await;
        let mut n = self.notifier;
        n.shutdown(cfg, &self.health);
        n.close().await;
    }
}

async fn serve<B: Backend>(backend: B, loaded: Loaded, opts: &Options, path: &Path) -> ExitCode {
    let mut accepted = error_set(&loaded);
    let cfg = loaded.config;
    let mut signals = match (
        signal(SignalKind::hangup()),
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
        signal(SignalKind::user_defined1()),
    ) {
        (Ok(h), Ok(t), Ok(i), Ok(u)) => (h, t, i, u),
        _ => {
            log::error!("cannot install signal handlers");
            return ExitCode::from(1);
        }
    };
    // keepalived's parent forwards these to its VRRP process only; they
    // must not kill a daemon that has none yet.
    let [mut usr2, mut stats_clear, mut json] = [
        ("SIGUSR2 (STATS)", SignalKind::user_defined2()),
        (
            "STATS_CLEAR",
            SignalKind::from_raw(nix::libc::SIGRTMAX() - 1),
        ),
        ("JSON", SignalKind::from_raw(nix::libc::SIGRTMIN() + 2)),
    ]
    .map(|(name, kind)| match signal(kind) {
        Ok(s) => Some((name, s)),
        Err(e) => {
            log::warn!("cannot handle {name}: {e}");
            None
        }
    });
    let mut cfg = cfg;
    let mut rec = Reconciler::new(backend);
    let started = std::time::Instant::now();
    let (tx, mut rx) = mpsc::unbounded_channel();
    let carry = match start_carry(&cfg, &mut rec).await {
        Ok(c) => c,
        Err(e) => {
            log::error!("{e}");
            return ExitCode::from(1);
        }
    };
    let mut checking = Checking::start(&cfg, opts, &tx, &carry);
    let table = desired(&cfg, &checking.health);
    log::debug!(
        "desired table computed in {:.3} s",
        started.elapsed().as_secs_f64()
    );
    let first = match rec
        .start(
            table,
            cfg.global_defs.lvs_flush,
            timeouts(cfg.global_defs.lvs_timeouts),
        )
        .await
    {
        Ok(r) => {
            log::info!(
                "IPVS: table programmed: {} operation(s), {} error(s), {:.3} s",
                r.sent,
                r.errors.len(),
                started.elapsed().as_secs_f64()
            );
            r
        }
        Err(e) => {
            log::error!("{e}");
            checking.stop(&cfg).await;
            return ExitCode::from(1);
        }
    };
    show_table(&rec, opts.dry_run);
    let mut counters = Counters {
        started: status::unix_now(),
        heartbeat: status::unix_now(),
        ..Counters::default()
    };
    counters.ipvs(&first);
    let (qtx, mut qrx) = mpsc::unbounded_channel::<Request>();
    let sock_path = control::socket_path(
        opts.status_socket.as_deref(),
        cfg.global_defs.status_socket.as_deref(),
    );
    let _status_socket = match control::serve_status(&sock_path, qtx.clone()) {
        Ok(s) => Some(s),
        Err(e) => {
            log::warn!(
                "status socket {}: {e} (keepalived --status will not reach this daemon)",
                sock_path.display()
            );
            None
        }
    };
    let _metrics = match cfg.global_defs.metrics_listen {
        Some(addr) => match control::serve_metrics(addr, qtx.clone()).await {
            Ok(t) => {
                log::info!("metrics: http://{addr}/metrics");
                Some(t)
            }
            Err(e) => {
                log::error!("metrics_listen {addr}: {e}");
                None
            }
        },
        None => None,
    };
    let mut heartbeat = tokio::time::interval(Duration::from_secs(1));
    let notify = Notify::from_env();
    log::info!("Startup complete");
    notify.ready();
    let mut syncds = sync_daemons(&cfg);
    start_sync_daemons(&mut rec, &syncds).await;
    let mut drift = tokio::time::interval(DRIFT_INTERVAL);
    drift.tick().await;
    loop {
        tokio::select! {
            Some(ev) = rx.recv() => {
                // Take every pending report, then program once, only the
                // services of the virtual servers that changed.
                let mut touched = checking.apply(&cfg, &ev, &mut counters);
                while let Ok(ev) = rx.try_recv() {
                    touched.extend(checking.apply(&cfg, &ev, &mut counters));
                }
                if !touched.is_empty() {
                    let partial = desired::desired_for(&cfg, &checking.health, &touched);
                    let r = rec.set_services(partial).await;
                    counters.ipvs(&r);
                    if r.sent > 0 || !r.errors.is_empty() {
                        log::debug!("IPVS: {} operation(s), {} error(s)", r.sent, r.errors.len());
                    }
                    show_table(&rec, opts.dry_run);
                }
            }
            _ = signals.0.recv() => {
                log::info!("Reloading configuration from {}", path.display());
                let reload_started = std::time::Instant::now();
                notify.reloading();
                let loaded = config::load(path, &load_options(opts));
                log::debug!("reload: configuration read in {:.3} s", reload_started.elapsed().as_secs_f64());
                log_diagnostics(&loaded);
                if let Some(why) = reload_refusal(&loaded, &accepted) {
                    log::error!(
                        "the new configuration has errors ({why}); keeping the running one"
                    );
                    counters.reloads_refused += 1;
                    notify.ready();
                    continue;
                }
                accepted = error_set(&loaded);
                let old_cfg = std::mem::replace(&mut cfg, loaded.config);
                let carry = checking.hand_over(&old_cfg, &cfg, &mut rx, &mut counters).await;
                log::debug!("reload: checkers stopped in {:.3} s", reload_started.elapsed().as_secs_f64());
                checking = Checking::start(&cfg, opts, &tx, &carry);
                checking.quorum_after_reload(&carry, &cfg);
                log::debug!("reload: checkers started in {:.3} s", reload_started.elapsed().as_secs_f64());
                let r = rec.set_desired(desired(&cfg, &checking.health)).await;
                counters.ipvs(&r);
                if let Some(t) = timeouts(cfg.global_defs.lvs_timeouts) {
                    if let Err(e) = rec.set_timeouts(t).await {
                        log::warn!("{e}");
                    }
                }
                let new_syncds = sync_daemons(&cfg);
                if new_syncds != syncds {
                    stop_sync_daemons(&mut rec, &syncds).await;
                    start_sync_daemons(&mut rec, &new_syncds).await;
                    syncds = new_syncds;
                }
                log::info!(
                    "reload: {} IPVS operation(s), {} error(s), {:.3} s",
                    r.sent,
                    r.errors.len(),
                    reload_started.elapsed().as_secs_f64()
                );
                counters.reloads += 1;
                counters.last_reload_seconds = reload_started.elapsed().as_secs_f64();
                counters.reload_seconds_total += counters.last_reload_seconds;
                show_table(&rec, opts.dry_run);
                notify.ready();
            }
            _ = signals.1.recv() => break,
            _ = signals.2.recv() => break,
            _ = signals.3.recv() => checking.print_data(&cfg, rec.expected()),
            name = recv_named(&mut usr2) => vrrp_signal(name),
            name = recv_named(&mut stats_clear) => vrrp_signal(name),
            name = recv_named(&mut json) => vrrp_signal(name),
            Some(req) = qrx.recv() => {
                let run = Running {
                    cfg: &cfg,
                    opts,
                    path,
                    accepted: &accepted,
                };
                let a = checking.answer(&req.query, &run, &rec, &counters);
                let _ = req.reply.send(a);
            }
            _ = heartbeat.tick() => counters.heartbeat = status::unix_now(),
            _ = drift.tick() => {
                if let Err(e) = rec.check_drift().await {
                    log::warn!("{e}");
                }
            }
        }
    }
    log::info!("Stopping");
    notify.stopping();
    checking.stop(&cfg).await;
    let r = rec
        .stop(cfg.global_defs.lvs_flush_on_stop, opts.dont_release_ipvs)
        .await;
    log::info!(
        "IPVS: {} operation(s) at stop, {} error(s)",
        r.sent,
        r.errors.len()
    );
    stop_sync_daemons(&mut rec, &syncds).await;
    show_table(&rec, opts.dry_run);
    ExitCode::SUCCESS
}

/// Waits for a signal that may not have been installed.
async fn recv_named(s: &mut Option<(&'static str, tokio::signal::unix::Signal)>) -> &'static str {
    match s {
        Some((name, sig)) => {
            sig.recv().await;
            name
        }
        None => std::future::pending().await,
    }
}

fn vrrp_signal(name: &str) {
    log::info!("{name}: VRRP data is not available (keepalived-rs has no VRRP yet)");
}

/// The real servers of `cfg` that `table` (the kernel's at start) has live.
fn live_in_kernel(cfg: &Config, table: &crate::ipvs::Table) -> std::collections::HashSet<RsKey> {
    let mut out = std::collections::HashSet::new();
    if table.services.is_empty() {
        return out;
    }
    for (vi, vs) in cfg.virtual_servers.iter().enumerate() {
        let name = crate::config::validate::format_vs(vs);
        for (ri, rs) in vs.real_servers.iter().enumerate() {
            if desired::rs_live_in(cfg, vi, ri, table) {
                out.insert(RsKey::of(&name, rs));
            }
        }
    }
    out
}

/// The sync daemons the checker runs for `lvs_sync_daemon`.
fn sync_daemons(cfg: &Config) -> Vec<SyncDaemon> {
    let Some(c) = cfg
        .global_defs
        .lvs_sync_daemon
        .as_deref()
        .and_then(SyncdConfig::parse)
    else {
        return Vec::new();
    };
    if let Some(inst) = &c.vrrp_instance {
        log::warn!(
            "lvs_sync_daemon follows VRRP instance {inst}; VRRP is not available yet, \
             so no sync daemon is started"
        );
    }
    c.checker_daemons()
}

async fn start_sync_daemons<B: Backend>(rec: &mut Reconciler<B>, ds: &[SyncDaemon]) {
    for d in ds {
        if let Err(e) = rec.backend_mut().start_daemon(d).await {
            log::warn!("{e}");
        }
    }
}

async fn stop_sync_daemons<B: Backend>(rec: &mut Reconciler<B>, ds: &[SyncDaemon]) {
    for d in ds {
        if let Err(e) = rec.backend_mut().stop_daemon(d.state, d.syncid).await {
            log::warn!("{e}");
        }
    }
}

/// A one-thread runtime for the short-lived commands, or a message.
pub fn small_runtime() -> Result<tokio::runtime::Runtime, ExitCode> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| {
            eprintln!("cannot start the event loop: {e}");
            ExitCode::from(1)
        })
}

/// Runs `f` on the kernel's IPVS table, read once (commands that do not
/// run the daemon).
fn with_kernel_table(f: impl FnOnce(crate::ipvs::Table) -> ExitCode) -> ExitCode {
    let rt = match small_runtime() {
        Ok(rt) => rt,
        Err(code) => return code,
    };
    let table = rt.block_on(async {
        let mut h = IpvsHandle::open().await?;
        h.table().await
    });
    match table {
        Ok(t) => f(t),
        Err(e) => {
            eprintln!("{e}");
            ExitCode::from(1)
        }
    }
}

/// `--ipvs-save`: the kernel's table in `ipvsadm -S -n` form.
pub fn ipvs_save() -> ExitCode {
    with_kernel_table(|t| {
        print!("{}", t.save());
        ExitCode::SUCCESS
    })
}

/// `--plan` without a daemon: what starting on `loaded` would send to the
/// kernel (or, with `--dry-run`, to the dry run's empty table), computed
/// by the start's own steps over a dry run seeded with that table.
pub fn plan_offline(opts: &Options, loaded: &Loaded) -> ExitCode {
    if loaded.diagnostics.missing_parameter || loaded.diagnostics.fatal_include {
        eprintln!("the configuration cannot be loaded");
        return ExitCode::from(1);
    }
    let print = |current: crate::ipvs::Table| {
        let rt = match small_runtime() {
            Ok(rt) => rt,
            Err(code) => return code,
        };
        match rt.block_on(first_programming(opts, &loaded.config, current)) {
            Ok(ops) => {
                println!(
                    "# starting on this file would make {} IPVS operation(s)",
                    ops.len()
                );
                for op in ops {
                    println!("ipvsadm {op}");
                }
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("{e}");
                ExitCode::from(1)
            }
        }
    };
    if opts.dry_run {
        print(crate::ipvs::Table::default())
    } else {
        with_kernel_table(print)
    }
}

/// The operations a start on `cfg` sends to a kernel holding `current`:
/// the carry from the live table, the one startup rule, the first
/// programming (`lvs_flush`, adoption, timeouts), with `init_file`'s
/// values predicted instead of written.
pub async fn first_programming(
    opts: &Options,
    cfg: &Config,
    current: crate::ipvs::Table,
) -> Result<Vec<crate::ipvs::Op>, crate::ipvs::IpvsError> {
    let mut rec = Reconciler::new(DryRun::recording(current));
    let carry = start_carry(cfg, &mut rec).await?;
    let preset = cfg
        .track_files
        .iter()
        .filter_map(crate::check::file::init_value)
        .map(|(p, v)| (PathBuf::from(p), crate::config::reader::strtol0(&v)))
        .collect();
    let (_, _, health) = plan_start(cfg, opts, &carry, preset);
    rec.start(
        desired(cfg, &health),
        cfg.global_defs.lvs_flush,
        timeouts(cfg.global_defs.lvs_timeouts),
    )
    .await?;
    Ok(rec.backend_mut().take_recorded())
}

/// What a start carries from the kernel's table: a restart over a table a
/// previous run left (kill -9, -I) keeps the servers live there in until
/// their first check says otherwise. `lvs_flush` clears it, so nothing.
async fn start_carry<B: Backend>(
    cfg: &Config,
    rec: &mut Reconciler<B>,
) -> Result<Carry, crate::ipvs::IpvsError> {
    let mut carry = Carry::new();
    if !cfg.global_defs.lvs_flush {
        let t = rec.read_kernel().await?;
        carry.live_in_kernel = live_in_kernel(cfg, t);
    }
    Ok(carry)
}

/// The one startup rule, for a start, a reload and an offline `--plan`:
/// the checks planned with what `carry` holds, and the tracker and health
/// they start with. Checkers that cannot run are logged.
fn plan_start(
    cfg: &Config,
    opts: &Options,
    carry: &Carry,
    preset_files: HashMap<PathBuf, i64>,
) -> (Plan, Tracker, Health) {
    let (plan, errors) = engine::plan_carrying(
        cfg,
        &PlanOptions {
            share: !opts.no_shared_checks,
            preset_files,
        },
        carry,
    );
    for e in errors {
        log::error!("{e}");
    }
    let (tracker, health) = Tracker::start(cfg, &plan);
    (plan, tracker, health)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::load_str;

    const ALPHA: &str = "virtual_server 192.0.2.1 80 {\n lvs_sched rr\n lvs_method NAT\n \
        protocol TCP\n real_server 127.0.0.1 8081 {\n TCP_CHECK {\n alpha\n }\n }\n \
        real_server 127.0.0.1 8082 {\n TCP_CHECK {\n }\n }\n}\n";

    fn ops(text: &str, kernel: crate::ipvs::Table) -> Vec<String> {
        let cfg = load_str(text).config;
        let rt = small_runtime().unwrap();
        rt.block_on(first_programming(&Options::default(), &cfg, kernel))
            .unwrap()
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    #[test]
    fn a_start_over_a_live_table_keeps_its_alpha_servers() {
        let cfg = load_str(ALPHA).config;
        let live = desired(&cfg, &Health::all_alive(&cfg));
        // Empty kernel: the alpha server waits for its first check.
        let fresh = ops(ALPHA, crate::ipvs::Table::default());
        assert_eq!(fresh.len(), 2, "{fresh:?}");
        assert!(
            fresh.iter().all(|o| !o.contains("127.0.0.1:8081")),
            "{fresh:?}"
        );
        // Both live in the kernel (a restart after kill -9): nothing to do.
        assert_eq!(ops(ALPHA, live.clone()), Vec::<String>::new());
        // lvs_flush clears the table first, so the alpha server is out.
        let flushed = ops(&format!("global_defs {{\n lvs_flush\n}}\n{ALPHA}"), live);
        assert_eq!(
            flushed.first().map(String::as_str),
            Some("-C"),
            "{flushed:?}"
        );
        assert!(
            flushed.iter().all(|o| !o.contains("127.0.0.1:8081")),
            "{flushed:?}"
        );
    }
}
