//! `lvs_sync_daemon`: the IPVS connection-sync daemons the checker runs.
//!
//! Between the config model (the keyword's words, kept as written) and the
//! backend. Without a VRRP instance keepalived's checker starts both the
//! master and the backup daemon at start and stops them at exit; with an
//! instance the VRRP process drives them (not built yet). Parsing follows
//! `global_parser.c:lvs_syncd_handler()`.

use crate::ipvs::{SyncDaemon, SYNC_BACKUP, SYNC_MASTER};
use std::net::IpAddr;

/// What `lvs_sync_daemon` asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyncdConfig {
    /// The multicast interface.
    pub ifname: String,
    /// `inst NAME` or the legacy positional instance: VRRP drives the daemons.
    pub vrrp_instance: Option<String>,
    /// `id N` (0-255; default 0 without VRRP, the instance's VRID with).
    pub syncid: u32,
    /// `id` was given.
    pub syncid_given: bool,
    /// `maxlen N`.
    pub maxlen: Option<u16>,
    /// `port N`.
    pub port: Option<u16>,
    /// `ttl N`.
    pub ttl: Option<u8>,
    /// `group ADDR` (multicast only).
    pub group: Option<IpAddr>,
}

fn num<T: std::str::FromStr + PartialOrd>(w: Option<&String>, min: T, max: T) -> Option<T> {
    w.and_then(|s| s.parse::<T>().ok())
        .filter(|v| *v >= min && *v <= max)
}

impl SyncdConfig {
    /// From the keyword's arguments (`IF [inst NAME] [id N] [maxlen N]
    /// [port N] [ttl N] [group ADDR]`, or legacy `IF NAME [ID]`). Values the
    /// config check already reported as invalid are left out, as keepalived
    /// leaves them.
    pub fn parse(words: &[String]) -> Option<SyncdConfig> {
        let ifname = words.first()?.clone();
        let mut c = SyncdConfig {
            ifname,
            vrrp_instance: None,
            syncid: 0,
            syncid_given: false,
            maxlen: None,
            port: None,
            ttl: None,
            group: None,
        };
        let mut i = 1;
        while i < words.len() {
            let next = words.get(i + 1);
            match words[i].as_str() {
                "inst" => {
                    if c.vrrp_instance.is_none() {
                        c.vrrp_instance = next.cloned();
                    }
                }
                "id" => {
                    if let Some(v) = num(next, 0u32, 255) {
                        c.syncid = v;
                        c.syncid_given = true;
                    }
                }
                "maxlen" => c.maxlen = num(next, 1u16, 65535 - 20 - 8).or(c.maxlen),
                "port" => c.port = num(next, 1u16, 65535).or(c.port),
                "ttl" => c.ttl = num(next, 1u8, 255).or(c.ttl),
                "group" => {
                    c.group = next
                        .and_then(|s| s.parse::<IpAddr>().ok())
                        .filter(|a| a.is_multicast())
                        .or(c.group);
                }
                w if i == 1 => {
                    c.vrrp_instance = Some(w.to_string());
                    i += 1;
                    continue;
                }
                _ if i == 2 => {
                    if let Some(v) = num(Some(&words[i]), 0u32, 255) {
                        c.syncid = v;
                        c.syncid_given = true;
                    }
                    i += 1;
                    continue;
                }
                _ => {
                    i += 1;
                    continue;
                }
            }
            i += 2;
        }
        Some(c)
    }

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
    fn full_form() {
        let c =
            SyncdConfig::parse(&w("lo id 5 maxlen 1400 port 8848 ttl 2 group 224.0.0.81")).unwrap();
        assert_eq!(c.syncid, 5);
        assert_eq!((c.maxlen, c.port, c.ttl), (Some(1400), Some(8848), Some(2)));
        assert_eq!(c.group, Some("224.0.0.81".parse().unwrap()));
        assert_eq!(c.checker_daemons().len(), 2);
    }

    #[test]
    fn instance_forms_leave_the_daemons_to_vrrp() {
        let c = SyncdConfig::parse(&w("eth0 VI_1 7")).unwrap();
        assert_eq!((c.vrrp_instance.as_deref(), c.syncid), (Some("VI_1"), 7));
        assert!(c.checker_daemons().is_empty());
        let c = SyncdConfig::parse(&w("eth0 inst VI_1 id 3")).unwrap();
        assert_eq!((c.vrrp_instance.as_deref(), c.syncid), (Some("VI_1"), 3));
    }

    #[test]
    fn invalid_values_are_left_out() {
        let c = SyncdConfig::parse(&w("lo id 300 ttl 0 group 10.0.0.1")).unwrap();
        assert_eq!((c.syncid, c.ttl, c.group), (0, None, None));
    }
}
