//! The runner's sync groups (`vrrp_sync_group`), as keepalived 2.2.7's
//! `vrrp_sync.c` and the transition matrix of `vrrp_scheduler.c` run
//! them: members move together. A member whose down timer runs out goes
//! MASTER only when the group is MASTER already or every other member
//! wants MASTER too (else it is held in BACKUP for another down interval,
//! wanting MASTER); once one goes, the others are taken along. One member
//! going BACKUP takes the others to BACKUP; a fault in one takes the
//! group to FAULT, and the group leaves FAULT when no member has a fault
//! of its own. The group's notifications come after its members'. Part of
//! [`super`].

use super::{Notified, Runner, World};
use crate::config::vrrp::SyncGroup;
use crate::vrrp::fsm::{Input, State};

/// A sync group as it runs.
#[derive(Debug, Clone)]
pub struct Group {
    /// Its configuration.
    pub cfg: SyncGroup,
    /// The group's state (INIT while a member waits for its first script
    /// result).
    pub state: State,
}

impl Runner {
    /// The group node `k` is in.
    pub(super) fn group_of(&self, k: usize) -> Option<usize> {
        let name = self.nodes[k].cfg.sync_group.as_deref()?;
        self.groups.iter().position(|g| g.cfg.name == name)
    }

    /// The nodes of group `g`, other than `k`, in the group's order.
    fn others(&self, g: usize, k: usize) -> Vec<usize> {
        self.groups[g]
            .cfg
            .members
            .iter()
            .filter_map(|m| self.nodes.iter().position(|n| &n.cfg.name == m))
            .filter(|&j| j != k)
            .collect()
    }

    /// `vrrp_sync_can_goto_master()`: the group is MASTER, or every other
    /// member wants MASTER.
    fn can_goto_master(&self, k: usize) -> bool {
        let Some(g) = self.group_of(k) else {
            return true;
        };
        self.groups[g].state == State::Master
            || self
                .others(g, k)
                .iter()
                .all(|&j| self.nodes[j].fsm.wantstate == State::Master)
    }

    /// `vrrp_state_goto_master()`: node `k` wants MASTER and goes there
    /// unless its group holds it (then its timer runs another down
    /// interval, as keepalived re-arms it). `timer`: its own down timer ran
    /// out (the fsm logs the timeout).
    pub(super) fn goto_master(&mut self, k: usize, now: u64, timer: bool, w: &mut impl World) {
        self.nodes[k].fsm.wantstate = State::Master;
        if !self.can_goto_master(k) {
            let f = &mut self.nodes[k].fsm;
            if timer {
                w.log(format!("({}) Receive advertisement timeout", f.params.name));
            }
            f.deadline = Some(now + f.down_interval());
            return;
        }
        let input = if timer {
            Input::Timer
        } else {
            Input::SyncMaster
        };
        self.feed_one(k, now, input, w);
    }

    /// After node `k`'s own transition `from` → `to`: keepalived's
    /// transition matrix (`VRRP_TSM`) takes its group along.
    pub(super) fn sync_after(
        &mut self,
        k: usize,
        from: State,
        to: State,
        now: u64,
        w: &mut impl World,
    ) {
        if from == to || self.group_of(k).is_none() {
            return;
        }
        match to {
            State::Master => self.sync_master(k, now, w),
            State::Backup => self.sync_backup(k, now, w),
            State::Fault => self.sync_fault(k, now, w),
            State::Init => {}
        }
    }

    /// `vrrp_sync_master()`.
    fn sync_master(&mut self, k: usize, now: u64, w: &mut impl World) {
        let Some(g) = self.group_of(k) else { return };
        if self.groups[g].state == State::Master || !self.can_goto_master(k) {
            return;
        }
        w.log(format!(
            "VRRP_Group({}) Syncing instances to MASTER state",
            self.groups[g].cfg.name
        ));
        for j in self.others(g, k) {
            if self.nodes[j].fsm.state != State::Master {
                self.goto_master(j, now, false, w);
            }
        }
        self.set_group_state(g, State::Master, w);
    }

    /// `vrrp_sync_backup()`.
    pub(super) fn sync_backup(&mut self, k: usize, now: u64, w: &mut impl World) {
        let Some(g) = self.group_of(k) else { return };
        if self.groups[g].state == State::Backup {
            return;
        }
        w.log(format!(
            "VRRP_Group({}) Syncing instances to BACKUP state",
            self.groups[g].cfg.name
        ));
        for j in self.others(g, k) {
            if self.nodes[j].fsm.state != State::Backup {
                self.feed_one(j, now, Input::SyncBackup, w);
            }
        }
        self.set_group_state(g, State::Backup, w);
    }

    /// `vrrp_sync_fault()`.
    fn sync_fault(&mut self, k: usize, now: u64, w: &mut impl World) {
        let Some(g) = self.group_of(k) else { return };
        if self.groups[g].state == State::Fault {
            return;
        }
        w.log(format!(
            "VRRP_Group({}) Syncing instances to FAULT state",
            self.groups[g].cfg.name
        ));
        for j in self.others(g, k) {
            match self.nodes[j].fsm.state {
                State::Master | State::Backup => self.feed_one(j, now, Input::Fault, w),
                State::Init => self.feed_one(j, now, Input::StartFault, w),
                State::Fault => {}
            }
        }
        self.set_group_state(g, State::Fault, w);
    }

    /// Whether a member of node `k`'s group other than `k` has a fault of
    /// its own (keepalived's `num_member_fault`): the group stays in FAULT.
    pub(super) fn other_member_faulty(&self, k: usize) -> bool {
        let Some(g) = self.group_of(k) else {
            return false;
        };
        self.others(g, k).iter().any(|&j| self.effective(j).fault)
    }

    /// Group `g` enters `state` and says so.
    fn set_group_state(&mut self, g: usize, state: State, w: &mut impl World) {
        self.groups[g].state = state;
        let what = match state {
            State::Master => Notified::Master,
            State::Backup => Notified::Backup,
            State::Fault => Notified::Fault,
            State::Init => return,
        };
        w.notify_group(&self.groups[g].cfg, what);
    }

    /// The groups at start (keepalived's `vrrp_sync_set_group()` and
    /// `vrrp_init_state()`): FAULT if a member starts with a fault, MASTER
    /// if every member is an owner wanting MASTER, else BACKUP — each said
    /// before its members start; INIT (and said when the first script
    /// result comes) while a member waits for an unweighted script.
    pub(super) fn start_groups(&mut self, w: &mut impl World) {
        for g in 0..self.groups.len() {
            let members: Vec<usize> = self.others(g, usize::MAX);
            if members.iter().any(|&k| self.script_pending(k)) {
                self.groups[g].state = State::Init;
                continue;
            }
            let state = if members.iter().any(|&k| self.effective(k).fault) {
                State::Fault
            } else if members
                .iter()
                .all(|&k| self.nodes[k].fsm.owner() && self.nodes[k].fsm.params.want_master)
            {
                State::Master
            } else {
                State::Backup
            };
            self.set_group_state(g, state, w);
        }
    }

    /// A group left in INIT at start comes to BACKUP when no member waits
    /// for a script any more (keepalived's `try_up_instance()` of the
    /// member leaving init, then `vrrp_sync_backup()`).
    pub(super) fn settle_groups(&mut self, now: u64, w: &mut impl World) {
        for g in 0..self.groups.len() {
            if self.groups[g].state != State::Init {
                continue;
            }
            let members = self.others(g, usize::MAX);
            if members.iter().any(|&k| self.script_pending(k)) {
                continue;
            }
            if let Some(&k) = members
                .iter()
                .find(|&&k| self.nodes[k].fsm.state == State::Backup)
            {
                self.sync_backup(k, now, w);
            }
        }
    }

    /// Whether node `k` starts in FAULT because its group does.
    pub(super) fn group_starts_faulty(&self, k: usize) -> bool {
        self.group_of(k)
            .is_some_and(|g| self.groups[g].state == State::Fault)
    }

    /// The groups' STOP notifications, after their members'.
    pub(super) fn stop_groups(&mut self, w: &mut impl World) {
        for g in &self.groups {
            w.notify_group(&g.cfg, Notified::Stop);
        }
    }
}
