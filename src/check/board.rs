//! Every check's live status: its state as a reload would carry it, its
//! counters, when it runs next; and, per checker type, the probes'
//! latencies and failures summed.
//!
//! Written by the scheduler (before it reports, with no await between)
//! and read by the daemon: the reload's carry (§6.8), the status socket,
//! the metrics and the data file. A check's entry is kept small (tens of
//! thousands of them): the latency histogram and the failure counts, which
//! the metrics only ever show per checker type, are kept per type.

use super::plan::Plan;
use super::timeline::Clock;
use crate::health::Start;
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

/// How one check went last.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LastRun {
    /// It passed.
    pub ok: bool,
    /// Why not, in words (empty when it passed).
    pub error: Box<str>,
    /// How long the probe took.
    pub latency: Duration,
    /// When it ended.
    pub at: tokio::time::Instant,
}

/// Upper bounds (seconds) of the probe latency histogram's buckets; the
/// last bucket is everything above.
pub const LATENCY_BUCKETS: [f64; 12] = [
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 5.0,
];

/// A check's live status.
#[derive(Debug, Clone)]
pub struct CheckStatus {
    /// Its state now, as a reload would carry it.
    pub now: Start,
    /// Probes run.
    pub runs: u64,
    /// Consecutive passes (0 after a failure).
    pub successes: u32,
    /// Consecutive failures (0 after a pass).
    pub failures: u32,
    /// The latest result.
    pub last: Option<LastRun>,
    /// When it runs next.
    pub next_run: Option<tokio::time::Instant>,
}

/// A check's status as the board keeps it: [`CheckStatus`] in 80 bytes
/// rather than 120 (tens of thousands of them): times as nanoseconds from
/// the board's epoch, the latency in microseconds, the reason of a failure
/// behind one thin pointer (none while it passes).
#[derive(Debug)]
struct Entry {
    now: Start,
    runs: u64,
    successes: u32,
    failures: u32,
    /// The latest result's reason (none when it passed, or none yet).
    error: Option<Box<Box<str>>>,
    /// The latest result's latency, µs (saturating at about 71 minutes).
    latency_us: u32,
    /// A result was recorded.
    has_last: bool,
    /// The latest result passed.
    ok: bool,
    /// When the latest result came, ns from the epoch.
    at: u64,
    /// When it runs next, ns from the epoch ([`NEVER`]: not scheduled).
    next_run: u64,
}

/// No next run.
const NEVER: u64 = u64::MAX;

impl Entry {
    fn new(now: Start) -> Entry {
        Entry {
            now,
            runs: 0,
            successes: 0,
            failures: 0,
            error: None,
            latency_us: 0,
            has_last: false,
            ok: false,
            at: 0,
            next_run: NEVER,
        }
    }

    fn record(&mut self, ok: bool, reason: &str, latency: Duration, at: u64) {
        self.runs += 1;
        if ok {
            self.successes = self.successes.saturating_add(1);
            self.failures = 0;
        } else {
            self.failures = self.failures.saturating_add(1);
            self.successes = 0;
        }
        // A failing check mostly repeats its reason: no new string then.
        if reason.is_empty() {
            self.error = None;
        } else if self.error.as_deref().is_none_or(|e| **e != *reason) {
            self.error = Some(Box::new(reason.into()));
        }
        self.has_last = true;
        self.ok = ok;
        self.latency_us = u32::try_from(latency.as_micros()).unwrap_or(u32::MAX);
        self.at = at;
    }
}

/// The probes of one checker type, summed over its checks.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TypeTotals {
    /// Probe latencies: counts per [`LATENCY_BUCKETS`] bucket (and one
    /// above).
    pub latency_counts: [u64; LATENCY_BUCKETS.len() + 1],
    /// Sum of the latencies, seconds.
    pub latency_sum: f64,
    /// Failures by kind ([`super::conn::Failure::kind`]).
    pub errors: Vec<(&'static str, u64)>,
}

impl TypeTotals {
    fn record(&mut self, ok: bool, kind: &'static str, latency: Duration) {
        let secs = latency.as_secs_f64();
        let bucket = LATENCY_BUCKETS
            .iter()
            .position(|&b| secs <= b)
            .unwrap_or(LATENCY_BUCKETS.len());
        self.latency_counts[bucket] += 1;
        self.latency_sum += secs;
        if !ok {
            let kind = if kind.is_empty() { "failed" } else { kind };
            match self.errors.iter_mut().find(|(k, _)| *k == kind) {
                Some((_, n)) => *n += 1,
                None => self.errors.push((kind, 1)),
            }
        }
    }
}

/// One probe's result, as the board records it.
#[derive(Debug, Clone, Copy)]
pub struct Run<'a> {
    /// keepalived's name of the checker type ([`super::plan::ProbeKind::type_name`]).
    pub type_name: &'static str,
    /// It passed.
    pub ok: bool,
    /// Why not, in words.
    pub reason: &'a str,
    /// The failure's kind, for the metrics.
    pub kind: &'static str,
    /// How long it took.
    pub latency: Duration,
    /// When it ended.
    pub at: tokio::time::Instant,
}

/// Every check's status, written by the scheduler after each run and read
/// by the daemon: what a reload carries (§6.8), and what operators are
/// shown.
#[derive(Debug)]
pub struct Board {
    checks: Vec<Mutex<Entry>>,
    /// The entries' times, from the board's start.
    clock: Clock,
    /// Per checker type planned (a handful at most).
    totals: Mutex<Vec<(&'static str, TypeTotals)>>,
}

/// A lock whose holder panicked still guards a usable status.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Board {
    /// Each check at its start state.
    pub fn new(plan: &Plan) -> Board {
        let mut checks = Vec::with_capacity(plan.checks.len());
        checks.extend((0..plan.checks.len()).map(|i| Mutex::new(Entry::new(plan.start(i)))));
        // Every type planned is shown from the start, at zero.
        let mut totals: Vec<(&'static str, TypeTotals)> = Vec::new();
        for c in plan.checks.iter() {
            let t = c.kind.type_name();
            if !totals.iter().any(|(n, _)| *n == t) {
                totals.push((t, TypeTotals::default()));
            }
        }
        Board {
            checks,
            // Before any time an entry records: its checks start later.
            clock: Clock::from(tokio::time::Instant::now()),
            totals: Mutex::new(totals),
        }
    }

    /// Check `id`'s status now.
    pub fn get(&self, id: usize) -> Option<CheckStatus> {
        self.checks.get(id).map(|m| self.status(&lock(m)))
    }

    /// What `f` reads of check `id`'s status.
    pub fn read<T>(&self, id: usize, f: impl FnOnce(&CheckStatus) -> T) -> Option<T> {
        self.get(id).map(|s| f(&s))
    }

    /// Check `id`'s state now, as a reload would carry it.
    pub fn now(&self, id: usize) -> Option<Start> {
        self.checks.get(id).map(|m| lock(m).now)
    }

    fn status(&self, e: &Entry) -> CheckStatus {
        CheckStatus {
            now: e.now,
            runs: e.runs,
            successes: e.successes,
            failures: e.failures,
            last: e.has_last.then(|| LastRun {
                ok: e.ok,
                error: e.error.as_deref().map_or_else(Box::default, |e| e.clone()),
                latency: Duration::from_micros(u64::from(e.latency_us)),
                at: self.clock.instant(e.at),
            }),
            next_run: (e.next_run != NEVER).then(|| self.clock.instant(e.next_run)),
        }
    }

    /// The probes' totals per checker type planned.
    pub fn totals(&self) -> Vec<(&'static str, TypeTotals)> {
        lock(&self.totals).clone()
    }

    /// Check `id`'s state now, changed by `f` (a test's check having run).
    #[cfg(test)]
    pub(super) fn update(&self, id: usize, f: impl FnOnce(&mut Start)) {
        if let Some(m) = self.checks.get(id) {
            f(&mut lock(m).now);
        }
    }

    /// Check `id`'s next run, and its state now changed by `f`.
    pub(super) fn schedule(
        &self,
        id: usize,
        next_run: tokio::time::Instant,
        f: impl FnOnce(&mut Start),
    ) {
        self.observed(id, next_run, f, None);
    }

    /// Check `id`'s next run, its state now changed by `f`, and a judged
    /// run if there was one (its own counters and its type's totals): the
    /// entry locked once for all (at tens of thousands of checks a second
    /// its line is seldom in the cache).
    pub(super) fn observed(
        &self,
        id: usize,
        next_run: tokio::time::Instant,
        f: impl FnOnce(&mut Start),
        run: Option<Run<'_>>,
    ) {
        let Some(m) = self.checks.get(id) else {
            return;
        };
        let next_run = self.clock.tick(next_run);
        {
            let mut e = lock(m);
            f(&mut e.now);
            e.next_run = next_run;
            if let Some(run) = &run {
                e.record(run.ok, run.reason, run.latency, self.clock.tick(run.at));
            }
        }
        let Some(run) = run else { return };
        let mut totals = lock(&self.totals);
        let i = match totals.iter().position(|(t, _)| *t == run.type_name) {
            Some(i) => i,
            None => {
                totals.push((run.type_name, TypeTotals::default()));
                totals.len() - 1
            }
        };
        totals[i].1.record(run.ok, run.kind, run.latency);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_check_s_counters_and_its_type_s_totals() {
        let board = Board::new(&Plan::default());
        let mut e = Entry::new(Start::initial(1, false));
        let fresh = board.status(&e);
        assert!(fresh.last.is_none() && fresh.next_run.is_none());
        let at = tokio::time::Instant::now() + Duration::from_millis(1500);
        e.record(
            false,
            "refused",
            Duration::from_millis(2),
            board.clock.tick(at),
        );
        e.record(
            false,
            "refused",
            Duration::from_millis(3),
            board.clock.tick(at),
        );
        let st = board.status(&e);
        assert_eq!((st.runs, st.failures, st.successes), (2, 2, 0));
        assert_eq!(&*st.last.as_ref().unwrap().error, "refused");
        e.record(true, "", Duration::from_micros(300), board.clock.tick(at));
        let st = board.status(&e);
        assert_eq!((st.runs, st.failures, st.successes), (3, 0, 1));
        let l = st.last.unwrap();
        assert!(l.ok && l.error.is_empty());
        assert_eq!(l.latency, Duration::from_micros(300));
        assert_eq!(l.at, at, "kept as nanoseconds from the board's epoch");
        e.next_run = board.clock.tick(at + Duration::from_secs(1));
        assert_eq!(board.status(&e).next_run, Some(at + Duration::from_secs(1)));
        assert!(std::mem::size_of::<Entry>() <= 80);

        let mut t = TypeTotals::default();
        t.record(false, "refused", Duration::from_millis(2));
        t.record(false, "", Duration::from_secs(9));
        t.record(true, "", Duration::from_micros(300));
        assert_eq!(t.latency_counts[0], 1, "0.3 ms: the first bucket");
        assert_eq!(t.latency_counts[2], 1, "2 ms: le 0.0025");
        assert_eq!(t.latency_counts[LATENCY_BUCKETS.len()], 1, "9 s: above");
        assert_eq!(t.errors, vec![("refused", 1), ("failed", 1)]);
        assert!((t.latency_sum - 9.0023).abs() < 1e-9);
    }
}
