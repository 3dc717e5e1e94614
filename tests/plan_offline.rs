//! `keepalived --plan` with no daemon running predicts the first
//! programming of a real start: on the dry run, the operations the daemon
//! logs before "Startup complete" are exactly those `--plan --dry-run`
//! prints, for configs whose start state is not simply "every server in"
//! (FILE_CHECK, `inhibit_on_failure`, quorum with a sorry server, `alpha`,
//! `lvs_flush`). The kernel-table cases (servers live in the kernel) are
//! unit tests of `daemon::first_programming`.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

fn dir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("krs-plan-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// The `ipvsadm ...` lines a dry-run start programs, in order.
fn started(conf: &Path, sock: &Path) -> Vec<String> {
    let (mut child, out, err) = common::spawn_dry_run_args(conf, &["--status-socket"], sock);
    let log = common::until(&err, "Startup complete");
    let _ = child.kill();
    let _ = child.wait();
    drop(out);
    log.iter()
        .filter_map(|l| l.split_once("dry-run: ipvsadm ").map(|(_, op)| op))
        // Timeouts are not table operations; --plan lists the table's.
        .filter(|op| !op.starts_with("--set"))
        .map(|op| format!("ipvsadm {op}"))
        .collect()
}

/// What `--plan --dry-run` prints with no daemon on `sock`.
fn planned(conf: &Path, sock: &Path) -> Vec<String> {
    let o = Command::new(env!("CARGO_BIN_EXE_keepalived"))
        .args(["--plan", "--dry-run", "--status-socket"])
        .arg(sock)
        .arg("-f")
        .arg(conf)
        .output()
        .expect("run --plan");
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "--plan: {stdout}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let mut lines = stdout.lines();
    let head = lines.next().unwrap_or_default();
    let ops: Vec<String> = lines.map(String::from).collect();
    assert!(
        head.contains(&format!("{} IPVS operation(s)", ops.len())),
        "{stdout}"
    );
    ops
}

fn same(tag: &str, body: &str) -> Vec<String> {
    let d = dir(tag);
    let conf = d.join("keepalived.conf");
    std::fs::write(&conf, body.replace("@DIR@", &d.display().to_string())).unwrap();
    let sock = d.join("status.sock");
    // --plan first: it must predict init_file's values without writing
    // them, and the start that follows writes them.
    let got = planned(&conf, &sock);
    let want = started(&conf, &sock);
    assert_eq!(got, want, "{tag}: --plan against the start");
    let _ = std::fs::remove_dir_all(&d);
    want
}

#[test]
fn offline_plan_equals_the_first_programming_of_a_start() {
    // FILE_CHECK: the file's value (written by init_file, 0 = fault with
    // weight 0) takes one server out from the start; the other's file
    // gives it a dynamic weight.
    let ops = same(
        "file",
        "track_file down {\n file @DIR@/down\n weight 0\n init_file 1\n}\n\
         track_file heavy {\n file @DIR@/heavy\n weight 2\n init_file 3\n}\n\
         virtual_server 192.0.2.1 80 {\n lvs_sched rr\n lvs_method NAT\n protocol TCP\n \
         real_server 127.0.0.1 8081 {\n weight 1\n FILE_CHECK {\n track_file down\n }\n }\n \
         real_server 127.0.0.1 8082 {\n weight 1\n FILE_CHECK {\n track_file heavy\n }\n }\n}\n",
    );
    assert!(
        !ops.iter().any(|o| o.contains("127.0.0.1:8081")),
        "the faulted file keeps 8081 out: {ops:?}"
    );
    assert!(
        ops.iter()
            .any(|o| o.contains("127.0.0.1:8082") && o.contains("-w 7")),
        "1 + 3 x 2: {ops:?}"
    );
    // alpha and inhibit_on_failure: an alpha server starts down, at weight
    // 0 when inhibited; quorum lost with a sorry server brings it in.
    let ops = same(
        "alpha",
        "virtual_server 192.0.2.2 80 {\n lvs_sched rr\n lvs_method NAT\n protocol TCP\n \
         quorum 2\n sorry_server 127.0.0.9 80\n \
         real_server 127.0.0.1 8081 {\n weight 1\n inhibit_on_failure\n \
         TCP_CHECK {\n alpha\n connect_timeout 1\n delay_loop 60\n }\n }\n \
         real_server 127.0.0.1 8082 {\n weight 1\n \
         TCP_CHECK {\n connect_timeout 1\n delay_loop 60\n }\n }\n}\n",
    );
    assert!(
        ops.iter()
            .any(|o| o.contains("127.0.0.1:8081") && o.contains("-w 0")),
        "inhibited alpha server at weight 0: {ops:?}"
    );
    assert!(
        ops.iter().any(|o| o.contains("127.0.0.9:80")),
        "quorum 2 > 1: the sorry server: {ops:?}"
    );
    // lvs_flush: the flush comes first.
    let ops = same(
        "flush",
        "global_defs {\n lvs_flush\n}\n\
         virtual_server 192.0.2.3 80 {\n lvs_sched rr\n lvs_method DR\n protocol TCP\n \
         real_server 192.0.2.10 80 {\n }\n}\n",
    );
    assert_eq!(
        ops.first().map(String::as_str),
        Some("ipvsadm -C"),
        "{ops:?}"
    );
}
