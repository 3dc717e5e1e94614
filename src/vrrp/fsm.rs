//! One VRRP instance's state machine as keepalived 2.2.7 runs it
//! (`vrrp.c:vrrp_state_backup`, `vrrp_state_master_rx`,
//! `vrrp_state_goto_master`, `vrrp_scheduler.c:vrrp_init_state`), sans
//! I/O: inputs (start, the timer, a checked advert, fault, stop) at a
//! time in µs give actions for the I/O shell (send, set or remove the
//! addresses, announce, notify) and the one timer of the state, as in
//! holo-vrrp: BACKUP runs the master-down timer, MASTER the advert
//! timer, INIT and FAULT none. [`Instance::change_state`] is the one place
//! a transition's effects are decided.

use super::timers::{master_down_us, skew_us};
use std::net::IpAddr;

/// keepalived's states (`vrrp.h`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    /// Before start.
    Init,
    /// Listening for the master.
    Backup,
    /// Holding the addresses and advertising.
    Master,
    /// A fault source is present: silent, no addresses.
    Fault,
}

/// What happens to the instance.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Input {
    /// The daemon starts the instance.
    Start,
    /// The daemon starts it with a fault source present (interface down,
    /// no source address).
    StartFault,
    /// The state's timer ran out.
    Timer,
    /// A valid advert for this instance (the receive checks passed).
    Advert {
        /// Its source address.
        from: IpAddr,
        /// Its priority.
        priority: u8,
        /// Its interval, µs (v3 adopts it).
        adver_int_us: u64,
    },
    /// A fault source appeared (interface down, script with weight 0...).
    Fault,
    /// The last fault source went.
    FaultCleared,
    /// Someone else deleted one of our addresses while we hold them
    /// (`keepalived_netlink.c:set_vrrp_backup`).
    VipDeleted,
    /// Its sync group goes MASTER (`vrrp_sync.c:vrrp_sync_master`): the
    /// transition without a timer of its own.
    SyncMaster,
    /// Its sync group goes BACKUP (`vrrp_sync_backup`): a MASTER leaves
    /// without a priority-0 advert, a FAULT one comes back.
    SyncBackup,
    /// The daemon stops.
    Stop,
}

/// What the I/O shell is asked to do, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Send an advert with this priority (0 = release).
    SendAdvert(u8),
    /// Add the virtual addresses (and routes, rules).
    AddVips,
    /// Remove them.
    RemoveVips,
    /// Gratuitous ARPs / unsolicited NAs: the first burst on taking over.
    Announce,
    /// Announce again because a lower-priority master was seen.
    AnnounceLowerPrio,
    /// Run the notifications of entering this state.
    Notify(State),
    /// keepalived's log line for the transition or event.
    Log(String),
    /// Both sides claim to own the addresses: ours dropped to this
    /// priority (the base priority with it).
    PriorityReduced(u8),
}

/// The instance's settings the machine needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Params {
    /// Instance name, for log lines.
    pub name: String,
    /// 2 or 3.
    pub version: u8,
    /// Effective priority (255 = owner).
    pub priority: u8,
    /// Own advert interval, µs.
    pub adver_int_us: u64,
    /// `state MASTER` was configured.
    pub want_master: bool,
    /// `nopreempt`.
    pub nopreempt: bool,
    /// `preempt_delay`, µs.
    pub preempt_delay_us: u64,
    /// `down_timer_adverts`.
    pub down_timer_adverts: u32,
    /// `lower_prio_no_advert`.
    pub lower_prio_no_advert: bool,
    /// `higher_prio_send_advert`.
    pub higher_prio_send_advert: bool,
    /// The address adverts are sent from (the tie-break compares it).
    pub source: IpAddr,
}

/// The running instance.
#[derive(Debug, Clone)]
pub struct Instance {
    /// Settings.
    pub params: Params,
    /// Current state.
    pub state: State,
    /// When the state's timer fires (µs), if it runs.
    pub deadline: Option<u64>,
    /// The master's interval (v3 adopts it while BACKUP).
    pub master_adver_int_us: u64,
    /// When the preempt delay started by a lower-priority advert ends.
    preempt_until: Option<u64>,
    /// keepalived's `wantstate`: where the instance would be without its
    /// sync group (MASTER once its down timer ran out, BACKUP again when
    /// it accepts an advert); a group goes MASTER only when every member
    /// wants it.
    pub wantstate: State,
}

impl Instance {
    /// A new instance in INIT.
    pub fn new(params: Params) -> Self {
        let adv = params.adver_int_us;
        Instance {
            params,
            state: State::Init,
            deadline: None,
            master_adver_int_us: adv,
            preempt_until: None,
            wantstate: State::Backup,
        }
    }

    /// The master down interval now (`ms_down_timer`).
    pub fn down_interval(&self) -> u64 {
        master_down_us(
            self.params.version,
            self.params.priority,
            self.master_adver_int_us,
            self.params.down_timer_adverts,
        )
    }

    fn skew(&self) -> u64 {
        skew_us(
            self.params.version,
            self.params.priority,
            self.master_adver_int_us,
        )
    }

    /// Priority 255: the address owner.
    pub fn owner(&self) -> bool {
        self.params.priority == 255
    }

    /// Feeds one input at `now` (µs); returns the actions, in order.
    pub fn handle(&mut self, now: u64, input: Input) -> Vec<Action> {
        let mut out = Vec::new();
        match (self.state, input) {
            (State::Init, Input::Start) => {
                // A fresh start first removes leftover addresses.
                out.push(Action::RemoveVips);
                if self.owner() && self.params.want_master {
                    self.change_state(now, State::Master, &mut out);
                } else {
                    self.change_state(now, State::Backup, &mut out);
                }
            }
            (State::Init, Input::StartFault) => {
                out.push(Action::RemoveVips);
                out.push(Action::Log(format!(
                    "({}) Entering FAULT STATE (init)",
                    self.params.name
                )));
                out.push(Action::Notify(State::Fault));
                self.deadline = None;
                self.state = State::Fault;
                self.wantstate = State::Fault;
            }
            (State::Backup, Input::Timer) => {
                out.push(Action::Log(format!(
                    "({}) Receive advertisement timeout",
                    self.params.name
                )));
                self.change_state(now, State::Master, &mut out);
            }
            (State::Init | State::Backup, Input::SyncMaster) => {
                self.change_state(now, State::Master, &mut out)
            }
            (State::Init | State::Master | State::Fault, Input::SyncBackup) => {
                self.change_state(now, State::Backup, &mut out)
            }
            (State::Master, Input::Timer) => {
                out.push(Action::SendAdvert(self.params.priority));
                // From the deadline, not from when the timer ran: a timer
                // that fires a little late must not make every later
                // advert late too (the spacing stays advert_int).
                let due = self.deadline.unwrap_or(now);
                let next = due + self.params.adver_int_us;
                self.deadline = Some(if next > now {
                    next
                } else {
                    now + self.params.adver_int_us
                });
            }
            (
                State::Backup,
                Input::Advert {
                    from,
                    priority,
                    adver_int_us,
                },
            ) => self.backup_rx(now, from, priority, adver_int_us, &mut out),
            (State::Master, Input::Advert { from, priority, .. }) => {
                self.master_rx(now, from, priority, &mut out)
            }
            (State::Backup | State::Master, Input::Fault) => {
                self.change_state(now, State::Fault, &mut out)
            }
            (State::Fault, Input::FaultCleared) => self.change_state(now, State::Backup, &mut out),
            (State::Master, Input::VipDeleted) => {
                // keepalived's set_vrrp_backup(): BACKUP with the rest of
                // the addresses removed and a priority-0 advert, then only
                // the skew to wait, so a lone master takes over again at
                // once and puts the address back.
                self.change_state(now, State::Backup, &mut out);
                let notify = out.pop();
                out.push(Action::SendAdvert(0));
                out.push(Action::Log(format!(
                    "({}) sent 0 priority",
                    self.params.name
                )));
                out.extend(notify);
                self.deadline = Some(now + self.skew());
            }
            (State::Init | State::Backup | State::Master | State::Fault, Input::Stop) => {
                if self.state == State::Master {
                    out.push(Action::SendAdvert(0));
                    out.push(Action::Log(format!(
                        "({}) sent 0 priority",
                        self.params.name
                    )));
                    out.push(Action::RemoveVips);
                }
                self.deadline = None;
                self.state = State::Init;
            }
            // Adverts are ignored in INIT and FAULT; other pairs do nothing.
            _ => {}
        }
        out
    }

    /// `vrrp_state_backup()`.
    fn backup_rx(
        &mut self,
        now: u64,
        from: IpAddr,
        priority: u8,
        adv_us: u64,
        out: &mut Vec<Action>,
    ) {
        if priority == 0 {
            out.push(Action::Log(format!(
                "({}) Backup received priority 0 advertisement",
                self.params.name
            )));
            self.deadline = Some(now + self.skew());
            return;
        }
        let delaying = self.params.preempt_delay_us > 0
            && match self.preempt_until {
                None => {
                    self.preempt_until = Some(now + self.params.preempt_delay_us);
                    true
                }
                Some(t) => now < t,
            };
        if self.params.nopreempt || priority >= self.params.priority || delaying {
            // Held in BACKUP by a sync group or not, it now wants BACKUP.
            self.wantstate = State::Backup;
            if self.params.version == 3 {
                self.master_adver_int_us = adv_us;
            }
            self.deadline = Some(now + self.down_interval());
        } else {
            // The timer keeps running: this node takes over when it fires.
            out.push(Action::Log(format!(
                "({}) received lower priority ({priority}) advert from {from} - discarding",
                self.params.name
            )));
        }
    }

    /// `vrrp_state_master_rx()`.
    fn master_rx(&mut self, now: u64, from: IpAddr, priority: u8, out: &mut Vec<Action>) {
        let name = &self.params.name;
        let ours = self.params.priority;
        // keepalived's addr_cmp: the sender's address against our source.
        let cmp = from.cmp(&self.params.source);
        let sender_wins =
            |ours: u8| priority > ours || (priority == ours && cmp == std::cmp::Ordering::Greater);
        if priority == 0 || (self.params.higher_prio_send_advert && sender_wins(ours)) {
            // The master's own timer runs on: this advert is one more.
            out.push(Action::Log(format!(
                "({name}) Master received priority 0 message"
            )));
            out.push(Action::SendAdvert(ours));
            if priority == 0 {
                return;
            }
        }
        if priority == ours {
            if cmp == std::cmp::Ordering::Equal {
                out.push(Action::Log(format!(
                    "({name}) WARNING - equal priority advert received from remote host with our IP address."
                )));
            } else if ours == 255 {
                out.push(Action::Log(format!(
                    "({name}) CONFIGURATION ERROR: local instance and a remote instance are both configured as address owner, please fix - reducing local priority"
                )));
                self.params.priority = 254;
                out.push(Action::PriorityReduced(254));
            }
        }
        let ours = self.params.priority;
        let name = self.params.name.clone();
        if priority < ours || (priority == ours && cmp == std::cmp::Ordering::Less) {
            let forcing = if self.params.lower_prio_no_advert {
                ""
            } else {
                ", forcing new election"
            };
            out.push(Action::Log(format!(
                "({name}) Received advert from {from} with lower priority {priority}, ours {ours}{forcing}"
            )));
            if !self.params.lower_prio_no_advert {
                out.push(Action::SendAdvert(ours));
            }
            out.push(Action::AnnounceLowerPrio);
            return;
        }
        if sender_wins(ours) {
            if priority > ours {
                out.push(Action::Log(format!(
                    "({name}) Master received advert from {from} with higher priority {priority}, ours {ours}"
                )));
            } else {
                out.push(Action::Log(format!(
                    "({name}) Master received advert from {from} with same priority {priority} but higher IP address than ours"
                )));
            }
            self.master_adver_int_us = self.params.adver_int_us;
            self.change_state(now, State::Backup, out);
        }
    }

    /// A new effective priority (trackers, a reload). A BACKUP's running
    /// down timer moves by the change of its skew
    /// (`vrrp_track.c:vrrp_set_effective_priority`); a MASTER advertises it
    /// from its next advert on.
    pub fn set_priority(&mut self, priority: u8) {
        let before = self.down_interval();
        self.params.priority = priority;
        if self.state == State::Backup {
            let after = self.down_interval();
            if let Some(d) = self.deadline.as_mut() {
                *d = (*d + after).saturating_sub(before);
            }
        }
    }

    /// A transition's effects, all in one place.
    pub fn change_state(&mut self, now: u64, to: State, out: &mut Vec<Action>) {
        let from = self.state;
        let name = self.params.name.clone();
        if to != State::Init {
            self.wantstate = to;
        }
        match to {
            State::Master => {
                // The advert goes first so the old master drops the
                // addresses before our announcements.
                out.push(Action::SendAdvert(self.params.priority));
                out.push(Action::Log(format!("({name}) Entering MASTER STATE")));
                self.master_adver_int_us = self.params.adver_int_us;
                out.push(Action::AddVips);
                out.push(Action::Announce);
                out.push(Action::Notify(State::Master));
                self.deadline = Some(now + self.params.adver_int_us);
            }
            State::Backup => {
                let init = if from == State::Init { " (init)" } else { "" };
                out.push(Action::Log(format!("({name}) Entering BACKUP STATE{init}")));
                if from == State::Master {
                    out.push(Action::RemoveVips);
                }
                out.push(Action::Notify(State::Backup));
                self.preempt_until = None;
                self.deadline = Some(now + self.down_interval());
            }
            State::Fault => {
                out.push(Action::Log(format!("({name}) Entering FAULT STATE")));
                if from == State::Master {
                    out.push(Action::SendAdvert(0));
                    out.push(Action::RemoveVips);
                }
                out.push(Action::Notify(State::Fault));
                self.deadline = None;
            }
            State::Init => self.deadline = None,
        }
        self.state = to;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: u64 = 1_000_000;

    fn params(name: &str, priority: u8, last: u8) -> Params {
        Params {
            name: name.into(),
            version: 2,
            priority,
            adver_int_us: S,
            want_master: false,
            nopreempt: false,
            preempt_delay_us: 0,
            down_timer_adverts: 3,
            lower_prio_no_advert: false,
            higher_prio_send_advert: false,
            source: IpAddr::from([192, 0, 2, last]),
        }
    }

    fn advert(last: u8, priority: u8) -> Input {
        Input::Advert {
            from: IpAddr::from([192, 0, 2, last]),
            priority,
            adver_int_us: S,
        }
    }

    #[test]
    fn a_lone_backup_takes_over_after_the_master_down_interval() {
        let mut i = Instance::new(params("VI_1", 100, 2));
        let a = i.handle(0, Input::Start);
        assert_eq!(a[0], Action::RemoveVips, "leftover addresses go first");
        assert_eq!(i.state, State::Backup);
        assert_eq!(i.deadline, Some(3_609_375));
        let a = i.handle(3_609_375, Input::Timer);
        assert_eq!(i.state, State::Master);
        let order: Vec<_> = a
            .iter()
            .filter(|x| !matches!(x, Action::Log(_)))
            .cloned()
            .collect();
        assert_eq!(
            order,
            vec![
                Action::SendAdvert(100),
                Action::AddVips,
                Action::Announce,
                Action::Notify(State::Master)
            ],
            "advert, then addresses, announcements, notify"
        );
        assert_eq!(i.deadline, Some(3_609_375 + S));
    }

    #[test]
    fn an_owner_wanting_master_starts_master_and_others_wait() {
        let mut p = params("VI_1", 255, 1);
        p.want_master = true;
        let mut i = Instance::new(p);
        i.handle(0, Input::Start);
        assert_eq!(i.state, State::Master);
        // state MASTER below 255 waits like a BACKUP (observed 3.43 s at 150).
        let mut p = params("VI_1", 150, 1);
        p.want_master = true;
        let mut i = Instance::new(p);
        i.handle(0, Input::Start);
        assert_eq!((i.state, i.deadline), (State::Backup, Some(3_414_062)));
    }

    #[test]
    fn a_backup_follows_the_master_and_a_release_leaves_only_the_skew() {
        let mut i = Instance::new(params("VI_1", 100, 2));
        i.handle(0, Input::Start);
        i.handle(500_000, advert(1, 150));
        assert_eq!(i.deadline, Some(500_000 + 3_609_375));
        i.handle(1_000_000, advert(1, 0));
        assert_eq!(
            i.deadline,
            Some(1_000_000 + 609_375),
            "skew after priority 0"
        );
    }

    #[test]
    fn a_preempting_backup_discards_lower_adverts_and_takes_over() {
        let mut i = Instance::new(params("VI_1", 150, 2));
        i.handle(0, Input::Start);
        let a = i.handle(1_000_000, advert(1, 100));
        assert!(a.iter().any(|x| matches!(x, Action::Log(l) if l.contains("received lower priority (100) advert from 192.0.2.1 - discarding"))));
        assert_eq!(i.deadline, Some(3_414_062), "the timer is not restarted");
        // nopreempt accepts it instead.
        let mut p = params("VI_1", 150, 2);
        p.nopreempt = true;
        let mut i = Instance::new(p);
        i.handle(0, Input::Start);
        i.handle(1_000_000, advert(1, 100));
        assert_eq!(i.deadline, Some(1_000_000 + 3_414_062));
    }

    #[test]
    fn preempt_delay_accepts_lower_adverts_until_it_expires() {
        let mut p = params("VI_1", 150, 2);
        p.preempt_delay_us = 5 * S;
        let mut i = Instance::new(p);
        i.handle(0, Input::Start);
        i.handle(S, advert(1, 100));
        assert_eq!(
            i.deadline,
            Some(S + 3_414_062),
            "accepted: the delay started"
        );
        i.handle(4 * S, advert(1, 100));
        assert_eq!(i.deadline, Some(4 * S + 3_414_062));
        let a = i.handle(6 * S, advert(1, 100));
        assert!(a
            .iter()
            .any(|x| matches!(x, Action::Log(l) if l.contains("discarding"))));
        assert_eq!(i.deadline, Some(4 * S + 3_414_062));
    }

    #[test]
    fn a_master_yields_to_a_higher_priority_or_address_and_answers_a_lower_one() {
        let mut p = params("VI_1", 100, 5);
        p.want_master = true;
        let mut i = Instance::new(p);
        i.handle(0, Input::Start);
        i.handle(3_609_375, Input::Timer);
        // Lower priority: advert at once and announcements, stays MASTER.
        let a = i.handle(4 * S, advert(1, 90));
        assert_eq!(i.state, State::Master);
        assert!(a.contains(&Action::SendAdvert(100)) && a.contains(&Action::AnnounceLowerPrio));
        // Same priority, lower address: ours wins.
        i.handle(5 * S, advert(4, 100));
        assert_eq!(i.state, State::Master);
        // Same priority, higher address: yield, no priority-0 advert.
        let a = i.handle(6 * S, advert(9, 100));
        assert_eq!(i.state, State::Backup);
        assert!(!a.contains(&Action::SendAdvert(0)));
        assert!(a.contains(&Action::RemoveVips));
        assert!(a.iter().any(|x| matches!(x, Action::Log(l) if l.contains("same priority 100 but higher IP address than ours"))));
    }

    #[test]
    fn fault_silences_the_master_and_clearing_it_waits_a_full_interval() {
        let mut p = params("VI_1", 255, 1);
        p.want_master = true;
        let mut i = Instance::new(p);
        i.handle(0, Input::Start);
        let a = i.handle(2 * S, Input::Fault);
        assert_eq!(i.state, State::Fault);
        assert_eq!(a[1..3], [Action::SendAdvert(0), Action::RemoveVips]);
        assert!(
            i.handle(3 * S, advert(2, 100)).is_empty(),
            "adverts ignored in FAULT"
        );
        i.handle(4 * S, Input::FaultCleared);
        assert_eq!(i.state, State::Backup);
        assert_eq!(i.deadline, Some(4 * S + 3 * S + 1_000_000 / 256));
    }

    #[test]
    fn a_stopping_master_releases_with_priority_zero() {
        let mut p = params("VI_1", 255, 1);
        p.want_master = true;
        let mut i = Instance::new(p);
        i.handle(0, Input::Start);
        let a = i.handle(S, Input::Stop);
        assert_eq!(a[0], Action::SendAdvert(0));
        assert!(a.contains(&Action::RemoveVips));
        let mut b = Instance::new(params("VI_1", 100, 2));
        b.handle(0, Input::Start);
        assert!(
            b.handle(S, Input::Stop).is_empty(),
            "a BACKUP sends nothing"
        );
    }
}
