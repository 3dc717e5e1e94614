//! Real-server liveness and weight changes as keepalived's `ipwrapper.c`
//! applies them (`perform_svr_state()`, `update_svr_wgt()`), with the
//! quorum they move.
//!
//! Pure, under [`super::Tracker`]: a real server's liveness or weight
//! changed; this answers with the transitions to log and notify, and the
//! updated [`Health`] gives the next IPVS table.

use super::Health;
use crate::config::model::Config;

/// What changed, for logs and notifications.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transition {
    /// The real server joined the pool.
    RsUp {
        /// Virtual server index.
        vs: usize,
        /// Real server index.
        rs: usize,
    },
    /// The real server left the pool.
    RsDown {
        /// Virtual server index.
        vs: usize,
        /// Real server index.
        rs: usize,
    },
    /// Quorum gained (`Gained quorum q+h=t <= w`).
    QuorumGained {
        /// Virtual server index.
        vs: usize,
        /// Live weight.
        weight_sum: u64,
    },
    /// Quorum lost.
    QuorumLost {
        /// Virtual server index.
        vs: usize,
        /// Live weight.
        weight_sum: u64,
    },
}

impl Health {
    /// A real server's liveness changed (its first checker went down, or its
    /// last failed one came up). Returns the transitions, quorum included.
    pub fn set_rs_alive(
        &mut self,
        cfg: &Config,
        vs: usize,
        rs: usize,
        alive: bool,
    ) -> Vec<Transition> {
        let Some(r) = self.vs.get_mut(vs).and_then(|v| v.rs.get_mut(rs)) else {
            return Vec::new();
        };
        if r.alive == alive {
            return Vec::new();
        }
        r.alive = alive;
        let mut out = vec![if alive {
            Transition::RsUp { vs, rs }
        } else {
            Transition::RsDown { vs, rs }
        }];
        out.extend(self.update_quorum(cfg, vs));
        out
    }

    /// A real server's effective weight changed (MISC_CHECK dynamic weight,
    /// FILE_CHECK). Quorum is evaluated again.
    pub fn set_rs_weight(
        &mut self,
        cfg: &Config,
        vs: usize,
        rs: usize,
        weight: i64,
    ) -> Vec<Transition> {
        let Some(r) = self.vs.get_mut(vs).and_then(|v| v.rs.get_mut(rs)) else {
            return Vec::new();
        };
        r.effective_weight = weight;
        self.update_quorum(cfg, vs).into_iter().collect()
    }
}
