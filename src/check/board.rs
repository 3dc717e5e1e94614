//! Every check's live status: its state as a reload would carry it, its
//! counters and latencies, when it runs next.
//!
//! Written by each check's task (before it reports, with no await between)
//! and read by the daemon: the reload's carry (§6.8), the status socket,
//! the metrics and the data file.

use super::plan::Plan;
use crate::health::Start;
use std::time::Duration;

/// How one check went last.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LastRun {
    /// It passed.
    pub ok: bool,
    /// Why not, in words.
    pub error: String,
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
    pub successes: u64,
    /// Consecutive failures (0 after a pass).
    pub failures: u64,
    /// The latest result.
    pub last: Option<LastRun>,
    /// When it runs next.
    pub next_run: Option<tokio::time::Instant>,
    /// Probe latencies: counts per [`LATENCY_BUCKETS`] bucket (and one
    /// above), and their sum in seconds.
    pub latency_counts: [u64; LATENCY_BUCKETS.len() + 1],
    /// Sum of the latencies, seconds.
    pub latency_sum: f64,
    /// Failures by kind ([`super::conn::Failure::kind`]).
    pub errors: Vec<(&'static str, u64)>,
}

impl CheckStatus {
    pub(super) fn record(
        &mut self,
        ok: bool,
        reason: &str,
        kind: &'static str,
        latency: Duration,
        at: tokio::time::Instant,
    ) {
        self.runs += 1;
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
        if ok {
            self.successes += 1;
            self.failures = 0;
        } else {
            self.failures += 1;
            self.successes = 0;
        }
        match &mut self.last {
            // The error string is reused: most runs pass, a failing check
            // repeats its reason.
            Some(l) => {
                l.ok = ok;
                l.error.clear();
                l.error.push_str(reason);
                l.latency = latency;
                l.at = at;
            }
            None => {
                self.last = Some(LastRun {
                    ok,
                    error: reason.to_string(),
                    latency,
                    at,
                })
            }
        }
    }
}

/// Every check's status, written by its task after each run and read by
/// the daemon: what a reload carries (§6.8), and what operators are shown.
#[derive(Debug)]
pub struct Board(Vec<std::sync::Mutex<CheckStatus>>);

impl Board {
    /// Each check at its start state.
    pub fn new(plan: &Plan) -> Board {
        Board(
            plan.checks
                .iter()
                .map(|c| {
                    std::sync::Mutex::new(CheckStatus {
                        now: c.start,
                        runs: 0,
                        successes: 0,
                        failures: 0,
                        last: None,
                        next_run: None,
                        latency_counts: [0; LATENCY_BUCKETS.len() + 1],
                        latency_sum: 0.0,
                        errors: Vec::new(),
                    })
                })
                .collect(),
        )
    }

    /// Check `id`'s status now.
    pub fn get(&self, id: usize) -> Option<CheckStatus> {
        self.0
            .get(id)
            // A task that panicked holding the lock left a usable status.
            .map(|m| m.lock().unwrap_or_else(|e| e.into_inner()).clone())
    }

    pub(super) fn update(&self, id: usize, f: impl FnOnce(&mut CheckStatus)) {
        if let Some(m) = self.0.get(id) {
            f(&mut m.lock().unwrap_or_else(|e| e.into_inner()));
        }
    }
}
