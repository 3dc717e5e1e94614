//! Slow start and drain (extensions `slow_start`, `drain_timeout` of a
//! virtual server): a real server that comes up gets its weight in steps
//! over `slow_start` (HAProxy's `slowstart`); one that fails, or that a
//! reload or an edit removes, stays in the table at weight 0 until the
//! kernel counts no active connection to it or `drain_timeout` passes
//! (ldirectord's quiescent servers, kube-proxy's graceful termination).
//!
//! Pure: the daemon passes the clock in, the health transitions it saw and
//! the kernel's connection counts it read; this keeps who ramps and who
//! drains since when, writes it into the [`Health`] the table is made from
//! ([`RsHealth::ramp`], [`RsHealth::draining`]) and says which virtual
//! servers' services to program again. Real servers are named by their
//! virtual server's and their own address, so a reload keeps both.

use crate::config::model::{Config, VirtualServer};
use crate::config::validate::format_vs;
use crate::health::{Effect, Health, RsHealth, RsKey, Transition, RAMP_FULL};
use crate::ipvs::table::{Dest, DestKey, ServiceKey, Table};
use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::net::IpAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The thousandths of its weight a server gets `elapsed` into a slow start
/// of `length`.
pub fn ramp(elapsed: Duration, length: Duration) -> u16 {
    if length.is_zero() || elapsed >= length {
        return RAMP_FULL;
    }
    (elapsed.as_micros() * u128::from(RAMP_FULL) / length.as_micros()) as u16
}

/// A real server being drained: failed, or gone from the configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Drain {
    /// Which.
    pub rs: RsKey,
    /// Since when.
    pub since: Instant,
    /// How long at most.
    pub timeout: Duration,
    /// Its table entries at weight 0 when the configuration no longer has
    /// it (a removal); empty for a failed server (its entries follow from
    /// the configuration and [`RsHealth::draining`]).
    pub left: Vec<(ServiceKey, Dest)>,
}

/// Why a drain ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DrainEnd {
    /// No active connection left.
    Drained,
    /// `drain_timeout` passed with this many active connections.
    TimedOut(u32),
}

/// Who ramps and who drains.
#[derive(Debug, Default, Clone)]
pub struct Graceful {
    ramps: Vec<(RsKey, Instant, Duration)>,
    drains: Vec<Drain>,
}

fn rs_key(vs: &VirtualServer, ri: usize) -> Option<RsKey> {
    let rs = vs.real_servers.get(ri)?;
    Some(RsKey::of(&Arc::from(format_vs(vs)), rs))
}

/// The virtual servers of a configuration by keepalived's name, made once
/// per call, so that finding a real server is not a walk over every
/// virtual server's name.
struct Places<'c> {
    cfg: &'c Config,
    by_name: BTreeMap<String, usize>,
}

impl<'c> Places<'c> {
    fn of(cfg: &'c Config) -> Places<'c> {
        Places {
            cfg,
            by_name: cfg
                .virtual_servers
                .iter()
                .enumerate()
                .map(|(i, v)| (format_vs(v), i))
                .collect(),
        }
    }

    /// Virtual server `name`.
    fn vs(&self, name: &str) -> Option<usize> {
        self.by_name.get(name).copied()
    }

    /// Where real server `k` is: (virtual server, real server).
    fn find(&self, k: &RsKey) -> Option<(usize, usize)> {
        let vi = self.vs(&k.vs)?;
        let ri = self.cfg.virtual_servers[vi]
            .real_servers
            .iter()
            .position(|r| r.ip == k.ip && r.port == k.port)?;
        Some((vi, ri))
    }
}

fn dur(us: Option<u64>) -> Option<Duration> {
    us.filter(|&u| u > 0).map(Duration::from_micros)
}

impl Graceful {
    /// Nothing ramps or drains: no tick needed.
    pub fn is_idle(&self) -> bool {
        self.ramps.is_empty() && self.drains.is_empty()
    }

    /// A report's transitions: a server coming up starts its slow start
    /// (and ends its drain), one going down starts its drain (and ends its
    /// slow start). Returns the virtual servers whose table changes.
    pub fn transitions(
        &mut self,
        cfg: &Config,
        effects: &[Effect],
        health: &mut Health,
        now: Instant,
    ) -> BTreeSet<usize> {
        let mut touched = BTreeSet::new();
        for e in effects {
            let (vi, ri, up) = match e {
                Effect::Transition(Transition::RsUp { vs, rs }) => (*vs, *rs, true),
                Effect::Transition(Transition::RsDown { vs, rs }) => (*vs, *rs, false),
                _ => continue,
            };
            let (Some(vs), Some(h)) = (
                cfg.virtual_servers.get(vi),
                health.vs.get_mut(vi).and_then(|h| h.rs.get_mut(ri)),
            ) else {
                continue;
            };
            let Some(k) = rs_key(vs, ri) else { continue };
            self.ramps.retain(|(r, ..)| *r != k);
            self.drains.retain(|d| d.rs != k);
            h.ramp = RAMP_FULL;
            h.draining = false;
            if up {
                if let Some(len) = dur(vs.slow_start) {
                    h.ramp = ramp(Duration::ZERO, len);
                    self.ramps.push((k, now, len));
                }
            } else if let Some(timeout) = dur(vs.drain_timeout) {
                h.draining = true;
                self.drains.push(Drain {
                    rs: k,
                    since: now,
                    timeout,
                    left: Vec::new(),
                });
            }
            touched.insert(vi);
        }
        touched
    }

    /// Real servers a reload (or an edit) removes while they are in the
    /// table: those of a virtual server the new configuration keeps, with
    /// `drain_timeout`, stay in at weight 0 while they drain. `kernel` is
    /// the table before the reload.
    pub fn removed(&mut self, old: &Config, new: &Config, kernel: &Table, now: Instant) {
        let kept = Places::of(new);
        for (vi, v) in old.virtual_servers.iter().enumerate() {
            let name: Arc<str> = format_vs(v).into();
            let Some(ni) = kept.vs(&name) else {
                continue;
            };
            let nv = &new.virtual_servers[ni];
            let Some(timeout) = dur(nv.drain_timeout) else {
                continue;
            };
            // Once per virtual server: the new one's servers, and those
            // draining already.
            let still: HashSet<(IpAddr, u16)> =
                nv.real_servers.iter().map(|r| (r.ip, r.port)).collect();
            let draining: HashSet<(IpAddr, u16)> = self
                .drains
                .iter()
                .filter(|d| d.rs.vs == name)
                .map(|d| (d.rs.ip, d.rs.port))
                .collect();
            for (ri, rs) in v.real_servers.iter().enumerate() {
                if still.contains(&(rs.ip, rs.port)) || draining.contains(&(rs.ip, rs.port)) {
                    continue;
                }
                let k = RsKey::of(&name, rs);
                let left: Vec<(ServiceKey, Dest)> = super::desired::rs_dest_keys(old, vi, ri)
                    .into_iter()
                    .filter_map(|(svc, dk)| {
                        let mut d = kernel.services.get(&svc)?.dests.get(&dk)?.clone();
                        d.weight = 0;
                        Some((svc, d))
                    })
                    .collect();
                if !left.is_empty() {
                    self.drains.push(Drain {
                        rs: k,
                        since: now,
                        timeout,
                        left,
                    });
                }
            }
        }
    }

    /// After a reload or an edit: what ramps and drains written into the
    /// new health (a server the new configuration lost, or whose state no
    /// longer fits, leaves its list; a removed server added again stops
    /// draining).
    pub fn reapply(&mut self, cfg: &Config, health: &mut Health, now: Instant) {
        let places = Places::of(cfg);
        let at = |health: &mut Health, k: &RsKey| -> Option<(usize, usize, RsHealth)> {
            let (vi, ri) = places.find(k)?;
            Some((vi, ri, *health.vs.get(vi)?.rs.get(ri)?))
        };
        self.ramps.retain(|(k, since, len)| match at(health, k) {
            Some((vi, ri, h)) if h.alive => {
                health.vs[vi].rs[ri].ramp = ramp(now.saturating_duration_since(*since), *len);
                true
            }
            _ => false,
        });
        self.drains.retain(|d| match at(health, &d.rs) {
            // Failed and still failed: drains on.
            Some((vi, ri, h)) if d.left.is_empty() && !h.alive => {
                health.vs[vi].rs[ri].draining = true;
                true
            }
            // Removed, and back in the configuration: no longer drained.
            Some(_) => false,
            // Removed and still absent: drains on; failed and now gone:
            // the configuration took it out.
            None => !d.left.is_empty(),
        });
    }

    /// The entries of removed servers still draining, added at weight 0 to
    /// `table` where it has their service and not them (`table` may hold a
    /// few services only: a partial programming).
    pub fn add_leftovers(&self, table: &mut Table) {
        for d in &self.drains {
            for (svc, dest) in &d.left {
                if let Some(s) = table.services.get_mut(svc) {
                    s.dests.get_or_insert_with(dest.key(), || dest.clone());
                }
            }
        }
    }

    /// The services whose connection counts the next [`Graceful::tick`]
    /// needs, per draining server: those of its entries.
    pub fn services_to_count(&self, cfg: &Config) -> BTreeSet<ServiceKey> {
        let places = Places::of(cfg);
        let mut out = BTreeSet::new();
        for d in &self.drains {
            if d.left.is_empty() {
                if let Some((vi, ri)) = places.find(&d.rs) {
                    out.extend(
                        super::desired::rs_dest_keys(cfg, vi, ri)
                            .into_iter()
                            .map(|(s, _)| s),
                    );
                }
            } else {
                out.extend(d.left.iter().map(|(s, _)| *s));
            }
        }
        out
    }

    /// One tick: slow starts move on, drains whose servers have no active
    /// connection left in `conns` (per service and destination) or whose
    /// time is up end. Returns the virtual servers whose table changes and
    /// each drain that ended, with why.
    pub fn tick(
        &mut self,
        cfg: &Config,
        health: &mut Health,
        now: Instant,
        conns: &BTreeMap<(ServiceKey, DestKey), u32>,
    ) -> (BTreeSet<usize>, Vec<(RsKey, DrainEnd)>) {
        let places = Places::of(cfg);
        let mut touched = BTreeSet::new();
        self.ramps.retain(|(k, since, len)| {
            let Some((vi, ri)) = places.find(k) else {
                return false;
            };
            let r = ramp(now.saturating_duration_since(*since), *len);
            let h = &mut health.vs[vi].rs[ri];
            if h.ramp != r {
                h.ramp = r;
                touched.insert(vi);
            }
            r < RAMP_FULL
        });
        let mut ended = Vec::new();
        self.drains.retain(|d| {
            let place = places.find(&d.rs);
            let keys: Vec<(ServiceKey, DestKey)> = match place {
                Some((vi, ri)) if d.left.is_empty() => super::desired::rs_dest_keys(cfg, vi, ri),
                _ => d.left.iter().map(|(s, dest)| (*s, dest.key())).collect(),
            };
            let active: u32 = keys.iter().filter_map(|k| conns.get(k)).sum();
            let end = if active == 0 {
                DrainEnd::Drained
            } else if now.saturating_duration_since(d.since) >= d.timeout {
                DrainEnd::TimedOut(active)
            } else {
                return true;
            };
            if let (Some((vi, ri)), true) = (place, d.left.is_empty()) {
                health.vs[vi].rs[ri].draining = false;
                touched.insert(vi);
            }
            if !d.left.is_empty() {
                // A removed server's virtual server, to program it without.
                touched.extend(places.vs(&d.rs.vs));
            }
            ended.push((d.rs.clone(), end));
            false
        });
        (touched, ended)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::load_str;
    use crate::lvs::desired::{desired, desired_for};

    const CONF: &str = "virtual_server 192.0.2.1 80 {\n protocol TCP\n slow_start 10\n drain_timeout 30\n \
        real_server 127.0.0.1 8001 {\n weight 10\n }\n real_server 127.0.0.1 8002 {\n weight 4\n }\n}\n";

    fn weights(cfg: &Config, h: &Health) -> Vec<String> {
        desired(cfg, h)
            .save()
            .lines()
            .filter(|l| l.starts_with("-a"))
            .map(String::from)
            .collect()
    }

    fn t(vs: usize, rs: usize, up: bool) -> Vec<Effect> {
        vec![Effect::Transition(if up {
            Transition::RsUp { vs, rs }
        } else {
            Transition::RsDown { vs, rs }
        })]
    }

    #[test]
    fn the_ramp_goes_from_one_to_the_weight_over_slow_start() {
        assert_eq!(ramp(Duration::ZERO, Duration::from_secs(10)), 0);
        assert_eq!(ramp(Duration::from_secs(5), Duration::from_secs(10)), 500);
        assert_eq!(
            ramp(Duration::from_secs(11), Duration::from_secs(10)),
            RAMP_FULL
        );
        assert_eq!(crate::lvs::desired::ramped(10, 0), 1);
        assert_eq!(crate::lvs::desired::ramped(10, 500), 5);
        assert_eq!(crate::lvs::desired::ramped(0, 500), 0);
    }

    #[test]
    fn a_server_that_comes_up_ramps_and_one_that_fails_drains() {
        let cfg = load_str(CONF).config;
        let mut h = Health::all_alive(&cfg);
        let mut g = Graceful::default();
        let t0 = Instant::now();
        let none = BTreeMap::new();
        // 8001 fails: weight 0 while it drains, not removed.
        h.vs[0].rs[0].alive = false;
        assert_eq!(
            g.transitions(&cfg, &t(0, 0, false), &mut h, t0),
            BTreeSet::from([0])
        );
        assert_eq!(
            weights(&cfg, &h),
            [
                "-a -t 192.0.2.1:80 -r 127.0.0.1:8001 -m -w 0",
                "-a -t 192.0.2.1:80 -r 127.0.0.1:8002 -m -w 4"
            ]
        );
        // Connections left: it stays; none left: it goes.
        let svc = crate::lvs::desired::rs_dest_keys(&cfg, 0, 0)[0];
        let busy = BTreeMap::from([(svc, 3)]);
        let (_, ended) = g.tick(&cfg, &mut h, t0 + Duration::from_secs(1), &busy);
        assert!(ended.is_empty());
        let (_, ended) = g.tick(&cfg, &mut h, t0 + Duration::from_secs(31), &busy);
        assert_eq!(ended[0].1, DrainEnd::TimedOut(3));
        assert_eq!(
            weights(&cfg, &h),
            ["-a -t 192.0.2.1:80 -r 127.0.0.1:8002 -m -w 4"]
        );
        // It comes back: weight 1, then half, then all.
        h.vs[0].rs[0].alive = true;
        g.transitions(&cfg, &t(0, 0, true), &mut h, t0);
        assert!(
            weights(&cfg, &h).contains(&"-a -t 192.0.2.1:80 -r 127.0.0.1:8001 -m -w 1".to_string())
        );
        let (touched, _) = g.tick(&cfg, &mut h, t0 + Duration::from_secs(5), &none);
        assert_eq!(touched, BTreeSet::from([0]));
        assert!(desired_for(&cfg, &h, &touched)
            .save()
            .contains("-r 127.0.0.1:8001 -m -w 5"));
        g.tick(&cfg, &mut h, t0 + Duration::from_secs(10), &none);
        assert!(weights(&cfg, &h)
            .contains(&"-a -t 192.0.2.1:80 -r 127.0.0.1:8001 -m -w 10".to_string()));
        assert!(g.is_idle());
    }

    #[test]
    fn a_removed_server_stays_at_weight_zero_until_drained() {
        let old = load_str(CONF).config;
        let new =
            load_str(&CONF.replace(" real_server 127.0.0.1 8002 {\n weight 4\n }\n", "")).config;
        let kernel = desired(&old, &Health::all_alive(&old));
        let mut g = Graceful::default();
        let t0 = Instant::now();
        g.removed(&old, &new, &kernel, t0);
        let mut h = Health::all_alive(&new);
        g.reapply(&new, &mut h, t0);
        let mut table = desired(&new, &h);
        g.add_leftovers(&mut table);
        assert!(table
            .save()
            .contains("-a -t 192.0.2.1:80 -r 127.0.0.1:8002 -m -w 0"));
        let svcs = g.services_to_count(&new);
        assert_eq!(svcs.len(), 1);
        let (touched, ended) = g.tick(&new, &mut h, t0 + Duration::from_secs(1), &BTreeMap::new());
        assert_eq!((touched, ended.len()), (BTreeSet::from([0]), 1));
        let mut table = desired(&new, &h);
        g.add_leftovers(&mut table);
        assert!(!table.save().contains("8002"));
    }
}
