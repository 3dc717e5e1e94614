//! A reload's rules: which file, how it is read, and when the running
//! configuration is kept instead (keepalived's `reload_check_config`, made
//! the rule).
//!
//! Pure, but for the read itself. The shell reads the file off the
//! subsystems' threads; each subsystem applies [`reload_refusal`] with the
//! errors its running configuration was accepted with.

use crate::cli::Options;
use crate::config::{self, LoadOptions, Loaded};
use std::collections::BTreeSet;
use std::path::PathBuf;

/// Where keepalived reads its configuration by default.
pub const DEFAULT_CONF: &str = "/etc/keepalived/keepalived.conf";

/// The load options the daemon's command line gives.
pub fn load_options(opts: &Options) -> LoadOptions {
    LoadOptions {
        config_id: opts
            .config_id
            .clone()
            .unwrap_or_else(config::default_config_id),
        all_config: opts.all_config,
        config_test: false,
    }
}

/// `-f FILE`, else keepalived's default.
pub fn config_path(opts: &Options) -> PathBuf {
    PathBuf::from(opts.use_file.clone().unwrap_or_else(|| DEFAULT_CONF.into()))
}

/// The errors of a load, without their positions: what a reload compares
/// with the running configuration's.
pub fn error_set(loaded: &Loaded) -> BTreeSet<String> {
    loaded
        .diagnostics
        .items()
        .iter()
        .filter(|d| d.severity == config::diag::Severity::Error)
        .map(|d| d.message.clone())
        .collect()
}

/// Whether a reload may apply `loaded`: it must load (no missing
/// parameter, no fatal include) and bring no error the running
/// configuration did not already have. Errors the daemon started with were
/// accepted then (keepalived runs with them); a new one means the file is
/// not what the operator meant, so the running configuration stays.
pub fn reload_refusal(loaded: &Loaded, accepted: &BTreeSet<String>) -> Option<String> {
    if loaded.diagnostics.missing_parameter || loaded.diagnostics.fatal_include {
        return Some("it cannot be loaded".into());
    }
    let new: Vec<String> = error_set(loaded)
        .into_iter()
        .filter(|e| !accepted.contains(e))
        .collect();
    if new.is_empty() {
        None
    } else {
        Some(format!("{} new error(s): {}", new.len(), new.join("; ")))
    }
}

/// Why the file at `path` cannot be what a reload reads, if it cannot: it
/// must exist, be a regular file (a FIFO would hang the read, a directory
/// has no text), be readable, and not be empty. keepalived reads such a
/// file as an empty configuration and removes everything; a reload keeps
/// the running one instead.
pub fn source_problem(path: &std::path::Path) -> Option<String> {
    let meta = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(e) => return Some(e.to_string()),
    };
    if meta.is_dir() {
        return Some("it is a directory".into());
    }
    if !meta.is_file() {
        return Some("it is not a regular file".into());
    }
    if meta.len() == 0 {
        return Some("it is empty".into());
    }
    if let Err(e) = std::fs::File::open(path) {
        return Some(e.to_string());
    }
    None
}

/// Every problem of a load, in the log.
pub fn log_diagnostics(loaded: &Loaded) {
    for d in loaded.diagnostics.items() {
        match d.severity {
            config::diag::Severity::Warning => log::warn!("{d}"),
            _ => log::error!("{d}"),
        }
    }
}
