//! Benchmark (`cargo bench --bench bfd`, run by `compat-tests/bench-bfd.sh`;
//! no test harness): BFD detection and cost, keepalived 2.2.7 and ours one
//! after the other on the namespace lab (`tests/common/lab.rs`), with FRR's
//! `bfdd` as a third measuring peer in the same runs.
//!
//! - Detection: director 2 runs keepalived with a session to director 1
//!   (the measured daemon: keepalived, then ours) and one to FRR (on the
//!   lab's third namespace), at 3 x 50 ms and 3 x 300 ms. Each round the
//!   session is Up, then director 2 is killed (SIGKILL: no packet more) or
//!   its cable is cut (its bridge port down), at a random point of an
//!   interval; what is measured is the time from that moment to the Down
//!   line of director 1's daemon and of FRR (their logs polled every 2 ms),
//!   and director 1's "Expired after N ms" (since the last packet). Any
//!   Down of a session outside a round's event is a false Down.
//! - Cost: 200 sessions at 3 x 50 ms between the directors, both running
//!   the same daemon (each session from an address of its own): CPU per
//!   second of director 1's daemon (every thread of every process, from
//!   schedstat) over `BENCH_WINDOW` seconds (20) and of its BFD alone
//!   (keepalived's BFD process, our `bfd` thread), RssAnon, false Downs;
//!   then again with `BENCH_CHECKS` (20,000) TCP_CHECKs a second beside on
//!   director 1, in the same daemon (keepalived's checker through
//!   `../shared/tools/ipvs-shim`, ours with `--dry-run`) against loopback
//!   backends in its namespace (`examples/bench_backends`, which count the
//!   checks made).
//!
//! - Soak: a VRRP pair following each other by BFD at 3 x 100 ms on a link
//!   that drops 1 % of the frames each director receives (an nftables
//!   ingress rule on its interface), for `BENCH_SOAK` seconds (1800):
//!   ours with `bfd_takeover` on both directors, keepalived with the same
//!   sessions (it has no such extension), both labs at once. Counted: VRRP
//!   state changes and BFD Downs after the loss began, the time both
//!   directors held the VIP (from the kernel's address events), frames the
//!   rule dropped; then the master is killed and the takeover timed, still
//!   on the lossy link.
//!
//! `BENCH_ROUNDS` (5) rounds per case; `BENCH_IMPLS` (`keepalived,ours`);
//! `BENCH_CASES` (`detect,cost`; `soak` only when named). Needs root, keepalived 2.2.7 and FRR.

#[path = "../tests/common/mod.rs"]
mod common;

use common::frr::Frr;
use common::lab::{bfd_pair_conf, must, Impl, Lab};
use std::time::{Duration, Instant};

fn env_num(k: &str, d: f64) -> f64 {
    std::env::var(k)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(d)
}

fn wanted(k: &str, all: &str, what: &str) -> bool {
    std::env::var(k)
        .unwrap_or_else(|_| all.to_string())
        .split(',')
        .any(|x| x == what)
}

fn session(name: &str, neighbor: &str, source: &str, ms: u32) -> String {
    format!(
        "bfd_instance {name} {{\n  neighbor_ip {neighbor}\n  source_ip {source}\n  \
         min_rx {ms}\n  min_tx {ms}\n  multiplier 3\n}}\n"
    )
}

fn frr_conf(ms: u32) -> String {
    format!(
        "hostname bench-frr\nlog stdout debugging\nlog timestamp precision 6\ndebug bfd peer\n!\nbfd\n \
         peer 192.0.2.2 local-address 192.0.2.10\n  receive-interval {ms}\n  \
         transmit-interval {ms}\n  detect-multiplier 3\n !\n!\n"
    )
}

/// Counts of `needle` in director `n`'s log.
fn count(lab: &Lab, n: usize, imp: Impl, needle: &str) -> usize {
    lab.log(n, imp).matches(needle).count()
}

fn frr_downs(frr: &Frr) -> usize {
    std::fs::read_to_string(frr.dir.join("bfdd.log"))
        .unwrap_or_default()
        .matches("up -> down")
        .count()
}

fn frr_ups(frr: &Frr) -> usize {
    let l = std::fs::read_to_string(frr.dir.join("bfdd.log")).unwrap_or_default();
    l.matches("-> up").count()
}

/// Polls `f` every 2 ms for `secs`; the time it first held.
fn when(secs: f64, f: impl Fn() -> bool) -> Option<Instant> {
    let end = Instant::now() + Duration::from_secs_f64(secs);
    while Instant::now() < end {
        if f() {
            return Some(Instant::now());
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    None
}

/// `v` sorted: (median, max), ms.
fn stats(v: &mut [f64]) -> (f64, f64) {
    if v.is_empty() {
        return (f64::NAN, f64::NAN);
    }
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    (v[v.len() / 2], v[v.len() - 1])
}

struct Detect {
    ours: Vec<f64>,
    expired: Vec<f64>,
    frr: Vec<f64>,
    false_downs: usize,
    misses: usize,
}

fn expired_values(log: &str) -> Vec<f64> {
    let key = "(to_d2) Expired after ";
    log.lines()
        .filter_map(|l| {
            let r = &l[l.find(key)? + key.len()..];
            r.split_whitespace().next()?.parse().ok()
        })
        .collect()
}

/// One measured daemon on director 1, keepalived on director 2, FRR on
/// the third namespace: `rounds` events of kind `cut` (else kill).
fn detect(imp: Impl, ms: u32, cut: bool, rounds: usize) -> Detect {
    let mut lab = Lab::up("bbfd");
    let frr = Frr::start(&lab, &frr_conf(ms));
    let d1 = session("to_d2", "192.0.2.2", "192.0.2.1", ms);
    let d2 = session("to_d1", "192.0.2.1", "192.0.2.2", ms)
        + &session("to_frr", "192.0.2.10", "192.0.2.2", ms);
    lab.start(1, imp, &d1);
    let mut r = Detect {
        ours: Vec::new(),
        expired: Vec::new(),
        frr: Vec::new(),
        false_downs: 0,
        misses: 0,
    };
    let down = "(to_d2) Entering Down state";
    let up = "(to_d2) Entering Up state";
    for round in 0..rounds {
        lab.start(2, Impl::Keepalived, &d2);
        let ok = when(10.0, || {
            count(&lab, 1, imp, up) == round + 1 && frr_ups(&frr) > round
        });
        if ok.is_none() {
            r.misses += 1;
            lab.signal(2, "KILL");
            lab.reap();
            continue;
        }
        // Steady a while, then the event at a random point of an interval.
        std::thread::sleep(Duration::from_millis(1500 + u64::from(nanos() % ms)));
        let (d0, f0) = (count(&lab, 1, imp, down), frr_downs(&frr));
        if d0 != round || f0 != round {
            r.false_downs += 1;
        }
        let t0 = Instant::now();
        if cut {
            lab.carrier(2, false);
        } else {
            lab.signal(2, "KILL");
        }
        let seen = when(5.0 + f64::from(ms) * 3.0 / 1000.0, || {
            count(&lab, 1, imp, down) > d0
        });
        let fseen = when(5.0, || frr_downs(&frr) > f0);
        match (seen, fseen) {
            (Some(a), Some(b)) => {
                r.ours.push((a - t0).as_secs_f64() * 1e3);
                r.frr.push((b - t0).as_secs_f64() * 1e3);
            }
            _ => r.misses += 1,
        }
        if cut {
            lab.carrier(2, true);
            lab.signal(2, "KILL");
        }
        lab.reap();
    }
    r.expired = expired_values(&lab.log(1, imp));
    drop(frr);
    lab.stop_all();
    r
}

fn nanos() -> u32 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos())
}

/// The processes of director `n`'s daemon.
fn pids(lab: &Lab, n: usize) -> Vec<i32> {
    let set: std::collections::BTreeSet<i32> =
        ["keepalived.pid", "bfd.pid", "vrrp.pid", "checkers.pid"]
            .iter()
            .filter_map(|f| lab.pid_of(n, f))
            .collect();
    set.into_iter().collect()
}

/// What a cost run saw on director 1.
struct Cost {
    /// CPU ms/s of the whole daemon.
    cpu: f64,
    /// CPU ms/s of BFD alone (keepalived's BFD process, our `bfd` thread).
    bfd_cpu: f64,
    rss: u64,
    ups: usize,
    downs: usize,
    /// TCP_CHECKs a second the backends accepted.
    checks: f64,
}

/// Director 1's checker config: `n` TCP_CHECKed real servers at
/// `delay_loop 1` on loopback, 200 to a virtual server; the backends'
/// lists (`ADDR PORT tcp`), two halves.
fn checker_conf(n: usize) -> (String, [String; 2]) {
    let (mut conf, mut lists) = (String::new(), [String::new(), String::new()]);
    for v in 0..n.div_ceil(200) {
        conf += &format!(
            "virtual_server 192.0.2.{} {} {{\n  delay_loop 1\n  lb_algo rr\n  lb_kind NAT\n  protocol TCP\n",
            v % 250 + 1,
            80 + v / 250
        );
        for i in v * 200..((v + 1) * 200).min(n) {
            let a = format!("127.40.{}.{}", i / 250, i % 250 + 1);
            conf += &format!(
                "  real_server {a} 80 {{\n    TCP_CHECK {{\n      connect_timeout 5\n    }}\n  }}\n"
            );
            lists[i % 2] += &format!("{a} 80 tcp\n");
        }
        conf += "}\n";
    }
    (conf, lists)
}

/// TCP connections the backends of `logs` accepted, from their last
/// `@@COUNT` lines.
fn accepted(logs: &[std::path::PathBuf]) -> u64 {
    logs.iter()
        .filter_map(|l| {
            let s = std::fs::read_to_string(l).ok()?;
            let line = s.lines().rev().find(|l| l.starts_with("@@COUNT"))?;
            line.split_whitespace().nth(2)?.parse::<u64>().ok()
        })
        .sum()
}

/// `n_sessions` at 3 x 50 ms between the directors, both running `imp`,
/// and on director 1 `checks` TCP_CHECKs a second beside them (keepalived's
/// checker through the IPVS shim, ours with `--dry-run`).
fn cost(imp: Impl, n_sessions: usize, window: f64, checks: usize) -> Cost {
    let mut lab = Lab::up(if checks > 0 { "bbfdk" } else { "bbfdc" });
    let mut confs = [String::new(), String::new()];
    for i in 1..=n_sessions {
        let (a, b) = (format!("198.51.100.{i}"), format!("203.0.113.{i}"));
        confs[0] += &session(&format!("s{i}"), &b, &a, 50);
        confs[1] += &session(&format!("s{i}"), &a, &b, 50);
    }
    for (n, own, other) in [
        (1, "198.51.100", "203.0.113"),
        (2, "203.0.113", "198.51.100"),
    ] {
        let ns = lab.ns(n);
        let mut batch = String::new();
        for i in 1..=n_sessions {
            batch += &format!("address add {own}.{i}/32 dev eth0\n");
        }
        batch += &format!("route add {other}.0/24 dev eth0\n");
        let f = lab.dir.join(format!("addrs{n}"));
        std::fs::write(&f, batch).unwrap();
        must(&["ip", "-n", &ns, "-batch", &f.display().to_string()]);
    }
    let mut backends = Vec::new();
    let mut backend_logs = Vec::new();
    let mut extra: Vec<&str> = Vec::new();
    if checks > 0 {
        let (conf, lists) = checker_conf(checks);
        confs[0] += &conf;
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let bin = root.join("target/release/examples/bench_backends");
        for (k, list) in lists.iter().enumerate() {
            let f = lab.dir.join(format!("list{k}"));
            std::fs::write(&f, list).unwrap();
            let log = lab.dir.join(format!("list{k}.log"));
            let child = std::process::Command::new("ip")
                .args(["netns", "exec", &lab.ns(1)])
                .arg(&bin)
                .arg(&f)
                .args(["100000", "--any"])
                .stdout(std::fs::File::create(&log).unwrap())
                .stderr(std::process::Stdio::null())
                .spawn()
                .expect("bench_backends (cargo build --release --example bench_backends)");
            backends.push(child);
            let _ = when(10.0, || {
                std::fs::read_to_string(&log).is_ok_and(|s| s.contains("@@LISTENING"))
            });
            backend_logs.push(log);
        }
        match imp {
            Impl::Ours => extra.push("--dry-run"),
            Impl::Keepalived => {
                // No syslog: without a syslog daemon each line would go to
                // /dev/console, about 700 a second (the shim's README).
                extra.push("-G");
                let shim = lab.dir.join("shim.so");
                let src = root.join("../shared/tools/ipvs-shim/shim.c");
                must(&[
                    "gcc",
                    "-O2",
                    "-shared",
                    "-fPIC",
                    "-o",
                    &shim.display().to_string(),
                    &src.display().to_string(),
                    "-ldl",
                ]);
                lab.env
                    .push(("LD_PRELOAD".into(), shim.display().to_string()));
            }
        }
    }
    lab.start_with(1, imp, &confs[0], &extra);
    lab.env.clear();
    lab.start(2, imp, &confs[1]);
    let up = |n| {
        let l = lab.log(n, imp);
        (1..=n_sessions)
            .filter(|i| l.contains(&format!("(s{i}) Entering Up state")))
            .count()
    };
    let _ = when(30.0, || up(1) == n_sessions && up(2) == n_sessions);
    std::thread::sleep(Duration::from_secs(2));
    if checks > 0 {
        // The checks at their rate before measuring (a checker reads and
        // starts 20,000 real servers first).
        let _ = when(60.0, || {
            let a = accepted(&backend_logs);
            std::thread::sleep(Duration::from_secs(2));
            accepted(&backend_logs) - a > checks as u64
        });
    }
    let bfd_cpu = |lab: &Lab| match imp {
        Impl::Ours => common::cpu_of_threads(&pids(lab, 1), "bfd"),
        Impl::Keepalived => lab
            .pid_of(1, "bfd.pid")
            .map_or(0, |p| common::cpu_of(&[p]).0),
    };
    let downs0 = count(&lab, 1, imp, "Entering Down state");
    let (c0, b0, a0, t0) = (
        common::cpu_of(&pids(&lab, 1)).0,
        bfd_cpu(&lab),
        accepted(&backend_logs),
        Instant::now(),
    );
    std::thread::sleep(Duration::from_secs_f64(window));
    let (c1, b1, a1, el) = (
        common::cpu_of(&pids(&lab, 1)).0,
        bfd_cpu(&lab),
        accepted(&backend_logs),
        t0.elapsed().as_secs_f64(),
    );
    let rss = common::rss_anon_kb_of(&pids(&lab, 1));
    if checks > 0 && ((a1 - a0) as f64) < 0.5 * checks as f64 * el {
        // Too few checks made to say anything of the load: show why.
        let log = lab.log(1, imp);
        let tail: Vec<&str> = log
            .lines()
            .filter(|l| {
                ["IPVS", "ipvs", "Healthcheck", "exited", "check", "rror"]
                    .iter()
                    .any(|k| l.contains(k))
            })
            .rev()
            .take(8)
            .collect();
        eprintln!(
            "{imp:?}: {} checks made in {el:.0} s; its log ends:\n{}",
            a1 - a0,
            tail.join("\n")
        );
    }
    let downs = count(&lab, 1, imp, "Entering Down state") - downs0;
    let ups = up(1);
    lab.stop_all();
    for mut b in backends {
        let _ = b.kill();
        let _ = b.wait();
    }
    Cost {
        cpu: (c1 - c0) as f64 / 1e6 / el,
        bfd_cpu: (b1 - b0) as f64 / 1e6 / el,
        rss,
        ups,
        downs,
        checks: (a1 - a0) as f64 / el,
    }
}

/// What a soak saw.
struct Soak {
    changes: usize,
    bfd_downs: usize,
    both_held_s: f64,
    dropped: u64,
    takeover_s: Option<f64>,
}

/// The frames director `n`'s ingress rule dropped.
fn dropped(lab: &Lab, n: usize) -> u64 {
    let o = common::lab::sh(&[
        "ip",
        "netns",
        "exec",
        &lab.ns(n),
        "nft",
        "list",
        "table",
        "netdev",
        "loss",
    ]);
    let s = String::from_utf8_lossy(&o.stdout);
    s.split_whitespace()
        .skip_while(|w| *w != "packets")
        .nth(1)
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// Seconds during which both directors held `vip`, from the address
/// events after `from`.
fn both_held(lab: &Lab, vip: &str, from: f64, to: f64) -> f64 {
    // Replayed from the start to know who held it at `from`.
    let mut held = [false, false];
    let (mut total, mut since) = (0.0, None::<f64>);
    for s in lab.seen() {
        if s.kind != "addr" || s.what[1..] != *vip || !(1..=2).contains(&s.node) {
            continue;
        }
        held[s.node - 1] = s.what.starts_with('+');
        let both = held[0] && held[1];
        match (both, since) {
            (true, None) => since = Some(s.t.max(from)),
            (false, Some(t0)) => {
                if s.t > from {
                    total += s.t - t0;
                }
                since = None;
            }
            _ => {}
        }
    }
    if let Some(t0) = since {
        total += to - t0;
    }
    total
}

/// A pair on a 1 % lossy link for `secs`; then director 1 is killed.
fn soak(imp: Impl, secs: f64) -> Soak {
    let mut lab = Lab::up(match imp {
        Impl::Ours => "bsko",
        Impl::Keepalived => "bskk",
    });
    let extra = match imp {
        Impl::Ours => "  bfd_takeover to_peer\n",
        Impl::Keepalived => "",
    };
    lab.start(1, imp, &bfd_pair_conf(1, extra, true));
    let _ = lab.wait_for(8.0, |seen| {
        seen.iter()
            .any(|s| s.node == 1 && s.kind == "notify" && s.what.starts_with("VI_1 MASTER"))
    });
    lab.start(2, imp, &bfd_pair_conf(2, extra, true));
    let _ = when(10.0, || {
        count(&lab, 2, imp, "(to_peer) Entering Up state") >= 1
    });
    std::thread::sleep(Duration::from_secs(3));
    for n in 1..=2 {
        let rule = "table netdev loss {\n chain in {\n  type filter hook ingress device eth0 priority 0;\n  \
                    numgen random mod 100 < 1 counter drop\n }\n}\n";
        let f = lab.dir.join(format!("loss{n}.nft"));
        std::fs::write(&f, rule).unwrap();
        must(&[
            "ip",
            "netns",
            "exec",
            &lab.ns(n),
            "nft",
            "-f",
            &f.display().to_string(),
        ]);
    }
    let from = lab.now();
    let downs0: usize = (1..=2)
        .map(|n| count(&lab, n, imp, "Entering Down state"))
        .sum();
    std::thread::sleep(Duration::from_secs_f64(secs));
    let to = lab.now();
    let changes = lab
        .seen()
        .iter()
        .filter(|s| s.kind == "notify" && s.t > from && s.t <= to)
        .count();
    let bfd_downs = (1..=2)
        .map(|n| count(&lab, n, imp, "Entering Down state"))
        .sum::<usize>()
        - downs0;
    let both_held_s = both_held(&lab, "192.0.2.100", from, to);
    let dropped = dropped(&lab, 1) + dropped(&lab, 2);
    lab.after_advert(1);
    let t0 = lab.now();
    lab.signal(1, "KILL");
    let _ = lab.wait_for(8.0, |seen| {
        seen.iter().any(|s| {
            s.node == 2 && s.kind == "notify" && s.what.starts_with("VI_1 MASTER") && s.t > t0
        })
    });
    let takeover_s = lab
        .seen()
        .iter()
        .find(|s| {
            s.node == 2 && s.kind == "notify" && s.what.starts_with("VI_1 MASTER") && s.t > t0
        })
        .map(|s| s.t - t0);
    lab.stop_all();
    Soak {
        changes,
        bfd_downs,
        both_held_s,
        dropped,
        takeover_s,
    }
}

fn main() {
    if !nix::unistd::geteuid().is_root() {
        eprintln!("bfd bench: needs root (namespaces)");
        return;
    }
    let rounds = env_num("BENCH_ROUNDS", 5.0) as usize;
    let window = env_num("BENCH_WINDOW", 20.0);
    let impls: Vec<Impl> = [Impl::Keepalived, Impl::Ours]
        .into_iter()
        .filter(|i| {
            wanted(
                "BENCH_IMPLS",
                "keepalived,ours",
                match i {
                    Impl::Keepalived => "keepalived",
                    Impl::Ours => "ours",
                },
            )
        })
        .collect();
    if wanted("BENCH_CASES", "detect,cost", "detect") {
        println!("BFD detection, {rounds} rounds a case: from the event to the Down line, ms (median / max)");
        println!(
            "{:<8} {:<6} {:<10} {:>16} {:>16} {:>18} {:>6} {:>6}",
            "timers",
            "event",
            "director 1",
            "director 1",
            "FRR (same runs)",
            "d1 'Expired after'",
            "false",
            "missed"
        );
        for ms in [50u32, 300] {
            for cut in [false, true] {
                for &imp in &impls {
                    let mut r = detect(imp, ms, cut, rounds);
                    let (a, am) = stats(&mut r.ours);
                    let (f, fm) = stats(&mut r.frr);
                    let (e, em) = stats(&mut r.expired);
                    println!(
                        "{:<8} {:<6} {:<10} {:>7.1} / {:<7.1} {:>7.1} / {:<7.1} {:>8.0} / {:<8.0} {:>6} {:>6}",
                        format!("3x{ms}"),
                        if cut { "cut" } else { "kill" },
                        format!("{imp:?}"),
                        a,
                        am,
                        f,
                        fm,
                        e,
                        em,
                        r.false_downs,
                        r.misses
                    );
                }
            }
        }
    }
    if wanted("BENCH_CASES", "detect,cost", "soak") {
        let secs = env_num("BENCH_SOAK", 1800.0);
        println!(
            "\nBFD soak: a pair at 3 x 100 ms, 1 % of the frames each director receives dropped, {secs} s"
        );
        // Both labs at once: the same minutes of the same machine.
        let runs: Vec<(Impl, std::thread::JoinHandle<Soak>)> = impls
            .iter()
            .map(|&imp| (imp, std::thread::spawn(move || soak(imp, secs))))
            .collect();
        for (imp, h) in runs {
            let r = h.join().expect("soak");
            println!(
                "{:<10} VRRP changes {}, BFD Downs {}, both holding the VIP {:.3} s, frames dropped {}, \
                 takeover after SIGKILL of the master {}",
                format!("{imp:?}"),
                r.changes,
                r.bfd_downs,
                r.both_held_s,
                r.dropped,
                r.takeover_s.map_or("none".to_string(), |t| format!("{t:.3} s"))
            );
        }
    }
    if wanted("BENCH_CASES", "detect,cost", "cost") {
        let checks = env_num("BENCH_CHECKS", 20000.0) as usize;
        for beside in [0, checks] {
            println!(
                "\nBFD cost: 200 sessions at 3 x 50 ms, both directors the same daemon, {window} s, \
                 {beside} TCP_CHECKs a second offered beside on director 1"
            );
            for &imp in &impls {
                let r = cost(imp, 200, window, beside);
                println!(
                    "{:<10} CPU {:>7.1} ms/s (BFD {:>6.1}), RssAnon {:>6} kB, sessions Up {}/200, \
                     false Downs {}, checks/s {:.0}",
                    format!("{imp:?}"),
                    r.cpu,
                    r.bfd_cpu,
                    r.rss,
                    r.ups,
                    r.downs,
                    r.checks
                );
            }
        }
    }
}
