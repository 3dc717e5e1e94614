//! The daemon shell, on top of everything else: it hosts the subsystems
//! (the checker, VRRP, BFD) and owns what is the process's: pid files,
//! identity and logs ([`process`]), signals ([`signals`]), the reload's
//! rules ([`reload`]), the status socket of a daemon without a checker
//! ([`control`]), and the one-shot commands ([`commands`]).
//!
//! [`shell`] runs each subsystem on a thread and runtime of its own and
//! turns signals into [`subsystem::Command`]s for each; [`checker`] is the checker's
//! event loop, handed its backend, probes, queries and commands, so that it
//! runs on paused time in tests; [`startup`] is the one startup rule a
//! start, a reload and an offline `--plan` share.

pub mod bfd;
pub mod checker;
pub mod commands;
pub mod control;
pub mod memory;
pub mod process;
pub mod reload;
pub mod shell;
pub mod signals;
pub mod snmp;
pub mod startup;
pub mod subsystem;
pub mod vrrp;

#[cfg(test)]
mod tests;

pub use commands::{ipvs_save, plan_offline};
pub use reload::DEFAULT_CONF;
pub use shell::run;
pub use startup::first_programming;
