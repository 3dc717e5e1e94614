//! The checker side: the health checks, run on tokio.
//!
//! Over [`crate::health`] (keepalived's decisions, pure). One module per
//! checker type ([`tcp`],
//! [`http`] for HTTP_GET and SSL_GET, [`misc`], [`udp`], [`ping`], [`dns`],
//! [`smtp`], [`file`]) over the shared socket options of [`conn`]; the
//! [`engine`] runs them on tokio and reports state changes to the daemon,
//! which turns them into IPVS changes and [`notify`] calls. [`print`]
//! writes the data file operators ask for with SIGUSR1.

pub mod conn;
pub mod dns;
pub mod engine;
pub mod file;
pub mod http;
pub mod misc;
pub mod notify;
pub mod ping;
pub mod smtp;
pub mod smtp_alert;
pub mod tcp;
pub mod udp;
