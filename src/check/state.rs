//! The state file (extension `state_file`, HAProxy's `server-state-file`):
//! every checker's state and counters, written by a running daemon at
//! stop and at an interval, read at the next start so that a restart
//! neither takes a healthy server out nor lets a known-bad one in before
//! its first check.
//!
//! Pure: the document from the plan, the board and the health; the carry
//! a start takes from a document. The daemon reads and writes the file.
//! A real server is found again by its virtual server's and its own
//! address (keepalived's names), a checker by its place among the real
//! server's and its type: one the configuration changed starts by the
//! startup rules, as one the file does not hold.

use super::board::Board;
use super::plan::{Carry, Plan};
use crate::config::model::Config;
use crate::config::validate::format_vs;
use crate::health::{checker_keys, Health, RsKey, Start};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Arc;

/// The format's version: a file of another is not read.
pub const VERSION: u32 = 1;

/// The whole file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Document {
    /// [`VERSION`].
    pub version: u32,
    /// When it was written (Unix seconds).
    pub written: f64,
    /// Every real server with checkers.
    pub real_servers: Vec<SavedRs>,
}

/// One real server's states.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SavedRs {
    /// Its virtual server, as keepalived names it.
    pub vs: String,
    /// Its address.
    pub ip: IpAddr,
    /// Its port.
    pub port: u16,
    /// It was alive.
    pub alive: bool,
    /// Its checkers, in order.
    pub checkers: Vec<SavedChecker>,
}

/// One checker's state.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SavedChecker {
    /// keepalived's name of its type.
    #[serde(rename = "type")]
    pub kind: String,
    /// Its state and counters.
    pub start: Start,
}

/// The states now, for the file.
pub fn document(cfg: &Config, plan: &Plan, board: &Board, health: &Health, now: f64) -> Document {
    let mut real_servers = Vec::new();
    for (vi, vs) in cfg.virtual_servers.iter().enumerate() {
        let name = format_vs(vs);
        for (ri, rs) in vs.real_servers.iter().enumerate() {
            let ids = plan.checks_of(vi, ri);
            if ids.is_empty() {
                continue;
            }
            let checkers = ids
                .iter()
                .map(|&id| id as usize)
                .filter_map(|id| {
                    Some(SavedChecker {
                        kind: plan.checks.get(id)?.kind.type_name().to_string(),
                        start: board.now(id)?,
                    })
                })
                .collect();
            real_servers.push(SavedRs {
                vs: name.clone(),
                ip: rs.ip,
                port: rs.port,
                alive: health
                    .vs
                    .get(vi)
                    .and_then(|h| h.rs.get(ri))
                    .is_some_and(|r| r.alive),
                checkers,
            });
        }
    }
    Document {
        version: VERSION,
        written: now,
        real_servers,
    }
}

/// What a start takes from `doc`, over `carry` (what the kernel's table
/// gave): for each real server of `cfg` the file holds, its liveness, and
/// each checker's state where the checker at that place (in `plan`, the
/// checks planned without the file) is of the same type. Returns how many
/// real servers were found again.
pub fn restore(cfg: &Config, plan: &Plan, doc: &Document, carry: &mut Carry) -> usize {
    let saved: HashMap<(&str, IpAddr, u16), &SavedRs> = doc
        .real_servers
        .iter()
        .map(|r| ((r.vs.as_str(), r.ip, r.port), r))
        .collect();
    let mut found = 0;
    for (vi, vs) in cfg.virtual_servers.iter().enumerate() {
        let name: Arc<str> = format_vs(vs).into();
        for (ri, rs) in vs.real_servers.iter().enumerate() {
            let Some(s) = saved.get(&(&*name, rs.ip, rs.port)) else {
                continue;
            };
            found += 1;
            let rk = RsKey::of(&name, rs);
            let ids = plan.checks_of(vi, ri);
            let keys = checker_keys(
                &rk,
                ids.iter().map(|&id| plan.checks[id as usize].kind.clone()),
            );
            for (n, (key, &id)) in keys.into_iter().zip(ids).enumerate() {
                let id = id as usize;
                let same_type = s
                    .checkers
                    .get(n)
                    .filter(|c| c.kind == plan.checks[id].kind.type_name());
                if let Some(c) = same_type {
                    carry.checkers.insert(key, c.start);
                }
            }
            carry.rs.insert(rk, s.alive);
        }
    }
    carry.reload = true;
    carry.restart = true;
    found
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::plan::{plan, plan_carrying, PlanOptions};
    use crate::config::load_str;
    use crate::health::Tracker;

    const CONF: &str = "virtual_server 192.0.2.1 80 {\n protocol TCP\n \
        real_server 127.0.0.1 8001 {\n TCP_CHECK {\n alpha\n }\n }\n \
        real_server 127.0.0.1 8002 {\n TCP_CHECK {\n }\n }\n \
        real_server 127.0.0.1 8003 {\n TCP_CHECK {\n alpha\n }\n }\n}\n";

    #[test]
    fn a_restart_keeps_the_healthy_in_and_the_failed_out_until_their_first_check() {
        let cfg = load_str(CONF).config;
        let (p, _) = plan(&cfg, &PlanOptions::default());
        let board = Board::new(&p);
        // 8001 (alpha) was found up; 8002 failed.
        board.update(0, |now| {
            now.state.is_up = true;
            now.state.has_run = true;
        });
        board.update(1, |now| {
            now.state.is_up = false;
            now.state.has_run = true;
        });
        let (_, mut health) = Tracker::start(&cfg, &p);
        health.vs[0].rs[0].alive = true;
        health.vs[0].rs[1].alive = false;
        let mut doc = document(&cfg, &p, &board, &health, 1.0);
        // 8003 is not in the file (a server added since).
        doc.real_servers.retain(|r| r.port != 8003);
        let text = serde_json::to_string(&doc).unwrap();
        let back: Document = serde_json::from_str(&text).unwrap();
        assert_eq!(back, doc);

        let mut carry = Carry::new();
        assert_eq!(restore(&cfg, &p, &back, &mut carry), 2);
        let (p2, _) = plan_carrying(&cfg, &PlanOptions::default(), &carry);
        let (_, h2) = Tracker::start(&cfg, &p2);
        let alive: Vec<bool> = h2.vs[0].rs.iter().map(|r| r.alive).collect();
        // Up though alpha; down though not alpha; the new one by keepalived's
        // startup rule (alpha: down until its first check).
        assert_eq!(alive, [true, false, false]);
        assert!(p2.start(0).state.has_run);
        assert!(!p2.start(2).state.has_run);
        // Without the file: keepalived's startup rules.
        let (_, h3) = Tracker::start(&cfg, &p);
        let alive: Vec<bool> = h3.vs[0].rs.iter().map(|r| r.alive).collect();
        assert_eq!(alive, [false, true, false]);
    }

    #[test]
    fn a_checker_of_another_type_at_the_same_place_starts_afresh() {
        let cfg = load_str(CONF).config;
        let (p, _) = plan(&cfg, &PlanOptions::default());
        let board = Board::new(&p);
        board.update(0, |now| {
            now.state.is_up = true;
            now.state.has_run = true;
        });
        let (_, health) = Tracker::start(&cfg, &p);
        let mut doc = document(&cfg, &p, &board, &health, 1.0);
        doc.real_servers[0].checkers[0].kind = "HTTP_GET".into();
        let mut carry = Carry::new();
        restore(&cfg, &p, &doc, &mut carry);
        let (p2, _) = plan_carrying(&cfg, &PlanOptions::default(), &carry);
        assert!(!p2.start(0).state.has_run);
    }
}
