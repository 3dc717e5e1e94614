//! The process table for `vrrp_track_process` (I/O shell over
//! [`crate::vrrp::process`]): read from `/proc` at start, then followed
//! through the kernel's proc connector (`NETLINK_CONNECTOR`, `CN_IDX_PROC`:
//! fork, exec, comm and exit events) as keepalived 2.2.7 follows it. The
//! connector answers only in the initial network namespace; elsewhere (a
//! container, a test namespace) keepalived logs the refusal and never sees
//! a change again, where this reads `/proc` again every 200 ms instead
//! (docs/compat.md). Each count that changes goes to the runner as an
//! [`Event::Process`].

use crate::config::vrrp::VrrpTrackProcess;
use crate::vrrp::process::{read_pid, read_proc, Change, Table};
use crate::vrrp::run::Event;
use netlink_sys::{protocols::NETLINK_CONNECTOR, Socket, SocketAddr};
use std::sync::{Arc, Mutex};
use tokio::sync::mpsc;

/// `CN_IDX_PROC`, `CN_VAL_PROC`.
const CN_IDX_PROC: u32 = 1;
const PROC_CN_MCAST_LISTEN: u32 = 1;
const NLMSG_DONE: u16 = 3;
const PROC_EVENT_FORK: u32 = 0x1;
const PROC_EVENT_EXEC: u32 = 0x2;
const PROC_EVENT_COMM: u32 = 0x200;
const PROC_EVENT_EXIT: u32 = 0x8000_0000;

/// What the watcher shares with the daemon: the objects tracked (a reload
/// changes them) and the processes counted.
#[derive(Clone, Default)]
pub(super) struct Procs {
    inner: Arc<Mutex<(Vec<VrrpTrackProcess>, Table)>>,
}

impl Procs {
    /// Tracks `defs` from now, the table read again; the counts that
    /// changed.
    pub(super) fn set(&self, defs: &[VrrpTrackProcess]) -> Vec<Change> {
        let procs = if defs.is_empty() {
            Vec::new()
        } else {
            read_proc()
        };
        let Ok(mut g) = self.inner.lock() else {
            return Vec::new();
        };
        g.0 = defs.to_vec();
        let (d, t) = &mut *g;
        t.rescan(d, &procs)
    }

    /// Every tracked object's count now.
    pub(super) fn counts(&self) -> Vec<(String, u32)> {
        let Ok(g) = self.inner.lock() else {
            return Vec::new();
        };
        g.0.iter()
            .map(|d| (d.name.clone(), g.1.count(&d.name)))
            .collect()
    }

    fn apply(&self, f: impl FnOnce(&[VrrpTrackProcess], &mut Table) -> Vec<Change>) -> Vec<Change> {
        match self.inner.lock() {
            Ok(mut g) => {
                let (d, t) = &mut *g;
                if d.is_empty() {
                    return Vec::new();
                }
                f(d, t)
            }
            Err(_) => Vec::new(),
        }
    }
}

/// Starts following the process table (a thread of its own: the
/// connector's socket blocks).
pub(super) fn start(procs: Procs, tx: mpsc::UnboundedSender<Event>) {
    let spawned = std::thread::Builder::new()
        .name("procwatch".into())
        .spawn(move || {
            let send = |c: Vec<Change>| !c.is_empty() && tx.send(Event::Process(c)).is_err();
            match connector() {
                Ok(sock) => {
                    let mut buf = vec![0u8; 4096];
                    loop {
                        let n = match sock.recv(&mut &mut buf[..], 0) {
                            Ok(n) => n,
                            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                            Err(e) => {
                                // Lost events (ENOBUFS): read the table again.
                                log::info!("process monitor netlink recv error: {e}");
                                let c = procs.apply(|d, t| t.rescan(d, &read_proc()));
                                if send(c) {
                                    return;
                                }
                                continue;
                            }
                        };
                        let c = procs.apply(|d, t| event(d, t, &buf[..n]));
                        if send(c) {
                            return;
                        }
                    }
                }
                Err(e) => {
                    let code = e.raw_os_error().unwrap_or(0);
                    log::info!(
                        "Failed to set/clear process event listen - errno {code} - {}",
                        nix::errno::Errno::from_raw(code).desc()
                    );
                    loop {
                        std::thread::sleep(std::time::Duration::from_millis(200));
                        let now = read_proc();
                        let c = procs.apply(|d, t| poll(d, t, &now));
                        if send(c) {
                            return;
                        }
                    }
                }
            }
        });
    if let Err(e) = spawned {
        log::error!("track_process: cannot start the process watcher: {e}");
    }
}

/// The proc connector, listening.
fn connector() -> std::io::Result<Socket> {
    let mut sock = Socket::new(NETLINK_CONNECTOR)?;
    sock.bind(&SocketAddr::new(0, CN_IDX_PROC))?;
    let mut msg = Vec::with_capacity(40);
    msg.extend_from_slice(&40u32.to_ne_bytes());
    msg.extend_from_slice(&NLMSG_DONE.to_ne_bytes());
    msg.extend_from_slice(&0u16.to_ne_bytes());
    msg.extend_from_slice(&0u32.to_ne_bytes());
    msg.extend_from_slice(&std::process::id().to_ne_bytes());
    // struct cn_msg: id {idx, val}, seq, ack, len, flags; then the op.
    for v in [CN_IDX_PROC, CN_IDX_PROC, 0, 0] {
        msg.extend_from_slice(&v.to_ne_bytes());
    }
    msg.extend_from_slice(&4u16.to_ne_bytes());
    msg.extend_from_slice(&0u16.to_ne_bytes());
    msg.extend_from_slice(&PROC_CN_MCAST_LISTEN.to_ne_bytes());
    sock.send_to(&msg, &SocketAddr::new(0, CN_IDX_PROC), 0)?;
    Ok(sock)
}

fn i32_at(b: &[u8], at: usize) -> Option<i32> {
    Some(i32::from_ne_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

/// One connector message: nlmsghdr (16), cn_msg (20), proc_event (what,
/// cpu, timestamp, then the event's data at 16).
fn event(defs: &[VrrpTrackProcess], t: &mut Table, b: &[u8]) -> Vec<Change> {
    let Some(what) = i32_at(b, 36).map(|w| w as u32) else {
        return Vec::new();
    };
    let data = 52;
    match what {
        PROC_EVENT_FORK => {
            let (Some(parent), Some(pid), Some(tgid)) = (
                i32_at(b, data + 4),
                i32_at(b, data + 8),
                i32_at(b, data + 12),
            ) else {
                return Vec::new();
            };
            // A new thread is not a new process.
            if pid != tgid {
                return Vec::new();
            }
            t.forked(defs, parent, tgid)
        }
        PROC_EVENT_EXEC | PROC_EVENT_COMM => {
            let (Some(pid), Some(tgid)) = (i32_at(b, data), i32_at(b, data + 4)) else {
                return Vec::new();
            };
            if pid != tgid {
                return Vec::new();
            }
            match read_pid(tgid) {
                Some((comm, cmdline)) => t.seen(defs, tgid, &comm, &cmdline),
                None => t.exited(defs, tgid),
            }
        }
        PROC_EVENT_EXIT => {
            let (Some(pid), Some(tgid)) = (i32_at(b, data), i32_at(b, data + 4)) else {
                return Vec::new();
            };
            if pid != tgid {
                return Vec::new();
            }
            t.exited(defs, tgid)
        }
        _ => Vec::new(),
    }
}

/// Without the connector: the processes gone since the last look exited,
/// the others are seen again (a new name, an exec, a new process).
fn poll(defs: &[VrrpTrackProcess], t: &mut Table, now: &[(i32, String, Vec<u8>)]) -> Vec<Change> {
    let mut out = Vec::new();
    for pid in t.pids() {
        if !now.iter().any(|p| p.0 == pid) {
            out.extend(t.exited(defs, pid));
        }
    }
    for (pid, comm, cmdline) in now {
        out.extend(t.seen(defs, *pid, comm, cmdline));
    }
    // Only each object's last count matters.
    let mut last: Vec<Change> = Vec::new();
    for c in out {
        match last.iter_mut().find(|l| l.0 == c.0) {
            Some(l) => {
                // A loss by exit keeps its cause (terminate_delay).
                let cause = if l.2 == crate::vrrp::process::Cause::Exit && c.1 < l.1 {
                    l.2
                } else {
                    c.2
                };
                *l = (c.0, c.1, cause);
            }
            None => last.push(c),
        }
    }
    last
}
