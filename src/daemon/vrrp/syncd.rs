//! The IPVS connection-sync daemons that follow the instance named by
//! `lvs_sync_daemon IF INSTANCE` (keepalived's `ipvs_syncd_master()` and
//! `ipvs_syncd_backup()`): the backup daemon from start, the master daemon
//! (the backup one stopped first) while the instance is MASTER, the backup
//! one again when it leaves, none after stop. The sync id is the
//! instance's VRID unless `id` is given. Part of the VRRP daemon shell: an
//! IPVS handle of its own (or the dry run's log) on a task that applies
//! the changes in order.

use crate::config::model::syncd::SyncdConfig;
use crate::config::model::Config;
use crate::ipvs::{Backend, SYNC_BACKUP, SYNC_MASTER};
use crate::vrrp::run::Notified;
use tokio::sync::{mpsc, oneshot};

enum Job {
    /// Run the daemon in this state (the other one stopped), or none.
    To(Option<u32>),
    Done(oneshot::Sender<()>),
}

/// The daemons' driver.
pub(super) struct Syncd {
    instance: String,
    tx: mpsc::UnboundedSender<Job>,
}

impl Syncd {
    /// For `cfg`'s `lvs_sync_daemon`, when it names one of its VRRP
    /// instances: starts the backup daemon.
    pub(super) fn start(cfg: &Config, dry_run: bool) -> Option<Syncd> {
        let c = cfg.global_defs.lvs_sync_daemon.clone()?;
        let instance = c.vrrp_instance.clone()?;
        let vrid = cfg.vrrp.instances.iter().find(|i| i.name == instance)?.vrid;
        let (tx, rx) = mpsc::unbounded_channel();
        tokio::spawn(async move {
            if dry_run {
                run(crate::ipvs::dryrun::DryRun::new(), c, vrid, rx).await;
            } else {
                match crate::ipvs::netlink::IpvsHandle::open().await {
                    Ok(h) => run(h, c, vrid, rx).await,
                    Err(e) => log::error!("lvs_sync_daemon: IPVS: {e}"),
                }
            }
        });
        let _ = tx.send(Job::To(Some(SYNC_BACKUP)));
        Some(Syncd { instance, tx })
    }

    /// Instance `name` entered `state`.
    pub(super) fn follow(&self, name: &str, state: Notified) {
        if name != self.instance {
            return;
        }
        let to = match state {
            Notified::Master => Some(SYNC_MASTER),
            Notified::Backup | Notified::Fault => Some(SYNC_BACKUP),
            Notified::Stop | Notified::Deleted => None,
            _ => return,
        };
        let _ = self.tx.send(Job::To(to));
    }

    /// Stops the daemon running and waits (5 s at most) for it.
    pub(super) async fn stop(self) {
        let _ = self.tx.send(Job::To(None));
        let (dtx, drx) = oneshot::channel();
        let _ = self.tx.send(Job::Done(dtx));
        let _ = tokio::time::timeout(std::time::Duration::from_secs(5), drx).await;
    }
}

async fn run<B: Backend>(mut b: B, c: SyncdConfig, vrid: u8, mut rx: mpsc::UnboundedReceiver<Job>) {
    // What the kernel runs already (a daemon killed with -9 leaves its
    // sync daemons behind) is adopted: stopped or switched as if this run
    // had started it, where keepalived only logs the failed start.
    let mut running: Vec<(u32, u32)> = b.daemons().await.unwrap_or_default();
    for (s, id) in &running {
        log::warn!(
            "lvs_sync_daemon: the kernel runs a {} sync daemon (syncid {id}) left by an earlier run: taken over",
            word(*s)
        );
    }
    while let Some(job) = rx.recv().await {
        let to = match job {
            Job::To(to) => to,
            Job::Done(d) => {
                let _ = d.send(());
                continue;
            }
        };
        let want = to.map(|s| (s, c.vrrp_daemon(s, vrid).syncid));
        // Every daemon that is not the one wanted goes first (the backup
        // one before the master starts, as keepalived orders them).
        let mut kept = Vec::new();
        for d in running.drain(..) {
            if Some(d) == want {
                kept.push(d);
                continue;
            }
            if let Err(e) = b.stop_daemon(d.0, d.1).await {
                log::warn!("lvs_sync_daemon: {e}");
            }
        }
        running = kept;
        if let Some(s) = to.filter(|_| running.is_empty()) {
            match b.start_daemon(&c.vrrp_daemon(s, vrid)).await {
                Ok(()) => running.push((s, c.vrrp_daemon(s, vrid).syncid)),
                // Started behind our back since: it is ours to stop.
                Err(e) if e.errno() == Some(nix::libc::EEXIST) => {
                    log::warn!("lvs_sync_daemon: {e}; taken over");
                    running.push((s, c.vrrp_daemon(s, vrid).syncid));
                }
                Err(e) => log::warn!("lvs_sync_daemon: {e}"),
            }
        }
    }
}

use crate::ipvs::sync_state_word as word;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ipvs::dryrun::DryRun;
    use crate::ipvs::{Dest, IpvsError, Op, Service, ServiceKey, SyncDaemon, Table, Timeouts};
    use std::sync::{Arc, Mutex};

    /// A kernel holding sync daemons: what it runs, and the calls made.
    struct Kernel {
        dry: DryRun,
        held: Arc<Mutex<Vec<(u32, u32)>>>,
        calls: Arc<Mutex<Vec<String>>>,
    }

    impl Backend for Kernel {
        fn name(&self) -> &'static str {
            "test"
        }
        async fn dump(&mut self) -> Result<Table, IpvsError> {
            self.dry.dump().await
        }
        async fn services(&mut self) -> Result<Vec<Service>, IpvsError> {
            self.dry.services().await
        }
        async fn dests_of(&mut self, svc: &ServiceKey) -> Result<Option<Vec<Dest>>, IpvsError> {
            self.dry.dests_of(svc).await
        }
        async fn apply(&mut self, ops: &[Op]) -> Vec<Result<(), IpvsError>> {
            self.dry.apply(ops).await
        }
        async fn timeouts(&mut self) -> Result<Timeouts, IpvsError> {
            self.dry.timeouts().await
        }
        async fn set_timeouts(&mut self, t: Timeouts) -> Result<(), IpvsError> {
            self.dry.set_timeouts(t).await
        }
        async fn start_daemon(&mut self, d: &SyncDaemon) -> Result<(), IpvsError> {
            self.calls
                .lock()
                .unwrap()
                .push(format!("start {} {}", word(d.state), d.syncid));
            let mut h = self.held.lock().unwrap();
            // The kernel runs one daemon per state.
            if h.iter().any(|x| x.0 == d.state) {
                return Err(IpvsError::Kernel {
                    op: "start sync daemon".into(),
                    errno: nix::libc::EEXIST,
                });
            }
            h.push((d.state, d.syncid));
            Ok(())
        }
        async fn stop_daemon(&mut self, state: u32, syncid: u32) -> Result<(), IpvsError> {
            self.calls
                .lock()
                .unwrap()
                .push(format!("stop {} {syncid}", word(state)));
            self.held.lock().unwrap().retain(|x| x.0 != state);
            Ok(())
        }
        async fn daemons(&mut self) -> Result<Vec<(u32, u32)>, IpvsError> {
            Ok(self.held.lock().unwrap().clone())
        }
    }

    #[tokio::test]
    async fn a_master_daemon_left_by_a_crash_is_taken_over_switched_and_stopped() {
        // A SIGKILLed director left its master daemon (sync id 51).
        let held = Arc::new(Mutex::new(vec![(SYNC_MASTER, 51)]));
        let calls = Arc::new(Mutex::new(Vec::new()));
        let k = Kernel {
            dry: DryRun::new(),
            held: held.clone(),
            calls: calls.clone(),
        };
        let c = SyncdConfig::parse(&["eth0".to_string(), "VI_1".to_string()]).unwrap();
        let (tx, rx) = mpsc::unbounded_channel();
        let task = tokio::spawn(run(k, c, 51, rx));
        let step = |to: Option<u32>| {
            let _ = tx.send(Job::To(to));
        };
        let settle = || async {
            let (d, w) = oneshot::channel();
            let _ = tx.send(Job::Done(d));
            let _ = w.await;
        };
        // The restart comes up BACKUP: the leaked master goes first.
        step(Some(SYNC_BACKUP));
        settle().await;
        assert_eq!(*held.lock().unwrap(), vec![(SYNC_BACKUP, 51)]);
        // MASTER, then the stop: nothing left in the kernel.
        step(Some(SYNC_MASTER));
        step(None);
        settle().await;
        assert!(
            held.lock().unwrap().is_empty(),
            "{:?}",
            calls.lock().unwrap()
        );
        assert_eq!(
            *calls.lock().unwrap(),
            [
                "stop master 51",
                "start backup 51",
                "stop backup 51",
                "start master 51",
                "stop master 51"
            ]
        );
        drop(tx);
        task.await.unwrap();
    }

    #[tokio::test]
    async fn a_daemon_started_behind_our_back_is_ours_to_stop() {
        let held = Arc::new(Mutex::new(Vec::new()));
        let k = Kernel {
            dry: DryRun::new(),
            held: held.clone(),
            calls: Arc::default(),
        };
        let c = SyncdConfig::parse(&["eth0".to_string(), "VI_1".to_string()]).unwrap();
        let (tx, rx) = mpsc::unbounded_channel();
        let task = tokio::spawn(run(k, c, 51, rx));
        let (d, w) = oneshot::channel();
        let _ = tx.send(Job::Done(d));
        let _ = w.await;
        // After the adoption, before our start: the start fails (EEXIST).
        held.lock().unwrap().push((SYNC_BACKUP, 51));
        let _ = tx.send(Job::To(Some(SYNC_BACKUP)));
        let _ = tx.send(Job::To(None));
        drop(tx);
        task.await.unwrap();
        assert!(held.lock().unwrap().is_empty());
    }
}
