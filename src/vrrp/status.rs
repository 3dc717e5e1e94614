//! What keepalived cannot show of its VRRP side, as a document: each
//! instance's state, base and effective priority, the master it follows,
//! its last transition with the reason, its counters and what it tracks —
//! for `--status` (JSON and the table) and the metrics. Kept on a
//! [`Board`] that the status socket reads, so a query never waits on the
//! VRRP thread, and updated for what an event changed: an instance whose
//! state, priority or master moved at once, the counters (which move at
//! every advert) when the VRRP side says so. Pure but for the board's
//! lock.

use super::dispatch::Receipts;
use super::fsm::State;
use super::run::{Changed, Runner, Stats, Transition};
use serde::Serialize;
use std::fmt::Write;
use std::sync::{Arc, Mutex};

/// One tracked object as the status shows it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TrackerStatus {
    /// `interface`, `script`.
    pub kind: &'static str,
    /// Its name.
    pub name: String,
    /// Up (interface running, script succeeding); `None` before a script's
    /// first result.
    pub up: Option<bool>,
    /// The weight that applies.
    pub weight: i32,
}

/// One instance as the status shows it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct InstanceStatus {
    /// The instance name.
    pub name: String,
    /// Its VRID.
    pub vrid: u8,
    /// Its interface.
    pub interface: String,
    /// INIT, BACKUP, MASTER, FAULT.
    pub state: &'static str,
    /// `priority` as configured (255 owner).
    pub base_priority: u8,
    /// What it advertises now.
    pub effective_priority: u8,
    /// The address it advertises from.
    pub source: String,
    /// The master it last accepted an advert from (BACKUP).
    pub master: Option<String>,
    /// The last other master heard, kept after a takeover.
    pub last_master: Option<String>,
    /// VRRP version.
    pub version: u8,
    /// The addresses it holds while MASTER.
    pub vips: Vec<String>,
    /// The last transition.
    pub last_transition: Option<Transition>,
    /// keepalived's counters.
    pub stats: Stats,
    /// What it tracks.
    pub trackers: Vec<TrackerStatus>,
    /// A peer advertising another address list (`ADDRESS (N addresses)`):
    /// the directors' configurations differ.
    pub address_mismatch: Option<String>,
    /// Its sync group and the group's state (`G1 MASTER`).
    pub sync_group: Option<String>,
}

/// What the VRRP side publishes.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Published {
    /// Every instance, in config order.
    pub instances: Vec<InstanceStatus>,
    /// What the receive path counted before any instance looked.
    pub receive: Receipts,
}

/// The VRRP side's part of the status, shared with the status socket.
pub type Board = Arc<Mutex<Published>>;

/// Brings `b` up to date with `r` for what `changed` says; the counters
/// too when `counters`.
pub fn update(b: &mut Published, r: &Runner, changed: &Changed, counters: bool) {
    if changed.all || b.instances.len() != r.nodes.len() {
        b.instances = snapshot(r);
    } else {
        for &k in &changed.nodes {
            b.instances[k] = instance(r, &r.nodes[k]);
        }
        if counters {
            for (i, n) in b.instances.iter_mut().zip(&r.nodes) {
                i.stats.clone_from(&n.stats);
            }
        }
    }
    if counters || changed.all {
        b.receive = r.receipts;
    }
}

fn word(s: State) -> &'static str {
    match s {
        State::Init => "INIT",
        State::Backup => "BACKUP",
        State::Master => "MASTER",
        State::Fault => "FAULT",
    }
}

/// The status of every instance of `r`.
pub fn snapshot(r: &Runner) -> Vec<InstanceStatus> {
    r.nodes.iter().map(|n| instance(r, n)).collect()
}

/// The status of node `n` of `r`.
fn instance(r: &Runner, n: &super::run::Node) -> InstanceStatus {
    let mut trackers = Vec::new();
    if let Some(i) = &n.trackers.own_if {
        trackers.push(TrackerStatus {
            kind: "interface",
            name: i.clone(),
            up: Some(n.if_up),
            weight: 0,
        });
    }
    for (name, w, _, up) in &n.trackers.ifs {
        trackers.push(TrackerStatus {
            kind: "interface",
            name: name.clone(),
            up: Some(*up),
            weight: *w,
        });
    }
    for (name, w, rev) in &n.trackers.scripts {
        let st = r.scripts.iter().find(|(s, ..)| &s.name == name);
        trackers.push(TrackerStatus {
            kind: "script",
            name: name.clone(),
            up: st
                .filter(|(_, st, _)| !st.pending)
                .map(|(_, st, _)| st.up() != *rev),
            weight: *w,
        });
    }
    for (name, w, rev) in &n.trackers.files {
        // Up: the file does not put the instance in FAULT.
        let up = r.files.iter().find(|(f, _)| &f.name == name).map(|f| {
            let t = crate::vrrp::priority::Tracked::File {
                value: f.1,
                weight: *w,
                reverse: *rev,
            };
            !t.faults()
        });
        trackers.push(TrackerStatus {
            kind: "file",
            name: name.clone(),
            up,
            weight: *w,
        });
    }
    trackers.shrink_to_fit();
    InstanceStatus {
        name: n.cfg.name.clone(),
        vrid: n.cfg.vrid,
        interface: n.ifname.clone(),
        state: word(n.fsm.state),
        base_priority: n.base_priority,
        effective_priority: n.fsm.params.priority,
        source: n.src.to_string(),
        master: n.master.map(|m| m.to_string()),
        last_master: n.last_master.map(|m| m.to_string()),
        version: n.cfg.version,
        vips: n
            .cfg
            .vips
            .iter()
            .map(|v| format!("{}/{}", v.addr, v.prefix))
            .collect(),
        last_transition: n.last.clone(),
        stats: n.stats.clone(),
        trackers,
        address_mismatch: n.mismatch.map(|(a, c)| format!("{a} ({c} addresses)")),
        sync_group: r
            .groups
            .iter()
            .find(|g| Some(&g.cfg.name) == n.cfg.sync_group.as_ref())
            .map(|g| format!("{} {}", g.cfg.name, word(g.state))),
    }
}

/// The instances as lines of the `--status` table, from the JSON
/// document's `vrrp` array.
pub fn table(vrrp: &serde_json::Value, out: &mut String) {
    let Some(list) = vrrp.as_array().filter(|l| !l.is_empty()) else {
        return;
    };
    let s = |v: &serde_json::Value, k: &str| v[k].as_str().unwrap_or("").to_string();
    let _ = writeln!(
        out,
        "\n  {:<16} {:>4} {:<10} {:<7} {:>4}/{:<4} {:<18} {:>7} {:>7}  LAST TRANSITION",
        "VRRP INSTANCE", "VRID", "INTERFACE", "STATE", "PRIO", "BASE", "MASTER", "SENT", "RCVD"
    );
    for i in list {
        let last = &i["last_transition"];
        let last = if last.is_null() {
            "-".to_string()
        } else {
            format!(
                "{} -> {} ({})",
                s(last, "from"),
                s(last, "to"),
                s(last, "reason")
            )
        };
        let _ = writeln!(
            out,
            "  {:<16} {:>4} {:<10} {:<7} {:>4}/{:<4} {:<18} {:>7} {:>7}  {}",
            s(i, "name"),
            i["vrid"],
            s(i, "interface"),
            s(i, "state"),
            i["effective_priority"],
            i["base_priority"],
            i["master"].as_str().unwrap_or("-"),
            i["stats"]["advert_sent"],
            i["stats"]["advert_rcvd"],
            last
        );
        for t in i["trackers"].as_array().into_iter().flatten() {
            let up = match t["up"].as_bool() {
                Some(true) => "up",
                Some(false) => "down",
                None => "pending",
            };
            let _ = writeln!(
                out,
                "      tracks {} {} ({up}, weight {})",
                s(t, "kind"),
                s(t, "name"),
                t["weight"]
            );
        }
    }
}

/// A metric family: name, type, help, value of an instance.
type Family = (
    &'static str,
    &'static str,
    &'static str,
    fn(&InstanceStatus) -> u64,
);

/// The instances as Prometheus metrics, and what the receive path
/// dropped before any instance looked.
pub fn metrics(p: &Published) -> String {
    let mut o = String::new();
    let list = &p.instances;
    if list.is_empty() {
        return o;
    }
    let _ = writeln!(
        o,
        "# HELP keepalived_vrrp_packets_dropped_total Packets dropped before any instance looked: \
         foreign (a VRID no instance runs on the link), malformed (no VRID to read), \
         overflow (dropped by the kernel, the socket's buffer full)\n\
         # TYPE keepalived_vrrp_packets_dropped_total counter\n\
         keepalived_vrrp_packets_dropped_total{{reason=\"foreign\"}} {}\n\
         keepalived_vrrp_packets_dropped_total{{reason=\"malformed\"}} {}\n\
         keepalived_vrrp_packets_dropped_total{{reason=\"overflow\"}} {}",
        p.receive.foreign, p.receive.malformed, p.receive.overflow
    );
    let families: [Family; 8] = [
        (
            "keepalived_vrrp_state",
            "gauge",
            "VRRP state: 0 INIT, 1 BACKUP, 2 MASTER, 3 FAULT (keepalived's numbers)",
            |i| match i.state {
                "BACKUP" => 1,
                "MASTER" => 2,
                "FAULT" => 3,
                _ => 0,
            },
        ),
        (
            "keepalived_vrrp_priority_effective",
            "gauge",
            "The priority the instance advertises",
            |i| u64::from(i.effective_priority),
        ),
        (
            "keepalived_vrrp_priority_base",
            "gauge",
            "The configured priority",
            |i| u64::from(i.base_priority),
        ),
        (
            "keepalived_vrrp_address_mismatch",
            "gauge",
            "1 while a peer advertises another address list (configurations differ)",
            |i| u64::from(i.address_mismatch.is_some()),
        ),
        (
            "keepalived_vrrp_adverts_sent_total",
            "counter",
            "Adverts sent",
            |i| i.stats.advert_sent,
        ),
        (
            "keepalived_vrrp_adverts_received_total",
            "counter",
            "Adverts accepted",
            |i| i.stats.advert_rcvd,
        ),
        (
            "keepalived_vrrp_became_master_total",
            "counter",
            "Transitions to MASTER",
            |i| i.stats.become_master,
        ),
        (
            "keepalived_vrrp_packet_errors_total",
            "counter",
            "Adverts refused (length, TTL, interval, address list, authentication)",
            |i| {
                let s = &i.stats;
                s.packet_len_err
                    + s.ip_ttl_err
                    + s.invalid_type_rcvd
                    + s.advert_interval_err
                    + s.addr_list_err
                    + s.auth_failure
            },
        ),
    ];
    for (name, kind, help, f) in families {
        let _ = writeln!(o, "# HELP {name} {help}\n# TYPE {name} {kind}");
        for i in list {
            let _ = writeln!(
                o,
                "{name}{{instance=\"{}\",vrid=\"{}\",interface=\"{}\"}} {}",
                i.name,
                i.vrid,
                i.interface,
                f(i)
            );
        }
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one() -> InstanceStatus {
        InstanceStatus {
            name: "VI_1".into(),
            vrid: 51,
            interface: "eth0".into(),
            state: "MASTER",
            base_priority: 150,
            effective_priority: 90,
            source: "192.0.2.1".into(),
            master: None,
            last_master: None,
            version: 2,
            vips: vec!["192.0.2.100/24".into()],
            last_transition: None,
            stats: Stats {
                advert_sent: 7,
                ..Stats::default()
            },
            trackers: vec![TrackerStatus {
                kind: "script",
                name: "chk".into(),
                up: Some(false),
                weight: -60,
            }],
            address_mismatch: None,
            sync_group: None,
        }
    }

    #[test]
    fn the_table_and_the_metrics_show_each_instance() {
        let doc = serde_json::to_value(vec![one()]).unwrap();
        let mut t = String::new();
        table(&doc, &mut t);
        assert!(t.contains("VI_1"), "{t}");
        assert!(t.contains("MASTER") && t.contains("90/150"), "{t}");
        assert!(t.contains("tracks script chk (down, weight -60)"), "{t}");
        let p = Published {
            instances: vec![one()],
            receive: Receipts {
                foreign: 3,
                ..Receipts::default()
            },
        };
        let m = metrics(&p);
        assert!(m.contains("keepalived_vrrp_packets_dropped_total{reason=\"foreign\"} 3"));
        assert!(
            m.contains("keepalived_vrrp_state{instance=\"VI_1\",vrid=\"51\",interface=\"eth0\"} 2")
        );
        assert!(m.contains("keepalived_vrrp_adverts_sent_total{instance=\"VI_1\",vrid=\"51\",interface=\"eth0\"} 7"));
        assert!(metrics(&Published::default()).is_empty());
    }
}
