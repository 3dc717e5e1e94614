//! The module rule of `docs/architecture.md`, checked on the source: each
//! module uses only the modules below it, so there is no import cycle
//! between `config`, `health`, `check`, `lvs`, `ipvs` and `daemon`, and
//! `genhash` stands on its own. Unit tests are held to the rule too,
//! with no exception.

use std::path::{Path, PathBuf};

/// Which top-level modules each module may name (`crate::X`).
const MAY_USE: &[(&str, &[&str])] = &[
    ("config", &[]),
    ("health", &["config"]),
    ("check", &["config", "health", "services"]),
    ("ipvs", &[]),
    ("lvs", &["config", "health", "ipvs"]),
    ("vrrp", &["config"]),
    ("bfd", &["config"]),
    (
        "status",
        &[
            "config", "health", "check", "lvs", "ipvs", "control", "vrrp", "bfd",
        ],
    ),
    (
        "metrics",
        &["config", "health", "check", "lvs", "ipvs", "status"],
    ),
    ("print", &["config", "health", "check", "lvs", "ipvs"]),
    ("control", &[]),
    ("services", &["config"]),
    (
        "snmp",
        &[
            "config", "vrrp", "bfd", "health", "check", "lvs", "ipvs", "status",
        ],
    ),
    ("cli", &[]),
    ("genhash", &["check"]),
];

const MODULES: &[&str] = &[
    "config", "health", "check", "ipvs", "lvs", "status", "metrics", "print", "control", "cli",
    "daemon", "genhash", "vrrp", "bfd", "services", "snmp",
];

fn files(p: &Path, out: &mut Vec<PathBuf>) {
    if p.is_dir() {
        for e in std::fs::read_dir(p).unwrap().flatten() {
            files(&e.path(), out);
        }
    } else if p.extension().is_some_and(|e| e == "rs") {
        out.push(p.to_path_buf());
    }
}

/// The module's own source files: `src/X.rs` and `src/X/**`.
fn sources(m: &str) -> Vec<PathBuf> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut out = Vec::new();
    files(&src.join(m), &mut out);
    let single = src.join(format!("{m}.rs"));
    if single.exists() {
        out.push(single);
    }
    out
}

/// The top-level modules a line of code names, outside comments.
fn named(line: &str) -> Vec<&'static str> {
    let code = line.split("//").next().unwrap_or("");
    MODULES
        .iter()
        .copied()
        .filter(|m| {
            code.match_indices(&format!("crate::{m}")).any(|(i, _)| {
                let after = code[i + "crate::".len() + m.len()..].chars().next();
                !after.is_some_and(|c| c.is_alphanumeric() || c == '_')
            })
        })
        .collect()
}

#[test]
fn modules_use_only_the_modules_below_them() {
    let mut problems = Vec::new();
    for (m, allowed) in MAY_USE {
        let srcs = sources(m);
        assert!(!srcs.is_empty(), "no source for {m}");
        for f in srcs {
            let text = std::fs::read_to_string(&f).unwrap();
            for (n, line) in text.lines().enumerate() {
                if line.split("//").next().unwrap_or("").contains("crate::{") {
                    problems.push(format!(
                        "{}:{}: name the modules one by one (`use crate::{{..}}` hides them from this rule)",
                        f.display(),
                        n + 1
                    ));
                }
                for used in named(line) {
                    if used != *m && !allowed.contains(&used) {
                        problems.push(format!(
                            "{}:{}: {m} uses {used}: {}",
                            f.display(),
                            n + 1,
                            line.trim()
                        ));
                    }
                }
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn the_rule_sees_a_use_it_forbids() {
    // The check itself: a line naming a forbidden module is caught, one
    // naming a longer name or only in a comment is not.
    assert_eq!(named("use crate::lvs::desired::Health;"), vec!["lvs"]);
    assert_eq!(
        named("let x = crate::lvsx::y; // crate::daemon"),
        Vec::<&str>::new()
    );
}

#[test]
fn the_genhash_binary_does_not_link_the_daemon() {
    let bin = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/bin/genhash.rs");
    let text = std::fs::read_to_string(bin).unwrap();
    assert!(!text.contains("daemon"), "{text}");
    for f in sources("genhash") {
        let text = std::fs::read_to_string(&f).unwrap();
        assert!(!text.contains("crate::daemon"), "{}", f.display());
    }
}

/// Whether a file's code reads the global settings kept as written
/// (`GlobalDefs::other`) or `global_flag`: only `config/` may, and puts what
/// the rest needs in typed fields.
fn reads_raw_globals(text: &str) -> Vec<usize> {
    let code: Vec<&str> = text
        .lines()
        .map(|l| l.split("//").next().unwrap_or(""))
        .collect();
    let mut at = Vec::new();
    for (n, l) in code.iter().enumerate() {
        let joined = match code.get(n + 1) {
            Some(next) => format!("{}{}", l.trim(), next.trim()),
            None => l.trim().to_string(),
        };
        let raw = (l.contains("global_defs") || l.trim().starts_with("g."))
            && (joined.contains("global_defs.other") || joined.contains("g.other"))
            || l.contains("global_flag(");
        if raw && !at.contains(&(n + 1)) {
            at.push(n + 1);
        }
    }
    at
}

#[test]
fn only_config_reads_the_raw_global_settings() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut all = Vec::new();
    files(&src, &mut all);
    let config = src.join("config");
    let mut problems = Vec::new();
    for f in all.iter().filter(|f| !f.starts_with(&config)) {
        let text = std::fs::read_to_string(f).unwrap();
        for n in reads_raw_globals(&text) {
            problems.push(format!("{}:{n}", f.display()));
        }
    }
    assert!(
        problems.is_empty(),
        "raw global settings read outside src/config:\n{}",
        problems.join("\n")
    );
    // The check itself.
    assert_eq!(
        reads_raw_globals("let u = cfg\n    .global_defs\n    .other\n    .iter();"),
        vec![2]
    );
    assert_eq!(reads_raw_globals("x.global_flag(cfg, \"a\")"), vec![1]);
    assert!(reads_raw_globals("// cfg.global_defs.other").is_empty());
}

/// The daemon's subsystems (`daemon/bfd`, `daemon/checker`,
/// `daemon/vrrp`) talk to the shell through `daemon::subsystem` only, and
/// not to each other.
#[test]
fn subsystems_import_neither_the_shell_nor_each_other() {
    const SUBSYSTEMS: &[&str] = &["bfd", "checker", "vrrp"];
    const ALLOWED: &[&str] = &[];
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/daemon");
    let mut problems = Vec::new();
    for me in SUBSYSTEMS {
        let mut fs = Vec::new();
        files(&src.join(me), &mut fs);
        assert!(!fs.is_empty(), "no source for daemon/{me}");
        for f in fs {
            let text = std::fs::read_to_string(&f).unwrap();
            for (n, line) in text.lines().enumerate() {
                let code = line.split("//").next().unwrap_or("");
                let mut names = vec!["super::shell".to_string(), "daemon::shell".to_string()];
                for other in SUBSYSTEMS.iter().filter(|o| *o != me) {
                    names.push(format!("super::{other}::"));
                    names.push(format!("daemon::{other}::"));
                }
                if names.iter().any(|x| code.contains(x.as_str()))
                    && !ALLOWED.iter().any(|a| code.contains(a))
                {
                    problems.push(format!("{}:{}: {}", f.display(), n + 1, line.trim()));
                }
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// Lines of `files` naming any of `names` (outside comments and tests).
fn naming(files: &[PathBuf], names: &[String]) -> Vec<String> {
    let mut problems = Vec::new();
    for f in files {
        let text = std::fs::read_to_string(f).unwrap();
        let body = text.split("#[cfg(test)]").next().unwrap_or("");
        for (n, line) in body.lines().enumerate() {
            let code = line.split("//").next().unwrap_or("");
            if names.iter().any(|x| code.contains(x.as_str())) {
                problems.push(format!("{}:{}: {}", f.display(), n + 1, line.trim()));
            }
        }
    }
    problems
}

/// The daemon's services below the subsystems (the control listeners, the
/// subsystem interface, reload, signals, memory) name no subsystem and not
/// the shell: the subsystems stand on them, not the other way.
#[test]
fn the_daemon_services_name_no_subsystem() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/daemon");
    let files: Vec<PathBuf> = ["control", "subsystem", "reload", "signals", "memory"]
        .iter()
        .map(|m| src.join(format!("{m}.rs")))
        .collect();
    let names: Vec<String> = ["shell", "checker", "vrrp", "bfd", "snmp"]
        .iter()
        .flat_map(|o| [format!("super::{o}"), format!("daemon::{o}")])
        .collect();
    let problems = naming(&files, &names);
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// VRRP and BFD run beside the checker, not on it: their subsystems name
/// nothing of `check` (what they share with it is in `services`).
#[test]
fn vrrp_and_bfd_subsystems_name_nothing_of_the_checker() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/daemon");
    let mut fs = Vec::new();
    for me in ["vrrp", "bfd"] {
        files(&src.join(me), &mut fs);
    }
    fs.push(src.join("snmp.rs"));
    let problems = naming(&fs, &["crate::check".to_string()]);
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
