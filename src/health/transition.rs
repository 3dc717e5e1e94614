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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::load_str;
    use crate::lvs::desired;

    fn config(text: &str) -> Config {
        load_str(text).config
    }

    const SORRY: &str = "virtual_server 10.0.0.1 80 {\n protocol TCP\n quorum 2\n \
        sorry_server 127.0.0.9 80\n real_server 127.0.0.1 80 {\n weight 2\n }\n \
        real_server 127.0.0.2 80 {\n weight 1\n inhibit_on_failure\n }\n}\n";

    fn dests(cfg: &Config, h: &Health) -> Vec<String> {
        desired(cfg, h)
            .save()
            .lines()
            .filter(|l| l.starts_with("-a"))
            .map(String::from)
            .collect()
    }

    #[test]
    fn losing_quorum_swaps_in_the_sorry_server_and_back() {
        let cfg = config(SORRY);
        let mut h = Health::all_alive(&cfg);
        assert!(h.vs[0].quorum_up);
        // Weight 2 leaves: 1 < quorum 2.
        let t = h.set_rs_alive(&cfg, 0, 0, false);
        assert_eq!(
            t,
            vec![
                Transition::RsDown { vs: 0, rs: 0 },
                Transition::QuorumLost {
                    vs: 0,
                    weight_sum: 1
                }
            ]
        );
        // Sorry server in, the live inhibited server kept at weight 0.
        assert_eq!(
            dests(&cfg, &h),
            vec![
                "-a -t 10.0.0.1:80 -r 127.0.0.2:80 -m -w 0",
                "-a -t 10.0.0.1:80 -r 127.0.0.9:80 -m -w 1",
            ]
        );
        let t = h.set_rs_alive(&cfg, 0, 0, true);
        assert_eq!(
            t[1],
            Transition::QuorumGained {
                vs: 0,
                weight_sum: 3
            }
        );
        assert_eq!(
            dests(&cfg, &h),
            vec![
                "-a -t 10.0.0.1:80 -r 127.0.0.1:80 -m -w 2",
                "-a -t 10.0.0.1:80 -r 127.0.0.2:80 -m -w 1",
            ]
        );
    }

    #[test]
    fn inhibited_server_stays_at_weight_zero_and_weights_move_quorum() {
        let cfg = config(SORRY);
        let mut h = Health::all_alive(&cfg);
        assert_eq!(
            h.set_rs_alive(&cfg, 0, 1, false).len(),
            1,
            "3-1=2: quorum kept"
        );
        assert!(dests(&cfg, &h).contains(&"-a -t 10.0.0.1:80 -r 127.0.0.2:80 -m -w 0".to_string()));
        // A dynamic weight of 0 on the other drops the live sum to 0.
        let t = h.set_rs_weight(&cfg, 0, 0, 0);
        assert_eq!(
            t,
            vec![Transition::QuorumLost {
                vs: 0,
                weight_sum: 0
            }]
        );
        // No change, no transition.
        assert!(h.set_rs_alive(&cfg, 0, 1, false).is_empty());
    }
}
