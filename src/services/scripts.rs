//! Scripts as keepalived runs them (`core/notify.c`): as the script user,
//! in a process group of their own; at their timeout the group gets
//! SIGTERM, then SIGKILL after 2 s; the child is always reaped.
//!
//! Used by MISC_CHECK, `vrrp_script` and the notify scripts of both
//! subsystems. A semaphore caps how many
//! scripts run at once so a storm of checks cannot fork-bomb the director;
//! checks and notify scripts each have a pool of their own, so hung notify
//! scripts never hold back a check. A pool knows its scripts' process
//! groups, and ends those still running at stop ([`Scripts::end`]).

use nix::sys::signal::{killpg, Signal};
use nix::unistd::{Gid, Pid, Uid};
use std::collections::HashSet;
use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::Semaphore;

/// Why a script could not be run to its end.
#[derive(Debug, thiserror::Error)]
pub enum ScriptError {
    /// The pool was closed.
    #[error("script runner closed")]
    Closed,
    /// No words to run.
    #[error("empty script")]
    Empty,
    /// Starting or waiting for it failed.
    #[error("{0} error: {1}")]
    Io(&'static str, std::io::Error),
}

use crate::config::model::Config;

/// How long after SIGTERM the group gets SIGKILL.
pub const KILL_GRACE: Duration = Duration::from_secs(2);

pub use crate::config::script_security::RunAs;

/// A script to run: argv and identity.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ScriptSpec {
    /// Exactly the configured words.
    pub argv: Vec<String>,
    /// Identity (None: as we are).
    pub run_as: Option<RunAs>,
}

/// How a script ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScriptEnd {
    /// Exited with this status.
    Exited(i32),
    /// Killed by this signal.
    Signaled(i32),
    /// Cut at the timeout (its group was killed).
    TimedOut,
}

/// Shared limits for scripts.
#[derive(Debug, Clone)]
pub struct Scripts {
    permits: Arc<Semaphore>,
    running: Arc<Mutex<Running>>,
}

/// What a pool has under way.
#[derive(Debug, Default)]
struct Running {
    /// Runs started, queued or running, not yet ended.
    in_flight: usize,
    /// The process groups of the scripts running now.
    groups: HashSet<i32>,
}

/// How long [`Scripts::end`] leaves a script after SIGTERM before its
/// group gets SIGKILL.
pub const END_GRACE: Duration = Duration::from_millis(500);

/// Default cap of concurrently running scripts.
pub const DEFAULT_MAX_SCRIPTS: usize = 64;

impl Scripts {
    /// At most `max` scripts at once.
    pub fn new(max: usize) -> Scripts {
        Scripts {
            permits: Arc::new(Semaphore::new(max.max(1))),
            running: Arc::default(),
        }
    }

    fn running(&self) -> std::sync::MutexGuard<'_, Running> {
        self.running.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// At stop: leaves the runs under way `wait` to end by themselves
    /// (a STOP or shutdown notify just started has its moment), then
    /// starts no more and ends the process groups of those still running
    /// (SIGTERM, then SIGKILL after [`END_GRACE`]): a script hung on an
    /// unreachable mount, and whatever it forked, does not outlive the
    /// daemon. Returns how many groups it had to end.
    pub async fn end(&self, wait: Duration) -> usize {
        let t0 = tokio::time::Instant::now();
        // A first pause: runs just spawned (the STOP notifies) are counted
        // once their tasks have started.
        loop {
            tokio::time::sleep(Duration::from_millis(20)).await;
            if self.running().in_flight == 0 || t0.elapsed() >= wait {
                break;
            }
        }
        self.permits.close();
        let groups: Vec<i32> = self.running().groups.iter().copied().collect();
        if groups.is_empty() {
            return 0;
        }
        for g in &groups {
            let _ = killpg(Pid::from_raw(*g), Signal::SIGTERM);
        }
        let t1 = tokio::time::Instant::now();
        while !self.running().groups.is_empty() && t1.elapsed() < END_GRACE {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        // Every group signalled, its leader gone or not: what it forked
        // may ignore SIGTERM.
        for g in &groups {
            let _ = killpg(Pid::from_raw(*g), Signal::SIGKILL);
        }
        groups.len()
    }

    /// Runs a script to its end or the timeout.
    pub async fn run(
        &self,
        spec: &ScriptSpec,
        timeout: Duration,
    ) -> Result<ScriptEnd, ScriptError> {
        self.running().in_flight += 1;
        let _flight = InFlight(self.running.clone());
        let _permit = self
            .permits
            .acquire()
            .await
            .map_err(|_closed| ScriptError::Closed)?;
        let Some((prog, args)) = spec.argv.split_first() else {
            return Err(ScriptError::Empty);
        };
        let mut cmd = tokio::process::Command::new(prog);
        cmd.args(args);
        prepare(&mut cmd, spec);
        let mut via_shell = false;
        let mut child = match cmd.spawn() {
            Ok(c) => c,
            // Not something the kernel runs (no `#!`, or an interpreter
            // that is missing): keepalived hands such files to system().
            Err(e)
                if matches!(
                    e.raw_os_error(),
                    Some(nix::libc::ENOEXEC | nix::libc::ENOENT)
                ) && std::path::Path::new(prog).is_file() =>
            {
                let quoted: Vec<String> = spec
                    .argv
                    .iter()
                    .map(|a| format!("'{}'", a.replace('\'', "'\\''")))
                    .collect();
                let mut sh = tokio::process::Command::new("/bin/sh");
                sh.arg("-c").arg(quoted.join(" "));
                prepare(&mut sh, spec);
                via_shell = true;
                sh.spawn().map_err(|e| ScriptError::Io("script start", e))?
            }
            Err(e) => return Err(ScriptError::Io("script start", e)),
        };
        let pgid = child.id().map(|p| Pid::from_raw(p as i32));
        // A check cut short by a reload or a stop (its task dropped here)
        // takes the script's whole process group with it, grandchildren
        // included; kill_on_drop alone reaches only the script.
        if let Some(g) = pgid {
            self.running().groups.insert(g.as_raw());
        }
        let mut group = GroupGuard {
            pgid,
            armed: true,
            running: self.running.clone(),
        };
        let end = self
            .wait_for(&mut child, pgid, timeout, via_shell, prog)
            .await;
        group.armed = false;
        end
    }

    async fn wait_for(
        &self,
        child: &mut tokio::process::Child,
        pgid: Option<Pid>,
        timeout: Duration,
        via_shell: bool,
        prog: &str,
    ) -> Result<ScriptEnd, ScriptError> {
        match tokio::time::timeout(timeout, child.wait()).await {
            Ok(Ok(st)) => match end_of(st) {
                // system_call_script(): the shell's "cannot execute" and
                // "not found" count as success.
                ScriptEnd::Exited(c @ (126 | 127)) if via_shell => {
                    log::info!("script {} exited with {c} through the shell; taken as success, as keepalived does", prog);
                    Ok(ScriptEnd::Exited(0))
                }
                end => Ok(end),
            },
            Ok(Err(e)) => Err(ScriptError::Io("script wait", e)),
            Err(_) => {
                if let Some(g) = pgid {
                    let _ = killpg(g, Signal::SIGTERM);
                }
                let _ = tokio::time::timeout(KILL_GRACE, child.wait()).await;
                // The whole group, its leader gone or not: what the
                // script forked may ignore SIGTERM.
                if let Some(g) = pgid {
                    let _ = killpg(g, Signal::SIGKILL);
                }
                let _ = child.wait().await;
                Ok(ScriptEnd::TimedOut)
            }
        }
    }
}

/// Kills a script's process group when dropped armed; the group leaves
/// its pool's list either way.
struct GroupGuard {
    pgid: Option<Pid>,
    armed: bool,
    running: Arc<Mutex<Running>>,
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        if let Some(g) = self.pgid {
            if self.armed {
                let _ = killpg(g, Signal::SIGKILL);
            }
            let mut r = self.running.lock().unwrap_or_else(|p| p.into_inner());
            r.groups.remove(&g.as_raw());
        }
    }
}

/// One run counted in its pool until it ends, however it ends.
struct InFlight(Arc<Mutex<Running>>);

impl Drop for InFlight {
    fn drop(&mut self) {
        let mut r = self.0.lock().unwrap_or_else(|p| p.into_inner());
        r.in_flight = r.in_flight.saturating_sub(1);
    }
}

/// A script's process as keepalived starts it: no stdio, a clean
/// environment, its own process group, its user and group, killed with us.
pub fn prepare(cmd: &mut tokio::process::Command, spec: &ScriptSpec) {
    cmd.stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .env_remove("IFS")
        .env_remove("LD_PRELOAD")
        .env_remove("LD_LIBRARY_PATH")
        .process_group(0)
        .kill_on_drop(true);
    // keepalived's set_privileges(): setgid, the supplementary groups cut
    // to that one group, then setuid — each only when not 0. std's own
    // uid()/gid() would leave no supplementary group at all, so the switch
    // is done here. A script already running as the daemon switches nothing.
    let switch = spec
        .run_as
        .filter(|r| r.uid != Uid::effective().as_raw() || r.gid != Gid::effective().as_raw());
    // SAFETY: prctl(PR_SET_PDEATHSIG), setgid, setgroups and setuid are
    // async-signal-safe system calls on values copied into the closure; no
    // allocation or lock is taken between fork and exec.
    unsafe {
        cmd.pre_exec(move || {
            nix::sys::prctl::set_pdeathsig(Signal::SIGTERM)?;
            if let Some(r) = switch {
                if r.gid != 0 {
                    let gid = Gid::from_raw(r.gid);
                    nix::unistd::setgid(gid)?;
                    nix::unistd::setgroups(&[gid])?;
                }
                if r.uid != 0 {
                    nix::unistd::setuid(Uid::from_raw(r.uid))?;
                }
            }
            Ok(())
        });
    }
}

/// `check_notify_script_secure()`: the script's argv with its path
/// resolved, or `None` (logged) when it may not run.
pub fn secured(cfg: &Config, argv: &[String], run_as: Option<RunAs>) -> Option<Vec<String>> {
    let first = argv.first()?;
    let v = crate::config::script_security::check(
        first,
        run_as.unwrap_or_else(RunAs::ours),
        cfg.global_defs.enable_script_security,
    );
    for l in &v.lines {
        log::info!("{l}");
    }
    if !v.runnable {
        return None;
    }
    let mut out = argv.to_vec();
    out[0] = v.path;
    Some(out)
}

fn end_of(st: ExitStatus) -> ScriptEnd {
    use std::os::unix::process::ExitStatusExt;
    match (st.code(), st.signal()) {
        (Some(c), _) => ScriptEnd::Exited(c),
        (None, Some(s)) => ScriptEnd::Signaled(s),
        (None, None) => ScriptEnd::Exited(-1),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_script_cap_serialises_runs() {
        let scripts = Scripts::new(1);
        let spec = ScriptSpec {
            argv: vec!["/bin/sleep".into(), "0.3".into()],
            run_as: None,
        };
        let t = std::time::Instant::now();
        let (a, b) = tokio::join!(
            scripts.run(&spec, Duration::from_secs(5)),
            scripts.run(&spec, Duration::from_secs(5))
        );
        assert_eq!(a.unwrap(), ScriptEnd::Exited(0));
        assert_eq!(b.unwrap(), ScriptEnd::Exited(0));
        assert!(
            t.elapsed() >= Duration::from_millis(600),
            "{:?}",
            t.elapsed()
        );
    }

    /// Alive: in the process table and not a zombie.
    fn alive(pid: i32) -> bool {
        std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
            s.rsplit(')')
                .next()
                .and_then(|r| r.split_whitespace().next())
                != Some("Z")
        })
    }

    #[tokio::test]
    async fn end_stops_hung_scripts_and_what_they_forked_and_starts_no_more() {
        let dir = std::env::temp_dir().join(format!("kr-misc-end-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let pids = dir.join("pids");
        let _ = std::fs::remove_file(&pids);
        // Each ignores SIGTERM and leaves a child of its own behind.
        let spec = ScriptSpec {
            argv: vec![
                "/bin/sh".into(),
                "-c".into(),
                format!(
                    "trap '' TERM; sleep 1000 & echo $! $$ >> {}; exec sleep 1000",
                    pids.display()
                ),
            ],
            run_as: None,
        };
        let scripts = Scripts::new(3);
        let mut runs = Vec::new();
        // Three run, a fourth waits for a slot.
        for _ in 0..4 {
            let (s, sp) = (scripts.clone(), spec.clone());
            runs.push(tokio::spawn(async move {
                s.run(&sp, Duration::from_secs(86_400)).await
            }));
        }
        let t0 = std::time::Instant::now();
        while std::fs::read_to_string(&pids).map_or(0, |s| s.lines().count()) < 3 {
            assert!(
                t0.elapsed() < Duration::from_secs(10),
                "scripts never started"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let started: Vec<i32> = std::fs::read_to_string(&pids)
            .unwrap()
            .split_whitespace()
            .map(|p| p.parse().unwrap())
            .collect();
        assert!(started.iter().all(|p| alive(*p)));
        let t = std::time::Instant::now();
        assert_eq!(scripts.end(Duration::from_millis(100)).await, 3);
        assert!(t.elapsed() < Duration::from_secs(2), "{:?}", t.elapsed());
        for r in runs {
            // The three ended, the fourth never started.
            let _ = r.await.unwrap();
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
        let left: Vec<i32> = started.iter().copied().filter(|p| alive(*p)).collect();
        assert!(left.is_empty(), "still running: {left:?}");
        assert_eq!(
            std::fs::read_to_string(&pids).unwrap().lines().count(),
            3,
            "a run started after the end"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
