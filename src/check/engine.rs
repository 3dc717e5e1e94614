//! The checker engine: runs a [`Plan`] and reports its checks' changes as
//! [`Event`]s.
//!
//! Between the plan and the daemon. One scheduler task holds every check's
//! small record (its pure [`Schedule`]) and a queue of when each runs next;
//! a check that is due gets a task of its own for its probe only, so a hung
//! backend only ever delays its own check, cut at its timeout, and tens of
//! thousands of checks cost a record each, not a task and a timer each.
//! The commonest probes have no task even while out: a TCP_CHECK's connect
//! is a slot of [`super::connects`], a half-open SYN one of
//! [`super::halfopen`]'s; they end through the scheduler's channel.
//! When a probe ends, the scheduler hands the verdict to the check's
//! [`Schedule`], writes the [`Board`] and then reports, with no await
//! between; FILE_CHECKs are watched by one task. The probes, the jitter and
//! the clock (tokio's) are passed in, so scheduling is tested on paused
//! time with scripted results.

use super::beat::Beat;
pub use super::board::{Board, CheckStatus, LastRun, Run, TypeTotals, LATENCY_BUCKETS};
pub use super::jitter::Jitter;
pub use super::plan::{
    file_state, format_rs, plan, plan_carrying, script_identity, Carry, Plan, PlanOptions, Planned,
    ProbeKind,
};
pub use super::prober::{Done, NetProber, Outcome, Prober};
use super::schedule::{Schedule, Verdict};
use super::timeline::{Clock, Timeline};
pub use crate::health::{Change, Event, Roster, RsKey, Start, Subscriber};
use crate::services::track_file::{self as file, FileState};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;
use tokio::task::JoinSet;
use tokio::time::Instant;

/// Running checks. Dropping it stops them (scripts are killed).
pub struct Engine {
    tasks: JoinSet<()>,
    board: Arc<Board>,
}

impl Engine {
    /// Starts every check of `plan`; events go to `tx`. File checks are
    /// watched by one task.
    pub fn start(
        plan: &Plan,
        prober: Arc<dyn Prober>,
        tx: mpsc::UnboundedSender<Event>,
        mut jitter: Jitter,
    ) -> Engine {
        let mut tasks = JoinSet::new();
        let beat = Beat::for_rate(check_rate(plan));
        prober.prepare(plan, beat);
        let board = Arc::new(Board::new(plan));
        let now = Instant::now();
        let clock = Clock::from(now);
        let mut files = Vec::new();
        let mut firsts = Vec::with_capacity(plan.checks.len());
        let mut schedules = Vec::with_capacity(plan.checks.len());
        for (i, c) in plan.checks.iter().enumerate() {
            if let ProbeKind::File { .. } = c.kind {
                files.push(i);
                schedules.push(None);
                continue;
            }
            if let ProbeKind::Bfd { .. } = c.kind {
                // Followed by [`Engine::follow_bfd`].
                schedules.push(None);
                continue;
            }
            // register_checkers_thread(): 1 s plus a random part of warmup.
            let first = now + Duration::from_secs(1) + jitter.upto(c.timing.warmup);
            board.schedule(i, first, |_| {});
            firsts.push((clock.tick(first), i as u32));
            schedules.push(Some(Schedule::new(i, c, plan.start(i))));
        }
        if !firsts.is_empty() {
            let (done, done_rx) = mpsc::unbounded_channel();
            let s = Scheduler {
                done,
                done_rx,
                checks: plan.checks.clone(),
                schedules,
                queue: Timeline::from_unsorted(firsts),
                clock,
                beat,
                prober,
                tx: tx.clone(),
                board: board.clone(),
            };
            tasks.spawn(s.run());
        }
        if !files.is_empty() {
            let checks: Vec<(usize, Planned, Start)> = files
                .iter()
                .map(|&i| (i, plan.checks[i].clone(), plan.start(i)))
                .collect();
            tasks.spawn(watch_files(checks, tx));
        }
        Engine { tasks, board }
    }

    /// The BFD_CHECKs of `plan` follow the sessions' states in `states`
    /// (the BFD subsystem's, kept by the checker): each change of a
    /// session moves its checks Up or Down, with keepalived's line.
    pub fn follow_bfd(
        &mut self,
        plan: &Plan,
        states: tokio::sync::watch::Receiver<BfdStates>,
        tx: mpsc::UnboundedSender<Event>,
    ) {
        let checks: Vec<(usize, Planned, bool)> = plan
            .checks
            .iter()
            .enumerate()
            .filter(|(_, c)| matches!(c.kind, ProbeKind::Bfd { .. }))
            .map(|(i, c)| (i, c.clone(), plan.start(i).state.is_up))
            .collect();
        if !checks.is_empty() {
            self.tasks.spawn(watch_bfds(checks, states, tx));
        }
    }

    /// The checks' status.
    pub fn board(&self) -> Arc<Board> {
        self.board.clone()
    }

    /// Stops every check now.
    pub async fn stop(mut self) {
        self.halt().await;
    }

    /// Stops every check now, keeping the board readable.
    pub async fn halt(&mut self) {
        self.tasks.shutdown().await;
    }
}

/// Checks a second that `plan` runs (one per `delay_loop` each): what the
/// timers' [`Beat`] is chosen by.
fn check_rate(plan: &Plan) -> f64 {
    plan.checks
        .iter()
        .filter(|c| !matches!(c.kind, ProbeKind::File { .. } | ProbeKind::Bfd { .. }))
        .map(|c| 1.0 / c.timing.delay_loop.as_secs_f64().max(1e-3))
        .sum()
}

/// Probes launched at most in one turn of the scheduler ([`Scheduler::run`]).
const LAUNCH_BATCH: usize = 256;

/// What a probe's task hands back: the check, its outcome, when it started
/// and ended.
type Ran = (usize, Outcome, Instant, Instant);

/// Every check's record and when each runs next; the probes out now.
struct Scheduler {
    checks: Arc<Vec<Planned>>,
    /// Per check (`None`: a FILE_CHECK, watched elsewhere).
    schedules: Vec<Option<Schedule>>,
    /// When each check runs next, earliest first (16 bytes an entry, not
    /// an `Instant` and a `usize`'s 24: one per check).
    queue: Timeline<u64, u32>,
    /// The queue's times, from the scheduler's start.
    clock: Clock,
    /// When the timer fires: a due check waits for the next step of it.
    beat: Beat,
    prober: Arc<dyn Prober>,
    /// Where probes launched without a task of their own end.
    done: mpsc::UnboundedSender<Done>,
    done_rx: mpsc::UnboundedReceiver<Done>,
    tx: mpsc::UnboundedSender<Event>,
    board: Arc<Board>,
}

impl Scheduler {
    async fn run(mut self) {
        // Dropped with the scheduler (a halt): every probe out is aborted.
        let mut out: JoinSet<Ran> = JoinSet::new();
        // One timer, moved only when the earliest run changes: a probe's
        // end wakes this loop without registering a timer again. Not
        // polled while nothing is queued.
        let timer = tokio::time::sleep_until(Instant::now());
        tokio::pin!(timer);
        let mut armed = None;
        loop {
            let next = self
                .queue
                .peek()
                .map(|t| self.beat.at(self.clock.instant(t)));
            if let Some(at) = next.filter(|_| next != armed) {
                timer.as_mut().reset(at);
            }
            armed = next;
            // Ends first, launches last: a probe that ended holds its task
            // (its future and its result, ~350 bytes for HTTP_GET) until
            // it is observed. Taken in turn while the thread is saturated,
            // launches kept ahead and ~19,000 of 20,000 HTTP_GET tasks sat
            // ended, each observed (and so its next run queued) a second
            // late; first, the backlog is the queue's due entries instead.
            tokio::select! {
                biased;
                Some((id, r, started, ended)) = self.done_rx.recv() => {
                    self.observe(id, r.map(|()| None), started, ended);
                }
                Some(done) = out.join_next(), if !out.is_empty() => match done {
                    Ok((id, outcome, started, ended)) => self.observe(id, outcome, started, ended),
                    Err(e) if e.is_panic() => {
                        // A probe that panicked is a bug; its check goes on.
                        log::error!("checker probe panicked: {e}");
                    }
                    Err(_) => {}
                },
                () = &mut timer, if armed.is_some() => {
                    let now = self.clock.tick(Instant::now());
                    let mut launched = 0;
                    while launched < LAUNCH_BATCH {
                        let Some((_, id)) = self.queue.pop_due(now) else { break };
                        self.launch(&mut out, id as usize);
                        launched += 1;
                    }
                    // Fired: armed again at the next turn whatever comes.
                    armed = None;
                    if launched == LAUNCH_BATCH {
                        // More are due: the other tasks run first (the
                        // probes' ends among them). A launch can be a
                        // connect (`socket`, `connect`, `epoll_ctl`): ten
                        // thousand due at once are not made in one go.
                        tokio::task::yield_now().await;
                    }
                }
            }
        }
    }

    /// Starts check `id`'s probe in a task of its own.
    fn launch(&mut self, out: &mut JoinSet<Ran>, id: usize) {
        let Some(sch) = self.schedules[id].as_mut() else {
            return;
        };
        let (url, seq) = (sch.url.next(), sch.next_seq());
        if self.prober.launch(&self.checks[id], id, &self.done) {
            return;
        }
        let checks = self.checks.clone();
        let prober = self.prober.clone();
        out.spawn(async move {
            let started = Instant::now();
            let outcome = prober.probe(&checks[id], url, seq).await;
            (id, outcome, started, Instant::now())
        });
    }

    /// A probe's verdict: the schedule's step, the board, the reports, and
    /// the check's next run.
    fn observe(&mut self, id: usize, outcome: Outcome, started: Instant, ended: Instant) {
        let c = &self.checks[id];
        let Some(sch) = self.schedules[id].as_mut() else {
            return;
        };
        let verdict = Verdict::of(outcome);
        let step = sch.observe(c, &verdict);
        for l in &step.warn {
            log::warn!("{l}");
        }
        for l in &step.info {
            log::info!("{l}");
        }
        let next = if step.from_start { started } else { ended } + step.delay;
        // Written before the events are sent, with no await between: a
        // reload that stops the engine then drains the events finds the
        // board and the events in agreement.
        let run = step.judged.then(|| {
            let (ok, reason, kind) = match &verdict {
                Verdict::Fail(r, k) => (false, r.as_str(), *k),
                _ => (true, "", ""),
            };
            Run {
                type_name: c.kind.type_name(),
                ok,
                reason,
                kind,
                latency: ended - started,
                at: ended,
            }
        });
        self.board.observed(
            id,
            next,
            |now| {
                if step.judged {
                    now.state = sch.state;
                    now.url = sch.url;
                    now.misc_status = sch.misc_status;
                }
            },
            run,
        );
        for (change, reason) in step.changes {
            send(&self.tx, id, change, reason);
        }
        self.queue.push(self.clock.tick(next), id as u32);
    }
}

fn send(tx: &mpsc::UnboundedSender<Event>, check: usize, change: Change, reason: String) {
    // The receiver is gone only while the engine is being torn down.
    let _ = tx.send(Event {
        check,
        change,
        reason,
    });
}

/// The BFD sessions' states as the checker last heard them, by name
/// (absent: not heard of yet).
pub type BfdStates = Arc<HashMap<String, bool>>;

/// keepalived's `bfd_check_thread`: a session is taken as Up until BFD says
/// otherwise; an event that changes what is known of it is logged for
/// every check of it ("BFD check of [NAME] RS(...) is DOWN", an `alpha`
/// one already down included, as keepalived logs it) and moves the checks
/// whose state differs.
async fn watch_bfds(
    checks: Vec<(usize, Planned, bool)>,
    mut states: tokio::sync::watch::Receiver<BfdStates>,
    tx: mpsc::UnboundedSender<Event>,
) {
    let mut current: Vec<bool> = checks.iter().map(|c| c.2).collect();
    let mut known: HashMap<&str, bool> = checks
        .iter()
        .filter_map(|(_, c, _)| match &c.kind {
            ProbeKind::Bfd { name } => Some((name.as_str(), true)),
            _ => None,
        })
        .collect();
    loop {
        let now = states.borrow_and_update().clone();
        for (name, was) in known.iter_mut() {
            let Some(&up) = now.get(*name) else { continue };
            if up == *was {
                continue;
            }
            *was = up;
            for (k, (id, c, _)) in checks.iter().enumerate() {
                if !matches!(&c.kind, ProbeKind::Bfd { name: n } if n == name) {
                    continue;
                }
                log::info!(
                    "BFD check of [{name}] RS({}) is {}",
                    c.name,
                    if up { "UP" } else { "DOWN" }
                );
                if current[k] != up {
                    current[k] = up;
                    let change = if up { Change::Up } else { Change::Down };
                    send(&tx, *id, change, format!("BFD {name}"));
                }
            }
        }
        if states.changed().await.is_err() {
            return;
        }
    }
}

async fn watch_files(checks: Vec<(usize, Planned, Start)>, tx: mpsc::UnboundedSender<Event>) {
    let paths: Vec<PathBuf> = checks
        .iter()
        .filter_map(|(_, c, _)| match &c.kind {
            ProbeKind::File { path, .. } => Some(path.clone()),
            _ => None,
        })
        .collect();
    // What the tracker was told at planning; a change made before the
    // watch below was in place is caught by the first pass.
    let mut current: Vec<Option<FileState>> = checks
        .iter()
        .map(|(_, _, start)| {
            Some(if start.state.is_up {
                FileState::Weight(start.cur_weight)
            } else {
                FileState::Fault
            })
        })
        .collect();
    let mut watch = match file::Watch::new(&paths) {
        Ok(w) => w,
        Err(e) => {
            log::error!("FILE_CHECK: cannot watch tracked files: {e}");
            return;
        }
    };
    let mut touched: Vec<PathBuf> = paths.clone();
    loop {
        for (k, (id, c, _)) in checks.iter().enumerate() {
            let ProbeKind::File { path, .. } = &c.kind else {
                continue;
            };
            if !touched.iter().any(|t| t == path) {
                continue;
            }
            // Out of range values are ignored, as keepalived does.
            let Some(new) = file_state(c) else {
                continue;
            };
            let old = current[k];
            if old == Some(new) {
                continue;
            }
            current[k] = Some(new);
            match (old, new) {
                (Some(FileState::Fault), FileState::Weight(w)) => {
                    send(&tx, *id, Change::FileWeight(w), String::new());
                    send(&tx, *id, Change::Up, "file value".into());
                }
                (_, FileState::Weight(w)) => send(&tx, *id, Change::FileWeight(w), String::new()),
                (_, FileState::Fault) => send(&tx, *id, Change::Down, "file value".into()),
            }
        }
        touched = match watch.changed().await {
            Ok(t) => t,
            Err(e) => {
                log::error!("FILE_CHECK: inotify: {e}");
                return;
            }
        };
    }
}

#[cfg(test)]
mod tests;
