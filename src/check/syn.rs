//! Half-open TCP probes on the wire (extension `half_open`): the SYN sent,
//! the RST that ends a probe where the kernel would not, the replies that
//! decide it (SYN-ACK: up, RST: down) and the classic BPF program that lets
//! only those replies through to the raw socket.
//!
//! Pure encoding and decoding for [`super::halfopen`], the I/O shell that
//! sends and reads these through one raw socket per source. No sockets here.

use socket2::SockFilter;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

/// A SYN's length: the TCP header and an MSS option (what a connect sends
/// first, so a backend treats the probe as any client's).
pub const SYN_LEN: usize = 24;
/// A bare TCP header (the RST).
pub const RST_LEN: usize = 20;
/// Bytes of a reply the filter keeps: an IPv4 header with options (60) and
/// the TCP header up to its flags and window (20).
pub const SNAP: u32 = 80;

const FIN: u8 = 0x01;
const SYN: u8 = 0x02;
const RST: u8 = 0x04;
const PSH: u8 = 0x08;
const ACK: u8 = 0x10;
const URG: u8 = 0x20;
/// The flags that say what a segment is (not ECN's two).
const FLAGS: u8 = FIN | SYN | RST | PSH | ACK | URG;

/// A SYN from `src` to `dst` with sequence number `seq`.
pub fn syn(src: SocketAddr, dst: SocketAddr, seq: u32) -> [u8; SYN_LEN] {
    let mut p = [0u8; SYN_LEN];
    header(&mut p, src.port(), dst.port(), seq, 0, SYN, 6);
    // MSS 1460 (kind 2, length 4).
    p[20..24].copy_from_slice(&[2, 4, 0x05, 0xb4]);
    let c = checksum(src.ip(), dst.ip(), &p);
    p[16..18].copy_from_slice(&c.to_be_bytes());
    p
}

/// The RST that closes a half-open connection after its SYN-ACK: sequence
/// number `seq` (the SYN's plus one), no acknowledgement.
pub fn rst(src: SocketAddr, dst: SocketAddr, seq: u32) -> [u8; RST_LEN] {
    let mut p = [0u8; RST_LEN];
    header(&mut p, src.port(), dst.port(), seq, 0, RST, 5);
    let c = checksum(src.ip(), dst.ip(), &p);
    p[16..18].copy_from_slice(&c.to_be_bytes());
    p
}

/// The IPv4 header the raw socket sends before a segment (`IP_HDRINCL`:
/// each probe names its own source). The kernel fills in the identifier
/// and the header checksum.
pub fn ipv4_header(src: Ipv4Addr, dst: Ipv4Addr, segment_len: usize) -> [u8; 20] {
    let mut h = [0u8; 20];
    h[0] = 0x45;
    h[2..4].copy_from_slice(&((20 + segment_len) as u16).to_be_bytes());
    // Don't fragment, as a connect's SYN.
    h[6] = 0x40;
    h[8] = 64;
    h[9] = 6;
    h[12..16].copy_from_slice(&src.octets());
    h[16..20].copy_from_slice(&dst.octets());
    h
}

fn header(p: &mut [u8], sport: u16, dport: u16, seq: u32, ack: u32, flags: u8, words: u8) {
    p[0..2].copy_from_slice(&sport.to_be_bytes());
    p[2..4].copy_from_slice(&dport.to_be_bytes());
    p[4..8].copy_from_slice(&seq.to_be_bytes());
    p[8..12].copy_from_slice(&ack.to_be_bytes());
    p[12] = words << 4;
    p[13] = flags;
    // Linux's initial window (64240), for a SYN that looks like a connect's.
    p[14..16].copy_from_slice(&64240u16.to_be_bytes());
}

/// The TCP checksum over the pseudo-header (RFC 793, RFC 8200 §8.1).
pub fn checksum(src: IpAddr, dst: IpAddr, tcp: &[u8]) -> u16 {
    let mut sum: u32 = 0;
    let mut add = |b: &[u8]| {
        for c in b.chunks(2) {
            sum += u32::from(u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)]));
        }
    };
    match (src, dst) {
        (IpAddr::V4(s), IpAddr::V4(d)) => {
            add(&s.octets());
            add(&d.octets());
            add(&[0, 6]);
            add(&(tcp.len() as u16).to_be_bytes());
        }
        _ => {
            add(&v6(src).octets());
            add(&v6(dst).octets());
            add(&(tcp.len() as u32).to_be_bytes());
            add(&[0, 0, 0, 6]);
        }
    }
    add(tcp);
    while sum >> 16 != 0 {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

fn v6(a: IpAddr) -> Ipv6Addr {
    match a {
        IpAddr::V6(a) => a,
        IpAddr::V4(a) => a.to_ipv6_mapped(),
    }
}

/// What a backend answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    /// SYN-ACK: something accepts connections there.
    Open,
    /// RST: nothing listens there (a connect's "connection refused").
    Refused,
}

/// What a segment sent to one of our ports says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Segment {
    /// SYN-ACK or RST: the answer to a SYN.
    Answer(Answer),
    /// A bare ACK: the backend still holds an older connection between
    /// the same two ports (in TIME_WAIT, or a request not yet completed)
    /// and took our SYN for a stray segment of it. Its acknowledgement
    /// number is that connection's next sequence number: a SYN numbered
    /// past it opens a new one (RFC 1122 4.2.2.13).
    BareAck,
}

/// A reply to one of our SYNs, as read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reply {
    /// The backend (the reply's source).
    pub from: SocketAddr,
    /// Our port it was sent to.
    pub to_port: u16,
    /// Its acknowledgement number: our SYN's sequence number plus one
    /// (an answer), or the older connection's next one (a bare ACK).
    pub ack: u32,
    /// What it is.
    pub segment: Segment,
}

/// A reply as a raw IPv4 socket reads it: the IP header, then TCP.
pub fn parse_v4(pkt: &[u8]) -> Option<Reply> {
    if pkt.len() < 20 || pkt[0] >> 4 != 4 || pkt[9] != 6 {
        return None;
    }
    // A fragment other than the first has no TCP header where we look.
    if u16::from_be_bytes([pkt[6], pkt[7]]) & 0x1fff != 0 {
        return None;
    }
    let ihl = usize::from(pkt[0] & 0x0f) * 4;
    let src = IpAddr::from([pkt[12], pkt[13], pkt[14], pkt[15]]);
    parse_tcp(src, pkt.get(ihl..)?)
}

/// A reply as a raw IPv6 socket reads it: the TCP segment, from `src`.
pub fn parse_v6(src: Ipv6Addr, seg: &[u8]) -> Option<Reply> {
    parse_tcp(IpAddr::V6(src), seg)
}

fn parse_tcp(src: IpAddr, t: &[u8]) -> Option<Reply> {
    if t.len() < 14 {
        return None;
    }
    let flags = t[13];
    let segment = if flags & RST != 0 {
        Segment::Answer(Answer::Refused)
    } else if flags & FLAGS == SYN | ACK {
        Segment::Answer(Answer::Open)
    } else if flags & FLAGS == ACK {
        Segment::BareAck
    } else {
        return None;
    };
    // A RST that acknowledges nothing cannot be matched to a probe.
    if flags & ACK == 0 {
        return None;
    }
    Some(Reply {
        from: SocketAddr::new(src, u16::from_be_bytes([t[0], t[1]])),
        to_port: u16::from_be_bytes([t[2], t[3]]),
        ack: u32::from_be_bytes([t[8], t[9], t[10], t[11]]),
        segment,
    })
}

// Classic BPF (linux/filter.h).
const LD: u16 = 0x00;
const LDX: u16 = 0x01;
const ALU: u16 = 0x04;
const JMP: u16 = 0x05;
const RET: u16 = 0x06;
const H: u16 = 0x08;
const B: u16 = 0x10;
const ABS: u16 = 0x20;
const IND: u16 = 0x40;
const MSH: u16 = 0xa0;
const AND: u16 = 0x50;
const JEQ: u16 = 0x10;
const JGT: u16 = 0x20;
const JGE: u16 = 0x30;
const JSET: u16 = 0x40;
/// The operand is the constant `k` (0, spelt out for reading).
const K: u16 = 0x00;

/// One classic BPF instruction: opcode, jump if true, jump if false, k.
pub type Insn = (u16, u8, u8, u32);

/// The filter of a raw TCP socket: only segments to our ports `lo..=hi`
/// with RST, SYN and ACK, or ACK alone reach the socket, cut to [`SNAP`]
/// bytes (no connection uses these ports: a bare ACK there answers a
/// probe, [`Segment::BareAck`]). An
/// IPv4 raw socket sees the IP header first (its length read from it); an
/// IPv6 one sees the TCP segment.
pub fn program(v6: bool, lo: u16, hi: u16) -> Vec<Insn> {
    let (lo, hi) = (u32::from(lo), u32::from(hi));
    let mut f = Vec::new();
    let mode = if v6 {
        ABS
    } else {
        // X = the IP header's length.
        f.push((LDX | B | MSH, 0, 0, 0));
        IND
    };
    // Jumps count the instructions skipped: drop is the second last.
    f.extend([
        (LD | H | mode, 0, 0, 2),
        (JMP | JGE | K, 0, 6, lo),
        (JMP | JGT | K, 5, 0, hi),
        (LD | B | mode, 0, 0, 13),
        (JMP | JSET | K, 4, 0, u32::from(RST)),
        (ALU | AND | K, 0, 0, u32::from(FLAGS)),
        (JMP | JEQ | K, 2, 0, u32::from(SYN | ACK)),
        (JMP | JEQ | K, 1, 0, u32::from(ACK)),
        (RET, 0, 0, 0),
        (RET, 0, 0, SNAP),
    ]);
    f
}

/// [`program`] as the kernel takes it.
pub fn filter(v6: bool, lo: u16, hi: u16) -> Vec<SockFilter> {
    program(v6, lo, hi)
        .into_iter()
        .map(|(code, jt, jf, k)| SockFilter::new(code, jt, jf, k))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn a(s: &str) -> SocketAddr {
        s.parse().unwrap()
    }

    /// A checksum over data that carries its own checksum is 0.
    #[test]
    fn syn_and_rst_carry_valid_checksums() {
        for (s, d) in [
            ("192.0.2.1:40000", "192.0.2.9:80"),
            ("[2001:db8::1]:40000", "[2001:db8::9]:443"),
        ] {
            let p = syn(a(s), a(d), 0x01020304);
            assert_eq!(checksum(a(s).ip(), a(d).ip(), &p), 0);
            assert_eq!(p[13], SYN);
            assert_eq!(&p[4..8], &[1, 2, 3, 4]);
            let r = rst(a(s), a(d), 0x01020305);
            assert_eq!(checksum(a(s).ip(), a(d).ip(), &r), 0);
            assert_eq!(r[13], RST);
        }
    }

    #[test]
    fn the_ipv4_header_names_source_destination_and_tcp() {
        let h = ipv4_header([192, 0, 2, 1].into(), [192, 0, 2, 9].into(), SYN_LEN);
        assert_eq!(h[0], 0x45);
        assert_eq!(u16::from_be_bytes([h[2], h[3]]), 44);
        assert_eq!((h[8], h[9]), (64, 6));
        assert_eq!(&h[12..20], &[192, 0, 2, 1, 192, 0, 2, 9]);
    }

    fn reply_v4(flags: u8, ack: u32) -> Vec<u8> {
        let mut ip = vec![
            0x45, 0, 0, 40, 0, 0, 0x40, 0, 64, 6, 0, 0, 192, 0, 2, 9, 192, 0, 2, 1,
        ];
        let mut t = [0u8; 20];
        header(&mut t, 80, 40001, 7, ack, flags, 5);
        ip.extend_from_slice(&t);
        ip
    }

    #[test]
    fn replies_are_read_and_others_ignored() {
        let r = parse_v4(&reply_v4(SYN | ACK, 43)).unwrap();
        assert_eq!(r.from, a("192.0.2.9:80"));
        assert_eq!(
            (r.to_port, r.ack, r.segment),
            (40001, 43, Segment::Answer(Answer::Open))
        );
        let r = parse_v4(&reply_v4(RST | ACK, 43)).unwrap();
        assert_eq!(r.segment, Segment::Answer(Answer::Refused));
        // An older connection's ACK, with or without ECN's flags.
        for f in [ACK, ACK | 0x40, ACK | 0x80] {
            let r = parse_v4(&reply_v4(f, 43)).unwrap();
            assert_eq!((r.ack, r.segment), (43, Segment::BareAck));
        }
        // Data, a FIN, a bare SYN, a RST acknowledging nothing: not ours.
        assert_eq!(parse_v4(&reply_v4(ACK | PSH, 43)), None);
        assert_eq!(parse_v4(&reply_v4(ACK | FIN, 43)), None);
        assert_eq!(parse_v4(&reply_v4(SYN, 0)), None);
        assert_eq!(parse_v4(&reply_v4(RST, 0)), None);
        assert_eq!(parse_v4(&reply_v4(SYN | ACK, 43)[..30]), None);
        let mut t = [0u8; 20];
        header(&mut t, 443, 40002, 1, 99, SYN | ACK, 5);
        let r = parse_v6("2001:db8::9".parse().unwrap(), &t).unwrap();
        assert_eq!(r.from, a("[2001:db8::9]:443"));
        assert_eq!(r.ack, 99);
    }

    /// Runs a classic BPF program over a packet (the subset we use).
    fn run(ins: &[Insn], pkt: &[u8]) -> u32 {
        let (mut acc, mut x, mut pc) = (0u32, 0u32, 0usize);
        loop {
            let (code, jt, jf, k) = ins[pc];
            pc += 1;
            let at = |off: u32| off as usize;
            match code {
                c if c == LDX | B | MSH => x = u32::from(pkt[at(k)] & 0x0f) * 4,
                c if c == LD | H | ABS => {
                    acc = u32::from(u16::from_be_bytes([pkt[at(k)], pkt[at(k) + 1]]))
                }
                c if c == LD | H | IND => {
                    let o = at(x + k);
                    acc = u32::from(u16::from_be_bytes([pkt[o], pkt[o + 1]]))
                }
                c if c == LD | B | ABS => acc = u32::from(pkt[at(k)]),
                c if c == LD | B | IND => acc = u32::from(pkt[at(x + k)]),
                c if c == ALU | AND => acc &= k,
                c if c == JMP | JGE => pc += usize::from(if acc >= k { jt } else { jf }),
                c if c == JMP | JGT => pc += usize::from(if acc > k { jt } else { jf }),
                c if c == JMP | JEQ => pc += usize::from(if acc == k { jt } else { jf }),
                c if c == JMP | JSET => pc += usize::from(if acc & k != 0 { jt } else { jf }),
                c if c == RET => return k,
                c => panic!("opcode {c:#x}"),
            }
        }
    }

    #[test]
    fn the_filter_keeps_replies_to_our_ports_only() {
        let f = program(false, 40000, 40007);
        assert_eq!(run(&f, &reply_v4(SYN | ACK, 1)), SNAP);
        assert_eq!(run(&f, &reply_v4(RST | ACK, 1)), SNAP);
        assert_eq!(run(&f, &reply_v4(ACK, 1)), SNAP);
        assert_eq!(run(&f, &reply_v4(ACK | 0x40, 1)), SNAP);
        assert_eq!(run(&f, &reply_v4(ACK | PSH, 1)), 0);
        assert_eq!(run(&f, &reply_v4(ACK | FIN, 1)), 0);
        assert_eq!(run(&f, &reply_v4(SYN, 1)), 0);
        // An IP header with options moves the TCP header.
        let mut opt = reply_v4(SYN | ACK, 1);
        opt[0] = 0x46;
        opt.splice(20..20, [1, 1, 1, 1]);
        assert_eq!(run(&f, &opt), SNAP);
        // Other ports.
        for port in [39999u16, 40008] {
            let mut p = reply_v4(SYN | ACK, 1);
            p[22..24].copy_from_slice(&port.to_be_bytes());
            assert_eq!(run(&f, &p), 0, "{port}");
        }
        let f6 = program(true, 40000, 40007);
        let mut t = [0u8; 20];
        header(&mut t, 443, 40007, 1, 2, RST | ACK, 5);
        assert_eq!(run(&f6, &t), SNAP);
        header(&mut t, 443, 40008, 1, 2, RST | ACK, 5);
        assert_eq!(run(&f6, &t), 0);
        header(&mut t, 443, 40000, 1, 2, ACK | PSH, 5);
        assert_eq!(run(&f6, &t), 0);
        header(&mut t, 443, 40000, 1, 2, ACK, 5);
        assert_eq!(run(&f6, &t), SNAP);
    }
}
