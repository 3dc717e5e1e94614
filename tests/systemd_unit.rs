//! Debian's keepalived.service runs us unchanged: its `ExecStart` line
//! with `NOTIFY_SOCKET` set gives READY=1; its `ExecReload` line gives
//! RELOADING=1 then READY=1; SIGTERM gives STOPPING=1. Pid files are
//! written and locked ("already running" for a second instance) and
//! removed at exit.

use std::os::unix::net::UnixDatagram;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Debian's unit, installed with its keepalived package (.ci/run installs it).
const DEBIAN_UNIT: &str = "/lib/systemd/system/keepalived.service";

fn unit_line(unit: &str, key: &str) -> String {
    unit.lines()
        .find_map(|l| l.strip_prefix(&format!("{key}=")))
        .unwrap_or_else(|| panic!("{key} missing from the unit"))
        .to_string()
}

fn recv_until(sock: &UnixDatagram, want: &str, seen: &mut Vec<String>) {
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut buf = [0u8; 4096];
    while Instant::now() < deadline {
        if let Ok(n) = sock.recv(&mut buf) {
            let msg = String::from_utf8_lossy(&buf[..n]).to_string();
            seen.push(msg.clone());
            if msg.lines().any(|l| l == want) {
                return;
            }
        }
    }
    panic!("never got {want}; got {seen:?}");
}

fn tmpdir() -> PathBuf {
    let d = std::env::temp_dir().join(format!("krs-unit-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
#[cfg_attr(
    not(feature = "reference"),
    ignore = "needs Debian's keepalived.service (keepalived installed): cargo test --features reference"
)]
fn debian_unit_lines_with_notify_socket() {
    let unit = std::fs::read_to_string(DEBIAN_UNIT).unwrap_or_else(|e| {
        panic!("{DEBIAN_UNIT}: {e} (apt-get install keepalived; .ci/run does)")
    });
    let exec_start = unit_line(&unit, "ExecStart");
    let exec_reload = unit_line(&unit, "ExecReload");
    let d = tmpdir();
    let conf = d.join("keepalived.conf");
    std::fs::write(
        &conf,
        "virtual_server 10.9.0.1 80 {\n lb_algo rr\n lb_kind NAT\n protocol TCP\n \
         real_server 127.0.0.1 80 {\n }\n}\n",
    )
    .unwrap();
    let (pid, cpid) = (d.join("keepalived.pid"), d.join("checkers.pid"));
    let sock_path = d.join("notify.sock");
    let sock = UnixDatagram::bind(&sock_path).unwrap();
    sock.set_read_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    // ExecStart with our binary in /usr/sbin/keepalived's place and the
    // test's DAEMON_ARGS (dry run: no IPVS here; pid files in the test dir).
    let daemon_args = format!(
        "--dry-run -l -f {} -p {} -c {}",
        conf.display(),
        pid.display(),
        cpid.display()
    );
    let line = exec_start.replace("$DAEMON_ARGS", &daemon_args);
    let mut words = line.split_whitespace();
    let prog = words.next().unwrap();
    assert!(prog.ends_with("/keepalived"), "{prog}");
    assert!(line.contains("--dont-fork"), "{line}");
    let mut child = Command::new(env!("CARGO_BIN_EXE_keepalived"))
        .args(words)
        .env("NOTIFY_SOCKET", &sock_path)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut seen = Vec::new();
    recv_until(&sock, "READY=1", &mut seen);
    let main_pid = child.id();
    assert_eq!(
        std::fs::read_to_string(&pid).unwrap().trim(),
        main_pid.to_string()
    );
    assert_eq!(
        std::fs::read_to_string(&cpid).unwrap().trim(),
        main_pid.to_string()
    );

    // A second instance with the same pid files refuses to start.
    let second = Command::new(env!("CARGO_BIN_EXE_keepalived"))
        .args(daemon_args.split_whitespace())
        .arg("--dont-fork")
        .output()
        .unwrap();
    assert_eq!(second.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&second.stderr).contains("already running"),
        "{}",
        String::from_utf8_lossy(&second.stderr)
    );

    // ExecReload.
    let reload = exec_reload.replace("$MAINPID", &main_pid.to_string());
    let mut r = reload.split_whitespace();
    let status = Command::new(r.next().unwrap()).args(r).status().unwrap();
    assert!(status.success());
    let at = seen.len();
    recv_until(&sock, "RELOADING=1", &mut seen);
    assert!(seen.last().unwrap().contains("MONOTONIC_USEC="), "{seen:?}");
    recv_until(&sock, "READY=1", &mut seen);
    assert!(seen.len() > at + 1);

    // systemd stops with SIGTERM.
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(main_pid as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    recv_until(&sock, "STOPPING=1", &mut seen);
    let st = child.wait().unwrap();
    assert!(st.success(), "{st:?}");
    assert!(!Path::new(&pid).exists() && !Path::new(&cpid).exists());
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn without_dont_fork_it_daemonises_and_its_pid_file_names_the_daemon() {
    let d = std::env::temp_dir().join(format!("krs-fork-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    let conf = d.join("keepalived.conf");
    std::fs::write(
        &conf,
        "virtual_server 10.9.0.2 80 {\n lb_algo rr\n lb_kind NAT\n protocol TCP\n}\n",
    )
    .unwrap();
    let (pid, cpid) = (d.join("k.pid"), d.join("c.pid"));
    let st = Command::new(env!("CARGO_BIN_EXE_keepalived"))
        .args(["--dry-run", "-f"])
        .arg(&conf)
        .arg("-p")
        .arg(&pid)
        .arg("-c")
        .arg(&cpid)
        .status()
        .unwrap();
    assert!(st.success(), "the foreground process exits 0 once forked");
    let deadline = Instant::now() + Duration::from_secs(10);
    let daemon: i32 = loop {
        if let Some(p) = std::fs::read_to_string(&pid)
            .ok()
            .and_then(|s| s.trim().parse().ok())
        {
            break p;
        }
        assert!(Instant::now() < deadline, "no pid file");
        std::thread::sleep(Duration::from_millis(50));
    };
    let daemon = nix::unistd::Pid::from_raw(daemon);
    assert!(nix::sys::signal::kill(daemon, None).is_ok(), "daemon alive");
    // Its own session, detached from ours.
    assert_eq!(nix::unistd::getsid(Some(daemon)).unwrap(), daemon);
    nix::sys::signal::kill(daemon, nix::sys::signal::Signal::SIGTERM).unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while pid.exists() {
        assert!(Instant::now() < deadline, "pid file not removed at stop");
        std::thread::sleep(Duration::from_millis(50));
    }
    std::fs::remove_dir_all(&d).unwrap();
}
