//! What a reload carries from the running checkers to the same checkers of
//! the new configuration (keepalived's `migrate_checkers()`,
//! `check_new_rs_state()`), and what a start carries from a table a
//! previous run left in the kernel: the one startup rule (§6.2, §6.8).
//!
//! Pure. The checker's planner asks [`start_states`] for the state each
//! checker of a real server starts in; [`super::Tracker::carry`] fills a
//! [`Carry`] from the running state.

use super::retry::CheckerState;
pub use crate::config::fx::{FxHasher, FxMap, FxSet};
use crate::config::model::RealServer;
use std::collections::HashMap;
use std::hash::Hash;
use std::net::IpAddr;
use std::sync::Arc;

/// A checker's state when its task starts; also what a reload carries
/// from the running checker (`migrate_checkers()`), and what the state
/// file (extension) keeps across a restart.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct Start {
    /// `is_up`, `has_run`, `retry_it`.
    pub state: CheckerState,
    /// HTTP: the url checked next and the one that took the checker down
    /// (`url_it`, the failed url).
    pub url: UrlAt,
    /// MISC_CHECK `misc_dynamic`: the last exit status applied.
    pub misc_status: Option<u8>,
    /// Its dynamic weight contribution (`cur_weight`).
    pub cur_weight: i64,
}

impl Start {
    /// keepalived's startup state (§6.2): `alpha` checkers down, the first
    /// failure decisive.
    pub fn initial(retry: u32, alpha: bool) -> Start {
        Start {
            state: CheckerState::new(retry, alpha),
            url: UrlAt::FIRST,
            misc_status: None,
            cur_weight: 0,
        }
    }
}

/// HTTP: the url a checker checks next and the one that took it down, in
/// 8 bytes (a start state is kept per check and per board entry: tens of
/// thousands); written as `[next, failed or null]`, as a pair of numbers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(from = "(usize, Option<usize>)", into = "(usize, Option<usize>)")]
pub struct UrlAt {
    next: u32,
    /// `u32::MAX`: none.
    failed: u32,
}

impl UrlAt {
    /// At the first url, none failed.
    pub const FIRST: UrlAt = UrlAt {
        next: 0,
        failed: u32::MAX,
    };

    /// At url `next`, `failed` having taken the checker down.
    pub fn new(next: usize, failed: Option<usize>) -> UrlAt {
        // A checker has far fewer than 2^32 - 1 urls; more reads as none.
        let at = |i: usize| u32::try_from(i).unwrap_or(u32::MAX);
        UrlAt {
            next: at(next),
            failed: failed.map_or(u32::MAX, at),
        }
    }

    /// The url checked next.
    pub fn next(self) -> usize {
        self.next as usize
    }

    /// The url that took the checker down.
    pub fn failed(self) -> Option<usize> {
        (self.failed != u32::MAX).then_some(self.failed as usize)
    }
}

impl From<(usize, Option<usize>)> for UrlAt {
    fn from((next, failed): (usize, Option<usize>)) -> UrlAt {
        UrlAt::new(next, failed)
    }
}

impl From<UrlAt> for (usize, Option<usize>) {
    fn from(u: UrlAt) -> (usize, Option<usize>) {
        (u.next(), u.failed())
    }
}

/// A real server across a reload or a restart: its virtual server (by
/// keepalived's name for it), address and port.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct RsKey {
    /// keepalived's name for the virtual server (`FMT_VS`), one copy per
    /// virtual server.
    pub vs: Arc<str>,
    /// The real server's address.
    pub ip: IpAddr,
    /// Its port.
    pub port: u16,
}

impl RsKey {
    /// Real server `rs` of the virtual server keepalived names `vs`.
    pub fn of(vs: &Arc<str>, rs: &RealServer) -> RsKey {
        RsKey {
            vs: vs.clone(),
            ip: rs.ip,
            port: rs.port,
        }
    }
}

/// What identifies a checker across a reload, as keepalived matches them:
/// its real server, what it does (`P`: the resolved probe, type included,
/// as keepalived's compare functions see it), and which of several
/// identical ones.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct CheckerKey<P> {
    /// Its real server.
    pub rs: RsKey,
    /// What it does.
    pub probe: P,
    /// 0 for the first of identical checkers of the real server, 1 for the
    /// next...
    pub nth: usize,
}

/// The keys of one real server's checkers, in order.
pub fn checker_keys<P: Clone + Eq + Hash>(
    rs: &RsKey,
    probes: impl Iterator<Item = P>,
) -> Vec<CheckerKey<P>> {
    let probes: Vec<P> = probes.collect();
    // Most real servers have one checker: nothing to number apart.
    if probes.len() <= 1 {
        return probes
            .into_iter()
            .map(|probe| CheckerKey {
                rs: rs.clone(),
                probe,
                nth: 0,
            })
            .collect();
    }
    let mut seen: FxMap<P, usize> = FxMap::default();
    probes
        .into_iter()
        .map(|p| {
            let n = seen.entry(p.clone()).or_insert(0);
            let key = CheckerKey {
                rs: rs.clone(),
                probe: p,
                nth: *n,
            };
            *n += 1;
            key
        })
        .collect()
}

/// What the running configuration hands to the next one (a reload), or
/// what a previous run left in the kernel (a start).
#[derive(Debug, Clone)]
pub struct Carry<P> {
    /// The running checkers' states.
    pub checkers: FxMap<CheckerKey<P>, Start>,
    /// The running real servers and whether each was alive.
    pub rs: FxMap<RsKey, bool>,
    /// A reload: real servers not in [`Carry::rs`] are new
    /// (`check_new_rs_state()`).
    pub reload: bool,
    /// At start: real servers found live in the kernel's table. Their
    /// `alpha` checkers start up, so that a restart over a live table takes
    /// no healthy server out before its first check.
    pub live_in_kernel: FxSet<RsKey>,
    /// A reload: the running virtual servers' quorum states, by name.
    pub quorum: HashMap<String, bool>,
    /// A start restoring the states a state file (extension) kept: the
    /// real servers in [`Carry::rs`] are migrated as by a reload, the
    /// others follow the startup rules.
    pub restart: bool,
    /// The virtual servers' names the keys hold, one copy each: a plan that
    /// takes its names from here ([`Carry::vs_name`]) has keys that compare
    /// by pointer, not by text (tens of thousands a reload).
    pub names: FxSet<Arc<str>>,
}

impl<P> Carry<P> {
    /// keepalived's name `name` for a virtual server, as the carried keys
    /// hold it when they do.
    pub fn vs_name(&self, name: String) -> Arc<str> {
        match self.names.get(name.as_str()) {
            Some(n) => n.clone(),
            None => name.into(),
        }
    }
}

impl<P> Default for Carry<P> {
    fn default() -> Self {
        Carry {
            checkers: FxMap::default(),
            rs: FxMap::default(),
            reload: false,
            live_in_kernel: FxSet::default(),
            quorum: HashMap::new(),
            restart: false,
            names: FxSet::default(),
        }
    }
}

impl<P: Eq + Hash> Carry<P> {
    /// Nothing carried: keepalived's startup rules.
    pub fn new() -> Carry<P> {
        Carry::default()
    }
}

/// The one startup rule: the start states of one real server's checkers
/// (`(retry, alpha)` each): keepalived's startup rules, a start over a live
/// kernel table, or a reload's migration (`migrate_checkers()`,
/// `check_new_rs_state()`).
pub fn start_states<P: Eq + Hash>(
    carry: &Carry<P>,
    rs: &RsKey,
    keys: &[CheckerKey<P>],
    conf: &[(u32, bool)],
) -> Vec<Start> {
    if !carry.reload || (carry.restart && !carry.rs.contains_key(rs)) {
        let live = carry.live_in_kernel.contains(rs);
        return conf
            .iter()
            .map(|&(retry, alpha)| Start::initial(retry, alpha && !live))
            .collect();
    }
    let Some(&was_alive) = carry.rs.get(rs) else {
        // A new real server: alpha checkers down; the first failure is not
        // decisive after a reload (retry_it stays 0).
        return conf
            .iter()
            .map(|&(retry, alpha)| {
                let mut s = Start::initial(retry, alpha);
                s.state.retry_it = 0;
                s
            })
            .collect();
    };
    let mut out: Vec<Start> = keys
        .iter()
        .zip(conf)
        .map(|(k, &(retry, _))| {
            let mut s = Start::initial(retry, false);
            s.state.retry_it = 0;
            if let Some(old) = carry.checkers.get(k) {
                if old.state.has_run {
                    s.state.is_up = old.state.is_up;
                }
                s.state.has_run = old.state.has_run;
                if old.state.retry_it > 0 && retry > 0 {
                    s.state.retry_it = old.state.retry_it.min(retry - 1);
                }
                // Successes towards a healthy threshold (extension) carry
                // as the failures do.
                s.state.rise_it = old.state.rise_it;
                s.url = old.url;
                s.misc_status = old.misc_status;
                s.cur_weight = old.cur_weight;
            }
            s
        })
        .collect();
    let failed = out.iter().any(|s| s.state.has_run && !s.state.is_up);
    let any_run = out.iter().any(|s| s.state.has_run);
    if failed || (!was_alive && !any_run) {
        // New checkers of a server that has failed start down until run.
        for (s, &(retry, alpha)) in out.iter_mut().zip(conf) {
            if !s.state.has_run {
                if alpha {
                    s.state.is_up = false;
                }
                s.state.retry_it = retry;
            }
        }
    }
    out
}
