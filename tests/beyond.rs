//! The checker extensions of keepalived-rs (issue 19, "beyond keepalived"),
//! end to end: the daemon (dry run) against loopback backends, read
//! through its log, its dry-run table and `--status`.

mod common;

use common::{free_port, free_ports, metrics, status_json, wait_status, Daemon};
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// A folder for one test: its config and status socket paths.
fn setup(name: &str) -> (PathBuf, PathBuf, PathBuf) {
    let dir = std::env::temp_dir().join(format!("kars-beyond-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let conf = dir.join("keepalived.conf");
    let sock = dir.join("status.sock");
    (dir, conf, sock)
}

fn checker(doc: &Value, port: u16) -> &Value {
    doc["virtual_servers"][0]["real_servers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["port"] == port)
        .map(|r| &r["checkers"][0])
        .unwrap_or_else(|| panic!("no real server on {port}: {doc:#}"))
}

#[test]
fn thresholds_and_intervals_take_a_server_out_and_back_as_configured() {
    let (dir, conf, sock) = setup("thresholds");
    let port = free_port();
    let backend = common::listen(port);
    std::fs::write(
        &conf,
        format!(
            "global_defs {{\n    status_socket {}\n}}\n\
             virtual_server 192.0.2.1 80 {{\n    delay_loop 1\n    lb_algo rr\n    lb_kind NAT\n    protocol TCP\n\
             \x20   healthy_threshold 3\n    unhealthy_threshold 2\n    fast_interval 0.2\n    down_interval 0.5\n\
             \x20   real_server 127.0.0.1 {port} {{\n        TCP_CHECK {{\n            connect_timeout 1\n            warmup 0\n        }}\n    }}\n}}\n",
            sock.display()
        ),
    )
    .unwrap();
    let d = Daemon::start(&conf);
    d.log_until("Startup complete");
    let doc = wait_status(&sock, "a first pass", |d| {
        checker(d, port)["runs"].as_u64() >= Some(1)
    });
    let c = checker(&doc, port);
    assert_eq!(c["state"], "healthy");
    assert_eq!(c["healthy_threshold"], 3);
    assert_eq!(c["retry"], 1, "unhealthy_threshold 2 is retry 1");
    // Up and established: two failures, the second at most a connect
    // timeout after a fast_interval: next run + 1 + 0.2 + 1.
    let w = c["failure_window_s"].as_f64().unwrap();
    assert!((2.2..=3.2).contains(&w), "failure window {w}: {c:#}");
    assert_eq!(c["recovery_window_s"], Value::Null);

    // The backend goes: one failure retried after fast_interval, the
    // second takes it out.
    drop(backend);
    let lines = d.log_until(&format!("Removing service [127.0.0.1]:tcp:{port}"));
    assert!(
        lines.iter().any(|l| l.contains("failed after 1 retries")),
        "{lines:#?}"
    );
    let doc = status_json(&sock);
    let c = checker(&doc, port);
    assert_eq!(c["state"], "unhealthy", "{c:#}");
    assert_eq!(c["failure_window_s"], Value::Null);
    // Down: three successes, the first at the next run (down_interval
    // 0.5 at most), 0.2 s apart, each taking 1 s at most.
    let w = c["recovery_window_s"].as_f64().unwrap();
    assert!((3.4..=3.9).contains(&w), "recovery window {w}: {c:#}");

    // It comes back: two passes are counted, the third puts it back.
    let _backend = common::listen(port);
    let lines = d.log_until("dry-run: ipvsadm -a -t 192.0.2.1:80");
    let passed: Vec<&String> = lines
        .iter()
        .filter(|l| l.contains("times needed to put it back (healthy_threshold)"))
        .collect();
    assert_eq!(passed.len(), 2, "{lines:#?}");
    assert!(passed[0].contains("passed 1 of 3"), "{passed:?}");
    assert!(passed[1].contains("passed 2 of 3"), "{passed:?}");
    assert!(
        lines
            .iter()
            .any(|l| l.contains(&format!("Adding service [127.0.0.1]:tcp:{port} to VS"))),
        "{lines:#?}"
    );
    let doc = wait_status(&sock, "healthy again", |d| {
        checker(d, port)["state"] == "healthy"
    });
    assert_eq!(checker(&doc, port)["successes_counted"], 0);
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn fail_open_keeps_every_server_in_while_all_have_failed() {
    let (dir, conf, sock) = setup("fail-open");
    let [p1, p2, mport] = free_ports();
    let b1 = common::listen(p1);
    let b2 = common::listen(p2);
    let rs = |p: u16, w: u32| {
        format!(
            "    real_server 127.0.0.1 {p} {{\n        weight {w}\n        TCP_CHECK {{\n            connect_timeout 1\n            retry 0\n            warmup 0\n        }}\n    }}\n"
        )
    };
    std::fs::write(
        &conf,
        format!(
            "global_defs {{\n    status_socket {}\n    metrics_listen 127.0.0.1 {mport}\n}}\n\
             virtual_server 192.0.2.1 80 {{\n    delay_loop 0.5\n    lb_algo rr\n    lb_kind NAT\n    protocol TCP\n\
             \x20   fail_open\n    sorry_server 192.0.2.99 80\n{}{}}}\n",
            sock.display(),
            rs(p1, 2),
            rs(p2, 3)
        ),
    )
    .unwrap();
    let d = Daemon::start(&conf);
    d.log_until("Startup complete");
    let vs = |doc: &Value| doc["virtual_servers"][0].clone();
    let doc = status_json(&sock);
    assert_eq!(vs(&doc)["fail_open"], true);
    assert_eq!(vs(&doc)["fail_open_in_force"], false);

    // One goes: keepalived's rules, it leaves.
    drop(b1);
    d.log_until(&format!(
        "dry-run: ipvsadm -d -t 192.0.2.1:80 -r 127.0.0.1:{p1}"
    ));
    // The last goes: instead of the sorry server, both are kept in at
    // their configured weights.
    drop(b2);
    let lines = d.log_until("keeping all 2 in at their configured weights (fail_open)");
    assert!(
        lines
            .iter()
            .any(|l| l.contains("VS [192.0.2.1]:tcp:80: every real server has failed")),
        "{lines:#?}"
    );
    let lines = d.log_until(&format!(
        "dry-run: ipvsadm -a -t 192.0.2.1:80 -r 127.0.0.1:{p1} -m -w 2"
    ));
    assert!(
        !lines.iter().any(|l| l.contains("192.0.2.99")),
        "no sorry server while failing open: {lines:#?}"
    );
    let doc = wait_status(&sock, "fail open in force", |d| {
        vs(d)["fail_open_in_force"] == true
    });
    assert_eq!(vs(&doc)["sorry_server_in_use"], false);
    let weights: Vec<Value> = vs(&doc)["real_servers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["kernel_weight"].clone())
        .collect();
    assert_eq!(weights, [Value::from(2), Value::from(3)]);
    let m = metrics(mport);
    assert!(
        m.contains("keepalived_rs_virtual_server_fail_open{vs=\"[192.0.2.1]:tcp:80\"} 1"),
        "{m}"
    );

    // One comes back: fail_open ends, the other goes out again.
    let _b1 = common::listen(p1);
    d.log_until("fail_open ends");
    d.log_until(&format!(
        "dry-run: ipvsadm -d -t 192.0.2.1:80 -r 127.0.0.1:{p2}"
    ));
    let doc = wait_status(&sock, "fail open over", |d| {
        vs(d)["fail_open_in_force"] == false
    });
    assert_eq!(
        vs(&doc)["real_servers"][1]["kernel_weight"],
        Value::Null,
        "{doc:#}"
    );
    let m = metrics(mport);
    assert!(
        m.contains("keepalived_rs_virtual_server_fail_open{vs=\"[192.0.2.1]:tcp:80\"} 0"),
        "{m}"
    );
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn the_seeds_words_for_real_and_virtual_servers() {
    let (dir, conf, sock) = setup("seed-words");
    let [up, down, mport] = free_ports();
    let _b = common::listen(up);
    let tcp = |p: u16| {
        format!("TCP_CHECK {{\n            connect_port {p}\n            connect_timeout 1\n            retry 0\n            warmup 0\n        }}")
    };
    std::fs::write(
        &conf,
        format!(
            "global_defs {{\n    status_socket {}\n    metrics_listen 127.0.0.1 {mport}\n}}\n\
             virtual_server 192.0.2.1 80 {{\n    delay_loop 1\n    lb_algo rr\n    lb_kind NAT\n    protocol TCP\n\
             \x20   real_server 127.0.0.1 8001 {{\n        {}\n    }}\n\
             \x20   real_server 127.0.0.1 8002 {{\n    }}\n\
             \x20   real_server 127.0.0.1 8003 {{\n        weight 0\n        {}\n    }}\n\
             \x20   real_server 127.0.0.1 8004 {{\n        {}\n    }}\n}}\n",
            sock.display(),
            tcp(up),
            tcp(up),
            tcp(down)
        ),
    )
    .unwrap();
    let d = Daemon::start(&conf);
    d.log_until("Startup complete");
    let words = |doc: &Value| -> Vec<Value> {
        doc["virtual_servers"][0]["real_servers"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["health_status"].clone())
            .collect()
    };
    let doc = wait_status(&sock, "every check run", |d| {
        words(d) == ["healthy", "not enabled", "unused", "unhealthy"]
    });
    assert_eq!(doc["virtual_servers"][0]["health_status"], "healthy");
    // keepalived drops a virtual server without real servers at load; "no
    // target" is for one whose last real server was removed at run time
    // (seed_vs_state's unit test).
    let m = metrics(mport);
    for line in [
        "keepalived_rs_real_server_health{vs=\"[192.0.2.1]:tcp:80\",rs=\"[127.0.0.1]:tcp:8002\",status=\"not enabled\"} 1",
        "keepalived_rs_real_server_health{vs=\"[192.0.2.1]:tcp:80\",rs=\"[127.0.0.1]:tcp:8003\",status=\"unused\"} 1",
        "keepalived_rs_real_server_health{vs=\"[192.0.2.1]:tcp:80\",rs=\"[127.0.0.1]:tcp:8004\",status=\"unhealthy\"} 1",
        "keepalived_rs_virtual_server_health{vs=\"[192.0.2.1]:tcp:80\",status=\"healthy\"} 1",
    ] {
        assert!(m.contains(line), "{line} not in {m}");
    }
    let _ = std::fs::remove_dir_all(dir);
}

/// `keepalived --control LINE` against the daemon on `sock`: its exit
/// code's success, standard output and standard error.
fn control(sock: &Path, line: &str) -> (bool, String, String) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_keepalived"))
        .args(["--status-socket"])
        .arg(sock)
        .args(["--control", line])
        .output()
        .expect("run --control");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn membership_over_the_status_socket_survives_a_reload_of_the_same_file() {
    let (dir, conf, sock) = setup("membership");
    let [pa, pb, pc] = free_ports();
    let _a = common::listen(pa);
    let _b = common::listen(pb);
    let _c = common::listen(pc);
    let rs = |p: u16| {
        format!("    real_server 127.0.0.1 {p} {{\n        TCP_CHECK {{\n            connect_timeout 1\n            warmup 0\n        }}\n    }}\n")
    };
    std::fs::write(
        &conf,
        format!(
            "global_defs {{\n    status_socket {}\n}}\n\
             virtual_server 192.0.2.1 80 {{\n    delay_loop 1\n    lb_algo rr\n    lb_kind NAT\n    protocol TCP\n{}{}}}\n",
            sock.display(),
            rs(pa),
            rs(pb)
        ),
    )
    .unwrap();
    let d = Daemon::start(&conf);
    d.log_until("Startup complete");
    let vs = "[192.0.2.1]:tcp:80";
    let name = |p: u16| format!("[127.0.0.1]:tcp:{p}");
    let kernel = |doc: &Value| -> Vec<(String, Value, Value)> {
        doc["virtual_servers"][0]["real_servers"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| {
                (
                    r["name"].as_str().unwrap().to_string(),
                    r["kernel_weight"].clone(),
                    r["health_status"].clone(),
                )
            })
            .collect()
    };

    // Drain: weight 0, answered with the operation.
    let (ok, out, err) = control(&sock, &format!("disable {vs} {}", name(pa)));
    assert!(ok, "{err}");
    assert!(
        out.contains(&format!(
            "ipvsadm -e -t 192.0.2.1:80 -r 127.0.0.1:{pa} -m -w 0"
        )),
        "{out}"
    );
    let doc = status_json(&sock);
    let t = doc["transitions"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert_eq!(
        (t["checker"].clone(), t["from"].clone(), t["to"].clone()),
        (
            Value::from("operator"),
            Value::from("enabled"),
            Value::from("drained")
        ),
        "{t}"
    );
    // A weight, and a new server checked as the first one is.
    let (ok, out, err) = control(&sock, &format!("weight {vs} {} 5", name(pb)));
    assert!(
        ok && out.contains(&format!("-r 127.0.0.1:{pb} -m -w 5")),
        "{out}{err}"
    );
    let (ok, out, err) = control(&sock, &format!("add {vs} 127.0.0.1 {pc} 2"));
    assert!(
        ok && out.contains(&format!(
            "ipvsadm -a -t 192.0.2.1:80 -r 127.0.0.1:{pc} -m -w 2"
        )),
        "{out}{err}"
    );
    let want = vec![
        (name(pa), Value::from(0), Value::from("unused")),
        (name(pb), Value::from(5), Value::from("healthy")),
        (name(pc), Value::from(2), Value::from("healthy")),
    ];
    let doc = wait_status(&sock, "the edits in force", |d| kernel(d) == want);
    assert_eq!(checker(&doc, pc)["type"], "TCP_CHECK", "{doc:#}");

    // Refused edits change nothing.
    let (ok, _, err) = control(&sock, &format!("enable {vs} {}", name(pb)));
    assert!(!ok && err.contains("is not disabled"), "{err}");
    let (ok, _, err) = control(&sock, &format!("add {vs} 127.0.0.1 {pa}"));
    assert!(!ok && err.contains("already"), "{err}");
    let (ok, _, err) = control(&sock, "disable [192.0.2.9]:tcp:80 [127.0.0.1]:tcp:1");
    assert!(!ok && err.contains("no virtual server"), "{err}");

    // A reload of the same file keeps every edit, and sends nothing.
    kill(Pid::from_raw(d.child.id() as i32), Signal::SIGHUP).unwrap();
    let lines = d.log_until("reload: ");
    let last = lines.last().unwrap();
    assert!(last.contains("reload: 0 IPVS operation(s)"), "{lines:#?}");
    assert_eq!(kernel(&status_json(&sock)), want);

    // Enable, then remove down to no real server: "no target".
    let (ok, out, _) = control(&sock, &format!("enable {vs} {}", name(pa)));
    assert!(
        ok && out.contains(&format!("-r 127.0.0.1:{pa} -m -w 1")),
        "{out}"
    );
    for p in [pa, pb, pc] {
        let (ok, out, err) = control(&sock, &format!("remove {vs} {}", name(p)));
        assert!(
            ok && out.contains(&format!("ipvsadm -d -t 192.0.2.1:80 -r 127.0.0.1:{p}")),
            "{out}{err}"
        );
    }
    let doc = status_json(&sock);
    assert_eq!(
        doc["virtual_servers"][0]["health_status"], "no target",
        "{doc:#}"
    );
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn a_state_file_carries_checker_states_across_a_restart() {
    let (dir, conf, sock) = setup("state-file");
    let state = dir.join("state.json");
    let [good, bad] = free_ports();
    let _g = common::listen(good);
    let write_conf = |warmup: u32| {
        std::fs::write(
            &conf,
            format!(
                "global_defs {{\n    status_socket {}\n    state_file {}\n    state_file_interval 1\n}}\n\
                 virtual_server 192.0.2.1 80 {{\n    delay_loop 1\n    lb_algo rr\n    lb_kind NAT\n    protocol TCP\n\
                 \x20   real_server 127.0.0.1 {good} {{\n        TCP_CHECK {{\n            alpha\n            connect_timeout 1\n            warmup {warmup}\n        }}\n    }}\n\
                 \x20   real_server 127.0.0.1 {bad} {{\n        TCP_CHECK {{\n            connect_timeout 1\n            retry 0\n            warmup {warmup}\n        }}\n    }}\n}}\n",
                sock.display(),
                state.display()
            ),
        )
        .unwrap();
    };
    write_conf(0);
    let d = Daemon::start(&conf);
    let lines = d.log_until("Startup complete");
    assert!(
        lines
            .iter()
            .any(|l| l.contains("none yet - keepalived's startup rules")),
        "{lines:#?}"
    );
    // The alpha server comes up, the other goes down; the file follows
    // within its interval.
    let healthy_and_down = |doc: &Value| {
        checker(doc, good)["state"] == "healthy" && checker(doc, bad)["state"] == "unhealthy"
    };
    wait_status(&sock, "checked", healthy_and_down);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let saved: Option<Value> = std::fs::read(&state)
            .ok()
            .and_then(|t| serde_json::from_slice(&t).ok());
        let alive = |p: u16, doc: &Value| {
            doc["real_servers"]
                .as_array()
                .and_then(|a| a.iter().find(|r| r["port"] == p))
                .map(|r| r["alive"].clone())
        };
        if let Some(doc) = saved {
            if alive(good, &doc) == Some(Value::from(true))
                && alive(bad, &doc) == Some(Value::from(false))
            {
                break;
            }
        }
        assert!(
            std::time::Instant::now() < deadline,
            "state file never written"
        );
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    drop(d);

    // Restarted with the first checks far away: the file's verdicts hold
    // until then (keepalived's rules would start the alpha server out and
    // the other in).
    write_conf(60);
    let d = Daemon::start(&conf);
    let lines = d.log_until("Startup complete");
    assert!(
        lines
            .iter()
            .any(|l| l.contains("the states of 2 of 2 real server(s) restored")),
        "{lines:#?}"
    );
    assert!(
        lines.iter().any(|l| l.contains(&format!(
            "dry-run: ipvsadm -a -t 192.0.2.1:80 -r 127.0.0.1:{good}"
        ))),
        "{lines:#?}"
    );
    assert!(
        !lines
            .iter()
            .any(|l| l.contains(&format!("-r 127.0.0.1:{bad}"))),
        "{lines:#?}"
    );
    let doc = status_json(&sock);
    assert_eq!(checker(&doc, good)["up"], true);
    assert_eq!(checker(&doc, bad)["up"], false);
    drop(d);

    // A file that is not a state file: keepalived's startup rules.
    std::fs::write(&state, "{not json").unwrap();
    let d = Daemon::start(&conf);
    let lines = d.log_until("Startup complete");
    assert!(
        lines.iter().any(|l| l.contains("not a state file")),
        "{lines:#?}"
    );
    assert!(
        lines.iter().any(|l| l.contains(&format!(
            "dry-run: ipvsadm -a -t 192.0.2.1:80 -r 127.0.0.1:{bad}"
        ))),
        "{lines:#?}"
    );
    drop(d);
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn slow_start_ramps_the_weight_and_drain_keeps_a_failed_server_at_zero_first() {
    let (dir, conf, sock) = setup("slow-drain");
    let port = free_port();
    let backend = common::listen(port);
    std::fs::write(
        &conf,
        format!(
            "global_defs {{\n    status_socket {}\n}}\n\
             virtual_server 192.0.2.1 80 {{\n    delay_loop 0.5\n    lb_algo rr\n    lb_kind NAT\n    protocol TCP\n\
             \x20   slow_start 3\n    drain_timeout 20\n\
             \x20   real_server 127.0.0.1 {port} {{\n        weight 10\n        TCP_CHECK {{\n            connect_timeout 1\n            retry 0\n            warmup 0\n        }}\n    }}\n}}\n",
            sock.display()
        ),
    )
    .unwrap();
    let d = Daemon::start(&conf);
    d.log_until("Startup complete");
    wait_status(&sock, "checked", |d| {
        checker(d, port)["runs"].as_u64() >= Some(1)
    });
    let rs = format!("-t 192.0.2.1:80 -r 127.0.0.1:{port}");

    // It fails: weight 0 first (not deleted), then out once no connection
    // is left (a dry run has none).
    drop(backend);
    let lines = d.log_until(&format!("dry-run: ipvsadm -d {rs}"));
    let zero = lines
        .iter()
        .position(|l| l.contains(&format!("dry-run: ipvsadm -e {rs} -m -w 0")))
        .unwrap_or_else(|| panic!("no weight 0 before the removal: {lines:#?}"));
    let drained = lines
        .iter()
        .position(|l| l.contains("no active connection left - taking it out"))
        .unwrap_or_else(|| panic!("no drain line: {lines:#?}"));
    assert!(zero < drained, "{lines:#?}");

    // It comes back: weight 1, then steps up to 10 over 3 s.
    let _backend = common::listen(port);
    let lines = d.log_until(&format!("dry-run: ipvsadm -a {rs} -m -w 1"));
    assert!(!lines.iter().any(|l| l.contains("-w 10")), "{lines:#?}");
    let doc = status_json(&sock);
    let r = &doc["virtual_servers"][0]["real_servers"][0];
    assert!(r["slow_start_percent"].as_u64().is_some(), "{r:#}");
    let lines = d.log_until(&format!("dry-run: ipvsadm -e {rs} -m -w 10"));
    let steps: Vec<u32> = lines
        .iter()
        .filter_map(|l| l.split(&format!("ipvsadm -e {rs} -m -w ")).nth(1))
        .filter_map(|w| w.trim().parse().ok())
        .collect();
    // In steps (each second's is checked on paused time and in the
    // guest); a loaded machine may skip some, never go back.
    assert!(!steps.is_empty(), "ramped: {steps:?}");
    assert!(steps.windows(2).all(|w| w[0] < w[1]), "{steps:?}");
    let doc = status_json(&sock);
    let r = &doc["virtual_servers"][0]["real_servers"][0];
    assert_eq!(r["slow_start_percent"], Value::Null, "{r:#}");
    assert_eq!(r["kernel_weight"], 10);

    // Removed (an edit is made as a reload): at weight 0 while it drains,
    // then out.
    let (ok, out, err) = control(
        &sock,
        &format!("remove [192.0.2.1]:tcp:80 [127.0.0.1]:tcp:{port}"),
    );
    assert!(
        ok && out.contains(&format!("ipvsadm -e {rs} -m -w 0")),
        "{out}{err}"
    );
    let lines = d.log_until(&format!("dry-run: ipvsadm -d {rs}"));
    assert!(
        lines
            .iter()
            .any(|l| l.contains("no active connection left - taking it out")),
        "{lines:#?}"
    );
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn an_edit_leaves_tracked_files_as_they_are() {
    let (dir, conf, sock) = setup("edit-init-file");
    let tracked = dir.join("tracked");
    std::fs::write(
        &conf,
        format!(
            "global_defs {{\n    status_socket {}\n}}\n\
             track_file tf {{\n    file {}\n    init_file 0 overwrite\n}}\n\
             virtual_server 192.0.2.1 80 {{\n    lb_algo rr\n    lb_kind NAT\n    protocol TCP\n\
             \x20   real_server 127.0.0.1 8001 {{\n    }}\n}}\n",
            sock.display(),
            tracked.display()
        ),
    )
    .unwrap();
    let d = Daemon::start(&conf);
    d.log_until("Startup complete");
    assert_eq!(std::fs::read_to_string(&tracked).unwrap(), "0\n");
    // Someone writes the tracked file; an edit must not put init_file's
    // value back (a reload would: keepalived's rule).
    std::fs::write(&tracked, "5\n").unwrap();
    let (ok, out, err) = control(&sock, "weight [192.0.2.1]:tcp:80 [127.0.0.1]:tcp:8001 3");
    assert!(ok && out.contains("-w 3"), "{out}{err}");
    assert_eq!(std::fs::read_to_string(&tracked).unwrap(), "5\n");
    kill(Pid::from_raw(d.child.id() as i32), Signal::SIGHUP).unwrap();
    d.log_until("reload: ");
    assert_eq!(std::fs::read_to_string(&tracked).unwrap(), "0\n");
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn plan_shows_a_removed_server_drained_as_the_reload_drains_it() {
    let (dir, conf, sock) = setup("plan-drain");
    let text = |ports: &[u16]| {
        let mut t = format!(
            "global_defs {{\n    status_socket {}\n}}\n\
             virtual_server 192.0.2.1 80 {{\n    lb_algo rr\n    lb_kind NAT\n    protocol TCP\n    drain_timeout 30\n",
            sock.display()
        );
        for p in ports {
            t.push_str(&format!("    real_server 127.0.0.1 {p} {{\n    }}\n"));
        }
        t + "}\n"
    };
    std::fs::write(&conf, text(&[8001, 8002])).unwrap();
    let d = Daemon::start(&conf);
    d.log_until("Startup complete");
    let new = dir.join("new.conf");
    std::fs::write(&new, text(&[8001])).unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_keepalived"))
        .args(["--plan", "--status-socket"])
        .arg(&sock)
        .arg("-f")
        .arg(&new)
        .output()
        .unwrap();
    let plan = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        plan.lines()
            .filter(|l| l.starts_with("ipvsadm"))
            .collect::<Vec<_>>(),
        ["ipvsadm -e -t 192.0.2.1:80 -r 127.0.0.1:8002 -m -w 0"],
        "{plan}"
    );
    drop(d);
    let _ = std::fs::remove_dir_all(dir);
}
