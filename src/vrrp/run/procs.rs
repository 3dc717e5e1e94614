//! The runner's `vrrp_track_process` objects: each one's count of
//! matching processes (from [`crate::vrrp::process`], fed by the shell) and
//! whether it has quorum, with keepalived's `fork_delay` and
//! `terminate_delay` (a gain by fork, a loss by exit, counts once it has
//! lasted that long; the opposite change meanwhile cancels it). Part of
//! [`super`].

use super::{Runner, World};
use crate::config::vrrp::{VrrpConfig, VrrpTrackProcess};
use crate::vrrp::process::{Cause, Change};

/// A tracked process object as it runs.
#[derive(Debug, Clone)]
pub struct Proc {
    pub cfg: VrrpTrackProcess,
    /// Matching processes now.
    pub count: u32,
    /// Has quorum (what the instances see).
    pub up: bool,
    /// A delayed change: when it counts.
    pub due: Option<u64>,
}

impl Proc {
    fn in_quorum(&self, n: u32) -> bool {
        n >= self.cfg.quorum && n <= self.cfg.quorum_max
    }
}

/// The tracked processes of `cfg`, their counts and quorum kept from `old`
/// by name (a reload reads the table again only for new ones).
pub(super) fn tracked_processes(cfg: &VrrpConfig, old: &[Proc]) -> Vec<Proc> {
    cfg.track_processes
        .iter()
        .map(|p| match old.iter().find(|o| o.cfg.name == p.name) {
            Some(o) => Proc {
                cfg: p.clone(),
                ..o.clone()
            },
            None => Proc {
                cfg: p.clone(),
                count: 0,
                up: false,
                due: None,
            },
        })
        .collect()
}

impl Runner {
    /// The tracked processes' definitions (for the shell's watcher).
    pub fn process_defs(&self) -> Vec<VrrpTrackProcess> {
        self.procs.iter().map(|p| p.cfg.clone()).collect()
    }

    /// The counts at start (or of the objects a reload added): quorum as
    /// it is, without delays.
    pub(super) fn count_processes(&mut self, w: &mut impl World) {
        for (name, count) in w.process_counts() {
            if let Some(p) = self
                .procs
                .iter_mut()
                .find(|p| p.cfg.name == name && p.count == 0 && !p.up)
            {
                p.count = count;
                p.up = p.in_quorum(count);
            }
        }
    }

    /// New counts of tracked processes.
    pub(super) fn process_changed(&mut self, now: u64, changes: &[Change], w: &mut impl World) {
        for (name, count, cause) in changes {
            let Some(i) = self.procs.iter().position(|p| &p.cfg.name == name) else {
                continue;
            };
            let p = &mut self.procs[i];
            let (was, is) = (p.in_quorum(p.count), p.in_quorum(*count));
            p.count = *count;
            if was == is {
                continue;
            }
            // The opposite change pending is cancelled: the state it would
            // have left is the one we are back to.
            if p.due.take().is_some() {
                continue;
            }
            let delay = match (is, cause) {
                (true, Cause::Fork) => p.cfg.fork_delay_us,
                (false, Cause::Exit) => p.cfg.terminate_delay_us,
                _ => 0,
            };
            if delay > 0 {
                p.due = Some(now + delay);
            } else {
                self.set_process_up(i, is, now, w);
            }
        }
    }

    /// The delayed process changes due at `now`.
    pub(super) fn due_processes(&mut self, now: u64, w: &mut impl World) {
        for i in 0..self.procs.len() {
            if self.procs[i].due.is_some_and(|d| d <= now) {
                self.procs[i].due = None;
                let up = self.procs[i].in_quorum(self.procs[i].count);
                self.set_process_up(i, up, now, w);
            }
        }
    }

    fn set_process_up(&mut self, i: usize, up: bool, now: u64, w: &mut impl World) {
        if self.procs[i].up == up {
            return;
        }
        self.procs[i].up = up;
        let name = self.procs[i].cfg.name.clone();
        w.log(format!(
            "Quorum {} for tracked process {name}",
            if up { "gained" } else { "lost" }
        ));
        for k in 0..self.nodes.len() {
            if self.nodes[k].trackers.procs.iter().any(|t| t.0 == name) {
                self.reassess(k, now, w);
            }
        }
    }
}
