//! The `keepalived` binary: keepalived 2.2.7's command line in front of the
//! keepalived-rs pipeline: the configuration side (`-t`, `-d`,
//! `--dump-json`), the daemon, and genhash (`-T`, or when called `genhash`).

use keepalived::cli;
use keepalived::config::{self, LoadOptions};
use keepalived::daemon::{commands, process, DEFAULT_CONF};
use std::path::PathBuf;
use std::process::ExitCode;

fn main() -> ExitCode {
    keepalived::daemon::memory::one_arena();
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
        return commands::ipvs_save();
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
    if opts.snmp {
        eprintln!("-x/--snmp: KEEPALIVED-MIB's VRRP tables (in part), VRRP-MIB and VRRPv3-MIB are served; the checker's tables and traps are not available yet in keepalived-rs");
    }
    if opts.release_vips {
        eprintln!("-X/--release-vips (VRRP) is accepted but not available yet in keepalived-rs");
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
        return commands::status(&opts, &path, &load_opts);
    }
    if let Some(line) = &opts.control {
        return commands::control(&opts, line, &path, &load_opts);
    }
    let loaded = config::load(&path, &load_opts);
    if opts.plan {
        return commands::plan(&opts, &path, loaded);
    }

    if let Some(log) = &opts.config_test {
        let code = commands::config_test(&opts, log, &loaded);
        // The process ends here: freeing a model of tens of thousands of
        // real servers record by record would cost a fifth of the parse.
        std::mem::forget(loaded);
        return code;
    }
    if opts.dump_json {
        return commands::dump_json(&loaded);
    }
    if opts.dump_conf {
        return commands::dump_conf(&loaded);
    }
    process::start(&opts, loaded)
}
