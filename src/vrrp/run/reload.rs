//! The runner's reload (SIGHUP), as keepalived 2.2.7 reloads: instances
//! paired with the old ones by `vrrp_exist()`'s key keep their state.
//! Part of [`super`].

use super::{tracked_scripts, Node, Notified, Runner, World};
use crate::config::vrrp::{Vip, VrrpConfig};
use crate::vrrp::fsm::State;

impl Runner {
    /// SIGHUP with the configuration read again, as keepalived 2.2.7
    /// reloads: every MASTER advertises first; an instance that pairs with
    /// an old one (same VRID, family, interface and mode, whatever its
    /// name) keeps its state — a new priority acts through the protocol,
    /// addresses added are set and announced, removed ones deleted; an old
    /// one without a pair releases (priority 0 if MASTER) and reports
    /// DELETED; a new one starts. Scripts keep their results.
    pub(super) fn reload_now(&mut self, cfg: &VrrpConfig, now: u64, w: &mut impl World) {
        for k in 0..self.nodes.len() {
            if self.nodes[k].fsm.state == State::Master {
                let p = self.nodes[k].fsm.params.priority;
                self.send(k, p, w);
            }
        }
        w.log("Reloading".to_string());
        self.log_firewall(cfg, w);
        // Rules set stay in the table they were set in.
        if self.nftables.is_none() {
            self.nftables = cfg.nftables.clone();
        }
        let table = self.nftables.clone();
        let mut scripts = tracked_scripts(cfg);
        for (s, st, next) in &mut scripts {
            if let Some((_, old, n)) = self.scripts.iter().find(|(o, ..)| o.name == s.name) {
                *st = old.clone();
                *next = *n;
            } else {
                *next = now;
            }
        }
        self.scripts = scripts;
        // keepalived's clear_diff_bfd(): a session of the same name keeps
        // its state.
        let old_bfds = std::mem::take(&mut self.bfds);
        self.bfds = super::track::tracked_bfds(cfg, &old_bfds);
        let old_procs = std::mem::take(&mut self.procs);
        self.procs = super::procs::tracked_processes(cfg, &old_procs);
        // Tracked files are read again (keepalived's init_track_files()).
        let old_files = std::mem::take(&mut self.files);
        self.files = super::tracked_files(cfg, &old_files, w);
        // keepalived's clear_diff_static_*(): what went is removed, what
        // came is set; what stayed is left alone.
        let statics = super::Statics::of(cfg);
        let gone = self.statics.minus(&statics);
        let came = statics.minus(&self.statics);
        if !gone.is_empty() {
            w.statics(&gone, false);
        }
        if !came.is_empty() {
            w.statics(&came, true);
        }
        self.statics = statics;
        self.up_down_delays = cfg.up_down_delays.clone();
        let mut old: Vec<Option<Node>> = std::mem::take(&mut self.nodes)
            .into_iter()
            .map(Some)
            .collect();
        let mut fresh = Vec::new();
        for i in &cfg.instances {
            let mut n = self.node(i, w);
            let pair = old
                .iter()
                .position(|o| o.as_ref().is_some_and(|o| o.key() == n.key()));
            match pair.and_then(|p| old[p].take()) {
                Some(o) => {
                    let (was_master, old_vips) = (o.fsm.state == State::Master, o.all_vips());
                    let old_drops = o.dropped_vips();
                    n.id = o.id;
                    n.carry(o);
                    self.nodes.push(n);
                    let k = self.nodes.len() - 1;
                    if was_master {
                        let n = &self.nodes[k];
                        let now_vips = n.all_vips();
                        let gone = not_in(&old_vips, &now_vips);
                        let added = not_in(&now_vips, &old_vips);
                        // The drop rules follow the addresses (and a change
                        // of accept mode).
                        let now_drops = n.dropped_vips();
                        let fw_new = not_in(&now_drops, &old_drops);
                        let fw_gone = not_in(&old_drops, &now_drops);
                        if !fw_new.is_empty() {
                            if let Some(t) = &table {
                                w.firewall(n.id, t, &fw_new, true);
                            }
                        }
                        if !gone.is_empty() {
                            w.addresses(n.id, &gone, false);
                        }
                        if !fw_gone.is_empty() {
                            if let Some(t) = &table {
                                w.firewall(n.id, t, &fw_gone, false);
                            }
                        }
                        if !added.is_empty() {
                            w.addresses(n.id, &added, true);
                            w.announce(n.id, &added, n.cfg.garp.master_repeat);
                        }
                    }
                    self.reassess(k, now, w);
                    // keepalived's reloaded MASTER advertises at once, with
                    // the priority it now has.
                    if self.nodes[k].fsm.state == State::Master {
                        let p = self.nodes[k].fsm.params.priority;
                        self.send(k, p, w);
                        self.nodes[k].fsm.deadline = Some(now + self.nodes[k].cfg.advert_int_us);
                    }
                    // A reload cancels keepalived's pending timer threads.
                    self.nodes[k].garp_delayed.clear();
                    self.nodes[k].garp_lower.clear();
                }
                None => fresh.push(n),
            }
        }
        for o in old.into_iter().flatten() {
            let mut o = o;
            if o.fsm.state == State::Master {
                for dst in o.dsts.clone() {
                    let pkt = o.packet(0, dst);
                    w.send(o.id, &pkt, dst);
                }
                w.log(format!("({}) sent 0 priority", o.cfg.name));
                w.log(format!("({}) removing VIPs.", o.cfg.name));
                w.addresses(o.id, &o.all_vips(), false);
                if let (true, Some(t)) = (o.drops(), &table) {
                    w.firewall(o.id, t, &o.all_vips(), false);
                }
            }
            let what = if o.cfg.notify.deleted.is_some() {
                Notified::Deleted
            } else {
                Notified::Fault
            };
            w.notify(&o.cfg, what, o.fsm.params.priority);
            w.detach(o.id);
        }
        for n in fresh {
            w.attach(&n);
            self.nodes.push(n);
            let k = self.nodes.len() - 1;
            self.start_node(k, now, w);
        }
        // Groups keep their state by name; a new one takes its members'
        // (FAULT if any is, MASTER if all are, else BACKUP).
        let old_groups = std::mem::take(&mut self.groups);
        self.groups = cfg
            .sync_groups
            .iter()
            .map(|g| super::sync::Group {
                cfg: g.clone(),
                state: old_groups
                    .iter()
                    .find(|o| o.cfg.name == g.name)
                    .map_or(State::Init, |o| o.state),
            })
            .collect();
        for g in 0..self.groups.len() {
            if self.groups[g].state != State::Init {
                continue;
            }
            let states: Vec<State> = self.groups[g]
                .cfg
                .members
                .iter()
                .filter_map(|m| self.nodes.iter().find(|n| &n.cfg.name == m))
                .map(|n| n.fsm.state)
                .collect();
            self.groups[g].state = if states.contains(&State::Fault) {
                State::Fault
            } else if !states.is_empty() && states.iter().all(|s| *s == State::Master) {
                State::Master
            } else {
                State::Backup
            };
        }
        // Config order, as keepalived lists them.
        let order: Vec<String> = cfg.instances.iter().map(|i| i.name.clone()).collect();
        self.nodes.sort_by_key(|n| {
            order
                .iter()
                .position(|o| *o == n.cfg.name)
                .unwrap_or(usize::MAX)
        });
        // keepalived 2.2.7 accepts fifo_write_vrrp_states_on_reload and
        // writes nothing more at a reload (the lab's reload-same shows it):
        // neither does this.
        w.log("Reload complete".to_string());
    }
}

/// The addresses of `a` that `b` lacks (the same address written on
/// another line of the new file is the same address: it stays).
fn not_in(a: &[Vip], b: &[Vip]) -> Vec<Vip> {
    a.iter()
        .filter(|v| !b.iter().any(|o| super::same_vip(v, o)))
        .cloned()
        .collect()
}
