//! The status socket, `keepalived --status`, the metrics endpoint and
//! `--plan`, against a running daemon (dry run) whose backend fails and
//! recovers.

mod common;

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use serde_json::Value;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_keepalived");

use common::{free_port, free_ports, metrics, status_json, wait_status, Daemon};

fn metric(text: &str, line_start: &str) -> Option<f64> {
    text.lines()
        .find(|l| l.starts_with(line_start))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
}

fn setup(name: &str) -> (PathBuf, PathBuf, PathBuf) {
    let dir = std::env::temp_dir().join(format!("kars-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let conf = dir.join("keepalived.conf");
    let sock = dir.join("status.sock");
    (dir, conf, sock)
}

fn conf_text(sock: &Path, metrics_port: u16, ports: &[u16], weight: u32) -> String {
    let mut s = format!(
        "global_defs {{\n    status_socket {}\n    metrics_listen 127.0.0.1 {metrics_port}\n}}\n\
         virtual_server 192.0.2.1 80 {{\n    delay_loop 1\n    lb_algo rr\n    lb_kind NAT\n    protocol TCP\n",
        sock.display()
    );
    for (i, p) in ports.iter().enumerate() {
        let w = if i == 0 { weight } else { 1 };
        s.push_str(&format!(
            "    real_server 127.0.0.1 {p} {{\n        weight {w}\n        TCP_CHECK {{\n            connect_timeout 1\n            delay_before_retry 1\n            retry 1\n            warmup 0\n        }}\n    }}\n"
        ));
    }
    s.push_str("}\n");
    s
}

fn last_transition(doc: &Value) -> Value {
    doc["transitions"]
        .as_array()
        .and_then(|t| t.last())
        .cloned()
        .unwrap_or_else(|| panic!("no transition: {doc:#}"))
}

/// `keepalived --plan -f FILE` against the daemon on `sock`.
fn plan(sock: &Path, file: &Path) -> std::process::Output {
    Command::new(BIN)
        .args(["--plan", "--status-socket"])
        .arg(sock)
        .arg("-f")
        .arg(file)
        .output()
        .expect("run --plan")
}

fn rs(doc: &Value, port: u16) -> &Value {
    doc["virtual_servers"][0]["real_servers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["port"] == port)
        .unwrap_or_else(|| panic!("no real server on {port}: {doc:#}"))
}

#[test]
fn status_and_metrics_follow_a_backend_that_fails_and_recovers() {
    let (dir, conf, sock) = setup("status");
    let backend = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = backend.local_addr().unwrap().port();
    let mport = free_port();
    std::fs::write(&conf, conf_text(&sock, mport, &[port], 3)).unwrap();
    let d = Daemon::start(&conf);
    d.log_until("Startup complete");

    let doc = wait_status(&sock, "healthy", |d| {
        rs(d, port)["checkers"][0]["runs"].as_u64() >= Some(1)
    });
    let r = rs(&doc, port);
    assert_eq!(r["state"], "healthy");
    assert_eq!(r["effective_weight"], 3);
    assert_eq!(r["kernel_weight"], 3);
    assert_eq!(r["checkers"][0]["type"], "TCP_CHECK");
    assert_eq!(r["checkers"][0]["last_result"], "success");
    assert!(r["checkers"][0]["last_latency_ms"].as_f64().is_some());
    assert!(r["checkers"][0]["next_run_in_s"].as_f64().unwrap() <= 1.0);
    assert_eq!(doc["virtual_servers"][0]["quorum"], "up");

    // The backend goes away: retrying (still in the pool), then unhealthy.
    drop(backend);
    let doc = wait_status(&sock, "unhealthy", |d| rs(d, port)["state"] == "unhealthy");
    let r = rs(&doc, port);
    assert_eq!(r["alive"], false);
    assert_eq!(r["kernel_weight"], Value::Null);
    assert!(r["checkers"][0]["last_error"]
        .as_str()
        .unwrap()
        .contains("refused"));
    let t = last_transition(&doc);
    assert_eq!(t["from"], "retrying", "{t}");
    assert_eq!(t["to"], "unhealthy");
    assert_eq!(t["checker"], "TCP_CHECK");
    assert!(t["reason"].as_str().unwrap().contains("refused"), "{t}");
    assert_eq!(doc["virtual_servers"][0]["quorum"], "down");
    let m = metrics(mport);
    let labels = format!("{{vs=\"[192.0.2.1]:tcp:80\",rs=\"[127.0.0.1]:tcp:{port}\"}}");
    assert_eq!(
        metric(&m, &format!("keepalived_rs_real_server_up{labels}")),
        Some(0.0),
        "{m}"
    );
    assert_eq!(
        metric(
            &m,
            "keepalived_rs_real_server_transitions_total{direction=\"down\"}"
        ),
        Some(1.0)
    );
    assert!(
        metric(
            &m,
            "keepalived_rs_check_errors_total{type=\"TCP_CHECK\",reason=\"refused\"}"
        )
        .unwrap()
            >= 2.0,
        "{m}"
    );
    assert!(
        metric(
            &m,
            "keepalived_rs_check_duration_seconds_count{type=\"TCP_CHECK\"}"
        )
        .unwrap()
            >= 3.0
    );
    assert!(metric(&m, "keepalived_rs_loop_heartbeat_timestamp_seconds").unwrap() > 1.6e9);
    // The structured log line.
    let log = d.log_until("transition {");
    let line = log.last().unwrap();
    let json: Value = serde_json::from_str(line.split_once("transition ").unwrap().1).unwrap();
    assert_eq!(json["to"], "unhealthy");
    assert_eq!(json["rs"], format!("[127.0.0.1]:tcp:{port}"));

    // Back: healthy again, the transition says why.
    let backend = common::listen(port);
    let doc = wait_status(&sock, "recovered", |d| rs(d, port)["state"] == "healthy");
    let t = last_transition(&doc);
    assert_eq!(
        (t["from"].as_str(), t["to"].as_str()),
        (Some("unhealthy"), Some("healthy"))
    );
    assert_eq!(t["reason"], "success");
    assert_eq!(rs(&doc, port)["kernel_weight"], 3);
    let m = metrics(mport);
    assert_eq!(
        metric(&m, &format!("keepalived_rs_real_server_up{labels}")),
        Some(1.0)
    );
    assert_eq!(
        metric(
            &m,
            "keepalived_rs_real_server_transitions_total{direction=\"up\"}"
        ),
        Some(1.0)
    );
    assert!(metric(&m, "keepalived_rs_ipvs_operations_total{result=\"ok\"}").unwrap() >= 3.0);

    // The human table.
    let out = Command::new(BIN)
        .args(["--status", "--status-socket"])
        .arg(&sock)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains(&format!("[127.0.0.1]:tcp:{port}")), "{text}");
    assert!(text.contains("unhealthy -> healthy"), "{text}");
    drop(backend);
    drop(d);
    assert!(!sock.exists(), "the socket is removed at stop");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
#[cfg_attr(
    not(feature = "root"),
    ignore = "needs root: cargo test --features root"
)]
fn the_status_socket_is_for_root_only() {
    assert!(
        nix::unistd::Uid::effective().is_root(),
        "this test needs root (it connects as nobody)"
    );
    let (dir, conf, sock) = setup("perm");
    let [mport, port] = free_ports();
    std::fs::write(&conf, conf_text(&sock, mport, &[port], 1)).unwrap();
    let d = Daemon::start(&conf);
    d.log_until("Startup complete");
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let meta = std::fs::metadata(&sock).unwrap();
    assert_eq!(meta.permissions().mode() & 0o777, 0o600);
    assert_eq!(meta.uid(), 0);
    // The directory must let nobody reach the socket, so that only the
    // socket's own mode stands in the way.
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    use std::os::unix::process::CommandExt;
    let out = Command::new(BIN)
        .args(["--status", "--status-socket"])
        .arg(&sock)
        .uid(65534)
        .gid(65534)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("Permission denied"), "{err}");
    // Root gets through.
    assert_eq!(status_json(&sock)["daemon"]["dry_run"], true);
    drop(d);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn plan_predicts_what_the_following_sighup_does() {
    let (dir, conf, sock) = setup("plan");
    let a = TcpListener::bind("127.0.0.1:0").unwrap();
    let b = TcpListener::bind("127.0.0.1:0").unwrap();
    let (pa, pb) = (
        a.local_addr().unwrap().port(),
        b.local_addr().unwrap().port(),
    );
    // Chosen while a and b hold theirs: none is handed out twice.
    let [mport, pc] = free_ports();
    std::fs::write(&conf, conf_text(&sock, mport, &[pa, pb], 2)).unwrap();
    let d = Daemon::start(&conf);
    d.log_until("Startup complete");
    // b fails first, so the plan must carry its state: it stays out.
    drop(b);
    wait_status(&sock, "b down", |d| rs(d, pb)["state"] == "unhealthy");
    let new = dir.join("new.conf");
    std::fs::write(&new, conf_text(&sock, mport, &[pa, pb, pc], 7)).unwrap();
    let out = plan(&sock, &new);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    let mut planned: Vec<String> = text
        .lines()
        .filter_map(|l| l.strip_prefix("ipvsadm "))
        .map(String::from)
        .collect();
    planned.sort();
    assert_eq!(
        planned,
        vec![
            format!("-a -t 192.0.2.1:80 -r 127.0.0.1:{pc} -m -w 1"),
            format!("-e -t 192.0.2.1:80 -r 127.0.0.1:{pa} -m -w 7"),
        ],
        "{text}"
    );
    // A file the reload would refuse is reported as such, not planned.
    let broken = dir.join("broken.conf");
    std::fs::write(
        &broken,
        conf_text(&sock, mport, &[pa], 7).replace("127.0.0.1 ", "127.0.0.300 "),
    )
    .unwrap();
    let out = plan(&sock, &broken);
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("would be refused"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The reload does exactly that.
    while d.err.try_recv().is_ok() {}
    std::fs::copy(&new, &conf).unwrap();
    kill(Pid::from_raw(d.child.id() as i32), Signal::SIGHUP).unwrap();
    d.log_until("Reloading configuration");
    let log = d.log_until("reload:");
    let mut done: Vec<String> = log
        .iter()
        .filter_map(|l| {
            l.split_once("dry-run: ipvsadm ")
                .map(|(_, op)| op.to_string())
        })
        .collect();
    done.sort();
    assert_eq!(done, planned, "{log:#?}");
    drop(a);
    drop(d);
    let _ = std::fs::remove_dir_all(&dir);
}
