//! Shared by the tests that run the daemon as a process (dry run): its
//! output read line by line on threads, and waiting for a log line.

// Each test binary uses some of these.
#![allow(dead_code)]

pub mod frr;
pub mod lab;
pub mod snmpd;

use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{channel, Receiver};
use std::time::{Duration, Instant};

/// Lines of `r`, as they come.
pub fn lines_of(r: impl Read + Send + 'static) -> Receiver<String> {
    let (tx, rx) = channel();
    std::thread::spawn(move || {
        for l in BufReader::new(r).lines().map_while(Result::ok) {
            let _ = tx.send(l);
        }
    });
    rx
}

/// `keepalived --dry-run -n -l -f CONF` with `env`; its stdout and stderr
/// as line receivers.
pub fn spawn_dry_run(
    conf: &Path,
    env: &[(&str, &Path)],
) -> (Child, Receiver<String>, Receiver<String>) {
    let mut cmd = dry_run(conf);
    cmd.envs(env.iter().map(|(k, v)| (*k, *v)));
    spawn(cmd)
}

/// [`spawn_dry_run`] with more arguments: `args` then `path`.
pub fn spawn_dry_run_args(
    conf: &Path,
    args: &[&str],
    path: &Path,
) -> (Child, Receiver<String>, Receiver<String>) {
    let mut cmd = dry_run(conf);
    cmd.args(args).arg(path);
    spawn(cmd)
}

/// `keepalived --dry-run -n -l -f CONF`, to add arguments to.
pub fn dry_run(conf: &Path) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_keepalived"));
    cmd.args(["--dry-run", "-n", "-l", "-f"]).arg(conf);
    cmd
}

/// Starts `cmd` with its stdout and stderr as line receivers.
pub fn spawn(mut cmd: Command) -> (Child, Receiver<String>, Receiver<String>) {
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start keepalived");
    let out = lines_of(child.stdout.take().unwrap());
    let err = lines_of(child.stderr.take().unwrap());
    (child, out, err)
}

/// The lines up to and including the first that contains `needle`
/// (20 s at most).
pub fn until(rx: &Receiver<String>, needle: &str) -> Vec<String> {
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut seen = Vec::new();
    while Instant::now() < deadline {
        if let Ok(l) = rx.recv_timeout(Duration::from_millis(100)) {
            let hit = l.contains(needle);
            seen.push(l);
            if hit {
                return seen;
            }
        }
    }
    panic!("never logged {needle:?}; log: {seen:#?}");
}

/// `keepalived --status --json` against the daemon on `sock`.
pub fn status_json(sock: &Path) -> serde_json::Value {
    let out = Command::new(env!("CARGO_BIN_EXE_keepalived"))
        .args(["--status", "--json", "--status-socket"])
        .arg(sock)
        .output()
        .expect("run --status");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("JSON")
}

/// Polls the status document until `f` holds (15 s at most).
pub fn wait_status(
    sock: &Path,
    what: &str,
    f: impl Fn(&serde_json::Value) -> bool,
) -> serde_json::Value {
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let doc = status_json(sock);
        if f(&doc) {
            return doc;
        }
        assert!(Instant::now() < deadline, "{what}: {doc:#}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// The ports handed out below start here and stay under the kernel's
/// ephemeral range (32768 and up by default): no outgoing connection takes
/// one, and a check of a closed one cannot connect to itself (a connect
/// from the port it goes to is a TCP simultaneous open).
const TEST_PORTS: std::ops::Range<u16> = 10_000..32_000;

/// The next candidate port: one counter per test process, starting at a
/// place set by the process id so that test binaries run side by side
/// rarely meet.
fn next_test_port() -> u16 {
    use std::sync::atomic::{AtomicU32, Ordering};
    static NEXT: AtomicU32 = AtomicU32::new(u32::MAX);
    let span = u32::from(TEST_PORTS.end - TEST_PORTS.start);
    let start = (std::process::id() % 97) * (span / 97);
    let _ = NEXT.compare_exchange(u32::MAX, start, Ordering::Relaxed, Ordering::Relaxed);
    let n = NEXT.fetch_add(1, Ordering::Relaxed) % span;
    TEST_PORTS.start + n as u16
}

/// `N` distinct TCP ports free on 127.0.0.1 now, outside the ephemeral
/// range: each is bound once to prove it free, and all are held together
/// while they are chosen.
pub fn free_ports<const N: usize>() -> [u16; N] {
    let mut held: Vec<std::net::TcpListener> = Vec::with_capacity(N);
    for _ in 0..N * 1000 {
        if held.len() == N {
            break;
        }
        if let Ok(l) = std::net::TcpListener::bind(("127.0.0.1", next_test_port())) {
            held.push(l);
        }
    }
    assert_eq!(held.len(), N, "no {N} free ports in {TEST_PORTS:?}");
    std::array::from_fn(|i| held[i].local_addr().unwrap().port())
}

/// A listener on 127.0.0.1:`port`, a port [`free_ports`] chose or one a
/// test closed to take its backend down. A busy port is tried again for a
/// while: a socket just closed stays bound while a process another test
/// thread is spawning holds a copy of it (between fork and exec), which
/// made a bind right after [`free_ports`] fail in CI.
pub fn listen(port: u16) -> std::net::TcpListener {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        match std::net::TcpListener::bind(("127.0.0.1", port)) {
            Ok(l) => return l,
            Err(e) if e.kind() == std::io::ErrorKind::AddrInUse && Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(20))
            }
            Err(e) => panic!("listen on 127.0.0.1:{port}: {e}"),
        }
    }
}

/// A TCP port free on 127.0.0.1 now, outside the ephemeral range.
pub fn free_port() -> u16 {
    let [p] = free_ports();
    p
}

/// A dry-run daemon (`spawn_dry_run`) whose standard error is read for its
/// log; stopped with SIGTERM when dropped.
pub struct Daemon {
    /// The process.
    pub child: Child,
    /// Its log lines.
    pub err: Receiver<String>,
}

impl Daemon {
    /// `keepalived --dry-run -n -l -f CONF`.
    pub fn start(conf: &Path) -> Daemon {
        let (child, _out, err) = spawn_dry_run(conf, &[]);
        Daemon { child, err }
    }

    /// The log lines up to the first holding `needle` ([`until`]).
    pub fn log_until(&self, needle: &str) -> Vec<String> {
        until(&self.err, needle)
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(self.child.id() as i32),
            nix::sys::signal::Signal::SIGTERM,
        );
        let _ = self.child.wait();
    }
}

/// `GET /metrics` from the daemon's metrics listener on `port`: the whole
/// answer, which must be a 200.
pub fn metrics(port: u16) -> String {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).expect("metrics port");
    s.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    assert!(out.starts_with("HTTP/1.1 200 OK\r\n"), "{out}");
    out
}

/// CPU time so far (ns) and times scheduled to run (wake-ups): every
/// thread of every process of `pids` (schedstat).
pub fn cpu_of(pids: &[i32]) -> (u64, u64) {
    let (mut t, mut runs) = (0, 0);
    for p in pids {
        let Ok(tasks) = std::fs::read_dir(format!("/proc/{p}/task")) else {
            continue;
        };
        for task in tasks.flatten() {
            if let Ok(s) = std::fs::read_to_string(task.path().join("schedstat")) {
                // Run time, wait time, timeslices.
                let f: Vec<u64> = s
                    .split_whitespace()
                    .filter_map(|x| x.parse().ok())
                    .collect();
                if let [run, _, slices] = f[..] {
                    t += run;
                    runs += slices;
                }
            }
        }
    }
    (t, runs)
}

/// Run time, ns, of the threads named `name` of the processes `pids`.
pub fn cpu_of_threads(pids: &[i32], name: &str) -> u64 {
    let mut t = 0;
    for p in pids {
        let Ok(tasks) = std::fs::read_dir(format!("/proc/{p}/task")) else {
            continue;
        };
        for task in tasks.flatten() {
            let comm = std::fs::read_to_string(task.path().join("comm")).unwrap_or_default();
            if comm.trim_end() != name {
                continue;
            }
            if let Ok(s) = std::fs::read_to_string(task.path().join("schedstat")) {
                t += s
                    .split_whitespace()
                    .next()
                    .and_then(|x| x.parse::<u64>().ok())
                    .unwrap_or(0);
            }
        }
    }
    t
}

/// RssAnon, kB, of every process of `pids`.
pub fn rss_anon_kb_of(pids: &[i32]) -> u64 {
    pids.iter()
        .filter_map(|p| std::fs::read_to_string(format!("/proc/{p}/status")).ok())
        .filter_map(|s| {
            s.lines()
                .find(|l| l.starts_with("RssAnon:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
        })
        .sum()
}
