//! The signals the daemon answers, as one stream of [`Signal`]s: from the
//! kernel in the daemon ([`UnixSignals`]), from a channel in tests.
//!
//! The shell reads this stream and turns it into commands for the
//! subsystems; nothing below the shell installs a handler, so reload and
//! stop are driven the same way by `kill` and by a test on paused time.

use tokio::signal::unix::{signal, SignalKind};
use tokio::sync::mpsc;

/// The signals the daemon handles, before its handlers exist.
fn handled() -> nix::sys::signal::SigSet {
    use nix::sys::signal::Signal as S;
    let mut set = nix::sys::signal::SigSet::empty();
    for s in [S::SIGHUP, S::SIGTERM, S::SIGINT, S::SIGUSR1, S::SIGUSR2] {
        set.add(s);
    }
    set
}

/// Holds the daemon's signals pending (threads started meanwhile keep
/// them blocked, so they are delivered to the shell's thread).
pub fn block() -> nix::Result<()> {
    handled().thread_block()
}

/// Lets the held signals in, once [`UnixSignals::install`] has run on
/// this thread: one that came meanwhile is handled now.
pub fn unblock() -> nix::Result<()> {
    handled().thread_unblock()
}

/// What a signal asks of the daemon.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Signal {
    /// SIGHUP: read the configuration again.
    Reload,
    /// SIGTERM, SIGINT: stop.
    Stop,
    /// SIGUSR1: write the data file (`keepalived_check.data`).
    DumpData,
    /// A signal keepalived's parent forwards to its VRRP process only
    /// (SIGUSR2, the JSON and STATS_CLEAR signals), by keepalived's name.
    Vrrp(&'static str),
}

/// A source of [`Signal`]s.
#[allow(async_fn_in_trait)]
pub trait SignalSource {
    /// The next signal; `None` when the source is gone (which stops the
    /// daemon, as SIGTERM does).
    async fn next(&mut self) -> Option<Signal>;
}

impl SignalSource for mpsc::UnboundedReceiver<Signal> {
    async fn next(&mut self) -> Option<Signal> {
        self.recv().await
    }
}

/// The kernel's signals, installed on the runtime that reads them.
pub struct UnixSignals {
    hup: tokio::signal::unix::Signal,
    term: tokio::signal::unix::Signal,
    int: tokio::signal::unix::Signal,
    usr1: tokio::signal::unix::Signal,
    vrrp: [Option<(&'static str, tokio::signal::unix::Signal)>; 3],
}

impl UnixSignals {
    /// Installs the handlers (SIGHUP, SIGTERM, SIGINT, SIGUSR1 and the VRRP
    /// ones). Without the first four the daemon cannot be run.
    pub fn install() -> std::io::Result<UnixSignals> {
        // keepalived's parent forwards these to its VRRP process only; they
        // must not kill a daemon whatever runs in it.
        let vrrp = [
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
        Ok(UnixSignals {
            hup: signal(SignalKind::hangup())?,
            term: signal(SignalKind::terminate())?,
            int: signal(SignalKind::interrupt())?,
            usr1: signal(SignalKind::user_defined1())?,
            vrrp,
        })
    }
}

impl SignalSource for UnixSignals {
    async fn next(&mut self) -> Option<Signal> {
        let [a, b, c] = &mut self.vrrp;
        tokio::select! {
            _ = self.hup.recv() => Some(Signal::Reload),
            _ = self.term.recv() => Some(Signal::Stop),
            _ = self.int.recv() => Some(Signal::Stop),
            _ = self.usr1.recv() => Some(Signal::DumpData),
            name = recv_named(a) => Some(Signal::Vrrp(name)),
            name = recv_named(b) => Some(Signal::Vrrp(name)),
            name = recv_named(c) => Some(Signal::Vrrp(name)),
        }
    }
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
