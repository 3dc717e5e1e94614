//! BFD on the namespace lab (`tests/common/lab.rs`): ours against
//! keepalived 2.2.7 in both directions, and ours against ours. Sessions
//! come up over IPv4 and IPv6, and a neighbour that stops (keepalived sends
//! no AdminDown) or whose cable is cut is detected in `multiplier x
//! interval` after its last packet, as `../shared/reference/bfd.md` §8.3
//! measured keepalived doing.
//!
//! Needs root and keepalived 2.2.7: `--features root,reference`
//! (`scripts/test.sh` turns them on); there it never skips.

mod common;

use common::frr::Frr;
use common::lab::{Impl, Lab};

/// Director `n`'s sessions to the other one: IPv4 and IPv6 at 100 ms x 3
/// (the IPv6 one with keepalived's default hop limit of 64 on both sides).
fn conf(n: usize) -> String {
    let peer = 3 - n;
    format!(
        "bfd_instance to_peer {{\n  neighbor_ip 192.0.2.{peer}\n  source_ip 192.0.2.{n}\n  \
         min_rx 100\n  min_tx 100\n  multiplier 3\n}}\n\
         bfd_instance to_peer6 {{\n  neighbor_ip 2001:db8::{peer}\n  source_ip 2001:db8::{n}\n  \
         min_rx 100\n  min_tx 100\n  multiplier 3\n}}\n"
    )
}

/// The `Expired after N ms` values in `log` for session `name`, in order.
fn expiries(log: &str, name: &str) -> Vec<u64> {
    let key = format!("({name}) Expired after ");
    log.lines()
        .filter_map(|l| {
            let rest = &l[l.find(&key)? + key.len()..];
            rest.split_whitespace().next()?.parse().ok()
        })
        .collect()
}

fn ups(log: &str, name: &str) -> usize {
    log.matches(&format!("({name}) Entering Up state")).count()
}

fn wait_log(lab: &Lab, n: usize, imp: Impl, secs: f64, pred: impl Fn(&str) -> bool) -> bool {
    lab.wait_for(secs, |_| pred(&lab.log(n, imp)))
}

#[test]
#[cfg_attr(
    not(all(feature = "root", feature = "reference")),
    ignore = "needs root (--features root,reference)"
)]
fn sessions_come_up_with_keepalived_and_ours_and_detect_a_silent_neighbour() {
    let pairings = [
        (Impl::Ours, Impl::Keepalived),
        (Impl::Keepalived, Impl::Ours),
        (Impl::Ours, Impl::Ours),
    ];
    let mut problems = Vec::new();
    for (a, b) in pairings {
        let name = format!("[{}{}]", a.letter(), b.letter());
        let mut lab = Lab::up("kbfd");
        lab.start(1, a, &conf(1));
        lab.start(2, b, &conf(2));
        // Up on both sides, both families, within a few idle intervals.
        for (n, imp) in [(1, a), (2, b)] {
            let up = wait_log(&lab, n, imp, 8.0, |l| {
                ups(l, "to_peer") == 1 && ups(l, "to_peer6") == 1
            });
            if !up {
                problems.push(format!("{name} d{n} never Up: {}", lab.log(n, imp)));
            }
        }
        if !problems.is_empty() {
            continue;
        }
        // A reload of an unchanged file (and a dump) on every director: the
        // sessions stay Up; then steady for 2 s: no flap.
        for n in [1, 2] {
            lab.signal(n, "HUP");
        }
        // keepalived passes over a SIGUSR1 that comes during its reload.
        std::thread::sleep(std::time::Duration::from_millis(800));
        for n in [1, 2] {
            lab.signal(n, "USR1");
        }
        std::thread::sleep(std::time::Duration::from_secs(2));
        // A daemon running BFD alone answers --status from the shell.
        for (n, imp) in [(1, a), (2, b)] {
            if imp == Impl::Ours {
                let st = lab.status(n);
                let up = st["bfd"]
                    .as_array()
                    .is_some_and(|l| l.iter().filter(|s| s["state"] == "Up").count() == 2);
                if !up {
                    problems.push(format!("{name} d{n}: --status: {st}"));
                }
            }
        }
        for n in [1, 2] {
            let dump = lab.dir.join(format!("d{n}/keepalived_bfd.data"));
            let d = std::fs::read_to_string(&dump).unwrap_or_default();
            if !d.contains(" BFD Instance = to_peer\n") || !d.contains("   local state = Up\n") {
                problems.push(format!("{name} d{n}: {}: {d}", dump.display()));
            }
        }
        for (n, imp) in [(1, a), (2, b)] {
            let l = lab.log(n, imp);
            if !expiries(&l, "to_peer").is_empty() || l.contains("Entering Down state") {
                problems.push(format!("{name} d{n} flapped: {l}"));
            }
        }
        // Director 2 stops: no AdminDown from either daemon, so director 1
        // detects the silence 300 ms after the last packet.
        lab.signal(2, "TERM");
        let seen = wait_log(&lab, 1, a, 3.0, |l| {
            expiries(l, "to_peer").len() == 1 && expiries(l, "to_peer6").len() == 1
        });
        let l = lab.log(1, a);
        let e: Vec<u64> = ["to_peer", "to_peer6"]
            .iter()
            .flat_map(|s| expiries(&l, s))
            .collect();
        if !seen || !e.iter().all(|ms| (300..=320).contains(ms)) {
            problems.push(format!("{name} d1 after d2's stop: expiries {e:?}: {l}"));
        }
        if !l.contains(
            "(to_peer) Entering Down state (Local diagnostic - Control Detection Time Expired, \
             Remote diagnostic - No Diagnostic)",
        ) {
            problems.push(format!("{name} d1: no Down line: {l}"));
        }
        // Back: Up again; then its cable is cut.
        lab.reap();
        lab.start(2, b, &conf(2));
        let again = wait_log(&lab, 1, a, 8.0, |l| ups(l, "to_peer") == 2);
        if !again {
            problems.push(format!("{name} d1 not Up again: {}", lab.log(1, a)));
            continue;
        }
        lab.carrier(2, false);
        let seen = wait_log(&lab, 1, a, 3.0, |l| expiries(l, "to_peer").len() == 2);
        let e = expiries(&lab.log(1, a), "to_peer");
        if !seen || !(300..=320).contains(&e[e.len() - 1]) {
            problems.push(format!("{name} d1 after the cut: expiries {e:?}"));
        }
        lab.carrier(2, true);
        lab.stop_all();
        // Ours says why in its transition lines.
        for (n, imp) in [(1, a), (2, b)] {
            if imp == Impl::Ours && !lab.log(n, imp).contains(r#"transition {"bfd":"to_peer""#) {
                problems.push(format!("{name} d{n}: no transition line"));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// Director `n`'s VRRP instance (director 1 at 150 tracking its session to
/// director 2 with `track`, director 2 at 100) and its BFD session.
fn vrrp_conf(n: usize, track: &str) -> String {
    let extra = if n == 1 {
        format!("  track_bfd {{\n    to_peer {track}\n  }}\n")
    } else {
        String::new()
    };
    let peer = 3 - n;
    // The session first: keepalived ignores a track_bfd naming a session
    // further down the file.
    format!(
        "bfd_instance to_peer {{\n  neighbor_ip 192.0.2.{peer}\n  source_ip 192.0.2.{n}\n  \
         min_rx 100\n  min_tx 100\n  multiplier 3\n}}\n"
    ) + &common::lab::conf(if n == 1 { 150 } else { 100 }, &extra, "192.0.2.100/24", "")
}

/// Director 1's notify states in order, the repeats dropped, and when
/// each came (seconds on the lab's clock).
fn states(lab: &Lab) -> Vec<(f64, String)> {
    let mut v: Vec<(f64, String)> = Vec::new();
    for s in lab.seen() {
        if s.node == 1 && s.kind == "notify" && s.what.starts_with("VI_1 ") {
            let st = s.what.split_whitespace().nth(1).unwrap_or("").to_string();
            if v.last().is_none_or(|l| l.1 != st) {
                v.push((s.t, st));
            }
        }
    }
    v
}

/// `track_bfd` without a weight (keepalived's §3 rules): director 1 is in
/// FAULT until its session is first Up, then takes the VIP; when director 2
/// stops, director 1's session goes Down in detection time and it enters
/// FAULT at once (man5's warning about tracking one's own peer). The same
/// sequence with keepalived and with ours on director 1 (keepalived on
/// director 2), FAULT within 0.5 s of the stop.
#[test]
#[cfg_attr(
    not(all(feature = "root", feature = "reference")),
    ignore = "needs root (--features root,reference)"
)]
fn an_unweighted_track_bfd_faults_the_instance_as_keepalived_s() {
    let mut seen = Vec::new();
    for imp in [Impl::Keepalived, Impl::Ours] {
        let mut lab = Lab::up("kbfdv");
        lab.start(2, Impl::Keepalived, &vrrp_conf(2, ""));
        lab.start(1, imp, &vrrp_conf(1, ""));
        let master = lab.wait_for(12.0, |_| {
            states(&lab).last().is_some_and(|s| s.1 == "MASTER")
        });
        assert!(
            master,
            "{imp:?}: d1 never MASTER: {:?}\n{}",
            states(&lab),
            lab.log(1, imp)
        );
        // The VRRP dump lists the tracked session as keepalived's does.
        lab.signal(1, "USR1");
        std::thread::sleep(std::time::Duration::from_millis(500));
        let dump = std::fs::read_to_string(lab.dir.join("d1/keepalived.data")).unwrap_or_default();
        for l in [
            "   Tracked BFDs :\n     to_peer: weight 0\n",
            "------< VRRP Track BFDs >------\n VRRP Track BFD = to_peer\n   Weight = 0\n   Bfd is up\n",
            "   Tracking instances :\n     VI_1, weight 0\n",
        ] {
            assert!(dump.contains(l), "{imp:?}: no {l:?} in keepalived.data:\n{dump}");
        }
        let stop = lab.now();
        lab.signal(2, "TERM");
        let fault = lab.wait_for(3.0, |_| states(&lab).last().is_some_and(|s| s.1 == "FAULT"));
        let st = states(&lab);
        assert!(
            fault,
            "{imp:?}: d1 never FAULT after d2's stop: {st:?}\n{}",
            lab.log(1, imp)
        );
        let took = st.last().unwrap().0 - stop;
        assert!(
            took < 0.5,
            "{imp:?}: FAULT {took:.3} s after the stop: {st:?}"
        );
        let log = lab.log(1, imp);
        assert!(
            log.contains("VRRP_Instance(VI_1) Tracked BFD instance to_peer is DOWN"),
            "{imp:?}: {log}"
        );
        lab.stop_all();
        seen.push(st.into_iter().map(|s| s.1).collect::<Vec<_>>());
    }
    assert_eq!(seen[0], seen[1], "keepalived's sequence, then ours");
}

/// `track_bfd` with `weight 60 reverse` on director 1 (150): 90 while its
/// session is Up, so director 2 (100, MASTER first) keeps the VIP while
/// both run; when director 2 stops, director 1 is back at 150 and takes
/// over. The same with keepalived and ours on director 1.
#[test]
#[cfg_attr(
    not(all(feature = "root", feature = "reference")),
    ignore = "needs root (--features root,reference)"
)]
fn a_weighted_reverse_track_bfd_shifts_the_priority_as_keepalived_s() {
    let mut seen = Vec::new();
    for imp in [Impl::Keepalived, Impl::Ours] {
        let mut lab = Lab::up("kbfdw");
        lab.start(2, Impl::Keepalived, &vrrp_conf(2, ""));
        // Director 2 MASTER first: director 1 then joins a running pair
        // (started together, whose down timer ends first is a race).
        let d2 = lab.wait_for(8.0, |seen| {
            seen.iter()
                .any(|s| s.node == 2 && s.kind == "notify" && s.what.starts_with("VI_1 MASTER"))
        });
        assert!(d2, "d2 never MASTER: {}", lab.log(2, Impl::Keepalived));
        lab.start(1, imp, &vrrp_conf(1, "weight 60 reverse"));
        let changed = lab.wait_for(10.0, |_| {
            lab.log(1, imp)
                .contains("(VI_1) Changing effective priority from 150 to 90")
        });
        assert!(changed, "{imp:?}: {}", lab.log(1, imp));
        // Director 2 keeps the VIP while director 1 is at 90.
        std::thread::sleep(std::time::Duration::from_secs(5));
        let st = states(&lab);
        assert!(
            st.last().is_some_and(|s| s.1 == "BACKUP"),
            "{imp:?}: {st:?}\n{}",
            lab.log(1, imp)
        );
        lab.signal(2, "TERM");
        let master = lab.wait_for(6.0, |_| {
            states(&lab).last().is_some_and(|s| s.1 == "MASTER")
        });
        let log = lab.log(1, imp);
        assert!(master, "{imp:?}: {:?}\n{log}", states(&lab));
        assert!(
            log.contains("(VI_1) Changing effective priority from 90 to 150"),
            "{imp:?}: {log}"
        );
        lab.stop_all();
        seen.push((
            states(&lab).into_iter().map(|s| s.1).collect::<Vec<_>>(),
            lab.log(1, imp),
        ));
    }
    assert_eq!(
        seen[0].0, seen[1].0,
        "keepalived's sequence, then ours:\n{}\n{}",
        seen[0].1, seen[1].1
    );
}

/// BFD_CHECK on a real server (ours, dry run: no IPVS on this kernel)
/// follows a session to keepalived's BFD: Up puts the server in the
/// table, the neighbour's stop takes it out with keepalived's line, its
/// return puts it back. VRRP, BFD and the checker run in one process.
#[test]
#[cfg_attr(
    not(all(feature = "root", feature = "reference")),
    ignore = "needs root (--features root,reference)"
)]
fn a_bfd_check_follows_a_session_to_keepalived() {
    let mut lab = Lab::up("kbfdc");
    lab.start(2, Impl::Keepalived, &conf(2));
    let vs = "virtual_server 192.0.2.200 80 {\n  lb_algo rr\n  lb_kind DR\n  protocol TCP\n  \
              real_server 192.0.2.2 80 {\n    BFD_CHECK {\n      name to_peer\n      alpha\n    }\n  }\n}\n";
    // bfd_instance, track_bfd and BFD_CHECK in one file, one process.
    let track = "  track_bfd {\n    to_peer weight 10\n  }\n";
    let text = conf(1) + &common::lab::conf(150, track, "192.0.2.100/24", "") + vs;
    lab.start_with(1, Impl::Ours, &text, &["--dry-run"]);
    let line = |s: &str| {
        let s = s.to_string();
        move |l: &str| l.contains(&s)
    };
    let up = "BFD check of [to_peer] RS([192.0.2.2]:tcp:80) is UP";
    let down = "BFD check of [to_peer] RS([192.0.2.2]:tcp:80) is DOWN";
    assert!(
        wait_log(&lab, 1, Impl::Ours, 8.0, line(up)),
        "{}",
        lab.log(1, Impl::Ours)
    );
    let added = "-a -t 192.0.2.200:80 -r 192.0.2.2:80";
    assert!(
        wait_log(&lab, 1, Impl::Ours, 3.0, line(added)),
        "{}",
        lab.log(1, Impl::Ours)
    );
    let pid = lab.pid_of(1, "keepalived.pid").unwrap();
    let threads: Vec<String> = std::fs::read_dir(format!("/proc/{pid}/task"))
        .unwrap()
        .flatten()
        .filter_map(|t| std::fs::read_to_string(t.path().join("comm")).ok())
        .map(|c| c.trim().to_string())
        .collect();
    for t in ["checker", "vrrp", "bfd"] {
        assert!(threads.iter().any(|x| x == t), "{threads:?}");
    }
    // The sessions in --status and the metrics (published at most a
    // second late for the counters).
    std::thread::sleep(std::time::Duration::from_millis(1200));
    let st = lab.status(1);
    let s = st["bfd"]
        .as_array()
        .and_then(|l| l.iter().find(|s| s["name"] == "to_peer"))
        .cloned()
        .unwrap_or_default();
    assert_eq!(s["state"], "Up", "{st}");
    assert_eq!(s["remote_state"], "Up", "{st}");
    assert_eq!(s["detection_time_us"], 300_000, "{st}");
    assert!(s["packets_in"].as_u64().unwrap_or(0) > 5, "{st}");
    let m = lab.metrics(1);
    assert!(
        m.contains("keepalived_bfd_session_up{session=\"to_peer\"} 1"),
        "{m}"
    );
    let log = lab.log(1, Impl::Ours);
    assert!(
        log.contains("(VI_1) Changing effective priority from 150 to 160"),
        "{log}"
    );
    lab.signal(2, "TERM");
    assert!(
        wait_log(&lab, 1, Impl::Ours, 3.0, line(down)),
        "{}",
        lab.log(1, Impl::Ours)
    );
    let removed = "-d -t 192.0.2.200:80 -r 192.0.2.2:80";
    assert!(
        wait_log(&lab, 1, Impl::Ours, 3.0, line(removed)),
        "{}",
        lab.log(1, Impl::Ours)
    );
    lab.reap();
    lab.start(2, Impl::Keepalived, &conf(2));
    assert!(
        wait_log(&lab, 1, Impl::Ours, 8.0, |l| l.matches(up).count() == 2),
        "{}",
        lab.log(1, Impl::Ours)
    );
    lab.stop_all();
}

/// Seconds from SIGKILL of director 1 (MASTER) to director 2's MASTER.
fn failover(imp: Impl, extra: &str) -> f64 {
    let mut lab = Lab::up("kbfdt");
    lab.start(1, imp, &common::lab::bfd_pair_conf(1, "", false));
    let d1 = lab.wait_for(8.0, |seen| {
        seen.iter()
            .any(|s| s.node == 1 && s.kind == "notify" && s.what.starts_with("VI_1 MASTER"))
    });
    assert!(d1, "{imp:?}: d1 never MASTER: {}", lab.log(1, imp));
    lab.start(2, imp, &common::lab::bfd_pair_conf(2, extra, false));
    // Director 2 follows director 1 with the session Up.
    let up = wait_log(&lab, 2, imp, 8.0, |l| ups(l, "to_peer") == 1);
    assert!(up, "{imp:?}: {}", lab.log(2, imp));
    std::thread::sleep(std::time::Duration::from_secs(2));
    lab.after_advert(1);
    let t0 = lab.now();
    lab.signal(1, "KILL");
    let took = lab.wait_for(6.0, |seen| {
        seen.iter().any(|s| {
            s.node == 2 && s.kind == "notify" && s.what.starts_with("VI_1 MASTER") && s.t > t0
        })
    });
    let log = lab.log(2, imp);
    assert!(took, "{imp:?}: d2 never MASTER: {log}");
    let t = lab
        .seen()
        .iter()
        .find(|s| {
            s.node == 2 && s.kind == "notify" && s.what.starts_with("VI_1 MASTER") && s.t > t0
        })
        .map(|s| s.t - t0)
        .unwrap();
    lab.stop_all();
    t
}

/// `bfd_takeover` (extension): director 2 takes over when its session to
/// the master goes Down, in detection time (300 ms here) instead of the
/// master-down interval keepalived waits for (3.6 s after the last advert,
/// with or without `track_bfd`: `../shared/reference/bfd.md` §8.6).
#[test]
#[cfg_attr(
    not(all(feature = "root", feature = "reference")),
    ignore = "needs root (--features root,reference)"
)]
fn bfd_takeover_moves_the_vip_in_detection_time() {
    let plain = failover(Impl::Keepalived, "");
    let ours = failover(Impl::Ours, "  bfd_takeover to_peer\n");
    eprintln!("failover after SIGKILL of the master: keepalived {plain:.3} s, ours with bfd_takeover {ours:.3} s");
    assert!(plain > 2.5, "keepalived {plain:.3} s");
    assert!(ours < 0.8, "ours {ours:.3} s (keepalived {plain:.3} s)");
}

/// Sessions to FRR's bfdd, a peer nobody here wrote, with keepalived and
/// with ours on director 1 (the reference's §8.4): both come up (IPv6 with
/// `hoplimit 255`, which FRR requires); FRR's `transmit-interval 300`
/// reaches us through its poll (detection 900 ms); FRR's `shutdown` sends
/// AdminDown and we go Down with "Neighbor Signaled Session Down", Up again
/// after `no shutdown`; when we stop, FRR sees the session go down.
#[test]
#[cfg_attr(
    not(all(feature = "root", feature = "reference")),
    ignore = "needs root (--features root,reference)"
)]
fn sessions_with_frr_bfdd_follow_its_changes_as_keepalived_s_do() {
    let frr_conf = "hostname lab-frr\nlog stdout debugging\n!\nbfd\n \
                    peer 192.0.2.1 local-address 192.0.2.10\n  receive-interval 100\n  \
                    transmit-interval 100\n  detect-multiplier 3\n !\n \
                    peer 2001:db8::1 local-address 2001:db8::10\n  receive-interval 100\n  \
                    transmit-interval 100\n  detect-multiplier 3\n !\n!\n";
    let ours_conf = "bfd_instance to_frr {\n  neighbor_ip 192.0.2.10\n  source_ip 192.0.2.1\n  \
                     min_rx 100\n  min_tx 100\n  multiplier 3\n}\n\
                     bfd_instance to_frr6 {\n  neighbor_ip 2001:db8::10\n  source_ip 2001:db8::1\n  \
                     min_rx 100\n  min_tx 100\n  multiplier 3\n  hoplimit 255\n}\n";
    let v4 = "peer 192.0.2.1 local-address 192.0.2.10";
    let mut problems = Vec::new();
    for imp in [Impl::Keepalived, Impl::Ours] {
        let mut lab = Lab::up("kbfdf");
        let frr = Frr::start(&lab, frr_conf);
        lab.start(1, imp, ours_conf);
        let up = wait_log(&lab, 1, imp, 10.0, |l| {
            ups(l, "to_frr") == 1 && ups(l, "to_frr6") == 1
        });
        // FRR goes Up at our next packet (an idle interval later).
        let frr_up = lab.wait_for(3.0, |_| {
            frr.vtysh(&["show bfd peers"]).matches("Status: up").count() == 2
        });
        let peers = frr.vtysh(&["show bfd peers"]);
        if !up || !frr_up {
            problems.push(format!(
                "{imp:?}: not up: {peers}\n{}\nbfdd: {}",
                lab.log(1, imp),
                std::fs::read_to_string(frr.dir.join("bfdd.log")).unwrap_or_default()
            ));
            continue;
        }
        frr.peer(v4, "transmit-interval 300");
        if !wait_log(&lab, 1, imp, 3.0, |l| {
            l.contains("Detection time is 900000 us (was 300000 us)")
        }) {
            problems.push(format!(
                "{imp:?}: FRR's 300 ms never taken: {}",
                lab.log(1, imp)
            ));
        }
        frr.peer(v4, "shutdown");
        let down =
            "(to_frr) Entering Down state (Local diagnostic - Neighbor Signaled Session Down";
        if !wait_log(&lab, 1, imp, 3.0, |l| l.contains(down)) {
            problems.push(format!("{imp:?}: AdminDown not seen: {}", lab.log(1, imp)));
        }
        frr.peer(v4, "no shutdown");
        if !wait_log(&lab, 1, imp, 5.0, |l| ups(l, "to_frr") == 2) {
            problems.push(format!("{imp:?}: not up again: {}", lab.log(1, imp)));
        }
        lab.signal(1, "TERM");
        let seen = lab.wait_for(3.0, |_| {
            frr.vtysh(&["show bfd peers"])
                .matches("Status: down")
                .count()
                == 2
        });
        if !seen {
            problems.push(format!(
                "{imp:?}: FRR still up after our stop: {}",
                frr.vtysh(&["show bfd peers"])
            ));
        }
        drop(frr);
        lab.stop_all();
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// Hostile input: from the lab's third host, for 4 s, datagrams to
/// director 1's BFD port. Sent as from the neighbour (its address, about
/// 5,000 a second): garbage, cut short, well-formed ones for
/// discriminators it does not have, and ones with its session's own
/// discriminator saying Down one hop away (TTL 254, which GTSM refuses).
/// Sent from the host's own address as fast as a thread can: well-formed
/// ones for unknown discriminators, which the listener's filter drops in
/// the kernel. The session to keepalived stays Up on both sides, every
/// kind from the neighbour's address is counted where it was dropped, the
/// stranger's are not read at all, and memory does not grow.
#[test]
#[cfg_attr(
    not(all(feature = "root", feature = "reference")),
    ignore = "needs root (--features root,reference)"
)]
fn a_flood_of_hostile_packets_moves_no_session() {
    use keepalived::bfd::packet::{Control, Diag, State};
    let mut lab = Lab::up("kbfdh");
    lab.start(2, Impl::Keepalived, &conf(2));
    // A VRRP instance beside the sessions: its status socket shows them.
    let text = conf(1) + &common::lab::conf(150, "", "192.0.2.100/24", "");
    lab.start(1, Impl::Ours, &text);
    assert!(
        wait_log(&lab, 1, Impl::Ours, 8.0, |l| ups(l, "to_peer") == 1),
        "{}",
        lab.log(1, Impl::Ours)
    );
    std::thread::sleep(std::time::Duration::from_millis(1200));
    let session = |st: &serde_json::Value| {
        st["bfd"]
            .as_array()
            .and_then(|l| l.iter().find(|s| s["name"] == "to_peer"))
            .cloned()
            .unwrap_or_default()
    };
    let before = lab.status(1);
    let disc = session(&before)["local_discriminator"].as_u64().unwrap() as u32;
    let pid = lab.pid_of(1, "keepalived.pid").unwrap();
    let rss = || {
        std::fs::read_to_string(format!("/proc/{pid}/status"))
            .unwrap_or_default()
            .lines()
            .find(|l| l.starts_with("RssAnon:"))
            .and_then(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
            .unwrap_or(0)
    };
    let rss0 = rss();
    let down = Control {
        diag: Diag::NEIGHBOR_SIGNALED_DOWN,
        state: State::Down,
        poll: false,
        fin: false,
        cpi: false,
        demand: false,
        detect_mult: 3,
        my_disc: 7,
        your_disc: disc,
        desired_min_tx: 1_000_000,
        required_min_rx: 100_000,
        required_min_echo_rx: 0,
    };
    // BFD_FLOOD_GAP_US: the pause between the neighbour-addressed
    // datagrams (150 µs: about 5,000 a second).
    let gap: u64 = std::env::var("BFD_FLOOD_GAP_US")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(150);
    let ns_path = format!("/run/netns/{}", lab.ns(3));
    let in_ns = move || {
        let ns = std::fs::File::open(&ns_path).unwrap();
        nix::sched::setns(ns, nix::sched::CloneFlags::CLONE_NEWNET).expect("setns");
    };
    let spoofing = {
        let in_ns = in_ns.clone();
        std::thread::spawn(move || {
            in_ns();
            // The neighbour's address, not the third host's.
            let s =
                socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::DGRAM, None).unwrap();
            s.set_freebind_v4(true).unwrap();
            // Sending from an address not its own (root in its namespace).
            s.set_ip_transparent_v4(true).unwrap();
            let from: std::net::SocketAddr = "192.0.2.2:49999".parse().unwrap();
            s.bind(&from.into()).unwrap();
            let s: std::net::UdpSocket = s.into();
            s.set_nonblocking(true).unwrap();
            let to = "192.0.2.1:3784";
            let t0 = std::time::Instant::now();
            let mut n = 0u64;
            while t0.elapsed() < std::time::Duration::from_secs(4) {
                let r = match n % 4 {
                    0 => s.send_to(&[0xffu8; 24], to),
                    1 => s.send_to(&down.encode()[..20], to),
                    2 => {
                        let mut c = down;
                        c.your_disc = (n as u32).wrapping_mul(2_654_435_761) | 1;
                        c.state = State::Up;
                        s.send_to(&c.encode(), to)
                    }
                    _ => {
                        s.set_ttl(254).unwrap();
                        let r = s.send_to(&down.encode(), to);
                        s.set_ttl(255).unwrap();
                        r
                    }
                };
                if r.is_ok() {
                    n += 1;
                }
                std::thread::sleep(std::time::Duration::from_micros(gap));
            }
            n
        })
    };
    let stranger = std::thread::spawn(move || {
        in_ns();
        let s = std::net::UdpSocket::bind("192.0.2.10:49152").unwrap();
        s.set_nonblocking(true).unwrap();
        let t0 = std::time::Instant::now();
        let mut n = 0u64;
        while t0.elapsed() < std::time::Duration::from_secs(4) {
            let mut c = down;
            c.your_disc = (n as u32).wrapping_mul(2_654_435_761) | 1;
            c.state = State::Up;
            if s.send_to(&c.encode(), "192.0.2.1:3784").is_ok() {
                n += 1;
            }
        }
        n
    });
    let cpu0 = common::cpu_of(&[pid]).0;
    let sent = spoofing.join().unwrap();
    let strange = stranger.join().unwrap();
    let cpu = (common::cpu_of(&[pid]).0 - cpu0) as f64 / 1e6 / 4.0;
    std::thread::sleep(std::time::Duration::from_millis(1500));
    let after = lab.status(1);
    let s = session(&after);
    let d = &after["bfd_discards"];
    let log1 = lab.log(1, Impl::Ours);
    let log2 = lab.log(2, Impl::Keepalived);
    assert_eq!(s["state"], "Up", "{after}");
    assert!(!log1.contains("(to_peer) Entering Down"), "{log1}");
    assert!(!log2.contains("Expired after"), "{log2}");
    assert!(
        sent > 1000 && strange > 10_000,
        "{sent} sent as the neighbour, {strange} by the stranger"
    );
    let q = sent / 4;
    for (k, at_least) in [("bogus", q), ("unknown", q), ("ttl", q)] {
        // The kernel may drop some of a flood (its buffer full): most must
        // have been read and counted.
        assert!(
            d[k].as_u64().unwrap_or(0) * 2 >= at_least,
            "{k}: {d} of {sent} sent"
        );
    }
    // None of the stranger's were read: the unknown ones are the
    // neighbour-addressed quarter.
    assert!(
        d["unknown"].as_u64().unwrap_or(0) <= q + 1,
        "{d}: {strange} sent by the stranger were read"
    );
    let grew = rss().saturating_sub(rss0);
    assert!(grew < 1024, "RssAnon grew {grew} kB under {sent} packets");
    eprintln!(
        "hostile flood: {sent} datagrams as the neighbour and {strange} from a stranger in 4 s, \
         discards {d}, daemon CPU {cpu:.0} ms/s, RssAnon +{grew} kB"
    );
    lab.stop_all();
}

/// The reference's V2 (`../shared/reference/bfd.md` §8.6): the master
/// tracks its session to an upstream router (FRR's bfdd on the third host)
/// without a weight; when the router's cable is cut the master's session
/// goes Down, it enters FAULT and sends priority 0, and the backup takes
/// over after its skew: 0.9 s in the reference. Every pairing of
/// keepalived and ours on the two directors, against the same router.
#[test]
#[cfg_attr(
    not(all(feature = "root", feature = "reference")),
    ignore = "needs root (--features root,reference)"
)]
fn a_master_tracking_its_upstream_router_hands_over_in_bfd_time() {
    let frr_conf = "hostname lab-frr\n!\nbfd\n peer 192.0.2.1 local-address 192.0.2.10\n  \
                    receive-interval 100\n  transmit-interval 100\n  detect-multiplier 3\n !\n!\n";
    let d1 = "bfd_instance to_r {\n  neighbor_ip 192.0.2.10\n  source_ip 192.0.2.1\n  \
              min_rx 100\n  min_tx 100\n  multiplier 3\n}\n"
        .to_string()
        + &common::lab::conf(150, "  track_bfd {\n    to_r\n  }\n", "192.0.2.100/24", "");
    let d2 = common::lab::conf(100, "", "192.0.2.100/24", "");
    let mut problems = Vec::new();
    for (a, b) in [
        (Impl::Keepalived, Impl::Keepalived),
        (Impl::Ours, Impl::Keepalived),
        (Impl::Keepalived, Impl::Ours),
        (Impl::Ours, Impl::Ours),
    ] {
        let name = format!("[{}{}]", a.letter(), b.letter());
        let mut lab = Lab::up("kbfdu");
        let frr = Frr::start(&lab, frr_conf);
        lab.start(1, a, &d1);
        lab.start(2, b, &d2);
        let master = |n: usize| {
            move |seen: &[common::lab::Seen]| {
                seen.iter()
                    .rev()
                    .find(|s| s.node == n && s.kind == "notify")
                    .is_some_and(|s| s.what.starts_with("VI_1 MASTER"))
            }
        };
        if !lab.wait_for(12.0, master(1)) {
            problems.push(format!("{name} d1 never MASTER: {}", lab.log(1, a)));
            continue;
        }
        std::thread::sleep(std::time::Duration::from_secs(2));
        let t0 = lab.now();
        lab.carrier(3, false);
        let moved = lab.wait_for(4.0, master(2));
        let seen = lab.seen();
        let at = |n: usize, st: &str| {
            seen.iter()
                .find(|s| s.node == n && s.kind == "notify" && s.t > t0 && s.what.starts_with(st))
                .map(|s| s.t - t0)
        };
        let (fault, took) = (at(1, "VI_1 FAULT"), at(2, "VI_1 MASTER"));
        eprintln!(
            "{name}: d1 FAULT {fault:?} s, d2 MASTER {took:?} s after the router's cable was cut"
        );
        match (moved, fault, took) {
            (true, Some(f), Some(t)) if f < 0.6 && t < 1.4 => {}
            _ => problems.push(format!(
                "{name}: FAULT {fault:?}, MASTER {took:?}\n{}\n{}",
                lab.log(1, a),
                lab.log(2, b)
            )),
        }
        lab.carrier(3, true);
        drop(frr);
        lab.stop_all();
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// A reload that changes our timers reaches the neighbour through a poll
/// sequence, as keepalived's does (`../shared/reference/bfd.md` §8.2): with
/// director 1's `min_tx` raised to 200 ms and reloaded, keepalived on
/// director 2 computes 3 x 200 = 600 ms, and no session flaps. The same
/// with keepalived and with ours on director 1.
#[test]
#[cfg_attr(
    not(all(feature = "root", feature = "reference")),
    ignore = "needs root (--features root,reference)"
)]
fn a_reload_with_new_timers_polls_the_neighbour_as_keepalived_s() {
    let mut problems = Vec::new();
    for imp in [Impl::Keepalived, Impl::Ours] {
        let mut lab = Lab::up("kbfdp");
        lab.start(1, imp, &conf(1));
        lab.start(2, Impl::Keepalived, &conf(2));
        let up = wait_log(&lab, 2, Impl::Keepalived, 8.0, |l| ups(l, "to_peer") == 1);
        if !up {
            problems.push(format!("{imp:?}: not up: {}", lab.log(2, Impl::Keepalived)));
            continue;
        }
        std::thread::sleep(std::time::Duration::from_secs(1));
        lab.rewrite(1, &conf(1).replacen("min_tx 100", "min_tx 200", 1));
        lab.signal(1, "HUP");
        let polled = wait_log(&lab, 2, Impl::Keepalived, 5.0, |l| {
            l.contains("Detection time is 600000 us (was 300000 us)")
        });
        std::thread::sleep(std::time::Duration::from_secs(1));
        let (l1, l2) = (lab.log(1, imp), lab.log(2, Impl::Keepalived));
        if !polled || l1.contains("Entering Down") || l2.contains("Entering Down") {
            problems.push(format!("{imp:?}: polled {polled}\n{l1}\n{l2}"));
        }
        lab.stop_all();
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
