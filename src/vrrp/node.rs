//! One running VRRP instance as the runner ([`super::run`]) holds it: its
//! configuration, state machine, where it advertises from and to, what it
//! tracks, its counters, and the adverts it puts on the wire (IPv4 with
//! keepalived's header and id, AH sealed; IPv6 the bare message). Pure.

use super::ah::{self, AH_LEN};
use super::fsm;
use super::net::IPPROTO_AH;
use super::packet::{ipv4_header, Advert, AuthType, IPPROTO_VRRP};
use super::receive::Expect;
use super::timers::adver_int_cs;
use crate::config::vrrp::{Auth, InitState, Instance, Vip};
use serde::Serialize;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// keepalived's default groups.
pub const GROUP4: Ipv4Addr = Ipv4Addr::new(224, 0, 0, 18);
/// ff02::12.
pub const GROUP6: Ipv6Addr = Ipv6Addr::new(0xff02, 0, 0, 0, 0, 0, 0, 0x12);

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

/// What an instance tracks.
#[derive(Debug, Clone, Default)]
pub struct Trackers {
    /// Own interface (weight 0 = FAULT when down) unless `dont_track_primary`.
    pub own_if: Option<String>,
    /// `track_interface`: name, weight, reverse, up.
    pub ifs: Vec<(String, i32, bool, bool)>,
    /// `track_script`: script name, weight, reverse.
    pub scripts: Vec<(String, i32, bool)>,
    /// `track_file`: file name, weight, reverse.
    pub files: Vec<(String, i32, bool)>,
    /// `track_process`: process object name, weight, reverse.
    pub procs: Vec<(String, i32, bool)>,
    /// `track_bfd`: `bfd_instance` name, weight, reverse.
    pub bfds: Vec<(String, i32, bool)>,
}

/// One running instance.
pub struct Node {
    /// Stable across reloads: the outside world's handle for it.
    pub id: usize,
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
    /// The last other master heard, kept after a takeover (keepalived's
    /// `master_saddr`, which SNMP shows).
    pub last_master: Option<IpAddr>,
    /// Whether the interface is up (and has an address to send from).
    pub if_up: bool,
    /// The receive checks' expectations.
    pub expect: Expect,
    /// Tracked objects.
    pub trackers: Trackers,
    /// The second GARP burst (`garp_master_delay`): when, and its place
    /// in the queue.
    /// (keepalived's timer threads: one per transition, not cancelled when
    /// the instance leaves MASTER; each sends if it is MASTER again.)
    pub garp_delayed: Vec<(u64, u64)>,
    /// The next `garp_master_refresh` burst.
    pub garp_refresh: Option<u64>,
    /// The second lower-priority burst (`garp_lower_prio_delay`).
    pub garp_lower: Vec<(u64, u64)>,
    /// The last IPv4 id sent (keepalived numbers its adverts, never 0).
    ip_id: u16,
    /// AH: keepalived's one counter, the last sequence number sent or the
    /// highest accepted (so a new master carries on above its old master).
    pub ah_seq: u32,
    /// VRRPv3 unicast checksums over the multicast group (keepalived's
    /// `unicast_chksum_compat`: configured, or learnt from a peer).
    pub old_checksum: bool,
    /// A start held back by `vrrp_startup_delay` (an owner that would go
    /// MASTER at once waits it out in INIT).
    pub start_at: Option<u64>,
    /// A peer advertising another address list (split brain risk): its
    /// address and the number of addresses it advertises.
    pub mismatch: Option<(IpAddr, usize)>,
    /// The receive socket its adverts arrive on (the world's number for
    /// it), `None` while it has none.
    pub rx: Option<super::dispatch::Rx>,
    /// Refused adverts logged in the current second.
    pub refusals: Refusals,
}

/// The refused adverts an instance logged in one second, and those it
/// held back (see [`super::run::REFUSALS_LOGGED`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Refusals {
    /// The second's start, µs.
    pub since: u64,
    /// Lines logged in it.
    pub logged: u32,
    /// Lines held back.
    pub held: u64,
}

/// A node's state as the status shows it, but for its counters and what it
/// tracks (see [`Node::visible`]).
pub type Visible = (
    fsm::State,
    u8,
    u8,
    Option<IpAddr>,
    Option<(IpAddr, usize)>,
    Option<u64>,
    bool,
);

/// The 8 key bytes of a password (zero padded).
pub fn key8(p: &[u8]) -> [u8; 8] {
    let mut k = [0u8; 8];
    let n = p.len().min(8);
    k[..n].copy_from_slice(&p[..n]);
    k
}

fn auth_fields(i: &Instance) -> (AuthType, [u8; 8]) {
    match (&i.auth, i.version) {
        (Some(Auth::Pass(p)), 2) => (AuthType::Pass, key8(p)),
        (Some(Auth::Ah(_)), 2) => (AuthType::Ah, [0; 8]),
        _ => (AuthType::None, [0; 8]),
    }
}

impl Node {
    /// A node for instance `i` placed at `p`, in INIT.
    pub fn new(id: usize, i: &Instance, p: &Placement) -> Node {
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
            peers: i
                .unicast_peers
                .iter()
                .map(|p| (p.addr, p.min_ttl, p.max_ttl))
                .collect(),
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
            scripts: Vec::new(),
            files: Vec::new(),
            procs: Vec::new(),
            bfds: Vec::new(),
        };
        let params = fsm::Params {
            name: i.name.clone(),
            version: i.version,
            priority: i.priority,
            adver_int_us: i.advert_int_us,
            want_master: i.init_state == InitState::Master,
            nopreempt: i.nopreempt,
            preempt_delay_us: i.preempt_delay_us,
            down_timer_adverts: i.down_timer_adverts,
            lower_prio_no_advert: i.lower_prio_no_advert,
            higher_prio_send_advert: i.higher_prio_send_advert,
            source: src,
        };
        Node {
            id,
            cfg: i.clone(),
            fsm: fsm::Instance::new(params),
            ifname: p.ifname.clone(),
            src,
            dsts,
            base_priority: i.priority,
            stats: Stats::default(),
            last: None,
            master: None,
            last_master: None,
            if_up: p.up && (p.src.is_some() || i.src_ip.is_some()),
            expect,
            trackers,
            garp_delayed: Vec::new(),
            garp_refresh: None,
            garp_lower: Vec::new(),
            ip_id: 0,
            ah_seq: 0,
            old_checksum: i.old_unicast_checksum == Some(true),
            start_at: None,
            mismatch: None,
            rx: None,
            refusals: Refusals::default(),
        }
    }

    /// What pairs an old instance with a new one at a reload (keepalived's
    /// `vrrp_exist()`: VRID, family, interface; and the mode, since a
    /// socket is kept): not the name.
    pub fn key(&self) -> (u8, bool, String, bool, Vec<IpAddr>) {
        (
            self.cfg.vrid,
            self.cfg.ipv6,
            self.ifname.clone(),
            self.cfg.unicast_peers.is_empty(),
            if self.cfg.unicast_peers.is_empty() {
                self.dsts.clone()
            } else {
                Vec::new()
            },
        )
    }

    /// Its unicast peers' addresses (none in multicast mode).
    pub fn unicast_peers(&self) -> &[IpAddr] {
        if self.cfg.unicast_peers.is_empty() {
            &[]
        } else {
            &self.dsts
        }
    }

    /// The interface its addresses without `dev` go on: its VMAC, if it
    /// has one, else its interface.
    pub fn vip_ifname(&self) -> &str {
        self.cfg.vmac.as_deref().unwrap_or(&self.ifname)
    }

    /// The IP protocol its adverts go in (51 with AH).
    pub fn proto(&self) -> u8 {
        if matches!(self.cfg.auth, Some(Auth::Ah(_))) && !self.cfg.ipv6 {
            IPPROTO_AH
        } else {
            IPPROTO_VRRP
        }
    }

    /// The addresses it sets: VIPs, then eVIPs.
    pub fn all_vips(&self) -> Vec<Vip> {
        self.cfg
            .vips
            .iter()
            .chain(&self.cfg.evips)
            .cloned()
            .collect()
    }

    /// Whether its addresses are firewalled while it is MASTER: no accept
    /// mode and not their owner (keepalived's `vrrp_handle_accept_mode()`
    /// looks at the configured priority).
    pub fn drops(&self) -> bool {
        !self.cfg.accept && self.cfg.priority != 255
    }

    /// The addresses firewalled while it is MASTER (none if it accepts).
    pub fn dropped_vips(&self) -> Vec<Vip> {
        if self.drops() {
            self.all_vips()
        } else {
            Vec::new()
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

    /// The earliest time something of its own is due: its advert or down
    /// timer, a delayed start, a GARP burst.
    pub fn next_due(&self) -> Option<u64> {
        [self.fsm.deadline, self.garp_refresh, self.start_at]
            .into_iter()
            .flatten()
            .chain(self.garp_delayed.iter().map(|d| d.0))
            .chain(self.garp_lower.iter().map(|d| d.0))
            .min()
    }

    /// What a reader of the status sees of it but its counters: a change
    /// here is published at once.
    pub fn visible(&self) -> Visible {
        (
            self.fsm.state,
            self.fsm.params.priority,
            self.base_priority,
            self.master,
            self.mismatch,
            self.last.as_ref().map(|t| t.at_us),
            self.if_up,
        )
    }

    /// The TTL / hop limit adverts leave with: 255, or `unicast_ttl`.
    pub fn ttl(&self) -> u8 {
        if self.cfg.unicast_peers.is_empty() {
            255
        } else {
            self.cfg.unicast_ttl
        }
    }

    /// The advert for `dst` as it goes on the wire: IPv4 with its header
    /// (and AH), IPv6 as the message.
    /// The destination a VRRPv3 IPv4 checksum is computed over: the
    /// packet's, or the multicast group in the old unicast mode.
    pub fn checksum_dst(&self, dst: IpAddr) -> IpAddr {
        if self.old_checksum && self.cfg.version == 3 && dst.is_ipv4() && !dst.is_multicast() {
            IpAddr::from(GROUP4)
        } else {
            dst
        }
    }

    /// One advert at `priority` to `dst`: over IPv4 the whole packet from
    /// its IP header on, over IPv6 the VRRP message.
    pub fn packet(&mut self, priority: u8, dst: IpAddr) -> Vec<u8> {
        let msg = self
            .advert(priority)
            .encode(self.src, self.checksum_dst(dst));
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
            // The kernel fills the header checksum; the ICV covers it as 0.
            ip[10] = 0;
            ip[11] = 0;
            self.ah_seq = self.ah_seq.saturating_add(1);
            let unicast = !self.cfg.unicast_peers.is_empty();
            let ah = ah::seal(&key8(k), &ip, self.ah_seq, &msg, unicast);
            pkt.extend_from_slice(&ip);
            pkt.extend_from_slice(&ah);
        } else {
            pkt.extend_from_slice(&ip);
        }
        pkt.extend_from_slice(&msg);
        pkt
    }

    /// Carries the running state of `old` (same key) into this node.
    pub fn carry(&mut self, old: Node) {
        let params = self.fsm.params.clone();
        self.fsm = old.fsm;
        let prio_now = self.fsm.params.priority;
        self.fsm.params = params;
        self.fsm.params.priority = prio_now;
        self.stats = old.stats;
        self.last = old.last;
        self.master = old.master;
        self.if_up = old.if_up;
        self.ip_id = old.ip_id;
        self.ah_seq = old.ah_seq;
        self.old_checksum |= old.old_checksum && self.cfg.old_unicast_checksum != Some(false);
        self.garp_refresh = old.garp_refresh;
        self.rx = old.rx;
        for t in &mut self.trackers.ifs {
            if let Some(o) = old.trackers.ifs.iter().find(|o| o.0 == t.0) {
                t.3 = o.3;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vrrp::fixtures::frame;

    /// keepalived's AH adverts (`auth_pass secret2`, the capture's first
    /// advert and its fifth, the release) byte for byte, but for the IPv4
    /// header checksum the kernel fills in.
    #[test]
    fn ah_adverts_are_keepalived_s_byte_for_byte() {
        let l = crate::config::load_str(
            "vrrp_instance VI_12 {\n interface lo\n virtual_router_id 12\n priority 202\n \
             advert_int 1\n authentication {\n  auth_type AH\n  auth_pass secret2\n }\n \
             virtual_ipaddress {\n  192.0.2.130\n }\n}\n",
        );
        let i = &l.config.vrrp.instances[0];
        let p = Placement {
            ifname: "lo".into(),
            src: Some("192.0.2.1".parse().unwrap()),
            up: true,
        };
        let mut n = Node::new(0, i, &p);
        let group: IpAddr = "224.0.0.18".parse().unwrap();
        let mut sent = Vec::new();
        for prio in [202, 202, 202, 202, 0] {
            sent.push(n.packet(prio, group));
        }
        for (file, ours) in [
            ("vrrpv2-ipv4-ah-vrid12-advert.txt", &sent[0]),
            ("vrrpv2-ipv4-ah-vrid12-prio0.txt", &sent[4]),
        ] {
            let f = frame(file);
            // keepalived's own adverts open with the key.
            let seq = ah::open("VI_12", &key8(b"secret2"), &f[14..34], &f[34..], false);
            assert_eq!(seq, Ok(if ours == &sent[0] { 1 } else { 5 }), "{file}");
            let mut theirs = f[14..].to_vec();
            theirs[10..12].fill(0);
            assert_eq!(ours, &theirs, "{file}");
        }
    }
}
