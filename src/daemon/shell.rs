//! The shell that hosts the subsystems: each on a thread and runtime of
//! its own (the checker, VRRP, BFD), so that none can delay another;
//! the shell's own thread reads the signals, reads the configuration again
//! on SIGHUP, hands the subsystems their [`Command`]s and speaks systemd's
//! notify protocol for all of them, and wires what one subsystem hears of
//! another (BFD's events to VRRP and the checker, the status boards). At
//! SIGTERM the subsystems that carry
//! the traffic away (VRRP) stop first; the others (the checker, which
//! deletes the IPVS services) once that is done.

use super::checker;
use super::process::Notify;
use super::reload::{config_path, load_options, log_diagnostics, source_problem};
use super::signals::{Signal, SignalSource, UnixSignals};
use super::subsystem::{Command, Progress, Reporter};
use crate::cli::Options;
use crate::config::model::Config;
use crate::config::{self, Loaded};
use std::process::ExitCode;
use std::sync::Arc;
use tokio::sync::mpsc;

/// Above this many checks per second (summed over the configured checkers,
/// half-open ones weighted by [`HALF_OPEN_WEIGHT`]) the checks get one
/// thread per core; below it one thread does them all at the least CPU per
/// check (no cross-thread wake-ups).
pub const THREADED_CHECK_RATE: f64 = 5000.0;

/// What a half-open check counts for against [`THREADED_CHECK_RATE`]. It
/// has no task, socket or timer of its own, and its prober's reader and
/// timeout task share locks with the scheduler: measured on two cores,
/// one thread did 50,000 half-open probes a second at 15.4 us each, two
/// threads 49,000 at 27.7 us. So one thread serves up to 60,000 a second.
pub const HALF_OPEN_WEIGHT: f64 = 1.0 / 12.0;

/// At stop, how long the subsystems stopped first have to report
/// [`Progress::Released`] before the others are stopped anyway. VRRP's
/// own wait for its address removals is 5 s.
pub const RELEASE_WAIT: std::time::Duration = std::time::Duration::from_secs(6);

/// Threads for the configured check rate.
fn auto_threads(cfg: &Config) -> usize {
    if check_load(cfg) < THREADED_CHECK_RATE {
        1
    } else {
        std::thread::available_parallelism().map_or(2, |n| n.get().min(4))
    }
}

/// Checks per second of `cfg`, half-open ones weighted.
fn check_load(cfg: &Config) -> f64 {
    cfg.virtual_servers
        .iter()
        .flat_map(|vs| {
            vs.real_servers
                .iter()
                .flat_map(|rs| &rs.checkers)
                .map(move |c| (vs, c))
        })
        .filter_map(|(vs, c)| {
            let weight = if c.half_open(vs) {
                HALF_OPEN_WEIGHT
            } else {
                1.0
            };
            c.common()
                .delay_loop
                .get()
                .map(|us| weight * 1e6 / us.max(1) as f64)
        })
        .sum()
}

/// The checker's runtime: one thread, or `workers` for high check rates.
fn checker_runtime(workers: usize) -> std::io::Result<tokio::runtime::Runtime> {
    if workers <= 1 {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
    } else {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(workers)
            .thread_name("checker")
            .enable_all()
            .build()
    }
}

/// Runs the daemon until SIGTERM/SIGINT. Returns the process exit code.
pub fn run(opts: &Options, loaded: Loaded) -> ExitCode {
    log_diagnostics(&loaded);
    if loaded.diagnostics.missing_parameter {
        return ExitCode::from(2);
    }
    let workers = match opts.checker_threads.as_deref().map(str::parse::<usize>) {
        Some(Ok(n)) if n > 0 => n,
        Some(Err(e)) => {
            log::error!("--checker-threads: {e}");
            return ExitCode::from(1);
        }
        _ => auto_threads(&loaded.config),
    };
    let shell_rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            log::error!("cannot start the event loop: {e}");
            return ExitCode::from(1);
        }
    };
    // Handlers first: a signal that arrives while a subsystem starts must
    // find them (the default action of SIGHUP is to die).
    let signals = match shell_rt.block_on(async { UnixSignals::install() }) {
        Ok(s) => s,
        Err(e) => {
            log::error!("cannot install signal handlers: {e}");
            return ExitCode::from(1);
        }
    };
    let (ptx, prx) = mpsc::unbounded_channel();
    let loaded = Arc::new(loaded);
    let Wanted {
        checker: want_checker,
        vrrp: want_vrrp,
        bfd: want_bfd,
    } = subsystems(opts, &loaded.config);
    // init_file: the tracked files are written once, before either side
    // reads them (keepalived writes them while reading the config).
    crate::services::track_file::init_files(&loaded.config);
    // VRRP's status, read by the checker's status socket (or by VRRP's own
    // when the checker does not run).
    let board: crate::vrrp::status::Board = Default::default();
    // BFD's sessions, read by the status socket (the checker's, else
    // VRRP's).
    let bfd_board: crate::bfd::status::Board = Default::default();
    // Where BFD's events go: to the subsystems that consume them.
    let mut bfd_listeners = super::subsystem::BfdListeners::default();
    let mut vrrp_bfd = None;
    if want_bfd && want_vrrp {
        let (tx, rx) = mpsc::unbounded_channel();
        bfd_listeners.vrrp = Some(tx);
        vrrp_bfd = Some(rx);
    }
    let mut checker_bfd = None;
    if want_bfd && want_checker {
        let (tx, rx) = mpsc::unbounded_channel();
        bfd_listeners.checker = Some(tx);
        checker_bfd = Some(rx);
    }
    let mut hosts = Hosts {
        threads: Vec::new(),
        hosted: Vec::new(),
        ptx,
    };
    if want_checker {
        let (o, l) = (opts.clone(), loaded.clone());
        let peers = checker::Peers {
            vrrp: want_vrrp.then(|| board.clone()),
            bfd: want_bfd.then(|| bfd_board.clone()),
            bfd_events: checker_bfd.take(),
        };
        if let Err(code) = hosts.start(
            "the checker",
            "checker",
            checker_runtime(workers),
            false,
            move |c, r| async move { checker::run(&o, l, c, r, peers).await },
        ) {
            return code;
        }
    }
    let want_snmp = super::snmp::wanted(opts, &loaded.config, want_vrrp);
    let (snmp_tx, mut snmp_rx) = if want_snmp {
        let (tx, rx) = mpsc::unbounded_channel();
        (Some(tx), Some(rx))
    } else {
        (None, None)
    };
    if want_vrrp {
        let (o, l, b) = (opts.clone(), loaded.clone(), board.clone());
        let peers = super::vrrp::Peers {
            no_checker: !want_checker,
            bfd_events: vrrp_bfd.take(),
            snmp_events: snmp_tx,
        };
        if let Err(code) = hosts.start(
            "VRRP",
            "vrrp",
            single_thread(),
            true,
            move |c, r| async move { super::vrrp::run(&o, l, c, r, b, peers).await },
        ) {
            return code;
        }
    }
    if want_bfd {
        let (o, l) = (opts.clone(), loaded.clone());
        let listeners = (bfd_listeners.clone(), Some(bfd_board.clone()));
        if let Err(code) = hosts.start(
            "BFD",
            "bfd",
            single_thread(),
            false,
            move |c, r| async move { super::bfd::run(&o, l, c, r, listeners).await },
        ) {
            return code;
        }
    }
    if want_snmp {
        let (o, l) = (opts.clone(), loaded.clone());
        let src = super::snmp::Sources {
            vrrp: want_vrrp.then(|| board.clone()),
        };
        let events = snmp_rx.take();
        if let Err(code) = hosts.start(
            "SNMP",
            "snmp",
            single_thread(),
            false,
            move |c, r| async move { super::snmp::run(&o, l, c, r, src, events).await },
        ) {
            return code;
        }
    }
    let Hosts {
        threads,
        hosted,
        ptx,
    } = hosts;
    drop(ptx);
    // Without a checker, the shell serves the status socket and metrics
    // from the other subsystems' boards.
    let reloads = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let _listeners = (!want_checker && (want_vrrp || want_bfd)).then(|| {
        let boards = crate::status::Boards {
            vrrp: want_vrrp.then(|| board.clone()),
            bfd: want_bfd.then(|| bfd_board.clone()),
        };
        shell_rt.block_on(super::control::serve(
            &loaded.config,
            opts,
            boards,
            reloads.clone(),
        ))
    });
    // The subsystems hold the startup's model as long as they run it; a
    // reference kept here would keep it resident after the first reload
    // (megabytes at tens of thousands of real servers), and the second
    // reload would read into fresh pages instead of into the ones the
    // first freed.
    drop(loaded);
    if let Err(e) = super::signals::unblock() {
        log::error!("cannot unblock signals: {e}");
    }
    let shell = Shell {
        notify: Notify::from_env(),
        reloads,
    };
    shell_rt.block_on(dispatch(signals, opts, &hosted, prx, &shell));
    let mut code = ExitCode::SUCCESS;
    for t in threads {
        match t.join() {
            Ok(c) => {
                if c != ExitCode::SUCCESS {
                    code = c;
                }
            }
            Err(_) => {
                log::error!("a subsystem stopped on a panic");
                code = ExitCode::from(1);
            }
        }
    }
    code
}

/// A current-thread runtime, as VRRP and BFD each have.
fn single_thread() -> std::io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
}

/// The subsystems started so far: their threads, their command channels,
/// and the sender of their progress reports.
struct Hosts {
    threads: Vec<std::thread::JoinHandle<ExitCode>>,
    hosted: Vec<Hosted>,
    ptx: mpsc::UnboundedSender<(usize, Progress)>,
}

impl Hosts {
    /// Starts subsystem `name` on a thread of its own running `rt`: `run`
    /// gets its commands and its reporter, and [`Progress::Ended`] follows
    /// its end. A runtime or thread that cannot be had is logged, and the
    /// daemon exits 1.
    fn start<F, Fut>(
        &mut self,
        name: &'static str,
        thread: &str,
        rt: std::io::Result<tokio::runtime::Runtime>,
        stops_first: bool,
        run: F,
    ) -> Result<(), ExitCode>
    where
        F: FnOnce(mpsc::UnboundedReceiver<Command>, Reporter) -> Fut + Send + 'static,
        Fut: std::future::Future<Output = ExitCode>,
    {
        let rt = rt.map_err(|e| {
            log::error!("cannot start the event loop of {name}: {e}");
            ExitCode::from(1)
        })?;
        let (tx, rx) = mpsc::unbounded_channel();
        let reporter = Reporter::new(self.hosted.len(), self.ptx.clone());
        let t = std::thread::Builder::new()
            .name(thread.into())
            .spawn(move || {
                let code = rt.block_on(run(rx, reporter.clone()));
                reporter.send(Progress::Ended);
                code
            })
            .map_err(|e| {
                log::error!("cannot start {name}: {e}");
                ExitCode::from(1)
            })?;
        self.threads.push(t);
        self.hosted.push(Hosted {
            name,
            commands: tx,
            stops_first,
        });
        Ok(())
    }
}

/// Which subsystems run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Wanted {
    /// The checker.
    pub checker: bool,
    /// VRRP.
    pub vrrp: bool,
    /// BFD.
    pub bfd: bool,
}

/// Which subsystems run, as keepalived 2.2.7 decides which children to
/// start: `-P` no checker, `-C` no VRRP, `-B` no BFD; the checker when
/// there are virtual servers (or nothing else to run), VRRP when there are
/// VRRP instances, BFD when there is a `bfd_instance` (measured: `-P` and
/// `-C` leave it running, and a file with only `bfd_instance` blocks runs
/// BFD alone).
pub fn subsystems(opts: &Options, cfg: &Config) -> Wanted {
    let has_vrrp = !cfg.vrrp.instances.is_empty();
    let bfd = !opts.no_bfd && !cfg.bfd_instances.is_empty();
    let vrrp = !opts.check && has_vrrp;
    let checker =
        !opts.vrrp && (!cfg.virtual_servers.is_empty() || (!bfd && (!has_vrrp || opts.check)));
    Wanted { checker, vrrp, bfd }
}

/// What the shell's loop has of its own: systemd's notify socket and the
/// count of reloads applied (for the status of a daemon without a checker).
pub struct Shell {
    /// systemd's notify protocol.
    pub notify: Notify,
    /// Reloads applied so far.
    pub reloads: Arc<std::sync::atomic::AtomicU64>,
}

impl Shell {
    /// Telling systemd nothing (tests).
    pub fn quiet() -> Shell {
        Shell {
            notify: Notify::none(),
            reloads: Default::default(),
        }
    }
}

/// A subsystem as the shell holds it.
pub struct Hosted {
    /// For logs.
    pub name: &'static str,
    /// Where its commands go.
    pub commands: mpsc::UnboundedSender<Command>,
    /// Stopped before the others, which wait for its
    /// [`Progress::Released`] (VRRP: a VIP still local with its IPVS
    /// service gone refuses connections).
    pub stops_first: bool,
}

impl Hosted {
    fn send(&self, c: Command) {
        // A subsystem that has ended reports it; a closed channel is that.
        let _ = self.commands.send(c);
    }
}

/// The shell's loop: signals in, commands out to every subsystem, until
/// SIGTERM or until a subsystem ends on its own (a failed start), which
/// stops the others. On SIGHUP the file is read here, on the shell's
/// thread, and each subsystem decides whether it takes it; READY=1 follows
/// once every subsystem has answered.
pub async fn dispatch(
    mut signals: impl SignalSource,
    opts: &Options,
    subsystems: &[Hosted],
    mut progress: mpsc::UnboundedReceiver<(usize, Progress)>,
    shell: &Shell,
) {
    let notify = &shell.notify;
    // Until every subsystem has started, only a stop is acted on; a reload
    // or a dump waits (they will have read the file as it is then).
    let mut pending = Vec::new();
    let mut started = vec![false; subsystems.len()];
    while !started.iter().all(|&s| s) {
        let ended = tokio::select! {
            p = progress.recv() => match p {
                Some((i, Progress::Started)) => {
                    started[i] = true;
                    continue;
                }
                Some((i, Progress::Ended)) => {
                    log::error!("{} ended before it started; stopping", subsystems[i].name);
                    Some(i)
                }
                Some(_) => continue,
                None => return,
            },
            s = signals.next() => match s {
                Some(Signal::Stop) | None => None,
                Some(s) => {
                    pending.push(s);
                    continue;
                }
            },
        };
        stop_all(subsystems, &mut progress, notify, ended).await;
        return;
    }
    notify.ready();
    let path = config_path(opts);
    let mut pending = pending.into_iter();
    let mut ended = None;
    loop {
        let sig = match pending.next() {
            Some(s) => Some(s),
            None => tokio::select! {
                s = signals.next() => s,
                p = progress.recv() => match p {
                    Some((i, Progress::Ended)) => {
                        log::error!("{} ended; stopping", subsystems[i].name);
                        ended = Some(i);
                        break;
                    }
                    Some(_) => continue,
                    None => return,
                },
            },
        };
        match sig {
            Some(Signal::Reload) => {
                log::info!("Reloading configuration from {}", path.display());
                notify.reloading();
                if let Some(why) = source_problem(&path) {
                    log::error!(
                        "cannot reload from {}: {why}; keeping the running configuration",
                        path.display()
                    );
                    notify.ready();
                    continue;
                }
                let t0 = std::time::Instant::now();
                for s in subsystems {
                    s.send(Command::Reading);
                }
                let lopts = load_options(opts);
                let p = path.clone();
                // Read off the subsystems' threads, and off this loop's own
                // polling, so a slow file system delays nothing else.
                let loaded = match tokio::task::spawn_blocking(move || {
                    let before = thread_usage();
                    let l = config::load(&p, &lopts);
                    (l, before, thread_usage())
                })
                .await
                {
                    Ok((l, a, b)) => {
                        if let (Some(a), Some(b)) = (a, b) {
                            log::debug!(
                                "reload: read with {:.3} s user, {:.3} s system, {} page faults",
                                (b.0 - a.0).as_secs_f64(),
                                (b.1 - a.1).as_secs_f64(),
                                b.2 - a.2
                            );
                        }
                        Arc::new(l)
                    }
                    Err(e) => {
                        log::error!(
                            "reading {}: {e}; keeping the running configuration",
                            path.display()
                        );
                        notify.ready();
                        continue;
                    }
                };
                log::debug!(
                    "reload: configuration read in {:.3} s",
                    t0.elapsed().as_secs_f64()
                );
                log_diagnostics(&loaded);
                // keepalived's reload_config(): the namespace stays.
                if opts.namespace.is_none()
                    && loaded.config.root.net_namespace.as_deref()
                        != super::process::running_namespace()
                {
                    log::error!(
                        "Cannot change network namespace at a reload - please restart keepalived"
                    );
                }
                for s in subsystems {
                    s.send(Command::Reload(loaded.clone()));
                }
                let mut answered = vec![false; subsystems.len()];
                while !answered.iter().all(|&a| a) {
                    match progress.recv().await {
                        Some((i, Progress::Reloaded)) => answered[i] = true,
                        Some((i, Progress::Ended)) => {
                            log::error!("{} ended; stopping", subsystems[i].name);
                            ended = Some(i);
                            break;
                        }
                        Some(_) => {}
                        None => return,
                    }
                }
                if ended.is_some() {
                    break;
                }
                // A missing parameter stops the reload of every subsystem.
                if !loaded.diagnostics.missing_parameter {
                    shell
                        .reloads
                        .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                }
                notify.ready();
            }
            Some(Signal::DumpData) => {
                for s in subsystems {
                    s.send(Command::DumpData);
                }
            }
            Some(Signal::Vrrp(name)) => {
                if !subsystems.iter().any(|s| s.name == "VRRP") {
                    log::info!("{name}: no VRRP instance runs; nothing to write");
                }
                for s in subsystems {
                    s.send(Command::VrrpSignal(name));
                }
            }
            Some(Signal::Stop) | None => break,
        }
    }
    stop_all(subsystems, &mut progress, notify, ended).await;
}

/// Stops the subsystems: first those that hand the traffic off, then,
/// once they report it done (or have ended, or after [`RELEASE_WAIT`]),
/// the rest. `ended` has already ended. keepalived stops its children at
/// once, so its checker can delete the IPVS services while VRRP still
/// holds the VIPs, and a connection to a VIP in that moment is refused
/// (docs/compat.md).
async fn stop_all(
    subsystems: &[Hosted],
    progress: &mut mpsc::UnboundedReceiver<(usize, Progress)>,
    notify: &Notify,
    ended: Option<usize>,
) {
    notify.stopping();
    let mut waiting = Vec::new();
    for (i, s) in subsystems.iter().enumerate() {
        if s.stops_first {
            s.send(Command::Stop);
            if Some(i) != ended {
                waiting.push(i);
            }
        }
    }
    if !waiting.is_empty() && subsystems.iter().any(|s| !s.stops_first) {
        let t0 = tokio::time::Instant::now();
        let released = tokio::time::timeout(RELEASE_WAIT, async {
            while !waiting.is_empty() {
                match progress.recv().await {
                    Some((i, Progress::Released | Progress::Ended)) => waiting.retain(|&w| w != i),
                    Some(_) => {}
                    None => return,
                }
            }
        })
        .await;
        match released {
            Ok(()) => log::debug!(
                "stop: traffic handed off in {:.3} s",
                t0.elapsed().as_secs_f64()
            ),
            Err(_) => log::warn!(
                "stop: {} did not hand its traffic off within {} s; stopping the rest",
                subsystems
                    .iter()
                    .filter(|s| s.stops_first)
                    .map(|s| s.name)
                    .collect::<Vec<_>>()
                    .join(", "),
                RELEASE_WAIT.as_secs()
            ),
        }
    }
    for s in subsystems.iter().filter(|s| !s.stops_first) {
        s.send(Command::Stop);
    }
}

/// This thread's CPU time (user, system) and minor page faults so far.
fn thread_usage() -> Option<(std::time::Duration, std::time::Duration, i64)> {
    use nix::sys::resource::{getrusage, UsageWho};
    let u = getrusage(UsageWho::RUSAGE_THREAD).ok()?;
    let d = |t: nix::sys::time::TimeVal| {
        std::time::Duration::from_micros(t.tv_sec() as u64 * 1_000_000 + t.tv_usec() as u64)
    };
    Some((d(u.user_time()), d(u.system_time()), u.minor_page_faults()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conf(n: usize, half_open: &str) -> String {
        let mut s = format!(
            "virtual_server 192.0.2.1 80 {{\n delay_loop 1\n lb_kind NAT\n protocol TCP\n{half_open}\n"
        );
        for i in 0..n {
            s += &format!(
                " real_server 192.0.2.{} {} {{\n  TCP_CHECK {{\n  }}\n }}\n",
                i % 250 + 2,
                1000 + i / 250
            );
        }
        s + "}\n"
    }

    #[test]
    fn half_open_checks_weigh_a_twelfth_of_a_connect_for_the_threads() {
        let full = config::load_str(&conf(6000, ""));
        assert_eq!(check_load(&full.config), 6000.0);
        assert!(auto_threads(&full.config) >= 2);
        let half = config::load_str(&conf(6000, " half_open"));
        assert!((check_load(&half.config) - 500.0).abs() < 1e-6);
        assert_eq!(auto_threads(&half.config), 1);
    }
}
