//! Benchmark (`cargo bench --bench vrrp_scale`, run by
//! `compat-tests/bench-vrrp-scale.sh`; no test harness): VRRP at scale and
//! under a flood, keepalived 2.2.7 and ours one after the other on the
//! same namespaces with the same generated configuration, figures printed
//! side by side.
//!
//! Two directors (d1 priority 150, d2 100) and an observer, each with one
//! interface on each of the links (bridges in a namespace of their own);
//! N instances, up to 200 a link (a VRID is unique per link and family),
//! each with an address of its own: the IPv4 documentation ranges hold
//! three links' worth (198.51.100.0/24, 203.0.113.0/24, 192.0.2.50-249), so
//! the instances of a fourth and fifth link are VRRPv3 over IPv6
//! (2001:db8:K::VRID) at the same interval. (The same address on several
//! links of one director made keepalived 2.2.7 spin: 810 ms/s and flaps.)
//! The directors' interfaces have fixed MACs, by which the observer tells
//! their adverts apart. For each case and daemon:
//! - start to final state: both started together, until d1 holds all N
//!   addresses;
//! - over `BENCH_WINDOW` seconds (30; 600 for the ten-minute run), from 8 s
//!   after the final state (past the second GARP burst): CPU per
//!   second of each director (every thread of every process of it, from
//!   schedstat), RssAnon (every process) at the end and its growth over
//!   the window, the advert spacing at the observer (tcpdump's kernel
//!   timestamps, p50/p99/max over every instance), and flaps (adverts from
//!   d2, priority-0 adverts from d1);
//! - SIGKILL of d1 to all N addresses on d2 (`ip monitor address`).
//!
//! The flood: a pair with 10 instances while the observer sends foreign
//! and malformed adverts as fast as one core can (`examples/vrrp_flood.rs`)
//! for `BENCH_FLOOD` seconds (60): each director's CPU, RssAnon before and
//! after, d1's advert spacing, state changes.
//!
//! `BENCH_CASES` picks cases (`1,50,200,1000,v3,flood`); `BENCH_IMPLS`
//! the daemons (`keepalived,ours`). Needs root, keepalived 2.2.7, tcpdump.

#[path = "../tests/common/mod.rs"]
mod common;

use common::lab::{must, sh as run};
use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::thread::sleep;
use std::time::{Duration, Instant};

const KEEPALIVED: &str = "/usr/sbin/keepalived";
const PER_LINK: usize = 200;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Impl {
    Keepalived,
    Ours,
}

fn env_num(k: &str, d: f64) -> f64 {
    std::env::var(k)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(d)
}

/// `sysctl -qw SETTING` in namespace `ns`.
fn sysctl(ns: &str, setting: &str) {
    must(&["ip", "netns", "exec", ns, "sysctl", "-qw", setting]);
}

/// The namespaces: `vsbr` (the bridges), `vsd1`, `vsd2`, `vsob`; gone
/// when dropped.
struct Net;

const NODES: [&str; 3] = ["vsd1", "vsd2", "vsob"];

impl Net {
    fn up(links: usize) -> Net {
        Net::down();
        must(&["ip", "netns", "add", "vsbr"]);
        sysctl("vsbr", "net.ipv6.conf.all.disable_ipv6=1");
        for k in 0..links {
            let br = format!("br{k}");
            must(&["ip", "-n", "vsbr", "link", "add", &br, "type", "bridge"]);
            must(&[
                "ip",
                "-n",
                "vsbr",
                "link",
                "set",
                &br,
                "type",
                "bridge",
                "stp_state",
                "0",
                "forward_delay",
                "0",
                "mcast_snooping",
                "0",
            ]);
            must(&["ip", "-n", "vsbr", "link", "set", &br, "up"]);
        }
        for (d, ns) in NODES.iter().enumerate() {
            must(&["ip", "netns", "add", ns]);
            sysctl(ns, "net.ipv6.conf.all.disable_ipv6=1");
            must(&["ip", "-n", ns, "link", "set", "lo", "up"]);
            for k in 0..links {
                let ifname = format!("eth{k}");
                let port = format!("p{d}x{k}");
                must(&[
                    "ip", "-n", ns, "link", "add", &ifname, "type", "veth", "peer", "name", &port,
                    "netns", "vsbr",
                ]);
                must(&[
                    "ip",
                    "-n",
                    "vsbr",
                    "link",
                    "set",
                    &port,
                    "master",
                    &format!("br{k}"),
                    "up",
                ]);
                if k >= 3 {
                    // VRRPv3 over IPv6 on this link: a link-local address.
                    for (key, v) in [("disable_ipv6", "0"), ("accept_dad", "0")] {
                        sysctl(ns, &format!("net.ipv6.conf.{ifname}.{key}={v}"));
                    }
                }
                let mac = format!("02:00:00:00:{:02x}:{:02x}", d + 1, k);
                must(&["ip", "-n", ns, "link", "set", &ifname, "address", &mac]);
                must(&["ip", "-n", ns, "link", "set", &ifname, "up"]);
                if d < 2 {
                    let a = format!("192.0.2.{}/32", 10 * k + d + 1);
                    must(&["ip", "-n", ns, "addr", "add", &a, "dev", &ifname]);
                }
            }
        }
        Net
    }

    fn down() {
        for ns in NODES.iter().chain(&["vsbr"]) {
            let _ = run(&["ip", "netns", "del", ns]);
        }
    }
}

impl Drop for Net {
    fn drop(&mut self) {
        Net::down();
    }
}

fn conf(n: usize, prio: u8, v3: bool, advert_int: &str) -> String {
    let mut c = format!(
        "global_defs {{\n  router_id bench{prio}\n{}}}\n",
        if v3 { "  vrrp_version 3\n" } else { "" }
    );
    for i in 0..n {
        let (link, vrid) = (i / PER_LINK, i % PER_LINK + 1);
        let (vip, version) = vip(link, vrid);
        c.push_str(&format!(
            "vrrp_instance VI_{i} {{\n  state BACKUP\n  interface eth{link}\n  virtual_router_id {vrid}\n  \
             priority {prio}\n  advert_int {advert_int}\n{version}  virtual_ipaddress {{\n    {vip}\n  }}\n}}\n"
        ));
    }
    c
}

/// Instance `vrid`'s address on link `link`, and the version line an IPv6
/// one needs.
fn vip(link: usize, vrid: usize) -> (String, &'static str) {
    match link {
        0 => (format!("198.51.100.{vrid}/32"), ""),
        1 => (format!("203.0.113.{vrid}/32"), ""),
        2 => (format!("192.0.2.{}/32", 49 + vrid), ""),
        k => (format!("2001:db8:{k}::{vrid}/128"), "  version 3\n"),
    }
}

/// Whether `a` (as `ip` prints it) is one of the instances' addresses.
fn is_vip(a: &str) -> bool {
    if let Some(x) = a.strip_prefix("192.0.2.") {
        return x.parse::<u8>().is_ok_and(|x| x >= 50);
    }
    a.starts_with("198.51.100.") || a.starts_with("203.0.113.") || a.starts_with("2001:db8:")
}

/// A daemon on a director.
struct Daemon {
    imp: Impl,
    dir: PathBuf,
    child: Child,
}

impl Daemon {
    fn start(imp: Impl, ns: &str, dir: &Path, conf: &str) -> Daemon {
        let _ = std::fs::remove_dir_all(dir);
        std::fs::create_dir_all(dir).unwrap();
        let cf = dir.join("keepalived.conf");
        std::fs::write(&cf, conf).unwrap();
        let bin = match imp {
            Impl::Keepalived => KEEPALIVED.to_string(),
            Impl::Ours => Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("target/release/keepalived")
                .display()
                .to_string(),
        };
        let log = std::fs::File::create(dir.join("daemon.log")).unwrap();
        let mut cmd = Command::new("ip");
        cmd.args(["netns", "exec", ns, &bin, "-n", "-l", "-P", "-f"])
            .arg(&cf)
            .arg("-p")
            .arg(dir.join("keepalived.pid"))
            .arg("-r")
            .arg(dir.join("vrrp.pid"))
            .arg("-c")
            .arg(dir.join("checkers.pid"));
        if imp == Impl::Ours {
            cmd.arg("--status-socket").arg(dir.join("status.sock"));
        }
        let child = cmd
            .env("TMPDIR", dir)
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .expect("start the daemon");
        Daemon {
            imp,
            dir: dir.to_path_buf(),
            child,
        }
    }

    fn pid(&self, file: &str) -> Option<i32> {
        std::fs::read_to_string(self.dir.join(file))
            .ok()?
            .trim()
            .parse()
            .ok()
    }

    /// Every process of the daemon.
    fn pids(&self) -> Vec<i32> {
        let mut v: Vec<i32> = ["keepalived.pid", "vrrp.pid", "checkers.pid"]
            .iter()
            .filter_map(|f| self.pid(f))
            .filter(|p| Path::new(&format!("/proc/{p}")).exists())
            .collect();
        v.sort_unstable();
        v.dedup();
        v
    }

    /// CPU time so far, ns, and times scheduled to run (wake-ups): every
    /// thread of every process.
    fn cpu(&self) -> (u64, u64) {
        common::cpu_of(&self.pids())
    }

    /// RssAnon, kB, of every process.
    fn rss_anon_kb(&self) -> u64 {
        common::rss_anon_kb_of(&self.pids())
    }

    /// SIGKILL: keepalived's parent stopped first (it would respawn its
    /// VRRP child), then the child, then the parent.
    fn kill(&mut self) {
        let parent = self.pid("keepalived.pid");
        if self.imp == Impl::Keepalived {
            if let Some(p) = parent {
                let _ = run(&["kill", "-STOP", &p.to_string()]);
            }
            if let Some(p) = self.pid("vrrp.pid") {
                let _ = run(&["kill", "-KILL", &p.to_string()]);
            }
        }
        if let Some(p) = parent {
            let _ = run(&["kill", "-KILL", &p.to_string()]);
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    fn stop(mut self) {
        if let Some(p) = self.pid("keepalived.pid") {
            let _ = run(&["kill", "-TERM", &p.to_string()]);
        }
        let end = Instant::now() + Duration::from_secs(15);
        while Instant::now() < end {
            if self.child.try_wait().ok().flatten().is_some() {
                return;
            }
            sleep(Duration::from_millis(50));
        }
        self.kill();
    }
}

/// The address on an `ip -o addr` / `ip -o monitor address` line.
fn addr_of(l: &str) -> Option<&str> {
    let mut w = l.split_whitespace();
    w.by_ref().find(|x| *x == "inet" || *x == "inet6")?;
    w.next()?.split('/').next()
}

/// The VIPs director `ns` holds.
fn vips(ns: &str) -> usize {
    let o = run(&["ip", "-n", ns, "-o", "addr", "show"]);
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .filter(|l| addr_of(l).is_some_and(is_vip))
        .count()
}

/// tcpdump on every interface of the observer, into a pcap file.
struct Capture {
    child: Child,
    file: PathBuf,
}

impl Capture {
    fn start(file: &Path, filter: &str) -> Capture {
        let child = Command::new("ip")
            .args([
                "netns", "exec", "vsob", "tcpdump", "-i", "any", "-Q", "in", "-s", "96", "-w",
            ])
            .arg(file)
            .arg(filter)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("tcpdump");
        sleep(Duration::from_millis(700));
        Capture {
            child,
            file: file.to_path_buf(),
        }
    }

    /// Stops it: (time, source, vrid, priority) of each advert.
    fn stop(mut self) -> Vec<Seen> {
        let _ = run(&["kill", "-INT", &self.child.id().to_string()]);
        let _ = self.child.wait();
        let b = std::fs::read(&self.file).unwrap_or_default();
        pcap_adverts(&b)
    }
}

/// An advert as the observer saw it: time, sender (director 1 or 2 by
/// its MAC, 0 for anyone else), link, VRID, priority.
type Seen = (f64, usize, u8, u8, u8);

/// The VRRP adverts of a pcap file of `-i any` (Linux cooked v1 or v2),
/// IPv4 and IPv6.
fn pcap_adverts(b: &[u8]) -> Vec<Seen> {
    let mut out = Vec::new();
    if b.len() < 24 {
        return out;
    }
    let le = b[0] == 0xd4 || b[0] == 0x4d;
    let u32at = |o: usize| {
        let x = [b[o], b[o + 1], b[o + 2], b[o + 3]];
        if le {
            u32::from_le_bytes(x)
        } else {
            u32::from_be_bytes(x)
        }
    };
    let nano = matches!(
        &b[0..4],
        [0x4d, 0x3c, 0xb2, 0xa1] | [0xa1, 0xb2, 0x3c, 0x4d]
    );
    let v2 = u32at(20) == 276;
    let l2 = if v2 { 20 } else { 16 };
    let mut o = 24;
    while o + 16 <= b.len() {
        let (sec, frac, caplen) = (u32at(o), u32at(o + 4), u32at(o + 8) as usize);
        let t = f64::from(sec) + f64::from(frac) / if nano { 1e9 } else { 1e6 };
        let p = &b[o + 16..(o + 16 + caplen).min(b.len())];
        o += 16 + caplen;
        // An IPv4 advert is 40 bytes and more, an IPv6 one 48.
        if p.len() < l2 + 28 {
            continue;
        }
        let (proto, mac) = if v2 {
            (u16::from_be_bytes([p[0], p[1]]), &p[12..18])
        } else {
            (u16::from_be_bytes([p[14], p[15]]), &p[6..12])
        };
        let who = if mac[..4] == [2, 0, 0, 0] && (1..=2).contains(&mac[4]) {
            usize::from(mac[4])
        } else {
            0
        };
        let ip = &p[l2..];
        let vrrp = match proto {
            0x0800 if ip[9] == 112 => &ip[usize::from(ip[0] & 0x0f) * 4..],
            0x86dd if ip.len() >= 48 && ip[6] == 112 => &ip[40..],
            _ => continue,
        };
        if vrrp.len() < 3 {
            continue;
        }
        out.push((t, who, mac[5], vrrp[1], vrrp[2]));
    }
    out
}

fn pct(v: &[f64], p: f64) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v[((v.len() - 1) as f64 * p).round() as usize]
}

/// Advert spacing of director `d`'s adverts (p50, p99, max, count), ms.
fn spacing(adverts: &[Seen], d: usize) -> (f64, f64, f64, usize) {
    let mut by: HashMap<(u8, u8), Vec<f64>> = HashMap::new();
    for &(t, who, link, vrid, _) in adverts {
        if who == d {
            by.entry((link, vrid)).or_default().push(t);
        }
    }
    let mut gaps = Vec::new();
    for ts in by.values_mut() {
        ts.sort_by(|a, b| a.partial_cmp(b).unwrap());
        gaps.extend(ts.windows(2).map(|w| (w[1] - w[0]) * 1e3));
    }
    gaps.sort_by(|a, b| a.partial_cmp(b).unwrap());
    (
        pct(&gaps, 0.5),
        pct(&gaps, 0.99),
        gaps.last().copied().unwrap_or(f64::NAN),
        gaps.len(),
    )
}

/// Adverts from the backup, and priority-0 adverts from the master.
fn flaps(adverts: &[Seen]) -> usize {
    adverts
        .iter()
        .filter(|a| a.1 == 2 || (a.1 == 1 && a.4 == 0))
        .count()
}

/// Watches `ip monitor address` on a director: each VIP added, with the
/// time it was read.
fn monitor(ns: &str) -> (Child, Arc<Mutex<Vec<Instant>>>) {
    let mut c = Command::new("ip")
        .args(["-n", ns, "-o", "monitor", "address"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("ip monitor");
    let out = c.stdout.take().unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s = seen.clone();
    std::thread::spawn(move || {
        for l in BufReader::new(out).lines().map_while(Result::ok) {
            if !l.starts_with("Deleted") && addr_of(&l).is_some_and(is_vip) {
                s.lock().unwrap().push(Instant::now());
            }
        }
    });
    (c, seen)
}

/// What a window measured of the two directors.
struct Load {
    /// CPU, ms a second.
    cpu: [f64; 2],
    /// Times scheduled to run, a second.
    wakes: [f64; 2],
    /// RssAnon at the end, kB.
    rss: [u64; 2],
    /// RssAnon's growth over the window, kB.
    growth: [i64; 2],
    /// d1's advert spacing.
    spacing: (f64, f64, f64, usize),
}

/// Measures d1 and d2 while `during` runs, with the adverts captured
/// (tcpdump filter `filter` into `pcap`).
fn window<T>(
    d1: &Daemon,
    d2: &Daemon,
    pcap: &Path,
    filter: &str,
    during: impl FnOnce() -> T,
) -> (Load, Vec<Seen>, T) {
    let cap = Capture::start(pcap, filter);
    let c0 = [d1.cpu(), d2.cpu()];
    let r0 = [d1.rss_anon_kb(), d2.rss_anon_kb()];
    let w0 = Instant::now();
    let t = during();
    let c1 = [d1.cpu(), d2.cpu()];
    let r1 = [d1.rss_anon_kb(), d2.rss_anon_kb()];
    let el = w0.elapsed().as_secs_f64();
    let adverts = cap.stop();
    let cpu = |i: usize| (c1[i].0 - c0[i].0) as f64 / 1e6 / el;
    let wakes = |i: usize| (c1[i].1 - c0[i].1) as f64 / el;
    let load = Load {
        cpu: [cpu(0), cpu(1)],
        wakes: [wakes(0), wakes(1)],
        rss: r1,
        growth: [r1[0] as i64 - r0[0] as i64, r1[1] as i64 - r0[1] as i64],
        spacing: spacing(&adverts, 1),
    };
    (load, adverts, t)
}

struct Figures {
    start_s: f64,
    load: Load,
    flaps: usize,
    failover_s: f64,
}

fn wait_until(secs: f64, f: impl Fn() -> bool) -> Option<f64> {
    let t0 = Instant::now();
    while t0.elapsed().as_secs_f64() < secs {
        if f() {
            return Some(t0.elapsed().as_secs_f64());
        }
        sleep(Duration::from_millis(20));
    }
    None
}

fn scale_case(imp: Impl, n: usize, v3: bool, advert_int: &str, secs: f64) -> Figures {
    let links = n.div_ceil(PER_LINK);
    let _net = Net::up(links);
    let base = std::env::temp_dir().join("kr-vrrp-scale");
    let t0 = Instant::now();
    let d1 = Daemon::start(imp, "vsd1", &base.join("d1"), &conf(n, 150, v3, advert_int));
    let d2 = Daemon::start(imp, "vsd2", &base.join("d2"), &conf(n, 100, v3, advert_int));
    let settle = 20.0 + n as f64 / 50.0;
    let got = wait_until(settle, || vips("vsd1") >= n);
    let start_s = got.map_or(f64::NAN, |_| t0.elapsed().as_secs_f64());
    // Past the start's transients (the second GARP burst comes 5 s after
    // MASTER) before the window opens.
    sleep(Duration::from_secs(8));
    let (load, adverts, ()) = window(
        &d1,
        &d2,
        &base.join("window.pcap"),
        "ip proto 112 or ip6 proto 112",
        || sleep(Duration::from_secs_f64(secs)),
    );
    let flaps = flaps(&adverts);
    let (mut mon, seen) = monitor("vsd2");
    sleep(Duration::from_millis(300));
    let mut d1 = d1;
    let k0 = Instant::now();
    d1.kill();
    let failover = wait_until(30.0, || seen.lock().unwrap().len() >= n).map_or(f64::NAN, |_| {
        seen.lock().unwrap()[n - 1].duration_since(k0).as_secs_f64()
    });
    let _ = mon.kill();
    let _ = mon.wait();
    d2.stop();
    Figures {
        start_s,
        load,
        flaps,
        failover_s: failover,
    }
}

struct Flood {
    sent: String,
    load: Load,
    changes: usize,
}

fn flood_case(imp: Impl, secs: f64) -> Flood {
    let n = 10;
    let _net = Net::up(1);
    let base = std::env::temp_dir().join("kr-vrrp-flood");
    let d1 = Daemon::start(imp, "vsd1", &base.join("d1"), &conf(n, 150, false, "1"));
    let d2 = Daemon::start(imp, "vsd2", &base.join("d2"), &conf(n, 100, false, "1"));
    let _ = wait_until(20.0, || vips("vsd1") >= n);
    sleep(Duration::from_secs(8));
    let bin = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/release/examples/vrrp_flood");
    let (load, adverts, out) = window(
        &d1,
        &d2,
        &base.join("flood.pcap"),
        "ip proto 112 and not src host 192.0.2.200",
        || {
            Command::new("ip")
                .args(["netns", "exec", "vsob", "taskset", "-c", "1"])
                .arg(&bin)
                .args([&format!("{secs}"), "11", "eth0"])
                .output()
                .expect("vrrp_flood")
        },
    );
    let held = vips("vsd1");
    let changes = flaps(&adverts) + n.saturating_sub(held);
    d1.stop();
    d2.stop();
    Flood {
        sent: String::from_utf8_lossy(&out.stdout).trim().to_string(),
        load,
        changes,
    }
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let window = env_num("BENCH_WINDOW", 30.0);
    let flood_s = env_num("BENCH_FLOOD", 60.0);
    let cases = std::env::var("BENCH_CASES").unwrap_or_else(|_| "1,50,200,1000,v3,flood".into());
    let impls: Vec<Impl> = std::env::var("BENCH_IMPLS")
        .unwrap_or_else(|_| "keepalived,ours".into())
        .split(',')
        .map(|s| {
            if s == "ours" {
                Impl::Ours
            } else {
                Impl::Keepalived
            }
        })
        .collect();
    println!(
        "VRRP at scale: window {window} s, flood {flood_s} s; CPU ms/s, RssAnon kB, spacing ms"
    );
    println!(
        "{:<16} {:<10} {:>8} {:>8} {:>8} {:>8} {:>7} {:>7} {:>8} {:>8} {:>8} {:>6} {:>9}",
        "case",
        "daemon",
        "start s",
        "cpu M",
        "cpu B",
        "rss M",
        "grow M",
        "grow B",
        "sp p50",
        "sp p99",
        "sp max",
        "flaps",
        "failover"
    );
    for case in cases.split(',') {
        if case == "flood" {
            for &imp in &impls {
                let f = flood_case(imp, flood_s);
                println!(
                    "{:<16} {:<10} cpu M {:.1} B {:.1} ms/s, rss M {} B {} kB, growth M {} B {} kB, d1 spacing p50 {:.1} p99 {:.1} max {:.1} ms ({} intervals), state changes {}, wake-ups/s M {:.0} B {:.0}; {}",
                    "flood (10)", format!("{imp:?}"), f.load.cpu[0], f.load.cpu[1], f.load.rss[0], f.load.rss[1], f.load.growth[0], f.load.growth[1],
                    f.load.spacing.0, f.load.spacing.1, f.load.spacing.2, f.load.spacing.3, f.changes,
                    f.load.wakes[0], f.load.wakes[1], f.sent
                );
            }
            continue;
        }
        let (n, v3, ai) = if case == "v3" {
            (200, true, "0.1")
        } else {
            (case.parse().expect("a case"), false, "1")
        };
        for &imp in &impls {
            let f = scale_case(imp, n, v3, ai, window);
            println!(
                "{:<16} {:<10} {:>8.2} {:>8.2} {:>8.2} {:>8} {:>7} {:>7} {:>8.1} {:>8.1} {:>8.1} {:>6} {:>9.3}   rss B {}",
                if v3 { format!("{n} v3 0.1s") } else { format!("{n}") },
                format!("{imp:?}"),
                f.start_s, f.load.cpu[0], f.load.cpu[1], f.load.rss[0], f.load.growth[0], f.load.growth[1],
                f.load.spacing.0, f.load.spacing.1, f.load.spacing.2, f.flaps, f.failover_s, f.load.rss[1]
            );
            println!(
                "{:<16} {:<10} wake-ups/s M {:.1} B {:.1}",
                "", "", f.load.wakes[0], f.load.wakes[1]
            );
        }
    }
}
