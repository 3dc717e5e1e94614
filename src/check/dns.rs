//! DNS_CHECK (`check_dns.c`): one query over UDP with a random id, RD set,
//! class IN; the first datagram with our id and QR set decides: RCODE 0
//! passes. The answer section is not looked at.
//!
//! I/O shell of the checker side, called by the engine once per run.
//! Messages are built and read with hickory-proto.

use super::conn::{ConnOpts, Failure};
use crate::config::model::DnsCheck;
use hickory_proto::op::{Message, MessageType, OpCode, Query};
use hickory_proto::rr::{DNSClass, Name, RecordType};
use hickory_proto::serialize::binary::{BinDecodable, BinDecoder};
use std::str::FromStr;

/// A DNS_CHECK, resolved.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct DnsProbe {
    /// Where.
    pub conn: ConnOpts,
    /// `type`.
    pub rtype: String,
    /// `name`.
    pub name: String,
}

/// Why a DNS_CHECK could not be built.
#[derive(Debug, thiserror::Error)]
#[error("DNS_CHECK: {0}")]
pub struct DnsError(String);

impl DnsProbe {
    /// From the model.
    pub fn new(d: &DnsCheck, conn: ConnOpts) -> DnsProbe {
        DnsProbe {
            conn,
            rtype: if d.r#type.is_empty() {
                "SOA".into()
            } else {
                d.r#type.to_ascii_uppercase()
            },
            name: if d.name.is_empty() {
                ".".into()
            } else {
                d.name.clone()
            },
        }
    }

    /// The query datagram for `id`.
    pub fn query(&self, id: u16) -> Result<Vec<u8>, DnsError> {
        let name = Name::from_str(&self.name).map_err(|e| DnsError(e.to_string()))?;
        let rtype = RecordType::from_str(&self.rtype).map_err(|e| DnsError(e.to_string()))?;
        let mut q = Query::query(name, rtype);
        q.set_query_class(DNSClass::IN);
        let mut m = Message::new(id, MessageType::Query, OpCode::Query);
        m.metadata.recursion_desired = true;
        m.add_query(q);
        m.to_vec().map_err(|e| DnsError(e.to_string()))
    }

    /// One run.
    pub async fn check(&self, id: u16) -> Result<(), Failure> {
        let q = self
            .query(id)
            .map_err(|e| Failure::Protocol(e.to_string()))?;
        let sock = self.conn.udp()?;
        sock.send(&q)
            .await
            .map_err(|e| Failure::Io("DNS send", e))?;
        let deadline = tokio::time::Instant::now() + self.conn.timeout();
        let mut buf = vec![0u8; 65536];
        loop {
            let n = match tokio::time::timeout_at(deadline, sock.recv(&mut buf)).await {
                Err(_) => return Err(Failure::Timeout("DNS reply")),
                Ok(Err(e)) => return Err(Failure::Io("DNS receive", e)),
                Ok(Ok(n)) => n,
            };
            match verdict(&buf[..n], id) {
                Some(0) => return Ok(()),
                Some(rcode) => {
                    return Err(Failure::Protocol(format!("DNS rcode {rcode}")));
                }
                None => continue,
            }
        }
    }
}

/// `Some(rcode)` for an answer to `id`, `None` for anything else.
pub fn verdict(reply: &[u8], id: u16) -> Option<u8> {
    // keepalived reads the header only; a body hickory cannot parse does
    // not matter.
    if reply.len() < 12 {
        return None;
    }
    let mut d = BinDecoder::new(&reply[..12]);
    let h = hickory_proto::op::Header::read(&mut d).ok()?;
    (h.id == id && h.message_type == MessageType::Response).then_some(reply[3] & 0x0f)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_and_verdicts() {
        let conn = ConnOpts::to(
            "127.0.0.1:0".parse().unwrap(),
            std::time::Duration::from_secs(5),
        );
        let p = DnsProbe::new(&DnsCheck::default(), conn);
        let q = p.query(0x1234).unwrap();
        assert_eq!(&q[..2], &[0x12, 0x34]);
        assert_eq!(q[2] & 0x01, 1, "RD");
        assert_eq!(verdict(&q, 0x1234), None, "a query is no answer");
        let mut a = q.clone();
        a[2] |= 0x80;
        assert_eq!(verdict(&a, 0x1234), Some(0));
        assert_eq!(verdict(&a, 0x1235), None);
        a[3] |= 3;
        assert_eq!(verdict(&a, 0x1234), Some(3));
    }
}
