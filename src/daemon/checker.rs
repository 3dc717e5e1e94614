//! The checker subsystem: the checks of one configuration, the IPVS table
//! they keep, and its event loop.
//!
//! Hosted by the shell ([`super::shell`]) on a thread and runtime of its
//! own, so that nothing else in the daemon (VRRP next) can delay a check
//! or be delayed by one. Everything outside comes in: the IPVS backend,
//! the probes, the jitter, the status and metrics queries, and the shell's
//! [`Command`]s; time is tokio's, so the whole loop runs on paused time in
//! tests. It starts the checks ([`crate::check::engine`]), programs the
//! startup table (§6.2), then turns checker reports into IPVS changes,
//! batched per wake-up, and repairs drift on a timer.

use super::reload::{error_set, load_options, reload_refusal};
use super::shell::{Command, Progress, Reporter};
use super::startup::{plan_start, start_carry, timeouts};
use crate::check::engine::{self, Carry, Engine, Jitter, NetProber, Plan, ProbeKind, Prober};
use crate::check::misc::{self, Scripts};
use crate::check::notify::{self, Notifier};
use crate::check::ping::PingGroupRange;
use crate::cli::Options;
use crate::config::model::Config;
use crate::config::overlay::{Edit, Overlay};
use crate::config::{self, Loaded};
use crate::control::{self, Query, Request};
use crate::health::{Change, Effect, Event, Health, Tracker, Transition};
use crate::ipvs::dryrun::DryRun;
use crate::ipvs::netlink::IpvsHandle;
use crate::ipvs::{Backend, SyncDaemon};
use crate::lvs::graceful::{DrainEnd, Graceful};
use crate::lvs::syncd::SyncdConfig;
use crate::lvs::{desired, Reconciler};
use crate::metrics;
use crate::print;
use crate::status::{self, Counters, TransitionRecord};
use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;

/// How often the kernel's table is dumped and compared with what was
/// programmed (keepalived never looks; see `docs/compat.md`).
pub const DRIFT_INTERVAL: Duration = Duration::from_secs(10);

/// The outside world the checker is handed; tests hand in their own.
pub struct Deps {
    /// The probes of a configuration's checks, given the scripts' cap.
    pub prober: Box<dyn Fn(Scripts) -> Arc<dyn Prober> + Send>,
    /// The jitter of the checks' first runs, one per configuration.
    pub jitter: Box<dyn Fn() -> Jitter + Send>,
    /// Status-socket and metrics queries.
    pub queries: mpsc::UnboundedReceiver<Request>,
    /// The VRRP side's status, when it runs in this daemon too.
    pub vrrp: Option<crate::vrrp::status::Board>,
}

impl Deps {
    /// The real probes and a seeded jitter, answering `queries`.
    pub fn real(queries: mpsc::UnboundedReceiver<Request>) -> Deps {
        Deps {
            prober: Box::new(|s| Arc::new(NetProber::new(s)) as Arc<dyn Prober>),
            jitter: Box::new(Jitter::seeded),
            queries,
            vrrp: None,
        }
    }
}

/// The listeners that feed [`Deps::queries`]: the status socket and the
/// metrics port. Dropping them closes both (and removes the socket).
pub struct Listeners {
    _status: Option<control::StatusSocket>,
    _metrics: Option<tokio::task::JoinHandle<()>>,
}

/// Binds the status socket and `metrics_listen`, each sending to `tx`. A
/// listener that cannot be bound is logged; the daemon runs without it.
pub async fn listen(cfg: &Config, opts: &Options, tx: mpsc::UnboundedSender<Request>) -> Listeners {
    let sock_path = control::socket_path(
        opts.status_socket.as_deref(),
        cfg.global_defs.status_socket.as_deref(),
    );
    let status = match control::serve_status(&sock_path, tx.clone()) {
        Ok(s) => Some(s),
        Err(e) => {
            log::warn!(
                "status socket {}: {e} (keepalived --status will not reach this daemon)",
                sock_path.display()
            );
            None
        }
    };
    let metrics = match cfg.global_defs.metrics_listen {
        Some(addr) => match control::serve_metrics(addr, tx).await {
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
    Listeners {
        _status: status,
        _metrics: metrics,
    }
}

/// The checker as the daemon runs it: the backend opened (kernel, or the
/// dry run), the listeners bound, then [`serve`] until [`Command::Stop`].
pub async fn run(
    opts: &Options,
    loaded: Arc<Loaded>,
    commands: mpsc::UnboundedReceiver<Command>,
    progress: Reporter,
    vrrp: Option<crate::vrrp::status::Board>,
) -> ExitCode {
    let path = super::reload::config_path(opts);
    if opts.dry_run {
        log::info!("dry run: IPVS changes are computed and logged, the kernel is not touched");
        return listen_and_serve(DryRun::new(), loaded, opts, &path, commands, progress, vrrp)
            .await;
    }
    match IpvsHandle::open().await {
        Ok(h) => {
            let (a, b, c) = h.version;
            log::info!(
                "IPVS: kernel IPVS {a}.{b}.{c}, connection table {}",
                h.conn_tab_size
            );
            listen_and_serve(h, loaded, opts, &path, commands, progress, vrrp).await
        }
        Err(e) => {
            log::error!("{e}");
            log::error!("use --dry-run to run without the kernel's IPVS");
            ExitCode::from(1)
        }
    }
}

/// The listeners bound, then [`serve`] with the real probes over `backend`.
async fn listen_and_serve<B: Backend>(
    backend: B,
    loaded: Arc<Loaded>,
    opts: &Options,
    path: &Path,
    commands: mpsc::UnboundedReceiver<Command>,
    progress: Reporter,
    vrrp: Option<crate::vrrp::status::Board>,
) -> ExitCode {
    let (qtx, qrx) = mpsc::unbounded_channel();
    let _listeners = listen(&loaded.config, opts, qtx).await;
    serve(
        backend,
        loaded,
        opts,
        path,
        Deps {
            vrrp,
            ..Deps::real(qrx)
        },
        commands,
        progress,
    )
    .await
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
    /// The VRRP side's status board, if VRRP runs.
    vrrp: Option<&'a crate::vrrp::status::Board>,
    /// The operator's edits, applied to a previewed reload as to a reload.
    overlay: &'a Overlay,
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
    /// Per virtual server, `fail_open` is in force (as last logged).
    fail_open: Vec<bool>,
    /// Who ramps up and who drains (extensions), handed from one
    /// configuration to the next.
    graceful: Graceful,
    _ping: Option<PingGroupRange>,
}

impl Checking {
    fn start(
        cfg: &Config,
        opts: &Options,
        tx: &mpsc::UnboundedSender<Event>,
        carry: &Carry,
        prober: &dyn Fn(Scripts) -> Arc<dyn Prober>,
        jitter: Jitter,
        mut graceful: Graceful,
    ) -> Checking {
        let (plan, tracker, mut health) = plan_start(cfg, opts, carry, HashMap::new());
        graceful.reapply(cfg, &mut health, now());
        let ping = plan
            .checks
            .iter()
            .any(|c| matches!(c.kind, ProbeKind::Ping(_)))
            .then(PingGroupRange::ensure);
        notify::log_startup(
            cfg,
            |vs, rs| !plan.checks_of(vs, rs).is_empty(),
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
        // Each check may hold a socket at once.
        super::process::raise_nofile(plan.checks.len());
        let engine = Engine::start(&plan, prober(scripts), tx.clone(), jitter);
        log::info!(
            "checkers: {} check(s) for {} configured checker(s)",
            plan.checks.len(),
            plan.checker_count()
        );
        let mut c = Checking {
            plan,
            tracker,
            health,
            engine,
            notifier,
            sharing: desired::service_sharing(cfg),
            fail_open: vec![false; cfg.virtual_servers.len()],
            graceful,
            _ping: ping,
        };
        c.follow_fail_open(cfg, 0..cfg.virtual_servers.len());
        c
    }

    /// Logs each virtual server of `vss` whose `fail_open` (extension)
    /// comes into force or ends.
    fn follow_fail_open(&mut self, cfg: &Config, vss: impl IntoIterator<Item = usize>) {
        for vi in vss {
            let (Some(vs), Some(h)) = (cfg.virtual_servers.get(vi), self.health.vs.get(vi)) else {
                continue;
            };
            let now = desired::fail_open(vs, h);
            if now == self.fail_open[vi] {
                continue;
            }
            self.fail_open[vi] = now;
            let name = crate::config::validate::format_vs(vs);
            if now {
                log::warn!(
                    "VS {name}: every real server has failed - keeping all {} in at their configured weights (fail_open) until one comes back",
                    vs.real_servers.len()
                );
            } else {
                log::info!(
                    "VS {name}: a real server is back - fail_open ends, the failed ones go out"
                );
            }
        }
    }

    /// Applies a checker report: state, logs and notifications. Returns the
    /// virtual servers whose IPVS services may have to change.
    fn apply(&mut self, cfg: &Config, ev: &Event, counters: &mut Counters) -> BTreeSet<usize> {
        let effects = self.tracker.apply(cfg, &self.plan, &mut self.health, ev);
        self.notifier.effects(cfg, &self.health, &effects);
        self.record(cfg, ev, &effects, counters);
        let eased = self
            .graceful
            .transitions(cfg, &effects, &mut self.health, now());
        let touched: BTreeSet<usize> = effects
            .iter()
            .filter_map(Effect::table_vs)
            .chain(eased)
            .flat_map(|vs| self.sharing[vs].iter().copied())
            .collect();
        self.follow_fail_open(cfg, touched.iter().copied());
        touched
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
                rs: c.name.to_string(),
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
            vrrp,
            ..
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
        let instances = vrrp.map(|b| b.lock().map(|l| l.clone()).unwrap_or_default());
        match q {
            Query::Status => {
                let mut doc = status::document(&view);
                if let Some(i) = &instances {
                    doc["vrrp"] = serde_json::to_value(i).unwrap_or_default();
                }
                doc.to_string() + "\n"
            }
            Query::Metrics => {
                metrics::render(&view)
                    + &instances.map_or(String::new(), |i| crate::vrrp::status::metrics(&i))
            }
            Query::Plan(p) => self.preview_reload(run, rec, p, &board),
            // Made by the event loop, which changes the running model.
            Query::Member(_) => "error: not here\n".to_string(),
        }
    }

    /// `--plan`: what a reload of `file` would send to the kernel now,
    /// computed as the reload computes it (carried states, startup rules
    /// for new servers), and sent nowhere.
    fn preview_reload<B: Backend>(
        &self,
        run: &Running,
        rec: &Reconciler<B>,
        file: &Path,
        board: &engine::Board,
    ) -> String {
        let Running {
            cfg,
            opts,
            accepted,
            overlay,
            ..
        } = *run;
        if let Some(why) = super::reload::source_problem(file) {
            return format!(
                "error: a reload of {} would be refused, the running configuration kept: {why}\n",
                file.display()
            );
        }
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
        // The operator's edits apply to the new file as a reload applies
        // them.
        let edited = overlay.clone().apply(&loaded.config).map(|(c, _)| c);
        let new_cfg = edited.as_ref().unwrap_or(&loaded.config);
        let (_, _, health) = plan_start(new_cfg, opts, &carry, HashMap::new());
        let ops = rec.preview(&desired(new_cfg, &health));
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
        kernel: &crate::ipvs::Table,
        rx: &mut mpsc::UnboundedReceiver<Event>,
        counters: &mut Counters,
    ) -> (Carry, Graceful) {
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
            mut graceful,
            ..
        } = self;
        let carry = tracker.carry(cfg, &plan, |id| board.get(id).map(|s| s.now), &health);
        notifier.removed_by_reload(cfg, &health, new);
        notifier.close().await;
        graceful.removed(cfg, new, kernel, now());
        (carry, graceful)
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

    /// Every checker's state now, for the state file (extension).
    fn state_document(&self, cfg: &Config) -> crate::check::state::Document {
        crate::check::state::document(
            cfg,
            &self.plan,
            &self.engine.board(),
            &self.health,
            status::unix_now(),
        )
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
/// The checker's event loop over `backend`, from the first programming of
/// `loaded` to [`Command::Stop`] (or the shell gone). Returns the exit
/// code: 1 when the startup table cannot be programmed.
pub async fn serve<B: Backend>(
    backend: B,
    loaded: Arc<Loaded>,
    opts: &Options,
    path: &Path,
    deps: Deps,
    mut commands: mpsc::UnboundedReceiver<Command>,
    progress: Reporter,
) -> ExitCode {
    let Deps {
        prober,
        jitter,
        mut queries,
        vrrp,
    } = deps;
    let mut accepted = error_set(&loaded);
    let mut cur = loaded;
    let mut rec = Reconciler::new(backend);
    let started = std::time::Instant::now();
    let (tx, mut rx) = mpsc::unbounded_channel();
    let mut carry = match start_carry(&cur.config, &mut rec).await {
        Ok(c) => c,
        Err(e) => {
            log::error!("{e}");
            return ExitCode::from(1);
        }
    };
    if let Some(file) = &cur.config.global_defs.state_file {
        restore_state(&cur.config, opts, Path::new(file), &mut carry);
    }
    let mut checking = Checking::start(
        &cur.config,
        opts,
        &tx,
        &carry,
        &*prober,
        jitter(),
        Graceful::default(),
    );
    let table = desired(&cur.config, &checking.health);
    log::debug!(
        "desired table computed in {:.3} s",
        started.elapsed().as_secs_f64()
    );
    let first = match rec
        .start(
            table,
            cur.config.global_defs.lvs_flush,
            timeouts(cur.config.global_defs.lvs_timeouts),
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
            checking.stop(&cur.config).await;
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
    let mut heartbeat = tokio::time::interval(Duration::from_secs(1));
    log::info!("Startup complete");
    progress.send(Progress::Started);
    let mut syncds = sync_daemons(&cur.config);
    start_sync_daemons(&mut rec, &syncds).await;
    let mut drift = tokio::time::interval(DRIFT_INTERVAL);
    drift.tick().await;
    let mut state_written = std::time::Instant::now();
    // The file's model (`cur` is it with the operator's edits applied).
    let mut base = cur.clone();
    let mut overlay = Overlay::default();
    loop {
        let switch: Option<Switch> = tokio::select! {
            Some(ev) = rx.recv() => {
                // Take every pending report, then program once, only the
                // services of the virtual servers that changed.
                let cfg = &cur.config;
                let mut touched = checking.apply(cfg, &ev, &mut counters);
                while let Ok(ev) = rx.try_recv() {
                    touched.extend(checking.apply(cfg, &ev, &mut counters));
                }
                if !touched.is_empty() {
                    let mut partial = desired::desired_for(cfg, &checking.health, &touched);
                    checking.graceful.add_leftovers(&mut partial);
                    let r = rec.set_services(partial).await;
                    counters.ipvs(&r);
                    if r.sent > 0 || !r.errors.is_empty() {
                        log::debug!("IPVS: {} operation(s), {} error(s)", r.sent, r.errors.len());
                    }
                    show_table(&rec, opts.dry_run);
                }
                None
            }
            cmd = commands.recv() => match cmd {
                Some(Command::Reload(loaded)) => {
                    if let Some(why) = reload_refusal(&loaded, &accepted) {
                        log::error!(
                            "the new configuration has errors ({why}); keeping the running one"
                        );
                        counters.reloads_refused += 1;
                        progress.send(Progress::Reloaded);
                        None
                    } else {
                        accepted = error_set(&loaded);
                        base = loaded;
                        Some(Switch {
                            loaded: with_overlay(&base, &mut overlay),
                            edit: None,
                        })
                    }
                }
                Some(Command::DumpData) => {
                    checking.print_data(&cur.config, rec.expected());
                    None
                }
                // keepalived's parent sends these to its VRRP process only.
                Some(Command::VrrpSignal(_)) => None,
                Some(Command::Stop) | None => break,
            },
            Some(req) = queries.recv() => {
                if let Query::Member(line) = &req.query {
                    // Recorded on a copy: an edit the new model cannot
                    // take leaves the running edits as they were.
                    let mut next = overlay.clone();
                    match Edit::parse(line).and_then(|e| next.record(&cur.config, e)) {
                        Ok(done) => {
                            overlay = next;
                            Some(Switch {
                                loaded: with_overlay(&base, &mut overlay),
                                edit: Some((done, req.reply)),
                            })
                        }
                        Err(e) => {
                            let _ = req.reply.send(format!("error: {e}\n"));
                            None
                        }
                    }
                } else {
                    let run = Running {
                        cfg: &cur.config,
                        opts,
                        path,
                        accepted: &accepted,
                        vrrp: vrrp.as_ref(),
                        overlay: &overlay,
                    };
                    let a = checking.answer(&req.query, &run, &rec, &counters);
                    let _ = req.reply.send(a);
                    None
                }
            }
            _ = heartbeat.tick() => {
                counters.heartbeat = status::unix_now();
                if !checking.graceful.is_idle() {
                    ease(&cur.config, &mut checking, &mut rec, &mut counters, opts.dry_run).await;
                }
                if let Some(file) = &cur.config.global_defs.state_file {
                    let every = Duration::from_secs(
                        cur.config.global_defs.state_file_interval.unwrap_or(STATE_FILE_INTERVAL),
                    );
                    if state_written.elapsed() >= every {
                        state_written = std::time::Instant::now();
                        let doc = checking.state_document(&cur.config);
                        let file = PathBuf::from(file);
                        tokio::task::spawn_blocking(move || write_state(&file, &doc));
                    }
                }
                None
            }
            _ = drift.tick() => {
                if let Err(e) = rec.check_drift().await {
                    log::warn!("{e}");
                }
                None
            }
        };
        let Some(Switch { loaded, edit }) = switch else {
            continue;
        };
        // A reload, or an edit run as one: the checkers hand their states
        // over and only the differences reach the kernel.
        let reload_started = std::time::Instant::now();
        let old = std::mem::replace(&mut cur, loaded);
        let (carry, graceful) = checking
            .hand_over(
                &old.config,
                &cur.config,
                rec.expected(),
                &mut rx,
                &mut counters,
            )
            .await;
        log::debug!(
            "reload: checkers stopped in {:.3} s",
            reload_started.elapsed().as_secs_f64()
        );
        let cfg = &cur.config;
        // init_file again, before the files are read (at start the shell
        // wrote them, before either side ran).
        crate::check::file::init_files(cfg);
        checking = Checking::start(cfg, opts, &tx, &carry, &*prober, jitter(), graceful);
        checking.quorum_after_reload(&carry, cfg);
        log::debug!(
            "reload: checkers started in {:.3} s",
            reload_started.elapsed().as_secs_f64()
        );
        let mut table = desired(cfg, &checking.health);
        checking.graceful.add_leftovers(&mut table);
        let ops = if edit.is_some() {
            rec.preview(&table)
        } else {
            Vec::new()
        };
        let r = rec.set_desired(table).await;
        counters.ipvs(&r);
        if let Some(t) = timeouts(cfg.global_defs.lvs_timeouts) {
            if let Err(e) = rec.set_timeouts(t).await {
                log::warn!("{e}");
            }
        }
        let new_syncds = sync_daemons(cfg);
        if new_syncds != syncds {
            stop_sync_daemons(&mut rec, &syncds).await;
            start_sync_daemons(&mut rec, &new_syncds).await;
            syncds = new_syncds;
        }
        show_table(&rec, opts.dry_run);
        match edit {
            Some((done, reply)) => {
                log::info!(
                    "control: {} of {} in {}: {} IPVS operation(s), {} error(s)",
                    done.what,
                    done.rs,
                    done.vs,
                    r.sent,
                    r.errors.len()
                );
                counters.transition(TransitionRecord {
                    at: status::unix_now(),
                    vs: done.vs.clone(),
                    rs: done.rs.clone(),
                    checker: "operator",
                    from: done.from,
                    to: done.to,
                    reason: format!("{} over the status socket", done.what),
                });
                let mut out = format!(
                    "# {} of {} in {}: {} IPVS operation(s)\n",
                    done.what,
                    done.rs,
                    done.vs,
                    ops.len()
                );
                for op in &ops {
                    out.push_str(&format!("ipvsadm {op}\n"));
                }
                for e in &r.errors {
                    out.push_str(&format!("# error: {e}\n"));
                }
                let _ = reply.send(out);
            }
            None => {
                log::info!(
                    "reload: {} IPVS operation(s), {} error(s), {:.3} s",
                    r.sent,
                    r.errors.len(),
                    reload_started.elapsed().as_secs_f64()
                );
                counters.reloads += 1;
                counters.last_reload_seconds = reload_started.elapsed().as_secs_f64();
                counters.reload_seconds_total += counters.last_reload_seconds;
                progress.send(Progress::Reloaded);
            }
        }
    }
    log::info!("Stopping");
    let cfg = &cur.config;
    if let Some(file) = &cfg.global_defs.state_file {
        write_state(Path::new(file), &checking.state_document(cfg));
    }
    checking.stop(cfg).await;
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

/// A second of slow starts and drains (extensions): the ramps move on, the
/// drains read the kernel's connection counts and those that are over
/// end; the virtual servers that changed are programmed again.
async fn ease<B: Backend>(
    cfg: &Config,
    checking: &mut Checking,
    rec: &mut Reconciler<B>,
    counters: &mut Counters,
    dry_run: bool,
) {
    let mut conns = std::collections::BTreeMap::new();
    for svc in checking.graceful.services_to_count(cfg) {
        match rec.backend_mut().active_conns(&svc).await {
            Ok(v) => conns.extend(v.into_iter().map(|(d, n)| ((svc, d), n))),
            // Unknown counts: the drain waits for its timeout.
            Err(e) => log::warn!("drain: connections of {svc}: {e}"),
        }
    }
    let (touched, ended) = checking
        .graceful
        .tick(cfg, &mut checking.health, now(), &conns);
    for (rs, end) in ended {
        let name = format!("[{}]:{}", rs.ip, rs.port);
        match end {
            DrainEnd::Drained => log::info!(
                "drain of {name} in VS {}: no active connection left - taking it out",
                rs.vs
            ),
            DrainEnd::TimedOut(n) => log::warn!(
                "drain of {name} in VS {}: drain_timeout passed with {n} active connection(s) - taking it out",
                rs.vs
            ),
            DrainEnd::Back => {}
        }
    }
    if touched.is_empty() {
        return;
    }
    let touched: BTreeSet<usize> = touched
        .iter()
        .flat_map(|vs| checking.sharing[*vs].iter().copied())
        .collect();
    let mut partial = desired::desired_for(cfg, &checking.health, &touched);
    checking.graceful.add_leftovers(&mut partial);
    let r = rec.set_services(partial).await;
    counters.ipvs(&r);
    show_table(rec, dry_run);
}

/// The clock of slow starts and drains: tokio's, so that tests run them on
/// paused time.
fn now() -> std::time::Instant {
    tokio::time::Instant::now().into_std()
}

/// How often the state file is written unless `state_file_interval` says.
pub const STATE_FILE_INTERVAL: u64 = 30;

/// Writes the state file (extension) whole: a temporary file beside it,
/// renamed over it, so a reader or a crash never sees half of one.
fn write_state(file: &Path, doc: &crate::check::state::Document) {
    let tmp = file.with_extension("tmp");
    let r = serde_json::to_vec(doc)
        .map_err(std::io::Error::other)
        .and_then(|bytes| {
            if let Some(dir) = file.parent() {
                std::fs::create_dir_all(dir)?;
            }
            std::fs::write(&tmp, bytes)?;
            std::fs::rename(&tmp, file)
        });
    if let Err(e) = r {
        log::warn!("state file {}: cannot write: {e}", file.display());
    }
}

/// A start with a state file (extension): the states it kept, over what
/// the kernel's table gave. A missing file is a first start; an unreadable
/// one is ignored with a warning (keepalived's startup rules then).
fn restore_state(cfg: &Config, opts: &Options, file: &Path, carry: &mut Carry) {
    let text = match std::fs::read(file) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            log::info!(
                "state file {}: none yet - keepalived's startup rules",
                file.display()
            );
            return;
        }
        Err(e) => {
            log::warn!(
                "state file {}: {e} - keepalived's startup rules",
                file.display()
            );
            return;
        }
    };
    let doc: crate::check::state::Document = match serde_json::from_slice(&text) {
        Ok(d) => d,
        Err(e) => {
            log::warn!(
                "state file {}: not a state file ({e}) - keepalived's startup rules",
                file.display()
            );
            return;
        }
    };
    if doc.version != crate::check::state::VERSION {
        log::warn!(
            "state file {}: version {} (this daemon reads {}) - keepalived's startup rules",
            file.display(),
            doc.version,
            crate::check::state::VERSION
        );
        return;
    }
    // The checks as they would start without the file, to find each
    // saved checker's place.
    let (plan, _) = engine::plan_carrying(
        cfg,
        &engine::PlanOptions {
            share: !opts.no_shared_checks,
            ..engine::PlanOptions::default()
        },
        carry,
    );
    let found = crate::check::state::restore(cfg, &plan, &doc, carry);
    let total: usize = cfg
        .virtual_servers
        .iter()
        .map(|v| v.real_servers.len())
        .sum();
    log::info!(
        "state file {}: the states of {found} of {total} real server(s) restored (written {:.0} s ago)",
        file.display(),
        (status::unix_now() - doc.written).max(0.0)
    );
}

/// What the event loop switches to: a reloaded file or an operator's edit
/// (with what it did and where its answer goes), as the model to run.
struct Switch {
    loaded: Arc<Loaded>,
    edit: Option<(
        crate::config::overlay::Done,
        tokio::sync::oneshot::Sender<String>,
    )>,
}

/// `base` with the operator's edits (extension, over the status socket)
/// applied; each edit the file no longer allows is dropped with a line.
fn with_overlay(base: &Arc<Loaded>, overlay: &mut Overlay) -> Arc<Loaded> {
    match overlay.apply(&base.config) {
        None => base.clone(),
        Some((config, notes)) => {
            for n in notes {
                log::warn!("control: {n}");
            }
            Arc::new(Loaded {
                config,
                diagnostics: base.diagnostics.clone(),
                files: base.files.clone(),
            })
        }
    }
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
    // With an instance the VRRP side drives them (daemon::vrrp::syncd).
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
