//! `vrrp_track_process`: which processes count, as keepalived 2.2.7's
//! `track_process.c` counts them. Pure: the process table's events (a
//! process exec'd, forked, renamed, gone — the kernel's proc connector, or
//! a scan of `/proc`) go in, each tracked object's count comes out, with
//! how it changed (a fork's gain and an exit's loss wait out
//! `fork_delay` / `terminate_delay` in the runner).
//!
//! A process matches by its `comm` (15 characters), or with
//! `full_command` by its `argv[0]`; parameters, when given, against the
//! rest of its command line (`param_match`: exact, partial — a prefix of
//! whole words —, initial — the last word may be a prefix). A child forked
//! by a counted process counts too, until it exec's something else.

use crate::config::vrrp::{ParamMatch, VrrpTrackProcess};
use std::collections::{BTreeMap, BTreeSet};

/// The kernel's `TASK_COMM_LEN` - 1.
const COMM_LEN: usize = 15;

/// Whether process `p` (its `comm`, its `/proc/PID/cmdline`) is one of
/// `t`'s.
pub fn matches(t: &VrrpTrackProcess, comm: &str, cmdline: &[u8]) -> bool {
    let mut words = cmdline.split(|b| *b == 0);
    let argv0 = words.next().unwrap_or_default();
    let name_ok = if t.full_command {
        argv0 == t.process.as_bytes()
    } else {
        let want: String = t.process.chars().take(COMM_LEN).collect();
        comm == want
    };
    if !name_ok {
        return false;
    }
    if t.param_match == ParamMatch::None {
        return true;
    }
    // The parameters as the kernel keeps them: each NUL-terminated.
    let start = (argv0.len() + 1).min(cmdline.len());
    let have = &cmdline[start..];
    let mut want = Vec::new();
    for p in &t.params {
        want.extend_from_slice(p.as_bytes());
        want.push(0);
    }
    match t.param_match {
        ParamMatch::None => true,
        ParamMatch::Exact => have == want.as_slice(),
        ParamMatch::Partial => have.starts_with(&want),
        ParamMatch::Initial => want.is_empty() || have.starts_with(&want[..want.len() - 1]),
    }
}

/// How a count changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cause {
    /// A counted process forked (`fork_delay` applies to a gain).
    Fork,
    /// A counted process exited (`terminate_delay` applies to a loss).
    Exit,
    /// A process exec'd or was renamed, or the table was read again.
    Other,
}

/// The processes counted, per pid.
#[derive(Debug, Clone, Default)]
pub struct Table {
    /// pid → the tracked objects (by name) it counts for.
    pids: BTreeMap<i32, BTreeSet<String>>,
}

/// One object's new count.
pub type Change = (String, u32, Cause);

impl Table {
    /// The pids counted.
    pub fn pids(&self) -> Vec<i32> {
        self.pids.keys().copied().collect()
    }

    /// The number of processes counted for `name`.
    pub fn count(&self, name: &str) -> u32 {
        self.pids.values().filter(|s| s.contains(name)).count() as u32
    }

    fn changes(&self, before: &BTreeMap<String, u32>, cause: Cause) -> Vec<Change> {
        before
            .iter()
            .filter_map(|(n, c)| {
                let now = self.count(n);
                (now != *c).then(|| (n.clone(), now, cause))
            })
            .collect()
    }

    fn counts(&self, tracked: &[VrrpTrackProcess]) -> BTreeMap<String, u32> {
        tracked
            .iter()
            .map(|t| (t.name.clone(), self.count(&t.name)))
            .collect()
    }

    /// Process `pid` is (now) `comm` running `cmdline` (an exec, a new
    /// name, or a scan).
    pub fn seen(
        &mut self,
        tracked: &[VrrpTrackProcess],
        pid: i32,
        comm: &str,
        cmdline: &[u8],
    ) -> Vec<Change> {
        let before = self.counts(tracked);
        let set: BTreeSet<String> = tracked
            .iter()
            .filter(|t| matches(t, comm, cmdline))
            .map(|t| t.name.clone())
            .collect();
        if set.is_empty() {
            self.pids.remove(&pid);
        } else {
            self.pids.insert(pid, set);
        }
        self.changes(&before, Cause::Other)
    }

    /// `parent` forked `child`: the child counts where the parent does.
    pub fn forked(&mut self, tracked: &[VrrpTrackProcess], parent: i32, child: i32) -> Vec<Change> {
        let Some(set) = self.pids.get(&parent).cloned() else {
            return Vec::new();
        };
        let before = self.counts(tracked);
        self.pids.insert(child, set);
        self.changes(&before, Cause::Fork)
    }

    /// `pid` exited.
    pub fn exited(&mut self, tracked: &[VrrpTrackProcess], pid: i32) -> Vec<Change> {
        if !self.pids.contains_key(&pid) {
            return Vec::new();
        }
        let before = self.counts(tracked);
        self.pids.remove(&pid);
        self.changes(&before, Cause::Exit)
    }

    /// The table read afresh (start, a reload, lost events): every pid
    /// with its `comm` and command line.
    pub fn rescan(
        &mut self,
        tracked: &[VrrpTrackProcess],
        procs: &[(i32, String, Vec<u8>)],
    ) -> Vec<Change> {
        let before = self.counts(tracked);
        self.pids.clear();
        for (pid, comm, cmdline) in procs {
            let set: BTreeSet<String> = tracked
                .iter()
                .filter(|t| matches(t, comm, cmdline))
                .map(|t| t.name.clone())
                .collect();
            if !set.is_empty() {
                self.pids.insert(*pid, set);
            }
        }
        self.changes(&before, Cause::Other)
    }
}

/// Every process of `/proc` now: pid, `comm`, command line (zombies and
/// kernel threads left out, as keepalived leaves them).
pub fn read_proc() -> Vec<(i32, String, Vec<u8>)> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|e| {
            let pid: i32 = e.file_name().to_str()?.parse().ok()?;
            read_pid(pid).map(|(c, l)| (pid, c, l))
        })
        .collect()
}

/// Process `pid`'s `comm` and command line, unless it is a zombie.
pub fn read_pid(pid: i32) -> Option<(String, Vec<u8>)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let open = stat.find('(')?;
    let close = stat.rfind(')')?;
    let comm = stat.get(open + 1..close)?.to_string();
    if stat.get(close + 2..close + 3) == Some("Z") {
        return None;
    }
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    Some((comm, cmdline))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tp(name: &str, process: &str, params: &[&str], m: ParamMatch) -> VrrpTrackProcess {
        VrrpTrackProcess {
            params: params.iter().map(|s| s.to_string()).collect(),
            param_match: m,
            ..VrrpTrackProcess::new(name, process)
        }
    }

    #[test]
    fn names_and_parameters_match_as_keepalived_matches_them() {
        let cmd = b"/usr/sbin/nginx\0-g\0daemon off;\0";
        assert!(matches(
            &tp("a", "nginx", &[], ParamMatch::None),
            "nginx",
            cmd
        ));
        assert!(!matches(
            &tp("a", "nginx", &[], ParamMatch::None),
            "nginx-debug",
            cmd
        ));
        assert!(matches(
            &tp("a", "nginx", &["-g", "daemon off;"], ParamMatch::Exact),
            "nginx",
            cmd
        ));
        assert!(!matches(
            &tp("a", "nginx", &["-g"], ParamMatch::Exact),
            "nginx",
            cmd
        ));
        assert!(matches(
            &tp("a", "nginx", &["-g"], ParamMatch::Partial),
            "nginx",
            cmd
        ));
        assert!(!matches(
            &tp("a", "nginx", &["-g", "daemon"], ParamMatch::Partial),
            "nginx",
            cmd
        ));
        assert!(matches(
            &tp("a", "nginx", &["-g", "daemon"], ParamMatch::Initial),
            "nginx",
            cmd
        ));
        // Exact without parameters: none allowed.
        assert!(!matches(
            &tp("a", "nginx", &[], ParamMatch::Exact),
            "nginx",
            cmd
        ));
        // A long name is compared as the kernel cuts comm.
        assert!(matches(
            &tp("a", "a-very-long-daemon-name", &[], ParamMatch::None),
            "a-very-long-dae",
            b"x\0"
        ));
        let mut full = tp("a", "/usr/sbin/nginx", &[], ParamMatch::None);
        full.full_command = true;
        assert!(matches(&full, "whatever", cmd));
    }

    #[test]
    fn forks_count_and_exits_uncount() {
        let t = vec![tp("web", "nginx", &[], ParamMatch::None)];
        let mut tab = Table::default();
        assert_eq!(
            tab.seen(&t, 10, "nginx", b"nginx\0"),
            vec![("web".into(), 1, Cause::Other)]
        );
        assert_eq!(tab.forked(&t, 10, 11), vec![("web".into(), 2, Cause::Fork)]);
        assert!(tab.forked(&t, 99, 100).is_empty(), "an untracked parent");
        assert_eq!(tab.exited(&t, 10), vec![("web".into(), 1, Cause::Exit)]);
        // The child exec's something else: it no longer counts.
        assert_eq!(
            tab.seen(&t, 11, "sh", b"/bin/sh\0"),
            vec![("web".into(), 0, Cause::Other)]
        );
        assert!(tab.exited(&t, 11).is_empty());
    }
}
