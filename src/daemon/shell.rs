//! The shell that hosts the subsystems: each on a thread and runtime of
//! its own (the checker today, VRRP next), so that none can delay another;
//! the shell's own thread reads the signals, reads the configuration again
//! on SIGHUP, hands the subsystems their [`Command`]s and speaks systemd's
//! notify protocol for all of them.

use super::checker::{self, Command, Progress};
use super::process::Notify;
use super::reload::{config_path, load_options, log_diagnostics};
use super::signals::{Signal, SignalSource, UnixSignals};
use crate::cli::Options;
use crate::config::model::Config;
use crate::config::{self, Loaded};
use std::process::ExitCode;
use std::sync::Arc;
use tokio::sync::mpsc;

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
    let (ctx, crx) = mpsc::unbounded_channel();
    let (ptx, prx) = mpsc::unbounded_channel();
    let loaded = Arc::new(loaded);
    let checker_opts = opts.clone();
    let rt = match checker_runtime(workers) {
        Ok(rt) => rt,
        Err(e) => {
            log::error!("cannot start the checker's event loop: {e}");
            return ExitCode::from(1);
        }
    };
    let checker = std::thread::Builder::new()
        .name("checker".into())
        .spawn(move || rt.block_on(checker::run(&checker_opts, loaded, crx, ptx)));
    let checker = match checker {
        Ok(t) => t,
        Err(e) => {
            log::error!("cannot start the checker: {e}");
            return ExitCode::from(1);
        }
    };
    if let Err(e) = super::signals::unblock() {
        log::error!("cannot unblock signals: {e}");
    }
    shell_rt.block_on(dispatch(signals, opts, ctx, prx, &Notify::from_env()));
    match checker.join() {
        Ok(code) => code,
        Err(_) => {
            log::error!("the checker stopped on a panic");
            ExitCode::from(1)
        }
    }
}

/// The shell's loop: signals in, commands out, until SIGTERM or until the
/// subsystem ends on its own (a failed start). On SIGHUP the file is read
/// here, on the shell's thread, and each subsystem decides whether it takes
/// it; READY=1 follows once every subsystem has answered.
pub async fn dispatch(
    mut signals: impl SignalSource,
    opts: &Options,
    checker: mpsc::UnboundedSender<Command>,
    mut progress: mpsc::UnboundedReceiver<Progress>,
    notify: &Notify,
) {
    // Until the first programming, only a stop is acted on; a reload or a
    // dump waits for the checker to have started (it will read the file
    // then as it is).
    let mut pending = Vec::new();
    loop {
        tokio::select! {
            p = progress.recv() => match p {
                Some(Progress::Started) => break,
                Some(Progress::Reloaded) => {}
                None => return,
            },
            s = signals.next() => match s {
                Some(Signal::Stop) | None => {
                    notify.stopping();
                    let _ = checker.send(Command::Stop);
                    return;
                }
                Some(s) => pending.push(s),
            },
        }
    }
    notify.ready();
    let path = config_path(opts);
    let mut pending = pending.into_iter();
    loop {
        let sig = match pending.next() {
            Some(s) => Some(s),
            None => tokio::select! {
                s = signals.next() => s,
                p = progress.recv() => match p {
                    Some(_) => continue,
                    // The checker ended on its own.
                    None => return,
                },
            },
        };
        match sig {
            Some(Signal::Reload) => {
                log::info!("Reloading configuration from {}", path.display());
                notify.reloading();
                let t0 = std::time::Instant::now();
                let lopts = load_options(opts);
                let p = path.clone();
                // Read off the subsystems' threads, and off this loop's own
                // polling, so a slow file system delays nothing else.
                let loaded =
                    match tokio::task::spawn_blocking(move || config::load(&p, &lopts)).await {
                        Ok(l) => l,
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
                if checker.send(Command::Reload(Arc::new(loaded))).is_err() {
                    return;
                }
                loop {
                    match progress.recv().await {
                        Some(Progress::Reloaded) => break,
                        Some(Progress::Started) => {}
                        None => return,
                    }
                }
                notify.ready();
            }
            Some(Signal::DumpData) => {
                let _ = checker.send(Command::DumpData);
            }
            Some(Signal::Vrrp(name)) => {
                log::info!("{name}: VRRP data is not available (keepalived-rs has no VRRP yet)");
            }
            Some(Signal::Stop) | None => break,
        }
    }
    notify.stopping();
    let _ = checker.send(Command::Stop);
}
