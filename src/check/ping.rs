//! PING_CHECK (`check_ping.c`): an echo request on an unprivileged ICMP
//! datagram socket; the echo reply with our sequence number within
//! `connect_timeout` passes.
//!
//! I/O shell of the checker side, called by the engine once per run. Such
//! sockets are only allowed to groups in `net.ipv4.ping_group_range`;
//! [`PingGroupRange`] widens it while checkers run, as keepalived does.

use super::conn::{ConnOpts, Failure};
use socket2::{Protocol, SockAddr, Type};
use std::net::SocketAddr;

const RANGE_FILE: &str = "/proc/sys/net/ipv4/ping_group_range";
/// keepalived sends 128 bytes of payload.
const PAYLOAD: usize = 128;

fn checksum(b: &[u8]) -> u16 {
    let mut sum: u32 = 0;
    for c in b.chunks(2) {
        let w = if c.len() == 2 {
            u16::from_be_bytes([c[0], c[1]])
        } else {
            u16::from_be_bytes([c[0], 0])
        };
        sum += u32::from(w);
    }
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// The echo request with sequence `seq` (the kernel sets the identifier).
pub fn echo_request(v6: bool, seq: u16) -> Vec<u8> {
    let mut p = vec![if v6 { 128 } else { 8 }, 0, 0, 0, 0, 0];
    p.extend_from_slice(&seq.to_be_bytes());
    p.extend((0..PAYLOAD).map(|i| i as u8));
    if !v6 {
        let c = checksum(&p);
        p[2..4].copy_from_slice(&c.to_be_bytes());
    }
    p
}

/// One run.
pub async fn check(conn: &ConnOpts, seq: u16) -> Result<(), Failure> {
    let v6 = conn.dst.is_ipv6();
    let proto = if v6 {
        Protocol::ICMPV6
    } else {
        Protocol::ICMPV4
    };
    // PING_CHECK ignores fwmark, as keepalived does.
    let opts = conn.with_source(|s| {
        s.fwmark = None;
        s.bind = s.bind.map(|b| SocketAddr::new(b.ip(), 0));
    });
    let s = opts
        .socket(Type::DGRAM, Some(proto))
        .map_err(Failure::Socket)?;
    let dst = SocketAddr::new(conn.dst.ip(), 0);
    s.connect(&SockAddr::from(dst)).map_err(Failure::Connect)?;
    let sock = tokio::net::UdpSocket::from_std(s.into()).map_err(Failure::Socket)?;
    sock.send(&echo_request(v6, seq))
        .await
        .map_err(|e| Failure::Io("ICMP send", e))?;
    let reply_type = if v6 { 129 } else { 0 };
    let deadline = tokio::time::Instant::now() + conn.timeout();
    let mut buf = [0u8; 1500];
    loop {
        let n = match tokio::time::timeout_at(deadline, sock.recv(&mut buf)).await {
            Err(_) => return Err(Failure::Timeout("ICMP echo reply")),
            Ok(Err(e)) => return Err(Failure::Io("ICMP receive", e)),
            Ok(Ok(n)) => n,
        };
        if n < 8 {
            continue;
        }
        if buf[0] != reply_type {
            return Err(Failure::Protocol(format!("ICMP type {} received", buf[0])));
        }
        if u16::from_be_bytes([buf[6], buf[7]]) == seq {
            return Ok(());
        }
    }
}

/// Widens `ping_group_range` to include our group while PING_CHECKs run,
/// and puts it back when dropped (`set_ping_group_range()`).
#[derive(Debug)]
pub struct PingGroupRange {
    saved: Option<String>,
}

impl PingGroupRange {
    /// Makes sure our group may open ICMP datagram sockets.
    pub fn ensure() -> PingGroupRange {
        let Ok(cur) = std::fs::read_to_string(RANGE_FILE) else {
            return PingGroupRange { saved: None };
        };
        let mut it = cur.split_whitespace().map(|v| v.parse::<u64>().ok());
        let (Some(Some(lo)), Some(Some(hi))) = (it.next(), it.next()) else {
            return PingGroupRange { saved: None };
        };
        let gid = u64::from(nix::unistd::getegid().as_raw());
        if lo <= gid && gid <= hi {
            return PingGroupRange { saved: None };
        }
        let hi = hi.max(gid);
        match std::fs::write(RANGE_FILE, format!("0\t{hi}")) {
            Ok(()) => PingGroupRange { saved: Some(cur) },
            Err(e) => {
                log::warn!("cannot set {RANGE_FILE}: {e}; PING_CHECK may fail");
                PingGroupRange { saved: None }
            }
        }
    }
}

impl Drop for PingGroupRange {
    fn drop(&mut self) {
        if let Some(s) = self.saved.take() {
            if let Err(e) = std::fs::write(RANGE_FILE, s.trim()) {
                log::warn!("cannot restore {RANGE_FILE}: {e}");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn echo_request_checksums_to_zero() {
        let p = super::echo_request(false, 7);
        assert_eq!(super::checksum(&p), 0);
        assert_eq!(&p[6..8], &[0, 7]);
        assert_eq!(p.len(), 8 + 128);
    }
}
