//! The VRRP side (issue 16): the protocol as keepalived 2.2.7 speaks it.
//! Pure parts first — the advertisement on the wire ([`packet`]) — with
//! the state machine, the I/O shell (raw sockets, rtnetlink) and the
//! daemon's VRRP thread built on them. Reads the typed model of
//! [`crate::config::vrrp`]; nothing here reads the config text.

pub mod announce;
pub mod fsm;
pub mod packet;
pub mod priority;
pub mod receive;
pub mod timers;
