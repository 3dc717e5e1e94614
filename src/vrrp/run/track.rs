//! The runner's trackers: interfaces and `vrrp_script`s feeding each
//! instance's effective priority and fault state. Part of [`super`].

use super::{Runner, Statics, World};
use crate::config::vrrp::{Instance, Route, Rule};
use crate::vrrp::format::{format_iproute, format_iprule};
use crate::vrrp::fsm::{Input, State};
use crate::vrrp::priority::{self, Tracked};
use crate::vrrp::script::Outcome;
use std::net::IpAddr;

/// The tracked BFD sessions of `cfg`, Down unless `old` had one of the
/// same name.
pub(super) fn tracked_bfds(
    cfg: &crate::config::vrrp::VrrpConfig,
    old: &[(crate::config::vrrp::VrrpTrackBfd, bool)],
) -> Vec<(crate::config::vrrp::VrrpTrackBfd, bool)> {
    cfg.track_bfds
        .iter()
        .map(|b| {
            let up = old.iter().any(|(o, up)| o.name == b.name && *up);
            (b.clone(), up)
        })
        .collect()
}

/// A tracked BFD session as [`priority::effective`] reads it. keepalived's
/// `reverse` on a BFD both negates the weight and inverts the state
/// (`weight 100 reverse` takes 100 off while the session is Up: measured,
/// `../shared/reference/bfd.md` §8.6), which is `reverse` of a negated
/// weight in the scripts' terms.
fn bfd_tracked(up: bool, weight: i32, reverse: bool) -> Tracked {
    Tracked::UpDown {
        up,
        weight: if reverse { -weight } else { weight },
        reverse,
    }
}

impl Runner {
    /// A BFD session's event: the instances tracking it reassessed, with
    /// keepalived's line for each. An event equal to the known state is
    /// ignored. Returns whether anything changed.
    pub(super) fn bfd_changed(
        &mut self,
        now: u64,
        name: &str,
        up: bool,
        w: &mut impl World,
    ) -> bool {
        let Some(b) = self.bfds.iter_mut().find(|(b, _)| b.name == name) else {
            return false;
        };
        if b.1 == up {
            return false;
        }
        b.1 = up;
        for k in 0..self.nodes.len() {
            if self.nodes[k].trackers.bfds.iter().any(|t| t.0 == name) {
                w.log(format!(
                    "VRRP_Instance({}) Tracked BFD instance {name} is {}",
                    self.nodes[k].cfg.name,
                    if up { "UP" } else { "DOWN" }
                ));
                self.reassess(k, now, w);
            }
        }
        if !up {
            self.bfd_takeover(now, name, w);
        }
        true
    }

    /// `bfd_takeover` (extension): a BACKUP whose session to the master it
    /// follows went Down takes over now, as at its master-down timer's
    /// expiry, instead of waiting for that timer.
    fn bfd_takeover(&mut self, now: u64, name: &str, w: &mut impl World) {
        for k in 0..self.nodes.len() {
            let n = &self.nodes[k];
            let Some((_, peer)) = n.cfg.bfd_takeover.as_ref().filter(|t| t.0 == name) else {
                continue;
            };
            if n.fsm.state != State::Backup || n.master != Some(*peer) {
                continue;
            }
            w.log(format!(
                "({}) BFD session {name} to the master {peer} is Down: taking over (bfd_takeover)",
                n.cfg.name
            ));
            self.feed(k, now, Input::Timer, w);
        }
    }

    /// Node `k`'s tracked objects as [`priority::effective`] reads them.
    pub fn effective(&self, k: usize) -> priority::Effective {
        let n = &self.nodes[k];
        let mut t = Vec::new();
        if n.trackers.own_if.is_some() {
            t.push(Tracked::UpDown {
                up: n.if_up,
                weight: 0,
                reverse: false,
            });
        }
        for (_, w, rev, up) in &n.trackers.ifs {
            t.push(Tracked::UpDown {
                up: *up,
                weight: *w,
                reverse: *rev,
            });
        }
        for (name, w, rev) in &n.trackers.scripts {
            let Some((_, st, _)) = self.scripts.iter().find(|(s, ..)| &s.name == name) else {
                continue;
            };
            // A script counts from its first result on (keepalived starts
            // an instance at its base priority).
            if st.pending {
                continue;
            }
            t.push(Tracked::UpDown {
                up: st.up(),
                weight: *w,
                reverse: *rev,
            });
        }
        for (name, w, rev) in &n.trackers.procs {
            if let Some(p) = self.procs.iter().find(|p| &p.cfg.name == name) {
                t.push(Tracked::UpDown {
                    up: p.up,
                    weight: *w,
                    reverse: *rev,
                });
            }
        }
        for (name, w, rev) in &n.trackers.bfds {
            if let Some((_, up)) = self.bfds.iter().find(|(b, _)| &b.name == name) {
                t.push(bfd_tracked(*up, *w, *rev));
            }
        }
        for (name, w, rev) in &n.trackers.files {
            if let Some((_, v)) = self.files.iter().find(|(f, _)| &f.name == name) {
                t.push(Tracked::File {
                    value: *v,
                    weight: *w,
                    reverse: *rev,
                });
            }
        }
        priority::effective(n.base_priority, &t)
    }

    /// A tracked file changed: its number is read again (through the
    /// world, which says when it cannot count) and the instances tracking
    /// it are reassessed, as keepalived's `update_track_file_status()`.
    pub(super) fn track_file_changed(&mut self, now: u64, name: &str, w: &mut impl World) {
        let Some(k) = self.files.iter().position(|(f, _)| f.name == name) else {
            return;
        };
        let Some(value) = w.track_file_value(&self.files[k].0.path) else {
            return;
        };
        let old = std::mem::replace(&mut self.files[k].1, value);
        if old == value {
            return;
        }
        for k in 0..self.nodes.len() {
            let Some(&(_, weight, reverse)) =
                self.nodes[k].trackers.files.iter().find(|t| t.0 == name)
            else {
                continue;
            };
            let file = |value| Tracked::File {
                value,
                weight,
                reverse,
            };
            let (was, now_t) = (file(old), file(value));
            let n = &mut self.nodes[k];
            if now_t.faults() && !was.faults() {
                log::debug!("({}): tracked file {name} now FAULT state", n.cfg.name);
            } else if was.faults() && !now_t.faults() {
                // keepalived sets the priority here without its "Changing"
                // line (and without a priority event).
                log::debug!("({}): tracked file {name} leaving FAULT state", n.cfg.name);
                let e = self.effective(k);
                let n = &mut self.nodes[k];
                if now_t.contribution() != 0 && !e.fault && e.priority != n.fsm.params.priority {
                    log::debug!(
                        "({}) Setting effective priority to {}",
                        n.cfg.name,
                        e.priority
                    );
                    n.fsm.set_priority(e.priority);
                }
            }
            self.reassess(k, now, w);
        }
    }

    /// Node `k` tracks an unweighted script with no result yet.
    pub fn script_pending(&self, k: usize) -> bool {
        self.nodes[k].trackers.scripts.iter().any(|(name, w, _)| {
            *w == 0
                && self
                    .scripts
                    .iter()
                    .any(|(s, st, _)| &s.name == name && st.pending)
        })
    }

    /// An interface changed; with `interface_up_down_delays` the change
    /// counts only once it has lasted its delay (a flap shorter than that
    /// is never seen by the instances).
    pub(super) fn link_changed(&mut self, now: u64, name: &str, up: bool, w: &mut impl World) {
        if let Some(p) = self.pending_links.iter().find(|p| p.0 == name) {
            if p.1 == up {
                // The same change again (netlink repeats itself).
                return;
            }
        }
        self.pending_links.retain(|p| p.0 != name);
        let delay = self
            .up_down_delays
            .iter()
            .find(|d| d.0 == name)
            .map_or(0, |d| if up { d.2 } else { d.1 });
        if delay > 0 {
            self.pending_links.push((name.to_string(), up, now + delay));
            return;
        }
        self.apply_link(now, name, up, w);
    }

    /// The link changes whose delay has run out at `now`.
    pub(super) fn due_links(&mut self, now: u64, w: &mut impl World) {
        let due: Vec<(String, bool, u64)> = self
            .pending_links
            .iter()
            .filter(|p| p.2 <= now)
            .cloned()
            .collect();
        self.pending_links.retain(|p| p.2 > now);
        for (name, up, _) in due {
            self.apply_link(now, &name, up, w);
        }
    }

    /// A link change as the instances see it.
    fn apply_link(&mut self, now: u64, name: &str, up: bool, w: &mut impl World) {
        let mut logged = false;
        for k in 0..self.nodes.len() {
            let n = &mut self.nodes[k];
            let mut touched = false;
            let up_here = up && !n.src.is_unspecified();
            if n.ifname == name && n.if_up != up_here {
                n.if_up = up_here;
                touched = true;
            }
            for t in &mut n.trackers.ifs {
                if t.0 == name && t.3 != up {
                    t.3 = up;
                    touched = true;
                }
            }
            if touched {
                if !logged {
                    w.log(format!(
                        "Netlink reports {name} {}",
                        if up { "up" } else { "down" }
                    ));
                    logged = true;
                }
                self.reassess(k, now, w);
            }
        }
    }

    /// An address was deleted from interface `name` (rtnetlink): a MASTER
    /// whose VIP or eVIP it was (and not `no_track`) goes to BACKUP to
    /// take over again and put it back; a static address is put back.
    pub(super) fn address_gone(&mut self, now: u64, name: &str, addr: IpAddr, w: &mut impl World) {
        if w.removed_by_us(addr) {
            return;
        }
        for k in 0..self.nodes.len() {
            let n = &self.nodes[k];
            if n.fsm.state != State::Master {
                continue;
            }
            let ours = n.all_vips().iter().any(|v| {
                v.addr == addr && !v.no_track && v.dev.as_deref().unwrap_or(n.vip_ifname()) == name
            });
            if ours {
                log::debug!("({}) {addr} deleted from {name}", n.cfg.name);
                self.feed(k, now, Input::VipDeleted, w);
            }
        }
        let gone: Vec<_> = self
            .statics
            .addresses
            .iter()
            .filter(|v| v.addr == addr && !v.no_track && v.dev.as_deref().is_none_or(|d| d == name))
            .cloned()
            .collect();
        for v in gone {
            let mut one = super::Statics::default();
            let dev = v.dev.clone().unwrap_or_else(|| name.to_string());
            w.log(format!(
                "Restoring deleted static address {}",
                crate::vrrp::format::format_ipaddress(&v, &dev, true)
            ));
            one.addresses.push(v);
            w.statics(&one, true);
        }
    }

    /// A route or rule of keepalived's protocol was deleted (rtnetlink):
    /// a MASTER whose tracked virtual one it was goes to BACKUP (as for an
    /// address) and takes it back; a tracked static one is put back.
    /// keepalived watches a family's routes (rules) only when some instance
    /// has a virtual route (rule) of that family, and so only then restores
    /// its static ones: this does the same.
    pub(super) fn gone<G: Gone>(&mut self, now: u64, gone: &G, w: &mut impl World) {
        let watched = self.nodes.iter().any(|n| {
            G::virtuals(&n.cfg)
                .iter()
                .any(|r| G::ipv6(r) == gone.family())
        });
        if !watched {
            return;
        }
        for k in 0..self.nodes.len() {
            let n = &self.nodes[k];
            if n.fsm.state == State::Master
                && G::virtuals(&n.cfg)
                    .iter()
                    .any(|r| !G::no_track(r) && gone.is(r))
            {
                self.feed(k, now, Input::VipDeleted, w);
            }
        }
        let back: Vec<G::Item> = G::statics(&self.statics)
            .iter()
            .filter(|r| !G::no_track(r) && gone.is(r))
            .cloned()
            .collect();
        for r in back {
            w.log(G::restoring(&r));
            w.statics(&G::alone(r), true);
        }
    }

    /// A script run ended.
    pub(super) fn script_ended(&mut self, now: u64, name: &str, o: Outcome, w: &mut impl World) {
        let Some((_, st, _)) = self.scripts.iter_mut().find(|(s, ..)| s.name == name) else {
            return;
        };
        let was_pending = st.pending;
        let (lines, changed) = st.record(o);
        for l in lines {
            w.log(l);
        }
        if changed || was_pending {
            for k in 0..self.nodes.len() {
                if self.nodes[k].trackers.scripts.iter().any(|t| t.0 == name) {
                    self.reassess(k, now, w);
                }
            }
            if was_pending {
                self.settle_groups(now, w);
            }
        }
    }

    /// Recomputes node `k`'s effective priority and fault state.
    pub(super) fn reassess(&mut self, k: usize, now: u64, w: &mut impl World) {
        let e = self.effective(k);
        let n = &mut self.nodes[k];
        let old = n.fsm.params.priority;
        if e.priority != old {
            w.log(format!(
                "({}) Changing effective priority from {old} to {}",
                n.cfg.name, e.priority
            ));
            n.fsm.set_priority(e.priority);
            let master = n.fsm.state == State::Master;
            w.notify(&n.cfg, super::Notified::Priority(master), e.priority);
        }
        let state = n.fsm.state;
        if e.fault && state != State::Fault && state != State::Init {
            self.feed(k, now, Input::Fault, w);
        } else if !e.fault && state == State::Fault && !self.other_member_faulty(k) {
            // keepalived's try_up_instance(): a unicast instance first
            // announces its own address, which the master's neighbour
            // cache may have lost while no advert could reach us.
            let n = &self.nodes[k];
            if !n.cfg.unicast_peers.is_empty() && !n.src.is_unspecified() {
                let full = if n.src.is_ipv4() { 32 } else { 128 };
                let own = crate::config::vrrp::Vip::new(n.src, full, 0);
                w.announce(n.id, &[own], 1);
            }
            self.feed(k, now, Input::FaultCleared, w);
        }
    }
}

/// What identifies a deleted route (rtnetlink's `RTM_DELROUTE`): the kernel's key (table,
/// destination, metric).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GoneRoute {
    pub ipv6: bool,
    pub dst: IpAddr,
    pub prefix: u8,
    pub table: u32,
    pub metric: Option<u32>,
}

/// What identifies a deleted rule: its family and preference.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GoneRule {
    pub ipv6: bool,
    pub priority: u32,
}

impl GoneRoute {
    /// Whether `r` is the route deleted (a metric compared only when `r`
    /// gives one: the kernel sets IPv6's default itself).
    pub fn is(&self, r: &Route) -> bool {
        let dst = if self.dst.is_unspecified() {
            r.dst
        } else {
            self.dst
        };
        r.ipv6 == self.ipv6
            && r.dst == dst
            && r.prefix == self.prefix
            && r.table == self.table
            && r.metric.is_none_or(|m| Some(m) == self.metric)
    }
}

impl GoneRule {
    /// Whether `r` is the rule deleted.
    pub fn is(&self, r: &Rule) -> bool {
        r.ipv6 == self.ipv6 && r.priority == self.priority
    }
}

/// A deleted route or rule, and the kind of thing it is ([`Runner::on_gone`]).
pub trait Gone {
    type Item: Clone;
    /// IPv6.
    fn family(&self) -> bool;
    /// Whether `item` is the one deleted.
    fn is(&self, item: &Self::Item) -> bool;
    fn ipv6(item: &Self::Item) -> bool;
    fn no_track(item: &Self::Item) -> bool;
    /// An instance's virtual ones.
    fn virtuals(i: &Instance) -> &[Self::Item];
    /// The static ones.
    fn statics(s: &Statics) -> &[Self::Item];
    /// keepalived's line when it puts a static one back.
    fn restoring(item: &Self::Item) -> String;
    /// The statics holding just `item`.
    fn alone(item: Self::Item) -> Statics;
}

impl Gone for GoneRoute {
    type Item = Route;
    fn family(&self) -> bool {
        self.ipv6
    }
    fn is(&self, r: &Route) -> bool {
        GoneRoute::is(self, r)
    }
    fn ipv6(r: &Route) -> bool {
        r.ipv6
    }
    fn no_track(r: &Route) -> bool {
        r.no_track
    }
    fn virtuals(i: &Instance) -> &[Route] {
        &i.virtual_routes
    }
    fn statics(s: &Statics) -> &[Route] {
        &s.routes
    }
    fn restoring(r: &Route) -> String {
        format!("Restoring deleted static route {}", format_iproute(r))
    }
    fn alone(r: Route) -> Statics {
        Statics {
            routes: vec![r],
            ..Default::default()
        }
    }
}

impl Gone for GoneRule {
    type Item = Rule;
    fn family(&self) -> bool {
        self.ipv6
    }
    fn is(&self, r: &Rule) -> bool {
        GoneRule::is(self, r)
    }
    fn ipv6(r: &Rule) -> bool {
        r.ipv6
    }
    fn no_track(r: &Rule) -> bool {
        r.no_track
    }
    fn virtuals(i: &Instance) -> &[Rule] {
        &i.virtual_rules
    }
    fn statics(s: &Statics) -> &[Rule] {
        &s.rules
    }
    fn restoring(r: &Rule) -> String {
        format!("Restoring deleted static rule {}", format_iprule(r))
    }
    fn alone(r: Rule) -> Statics {
        Statics {
            rules: vec![r],
            ..Default::default()
        }
    }
}
