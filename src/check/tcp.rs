//! TCP_CHECK (`check_tcp.c`): a connection established within
//! `connect_timeout` passes; it is closed at once, no data sent.
//!
//! I/O shell of the checker side, called by the engine once per run.

use super::conn::{ConnOpts, Failure};

/// One TCP_CHECK run.
pub async fn check(conn: &ConnOpts) -> Result<(), Failure> {
    conn.tcp().await.map(drop)
}
