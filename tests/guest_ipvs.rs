//! Real-kernel IPVS scenarios, side by side with keepalived 2.2.7.
//!
//! Boots the guests of `compat-tests/guest.sh` (three side by side, each with
//! a third of the scenarios: `GUEST_SHARDS`), runs every scenario of
//! `compat-tests/scenarios/` with keepalived and then with our binary, and
//! compares `ipvsadm -S -n` while each runs and after each stops. Our own
//! netlink dump (`--ipvs-save`) must read the same table as ipvsadm. A
//! scenario may pin ours to `expected-ours.running` where we differ from
//! keepalived on purpose (`docs/compat.md`).
//!
//! The guest needs root (apt-get, qemu): it runs with `--features guest`
//! (`scripts/test.sh` turns it on), and there it never skips.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

/// `(scenario, impl, phase)` → snapshot lines.
type Snapshots = BTreeMap<(String, String, String), Vec<String>>;

fn parse(out: &str) -> Snapshots {
    let mut snaps = Snapshots::new();
    let mut cur: Option<((String, String, String), Vec<String>)> = None;
    for line in out.lines() {
        if let Some(rest) = line.strip_prefix("@@BEGIN ") {
            let f: Vec<&str> = rest.split_whitespace().collect();
            if f.len() == 3 {
                cur = Some(((f[0].into(), f[1].into(), f[2].into()), Vec::new()));
            }
        } else if line == "@@END" {
            if let Some((k, v)) = cur.take() {
                snaps.insert(k, v);
            }
        } else if let Some((_, v)) = cur.as_mut() {
            if !line.trim().is_empty() {
                v.push(line.to_string());
            }
        }
    }
    snaps
}

fn sorted(mut v: Vec<String>) -> Vec<String> {
    v.sort();
    v
}

/// One phase: ours must equal keepalived's, or the scenario's
/// `expected-ours.PHASE` where we differ on purpose (`docs/compat.md`),
/// and then keepalived must still differ (unless the phase is listed in
/// `keepalived-varies`).
fn compare_phase(dir: &Path, phase: &str, ka: &[String], ours: &[String]) -> Vec<String> {
    let pin = dir.join(format!("expected-ours.{phase}"));
    let mut problems = Vec::new();
    if pin.exists() {
        let want: Vec<String> = std::fs::read_to_string(&pin)
            .expect("read pin")
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(String::from)
            .collect();
        if sorted(want.clone()) != sorted(ours.to_vec()) {
            problems.push(format!(
                "{phase}: ours differs from expected-ours.{phase}\n  want: {want:?}\n  ours: {ours:?}"
            ));
        }
        // keepalived-varies: phases where keepalived's own result depends
        // on timing (a signal racing its reload), so it may match.
        let varies = std::fs::read_to_string(dir.join("keepalived-varies"))
            .is_ok_and(|v| v.lines().any(|l| l.trim() == phase));
        if ka == ours && !varies {
            problems.push(format!(
                "{phase}: documented difference no longer seen (keepalived now matches); remove the pin"
            ));
        }
    } else if ka != ours {
        problems.push(format!(
            "{phase}:\n  keepalived: {ka:?}\n  ours:       {ours:?}"
        ));
    }
    problems
}

/// Applies `--plan` output (ipvsadm commands, as `Op` prints them) to a
/// `-S -n` snapshot.
fn apply_plan(before: &[String], ops: &[String]) -> Vec<String> {
    // "-t 10.0.0.1:80" / "-f 5": a service key is the two words after the
    // command; a destination adds "-r ADDR".
    fn svc(words: &[&str]) -> String {
        words.get(1..3).map(|w| w.join(" ")).unwrap_or_default()
    }
    fn dest(words: &[&str]) -> String {
        words.get(1..5).map(|w| w.join(" ")).unwrap_or_default()
    }
    let mut lines: Vec<String> = before.to_vec();
    for op in ops {
        let w: Vec<&str> = op.split_whitespace().collect();
        let rest = w.get(1..).map(|r| r.join(" ")).unwrap_or_default();
        let is_svc = |l: &String, key: &str| {
            l.starts_with(&format!("-A {key} ")) || *l == format!("-A {key}")
        };
        let of_svc = |l: &String, key: &str| l.starts_with(&format!("-a {key} "));
        let is_dest = |l: &String, key: &str| {
            l.starts_with(&format!("-a {key} ")) || *l == format!("-a {key}")
        };
        match w.first().copied() {
            Some("-A") | Some("-a") => lines.push(op.clone()),
            Some("-E") => {
                let k = svc(&w);
                lines.retain(|l| !is_svc(l, &k));
                lines.push(format!("-A {rest}"));
            }
            Some("-D") => {
                let k = svc(&w);
                lines.retain(|l| !is_svc(l, &k) && !of_svc(l, &k));
            }
            Some("-e") => {
                let k = dest(&w);
                lines.retain(|l| !is_dest(l, &k));
                lines.push(format!("-a {rest}"));
            }
            Some("-d") => {
                let k = dest(&w);
                lines.retain(|l| !is_dest(l, &k));
            }
            _ => lines.push(format!("unparsed plan line: {op}")),
        }
    }
    lines.sort();
    lines
}

/// A `plan FILE` event: ours's `--plan` applied to the table before must
/// give the table the following `reload FILE` made.
fn plan_property(name: &str, snaps: &Snapshots) -> Vec<String> {
    let mut problems = Vec::new();
    for ((n, i, p), ops) in snaps {
        if n != name || i != "ours" || !p.starts_with("plan-") || p.ends_with("-before") {
            continue;
        }
        let file = &p["plan-".len()..];
        let key = |phase: String| (name.to_string(), "ours".to_string(), phase);
        let (Some(before), Some(after)) = (
            snaps.get(&key(format!("plan-{file}-before"))),
            snaps.get(&key(format!("reloaded-{file}"))),
        ) else {
            problems.push(format!("{p}: snapshots before/after the reload missing"));
            continue;
        };
        if ops.is_empty() {
            problems.push(format!("{p}: --plan predicted nothing"));
        }
        let predicted = apply_plan(before, ops);
        let after = sorted(after.clone());
        if predicted != after {
            problems.push(format!(
                "{p}: --plan {ops:?} predicts\n  {predicted:?}\nbut the reload made\n  {after:?}"
            ));
        }
    }
    problems
}

/// `status NAME` events: ours's `--status --json` must show every real
/// server in the state the scenario's `status-NAME.expect` gives (lines
/// `RS_NAME STATE`), and the transitions must name a reason.
fn status_property(dir: &Path, name: &str, snaps: &Snapshots) -> Vec<String> {
    let mut problems = Vec::new();
    for ((n, i, p), lines) in snaps {
        if n != name || i != "ours" || !p.starts_with("status-") {
            continue;
        }
        let doc: serde_json::Value = match serde_json::from_str(&lines.join("\n")) {
            Ok(d) => d,
            Err(e) => {
                problems.push(format!("{p}: not JSON ({e}): {lines:?}"));
                continue;
            }
        };
        let Ok(expect) = std::fs::read_to_string(dir.join(format!("{p}.expect"))) else {
            problems.push(format!("{p}: no {p}.expect in the scenario"));
            continue;
        };
        for l in expect.lines().filter(|l| !l.trim().is_empty()) {
            let (rs, state) = l.rsplit_once(' ').unwrap_or((l, ""));
            let found = doc["virtual_servers"]
                .as_array()
                .into_iter()
                .flatten()
                .flat_map(|v| v["real_servers"].as_array().cloned().unwrap_or_default())
                .find(|r| r["name"] == rs);
            match found {
                Some(r) if r["state"] == state => {}
                Some(r) => problems.push(format!("{p}: {rs} is {} not {state}", r["state"])),
                None => problems.push(format!("{p}: {rs} not in the status")),
            }
        }
        for t in doc["transitions"].as_array().into_iter().flatten() {
            if t["reason"].as_str().is_none_or(str::is_empty) {
                problems.push(format!("{p}: transition without a reason: {t}"));
            }
        }
    }
    problems
}

/// A `crash` event: every snapshot ours took while it restarted over the
/// live table must hold every line of the scenario's `crash-healthy`.
fn crash_property(dir: &Path, name: &str, snaps: &Snapshots) -> Vec<String> {
    let Ok(healthy) = std::fs::read_to_string(dir.join("crash-healthy")) else {
        return Vec::new();
    };
    let healthy: Vec<&str> = healthy.lines().filter(|l| !l.trim().is_empty()).collect();
    let taken: Vec<(&String, &Vec<String>)> = snaps
        .iter()
        .filter(|((n, i, p), _)| n == name && i == "ours" && p.starts_with("crash-"))
        .map(|((_, _, p), v)| (p, v))
        .collect();
    let mut problems = Vec::new();
    if taken.len() < 10 {
        problems.push(format!("crash: only {} snapshots taken", taken.len()));
    }
    for (phase, lines) in taken {
        let missing: Vec<&&str> = healthy
            .iter()
            .filter(|h| !lines.iter().any(|l| l == **h))
            .collect();
        if !missing.is_empty() {
            problems.push(format!(
                "{phase}: healthy entries left the table: {missing:?}"
            ));
        }
    }
    problems
}

/// The scenario directories (those with a keepalived.conf).
fn scenario_names(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .expect("scenarios")
        .filter_map(|e| e.ok())
        .filter(|e| e.path().join("keepalived.conf").exists())
        .map(|e| e.file_name().to_string_lossy().to_string())
        .collect()
}

/// `cp -r from to`.
fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("shard dir");
    for e in std::fs::read_dir(from).expect("scenario dir").flatten() {
        let p = e.path();
        if p.is_dir() {
            copy_dir(&p, &to.join(e.file_name()));
        } else {
            std::fs::copy(&p, to.join(e.file_name())).expect("copy a scenario file");
        }
    }
}

#[test]
#[cfg_attr(
    not(feature = "guest"),
    ignore = "needs root, qemu and keepalived for the IPVS guest: cargo test --features guest"
)]
fn ipvs_tables_match_keepalived_in_a_real_kernel() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let scen_dir = root.join("compat-tests/scenarios");
    assert!(
        nix::unistd::Uid::effective().is_root(),
        "the guest IPVS scenarios need root (apt-get, qemu)"
    );
    // The scenarios are split over guests booted side by side, one vCPU
    // each: the scenarios mostly wait (checkers, settling tables), so one
    // guest leaves the machine's cores idle. GUEST_SHARDS, 3 by default
    // (measured on 2 cores: one guest 811 s, two 471 s, three 376 s).
    let shards: usize = std::env::var("GUEST_SHARDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|n| *n >= 1)
        .unwrap_or(3);
    let mut all: Vec<String> = scenario_names(&scen_dir);
    all.sort();
    let work = std::env::temp_dir().join(format!("kr-guest-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&work);
    let children: Vec<_> = (0..shards)
        .map(|k| {
            let ship = work.join(format!("shard{k}"));
            for name in all.iter().skip(k).step_by(shards) {
                copy_dir(&scen_dir.join(name), &ship.join(name));
            }
            Command::new(root.join("compat-tests/guest.sh"))
                .arg(env!("CARGO_BIN_EXE_keepalived"))
                .arg(root.join("compat-tests/ipvs-scenarios.sh"))
                .arg(&ship)
                .env("GUEST_SMP", if shards > 1 { "1" } else { "2" })
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .expect("run compat-tests/guest.sh")
        })
        .collect();
    let mut stdout = String::new();
    for c in children {
        let out = c.wait_with_output().expect("guest.sh output");
        let o = String::from_utf8_lossy(&out.stdout).to_string();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_ne!(
            out.status.code(),
            Some(3),
            "the guest did not start:\n{stderr}\n{o}"
        );
        assert!(out.status.success(), "guest payload failed:\n{stderr}\n{o}");
        stdout.push_str(&o);
    }
    let _ = std::fs::remove_dir_all(&work);
    let snaps = parse(&stdout);

    let names = all;
    let mut failures = Vec::new();
    let get = |n: &str, i: &str, p: &str| snaps.get(&(n.into(), i.into(), p.into())).cloned();
    for name in &names {
        let mut problems = Vec::new();
        let ka_run = get(name, "keepalived", "running");
        let ours_run = get(name, "ours", "running");
        let ours_save = get(name, "ours", "save");
        let (Some(ka_run), Some(ours_run), Some(ours_save)) = (ka_run, ours_run, ours_save) else {
            failures.push(format!("{name}: snapshots missing"));
            continue;
        };
        let pinned = scen_dir.join(name).join("expected-ours.running");
        // Every snapshot keepalived's run printed (running, after stop,
        // the thresholds/timeouts/daemons views, the events' snapshots)
        // must be the same in ours, unless pinned.
        let mut phases: Vec<String> = snaps
            .keys()
            .filter(|(n, i, p)| {
                n == name
                    && i == "keepalived"
                    && p != "log"
                    && !p.starts_with("crash-")
                    && !p.starts_with("status-")
            })
            .map(|(_, _, p)| p.clone())
            .collect();
        phases.sort();
        for phase in &phases {
            let ka = get(name, "keepalived", phase).unwrap_or_default();
            let ours = get(name, "ours", phase).unwrap_or_default();
            problems.extend(compare_phase(&scen_dir.join(name), phase, &ka, &ours));
        }
        problems.extend(crash_property(&scen_dir.join(name), name, &snaps));
        problems.extend(plan_property(name, &snaps));
        problems.extend(status_property(&scen_dir.join(name), name, &snaps));
        if ka_run.is_empty() && !pinned.exists() {
            problems.push("keepalived programmed nothing: the scenario tests nothing".into());
        }
        if ours_save != ours_run {
            problems.push(format!(
                "--ipvs-save (our netlink dump) disagrees with ipvsadm:\n  ipvsadm: {ours_run:?}\n  ours:    {ours_save:?}"
            ));
        }
        let ka_stop = get(name, "keepalived", "stopped").unwrap_or_default();
        for required in [
            "stopped",
            "running-thresholds",
            "running-timeouts",
            "running-daemons",
        ] {
            if !phases.iter().any(|p| p == required) {
                problems.push(format!("snapshot {required} missing"));
            }
        }
        let verdict = if problems.is_empty() {
            "match"
        } else {
            "DIFFER"
        };
        eprintln!(
            "scenario {name:<22} {verdict}  ({} running entries, {} after stop)",
            ka_run.len(),
            ka_stop.len()
        );
        if !problems.is_empty() {
            let log = get(name, "ours", "log").unwrap_or_default().join("\n");
            failures.push(format!("{name}:\n{}\nour log:\n{log}", problems.join("\n")));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} scenarios differ:\n\n{}",
        failures.len(),
        names.len(),
        failures.join("\n\n")
    );
}
