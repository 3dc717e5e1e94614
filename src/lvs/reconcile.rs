//! The reconciler: keeps a backend's table equal to the desired one with the
//! fewest operations, adopts what is already in the kernel at start, repairs
//! drift, and clears up at stop as keepalived does.
//!
//! Between [`super::desired`] (what should be) and an
//! [`crate::ipvs::Backend`] (what is). It remembers what it believes the
//! kernel holds (`expected`), so a health change or a reload costs only the
//! operations it needs, without a dump; [`Reconciler::check_drift`] dumps on a
//! timer and repairs anything changed behind its back. What is desired is not
//! kept beside it: once the kernel took a change, the desired table *is* the
//! one expected (its owned entries), so only the services the kernel has not
//! taken yet are kept apart ([`Pending`]): one table at tens of thousands of
//! destinations, not two.

use crate::config::model::FlushOnStop;
use crate::ipvs::diff::{apply, diff, diff_services, Op, Owned};
use crate::ipvs::table::{DestKey, Service, ServiceKey, TableService};
use crate::ipvs::{Backend, IpvsError, Table, Timeouts};
use nix::errno::Errno;
use std::collections::{BTreeMap, BTreeSet};

const ENOENT: i32 = Errno::ENOENT as i32;
const ESRCH: i32 = Errno::ESRCH as i32;
const EEXIST: i32 = Errno::EEXIST as i32;

/// What one synchronisation did.
#[derive(Debug, Default)]
pub struct Report {
    /// Operations sent.
    pub sent: usize,
    /// Operations that failed for good (after keepalived's tolerances).
    pub errors: Vec<IpvsError>,
}

/// Where what is desired differs from what the kernel is believed to hold.
/// Every service not here is desired as `expected` holds it (its owned
/// entries): after a sync the kernel took whole, this is empty.
#[derive(Debug, Default)]
struct Pending {
    /// Services desired other than as expected (or absent from it).
    table: Table,
    /// Services desired gone that we still own something of.
    gone: BTreeSet<ServiceKey>,
}

impl Pending {
    /// Every service pending, in key order.
    fn keys(&self) -> Vec<ServiceKey> {
        let mut keys: Vec<ServiceKey> = self.table.services.keys().copied().collect();
        keys.extend(self.gone.iter().copied());
        keys.sort_unstable();
        keys.dedup();
        keys
    }

    fn remove(&mut self, k: &ServiceKey) {
        self.table.services.remove(k);
        self.gone.remove(k);
    }
}

/// A drift check under way ([`Reconciler::begin_drift_check`]): the
/// services it has still to compare with what was programmed. Taken a few
/// at a time, so that at tens of thousands of destinations the checker's
/// event loop is not held up for the whole table's read (1.6 s at 40,000
/// in the emulated guest).
#[derive(Debug)]
pub struct DriftCheck {
    /// Services still to compare, the next one last.
    keys: Vec<ServiceKey>,
    /// The kernel's services as listed when the check began.
    services: BTreeMap<ServiceKey, Service>,
}

/// Which services a sync looks at.
enum Scope {
    /// These (sorted, each once).
    Keys(Vec<ServiceKey>),
    /// Every one, against the whole desired table (after a fresh dump).
    Whole,
}

/// Owns the kernel-side consequences of one configuration.
pub struct Reconciler<B: Backend> {
    backend: B,
    /// What it believes the kernel holds.
    expected: Table,
    /// What the kernel has not taken yet.
    pending: Pending,
    owned: Owned,
    saved_timeouts: Option<Timeouts>,
    /// The table [`Self::read_kernel`] read, for [`Self::start`].
    read: Option<Table>,
}

impl<B: Backend> Reconciler<B> {
    /// A reconciler over `backend`; nothing is sent until [`Self::start`].
    pub fn new(backend: B) -> Reconciler<B> {
        Reconciler {
            backend,
            expected: Table::default(),
            pending: Pending::default(),
            owned: Owned::default(),
            saved_timeouts: None,
            read: None,
        }
    }

    /// The backend (for dumps in status output and tests).
    pub fn backend_mut(&mut self) -> &mut B {
        &mut self.backend
    }

    /// What the reconciler believes the kernel holds.
    pub fn expected(&self) -> &Table {
        &self.expected
    }

    /// First programming: optional `lvs_flush`, then adopt the kernel's
    /// entries and add what is missing. Entries of other owners are kept.
    pub async fn start(
        &mut self,
        desired: Table,
        lvs_flush: bool,
        timeouts: Option<Timeouts>,
    ) -> Result<Report, IpvsError> {
        let mut report = Report::default();
        if lvs_flush {
            report.sent += 1;
            if let Some(Err(e)) = self.backend.apply(&[Op::Flush]).await.pop() {
                report.errors.push(e);
            }
        }
        if let Some(t) = timeouts {
            self.set_timeouts(t).await?;
        }
        let t0 = std::time::Instant::now();
        self.expected = match self.read.take() {
            Some(t) if !lvs_flush => t,
            _ => self.backend.dump().await?,
        };
        log::debug!(
            "IPVS: kernel table read in {:.3} s",
            t0.elapsed().as_secs_f64()
        );
        let adopted = self
            .expected
            .services
            .keys()
            .filter(|k| desired.services.contains_key(k))
            .count();
        if adopted > 0 {
            log::info!("IPVS: adopting {adopted} existing service(s)");
        }
        let more = self.set_desired(desired).await;
        report.sent += more.sent;
        report.errors.extend(more.errors);
        Ok(report)
    }

    /// Reads the kernel's table before [`Self::start`] (which then uses it
    /// unless it flushes): what a previous run left.
    pub async fn read_kernel(&mut self) -> Result<&Table, IpvsError> {
        let t = self.backend.dump().await?;
        Ok(self.read.insert(t))
    }

    /// `lvs_timeouts`: the kernel's values are saved once, to be restored at
    /// stop; unspecified values are re-sent as they were.
    pub async fn set_timeouts(&mut self, t: Timeouts) -> Result<(), IpvsError> {
        let current = self.backend.timeouts().await?;
        if self.saved_timeouts.is_none() {
            self.saved_timeouts = Some(current);
        }
        let merged = Timeouts {
            tcp: if t.tcp != 0 { t.tcp } else { current.tcp },
            tcp_fin: if t.tcp_fin != 0 {
                t.tcp_fin
            } else {
                current.tcp_fin
            },
            udp: if t.udp != 0 { t.udp } else { current.udp },
        };
        self.backend.set_timeouts(merged).await
    }

    /// Restores the timeouts saved by [`Self::set_timeouts`], if any.
    pub async fn restore_timeouts(&mut self) -> Result<(), IpvsError> {
        match self.saved_timeouts.take() {
            Some(t) => self.backend.set_timeouts(t).await,
            None => Ok(()),
        }
    }

    /// The operations [`Self::set_desired`] would send for `desired`, sent
    /// nowhere (`--plan`).
    pub fn preview(&self, desired: &Table) -> Vec<crate::ipvs::Op> {
        let mut owned = self.owned.clone();
        owned.extend(desired);
        crate::ipvs::diff(&self.expected, desired, &owned)
    }

    /// Moves the kernel to `desired` (a health change or a reload). Entries
    /// this reconciler owned and that are no longer desired are deleted.
    pub async fn set_desired(&mut self, desired: Table) -> Report {
        self.owned.extend(&desired);
        let owned = &self.owned;
        let gone = self
            .expected
            .services
            .keys()
            .filter(|k| !desired.services.contains_key(k))
            .filter(|k| owned.services.contains(k) || owned.dests_of(k).next().is_some())
            .copied()
            .collect();
        self.pending = Pending {
            table: desired,
            gone,
        };
        let keys = self.pending.keys();
        let report = self.sync(Scope::Keys(keys)).await;
        // Ownership ends once an entry is gone; a failed deletion keeps it
        // owned so the next sync tries again. (What is owned holds all that
        // is desired: extended above; what is desired and not pending is in
        // `expected`.)
        self.owned.retain_in(&self.pending.table, &self.expected);
        report
    }

    /// Moves only the services of `partial` to their new state (a health
    /// change of some virtual servers): the cost follows the services
    /// touched, not the table. Every other service stays as desired.
    pub async fn set_services(&mut self, partial: Table) -> Report {
        let keys: Vec<ServiceKey> = partial.services.keys().copied().collect();
        for (k, s) in partial.services {
            self.owned.services.insert(k);
            for dk in s.dests.keys() {
                self.owned.insert_dest(k, dk);
            }
            self.pending.gone.remove(&k);
            self.pending.table.services.insert(k, s);
        }
        let report = self.sync(Scope::Keys(keys.clone())).await;
        for k in &keys {
            let keep = |dk: &DestKey| {
                self.expected
                    .services
                    .get(k)
                    .is_some_and(|s| s.dests.contains_key(dk))
                    || self
                        .pending
                        .table
                        .services
                        .get(k)
                        .is_some_and(|s| s.dests.contains_key(dk))
            };
            let gone: Vec<DestKey> = self.owned.dests_of(k).filter(|dk| !keep(dk)).collect();
            for g in gone {
                self.owned.remove_dest(k, &g);
            }
        }
        report
    }

    /// Makes [`Pending`] the whole desired table, before `expected` is
    /// replaced by a dump of the kernel (which loses what it stood for).
    fn materialize(&mut self) {
        for (k, ts) in &self.expected.services {
            if !self.owned.services.contains(k)
                || self.pending.table.services.contains_key(k)
                || self.pending.gone.contains(k)
            {
                continue;
            }
            let dests = ts
                .dests
                .iter()
                .filter(|(dk, _)| self.owned.owns_dest(k, dk))
                .map(|(dk, d)| (dk, d.clone()))
                .collect();
            self.pending.table.services.insert(
                *k,
                TableService {
                    service: ts.service.clone(),
                    dests,
                },
            );
        }
    }

    async fn sync(&mut self, scope: Scope) -> Report {
        let mut report = Report::default();
        let mut scope = scope;
        // Whether every operation sent was taken: the services looked at
        // are then as desired.
        let mut clean = true;
        // A second round runs only when the first found the kernel other than
        // expected; it starts from a fresh dump and looks at everything.
        for round in 0..2 {
            let ops = match &scope {
                Scope::Keys(keys) => {
                    diff_services(&self.expected, &self.pending.table, &self.owned, keys)
                }
                Scope::Whole => diff(&self.expected, &self.pending.table, &self.owned),
            };
            if ops.is_empty() {
                break;
            }
            let t0 = std::time::Instant::now();
            let results = self.backend.apply(&ops).await;
            log::debug!(
                "IPVS: {} operation(s) applied in {:.3} s",
                ops.len(),
                t0.elapsed().as_secs_f64()
            );
            report.sent += ops.len();
            // A service the kernel did not have and took whole is moved
            // from what is pending into what is expected, as built (packed),
            // instead of being rebuilt from its operations one by one.
            let taken = results.iter().all(Result::is_ok);
            let fresh: BTreeSet<ServiceKey> = if taken {
                ops.iter()
                    .filter_map(|op| match op {
                        Op::AddService(s) if !self.expected.services.contains_key(&s.key) => {
                            Some(s.key)
                        }
                        _ => None,
                    })
                    .collect()
            } else {
                BTreeSet::new()
            };
            let mut refresh = false;
            let mut retries = Vec::new();
            for (op, res) in ops.iter().zip(results) {
                match res {
                    Ok(()) => {
                        if !op_service(op).is_some_and(|k| fresh.contains(k)) {
                            let _ = apply(&mut self.expected, op);
                        }
                    }
                    Err(e) => {
                        refresh = true;
                        match tolerated(op, &e) {
                            Tolerance::AsDone => log::info!("{e} (already so)"),
                            Tolerance::Retry(r) => {
                                log::info!("{e}; retrying as ipvsadm {r}");
                                retries.push(r);
                            }
                            Tolerance::No => {
                                log::warn!("{e}");
                                if round == 1 {
                                    report.errors.push(e);
                                }
                            }
                        }
                    }
                }
            }
            for k in fresh {
                if let Some(ts) = self.pending.table.services.remove(&k) {
                    self.expected.services.insert(k, ts);
                }
            }
            if self.expected.worth_compacting(ops.len()) {
                self.expected.compact();
            }
            if !retries.is_empty() {
                report.sent += retries.len();
                for (op, res) in retries.iter().zip(self.backend.apply(&retries).await) {
                    if let Err(e) = res {
                        log::warn!("{e}");
                    } else {
                        let _ = apply(&mut self.expected, op);
                    }
                }
            }
            if !refresh {
                break;
            }
            clean = false;
            // Our picture of the kernel is off; take the kernel's word.
            self.materialize();
            scope = Scope::Whole;
            match self.backend.dump().await {
                Ok(t) => self.expected = t,
                Err(e) => {
                    log::warn!("{e}");
                    report.errors.push(e);
                    break;
                }
            }
        }
        self.settle(&scope, clean);
        report
    }

    /// Drops from [`Pending`] the services of `scope` the kernel now holds
    /// as desired: all of them after a sync it took whole (`clean`).
    fn settle(&mut self, scope: &Scope, clean: bool) {
        let keys = match scope {
            Scope::Keys(keys) => keys.clone(),
            Scope::Whole => self.pending.keys(),
        };
        for k in &keys {
            if clean
                || diff_services(
                    &self.expected,
                    &self.pending.table,
                    &self.owned,
                    std::slice::from_ref(k),
                )
                .is_empty()
            {
                self.pending.remove(k);
            }
        }
    }

    /// Reads the kernel's table; if an entry differs from what was
    /// programmed (someone ran `ipvsadm -C`, a module was reloaded), logs the
    /// drift and brings the table back to the desired one. Returns the
    /// operations sent. A whole [`DriftCheck`] at once (the daemon takes
    /// it in steps; tests in one go).
    #[cfg(test)]
    pub async fn check_drift(&mut self) -> Result<Report, IpvsError> {
        let mut check = self.begin_drift_check().await?;
        loop {
            if let Some(r) = self.continue_drift_check(&mut check, usize::MAX).await? {
                return Ok(r);
            }
        }
    }

    /// Starts a drift check: lists the kernel's services, whose
    /// destinations [`Self::continue_drift_check`] then compares a few
    /// services at a time.
    pub async fn begin_drift_check(&mut self) -> Result<DriftCheck, IpvsError> {
        let mut keys: Vec<ServiceKey> = self.expected.services.keys().copied().collect();
        let mut services = BTreeMap::new();
        for s in self.backend.services().await? {
            if !self.expected.services.contains_key(&s.key) {
                keys.push(s.key);
            }
            services.insert(s.key, s);
        }
        keys.reverse();
        Ok(DriftCheck { keys, services })
    }

    /// Goes on with `check`: reads the kernel's services one at a time and
    /// compares each with what was programmed for it, until `budget`
    /// destinations were read. `None` while services are left; the
    /// report once the check is over (and the table repaired if it
    /// drifted). Each step costs one service's destinations in memory, not
    /// a copy of a table of tens of thousands; only a drift found reads it
    /// whole.
    pub async fn continue_drift_check(
        &mut self,
        check: &mut DriftCheck,
        budget: usize,
    ) -> Result<Option<Report>, IpvsError> {
        let mut read = 0usize;
        let mut drifted = false;
        while read < budget {
            let Some(k) = check.keys.pop() else { break };
            let mut current = Table::default();
            if let Some(service) = check.services.remove(&k) {
                if let Some(dests) = self.backend.dests_of(&k).await? {
                    read += dests.len().max(1);
                    current.services.insert(
                        k,
                        TableService {
                            service,
                            dests: dests.into_iter().map(|d| (d.key(), d)).collect(),
                        },
                    );
                }
            }
            let expected = self.expected.only(&[k]);
            if current == expected {
                continue;
            }
            // Drift is a difference from what was programmed, not from what
            // is wanted: an entry the kernel keeps refusing (a missing
            // scheduler module) was reported when it failed and is not
            // retried every tick. (A service changed since the check began
            // differs from its listing too; the whole read below then finds
            // nothing to repair.)
            if !diff(&current, &expected, &self.owned).is_empty() {
                drifted = true;
                break;
            }
            // Others' entries, and what the kernel reports its own way,
            // are taken as they are.
            match current.services.remove(&k) {
                Some(ts) => self.expected.services.insert(k, ts),
                None => self.expected.services.remove(&k),
            };
        }
        if !drifted {
            return Ok(check.keys.is_empty().then(Report::default));
        }
        check.keys.clear();
        let current = self.backend.dump().await?;
        for op in &diff(&current, &self.expected, &self.owned) {
            log::warn!("IPVS: table drifted from the configuration; repairing: ipvsadm {op}");
        }
        self.materialize();
        self.expected = current;
        Ok(Some(self.sync(Scope::Whole).await))
    }

    /// Shutdown (§6.6): `keep` (`-I`) leaves everything; otherwise
    /// `lvs_flush_on_stop` decides between deleting each destination then
    /// each service (default), each service, or a full flush. Timeouts are
    /// restored.
    pub async fn stop(&mut self, mode: FlushOnStop, keep: bool) -> Report {
        let mut report = Report::default();
        if !keep {
            let mut ops = Vec::new();
            match mode {
                FlushOnStop::Full => ops.push(Op::Flush),
                FlushOnStop::Vs | FlushOnStop::Off => {
                    for (k, ts) in &self.expected.services {
                        if mode == FlushOnStop::Off {
                            for dk in ts.dests.keys() {
                                if self.owned.owns_dest(k, &dk) {
                                    ops.push(Op::DelDest(*k, dk));
                                }
                            }
                        }
                        if self.owned.services.contains(k) {
                            ops.push(Op::DelService(*k));
                        }
                    }
                }
            }
            let results = self.backend.apply(&ops).await;
            report.sent = ops.len();
            for (op, res) in ops.iter().zip(results) {
                match res {
                    Ok(()) => {
                        let _ = apply(&mut self.expected, op);
                    }
                    Err(e) if matches!(tolerated(op, &e), Tolerance::AsDone) => {}
                    Err(e) => {
                        log::warn!("{e}");
                        report.errors.push(e);
                    }
                }
            }
            self.owned = Owned::default();
            self.pending = Pending::default();
        }
        if let Err(e) = self.restore_timeouts().await {
            log::warn!("{e}");
        }
        report
    }
}

/// The service an operation is about.
fn op_service(op: &Op) -> Option<&ServiceKey> {
    match op {
        Op::AddService(s) | Op::EditService(s) => Some(&s.key),
        Op::DelService(k) | Op::AddDest(k, _) | Op::EditDest(k, _) | Op::DelDest(k, _) => Some(k),
        Op::Flush => None,
    }
}

enum Tolerance {
    /// The kernel already is as the operation wanted.
    AsDone,
    /// Try this instead.
    Retry(Op),
    /// A real failure.
    No,
}

/// keepalived's `ipvs_talk()` tolerances: adding what exists and deleting
/// what is gone succeed; editing a vanished destination adds it.
fn tolerated(op: &Op, e: &IpvsError) -> Tolerance {
    let errno = e.errno();
    match (op, errno) {
        (Op::AddService(_) | Op::AddDest(..), Some(EEXIST)) => Tolerance::AsDone,
        (Op::DelDest(..), Some(ENOENT | ESRCH)) => Tolerance::AsDone,
        (Op::DelService(_), Some(ESRCH | ENOENT)) => Tolerance::AsDone,
        (Op::EditDest(k, d), Some(ENOENT)) => Tolerance::Retry(Op::AddDest(*k, d.clone())),
        (Op::EditService(s), Some(ESRCH)) => Tolerance::Retry(Op::AddService(s.clone())),
        _ => Tolerance::No,
    }
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod refusal_tests;

/// The tests' kernel: a dry run that counts its whole-table reads and can
/// refuse one scheduler, as a kernel without that module does.
#[cfg(test)]
mod test_kernel;
