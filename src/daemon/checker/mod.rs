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

use super::memory::TrimDue;
use super::reload::{error_set, reload_refusal};
use super::startup::{start_carry, timeouts};
use super::subsystem::{Command, Progress, Reporter};
use crate::check::engine::{Jitter, NetProber, Prober};
use crate::cli::Options;
use crate::config::model::Config;
use crate::config::overlay::{Edit, Overlay};
use crate::config::Loaded;
use crate::control::{Query, Request};
use crate::ipvs::dryrun::DryRun;
use crate::ipvs::netlink::IpvsHandle;
use crate::ipvs::{Backend, SyncDaemon};
use crate::lvs::graceful::Graceful;
use crate::lvs::{desired, Reconciler};
use crate::services::scripts::Scripts;
use crate::status::{self, Counters, TransitionRecord};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;

mod checking;
mod extensions;
mod state_file;

use checking::Checking;
use extensions::{ease, now, restore_state, with_overlay, write_state, Switch};
pub use extensions::{STATE_FILE_INTERVAL, STATE_FILE_STOP_WAIT};

/// How often the kernel's table is dumped and compared with what was
/// programmed (keepalived never looks; see `docs/compat.md`).
pub const DRIFT_INTERVAL: Duration = Duration::from_secs(10);

/// Destinations a drift check reads per step of the event loop: ~17 ms of
/// the emulated guest's CPU (40 steps, 0.67 s, at 40,000), a few on
/// hardware.
const DRIFT_STEP: usize = 1000;

/// Longest a reload's reading holds the drift check back, should its
/// [`Command::Reload`] never come (the read failed).
const READING_HOLD: Duration = Duration::from_secs(30);

/// Whether the shell is reading a reload's file ([`Command::Reading`]).
#[derive(Debug, Default)]
struct Reading(Option<tokio::time::Instant>);

impl Reading {
    fn begin(&mut self) {
        self.0 = Some(tokio::time::Instant::now());
    }
    fn end(&mut self) {
        self.0 = None;
    }
    fn holds(&self) -> bool {
        self.0.is_some_and(|t| t.elapsed() < READING_HOLD)
    }
}

/// The outside world the checker is handed; tests hand in their own.
pub struct Deps {
    /// The probes of a configuration's checks, given the scripts' cap.
    pub prober: Box<dyn Fn(Scripts) -> Arc<dyn Prober> + Send>,
    /// The jitter of the checks' first runs, one per configuration.
    pub jitter: Box<dyn Fn() -> Jitter + Send>,
    /// Status-socket and metrics queries.
    pub queries: mpsc::UnboundedReceiver<Request>,
    /// What the checker reads or hears of the other subsystems.
    pub peers: Peers,
}

/// What the checker reads or hears of the subsystems beside it in this
/// daemon.
#[derive(Default)]
pub struct Peers {
    /// The VRRP side's status, when it runs.
    pub vrrp: Option<crate::vrrp::status::Board>,
    /// The BFD sessions' status, when BFD runs.
    pub bfd: Option<crate::bfd::status::Board>,
    /// The BFD subsystem's events (for BFD_CHECK), when it runs.
    pub bfd_events: Option<mpsc::UnboundedReceiver<super::subsystem::BfdEvent>>,
}

impl Deps {
    /// The real probes and a seeded jitter, answering `queries`.
    pub fn real(queries: mpsc::UnboundedReceiver<Request>) -> Deps {
        Deps {
            prober: Box::new(|s| Arc::new(NetProber::new(s)) as Arc<dyn Prober>),
            jitter: Box::new(Jitter::seeded),
            queries,
            peers: Peers::default(),
        }
    }
}

/// The checker as the daemon runs it: the backend opened (kernel, or the
/// dry run), the listeners bound, then [`serve`] until [`Command::Stop`].
pub async fn run(
    opts: &Options,
    loaded: Arc<Loaded>,
    commands: mpsc::UnboundedReceiver<Command>,
    progress: Reporter,
    peers: Peers,
) -> ExitCode {
    let path = super::reload::config_path(opts);
    if opts.dry_run {
        log::info!("dry run: IPVS changes are computed and logged, the kernel is not touched");
        return listen_and_serve(
            DryRun::new(),
            loaded,
            opts,
            &path,
            commands,
            progress,
            peers,
        )
        .await;
    }
    match IpvsHandle::open().await {
        Ok(h) => {
            let (a, b, c) = h.version;
            log::info!(
                "IPVS: kernel IPVS {a}.{b}.{c}, connection table {}",
                h.conn_tab_size
            );
            listen_and_serve(h, loaded, opts, &path, commands, progress, peers).await
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
    peers: Peers,
) -> ExitCode {
    let (qtx, qrx) = mpsc::unbounded_channel();
    let _listeners = super::control::listen(&loaded.config, opts, qtx).await;
    serve(
        backend,
        loaded,
        opts,
        path,
        Deps {
            peers,
            ..Deps::real(qrx)
        },
        commands,
        progress,
    )
    .await
}

/// The BFD sessions' states kept from the BFD subsystem's events, for
/// the BFD_CHECKs of each configuration's engine.
fn follow_bfd(
    mut rx: mpsc::UnboundedReceiver<super::subsystem::BfdEvent>,
) -> tokio::sync::watch::Receiver<crate::check::engine::BfdStates> {
    let (tx, states) = tokio::sync::watch::channel(crate::check::engine::BfdStates::default());
    tokio::spawn(async move {
        while let Some(e) = rx.recv().await {
            e.log_received();
            tx.send_modify(|m| {
                std::sync::Arc::make_mut(m).insert(e.name, e.up);
            });
        }
    });
    states
}

/// Tables larger than this are summarised, not printed, after each change.
const SHOW_TABLE_MAX: usize = 100;

pub(super) fn show_table<B: Backend>(rec: &Reconciler<B>, dry_run: bool) {
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
pub(super) struct Running<'a> {
    cfg: &'a Config,
    opts: &'a Options,
    /// Its file.
    path: &'a Path,
    /// The errors it was accepted with (a reload's refusal rule).
    accepted: &'a BTreeSet<String>,
    /// The VRRP side's status board, if VRRP runs.
    vrrp: Option<&'a crate::vrrp::status::Board>,
    /// The BFD sessions' board, if BFD runs.
    bfd: Option<&'a crate::bfd::status::Board>,
    /// The operator's edits, applied to a previewed reload as to a reload.
    overlay: &'a Overlay,
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
        peers:
            Peers {
                vrrp,
                bfd: bfd_board,
                bfd_events,
            },
    } = deps;
    let bfd = bfd_events.map(follow_bfd);
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
    let notify_scripts = Scripts::new(crate::services::scripts::DEFAULT_MAX_SCRIPTS);
    let mut checking = Checking::start(
        &cur.config,
        opts,
        (&tx, bfd.as_ref()),
        &carry,
        (&*prober, &notify_scripts),
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
    // The startup's transient peak (parse, plan, first programming) is
    // handed back at the first heartbeat, and so after each reload or
    // edit. Not after a query's answer: at 20,000 real servers that trim
    // took 13 ms of the event loop and left no less resident.
    let mut trim = TrimDue::default();
    trim.set();
    log::info!("Startup complete");
    progress.send(Progress::Started);
    let mut syncds = sync_daemons(&cur.config);
    adopt_sync_daemons(&mut rec, &syncds).await;
    start_sync_daemons(&mut rec, &syncds).await;
    let mut drift = tokio::time::interval(DRIFT_INTERVAL);
    drift.tick().await;
    let mut drifting = None;
    let mut reading = Reading::default();
    let mut state_written = tokio::time::Instant::now();
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
                Some(Command::Reading) => {
                    reading.begin();
                    None
                }
                Some(Command::Reload(loaded)) => {
                    reading.end();
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
                        bfd: bfd_board.as_ref(),
                        overlay: &overlay,
                    };
                    let a = checking.answer(&req.query, &run, &rec, &counters);
                    let _ = req.reply.send(a);
                    None
                }
            }
            _ = heartbeat.tick() => {
                counters.heartbeat = status::unix_now();
                trim.run();
                if !checking.graceful.is_idle() {
                    ease(&cur.config, &mut checking, &mut rec, &mut counters, opts.dry_run).await;
                }
                if let Some(file) = &cur.config.global_defs.state_file {
                    let every = Duration::from_secs(
                        cur.config.global_defs.state_file_interval.unwrap_or(STATE_FILE_INTERVAL),
                    );
                    if state_written.elapsed() >= every {
                        state_written = tokio::time::Instant::now();
                        let doc = checking.state_document(&cur.config);
                        let file = PathBuf::from(file);
                        tokio::task::spawn_blocking(move || write_state(&file, &doc));
                    }
                }
                None
            }
            _ = drift.tick() => {
                // Even its listing of the services waits out a reload's read.
                if drifting.is_none() && !reading.holds() {
                    match rec.begin_drift_check().await {
                        Ok(c) => drifting = Some((c, std::time::Instant::now())),
                        Err(e) => log::warn!("{e}"),
                    }
                }
                None
            }
            // The drift check's next step, between whatever else is ready,
            // and not while a reload's file is read: that read is the
            // reload's critical path, and the step's CPU is taken from it.
            _ = std::future::ready(()), if drifting.is_some() && !reading.holds() => {
                if let Some((check, began)) = drifting.as_mut() {
                    match rec.continue_drift_check(check, DRIFT_STEP).await {
                        Ok(None) => {}
                        Ok(Some(r)) => {
                            log::debug!(
                                "IPVS: drift check in {:.3} s, {} operation(s)",
                                began.elapsed().as_secs_f64(),
                                r.sent
                            );
                            counters.ipvs(&r);
                            drifting = None;
                        }
                        Err(e) => {
                            log::warn!("{e}");
                            drifting = None;
                        }
                    }
                }
                None
            }
        };
        let Some(Switch { loaded, edit }) = switch else {
            continue;
        };
        // A reload, or an edit run as one: the checkers hand their states
        // over and only the differences reach the kernel. A drift check
        // under way compared the table before it; the next one starts over.
        drifting = None;
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
        // init_file again at a reload, before the files are read (at start
        // the shell wrote them, before either side ran); an operator's edit
        // is no reload of the file: the tracked files keep their values.
        if edit.is_none() {
            crate::services::track_file::init_files(cfg);
        }
        checking = Checking::start(
            cfg,
            opts,
            (&tx, bfd.as_ref()),
            &carry,
            (&*prober, &notify_scripts),
            jitter(),
            graceful,
        );
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
        trim.set_after_reload();
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
        // Off the loop and bounded: a file system that hangs cannot hold
        // the stop.
        let (file, doc) = (PathBuf::from(file), checking.state_document(cfg));
        let write = tokio::task::spawn_blocking(move || write_state(&file, &doc));
        if tokio::time::timeout(STATE_FILE_STOP_WAIT, write)
            .await
            .is_err()
        {
            log::warn!("state file: not written within {STATE_FILE_STOP_WAIT:?} at stop");
        }
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

/// The sync daemons the checker runs for `lvs_sync_daemon`.
fn sync_daemons(cfg: &Config) -> Vec<SyncDaemon> {
    let Some(c) = &cfg.global_defs.lvs_sync_daemon else {
        return Vec::new();
    };
    // With an instance the VRRP side drives them (daemon::vrrp::syncd).
    c.checker_daemons()
}

/// Sync daemons an earlier run left in the kernel (a crash), in a state
/// this configuration runs one in, are stopped before ours start, so that
/// the file's settings are the ones running (keepalived 2.2.7 ends the
/// same way: guest scenario `sync-daemon-crash`, restarted with another
/// sync id).
async fn adopt_sync_daemons<B: Backend>(rec: &mut Reconciler<B>, ds: &[SyncDaemon]) {
    if ds.is_empty() {
        return;
    }
    let running = match rec.backend_mut().daemons().await {
        Ok(r) => r,
        Err(e) => {
            log::warn!("lvs_sync_daemon: cannot list the kernel's sync daemons: {e}");
            return;
        }
    };
    for (state, syncid) in running {
        if !ds.iter().any(|d| d.state == state) {
            continue;
        }
        let word = crate::ipvs::sync_state_word(state);
        log::warn!(
            "lvs_sync_daemon: the kernel runs a {word} sync daemon (syncid {syncid}) left by an earlier run: restarted as configured"
        );
        if let Err(e) = rec.backend_mut().stop_daemon(state, syncid).await {
            log::warn!("{e}");
        }
    }
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
