//! Fixture folders: every `tests/fixtures/*/NAME.conf` is loaded as
//! `keepalived -t` would, and its `NAME.expected` lists what must hold:
//! `exit N`, `line L: TEXT` (a diagnostic at line L containing TEXT),
//! `hint L: TEXT`, `json POINTER = VALUE` (a field of the resolved model),
//! `absent POINTER` (no such field), `no-diagnostics`. Adding a case is adding two files.

use keepalived::config::{load, LoadOptions};
use std::path::Path;

fn run_dir(dir: &Path, failures: &mut Vec<String>) -> usize {
    let mut n = 0;
    let mut entries: Vec<_> = std::fs::read_dir(dir).unwrap().flatten().collect();
    entries.sort_by_key(|e| e.path());
    for e in entries {
        let p = e.path();
        if p.extension().and_then(|x| x.to_str()) != Some("conf") {
            continue;
        }
        let exp_path = p.with_extension("expected");
        let Ok(expected) = std::fs::read_to_string(&exp_path) else {
            failures.push(format!("{}: no .expected file", p.display()));
            continue;
        };
        n += 1;
        let opts = LoadOptions {
            config_id: "fixture".into(),
            all_config: false,
            config_test: true,
        };
        let loaded = load(&p, &opts);
        let json = serde_json::to_value(&loaded.config).unwrap();
        let diags = loaded.diagnostics.items();
        for line in expected
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.starts_with('#'))
        {
            let ok = if let Some(code) = line.strip_prefix("exit ") {
                loaded.config_test_exit_code().to_string() == code.trim()
            } else if line == "no-diagnostics" {
                diags
                    .iter()
                    .all(|d| d.class == keepalived::config::diag::ErrClass::Ok)
            } else if let Some(rest) = line.strip_prefix("line ") {
                let (l, text) = rest.split_once(':').unwrap();
                let l: usize = l.trim().parse().unwrap();
                diags
                    .iter()
                    .any(|d| d.line == l && d.message.contains(text.trim()))
            } else if let Some(rest) = line.strip_prefix("hint ") {
                let (l, text) = rest.split_once(':').unwrap();
                let l: usize = l.trim().parse().unwrap();
                diags.iter().any(|d| {
                    d.line == l && d.hint.as_deref().is_some_and(|h| h.contains(text.trim()))
                })
            } else if let Some(ptr) = line.strip_prefix("absent ") {
                json.pointer(ptr.trim()).is_none()
            } else if let Some(rest) = line.strip_prefix("json ") {
                let (ptr, val) = rest.split_once(" = ").unwrap();
                let want: serde_json::Value = serde_json::from_str(val.trim()).unwrap();
                json.pointer(ptr.trim()) == Some(&want)
            } else {
                panic!("{}: bad expectation '{line}'", exp_path.display());
            };
            if !ok {
                failures.push(format!(
                    "{}: expectation failed: {line}\n  exit={} diagnostics:\n{}",
                    p.display(),
                    loaded.config_test_exit_code(),
                    diags
                        .iter()
                        .map(|d| format!("    {d}"))
                        .collect::<Vec<_>>()
                        .join("\n")
                ));
            }
        }
    }
    n
}

#[test]
fn fixtures() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let mut failures = Vec::new();
    let mut n = 0;
    for sub in ["valid", "invalid"] {
        n += run_dir(&root.join(sub), &mut failures);
    }
    assert!(n >= 10, "only {n} fixtures found");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn examples_load_cleanly() {
    // examples/beyond/ shows the extension keywords: ours only.
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples");
    let mut n = 0;
    let entries = std::fs::read_dir(&dir)
        .unwrap()
        .chain(std::fs::read_dir(dir.join("beyond")).unwrap());
    for e in entries.flatten() {
        // examples/ also holds the benchmark's backend program.
        if e.path().extension().is_none_or(|x| x != "conf") {
            continue;
        }
        let opts = LoadOptions {
            config_id: "example".into(),
            all_config: false,
            config_test: true,
        };
        let loaded = load(&e.path(), &opts);
        assert_eq!(
            loaded.config_test_exit_code(),
            0,
            "{}: {:?}",
            e.path().display(),
            loaded.diagnostics.items()
        );
        n += 1;
    }
    assert!(n >= 5, "examples: {n}");
}

#[test]
#[cfg_attr(
    not(feature = "reference"),
    ignore = "needs keepalived 2.2.7 installed: cargo test --features reference"
)]
fn examples_pass_keepalived_s_own_check() {
    // The examples are for operators of keepalived too: 2.2.7 must take
    // them as they are.
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples");
    let mut n = 0;
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        if e.path().extension().is_none_or(|x| x != "conf") {
            continue;
        }
        let ka = std::process::Command::new("/usr/sbin/keepalived")
            .arg("-t")
            .arg("-f")
            .arg(e.path())
            .output()
            .expect("keepalived 2.2.7 (apt-get install keepalived) runs the examples too");
        assert_eq!(
            ka.status.code(),
            Some(0),
            "keepalived -t {}: {}",
            e.path().display(),
            String::from_utf8_lossy(&ka.stderr)
        );
        n += 1;
    }
    assert!(n >= 5, "examples: {n}");
}
