//! FILE_CHECK (`check_file.c`, `trackers/track_file.c`): a number read from
//! a file sets the real server's weight or takes it down; re-read when the
//! file is written, moved or deleted (inotify on its directory).
//!
//! The arithmetic is pure ([`status`]); [`Watch`] is the I/O shell the
//! engine drives.

use crate::config::model::TrackFile;
use nix::sys::inotify::{AddWatchFlags, InitFlags, Inotify};
use std::path::{Path, PathBuf};
use tokio::io::unix::AsyncFd;

/// What a file's value means for the checker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileState {
    /// The checker is down.
    Fault,
    /// Up, adding this to the real server's weight.
    Weight(i64),
}

/// `strtol(s, NULL, 0)` on the first 127 bytes; 0 for a missing or empty
/// file; `None` when out of the int range (ignored by keepalived).
///
/// Read as keepalived's `process_track_file()` reads it: opened
/// non-blocking, one read of at most 127 bytes, so that a FIFO renamed over
/// the file (no writer: nothing to read) or a link to `/dev/zero` can
/// neither block the daemon nor make it read without end. Anything but a
/// regular file reads as 0.
pub fn read_value(path: &Path) -> Option<i64> {
    read_status(path).ok()
}

/// [`read_value`], with the number refused (out of the int range) as the
/// error, for keepalived's "Invalid number N read from PATH - ignoring".
pub fn read_status(path: &Path) -> Result<i64, i64> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let Ok(mut f) = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(nix::libc::O_NONBLOCK)
        .open(path)
    else {
        return Ok(0);
    };
    if !f.metadata().is_ok_and(|m| m.is_file()) {
        return Ok(0);
    }
    let mut buf = [0u8; 127];
    let n = f.read(&mut buf).unwrap_or(0);
    let text = String::from_utf8_lossy(&buf[..n]).to_string();
    let v = crate::config::reader::strtol0(&text);
    if (i64::from(i32::MIN)..=i64::from(i32::MAX)).contains(&v) {
        Ok(v)
    } else {
        Err(v)
    }
}

/// The checker's state for a value.
pub fn status(value: i64, weight: i64, reverse: bool) -> FileState {
    if weight == 0 {
        let fault = if reverse { value == 0 } else { value != 0 };
        return if fault {
            FileState::Fault
        } else {
            FileState::Weight(0)
        };
    }
    let s = value
        .saturating_mul(weight)
        .saturating_mul(if reverse { -1 } else { 1 })
        .clamp(i64::from(i32::MIN), i64::from(i32::MAX));
    if s <= i64::from(i32::MIN) {
        FileState::Fault
    } else {
        FileState::Weight(s)
    }
}

/// `init_file [VALUE] [overwrite]`: writes the file at start when missing,
/// or always with `overwrite`.
pub fn init_file(tf: &TrackFile) {
    let Some((path, value)) = init_value(tf) else {
        return;
    };
    if let Err(e) = replace(Path::new(path), format!("{value}\n").as_bytes()) {
        log::warn!("track_file {}: cannot initialise {path}: {e}", tf.name);
    }
}

/// [`init_file`] for every `track_file` of `cfg`.
pub fn init_files(cfg: &crate::config::model::Config) {
    for tf in &cfg.track_files {
        init_file(tf);
    }
}

/// Writes `data` as the new file at `path` the way keepalived's
/// `fopen_safe(path, "w")` does: into a new file beside it, renamed over
/// it. A symlink another user planted at `path` is replaced, never written
/// through, and nobody who had the old file open reads the new text.
pub fn replace(path: &Path, data: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty());
    let name = path
        .file_name()
        .ok_or_else(|| std::io::Error::other("no file name"))?;
    let tmp = dir.unwrap_or(Path::new(".")).join(format!(
        ".{}.{}.tmp",
        name.to_string_lossy(),
        std::process::id()
    ));
    let _ = std::fs::remove_file(&tmp);
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o644)
        .custom_flags(nix::libc::O_NOFOLLOW)
        .open(&tmp)?;
    let done = f.write_all(data).and_then(|()| std::fs::rename(&tmp, path));
    if done.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    done
}

/// What [`init_file`] would write now, and where: `init_file`'s value
/// (default 0) when the file is missing or `overwrite` is given.
pub fn init_value(tf: &TrackFile) -> Option<(&str, String)> {
    let (Some(path), Some(init)) = (&tf.file, &tf.init_file) else {
        return None;
    };
    let overwrite = init.iter().any(|w| w == "overwrite");
    let value = init
        .iter()
        .find(|w| *w != "overwrite")
        .cloned()
        .unwrap_or_else(|| "0".into());
    (overwrite || !Path::new(path).exists()).then_some((path.as_str(), value))
}

/// The inotify instance, with the raw descriptor tokio's reactor needs.
struct InoFd(Inotify);

impl std::os::fd::AsRawFd for InoFd {
    fn as_raw_fd(&self) -> std::os::fd::RawFd {
        use std::os::fd::AsFd;
        self.0.as_fd().as_raw_fd()
    }
}

/// An inotify watch on the directories of tracked files.
pub struct Watch {
    fd: AsyncFd<InoFd>,
    dirs: Vec<(nix::sys::inotify::WatchDescriptor, PathBuf)>,
}

impl Watch {
    /// Watches the directories of `files`.
    pub fn new(files: &[PathBuf]) -> std::io::Result<Watch> {
        let ino = Inotify::init(InitFlags::IN_NONBLOCK | InitFlags::IN_CLOEXEC)?;
        let mut dirs = Vec::new();
        for f in files {
            let dir = f
                .parent()
                .filter(|p| !p.as_os_str().is_empty())
                .unwrap_or(Path::new("."))
                .to_path_buf();
            if dirs.iter().any(|(_, d)| *d == dir) {
                continue;
            }
            let wd = ino.add_watch(
                &dir,
                AddWatchFlags::IN_CLOSE_WRITE
                    | AddWatchFlags::IN_MOVED_TO
                    | AddWatchFlags::IN_MOVED_FROM
                    | AddWatchFlags::IN_DELETE
                    | AddWatchFlags::IN_CREATE,
            )?;
            dirs.push((wd, dir));
        }
        // SAFETY: the AsyncFd owns the inotify descriptor, which therefore
        // stays open for as long as it is registered.
        let fd = unsafe { AsyncFd::register(InoFd(ino)) }.map_err(std::io::Error::from)?;
        Ok(Watch { fd, dirs })
    }

    /// Waits for changes; returns the paths touched.
    pub async fn changed(&mut self) -> std::io::Result<Vec<PathBuf>> {
        loop {
            let mut guard = self.fd.readable().await?;
            match guard.get_inner().0.read_events() {
                Ok(evs) => {
                    let out = evs
                        .into_iter()
                        .filter_map(|e| {
                            let dir = self.dirs.iter().find(|(wd, _)| *wd == e.wd)?;
                            Some(dir.1.join(e.name?))
                        })
                        .collect();
                    return Ok(out);
                }
                Err(nix::errno::Errno::EAGAIN) => guard.clear_ready(),
                Err(e) => return Err(e.into()),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_and_states() {
        let d = std::env::temp_dir().join(format!("krs-file-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        let f = d.join("v");
        assert_eq!(read_value(&f), Some(0), "missing file is 0");
        for (text, want) in [
            ("12\n", Some(12)),
            ("0x10", Some(16)),
            ("010", Some(8)),
            ("-3", Some(-3)),
            ("abc", Some(0)),
            ("99999999999", None),
        ] {
            std::fs::write(&f, text).unwrap();
            assert_eq!(read_value(&f), want, "{text}");
        }
        // A FIFO renamed over the file (nobody writing) and a link to an
        // endless device read as 0, at once.
        std::fs::remove_file(&f).unwrap();
        nix::unistd::mkfifo(&f, nix::sys::stat::Mode::S_IRWXU).unwrap();
        assert_eq!(read_value(&f), Some(0), "a FIFO");
        std::fs::remove_file(&f).unwrap();
        std::os::unix::fs::symlink("/dev/zero", &f).unwrap();
        assert_eq!(read_value(&f), Some(0), "/dev/zero");
        std::fs::remove_file(&f).unwrap();
        std::fs::remove_dir_all(&d).unwrap();
        assert_eq!(status(1, 0, false), FileState::Fault);
        assert_eq!(status(0, 0, false), FileState::Weight(0));
        assert_eq!(status(0, 0, true), FileState::Fault);
        assert_eq!(status(3, 2, false), FileState::Weight(6));
        assert_eq!(status(3, 2, true), FileState::Weight(-6));
        assert_eq!(status(i64::from(i32::MIN), 1, false), FileState::Fault);
    }

    #[test]
    fn init_file_replaces_a_planted_symlink_instead_of_writing_through_it() {
        let d = std::env::temp_dir().join(format!("krs-file-init-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        let victim = d.join("victim");
        std::fs::write(&victim, "precious\n").unwrap();
        let tracked = d.join("tracked");
        std::os::unix::fs::symlink(&victim, &tracked).unwrap();
        let tf = TrackFile {
            name: "t".into(),
            file: Some(tracked.display().to_string()),
            weight: 1,
            reverse: false,
            init_file: Some(vec!["5".into(), "overwrite".into()]),
            line: 1,
        };
        init_file(&tf);
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious\n");
        assert!(!tracked.symlink_metadata().unwrap().file_type().is_symlink());
        assert_eq!(std::fs::read_to_string(&tracked).unwrap(), "5\n");
        assert_eq!(read_value(&tracked), Some(5));
        std::fs::remove_dir_all(&d).unwrap();
    }
}
