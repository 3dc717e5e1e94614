//! `lvs_sync_daemon`: the IPVS connection-sync daemons the checker runs.
//!
//! Between the config model ([`SyncdConfig`]) and the backend. Without a
//! VRRP instance keepalived's checker starts both the master and the backup
//! daemon at start and stops them at exit; with an instance the VRRP side
//! drives them (`daemon::vrrp::syncd`).

use crate::config::model::syncd::SyncdConfig;
use crate::ipvs::{SyncDaemon, SYNC_BACKUP, SYNC_MASTER};

impl SyncdConfig {
    /// The daemon in `state` ([`SYNC_MASTER`], [`SYNC_BACKUP`]) the VRRP
    /// side runs for its instance of VRID `vrid` (the sync id unless `id`
    /// was given).
    pub fn vrrp_daemon(&self, state: u32, vrid: u8) -> SyncDaemon {
        SyncDaemon {
            state,
            mcast_ifn: self.ifname.clone(),
            syncid: if self.syncid_given {
                self.syncid
            } else {
                u32::from(vrid)
            },
            maxlen: self.maxlen,
            port: self.port,
            ttl: self.ttl,
            group: self.group,
        }
    }

    /// The daemons the checker itself runs: master and backup, unless a
    /// VRRP instance drives them.
    pub fn checker_daemons(&self) -> Vec<SyncDaemon> {
        if self.vrrp_instance.is_some() {
            return Vec::new();
        }
        [SYNC_MASTER, SYNC_BACKUP]
            .into_iter()
            .map(|state| SyncDaemon {
                state,
                mcast_ifn: self.ifname.clone(),
                syncid: self.syncid,
                maxlen: self.maxlen,
                port: self.port,
                ttl: self.ttl,
                group: self.group,
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn the_checker_runs_both_daemons_unless_an_instance_drives_them() {
        let c = SyncdConfig::parse(&w("lo id 5 maxlen 1400")).unwrap();
        let d = c.checker_daemons();
        assert_eq!(d.len(), 2);
        assert_eq!((d[0].state, d[1].state), (SYNC_MASTER, SYNC_BACKUP));
        assert_eq!((d[0].syncid, d[0].maxlen), (5, Some(1400)));
        let c = SyncdConfig::parse(&w("eth0 VI_1 7")).unwrap();
        assert!(c.checker_daemons().is_empty());
        assert_eq!(c.vrrp_daemon(SYNC_BACKUP, 51).syncid, 7);
        let c = SyncdConfig::parse(&w("eth0 inst VI_1")).unwrap();
        assert_eq!(c.vrrp_daemon(SYNC_MASTER, 51).syncid, 51);
    }
}
