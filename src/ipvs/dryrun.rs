//! The dry-run backend: keeps the table it would have programmed, applies
//! each operation with the kernel's rules ([`super::diff::apply`]) and logs it
//! as the `ipvsadm` command that would make it.
//!
//! A user feature for machines without IPVS or root (`--dry-run`), selected
//! by the daemon shell in place of [`super::netlink`].

use super::diff::{apply, Op};
use super::{Backend, Dest, IpvsError, Service, ServiceKey, SyncDaemon, Table, Timeouts};

/// An in-memory IPVS table.
#[derive(Debug, Default)]
pub struct DryRun {
    table: Table,
    timeouts: Timeouts,
    /// Operations applied so far (for the status output and tests).
    pub applied: usize,
    /// The operations applied, when recording ([`DryRun::recording`]).
    recorded: Option<Vec<Op>>,
}

impl DryRun {
    /// An empty table, with the kernel's default timeouts.
    pub fn new() -> DryRun {
        DryRun {
            table: Table::default(),
            timeouts: Timeouts {
                tcp: 900,
                tcp_fin: 120,
                udp: 300,
            },
            applied: 0,
            recorded: None,
        }
    }

    /// Starts from `table` and keeps every operation applied (an offline
    /// `--plan`: what a start would send).
    pub fn recording(table: Table) -> DryRun {
        DryRun {
            table,
            recorded: Some(Vec::new()),
            ..DryRun::new()
        }
    }

    /// The operations recorded so far, taken.
    pub fn take_recorded(&mut self) -> Vec<Op> {
        self.recorded
            .as_mut()
            .map(std::mem::take)
            .unwrap_or_default()
    }

    /// Starts from a given table (a saved or adopted one).
    pub fn with_table(table: Table) -> DryRun {
        DryRun {
            table,
            ..DryRun::new()
        }
    }

    /// The table as it stands.
    pub fn table(&self) -> &Table {
        &self.table
    }
}

impl Backend for DryRun {
    fn name(&self) -> &'static str {
        "dry-run"
    }

    async fn dump(&mut self) -> Result<Table, IpvsError> {
        Ok(self.table.clone())
    }

    async fn services(&mut self) -> Result<Vec<Service>, IpvsError> {
        Ok(self
            .table
            .services
            .values()
            .map(|ts| ts.service.clone())
            .collect())
    }

    async fn dests_of(&mut self, svc: &ServiceKey) -> Result<Option<Vec<Dest>>, IpvsError> {
        Ok(self
            .table
            .services
            .get(svc)
            .map(|ts| ts.dests.values().cloned().collect()))
    }

    async fn apply(&mut self, ops: &[Op]) -> Vec<Result<(), IpvsError>> {
        let results = ops
            .iter()
            .map(|op| {
                log::info!("dry-run: ipvsadm {op}");
                self.applied += 1;
                if let Some(r) = &mut self.recorded {
                    r.push(op.clone());
                }
                apply(&mut self.table, op).map_err(|r| IpvsError::Kernel {
                    op: op.to_string(),
                    errno: r.errno(),
                })
            })
            .collect();
        if self.table.worth_compacting(ops.len()) {
            self.table.compact();
        }
        results
    }

    async fn timeouts(&mut self) -> Result<Timeouts, IpvsError> {
        Ok(self.timeouts)
    }

    async fn set_timeouts(&mut self, t: Timeouts) -> Result<(), IpvsError> {
        log::info!("dry-run: ipvsadm --set {} {} {}", t.tcp, t.tcp_fin, t.udp);
        for (cur, new) in [
            (&mut self.timeouts.tcp, t.tcp),
            (&mut self.timeouts.tcp_fin, t.tcp_fin),
            (&mut self.timeouts.udp, t.udp),
        ] {
            if new != 0 {
                *cur = new;
            }
        }
        Ok(())
    }

    async fn start_daemon(&mut self, d: &SyncDaemon) -> Result<(), IpvsError> {
        log::info!("dry-run: ipvsadm {d}");
        Ok(())
    }

    async fn stop_daemon(&mut self, state: u32, syncid: u32) -> Result<(), IpvsError> {
        let s = super::sync_state_word(state);
        log::info!("dry-run: ipvsadm --stop-daemon {s} --syncid {syncid}");
        Ok(())
    }
}
