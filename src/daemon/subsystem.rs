//! The contract between the daemon shell and the subsystems it hosts (the
//! checker, VRRP): what the shell asks of one ([`Command`]), what one tells
//! the shell ([`Progress`]) and through what ([`Reporter`]). A subsystem
//! imports this module, never the shell.

use crate::config::Loaded;
use std::sync::Arc;
use tokio::sync::mpsc;

/// What the shell asks of a subsystem.
#[derive(Debug)]
pub enum Command {
    /// SIGHUP: the shell is reading the configuration again;
    /// [`Command::Reload`] follows unless the read fails. Background work
    /// waits meanwhile (the read is most of a reload).
    Reading,
    /// SIGHUP: the configuration as the shell read it again. The
    /// subsystem applies its refusal rule, then answers
    /// [`Progress::Reloaded`].
    Reload(Arc<Loaded>),
    /// SIGUSR1: write the data file.
    DumpData,
    /// A signal for the VRRP side alone (SIGUSR2, STATS_CLEAR, the JSON
    /// signal), by keepalived's name.
    VrrpSignal(&'static str),
    /// SIGTERM: stop the checks, clear up the table, return.
    Stop,
}

/// What a subsystem tells the shell (for systemd's notify protocol).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Progress {
    /// The startup table is programmed ("Startup complete").
    Started,
    /// A reload was applied or refused.
    Reloaded,
    /// At stop, the traffic is handed off (VRRP: priority 0 sent, the
    /// addresses removed): the subsystems stopped after it may go.
    Released,
    /// It ended (on its own, or after [`Command::Stop`]).
    Ended,
}

/// How a subsystem reports to the shell: its progress, tagged with which
/// subsystem it is.
#[derive(Debug, Clone)]
pub struct Reporter {
    id: usize,
    tx: mpsc::UnboundedSender<(usize, Progress)>,
}

impl Reporter {
    /// Subsystem `id`'s reporter on `tx`.
    pub fn new(id: usize, tx: mpsc::UnboundedSender<(usize, Progress)>) -> Reporter {
        Reporter { id, tx }
    }

    /// Reports `p` (the shell may be gone at stop).
    pub fn send(&self, p: Progress) {
        let _ = self.tx.send((self.id, p));
    }
}

/// A VRRP instance's or sync group's state notification as the SNMP
/// subsystem hears it (for its traps), in the order VRRP makes them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VrrpEvent {
    /// A sync group's (else an instance's).
    pub group: bool,
    /// Its name.
    pub name: String,
    /// MASTER, BACKUP, FAULT, STOP or DELETED.
    pub state: &'static str,
}

/// A BFD session's state as VRRP and the checker hear it (keepalived's
/// `bfd_event_t`: only Up or Down, by instance name).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BfdEvent {
    /// The `bfd_instance`.
    pub name: String,
    /// Up (else Down).
    pub up: bool,
}

impl BfdEvent {
    /// keepalived's line (with `-D`) where an event is received.
    pub fn log_received(&self) {
        log::debug!(
            "Received BFD event: instance {} is in state {}",
            self.name,
            if self.up { "Up" } else { "Down" }
        );
    }
}

/// Where the BFD subsystem's events go: the subsystems that run and
/// listen (keepalived's pipes to its VRRP and checker children).
#[derive(Debug, Clone, Default)]
pub struct BfdListeners {
    /// VRRP (`track_bfd`).
    pub vrrp: Option<mpsc::UnboundedSender<BfdEvent>>,
    /// The checker (`BFD_CHECK`).
    pub checker: Option<mpsc::UnboundedSender<BfdEvent>>,
}
