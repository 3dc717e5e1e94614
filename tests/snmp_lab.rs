//! SNMP through net-snmp's `snmpd` as AgentX master (`tests/common/snmpd.rs`)
//! on the namespace lab: the same configuration under keepalived 2.2.7 and
//! under ours, walked value by value; and the master restarted under ours.
//!
//! Needs root, keepalived 2.2.7 and net-snmp: `--features root,reference`
//! (`scripts/test.sh` turns them on and installs them); there it never skips.

mod common;

use common::lab::{Impl, Lab};
use common::snmpd::Snmpd;

/// `../shared/snmp-fixtures/conf/keepalived-a.conf`'s instances (VI_1
/// VRRPv2 IPv4 with PASS auth, two VIPs, an eVIP; VI_2 VRRPv3 IPv6, which
/// VRRP-MIB leaves out) with VRRP-MIB and VRRPv3-MIB enabled.
fn conf(socket: &std::path::Path) -> String {
    format!(
        "global_defs {{\n  router_id lab\n  enable_traps\n  enable_snmp_vrrp\n  enable_snmp_rfcv2\n  enable_snmp_rfcv3\n  snmp_socket unix:{}\n}}\n\
         vrrp_script chk_true {{\n  script \"/bin/true\"\n  interval 2\n  weight 0\n}}\n\
         vrrp_instance VI_1 {{\n  state BACKUP\n  interface eth0\n  virtual_router_id 61\n  priority 150\n  \
         advert_int 1\n  authentication {{\n    auth_type PASS\n    auth_pass secret1\n  }}\n  \
         virtual_ipaddress {{\n    192.0.2.161/24\n    192.0.2.162/24 label eth0:vi1\n  }}\n  \
         virtual_ipaddress_excluded {{\n    198.51.100.161/24\n  }}\n  \
         virtual_routes {{\n    192.0.2.128/25 dev eth0 table 100\n  }}\n  track_script {{\n    chk_true\n  }}\n  \
         notify @NOTIFY@\n}}\n\
         vrrp_sync_group G1 {{\n  group {{\n    VI_1\n    VI_2\n  }}\n  track_interface {{\n    eth0\n  }}\n}}\n\
         vrrp_instance VI_2 {{\n  state BACKUP\n  interface eth0\n  virtual_router_id 62\n  version 3\n  \
         priority 150\n  advert_int 0.5\n  virtual_ipaddress {{\n    2001:db8::162/64\n  }}\n  notify @NOTIFY@\n}}\n",
        socket.display()
    )
}

/// A walked line with what must differ between two runs masked: times
/// (Timeticks, e.g. vrrpOperVirtualRouterUpTime, measured from the
/// subagent's start).
fn normalised(line: &str) -> String {
    if line.starts_with(".1.3.6.1.4.1.9586.100.5.1.1.0 = ") {
        // KEEPALIVED-MIB::version: which program it is (docs/compat.md).
        return ".1.3.6.1.4.1.9586.100.5.1.1.0 = (version)".into();
    }
    match line.split_once(" = Timeticks: ") {
        Some((oid, _)) => format!("{oid} = Timeticks: (time)"),
        None => line.to_string(),
    }
}

/// Asserts two walks equal, line by line, showing the lines that differ.
fn same_walk(ours: &[String], theirs: &[String]) {
    let differ: Vec<String> = ours
        .iter()
        .zip(theirs.iter())
        .filter(|(a, b)| a != b)
        .map(|(a, b)| format!("ours {a}\n  keepalived {b}"))
        .collect();
    assert!(
        differ.is_empty() && ours.len() == theirs.len(),
        "{} lines vs keepalived's {}:\n{}",
        ours.len(),
        theirs.len(),
        differ.join("\n")
    );
}

/// Received notifications of the daemons (not snmpd's own coldStart)
/// without what differs between runs: snmpd's sysUpTime and the receipt
/// line's time and port.
fn untimed(traps: &[String]) -> Vec<String> {
    traps
        .iter()
        .filter(|l| {
            [
                ".1.3.6.1.4.1.9586.",
                ".1.3.6.1.2.1.68.",
                ".1.3.6.1.2.1.207.",
            ]
            .iter()
            .any(|m| l.contains(&format!("4.1.0 = OID: {m}")))
        })
        .map(|l| {
            l.split('\t')
                .filter(|v| !v.starts_with(".1.3.6.1.2.1.1.3.0 = "))
                .map(|v| v.rsplit("]:").next().unwrap_or(v).to_string())
                .collect::<Vec<_>>()
                .join("\t")
        })
        .collect()
}

/// Starts `imp` on director 1, waits for VI_1 MASTER and for its
/// VRRP-MIB rows to be served; the walk.
fn walk_as_master(lab: &mut Lab, snmpd: &Snmpd, imp: Impl) -> Vec<String> {
    let t0 = lab.now();
    lab.start(1, imp, &conf(&snmpd.socket));
    let master = lab.wait_for(10.0, |seen| {
        seen.iter().any(|s| {
            s.node == 1 && s.kind == "notify" && s.what.starts_with("VI_1 MASTER") && s.t > t0
        })
    });
    assert!(master, "{imp:?}: VI_1 never MASTER: {}", lab.log(1, imp));
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let mut w = snmpd.walk(".1.3.6.1.2.1.68");
        w.extend(snmpd.walk(".1.3.6.1.2.1.207"));
        w.extend(snmpd.walk(".1.3.6.1.4.1.9586.100.5"));
        let masters = w
            .iter()
            .filter(|l| {
                (l.contains(".1.3.6.1.2.1.68.1.3.1.3.")
                    || l.contains(".1.3.6.1.2.1.207.1.1.1.1.6."))
                    && l.ends_with("INTEGER: 3")
            })
            .count();
        if masters == 3 {
            return w;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{imp:?}: not both MASTER in the MIBs: {w:?}\n{}",
            lab.log(1, imp)
        );
        std::thread::sleep(std::time::Duration::from_millis(300));
    }
}

/// KEEPALIVED-MIB's VRRP part, VRRP-MIB (RFC 2787) and VRRPv3-MIB (RFC
/// 6527) walked through snmpd while both instances are MASTER alone on
/// their LAN, and the notifications snmptrapd received from the start to
/// the stop: keepalived's and ours, line by line.
#[test]
#[cfg_attr(
    not(all(feature = "root", feature = "reference")),
    ignore = "needs root (--features root,reference)"
)]
fn vrrp_mibs_walk_as_keepalived_s() {
    let mut lab = Lab::up("ksnmp");
    let snmpd = Snmpd::start(&lab);
    let theirs: Vec<String> = walk_as_master(&mut lab, &snmpd, Impl::Keepalived)
        .iter()
        .map(|l| normalised(l))
        .collect();
    lab.stop_all();
    std::thread::sleep(std::time::Duration::from_secs(1));
    let their_traps = snmpd.traps();
    let ours: Vec<String> = walk_as_master(&mut lab, &snmpd, Impl::Ours)
        .iter()
        .map(|l| normalised(l))
        .collect();
    let mut bulk = snmpd.bulkwalk(".1.3.6.1.2.1.68");
    bulk.extend(snmpd.bulkwalk(".1.3.6.1.2.1.207"));
    bulk.extend(snmpd.bulkwalk(".1.3.6.1.4.1.9586.100.5"));
    let bulk: Vec<String> = bulk.iter().map(|l| normalised(l)).collect();
    lab.stop_all();
    std::thread::sleep(std::time::Duration::from_secs(1));
    let our_traps: Vec<String> = snmpd.traps()[their_traps.len()..].to_vec();
    let (their_traps, our_traps) = (untimed(&their_traps), untimed(&our_traps));
    assert!(their_traps.len() >= 6, "{their_traps:#?}");
    // The start's three (two instances and their group, BACKUP) come in an
    // order keepalived itself varies (the group first here, last in the
    // reference's run): compared as a set; the rest in order.
    let (mut a, mut b) = (our_traps[..3].to_vec(), their_traps[..3].to_vec());
    a.sort();
    b.sort();
    assert_eq!(
        a, b,
        "start notifications: ours (left), keepalived's (right)"
    );
    assert_eq!(
        our_traps[3..],
        their_traps[3..],
        "notifications: ours (left), keepalived's (right)"
    );
    if std::env::var("SNMP_LAB_KEEP").is_ok() {
        std::fs::write("/tmp/snmp-ours.txt", ours.join("\n")).unwrap();
        std::fs::write("/tmp/snmp-theirs.txt", theirs.join("\n")).unwrap();
        std::fs::write("/tmp/snmp-theirs.log", lab.log(1, Impl::Keepalived)).unwrap();
    }
    same_walk(&ours, &theirs);
    assert_eq!(bulk, ours, "snmpbulkwalk (left) vs snmpwalk (right)");
    assert!(ours.len() > 20, "{ours:?}");
    eprintln!(
        "KEEPALIVED-MIB, VRRP-MIB and VRRPv3-MIB: {} lines, equal to keepalived's; \
         {} notifications, equal to keepalived's",
        ours.len(),
        our_traps.len()
    );
}

/// The master goes away and comes back (snmpd restarted 2 s later): the
/// subagent says so, connects again in keepalived's 15 s, and the walk
/// works again; a subagent started before its master connects likewise.
#[test]
#[cfg_attr(
    not(all(feature = "root", feature = "reference")),
    ignore = "needs root (--features root,reference)"
)]
fn the_subagent_comes_back_when_snmpd_does() {
    let mut lab = Lab::up("ksnmr");
    let mut snmpd = Snmpd::start(&lab);
    let before = walk_as_master(&mut lab, &snmpd, Impl::Ours);
    snmpd.stop();
    std::thread::sleep(std::time::Duration::from_secs(2));
    snmpd.restart();
    let t0 = std::time::Instant::now();
    let again = loop {
        let w = snmpd.walk(".1.3.6.1.2.1.68");
        if !w.is_empty() && w.iter().any(|l| l.contains(".68.1.3.1.3.")) {
            break t0.elapsed().as_secs_f64();
        }
        assert!(
            t0.elapsed().as_secs() < 25,
            "no walk after the restart: {}",
            lab.log(1, Impl::Ours)
        );
        std::thread::sleep(std::time::Duration::from_millis(250));
    };
    let log = lab.log(1, Impl::Ours);
    assert!(
        log.contains("AgentX master disconnected us, reconnecting in 15"),
        "{log}"
    );
    // 15 s after the loss, which came 2 s before the restart.
    assert!(
        (11.0..=16.0).contains(&again),
        "walk back {again:.1} s after the restart"
    );
    let rows68 = before
        .iter()
        .filter(|l| l.starts_with(".1.3.6.1.2.1.68."))
        .count();
    assert_eq!(snmpd.walk(".1.3.6.1.2.1.68").len(), rows68);
    // Started before its master.
    lab.stop_all();
    snmpd.stop();
    let t1 = lab.now();
    lab.start(1, Impl::Ours, &conf(&snmpd.socket));
    std::thread::sleep(std::time::Duration::from_secs(3));
    snmpd.restart();
    let t2 = std::time::Instant::now();
    loop {
        let w = snmpd.walk(".1.3.6.1.2.1.68");
        if w.iter().any(|l| l.contains(".68.1.3.1.3.")) {
            break;
        }
        assert!(
            t2.elapsed().as_secs() < 20,
            "never connected: {}",
            lab.log(1, Impl::Ours)
        );
        std::thread::sleep(std::time::Duration::from_millis(250));
    }
    let first = lab.now() - t1;
    lab.stop_all();
    eprintln!("snmpd restarted: walk back after {again:.1} s; started first: connected {first:.1} s after its start");
    assert!(lab
        .log(1, Impl::Ours)
        .contains("Failed to connect to the agentx master agent"));
}

/// A master nobody should trust, played by this test on the subagent's
/// socket: it opens the session, then floods GetBulks of 1,000 repetitions
/// as fast as the subagent answers for 5 s, then sends bytes that are no
/// PDU. VRRP's adverts keep their spacing meanwhile (the subagent has a
/// thread of its own), every GetBulk is answered, and the bad bytes end
/// the session, which the subagent opens again 15 s later.
#[test]
#[cfg_attr(
    not(all(feature = "root", feature = "reference")),
    ignore = "needs root (--features root,reference)"
)]
fn a_hostile_master_delays_no_advert() {
    use keepalived::snmp::agentx::{
        decode, encode, payload_len, Ids, Pdu, SearchRange, HEADER_LEN,
    };
    use std::io::{Read, Write};
    let mut lab = Lab::up("ksnmh");
    let sock = lab.dir.join("fake-master");
    let listener = std::os::unix::net::UnixListener::bind(&sock).unwrap();
    let read_pdu = |s: &mut std::os::unix::net::UnixStream| -> keepalived::snmp::agentx::Message {
        let mut head = [0u8; HEADER_LEN];
        s.read_exact(&mut head).unwrap();
        let n = payload_len(&head).unwrap() as usize;
        let mut b = head.to_vec();
        b.resize(HEADER_LEN + n, 0);
        s.read_exact(&mut b[HEADER_LEN..]).unwrap();
        decode(&b).unwrap()
    };
    let respond = |s: &mut std::os::unix::net::UnixStream, ids: Ids| {
        let r = Pdu::Response {
            uptime: 0,
            error: 0,
            index: 0,
            vbs: Vec::new(),
        };
        s.write_all(&encode(&r, Ids { session: 7, ..ids }, false, None))
            .unwrap();
    };
    lab.start(1, Impl::Ours, &conf(&sock));
    let (mut s, _) = listener.accept().unwrap();
    s.set_read_timeout(Some(std::time::Duration::from_secs(5)))
        .unwrap();
    // Open, then a Register and an AddAgentCaps per MIB (four MIBs).
    let open = read_pdu(&mut s);
    assert!(matches!(open.pdu, Pdu::Open { .. }), "{open:?}");
    respond(&mut s, open.ids);
    for _ in 0..8 {
        let m = read_pdu(&mut s);
        assert!(
            matches!(m.pdu, Pdu::Register { .. } | Pdu::AddAgentCaps { .. }),
            "{m:?}"
        );
        respond(&mut s, m.ids);
    }
    let master = lab.wait_for(10.0, |seen| {
        seen.iter()
            .any(|x| x.node == 1 && x.kind == "notify" && x.what.starts_with("VI_1 MASTER"))
    });
    assert!(master, "{}", lab.log(1, Impl::Ours));
    std::thread::sleep(std::time::Duration::from_secs(2));
    let t0 = lab.now();
    let start = std::time::Instant::now();
    let (mut asked, mut answered, mut varbinds) = (0u32, 0u32, 0usize);
    while start.elapsed() < std::time::Duration::from_secs(5) {
        asked += 1;
        let ids = Ids {
            session: 7,
            transaction: asked,
            packet: asked,
        };
        let bulk = Pdu::GetBulk {
            non_repeaters: 0,
            max_repetitions: 1000,
            ranges: vec![SearchRange {
                start: vec![1, 3, 6, 1],
                include: false,
                end: Vec::new(),
            }],
        };
        s.write_all(&encode(&bulk, ids, false, None)).unwrap();
        // Its answer (notifications may come between).
        loop {
            let m = read_pdu(&mut s);
            if let Pdu::Response { vbs, .. } = m.pdu {
                if m.ids.packet == asked {
                    answered += 1;
                    varbinds += vbs.len();
                    break;
                }
            }
        }
    }
    let t1 = lab.now();
    // Bytes that are no PDU: version 9.
    let _ = s.write_all(&[9u8; 40]);
    let gaps: Vec<f64> = {
        let seen = lab.seen();
        let times: Vec<f64> = seen
            .iter()
            .filter(|x| {
                x.node == 1
                    && x.kind == "wire"
                    && x.what.starts_with("advert")
                    && x.t >= t0
                    && x.t <= t1
            })
            .map(|x| x.t)
            .collect();
        times.windows(2).map(|w| w[1] - w[0]).collect()
    };
    assert_eq!(answered, asked, "every GetBulk answered");
    assert!(
        varbinds > 100 * asked as usize / 2,
        "{varbinds} varbinds in {asked} answers"
    );
    let worst = gaps.iter().cloned().fold(0.0, f64::max);
    assert!(gaps.len() >= 3, "adverts during the flood: {gaps:?}");
    // advert_int 1 s: VI_1's adverts 1 s apart (VI_2's are IPv6 at 0.5 s).
    assert!(
        worst < 1.2,
        "an advert came {worst:.3} s after the last one: {gaps:?}"
    );
    // The bad bytes end the session; the subagent comes back.
    let (mut again, _) = {
        listener.set_nonblocking(false).unwrap();
        let t = std::time::Instant::now();
        let c = listener.accept().unwrap();
        let waited = t.elapsed().as_secs_f64();
        assert!((12.0..=17.0).contains(&waited), "back after {waited:.1} s");
        c
    };
    again
        .set_read_timeout(Some(std::time::Duration::from_secs(5)))
        .unwrap();
    assert!(matches!(read_pdu(&mut again).pdu, Pdu::Open { .. }));
    let log = lab.log(1, Impl::Ours);
    lab.stop_all();
    // BACKUP at start, MASTER, nothing more.
    assert_eq!(log.matches("(VI_1) Entering").count(), 2, "{log}");
    eprintln!(
        "hostile master: {asked} GetBulks of 1000 in 5 s answered ({varbinds} varbinds), \
         VI_1's adverts at most {worst:.3} s apart, session back after the bad bytes"
    );
}

/// An instance tracking a file and a BFD session (to a neighbour that
/// never answers, weighted), and a sync group (without tracking weight)
/// tracking the file with a weight of its own, a member tracking the
/// session: the effective priorities (the group's weights and the
/// member's weighted session ignored, as keepalived ignores them) and
/// KEEPALIVED-MIB's tracked file and BFD tables as keepalived shows them,
/// without the file and BFD tables themselves (.13, .18), not built yet.
#[test]
#[cfg_attr(
    not(all(feature = "root", feature = "reference")),
    ignore = "needs root (--features root,reference)"
)]
fn tracked_objects_walk_as_keepalived_s() {
    let mut lab = Lab::up("ksnmt");
    let snmpd = Snmpd::start(&lab);
    let file = lab.dir.join("tracked");
    std::fs::write(&file, "0\n").unwrap();
    let conf = format!(
        "global_defs {{\n  router_id lab\n  enable_snmp_vrrp\n  snmp_socket unix:{}\n}}\n\
         bfd_instance to_nowhere {{\n  neighbor_ip 192.0.2.77\n  source_ip 192.0.2.1\n  weight -10\n}}\n\
         track_file flag {{\n  file {}\n  weight -3 reverse\n}}\n\
         vrrp_instance VI_1 {{\n  state BACKUP\n  interface eth0\n  virtual_router_id 61\n  priority 150\n  \
         advert_int 1\n  virtual_ipaddress {{\n    192.0.2.161/24\n  }}\n  track_file {{\n    flag\n  }}\n  \
         track_bfd {{\n    to_nowhere\n  }}\n  notify @NOTIFY@\n}}\n\
         vrrp_instance VI_2 {{\n  state BACKUP\n  interface eth0\n  virtual_router_id 62\n  priority 150\n  \
         advert_int 1\n  virtual_ipaddress {{\n    192.0.2.162/24\n  }}\n  track_bfd {{\n    to_nowhere\n  }}\n}}\n\
         vrrp_instance VI_3 {{\n  state BACKUP\n  interface eth0\n  virtual_router_id 63\n  priority 150\n  \
         advert_int 1\n  virtual_ipaddress {{\n    192.0.2.163/24\n  }}\n}}\n\
         vrrp_sync_group G1 {{\n  group {{\n    VI_2\n    VI_3\n  }}\n  track_file {{\n    flag weight 2\n  }}\n}}\n",
        snmpd.socket.display(),
        file.display()
    );
    let not_built = [
        ".1.3.6.1.4.1.9586.100.5.2.13.",
        ".1.3.6.1.4.1.9586.100.5.2.18.",
    ];
    let mut walks = Vec::new();
    for imp in [Impl::Keepalived, Impl::Ours] {
        let t0 = lab.now();
        lab.start(1, imp, &conf);
        let master = lab.wait_for(12.0, |seen| {
            seen.iter().any(|s| {
                s.node == 1 && s.kind == "notify" && s.what.starts_with("VI_1 MASTER") && s.t > t0
            })
        });
        assert!(master, "{imp:?}: VI_1 never MASTER: {}", lab.log(1, imp));
        std::thread::sleep(std::time::Duration::from_secs(2));
        let w: Vec<String> = snmpd
            .walk(".1.3.6.1.4.1.9586.100.5")
            .into_iter()
            .filter(|l| !not_built.iter().any(|p| l.starts_with(p)))
            .map(|l| normalised(&l))
            .collect();
        if std::env::var("SNMP_LAB_KEEP").is_ok() {
            std::fs::write(format!("/tmp/snmp-tracked-{imp:?}.txt"), w.join("\n")).unwrap();
            std::fs::write(format!("/tmp/snmp-tracked-{imp:?}.log"), lab.log(1, imp)).unwrap();
        }
        lab.stop_all();
        walks.push(w);
    }
    let (theirs, ours) = (&walks[0], &walks[1]);
    let tables: Vec<&str> = [".12.1.", ".16.1.", ".17.1."]
        .into_iter()
        .filter(|t| {
            theirs
                .iter()
                .any(|l| l.contains(&format!("9586.100.5.2{t}")))
        })
        .collect();
    assert_eq!(
        tables.len(),
        3,
        "keepalived shows the tracked files and session: {theirs:#?}"
    );
    same_walk(ours, theirs);
    eprintln!(
        "tracked objects: {} lines of KEEPALIVED-MIB equal to keepalived's",
        ours.len()
    );
}
