//! The notify FIFOs (`notify_fifo`, `vrrp_notify_fifo`,
//! `lvs_notify_fifo`) as keepalived opens them, and the scripts that read
//! them; the lines written are each subsystem's.

use super::scripts::{prepare, secured, ScriptSpec};
use crate::config::model::{Config, Fifo, Script};
use std::os::unix::fs::OpenOptionsExt;

/// Opens (creating it if absent) a notify FIFO without waiting for a
/// reader; says whether we created it.
pub fn open_fifo(f: &Fifo) -> std::io::Result<(std::fs::File, bool)> {
    use nix::sys::stat::Mode;
    let created = !std::path::Path::new(&f.path).exists();
    if created {
        nix::unistd::mkfifo(f.path.as_str(), Mode::from_bits_truncate(0o644))?;
    }
    // Read-write so that opening never waits for a reader.
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(nix::libc::O_NONBLOCK | nix::libc::O_NOFOLLOW)
        .open(&f.path)?;
    use std::os::unix::fs::FileTypeExt;
    if !file.metadata()?.file_type().is_fifo() {
        return Err(std::io::Error::other(format!("{} is not a FIFO", f.path)));
    }
    Ok((file, created))
}

/// Starts a FIFO's script (the FIFO's path as its last argument) as its
/// configured user, in a process group of its own.
pub fn start_fifo_script(cfg: &Config, s: &Script, path: &str) -> Option<tokio::process::Child> {
    let mut argv = s.args.clone();
    argv.push(path.to_string());
    let user = s.user.clone().map(|u| (u, s.group.clone()));
    let run_as = match crate::config::script_security::identity(cfg, user.as_ref()) {
        Ok(r) => r,
        Err(e) => {
            log::error!("FIFO script {}: {e}", argv[0]);
            return None;
        }
    };
    let argv = secured(cfg, &argv, run_as)?;
    let spec = ScriptSpec { argv, run_as };
    let mut cmd = tokio::process::Command::new(&spec.argv[0]);
    cmd.args(&spec.argv[1..]);
    prepare(&mut cmd, &spec);
    match cmd.spawn() {
        Ok(c) => Some(c),
        Err(e) => {
            log::error!("cannot start FIFO script {}: {e}", spec.argv[0]);
            None
        }
    }
}
