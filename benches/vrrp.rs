//! Benchmark (`cargo bench --bench vrrp`, run by `compat-tests/bench-vrrp.sh`;
//! no test harness): VRRP in the namespace lab, keepalived 2.2.7 and ours on the same namespaces in the
//! same run, figures printed side by side.
//!
//! 1. Failover: SIGTERM and SIGKILL of the master (just after one of its
//!    adverts), time until the backup holds the address; `BENCH_RUNS` runs
//!    (default 3) each.
//! 2. Advert spacing of a lone master over `BENCH_WINDOW` seconds (default
//!    30), from tcpdump's kernel timestamps: p50, p99 and the largest
//!    deviation from `advert_int`, with no checker load and with
//!    `BENCH_CHECKS` TCP checks per second (default 20,000: real servers at
//!    `delay_loop 1` against listeners in the client namespace) running in
//!    the same daemon (keepalived's checker through the IPVS shim, ours with
//!    the dry-run backend).

#[path = "../tests/common/mod.rs"]
mod common;

use common::lab::{Impl, Lab};
use std::process::{Command, Stdio};
use std::thread::sleep;
use std::time::Duration;

fn env_num(k: &str, d: usize) -> usize {
    std::env::var(k)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(d)
}

fn conf(prio: u8, extra: &str) -> String {
    format!(
        "global_defs {{\n  router_id bench\n}}\n{extra}\
         vrrp_instance VI_1 {{\n  state BACKUP\n  interface eth0\n  virtual_router_id 51\n  \
         priority {prio}\n  advert_int 1\n  virtual_ipaddress {{\n    192.0.2.100/24\n  }}\n}}\n"
    )
}

/// Seconds from the signal until d2 holds the address.
fn failover(imp: Impl, sig: &str, run: usize) -> f64 {
    let mut lab = Lab::up(&format!("kb{}{run}", &sig[..1].to_lowercase()));
    lab.start(1, imp, &conf(150, ""));
    sleep(Duration::from_millis(500));
    lab.start(2, imp, &conf(100, ""));
    assert!(lab.wait_for(8.0, |s| s
        .iter()
        .any(|e| e.node == 1 && e.kind == "addr" && e.what == "+192.0.2.100")));
    sleep(Duration::from_millis(1500));
    lab.after_advert(1);
    let t0 = lab.now();
    lab.signal(1, sig);
    let got = lab.wait_for(8.0, |s| {
        s.iter()
            .any(|e| e.t > t0 && e.node == 2 && e.kind == "addr" && e.what == "+192.0.2.100")
    });
    assert!(got, "{imp:?} {sig}: d2 never took the address");
    let t = lab
        .seen()
        .iter()
        .find(|e| e.t > t0 && e.node == 2 && e.kind == "addr" && e.what == "+192.0.2.100")
        .map(|e| e.t - t0)
        .unwrap();
    lab.stop_all();
    t
}

fn stats(mut v: Vec<f64>) -> (f64, f64, f64) {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    (v[0], v[v.len() / 2], v[v.len() - 1])
}

/// The advert intervals of d1, lone master, over `window` seconds, and the
/// checks per second the backends counted (0 without load).
fn spacing(imp: Impl, checks: usize, window: usize) -> (Vec<f64>, f64) {
    let mut lab = Lab::up(if checks > 0 { "kbsl" } else { "kbsn" });
    let mut extra = String::new();
    let mut backends = Vec::new();
    if checks > 0 {
        // The listeners: client addresses 192.0.2.10.. with 5,000 ports each,
        // one backends process per address (a process holds at most 20,000
        // descriptors here).
        let per = 5000;
        let mut vs = String::new();
        let addrs = checks.div_ceil(per);
        let bin = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("target/release/examples/bench_backends");
        for a in 0..addrs {
            let ip = format!("192.0.2.{}", 10 + a);
            if a > 0 {
                let _ = Command::new("ip")
                    .args([
                        "-n",
                        &lab.ns(3),
                        "addr",
                        "add",
                        &format!("{ip}/24"),
                        "dev",
                        "eth0",
                    ])
                    .status();
            }
            let mut list = String::new();
            for p in 0..per.min(checks - a * per) {
                list.push_str(&format!("{ip} {} tcp\n", 20000 + p));
            }
            let lf = lab.path(&format!("backends{a}.list"));
            std::fs::write(&lf, list).unwrap();
            backends.push(
                Command::new("ip")
                    .args(["netns", "exec", &lab.ns(3), "bash", "-c"])
                    .arg(format!(
                        "ulimit -n 20000; exec {} {}",
                        bin.display(),
                        lf.display()
                    ))
                    .stdout(std::fs::File::create(lab.path(&format!("backends{a}.out"))).unwrap())
                    .stderr(Stdio::null())
                    .spawn()
                    .expect("bench_backends"),
            );
        }
        sleep(Duration::from_secs(2));
        // 100 real servers per virtual server.
        for (k, chunk) in (0..checks).collect::<Vec<_>>().chunks(100).enumerate() {
            vs.push_str(&format!(
                "virtual_server 192.0.2.200 {} {{\n  delay_loop 1\n  lb_algo rr\n  lb_kind NAT\n  protocol TCP\n",
                1000 + k
            ));
            for &i in chunk {
                let (a, p) = (i / per, i % per);
                vs.push_str(&format!(
                    "  real_server 192.0.2.{} {} {{\n    TCP_CHECK {{\n      connect_timeout 3\n    }}\n  }}\n",
                    10 + a,
                    20000 + p
                ));
            }
            vs.push_str("}\n");
        }
        extra = vs;
    }
    let cap = lab.path("adverts.txt");
    let mut dump = Command::new("ip")
        .args([
            "netns",
            "exec",
            &lab.ns(0),
            "tcpdump",
            "-i",
            "br0",
            "-n",
            "-tt",
            "-l",
            "vrrp",
        ])
        .stdout(std::fs::File::create(&cap).unwrap())
        .stderr(Stdio::null())
        .spawn()
        .expect("tcpdump");
    let text = format!("{}{extra}", conf(150, ""));
    match imp {
        Impl::Ours => lab.start_with(1, imp, &text, &["--dry-run"]),
        Impl::Keepalived => {
            let shim = lab.path("shim.so");
            let ok = Command::new("gcc")
                .args(["-O2", "-shared", "-fPIC", "-o"])
                .arg(&shim)
                .arg("/work/shared/tools/ipvs-shim/shim.c")
                .arg("-ldl")
                .status()
                .map(|s| s.success())
                .unwrap_or(false);
            assert!(ok || checks == 0, "cannot build the IPVS shim");
            std::env::set_var("LD_PRELOAD", &shim);
            lab.start_with(1, imp, &text, &["-G"]);
            std::env::remove_var("LD_PRELOAD");
        }
    }
    sleep(Duration::from_secs(5 + window as u64));
    let _ = dump.kill();
    let _ = dump.wait();
    for mut b in backends {
        let _ = b.kill();
        let _ = b.wait();
    }
    lab.stop_all();
    // "@@COUNT SECONDS TCP HTTP" every second: the rate over the window,
    // summed over the backends' processes.
    let mut rate = 0.0;
    for a in 0..checks.div_ceil(5000) {
        let counts: Vec<(f64, f64)> =
            std::fs::read_to_string(lab.path(&format!("backends{a}.out")))
                .unwrap_or_default()
                .lines()
                .filter_map(|l| {
                    let f: Vec<&str> = l.strip_prefix("@@COUNT ")?.split_whitespace().collect();
                    Some((f.first()?.parse().ok()?, f.get(1)?.parse().ok()?))
                })
                .collect();
        if let (Some(x), Some(y)) = (
            counts.get(counts.len().saturating_sub(window + 1)),
            counts.last(),
        ) {
            if y.0 > x.0 {
                rate += (y.1 - x.1) / (y.0 - x.0);
            }
        }
    }
    let times: Vec<f64> = std::fs::read_to_string(&cap)
        .unwrap()
        .lines()
        .filter(|l| l.contains("192.0.2.1 > 224.0.0.18"))
        .filter_map(|l| l.split_whitespace().next()?.parse().ok())
        .collect();
    (times.windows(2).map(|w| w[1] - w[0]).collect(), rate)
}

fn spacing_line(name: &str, v: &[f64]) -> String {
    if v.is_empty() {
        return format!("{name:<28} no adverts");
    }
    let mut s = v.to_vec();
    s.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let p = |q: f64| s[((s.len() - 1) as f64 * q) as usize];
    let dev = s.iter().map(|x| (x - 1.0).abs()).fold(0.0, f64::max);
    format!(
        "{name:<28} n={:<4} p50 {:.4} s  p99 {:.4} s  max deviation {:.1} ms",
        s.len(),
        p(0.5),
        p(0.99),
        dev * 1000.0
    )
}

fn main() {
    let runs = env_num("BENCH_RUNS", 3);
    let window = env_num("BENCH_WINDOW", 30);
    let checks = env_num("BENCH_CHECKS", 20_000);
    println!("== failover, seconds from the signal to the address on the backup ({runs} runs)");
    for sig in ["TERM", "KILL"].into_iter().filter(|_| runs > 0) {
        let mut line = format!("SIG{sig:<5}");
        let mut medians = Vec::new();
        for imp in [Impl::Keepalived, Impl::Ours] {
            let v: Vec<f64> = (0..runs).map(|r| failover(imp, sig, r)).collect();
            let (lo, med, hi) = stats(v);
            medians.push(med);
            line += &format!("  {imp:?}: median {med:.3} (min {lo:.3}, max {hi:.3})");
        }
        line += &format!("  ours/keepalived {:.3}", medians[1] / medians[0]);
        println!("{line}");
    }
    println!("== advert spacing of a lone master, advert_int 1, {window} s");
    for load in [0, checks] {
        for imp in [Impl::Keepalived, Impl::Ours] {
            let (v, rate) = spacing(imp, load, window);
            println!(
                "{}  (checks counted by the backends: {rate:.0}/s)",
                spacing_line(&format!("{imp:?}, {load} checks/s offered"), &v)
            );
        }
    }
}
