//! The VRRP side (issue 16): the protocol as keepalived 2.2.7 speaks it.
//! Pure parts first — the advertisement on the wire ([`packet`]) — with
//! the state machine, the I/O shell (raw sockets, rtnetlink) and the
//! daemon's VRRP thread built on them. Reads the typed model of
//! [`crate::config::vrrp`]; nothing here reads the config text.

pub mod ah;
pub mod announce;
pub mod dispatch;
pub mod dump;
pub mod format;
pub mod fsm;
pub mod net;
pub mod nfnl;
pub mod nftables;
pub mod node;
pub mod packet;
pub mod priority;
pub mod process;
pub mod receive;
pub mod rtnl;
pub mod run;
pub mod script;
pub mod status;
pub mod timers;
pub mod vmac;

/// keepalived 2.2.7's captures (`tests/fixtures/vrrp/`, copied from
/// `../shared/vrrp-fixtures/`) for the unit tests.
#[cfg(test)]
mod fixtures {
    /// The whole Ethernet frame of a capture file.
    pub fn frame(name: &str) -> Vec<u8> {
        let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/vrrp")
            .join(name);
        let text = std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
        let hex = text
            .lines()
            .skip_while(|l| !l.starts_with("## frame hex"))
            .nth(1)
            .expect("frame hex line");
        (0..hex.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
            .collect()
    }
}
