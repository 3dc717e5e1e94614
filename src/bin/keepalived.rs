//! The `keepalived` binary: keepalived 2.2.7's command line in front of the
//! keepalived-rs pipeline: the configuration side (`-t`, `-d`,
//! `--dump-json`), the daemon, and genhash (`-T`, or when called `genhash`).

use keepalived::cli;
use keepalived::config::{self, LoadOptions};
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use keepalived::daemon::DEFAULT_CONF;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let prog = args
        .first()
        .and_then(|a| std::path::Path::new(a).file_name())
        .map(|s| s.to_string_lossy().to_string())
        .unwrap_or_else(|| "keepalived".into());
    let argv0 = args.first().map_or("keepalived", String::as_str);
    if prog == "genhash" {
        return keepalived::genhash::main(argv0, &args[1..]);
    }
    if args.iter().skip(1).any(|a| a == "-T" || a == "--genhash") {
        return keepalived::genhash::main(&format!("{argv0} --genhash"), &args[1..]);
    }
    let opts = match cli::parse(&args[1..]) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("{e}");
            eprint!("{}", cli::usage(&prog));
            return ExitCode::from(1);
        }
    };
    if !opts.extra.is_empty() {
        eprintln!("Unknown parameter(s): {}", opts.extra.join(" "));
    }
    if opts.help {
        eprint!("{}", cli::usage(&prog));
        return ExitCode::SUCCESS;
    }
    if opts.version {
        eprintln!(
            "Keepalived v2.2.7 compatible (keepalived-rs {})",
            env!("CARGO_PKG_VERSION")
        );
        return ExitCode::SUCCESS;
    }
    if opts.ipvs_save {
        return keepalived::daemon::ipvs_save();
    }
    if let Some(name) = &opts.signum {
        return match cli::signum(name) {
            Some(n) => {
                println!("{n}");
                ExitCode::SUCCESS
            }
            None => {
                eprintln!("Unknown sigfunc {name}");
                ExitCode::from(1)
            }
        };
    }
    for (set, what) in [
        (opts.vrrp, "-P/--vrrp (VRRP)"),
        (
            opts.snmp || opts.snmp_agent_socket.is_some(),
            "-x/-A (SNMP)",
        ),
        (opts.release_vips, "-X/--release-vips (VRRP)"),
        (opts.dont_release_vrrp, "-V/--dont-release-vrrp (VRRP)"),
    ] {
        if set {
            eprintln!("{what} is accepted but not available yet in keepalived-rs");
        }
    }

    let path = PathBuf::from(opts.use_file.clone().unwrap_or_else(|| DEFAULT_CONF.into()));
    let load_opts = LoadOptions {
        config_id: opts
            .config_id
            .clone()
            .unwrap_or_else(config::default_config_id),
        all_config: opts.all_config,
        config_test: opts.config_test.is_some(),
    };
    if opts.status {
        return status(&opts, &path, &load_opts);
    }
    let loaded = config::load(&path, &load_opts);
    if opts.plan {
        return plan(&opts, &path, loaded);
    }

    if let Some(log) = &opts.config_test {
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
        if opts.dump_json && !print_json(&loaded) {
            return ExitCode::from(1);
        }
        return ExitCode::from(loaded.config_test_exit_code() as u8);
    }

    if opts.dump_json {
        for d in loaded.diagnostics.items() {
            eprintln!("{d}");
        }
        if !print_json(&loaded) {
            return ExitCode::from(1);
        }
        return ExitCode::from(loaded.config_test_exit_code() as u8);
    }
    if opts.dump_conf {
        for d in loaded.diagnostics.items() {
            eprintln!("{d}");
        }
        println!("{:#?}", loaded.config);
        return ExitCode::SUCCESS;
    }
    start_daemon(&opts, loaded)
}

/// `--status`: ask the running daemon, print a table (or `--json`).
fn status(opts: &cli::Options, path: &std::path::Path, load_opts: &LoadOptions) -> ExitCode {
    use keepalived::control;
    // The configuration names the socket, if it can be read.
    let configured = path
        .exists()
        .then(|| {
            config::load(path, load_opts)
                .config
                .global_defs
                .status_socket
        })
        .flatten();
    let sock = control::socket_path(opts.status_socket.as_deref(), configured.as_deref());
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
            print!("{}", keepalived::status::table(&doc));
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
fn plan(opts: &cli::Options, path: &std::path::Path, loaded: config::Loaded) -> ExitCode {
    use keepalived::control;
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
    );
    match control::client(&sock, &format!("plan {}", abs.display())) {
        Ok(a) if a.starts_with("error:") => {
            eprint!("{a}");
            ExitCode::from(1)
        }
        Ok(a) => {
            print!("{a}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!(
                "no daemon answers on {} ({e}); comparing with the kernel's table",
                sock.display()
            );
            keepalived::daemon::plan_offline(opts, &loaded)
        }
    }
}

/// The daemon: pid files locked (keepalived's "already running"), then
/// into the background unless `-n`, then logs, then the loop.
fn start_daemon(opts: &cli::Options, loaded: config::Loaded) -> ExitCode {
    use keepalived::daemon::process;
    // A dry run takes no pid files unless asked to, so that it can run
    // beside a real keepalived.
    let mut pidfiles = Vec::new();
    if !opts.dry_run || opts.pid.is_some() || opts.checkers_pid.is_some() {
        let (main, checker) = process::pid_paths(opts, Some(&loaded.config));
        for p in [main, checker] {
            match process::PidFile::lock(&p) {
                Ok(f) => pidfiles.push(f),
                Err(e) => {
                    eprintln!("{e}");
                    return ExitCode::from(1);
                }
            }
        }
    }
    if !opts.dont_fork {
        if let Err(e) = nix::unistd::daemon(false, false) {
            eprintln!("cannot daemonise: {e}");
            return ExitCode::from(1);
        }
    }
    for f in &mut pidfiles {
        if let Err(e) = f.write_pid() {
            eprintln!("{e}");
            return ExitCode::from(1);
        }
    }
    process::init_logging(
        opts,
        &process::ident(loaded.config.root.instance.as_deref()),
    );
    log::info!(
        "Starting Keepalived v2.2.7 compatible (keepalived-rs {})",
        env!("CARGO_PKG_VERSION")
    );
    let code = keepalived::daemon::run(opts, loaded);
    drop(pidfiles);
    code
}

/// `--dump-json`: the resolved model and every diagnostic, one JSON document.
fn print_json(loaded: &config::Loaded) -> bool {
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
    config: &'a keepalived::config::model::Config,
    diagnostics: &'a [keepalived::config::diag::Diagnostic],
}
