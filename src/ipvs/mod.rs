//! Kernel IPVS: the table model, its diff, the `IPVS` generic netlink
//! family, and the two backends that hold a table (the kernel, or a dry run).
//!
//! Last stage of the LVS pipeline: [`crate::lvs`] computes the table it wants
//! and hands [`Op`]s to a [`Backend`].
//! - [`table`]: services and destinations as plain data, `ipvsadm -S -n` form;
//! - [`diff`]: pure diff of two tables and the kernel's rules for one operation;
//! - [`genl`]: the netlink messages, bytes in and out, no I/O;
//! - [`netlink`]: the async handle on the kernel (I/O shell);
//! - [`dryrun`]: a backend that keeps the table in memory and logs each change.

pub mod dests;
pub mod diff;
pub mod dryrun;
pub mod genl;
pub mod netlink;
pub mod table;

pub use dests::Dests;
pub use diff::{diff, Op, Owned};
pub use table::{Dest, DestKey, FwdMethod, Service, ServiceKey, Table};

use std::fmt;

/// Connection timeouts (`ipvsadm --set`), in seconds; 0 = leave unchanged.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Timeouts {
    /// TCP established.
    pub tcp: u32,
    /// TCP after FIN.
    pub tcp_fin: u32,
    /// UDP.
    pub udp: u32,
}

/// `IP_VS_STATE_MASTER`.
pub const SYNC_MASTER: u32 = 1;
/// `IP_VS_STATE_BACKUP`.
pub const SYNC_BACKUP: u32 = 2;

/// A connection-sync daemon (`ipvsadm --start-daemon`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyncDaemon {
    /// [`SYNC_MASTER`] or [`SYNC_BACKUP`].
    pub state: u32,
    /// Multicast interface.
    pub mcast_ifn: String,
    /// Sync id.
    pub syncid: u32,
    /// Maximum message length.
    pub maxlen: Option<u16>,
    /// Multicast port.
    pub port: Option<u16>,
    /// Multicast TTL.
    pub ttl: Option<u8>,
    /// Multicast group.
    pub group: Option<std::net::IpAddr>,
}

/// ipvsadm's word for a sync daemon's state: `master` or `backup`.
pub fn sync_state_word(state: u32) -> &'static str {
    if state == SYNC_MASTER {
        "master"
    } else {
        "backup"
    }
}

impl fmt::Display for SyncDaemon {
    /// As the ipvsadm command that starts it.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = sync_state_word(self.state);
        write!(
            f,
            "--start-daemon {state} --mcast-interface {} --syncid {}",
            self.mcast_ifn, self.syncid
        )?;
        if let Some(m) = self.maxlen {
            write!(f, " --sync-maxlen {m}")?;
        }
        if let Some(g) = self.group {
            write!(f, " --mcast-group {g}")?;
        }
        if let Some(p) = self.port {
            write!(f, " --mcast-port {p}")?;
        }
        if let Some(t) = self.ttl {
            write!(f, " --mcast-ttl {t}")?;
        }
        Ok(())
    }
}

/// An IPVS failure, naming the operation and the entry.
#[derive(Debug, thiserror::Error)]
pub enum IpvsError {
    /// The netlink socket could not be opened or used.
    #[error("IPVS: {what}: {source}")]
    Io {
        /// What was being done.
        what: String,
        /// The system error.
        source: std::io::Error,
    },
    /// The `IPVS` family is not registered (module not loaded, no IPVS in
    /// this kernel).
    #[error("IPVS: Can't initialize ipvs: {0}")]
    NoFamily(String),
    /// The kernel refused an operation.
    #[error("IPVS: {op}: {}", errno_text(*errno))]
    Kernel {
        /// The operation as an ipvsadm command.
        op: String,
        /// The kernel's errno (positive).
        errno: i32,
    },
    /// A reply could not be decoded.
    #[error("IPVS: {what}: malformed reply: {detail}")]
    Decode {
        /// What was being read.
        what: String,
        /// The decoder's message.
        detail: String,
    },
}

impl IpvsError {
    /// The kernel's errno, for a refused operation.
    pub fn errno(&self) -> Option<i32> {
        match self {
            IpvsError::Kernel { errno, .. } => Some(*errno),
            _ => None,
        }
    }
}

/// `strerror` with the symbolic name, as operators search for both.
pub fn errno_text(errno: i32) -> String {
    let name = nix::errno::Errno::from_raw(errno);
    format!("{} ({name:?})", std::io::Error::from_raw_os_error(errno))
        .replace(&format!(" (os error {errno})"), "")
}

/// Where a table lives: the kernel or a dry run. The reconciler is generic
/// over it, so the same code drives both.
#[allow(async_fn_in_trait)]
pub trait Backend {
    /// A short name for logs (`netlink`, `dry-run`).
    fn name(&self) -> &'static str;
    /// The whole current table.
    async fn dump(&mut self) -> Result<Table, IpvsError>;
    /// The services, without their destinations.
    async fn services(&mut self) -> Result<Vec<Service>, IpvsError>;
    /// The destinations of service `svc`; `None` when it is gone. With
    /// [`Backend::services`], a table read one service at a time (no
    /// default through [`Backend::dump`]: that would copy the whole table
    /// where the drift check reads one service).
    async fn dests_of(&mut self, svc: &ServiceKey) -> Result<Option<Vec<Dest>>, IpvsError>;
    /// Applies `ops` in order; one result per operation.
    async fn apply(&mut self, ops: &[Op]) -> Vec<Result<(), IpvsError>>;
    /// Current connection timeouts.
    async fn timeouts(&mut self) -> Result<Timeouts, IpvsError>;
    /// Sets connection timeouts (0 fields left unchanged by the kernel).
    async fn set_timeouts(&mut self, t: Timeouts) -> Result<(), IpvsError>;
    /// Starts a connection-sync daemon.
    async fn start_daemon(&mut self, d: &SyncDaemon) -> Result<(), IpvsError>;
    /// Stops the sync daemon in `state`.
    async fn stop_daemon(&mut self, state: u32, syncid: u32) -> Result<(), IpvsError>;
    /// The sync daemons the kernel runs, as (state, sync id): what an
    /// earlier run left (a crash) is adopted. Without a kernel, none.
    async fn daemons(&mut self) -> Result<Vec<(u32, u32)>, IpvsError> {
        Ok(Vec::new())
    }
    /// The active connections of each destination of service `svc` (the
    /// kernel's `ActiveConn`): what a drain (extension) waits on. Without
    /// a kernel there are none.
    async fn active_conns(&mut self, svc: &ServiceKey) -> Result<Vec<(DestKey, u32)>, IpvsError> {
        let t = self.dump().await?;
        Ok(t.services
            .get(svc)
            .map(|s| s.dests.keys().map(|k| (k, 0)).collect())
            .unwrap_or_default())
    }
}

impl fmt::Display for Timeouts {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "tcp {} tcpfin {} udp {}",
            self.tcp, self.tcp_fin, self.udp
        )
    }
}
