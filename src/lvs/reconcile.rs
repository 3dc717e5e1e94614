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
mod tests {
    use super::*;
    use crate::config::load_str;
    use crate::health::Health;
    use crate::ipvs::dryrun::DryRun;
    use crate::lvs::desired;

    fn table_of(conf: &str) -> Table {
        let cfg = load_str(conf).config;
        desired(&cfg, &Health::all_alive(&cfg))
    }

    const TWO: &str = "virtual_server 10.0.0.1 80 {\n protocol TCP\n lvs_sched rr\n \
        real_server 127.0.0.2 80 {\n weight 2\n }\n real_server 127.0.0.3 80 {\n }\n}\n";
    const ONE_REWEIGHTED: &str = "virtual_server 10.0.0.1 80 {\n protocol TCP\n lvs_sched rr\n \
        real_server 127.0.0.2 80 {\n weight 4\n }\n}\n";

    #[tokio::test]
    async fn partial_updates_touch_only_their_services_and_end_where_a_full_one_does() {
        use crate::lvs::desired::{desired_for, service_sharing};
        use std::collections::BTreeSet;
        let conf = "virtual_server 10.0.0.1 80 {\n protocol TCP\n lvs_sched rr\n quorum 3\n \
            sorry_server 127.0.0.9 80\n real_server 127.0.0.2 80 {\n weight 2\n }\n \
            real_server 127.0.0.3 80 {\n }\n}\n\
            virtual_server 10.0.0.2 80 {\n protocol TCP\n lvs_sched rr\n \
            real_server 127.0.0.4 80 {\n inhibit_on_failure\n }\n}\n";
        let cfg = load_str(conf).config;
        let mut health = Health::all_alive(&cfg);
        let mut rec = Reconciler::new(DryRun::new());
        rec.start(desired(&cfg, &health), false, None)
            .await
            .unwrap();
        let sharing = service_sharing(&cfg);
        // The first server fails: quorum lost, sorry server in.
        health.set_rs_alive(&cfg, 0, 0, false);
        let r = rec
            .set_services(desired_for(&cfg, &health, &sharing[0]))
            .await;
        assert_eq!(r.sent, 3, "two dests out, the sorry server in");
        assert_eq!(rec.expected(), &desired(&cfg, &health));
        // The inhibited one of the other service fails: weight 0, one edit.
        health.set_rs_alive(&cfg, 1, 0, false);
        let r = rec
            .set_services(desired_for(&cfg, &health, &BTreeSet::from([1])))
            .await;
        assert_eq!(r.sent, 1);
        assert_eq!(rec.expected(), &desired(&cfg, &health));
        // And back.
        health.set_rs_alive(&cfg, 0, 0, true);
        rec.set_services(desired_for(&cfg, &health, &sharing[0]))
            .await;
        assert_eq!(rec.expected(), &desired(&cfg, &health));
        // A full set_desired afterwards has nothing left to do.
        assert_eq!(rec.set_desired(desired(&cfg, &health)).await.sent, 0);
        // Stopping removes everything: ownership was kept right.
        rec.stop(FlushOnStop::Off, false).await;
        assert!(rec.expected().services.is_empty());
    }

    #[tokio::test]
    async fn start_adopts_and_keeps_foreign_entries() {
        let foreign = table_of(
            "virtual_server 10.9.9.9 80 {\n protocol TCP\n lvs_sched wlc\n real_server 127.0.0.9 80 {\n }\n}\n",
        );
        let mut kernel = foreign.clone();
        // Part of our table is already there (a restart over a live table).
        let ours = table_of(TWO);
        let (k, ts) = ours.services.iter().next().unwrap();
        let mut partial = ts.clone();
        partial.dests.pop_last();
        kernel.services.insert(*k, partial);

        let mut rec = Reconciler::new(DryRun::with_table(kernel));
        let r = rec.start(ours.clone(), false, None).await.unwrap();
        assert_eq!(r.sent, 1, "only the missing destination is added");
        let mut want = ours.clone();
        want.services.extend(foreign.services.clone());
        assert_eq!(rec.backend_mut().table(), &want);

        // A reload that drops a server and re-weights the other: two operations.
        let r = rec.set_desired(table_of(ONE_REWEIGHTED)).await;
        assert_eq!(r.sent, 2);
        let stop = rec.stop(FlushOnStop::Off, false).await;
        assert_eq!(stop.sent, 2, "one destination, one service");
        assert_eq!(rec.backend_mut().table(), &foreign);
    }

    #[tokio::test]
    async fn lvs_flush_clears_foreign_entries_first() {
        let foreign = table_of(
            "virtual_server 10.9.9.9 80 {\n protocol TCP\n real_server 127.0.0.9 80 {\n }\n}\n",
        );
        let mut rec = Reconciler::new(DryRun::with_table(foreign));
        rec.start(table_of(TWO), true, None).await.unwrap();
        assert_eq!(rec.backend_mut().table(), &table_of(TWO));
    }

    #[tokio::test]
    async fn drift_is_repaired() {
        let mut rec = Reconciler::new(DryRun::new());
        rec.start(table_of(TWO), false, None).await.unwrap();
        assert_eq!(rec.check_drift().await.unwrap().sent, 0);
        // Someone runs `ipvsadm -C`.
        rec.backend_mut().apply(&[Op::Flush]).await;
        let r = rec.check_drift().await.unwrap();
        assert_eq!(r.sent, 3);
        assert_eq!(rec.backend_mut().table(), &table_of(TWO));
    }

    #[tokio::test]
    async fn a_drift_check_reads_the_table_whole_only_when_it_drifted() {
        let mut rec = Reconciler::new(test_kernel::Kernel::refusing(None));
        rec.start(table_of(TWO), false, None).await.unwrap();
        rec.backend_mut().dumps = 0;
        for _ in 0..3 {
            assert_eq!(rec.check_drift().await.unwrap().sent, 0);
        }
        assert_eq!(
            rec.backend_mut().dumps,
            0,
            "no drift: read service by service"
        );
        // Someone else's service is taken as it is, without a repair.
        let foreign = table_of(
            "virtual_server 10.9.9.9 81 {\n protocol TCP\n real_server 127.0.0.9 81 {\n }\n}\n",
        );
        let ops = crate::ipvs::diff(&Table::default(), &foreign, &Owned::all_of(&foreign));
        rec.backend_mut().apply(&ops).await;
        assert_eq!(rec.check_drift().await.unwrap().sent, 0);
        assert_eq!(rec.backend_mut().dumps, 0);
        assert_eq!(rec.expected().services.len(), 2);
        // One of ours deleted behind our back: read whole, repaired.
        let (k, ts) = table_of(TWO).services.into_iter().next().unwrap();
        let d = ts.dests.keys().next().unwrap();
        rec.backend_mut().apply(&[Op::DelDest(k, d)]).await;
        assert_eq!(rec.check_drift().await.unwrap().sent, 1);
        assert_eq!(rec.backend_mut().dumps, 1);
        let mut want = table_of(TWO);
        want.services.extend(foreign.services);
        assert_eq!(rec.backend_mut().dry.table(), &want);
        assert_eq!(rec.check_drift().await.unwrap().sent, 0);
    }

    #[tokio::test]
    async fn a_drift_check_goes_a_budget_of_destinations_at_a_time() {
        let three =
            "virtual_server 10.0.0.1 80 {\n protocol TCP\n real_server 127.0.0.2 80 {\n }\n \
            real_server 127.0.0.3 80 {\n }\n}\n\
            virtual_server 10.0.0.2 80 {\n protocol TCP\n real_server 127.0.0.2 80 {\n }\n}\n\
            virtual_server 10.0.0.3 80 {\n protocol TCP\n real_server 127.0.0.2 80 {\n }\n}\n";
        let mut rec = Reconciler::new(test_kernel::Kernel::refusing(None));
        rec.start(table_of(three), false, None).await.unwrap();
        rec.backend_mut().dumps = 0;
        // No drift: one service a step at a budget of one destination, the
        // first service's two destinations in one step (a service is never
        // split), and the report at the last.
        let mut check = rec.begin_drift_check().await.unwrap();
        for step in 0..2 {
            let r = rec.continue_drift_check(&mut check, 1).await.unwrap();
            assert!(r.is_none(), "step {step}: {r:?}");
        }
        let r = rec.continue_drift_check(&mut check, 1).await.unwrap();
        assert_eq!(r.map(|r| r.sent), Some(0));
        assert_eq!(rec.backend_mut().dumps, 0);
        // The last service loses its destination while the first is read:
        // found at its own step, read whole, repaired.
        let mut check = rec.begin_drift_check().await.unwrap();
        assert!(rec
            .continue_drift_check(&mut check, 1)
            .await
            .unwrap()
            .is_none());
        let (k, ts) = table_of(three).services.into_iter().next_back().unwrap();
        let d = ts.dests.keys().next().unwrap();
        rec.backend_mut().apply(&[Op::DelDest(k, d)]).await;
        assert!(rec
            .continue_drift_check(&mut check, 1)
            .await
            .unwrap()
            .is_none());
        let r = rec.continue_drift_check(&mut check, 1).await.unwrap();
        assert_eq!(r.map(|r| r.sent), Some(1));
        assert_eq!(rec.backend_mut().dumps, 1);
        assert_eq!(rec.backend_mut().dry.table(), &table_of(three));
    }

    #[tokio::test]
    async fn stop_modes() {
        for (mode, keep, sent, left) in [
            (FlushOnStop::Off, false, 3, 0),
            (FlushOnStop::Vs, false, 1, 0),
            (FlushOnStop::Full, false, 1, 0),
            (FlushOnStop::Off, true, 0, 1),
        ] {
            let mut rec = Reconciler::new(DryRun::new());
            rec.start(table_of(TWO), false, None).await.unwrap();
            let r = rec.stop(mode, keep).await;
            assert_eq!(
                (r.sent, rec.backend_mut().table().services.len()),
                (sent, left),
                "{mode:?} keep={keep}"
            );
        }
    }

    #[tokio::test]
    async fn timeouts_are_restored_at_stop() {
        let mut rec = Reconciler::new(DryRun::new());
        let t = Timeouts {
            tcp: 1000,
            tcp_fin: 0,
            udp: 200,
        };
        rec.start(Table::default(), false, Some(t)).await.unwrap();
        let now = rec.backend_mut().timeouts().await.unwrap();
        assert_eq!(
            now,
            Timeouts {
                tcp: 1000,
                tcp_fin: 120,
                udp: 200
            }
        );
        rec.stop(FlushOnStop::Off, false).await;
        let after = rec.backend_mut().timeouts().await.unwrap();
        assert_eq!(
            after,
            Timeouts {
                tcp: 900,
                tcp_fin: 120,
                udp: 300
            }
        );
    }
}

#[cfg(test)]
mod refusal_tests {
    use super::*;
    use crate::ipvs::{Dest, FwdMethod, Service, ServiceKey};
    use std::net::{IpAddr, Ipv4Addr};

    fn table(scheds: &[&str]) -> Table {
        let mut t = Table::default();
        for (i, s) in scheds.iter().enumerate() {
            let key = ServiceKey::Addr {
                protocol: 6,
                addr: IpAddr::V4(Ipv4Addr::new(10, 0, 0, i as u8 + 1)),
                port: 80,
            };
            let d = Dest::new(IpAddr::V4(Ipv4Addr::LOCALHOST), 80, FwdMethod::Masq, 1);
            t.ensure_service(Service {
                key,
                sched_name: s.to_string(),
                flags: 0,
                timeout: 0,
                netmask: !0,
                pe_name: None,
            })
            .dests
            .insert(d.key(), d);
        }
        t
    }

    #[tokio::test]
    async fn a_refused_entry_is_reported_once_not_retried_as_drift() {
        let mut rec = Reconciler::new(test_kernel::Kernel::refusing(Some("twos")));
        let r = rec
            .start(table(&["wlc", "twos", "rr"]), false, None)
            .await
            .unwrap();
        assert!(!r.errors.is_empty(), "the refusal is reported");
        let mut want = table(&["wlc", "twos", "rr"]);
        let refused = *want.services.keys().nth(1).unwrap();
        want.services.remove(&refused);
        assert_eq!(rec.backend_mut().dry.table(), &want);
        // The next drift checks find nothing to do.
        assert_eq!(rec.check_drift().await.unwrap().sent, 0);
        assert_eq!(rec.check_drift().await.unwrap().sent, 0);
    }

    /// One table is kept: what the kernel took is no longer held apart as
    /// desired; what it refused is, until it takes it, across health
    /// changes of other services.
    #[tokio::test]
    async fn only_what_the_kernel_has_not_taken_is_kept_beside_the_expected_table() {
        let mut rec = Reconciler::new(test_kernel::Kernel::refusing(Some("twos")));
        let all = table(&["wlc", "twos", "rr"]);
        let keys: Vec<ServiceKey> = all.services.keys().copied().collect();
        rec.start(all.clone(), false, None).await.unwrap();
        assert_eq!(
            rec.pending.keys(),
            vec![keys[1]],
            "only the refused service"
        );
        // A health change of another service: sent alone, the refused one
        // still pending.
        let mut partial = all.only(&keys[2..]);
        for d in partial
            .services
            .values_mut()
            .flat_map(|s| s.dests.values_mut())
        {
            d.weight = 5;
        }
        let r = rec.set_services(partial).await;
        assert_eq!(r.sent, 1, "one EditDest");
        assert_eq!(rec.pending.keys(), vec![keys[1]]);
        // The kernel takes it now (the module loaded): the next full sync
        // adds it, and nothing is held apart any more.
        rec.backend_mut().refuse = None;
        let mut want = all.clone();
        for d in want.services.get_mut(&keys[2]).unwrap().dests.values_mut() {
            d.weight = 5;
        }
        let r = rec.set_desired(want.clone()).await;
        assert!(r.errors.is_empty());
        assert_eq!(r.sent, 2, "AddService and its AddDest: {r:?}");
        assert!(rec.pending.keys().is_empty());
        assert_eq!(rec.expected(), &want);
        assert_eq!(rec.backend_mut().dry.table(), &want);
        // A service no longer desired is deleted and forgotten.
        let fewer = want.only(&keys[..2]);
        assert_eq!(rec.set_desired(fewer.clone()).await.sent, 1);
        assert!(rec.pending.keys().is_empty());
        assert_eq!(rec.backend_mut().dry.table(), &fewer);
        assert_eq!(rec.set_desired(fewer).await.sent, 0);
    }
}

/// The tests' kernel: a dry run that counts its whole-table reads and can
/// refuse one scheduler, as a kernel without that module does.
#[cfg(test)]
mod test_kernel {
    use super::*;
    use crate::ipvs::dryrun::DryRun;
    use crate::ipvs::{Dest, Service, SyncDaemon};

    pub struct Kernel {
        pub dry: DryRun,
        pub dumps: usize,
        pub refuse: Option<&'static str>,
    }

    impl Kernel {
        pub fn refusing(sched: Option<&'static str>) -> Kernel {
            Kernel {
                dry: DryRun::new(),
                dumps: 0,
                refuse: sched,
            }
        }
    }

    impl Backend for Kernel {
        fn name(&self) -> &'static str {
            "test"
        }
        async fn dump(&mut self) -> Result<Table, IpvsError> {
            self.dumps += 1;
            self.dry.dump().await
        }
        async fn services(&mut self) -> Result<Vec<Service>, IpvsError> {
            self.dry.services().await
        }
        async fn dests_of(&mut self, svc: &ServiceKey) -> Result<Option<Vec<Dest>>, IpvsError> {
            self.dry.dests_of(svc).await
        }
        async fn apply(&mut self, ops: &[Op]) -> Vec<Result<(), IpvsError>> {
            let mut out = Vec::new();
            for op in ops {
                if matches!(op, Op::AddService(s) if Some(s.sched_name.as_str()) == self.refuse) {
                    out.push(Err(IpvsError::Kernel {
                        op: op.to_string(),
                        errno: ENOENT,
                    }));
                } else {
                    out.extend(self.dry.apply(std::slice::from_ref(op)).await);
                }
            }
            out
        }
        async fn timeouts(&mut self) -> Result<Timeouts, IpvsError> {
            self.dry.timeouts().await
        }
        async fn set_timeouts(&mut self, t: Timeouts) -> Result<(), IpvsError> {
            self.dry.set_timeouts(t).await
        }
        async fn start_daemon(&mut self, d: &SyncDaemon) -> Result<(), IpvsError> {
            self.dry.start_daemon(d).await
        }
        async fn stop_daemon(&mut self, state: u32, syncid: u32) -> Result<(), IpvsError> {
            self.dry.stop_daemon(state, syncid).await
        }
    }
}
