//! Real-server bookkeeping of checker states (`num_failed_checkers`,
//! `cur_weight`): the checkers' reports folded into [`Health`].
//!
//! Pure, between the checks (which report a [`Change`]) and the table: the
//! daemon hands each report to [`Tracker::apply`] and programs the virtual
//! servers its [`Effect`]s name. The checks are seen through [`Roster`],
//! which the checker's plan implements.

use super::carry::{checker_keys, Carry, RsKey, Start};
use super::model::{real_weight, Health, RsHealth};
use super::transition::Transition;
use crate::config::model::Config;
use crate::config::validate::format_vs;
use std::hash::Hash;

/// Where a check's results go: a checker of a real server of a virtual
/// server (indices in config order).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Subscriber {
    /// Virtual server.
    pub vs: usize,
    /// Real server.
    pub rs: usize,
    /// Checker within the real server.
    pub checker: usize,
}

/// What the tracker needs to know of a configuration's checks (the
/// checker's plan): who listens to each, the state each starts in, and
/// what identifies it across a reload.
pub trait Roster {
    /// What a checker does, as a reload matches it (its resolved probe).
    type Probe: Clone + Eq + Hash;
    /// How many distinct checks there are.
    fn len(&self) -> usize;
    /// Whether there are none.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// The checkers check `check` reports for.
    fn subscribers(&self, check: usize) -> &[Subscriber];
    /// The state check `check` starts in.
    fn start(&self, check: usize) -> Start;
    /// What check `check` does.
    fn probe(&self, check: usize) -> Self::Probe;
    /// The checks of real server `rs` of virtual server `vs`, one per
    /// checker, in order.
    fn checks_of(&self, vs: usize, rs: usize) -> &[u32];
    /// Whether any real server of virtual server `vs` may have checks
    /// (a reload skips the others whole: tens of thousands of real
    /// servers without a checker have nothing to carry).
    fn may_check_vs(&self, _vs: usize) -> bool {
        true
    }
}

/// A change reported by a check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    /// The checker came up.
    Up,
    /// The checker went down.
    Down,
    /// A first result confirmed an `alpha` checker down.
    FirstDown,
    /// MISC_CHECK with `misc_dynamic` exited with this status (0 or 2..255).
    MiscStatus(u8),
    /// FILE_CHECK's weight contribution.
    FileWeight(i64),
}

/// A check's report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    /// The check's index in its plan.
    pub check: usize,
    /// What changed.
    pub change: Change,
    /// Why, in words (for logs).
    pub reason: String,
}

/// Per real server: failed checkers and dynamic weights (32 bytes: tens
/// of thousands of them; a checker's up and weight inline for the one
/// most have).
#[derive(Debug, Clone, Default)]
struct RsTrack {
    failed: u32,
    /// Its own weight (`iweight`).
    iweight: i32,
    checkers: PerChecker<Mark>,
}

/// What the tracker holds of one checker of a real server.
#[derive(Debug, Clone, Copy)]
struct Mark {
    /// Its dynamic weight (`cur_weight`).
    weight: i64,
    /// Up, as the table was built from it.
    up: bool,
}

impl RsTrack {
    /// The real server's weight with its checkers' dynamic parts.
    fn weight(&self) -> i64 {
        i64::from(self.iweight) + self.checkers.iter().map(|m| m.weight).sum::<i64>()
    }
}

/// One value per checker of a real server. Most have one checker: its
/// value is kept inline then (a boxed slice of one was a 32-byte block per
/// real server, twice: 1.3 MB at 20,000).
#[derive(Debug, Clone)]
enum PerChecker<T> {
    One(T),
    Many(Box<[T]>),
}

impl<T: Copy> PerChecker<T> {
    fn new(v: T, n: usize) -> PerChecker<T> {
        if n == 1 {
            PerChecker::One(v)
        } else {
            PerChecker::Many(vec![v; n].into())
        }
    }
}

impl<T> Default for PerChecker<T> {
    fn default() -> PerChecker<T> {
        PerChecker::Many(Box::default())
    }
}

impl<T> std::ops::Deref for PerChecker<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        match self {
            PerChecker::One(v) => std::slice::from_ref(v),
            PerChecker::Many(b) => b,
        }
    }
}

impl<T> std::ops::DerefMut for PerChecker<T> {
    fn deref_mut(&mut self) -> &mut [T] {
        match self {
            PerChecker::One(v) => std::slice::from_mut(v),
            PerChecker::Many(b) => b,
        }
    }
}

/// The real servers' records, by virtual server then real server (indexes
/// of the configuration): a record each, no hashing.
#[derive(Debug, Clone, Default)]
struct ByRs(Vec<Vec<RsTrack>>);

impl ByRs {
    fn get(&self, &(vs, rs): &(usize, usize)) -> Option<&RsTrack> {
        self.0.get(vs)?.get(rs)
    }

    fn get_mut(&mut self, &(vs, rs): &(usize, usize)) -> Option<&mut RsTrack> {
        self.0.get_mut(vs)?.get_mut(rs)
    }
}

impl std::ops::Index<&(usize, usize)> for ByRs {
    type Output = RsTrack;
    fn index(&self, k: &(usize, usize)) -> &RsTrack {
        self.get(k).expect("a configured real server")
    }
}

/// What a checker's change did, for logs and notifications.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Effect {
    /// Real-server or quorum transitions (the IPVS table may change).
    Transition(Transition),
    /// A first result confirmed a real server down that started down.
    ConfirmedDown {
        /// Virtual server.
        vs: usize,
        /// Real server.
        rs: usize,
    },
    /// A real server's weight changed.
    Weight {
        /// Virtual server.
        vs: usize,
        /// Real server.
        rs: usize,
        /// Old IPVS weight.
        from: i64,
        /// New IPVS weight.
        to: i64,
    },
}

impl Effect {
    /// The virtual server whose IPVS services this effect may change.
    pub fn table_vs(&self) -> Option<usize> {
        match *self {
            Effect::Transition(
                Transition::RsUp { vs, .. }
                | Transition::RsDown { vs, .. }
                | Transition::QuorumGained { vs, .. }
                | Transition::QuorumLost { vs, .. },
            ) => Some(vs),
            Effect::Weight { vs, .. } => Some(vs),
            Effect::ConfirmedDown { .. } => None,
        }
    }
}

/// Real-server bookkeeping of checker states (`num_failed_checkers`,
/// `cur_weight`), pure.
#[derive(Debug, Clone)]
pub struct Tracker {
    rs: ByRs,
}

impl Tracker {
    /// The state at start, from each check's start state (keepalived's
    /// startup rules, a live kernel table or a reload's carry, FILE_CHECK's
    /// file read when planned). Returns the tracker and the matching
    /// [`Health`]: what a start, a reload and an offline `--plan` program.
    pub fn start(cfg: &Config, roster: &impl Roster) -> (Tracker, Health) {
        let rs = ByRs(
            cfg.virtual_servers
                .iter()
                .enumerate()
                .map(|(vi, vs)| {
                    vs.real_servers
                        .iter()
                        .enumerate()
                        .map(|(ri, r)| {
                            let n = roster.checks_of(vi, ri).len();
                            RsTrack {
                                failed: 0,
                                iweight: r.iweight(),
                                checkers: PerChecker::new(
                                    Mark {
                                        weight: 0,
                                        up: true,
                                    },
                                    n,
                                ),
                            }
                        })
                        .collect()
                })
                .collect(),
        );
        let mut rs = rs;
        for c in 0..roster.len() {
            let start = roster.start(c);
            for s in roster.subscribers(c) {
                let Some(t) = rs.get_mut(&(s.vs, s.rs)) else {
                    continue;
                };
                if !start.state.is_up {
                    t.checkers[s.checker].up = false;
                    t.failed += 1;
                }
                t.checkers[s.checker].weight = start.cur_weight;
            }
        }
        let tracker = Tracker { rs };
        let health = Health::with_start(cfg, |vs, r| {
            let t = &tracker.rs[&(vs, r)];
            RsHealth::new(t.failed == 0, t.weight())
        });
        (tracker, health)
    }

    /// What a reload carries into a new configuration: each checker's
    /// state (the tasks stopped, their events applied), each
    /// real server's, and each virtual server's quorum from `health`.
    /// `now(check)` is a check's state as its task left it.
    pub fn carry<R: Roster>(
        &self,
        cfg: &Config,
        roster: &R,
        now: impl Fn(usize) -> Option<Start>,
        health: &Health,
    ) -> Carry<R::Probe> {
        let mut out = Carry {
            reload: true,
            quorum: cfg
                .virtual_servers
                .iter()
                .zip(&health.vs)
                .map(|(v, h)| (format_vs(v), h.quorum_up))
                .collect(),
            ..Carry::default()
        };
        // Sized once: tens of thousands of entries grow by rehashing (a
        // real server with checks has one at least, a check may serve
        // several).
        out.rs.reserve(roster.len());
        out.checkers.reserve(roster.len());
        for (vi, vs) in cfg.virtual_servers.iter().enumerate() {
            let vs_name = out.vs_name(format_vs(vs));
            out.names.insert(vs_name.clone());
            if !roster.may_check_vs(vi) {
                continue;
            }
            for (ri, rs) in vs.real_servers.iter().enumerate() {
                let Some(t) = self.rs.get(&(vi, ri)) else {
                    continue;
                };
                // Only a real server's checkers start from what it was
                // (start_states): one without any has nothing to carry.
                let ids = roster.checks_of(vi, ri);
                if ids.is_empty() {
                    continue;
                }
                let rk = RsKey::of(&vs_name, rs);
                out.rs.insert(rk.clone(), t.failed == 0);
                let keys = checker_keys(&rk, ids.iter().map(|&i| roster.probe(i as usize)));
                for (n, (key, &id)) in keys.into_iter().zip(ids).enumerate() {
                    let id = id as usize;
                    let Some(mut start) = now(id) else { continue };
                    // The tracker holds the up state the table was built
                    // from, and the weight per real server.
                    let mark = t.checkers.get(n);
                    start.state.is_up = mark.map_or(start.state.is_up, |m| m.up);
                    start.cur_weight = mark.map_or(0, |m| m.weight);
                    out.checkers.insert(key, start);
                }
            }
        }
        out
    }

    /// How many of a real server's checkers are down.
    pub fn failed(&self, vs: usize, rs: usize) -> usize {
        self.rs.get(&(vs, rs)).map_or(0, |t| t.failed as usize)
    }

    /// Whether a subscriber's checker is up.
    pub fn checker_up(&self, s: &Subscriber) -> bool {
        self.rs
            .get(&(s.vs, s.rs))
            .and_then(|t| t.checkers.get(s.checker))
            .is_none_or(|m| m.up)
    }

    /// A subscriber's checker's dynamic weight (`cur_weight`).
    pub fn checker_weight(&self, s: &Subscriber) -> i64 {
        self.rs
            .get(&(s.vs, s.rs))
            .and_then(|t| t.checkers.get(s.checker))
            .map_or(0, |m| m.weight)
    }

    /// Applies one event to `health`; returns what it did.
    pub fn apply(
        &mut self,
        cfg: &Config,
        roster: &impl Roster,
        health: &mut Health,
        ev: &Event,
    ) -> Vec<Effect> {
        let mut out = Vec::new();
        if ev.check >= roster.len() {
            return out;
        }
        for s in roster.subscribers(ev.check) {
            let Some(t) = self.rs.get_mut(&(s.vs, s.rs)) else {
                continue;
            };
            match ev.change {
                Change::Up | Change::Down => {
                    let up = ev.change == Change::Up;
                    if t.checkers[s.checker].up == up {
                        continue;
                    }
                    t.checkers[s.checker].up = up;
                    if up {
                        t.failed = t.failed.saturating_sub(1);
                    } else {
                        t.failed += 1;
                    }
                    let alive = t.failed == 0;
                    out.extend(
                        health
                            .set_rs_alive(cfg, s.vs, s.rs, alive)
                            .into_iter()
                            .map(Effect::Transition),
                    );
                }
                Change::FirstDown => out.push(Effect::ConfirmedDown { vs: s.vs, rs: s.rs }),
                Change::MiscStatus(st) => {
                    t.checkers[s.checker].weight = if st >= 2 {
                        i64::from(st) - 2 - i64::from(t.iweight)
                    } else {
                        0
                    };
                    out.extend(self_weight(cfg, health, t, s));
                }
                Change::FileWeight(w) => {
                    t.checkers[s.checker].weight = w;
                    out.extend(self_weight(cfg, health, t, s));
                }
            }
        }
        out
    }
}

fn self_weight(cfg: &Config, health: &mut Health, t: &RsTrack, s: &Subscriber) -> Vec<Effect> {
    let new = t.weight();
    let old = health
        .vs
        .get(s.vs)
        .and_then(|v| v.rs.get(s.rs))
        .map(|r| r.effective_weight)
        .unwrap_or(new);
    if old == new {
        return Vec::new();
    }
    let from = i64::from(real_weight(old));
    let to = i64::from(real_weight(new));
    let mut out = Vec::new();
    if from != to {
        out.push(Effect::Weight {
            vs: s.vs,
            rs: s.rs,
            from,
            to,
        });
    }
    out.extend(
        health
            .set_rs_weight(cfg, s.vs, s.rs, new)
            .into_iter()
            .map(Effect::Transition),
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_real_server_s_record_stays_small() {
        assert!(std::mem::size_of::<RsTrack>() <= 32);
        let mut t = RsTrack {
            failed: 0,
            iweight: 3,
            checkers: PerChecker::new(
                Mark {
                    weight: 0,
                    up: true,
                },
                2,
            ),
        };
        t.checkers[1].weight = -2;
        assert_eq!(t.weight(), 1);
        assert!(t.checkers.iter().all(|m| m.up));
    }
}
