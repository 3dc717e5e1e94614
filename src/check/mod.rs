//! The checker side: the health checks, run on tokio.
//!
//! Over [`crate::health`] (keepalived's decisions, pure). [`plan`]
//! resolves the configuration's checkers; [`engine`] runs them (one
//! scheduler ordering their runs on a [`timeline`], a task per probe out)
//! on the pure step function of [`schedule`], writing [`board`] and
//! reporting changes to the daemon, which turns them into IPVS changes and
//! [`notify`] calls. The probes are behind [`prober`]: one module per
//! checker type ([`tcp`], [`http`] for HTTP_GET and SSL_GET, [`misc`],
//! [`udp`], [`ping`], [`dns`], [`smtp`], [`file`]) over the shared socket
//! options of [`conn`]. [`jitter`] spreads the first runs; at high rates
//! the timers keep one [`beat`].

pub mod beat;
pub mod board;
pub mod conn;
pub mod connects;
pub mod dns;
pub mod engine;
pub mod halfopen;
pub mod http;
pub mod jitter;
pub mod misc;
pub mod notify;
pub mod ping;
pub mod plan;
pub mod prober;
pub mod schedule;
pub mod smtp;
pub mod state;
pub mod syn;
pub mod tcp;
pub mod timeline;
pub mod tls;
pub mod udp;
