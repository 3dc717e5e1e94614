//! keepalived-rs: a drop-in replacement for keepalived's LVS side.
//!
//! # Layout
//! - [`config`]: keepalived.conf → typed model (lexer, preprocessor, block
//!   parser, validation), with diagnostics that name file and line.
//! - [`cli`]: keepalived 2.2.7's command line.
//!
//! Health checkers, the IPVS reconciler and the daemon shell come next
//! (issues 3-5); see `docs/architecture.md`.

pub mod cli;
pub mod config;
