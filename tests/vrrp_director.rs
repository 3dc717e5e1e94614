//! The VRRP side on one director of the namespace lab
//! (`tests/common/lab.rs`), each test run with keepalived 2.2.7 and with
//! ours and the results compared: routes, rules and static addresses, the
//! SMTP alerts, IPv6 unicast hop limits, announcement pacing, the
//! `no_accept` firewall — and both sides of the daemon in one process.
//!
//! Needs root (namespaces, raw sockets) and keepalived 2.2.7 installed:
//! `--features root,reference` (`scripts/test.sh` turns them on); there it
//! never skips.

mod common;

use common::lab::{conf, Impl, Lab};
use std::process::Command;
use std::thread::sleep;
use std::time::Duration;

/// A config with both sides runs both in one daemon, one process: VRRP
/// takes the address while the checker (dry run here: no IPVS on this
/// kernel) checks its real server, each on its own thread.
#[test]
#[cfg_attr(
    not(all(feature = "root", feature = "reference")),
    ignore = "needs root (--features root,reference)"
)]
fn one_process_runs_the_checker_and_vrrp() {
    let mut lab = Lab::up("kvboth");
    let conf = format!(
        "{}virtual_server 192.0.2.100 80 {{\n  delay_loop 1\n  lb_kind DR\n  protocol TCP\n  \
         real_server 192.0.2.1 9 {{\n    TCP_CHECK {{\n      connect_timeout 1\n    }}\n  }}\n}}\n",
        conf(150, "", "192.0.2.100/24", "")
    );
    lab.start_with(1, Impl::Ours, &conf, &["--dry-run"]);
    let up = lab.wait_for(6.0, |seen| {
        seen.iter()
            .any(|s| s.node == 1 && s.kind == "addr" && s.what == "+192.0.2.100")
    });
    let log = lab.log(1, Impl::Ours);
    assert!(up, "the VIP never came: {log}");
    let pids: Vec<_> = ["keepalived.pid", "checkers.pid", "vrrp.pid"]
        .iter()
        .map(|f| lab.pid_of(1, f))
        .collect();
    assert!(
        pids.iter().all(|p| p.is_some() && *p == pids[0]),
        "{pids:?}"
    );
    let pid = pids[0].unwrap();
    let threads: Vec<String> = std::fs::read_dir(format!("/proc/{pid}/task"))
        .unwrap()
        .flatten()
        .filter_map(|t| std::fs::read_to_string(t.path().join("comm")).ok())
        .map(|c| c.trim().to_string())
        .collect();
    assert!(threads.iter().any(|t| t == "checker"), "{threads:?}");
    assert!(threads.iter().any(|t| t == "vrrp"), "{threads:?}");
    // The checker did its work: its real server is down (nothing listens)
    // and the dry run shows the table without it.
    let checked = lab.wait_for(5.0, |_| {
        let l = lab.log(1, Impl::Ours);
        l.contains("Removing service [192.0.2.1]:tcp:80 from VS [192.0.2.100]:tcp:80")
    });
    assert!(
        checked,
        "no check result in the log: {}",
        lab.log(1, Impl::Ours)
    );
    lab.stop_all();
    assert!(
        !lab.has_addr(1, "192.0.2.100"),
        "the VIP stays after SIGTERM"
    );
}

/// `virtual_routes` (one with an `encap`) and `virtual_rules` follow the master, the static
/// address, route and rule are there from start to stop: the same as
/// keepalived's (as `ip route`, `ip rule` and `ip addr` show them) as
/// BACKUP and as MASTER, none left after SIGTERM.
#[test]
#[cfg_attr(
    not(all(feature = "root", feature = "reference")),
    ignore = "needs root and keepalived 2.2.7 (--features root,reference)"
)]
fn routes_rules_and_statics_as_keepalived_sets_them() {
    // virtual_* follow the master; static_* are there from start to stop.
    let extra = "  virtual_routes {\n    192.0.2.192/26 via 192.0.2.10\n    blackhole 2001:db8:ff::/48\n    \
                 198.51.100.0/24 dev eth0 metric 7 table 100\n    \
                 198.51.104.0/24 dev eth0 encap ip id 5 dst 192.0.2.1 ttl 30 flags 256\n  }\n  virtual_rules {\n    \
                 from 192.0.2.100 table 100 priority 100\n    to 198.51.100.0/24 lookup 100\n  }\n";
    let statics = "static_ipaddress {\n  192.0.2.60/24 dev eth0\n}\nstatic_routes {\n  \
                   203.0.113.0/24 via 192.0.2.10 dev eth0\n}\nstatic_rules {\n  \
                   fwmark 0x10 table 200 priority 200\n}\n";
    let mut shown = Vec::new();
    for imp in [Impl::Keepalived, Impl::Ours] {
        let mut lab = Lab::up(if imp == Impl::Ours { "kvrto" } else { "kvrtk" });
        let cfg = conf(150, extra, "192.0.2.100/24", "") + statics;
        let show = |lab: &Lab| {
            let run = |args: &[&str]| {
                let o = Command::new("ip")
                    .args(["-n", &lab.ns(1)])
                    .args(args)
                    .output()
                    .unwrap();
                String::from_utf8_lossy(&o.stdout).to_string()
            };
            let keep = |text: String, pats: &[&str]| {
                text.lines()
                    .filter(|l| pats.iter().any(|p| l.contains(p)))
                    .map(|l| format!("{}\n", l.trim_end()))
                    .collect::<String>()
            };
            let ours = [
                "192.0.2.192",
                "198.51.100",
                "198.51.104",
                "203.0.113",
                "2001:db8:ff",
                "192.0.2.60",
                "192.0.2.100",
                "fwmark",
            ];
            [
                keep(run(&["route", "show", "table", "all"]), &ours),
                keep(run(&["-6", "route", "show", "table", "all"]), &ours),
                keep(
                    run(&["rule", "show"]),
                    &["192.0.2.100", "198.51.100", "fwmark"],
                ),
                keep(run(&["addr", "show", "dev", "eth0"]), &ours),
            ]
            .concat()
        };
        lab.start(1, imp, &cfg);
        let backup = lab.wait_for(2.0, |seen| {
            seen.iter()
                .any(|s| s.node == 1 && s.kind == "notify" && s.what.starts_with("VI_1 BACKUP"))
        });
        assert!(backup, "{imp:?} never became BACKUP: {}", lab.log(1, imp));
        sleep(Duration::from_millis(300));
        let while_backup = show(&lab);
        let up = lab.wait_for(6.0, |seen| {
            seen.iter()
                .any(|s| s.node == 1 && s.kind == "notify" && s.what.starts_with("VI_1 MASTER"))
        });
        assert!(up, "{imp:?} never became MASTER: {}", lab.log(1, imp));
        sleep(Duration::from_millis(300));
        let while_master = show(&lab);
        // Deleted by someone else: the static route, rule and address are
        // put back (keepalived watches routes and rules here because the
        // instance has virtual ones); a virtual route sends the master to
        // BACKUP, and it takes over again and sets it back.
        let ip = |args: &[&str]| {
            let o = Command::new("ip")
                .args(["-n", &lab.ns(1)])
                .args(args)
                .output()
                .unwrap();
            assert!(
                o.status.success(),
                "ip {args:?}: {}",
                String::from_utf8_lossy(&o.stderr)
            );
        };
        // Re-added addresses come after the others: compared as sets.
        let sorted = |t: String| {
            let mut l: Vec<String> = t.lines().map(str::to_string).collect();
            l.sort();
            l
        };
        ip(&["route", "del", "203.0.113.0/24"]);
        ip(&["rule", "del", "priority", "200"]);
        ip(&["addr", "del", "192.0.2.60/24", "dev", "eth0"]);
        sleep(Duration::from_millis(800));
        assert_eq!(
            sorted(show(&lab)),
            sorted(while_master.clone()),
            "{imp:?}: statics not restored"
        );
        ip(&["route", "del", "198.51.100.0/24", "table", "100"]);
        let again = lab.wait_for(4.0, |seen| {
            seen.iter()
                .filter(|s| s.node == 1 && s.kind == "notify" && s.what.starts_with("VI_1 MASTER"))
                .count()
                >= 2
        });
        assert!(
            again,
            "{imp:?} did not take over again: {}",
            lab.log(1, imp)
        );
        sleep(Duration::from_millis(300));
        assert_eq!(
            show(&lab),
            while_master,
            "{imp:?}: after a virtual route deleted"
        );
        let restored: Vec<String> = lab
            .log(1, imp)
            .lines()
            .filter_map(|l| l.find("Restoring deleted").map(|i| l[i..].to_string()))
            .collect();
        assert_eq!(restored.len(), 3, "{imp:?}: {restored:?}");
        if imp == Impl::Ours {
            // A VRRP-only daemon serves its metrics itself.
            let m = lab.metrics(1);
            assert!(
                m.contains(
                    "keepalived_vrrp_state{instance=\"VI_1\",vrid=\"51\",interface=\"eth0\"} 2"
                ),
                "{m}"
            );
            // ... and counts its reloads (an unchanged file: nothing moves).
            lab.signal(1, "HUP");
            sleep(Duration::from_millis(500));
            let st = lab.status(1);
            assert_eq!(st["daemon"]["reloads"], 1, "{st}");
            assert_eq!(st["vrrp"][0]["state"], "MASTER", "{st}");
        }
        for want in [
            "via 192.0.2.10",
            "blackhole 2001:db8:ff::/48",
            "table 100",
            "fwmark 0x10",
            "192.0.2.60/24",
            "encap ip id 5 src 0.0.0.0 dst 192.0.2.1 ttl 30 tos 0 csum",
        ] {
            assert!(
                while_master.contains(want),
                "{imp:?} lacks {want}: {while_master}"
            );
        }
        assert!(
            while_backup.contains("203.0.113.0/24") && !while_backup.contains("198.51.100"),
            "{imp:?} as BACKUP: {while_backup}"
        );
        lab.stop_all();
        assert_eq!(show(&lab), "", "{imp:?}: left after SIGTERM");
        shown.push((while_backup, while_master, restored));
    }
    assert_eq!(
        shown[0], shown[1],
        "keepalived's (left) against ours (right)"
    );
}

/// `smtp_alert` on an instance: one mail per state entered, worded as
/// keepalived words them (subjects compared with keepalived's, in order).
#[test]
#[cfg_attr(
    not(all(feature = "root", feature = "reference")),
    ignore = "needs root and keepalived 2.2.7 (--features root,reference)"
)]
fn vrrp_smtp_alerts_as_keepalived_sends_them() {
    let mut subjects = Vec::new();
    for imp in [Impl::Keepalived, Impl::Ours] {
        let mut lab = Lab::up(if imp == Impl::Ours { "kvmlo" } else { "kvmlk" });
        let mails = lab.smtp_sink(1, 2525);
        let globals = "  notification_email {\n    ops@example.org\n  }\n  \
                       notification_email_from lb@example.org\n  smtp_server 192.0.2.1 2525\n";
        lab.start(
            1,
            imp,
            &conf(150, "  smtp_alert\n", "192.0.2.100/24", globals),
        );
        let up = lab.wait_for(6.0, |seen| {
            seen.iter()
                .any(|s| s.node == 1 && s.kind == "notify" && s.what.starts_with("VI_1 MASTER"))
        });
        assert!(up, "{imp:?} never became MASTER: {}", lab.log(1, imp));
        sleep(Duration::from_millis(500));
        lab.stop_all();
        sleep(Duration::from_millis(500));
        let got: Vec<String> = mails.lock().unwrap().iter().map(|m| m.1.clone()).collect();
        subjects.push(got);
    }
    assert_eq!(
        subjects[1], subjects[0],
        "ours (left) against keepalived's (right)"
    );
    assert_eq!(
        subjects[0],
        [
            "[lab] VRRP Instance VI_1 - Entering BACKUP state",
            "[lab] VRRP Instance VI_1 - Entering MASTER state"
        ],
        "keepalived's \"Stopping\" mail never leaves its process"
    );
}

/// IPv6 unicast adverts leave with `unicast_ttl` as their hop limit, as
/// keepalived sends them (seen on the peer's side of the link: the bridge
/// does not see unicast between two of its ports).
#[test]
#[cfg_attr(
    not(all(feature = "root", feature = "reference")),
    ignore = "needs root and keepalived 2.2.7 (--features root,reference)"
)]
fn ipv6_unicast_adverts_carry_unicast_ttl() {
    let extra = "  version 3\n  unicast_ttl 10\n  unicast_src_ip 2001:db8::1\n  \
                 unicast_peer {\n    2001:db8::2\n  }\n  state MASTER\n";
    for imp in [Impl::Keepalived, Impl::Ours] {
        let mut lab = Lab::up(if imp == Impl::Ours { "kvhlo" } else { "kvhlk" });
        let dump = lab.capture(2, "ip6 proto 112", 6);
        lab.start(1, imp, &conf(255, extra, "2001:db8::100/64", ""));
        let out = dump.wait_with_output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        let hlims: Vec<&str> = text
            .split(", ")
            .filter_map(|f| f.strip_prefix("hlim "))
            .collect();
        assert!(!hlims.is_empty(), "{imp:?}: no advert seen: {text}");
        assert!(hlims.iter().all(|h| *h == "10"), "{imp:?}: {hlims:?}");
        lab.stop_all();
    }
}

/// `vrrp_garp_interval` spaces gratuitous ARPs on an interface as
/// keepalived 2.2.7 does: one address pending at a time however many
/// repeats were asked (so 5 repeats of two addresses give three ARPs),
/// the same addresses in the same order, `interval` apart.
#[test]
#[cfg_attr(
    not(all(feature = "root", feature = "reference")),
    ignore = "needs root and keepalived 2.2.7 (--features root,reference)"
)]
fn vrrp_garp_interval_paces_announcements_as_keepalived() {
    let mut seen = Vec::new();
    for imp in [Impl::Keepalived, Impl::Ours] {
        let mut lab = Lab::up(if imp == Impl::Ours { "kvgio" } else { "kvgik" });
        let dump = lab.capture(2, "arp", 4);
        let cfg = conf(
            255,
            "  state MASTER\n  garp_master_delay 0\n",
            "192.0.2.100/24\n    192.0.2.101/24",
            "  vrrp_garp_interval 0.1\n",
        );
        lab.start(1, imp, &cfg);
        let out = dump.wait_with_output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout).to_string();
        // "<t> ARP, Request who-has A (ff:…) tell A, length 28": gratuitous.
        let garps: Vec<(f64, String)> = text
            .lines()
            .filter_map(|l| {
                let f: Vec<&str> = l.split_whitespace().collect();
                let after = |k: &str| f.iter().position(|x| *x == k).and_then(|i| f.get(i + 1));
                let (t, who, tell) = (f.first()?, after("who-has")?, after("tell")?);
                if tell.trim_end_matches(',') != *who {
                    return None;
                }
                Some((t.parse().ok()?, who.to_string()))
            })
            .collect();
        lab.stop_all();
        let gaps: Vec<f64> = garps.windows(2).map(|w| w[1].0 - w[0].0).collect();
        assert!(
            gaps.iter().all(|g| (0.07..0.2).contains(g)),
            "{imp:?}: gaps {gaps:?} in {text}"
        );
        seen.push(garps.into_iter().map(|g| g.1).collect::<Vec<_>>());
    }
    assert_eq!(
        seen[0],
        ["192.0.2.100", "192.0.2.100", "192.0.2.101"],
        "keepalived's"
    );
    assert_eq!(seen[1], seen[0], "ours against keepalived's");
}

/// `no_accept`: while MASTER without owning its addresses, traffic to
/// them is dropped by keepalived's nftables rules — the same ruleset as
/// keepalived's (`nft list ruleset`, with an IPv6 eVIP for the `ip6`
/// table), kept across a reload, none left after SIGTERM; the client's
/// ping of the VIP goes unanswered while the director's own address
/// answers.
#[test]
#[cfg_attr(
    not(all(feature = "root", feature = "reference")),
    ignore = "needs root and keepalived 2.2.7 (--features root,reference)"
)]
fn no_accept_drops_traffic_to_the_vips_as_keepalived() {
    let extra = "  no_accept\n  virtual_ipaddress_excluded {\n    2001:db8::100/64\n  }\n";
    let mut shown = Vec::new();
    for imp in [Impl::Keepalived, Impl::Ours] {
        let mut lab = Lab::up(if imp == Impl::Ours { "kvnfo" } else { "kvnfk" });
        let ruleset = |lab: &Lab| {
            let o = Command::new("ip")
                .args(["netns", "exec", &lab.ns(1), "nft", "list", "ruleset"])
                .output()
                .expect("nft (nftables) installed");
            assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
            String::from_utf8_lossy(&o.stdout).to_string()
        };
        let ping = |lab: &Lab, to: &str| {
            Command::new("ip")
                .args([
                    "netns",
                    "exec",
                    &lab.ns(3),
                    "busybox",
                    "ping",
                    "-c",
                    "1",
                    "-W",
                    "1",
                    to,
                ])
                .output()
                .unwrap()
                .status
                .success()
        };
        lab.start(1, imp, &conf(150, extra, "192.0.2.100/24", ""));
        let up = lab.wait_for(8.0, |seen| {
            seen.iter()
                .any(|s| s.node == 1 && s.kind == "notify" && s.what.starts_with("VI_1 MASTER"))
        });
        assert!(up, "{imp:?} never became MASTER: {}", lab.log(1, imp));
        sleep(Duration::from_millis(300));
        let master = ruleset(&lab);
        assert!(lab.has_addr(1, "192.0.2.100"), "{imp:?}: no VIP");
        assert!(
            ping(&lab, "192.0.2.1"),
            "{imp:?}: the director's own address"
        );
        assert!(
            !ping(&lab, "192.0.2.100"),
            "{imp:?}: the VIP answered: {master}"
        );
        lab.signal(1, "HUP");
        sleep(Duration::from_millis(700));
        let reloaded = ruleset(&lab);
        assert_eq!(master, reloaded, "{imp:?}: a reload changed the rules");
        lab.stop_all();
        assert_eq!(ruleset(&lab), "", "{imp:?}: left after SIGTERM");
        if imp == Impl::Ours {
            let log = lab.log(1, imp);
            assert!(
                log.contains(
                    "use_vmac or no_accept/strict specified, but no firewall configured - using nftables"
                ),
                "{log}"
            );
            assert!(!log.contains("nftables: "), "an nftables error: {log}");
        }
        shown.push(master);
    }
    assert!(shown[0].contains("ip daddr @vips drop"), "{}", shown[0]);
    assert!(shown[0].contains("2001:db8::100"), "{}", shown[0]);
    assert_eq!(
        shown[0], shown[1],
        "keepalived's (left) against ours (right)"
    );
}

/// The sections of a `keepalived.data` that describe the VRRP side
/// (instances, sync groups, scripts), without what differs from run to run
/// (times, file descriptors) or belongs to the process (sockets, the
/// interface table).
fn vrrp_sections(data: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut keep = false;
    for l in data.lines() {
        if l.starts_with("------<") {
            keep = ["VRRP Topology", "VRRP Sync groups", "VRRP Scripts"]
                .iter()
                .any(|s| l.contains(s));
        }
        let varying = ["Last transition", "Read timeout", "fd_in"]
            .iter()
            .any(|v| l.contains(v));
        if keep && !varying {
            out.push(l.to_string());
        }
    }
    out
}

/// SIGUSR1, SIGUSR2 and the JSON signal write `keepalived.data`,
/// `keepalived.stats` and `keepalived.json` under `$TMPDIR` as keepalived
/// 2.2.7 writes them: a sync group of a multicast instance with eVIPs and
/// a tracked script and a unicast one with a password, both MASTER; the
/// VRRP sections line for line, the counters, and the JSON's keys and
/// values (but the transition's time).
#[test]
#[cfg_attr(
    not(all(feature = "root", feature = "reference")),
    ignore = "needs root and keepalived 2.2.7 (--features root,reference)"
)]
fn dumps_as_keepalived_writes_them() {
    let conf = "global_defs {\n  router_id d1\n  enable_script_security\n  script_user root\n}\n\
        vrrp_script chk {\n  script \"/bin/true\"\n  interval 2\n  weight -20\n  fall 2\n  rise 3\n}\n\
        vrrp_sync_group G1 {\n  group {\n    VI_1\n    VI_2\n  }\n  notify @NOTIFY@\n}\n\
        vrrp_instance VI_1 {\n  state BACKUP\n  interface eth0\n  virtual_router_id 51\n  priority 150\n  \
        advert_int 1\n  track_script {\n    chk weight 0\n  }\n  virtual_ipaddress {\n    192.0.2.100/24\n    \
        192.0.2.102/24 dev eth0 label eth0:1\n  }\n  virtual_ipaddress_excluded {\n    192.0.2.103\n  }\n  \
        notify @NOTIFY@\n}\n\
        vrrp_instance VI_2 {\n  state BACKUP\n  interface eth0\n  virtual_router_id 52\n  priority 100\n  \
        unicast_src_ip 192.0.2.1\n  unicast_peer {\n    192.0.2.2\n  }\n  authentication {\n    \
        auth_type PASS\n    auth_pass secret\n  }\n  nopreempt\n  virtual_ipaddress {\n    192.0.2.101/24\n  }\n}\n";
    let mut got = Vec::new();
    for imp in [Impl::Keepalived, Impl::Ours] {
        let mut lab = Lab::up(if imp == Impl::Ours {
            "kvdmpo"
        } else {
            "kvdmpk"
        });
        lab.start(1, imp, conf);
        let up = lab.wait_for(8.0, |seen| {
            seen.iter()
                .any(|s| s.node == 1 && s.kind == "addr" && s.what == "+192.0.2.101")
        });
        assert!(up, "{imp:?} never MASTER: {}", lab.log(1, imp));
        sleep(Duration::from_millis(1500));
        let dir = lab.dir.join("d1");
        let json_sig = Command::new(common::lab::KEEPALIVED)
            .arg("--signum=JSON")
            .output()
            .unwrap();
        let json_sig = String::from_utf8_lossy(&json_sig.stdout).trim().to_string();
        for sig in ["USR1", "USR2", json_sig.as_str()] {
            lab.signal(1, sig);
        }
        let files = ["keepalived.data", "keepalived.stats", "keepalived.json"];
        let written = lab.wait_for(5.0, |_| files.iter().all(|f| dir.join(f).exists()));
        assert!(
            written,
            "{imp:?}: {:?}",
            std::fs::read_dir(&dir)
                .unwrap()
                .flatten()
                .map(|e| e.file_name())
                .collect::<Vec<_>>()
        );
        sleep(Duration::from_millis(300));
        // The notify script's path names the lab's own directory.
        let lab_dir = lab.dir.display().to_string();
        let read = |f: &str| {
            std::fs::read_to_string(dir.join(f))
                .unwrap()
                .replace(&lab_dir, "LAB")
                // keepalived's JSON writes `/` as `\/`.
                .replace(&lab_dir.replace('/', "\\/"), "LAB")
        };
        let mode = std::os::unix::fs::PermissionsExt::mode(
            &std::fs::metadata(dir.join("keepalived.data"))
                .unwrap()
                .permissions(),
        );
        got.push((
            read("keepalived.data"),
            read("keepalived.stats"),
            read("keepalived.json"),
            mode & 0o777,
        ));
        lab.stop_all();
    }
    let (k, o) = (&got[0], &got[1]);
    assert_eq!(vrrp_sections(&o.0), vrrp_sections(&k.0), "keepalived.data");
    assert!(vrrp_sections(&k.0).len() > 80, "{}", k.0);
    // The counters: the same shape, adverts sent within one of each other
    // (the signal lands at a phase of the advert timer).
    let shape = |s: &str| -> Vec<String> {
        s.lines()
            .map(|l| l.split(':').next().unwrap_or("").to_string())
            .collect()
    };
    assert_eq!(shape(&o.1), shape(&k.1), "keepalived.stats");
    let strip = |s: &str| -> Vec<String> {
        s.lines()
            .filter(|l| !l.trim_start().starts_with("Sent:"))
            .map(str::to_string)
            .collect()
    };
    assert_eq!(strip(&o.1), strip(&k.1), "keepalived.stats");
    let (kj, oj): (serde_json::Value, serde_json::Value) = (
        serde_json::from_str(&k.2).unwrap(),
        serde_json::from_str(&o.2).unwrap(),
    );
    let (ka, oa) = (kj.as_array().unwrap(), oj.as_array().unwrap());
    assert_eq!(ka.len(), oa.len());
    for (x, y) in ka.iter().zip(oa) {
        for sec in ["data", "stats"] {
            let (xm, ym) = (x[sec].as_object().unwrap(), y[sec].as_object().unwrap());
            let keys = |m: &serde_json::Map<String, serde_json::Value>| {
                m.keys().cloned().collect::<std::collections::BTreeSet<_>>()
            };
            assert_eq!(keys(ym), keys(xm), "{sec} keys");
            for (key, v) in xm {
                if ["last_transition", "advert_sent"].contains(&key.as_str()) {
                    continue;
                }
                assert_eq!(&ym[key], v, "{sec}.{key}");
            }
        }
    }
    assert_eq!((k.3, o.3), (0o600, 0o600), "root-only files");
}

/// `use_vmac` on an IPv4 instance without accept mode and on an IPv6 one:
/// the macvlans (mode, MAC, address generation, the IPv6 one's link-local
/// shared with eth0), the sysctls, the addresses on them, the adverts' source
/// MACs and keepalived's nftables table (its IGMP/MLD rules for VMACs, the
/// drop rules) are keepalived's, in BACKUP... and MASTER; nothing is left
/// after SIGTERM.
#[test]
#[cfg_attr(
    not(all(feature = "root", feature = "reference")),
    ignore = "needs root and keepalived 2.2.7 (--features root,reference)"
)]
fn vmacs_as_keepalived_makes_them() {
    let conf = "global_defs {\n  router_id lab\n}\n\
        vrrp_instance VI_1 {\n  state BACKUP\n  interface eth0\n  virtual_router_id 51\n  priority 150\n  \
        advert_int 1\n  use_vmac\n  no_accept\n  virtual_ipaddress {\n    192.0.2.100/24\n  }\n}\n\
        vrrp_instance VI_6 {\n  state BACKUP\n  interface eth0\n  virtual_router_id 52\n  priority 150\n  \
        advert_int 1\n  use_vmac\n  virtual_ipaddress {\n    2001:db8::100/64\n  }\n}\n";
    let mut shown = Vec::new();
    for imp in [Impl::Keepalived, Impl::Ours] {
        let mut lab = Lab::up(if imp == Impl::Ours { "kvvmo" } else { "kvvmk" });
        let ns = lab.ns(1);
        let run = |args: &[&str]| {
            let o = Command::new("ip")
                .args(["netns", "exec", &ns])
                .args(args)
                .output()
                .unwrap();
            String::from_utf8_lossy(&o.stdout).to_string()
        };
        // What differs from run to run (interface indexes, eth0's own MAC
        // and link-local) is named as such.
        let eth0_mac = lab.mac(1);
        let view = |text: String| -> String {
            let ll = run(&[
                "ip", "-6", "-o", "addr", "show", "dev", "eth0", "scope", "link",
            ]);
            let ll = ll
                .split_whitespace()
                .skip_while(|w| *w != "inet6")
                .nth(1)
                .unwrap_or("")
                .split('/')
                .next()
                .unwrap_or("")
                .to_string();
            text.lines()
                .map(|l| {
                    let l = l.replace(&eth0_mac, "ETH0-MAC");
                    let l = if ll.is_empty() {
                        l
                    } else {
                        l.replace(&ll, "ETH0-LL")
                    };
                    // "7: vrrp.51@eth0:" → "vrrp.51@eth0:"
                    match l.split_once(": ") {
                        Some((n, rest)) if n.chars().all(|c| c.is_ascii_digit()) => {
                            rest.to_string()
                        }
                        _ => l,
                    }
                })
                .filter(|l| !l.contains("valid_lft") && !l.contains("altname"))
                .collect::<Vec<_>>()
                .join("\n")
        };
        let snapshot = |what: &str| -> String {
            let mut s = format!("== {what}\n");
            for v in ["vrrp.51", "vrrp.52"] {
                s += &view(run(&["ip", "-d", "link", "show", "dev", v]))
                    .lines()
                    .map(|l| {
                        // The link's own counters and offload sizes are the kernel's.
                        l.split(" numtxqueues").next().unwrap_or(l).to_string()
                    })
                    .collect::<Vec<_>>()
                    .join("\n");
                s += "\n";
                s += &view(run(&["ip", "addr", "show", "dev", v]));
                s += "\n";
            }
            for k in [
                "ipv4/conf/eth0/arp_ignore",
                "ipv4/conf/eth0/arp_filter",
                "ipv4/conf/vrrp.51/arp_ignore",
                "ipv4/conf/vrrp.51/accept_local",
                "ipv4/conf/vrrp.51/rp_filter",
                "ipv6/conf/vrrp.51/disable_ipv6",
                "ipv6/conf/vrrp.52/disable_ipv6",
            ] {
                s += &format!("{k} = {}", run(&["cat", &format!("/proc/sys/net/{k}")]));
            }
            s += &run(&["nft", "list", "ruleset"]);
            s
        };
        let cap = lab.capture(1, "vrrp or (ip6 proto 112)", 6);
        lab.start(1, imp, conf);
        sleep(Duration::from_millis(1500));
        let backup = snapshot("BACKUP");
        let up = lab.wait_for(6.0, |seen| {
            seen.iter()
                .any(|s| s.node == 1 && s.kind == "addr" && s.what == "+2001:db8::100")
        });
        assert!(up, "{imp:?} never MASTER: {}", lab.log(1, imp));
        sleep(Duration::from_millis(500));
        let master = snapshot("MASTER");
        let wire = String::from_utf8_lossy(&cap.wait_with_output().unwrap().stdout).to_string();
        // Source MACs of the adverts: the VMACs'.
        let macs: std::collections::BTreeSet<String> = wire
            .lines()
            .filter(|l| l.contains("Advertisement"))
            .filter_map(|l| l.split_whitespace().nth(1).map(str::to_string))
            .collect();
        lab.stop_all();
        sleep(Duration::from_millis(300));
        let after = format!(
            "links: {}\nrules: {}",
            run(&["ip", "-o", "link", "show", "type", "macvlan"]).trim(),
            run(&["nft", "list", "ruleset"]).trim()
        );
        shown.push((backup, master, macs, after, lab.log(1, imp)));
    }
    let (k, o) = (&shown[0], &shown[1]);
    assert!(
        k.1.contains("vmac_map") && k.1.contains("192.0.2.100"),
        "{}",
        k.1
    );
    assert_eq!(
        o.0, k.0,
        "BACKUP: ours (left), keepalived's (right)\n{}",
        o.4
    );
    assert_eq!(
        o.1, k.1,
        "MASTER: ours (left), keepalived's (right)\n{}",
        o.4
    );
    assert_eq!(o.2, k.2, "advert source MACs");
    assert_eq!(o.3, k.3, "after SIGTERM");
}

/// A sync group's SMTP alerts (the group's `smtp_alert`, and its
/// members') as keepalived sends them: the same subjects, in the same
/// order, to a mail sink in the namespace.
#[test]
#[cfg_attr(
    not(all(feature = "root", feature = "reference")),
    ignore = "needs root and keepalived 2.2.7 (--features root,reference)"
)]
fn sync_group_smtp_alerts_as_keepalived_sends_them() {
    let mut subjects = Vec::new();
    for imp in [Impl::Keepalived, Impl::Ours] {
        let mut lab = Lab::up(if imp == Impl::Ours { "kvsmo" } else { "kvsmk" });
        let mails = lab.smtp_sink(1, 2525);
        let globals = "  notification_email {\n    ops@example.org\n  }\n  \
                       notification_email_from lb@example.org\n  smtp_server 192.0.2.1 2525\n";
        let conf = common::lab::sync_conf(150, "", globals, "").replace(
            "  notify @NOTIFY@\n}\nvrrp_instance VI_1",
            "  notify @NOTIFY@\n  smtp_alert\n}\nvrrp_instance VI_1",
        );
        assert!(conf.contains("smtp_alert"), "{conf}");
        lab.start(1, imp, &conf);
        let up = lab.wait_for(6.0, |seen| {
            seen.iter()
                .any(|s| s.node == 1 && s.kind == "notify" && s.what.starts_with("G1 MASTER"))
        });
        assert!(up, "{imp:?} never became MASTER: {}", lab.log(1, imp));
        sleep(Duration::from_millis(800));
        lab.stop_all();
        sleep(Duration::from_millis(500));
        let got: Vec<String> = mails.lock().unwrap().iter().map(|m| m.1.clone()).collect();
        subjects.push(got);
    }
    assert!(
        subjects[0].iter().any(|s| s.contains("VRRP Group G1")),
        "{:?}",
        subjects[0]
    );
    let sorted = |v: &Vec<String>| {
        let mut v = v.clone();
        v.sort();
        v
    };
    assert_eq!(
        sorted(&subjects[1]),
        sorted(&subjects[0]),
        "ours (left) against keepalived's (right)"
    );
}

/// `-s NAME` and `net_namespace NAME`, started from the root namespace:
/// keepalived 2.2.7 and ours go into `/run/netns/NAME` before anything
/// else (the VIP lands on a link only that namespace has, none in the
/// root namespace), keep their pid files in `/run/keepalived/NAME/`, log
/// under `Keepalived_NAME`, and take the VIP away at SIGTERM.
#[test]
#[cfg_attr(
    not(all(feature = "root", feature = "reference")),
    ignore = "needs root and keepalived 2.2.7 (--features root,reference)"
)]
fn a_namespace_takes_the_daemon_its_vip_and_its_pid_files() {
    let cases = [
        (common::lab::KEEPALIVED, true, "k"),
        (env!("CARGO_BIN_EXE_keepalived"), true, "o"),
        (env!("CARGO_BIN_EXE_keepalived"), false, "f"),
    ];
    let mut results = Vec::new();
    for (bin, by_option, tag) in cases {
        let ns = format!("krns{tag}{}", std::process::id() % 10_000);
        let link = format!("krl{tag}{}", std::process::id() % 10_000);
        let _ = Command::new("ip").args(["netns", "del", &ns]).status();
        common::lab::must(&["ip", "netns", "add", &ns]);
        common::lab::must(&[
            "ip", "-n", &ns, "link", "add", &link, "type", "veth", "peer", "name", "krpeer",
        ]);
        for l in [link.as_str(), "krpeer", "lo"] {
            common::lab::must(&["ip", "-n", &ns, "link", "set", l, "up"]);
        }
        common::lab::must(&["ip", "-n", &ns, "addr", "add", "192.0.2.5/24", "dev", &link]);
        let dir = std::env::temp_dir().join(format!("kr-ns-{tag}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let cf = dir.join("keepalived.conf");
        let head = if by_option {
            String::new()
        } else {
            format!("net_namespace {ns}\n")
        };
        std::fs::write(
            &cf,
            format!(
                "{head}vrrp_instance VI_1 {{\n  state MASTER\n  interface {link}\n  virtual_router_id 51\n  \
                 priority 150\n  advert_int 1\n  virtual_ipaddress {{\n    192.0.2.100/24\n  }}\n}}\n"
            ),
        )
        .unwrap();
        let log = std::fs::File::create(dir.join("log")).unwrap();
        let mut cmd = Command::new(bin);
        cmd.args(["-n", "-l", "-D", "-P", "-f"]).arg(&cf);
        if by_option {
            cmd.args(["-s", &ns]);
        }
        let mut child = cmd
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .unwrap();
        let has_vip = |netns: Option<&str>| {
            let mut c = Command::new("ip");
            if let Some(n) = netns {
                c.args(["-n", n]);
            }
            let o = c.args(["-o", "addr", "show"]).output().unwrap();
            String::from_utf8_lossy(&o.stdout).contains("192.0.2.100/24")
        };
        let mut inside = false;
        for _ in 0..80 {
            sleep(Duration::from_millis(100));
            if has_vip(Some(&ns)) {
                inside = true;
                break;
            }
        }
        let root = has_vip(None);
        let pid_dir = std::path::Path::new("/run/keepalived").join(&ns);
        let pid_of = |f: &str| {
            std::fs::read_to_string(pid_dir.join(f))
                .ok()
                .and_then(|s| s.trim().parse::<u32>().ok())
        };
        let main_pid = pid_of("keepalived.pid") == Some(child.id());
        let vrrp_pid = pid_of("vrrp.pid").is_some();
        let _ = Command::new("kill")
            .args(["-TERM", &child.id().to_string()])
            .status();
        let _ = child.wait();
        let text = std::fs::read_to_string(dir.join("log")).unwrap_or_default();
        let ident = text.contains(&format!("Changing syslog ident to Keepalived_{ns}"));
        let after = has_vip(Some(&ns));
        results.push(format!(
            "[{tag}] vip in the namespace: {inside}, in the root: {root}, pid files: {main_pid} {vrrp_pid}, ident: {ident}, vip after stop: {after}"
        ));
        if !inside {
            results.push(text);
        }
        let _ = Command::new("ip").args(["netns", "del", &ns]).status();
        let _ = std::fs::remove_dir_all(&dir);
    }
    let want = "vip in the namespace: true, in the root: false, pid files: true true, ident: true, vip after stop: false";
    for r in results.iter().filter(|r| r.starts_with('[')) {
        assert!(r.ends_with(want), "{}", results.join("\n"));
    }
}

/// A SIGHUP's global settings take effect on the VRRP side, as keepalived
/// rebuilds its global data at every reload: started with no SMTP server,
/// reloaded with one (and another `router_id`), then a carrier loss: the
/// FAULT mail goes to the new server under the new name, from ours as from
/// keepalived.
#[test]
#[cfg_attr(
    not(all(feature = "root", feature = "reference")),
    ignore = "needs root and keepalived 2.2.7 (--features root,reference)"
)]
fn a_reload_s_global_settings_take_effect_as_keepalived_s() {
    let mut subjects = Vec::new();
    for imp in [Impl::Keepalived, Impl::Ours] {
        let mut lab = Lab::up(if imp == Impl::Ours { "kvrgo" } else { "kvrgk" });
        let mails = lab.smtp_sink(1, 2525);
        let vip = "192.0.2.100/24";
        lab.start(1, imp, &conf(150, "  smtp_alert\n", vip, ""));
        let up = lab.wait_for(6.0, |seen| {
            seen.iter()
                .any(|s| s.node == 1 && s.kind == "notify" && s.what.starts_with("VI_1 MASTER"))
        });
        assert!(up, "{imp:?} never became MASTER: {}", lab.log(1, imp));
        let globals = "  notification_email {\n    ops@example.org\n  }\n  \
                       notification_email_from lb@example.org\n  smtp_server 192.0.2.1 2525\n";
        lab.rewrite(
            1,
            &conf(150, "  smtp_alert\n", vip, globals).replace("router_id lab", "router_id lab2"),
        );
        lab.signal(1, "HUP");
        sleep(Duration::from_secs(2));
        lab.carrier(1, false);
        let fault = lab.wait_for(6.0, |seen| {
            seen.iter()
                .any(|s| s.node == 1 && s.kind == "notify" && s.what.starts_with("VI_1 FAULT"))
        });
        assert!(fault, "{imp:?} never entered FAULT: {}", lab.log(1, imp));
        sleep(Duration::from_millis(1500));
        lab.stop_all();
        let got: Vec<String> = mails.lock().unwrap().iter().map(|m| m.1.clone()).collect();
        subjects.push(got);
    }
    assert!(
        subjects[0]
            .iter()
            .any(|s| s == "[lab2] VRRP Instance VI_1 - Entering FAULT state"),
        "keepalived's: {:?}",
        subjects[0]
    );
    assert_eq!(
        subjects[1], subjects[0],
        "ours (left) against keepalived's (right)"
    );
}
