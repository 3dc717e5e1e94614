//! What keepalived cannot show of its BFD sessions, as a document: each
//! session's state and the neighbour's, the diagnostics, the negotiated
//! intervals and detection time, the last transition and its cause, the
//! packets in and out — for `--status` (JSON and the table) and the
//! metrics. Kept on a [`Board`] the status socket reads (a query never
//! waits on the BFD thread), updated by the BFD subsystem on every change
//! of state and at most once a second for the counters. Pure but for the
//! board's lock.

use super::packet::State;
use super::scheduler::{Discards, Scheduler};
use serde::Serialize;
use std::fmt::Write;
use std::sync::{Arc, Mutex};

/// A session's last change.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Change {
    /// Unix time, s.
    pub unix: f64,
    /// Before.
    pub from: String,
    /// After.
    pub to: String,
    /// Why (the local diagnostic after it).
    pub diag: String,
}

/// One session as the status shows it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SessionStatus {
    /// The `bfd_instance` name.
    pub name: String,
    /// `neighbor_ip`.
    pub neighbor: String,
    /// `source_ip`.
    pub source: Option<String>,
    /// AdminDown, Down, Init, Up.
    pub state: String,
    /// The neighbour's, as its last packet said.
    pub remote_state: String,
    /// The local diagnostic.
    pub diag: String,
    /// The neighbour's.
    pub remote_diag: String,
    /// Discriminators.
    pub local_discriminator: u32,
    /// The neighbour's (0 until learnt).
    pub remote_discriminator: u32,
    /// The transmit interval in force, µs (before jitter).
    pub tx_interval_us: u64,
    /// The detection time in force, µs (0 before the neighbour spoke).
    pub detection_time_us: u64,
    /// Configured: `min_tx`, `min_rx`, `idle_tx` (µs), `multiplier`.
    pub min_tx_us: u32,
    /// `min_rx`.
    pub min_rx_us: u32,
    /// `idle_tx`.
    pub idle_tx_us: u32,
    /// `multiplier`.
    pub multiplier: u8,
    /// The neighbour's Desired Min TX, Required Min RX (µs), Detect Mult.
    pub remote_min_tx_us: u32,
    /// Its Required Min RX.
    pub remote_min_rx_us: u32,
    /// Its Detect Mult.
    pub remote_multiplier: u8,
    /// The last change, if any.
    pub last_transition: Option<Change>,
    /// Packets accepted from the neighbour.
    pub packets_in: u64,
    /// Packets sent.
    pub packets_out: u64,
}

/// What the BFD subsystem publishes.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Published {
    /// Every session, in config order.
    pub sessions: Vec<SessionStatus>,
    /// Datagrams passed over before reaching a session.
    pub discards: Discards,
}

/// The BFD side's part of the status, shared with the status socket.
pub type Board = Arc<Mutex<Published>>;

/// `s` as the status shows it now (`now_us` on the scheduler's clock,
/// `unix_now` the wall clock at that moment).
pub fn of(s: &Scheduler, now_us: u64, unix_now: f64) -> Published {
    let sessions = s
        .entries()
        .iter()
        .map(|e| {
            let x = &e.session;
            let p = x.params();
            let (rstate, rdiag) = x.remote();
            let (rtx, rrx, rmult) = x.remote_timers();
            SessionStatus {
                name: e.spec.name.clone(),
                neighbor: e.spec.neighbor.to_string(),
                source: e.spec.source.map(|s| s.to_string()),
                state: x.state().to_string(),
                remote_state: rstate.to_string(),
                diag: x.diag().to_string(),
                remote_diag: rdiag.to_string(),
                local_discriminator: x.local_disc(),
                remote_discriminator: x.remote_disc(),
                tx_interval_us: x.tx_interval(),
                detection_time_us: x.detection_time(),
                min_tx_us: p.min_tx,
                min_rx_us: p.min_rx,
                idle_tx_us: p.idle_tx,
                multiplier: p.mult,
                remote_min_tx_us: rtx,
                remote_min_rx_us: rrx,
                remote_multiplier: rmult,
                last_transition: e.last_change.map(|(t, from, to, diag)| Change {
                    unix: unix_now - now_us.saturating_sub(t) as f64 / 1e6,
                    from: from.to_string(),
                    to: to.to_string(),
                    diag: diag.to_string(),
                }),
                packets_in: e.rx,
                packets_out: e.tx,
            }
        })
        .collect();
    Published {
        sessions,
        discards: s.discards,
    }
}

/// The sessions' table for `--status` (from the JSON document's `bfd`).
pub fn table(bfd: &serde_json::Value, out: &mut String) {
    let Some(list) = bfd.as_array().filter(|l| !l.is_empty()) else {
        return;
    };
    let s = |v: &serde_json::Value, k: &str| v[k].as_str().unwrap_or("").to_string();
    let _ = writeln!(
        out,
        "\n  {:<16} {:<24} {:<9} {:<9} {:>8} {:>8} {:>8} {:>8}  LAST TRANSITION",
        "BFD SESSION", "NEIGHBOR", "STATE", "REMOTE", "TX ms", "DETECT", "IN", "OUT"
    );
    for x in list {
        let last = &x["last_transition"];
        let last = if last.is_null() {
            "-".to_string()
        } else {
            format!(
                "{} -> {} ({})",
                s(last, "from"),
                s(last, "to"),
                s(last, "diag")
            )
        };
        let ms = |k: &str| x[k].as_u64().map_or(0.0, |v| v as f64 / 1000.0);
        let _ = writeln!(
            out,
            "  {:<16} {:<24} {:<9} {:<9} {:>8.1} {:>8.1} {:>8} {:>8}  {}",
            s(x, "name"),
            s(x, "neighbor"),
            s(x, "state"),
            s(x, "remote_state"),
            ms("tx_interval_us"),
            ms("detection_time_us"),
            x["packets_in"],
            x["packets_out"],
            last
        );
    }
}

/// The sessions' metrics (Prometheus text).
pub fn metrics(p: &Published) -> String {
    let mut o = String::new();
    if p.sessions.is_empty() {
        return o;
    }
    let _ = writeln!(
        o,
        "# HELP keepalived_bfd_packets_discarded_total BFD datagrams passed over before any session \
         took them: bogus (failed RFC 5880's checks), unknown (for no session), ttl (TTL or hop \
         limit too low)\n\
         # TYPE keepalived_bfd_packets_discarded_total counter\n\
         keepalived_bfd_packets_discarded_total{{reason=\"bogus\"}} {}\n\
         keepalived_bfd_packets_discarded_total{{reason=\"unknown\"}} {}\n\
         keepalived_bfd_packets_discarded_total{{reason=\"ttl\"}} {}",
        p.discards.bogus, p.discards.unknown, p.discards.ttl
    );
    type Family = (
        &'static str,
        &'static str,
        &'static str,
        fn(&SessionStatus) -> u64,
    );
    let families: [Family; 5] = [
        (
            "keepalived_bfd_session_up",
            "gauge",
            "1 while the BFD session is Up",
            |x| u64::from(x.state == State::Up.to_string()),
        ),
        (
            "keepalived_bfd_detection_time_seconds",
            "gauge",
            "The detection time in force",
            |x| x.detection_time_us,
        ),
        (
            "keepalived_bfd_tx_interval_seconds",
            "gauge",
            "The transmit interval in force (before jitter)",
            |x| x.tx_interval_us,
        ),
        (
            "keepalived_bfd_packets_received_total",
            "counter",
            "Control packets accepted from the neighbour",
            |x| x.packets_in,
        ),
        (
            "keepalived_bfd_packets_sent_total",
            "counter",
            "Control packets sent",
            |x| x.packets_out,
        ),
    ];
    for (name, kind, help, f) in families {
        let _ = writeln!(o, "# HELP {name} {help}\n# TYPE {name} {kind}");
        for x in &p.sessions {
            let v = f(x);
            if name.ends_with("_seconds") {
                let _ = writeln!(o, "{name}{{session=\"{}\"}} {}", x.name, v as f64 / 1e6);
            } else {
                let _ = writeln!(o, "{name}{{session=\"{}\"}} {v}", x.name);
            }
        }
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bfd::random::OsRandom;
    use crate::bfd::scheduler::Spec;

    #[test]
    fn a_session_shows_its_state_timers_and_metrics() {
        let text = "bfd_instance to_b {\n neighbor_ip 192.0.2.2\n min_rx 100\n min_tx 100\n multiplier 3\n}\n";
        let specs = Spec::all(&crate::config::load_str(text).config.bfd_instances);
        let mut rng = OsRandom::with_seed(1);
        let s = Scheduler::new(specs, 0, &mut rng, &mut Vec::new());
        let p = of(&s, 0, 1000.0);
        let x = &p.sessions[0];
        assert_eq!((x.name.as_str(), x.state.as_str()), ("to_b", "Down"));
        assert_eq!(
            (x.min_rx_us, x.multiplier, x.idle_tx_us),
            (100_000, 3, 1_000_000)
        );
        assert_eq!(x.tx_interval_us, 1_000_000, "idle while Down");
        let doc = serde_json::to_value(&p.sessions).unwrap();
        let mut t = String::new();
        table(&doc, &mut t);
        assert!(
            t.contains("to_b") && t.contains("192.0.2.2") && t.contains("Down"),
            "{t}"
        );
        let m = metrics(&p);
        assert!(
            m.contains("keepalived_bfd_session_up{session=\"to_b\"} 0"),
            "{m}"
        );
        assert!(
            m.contains("keepalived_bfd_tx_interval_seconds{session=\"to_b\"} 1"),
            "{m}"
        );
    }
}
