//! `lvs_sync_daemon IF [inst NAME] [id N] [maxlen N] [port N] [ttl N]
//! [group ADDR]` (or legacy `IF NAME [ID]`) read into what it asks for,
//! as `global_parser.c:lvs_syncd_handler()` reads it. Part of the model;
//! the daemons it makes are `lvs::syncd`'s.

use serde::Serialize;
use std::net::IpAddr;

/// What `lvs_sync_daemon` asks for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SyncdConfig {
    /// The keyword's first two words as written (keepalived's line for a
    /// second `lvs_sync_daemon` names them).
    pub written: (String, String),
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
            written: (ifname.clone(), words.get(1).cloned().unwrap_or_default()),
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
        assert_eq!(c.vrrp_instance, None);
    }

    #[test]
    fn instance_forms() {
        let c = SyncdConfig::parse(&w("eth0 VI_1 7")).unwrap();
        assert_eq!((c.vrrp_instance.as_deref(), c.syncid), (Some("VI_1"), 7));
        let c = SyncdConfig::parse(&w("eth0 inst VI_1 id 3")).unwrap();
        assert_eq!((c.vrrp_instance.as_deref(), c.syncid), (Some("VI_1"), 3));
    }

    #[test]
    fn invalid_values_are_left_out() {
        let c = SyncdConfig::parse(&w("lo id 300 ttl 0 group 10.0.0.1")).unwrap();
        assert_eq!((c.syncid, c.ttl, c.group), (0, None, None));
    }
}
