//! The one-shot commands that do not run the daemon: `--ipvs-save` and an
//! offline `--plan` (no daemon answering on the status socket).

use super::startup::first_programming;
use crate::cli::Options;
use crate::config::Loaded;
use crate::ipvs::netlink::IpvsHandle;
use crate::ipvs::Table;
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

/// Runs `f` on the kernel's IPVS table, read once (commands that do not
/// run the daemon).
fn with_kernel_table(f: impl FnOnce(Table) -> ExitCode) -> ExitCode {
    let rt = match small_runtime() {
        Ok(rt) => rt,
        Err(code) => return code,
    };
    let table = rt.block_on(async {
        let mut h = IpvsHandle::open().await?;
        h.table().await
    });
    match table {
        Ok(t) => f(t),
        Err(e) => {
            eprintln!("{e}");
            ExitCode::from(1)
        }
    }
}

/// `--ipvs-save`: the kernel's table in `ipvsadm -S -n` form.
pub fn ipvs_save() -> ExitCode {
    with_kernel_table(|t| {
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
    let print = |current: Table| {
        let rt = match small_runtime() {
            Ok(rt) => rt,
            Err(code) => return code,
        };
        match rt.block_on(first_programming(opts, &loaded.config, current)) {
            Ok(ops) => {
                println!(
                    "# starting on this file would make {} IPVS operation(s)",
                    ops.len()
                );
                for op in ops {
                    println!("ipvsadm {op}");
                }
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("{e}");
                ExitCode::from(1)
            }
        }
    };
    if opts.dry_run {
        print(Table::default())
    } else {
        with_kernel_table(print)
    }
}
