//! Files in places others can write: an unprivileged user (uid 65534)
//! plants symlinks where the daemon, as root, writes its pid files and its
//! `-g` log, and a tracked file is swapped for a FIFO and for a link to
//! `/dev/zero`. The daemon must start, never write through a link, and
//! never block or read without end.

mod common;

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// An empty directory of this test run's own under the temporary one.
fn fresh_dir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn sticky_dir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("krs-hard-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o1777)).unwrap();
    d
}

/// `ln -s target link` as uid 65534.
fn plant(target: &Path, link: &Path) {
    let st = Command::new("ln")
        .arg("-s")
        .arg(target)
        .arg(link)
        .uid(65534)
        .gid(65534)
        .status()
        .expect("ln");
    assert!(st.success());
    assert_eq!(link.symlink_metadata().unwrap().uid(), 65534);
}

#[test]
#[cfg_attr(
    not(feature = "root"),
    ignore = "needs root: cargo test --features root"
)]
fn pid_and_log_symlinks_planted_by_another_user_are_not_followed() {
    let d = sticky_dir("pid");
    // Root's file, that the links point at.
    let victim = d.join("victim");
    std::fs::write(&victim, "precious\n").unwrap();
    let (pid, cpid, log) = (d.join("k.pid"), d.join("c.pid"), d.join("k.log"));
    for l in [&pid, &cpid, &d.join("k_check.log")] {
        plant(&victim, l);
    }
    let conf = d.join("keepalived.conf");
    std::fs::write(
        &conf,
        "virtual_server 192.0.2.1 80 {\n lvs_sched rr\n lvs_method NAT\n protocol TCP\n}\n",
    )
    .unwrap();
    let mut cmd = common::dry_run(&conf);
    cmd.arg("-p")
        .arg(&pid)
        .arg("-c")
        .arg(&cpid)
        .arg("-g")
        .arg(&log);
    let (mut child, _out, err) = common::spawn(cmd);
    common::until(&err, "Startup complete");
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious\n");
    for p in [&pid, &cpid] {
        let m = p.symlink_metadata().unwrap();
        assert!(
            m.file_type().is_file(),
            "{}: a file of its own",
            p.display()
        );
        assert_eq!(m.uid(), 0);
        let text = std::fs::read_to_string(p).unwrap();
        assert_eq!(text.trim(), child.id().to_string());
    }
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    let _ = child.wait();
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious\n");
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn a_tracked_file_swapped_for_a_fifo_or_dev_zero_never_blocks_the_checks() {
    // The tracked file lives in a directory another user owns; run as
    // root, that user (uid 65534) makes the swaps, as an attacker would.
    let d = fresh_dir("krs-hard-track");
    let tracked = d.join("weight");
    std::fs::write(&tracked, "2\n").unwrap();
    let other = nix::unistd::geteuid().is_root().then_some(65534);
    if let Some(u) = other {
        for p in [&d, &tracked] {
            std::os::unix::fs::chown(p, Some(u), Some(u)).unwrap();
        }
    }
    let conf = std::env::temp_dir().join(format!("krs-hard-track-{}.conf", std::process::id()));
    std::fs::write(
        &conf,
        format!(
            "track_file w {{\n file {}\n weight 1\n}}\n\
             virtual_server 192.0.2.1 80 {{\n lvs_sched rr\n lvs_method NAT\n protocol TCP\n \
             real_server 127.0.0.1 8081 {{\n weight 1\n FILE_CHECK {{\n track_file w\n }}\n }}\n}}\n",
            tracked.display()
        ),
    )
    .unwrap();
    let (mut child, out, err) = common::spawn_dry_run(&conf, &[]);
    common::until(&err, "Startup complete");
    // `make` builds `swap` in the directory, then it is renamed over the
    // tracked file, all as the directory's owner.
    let swap = |make: &str| {
        let mut cmd = Command::new("sh");
        cmd.arg("-c")
            .arg(format!("set -e; rm -f swap; {make}; mv -T swap weight"))
            .current_dir(&d);
        if let Some(u) = other {
            cmd.uid(u).gid(u);
        }
        assert!(cmd.status().expect("sh").success(), "{make}");
        if let Some(u) = other {
            assert_eq!(tracked.symlink_metadata().unwrap().uid(), u);
        }
    };
    let weight = |w: u32| {
        let deadline = Instant::now() + Duration::from_secs(20);
        let mut seen = Vec::new();
        loop {
            assert!(
                Instant::now() < deadline,
                "the weight never became {w}: {seen:?}"
            );
            if let Ok(l) = out.recv_timeout(Duration::from_millis(100)) {
                let hit = l.contains("127.0.0.1:8081") && l.contains(&format!("-w {w}"));
                seen.push(l);
                if hit {
                    return;
                }
            }
        }
    };
    // The watch is up once a change is seen.
    swap("echo 4 > swap");
    weight(5);
    // A FIFO with no writer: reads as 0 at once, never waits.
    swap("mkfifo swap");
    weight(1);
    // An endless device: 0 as well, read once.
    swap("ln -s /dev/zero swap");
    // Then a value again: the daemon is still reading its files.
    swap("echo 5 > swap");
    weight(6);
    let _ = child.kill();
    let _ = child.wait();
    let _ = std::fs::remove_dir_all(&d);
    let _ = std::fs::remove_file(&conf);
}

/// Whether `pid` is still a live process (a zombie is not).
fn alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(s) => !s
            .rsplit_once(") ")
            .is_some_and(|(_, rest)| rest.starts_with('Z') || rest.starts_with('X')),
        Err(_) => false,
    }
}

#[test]
fn a_script_cut_short_by_a_reload_takes_its_grandchildren_with_it() {
    let d = fresh_dir("krs-hard-pgrp");
    let pids = d.join("pids");
    let script = d.join("check.sh");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\nsleep 1000 &\necho $! >> {}\nsleep 1000\n",
            pids.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let me = nix::unistd::User::from_uid(nix::unistd::getuid())
        .unwrap()
        .unwrap()
        .name;
    let conf = d.join("keepalived.conf");
    let text = |delay: u32| {
        format!(
            "global_defs {{\n script_user {me}\n enable_script_security\n}}\n\
             virtual_server 192.0.2.1 80 {{\n lvs_sched rr\n lvs_method NAT\n protocol TCP\n \
             real_server 127.0.0.1 8081 {{\n MISC_CHECK {{\n misc_path {}\n misc_timeout 600\n \
             warmup 0\n delay_loop {delay}\n }}\n }}\n}}\n",
            script.display()
        )
    };
    std::fs::write(&conf, text(600)).unwrap();
    let (mut child, _out, err) = common::spawn_dry_run(&conf, &[]);
    common::until(&err, "Startup complete");
    // The script runs (first run at 1 s) and has started its grandchild.
    let deadline = Instant::now() + Duration::from_secs(20);
    let grandchild: i32 = loop {
        if let Some(p) = std::fs::read_to_string(&pids)
            .ok()
            .and_then(|s| s.lines().next().and_then(|l| l.trim().parse().ok()))
        {
            break p;
        }
        assert!(Instant::now() < deadline, "the script never ran");
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(alive(grandchild));
    // A changed checker: the reload stops the running check.
    std::fs::write(&conf, text(601)).unwrap();
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGHUP,
    )
    .unwrap();
    common::until(&err, "reload:");
    let deadline = Instant::now() + Duration::from_secs(10);
    while alive(grandchild) {
        assert!(
            Instant::now() < deadline,
            "grandchild {grandchild} outlived its script"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = child.kill();
    let _ = child.wait();
    // Anything the second run started goes with the daemon.
    for p in std::fs::read_to_string(&pids).unwrap_or_default().lines() {
        if let Ok(p) = p.trim().parse::<i32>() {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(p),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
    }
    let _ = std::fs::remove_dir_all(&d);
}

/// The CPU time `pid` has used, in clock ticks.
fn cpu_ticks(pid: u32) -> u64 {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let rest = s.rsplit_once(") ").unwrap().1;
    let f: Vec<&str> = rest.split_whitespace().collect();
    // utime and stime: fields 14 and 15 of stat, 12 and 13 after the name.
    f[11].parse::<u64>().unwrap() + f[12].parse::<u64>().unwrap()
}

#[test]
fn a_thousand_idle_metrics_clients_under_a_low_fd_limit_stop_nothing() {
    use std::io::{Read, Write};
    use std::net::{TcpListener, TcpStream};
    // Our own side needs the descriptors.
    let (_, hard) =
        nix::sys::resource::getrlimit(nix::sys::resource::Resource::RLIMIT_NOFILE).unwrap();
    nix::sys::resource::setrlimit(nix::sys::resource::Resource::RLIMIT_NOFILE, hard, hard).unwrap();
    let d = fresh_dir("krs-hard-fd");
    // A backend that counts the checks it gets.
    let backend = TcpListener::bind("127.0.0.1:0").unwrap();
    let bport = backend.local_addr().unwrap().port();
    let checks = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let c2 = checks.clone();
    std::thread::spawn(move || {
        for s in backend.incoming().flatten() {
            c2.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            drop(s);
        }
    });
    let mport = common::free_port();
    let sock = d.join("status.sock");
    let conf = d.join("keepalived.conf");
    std::fs::write(
        &conf,
        format!(
            "global_defs {{\n metrics_listen 127.0.0.1 {mport}\n status_socket {}\n}}\n\
             virtual_server 192.0.2.1 80 {{\n lvs_sched rr\n lvs_method NAT\n protocol TCP\n \
             real_server 127.0.0.1 {bport} {{\n TCP_CHECK {{\n delay_loop 0.2\n warmup 0\n }}\n }}\n}}\n",
            sock.display()
        ),
    )
    .unwrap();
    // 64 descriptors, soft and hard: the daemon cannot raise them.
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_keepalived"));
    cmd.args(["--dry-run", "-n", "-l", "-f"])
        .arg(&conf)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped());
    // SAFETY: setrlimit is async-signal-safe; nothing else runs before exec.
    unsafe {
        cmd.pre_exec(|| {
            nix::sys::resource::setrlimit(nix::sys::resource::Resource::RLIMIT_NOFILE, 64, 64)
                .map_err(std::io::Error::from)
        });
    }
    let mut child = cmd.spawn().unwrap();
    let err = common::lines_of(child.stderr.take().unwrap());
    common::until(&err, "Startup complete");
    // 1,000 clients that connect and never send.
    let idle: Vec<TcpStream> = (0..1000)
        .filter_map(|_| TcpStream::connect(("127.0.0.1", mport)).ok())
        .collect();
    assert!(idle.len() >= 900, "{} connected", idle.len());
    std::thread::sleep(Duration::from_millis(500));
    let (t0, n0) = (
        cpu_ticks(child.id()),
        checks.load(std::sync::atomic::Ordering::SeqCst),
    );
    std::thread::sleep(Duration::from_secs(3));
    let (t1, n1) = (
        cpu_ticks(child.id()),
        checks.load(std::sync::atomic::Ordering::SeqCst),
    );
    // The checks go on (every 0.2 s) ...
    assert!(n1 - n0 >= 5, "checks stopped: {n0} -> {n1}");
    // ... and nothing spins on accept (100 ticks = 1 s of CPU in 3 s).
    assert!(t1 - t0 < 100, "{} ticks of CPU in 3 s", t1 - t0);
    // The idle ones are cut; then a real scrape is answered again.
    drop(idle);
    let deadline = Instant::now() + Duration::from_secs(20);
    let body = loop {
        assert!(Instant::now() < deadline, "metrics never answered again");
        if let Ok(mut s) = TcpStream::connect(("127.0.0.1", mport)) {
            let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
            let _ = s.write_all(b"GET /metrics HTTP/1.0\r\n\r\n");
            let mut b = String::new();
            let _ = s.read_to_string(&mut b);
            if b.starts_with("HTTP/1.1 200") {
                break b;
            }
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    assert!(body.contains("keepalived"), "{body}");
    let _ = child.kill();
    let _ = child.wait();
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
#[cfg_attr(
    not(feature = "root"),
    ignore = "needs root: cargo test --features root"
)]
fn scripts_others_can_change_are_disabled_and_never_run() {
    // keepalived 2.2.7's check_script_secure(): run as root, a script in a
    // directory anyone can write (no sticky bit), or owned by another user,
    // or reached through a symlink into such a place, is disabled.
    let safe = std::env::temp_dir().join(format!("krs-hard-safe-{}", std::process::id()));
    let open = std::env::temp_dir().join(format!("krs-hard-open-{}", std::process::id()));
    for (d, mode) in [(&safe, 0o755), (&open, 0o777)] {
        let _ = std::fs::remove_dir_all(d);
        std::fs::create_dir_all(d).unwrap();
        std::fs::set_permissions(d, std::fs::Permissions::from_mode(mode)).unwrap();
    }
    let script = |dir: &Path, name: &str| {
        let p = dir.join(name);
        let mark = safe.join(format!("{name}.ran"));
        std::fs::write(&p, format!("#!/bin/sh\ntouch {}\nexit 0\n", mark.display())).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        (p, mark)
    };
    let (good, good_ran) = script(&safe, "good.sh");
    let (in_open, in_open_ran) = script(&open, "open.sh");
    let (foreign, foreign_ran) = script(&safe, "foreign.sh");
    std::os::unix::fs::chown(&foreign, Some(65534), Some(65534)).unwrap();
    let (target, linked_ran) = script(&open, "linked.sh");
    let link = safe.join("linked.sh");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    let conf = safe.join("keepalived.conf");
    let rs = |port: u16, p: &Path| {
        format!(
            " real_server 127.0.0.1 {port} {{\n MISC_CHECK {{\n misc_path {}\n warmup 0\n delay_loop 1\n }}\n }}\n",
            p.display()
        )
    };
    std::fs::write(
        &conf,
        format!(
            "global_defs {{\n enable_script_security\n script_user root\n}}\n\
             virtual_server 192.0.2.1 80 {{\n lvs_sched rr\n lvs_method NAT\n protocol TCP\n{}{}{}{}}}\n",
            rs(8201, &good),
            rs(8202, &in_open),
            rs(8203, &foreign),
            rs(8204, &link)
        ),
    )
    .unwrap();
    let (mut child, _out, err) = common::spawn_dry_run(&conf, &[]);
    let log = common::until(&err, "Startup complete");
    let deadline = Instant::now() + Duration::from_secs(20);
    while !good_ran.exists() {
        assert!(Instant::now() < deadline, "the safe script never ran");
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_secs(2));
    let _ = child.kill();
    let _ = child.wait();
    for (what, ran) in [
        ("in a world-writable directory", &in_open_ran),
        ("owned by another user", &foreign_ran),
        ("through a symlink", &linked_ran),
    ] {
        assert!(!ran.exists(), "a script {what} ran");
    }
    let unsafe_lines = log
        .iter()
        .filter(|l| l.contains("Unsafe permissions found for script") && l.contains("- disabling."))
        .count();
    assert!(unsafe_lines >= 3, "{log:#?}");
    let _ = std::fs::remove_dir_all(&safe);
    let _ = std::fs::remove_dir_all(&open);
}

/// The daemon's file creation mask, from `/proc`.
fn umask_of(pid: u32) -> String {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("Umask:").map(|v| v.trim().to_string()))
        .unwrap()
}

#[test]
fn the_umask_is_keepalived_s_unless_given() {
    let d = fresh_dir("krs-hard-umask");
    let conf = d.join("keepalived.conf");
    for (args, extra, want) in [
        (vec![], "", "0177"),
        (vec!["-u", "0027"], "", "0027"),
        (vec![], " umask IWGRP|IWOTH\n", "0022"),
    ] {
        std::fs::write(
            &conf,
            format!("global_defs {{\n{extra}}}\nvirtual_server 192.0.2.1 80 {{\n lvs_sched rr\n lvs_method NAT\n protocol TCP\n}}\n"),
        )
        .unwrap();
        let mut cmd = common::dry_run(&conf);
        cmd.args(&args);
        let (mut child, _out, err) = common::spawn(cmd);
        common::until(&err, "Startup complete");
        assert_eq!(umask_of(child.id()), want, "{args:?} {extra:?}");
        let _ = child.kill();
        let _ = child.wait();
    }
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn a_config_of_hundreds_of_thousands_of_bad_lines_costs_megabytes() {
    use std::io::Write;
    let d = fresh_dir("krs-hard-big");
    let conf = d.join("keepalived.conf");
    let mut f = std::io::BufWriter::new(std::fs::File::create(&conf).unwrap());
    for i in 0..300_000 {
        writeln!(f, "unknown_keyword_{i} 1").unwrap();
    }
    // And a sequence that expands to as many lines.
    writeln!(
        f,
        "virtual_server 192.0.2.1 80 {{\n lvs_sched rr\n lvs_method NAT\n protocol TCP\n \
         ~SEQ(i,1,300000) bogus_$i 1\n}}"
    )
    .unwrap();
    drop(f);
    let out = Command::new(env!("CARGO_BIN_EXE_keepalived"))
        .arg("-t")
        .arg("-f")
        .arg(&conf)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(5));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("more problem(s) not listed"),
        "{}",
        &err[err.len().saturating_sub(500)..]
    );
    // 600,000 problems listed in full were over 300 MB.
    let usage =
        nix::sys::resource::getrusage(nix::sys::resource::UsageWho::RUSAGE_CHILDREN).unwrap();
    let max_rss_mb = usage.max_rss() / 1024;
    assert!(max_rss_mb < 150, "{max_rss_mb} MB");
    let _ = std::fs::remove_dir_all(&d);
}

/// The `Uid:`, `Gid:` and `Groups:` lines a script wrote from its
/// `/proc/self/status`, once it has run.
fn identity_written(out: &Path) -> String {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if let Ok(s) = std::fs::read_to_string(out) {
            if s.contains("Groups:") {
                return s;
            }
        }
        assert!(
            Instant::now() < deadline,
            "{} was never written",
            out.display()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
#[cfg_attr(
    not(feature = "root"),
    ignore = "needs root: cargo test --features root"
)]
fn scripts_run_as_their_user_with_only_their_group() {
    // keepalived's set_privileges(): setgid(gid), setgroups(1, &gid),
    // setuid(uid). A MISC_CHECK with its own `user nobody daemon`, and a
    // notify_up under `script_user nobody` (its primary group, nogroup);
    // neither keeps root's supplementary groups.
    let d = fresh_dir("krs-hard-ids");
    let outs = d.join("out");
    std::fs::create_dir_all(&outs).unwrap();
    std::fs::set_permissions(&outs, std::fs::Permissions::from_mode(0o1777)).unwrap();
    let script = |name: &str| {
        let p = d.join(name);
        let out = outs.join(format!("{name}.ids"));
        std::fs::write(
            &p,
            format!(
                "#!/bin/sh\ngrep -E '^(Uid|Gid|Groups):' /proc/self/status > {}.tmp\nmv {0}.tmp {0}\nexit 0\n",
                out.display()
            ),
        )
        .unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        (p, out)
    };
    let (check, check_ids) = script("check.sh");
    let (notify, notify_ids) = script("notify.sh");
    let conf = d.join("keepalived.conf");
    std::fs::write(
        &conf,
        format!(
            "global_defs {{\n enable_script_security\n script_user nobody\n}}\n\
             virtual_server 192.0.2.1 80 {{\n lvs_sched rr\n lvs_method NAT\n protocol TCP\n \
             real_server 127.0.0.1 8081 {{\n alpha\n notify_up {}\n MISC_CHECK {{\n misc_path {}\n \
             user nobody daemon\n warmup 0\n delay_loop 1\n }}\n }}\n}}\n",
            notify.display(),
            check.display()
        ),
    )
    .unwrap();
    let (mut child, _out, err) = common::spawn_dry_run(&conf, &[]);
    common::until(&err, "Startup complete");
    let fields = |s: &str, key: &str| -> Vec<String> {
        s.lines()
            .find_map(|l| l.strip_prefix(key))
            .unwrap_or_default()
            .split_whitespace()
            .map(str::to_string)
            .collect()
    };
    let ids = identity_written(&check_ids);
    assert_eq!(fields(&ids, "Uid:"), ["65534"; 4], "{ids}");
    assert_eq!(fields(&ids, "Gid:"), ["1"; 4], "{ids}");
    assert_eq!(fields(&ids, "Groups:"), ["1"], "{ids}");
    let ids = identity_written(&notify_ids);
    assert_eq!(fields(&ids, "Uid:"), ["65534"; 4], "{ids}");
    assert_eq!(fields(&ids, "Gid:"), ["65534"; 4], "{ids}");
    assert_eq!(fields(&ids, "Groups:"), ["65534"], "{ids}");
    let _ = child.kill();
    let _ = child.wait();
    let _ = std::fs::remove_dir_all(&d);
}

/// SIGTERM to `child`; the seconds it took to exit (panics after 15 s).
fn stop_within(child: &mut std::process::Child) -> f64 {
    let t = Instant::now();
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    while t.elapsed() < Duration::from_secs(15) {
        if child.try_wait().unwrap().is_some() {
            return t.elapsed().as_secs_f64();
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    panic!("the daemon did not stop within 15 s");
}

#[test]
#[cfg_attr(
    not(feature = "root"),
    ignore = "needs root: cargo test --features root"
)]
fn a_state_file_planted_or_swapped_is_neither_trusted_nor_blocking() {
    let d = sticky_dir("state");
    let state = d.join("state.json");
    let conf = d.join("keepalived.conf");
    let [port] = common::free_ports();
    // An alpha server: down at start by keepalived's rules, up only if a
    // state file that is trusted says so.
    let write_conf = |warmup: u32| {
        std::fs::write(
            &conf,
            format!(
                "global_defs {{\n state_file {}\n state_file_interval 1\n}}\n\
                 virtual_server 192.0.2.1 80 {{\n delay_loop 1\n lb_algo rr\n lb_kind NAT\n protocol TCP\n \
                 real_server 127.0.0.1 {port} {{\n  TCP_CHECK {{\n   alpha\n   connect_timeout 1\n   warmup {warmup}\n  }}\n }}\n}}\n",
                state.display()
            ),
        )
        .unwrap();
    };
    let added = format!("-r 127.0.0.1:{port}");
    // A file of the daemon's own, with the server up in it.
    write_conf(0);
    {
        let _up = common::listen(port);
        let (mut child, out, err) = common::spawn_dry_run(&conf, &[]);
        common::until(&err, "Startup complete");
        common::until(&out, &added);
        // The next write after the server came up.
        std::thread::sleep(Duration::from_millis(2500));
        // A link planted where this process writes its temporary.
        let victim = d.join("victim");
        std::fs::write(&victim, "precious\n").unwrap();
        std::fs::set_permissions(&victim, std::fs::Permissions::from_mode(0o600)).unwrap();
        plant(&victim, &d.join(format!(".state.json.{}.tmp", child.id())));
        assert!(stop_within(&mut child) < 5.0);
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious\n");
    }
    let m = state.symlink_metadata().unwrap();
    assert!(m.file_type().is_file());
    assert_eq!((m.uid(), m.mode() & 0o777), (0, 0o600));
    let saved = std::fs::read(&state).unwrap();
    // Each start: the lines to "Startup complete", the stop's time.
    write_conf(60);
    let start = || {
        let (mut child, out, err) = common::spawn_dry_run(&conf, &[]);
        let lines = common::until(&err, "Startup complete");
        std::thread::sleep(Duration::from_millis(300));
        let ops: Vec<String> = out.try_iter().collect();
        let took = stop_within(&mut child);
        (
            lines.join("\n"),
            ops.iter().any(|l| l.contains(&added)),
            took,
        )
    };
    // Trusted: the server starts up.
    let (log, up, _) = start();
    assert!(up, "{log}");
    // The same bytes, owned by another user: keepalived's rules.
    std::os::unix::fs::chown(&state, Some(65534), Some(65534)).unwrap();
    let (log, up, _) = start();
    assert!(!up && log.contains("owned by uid 65534"), "{log}");
    // Its owner's, but writable by others.
    std::os::unix::fs::chown(&state, Some(0), Some(0)).unwrap();
    std::fs::set_permissions(&state, std::fs::Permissions::from_mode(0o666)).unwrap();
    let (log, up, _) = start();
    assert!(
        !up && log.contains("writable by its group or others"),
        "{log}"
    );
    // A FIFO: no block at start, a stop that ends.
    std::fs::remove_file(&state).unwrap();
    assert!(Command::new("mkfifo")
        .arg(&state)
        .status()
        .unwrap()
        .success());
    let (log, up, took) = start();
    assert!(!up && log.contains("not a regular file"), "{log}");
    assert!(took < 5.0, "stop took {took} s");
    // A link to an endless device, planted by another user.
    std::fs::remove_file(&state).unwrap();
    plant(Path::new("/dev/zero"), &state);
    let (log, up, took) = start();
    assert!(!up && log.contains("state file"), "{log}");
    assert!(took < 5.0, "stop took {took} s");
    // Each stop above replaced what was there with a file of its own.
    assert!(state.symlink_metadata().unwrap().file_type().is_file());
    assert_ne!(std::fs::read(&state).unwrap(), saved);
    let _ = std::fs::remove_dir_all(&d);
}

/// Descriptors open and `RssAnon` (kB) of `pid`.
fn fds_and_rss(pid: u32) -> (usize, u64) {
    let fds = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .unwrap()
        .count();
    let rss = std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("RssAnon:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap();
    (fds, rss)
}

#[test]
fn reloads_leave_descriptors_and_memory_flat() {
    let d = fresh_dir("krs-hard-reloads");
    let conf = d.join("keepalived.conf");
    // 250 checks (TCP_CHECK's connects go through their own epoll sets),
    // against ports nobody listens on.
    let mut text = String::from(
        "virtual_server 192.0.2.1 80 {\n delay_loop 1\n lb_algo rr\n lb_kind NAT\n protocol TCP\n",
    );
    for i in 0..250 {
        text += &format!(
            " real_server 127.0.0.1 {} {{\n  TCP_CHECK {{\n   connect_timeout 1\n  }}\n }}\n",
            40_000 + i
        );
    }
    text += "}\n";
    std::fs::write(&conf, text).unwrap();
    let (mut child, _out, err) = common::spawn_dry_run(&conf, &[]);
    common::until(&err, "Startup complete");
    let pid = child.id();
    let hup = |n: usize| {
        for _ in 0..n {
            nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(pid as i32),
                nix::sys::signal::Signal::SIGHUP,
            )
            .unwrap();
            // Each configuration's checks all run (delay_loop 1) before
            // the next reload.
            std::thread::sleep(Duration::from_millis(1100));
        }
    };
    // Warmed up: the allocator's arenas and the runtime's pools made.
    hup(5);
    let (fds0, rss0) = fds_and_rss(pid);
    hup(20);
    let (fds1, rss1) = fds_and_rss(pid);
    let _ = child.kill();
    let _ = child.wait();
    let _ = std::fs::remove_dir_all(&d);
    assert_eq!(fds1, fds0, "descriptors after 5 reloads, then 20 more");
    assert!(
        rss1 < rss0 + 512,
        "RssAnon {rss0} kB after 5 reloads, {rss1} kB after 20 more"
    );
}

#[test]
fn idle_clients_do_not_lock_the_status_socket_out() {
    let d = fresh_dir("krs-hard-idle");
    let conf = d.join("keepalived.conf");
    let sock = d.join("status.sock");
    std::fs::write(
        &conf,
        format!(
            "global_defs {{\n status_socket {}\n}}\n\
             virtual_server 192.0.2.1 80 {{\n lb_algo rr\n lb_kind NAT\n protocol TCP\n \
             real_server 127.0.0.1 9 {{\n weight 1\n }}\n}}\n",
            sock.display()
        ),
    )
    .unwrap();
    let (mut child, _out, err) = common::spawn_dry_run(&conf, &[]);
    common::until(&err, "Startup complete");
    // Forty clients that connect and say nothing, more than the places.
    let idle: Vec<_> = (0..40)
        .map(|_| std::os::unix::net::UnixStream::connect(&sock).unwrap())
        .collect();
    std::thread::sleep(Duration::from_millis(300));
    let mut answered = 0;
    for _ in 0..20 {
        let o = Command::new(env!("CARGO_BIN_EXE_keepalived"))
            .args(["--status", "--json", "--status-socket"])
            .arg(&sock)
            .output()
            .unwrap();
        if o.status.success() && serde_json::from_slice::<serde_json::Value>(&o.stdout).is_ok() {
            answered += 1;
        }
    }
    drop(idle);
    let _ = child.kill();
    let _ = child.wait();
    let _ = std::fs::remove_dir_all(&d);
    assert_eq!(
        answered, 20,
        "status answered {answered} of 20 times beside idle clients"
    );
}
