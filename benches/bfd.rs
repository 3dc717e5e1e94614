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
//!   schedstat) over `BENCH_WINDOW` seconds (20), RssAnon, false Downs.
//!
//! `BENCH_ROUNDS` (5) rounds per case; `BENCH_IMPLS` (`keepalived,ours`);
//! `BENCH_CASES` (`detect,cost`). Needs root, keepalived 2.2.7 and FRR.

#[path = "../tests/common/mod.rs"]
mod common;

use common::frr::Frr;
use common::lab::{must, Impl, Lab};
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

/// 200 sessions at 3 x 50 ms between the directors, both running `imp`:
/// (CPU ms/s of director 1, RssAnon kB, sessions Up, false Downs).
fn cost(imp: Impl, n_sessions: usize, window: f64) -> (f64, u64, usize, usize) {
    let mut lab = Lab::up("bbfdc");
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
    lab.start(1, imp, &confs[0]);
    lab.start(2, imp, &confs[1]);
    let up = |n| {
        let l = lab.log(n, imp);
        (1..=n_sessions)
            .filter(|i| l.contains(&format!("(s{i}) Entering Up state")))
            .count()
    };
    let _ = when(20.0, || up(1) == n_sessions && up(2) == n_sessions);
    std::thread::sleep(Duration::from_secs(2));
    let downs0 = count(&lab, 1, imp, "Entering Down state");
    let (c0, t0) = (common::cpu_of(&pids(&lab, 1)).0, Instant::now());
    std::thread::sleep(Duration::from_secs_f64(window));
    let (c1, el) = (common::cpu_of(&pids(&lab, 1)).0, t0.elapsed().as_secs_f64());
    let rss = common::rss_anon_kb_of(&pids(&lab, 1));
    let downs = count(&lab, 1, imp, "Entering Down state") - downs0;
    let ups = up(1);
    lab.stop_all();
    ((c1 - c0) as f64 / 1e6 / el, rss, ups, downs)
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
    if wanted("BENCH_CASES", "detect,cost", "cost") {
        println!(
            "\nBFD cost: 200 sessions at 3 x 50 ms, both directors the same daemon, {window} s"
        );
        for &imp in &impls {
            let (cpu, rss, ups, downs) = cost(imp, 200, window);
            println!(
                "{:<10} CPU {:>7.1} ms/s, RssAnon {:>6} kB, sessions Up {ups}/200, false Downs {downs}",
                format!("{imp:?}"),
                cpu,
                rss
            );
        }
    }
}
