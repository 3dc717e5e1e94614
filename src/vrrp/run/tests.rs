//! The runner on a two-router LAN with a manual clock.

use super::*;
use std::net::{IpAddr, Ipv4Addr};

/// A two-router LAN on a manual clock: what one sends, the other
/// receives 100 µs later (multicast, TTL 255).
struct Lan {
    /// (deliver at, to router, packet from its IP header on, destination).
    wire: Vec<(u64, usize, Vec<u8>, IpAddr)>,
    log: Vec<(u64, usize, String)>,
    addrs: [bool; 2],
    now: u64,
    who: usize,
    /// `-V` off.
    release: bool,
    /// What every tracked file holds.
    file_value: i64,
}

impl World for Lan {
    fn placement(&mut self, _: &Instance) -> Placement {
        Placement {
            ifname: "lo".into(),
            src: Some(IpAddr::V4(Ipv4Addr::new(192, 0, 2, self.who as u8 + 1))),
            up: true,
        }
    }
    fn attach(&mut self, _: &Node) -> Option<Rx> {
        Some(0)
    }
    fn detach(&mut self, _: usize) {}
    fn send(&mut self, _: usize, pkt: &[u8], dst: IpAddr) {
        let prio = received(pkt, dst).payload[2];
        self.log
            .push((self.now, self.who, format!("advert {prio}")));
        self.wire
            .push((self.now + 100, 1 - self.who, pkt.to_vec(), dst));
    }
    fn addresses(&mut self, _: usize, _: &[Vip], add: bool) {
        if self.addrs[self.who] != add {
            self.log
                .push((self.now, self.who, if add { "+vip" } else { "-vip" }.into()));
        }
        self.addrs[self.who] = add;
    }
    fn firewall(&mut self, _: usize, t: &NftTable, vips: &[Vip], add: bool) {
        let sign = if add { '+' } else { '-' };
        self.log.push((
            self.now,
            self.who,
            format!("{sign}drop {} {}", t.name, vips.len()),
        ));
    }
    fn statics(&mut self, st: &Statics, add: bool) {
        let sign = if add { '+' } else { '-' };
        let n = st.addresses.len() + st.routes.len() + st.rules.len();
        self.log
            .push((self.now, self.who, format!("{sign}statics {n}")));
    }
    fn announce(&mut self, _: usize, _: &[Vip], count: u32) {
        self.log
            .push((self.now, self.who, format!("garp x{count}")));
    }
    fn notify(&mut self, _: &Instance, state: Notified, priority: u8) {
        self.log
            .push((self.now, self.who, format!("{state:?} {priority}")));
    }
    fn notify_group(&mut self, g: &SyncGroup, state: Notified) {
        self.log
            .push((self.now, self.who, format!("group {} {state:?}", g.name)));
    }
    fn run_script(&mut self, _: &VrrpScript) {}
    fn globals(&mut self, _: &std::sync::Arc<crate::config::model::Config>) {}
    fn release_at_stop(&self) -> bool {
        self.release
    }
    fn track_file_value(&mut self, _: &str) -> Option<i64> {
        Some(self.file_value)
    }
    fn log(&mut self, line: String) {
        self.log.push((self.now, self.who, format!("log {line}")));
    }
}

/// An IPv4 packet as it arrives (multicast, TTL as sent).
fn received(pkt: &[u8], dst: IpAddr) -> Received<'_> {
    let ihl = usize::from(pkt[0] & 0x0f) * 4;
    Received {
        from: IpAddr::V4(Ipv4Addr::new(pkt[12], pkt[13], pkt[14], pkt[15])),
        to: dst,
        ttl: pkt[8],
        proto: pkt[9],
        ip_header: &pkt[..ihl],
        payload: &pkt[ihl..],
    }
}

fn runner(lan: &mut Lan, who: usize, prio: u8, extra: &str) -> Runner {
    runner_with(lan, who, prio, extra, "")
}

fn runner_with(lan: &mut Lan, who: usize, prio: u8, extra: &str, globals: &str) -> Runner {
    let text = format!(
        "global_defs {{\n{globals}\n}}\nvrrp_instance VI_1 {{\n interface lo\n virtual_router_id 51\n priority {prio}\n \
         advert_int 1\n{extra}\n virtual_ipaddress {{\n  192.0.2.100/24\n }}\n}}\n"
    );
    let l = crate::config::load_str(&text);
    assert_eq!(l.config.vrrp.instances.len(), 1, "{:?}", l.diagnostics);
    lan.who = who;
    Runner::new(&l.config.vrrp, lan)
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
        for (_, to, pkt, dst) in due {
            if !stopped[to] {
                lan.who = to;
                // One socket: the runner finds the instance by its VRID.
                r[to].on_packet(0, next, &received(&pkt, dst), lan);
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
        release: true,
        file_value: 0,
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
    let mut lan = lan();
    let mut r = [runner(&mut lan, 0, 150, ""), runner(&mut lan, 1, 100, "")];
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

/// After a takeover the status still names the master heard before
/// (keepalived's `master_saddr`, which VRRP-MIB shows), while `master`
/// says no other master is followed now.
#[test]
fn the_last_master_heard_outlives_the_takeover() {
    let mut lan = lan();
    let mut r = [runner(&mut lan, 0, 150, ""), runner(&mut lan, 1, 100, "")];
    start(&mut r, &mut lan);
    play(&mut r, &mut lan, 10_000_000, Some((10_000_000, 0)));
    let before = crate::vrrp::status::snapshot(&r[1]);
    assert_eq!(before[0].master.as_deref(), Some("192.0.2.1"), "{before:?}");
    play(&mut r, &mut lan, 12_000_000, None);
    let after = crate::vrrp::status::snapshot(&r[1]);
    assert_eq!(after[0].state, "MASTER");
    assert_eq!(after[0].master, None);
    assert_eq!(after[0].last_master, before[0].master);
}

#[test]
fn a_returning_higher_priority_preempts_and_nopreempt_does_not() {
    for (extra, preempts) in [("", true), ("nopreempt", false)] {
        let mut lan = lan();
        let mut r = [
            runner(&mut lan, 0, 150, extra),
            runner(&mut lan, 1, 100, extra),
        ];
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
    let mut lan = lan();
    let mut r = [
        runner(&mut lan, 0, 150, auth),
        runner(&mut lan, 1, 100, auth),
    ];
    start(&mut r, &mut lan);
    play(&mut r, &mut lan, 8_000_000, None);
    assert!(first(&lan, 0, "Master 150", 0).is_some());
    assert_eq!(first(&lan, 1, "Master 100", 0), None, "{:?}", lan.log);
    assert!(r[1].nodes[0].stats.advert_rcvd >= 4);
    assert_eq!(r[1].nodes[0].stats.auth_failure, 0);
}

#[test]
fn dont_release_vrrp_leaves_the_addresses_and_sends_no_priority_zero() {
    let mut lan = lan();
    lan.release = false;
    let mut r = [runner(&mut lan, 0, 150, ""), runner(&mut lan, 1, 100, "")];
    start(&mut r, &mut lan);
    play(&mut r, &mut lan, 6_000_000, Some((6_000_000, 0)));
    assert!(first(&lan, 0, "Master 150", 0).is_some());
    assert_eq!(first(&lan, 0, "advert 0", 0), None, "{:?}", lan.log);
    assert_eq!(first(&lan, 0, "-vip", 4_000_000), None);
    assert_eq!(first(&lan, 0, "Stop 150", 0), Some(6_000_000));
}

#[test]
fn an_old_vrrpv3_unicast_checksum_is_learnt_from_the_peer_unless_never() {
    let uc = |me: u8, peer: u8, old: &str| {
        format!("version 3\n unicast_src_ip 192.0.2.{me}\n unicast_peer {{\n  192.0.2.{peer}\n }}\n {old}")
    };
    for (peer_mode, learns) in [("", true), ("old_unicast_checksum never", false)] {
        let mut lan = lan();
        let mut r = [
            runner(&mut lan, 0, 150, &uc(1, 2, "old_unicast_checksum")),
            runner(&mut lan, 1, 100, &uc(2, 1, peer_mode)),
        ];
        start(&mut r, &mut lan);
        play(&mut r, &mut lan, 8_000_000, None);
        assert!(first(&lan, 0, "Master 150", 0).is_some());
        let learnt = "log (VI_1) Setting unicast VRRPv3 checksum to old version";
        if learns {
            assert!(first(&lan, 1, learnt, 0).is_some(), "{:?}", lan.log);
            assert_eq!(first(&lan, 1, "Master 100", 0), None, "{:?}", lan.log);
            assert!(r[1].nodes[0].old_checksum);
        } else {
            // Every advert fails its checksum: d2 takes over as well.
            assert_eq!(first(&lan, 1, learnt, 0), None);
            assert!(
                first(&lan, 1, "log (VI_1) Invalid VRRPv3 checksum", 0).is_some(),
                "{:?}",
                lan.log
            );
            assert!(first(&lan, 1, "Master 100", 0).is_some());
        }
    }
}

#[test]
fn vrrp_startup_delay_holds_the_first_timers_and_the_owner() {
    let delay = "vrrp_startup_delay 2";
    for (prio, extra, master_at) in [
        (100, "", 2_000_000 + 3_609_375),
        (255, "state MASTER", 2_000_000),
    ] {
        let mut lan = lan();
        let mut r = [
            runner_with(&mut lan, 0, prio, extra, delay),
            runner(&mut lan, 1, 1, "nopreempt"),
        ];
        lan.who = 0;
        r[0].start(0, &mut lan);
        play(&mut r, &mut lan, 8_000_000, None);
        let m = format!("Master {prio}");
        assert_eq!(first(&lan, 0, &m, 0), Some(master_at), "{:?}", lan.log);
        assert!(first(&lan, 0, "log Delaying startup for 2 seconds", 0).is_some());
        // The owner shows no BACKUP while it waits (keepalived stays INIT).
        assert_eq!(
            first(&lan, 0, &format!("Backup {prio}"), 0).is_some(),
            prio != 255
        );
    }
}

#[test]
fn interface_up_down_delays_hide_a_short_flap_and_delay_a_real_loss() {
    let text = "interface_up_down_delays {\n lo 2\n}\nvrrp_instance VI_1 {\n interface lo\n \
                virtual_router_id 51\n priority 150\n advert_int 1\n virtual_ipaddress {\n  \
                192.0.2.100/24\n }\n}\n";
    let l = crate::config::load_str(text);
    assert_eq!(
        l.config.vrrp.up_down_delays,
        vec![("lo".to_string(), 2_000_000, 0)]
    );
    let mut lan = lan();
    lan.who = 0;
    let mut r = [
        Runner::new(&l.config.vrrp, &mut lan),
        runner(&mut lan, 1, 1, "nopreempt"),
    ];
    lan.who = 0;
    r[0].start(0, &mut lan);
    play(&mut r, &mut lan, 5_000_000, None);
    assert!(first(&lan, 0, "Master 150", 0).is_some());
    // Down for one second only: never seen.
    lan.who = 0;
    r[0].on_link(5_000_000, "lo", false, &mut lan);
    play(&mut r, &mut lan, 6_000_000, None);
    lan.who = 0;
    r[0].on_link(6_000_000, "lo", true, &mut lan);
    play(&mut r, &mut lan, 8_000_000, None);
    assert_eq!(first(&lan, 0, "Fault 150", 0), None, "{:?}", lan.log);
    // Down for good: FAULT once the 2 s have passed; up again at once (UP 0).
    lan.who = 0;
    r[0].on_link(8_000_000, "lo", false, &mut lan);
    play(&mut r, &mut lan, 11_000_000, None);
    assert_eq!(
        first(&lan, 0, "Fault 150", 0),
        Some(10_000_000),
        "{:?}",
        lan.log
    );
    lan.who = 0;
    r[0].on_link(11_000_000, "lo", true, &mut lan);
    assert_eq!(
        first(&lan, 0, "Backup 150", 10_000_000),
        Some(11_000_000),
        "{:?}",
        lan.log
    );
}

#[test]
fn without_accept_mode_a_non_owner_master_drops_traffic_to_its_addresses() {
    // (instance lines, global lines, whether it drops, the table).
    for (extra, globals, drops, table) in [
        ("no_accept", "", true, "keepalived"),
        ("", "vrrp_strict", true, "keepalived"),
        ("no_accept", "nftables kad", true, "kad"),
        ("accept", "", false, ""),
        ("", "", false, ""),
    ] {
        let mut lan = lan();
        let mut r = [
            runner_with(&mut lan, 0, 150, extra, globals),
            runner(&mut lan, 1, 100, ""),
        ];
        start(&mut r, &mut lan);
        play(&mut r, &mut lan, 5_000_000, Some((5_000_000, 0)));
        let up = first(&lan, 0, "+vip", 0).expect("MASTER");
        let set = format!("+drop {table} 1");
        let unset = format!("-drop {table} 1");
        if drops {
            // Set before its addresses, removed after them.
            let at = first(&lan, 0, &set, 0).unwrap_or_else(|| panic!("{extra}: {:?}", lan.log));
            assert_eq!(at, up);
            let pos = |what: &str| {
                lan.log
                    .iter()
                    .position(|(t, w, x)| *w == 0 && x == what && *t >= up)
            };
            assert!(pos(&set) < pos("+vip"));
            assert!(pos("-vip") < pos(&unset), "{:?}", lan.log);
        } else {
            assert!(
                !lan.log.iter().any(|(_, _, x)| x.contains("drop")),
                "{extra}: {:?}",
                lan.log
            );
        }
        // keepalived's line when it takes its default table.
        let defaulted = lan.log.iter().any(|(_, _, x)| {
            x == "log use_vmac or no_accept/strict specified, but no firewall configured - using nftables"
        });
        assert_eq!(defaulted, table == "keepalived", "{extra} {globals}");
    }
    // An owner never drops, even with no_accept.
    let mut lan = lan();
    let mut r = [
        runner(&mut lan, 0, 255, "no_accept"),
        runner(&mut lan, 1, 100, ""),
    ];
    start(&mut r, &mut lan);
    play(&mut r, &mut lan, 4_000_000, None);
    assert!(first(&lan, 0, "+vip", 0).is_some(), "{:?}", lan.log);
    assert!(
        !lan.log.iter().any(|(_, _, x)| x.contains("drop")),
        "{:?}",
        lan.log
    );
}

#[test]
fn deleted_routes_and_rules_are_taken_back_where_keepalived_watches_them() {
    let gone_static = GoneRoute {
        ipv6: false,
        dst: "203.0.113.0".parse().unwrap(),
        prefix: 24,
        table: 254,
        metric: None,
    };
    let statics = "static_routes {\n 203.0.113.0/24 via 192.0.2.10 dev lo\n}\n\
                   static_rules {\n fwmark 0x10 table 200 priority 200\n}\n";
    for (extra, watched) in [
        (" virtual_routes {\n  198.51.100.0/24 dev lo\n }\n virtual_rules {\n  to 198.51.100.0/24 lookup 100 priority 90\n }", true),
        ("", false),
    ] {
        let mut lan = lan();
        let text = format!(
            "{statics}vrrp_instance VI_1 {{\n interface lo\n virtual_router_id 51\n priority 150\n \
             advert_int 1\n{extra}\n virtual_ipaddress {{\n  192.0.2.100/24\n }}\n}}\n"
        );
        let l = crate::config::load_str(&text);
        let mut r = [Runner::new(&l.config.vrrp, &mut lan), runner(&mut lan, 1, 100, "")];
        start(&mut r, &mut lan);
        play(&mut r, &mut lan, 4_000_000, None);
        assert!(first(&lan, 0, "Master 150", 0).is_some());
        lan.who = 0;
        r[0].on_gone(4_000_000, &gone_static, &mut lan);
        r[0].on_gone(4_000_000, &GoneRule { ipv6: false, priority: 200 }, &mut lan);
        let restored = lan
            .log
            .iter()
            .filter(|(t, w, x)| *t == 4_000_000 && *w == 0 && x == "+statics 1")
            .count();
        assert_eq!(restored, if watched { 2 } else { 0 }, "{extra}: {:?}", lan.log);
        if watched {
            assert!(lan.log.iter().any(|(_, _, x)| x
                == "log Restoring deleted static route prepend 203.0.113.0/24 via inet 192.0.2.10 dev lo proto 18"));
            // The master's own virtual route: BACKUP, priority 0, and back.
            let v = GoneRoute {
                dst: "198.51.100.0".parse().unwrap(),
                ..gone_static.clone()
            };
            lan.now = 4_100_000;
            r[0].on_gone(4_100_000, &v, &mut lan);
            assert_eq!(first(&lan, 0, "advert 0", 4_100_000), Some(4_100_000));
            play(&mut r, &mut lan, 6_000_000, None);
            assert!(first(&lan, 0, "Master 150", 4_100_001).is_some(), "{:?}", lan.log);
        }
    }
}

#[test]
fn a_track_file_shifts_the_priority_and_can_put_the_instance_in_fault() {
    let mut lan = lan();
    let text = "track_file tf {\n file /nonexistent/tf\n weight -60\n}\n\
                vrrp_instance VI_1 {\n interface lo\n virtual_router_id 51\n priority 150\n \
                advert_int 1\n track_file {\n  tf\n }\n virtual_ipaddress {\n  192.0.2.100/24\n }\n}\n";
    let l = crate::config::load_str(text);
    assert_eq!(l.config.vrrp.track_files.len(), 1, "{:?}", l.diagnostics);
    let mut r = [
        Runner::new(&l.config.vrrp, &mut lan),
        runner(&mut lan, 1, 100, ""),
    ];
    start(&mut r, &mut lan);
    play(&mut r, &mut lan, 4_000_000, None);
    assert!(first(&lan, 0, "Master 150", 0).is_some());
    lan.who = 0;
    lan.file_value = 1;
    r[0].on_track_file(4_000_000, "tf", &mut lan);
    assert!(first(
        &lan,
        0,
        "log (VI_1) Changing effective priority from 150 to 90",
        0
    )
    .is_some());
    // Its next advert says 90: router 1 (100) preempts.
    play(&mut r, &mut lan, 9_000_000, None);
    assert!(
        first(&lan, 1, "Master 100", 4_000_000).is_some(),
        "{:?}",
        lan.log
    );
    // -5 × -60 = 300, clamped to 253: the priority stays within 1..254;
    // 5 × -60 = -300 is -254: FAULT.
    lan.who = 0;
    lan.now = 9_000_000;
    lan.file_value = 5;
    r[0].on_track_file(9_000_000, "tf", &mut lan);
    assert!(
        first(&lan, 0, "Fault 150", 9_000_000).is_some(),
        "{:?}",
        lan.log
    );
    lan.file_value = 0;
    r[0].on_track_file(9_000_000, "tf", &mut lan);
    assert!(
        first(&lan, 0, "Backup 150", 9_000_000).is_some(),
        "{:?}",
        lan.log
    );
}

/// Router `who` with instances VI_1 (VRID 51) and VI_2 (VRID 52) in sync
/// group G1, both at `prio`; VI_1 tracks the unweighted script `chk`.
fn grouped(lan: &mut Lan, who: usize, prio: u8) -> Runner {
    let inst = |name: &str, vrid: u8, extra: &str| {
        format!(
            "vrrp_instance {name} {{\n interface lo\n virtual_router_id {vrid}\n priority {prio}\n \
             advert_int 1\n{extra}\n virtual_ipaddress {{\n  192.0.2.{vrid}/24\n }}\n}}\n"
        )
    };
    let text = format!(
        "vrrp_script chk {{\n script /bin/true\n interval 1\n}}\n\
         vrrp_sync_group G1 {{\n group {{\n  VI_1\n  VI_2\n }}\n}}\n{}{}",
        inst("VI_1", 51, " track_script {\n  chk\n }"),
        inst("VI_2", 52, "")
    );
    let l = crate::config::load_str(&text);
    assert_eq!(l.config.vrrp.sync_groups.len(), 1, "{:?}", l.diagnostics);
    lan.who = who;
    Runner::new(&l.config.vrrp, lan)
}

fn states(r: &Runner) -> (State, State, State) {
    (
        r.nodes[0].fsm.state,
        r.nodes[1].fsm.state,
        r.groups[0].state,
    )
}

fn logged(lan: &Lan, who: usize, what: &str) -> Vec<u64> {
    lan.log
        .iter()
        .filter(|(_, w, x)| *w == who && x == what)
        .map(|x| x.0)
        .collect()
}

#[test]
fn a_sync_group_holds_its_first_member_and_moves_together() {
    use State::{Backup, Fault, Master};
    let mut lan = lan();
    let mut r = [grouped(&mut lan, 0, 150), grouped(&mut lan, 1, 100)];
    start(&mut r, &mut lan);
    for (k, x) in r.iter_mut().enumerate() {
        lan.who = k;
        x.on_script(0, "chk", Outcome::Exited(0), &mut lan);
    }
    play(&mut r, &mut lan, 5_000_000, None);
    assert_eq!(states(&r[0]), (Master, Master, Master), "{:?}", lan.log);
    assert_eq!(states(&r[1]), (Backup, Backup, Backup));
    // Both members' timers ran out together: VI_1, first, was held (it
    // wanted MASTER, VI_2 not yet); VI_2 went and took VI_1 along.
    assert_eq!(
        logged(&lan, 0, "log (VI_1) Receive advertisement timeout"),
        vec![3_414_062]
    );
    let synced = logged(
        &lan,
        0,
        "log VRRP_Group(G1) Syncing instances to MASTER state",
    );
    assert_eq!(synced, vec![3_414_062]);
    assert_eq!(logged(&lan, 0, "group G1 Master"), vec![3_414_062]);
    assert_eq!(logged(&lan, 0, "group G1 Backup"), vec![0], "said at start");
    // VI_1's unweighted script fails on the master: the whole group goes
    // to FAULT (both release with priority 0), the peer takes both.
    lan.who = 0;
    lan.now = 5_000_000;
    r[0].on_script(5_000_000, "chk", Outcome::Exited(1), &mut lan);
    assert_eq!(states(&r[0]), (Fault, Fault, Fault));
    let zeros = lan
        .log
        .iter()
        .filter(|(t, w, x)| *w == 0 && *t == 5_000_000 && x == "advert 0")
        .count();
    assert_eq!(zeros, 2, "{:?}", lan.log);
    play(&mut r, &mut lan, 7_000_000, None);
    assert_eq!(states(&r[1]), (Master, Master, Master));
    // The script succeeds again: both leave FAULT together and preempt.
    lan.who = 0;
    lan.now = 7_000_000;
    r[0].on_script(7_000_000, "chk", Outcome::Exited(0), &mut lan);
    assert_eq!(states(&r[0]), (Backup, Backup, Backup));
    play(&mut r, &mut lan, 12_000_000, None);
    assert_eq!(states(&r[0]), (Master, Master, Master));
    assert_eq!(states(&r[1]), (Backup, Backup, Backup));
    let back = logged(
        &lan,
        1,
        "log VRRP_Group(G1) Syncing instances to BACKUP state",
    );
    assert_eq!(back.len(), 2, "at start, then yielding: {:?}", lan.log);
}

#[test]
fn a_tracked_process_s_exit_counts_after_terminate_delay_and_a_return_cancels_it() {
    use crate::vrrp::process::Cause;
    let mut lan = lan();
    let text = "vrrp_track_process web {\n process nginx\n weight -60\n delay 2\n}\n\
        vrrp_instance VI_1 {\n interface lo\n virtual_router_id 51\n priority 150\n \
        track_process {\n  web\n }\n virtual_ipaddress {\n  192.0.2.100/24\n }\n}\n";
    let l = crate::config::load_str(text);
    assert_eq!(
        l.config.vrrp.track_processes.len(),
        1,
        "{:?}",
        l.diagnostics
    );
    let mut r = Runner::new(&l.config.vrrp, &mut lan);
    r.start(0, &mut lan);
    // Nothing ran at start: 150 - 60.
    assert_eq!(r.nodes[0].fsm.params.priority, 90);
    // nginx exec'd: no delay for a gain by exec.
    r.on_process(1_000_000, &[("web".into(), 1, Cause::Other)], &mut lan);
    assert_eq!(r.nodes[0].fsm.params.priority, 150);
    // It exits: the loss waits out terminate_delay...
    r.on_process(2_000_000, &[("web".into(), 0, Cause::Exit)], &mut lan);
    assert_eq!(r.nodes[0].fsm.params.priority, 150);
    assert_eq!(r.next_deadline().map(|d| d <= 4_000_000), Some(true));
    r.on_timer(4_000_000, &mut lan);
    assert_eq!(r.nodes[0].fsm.params.priority, 90, "{:?}", lan.log);
    // ...and a return within it cancels it: nothing changes.
    r.on_process(5_000_000, &[("web".into(), 1, Cause::Fork)], &mut lan);
    r.on_process(5_500_000, &[("web".into(), 0, Cause::Exit)], &mut lan);
    r.on_timer(9_000_000, &mut lan);
    assert_eq!(r.nodes[0].fsm.params.priority, 90);
    let lines: Vec<&str> = lan
        .log
        .iter()
        .filter_map(|(_, _, x)| x.strip_prefix("log Quorum"))
        .collect();
    assert_eq!(
        lines,
        [
            " gained for tracked process web",
            " lost for tracked process web"
        ]
    );
}

#[test]
fn a_reload_that_moves_a_vip_to_another_line_leaves_it_alone() {
    let mut lan = lan();
    let mut r = [runner(&mut lan, 0, 150, ""), runner(&mut lan, 1, 100, "")];
    start(&mut r, &mut lan);
    play(&mut r, &mut lan, 5_000_000, None);
    assert_eq!(r[0].nodes[0].fsm.state, State::Master);
    // The same instance with a comment line added above its address.
    let l = crate::config::load_str(
        "global_defs {\n\n}\n# a comment\nvrrp_instance VI_1 {\n interface lo\n virtual_router_id 51\n \
         priority 150\n advert_int 1\n\n virtual_ipaddress {\n  192.0.2.100/24\n }\n}\n",
    );
    let before = lan.log.len();
    lan.who = 0;
    r[0].reload(&l.config.vrrp, 5_000_000, &mut lan);
    let after: Vec<&String> = lan.log[before..].iter().map(|x| &x.2).collect();
    assert!(
        !after.iter().any(|x| *x == "-vip" || x.starts_with("garp")),
        "{after:?}"
    );
}

#[test]
fn dont_track_primary_keeps_an_instance_out_of_fault_when_its_link_goes() {
    for (extra, want) in [("", State::Fault), (" dont_track_primary", State::Master)] {
        let mut lan = lan();
        let mut r = [
            runner(&mut lan, 0, 150, extra),
            runner(&mut lan, 1, 100, ""),
        ];
        start(&mut r, &mut lan);
        play(&mut r, &mut lan, 5_000_000, None);
        assert_eq!(r[0].nodes[0].fsm.state, State::Master);
        lan.who = 0;
        r[0].on_link(5_000_000, "lo", false, &mut lan);
        assert_eq!(r[0].nodes[0].fsm.state, want, "{extra:?}");
    }
}

/// An advert for VRID 51 from `from` to `dst` listing `addrs`, as a third
/// host on the LAN sends it.
fn stranger(from: [u8; 4], dst: IpAddr, priority: u8, addrs: &[[u8; 4]]) -> Vec<u8> {
    use crate::vrrp::packet::{ipv4_header, Advert, AuthType, IPPROTO_VRRP};
    let src = Ipv4Addr::from(from);
    let vrrp = Advert {
        version: 2,
        vrid: 51,
        priority,
        adver_int_cs: 100,
        addrs: addrs.iter().map(|a| IpAddr::from(*a)).collect(),
        auth: AuthType::None,
        auth_data: [0; 8],
    }
    .encode(IpAddr::V4(src), dst);
    let IpAddr::V4(d) = dst else { unreachable!() };
    let mut p = ipv4_header(src, d, vrrp.len(), 255, IPPROTO_VRRP).to_vec();
    p.extend_from_slice(&vrrp);
    p
}

/// Plays both routers from 5 s to 15 s with `pkt` delivered to both every
/// second; the number of routers holding the VIP at each delivery.
fn holders_under(r: &mut [Runner; 2], lan: &mut Lan, pkt: &[u8], dst: IpAddr) -> Vec<usize> {
    let mut seen = Vec::new();
    for s in 5..15u64 {
        let t = s * 1_000_000 + 500_000;
        play(r, lan, t, None);
        for (k, x) in r.iter_mut().enumerate() {
            lan.who = k;
            x.on_packet(0, t, &received(pkt, dst), lan);
        }
        seen.push(lan.addrs.iter().filter(|a| **a).count());
    }
    seen
}

const GROUP: IpAddr = IpAddr::V4(Ipv4Addr::new(224, 0, 0, 18));

#[test]
fn another_list_from_a_stranger_moves_nothing_at_any_priority() {
    // A host on the LAN at priority 1 and a second cluster's master at
    // 200, each listing another address for our VRID.
    for prio in [1, 200] {
        let mut net = lan();
        let mut r = [runner(&mut net, 0, 150, ""), runner(&mut net, 1, 100, "")];
        start(&mut r, &mut net);
        let pkt = stranger([192, 0, 2, 9], GROUP, prio, &[[192, 0, 2, 150]]);
        let seen = holders_under(&mut r, &mut net, &pkt, GROUP);
        assert_eq!(seen, vec![1; 10], "priority {prio}: {:?}", net.log);
        assert_eq!(r[0].nodes[0].fsm.state, State::Master);
        assert_eq!(r[0].nodes[0].stats.addr_list_err, 10);
        assert!(r[0].nodes[0].mismatch.is_none());
    }
}

#[test]
fn another_list_from_a_unicast_non_peer_moves_nothing() {
    for check in ["", " check_unicast_src"] {
        let uni = |me: u8, peer: u8| {
            format!(
                " unicast_src_ip 192.0.2.{me}\n unicast_peer {{\n  192.0.2.{peer}\n }}\n{check}"
            )
        };
        let mut net = lan();
        let mut r = [
            runner(&mut net, 0, 150, &uni(1, 2)),
            runner(&mut net, 1, 100, &uni(2, 1)),
        ];
        start(&mut r, &mut net);
        // To each director's own address: both get it (the LAN delivers
        // to whichever is asked).
        let dst = IpAddr::V4(Ipv4Addr::new(192, 0, 2, 1));
        let pkt = stranger([192, 0, 2, 9], dst, 254, &[[192, 0, 2, 150]]);
        let seen = holders_under(&mut r, &mut net, &pkt, dst);
        assert_eq!(seen, vec![1; 10], "{check:?}: {:?}", net.log);
        assert_eq!(r[0].nodes[0].fsm.state, State::Master);
    }
}

/// Reloads router `k` with priority `prio` and a second VIP.
fn reload_with_two(r: &mut [Runner; 2], lan: &mut Lan, k: usize, prio: u8, extra: &str, at: u64) {
    let l = crate::config::load_str(&format!(
        "vrrp_instance VI_1 {{\n interface lo\n virtual_router_id 51\n priority {prio}\n \
         advert_int 1\n{extra}\n virtual_ipaddress {{\n  192.0.2.100/24\n  192.0.2.101/24\n }}\n}}\n"
    ));
    assert_eq!(l.config.vrrp.instances.len(), 1, "{:?}", l.diagnostics);
    lan.who = k;
    r[k].reload(&l.config.vrrp, at, lan);
}

#[test]
fn a_peer_reloaded_with_another_list_is_followed_as_any_peer() {
    let uni = |me: u8, peer: u8| {
        format!(" unicast_src_ip 192.0.2.{me}\n unicast_peer {{\n  192.0.2.{peer}\n }}\n check_unicast_src")
    };
    // Multicast: the backup keeps following the master it follows.
    let mut net = lan();
    let mut r = [runner(&mut net, 0, 150, ""), runner(&mut net, 1, 100, "")];
    start(&mut r, &mut net);
    play(&mut r, &mut net, 5_000_000, None);
    reload_with_two(&mut r, &mut net, 0, 150, "", 5_000_000);
    play(&mut r, &mut net, 15_000_000, None);
    assert_eq!(net.addrs, [true, false], "{:?}", net.log);
    assert!(r[1].nodes[0].mismatch.is_some());
    // Unicast, the backup reloaded above the master: it takes over, and
    // the master, hearing a configured peer win, yields.
    let mut net = lan();
    let mut r = [
        runner(&mut net, 0, 150, &uni(1, 2)),
        runner(&mut net, 1, 100, &uni(2, 1)),
    ];
    start(&mut r, &mut net);
    play(&mut r, &mut net, 5_000_000, None);
    assert_eq!(net.addrs, [true, false]);
    reload_with_two(&mut r, &mut net, 1, 200, &uni(2, 1), 5_000_000);
    play(&mut r, &mut net, 15_000_000, None);
    assert_eq!(net.addrs, [false, true], "{:?}", net.log);
    // Reloaded below the master instead: it stays BACKUP.
    reload_with_two(&mut r, &mut net, 1, 50, &uni(2, 1), 15_000_000);
    play(&mut r, &mut net, 16_000_000, None);
    // (The master now yields to nobody: it is router 1 at 50.)
    play(&mut r, &mut net, 25_000_000, None);
    assert_eq!(net.addrs, [true, false], "{:?}", net.log);
}

#[test]
fn track_bfd_faults_without_a_weight_and_shifts_with_one_as_keepalived_does() {
    let mut lan = lan();
    let text = "bfd_instance to_b {\n neighbor_ip 192.0.2.2\n}\n\
                bfd_instance to_r {\n neighbor_ip 192.0.2.9\n weight 60 reverse\n}\n\
                vrrp_instance VI_1 {\n interface lo\n virtual_router_id 51\n priority 150\n \
                advert_int 1\n track_bfd {\n  to_b\n  to_r\n }\n virtual_ipaddress {\n  192.0.2.100/24\n }\n}\n";
    let l = crate::config::load_str(text);
    assert_eq!(l.config.vrrp.track_bfds.len(), 2, "{:?}", l.diagnostics);
    let mut r = [
        Runner::new(&l.config.vrrp, &mut lan),
        runner(&mut lan, 1, 100, ""),
    ];
    start(&mut r, &mut lan);
    play(&mut r, &mut lan, 4_000_000, None);
    // Every tracked session starts Down: the unweighted one faults.
    assert!(first(&lan, 0, "Fault 150", 0).is_some(), "{:?}", lan.log);
    assert!(first(&lan, 1, "Master 100", 0).is_some());
    // to_b Up: out of FAULT. to_r Up: `weight 60 reverse` takes 60 off.
    lan.who = 0;
    r[0].on_bfd(4_000_000, "to_b", true, &mut lan);
    r[0].on_bfd(4_000_000, "to_b", true, &mut lan);
    r[0].on_bfd(4_000_000, "to_r", true, &mut lan);
    let log = |s: &str| format!("log {s}");
    assert!(first(
        &lan,
        0,
        &log("VRRP_Instance(VI_1) Tracked BFD instance to_b is UP"),
        0
    )
    .is_some());
    assert_eq!(
        lan.log
            .iter()
            .filter(|x| x.2.contains("Tracked BFD instance to_b is UP"))
            .count(),
        1,
        "a repeated event is ignored"
    );
    assert!(
        first(
            &lan,
            0,
            &log("(VI_1) Changing effective priority from 150 to 90"),
            0
        )
        .is_some(),
        "{:?}",
        lan.log
    );
    play(&mut r, &mut lan, 9_000_000, None);
    assert!(
        first(&lan, 1, "Master 100", 4_000_000).is_none(),
        "100 stays MASTER over 90"
    );
    // to_r Down: back to 150, which preempts.
    lan.who = 0;
    lan.now = 9_000_000;
    r[0].on_bfd(9_000_000, "to_r", false, &mut lan);
    play(&mut r, &mut lan, 14_000_000, None);
    assert!(
        first(&lan, 0, "Master 150", 9_000_000).is_some(),
        "{:?}",
        lan.log
    );
    // to_b Down: FAULT at once.
    lan.who = 0;
    lan.now = 14_000_000;
    r[0].on_bfd(14_000_000, "to_b", false, &mut lan);
    assert!(
        first(&lan, 0, "Fault 150", 14_000_000).is_some(),
        "{:?}",
        lan.log
    );
}

#[test]
fn bfd_takeover_moves_the_vip_when_the_session_to_the_master_goes_down() {
    let mut lan = lan();
    // Router 1 (100) follows router 0 (150, at 192.0.2.1).
    let text = "bfd_instance to_a {\n neighbor_ip 192.0.2.1\n}\n\
                vrrp_instance VI_1 {\n interface lo\n virtual_router_id 51\n priority 100\n \
                advert_int 1\n bfd_takeover to_a\n virtual_ipaddress {\n  192.0.2.100/24\n }\n}\n";
    let l = crate::config::load_str(text);
    assert_eq!(
        l.config.vrrp.instances[0].bfd_takeover,
        Some(("to_a".to_string(), "192.0.2.1".parse().unwrap())),
        "{:?}",
        l.diagnostics
    );
    let mut r = [runner(&mut lan, 0, 150, ""), {
        lan.who = 1;
        Runner::new(&l.config.vrrp, &mut lan)
    }];
    start(&mut r, &mut lan);
    play(&mut r, &mut lan, 6_000_000, None);
    assert!(first(&lan, 0, "Master 150", 0).is_some(), "{:?}", lan.log);
    // The session comes Up: nothing moves. It goes Down at 6.2 s (router
    // 0 died at 6 s): router 1 is MASTER at once, not 3.6 s after the last
    // advert.
    lan.who = 1;
    r[1].on_bfd(5_000_000, "to_a", true, &mut lan);
    lan.now = 6_200_000;
    r[1].on_bfd(6_200_000, "to_a", false, &mut lan);
    assert_eq!(
        first(&lan, 1, "Master 100", 6_000_000),
        Some(6_200_000),
        "{:?}",
        lan.log
    );
    // A repeated Down does nothing more; a Down while MASTER neither.
    r[1].on_bfd(6_300_000, "to_a", false, &mut lan);
    r[1].on_bfd(6_400_000, "to_a", true, &mut lan);
    r[1].on_bfd(6_500_000, "to_a", false, &mut lan);
    assert_eq!(r[1].nodes[0].fsm.state, State::Master);
}
