//! The daemon shell: loads the configuration, opens the backend (kernel or
//! dry run), programs the table, then waits for signals and timers.
//!
//! Outermost layer of the pipeline; everything below it is driven from here.
//! It starts the checkers ([`crate::check::engine`]), programs the startup
//! table (§6.2), then turns checker reports into IPVS changes, batched per
//! wake-up. The full process behaviour (forking, pid files, syslog) is
//! issue 5.

use crate::check::engine::{
    self, Carry, Effect, Engine, Event, Jitter, NetProber, Plan, PlanOptions, ProbeKind, Tracker,
};
use crate::check::misc::{self, Scripts};
use crate::check::notify::{self, Notifier};
use crate::check::ping::PingGroupRange;
use crate::cli::Options;
use crate::config::model::{Config, LvsTimeouts};
use crate::config::{self, LoadOptions, Loaded};
use crate::ipvs::dryrun::DryRun;
use crate::ipvs::netlink::IpvsHandle;
use crate::ipvs::{Backend, SyncDaemon, Timeouts};
use crate::lvs::syncd::SyncdConfig;
use crate::lvs::{desired, Health, Reconciler};
use crate::process::Notify;
use std::collections::BTreeSet;
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
        serve(DryRun::new(), loaded.config, opts, &path).await
    } else {
        match IpvsHandle::open().await {
            Ok(h) => {
                let (a, b, c) = h.version;
                log::info!(
                    "IPVS: kernel IPVS {a}.{b}.{c}, connection table {}",
                    h.conn_tab_size
                );
                serve(h, loaded.config, opts, &path).await
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
        let (plan, errors) = engine::plan_carrying(
            cfg,
            &PlanOptions {
                share: !opts.no_shared_checks,
            },
            carry,
        );
        for e in errors {
            log::error!("{e}");
        }
        let ping = plan
            .checks
            .iter()
            .any(|c| matches!(c.kind, ProbeKind::Ping(_)))
            .then(PingGroupRange::ensure);
        let (tracker, health) = Tracker::start(cfg, &plan);
        notify::log_startup(
            cfg,
            |vs, rs| plan.per_rs.get(&(vs, rs)).is_some_and(|&n| n > 0),
            &health,
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
    fn apply(&mut self, cfg: &Config, ev: &Event) -> BTreeSet<usize> {
        let effects = self.tracker.apply(cfg, &self.plan, &mut self.health, ev);
        self.notifier.effects(cfg, &self.health, &effects);
        effects
            .iter()
            .filter_map(Effect::table_vs)
            .flat_map(|vs| self.sharing[vs].iter().copied())
            .collect()
    }

    /// Stops the checks without the shutdown notifications (a reload).
    async fn stop_for_reload(self) {
        self.engine.stop().await;
        self.notifier.close().await;
    }

    async fn stop(self, cfg: &Config) {
        self.engine.stop().await;
        let mut n = self.notifier;
        n.shutdown(cfg, &self.health);
        n.close().await;
    }
}

async fn serve<B: Backend>(backend: B, cfg: Config, opts: &Options, path: &Path) -> ExitCode {
    let mut signals = match (
        signal(SignalKind::hangup()),
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) {
        (Ok(h), Ok(t), Ok(i)) => (h, t, i),
        _ => {
            log::error!("cannot install signal handlers");
            return ExitCode::from(1);
        }
    };
    let mut cfg = cfg;
    let mut rec = Reconciler::new(backend);
    let started = std::time::Instant::now();
    let (tx, mut rx) = mpsc::unbounded_channel();
    let mut checking = Checking::start(&cfg, opts, &tx, &Carry::new());
    let table = desired(&cfg, &checking.health);
    log::debug!(
        "desired table computed in {:.3} s",
        started.elapsed().as_secs_f64()
    );
    match rec
        .start(
            table,
            cfg.global_defs.lvs_flush,
            timeouts(cfg.global_defs.lvs_timeouts),
        )
        .await
    {
        Ok(r) => log::info!(
            "IPVS: table programmed: {} operation(s), {} error(s), {:.3} s",
            r.sent,
            r.errors.len(),
            started.elapsed().as_secs_f64()
        ),
        Err(e) => {
            log::error!("{e}");
            checking.stop(&cfg).await;
            return ExitCode::from(1);
        }
    }
    show_table(&rec, opts.dry_run);
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
                let mut touched = checking.apply(&cfg, &ev);
                while let Ok(ev) = rx.try_recv() {
                    touched.extend(checking.apply(&cfg, &ev));
                }
                if !touched.is_empty() {
                    let partial = desired::desired_for(&cfg, &checking.health, &touched);
                    let r = rec.set_services(partial).await;
                    if r.sent > 0 || !r.errors.is_empty() {
                        log::debug!("IPVS: {} operation(s), {} error(s)", r.sent, r.errors.len());
                    }
                    show_table(&rec, opts.dry_run);
                }
            }
            _ = signals.0.recv() => {
                log::info!("Reloading configuration from {}", path.display());
                notify.reloading();
                let loaded = config::load(path, &load_options(opts));
                log_diagnostics(&loaded);
                if loaded.config_test_exit_code() != 0 || loaded.diagnostics.missing_parameter {
                    log::error!(
                        "the new configuration has errors; keeping the running one"
                    );
                    notify.ready();
                    continue;
                }
                // Reports still queued are applied first, so that what is
                // carried over is the latest state.
                while let Ok(ev) = rx.try_recv() {
                    checking.apply(&cfg, &ev);
                }
                let carry = checking.tracker.carry(&cfg, &checking.plan);
                checking.stop_for_reload().await;
                while rx.try_recv().is_ok() {}
                cfg = loaded.config;
                checking = Checking::start(&cfg, opts, &tx, &carry);
                let r = rec.set_desired(desired(&cfg, &checking.health)).await;
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
                log::info!("reload: {} IPVS operation(s), {} error(s)", r.sent, r.errors.len());
                show_table(&rec, opts.dry_run);
                notify.ready();
            }
            _ = signals.1.recv() => break,
            _ = signals.2.recv() => break,
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

/// `--ipvs-save`: the kernel's table in `ipvsadm -S -n` form.
pub fn ipvs_save() -> ExitCode {
    let rt = match small_runtime() {
        Ok(rt) => rt,
        Err(code) => return code,
    };
    rt.block_on(async {
        let mut h = match IpvsHandle::open().await {
            Ok(h) => h,
            Err(e) => {
                eprintln!("{e}");
                return ExitCode::from(1);
            }
        };
        match h.table().await {
            Ok(t) => {
                print!("{}", t.save());
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("{e}");
                ExitCode::from(1)
            }
        }
    })
}
