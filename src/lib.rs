//! keepalived-rs: a drop-in replacement for keepalived's LVS side.
//!
//! # Layout
//! - [`config`]: keepalived.conf → typed model (lexer, preprocessor, block
//!   parser, validation), with diagnostics that name file and line.
//! - [`health`]: the health model and keepalived's pure rules over it
//!   (retry families, startup, carry, quorum, dynamic weights).
//! - [`bfd`]: BFD's control packets (RFC 5880), pure.
//! - [`check`]: the health checkers and the engine that runs them.
//! - [`lvs`]: the IPVS table the config and health call for, and the
//!   reconciler that keeps the kernel equal to it.
//! - [`ipvs`]: the table model, its diff, the `IPVS` generic netlink family
//!   and the backends (kernel, dry run).
//! - [`daemon`]: the shell that hosts the subsystems (the checker now, VRRP
//!   next): the process (pid files, daemonising, systemd notify, logs),
//!   signals, reload, the checker's event loop, one-shot commands.
//! - [`status`], [`metrics`]: what the checker sees, as JSON, a table and
//!   Prometheus text; [`control`] serves them (status socket, metrics port).
//! - [`cli`]: keepalived 2.2.7's command line.
//! - [`genhash`]: the digest tool on the checker's HTTP reader.

pub mod bfd;
pub mod check;
pub mod civil;
pub mod cli;
pub mod config;
pub mod control;
pub mod daemon;
pub mod genhash;
pub mod health;
pub mod ipvs;
pub mod lvs;
pub mod metrics;
pub mod print;
pub mod services;
pub mod snmp;
pub mod status;
pub mod vrrp;
