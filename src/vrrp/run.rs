//! The VRRP side's driver: every configured instance's state machine
//! ([`super::fsm`]) fed with what arrives (adverts, link changes, script
//! results, the timers) and its actions carried out on a [`World`] — the
//! sockets, rtnetlink and scripts of the real daemon, a recorder in
//! tests. Time is µs since the runner started, passed in, so the runner
//! itself is pure and [`drive`] (the async loop) runs on paused time.

use super::ah::{self, AH_LEN};
use super::fsm::{self, Action, Input, State};
use super::net::{Received, IPPROTO_AH};
use super::packet::{ipv4_header, Advert, AuthType, IPPROTO_VRRP};
use super::priority::{self, Tracked};
use super::receive::{self, Expect, Meta};
use super::script::{Outcome, ScriptState};
use super::timers::adver_int_cs;
use crate::config::vrrp::{Auth, Instance, VrrpConfig};
use serde::Serialize;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use tokio::sync::mpsc;

/// What the runner asks of the outside world. Calls are made in the
/// order the protocol needs (advert, then addresses, then announcements):
/// an implementation keeps that order.
pub trait World {
    /// Sends one advert of instance `i` to `dst`: over IPv4 the whole
    /// packet from its IP header on, over IPv6 the VRRP message.
    fn send(&mut self, i: usize, pkt: &[u8], dst: IpAddr);
    /// Adds (`true`) or removes the instance's addresses.
    fn addresses(&mut self, i: usize, add: bool);
    /// One burst of `count` gratuitous ARPs / NAs for every address.
    fn announce(&mut self, i: usize, count: u32);
    /// Runs the notifications of entering `state` at `priority`.
    fn notify(&mut self, i: usize, state: State, priority: u8);
    /// Starts one run of script `s`; its end comes back as an [`Event`].
    fn run_script(&mut self, s: usize);
    /// A log line (keepalived's wording).
    fn log(&mut self, line: String) {
        log::info!("{line}");
    }
}

/// What arrives.
#[derive(Debug)]
pub enum Event {
    /// A packet on instance `i`'s socket.
    Packet(usize, Received),
    /// An interface went up (true) or down.
    Link(String, bool),
    /// A run of script `s` ended.
    Script(usize, Outcome),
    /// Stop: release and return.
    Stop,
}

/// keepalived's per-instance counters (`vrrp_stats`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Stats {
    /// Adverts accepted.
    pub advert_rcvd: u64,
    /// Adverts sent.
    pub advert_sent: u64,
    /// Times it became MASTER.
    pub become_master: u64,
    /// Times it left MASTER.
    pub release_master: u64,
    /// Packets of the wrong length.
    pub packet_len_err: u64,
    /// Bad TTL / hop limit.
    pub ip_ttl_err: u64,
    /// Wrong type.
    pub invalid_type_rcvd: u64,
    /// Advert interval mismatch.
    pub advert_interval_err: u64,
    /// Address list mismatch.
    pub addr_list_err: u64,
    /// Wrong or failed authentication.
    pub auth_failure: u64,
    /// Priority 0 adverts received.
    pub pri_zero_rcvd: u64,
    /// Priority 0 adverts sent.
    pub pri_zero_sent: u64,
}

/// A transition, for the status and the `transition` log line.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Transition {
    /// µs since start.
    pub at_us: u64,
    /// Unix time, seconds.
    pub unix: f64,
    /// From.
    pub from: &'static str,
    /// To.
    pub to: &'static str,
    /// Why, in words.
    pub reason: String,
}

/// What an instance tracks, resolved to indexes.
#[derive(Debug, Clone)]
struct Trackers {
    /// Own interface (weight 0 = FAULT when down) unless `dont_track_primary`.
    own_if: Option<String>,
    /// `track_interface`: name, weight, up.
    ifs: Vec<(String, i32, bool, bool)>,
    /// `track_script`: script index, weight, reverse.
    scripts: Vec<(usize, i32, bool)>,
}

/// One running instance.
pub struct Node {
    /// Its configuration.
    pub cfg: Instance,
    /// Its state machine.
    pub fsm: fsm::Instance,
    /// The interface adverts go on.
    pub ifname: String,
    /// Its advert source.
    pub src: IpAddr,
    /// Where adverts go: the group, or each unicast peer.
    pub dsts: Vec<IpAddr>,
    /// Base priority (the owner rule may lower it).
    pub base_priority: u8,
    /// Counters.
    pub stats: Stats,
    /// The last transition.
    pub last: Option<Transition>,
    /// The master's address as last seen (BACKUP).
    pub master: Option<IpAddr>,
    /// Whether the interface is up now.
    pub if_up: bool,
    expect: Expect,
    trackers: Trackers,
    garp_delayed: Option<u64>,
    garp_refresh: Option<u64>,
    garp_lower: Option<u64>,
    /// The last IPv4 id sent (keepalived numbers its adverts, never 0).
    ip_id: u16,
    /// AH: keepalived's one counter, the last sequence number sent or the
    /// highest accepted (so a new master carries on above its old master).
    ah_seq: u32,
}

impl Node {
    /// The advert for `dst` as it goes on the wire: IPv4 with its header
    /// (and AH), IPv6 as the message.
    fn packet(&mut self, priority: u8, dst: IpAddr) -> Vec<u8> {
        let adv = self.advert(priority);
        let msg = adv.encode(self.src, dst);
        let (IpAddr::V4(s), IpAddr::V4(d)) = (self.src, dst) else {
            return msg;
        };
        self.ip_id = self.ip_id.wrapping_add(1).max(1);
        let proto = self.proto();
        let extra = if proto == IPPROTO_AH { AH_LEN } else { 0 };
        let mut ip = ipv4_header(s, d, msg.len() + extra, self.ttl(), proto);
        ip[4..6].copy_from_slice(&self.ip_id.to_be_bytes());
        let mut pkt = Vec::with_capacity(20 + extra + msg.len());
        if let Some(Auth::Ah(k)) = &self.cfg.auth {
            ip[10] = 0;
            ip[11] = 0;
            self.ah_seq = self.ah_seq.saturating_add(1);
            let ah = ah::seal(
                &key8(k),
                &ip,
                self.ah_seq,
                &msg,
                !self.cfg.unicast_peers.is_empty(),
            );
            pkt.extend_from_slice(&ip);
            pkt.extend_from_slice(&ah);
        } else {
            pkt.extend_from_slice(&ip);
        }
        pkt.extend_from_slice(&msg);
        pkt
    }

    /// The IP protocol its adverts go in (51 with AH).
    pub fn proto(&self) -> u8 {
        if matches!(self.cfg.auth, Some(Auth::Ah(_))) && !self.cfg.ipv6 {
            IPPROTO_AH
        } else {
            IPPROTO_VRRP
        }
    }

    fn advert(&self, priority: u8) -> Advert {
        let (auth, auth_data) = auth_fields(&self.cfg);
        Advert {
            version: self.cfg.version,
            vrid: self.cfg.vrid,
            priority,
            adver_int_cs: adver_int_cs(self.cfg.version, self.cfg.advert_int_us),
            addrs: self.cfg.vips.iter().map(|v| v.addr).collect(),
            auth,
            auth_data,
        }
    }

    fn ttl(&self) -> u8 {
        if self.cfg.unicast_peers.is_empty() {
            255
        } else {
            self.cfg.unicast_ttl
        }
    }
}

/// The 8 key bytes of a password (zero padded).
fn key8(p: &[u8]) -> [u8; 8] {
    let mut k = [0u8; 8];
    let n = p.len().min(8);
    k[..n].copy_from_slice(&p[..n]);
    k
}

fn auth_fields(i: &Instance) -> (AuthType, [u8; 8]) {
    let mut data = [0u8; 8];
    match (&i.auth, i.version) {
        (Some(Auth::Pass(p)), 2) => {
            let n = p.len().min(8);
            data[..n].copy_from_slice(&p[..n]);
            (AuthType::Pass, data)
        }
        (Some(Auth::Ah(_)), 2) => (AuthType::Ah, data),
        _ => (AuthType::None, data),
    }
}

fn state_word(s: State) -> &'static str {
    match s {
        State::Init => "INIT",
        State::Backup => "BACKUP",
        State::Master => "MASTER",
        State::Fault => "FAULT",
    }
}

/// keepalived's default groups.
pub const GROUP4: Ipv4Addr = Ipv4Addr::new(224, 0, 0, 18);
/// ff02::12.
pub const GROUP6: Ipv6Addr = Ipv6Addr::new(0xff02, 0, 0, 0, 0, 0, 0, 0x12);

/// Where an instance's adverts go from, as the outside world found it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placement {
    /// The interface's name.
    pub ifname: String,
    /// Its source address, if it has one.
    pub src: Option<IpAddr>,
    /// It is up and running.
    pub up: bool,
}

/// All instances.
pub struct Runner {
    /// The instances, in config order.
    pub nodes: Vec<Node>,
    /// The scripts tracked by some instance.
    pub scripts: Vec<(crate::config::vrrp::VrrpScript, ScriptState)>,
    next_script_run: Vec<u64>,
}

impl Runner {
    /// The runner for `cfg`; `place(instance)` says where each one sends
    /// from (the interface lookup is the outside world's).
    pub fn new(cfg: &VrrpConfig, mut place: impl FnMut(&Instance) -> Placement) -> Runner {
        let scripts: Vec<_> = cfg
            .scripts
            .iter()
            .filter(|s| {
                cfg.instances
                    .iter()
                    .any(|i| i.track_scripts.iter().any(|t| t.name == s.name))
            })
            .map(|s| {
                let st = ScriptState::new(&s.name, s.rise, s.fall, s.init_fail);
                (s.clone(), st)
            })
            .collect();
        let nodes = cfg
            .instances
            .iter()
            .map(|i| {
                let p = place(i);
                let src = i.src_ip.or(p.src).unwrap_or(if i.ipv6 {
                    IpAddr::V6(Ipv6Addr::UNSPECIFIED)
                } else {
                    IpAddr::V4(Ipv4Addr::UNSPECIFIED)
                });
                let dsts = if i.unicast_peers.is_empty() {
                    vec![i.mcast_dst.unwrap_or(if i.ipv6 {
                        IpAddr::V6(GROUP6)
                    } else {
                        IpAddr::V4(GROUP4)
                    })]
                } else {
                    i.unicast_peers.iter().map(|p| p.addr).collect()
                };
                let (auth, auth_data) = auth_fields(i);
                let expect = Expect {
                    name: i.name.clone(),
                    version: i.version,
                    adver_int_cs: adver_int_cs(i.version, i.advert_int_us),
                    vips: i.vips.iter().map(|v| v.addr).collect(),
                    auth,
                    auth_data,
                    peers: i.unicast_peers.iter().map(|p| p.addr).collect(),
                    check_unicast_src: i.check_unicast_src,
                    skip_addr_check: false,
                };
                let trackers = Trackers {
                    own_if: (!i.dont_track_primary).then(|| p.ifname.clone()),
                    ifs: i
                        .track_interfaces
                        .iter()
                        .map(|t| {
                            (
                                t.name.clone(),
                                t.weight.unwrap_or(0),
                                t.reverse.unwrap_or(false),
                                true,
                            )
                        })
                        .collect(),
                    scripts: i
                        .track_scripts
                        .iter()
                        .filter_map(|t| {
                            let k = scripts.iter().position(|(s, _)| s.name == t.name)?;
                            let s = &scripts[k].0;
                            Some((
                                k,
                                t.weight.unwrap_or(s.weight),
                                t.reverse.unwrap_or(s.reverse),
                            ))
                        })
                        .collect(),
                };
                let params = fsm::Params {
                    name: i.name.clone(),
                    version: i.version,
                    priority: i.priority,
                    adver_int_us: i.advert_int_us,
                    want_master: i.init_state == crate::config::vrrp::InitState::Master,
                    nopreempt: i.nopreempt,
                    preempt_delay_us: i.preempt_delay_us,
                    down_timer_adverts: i.down_timer_adverts,
                    lower_prio_no_advert: i.lower_prio_no_advert,
                    higher_prio_send_advert: i.higher_prio_send_advert,
                    source: src,
                };
                Node {
                    cfg: i.clone(),
                    fsm: fsm::Instance::new(params),
                    ifname: p.ifname.clone(),
                    src,
                    dsts,
                    base_priority: i.priority,
                    stats: Stats::default(),
                    last: None,
                    master: None,
                    if_up: p.up && (p.src.is_some() || i.src_ip.is_some()),
                    expect,
                    trackers,
                    garp_delayed: None,
                    garp_refresh: None,
                    garp_lower: None,
                    ip_id: 0,
                    ah_seq: 0,
                }
            })
            .collect();
        let n = scripts.len();
        Runner {
            nodes,
            scripts,
            next_script_run: vec![0; n],
        }
    }

    /// The tracked objects of node `k` as [`priority::effective`] reads them.
    fn effective(&self, k: usize) -> priority::Effective {
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
        for &(s, w, rev) in &n.trackers.scripts {
            let st = &self.scripts[s].1;
            // An unweighted script that has not answered yet holds no fault.
            if st.pending && w == 0 {
                continue;
            }
            t.push(Tracked::UpDown {
                up: st.up(),
                weight: w,
                reverse: rev,
            });
        }
        priority::effective(n.base_priority, &t)
    }

    /// Starts every instance at `now`.
    pub fn start(&mut self, now: u64, w: &mut impl World) {
        for k in 0..self.nodes.len() {
            let e = self.effective(k);
            let n = &mut self.nodes[k];
            n.fsm.params.priority = e.priority;
            let input = if e.fault {
                if !n.if_up {
                    let fam = if n.cfg.ipv6 { "IPv6" } else { "IPv4" };
                    if n.src.is_unspecified() {
                        w.log(format!(
                            "({}) entering FAULT state (no {fam} address for interface)",
                            n.cfg.name
                        ));
                    }
                }
                Input::StartFault
            } else {
                Input::Start
            };
            self.feed(k, now, input, w);
        }
        for s in 0..self.scripts.len() {
            self.next_script_run[s] = now;
        }
    }

    /// The earliest time something is due.
    pub fn next_deadline(&self) -> Option<u64> {
        let nodes = self.nodes.iter().flat_map(|n| {
            [n.fsm.deadline, n.garp_delayed, n.garp_refresh, n.garp_lower]
                .into_iter()
                .flatten()
        });
        nodes.chain(self.next_script_run.iter().copied()).min()
    }

    /// Runs what is due at `now`.
    pub fn on_timer(&mut self, now: u64, w: &mut impl World) {
        for s in 0..self.scripts.len() {
            if self.next_script_run[s] <= now {
                self.next_script_run[s] = now + self.scripts[s].0.interval_us.max(1);
                w.run_script(s);
            }
        }
        for k in 0..self.nodes.len() {
            if self.nodes[k].fsm.deadline.is_some_and(|d| d <= now) {
                self.feed(k, now, Input::Timer, w);
            }
            let n = &mut self.nodes[k];
            let master = n.fsm.state == State::Master;
            if n.garp_delayed.is_some_and(|d| d <= now) {
                n.garp_delayed = None;
                if master {
                    w.announce(k, n.cfg.garp.master_repeat);
                }
            }
            if n.garp_lower.is_some_and(|d| d <= now) {
                n.garp_lower = None;
                if master {
                    w.announce(k, n.cfg.garp.lower_prio_repeat);
                }
            }
            if n.garp_refresh.is_some_and(|d| d <= now) {
                n.garp_refresh = None;
                if master && n.cfg.garp.master_refresh_us > 0 {
                    w.announce(k, n.cfg.garp.master_refresh_repeat);
                    n.garp_refresh = Some(now + n.cfg.garp.master_refresh_us);
                }
            }
        }
    }

    /// A packet on node `k`'s socket.
    pub fn on_packet(&mut self, k: usize, now: u64, rx: &Received, w: &mut impl World) {
        let n = &mut self.nodes[k];
        if n.fsm.state == State::Init || n.fsm.state == State::Fault {
            return;
        }
        if (rx.proto == IPPROTO_AH) != (n.proto() == IPPROTO_AH) {
            return;
        }
        let body: &[u8] = if rx.proto == IPPROTO_AH {
            if rx.payload.len() < AH_LEN + 2 || rx.payload[0] != IPPROTO_VRRP {
                return;
            }
            &rx.payload[AH_LEN..]
        } else {
            &rx.payload
        };
        // keepalived matches adverts to instances by VRID first.
        if body.len() >= 2 && body[1] != n.cfg.vrid {
            return;
        }
        if let Some(Auth::Ah(key)) = &n.cfg.auth {
            let unicast = !n.cfg.unicast_peers.is_empty();
            match ah::open(&n.cfg.name, &key8(key), &rx.ip_header, &rx.payload, unicast) {
                Ok(seq) if seq > n.ah_seq => n.ah_seq = seq,
                Ok(seq) => {
                    n.stats.auth_failure += 1;
                    w.log(format!(
                        "({}) IPSEC-AH : sequence number {seq} already processed. Packet dropped. Local({})",
                        n.cfg.name, n.ah_seq
                    ));
                    return;
                }
                Err(line) => {
                    n.stats.auth_failure += 1;
                    w.log(line);
                    return;
                }
            }
        }
        let advert = match Advert::decode(body, rx.from, rx.to) {
            Ok(a) => a,
            Err(e) => {
                n.stats.packet_len_err += u64::from(matches!(
                    e,
                    super::packet::AdvertError::TooShort { .. }
                        | super::packet::AdvertError::TooLong { .. }
                ));
                w.log(format!("({}) {e}", n.cfg.name));
                return;
            }
        };
        let meta = Meta {
            from: rx.from,
            ttl: rx.ttl,
            multicast: rx.to.is_multicast(),
        };
        n.expect.skip_addr_check =
            n.cfg.skip_check_adv_addr && n.fsm.state == State::Backup && n.master == Some(rx.from);
        if let Err(line) = receive::check(&n.expect, &advert, &meta) {
            if line.contains("TTL") {
                n.stats.ip_ttl_err += 1;
            } else if line.contains("interval") {
                n.stats.advert_interval_err += 1;
            } else if line.contains("passwd") || line.contains("auth") {
                n.stats.auth_failure += 1;
            } else if line.contains("ip number count") || line.contains("not present") {
                n.stats.addr_list_err += 1;
            }
            w.log(line);
            return;
        }
        n.stats.advert_rcvd += 1;
        if advert.priority == 0 {
            n.stats.pri_zero_rcvd += 1;
        }
        if n.fsm.state == State::Backup && advert.priority > 0 {
            n.master = Some(rx.from);
        }
        let input = Input::Advert {
            from: rx.from,
            priority: advert.priority,
            adver_int_us: u64::from(advert.adver_int_cs) * 10_000,
        };
        self.feed(k, now, input, w);
    }

    /// An interface changed.
    pub fn on_link(&mut self, now: u64, name: &str, up: bool, w: &mut impl World) {
        w.log(format!(
            "Netlink reports {name} {}",
            if up { "up" } else { "down" }
        ));
        for k in 0..self.nodes.len() {
            let n = &mut self.nodes[k];
            let mut touched = false;
            if n.ifname == name && n.if_up != up {
                n.if_up = up && !n.src.is_unspecified();
                touched = true;
            }
            for t in &mut n.trackers.ifs {
                if t.0 == name && t.3 != up {
                    t.3 = up;
                    touched = true;
                }
            }
            if touched {
                self.reassess(k, now, w);
            }
        }
    }

    /// A script run ended.
    pub fn on_script(&mut self, now: u64, s: usize, o: Outcome, w: &mut impl World) {
        let Some((_, st)) = self.scripts.get_mut(s) else {
            return;
        };
        let was_pending = st.pending;
        let (lines, changed) = st.record(o);
        for l in lines {
            w.log(l);
        }
        if changed || was_pending {
            for k in 0..self.nodes.len() {
                if self.nodes[k].trackers.scripts.iter().any(|t| t.0 == s) {
                    self.reassess(k, now, w);
                }
            }
        }
    }

    /// Recomputes node `k`'s effective priority and fault state.
    fn reassess(&mut self, k: usize, now: u64, w: &mut impl World) {
        let e = self.effective(k);
        let n = &mut self.nodes[k];
        let old = n.fsm.params.priority;
        if e.priority != old {
            w.log(format!(
                "({}) Changing effective priority from {old} to {}",
                n.cfg.name, e.priority
            ));
            n.fsm.set_priority(e.priority);
        }
        let state = n.fsm.state;
        if e.fault && state != State::Fault && state != State::Init {
            self.feed(k, now, Input::Fault, w);
        } else if !e.fault && state == State::Fault {
            self.feed(k, now, Input::FaultCleared, w);
        }
    }

    /// Stops every instance (SIGTERM): MASTERs release with priority 0.
    pub fn stop(&mut self, now: u64, w: &mut impl World) {
        for k in 0..self.nodes.len() {
            self.feed(k, now, Input::Stop, w);
        }
    }

    /// One input to node `k`, and its actions carried out.
    fn feed(&mut self, k: usize, now: u64, input: Input, w: &mut impl World) {
        let n = &mut self.nodes[k];
        let from = n.fsm.state;
        let actions = n.fsm.handle(now, input.clone());
        let to = n.fsm.state;
        for a in actions {
            match a {
                Action::SendAdvert(p) => {
                    for dst in n.dsts.clone() {
                        let pkt = n.packet(p, dst);
                        w.send(k, &pkt, dst);
                    }
                    n.stats.advert_sent += 1;
                    if p == 0 {
                        n.stats.pri_zero_sent += 1;
                    }
                }
                Action::AddVips => {
                    w.log(format!("({}) setting VIPs.", n.cfg.name));
                    w.addresses(k, true);
                }
                Action::RemoveVips => {
                    w.log(format!("({}) removing VIPs.", n.cfg.name));
                    w.addresses(k, false);
                }
                Action::Announce => {
                    let g = &n.cfg.garp;
                    if g.master_repeat > 0 {
                        w.announce(k, g.master_repeat);
                    }
                    n.garp_delayed = (g.master_delay_us > 0).then(|| now + g.master_delay_us);
                    n.garp_refresh = (g.master_refresh_us > 0).then(|| now + g.master_refresh_us);
                }
                Action::AnnounceLowerPrio => {
                    let g = &n.cfg.garp;
                    if g.lower_prio_repeat > 0 {
                        w.announce(k, g.lower_prio_repeat);
                        n.garp_lower =
                            (g.lower_prio_delay_us > 0).then(|| now + g.lower_prio_delay_us);
                    }
                }
                Action::Notify(s) => w.notify(k, s, n.fsm.params.priority),
                Action::Log(l) => w.log(l),
                Action::PriorityReduced(p) => n.base_priority = p,
            }
        }
        if from != to {
            if to == State::Master {
                n.stats.become_master += 1;
                n.master = None;
            }
            if from == State::Master {
                n.stats.release_master += 1;
                n.garp_delayed = None;
                n.garp_refresh = None;
                n.garp_lower = None;
            }
            let reason = match (&input, to) {
                (Input::Start | Input::StartFault, _) => "start".to_string(),
                (Input::Timer, State::Master) => "no advert from the master".to_string(),
                (Input::Advert { from, priority, .. }, _) => {
                    format!("advert from {from} with priority {priority}")
                }
                (Input::Fault, _) => "a tracked object failed".to_string(),
                (Input::FaultCleared, _) => "the fault cleared".to_string(),
                (Input::Stop, _) => "stop".to_string(),
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
                target: "transition",
                "transition {}",
                serde_json::json!({
                    "instance": n.cfg.name, "from": t.from, "to": t.to,
                    "reason": t.reason, "priority": n.fsm.params.priority,
                })
            );
            n.last = Some(t);
        }
    }
}

/// Runs `r` until [`Event::Stop`] (or the end of `events`): the timers on
/// tokio's clock, everything else from `events`.
pub async fn drive(
    r: &mut Runner,
    w: &mut impl World,
    events: &mut mpsc::UnboundedReceiver<Event>,
) {
    let base = tokio::time::Instant::now();
    let now = |base: tokio::time::Instant| base.elapsed().as_micros() as u64;
    r.start(now(base), w);
    loop {
        let due = r.next_deadline();
        let sleep = async {
            match due {
                Some(d) => {
                    tokio::time::sleep_until(base + std::time::Duration::from_micros(d)).await
                }
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            biased;
            ev = events.recv() => match ev {
                None | Some(Event::Stop) => {
                    r.stop(now(base), w);
                    return;
                }
                Some(Event::Packet(k, rx)) => r.on_packet(k, now(base), &rx, w),
                Some(Event::Link(name, up)) => r.on_link(now(base), &name, up, w),
                Some(Event::Script(s, o)) => r.on_script(now(base), s, o, w),
            },
            _ = sleep => r.on_timer(now(base), w),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A two-router LAN on a manual clock: what one sends, the other
    /// receives 100 µs later (multicast, TTL 255).
    struct Lan {
        /// (deliver at, to router, packet).
        wire: Vec<(u64, usize, Received)>,
        log: Vec<(u64, usize, String)>,
        addrs: [bool; 2],
        now: u64,
        who: usize,
    }

    impl World for Lan {
        fn send(&mut self, _: usize, pkt: &[u8], dst: IpAddr) {
            let ihl = usize::from(pkt[0] & 0x0f) * 4;
            let from = IpAddr::V4(Ipv4Addr::new(pkt[12], pkt[13], pkt[14], pkt[15]));
            let rx = Received {
                from,
                to: dst,
                ttl: pkt[8],
                proto: pkt[9],
                ip_header: pkt[..ihl].to_vec(),
                payload: pkt[ihl..].to_vec(),
            };
            let prio = rx.payload[2];
            self.log
                .push((self.now, self.who, format!("advert {prio}")));
            self.wire.push((self.now + 100, 1 - self.who, rx));
        }
        fn addresses(&mut self, _: usize, add: bool) {
            if self.addrs[self.who] != add {
                self.log
                    .push((self.now, self.who, if add { "+vip" } else { "-vip" }.into()));
            }
            self.addrs[self.who] = add;
        }
        fn announce(&mut self, _: usize, count: u32) {
            self.log
                .push((self.now, self.who, format!("garp x{count}")));
        }
        fn notify(&mut self, _: usize, state: State, priority: u8) {
            self.log
                .push((self.now, self.who, format!("{state:?} {priority}")));
        }
        fn run_script(&mut self, _: usize) {}
        fn log(&mut self, _: String) {}
    }

    fn runner(prio: u8, last: u8, extra: &str) -> Runner {
        let text = format!(
            "vrrp_instance VI_1 {{\n interface lo\n virtual_router_id 51\n priority {prio}\n \
             advert_int 1\n{extra}\n virtual_ipaddress {{\n  192.0.2.100/24\n }}\n}}\n"
        );
        let l = crate::config::load_str(&text);
        assert_eq!(l.config.vrrp.instances.len(), 1, "{:?}", l.diagnostics);
        Runner::new(&l.config.vrrp, |_| Placement {
            ifname: "lo".into(),
            src: Some(IpAddr::V4(Ipv4Addr::new(192, 0, 2, last))),
            up: true,
        })
    }

    /// Runs both routers until `until` µs, stopping router `k` at `t`
    /// when `stop_at` is `Some((t, k))`.
    fn play(r: &mut [Runner; 2], lan: &mut Lan, until: u64, stop_at: Option<(u64, usize)>) {
        let mut stopped = [false; 2];
        loop {
            let mut next = u64::MAX;
            for (k, x) in r.iter().enumerate() {
                if !stopped[k] {
                    next = next.min(x.next_deadline().unwrap_or(u64::MAX));
                }
            }
            for w in &lan.wire {
                next = next.min(w.0);
            }
            if let Some((t, k)) = stop_at {
                if !stopped[k] {
                    next = next.min(t);
                }
            }
            if next > until {
                lan.now = until;
                return;
            }
            lan.now = next;
            if let Some((t, k)) = stop_at {
                if t == next && !stopped[k] {
                    lan.who = k;
                    r[k].stop(next, lan);
                    stopped[k] = true;
                }
            }
            let due: Vec<_> = lan.wire.iter().filter(|w| w.0 <= next).cloned().collect();
            lan.wire.retain(|w| w.0 > next);
            for (_, to, rx) in due {
                if !stopped[to] {
                    lan.who = to;
                    r[to].on_packet(0, next, &rx, lan);
                }
            }
            for k in 0..2 {
                if !stopped[k] && r[k].next_deadline().is_some_and(|d| d <= next) {
                    lan.who = k;
                    r[k].on_timer(next, lan);
                }
            }
        }
    }

    fn lan() -> Lan {
        Lan {
            wire: Vec::new(),
            log: Vec::new(),
            addrs: [false; 2],
            now: 0,
            who: 0,
        }
    }

    fn start(r: &mut [Runner; 2], lan: &mut Lan) {
        for (k, x) in r.iter_mut().enumerate() {
            lan.who = k;
            x.start(0, lan);
        }
    }

    fn first(lan: &Lan, who: usize, what: &str, after: u64) -> Option<u64> {
        lan.log
            .iter()
            .find(|(t, w, x)| *w == who && x == what && *t >= after)
            .map(|x| x.0)
    }

    #[test]
    fn the_higher_priority_wins_after_its_down_interval_and_a_release_hands_over_in_the_skew() {
        let mut r = [runner(150, 1, ""), runner(100, 2, "")];
        let mut lan = lan();
        start(&mut r, &mut lan);
        play(&mut r, &mut lan, 10_000_000, Some((10_000_000, 0)));
        assert_eq!(first(&lan, 0, "Master 150", 0), Some(3_414_062));
        assert_eq!(first(&lan, 0, "+vip", 0), Some(3_414_062));
        assert_eq!(first(&lan, 1, "Master 100", 0), None, "{:?}", lan.log);
        // d1 stops at 10 s: priority 0, d2 takes over one skew later.
        play(&mut r, &mut lan, 12_000_000, None);
        assert_eq!(first(&lan, 0, "advert 0", 0), Some(10_000_000));
        assert_eq!(first(&lan, 0, "-vip", 9_000_000), Some(10_000_000));
        assert_eq!(
            first(&lan, 1, "Master 100", 0),
            Some(10_000_100 + 609_375),
            "{:?}",
            lan.log
        );
        assert_eq!(first(&lan, 1, "garp x5", 0), Some(10_000_100 + 609_375));
    }

    #[test]
    fn a_returning_higher_priority_preempts_and_nopreempt_does_not() {
        for (extra, preempts) in [("", true), ("nopreempt", false)] {
            let mut r = [runner(150, 1, extra), runner(100, 2, extra)];
            let mut lan = lan();
            // d2 alone first: master after its down interval.
            lan.who = 1;
            r[1].start(0, &mut lan);
            play(&mut r, &mut lan, 5_000_000, None);
            assert_eq!(first(&lan, 1, "Master 100", 0), Some(3_609_375));
            lan.who = 0;
            r[0].start(5_000_000, &mut lan);
            play(&mut r, &mut lan, 12_000_000, None);
            let took = first(&lan, 0, "Master 150", 0);
            if preempts {
                assert_eq!(took, Some(5_000_000 + 3_414_062), "{extra}");
                assert!(first(&lan, 1, "Backup 100", 5_000_000).is_some());
            } else {
                assert_eq!(took, None, "{extra}: {:?}", lan.log);
            }
        }
    }

    #[test]
    fn ah_adverts_are_accepted_by_the_peer_and_counted_forward() {
        let auth = "authentication {\n auth_type AH\n auth_pass secret1\n }";
        let mut r = [runner(150, 1, auth), runner(100, 2, auth)];
        let mut lan = lan();
        start(&mut r, &mut lan);
        play(&mut r, &mut lan, 8_000_000, None);
        assert!(first(&lan, 0, "Master 150", 0).is_some());
        assert_eq!(first(&lan, 1, "Master 100", 0), None, "{:?}", lan.log);
        assert!(r[1].nodes[0].stats.advert_rcvd >= 4);
        assert_eq!(r[1].nodes[0].stats.auth_failure, 0);
    }
}
