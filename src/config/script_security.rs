//! Whether a script may be run, as keepalived 2.2.7's
//! `check_script_secure()` decides (`core/notify.c`): found (a bare name
//! through `$PATH`), executable by the user it runs as, and, when it runs
//! as root (or is set-uid/gid root), no part of its path — as written and
//! as resolved through symlinks — changeable by anyone but root.
//!
//! Reads the file system (`stat`, `realpath`), nothing else. Used by
//! validation (`-t`'s SECURITY VIOLATION) and by the checker before it
//! runs a MISC_CHECK or a notify script: a script it disables never runs.

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;

/// What the check found.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Verdict {
    /// The path to run: the resolved one (keepalived runs the real path,
    /// keeping the name written when it differs).
    pub path: String,
    /// It may run.
    pub runnable: bool,
    /// It was found (`SC_ISSCRIPT`): it counts for SECURITY VIOLATION,
    /// runnable or not.
    pub found: bool,
    /// Some part of its path is changeable by others (`SC_INSECURE`),
    /// whether or not that disabled it.
    pub insecure: bool,
    /// keepalived's lines for it, in order.
    pub lines: Vec<String>,
}

/// Who a script runs as.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RunAs {
    /// uid.
    pub uid: u32,
    /// gid.
    pub gid: u32,
}

impl RunAs {
    /// Resolves `USER [GROUP]`; the user's primary group when no group.
    pub fn resolve(user: &str, group: Option<&str>) -> Result<RunAs, String> {
        use nix::unistd::{Group, User};
        let u = User::from_name(user)
            .ok()
            .flatten()
            .ok_or_else(|| format!("unknown user {user}"))?;
        let gid = match group {
            Some(g) => {
                Group::from_name(g)
                    .ok()
                    .flatten()
                    .ok_or_else(|| format!("unknown group {g}"))?
                    .gid
            }
            None => u.gid,
        };
        Ok(RunAs {
            uid: u.uid.as_raw(),
            gid: gid.as_raw(),
        })
    }

    /// The daemon's own identity.
    pub fn ours() -> RunAs {
        RunAs {
            uid: nix::unistd::geteuid().as_raw(),
            gid: nix::unistd::getegid().as_raw(),
        }
    }
}

/// Who a script runs as: its own user, else `script_user`, else
/// `keepalived_script` if it exists, else `None` (the daemon itself).
pub fn identity(
    cfg: &crate::config::model::Config,
    user: Option<&(String, Option<String>)>,
) -> Result<Option<RunAs>, String> {
    let (u, g) = match user.or(cfg.global_defs.script_user.as_ref()) {
        Some((u, g)) => (u.clone(), g.clone()),
        None => match nix::unistd::User::from_name("keepalived_script") {
            Ok(Some(_)) => ("keepalived_script".to_string(), None),
            _ => return Ok(None),
        },
    };
    RunAs::resolve(&u, g.as_deref()).map(Some)
}

fn is_executable(m: &std::fs::Metadata, who: RunAs) -> bool {
    let mode = m.permissions().mode();
    if who.uid == 0 {
        return mode & 0o111 != 0;
    }
    if m.uid() == who.uid {
        return mode & 0o100 != 0;
    }
    if m.gid() == who.gid {
        return mode & 0o010 != 0;
    }
    mode & 0o001 != 0
}

/// `find_path()`: a bare name in `$PATH`, as a regular file `who` may run.
fn find_in_path(name: &str, who: RunAs) -> Option<String> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).find_map(|d| {
        let p = d.join(name);
        let m = std::fs::metadata(&p).ok()?;
        (m.is_file() && is_executable(&m, who)).then(|| p.display().to_string())
    })
}

/// `check_security()`: every component of `filename`, from `/`, owned by
/// root and not writable by a non-root group or by others (directories
/// with the sticky bit excepted); components are not followed.
fn check_security(filename: &str, security: bool, v: &mut Verdict) -> bool {
    let mut prefixes: Vec<&str> = filename
        .match_indices('/')
        .map(|(i, _)| if i == 0 { "/" } else { &filename[..i] })
        .collect();
    prefixes.push(filename);
    let last = prefixes.len() - 1;
    for (k, p) in prefixes.iter().enumerate() {
        let m = match std::fs::symlink_metadata(p) {
            Ok(m) => m,
            Err(_) => {
                v.lines.push(format!(
                    "check_script_secure could not find script '{filename}' - disabling"
                ));
                return false;
            }
        };
        let ft = m.file_type();
        if (k < last && !ft.is_dir()) || (k == last && !ft.is_file() && !ft.is_symlink()) {
            v.lines.push(format!(
                "Wrong file type found in script path '{filename}'."
            ));
            return false;
        }
        let mode = m.permissions().mode();
        let writable_by_others = (m.gid() != 0 && mode & 0o020 != 0) || mode & 0o002 != 0;
        let judged = (ft.is_dir() && mode & 0o1000 == 0) || ft.is_file();
        if m.uid() != 0 || (judged && writable_by_others) {
            v.lines.push(format!(
                "Unsafe permissions found for script '{filename}'{}.",
                if security { " - disabling" } else { "" }
            ));
            v.insecure = true;
            return !security;
        }
    }
    true
}

/// Checks the script `argv0` run as `who`; `security` is
/// `enable_script_security` (an insecure script is then disabled).
pub fn check(argv0: &str, who: RunAs, security: bool) -> Verdict {
    let mut v = Verdict {
        path: argv0.to_string(),
        ..Verdict::default()
    };
    if !argv0.contains('/') {
        // keepalived 2.2.7's find_path() searches as the script's user:
        // seteuid() to it, then setgroups(), which a non-root euid may not
        // do — the search fails for every script of another user.
        let ours = RunAs::ours();
        if who.uid != ours.uid || (who.gid != ours.gid && ours.uid != 0) {
            v.lines.push(format!(
                "Permissions failure for script {argv0} in path - disabling"
            ));
            return v;
        }
        match find_in_path(argv0, who) {
            Some(p) => {
                v.lines.push(format!(
                    "WARNING - script `{argv0}` resolved by path search to `{p}`. Please specify full path."
                ));
                v.path = p;
            }
            None => {
                v.lines
                    .push(format!("Cannot find script {argv0} in path - disabling"));
                return v;
            }
        }
    }
    let real = match std::fs::canonicalize(&v.path) {
        Ok(r) => r.display().to_string(),
        Err(e) => {
            // strerror()'s words, as keepalived prints them.
            let why = e
                .raw_os_error()
                .map(|n| nix::errno::Errno::from_raw(n).desc().to_string())
                .unwrap_or_else(|| e.to_string());
            v.lines
                .push(format!("Script {} cannot be accessed - {why}", v.path));
            return v;
        }
    };
    // The real path runs, with the name as written where the two names
    // differ and the written name in the real directory is the same file.
    let mut real_file = None;
    if real != v.path {
        let written = Path::new(&v.path).file_name().map(|n| n.to_owned());
        let resolved = Path::new(&real).file_name().map(|n| n.to_owned());
        let mut run = real.clone();
        if written != resolved {
            if let (Some(dir), Some(name)) = (Path::new(&real).parent(), written) {
                let renamed = dir.join(name);
                let same = match (std::fs::metadata(&real), std::fs::metadata(&renamed)) {
                    (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
                    _ => false,
                };
                if same {
                    run = renamed.display().to_string();
                    real_file = Some(real.clone());
                }
            }
        }
        v.path = run;
    }
    let Ok(m) = std::fs::metadata(real_file.as_deref().unwrap_or(&v.path)) else {
        v.lines
            .push(format!("Unable to access script `{}` - disabling", v.path));
        return v;
    };
    v.found = true;
    if !is_executable(&m, who) {
        v.lines.push(format!(
            "WARNING - script '{}' is not executable for uid:gid {}:{} - disabling.",
            v.path, who.uid, who.gid
        ));
        return v;
    }
    let mode = m.permissions().mode();
    let protect = who.uid == 0
        || who.gid == 0
        || (m.uid() == 0 && mode & 0o100 != 0 && mode & 0o4000 != 0)
        || (m.gid() == 0 && mode & 0o010 != 0 && mode & 0o2000 != 0);
    v.runnable = true;
    if protect {
        let path = v.path.clone();
        v.runnable = check_security(&path, security, &mut v);
        if let Some(r) = real_file {
            v.runnable &= check_security(&r, security, &mut v);
        }
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    const ROOT: RunAs = RunAs { uid: 0, gid: 0 };

    fn dir(tag: &str, mode: u32) -> std::path::PathBuf {
        let d = std::env::temp_dir().join(format!("krs-secure-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        std::fs::set_permissions(&d, std::fs::Permissions::from_mode(mode)).unwrap();
        d
    }

    fn script(d: &Path, mode: u32) -> String {
        let p = d.join("s.sh");
        std::fs::write(&p, "#!/bin/sh\nexit 0\n").unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode)).unwrap();
        p.display().to_string()
    }

    #[test]
    #[cfg_attr(
        not(feature = "root"),
        ignore = "needs root (files root owns): cargo test --features root"
    )]
    fn root_scripts_in_places_others_can_write_are_disabled_under_security() {
        // The temporary directory itself may be a sticky, world-writable
        // one: allowed, as keepalived allows sticky directories.
        let safe = dir("safe", 0o755);
        let ok = check(&script(&safe, 0o755), ROOT, true);
        assert!(ok.runnable && !ok.insecure, "{ok:?}");
        let open = dir("open", 0o777);
        let p = script(&open, 0o755);
        let bad = check(&p, ROOT, true);
        assert!(!bad.runnable && bad.insecure, "{bad:?}");
        assert_eq!(
            bad.lines,
            vec![format!(
                "Unsafe permissions found for script '{p}' - disabling."
            )]
        );
        // Without enable_script_security it runs, flagged.
        let flagged = check(&p, ROOT, false);
        assert!(flagged.runnable && flagged.insecure);
        // A group- or world-writable file in a safe directory.
        let p = script(&safe, 0o757);
        assert!(!check(&p, ROOT, true).runnable);
        // Through a symlink: the real path is judged too.
        let link = safe.join("link.sh");
        let target = script(&open, 0o755);
        std::os::unix::fs::symlink(&target, &link).unwrap();
        let v = check(&link.display().to_string(), ROOT, true);
        assert!(!v.runnable && v.insecure, "{v:?}");
        // Owned by another user.
        let p = script(&safe, 0o755);
        std::os::unix::fs::chown(&p, Some(65534), Some(65534)).unwrap();
        let v = check(&p, ROOT, true);
        assert!(!v.runnable && v.insecure, "{v:?}");
        let _ = std::fs::remove_dir_all(&safe);
        let _ = std::fs::remove_dir_all(&open);
    }

    #[test]
    fn missing_and_non_executable_scripts_are_disabled() {
        let me = RunAs {
            uid: nix::unistd::geteuid().as_raw(),
            gid: nix::unistd::getegid().as_raw(),
        };
        let v = check("/nonexistent/krs/s.sh", me, true);
        assert!(!v.runnable);
        assert!(v.lines[0].starts_with("Script /nonexistent/krs/s.sh cannot be accessed"));
        let v = check("no-such-script-krs", me, true);
        assert_eq!(
            v.lines,
            vec!["Cannot find script no-such-script-krs in path - disabling"]
        );
        let d = dir("noexec", 0o755);
        let p = script(&d, 0o644);
        let v = check(
            &p,
            RunAs {
                uid: 65534,
                gid: 65534,
            },
            true,
        );
        assert!(!v.runnable, "{v:?}");
        assert!(v.lines[0].contains("is not executable for uid:gid 65534:65534"));
        // Found, though: it counts for SECURITY VIOLATION (SC_ISSCRIPT).
        assert!(v.found);
        assert!(!check("/nonexistent/krs/s.sh", me, true).found);
        // A bare name found in $PATH runs by its full path.
        let v = check("sh", me, false);
        assert!(v.runnable && v.found && v.path.ends_with("/sh"), "{v:?}");
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn a_bare_name_run_as_another_user_is_never_found() {
        // keepalived 2.2.7's find_path() drops to the script's euid before
        // its setgroups(), which then fails: the search always fails.
        let other = RunAs {
            uid: nix::unistd::geteuid().as_raw().wrapping_add(1),
            gid: nix::unistd::getegid().as_raw(),
        };
        let v = check("sh", other, false);
        assert!(!v.runnable && !v.found, "{v:?}");
        assert_eq!(
            v.lines,
            vec!["Permissions failure for script sh in path - disabling"]
        );
        // A full path is not searched.
        assert!(check("/bin/sh", other, false).found);
    }
}
