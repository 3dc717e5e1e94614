//! UDP_CHECK (`check_udp.c`, `layer4.c`): a datagram on a connected socket;
//! an ICMP error fails it, silence passes unless a reply is required, a
//! reply is matched against the `require_reply` pattern and lengths.
//!
//! I/O shell of the checker side, called by the engine once per run. The
//! kernel turns an ICMP port unreachable into ECONNREFUSED on the connected
//! socket, which is how the error reaches us.

use super::conn::{ConnOpts, Failure};
use crate::config::model::UdpCheck;

/// keepalived's default payload.
pub const DEFAULT_PAYLOAD: &[u8] = b"keepalived check - keepalived ch";

/// A UDP_CHECK, resolved.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct UdpProbe {
    /// Where.
    pub conn: ConnOpts,
    /// What to send.
    pub payload: Vec<u8>,
    /// `require_reply`.
    pub require_reply: bool,
    /// Pattern bytes with their masks.
    pub pattern: Option<Vec<(u8, u8)>>,
    /// `min_reply_length`.
    pub min_len: usize,
    /// `max_reply_length`.
    pub max_len: usize,
}

impl UdpProbe {
    /// From the model.
    pub fn new(u: &UdpCheck, conn: ConnOpts) -> UdpProbe {
        UdpProbe {
            conn,
            payload: u
                .payload
                .clone()
                .unwrap_or_else(|| DEFAULT_PAYLOAD.to_vec()),
            require_reply: u.require_reply,
            pattern: u.reply_pattern.clone(),
            min_len: usize::from(u.min_reply_length),
            max_len: usize::from(u.max_reply_length),
        }
    }

    /// `check_udp_reply()`: lengths and the masked prefix; only applied
    /// when a pattern is given.
    pub fn reply_ok(&self, reply: &[u8]) -> bool {
        let Some(p) = &self.pattern else {
            return true;
        };
        if reply.len() < self.min_len || reply.len() > self.max_len {
            return false;
        }
        reply
            .iter()
            .zip(p)
            .all(|(&r, &(v, mask))| r & mask == v & mask)
    }

    /// One run.
    pub async fn check(&self) -> Result<(), Failure> {
        let sock = self.conn.udp()?;
        sock.send(&self.payload)
            .await
            .map_err(|e| Failure::Io("UDP send", e))?;
        let mut buf = vec![0u8; 65536];
        match tokio::time::timeout(self.conn.timeout(), sock.recv(&mut buf)).await {
            Err(_) if self.require_reply => Err(Failure::Timeout("UDP reply")),
            Err(_) => Ok(()),
            Ok(Err(e)) => Err(Failure::Io("UDP receive", e)),
            Ok(Ok(n)) if self.reply_ok(&buf[..n]) => Ok(()),
            Ok(Ok(n)) => Err(Failure::Protocol(format!(
                "UDP reply of {n} byte(s) does not match"
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nibble_wildcards_and_lengths() {
        let conn = ConnOpts::to(
            "127.0.0.1:0".parse().unwrap(),
            std::time::Duration::from_secs(5),
        );
        let p = UdpProbe {
            conn,
            payload: vec![],
            require_reply: true,
            // "4x 2X" → 0x4? 0x2?
            pattern: Some(vec![(0x40, 0xf0), (0x20, 0xf0)]),
            min_len: 2,
            max_len: 4,
        };
        assert!(p.reply_ok(b"A "));
        assert!(p.reply_ok(b"O/xx"));
        assert!(!p.reply_ok(b"A"), "shorter than min");
        assert!(!p.reply_ok(b"ABCDE"), "longer than max");
        assert!(!p.reply_ok(b"0B"));
    }
}
