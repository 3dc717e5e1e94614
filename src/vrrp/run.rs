//! The VRRP side's driver: every configured instance's state machine
//! ([`super::fsm`], held in a [`Node`]) fed with what arrives (adverts,
//! link changes, script results, the timers, a reload) and its actions
//! carried out on a [`World`] — the sockets, rtnetlink and scripts of the
//! real daemon, a recorder in tests. Time is µs since the runner started,
//! passed in, so the runner itself is pure and [`drive`] (the async loop)
//! runs on paused time.
//!
//! At scale (hundreds of instances, a busy or hostile LAN) the work per
//! event is bounded: an arriving advert reaches its instance through the
//! [`dispatch`](super::dispatch) table in one lookup, or is counted and
//! dropped there; the next deadline and the instances due come from an
//! ordered agenda; the status is published for the instances an event
//! changed, counters at most once a second; and [`drive`] serves due
//! timers before it reads a packet, reading a bounded batch at a time
//! straight from the sockets (nothing queues between them and the runner):
//! the loop is [`drive`] (`run/drive.rs`).

use super::dispatch::{self, Receipts, Rx};
use super::fsm::{Action, Input, State};
use super::net::Received;
pub use super::node::{Node, Placement, Stats, Transition};
use super::script::{Outcome, ScriptState};
use crate::config::vrrp::{
    Instance, NftTable, Route, Rule, SyncGroup, Vip, VrrpConfig, VrrpScript, VrrpTrackFile,
};

/// What notifications report (keepalived's notify states).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Notified {
    /// MASTER.
    Master,
    /// BACKUP.
    Backup,
    /// FAULT.
    Fault,
    /// STOP (the daemon stops).
    Stop,
    /// DELETED (a reload removed the instance; FAULT without
    /// `notify_deleted`, as keepalived reports it).
    Deleted,
    /// A MASTER received a lower-priority advert (keepalived's
    /// `send_event_notify()`: `notify_master_rx_lower_pri` and the FIFO's
    /// `MASTER_RX_LOWER_PRI`).
    MasterRxLowerPri,
    /// The effective priority changed, in MASTER (`true`) or another
    /// state (the FIFO's `MASTER_PRIORITY` / `BACKUP_PRIORITY` with
    /// `notify_priority_changes`).
    Priority(bool),
}

/// What the runner asks of the outside world. Calls come in the order
/// the protocol needs (advert, then addresses, then announcements): an
/// implementation keeps that order.
pub trait World {
    /// Where instance `i` sends from (the interface lookup).
    fn placement(&mut self, i: &Instance) -> Placement;
    /// Node `node.id` now exists: open what it needs (its socket, shared
    /// with the other nodes of its link, family, protocol and mode); the
    /// receive socket's number, if it has one.
    fn attach(&mut self, node: &Node) -> Option<Rx>;
    /// Node `id` is gone.
    fn detach(&mut self, id: usize);
    /// Sends one advert of node `id` to `dst`: over IPv4 the whole packet
    /// from its IP header on, over IPv6 the VRRP message.
    fn send(&mut self, id: usize, pkt: &[u8], dst: std::net::IpAddr);
    /// Adds (`true`) or removes these addresses of node `id`.
    fn addresses(&mut self, id: usize, vips: &[Vip], add: bool);
    /// One burst of `count` gratuitous ARPs / NAs for these addresses.
    fn announce(&mut self, id: usize, vips: &[Vip], count: u32);
    /// Sets (`true`) or removes the drop rules for these addresses of
    /// node `id`, an instance without accept mode that does not own them:
    /// set before its addresses are added, removed after they are.
    fn firewall(&mut self, _id: usize, _table: &NftTable, _vips: &[Vip], _add: bool) {}
    /// Adds (`true`) or removes these routes of node `id` (after its
    /// addresses are added, before they are removed).
    fn routes(&mut self, _id: usize, _routes: &[Route], _add: bool) {}
    /// Adds (`true`) or removes these rules of node `id` (after its
    /// routes are added, before they are removed).
    fn rules(&mut self, _id: usize, _rules: &[Rule], _add: bool) {}
    /// Runs instance `i`'s notifications for `state` at `priority`.
    fn notify(&mut self, i: &Instance, state: Notified, priority: u8);
    /// Runs sync group `g`'s notifications for `state` (its priority is
    /// always 0, as keepalived reports it).
    fn notify_group(&mut self, _g: &SyncGroup, _state: Notified) {}
    /// Starts one run of `script`; its end comes back as [`Event::Script`].
    fn run_script(&mut self, script: &VrrpScript);
    /// A reload's global settings, taken before the runner reloads its
    /// instances: the SMTP alerter, script users and security, GARP/NA
    /// pacing, `default_interface` and the dumps follow them from then on.
    fn globals(&mut self, cfg: &std::sync::Arc<crate::config::model::Config>);
    /// Sets (`true`) or removes the static addresses, routes and rules
    /// (`static_ipaddress`, `static_routes`, `static_rules`): at start,
    /// at stop, and what a reload added or removed. Routes after
    /// addresses, rules after routes; removal the other way round.
    fn statics(&mut self, _s: &Statics, _add: bool) {}
    /// Whether this daemon itself removed `addr` a moment ago (its own
    /// deletion coming back from rtnetlink is not someone else's).
    fn removed_by_us(&mut self, _addr: std::net::IpAddr) -> bool {
        false
    }
    /// The number in a tracked file now (`strtol(content, 0)`; 0 when the
    /// file is missing), `None` when it cannot count (keepalived ignores
    /// it: out of the int range).
    fn track_file_value(&mut self, _path: &str) -> Option<i64> {
        Some(0)
    }
    /// Each tracked process object's count now (at start: keepalived
    /// reads the process table before the instances start).
    fn process_counts(&mut self) -> Vec<(String, u32)> {
        Vec::new()
    }
    /// A log line (keepalived's wording).
    fn log(&mut self, line: String) {
        log::info!("{line}");
    }
    /// The runner after an event that changed what `changed` says (for
    /// the status).
    fn publish(&mut self, _r: &Runner, _changed: &Changed) {}
    /// Writes dump file `what` of the runner as it is at `now_us`.
    fn dump(&mut self, _r: &Runner, _what: super::dump::Dump, _now_us: u64) {}
    /// Whether a stop releases (priority 0, addresses removed); `false`
    /// with `-V`/`--dont-release-vrrp`.
    fn release_at_stop(&self) -> bool {
        true
    }
}

/// What arrives (but for the adverts: see [`Inbox`]).
#[derive(Debug)]
pub enum Event {
    /// An interface went up (true) or down.
    Link(String, bool),
    /// An address was deleted from the named interface.
    AddressGone(String, std::net::IpAddr),
    /// A route of keepalived's protocol was deleted.
    RouteGone(GoneRoute),
    /// A rule of keepalived's protocol was deleted.
    RuleGone(GoneRule),
    /// A run of the named script ended.
    Script(String, Outcome),
    /// A tracked file (by `track_file` name) was written, moved or
    /// deleted.
    TrackFile(String),
    /// Tracked processes' new counts.
    Process(Vec<crate::vrrp::process::Change>),
    /// A BFD session (by `bfd_instance` name) went Up (true) or Down.
    Bfd(String, bool),
    /// SIGHUP: the configuration read again, globals included (the world
    /// takes them first, as keepalived rebuilds its global data at every
    /// reload), its VRRP part for the runner.
    Reload(std::sync::Arc<crate::config::model::Config>),
    /// A dump file asked for (SIGUSR1, SIGUSR2, STATS_CLEAR, JSON).
    Dump(super::dump::Dump),
    /// Stop: release and return.
    Stop,
}

/// keepalived's word for a state.
pub fn state_word(s: State) -> &'static str {
    match s {
        State::Init => "INIT",
        State::Backup => "BACKUP",
        State::Master => "MASTER",
        State::Fault => "FAULT",
    }
}

/// All instances.
pub struct Runner {
    /// The instances, in config order.
    pub nodes: Vec<Node>,
    /// The static addresses, routes and rules set.
    pub statics: Statics,
    /// `vrrp_startup_delay`, µs.
    startup_delay_us: u64,
    /// `interface_up_down_delays`: (interface, down µs, up µs).
    up_down_delays: Vec<(String, u64, u64)>,
    /// Link changes waiting out their delay: (interface, up, due).
    pending_links: Vec<(String, bool, u64)>,
    /// The scripts some instance tracks, with their state and next run.
    pub scripts: Vec<(VrrpScript, ScriptState, u64)>,
    /// The nftables table of the drop rules (instances without accept
    /// mode).
    nftables: Option<NftTable>,
    /// The tracked files and the number each holds.
    pub files: Vec<(VrrpTrackFile, i64)>,
    /// The sync groups.
    pub groups: Vec<sync::Group>,
    /// The tracked process objects.
    pub procs: Vec<procs::Proc>,
    /// The tracked BFD sessions and whether each is Up (Down until BFD
    /// says otherwise, as keepalived's VRRP process starts them).
    pub bfds: Vec<(crate::config::vrrp::VrrpTrackBfd, bool)>,
    /// Delayed announcements queued so far (their order).
    queued: u64,
    next_id: usize,
    /// The instances by receive socket and VRID.
    dispatch: dispatch::Table,
    /// What the receive path counted before any instance looked.
    pub receipts: Receipts,
    /// Each node's next due time, ordered.
    agenda: agenda::Agenda,
    /// Transitions so far (a transition may move a whole sync group).
    transitions: u64,
    /// What changed since the last publication.
    changed: Changed,
    /// The nodes due at a timer (kept to reuse its allocation).
    due: Vec<usize>,
}

/// The tracked files of `cfg` with the number each holds: read now, or
/// kept from `old` when the file cannot be read as a number.
fn tracked_files(
    cfg: &VrrpConfig,
    old: &[(VrrpTrackFile, i64)],
    w: &mut impl World,
) -> Vec<(VrrpTrackFile, i64)> {
    cfg.track_files
        .iter()
        .map(|f| {
            let kept = old.iter().find(|(o, _)| o.name == f.name).map(|o| o.1);
            let v = w.track_file_value(&f.path).or(kept).unwrap_or(0);
            (f.clone(), v)
        })
        .collect()
}

/// The scripts of `cfg` that some instance tracks, fresh.
fn tracked_scripts(cfg: &VrrpConfig) -> Vec<(VrrpScript, ScriptState, u64)> {
    cfg.scripts
        .iter()
        .filter(|s| {
            cfg.instances
                .iter()
                .any(|i| i.track_scripts.iter().any(|t| t.name == s.name))
        })
        .map(|s| {
            let st = ScriptState::new(&s.name, s.rise, s.fall, s.init_fail);
            (s.clone(), st, 0)
        })
        .collect()
}

impl Runner {
    /// The runner for `cfg`, its nodes placed and attached by `w`.
    pub fn new(cfg: &VrrpConfig, w: &mut impl World) -> Runner {
        let mut r = Runner {
            nodes: Vec::new(),
            statics: Statics::of(cfg),
            startup_delay_us: cfg.startup_delay_us,
            up_down_delays: cfg.up_down_delays.clone(),
            pending_links: Vec::new(),
            scripts: tracked_scripts(cfg),
            nftables: cfg.nftables.clone(),
            files: Vec::new(),
            groups: cfg
                .sync_groups
                .iter()
                .map(|g| sync::Group {
                    cfg: g.clone(),
                    state: State::Init,
                })
                .collect(),
            queued: 0,
            procs: procs::tracked_processes(cfg, &[]),
            bfds: track::tracked_bfds(cfg, &[]),
            next_id: 0,
            dispatch: dispatch::Table::default(),
            receipts: Receipts::default(),
            agenda: agenda::Agenda::default(),
            transitions: 0,
            changed: Changed::default(),
            due: Vec::new(),
        };
        r.files = tracked_files(cfg, &[], w);
        r.count_processes(w);
        r.log_firewall(cfg, w);
        r.nodes = cfg.instances.iter().map(|i| r.node(i, w)).collect();
        for n in &mut r.nodes {
            n.rx = w.attach(n);
        }
        r.refresh();
        r
    }

    /// After anything that may have touched many nodes or moved them in
    /// the list: the dispatch table and the agenda made anew, everything
    /// to be published.
    pub(super) fn refresh(&mut self) {
        self.dispatch.clear();
        self.agenda.reset(self.nodes.len());
        for (k, n) in self.nodes.iter().enumerate() {
            if let Some(rx) = n.rx {
                self.dispatch.insert(rx, n.cfg.vrid, k);
            }
            self.agenda.set(k, n.next_due());
        }
        self.changed.all = true;
        self.changed.counters = true;
    }

    /// What changed since the last call (for [`World::publish`]).
    pub fn take_changes(&mut self) -> Changed {
        let mut c = std::mem::take(&mut self.changed);
        if c.all {
            c.nodes.clear();
        }
        c.nodes.sort_unstable();
        c.nodes.dedup();
        c
    }

    /// After node `k` alone was handled: its place on the agenda, and its
    /// publication if a reader can see the change (`before` is what it
    /// showed then). A transition may have moved its sync group: then
    /// all of them.
    fn settle(&mut self, k: usize, before: super::node::Visible, transitions: u64) {
        if self.transitions != transitions && !self.groups.is_empty() {
            self.refresh();
            return;
        }
        self.agenda.set(k, self.nodes[k].next_due());
        if self.nodes[k].visible() != before {
            self.changed.nodes.push(k);
        }
        self.changed.counters = true;
    }

    /// keepalived's line at each load when an instance needs a firewall
    /// and none is configured.
    fn log_firewall(&self, cfg: &VrrpConfig, w: &mut impl World) {
        if cfg.nftables_defaulted {
            w.log(
                "use_vmac or no_accept/strict specified, but no firewall configured - using nftables"
                    .to_string(),
            );
        }
    }

    fn node(&mut self, i: &Instance, w: &mut impl World) -> Node {
        let p = w.placement(i);
        let mut n = Node::new(self.next_id, i, &p);
        self.next_id += 1;
        n.trackers.scripts = i
            .track_scripts
            .iter()
            .filter_map(|t| {
                let s = &self.scripts.iter().find(|(s, ..)| s.name == t.name)?.0;
                Some((
                    s.name.clone(),
                    t.weight.unwrap_or(s.weight),
                    t.reverse.unwrap_or(s.reverse),
                ))
            })
            .collect();
        n.trackers.files = i
            .track_files
            .iter()
            .filter_map(|t| {
                let f = &self.files.iter().find(|(f, _)| f.name == t.name)?.0;
                Some((
                    f.name.clone(),
                    t.weight.unwrap_or(f.weight),
                    t.reverse.unwrap_or(f.reverse),
                ))
            })
            .collect();
        n.trackers.procs = i
            .track_processes
            .iter()
            .filter_map(|t| {
                let p = &self.procs.iter().find(|p| p.cfg.name == t.name)?.cfg;
                Some((
                    p.name.clone(),
                    t.weight.unwrap_or(p.weight),
                    t.reverse.unwrap_or(p.reverse),
                ))
            })
            .collect();
        n.trackers.bfds = i
            .track_bfds
            .iter()
            .filter_map(|t| {
                let b = &self.bfds.iter().find(|b| b.0.name == t.name)?.0;
                Some((
                    b.name.clone(),
                    t.weight.unwrap_or(b.weight),
                    t.reverse.unwrap_or(b.reverse),
                ))
            })
            .collect();
        n
    }

    /// Starts every instance at `now`.
    pub fn start(&mut self, now: u64, w: &mut impl World) {
        if !self.statics.is_empty() {
            w.statics(&self.statics, true);
        }
        let delay = self.startup_delay_us;
        if delay > 0 {
            w.log(format!(
                "Delaying startup for {} seconds",
                crate::config::parser::fmt_g(delay as f64 / 1e6)
            ));
        }
        self.start_groups(w);
        for k in 0..self.nodes.len() {
            let f = &self.nodes[k].fsm;
            if delay > 0 && f.owner() && f.params.want_master {
                // keepalived's owner waits the delay out before MASTER.
                self.nodes[k].start_at = Some(now + delay);
                continue;
            }
            self.start_node(k, now, w);
            let n = &mut self.nodes[k];
            if n.fsm.state == State::Backup {
                n.fsm.deadline = n.fsm.deadline.map(|d| d + delay);
            }
        }
        for s in &mut self.scripts {
            s.2 = now;
        }
        self.refresh();
    }

    fn start_node(&mut self, k: usize, now: u64, w: &mut impl World) {
        let e = self.effective(k);
        let n = &mut self.nodes[k];
        if e.priority != n.base_priority && !e.fault {
            // keepalived's first look at the tracked files.
            w.log(format!(
                "({}) Changing effective priority from {} to {}",
                n.cfg.name, n.base_priority, e.priority
            ));
        }
        n.fsm.params.priority = e.priority;
        let fault = e.fault || self.group_starts_faulty(k);
        let n = &mut self.nodes[k];
        let input = if fault {
            if n.src.is_unspecified() {
                let fam = if n.cfg.ipv6 { "IPv6" } else { "IPv4" };
                w.log(format!(
                    "({}) entering FAULT state (no {fam} address for interface)",
                    n.cfg.name
                ));
            }
            Input::StartFault
        } else {
            Input::Start
        };
        // The group was set up before its members start: no sync here.
        self.feed_one(k, now, input, w);
    }

    /// The earliest time something is due: the instances' from the
    /// agenda, the scripts', delayed link changes' and process counts'
    /// (a few, not one an instance) looked at.
    pub fn next_deadline(&self) -> Option<u64> {
        self.agenda
            .first()
            .into_iter()
            .chain(self.other_due())
            .min()
    }

    /// When the next script run, delayed link change or process count is
    /// due.
    fn other_due(&self) -> Option<u64> {
        self.scripts
            .iter()
            .map(|s| s.2)
            .chain(self.pending_links.iter().map(|p| p.2))
            .chain(self.procs.iter().filter_map(|p| p.due))
            .min()
    }

    /// Runs what is due at `now`.
    pub fn on_timer(&mut self, now: u64, w: &mut impl World) {
        if self.other_due().is_some_and(|d| d <= now) {
            self.due_links(now, w);
            self.due_processes(now, w);
            for (s, _, next) in &mut self.scripts {
                if *next <= now {
                    *next = now + s.interval_us.max(1);
                    w.run_script(s);
                }
            }
            // A link change may have moved any instance.
            self.refresh();
        }
        let mut due = std::mem::take(&mut self.due);
        self.agenda.due(now, &mut due);
        let transitions = self.transitions;
        let before: Vec<_> = due.iter().map(|&k| self.nodes[k].visible()).collect();
        for &k in &due {
            if self.nodes[k].start_at.is_some_and(|d| d <= now) {
                self.nodes[k].start_at = None;
                self.start_node(k, now, w);
            }
            if self.nodes[k].fsm.deadline.is_some_and(|d| d <= now) {
                if self.nodes[k].fsm.state == State::Backup && self.script_pending(k) {
                    // keepalived's num_script_init: an instance whose
                    // unweighted script has not answered yet cannot become
                    // MASTER; it waits an advert interval at a time.
                    let n = &mut self.nodes[k];
                    n.fsm.deadline = Some(now + n.cfg.advert_int_us);
                } else if self.nodes[k].fsm.state == State::Backup {
                    self.goto_master(k, now, true, w);
                    let to = self.nodes[k].fsm.state;
                    self.sync_after(k, State::Backup, to, now, w);
                } else {
                    self.feed(k, now, Input::Timer, w);
                }
            }
        }
        // The delayed bursts in the order they were queued (keepalived's
        // timer threads: members of a sync group taken to MASTER together
        // announce in the order they went).
        let mut bursts: Vec<((u64, u64), usize, u32)> = Vec::new();
        for &k in &due {
            let n = &mut self.nodes[k];
            let g = &n.cfg.garp;
            for (list, repeat) in [
                (&mut n.garp_delayed, g.master_repeat),
                (&mut n.garp_lower, g.lower_prio_repeat),
            ] {
                bursts.extend(list.iter().filter(|d| d.0 <= now).map(|d| (*d, k, repeat)));
                list.retain(|d| d.0 > now);
            }
        }
        bursts.sort();
        for (_, k, repeat) in bursts {
            let n = &self.nodes[k];
            if n.fsm.state == State::Master {
                w.announce(n.id, &n.all_vips(), repeat);
            }
        }
        for &k in &due {
            let n = &mut self.nodes[k];
            if n.garp_refresh.is_some_and(|d| d <= now) {
                n.garp_refresh = None;
                let g = &n.cfg.garp;
                if n.fsm.state == State::Master && g.master_refresh_us > 0 {
                    w.announce(n.id, &n.all_vips(), g.master_refresh_repeat);
                    n.garp_refresh = Some(now + g.master_refresh_us);
                }
            }
        }
        for (&k, b) in due.iter().zip(before) {
            self.settle(k, b, transitions);
        }
        self.due = due;
    }

    /// Stops every instance (SIGTERM): MASTERs release with priority 0;
    /// every instance reports STOP.
    pub fn stop(&mut self, now: u64, w: &mut impl World) {
        let release = w.release_at_stop();
        for k in 0..self.nodes.len() {
            let prio = self.nodes[k].fsm.params.priority;
            if release {
                self.feed(k, now, Input::Stop, w);
            } else {
                // keepalived -V: no priority 0, the addresses stay (the
                // next start removes them).
                let n = &mut self.nodes[k];
                n.fsm.state = State::Init;
                n.fsm.deadline = None;
            }
            w.notify(&self.nodes[k].cfg, Notified::Stop, prio);
        }
        self.stop_groups(w);
        if release && !self.statics.is_empty() {
            w.statics(&self.statics, false);
        }
        self.refresh();
    }

    fn send(&mut self, k: usize, priority: u8, w: &mut impl World) {
        let n = &mut self.nodes[k];
        for dst in n.dsts.clone() {
            let pkt = n.packet(priority, dst);
            w.send(n.id, &pkt, dst);
        }
        n.stats.advert_sent += 1;
        if priority == 0 {
            n.stats.pri_zero_sent += 1;
        }
    }

    /// One input to node `k`, its actions carried out, and its sync group
    /// taken along by the transition.
    fn feed(&mut self, k: usize, now: u64, input: Input, w: &mut impl World) {
        let from = self.nodes[k].fsm.state;
        self.feed_one(k, now, input, w);
        let to = self.nodes[k].fsm.state;
        self.sync_after(k, from, to, now, w);
    }

    /// One input to node `k` alone, and its actions carried out.
    fn feed_one(&mut self, k: usize, now: u64, input: Input, w: &mut impl World) {
        let from = self.nodes[k].fsm.state;
        let actions = self.nodes[k].fsm.handle(now, input.clone());
        for a in actions {
            if let Action::SendAdvert(p) = a {
                self.send(k, p, w);
                continue;
            }
            let n = &mut self.nodes[k];
            match a {
                Action::SendAdvert(_) => {}
                Action::AddVips => {
                    if let (true, Some(t)) = (n.drops(), &self.nftables) {
                        log::debug!("({}) setting firewall drop rule", n.cfg.name);
                        w.firewall(n.id, t, &n.all_vips(), true);
                    }
                    w.log(format!("({}) setting VIPs.", n.cfg.name));
                    w.addresses(n.id, &n.all_vips(), true);
                    if !n.cfg.virtual_routes.is_empty() {
                        w.routes(n.id, &n.cfg.virtual_routes, true);
                    }
                    if !n.cfg.virtual_rules.is_empty() {
                        w.rules(n.id, &n.cfg.virtual_rules, true);
                    }
                }
                Action::RemoveVips => {
                    if !n.cfg.virtual_rules.is_empty() {
                        w.rules(n.id, &n.cfg.virtual_rules, false);
                    }
                    if !n.cfg.virtual_routes.is_empty() {
                        w.routes(n.id, &n.cfg.virtual_routes, false);
                    }
                    w.log(format!("({}) removing VIPs.", n.cfg.name));
                    w.addresses(n.id, &n.all_vips(), false);
                    if let (true, Some(t)) = (n.drops(), &self.nftables) {
                        log::debug!("({}) removing firewall drop rule", n.cfg.name);
                        w.firewall(n.id, t, &n.all_vips(), false);
                    }
                }
                Action::Announce => {
                    let g = &n.cfg.garp;
                    if g.master_repeat > 0 {
                        w.announce(n.id, &n.all_vips(), g.master_repeat);
                    }
                    if g.master_delay_us > 0 {
                        self.queued += 1;
                        n.garp_delayed.push((now + g.master_delay_us, self.queued));
                    }
                    n.garp_refresh = (g.master_refresh_us > 0).then(|| now + g.master_refresh_us);
                }
                Action::AnnounceLowerPrio => {
                    let g = &n.cfg.garp;
                    if g.lower_prio_repeat > 0 {
                        w.announce(n.id, &n.all_vips(), g.lower_prio_repeat);
                        if g.lower_prio_delay_us > 0 {
                            self.queued += 1;
                            n.garp_lower
                                .push((now + g.lower_prio_delay_us, self.queued));
                        }
                    }
                    w.notify(&n.cfg, Notified::MasterRxLowerPri, n.fsm.params.priority);
                }
                Action::Notify(s) => {
                    let what = match s {
                        State::Master => Notified::Master,
                        State::Backup => Notified::Backup,
                        State::Fault => Notified::Fault,
                        State::Init => Notified::Stop,
                    };
                    w.notify(&n.cfg, what, n.fsm.params.priority);
                }
                Action::Log(l) => w.log(l),
                Action::PriorityReduced(p) => n.base_priority = p,
            }
        }
        let n = &mut self.nodes[k];
        let to = n.fsm.state;
        if from == to {
            return;
        }
        self.transitions += 1;
        if to == State::Master {
            n.stats.become_master += 1;
            n.master = None;
        }
        if from == State::Master {
            n.stats.release_master += 1;
            // The delayed bursts stay pending (keepalived does not cancel
            // their threads); the refresh stops.
            n.garp_refresh = None;
        }
        let reason = match (&input, to) {
            (Input::Start | Input::StartFault, _) => "start".to_string(),
            (Input::Timer, State::Master) => "no advert from the master".to_string(),
            (Input::Advert { from, priority, .. }, _) => {
                let other = if n.mismatch.is_some_and(|m| m.0 == *from) {
                    " and other addresses"
                } else {
                    ""
                };
                format!("advert from {from} with priority {priority}{other}")
            }
            (Input::Fault, _) => "a tracked object failed".to_string(),
            (Input::FaultCleared, _) => "the fault cleared".to_string(),
            (Input::VipDeleted, _) => {
                "an address, route or rule it set was deleted by someone else".to_string()
            }
            (Input::Stop, _) => "stop".to_string(),
            (Input::SyncMaster | Input::SyncBackup, _) => {
                format!(
                    "its sync group {}",
                    n.cfg.sync_group.as_deref().unwrap_or("")
                )
            }
            _ => String::new(),
        };
        let unix = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0.0, |d| d.as_secs_f64());
        let t = Transition {
            at_us: now,
            unix,
            from: state_word(from),
            to: state_word(to),
            reason,
        };
        log::info!(
            target: "keepalived::vrrp::transition",
            "transition {}",
            serde_json::json!({
                "instance": n.cfg.name, "from": t.from, "to": t.to,
                "reason": t.reason, "priority": n.fsm.params.priority,
            })
        );
        n.last = Some(t);
    }
}

/// The rare events: each may touch any instance, so the agenda and the
/// dispatch table are made anew after it and everything is published.
impl Runner {
    /// SIGHUP with the configuration read again (see [`Runner::reload_now`]).
    pub fn reload(&mut self, cfg: &VrrpConfig, now: u64, w: &mut impl World) {
        self.reload_now(cfg, now, w);
        self.refresh();
    }

    /// An interface went up or down.
    pub fn on_link(&mut self, now: u64, name: &str, up: bool, w: &mut impl World) {
        self.link_changed(now, name, up, w);
        self.refresh();
    }

    /// An address was deleted from interface `name`.
    pub fn on_address_gone(
        &mut self,
        now: u64,
        name: &str,
        addr: std::net::IpAddr,
        w: &mut impl World,
    ) {
        self.address_gone(now, name, addr, w);
        self.refresh();
    }

    /// A route or rule of keepalived's protocol was deleted.
    pub fn on_gone<G: track::Gone>(&mut self, now: u64, gone: &G, w: &mut impl World) {
        self.gone(now, gone, w);
        self.refresh();
    }

    /// A run of script `name` ended.
    pub fn on_script(&mut self, now: u64, name: &str, o: Outcome, w: &mut impl World) {
        self.script_ended(now, name, o, w);
        self.refresh();
    }

    /// Tracked file `name` changed.
    pub fn on_track_file(&mut self, now: u64, name: &str, w: &mut impl World) {
        self.track_file_changed(now, name, w);
        self.refresh();
    }

    /// Tracked processes' counts changed.
    pub fn on_process(&mut self, now: u64, changes: &[super::process::Change], w: &mut impl World) {
        self.process_changed(now, changes, w);
        self.refresh();
    }

    /// A BFD session went Up or Down.
    pub fn on_bfd(&mut self, now: u64, name: &str, up: bool, w: &mut impl World) {
        if self.bfd_changed(now, name, up, w) {
            self.refresh();
        }
    }
}

mod advert;
mod agenda;
pub use advert::REFUSALS_LOGGED;
mod drive;
pub use drive::{drive, Alarm, Changed, Inbox, NoPackets, TokioAlarm, PACKET_BATCH};
mod procs;
mod reload;
mod statics;
use statics::same_vip;
pub use statics::Statics;
mod sync;
#[cfg(test)]
mod tests;
mod track;
pub use track::{GoneRoute, GoneRule};
