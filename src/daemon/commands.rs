//! The one-shot commands that do not run the daemon: `-t`, `--dump-json`,
//! `-d`, `--status` and `--plan` (asking the running daemon, else offline),
//! `--ipvs-save`.

use super::startup::first_programming;
use crate::cli::Options;
use crate::config::{self, LoadOptions, Loaded};
use crate::ipvs::netlink::IpvsHandle;
use crate::ipvs::Table;
use std::io::Write;
use std::process::ExitCode;

/// A one-thread runtime for the short-lived commands, or a message.
pub fn small_runtime() -> Result<tokio::runtime::Runtime, ExitCode> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| {
            eprintln!("cannot start the event loop: {e}");
            ExitCode::from(1)
        })
}

/// The kernel's IPVS table, read once (commands that do not run
/// the daemon).
async fn kernel_table() -> Result<Table, crate::ipvs::IpvsError> {
    let mut h = IpvsHandle::open().await?;
    h.table().await
}

/// Runs `f` on one small runtime; errors are printed, exit 1.
fn on_runtime<T, E: std::fmt::Display>(
    f: impl std::future::Future<Output = Result<T, E>>,
    then: impl FnOnce(T) -> ExitCode,
) -> ExitCode {
    let rt = match small_runtime() {
        Ok(rt) => rt,
        Err(code) => return code,
    };
    match rt.block_on(f) {
        Ok(v) => then(v),
        Err(e) => {
            eprintln!("{e}");
            ExitCode::from(1)
        }
    }
}

/// `--ipvs-save`: the kernel's table in `ipvsadm -S -n` form.
pub fn ipvs_save() -> ExitCode {
    on_runtime(kernel_table(), |t| {
        print!("{}", t.save());
        ExitCode::SUCCESS
    })
}

/// `--plan` without a daemon: what starting on `loaded` would send to the
/// kernel (or, with `--dry-run`, to the dry run's empty table), computed
/// by the start's own steps over a dry run seeded with that table.
pub fn plan_offline(opts: &Options, loaded: &Loaded) -> ExitCode {
    if loaded.diagnostics.missing_parameter || loaded.diagnostics.fatal_include {
        eprintln!("the configuration cannot be loaded");
        return ExitCode::from(1);
    }
    let ops = async {
        let current = if opts.dry_run {
            Table::default()
        } else {
            kernel_table().await?
        };
        first_programming(opts, &loaded.config, current).await
    };
    on_runtime(ops, |ops| {
        println!(
            "# starting on this file would make {} IPVS operation(s)",
            ops.len()
        );
        for op in ops {
            println!("ipvsadm {op}");
        }
        ExitCode::SUCCESS
    })
}

/// `-t [FILE]`: every problem (to FILE if given), then keepalived's exit
/// code for them.
pub fn config_test(opts: &Options, log: &str, loaded: &Loaded) -> ExitCode {
    let mut out: Box<dyn Write> = if log.is_empty() {
        Box::new(std::io::stderr())
    } else {
        match std::fs::OpenOptions::new()
            .append(true)
            .create(true)
            .open(log)
        {
            Ok(f) => Box::new(f),
            Err(e) => {
                eprintln!("cannot open config test log {log}: {e}");
                Box::new(std::io::stderr())
            }
        }
    };
    for d in loaded.diagnostics.items() {
        let _ = writeln!(out, "{d}");
    }
    if opts.dump_conf {
        let _ = writeln!(out, "{:#?}", loaded.config);
    }
    if opts.dump_json && !print_json(loaded) {
        return ExitCode::from(1);
    }
    ExitCode::from(loaded.config_test_exit_code() as u8)
}

/// `--dump-json`: every problem on standard error, the model and the
/// problems as one JSON document, keepalived's `-t` exit code.
pub fn dump_json(loaded: &Loaded) -> ExitCode {
    for d in loaded.diagnostics.items() {
        eprintln!("{d}");
    }
    if !print_json(loaded) {
        return ExitCode::from(1);
    }
    ExitCode::from(loaded.config_test_exit_code() as u8)
}

/// `-d`: every problem on standard error, the model as Rust debug text.
pub fn dump_conf(loaded: &Loaded) -> ExitCode {
    for d in loaded.diagnostics.items() {
        eprintln!("{d}");
    }
    println!("{:#?}", loaded.config);
    ExitCode::SUCCESS
}

/// The status socket: `--status-socket`, else the configuration's (if it
/// can be read), else the default.
fn status_socket(
    opts: &Options,
    path: &std::path::Path,
    load_opts: &LoadOptions,
) -> std::path::PathBuf {
    let loaded = path.exists().then(|| config::load(path, load_opts));
    let cfg = loaded.as_ref().map(|l| &l.config);
    let configured = cfg.and_then(|c| c.global_defs.status_socket.as_deref());
    let ns = super::process::namespace(opts, cfg);
    crate::control::socket_path(opts.status_socket.as_deref(), configured, ns.as_deref())
}

/// `--control "VERB ARGS"`: a membership edit for the running daemon; its
/// answer (the IPVS operations it caused) on standard output.
pub fn control(
    opts: &Options,
    line: &str,
    path: &std::path::Path,
    load_opts: &LoadOptions,
) -> ExitCode {
    let verb = line.split_whitespace().next().unwrap_or("");
    if !crate::control::MEMBER_VERBS.contains(&verb) {
        eprintln!("--control: usage: {}", config::overlay::USAGE);
        return ExitCode::from(2);
    }
    let sock = status_socket(opts, path, load_opts);
    match crate::control::client(&sock, line) {
        Ok(a) => print_answer(&a),
        Err(e) => {
            eprintln!(
                "cannot reach the daemon's status socket {}: {e}",
                sock.display()
            );
            ExitCode::from(1)
        }
    }
}

/// The daemon's answer: an `error:` on standard error (exit 1), anything
/// else on standard output.
fn print_answer(a: &str) -> ExitCode {
    if a.starts_with("error:") {
        eprint!("{a}");
        ExitCode::from(1)
    } else {
        print!("{a}");
        ExitCode::SUCCESS
    }
}

/// `--status`: ask the running daemon, print a table (or `--json`).
pub fn status(opts: &Options, path: &std::path::Path, load_opts: &LoadOptions) -> ExitCode {
    use crate::control;
    let sock = status_socket(opts, path, load_opts);
    let answer = match control::client(&sock, "status") {
        Ok(a) => a,
        Err(e) => {
            eprintln!(
                "cannot reach the daemon's status socket {}: {e}",
                sock.display()
            );
            return ExitCode::from(1);
        }
    };
    if answer.starts_with("error:") {
        eprint!("{answer}");
        return ExitCode::from(1);
    }
    if opts.json {
        print!("{answer}");
        return ExitCode::SUCCESS;
    }
    match serde_json::from_str::<serde_json::Value>(&answer) {
        Ok(doc) => {
            print!("{}", crate::status::table(&doc));
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("the daemon's answer is not JSON ({e}): {answer}");
            ExitCode::from(1)
        }
    }
}

/// `--plan -f NEW.conf`: the IPVS changes a reload of NEW.conf would make,
/// from the running daemon (through its status socket), else from the
/// kernel's table.
pub fn plan(opts: &Options, path: &std::path::Path, loaded: Loaded) -> ExitCode {
    use crate::control;
    for d in loaded.diagnostics.items() {
        eprintln!("{d}");
    }
    let abs = match std::fs::canonicalize(path) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("{}: {e}", path.display());
            return ExitCode::from(1);
        }
    };
    let sock = control::socket_path(
        opts.status_socket.as_deref(),
        loaded.config.global_defs.status_socket.as_deref(),
        super::process::namespace(opts, Some(&loaded.config)).as_deref(),
    );
    match control::client(&sock, &format!("plan {}", abs.display())) {
        Ok(a) => print_answer(&a),
        Err(e) => {
            eprintln!(
                "no daemon answers on {} ({e}); comparing with the kernel's table",
                sock.display()
            );
            plan_offline(opts, &loaded)
        }
    }
}

/// `--dump-json`: the resolved model and every diagnostic, one JSON document.
fn print_json(loaded: &Loaded) -> bool {
    let doc = DumpJson {
        config: &loaded.config,
        diagnostics: loaded.diagnostics.items(),
    };
    match serde_json::to_string_pretty(&doc) {
        Ok(s) => {
            println!("{s}");
            true
        }
        Err(e) => {
            eprintln!("cannot serialise the configuration: {e}");
            false
        }
    }
}

#[derive(serde::Serialize)]
struct DumpJson<'a> {
    config: &'a crate::config::model::Config,
    diagnostics: &'a [crate::config::diag::Diagnostic],
}
