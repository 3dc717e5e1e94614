//! The health model and keepalived's pure rules over it: retry families
//! ([`retry`]), the startup rule and the reload's carry ([`carry`]),
//! real-server and quorum transitions ([`transition`], [`quorum`]), dynamic
//! weights and the bookkeeping of checker states ([`tracker`]).
//!
//! Between the config model and both sides that use it: `check` runs the
//! probes and reports [`Change`]s, `lvs` turns [`Health`] into an IPVS
//! table; neither depends on the other. No sockets, no clock. Rules from
//! keepalived 2.2.7 (`check_*.c` epilogs, `ipwrapper.c`), summarised in
//! `../shared/reference/keepalived.md` §6.

pub mod carry;
pub mod model;
pub mod quorum;
pub mod retry;
pub mod tracker;
pub mod transition;

pub use carry::{checker_keys, start_states, Carry, CheckerKey, FxMap, FxSet, RsKey, Start, UrlAt};
pub use model::{real_weight, Health, RsHealth, VsHealth, RAMP_FULL};
pub use tracker::{Change, Effect, Event, Roster, Subscriber, Tracker};
pub use transition::Transition;
