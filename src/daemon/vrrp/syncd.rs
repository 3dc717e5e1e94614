//! The IPVS connection-sync daemons that follow the instance named by
//! `lvs_sync_daemon IF INSTANCE` (keepalived's `ipvs_syncd_master()` and
//! `ipvs_syncd_backup()`): the backup daemon from start, the master daemon
//! (the backup one stopped first) while the instance is MASTER, the backup
//! one again when it leaves, none after stop. The sync id is the
//! instance's VRID unless `id` is given. Part of the VRRP daemon shell: an
//! IPVS handle of its own (or the dry run's log) on a task that applies
//! the changes in order.

use crate::config::model::Config;
use crate::ipvs::{Backend, SYNC_BACKUP, SYNC_MASTER};
use crate::lvs::syncd::SyncdConfig;
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
        let c = SyncdConfig::parse(cfg.global_defs.lvs_sync_daemon.as_deref()?)?;
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
    let mut running: Option<u32> = None;
    while let Some(job) = rx.recv().await {
        let to = match job {
            Job::To(to) => to,
            Job::Done(d) => {
                let _ = d.send(());
                continue;
            }
        };
        if to == running {
            continue;
        }
        if let Some(s) = running.take() {
            let id = c.vrrp_daemon(s, vrid).syncid;
            if let Err(e) = b.stop_daemon(s, id).await {
                log::warn!("lvs_sync_daemon: {e}");
            }
        }
        if let Some(s) = to {
            match b.start_daemon(&c.vrrp_daemon(s, vrid)).await {
                Ok(()) => running = Some(s),
                Err(e) => log::warn!("lvs_sync_daemon: {e}"),
            }
        }
    }
}
