//! Pure diff between two IPVS tables, and the kernel's semantics for applying
//! one operation to a table.
//!
//! The reconciler calls [`diff`] with the kernel's table and the desired one;
//! the dry-run backend and the property tests use [`apply`], which answers
//! with the errno the kernel would (`EEXIST`, `ENOENT`, `ESRCH`).

use super::table::{Dest, DestKey, Service, ServiceKey, Table, TableService};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

/// One IPVS operation: one generic netlink request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Op {
    /// `IPVS_CMD_NEW_SERVICE`.
    AddService(Service),
    /// `IPVS_CMD_SET_SERVICE`.
    EditService(Service),
    /// `IPVS_CMD_DEL_SERVICE`.
    DelService(ServiceKey),
    /// `IPVS_CMD_NEW_DEST`.
    AddDest(ServiceKey, Dest),
    /// `IPVS_CMD_SET_DEST`.
    EditDest(ServiceKey, Dest),
    /// `IPVS_CMD_DEL_DEST`.
    DelDest(ServiceKey, DestKey),
    /// `IPVS_CMD_FLUSH`.
    Flush,
}

impl fmt::Display for Op {
    /// The operation as the ipvsadm command that would make it.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use super::table::{fmt_addr_port, save_dest, save_service, thresholds};
        match self {
            Op::AddService(s) => write!(f, "{}", save_service(s)),
            Op::EditService(s) => write!(f, "-E{}", &save_service(s)[2..]),
            Op::DelService(k) => write!(f, "-D {k}"),
            Op::AddDest(k, d) => write!(f, "{}{}", save_dest(k, d), thresholds(d)),
            Op::EditDest(k, d) => write!(f, "-e{}{}", &save_dest(k, d)[2..], thresholds(d)),
            Op::DelDest(k, d) => write!(f, "-d {k} -r {}", fmt_addr_port(&d.addr, d.port)),
            Op::Flush => write!(f, "-C"),
        }
    }
}

/// The entries a reconciler is responsible for: only these are deleted when
/// they are no longer desired. Anything else in the kernel belongs to
/// someone else and is left alone, as keepalived leaves it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Owned {
    /// Services.
    pub services: BTreeSet<ServiceKey>,
    /// Destinations, per service.
    pub dests: BTreeSet<(ServiceKey, DestKey)>,
}

impl Owned {
    /// Everything in `table`.
    pub fn all_of(table: &Table) -> Owned {
        let mut o = Owned::default();
        o.extend(table);
        o
    }

    /// Adds everything in `table`.
    pub fn extend(&mut self, table: &Table) {
        for (k, ts) in &table.services {
            self.services.insert(*k);
            for dk in ts.dests.keys() {
                self.dests.insert((*k, *dk));
            }
        }
    }
}

/// The operations that turn `current` into `desired` for the entries of
/// `desired` and the owned entries of `current`. Deletions of destinations
/// come first, then service changes, then destination additions, so that a
/// service exists before its destinations are added.
pub fn diff(current: &Table, desired: &Table, owned: &Owned) -> Vec<Op> {
    let mut dels = Vec::new();
    let mut svc_ops = Vec::new();
    let mut adds = Vec::new();
    for (k, cur) in &current.services {
        match desired.services.get(k) {
            None => {
                if owned.services.contains(k) {
                    svc_ops.push(Op::DelService(*k));
                } else {
                    for dk in cur.dests.keys() {
                        if owned.dests.contains(&(*k, *dk)) {
                            dels.push(Op::DelDest(*k, *dk));
                        }
                    }
                }
            }
            Some(want) => {
                for dk in cur.dests.keys() {
                    if !want.dests.contains_key(dk) && owned.dests.contains(&(*k, *dk)) {
                        dels.push(Op::DelDest(*k, *dk));
                    }
                }
            }
        }
    }
    for (k, want) in &desired.services {
        match current.services.get(k) {
            None => {
                svc_ops.push(Op::AddService(want.service.clone()));
                adds.extend(want.dests.values().map(|d| Op::AddDest(*k, d.clone())));
            }
            Some(cur) => {
                if !want.service.same_settings(&cur.service) {
                    svc_ops.push(Op::EditService(want.service.clone()));
                }
                for (dk, d) in &want.dests {
                    match cur.dests.get(dk) {
                        None => adds.push(Op::AddDest(*k, d.clone())),
                        Some(c) if !d.same_settings(c) => adds.push(Op::EditDest(*k, d.clone())),
                        Some(_) => {}
                    }
                }
            }
        }
    }
    dels.extend(svc_ops);
    dels.extend(adds);
    dels
}

/// Errors the kernel answers for an operation that does not fit the table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// `EEXIST`: adding what is there.
    Exists,
    /// `ESRCH`: the service is not there.
    NoService,
    /// `ENOENT`: the destination is not there.
    NoDest,
}

impl Refusal {
    /// The errno the kernel uses.
    pub fn errno(self) -> i32 {
        match self {
            Refusal::Exists => libc_errno::EEXIST,
            Refusal::NoService => libc_errno::ESRCH,
            Refusal::NoDest => libc_errno::ENOENT,
        }
    }
}

/// Errno values (Linux) used by the kernel's IPVS code.
pub mod libc_errno {
    /// No such file or directory.
    pub const ENOENT: i32 = 2;
    /// No such process (IPVS: no such service).
    pub const ESRCH: i32 = 3;
    /// File exists.
    pub const EEXIST: i32 = 17;
}

/// Applies one operation to `table` as the kernel would.
pub fn apply(table: &mut Table, op: &Op) -> Result<(), Refusal> {
    match op {
        Op::Flush => table.services.clear(),
        Op::AddService(s) => {
            if table.services.contains_key(&s.key) {
                return Err(Refusal::Exists);
            }
            table.services.insert(
                s.key,
                TableService {
                    service: s.clone(),
                    dests: BTreeMap::new(),
                },
            );
        }
        Op::EditService(s) => {
            let ts = table.services.get_mut(&s.key).ok_or(Refusal::NoService)?;
            ts.service = s.clone();
        }
        Op::DelService(k) => {
            table.services.remove(k).ok_or(Refusal::NoService)?;
        }
        Op::AddDest(k, d) => {
            let ts = table.services.get_mut(k).ok_or(Refusal::NoService)?;
            if ts.dests.contains_key(&d.key()) {
                return Err(Refusal::Exists);
            }
            ts.dests.insert(d.key(), d.clone());
        }
        Op::EditDest(k, d) => {
            let ts = table.services.get_mut(k).ok_or(Refusal::NoService)?;
            let slot = ts.dests.get_mut(&d.key()).ok_or(Refusal::NoDest)?;
            *slot = d.clone();
        }
        Op::DelDest(k, dk) => {
            let ts = table.services.get_mut(k).ok_or(Refusal::NoService)?;
            ts.dests.remove(dk).ok_or(Refusal::NoDest)?;
        }
    }
    Ok(())
}
