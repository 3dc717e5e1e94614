//! The operator's run-time edits to the loaded configuration (extension of
//! keepalived-rs, over the status socket): drain (`disable`) and `enable`
//! a real server, set its `weight`, `add` a real server to an existing
//! virtual server or `remove` one.
//!
//! Pure: the file's model in, the model the daemon runs out. The daemon
//! keeps the edits beside the file's model and applies them again to each
//! file a reload reads, so an edit survives a reload of an unchanged file;
//! an edit whose virtual or real server the file no longer has is dropped
//! with a line saying so. Servers are named as keepalived names them
//! (`[192.0.2.1]:tcp:80`, `FWM 5`, `[group]:0`; `[127.0.0.1]:tcp:8080`),
//! as `keepalived --status` shows them.

use super::model::{Config, RealServer, VirtualServer};
use super::validate::{format_rs, format_vs};
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::net::IpAddr;

/// keepalived's range for a real server's weight.
pub const WEIGHT_MAX: i64 = i32::MAX as i64;

/// One edit, as asked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Edit {
    /// Drain: weight 0 in the kernel (no new connections), checks go on.
    Disable {
        /// Virtual server.
        vs: String,
        /// Real server.
        rs: String,
    },
    /// Undo a drain.
    Enable {
        /// Virtual server.
        vs: String,
        /// Real server.
        rs: String,
    },
    /// Set the real server's configured weight.
    Weight {
        /// Virtual server.
        vs: String,
        /// Real server.
        rs: String,
        /// The weight.
        weight: i32,
    },
    /// A new real server, checked as the virtual server's first real server
    /// is (its checkers aimed at the new address).
    Add {
        /// Virtual server.
        vs: String,
        /// Address.
        ip: IpAddr,
        /// Port.
        port: u16,
        /// Weight (else the first real server's).
        weight: Option<i32>,
    },
    /// Remove a real server.
    Remove {
        /// Virtual server.
        vs: String,
        /// Real server.
        rs: String,
    },
}

/// The usage line, for errors.
pub const USAGE: &str = "disable VS RS | enable VS RS | weight VS RS N | add VS IP PORT [WEIGHT] | remove VS RS (names as `keepalived --status` shows them)";

/// Takes a virtual server's name off `words`: `FWM N` is two words.
fn vs_name<'a>(words: &mut impl Iterator<Item = &'a str>) -> Option<String> {
    let w = words.next()?;
    if w == "FWM" {
        return Some(format!("FWM {}", words.next()?));
    }
    Some(w.to_string())
}

fn weight_of(s: &str) -> Result<i32, String> {
    match s.parse::<i64>() {
        Ok(w) if (0..=WEIGHT_MAX).contains(&w) => Ok(w as i32),
        _ => Err(format!(
            "weight '{s}' invalid: a whole number from 0 to {WEIGHT_MAX}"
        )),
    }
}

impl Edit {
    /// Parses `VERB ARGS...`.
    pub fn parse(line: &str) -> Result<Edit, String> {
        let mut w = line.split_whitespace();
        let verb = w.next().unwrap_or("");
        let bad = || format!("usage: {USAGE}");
        let vs = vs_name(&mut w).ok_or_else(bad)?;
        let edit = match verb {
            "disable" | "enable" | "remove" | "weight" => {
                let rs = w.next().ok_or_else(bad)?.to_string();
                match verb {
                    "disable" => Edit::Disable { vs, rs },
                    "enable" => Edit::Enable { vs, rs },
                    "remove" => Edit::Remove { vs, rs },
                    _ => Edit::Weight {
                        vs,
                        rs,
                        weight: weight_of(w.next().ok_or_else(bad)?)?,
                    },
                }
            }
            "add" => {
                let ip = w.next().ok_or_else(bad)?;
                let ip: IpAddr = ip
                    .trim_start_matches('[')
                    .trim_end_matches(']')
                    .parse()
                    .map_err(|_| format!("address '{ip}' invalid"))?;
                let port = w.next().ok_or_else(bad)?;
                let port: u16 = port.parse().map_err(|_| format!("port '{port}' invalid"))?;
                let weight = w.next().map(weight_of).transpose()?;
                Edit::Add {
                    vs,
                    ip,
                    port,
                    weight,
                }
            }
            _ => return Err(bad()),
        };
        if let Some(extra) = w.next() {
            return Err(format!("unexpected '{extra}'; {}", bad()));
        }
        Ok(edit)
    }

    /// The virtual server it names.
    pub fn vs(&self) -> &str {
        match self {
            Edit::Disable { vs, .. }
            | Edit::Enable { vs, .. }
            | Edit::Weight { vs, .. }
            | Edit::Add { vs, .. }
            | Edit::Remove { vs, .. } => vs,
        }
    }
}

/// A real server added at run time: the new server, and the name of the
/// virtual server it belongs to.
#[derive(Debug, Clone)]
struct Added {
    vs: String,
    rs: RealServer,
}

/// The edits in force.
#[derive(Debug, Clone, Default)]
pub struct Overlay {
    drained: BTreeSet<(String, String)>,
    weights: BTreeMap<(String, String), i32>,
    added: Vec<Added>,
    removed: BTreeSet<(String, String)>,
}

/// What an edit did, for the transition record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Done {
    /// Virtual server.
    pub vs: String,
    /// Real server.
    pub rs: String,
    /// Its state before, in a word.
    pub from: &'static str,
    /// After.
    pub to: &'static str,
    /// In words.
    pub what: String,
}

fn find_vs<'c>(cfg: &'c Config, name: &str) -> Option<&'c VirtualServer> {
    cfg.virtual_servers.iter().find(|v| format_vs(v) == name)
}

fn rs_name(rs: &RealServer, vs: &VirtualServer) -> String {
    format_rs(rs.ip, rs.port, vs.protocol)
}

impl Overlay {
    /// No edit in force.
    pub fn is_empty(&self) -> bool {
        self.drained.is_empty()
            && self.weights.is_empty()
            && self.added.is_empty()
            && self.removed.is_empty()
    }

    /// Records `e` against `running` (the configuration as the daemon runs
    /// it, edits applied). An edit naming a server `running` lacks, or
    /// adding one it has, is refused.
    pub fn record(&mut self, running: &Config, e: Edit) -> Result<Done, String> {
        let vs = find_vs(running, e.vs()).ok_or_else(|| {
            format!(
                "no virtual server {} (the names are keepalived --status's)",
                e.vs()
            )
        })?;
        let vs_n = format_vs(vs);
        let rs_of = |name: &str| {
            vs.real_servers
                .iter()
                .find(|r| rs_name(r, vs) == name)
                .ok_or_else(|| format!("virtual server {vs_n} has no real server {name}"))
        };
        let done = |rs: String, from, to, what: String| Done {
            vs: vs_n.clone(),
            rs,
            from,
            to,
            what,
        };
        Ok(match e {
            Edit::Disable { rs, .. } => {
                rs_of(&rs)?;
                if !self.drained.insert((vs_n.clone(), rs.clone())) {
                    return Err(format!("{rs} of {vs_n} is disabled already"));
                }
                done(
                    rs,
                    "enabled",
                    "drained",
                    "disabled (weight 0, checks go on)".into(),
                )
            }
            Edit::Enable { rs, .. } => {
                rs_of(&rs)?;
                if !self.drained.remove(&(vs_n.clone(), rs.clone())) {
                    return Err(format!("{rs} of {vs_n} is not disabled"));
                }
                done(rs, "drained", "enabled", "enabled".into())
            }
            Edit::Weight { rs, weight, .. } => {
                let was = rs_of(&rs)?.iweight();
                let key = (vs_n.clone(), rs.clone());
                let drained = self.drained.contains(&key);
                match self
                    .added
                    .iter_mut()
                    .find(|a| a.vs == vs_n && rs_name(&a.rs, vs) == rs)
                {
                    Some(a) => a.rs.weight = Some(weight),
                    None => {
                        self.weights.insert(key, weight);
                    }
                }
                let was = if drained {
                    "drained".to_string()
                } else {
                    was.to_string()
                };
                done(rs, "weight", "weight", format!("weight {was} -> {weight}"))
            }
            Edit::Add {
                ip, port, weight, ..
            } => {
                let name = format_rs(ip, port, vs.protocol);
                if rs_of(&name).is_ok() {
                    return Err(format!("virtual server {vs_n} has {name} already"));
                }
                let rs = like_first(vs, ip, port, weight);
                // As the file's real servers are checked: one of the other
                // family than its virtual server's is refused (tunnelled
                // ones excepted).
                let tun = |r: &RealServer| {
                    matches!(
                        r.lvs_method.or(vs.lvs_method),
                        Some(crate::config::model::Forwarding::Tun { .. })
                    )
                };
                if !tun(&rs) {
                    let family_v6 = super::handlers::real_server::parse_family(vs);
                    if family_v6.is_some_and(|v6| v6 != ip.is_ipv6()) {
                        return Err(format!(
                            "address family of virtual server {vs_n} and real server {ip} don't match"
                        ));
                    }
                }
                let key = (vs_n.clone(), name.clone());
                if self.removed.remove(&key) {
                    // Back as the file has it: the removal is undone.
                    if let Some(w) = weight {
                        self.weights.insert(key, w);
                    }
                } else {
                    self.added.push(Added {
                        vs: vs_n.clone(),
                        rs,
                    });
                }
                done(name, "absent", "added", "added".into())
            }
            Edit::Remove { rs, .. } => {
                rs_of(&rs)?;
                let key = (vs_n.clone(), rs.clone());
                self.drained.remove(&key);
                self.weights.remove(&key);
                let before = self.added.len();
                self.added
                    .retain(|a| !(a.vs == vs_n && rs_name(&a.rs, vs) == rs));
                if self.added.len() == before {
                    self.removed.insert(key);
                }
                done(rs, "present", "removed", "removed".into())
            }
        })
    }

    /// `base` (the file's model) with the edits applied, and a line for
    /// each edit dropped because `base` no longer has what it names (or
    /// now has what it added). `None` when no edit is in force.
    pub fn apply(&mut self, base: &Config) -> Option<(Config, Vec<String>)> {
        if self.is_empty() {
            return None;
        }
        let mut cfg = base.clone();
        let mut notes = Vec::new();
        let names: HashMap<String, usize> = cfg
            .virtual_servers
            .iter()
            .enumerate()
            .map(|(i, v)| (format_vs(v), i))
            .collect();
        // The real servers' names, for the virtual servers an edit names
        // only: each edit is then matched in constant time, and an apply
        // costs the configuration's size once, not once per edit.
        let touched: BTreeSet<usize> = self
            .added
            .iter()
            .map(|a| a.vs.as_str())
            .chain(self.drained.iter().map(|(v, _)| v.as_str()))
            .chain(self.removed.iter().map(|(v, _)| v.as_str()))
            .chain(self.weights.keys().map(|(v, _)| v.as_str()))
            .filter_map(|v| names.get(v).copied())
            .collect();
        let mut present: HashMap<usize, HashSet<String>> = touched
            .iter()
            .map(|&i| {
                let v = &cfg.virtual_servers[i];
                (i, v.real_servers.iter().map(|r| rs_name(r, v)).collect())
            })
            .collect();
        // An added server the file now has (or whose virtual server it
        // lost) goes; the others join their virtual server before the
        // edits below are matched, so that they can be drained or weighted.
        self.added.retain(|a| match names.get(&a.vs) {
            None => {
                notes.push(format!(
                    "add of [{}]:{} dropped: the configuration no longer has virtual server {}",
                    a.rs.ip, a.rs.port, a.vs
                ));
                false
            }
            Some(&i) => {
                let name = rs_name(&a.rs, &cfg.virtual_servers[i]);
                let now_in_file = present[&i].contains(&name);
                if now_in_file {
                    notes.push(format!(
                        "add of {name} to {} dropped: the configuration has it now",
                        a.vs
                    ));
                }
                !now_in_file
            }
        });
        for a in &self.added {
            let i = names[&a.vs];
            let v = &mut cfg.virtual_servers[i];
            let name = rs_name(&a.rs, v);
            v.real_servers.push(a.rs.clone());
            present.entry(i).or_default().insert(name);
        }
        let has = |vs: &str, rs: &str| {
            names
                .get(vs)
                .is_some_and(|i| present.get(i).is_some_and(|p| p.contains(rs)))
        };
        // Edits of servers the configuration no longer has go.
        for (set, what) in [
            (&mut self.drained, "disable"),
            (&mut self.removed, "remove"),
        ] {
            set.retain(|(vs, rs)| {
                let keep = has(vs, rs);
                if !keep {
                    notes.push(format!(
                        "{what} of {rs} in {vs} dropped: the configuration no longer has it"
                    ));
                }
                keep
            });
        }
        self.weights.retain(|(vs, rs), _| {
            let keep = has(vs, rs);
            if !keep {
                notes.push(format!(
                    "weight of {rs} in {vs} dropped: the configuration no longer has it"
                ));
            }
            keep
        });
        let by_vs = |set: &BTreeSet<(String, String)>, vs: &str| -> HashSet<String> {
            set.range((vs.to_string(), String::new())..)
                .take_while(|(v, _)| v == vs)
                .map(|(_, r)| r.clone())
                .collect()
        };
        for (vs, &i) in names.iter().filter(|(_, i)| touched.contains(i)) {
            let removed = by_vs(&self.removed, vs);
            let drained = by_vs(&self.drained, vs);
            let weights: HashMap<&str, i32> = self
                .weights
                .range((vs.clone(), String::new())..)
                .take_while(|((v, _), _)| v == vs)
                .map(|((_, r), w)| (r.as_str(), *w))
                .collect();
            let v = &mut cfg.virtual_servers[i];
            let protocol = v.protocol;
            if !removed.is_empty() {
                v.real_servers
                    .retain(|r| !removed.contains(&format_rs(r.ip, r.port, protocol)));
            }
            if drained.is_empty() && weights.is_empty() {
                continue;
            }
            for r in &mut v.real_servers {
                let name = format_rs(r.ip, r.port, protocol);
                if let Some(&w) = weights.get(name.as_str()) {
                    r.weight = Some(w);
                }
                if drained.contains(&name) {
                    r.weight = Some(0);
                }
            }
        }
        Some((cfg, notes))
    }
}

/// A new real server at `ip`:`port` of `vs`, checked as its first real
/// server is (its checkers aimed at the new address; no notify scripts of
/// its own). Without a first real server: no checker, weight 1.
fn like_first(vs: &VirtualServer, ip: IpAddr, port: u16, weight: Option<i32>) -> RealServer {
    let Some(t) = vs.real_servers.first() else {
        return RealServer {
            ip,
            port,
            line: 0,
            weight: Some(weight.unwrap_or(1)),
            lvs_method: vs.lvs_method,
            inhibit_on_failure: Some(vs.inhibit_on_failure),
            seldom: crate::config::model::Rare::default(),
            alpha: Some(vs.alpha),
            retry: vs.retry,
            delay_before_retry: vs.delay_before_retry.into(),
            warmup: vs.warmup.into(),
            connect_timeout: vs.connect_timeout.into(),
            delay_loop: vs.delay_loop.into(),
            checkers: Default::default(),
        };
    };
    let mut rs = t.clone();
    rs.ip = ip;
    rs.port = port;
    rs.line = 0;
    if rs.seldom.is_set() {
        let s = rs.seldom.set();
        s.notify_up = None;
        s.notify_down = None;
    }
    if let Some(w) = weight {
        rs.weight = Some(w);
    }
    for c in &mut rs.checkers {
        let cm = c.common_mut();
        // Aimed at the template unless written otherwise: at the new one.
        if cm.connect_ip == Some(t.ip) {
            cm.connect_ip = Some(ip);
        }
        if cm.connect_port == Some(t.port) {
            cm.connect_port = Some(port);
        }
    }
    rs
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::load_str;

    const CONF: &str = "virtual_server 192.0.2.1 80 {\n lb_kind NAT\n protocol TCP\n \
        real_server 127.0.0.1 8001 {\n weight 2\n TCP_CHECK {\n connect_timeout 1\n }\n }\n \
        real_server 127.0.0.1 8002 {\n TCP_CHECK {\n }\n }\n}\n";
    const VS: &str = "[192.0.2.1]:tcp:80";

    fn rss(cfg: &Config) -> Vec<(String, Option<i32>)> {
        let v = &cfg.virtual_servers[0];
        v.real_servers
            .iter()
            .map(|r| (rs_name(r, v), r.weight))
            .collect()
    }

    #[test]
    fn parse_every_verb_and_refuse_the_rest() {
        assert_eq!(
            Edit::parse("disable [192.0.2.1]:tcp:80 [127.0.0.1]:tcp:8001"),
            Ok(Edit::Disable {
                vs: VS.into(),
                rs: "[127.0.0.1]:tcp:8001".into()
            })
        );
        assert_eq!(
            Edit::parse("weight FWM 5 [127.0.0.1]:tcp:0 7"),
            Ok(Edit::Weight {
                vs: "FWM 5".into(),
                rs: "[127.0.0.1]:tcp:0".into(),
                weight: 7
            })
        );
        assert_eq!(
            Edit::parse("add [192.0.2.1]:tcp:80 [2001:db8::5] 8080 3"),
            Ok(Edit::Add {
                vs: VS.into(),
                ip: "2001:db8::5".parse().unwrap(),
                port: 8080,
                weight: Some(3)
            })
        );
        for bad in [
            "drain x y",
            "weight [192.0.2.1]:tcp:80 [127.0.0.1]:tcp:8001 -1",
            "add [192.0.2.1]:tcp:80 300.1.1.1 80",
            "remove [192.0.2.1]:tcp:80",
            "enable a b c",
        ] {
            assert!(Edit::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn an_added_server_of_the_other_family_is_refused_as_the_file_refuses_it() {
        let base = load_str(CONF).config;
        let mut o = Overlay::default();
        let e = |s: &str| Edit::parse(s).unwrap();
        let err = o
            .record(&base, e("add [192.0.2.1]:tcp:80 [2001:db8::5] 8080"))
            .unwrap_err();
        assert!(err.contains("don't match"), "{err}");
        assert!(o.is_empty());
        assert!(o
            .record(&base, e("add [192.0.2.1]:tcp:80 192.0.2.5 8080"))
            .is_ok());
        // Tunnelled servers may be of either family.
        let tun = load_str(&CONF.replace("lb_kind NAT", "lb_kind TUN")).config;
        assert!(Overlay::default()
            .record(&tun, e("add [192.0.2.1]:tcp:80 [2001:db8::5] 8080"))
            .is_ok());
    }

    #[test]
    fn edits_apply_and_survive_a_new_copy_of_the_file() {
        let base = load_str(CONF).config;
        let mut o = Overlay::default();
        assert!(o.apply(&base).is_none(), "no edit: the file as it is");
        let e = |s: &str| Edit::parse(s).unwrap();
        let d = o
            .record(&base, e(&format!("disable {VS} [127.0.0.1]:tcp:8001")))
            .unwrap();
        assert_eq!((d.from, d.to), ("enabled", "drained"));
        o.record(&base, e(&format!("weight {VS} [127.0.0.1]:tcp:8002 5")))
            .unwrap();
        o.record(&base, e(&format!("add {VS} 127.0.0.1 8003")))
            .unwrap();
        let (cfg, notes) = o.apply(&base).unwrap();
        assert!(notes.is_empty());
        assert_eq!(
            rss(&cfg),
            [
                ("[127.0.0.1]:tcp:8001".into(), Some(0)),
                ("[127.0.0.1]:tcp:8002".into(), Some(5)),
                ("[127.0.0.1]:tcp:8003".into(), Some(2)),
            ]
        );
        // The added one is checked like the first, at its own address.
        let c = cfg.virtual_servers[0].real_servers[2].checkers[0].common();
        assert_eq!(c.connect_port, Some(8003));
        assert_eq!(c.connect_timeout.get(), Some(1_000_000));
        // Refused: what is not there, what is there already.
        assert!(o
            .record(&cfg, e(&format!("enable {VS} [127.0.0.1]:tcp:8002")))
            .is_err());
        assert!(o
            .record(&cfg, e(&format!("add {VS} 127.0.0.1 8001")))
            .is_err());
        assert!(o
            .record(&cfg, e("disable [192.0.2.9]:tcp:80 [127.0.0.1]:tcp:8001"))
            .is_err());
        // Removing the added one forgets it; removing a file's one hides it.
        o.record(&cfg, e(&format!("remove {VS} [127.0.0.1]:tcp:8003")))
            .unwrap();
        o.record(&cfg, e(&format!("remove {VS} [127.0.0.1]:tcp:8002")))
            .unwrap();
        let (cfg, _) = o.apply(&base).unwrap();
        assert_eq!(rss(&cfg), [("[127.0.0.1]:tcp:8001".into(), Some(0))]);
        // An added server can be drained like the file's, and stays so.
        o.record(&cfg, e(&format!("add {VS} 127.0.0.1 8004")))
            .unwrap();
        let (cfg, _) = o.apply(&base).unwrap();
        o.record(&cfg, e(&format!("disable {VS} [127.0.0.1]:tcp:8004")))
            .unwrap();
        let (cfg, notes) = o.apply(&base).unwrap();
        assert!(notes.is_empty(), "{notes:?}");
        assert_eq!(
            rss(&cfg),
            [
                ("[127.0.0.1]:tcp:8001".into(), Some(0)),
                ("[127.0.0.1]:tcp:8004".into(), Some(0)),
            ]
        );
        // A file without 8001 drops its drain, with a line.
        let fewer = load_str(&CONF.replace("8001", "8009")).config;
        let (_, notes) = o.apply(&fewer).unwrap();
        assert_eq!(notes.len(), 1, "{notes:?}");
        assert!(
            notes[0].contains("disable of [127.0.0.1]:tcp:8001"),
            "{notes:?}"
        );
    }
}
