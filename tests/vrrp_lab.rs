//! VRRP side by side with keepalived 2.2.7 in the namespace lab
//! (`tests/common/lab.rs`): every scenario runs with keepalived on both
//! directors (the oracle), ours on both, and each mixed pair (a rolling
//! upgrade), and each step's observations — states entered (notify
//! scripts), address changes on each director, who advertises which
//! priority and the announcements on the wire — must be keepalived's, in
//! the same order, at the same times (within 10%, or 0.25 s).
//!
//! Needs root (namespaces, raw sockets) and keepalived 2.2.7 installed:
//! `--features root,reference` (`scripts/test.sh` turns them on); there it
//! never skips.

mod common;

use common::lab::{conf, summary, sync_conf, sync_conf_with, Impl, Lab, Summary};
use std::process::Command;
use std::thread::sleep;
use std::time::{Duration, Instant};

/// One step of a scenario: an action on the lab, then how long to watch.
struct Step {
    name: &'static str,
    act: fn(&mut Lab, &Scenario, [Impl; 2]),
    watch: f64,
    /// Extra timing slack, seconds: a vrrp_script's own 1 s interval runs
    /// at a phase of its own against the adverts.
    slack: f64,
    /// Act just after this director's next advert (the peer's down timer
    /// then runs its whole length, as in keepalived's own measurements).
    sync: Option<usize>,
    /// What the sync waits for: a `wire` advert (multicast: the bridge
    /// sees unicast between two ports only once), or another kind of
    /// observation of that director (`fifo`, `notify`; the step then
    /// starts 0.3 s after it).
    sync_kind: &'static str,
}

struct Scenario {
    name: &'static str,
    /// keepalived.conf of d1 and d2.
    confs: [String; 2],
    /// d1's file for the reload steps.
    reload: Option<String>,
    steps: Vec<Step>,
    /// Addresses announced (to check the client ends up at the master).
    vip: &'static str,
}

/// d1 first, d2 half a second later: the election does not then hang on
/// which daemon starts faster (their down intervals differ by 0.195 s).
fn start_both(lab: &mut Lab, s: &Scenario, pair: [Impl; 2]) {
    lab.start(1, pair[0], &s.confs[0]);
    sleep(Duration::from_millis(500));
    lab.start(2, pair[1], &s.confs[1]);
}
fn start_d1(lab: &mut Lab, s: &Scenario, pair: [Impl; 2]) {
    lab.start(1, pair[0], &s.confs[0]);
}
fn start_d2(lab: &mut Lab, s: &Scenario, pair: [Impl; 2]) {
    lab.start(2, pair[1], &s.confs[1]);
}
fn term_d1(lab: &mut Lab, _: &Scenario, _: [Impl; 2]) {
    lab.signal(1, "TERM");
}
fn kill_d1(lab: &mut Lab, _: &Scenario, _: [Impl; 2]) {
    lab.signal(1, "KILL");
}
fn restart_d1(lab: &mut Lab, s: &Scenario, pair: [Impl; 2]) {
    lab.start(1, pair[0], &s.confs[0]);
}
fn cable_d1_out(lab: &mut Lab, _: &Scenario, _: [Impl; 2]) {
    lab.carrier(1, false);
}
fn cable_d1_in(lab: &mut Lab, _: &Scenario, _: [Impl; 2]) {
    lab.carrier(1, true);
}
fn nothing(_: &mut Lab, _: &Scenario, _: [Impl; 2]) {}
fn del_vip_d1(lab: &mut Lab, s: &Scenario, _: [Impl; 2]) {
    let st = Command::new("ip")
        .args([
            "-n",
            &lab.ns(1),
            "addr",
            "del",
            &format!("{}/24", s.vip),
            "dev",
            "eth0",
        ])
        .status()
        .unwrap();
    assert!(st.success(), "ip addr del");
}
fn cable_d2_out(lab: &mut Lab, _: &Scenario, _: [Impl; 2]) {
    lab.carrier(2, false);
}
fn cable_d2_in(lab: &mut Lab, _: &Scenario, _: [Impl; 2]) {
    lab.carrier(2, true);
}
fn flag_on(lab: &mut Lab, _: &Scenario, _: [Impl; 2]) {
    std::fs::write(lab.path("flag"), "down").unwrap();
}
fn file_one(lab: &mut Lab, _: &Scenario, _: [Impl; 2]) {
    std::fs::write(lab.path("flag"), "1\n").unwrap();
}
fn flag_off(lab: &mut Lab, _: &Scenario, _: [Impl; 2]) {
    let _ = std::fs::remove_file(lab.path("flag"));
}
fn hup_d1(lab: &mut Lab, _: &Scenario, _: [Impl; 2]) {
    lab.signal(1, "HUP");
}
fn reload_d1(lab: &mut Lab, s: &Scenario, _: [Impl; 2]) {
    lab.rewrite(1, s.reload.as_deref().expect("a reload config"));
    lab.signal(1, "HUP");
}

fn step(name: &'static str, act: fn(&mut Lab, &Scenario, [Impl; 2]), watch: f64) -> Step {
    Step {
        name,
        act,
        watch,
        slack: 0.0,
        sync: None,
        sync_kind: "wire",
    }
}

/// Both daemons start: the first BACKUP lines come as fast as each daemon
/// starts (ours in ~0.05 s, keepalived in 0.15–0.35 s on a loaded
/// machine), which is not the protocol, so this step allows half a second.
fn start_step() -> Step {
    Step {
        slack: 0.5,
        ..step("start and election", start_both, 5.5)
    }
}

fn synced(
    name: &'static str,
    act: fn(&mut Lab, &Scenario, [Impl; 2]),
    watch: f64,
    node: usize,
) -> Step {
    Step {
        sync: Some(node),
        ..step(name, act, watch)
    }
}

/// A scenario over 192.0.2.100 with no reload file.
fn sc(name: &'static str, confs: [String; 2], steps: Vec<Step>) -> Scenario {
    Scenario {
        name,
        confs,
        reload: None,
        steps,
        vip: "192.0.2.100",
    }
}

fn scenarios() -> Vec<Scenario> {
    let v4 = "192.0.2.100/24";
    let plain = |p: u8| conf(p, "", v4, "");
    let election = || vec![start_step(), step("SIGTERM of the master", term_d1, 2.5)];
    let script = "vrrp_script chk {\n  script \"/bin/sh -c '! test -e @FLAG@'\"\n  interval 1\n  weight -60\n}\n";
    vec![
        sc(
            "sigterm",
            [
                conf(150, "", v4, "  vrrp_notify_fifo @FIFO@\n"),
                conf(100, "", v4, "  vrrp_notify_fifo @FIFO@\n"),
            ],
            election(),
        ),
        sc(
            "sigkill",
            [plain(150), plain(100)],
            vec![
                start_step(),
                synced("SIGKILL of the master", kill_d1, 5.0, 1),
            ],
        ),
        sc(
            "carrier",
            [plain(150), plain(100)],
            vec![
                start_step(),
                synced("carrier loss on the master", cable_d1_out, 6.0, 1),
                // d2's delayed GARP burst (garp_master_delay after its
                // takeover in the step before) falls in this window:
                // keepalived's oracle once sent it 0.35 s later than its
                // takeover predicts (ours on time) on a loaded runner.
                Step {
                    slack: 0.5,
                    ..step("carrier back", cable_d1_in, 5.5)
                },
            ],
        ),
        sc(
            // Someone deletes the VIP on the master: keepalived's
            // set_vrrp_backup() — BACKUP, priority 0, back to MASTER after
            // its skew (before the peer's longer one) and the VIP re-added.
            // The first MASTER's delayed GARP burst (garp_master_delay
            // after it, not cancelled by leaving MASTER, sent if MASTER
            // again: keepalived's and ours) is moved out of the window:
            // at the default 5 s it fell inside it or not by where the
            // master's advert phase put the deletion (2 to 3 s after the
            // first MASTER), a difference of start-up latency, not of
            // behaviour.
            "vip-deleted",
            [
                conf(150, "  garp_master_delay 10\n", v4, ""),
                conf(100, "  garp_master_delay 10\n", v4, ""),
            ],
            vec![
                start_step(),
                synced("the VIP deleted on the master", del_vip_d1, 2.6, 1),
            ],
        ),
        sc(
            "preempt",
            [plain(150), plain(100)],
            vec![
                start_step(),
                step("SIGTERM of the master", term_d1, 2.0),
                step("restart and preemption", restart_d1, 5.5),
            ],
        ),
        sc(
            "nopreempt",
            [
                conf(150, "  nopreempt\n", v4, ""),
                conf(100, "  nopreempt\n", v4, ""),
            ],
            vec![
                start_step(),
                step("SIGTERM of the master", term_d1, 2.0),
                step("restart without preemption", restart_d1, 5.5),
            ],
        ),
        sc(
            "preempt_delay",
            // 2.5 s, not a whole number of adverts: with a 3 s delay that
            // starts at an advert, the advert 3 s later lands on its expiry
            // and which side of it wins is a race (a second either way, in
            // keepalived's own runs too). The restart just after d2's advert
            // fixes the phase: delay from its next one, the last one accepted
            // 2 s later, the takeover 3.414 s after that.
            [conf(150, "  preempt_delay 2.5\n", v4, ""), plain(100)],
            vec![
                start_step(),
                step("SIGTERM of the master", term_d1, 2.0),
                synced("restart with preempt_delay", restart_d1, 8.5, 2),
            ],
        ),
        sc(
            // A track_file's number times its weight: 1 × -60 takes d1 below
            // d2; the file deleted (0) gives it back.
            "track-file",
            [
                format!(
                    "track_file tf {{\n  file @FLAG@\n  weight -60\n}}\n{}",
                    conf(150, "  track_file {\n    tf\n  }\n", v4, "")
                ),
                plain(100),
            ],
            vec![
                start_step(),
                // As the script scenario: the step starts at one advert or
                // the next after the start's, so the master's delayed GARP
                // burst (5 s after it took over) falls a second either way.
                Step {
                    slack: 1.0,
                    ..synced("the file says 1: weight -60", file_one, 6.0, 1)
                },
                Step {
                    slack: 1.0,
                    ..synced("the file is deleted (0)", flag_off, 6.0, 2)
                },
            ],
        ),
        sc(
            // With the FIFO's priority events (notify_priority_changes).
            "script",
            [
                format!(
                    "{script}{}",
                    conf(
                        150,
                        "  track_script {\n    chk\n  }\n",
                        v4,
                        "  vrrp_notify_fifo @FIFO@\n  vrrp_notify_priority_changes\n"
                    )
                ),
                plain(100),
            ],
            vec![
                start_step(),
                Step {
                    slack: 1.0,
                    ..synced("script fails: weight -60", flag_on, 6.0, 1)
                },
                Step {
                    slack: 1.0,
                    ..synced("script succeeds again", flag_off, 6.0, 2)
                },
            ],
        ),
        sc(
            // d1 advertises to a peer that is not there, so d2 never hears
            // it and is MASTER too: d1 receives d2's lower-priority adverts
            // every second (notify_master_rx_lower_pri, the FIFO's
            // MASTER_RX_LOWER_PRI, the lower-priority GARP bursts).
            "lower-prio",
            [
                conf(
                    150,
                    // No second master burst: 5 s after d1's takeover it
                    // would fall beside d2's first advert, on one side or the
                    // other of the lab's 0.5 s merging of bursts.
                    "  unicast_src_ip 192.0.2.1\n  unicast_peer {\n    192.0.2.9\n  }\n  \
                     notify_master_rx_lower_pri \"@NOTIFY@ x y RXLOWER\"\n  garp_master_delay 0\n",
                    v4,
                    "  vrrp_notify_fifo @FIFO@\n",
                ),
                conf(
                    100,
                    "  unicast_src_ip 192.0.2.2\n  unicast_peer {\n    192.0.2.1\n  }\n",
                    v4,
                    "",
                ),
            ],
            vec![
                // One at a time, so that d1's takeover and d2's first
                // advert as MASTER never fall together.
                Step {
                    slack: 0.5,
                    ..step("d1 starts", start_d1, 4.5)
                },
                // d2 is MASTER 3.6 s after its start (0.05-0.35 s): until
                // just after its first advert (the next is a second later).
                Step {
                    slack: 0.5,
                    ..step("d2 starts and is MASTER too", start_d2, 4.3)
                },
                // From just after one of them (d1's FIFO line for it).
                Step {
                    sync_kind: "fifo",
                    ..synced("lower-priority adverts", nothing, 2.4, 1)
                },
            ],
        ),
        sc(
            "unicast",
            [
                conf(
                    150,
                    "  unicast_src_ip 192.0.2.1\n  unicast_peer {\n    192.0.2.2\n  }\n",
                    v4,
                    "",
                ),
                conf(
                    100,
                    "  unicast_src_ip 192.0.2.2\n  unicast_peer {\n    192.0.2.1\n  }\n",
                    v4,
                    "",
                ),
            ],
            election(),
        ),
        sc(
            // A unicast backup's carrier goes and comes back: leaving FAULT
            // it first announces its own address (keepalived's
            // try_up_instance), then waits a full down interval.
            "unicast-fault",
            [
                conf(
                    150,
                    // No second master burst: it would fall in the last step
                    // at a time set by each daemon's own start-up time.
                    "  unicast_src_ip 192.0.2.1\n  unicast_peer {\n    192.0.2.2\n  }\n  garp_master_delay 0\n",
                    v4,
                    "",
                ),
                conf(
                    100,
                    "  unicast_src_ip 192.0.2.2\n  unicast_peer {\n    192.0.2.1\n  }\n",
                    v4,
                    "",
                ),
            ],
            vec![
                start_step(),
                step("carrier loss on the backup", cable_d2_out, 2.0),
                step("carrier back on the backup", cable_d2_in, 4.5),
            ],
        ),
        Scenario {
            name: "v3-ipv6",
            confs: [
                conf(150, "  version 3\n", "2001:db8::100/64", ""),
                conf(100, "  version 3\n", "2001:db8::100/64", ""),
            ],
            reload: None,
            steps: election(),
            vip: "2001:db8::100",
        },
        sc(
            "auth-pass",
            [
                conf(
                    150,
                    "  authentication {\n    auth_type PASS\n    auth_pass secret1\n  }\n",
                    v4,
                    "",
                ),
                conf(
                    100,
                    "  authentication {\n    auth_type PASS\n    auth_pass secret1\n  }\n",
                    v4,
                    "",
                ),
            ],
            election(),
        ),
        sc(
            "auth-ah",
            [
                conf(
                    150,
                    "  authentication {\n    auth_type AH\n    auth_pass secret1\n  }\n",
                    v4,
                    "",
                ),
                conf(
                    100,
                    "  authentication {\n    auth_type AH\n    auth_pass secret1\n  }\n",
                    v4,
                    "",
                ),
            ],
            election(),
        ),
        sc(
            // The FIFO's states again after a reload.
            "reload-same",
            [
                conf(
                    150,
                    "",
                    v4,
                    "  vrrp_notify_fifo @FIFO@\n  fifo_write_vrrp_states_on_reload\n",
                ),
                plain(100),
            ],
            vec![
                start_step(),
                synced("SIGHUP, nothing changed", hup_d1, 4.0, 1),
            ],
        ),
        sc(
            // use_vmac: the VIP lives on vrrp.51 (00:00:5e:00:01:33) on
            // whichever director is master.
            "vmac",
            [conf(150, "  use_vmac\n", v4, ""), conf(100, "  use_vmac\n", v4, "")],
            vec![
                start_step(),
                step("SIGTERM of the master", term_d1, 2.5),
                step("restart and preemption", restart_d1, 5.5),
            ],
        ),
        sc(
            // Two instances in a sync group move together: the master's
            // SIGTERM (both released), its restart (both preempted back).
            "sync-group",
            [
                sync_conf(150, "", "  vrrp_notify_fifo @FIFO@\n", ""),
                sync_conf(100, "", "  vrrp_notify_fifo @FIFO@\n", ""),
            ],
            vec![
                start_step(),
                step("SIGTERM of the master", term_d1, 2.5),
                step("restart and preemption of both", restart_d1, 5.5),
            ],
        ),
        sc(
            // A FAULT in one member (its unweighted script fails) takes
            // the whole group to FAULT; its return brings both back.
            "sync-group-fault",
            [
                sync_conf(
                    150,
                    "  track_script {\n    chk0\n  }\n",
                    "  vrrp_notify_fifo @FIFO@\n",
                    "vrrp_script chk0 {\n  script \"/bin/sh -c '! test -e @FLAG@'\"\n  interval 1\n}\n",
                ),
                sync_conf(100, "", "  vrrp_notify_fifo @FIFO@\n", ""),
            ],
            vec![
                start_step(),
                Step {
                    slack: 1.0,
                    ..synced("one member's script fails", flag_on, 5.0, 1)
                },
                Step {
                    slack: 1.0,
                    ..synced("the script succeeds again", flag_off, 6.0, 2)
                },
            ],
        ),
        Scenario {
            // A reload of a sync group of VMAC instances with nothing
            // changed (no transition, nothing sent but the master's
            // adverts), then one that removes VI_2: it releases its VIP
            // (priority 0) and its VMAC goes; the peer takes VI_2.
            name: "reload-groups",
            // (No FIFO: after these two reloads keepalived 2.2.7's line for
            // the deleted instance never reached the lab's reader; the
            // notify scripts are compared.)
            confs: [
                sync_conf_with(150, "  use_vmac\n", "  use_vmac\n", "", "", true),
                sync_conf_with(100, "  use_vmac\n", "  use_vmac\n", "", "", true),
            ],
            reload: Some(sync_conf_with(150, "  use_vmac\n", "", "", "", false)),
            steps: vec![
                start_step(),
                synced("SIGHUP, nothing changed", hup_d1, 4.0, 1),
                synced("reload without VI_2", reload_d1, 5.0, 1),
            ],
            vip: "192.0.2.100",
        },
        Scenario {
            name: "reload-prio",
            confs: [plain(150), plain(100)],
            reload: Some(plain(50)),
            steps: vec![
                start_step(),
                synced("reload with priority 50", reload_d1, 5.5, 1),
            ],
            vip: "192.0.2.100",
        },
    ]
}

/// One run: each step's summary.
fn run(s: &Scenario, pair: [Impl; 2], prefix: &str) -> (Vec<Summary>, String) {
    let mut lab = Lab::up(prefix);
    let flag = lab.path("flag").display().to_string();
    let mut s2 = Scenario {
        name: s.name,
        confs: [
            s.confs[0].replace("@FLAG@", &flag),
            s.confs[1].replace("@FLAG@", &flag),
        ],
        reload: s.reload.as_ref().map(|r| r.replace("@FLAG@", &flag)),
        steps: Vec::new(),
        vip: s.vip,
    };
    let mut out = Vec::new();
    for st in &s.steps {
        if let Some(n) = st.sync {
            lab.after(n, st.sync_kind);
            if st.sync_kind != "wire" {
                // The event's other observations (its script's line, its
                // FIFO line) land on either side of the one waited for:
                // the window starts clear of them all.
                sleep(Duration::from_millis(300));
            }
        }
        let t0 = lab.now();
        (st.act)(&mut lab, &s2, pair);
        // Each step watches for the same time from its start, however long
        // its action took.
        let left = t0 + st.watch - lab.now();
        if left > 0.0 {
            sleep(Duration::from_secs_f64(left));
        }
        out.push(summary(&lab.seen(), t0, t0 + st.watch));
    }
    s2.steps.clear();
    lab.stop_all();
    sleep(Duration::from_millis(300));
    let logs = format!(
        "--- d1 ({:?}) ---\n{}\n--- d2 ({:?}) ---\n{}",
        pair[0],
        lab.log(1, pair[0]),
        pair[1],
        lab.log(2, pair[1])
    );
    (out, logs)
}

/// Differences of `got` from the oracle `want`, one line each.
fn compare(want: &Summary, got: &Summary, slack: f64) -> Vec<String> {
    let mut diffs = Vec::new();
    let keys: std::collections::BTreeSet<_> = want.keys().chain(got.keys()).collect();
    for k in keys {
        let (node, kind) = *k;
        if node == 0 {
            continue;
        }
        let w = want.get(k).cloned().unwrap_or_default();
        let g = got.get(k).cloned().unwrap_or_default();
        let ws: Vec<&String> = w.iter().map(|x| &x.0).collect();
        let gs: Vec<&String> = g.iter().map(|x| &x.0).collect();
        if ws != gs {
            diffs.push(format!("d{node} {kind}: keepalived {ws:?}, got {gs:?}"));
            continue;
        }
        for ((what, tw), (_, tg)) in w.iter().zip(&g) {
            let tol = (tw * 0.10).max(0.25) + slack;
            if (tw - tg).abs() > tol {
                diffs.push(format!(
                    "d{node} {kind} {what}: at {tg:.3} s, keepalived {tw:.3} s"
                ));
            }
        }
    }
    diffs
}

/// Runs `f` for each of `items` (with its index, for a lab prefix of its
/// own) on a thread of its own, side by side; their results in order.
fn side_by_side<P: Send, T: Send>(
    items: impl IntoIterator<Item = P>,
    f: impl Fn(usize, P) -> T + Sync,
) -> Vec<T> {
    let f = &f;
    std::thread::scope(|sc| {
        let hs: Vec<_> = items
            .into_iter()
            .enumerate()
            .map(|(i, p)| sc.spawn(move || f(i, p)))
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    })
}

fn pairings() -> Vec<[Impl; 2]> {
    use Impl::{Keepalived as K, Ours as O};
    vec![[K, K], [O, O], [O, K], [K, O]]
}

/// Runs the named scenarios, the four pairings of each in parallel labs,
/// and reports every difference from keepalived's own run.
fn check(names: &[&str]) {
    let all = scenarios();
    let mut failures = Vec::new();
    for (idx, s) in all
        .iter()
        .enumerate()
        .filter(|(_, s)| names.contains(&s.name))
    {
        let results: Vec<_> = std::thread::scope(|sc| {
            let hs: Vec<_> = pairings()
                .into_iter()
                .enumerate()
                .map(|(i, pair)| {
                    let prefix = format!("kv{idx}x{i}");
                    let s = &*s;
                    sc.spawn(move || (pair, run(s, pair, &prefix)))
                })
                .collect();
            hs.into_iter().map(|h| h.join().unwrap()).collect()
        });
        let (mut oracle, mut ologs) = results[0].1.clone();
        // keepalived's own run is one sample: when ours and both mixed
        // pairs agree with each other and all three differ from it, it is
        // keepalived that did something else this time (seen: a restarted
        // keepalived dropping to BACKUP once a second after taking over),
        // so its run is repeated once and the pairings compared with that.
        let differs = |o: &Vec<Summary>, g: &Vec<Summary>| {
            s.steps
                .iter()
                .enumerate()
                .any(|(i, st)| !compare(&o[i], &g[i], st.slack).is_empty())
        };
        let others: Vec<&Vec<Summary>> = results[1..].iter().map(|r| &r.1 .0).collect();
        if others.iter().all(|g| differs(&oracle, g))
            && others.windows(2).all(|p| !differs(p[0], p[1]))
        {
            eprintln!(
                "{}: keepalived's run differs from all three others; repeating it: {oracle:?}",
                s.name
            );
            (oracle, ologs) = run(s, pairings()[0], &format!("kv{idx}x9"));
        }
        let (oracle, ologs) = (&oracle, &ologs);
        for (pair, (got, logs)) in &results[1..] {
            let before = failures.len();
            for (i, st) in s.steps.iter().enumerate() {
                let d = compare(&oracle[i], &got[i], st.slack);
                if !d.is_empty() {
                    failures.push(format!(
                        "{} [{}{}] step {:?}:\n  {}\n  oracle: {:?}\n  got:    {:?}",
                        s.name,
                        pair[0].letter(),
                        pair[1].letter(),
                        st.name,
                        d.join("\n  "),
                        oracle[i],
                        got[i]
                    ));
                }
            }
            // Always on a failure: the rare ones are seen in CI only, where
            // nothing can be asked for afterwards.
            if failures.len() > before || std::env::var_os("LAB_LOGS").is_some() {
                eprintln!("{logs}\n--- oracle ---\n{ologs}");
            }
        }
        eprintln!("{}: oracle {:?}", s.name, oracle);
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

macro_rules! lab_test {
    ($fn:ident, $($name:literal),+) => {
        #[test]
        #[cfg_attr(
            not(all(feature = "root", feature = "reference")),
            ignore = "needs root and keepalived 2.2.7 (--features root,reference)"
        )]
        fn $fn() {
            check(&[$($name),+]);
        }
    };
}

lab_test!(start_election_and_sigterm, "sigterm");
lab_test!(sigkill_of_the_master, "sigkill");
lab_test!(carrier_loss_and_return, "carrier");
lab_test!(a_vip_deleted_on_the_master_is_taken_back, "vip-deleted");
lab_test!(restart_and_preemption, "preempt");
lab_test!(nopreempt_keeps_the_new_master, "nopreempt");
lab_test!(preempt_delay_postpones_the_takeover, "preempt_delay");
lab_test!(a_vrrp_script_weight_moves_the_master, "script");
lab_test!(a_track_file_weight_moves_the_master, "track-file");
lab_test!(unicast_peers, "unicast");
lab_test!(
    a_unicast_backup_leaving_fault_announces_itself,
    "unicast-fault"
);
lab_test!(a_master_hearing_a_lower_priority_master, "lower-prio");
lab_test!(vrrpv3_over_ipv6, "v3-ipv6");
lab_test!(pass_authentication, "auth-pass");
lab_test!(ah_authentication, "auth-ah");
lab_test!(a_reload_with_nothing_changed, "reload-same");
lab_test!(a_reload_with_a_new_priority, "reload-prio");
lab_test!(a_sync_group_fails_over_together, "sync-group");
lab_test!(vmac_failover, "vmac");
lab_test!(a_reload_of_a_sync_group_of_vmacs, "reload-groups");
lab_test!(
    a_fault_in_one_member_takes_the_sync_group,
    "sync-group-fault"
);

/// With `use_vmac` the client's neighbour entry for the VIP is the VRRP
/// MAC whoever is master, so a failover changes nothing on the LAN: with
/// each daemon on each side, the entry the client learnt from the
/// master's gratuitous ARPs (`arp_accept` on) is 00:00:5e:00:01:33 before
/// and after the master's SIGTERM, and the VIP sits on the backup's VMAC.
/// (No probe: the director's answer would leave by its own interface,
/// with its own MAC, and teach the client that one — kernel routing,
/// under keepalived as under ours.)
#[test]
#[cfg_attr(
    not(all(feature = "root", feature = "reference")),
    ignore = "needs root and keepalived 2.2.7 (--features root,reference)"
)]
fn vmac_failover_keeps_the_client_s_neighbour_entry() {
    let v4 = "192.0.2.100/24";
    let confs = [
        conf(150, "  use_vmac\n", v4, ""),
        conf(100, "  use_vmac\n", v4, ""),
    ];
    let results: Vec<String> = side_by_side(pairings(), |i, pair| {
        let mut lab = Lab::up(&format!("kvm{i}"));
        for k in ["all", "eth0"] {
            let st = Command::new("ip")
                .args(["netns", "exec", &lab.ns(3), "sysctl", "-qw"])
                .arg(format!("net.ipv4.conf.{k}.arp_accept=1"))
                .status()
                .unwrap();
            assert!(st.success());
        }
        lab.start(1, pair[0], &confs[0]);
        sleep(Duration::from_millis(500));
        lab.start(2, pair[1], &confs[1]);
        let mut out = Vec::new();
        let up = lab.wait_for(6.0, |seen| {
            seen.iter()
                .any(|s| s.node == 1 && s.kind == "addr" && s.what == "+192.0.2.100")
        });
        out.push(format!("d1 master: {up}"));
        sleep(Duration::from_millis(500));
        out.push(format!(
            "before: {:?}",
            lab.client_neigh("192.0.2.100", false)
        ));
        lab.signal(1, "TERM");
        let moved = lab.wait_for(5.0, |seen| {
            seen.iter()
                .any(|s| s.node == 2 && s.kind == "addr" && s.what == "+192.0.2.100")
        });
        out.push(format!("d2 master: {moved}"));
        sleep(Duration::from_millis(500));
        out.push(format!(
            "after: {:?}",
            lab.client_neigh("192.0.2.100", false)
        ));
        let o = Command::new("ip")
            .args(["-n", &lab.ns(2), "-o", "addr", "show", "dev", "vrrp.51"])
            .output()
            .unwrap();
        let on_vmac = String::from_utf8_lossy(&o.stdout).contains("192.0.2.100/24");
        out.push(format!("on d2's vrrp.51: {on_vmac}"));
        lab.stop_all();
        format!(
            "[{}{}] {}",
            pair[0].letter(),
            pair[1].letter(),
            out.join(", ")
        )
    });
    let want = "d1 master: true, before: Some(\"00:00:5e:00:01:33\"), d2 master: true, \
                after: Some(\"00:00:5e:00:01:33\"), on d2's vrrp.51: true";
    for r in &results {
        assert!(r.ends_with(want), "{}", results.join("\n"));
    }
}

/// Director `n`'s unicast settings towards the other, with the source
/// check on.
fn unicast(n: u8) -> String {
    format!(
        "  unicast_src_ip 192.0.2.{n}\n  unicast_peer {{\n    192.0.2.{}\n  }}\n  check_unicast_src\n",
        3 - n
    )
}

/// keepalived #1603: a reload gives one director another address list.
/// keepalived discards every advert whose list differs, so its backup
/// takes over and both hold the VIP. Ours takes such an advert from a
/// configured peer as any advert, priorities compared: the side that
/// should be MASTER is, and where ours can hear the other, one director
/// alone holds 192.0.2.100 (docs/compat.md). Three reloads, unicast with
/// the source check on: d1 (MASTER, 150) given a second VIP; d2 (BACKUP,
/// 100) given it at 200 (it takes over), or at 50 (it stays BACKUP).
#[test]
#[cfg_attr(
    not(all(feature = "root", feature = "reference")),
    ignore = "needs root and keepalived 2.2.7 (--features root,reference)"
)]
fn a_reloaded_list_is_followed_from_a_peer_by_priority() {
    let two = "192.0.2.100/24\n    192.0.2.101/24";
    let v4 = "192.0.2.100/24";
    // (who is reloaded, its new priority).
    let cases = [(1usize, 150u8), (2, 200), (2, 50)];
    let results: Vec<(String, Vec<usize>, Option<String>)> = side_by_side(pairings(), |i, pair| {
        let mut holders = Vec::new();
        let mut logs = String::new();
        let mut mismatch = None;
        for (c, (who, prio)) in cases.into_iter().enumerate() {
            let mut lab = Lab::up(&format!("kvs{i}{c}"));
            lab.start(1, pair[0], &conf(150, &unicast(1), v4, ""));
            sleep(Duration::from_millis(500));
            lab.start(2, pair[1], &conf(100, &unicast(2), v4, ""));
            let up = lab.wait_for(6.0, |seen| {
                seen.iter()
                    .any(|s| s.node == 1 && s.kind == "addr" && s.what == "+192.0.2.100")
            });
            assert!(up, "d1 never MASTER");
            sleep(Duration::from_millis(1500));
            lab.rewrite(who, &conf(prio, &unicast(who as u8), two, ""));
            lab.signal(who, "HUP");
            // keepalived's backup takes over after its down
            // timer (3.6 s); then a few adverts either way.
            sleep(Duration::from_secs(8));
            holders.push((1..=2).filter(|n| lab.has_addr(*n, "192.0.2.100")).count());
            if mismatch.is_none() {
                mismatch = (1..=2).filter(|n| pair[n - 1] == Impl::Ours).find_map(|n| {
                    lab.status(n)["vrrp"][0]["address_mismatch"]
                        .as_str()
                        .map(|m| format!("d{n}: {m}"))
                });
            }
            logs += &format!("{}\n{}", lab.log(1, pair[0]), lab.log(2, pair[1]));
            lab.stop_all();
        }
        (
            format!("[{}{}] {logs}", pair[0].letter(), pair[1].letter()),
            holders,
            mismatch,
        )
    });
    let summary: Vec<String> = results
        .iter()
        .map(|(p, h, m)| format!("{}: holders {h:?}, mismatch {m:?}", &p[..4]))
        .collect();
    eprintln!("{}", summary.join("\n"));
    // Pairings kk, oo, ok, ko; the cases in order. keepalived anywhere
    // that must yield to a list it discards: both hold, as keepalived.
    let want = [[2, 2, 2], [1, 1, 1], [2, 1, 2], [1, 2, 1]];
    for ((p, holders, mismatch), want) in results.iter().zip(want) {
        assert_eq!(holders, &want, "{}\n{p}", summary.join("\n"));
        if !p.starts_with("[kk]") {
            assert!(mismatch.is_some(), "{}\n{p}", summary.join("\n"));
        }
    }
}

/// The address-list rule is no way in: a stranger on the LAN listing
/// another address for VRID 51 (no password, keepalived's default) at
/// priority 1, a second cluster's master on the same VRID at 200, and
/// the same sent by unicast from a host that is no peer, with the source
/// check on. With ours or keepalived on either director, one of them
/// holds 192.0.2.100 all along, as with keepalived on both.
#[test]
#[cfg_attr(
    not(all(feature = "root", feature = "reference")),
    ignore = "needs root and keepalived 2.2.7 (--features root,reference)"
)]
fn a_stranger_listing_other_addresses_moves_no_vip() {
    let v4 = "192.0.2.100/24";
    let results: Vec<(String, usize)> = side_by_side(pairings(), |i, pair| {
        let mut out = Vec::new();
        // (multicast, priority)
        for (c, (mcast, prio)) in [(true, 1u8), (true, 200), (false, 254)]
            .into_iter()
            .enumerate()
        {
            let extra = |n: u8| if mcast { String::new() } else { unicast(n) };
            let mut lab = Lab::up(&format!("kvx{i}{c}"));
            lab.start(1, pair[0], &conf(150, &extra(1), v4, ""));
            sleep(Duration::from_millis(500));
            lab.start(2, pair[1], &conf(100, &extra(2), v4, ""));
            let up = lab.wait_for(6.0, |seen| {
                seen.iter()
                    .any(|s| s.node == 1 && s.kind == "addr" && s.what == "+192.0.2.100")
            });
            assert!(up, "d1 never MASTER");
            sleep(Duration::from_millis(1500));
            let other = ["192.0.2.150"];
            let strangers = if mcast {
                vec![lab.stranger("224.0.0.18", prio, &other)]
            } else {
                vec![
                    lab.stranger("192.0.2.1", prio, &other),
                    lab.stranger("192.0.2.2", prio, &other),
                ]
            };
            // Forty samples over ten seconds.
            let mut wrong = 0;
            for _ in 0..40 {
                sleep(Duration::from_millis(250));
                let n = (1..=2).filter(|n| lab.has_addr(*n, "192.0.2.100")).count();
                wrong += usize::from(n != 1);
            }
            let sent: u64 = strangers.into_iter().map(|s| s.stop()).sum();
            assert!(sent >= 9, "the stranger sent {sent}");
            out.push((
                format!("{}:{prio} {wrong}/40", if mcast { "m" } else { "u" }),
                wrong,
            ));
            lab.stop_all();
        }
        let words: Vec<&str> = out.iter().map(|(w, _)| w.as_str()).collect();
        let worst = out.iter().map(|(_, n)| *n).max().unwrap_or(0);
        (
            format!(
                "[{}{}] {}",
                pair[0].letter(),
                pair[1].letter(),
                words.join(", ")
            ),
            worst,
        )
    });
    let lines: Vec<&str> = results.iter().map(|(l, _)| l.as_str()).collect();
    eprintln!("{}", lines.join("\n"));
    // A rule that lets the stranger in moves the VIP in 12 to 40 samples
    // of 40; keepalived on both directors, on a loaded CI runner, once
    // showed one such sample. Two are allowed to every pairing, kk's too.
    for (_, worst) in &results {
        assert!(
            *worst <= 2,
            "samples without exactly one holder:\n{}",
            lines.join("\n")
        );
    }
}

/// `use_vmac`: both directors stopped at once (SIGTERM to both), the
/// master still sends its priority-0 advert before it goes; and a
/// higher-priority director started beside a running master takes over
/// with its first GARP as soon after its start as keepalived's does.
#[test]
#[cfg_attr(
    not(all(feature = "root", feature = "reference")),
    ignore = "needs root and keepalived 2.2.7 (--features root,reference)"
)]
fn vmac_stop_of_both_and_a_restart_s_takeover_as_keepalived() {
    let v4 = "192.0.2.100/24";
    let confs = [
        conf(150, "  use_vmac\n", v4, ""),
        conf(100, "  use_vmac\n", v4, ""),
    ];
    let results: Vec<(String, f64)> =
        side_by_side([[Impl::Keepalived; 2], [Impl::Ours; 2]], |i, pair| {
            let mut lab = Lab::up(&format!("kvz{i}"));
            lab.start(1, pair[0], &confs[0]);
            sleep(Duration::from_millis(500));
            lab.start(2, pair[1], &confs[1]);
            let up = lab.wait_for(6.0, |seen| {
                seen.iter()
                    .any(|s| s.node == 1 && s.kind == "addr" && s.what == "+192.0.2.100")
            });
            sleep(Duration::from_millis(1500));
            let t = lab.now();
            lab.stop_all();
            sleep(Duration::from_millis(1000));
            let zero = lab.seen().iter().any(|s| {
                s.t >= t
                    && s.t < t + 0.5
                    && s.node == 1
                    && s.kind == "wire"
                    && s.what == "advert 51 0"
            });
            // d2 alone, MASTER; then d1 comes and takes over.
            lab.start(2, pair[1], &confs[1]);
            let d2 = lab.wait_for(8.0, |seen| {
                seen.iter().any(|s| {
                    s.t > t + 1.0 && s.node == 2 && s.kind == "addr" && s.what == "+192.0.2.100"
                })
            });
            sleep(Duration::from_millis(1500));
            let t0 = lab.now();
            lab.start(1, pair[0], &confs[0]);
            lab.wait_for(8.0, |seen| {
                seen.iter()
                    .any(|s| s.t > t0 && s.kind == "wire" && s.what.starts_with("garp"))
            });
            let garp = lab
                .seen()
                .iter()
                .find(|s| s.t > t0 && s.kind == "wire" && s.what.starts_with("garp"))
                .map_or(f64::NAN, |s| s.t - t0);
            lab.stop_all();
            (
                format!(
                    "[{}{}] d1 master: {up}, priority 0 sent: {zero}, d2 master alone: {d2}",
                    pair[0].letter(),
                    pair[1].letter(),
                ),
                garp,
            )
        });
    let summary: Vec<String> = results
        .iter()
        .map(|(r, g)| format!("{r}, first GARP {g:.3} s after the start"))
        .collect();
    eprintln!("{}", summary.join("\n"));
    for (r, _) in &results {
        assert!(
            r.ends_with("d1 master: true, priority 0 sent: true, d2 master alone: true"),
            "{}",
            summary.join("\n")
        );
    }
    let (k, o) = (results[0].1, results[1].1);
    assert!(
        o <= k + 0.3,
        "ours {o:.3} s, keepalived {k:.3} s\n{}",
        summary.join("\n")
    );
}

/// Live processes (not zombies) whose name is `comm`.
fn processes_named(comm: &str) -> usize {
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| std::fs::read_to_string(e.ok()?.path().join("stat")).ok())
        .filter(|s| {
            let (name, rest) = s.split_once(") ").unwrap_or_default();
            name.split_once(" (").is_some_and(|(_, n)| n == comm) && !rest.starts_with('Z')
        })
        .count()
}

/// Seventy instances whose notify script hangs (a mount that never
/// answers), each leaving a child of its own: 140 hung at start, 70 more
/// once they are MASTER. The tracking script of VI_1 still runs: its flag
/// removed puts VI_1 in FAULT (192.0.2.100 goes), put back brings it
/// back, twice, as with keepalived. At SIGTERM ours ends the hung scripts
/// and what they forked (keepalived leaves them: docs/security.md).
#[test]
#[cfg_attr(
    not(all(feature = "root", feature = "reference")),
    ignore = "needs root and keepalived 2.2.7 (--features root,reference)"
)]
fn hung_notify_scripts_hold_back_no_tracking_and_end_with_ours() {
    let results: Vec<(Impl, String, usize)> = side_by_side(
        [Impl::Keepalived, Impl::Ours],
        |i, imp| {
            let mut lab = Lab::up(&format!("kvh{i}"));
            let comm = format!("krhang{i}");
            let bin = lab.path(&comm);
            std::fs::copy("/bin/sleep", &bin).unwrap();
            let hang = lab.path("hang.sh");
            let b = bin.display();
            std::fs::write(&hang, format!("#!/bin/sh\n{b} 1000 &\nexec {b} 1000\n")).unwrap();
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&hang, std::fs::Permissions::from_mode(0o755)).unwrap();
            let flag = lab.path("flag");
            std::fs::write(&flag, "").unwrap();
            let mut conf = format!(
                "global_defs {{\n  router_id lab\n}}\n\
             vrrp_script chk {{\n  script \"/usr/bin/test -f {}\"\n  interval 1\n  weight 0\n}}\n\
             vrrp_instance VI_1 {{\n  state BACKUP\n  interface eth0\n  virtual_router_id 1\n  \
             priority 150\n  advert_int 1\n  track_script {{\n    chk\n  }}\n  \
             virtual_ipaddress {{\n    192.0.2.100/24\n  }}\n  notify {}\n}}\n",
                flag.display(),
                hang.display()
            );
            for k in 2..=70 {
                conf += &format!(
                "vrrp_instance VI_{k} {{\n  interface eth0\n  virtual_router_id {k}\n  \
                 priority 100\n  advert_int 1\n  virtual_ipaddress {{\n    198.51.100.{k}/32\n  }}\n  \
                 notify {}\n}}\n",
                hang.display()
            );
            }
            lab.start(1, imp, &conf);
            let vip = |lab: &Lab, want: bool, secs: f64| {
                let t0 = Instant::now();
                while t0.elapsed().as_secs_f64() < secs {
                    if lab.has_addr(1, "192.0.2.100") == want {
                        return true;
                    }
                    sleep(Duration::from_millis(100));
                }
                false
            };
            let mut out = vec![format!("master: {}", vip(&lab, true, 8.0))];
            // Every instance MASTER by now: its notify hangs too.
            sleep(Duration::from_secs(2));
            out.push(format!("hung: {}", processes_named(&comm) >= 128));
            for _ in 0..2 {
                std::fs::remove_file(&flag).unwrap();
                out.push(format!("fault: {}", vip(&lab, false, 6.0)));
                std::fs::write(&flag, "").unwrap();
                out.push(format!("back: {}", vip(&lab, true, 8.0)));
            }
            lab.signal(1, "TERM");
            lab.reap();
            sleep(Duration::from_secs(1));
            let left = processes_named(&comm);
            if left > 0 && imp == Impl::Ours {
                eprintln!("{}", lab.log(1, imp));
            }
            let _ = Command::new("pkill").args(["-KILL", "-x", &comm]).status();
            (imp, format!("[{}] {}", imp.letter(), out.join(", ")), left)
        },
    );
    let summary: Vec<String> = results
        .iter()
        .map(|(_, s, left)| format!("{s}, left after the stop: {left}"))
        .collect();
    eprintln!("{}", summary.join("\n"));
    for (imp, s, left) in &results {
        assert!(
            s.ends_with(
                "master: true, hung: true, fault: true, back: true, fault: true, back: true"
            ),
            "{}",
            summary.join("\n")
        );
        if *imp == Impl::Ours {
            assert_eq!(*left, 0, "{}", summary.join("\n"));
        }
    }
}

/// `track_process` in a network namespace, with keepalived 2.2.7 or ours
/// as the peer: the director tracking a process is ours (keepalived's proc
/// connector is refused outside the first namespace and its counts never
/// change there; ours reads /proc instead, docs/compat.md). The process
/// ends: -60 takes d1 below d2, which takes over; it runs again: d1
/// preempts.
#[test]
#[cfg_attr(
    not(all(feature = "root", feature = "reference")),
    ignore = "needs root and keepalived 2.2.7 (--features root,reference)"
)]
fn a_track_process_weight_moves_the_master() {
    let results: Vec<String> = side_by_side([Impl::Ours, Impl::Keepalived], |i, peer| {
        let mut lab = Lab::up(&format!("kvtp{i}"));
        let exe = lab.path(&format!("krtpsleep{i}"));
        std::fs::copy("/bin/sleep", &exe).unwrap();
        // Another test thread forking between our copy's close
        // and its exec holds a copy of the written file's
        // descriptor until it execs: the kernel then refuses to
        // run the file (ETXTBSY) for that moment.
        let spawn = || {
            let t0 = Instant::now();
            loop {
                match Command::new(&exe).arg("1000").spawn() {
                    Err(e)
                        if e.raw_os_error() == Some(26)
                            && t0.elapsed() < Duration::from_secs(5) =>
                    {
                        sleep(Duration::from_millis(20))
                    }
                    r => break r.unwrap(),
                }
            }
        };
        let mut p = spawn();
        let d1 = format!(
            "vrrp_track_process tp {{\n  process krtpsleep{i}\n  weight -60\n}}\n{}",
            conf(
                150,
                "  track_process {\n    tp\n  }\n",
                "192.0.2.100/24",
                ""
            )
        );
        lab.start(1, Impl::Ours, &d1);
        sleep(Duration::from_millis(500));
        lab.start(2, peer, &conf(100, "", "192.0.2.100/24", ""));
        let holds = |lab: &Lab, n: usize, secs: f64| {
            lab.wait_for(secs, |seen| {
                seen.iter()
                    .rev()
                    .find(|s| s.kind == "addr" && s.what == "+192.0.2.100")
                    .is_some_and(|s| s.node == n)
            })
        };
        let mut out = vec![format!("d1 first: {}", holds(&lab, 1, 6.0))];
        let _ = p.kill();
        let _ = p.wait();
        out.push(format!("d2 after the exit: {}", holds(&lab, 2, 6.0)));
        let mut p = spawn();
        out.push(format!("d1 after the return: {}", holds(&lab, 1, 6.0)));
        let _ = p.kill();
        let _ = p.wait();
        let log = lab.log(1, Impl::Ours);
        out.push(format!(
            "quorum lines: {}",
            log.matches("Quorum lost for tracked process tp").count()
                + log.matches("Quorum gained for tracked process tp").count()
        ));
        lab.stop_all();
        format!("[o{}] {}", peer.letter(), out.join(", "))
    });
    for r in &results {
        assert!(
            r.ends_with(
                "d1 first: true, d2 after the exit: true, d1 after the return: true, quorum lines: 2"
            ),
            "{}",
            results.join("\n")
        );
    }
}
