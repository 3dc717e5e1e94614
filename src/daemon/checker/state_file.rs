//! The state file's bytes on disk (extension `state_file`), read and
//! written under the rules the daemon keeps for every file it owns (pid
//! files, the log, `init_file`): never through a link, regular files only,
//! opens that cannot block, a bounded read, trusted only when root (or the
//! daemon's user) owns it and nobody else can write it, and a new version
//! made in a file created exclusively, then renamed over the old. What the
//! bytes mean is [`crate::check::state`]'s. Part of the checker's shell.

use std::io::{Read, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// The most a state file may hold: a few hundred bytes a real server, so
/// well above a director of a hundred thousand.
pub const MAX_BYTES: u64 = 64 << 20;

/// Why a state file is not read.
#[derive(Debug, thiserror::Error)]
pub enum Refused {
    /// It cannot be opened or read (a link is refused here: ELOOP).
    #[error("{0}")]
    Io(#[from] std::io::Error),
    /// A FIFO, a device, a directory...
    #[error("not a regular file")]
    NotRegular,
    /// Owned by someone who is neither root nor this daemon's user.
    #[error("owned by uid {0}, neither root nor this daemon's user: not trusted")]
    Owner(u32),
    /// Others (or its group) may write it.
    #[error("mode {0:o}: writable by its group or others, not trusted")]
    Mode(u32),
    /// Larger than [`MAX_BYTES`].
    #[error("larger than {MAX_BYTES} bytes")]
    TooLarge,
}

/// The file's bytes; `Ok(None)` when there is none yet.
pub fn read(path: &Path) -> Result<Option<Vec<u8>>, Refused> {
    let f = match std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(nix::libc::O_NOFOLLOW | nix::libc::O_NONBLOCK | nix::libc::O_NOCTTY)
        .open(path)
    {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e.into()),
    };
    let m = f.metadata()?;
    if !m.file_type().is_file() {
        return Err(Refused::NotRegular);
    }
    let me = nix::unistd::geteuid().as_raw();
    if m.uid() != 0 && m.uid() != me {
        return Err(Refused::Owner(m.uid()));
    }
    if m.mode() & 0o022 != 0 {
        return Err(Refused::Mode(m.mode() & 0o7777));
    }
    if m.len() > MAX_BYTES {
        return Err(Refused::TooLarge);
    }
    let mut bytes = Vec::with_capacity(m.len() as usize);
    // Bounded even if the file grows while it is read.
    f.take(MAX_BYTES + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > MAX_BYTES {
        return Err(Refused::TooLarge);
    }
    Ok(Some(bytes))
}

/// The temporary file a new version is written to: beside the file, named
/// for this process, so that nothing planted under a fixed name is used.
fn temporary(path: &Path) -> std::io::Result<PathBuf> {
    let name = path
        .file_name()
        .ok_or_else(|| std::io::Error::other("no file name"))?;
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty());
    Ok(dir.unwrap_or(Path::new(".")).join(format!(
        ".{}.{}.tmp",
        name.to_string_lossy(),
        std::process::id()
    )))
}

/// Writes `bytes` as the new file: a temporary created exclusively
/// (`O_EXCL|O_NOFOLLOW`, mode 0600), synced, renamed over `path`. A link
/// or FIFO planted at the temporary's name is removed, never opened; one
/// planted at `path` is replaced by the rename.
pub fn write(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    let tmp = temporary(path)?;
    match std::fs::remove_file(&tmp) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
        _ => {}
    }
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(nix::libc::O_NOFOLLOW | nix::libc::O_NONBLOCK)
        .open(&tmp)?;
    let done = f
        .write_all(bytes)
        .and_then(|()| f.sync_data())
        .and_then(|()| std::fs::rename(&tmp, path));
    if done.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    done
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn dir(tag: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("kr-state-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn what_is_not_a_trusted_regular_file_is_refused_without_blocking() {
        let d = dir("read");
        let f = d.join("state.json");
        assert!(read(&f).unwrap().is_none(), "none yet");
        std::fs::write(&f, b"{}").unwrap();
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert_eq!(read(&f).unwrap().unwrap(), b"{}");
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o666)).unwrap();
        assert!(matches!(read(&f), Err(Refused::Mode(0o666))));
        std::fs::remove_file(&f).unwrap();
        // A FIFO with no writer: refused at once.
        nix::unistd::mkfifo(&f, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
        assert!(matches!(read(&f), Err(Refused::NotRegular)));
        std::fs::remove_file(&f).unwrap();
        // A link, to /dev/zero or anything.
        std::os::unix::fs::symlink("/dev/zero", &f).unwrap();
        assert!(matches!(read(&f), Err(Refused::Io(_))));
        std::fs::remove_file(&f).unwrap();
        if nix::unistd::geteuid().is_root() {
            std::fs::write(&f, b"{}").unwrap();
            std::os::unix::fs::chown(&f, Some(65534), Some(65534)).unwrap();
            assert!(matches!(read(&f), Err(Refused::Owner(65534))));
        }
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn a_new_version_never_goes_through_what_was_planted() {
        let d = dir("write");
        let f = d.join("state.json");
        let victim = d.join("victim");
        std::fs::write(&victim, b"precious").unwrap();
        // Planted at the temporary's name: a link and then a FIFO.
        let tmp = temporary(&f).unwrap();
        std::os::unix::fs::symlink(&victim, &tmp).unwrap();
        write(&f, b"one").unwrap();
        nix::unistd::mkfifo(&tmp, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
        write(&f, b"two").unwrap();
        // And a link at the file itself: replaced, not followed.
        std::fs::remove_file(&f).unwrap();
        std::os::unix::fs::symlink(&victim, &f).unwrap();
        write(&f, b"three").unwrap();
        assert_eq!(std::fs::read(&victim).unwrap(), b"precious");
        let m = f.symlink_metadata().unwrap();
        assert!(m.file_type().is_file());
        assert_eq!(m.mode() & 0o777, 0o600);
        assert_eq!(read(&f).unwrap().unwrap(), b"three");
        assert!(!tmp.exists());
        let _ = std::fs::remove_dir_all(&d);
    }
}
