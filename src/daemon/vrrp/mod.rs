//! The VRRP subsystem as the shell hosts it: the loop that turns the
//! shell's [`Command`]s, the link and address watcher, tracked files and
//! BFD's events into runner events, over the real world of
//! [`crate::vrrp::run`] ([`world`]: the advert sockets, one per link,
//! family, protocol and mode ([`wire`]), rtnetlink and a packet socket
//! behind the address worker ([`worker`]), notifications and scripts
//! through [`crate::services`], as the checker runs its own). It runs on a
//! thread of its own, so no checker load can delay an advert.

use super::subsystem::{BfdEvent, Command, Progress, Reporter};
use crate::cli::Options;
use crate::config::Loaded;
use crate::services::scripts::Scripts;
use crate::vrrp::dump::Dump;
use crate::vrrp::net::FrameSocket;
use crate::vrrp::rtnl::{watch, NetEvent, Rtnl};
use crate::vrrp::run::{drive, Event, Runner};
use std::collections::HashMap;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use worker::{address_worker, Job};

mod procwatch;
mod syncd;
mod wire;
mod worker;
mod world;

use world::{globals_of, remove_vmac, RealWorld};

/// How long a notify script may run before it is cut (keepalived never
/// waits for them; we reap them).
const NOTIFY_LIMIT: Duration = Duration::from_secs(86_400);
/// How long notify scripts under way at stop have to end by themselves.
const NOTIFY_END_WAIT: Duration = Duration::from_millis(1100);

/// What VRRP reads or hears of the subsystems beside it in this daemon.
#[derive(Default)]
pub struct Peers {
    /// No checker runs in this daemon: VRRP starts the global notify FIFO's
    /// script and writes the tracked files at a reload.
    pub no_checker: bool,
    /// The BFD subsystem's events (for `track_bfd`), when it runs.
    pub bfd_events: Option<mpsc::UnboundedReceiver<BfdEvent>>,
    /// Where the state notifications go for SNMP's traps, when it runs.
    pub snmp_events: Option<mpsc::UnboundedSender<super::subsystem::VrrpEvent>>,
}

/// Watches the tracked files' directories; each change of one becomes an
/// [`Event::TrackFile`], the runner reading it again through the world.
fn watch_track_files(
    files: &[crate::config::vrrp::VrrpTrackFile],
    tx: mpsc::UnboundedSender<Event>,
) -> Option<JoinHandle<()>> {
    if files.is_empty() {
        return None;
    }
    let paths: Vec<std::path::PathBuf> = files.iter().map(|f| f.path.clone().into()).collect();
    let mut watch = match crate::services::track_file::Watch::new(&paths) {
        Ok(w) => w,
        Err(e) => {
            log::error!("Unable to monitor track files: {e}");
            return None;
        }
    };
    let files = files.to_vec();
    Some(tokio::spawn(async move {
        loop {
            let changed = match watch.changed().await {
                Ok(c) => c,
                Err(e) => {
                    log::error!("track_file: inotify: {e}");
                    return;
                }
            };
            for (f, p) in files.iter().zip(&paths) {
                if changed.contains(p) && tx.send(Event::TrackFile(f.name.clone())).is_err() {
                    return;
                }
            }
        }
    }))
}

/// The VRRP subsystem's loop.
pub async fn run(
    opts: &Options,
    loaded: Arc<Loaded>,
    mut commands: mpsc::UnboundedReceiver<Command>,
    progress: Reporter,
    board: crate::vrrp::status::Board,
    peers: Peers,
) -> ExitCode {
    let Peers {
        no_checker,
        bfd_events: bfd,
        snmp_events,
    } = peers;
    // The model taken, not copied, when no one else holds it: a second
    // copy kept for the daemon's life was most of the memory at a thousand
    // instances.
    let mut config = match Arc::try_unwrap(loaded) {
        Ok(l) => l.config,
        Err(shared) => shared.config.clone(),
    };
    // Kept for the daemon's life, the model need not hold what the runner
    // holds or what only the loader reads: the instances go to the runner
    // (each node keeps its own), the raw blocks they were read from
    // nowhere. The LVS sync daemons find their instance's VRID first.
    let syncd = syncd::Syncd::start(&config, opts.dry_run);
    config.other_blocks = Vec::new();
    let instances = std::mem::take(&mut config.vrrp.instances);
    let cfg = Arc::new(config);
    let rtnl = match Rtnl::open() {
        Ok(r) => r,
        Err(e) => {
            log::error!("VRRP: cannot open rtnetlink: {e}");
            return ExitCode::from(1);
        }
    };
    let frames = match FrameSocket::open() {
        Ok(f) => Some(f),
        Err(e) => {
            log::error!("VRRP: cannot open a packet socket, no gratuitous ARP will be sent: {e}");
            None
        }
    };
    let (etx, mut erx) = mpsc::unbounded_channel();
    let (jtx, jrx) = mpsc::unbounded_channel();
    tokio::spawn(address_worker(rtnl, frames, jrx));
    let (ltx, mut lrx) = mpsc::unbounded_channel();
    if let Err(e) = watch(ltx) {
        log::error!("VRRP: cannot watch the links and addresses: {e}");
    }
    {
        let tx = etx.clone();
        tokio::spawn(async move {
            while let Some(ev) = lrx.recv().await {
                let ev = match ev {
                    NetEvent::Link { name, up } => Event::Link(name, up),
                    NetEvent::AddressGone { name, addr } => Event::AddressGone(name, addr),
                    NetEvent::RouteGone(g) => Event::RouteGone(g),
                    NetEvent::RuleGone(g) => Event::RuleGone(g),
                };
                if tx.send(ev).is_err() {
                    return;
                }
            }
        });
    }
    // BFD's events, from the BFD subsystem's thread.
    if let Some(mut rx) = bfd {
        let tx = etx.clone();
        tokio::spawn(async move {
            while let Some(e) = rx.recv().await {
                e.log_received();
                if tx.send(Event::Bfd(e.name, e.up)).is_err() {
                    return;
                }
            }
        });
    }
    let mut fifos = Vec::new();
    let g = &cfg.global_defs;
    let vrrp_fifo = cfg.vrrp.globals.notify_fifo.clone();
    // vrrp_notify_fifo_script SCRIPT [USER [GROUP]]: the FIFO's reader,
    // started here; notify_fifo_script too when no checker runs in this
    // daemon (the checker starts it otherwise).
    let vrrp_fifo_script = cfg.vrrp.globals.notify_fifo_script.clone();
    let global_script = if no_checker {
        g.notify_fifo_script.clone()
    } else {
        None
    };
    let mut fifo_scripts = Vec::new();
    for (f, script) in [
        (&g.notify_fifo, &global_script),
        (&vrrp_fifo, &vrrp_fifo_script),
    ] {
        let Some(f) = f else { continue };
        match crate::services::fifo::open_fifo(f) {
            Ok((file, _)) => {
                fifos.push((f.path.clone(), file));
                if let Some(sc) = script {
                    fifo_scripts
                        .extend(crate::services::fifo::start_fifo_script(&cfg, sc, &f.path));
                }
            }
            Err(e) => log::error!("notify FIFO {}: {e}", f.path),
        }
    }
    // The process table, read before the instances start; followed from
    // then on (from the first reload that tracks a process, if none now).
    let procs = procwatch::Procs::default();
    procs.set(&cfg.vrrp.track_processes);
    let mut proc_watch = !cfg.vrrp.track_processes.is_empty();
    if proc_watch {
        procwatch::start(procs.clone(), etx.clone());
    }
    let reload_procs = procs.clone();
    let mut world = RealWorld {
        dont_release: opts.dont_release_vrrp,
        board,
        counted: None,
        wire: wire::Wire::default(),
        ifaces: HashMap::new(),
        fifos,
        nodes: HashMap::new(),
        jobs: jtx.clone(),
        events: etx.clone(),
        tracking: Scripts::new(crate::services::scripts::DEFAULT_MAX_SCRIPTS),
        notifies: Scripts::new(crate::services::scripts::DEFAULT_MAX_SCRIPTS),
        cfg: cfg.clone(),
        removed: HashMap::new(),
        alerter: crate::services::smtp_alert::Alerter::new(&cfg),
        last_email: HashMap::new(),
        fifo_scripts,
        syncd,
        procs: procs.clone(),
        snmp: snmp_events,
    };
    let mut watcher = watch_track_files(&cfg.vrrp.track_files, etx.clone());
    let mut runner = {
        let start = crate::config::vrrp::VrrpConfig {
            instances,
            ..cfg.vrrp.clone()
        };
        Runner::new(&start, &mut world)
    };
    let mut inbox = world.wire.inbox();
    // The shell's commands become runner events.
    let ctx = etx.clone();
    let rep = progress.clone();
    tokio::spawn(async move {
        while let Some(c) = commands.recv().await {
            match c {
                Command::Stop => {
                    let _ = ctx.send(Event::Stop);
                    return;
                }
                Command::Reload(l) => {
                    // keepalived's VRRP side takes whatever parsed: a
                    // missing parameter stops only the reload.
                    if !l.diagnostics.missing_parameter {
                        // init_file again (the checker does it when it
                        // runs in this daemon); the watch follows the files
                        // the new file tracks.
                        if no_checker {
                            crate::services::track_file::init_files(&l.config);
                        }
                        if let Some(h) = watcher.take() {
                            h.abort();
                        }
                        watcher = watch_track_files(&l.config.vrrp.track_files, ctx.clone());
                        let defs = &l.config.vrrp.track_processes;
                        let changes = reload_procs.set(defs);
                        if !proc_watch && !defs.is_empty() {
                            procwatch::start(reload_procs.clone(), ctx.clone());
                            proc_watch = true;
                        }
                        // Not the checker's virtual servers: a copy of
                        // those at scale would double the reload's memory.
                        let mut view = globals_of(&l.config);
                        view.vrrp.instances = l.config.vrrp.instances.clone();
                        let _ = ctx.send(Event::Reload(Arc::new(view)));
                        if !changes.is_empty() {
                            let _ = ctx.send(Event::Process(changes));
                        }
                    }
                    rep.send(Progress::Reloaded);
                }
                // Adverts go on as they are while the file is read.
                Command::Reading => {}
                Command::DumpData => {
                    let _ = ctx.send(Event::Dump(Dump::Data));
                }
                Command::VrrpSignal(name) => {
                    let d = match name {
                        "STATS_CLEAR" => Dump::StatsClear,
                        "JSON" => Dump::Json,
                        _ => Dump::Stats,
                    };
                    let _ = ctx.send(Event::Dump(d));
                }
            }
        }
        let _ = ctx.send(Event::Stop);
    });
    progress.send(Progress::Started);
    // What the start freed (the file's text, the parse, the first
    // status) back to the kernel once the instances run.
    tokio::spawn(async {
        tokio::time::sleep(Duration::from_secs(2)).await;
        super::memory::release_free_memory();
    });
    match wire::TimerAlarm::new() {
        Ok(mut alarm) => drive(&mut runner, &mut world, &mut erx, &mut inbox, &mut alarm).await,
        Err(e) => {
            log::warn!("VRRP: no timerfd ({e}): tokio's timer instead");
            let mut alarm = crate::vrrp::run::TokioAlarm::default();
            drive(&mut runner, &mut world, &mut erx, &mut inbox, &mut alarm).await
        }
    }
    for mut c in std::mem::take(&mut world.fifo_scripts) {
        let _ = c.start_kill();
    }
    // Wait for the address worker to finish the removals (the drop rules'
    // tables last, as keepalived's nft_end()).
    let _ = jtx.send(Job::FirewallEnd);
    let (dtx, drx) = tokio::sync::oneshot::channel();
    let _ = jtx.send(Job::Done(dtx));
    let _ = tokio::time::timeout(Duration::from_secs(5), drx).await;
    // Priority 0 is sent and the VIPs are gone: the checker may now delete
    // the IPVS services without a local VIP refusing connections.
    progress.send(Progress::Released);
    if let Some(s) = world.syncd.take() {
        s.stop().await;
    }
    // The VMACs go last, their addresses removed (keepalived's
    // restore_vrrp_interfaces()).
    for io in world.nodes.values() {
        remove_vmac(io);
    }
    // STOP notifies (and any still under way) have about keepalived's
    // second before the process goes; then nothing of ours outlives it
    // (keepalived leaves hung scripts running: docs/security.md).
    let ended = world.notifies.end(NOTIFY_END_WAIT).await;
    if ended > 0 {
        log::warn!(
            "{ended} notify script(s) still running at stop: ended with their process groups"
        );
    }
    ExitCode::SUCCESS
}
