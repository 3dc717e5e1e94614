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

impl CheckStatus {
    fn record(&mut self, ok: bool, reason: &str, latency: Duration, at: tokio::time::Instant) {
        self.runs += 1;
        if ok {
            self.successes = self.successes.saturating_add(1);
            self.failures = 0;
        } else {
            self.failures = self.failures.saturating_add(1);
            self.successes = 0;
        }
        let error = match &mut self.last {
            // A failing check mostly repeats its reason: no new string then.
            Some(l) if &*l.error == reason => std::mem::take(&mut l.error),
            _ => reason.into(),
        };
        self.last = Some(LastRun {
            ok,
            error,
            latency,
            at,
        });
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
    checks: Vec<Mutex<CheckStatus>>,
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
        checks.extend(plan.checks.iter().map(|c| {
            Mutex::new(CheckStatus {
                now: c.start,
                runs: 0,
                successes: 0,
                failures: 0,
                last: None,
                next_run: None,
            })
        }));
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
            totals: Mutex::new(totals),
        }
    }

    /// Check `id`'s status now.
    pub fn get(&self, id: usize) -> Option<CheckStatus> {
        self.checks.get(id).map(|m| lock(m).clone())
    }

    /// What `f` reads of check `id`'s status, without a copy of it (a
    /// scrape reads tens of thousands).
    pub fn read<T>(&self, id: usize, f: impl FnOnce(&CheckStatus) -> T) -> Option<T> {
        self.checks.get(id).map(|m| f(&lock(m)))
    }

    /// The probes' totals per checker type planned.
    pub fn totals(&self) -> Vec<(&'static str, TypeTotals)> {
        lock(&self.totals).clone()
    }

    pub(super) fn update(&self, id: usize, f: impl FnOnce(&mut CheckStatus)) {
        if let Some(m) = self.checks.get(id) {
            f(&mut lock(m));
        }
    }

    /// A judged run of check `id`: its own counters and its type's totals.
    pub(super) fn record(&self, id: usize, run: Run<'_>) {
        let Some(m) = self.checks.get(id) else {
            return;
        };
        lock(m).record(run.ok, run.reason, run.latency, run.at);
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
        let mut st = CheckStatus {
            now: Start::initial(1, false),
            runs: 0,
            successes: 0,
            failures: 0,
            last: None,
            next_run: None,
        };
        let at = tokio::time::Instant::now();
        st.record(false, "refused", Duration::from_millis(2), at);
        st.record(false, "refused", Duration::from_millis(3), at);
        assert_eq!((st.runs, st.failures, st.successes), (2, 2, 0));
        assert_eq!(&*st.last.as_ref().unwrap().error, "refused");
        st.record(true, "", Duration::from_micros(300), at);
        assert_eq!((st.runs, st.failures, st.successes), (3, 0, 1));
        let l = st.last.unwrap();
        assert!(l.ok && l.error.is_empty());
        assert_eq!(l.latency, Duration::from_micros(300));

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
