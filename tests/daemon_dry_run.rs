//! The daemon as a process, on the dry-run backend: start, SIGHUP with a
//! changed file, SIGHUP with a broken file, SIGTERM. What it prints is the
//! table it holds, so each step is checked on it.

mod common;

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use std::process::Child;
use std::sync::mpsc::Receiver;
use std::time::{Duration, Instant};

struct Daemon {
    child: Child,
    out: Receiver<String>,
    err: Receiver<String>,
}

impl Daemon {
    fn start(conf: &std::path::Path) -> Daemon {
        Daemon::start_env(conf, &[])
    }

    fn start_env(conf: &std::path::Path, env: &[(&str, &std::path::Path)]) -> Daemon {
        let (child, out, err) = common::spawn_dry_run(conf, env);
        Daemon { child, out, err }
    }

    /// The next table printed: the lines after a `# dry-run IPVS table` header.
    fn table(&self) -> Vec<String> {
        let deadline = Instant::now() + Duration::from_secs(20);
        let mut lines = Vec::new();
        let mut expect = None;
        while Instant::now() < deadline {
            let Ok(l) = self.out.recv_timeout(Duration::from_millis(100)) else {
                continue;
            };
            if l.starts_with("# dry-run IPVS table") {
                let n: usize = l
                    .split(", ")
                    .filter_map(|p| p.split_whitespace().find_map(|w| w.parse::<usize>().ok()))
                    .sum();
                expect = Some(n);
                lines.clear();
                if n == 0 {
                    return lines;
                }
                continue;
            }
            if let Some(n) = expect {
                lines.push(l);
                if lines.len() == n {
                    return lines;
                }
            }
        }
        panic!("no table printed; got {lines:?}");
    }

    fn stderr_until(&self, needle: &str) -> Vec<String> {
        common::until(&self.err, needle)
    }

    /// Writes `conf`, sends SIGHUP and returns the reload's log line.
    fn reload(&self, path: &std::path::Path, conf: &str, until: &str) -> Vec<String> {
        std::fs::write(path, conf).unwrap();
        self.signal(Signal::SIGHUP);
        self.stderr_until(until)
    }

    fn signal(&self, s: Signal) {
        kill(Pid::from_raw(self.child.id() as i32), s).expect("signal");
    }
}

const CONF: &str = "virtual_server 192.0.2.1 80 {
    lvs_sched rr
    lvs_method NAT
    protocol TCP
    real_server 127.0.0.1 8081 {
        weight 2
    }
    real_server 127.0.0.1 8082 {
    }
}
";

#[test]
fn start_reload_broken_reload_and_stop() {
    let dir = std::env::temp_dir().join(format!("karsd-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let conf = dir.join("keepalived.conf");
    std::fs::write(&conf, CONF).unwrap();
    let mut d = Daemon::start(&conf);
    assert_eq!(
        d.table(),
        vec![
            "-A -t 192.0.2.1:80 -s rr",
            "-a -t 192.0.2.1:80 -r 127.0.0.1:8081 -m -w 2",
            "-a -t 192.0.2.1:80 -r 127.0.0.1:8082 -m -w 1",
        ]
    );

    // One weight changed and one server removed: two operations.
    let reweighted = CONF
        .replace("weight 2", "weight 5")
        .replace("    real_server 127.0.0.1 8082 {\n    }\n", "");
    let log = d.reload(&conf, &reweighted, "reload:");
    assert!(
        log.iter()
            .any(|l| l.contains("reload: 2 IPVS operation(s), 0 error(s)")),
        "{log:#?}"
    );
    assert_eq!(
        d.table(),
        vec![
            "-A -t 192.0.2.1:80 -s rr",
            "-a -t 192.0.2.1:80 -r 127.0.0.1:8081 -m -w 5",
        ]
    );

    // A broken file: the errors are logged with file and line, the running
    // table stays.
    let broken = "virtual_server 192.0.2.1 80 {\n    lvs_sched\n}\n";
    let log = d.reload(&conf, broken, "keeping the running one");
    assert!(
        log.iter().any(|l| l.contains("keepalived.conf:2")),
        "the error names file and line: {log:#?}"
    );
    // Back to the running file: nothing to do.
    let log = d.reload(&conf, &reweighted, "reload:");
    assert!(
        log.iter()
            .any(|l| l.contains("reload: 0 IPVS operation(s)")),
        "{log:#?}"
    );
    assert_eq!(d.table().len(), 2);

    d.signal(Signal::SIGTERM);
    let log = d.stderr_until("at stop");
    assert!(
        log.iter()
            .any(|l| l.contains("ipvsadm -d -t 192.0.2.1:80 -r 127.0.0.1:8081")),
        "{log:#?}"
    );
    assert!(d.table().is_empty());
    let status = d.child.wait().unwrap();
    assert!(status.success(), "{status:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_storm_of_sighups_then_sigterm_during_a_reload() {
    let dir = std::env::temp_dir().join(format!("karsd-storm-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let conf = dir.join("keepalived.conf");
    std::fs::write(&conf, CONF).unwrap();
    let mut d = Daemon::start(&conf);
    assert_eq!(d.table().len(), 3);
    // 50 SIGHUPs within a second, the file changing under them: the
    // process stays up and ends on the last file's table.
    let final_conf = CONF.replace("weight 2", "weight 9");
    for i in 0..50 {
        let text = if i == 49 {
            final_conf.clone()
        } else {
            CONF.replace("weight 2", &format!("weight {}", 10 + i))
        };
        std::fs::write(&conf, text).unwrap();
        d.signal(Signal::SIGHUP);
        std::thread::sleep(Duration::from_millis(15));
    }
    // A reload after the last signal has run on the last file.
    let deadline = Instant::now() + Duration::from_secs(20);
    let want = "-a -t 192.0.2.1:80 -r 127.0.0.1:8081 -m -w 9";
    loop {
        let t = d.table();
        if t.iter().any(|l| l == want) {
            break;
        }
        assert!(Instant::now() < deadline, "last table: {t:?}");
    }
    assert!(d.child.try_wait().unwrap().is_none(), "still running");
    // SIGHUP then SIGTERM at once: the reload finishes, then an orderly
    // stop with keepalived's deletions.
    std::fs::write(&conf, CONF).unwrap();
    d.signal(Signal::SIGHUP);
    d.signal(Signal::SIGTERM);
    let log = d.stderr_until("at stop");
    assert!(
        log.iter().any(|l| l.contains("ipvsadm -D -t 192.0.2.1:80")),
        "{log:#?}"
    );
    let status = d.child.wait().unwrap();
    assert!(status.success(), "{status:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn sigusr1_writes_the_data_file_and_vrrp_signals_do_no_harm() {
    let dir = std::env::temp_dir().join(format!("karsd-usr1-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let [up_port, down_port] = common::free_ports();
    let up = common::listen(up_port);
    let conf = dir.join("keepalived.conf");
    let check = "TCP_CHECK {\n connect_timeout 1\n warmup 0\n }";
    std::fs::write(
        &conf,
        format!(
            "virtual_server 192.0.2.1 80 {{\n delay_loop 1\n lvs_sched rr\n protocol TCP\n \
             real_server 127.0.0.1 {up_port} {{\n weight 3\n {check}\n }}\n \
             real_server 127.0.0.1 {down_port} {{\n {check}\n }}\n}}\n"
        ),
    )
    .unwrap();
    let mut d = Daemon::start_env(&conf, &[("TMPDIR", &dir)]);
    assert_eq!(d.table().len(), 3);
    d.stderr_until("Removing service");
    // keepalived's parent passes these to VRRP only: they must not kill us.
    for sig in [
        nix::libc::SIGUSR2,
        nix::libc::SIGRTMIN() + 2,
        nix::libc::SIGRTMAX() - 1,
    ] {
        // SAFETY: kill(2) on our own child with a valid signal number.
        let rc = unsafe { nix::libc::kill(d.child.id() as i32, sig) };
        assert_eq!(rc, 0);
    }
    d.stderr_until("no VRRP instance runs; nothing to write");
    d.signal(Signal::SIGUSR1);
    d.stderr_until("Printing checker data");
    let path = dir.join("keepalived_check.data");
    let text = std::fs::read_to_string(&path).expect("data file");
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(
        std::fs::metadata(&path).unwrap().permissions().mode() & 0o777,
        0o600
    );
    for want in [
        "------< LVS Topology >------".to_string(),
        " VS VIP = 192.0.2.1, VPORT = 80".to_string(),
        format!("   RIP = 127.0.0.1, RPORT = {up_port}, WEIGHT = 3 EFF WEIGHT = 3"),
        "   num failed checkers = 1".to_string(),
        // The live one is in the table, the failed one is not.
        "   RS set = 1".to_string(),
        "   RS set = 0".to_string(),
        "------< Health checkers >------".to_string(),
        format!(" [192.0.2.1]:tcp:80 -> [127.0.0.1]:tcp:{down_port}"),
        "   Up = no".to_string(),
        "   Keepalive method = TCP_CHECK".to_string(),
    ] {
        assert!(text.lines().any(|l| l == want), "{want:?} not in:\n{text}");
    }
    assert!(d.child.try_wait().unwrap().is_none(), "still running");
    d.signal(Signal::SIGTERM);
    assert!(d.child.wait().unwrap().success());
    drop(up);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_reload_notifies_removed_live_servers() {
    let dir = std::env::temp_dir().join(format!("karsd-rm-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let conf = dir.join("keepalived.conf");
    let mark = dir.join("removed");
    // Scripts run as whoever runs the tests.
    let me = nix::unistd::User::from_uid(nix::unistd::getuid())
        .unwrap()
        .unwrap()
        .name;
    let with = format!(
        "global_defs {{\n script_user {me}\n enable_script_security\n}}\n\
         virtual_server 192.0.2.1 80 {{\n lvs_sched rr\n protocol TCP\n \
         real_server 127.0.0.1 8081 {{\n }}\n \
         real_server 127.0.0.1 8082 {{\n notify_down \"/usr/bin/touch {}\"\n }}\n}}\n",
        mark.display()
    );
    std::fs::write(&conf, &with).unwrap();
    let mut d = Daemon::start(&conf);
    assert_eq!(d.table().len(), 3);
    let without = with.replace(
        &format!(
            " real_server 127.0.0.1 8082 {{\n notify_down \"/usr/bin/touch {}\"\n }}\n",
            mark.display()
        ),
        "",
    );
    assert_ne!(with, without);
    let log = d.reload(&conf, &without, "reload:");
    assert!(
        log.iter()
            .any(|l| l.contains("service [127.0.0.1]:tcp:8082 no longer exist")),
        "{log:#?}"
    );
    let deadline = Instant::now() + Duration::from_secs(5);
    while !mark.exists() {
        assert!(Instant::now() < deadline, "notify_down did not run");
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(d.table().len(), 2);
    d.signal(Signal::SIGTERM);
    assert!(d.child.wait().unwrap().success());
    let _ = std::fs::remove_dir_all(&dir);
}
