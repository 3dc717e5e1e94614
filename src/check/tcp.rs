//! TCP_CHECK (`check_tcp.c`): a connection established within
//! `connect_timeout` passes; it is closed at once, no data sent (with a
//! reset rather than keepalived's FIN).
//!
//! I/O shell of the checker side, called by the engine once per run.

use super::conn::{ConnOpts, Failure};

/// One TCP_CHECK run.
pub async fn check(conn: &ConnOpts) -> Result<(), Failure> {
    close_with_reset(conn.tcp().await?);
    Ok(())
}

/// Closes a TCP_CHECK's connection with RST: no FIN exchange, and no
/// TIME_WAIT socket left on the director for every check (10,000 servers at
/// delay_loop 1 would keep 600,000 of them). A zero linger never blocks.
/// See docs/compat.md.
pub(super) fn close_with_reset<S: std::os::fd::AsFd>(s: S) {
    let _ = socket2::SockRef::from(&s).set_linger(Some(std::time::Duration::ZERO));
    drop(s);
}
