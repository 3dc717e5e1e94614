//! The VRRP lab: two directors and a client on one bridge, each in a
//! network namespace of its own (`../shared/reference/vrrp.md` §21), with
//! keepalived 2.2.7 or ours on each director. What a scenario observes:
//! the notify scripts' lines (state changes with their time), every address
//! change on each director (`ip monitor address`), and the frames on the
//! bridge (tcpdump: adverts, GARPs, NAs). Addresses are the documentation
//! ranges only; nothing leaves the namespaces.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// Which daemon runs on a director.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Impl {
    /// keepalived 2.2.7.
    Keepalived,
    /// keepalived-rs.
    Ours,
}

impl Impl {
    /// One letter, for pairing names.
    pub fn letter(self) -> char {
        match self {
            Impl::Keepalived => 'k',
            Impl::Ours => 'o',
        }
    }
}

/// One thing seen, at a time (seconds since the lab's epoch).
#[derive(Debug, Clone, PartialEq)]
pub struct Seen {
    /// Seconds since [`Lab::epoch`].
    pub t: f64,
    /// Which director (1 or 2; 0 for a frame from elsewhere).
    pub node: usize,
    /// Where it was seen: `notify` (its scripts), `addr` (its addresses),
    /// `wire` (its frames on the bridge).
    pub kind: &'static str,
    /// What: `MASTER 150`, `+192.0.2.100`, `-192.0.2.100`, `advert 150`,
    /// `garp 192.0.2.100`, `na 2001:db8::100`.
    pub what: String,
}

/// Runs a command to its end (a missing program panics).
pub fn sh(args: &[&str]) -> std::process::Output {
    Command::new(args[0])
        .args(&args[1..])
        .output()
        .unwrap_or_else(|e| panic!("{args:?}: {e}"))
}

/// Runs a command that must succeed.
pub fn must(args: &[&str]) {
    let o = sh(args);
    assert!(
        o.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
}

fn unix_now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
}

/// A running lab.
pub struct Lab {
    /// Namespace prefix (short: interface names are derived from it).
    pub p: String,
    /// Scratch directory (configs, logs, pid files).
    pub dir: PathBuf,
    /// Unix time the observations count from.
    pub epoch: f64,
    daemons: [Option<Child>; 3],
    dying: Vec<Child>,
    observers: Vec<Child>,
    seen: Arc<Mutex<Vec<Seen>>>,
    /// Environment of the daemons started from now on.
    pub env: Vec<(String, String)>,
}

/// keepalived's binary.
pub const KEEPALIVED: &str = "/usr/sbin/keepalived";

impl Lab {
    /// Sets the lab up under prefix `p` (at most 6 characters).
    pub fn up(p: &str) -> Lab {
        assert!(p.len() <= 6);
        let dir = std::env::temp_dir().join(format!("kr-lab-{p}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let lab = Lab {
            p: p.to_string(),
            dir,
            epoch: unix_now(),
            daemons: [None, None, None],
            dying: Vec::new(),
            observers: Vec::new(),
            seen: Arc::new(Mutex::new(Vec::new())),
            env: Vec::new(),
        };
        lab.teardown_netns();
        let br = lab.ns(0);
        must(&["ip", "netns", "add", &br]);
        must(&["ip", "-n", &br, "link", "add", "br0", "type", "bridge"]);
        must(&[
            "ip",
            "-n",
            &br,
            "link",
            "set",
            "br0",
            "type",
            "bridge",
            "stp_state",
            "0",
            "forward_delay",
            "0",
            "mcast_snooping",
            "0",
        ]);
        must(&[
            "ip",
            "netns",
            "exec",
            &br,
            "sysctl",
            "-qw",
            "net.ipv6.conf.all.disable_ipv6=1",
        ]);
        must(&["ip", "-n", &br, "link", "set", "br0", "up"]);
        for n in 1..=3 {
            let ns = lab.ns(n);
            must(&["ip", "netns", "add", &ns]);
            for s in [
                "net.ipv6.conf.all.accept_dad=0",
                "net.ipv6.conf.default.accept_dad=0",
                "net.ipv6.conf.default.dad_transmits=0",
                "net.ipv6.conf.all.dad_transmits=0",
                "net.ipv6.conf.default.router_solicitations=0",
                "net.ipv6.conf.all.router_solicitations=0",
            ] {
                must(&["ip", "netns", "exec", &ns, "sysctl", "-qw", s]);
            }
            let port = lab.port(n);
            must(&[
                "ip", "-n", &ns, "link", "add", "eth0", "type", "veth", "peer", "name", &port,
                "netns", &br,
            ]);
            must(&["ip", "-n", &br, "link", "set", &port, "master", "br0", "up"]);
            must(&["ip", "-n", &ns, "link", "set", "lo", "up"]);
            must(&["ip", "-n", &ns, "link", "set", "eth0", "up"]);
            let host = if n == 3 { 10 } else { n };
            must(&[
                "ip",
                "-n",
                &ns,
                "addr",
                "add",
                &format!("192.0.2.{host}/24"),
                "dev",
                "eth0",
            ]);
            must(&[
                "ip",
                "-n",
                &ns,
                "addr",
                "add",
                &format!("2001:db8::{host}/64"),
                "dev",
                "eth0",
                "nodad",
            ]);
        }
        let mut lab = lab;
        lab.observe();
        lab
    }

    /// Namespace of node `n` (0 = the bridge, 1 and 2 the directors, 3 the client).
    pub fn ns(&self, n: usize) -> String {
        match n {
            0 => format!("{}br", self.p),
            3 => format!("{}cl", self.p),
            n => format!("{}d{n}", self.p),
        }
    }

    fn port(&self, n: usize) -> String {
        format!("{}p{n}", self.p)
    }

    fn teardown_netns(&self) {
        for n in 0..=3 {
            let _ = sh(&["ip", "netns", "del", &self.ns(n)]);
        }
    }

    /// Seconds since the epoch.
    pub fn now(&self) -> f64 {
        unix_now() - self.epoch
    }

    fn push(
        seen: &Arc<Mutex<Vec<Seen>>>,
        epoch: f64,
        node: usize,
        kind: &'static str,
        what: String,
    ) {
        seen.lock().unwrap().push(Seen {
            t: unix_now() - epoch,
            node,
            kind,
            what,
        });
    }

    /// Starts `args` and hands each line of its output, as it comes, to
    /// `each` (on a thread of its own); the process is stopped with the lab.
    fn watch(&mut self, args: &[&str], mut each: impl FnMut(&str) + Send + 'static) {
        let mut c = Command::new(args[0])
            .args(&args[1..])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("{args:?}: {e}"));
        let out = c.stdout.take().unwrap();
        std::thread::spawn(move || {
            for l in BufReader::new(out).lines().map_while(Result::ok) {
                each(&l);
            }
        });
        self.observers.push(c);
    }

    /// Address monitors on both directors, tcpdump on the bridge.
    fn observe(&mut self) {
        for n in 1..=2 {
            let (seen, epoch) = (self.seen.clone(), self.epoch);
            let ns = self.ns(n);
            self.watch(&["ip", "-n", &ns, "-o", "monitor", "address"], move |l| {
                // "Deleted 2: eth0    inet 192.0.2.100/24 ..." or "2: eth0 inet ..."
                let deleted = l.starts_with("Deleted");
                let mut w = l.split_whitespace();
                if w.by_ref().any(|x| x == "inet" || x == "inet6") {
                    if let Some(a) = w.next() {
                        let addr = a.split('/').next().unwrap_or(a);
                        let sign = if deleted { '-' } else { '+' };
                        Lab::push(&seen, epoch, n, "addr", format!("{sign}{addr}"));
                    }
                }
            });
        }
        let (seen, epoch) = (self.seen.clone(), self.epoch);
        let macs = [self.mac(1), self.mac(2)];
        // A frame is "TIME SRC-MAC > DST-MAC, ..." and, with -vv, its
        // protocol on indented lines after it.
        let mut src = String::new();
        let ns = self.ns(0);
        self.watch(
            &[
                "ip",
                "netns",
                "exec",
                &ns,
                "tcpdump",
                "-i",
                "br0",
                "-n",
                "-e",
                "-l",
                "-tt",
                "-vv",
                "vrrp or arp or (ip proto 51) or (icmp6 and ip6[40] == 136)",
            ],
            move |l| {
                if l.starts_with(|c: char| c.is_ascii_digit()) {
                    src = l.split_whitespace().nth(1).unwrap_or("").to_string();
                }
                if let Some(w) = wire_event(l) {
                    let mut node = macs.iter().position(|m| *m == src).map_or(0, |i| i + 1);
                    if node == 0 && w.starts_with("advert") {
                        // From a VMAC (both directors' source MAC): the
                        // director by its source address, 192.0.2.N.
                        node = l
                            .split_whitespace()
                            .find_map(|x| x.strip_prefix("192.0.2.")?.parse::<usize>().ok())
                            .filter(|n| (1..=2).contains(n))
                            .unwrap_or(0);
                    }
                    Lab::push(&seen, epoch, node, "wire", w);
                }
            },
        );
        // tcpdump needs a moment before it sees anything.
        std::thread::sleep(Duration::from_millis(300));
    }

    /// Starts `imp` on director `n` with `conf` (`@NOTIFY@` in it is
    /// replaced by this node's notify script).
    pub fn start(&mut self, n: usize, imp: Impl, conf: &str) {
        self.start_with(n, imp, conf, &[]);
    }

    /// [`Lab::start`] with more options.
    pub fn start_with(&mut self, n: usize, imp: Impl, conf: &str, extra: &[&str]) {
        self.reap();
        let d = self.dir.join(format!("d{n}"));
        std::fs::create_dir_all(&d).unwrap();
        let notify = d.join("notify.sh");
        let events = self.dir.join("events.log");
        std::fs::write(
            &notify,
            format!(
                "#!/bin/sh\necho \"$(date +%s.%N) {n} $*\" >> {}\n",
                events.display()
            ),
        )
        .unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&notify, std::fs::Permissions::from_mode(0o755)).unwrap();
        let conf = conf.replace("@NOTIFY@", &notify.display().to_string());
        // A notify FIFO, read into the observations as `fifo` lines.
        let conf = if conf.contains("@FIFO@") {
            let fifo = d.join("notify.fifo");
            if !fifo.exists() {
                must(&["mkfifo", &fifo.display().to_string()]);
                let seen = self.seen.clone();
                let epoch = self.epoch;
                let path = fifo.clone();
                std::thread::spawn(move || {
                    // Opened read-write: never waits for a writer, never sees EOF.
                    let Ok(f) = std::fs::OpenOptions::new()
                        .read(true)
                        .write(true)
                        .open(&path)
                    else {
                        return;
                    };
                    for l in BufReader::new(f).lines().map_while(Result::ok) {
                        Lab::push(&seen, epoch, n, "fifo", l);
                    }
                });
            }
            conf.replace("@FIFO@", &fifo.display().to_string())
        } else {
            conf
        };
        let cf = d.join("keepalived.conf");
        std::fs::write(&cf, conf).unwrap();
        let bin = match imp {
            Impl::Keepalived => {
                // `ip netns exec` only logs a missing program: say it here,
                // not as a peer that never answered.
                assert!(
                    std::path::Path::new(KEEPALIVED).exists(),
                    "{KEEPALIVED} is missing: the reference needs `apt-get install keepalived` (scripts/test.sh installs it as root)"
                );
                KEEPALIVED.to_string()
            }
            Impl::Ours => env!("CARGO_BIN_EXE_keepalived").to_string(),
        };
        let log = std::fs::File::create(d.join(format!("{:?}.log", imp))).unwrap();
        let child = Command::new("ip")
            .args(["netns", "exec", &self.ns(n), &bin, "-n", "-l", "-D", "-f"])
            .arg(&cf)
            .arg("-p")
            .arg(d.join("keepalived.pid"))
            .arg("-r")
            .arg(d.join("vrrp.pid"))
            .arg("-c")
            .arg(d.join("checkers.pid"))
            // The namespaces share /run: keepalived's BFD child would take
            // /run/bfd.pid on both directors.
            .arg("-b")
            .arg(d.join("bfd.pid"))
            .args(extra)
            // Ours only: the namespaces share /run, so each daemon gets a
            // status socket of its own.
            .args(match imp {
                Impl::Ours => vec![
                    "--status-socket".to_string(),
                    d.join("status.sock").display().to_string(),
                ],
                Impl::Keepalived => Vec::new(),
            })
            .env("TMPDIR", &d)
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .expect("start the daemon");
        self.daemons[n] = Some(child);
    }

    /// Writes director `n`'s configuration anew (for a reload).
    pub fn rewrite(&self, n: usize, conf: &str) {
        let d = self.dir.join(format!("d{n}"));
        let notify = d.join("notify.sh");
        let conf = conf.replace("@NOTIFY@", &notify.display().to_string());
        std::fs::write(d.join("keepalived.conf"), conf).unwrap();
    }

    /// The pid in director `n`'s pid file `file`.
    pub fn pid_of(&self, n: usize, file: &str) -> Option<i32> {
        std::fs::read_to_string(self.dir.join(format!("d{n}")).join(file))
            .ok()?
            .trim()
            .parse()
            .ok()
    }

    /// Sends `sig` (TERM, HUP, KILL...) to director `n`: KILL goes to the
    /// VRRP process first (keepalived's child; ours is one process), the
    /// others to the parent.
    pub fn signal(&mut self, n: usize, sig: &str) {
        let parent = self
            .pid_of(n, "keepalived.pid")
            .or_else(|| self.daemons[n].as_ref().map(|c| c.id() as i32));
        if sig == "KILL" {
            // keepalived's parent respawns a VRRP child that dies: stopped
            // first, it cannot before its own SIGKILL (a CI run saw the
            // respawned child come up, run notify BACKUP, then notify STOP
            // on the parent's death; a machine's death does neither).
            if let Some(p) = parent {
                let _ = sh(&["kill", "-STOP", &p.to_string()]);
            }
            if let Some(p) = self.pid_of(n, "vrrp.pid") {
                let _ = sh(&["kill", "-KILL", &p.to_string()]);
            }
        }
        if let Some(p) = parent {
            let _ = sh(&["kill", &format!("-{sig}"), &p.to_string()]);
        }
        // Not waited for here, so that a step's clock does not depend on
        // how long a daemon takes to exit; [`Lab::start`] and the end wait.
        if sig == "KILL" || sig == "TERM" {
            if let Some(c) = self.daemons[n].take() {
                self.dying.push(c);
            }
        }
    }

    /// Waits (10 s at most) for every signalled daemon to be gone.
    pub fn reap(&mut self) {
        let deadline = Instant::now() + Duration::from_secs(10);
        for mut c in self.dying.drain(..) {
            while Instant::now() < deadline {
                if c.try_wait().ok().flatten().is_some() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Stops both directors at once (SIGTERM), as a scenario's last step.
    pub fn stop_all(&mut self) {
        for n in 1..=2 {
            if let Some(p) = self.pid_of(n, "keepalived.pid") {
                let _ = sh(&["kill", "-TERM", &p.to_string()]);
            }
        }
        for n in 1..=2 {
            self.signal(n, "TERM");
        }
        self.reap();
    }

    /// Sets director `n`'s cable (its bridge port) down or up.
    pub fn carrier(&self, n: usize, up: bool) {
        must(&[
            "ip",
            "-n",
            &self.ns(0),
            "link",
            "set",
            &self.port(n),
            if up { "up" } else { "down" },
        ]);
    }

    /// Everything seen so far, the notify lines included, in time order.
    pub fn seen(&self) -> Vec<Seen> {
        let mut all = self.seen.lock().unwrap().clone();
        if let Ok(s) = std::fs::read_to_string(self.dir.join("events.log")) {
            for l in s.lines() {
                // "<unix> <node> INSTANCE VI_1 MASTER 150" (or "GROUP G1
                // MASTER 0"): the name is kept, a sync group's members and
                // the group itself report apart.
                let f: Vec<&str> = l.split_whitespace().collect();
                if f.len() >= 5 {
                    let t: f64 = f[0].parse().unwrap_or(0.0);
                    all.push(Seen {
                        t: t - self.epoch,
                        node: f[1].parse().unwrap_or(0),
                        kind: "notify",
                        what: format!("{} {} {}", f[3], f[4], f.get(5).unwrap_or(&"")),
                    });
                }
            }
        }
        all.sort_by(|a, b| a.t.partial_cmp(&b.t).unwrap());
        all
    }

    /// Waits until `pred` holds over what was seen (at most `secs`).
    pub fn wait_for(&self, secs: f64, pred: impl Fn(&[Seen]) -> bool) -> bool {
        let deadline = Instant::now() + Duration::from_secs_f64(secs);
        while Instant::now() < deadline {
            if pred(&self.seen()) {
                return true;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        false
    }

    /// Waits (2 s at most) for director `n`'s next advert on the wire, so
    /// that an action lands just after one: the peer's down timer then
    /// runs its full length from it, as in keepalived's own measurements.
    pub fn after_advert(&self, n: usize) {
        self.after(n, "wire");
    }

    /// A mail sink on `port` inside director `n`'s namespace: an SMTP
    /// dialogue answered for each connection, each mail's `Subject:` kept
    /// (with the time it came) in the list returned.
    pub fn smtp_sink(&self, n: usize, port: u16) -> Arc<Mutex<Vec<(f64, String)>>> {
        let got = Arc::new(Mutex::new(Vec::new()));
        let (g, ns, epoch) = (got.clone(), self.ns(n), self.epoch);
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            // The socket belongs to the namespace it is made in; this
            // thread alone enters it.
            let f = std::fs::File::open(format!("/run/netns/{ns}")).unwrap();
            nix::sched::setns(&f, nix::sched::CloneFlags::CLONE_NEWNET).unwrap();
            let l = std::net::TcpListener::bind(("0.0.0.0", port)).unwrap();
            tx.send(()).unwrap();
            for c in l.incoming() {
                let Ok(mut c) = c else { return };
                let _ = c.set_read_timeout(Some(Duration::from_secs(5)));
                let _ = c.write_all(b"220 lab ready\r\n");
                let mut r = BufReader::new(c.try_clone().unwrap());
                let mut data = false;
                let mut line = String::new();
                while r.read_line(&mut line).unwrap_or(0) > 0 {
                    let l = line.trim_end().to_string();
                    line.clear();
                    let reply: &[u8] = if data {
                        if let Some(subj) = l.strip_prefix("Subject: ") {
                            g.lock()
                                .unwrap()
                                .push((unix_now() - epoch, subj.to_string()));
                        }
                        if l == "." {
                            data = false;
                            b"250 queued\r\n"
                        } else {
                            continue;
                        }
                    } else if l.starts_with("DATA") {
                        data = true;
                        b"354 go on\r\n"
                    } else if l.starts_with("QUIT") {
                        let _ = c.write_all(b"221 bye\r\n");
                        break;
                    } else {
                        b"250 ok\r\n"
                    };
                    let _ = c.write_all(reply);
                }
            }
        });
        rx.recv_timeout(Duration::from_secs(5))
            .expect("the mail sink listens");
        got
    }

    /// Waits (2 s at most) for director `n`'s next observation of `kind`
    /// (`wire`: an advert).
    pub fn after(&self, n: usize, kind: &str) {
        let from = self.now();
        self.wait_for(2.0, |seen| {
            seen.iter().any(|s| {
                s.t > from
                    && s.node == n
                    && s.kind == kind
                    && (kind != "wire" || s.what.starts_with("advert"))
            })
        });
    }

    /// Whether director `n` has `addr` now.
    pub fn has_addr(&self, n: usize, addr: &str) -> bool {
        let o = sh(&["ip", "-n", &self.ns(n), "-o", "addr", "show", "dev", "eth0"]);
        String::from_utf8_lossy(&o.stdout)
            .split_whitespace()
            .any(|w| w.split('/').next() == Some(addr))
    }

    /// The MAC the client's neighbour table has for `addr` (after a probe
    /// when `probe`).
    pub fn client_neigh(&self, addr: &str, probe: bool) -> Option<String> {
        if probe {
            let _ = Command::new("ip")
                .args(["netns", "exec", &self.ns(3), "bash", "-c"])
                .arg(format!("echo x > /dev/udp/{addr}/9"))
                .output();
            std::thread::sleep(Duration::from_millis(300));
        }
        let o = sh(&["ip", "-n", &self.ns(3), "neigh", "show", addr]);
        let s = String::from_utf8_lossy(&o.stdout).to_string();
        let mut w = s.split_whitespace();
        w.find(|x| *x == "lladdr")
            .and_then(|_| w.next())
            .map(str::to_string)
    }

    /// The MAC of director `n`'s eth0.
    pub fn mac(&self, n: usize) -> String {
        let o = sh(&["ip", "-n", &self.ns(n), "-o", "link", "show", "eth0"]);
        let s = String::from_utf8_lossy(&o.stdout).to_string();
        let mut w = s.split_whitespace();
        w.find(|x| *x == "link/ether")
            .and_then(|_| w.next())
            .unwrap_or("")
            .to_string()
    }

    /// The log of director `n`.
    pub fn log(&self, n: usize, imp: Impl) -> String {
        std::fs::read_to_string(self.dir.join(format!("d{n}")).join(format!("{imp:?}.log")))
            .unwrap_or_default()
    }

    /// `keepalived --status --json` of ours on director `n`.
    pub fn status(&self, n: usize) -> serde_json::Value {
        let sock = self.dir.join(format!("d{n}")).join("status.sock");
        let o = Command::new(env!("CARGO_BIN_EXE_keepalived"))
            .args(["--status", "--json", "--status-socket"])
            .arg(&sock)
            .output()
            .expect("keepalived --status");
        serde_json::from_slice(&o.stdout).unwrap_or_else(|e| {
            panic!(
                "--status: {e}: {}{}",
                String::from_utf8_lossy(&o.stdout),
                String::from_utf8_lossy(&o.stderr)
            )
        })
    }

    /// Starts `tcpdump -ttlni eth0 -v FILTER` inside director `n`'s
    /// namespace for `secs` seconds (what the bridge cannot see: unicast
    /// between two of its ports); its output comes with `wait_with_output`.
    pub fn capture(&self, n: usize, filter: &str, secs: u32) -> Child {
        let c = Command::new("ip")
            .args(["netns", "exec", &self.ns(n), "timeout", &secs.to_string()])
            .args(["tcpdump", "-ttlni", "eth0", "-v", filter])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("tcpdump");
        // tcpdump needs a moment before it sees anything.
        std::thread::sleep(Duration::from_millis(500));
        c
    }

    /// The metrics text of ours on director `n`, asked over its status
    /// socket (the `metrics` line `metrics_listen` serves too).
    pub fn metrics(&self, n: usize) -> String {
        use std::io::Read;
        let sock = self.dir.join(format!("d{n}")).join("status.sock");
        let mut s = std::os::unix::net::UnixStream::connect(&sock).expect("status socket");
        s.write_all(b"metrics\n").unwrap();
        s.shutdown(std::net::Shutdown::Write).unwrap();
        let mut out = String::new();
        s.read_to_string(&mut out).unwrap();
        out
    }

    /// Writes a file in the lab directory (a flag for a vrrp_script).
    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        for mut c in self.dying.drain(..) {
            let _ = c.kill();
            let _ = c.wait();
        }
        for n in 1..=2 {
            if let Some(mut c) = self.daemons[n].take() {
                if let Some(p) = self.pid_of(n, "vrrp.pid") {
                    let _ = sh(&["kill", "-KILL", &p.to_string()]);
                }
                if let Some(p) = self.pid_of(n, "keepalived.pid") {
                    let _ = sh(&["kill", "-KILL", &p.to_string()]);
                }
                let _ = c.kill();
                let _ = c.wait();
            }
        }
        for c in &mut self.observers {
            let _ = c.kill();
            let _ = c.wait();
        }
        self.teardown_netns();
        if std::env::var_os("LAB_KEEP").is_none() {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

/// A tcpdump line as an event: `advert VRID PRIO`, `garp IP`, `na IP`.
fn wire_event(l: &str) -> Option<String> {
    // "... vrrp 192.0.2.1 > 224.0.0.18: VRRPv2, Advertisement, vrid 51, prio 150, ..."
    let number_after = |key: &str| {
        l.find(key).map(|i| {
            l[i + key.len()..]
                .chars()
                .take_while(char::is_ascii_digit)
                .collect::<String>()
        })
    };
    if l.contains("Advertisement") {
        if let (Some(v), Some(p)) = (number_after("vrid "), number_after("prio ")) {
            return Some(format!("advert {v} {p}"));
        }
    }
    if l.contains("ARP") && l.contains("Request who-has") {
        // A gratuitous ARP asks for its own address: "who-has X tell X".
        let mut w = l.split_whitespace();
        w.find(|x| *x == "who-has")?;
        let target = w.next()?.trim_end_matches(',').to_string();
        let sender = l.split_whitespace().skip_while(|x| *x != "tell").nth(1)?;
        return (sender.trim_end_matches(',') == target).then(|| format!("garp {target}"));
    }
    if l.contains("neighbor advertisement") {
        let i = l.find("tgt is ")?;
        let t: String = l[i + 7..]
            .chars()
            .take_while(|c| c.is_ascii_hexdigit() || *c == ':')
            .collect();
        return Some(format!("na {t}"));
    }
    None
}

/// One step's observations for comparing runs: per (node, kind) the
/// distinct things seen in order, each with the time (from `from`) it was
/// first seen in that run of repeats.
pub type Summary = BTreeMap<(usize, &'static str), Vec<(String, f64)>>;

/// What was seen between `from` and `to`, summarised. On the wire only
/// what changes counts: a node's advert whose priority differs from its
/// previous one (the periodic ones in between fall where the advert timer's
/// phase puts them), and the first frame of each announcement burst.
pub fn summary(seen: &[Seen], from: f64, to: f64) -> Summary {
    let mut m = Summary::new();
    // The last priority seen per director and VRID.
    let mut prio: BTreeMap<(usize, String), String> = BTreeMap::new();
    let mut last_announce: BTreeMap<(usize, String), f64> = BTreeMap::new();
    for s in seen.iter().filter(|s| s.t < to) {
        let (kind, what) = if s.kind == "wire" {
            if let Some(p) = s.what.strip_prefix("advert ") {
                let vrid = p.split(' ').next().unwrap_or("").to_string();
                if prio.get(&(s.node, vrid.clone())).map(String::as_str) == Some(p) {
                    continue;
                }
                prio.insert((s.node, vrid), p.to_string());
                ("wire", s.what.clone())
            } else {
                let key = (s.node, s.what.clone());
                let fresh = last_announce.get(&key).is_none_or(|t| s.t - t > 0.5);
                last_announce.insert(key, s.t);
                if !fresh {
                    continue;
                }
                ("announce", s.what.clone())
            }
        } else {
            (s.kind, s.what.clone())
        };
        if s.t < from {
            continue;
        }
        let v = m.entry((s.node, kind)).or_default();
        if kind == "wire" || kind == "announce" || v.last().map(|x| &x.0) != Some(&what) {
            v.push((what, s.t - from));
        }
    }
    // Several instances moving together (a sync group) do so in an order
    // set by microseconds between their timers, in keepalived's runs as in
    // ours: within 0.25 s (the comparison's own tolerance; keepalived sends a
    // forced member's announcements up to 0.1 s after the first's), one instance's lines (by VRID, address or name)
    // are compared in that key's order, in the places such lines hold
    // (a group's FIFO line keeps its own place).
    for ((_, kind), v) in m.iter_mut() {
        let mut i = 0;
        while i < v.len() {
            let start = v[i].1;
            let end = (i..v.len())
                .find(|&j| v[j].1 - start >= 0.25)
                .unwrap_or(v.len());
            let keyed: Vec<usize> = (i..end)
                .filter(|&j| instance_key(kind, &v[j].0).is_some())
                .collect();
            let mut items: Vec<(String, f64)> = keyed.iter().map(|&j| v[j].clone()).collect();
            items.sort_by_key(|x| instance_key(kind, &x.0));
            for (j, it) in keyed.into_iter().zip(items) {
                v[j] = it;
            }
            i = end;
        }
    }
    // Notify scripts are forked without waiting (keepalived's own order
    // between two scripts started together is the scheduler's): lines
    // within 0.2 s of each other count as one burst, compared in name
    // order. The FIFO keeps the daemon's own order.
    for ((_, kind), v) in m.iter_mut() {
        if *kind != "notify" {
            continue;
        }
        let mut i = 0;
        while i < v.len() {
            let start = v[i].1;
            let end = (i..v.len())
                .find(|&j| v[j].1 - start >= 0.2)
                .unwrap_or(v.len());
            v[i..end].sort_by(|a, b| a.0.cmp(&b.0));
            i = end;
        }
    }
    m
}

/// Which instance a line is about, for ordering lines that came
/// together: the VRID of an advert, the address added, removed or
/// announced, the instance of a FIFO line (none for a group's).
fn instance_key(kind: &str, what: &str) -> Option<String> {
    match kind {
        "wire" => what.split(' ').nth(1).map(str::to_string),
        "addr" => Some(what.trim_start_matches(['+', '-']).to_string()),
        "announce" => what.split(' ').nth(1).map(str::to_string),
        "fifo" if what.starts_with("INSTANCE") => what.split(' ').nth(1).map(str::to_string),
        _ => None,
    }
}

/// Writes `text` to `path`.
pub fn write(path: &Path, text: &str) {
    let mut f = std::fs::File::create(path).unwrap();
    f.write_all(text.as_bytes()).unwrap();
}

/// Two instances in sync group G1 (VI_1: VRID 51, 192.0.2.100; VI_2:
/// VRID 52, 192.0.2.101), both at `prio`; `extra1` goes inside VI_1,
/// `globals` in `global_defs`, `top` before the group.
pub fn sync_conf(prio: u8, extra1: &str, globals: &str, top: &str) -> String {
    sync_conf_with(prio, extra1, "", globals, top, true)
}

/// [`sync_conf`] with `extra2` inside VI_2 too, and VI_2 left out (of the
/// group and the file) unless `with_vi2`.
pub fn sync_conf_with(
    prio: u8,
    extra1: &str,
    extra2: &str,
    globals: &str,
    top: &str,
    with_vi2: bool,
) -> String {
    let inst = |name: &str, vrid: u8, vip: &str, extra: &str| {
        format!(
            "vrrp_instance {name} {{\n  state BACKUP\n  interface eth0\n  virtual_router_id {vrid}\n  \
             priority {prio}\n  advert_int 1\n{extra}  virtual_ipaddress {{\n    {vip}\n  }}\n  \
             notify @NOTIFY@\n}}\n"
        )
    };
    let (member, vi2) = if with_vi2 {
        ("    VI_2\n", inst("VI_2", 52, "192.0.2.101/24", extra2))
    } else {
        ("", String::new())
    };
    format!(
        "global_defs {{\n  router_id lab\n{globals}}}\n{top}\
         vrrp_sync_group G1 {{\n  group {{\n    VI_1\n{member}  }}\n  notify @NOTIFY@\n}}\n{}{vi2}",
        inst("VI_1", 51, "192.0.2.100/24", extra1),
    )
}

/// A director's config: `extra` goes inside the instance.
pub fn conf(prio: u8, extra: &str, vip: &str, globals: &str) -> String {
    format!(
        "global_defs {{\n  router_id lab\n{globals}}}\n\
         vrrp_instance VI_1 {{\n  state BACKUP\n  interface eth0\n  virtual_router_id 51\n  \
         priority {prio}\n  advert_int 1\n{extra}  virtual_ipaddress {{\n    {vip}\n  }}\n  \
         notify @NOTIFY@\n}}\n"
    )
}

/// Director `n`'s config for a pair following each other by BFD: director
/// 1 at priority 150, director 2 at 100, `extra` in director 2's instance
/// (both when `both`); a session at 100 ms x 3 between them.
pub fn bfd_pair_conf(n: usize, extra: &str, both: bool) -> String {
    let extra = if n == 2 || both { extra } else { "" };
    let peer = 3 - n;
    format!(
        "bfd_instance to_peer {{\n  neighbor_ip 192.0.2.{peer}\n  source_ip 192.0.2.{n}\n  \
         min_rx 100\n  min_tx 100\n  multiplier 3\n}}\n"
    ) + &conf(if n == 1 { 150 } else { 100 }, extra, "192.0.2.100/24", "")
}

/// A third host on the lab's LAN sending VRRPv2 adverts for VRID 51 once a
/// second from the client's namespace until dropped: what a stranger or a
/// second cluster on the same VRID puts on the wire.
pub struct Stranger {
    stop: Arc<std::sync::atomic::AtomicBool>,
    thread: Option<std::thread::JoinHandle<u64>>,
}

impl Lab {
    /// Starts a [`Stranger`] at 192.0.2.10 (the client) sending to `dst`
    /// (224.0.0.18 or a director's address) at `priority`, listing `addrs`.
    pub fn stranger(&self, dst: &str, priority: u8, addrs: &[&str]) -> Stranger {
        use keepalived::vrrp::packet::{ipv4_header, Advert, AuthType, IPPROTO_VRRP};
        use std::net::{IpAddr, Ipv4Addr, SocketAddr};
        let src = Ipv4Addr::new(192, 0, 2, 10);
        let dst: Ipv4Addr = dst.parse().unwrap();
        let vrrp = Advert {
            version: 2,
            vrid: 51,
            priority,
            adver_int_cs: 100,
            addrs: addrs.iter().map(|a| a.parse().unwrap()).collect(),
            auth: AuthType::None,
            auth_data: [0; 8],
        }
        .encode(IpAddr::V4(src), IpAddr::V4(dst));
        let mut pkt = ipv4_header(src, dst, vrrp.len(), 255, IPPROTO_VRRP).to_vec();
        pkt.extend_from_slice(&vrrp);
        let ns = std::fs::File::open(format!("/run/netns/{}", self.ns(3))).unwrap();
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::spawn(move || {
            // This thread only: the socket is made in the client's namespace.
            nix::sched::setns(ns, nix::sched::CloneFlags::CLONE_NEWNET).expect("setns");
            let s = socket2::Socket::new(
                socket2::Domain::IPV4,
                socket2::Type::RAW,
                Some(socket2::Protocol::from(255)),
            )
            .expect("raw socket");
            s.bind_device(Some(b"eth0")).expect("bind");
            let to: SocketAddr = (dst, 0).into();
            let mut sent = 0;
            while !flag.load(std::sync::atomic::Ordering::Relaxed) {
                if s.send_to_with_flags(&pkt, &to.into(), nix::libc::MSG_DONTROUTE)
                    .is_ok()
                {
                    sent += 1;
                }
                std::thread::sleep(Duration::from_secs(1));
            }
            sent
        });
        Stranger {
            stop,
            thread: Some(thread),
        }
    }
}

impl Stranger {
    /// Stops it; the adverts it sent.
    pub fn stop(mut self) -> u64 {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        self.thread.take().map_or(0, |t| t.join().unwrap())
    }
}

impl Drop for Stranger {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
    }
}
