//! SMTP_CHECK (`check_smtp.c`): banner `220 `, `HELO name` answered by
//! `250 `, then `QUIT` with any answer (a server that closes instead fails).
//!
//! I/O shell of the checker side, called by the engine once per run.

use super::conn::{within, ConnOpts, Failure};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// keepalived's default `helo_name`.
pub use crate::config::model::SMTP_DEFAULT_HELO as DEFAULT_HELO;

/// keepalived reads replies into a 512-byte buffer.
const LINE_LIMIT: usize = 512;

/// Reads one reply line (up to `\n` or 512 bytes).
async fn line(s: &mut TcpStream, conn: &ConnOpts) -> Result<Vec<u8>, Failure> {
    let mut out = Vec::new();
    let mut b = [0u8; 256];
    loop {
        let n = within(conn.timeout(), "SMTP read", s.read(&mut b)).await?;
        if n == 0 {
            return Err(Failure::Protocol("SMTP connection closed".into()));
        }
        out.extend_from_slice(&b[..n]);
        if out.contains(&b'\n') || out.len() >= LINE_LIMIT {
            return Ok(out);
        }
    }
}

/// The banner is `220` then a space: keepalived 2.2.7 fails a bare `220`
/// and a multi-line `220-` (guest scenario `check-smtp-raw`).
pub fn banner_ok(l: &[u8]) -> bool {
    l.starts_with(b"220 ")
}

/// One SMTP_CHECK run.
pub async fn check(conn: &ConnOpts, helo: &str) -> Result<(), Failure> {
    let mut s = conn.tcp().await?;
    let banner = line(&mut s, conn).await?;
    if !banner_ok(&banner) {
        return Err(Failure::Protocol(format!(
            "Bad greeting banner: {}",
            String::from_utf8_lossy(&banner).trim_end()
        )));
    }
    within(
        conn.timeout(),
        "SMTP write",
        s.write_all(format!("HELO {helo}\r\n").as_bytes()),
    )
    .await?;
    let reply = line(&mut s, conn).await?;
    if !reply.starts_with(b"250 ") {
        return Err(Failure::Protocol(format!(
            "Bad HELO response: {}",
            String::from_utf8_lossy(&reply).trim_end()
        )));
    }
    within(conn.timeout(), "SMTP write", s.write_all(b"QUIT\r\n")).await?;
    line(&mut s, conn).await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn multi_line_banner_fails() {
        assert!(super::banner_ok(b"220 mx ready\r\n"));
        assert!(!super::banner_ok(b"220\r\n"));
        assert!(!super::banner_ok(b"220-mx\r\n"));
        assert!(!super::banner_ok(b"554 no\r\n"));
    }
}
