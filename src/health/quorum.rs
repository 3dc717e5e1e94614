//! A virtual server's quorum (`update_quorum_state()`): the live weight
//! against `quorum`, with `hysteresis`. Pure.

use super::{Health, Transition};
use crate::config::model::Config;

/// `update_quorum_state()`: the new quorum state given the live weight
/// sum, with hysteresis: gained at `quorum + hysteresis`, lost below
/// `quorum - hysteresis` or at a zero sum.
pub fn quorum_up(currently_up: bool, weight_sum: u64, quorum: u32, hysteresis: u32) -> bool {
    let (q, h) = (u64::from(quorum), u64::from(hysteresis));
    if currently_up {
        !(weight_sum == 0 || weight_sum < q.saturating_sub(h))
    } else {
        weight_sum >= q + h
    }
}

impl Health {
    /// Evaluates virtual server `vs`'s quorum again; the transition if it
    /// flipped.
    pub(super) fn update_quorum(&mut self, cfg: &Config, vs: usize) -> Option<Transition> {
        let conf = cfg.virtual_servers.get(vs)?;
        let h = self.vs.get_mut(vs)?;
        let weight_sum = h.live_weight();
        let up = quorum_up(h.quorum_up, weight_sum, conf.quorum, conf.hysteresis);
        if up == h.quorum_up {
            return None;
        }
        h.quorum_up = up;
        Some(if up {
            Transition::QuorumGained { vs, weight_sum }
        } else {
            Transition::QuorumLost { vs, weight_sum }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quorum_with_hysteresis() {
        // quorum 3, hysteresis 1: gained at 4, lost below 2.
        assert!(!quorum_up(false, 3, 3, 1));
        assert!(quorum_up(false, 4, 3, 1));
        assert!(quorum_up(true, 2, 3, 1));
        assert!(!quorum_up(true, 1, 3, 1));
        // Defaults: lost when no live weight.
        assert!(!quorum_up(true, 0, 1, 0));
        assert!(quorum_up(false, 1, 1, 0));
    }
}
