//! The health model: per virtual server its quorum state, per real server
//! whether it is alive and its effective weight, in config order.
//!
//! What the checkers' reports are folded into ([`super::Tracker`]) and what
//! [`crate::lvs::desired`] turns into an IPVS table. Pure.

use crate::config::model::Config;

/// Health of one real server as the state machine sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RsHealth {
    /// All its checkers are up.
    pub alive: bool,
    /// Failed, and kept at weight 0 while its connections end (extension
    /// `drain_timeout`; the daemon sets and clears it).
    pub draining: bool,
    /// Slow start (extension `slow_start`): the thousandths of its weight it
    /// gets now; [`RAMP_FULL`] when not ramping.
    pub ramp: u16,
    /// `iweight` plus the checkers' dynamic weights (may be out of range;
    /// clamped when programmed).
    pub effective_weight: i64,
}

/// [`RsHealth::ramp`] of a server at its whole weight.
pub const RAMP_FULL: u16 = 1000;

impl RsHealth {
    /// Alive or not, at `effective_weight`, neither draining nor ramping.
    pub fn new(alive: bool, effective_weight: i64) -> RsHealth {
        RsHealth {
            alive,
            draining: false,
            ramp: RAMP_FULL,
            effective_weight,
        }
    }
}

/// Health of one virtual server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VsHealth {
    /// Quorum reached (if not, and there is a sorry server, it is in use).
    pub quorum_up: bool,
    /// Per real server, in config order.
    pub rs: Vec<RsHealth>,
}

/// Health of every virtual server, in config order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Health {
    /// Per virtual server.
    pub vs: Vec<VsHealth>,
}

impl Health {
    /// The state at start with each real server's health given by
    /// `rs_health(vs, rs)`; quorum from the live weights
    /// (`update_quorum_state(vs, init=true)`).
    pub fn with_start(cfg: &Config, rs_health: impl Fn(usize, usize) -> RsHealth) -> Health {
        Health {
            vs: cfg
                .virtual_servers
                .iter()
                .enumerate()
                .map(|(vi, vs)| {
                    let rs: Vec<RsHealth> = (0..vs.real_servers.len())
                        .map(|ri| rs_health(vi, ri))
                        .collect();
                    let mut h = VsHealth {
                        quorum_up: false,
                        rs,
                    };
                    h.quorum_up =
                        super::quorum::quorum_up(false, h.live_weight(), vs.quorum, vs.hysteresis);
                    h
                })
                .collect(),
        }
    }
}

/// `real_weight()`: the weight IPVS accepts.
pub fn real_weight(w: i64) -> u32 {
    w.clamp(0, i64::from(i32::MAX)) as u32
}

impl VsHealth {
    /// Every real server has failed (and there is one at least).
    pub fn all_failed(&self) -> bool {
        !self.rs.is_empty() && self.rs.iter().all(|r| !r.alive)
    }

    /// `weight_sum`: the IPVS weights of the live real servers.
    pub fn live_weight(&self) -> u64 {
        self.rs
            .iter()
            .filter(|r| r.alive)
            .map(|r| u64::from(real_weight(r.effective_weight)))
            .sum()
    }
}

#[cfg(test)]
impl Health {
    /// Every real server alive at its configured weight (tests of the
    /// table; the startup rule is [`super::Tracker::start`]).
    pub fn all_alive(cfg: &Config) -> Health {
        Health::with_start(cfg, |vs, rs| {
            let v = &cfg.virtual_servers[vs];
            RsHealth::new(true, i64::from(v.real_servers[rs].iweight()))
        })
    }
}
