//! VRRP advertisements on the wire: RFC 3768 (v2) and RFC 5798 (v3), as
//! keepalived 2.2.7 builds them (`vrrp.c:vrrp_build_vrrp`,
//! `vrrp_build_ip4`) and checks them on receipt (`vrrp_check_packet`).
//! Pure: bytes in, bytes out; the socket layer adds or strips the IP
//! header (and AH) and says where the packet came from and went to.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// IP protocol number of VRRP.
pub const IPPROTO_VRRP: u8 = 112;
/// The VRRP message type of an advertisement (the only one).
pub const TYPE_ADVERT: u8 = 1;
/// keepalived's TOS for adverts (precedence "internetwork control").
pub const TOS: u8 = 0xc0;
/// TTL / hop limit adverts are sent with and, multicast, must arrive with.
pub const TTL: u8 = 255;
/// Length of the v2 authentication data.
const AUTH_LEN: usize = 8;

/// VRRPv2 authentication (RFC 2338's types, kept by RFC 3768 for
/// compatibility): none, a clear password, or IPsec AH around the packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AuthType {
    /// 0.
    None,
    /// 1: `auth_type PASS`, 8 bytes zero padded after the addresses.
    Pass,
    /// 2: `auth_type AH`: the auth bytes are zero, AH carries the ICV.
    Ah,
}

impl AuthType {
    fn code(self) -> u8 {
        match self {
            AuthType::None => 0,
            AuthType::Pass => 1,
            AuthType::Ah => 2,
        }
    }
}

/// One advertisement, decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Advert {
    /// 2 or 3.
    pub version: u8,
    /// Virtual router id.
    pub vrid: u8,
    /// 0 = the master releases, 255 = the address owner.
    pub priority: u8,
    /// The advertisement interval in centiseconds (v2 carries whole seconds:
    /// 100 × the field).
    pub adver_int_cs: u16,
    /// The virtual addresses, in order.
    pub addrs: Vec<IpAddr>,
    /// v2 authentication type.
    pub auth: AuthType,
    /// v2 authentication data (the password, zero padded; zero otherwise).
    pub auth_data: [u8; AUTH_LEN],
}

/// Why a received advertisement is refused (keepalived logs each and
/// drops the packet).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AdvertError {
    /// Shorter than its header and address list.
    TooShort { len: usize, expected: usize },
    /// Longer than its header and address list.
    TooLong { len: usize, expected: usize },
    /// Not version 2 or 3, or not the instance's.
    WrongVersion(u8),
    /// Not an advertisement.
    WrongType(u8),
    /// The checksum does not add up.
    BadChecksum(u8),
    /// v3 advert interval of 0, or v2 over IPv6.
    Invalid(&'static str),
}

impl std::fmt::Display for AdvertError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AdvertError::TooShort { len, expected } => {
                write!(
                    f,
                    "vrrp packet too short, length {len} and expect {expected}"
                )
            }
            AdvertError::TooLong { len, expected } => {
                write!(
                    f,
                    "vrrp packet too long, length {len} and expect {expected}"
                )
            }
            AdvertError::WrongVersion(v) => write!(f, "wrong version. Received {v}"),
            AdvertError::WrongType(t) => write!(f, "Invalid type received {t}"),
            AdvertError::BadChecksum(v) => write!(f, "Invalid VRRPv{v} checksum"),
            AdvertError::Invalid(why) => write!(f, "invalid advertisement: {why}"),
        }
    }
}

impl std::error::Error for AdvertError {}

/// The Internet checksum (RFC 1071) of `data`, continuing from `sum`.
pub(super) fn sum16(mut sum: u32, data: &[u8]) -> u32 {
    let mut chunks = data.chunks_exact(2);
    for c in &mut chunks {
        sum += u32::from(u16::from_be_bytes([c[0], c[1]]));
    }
    if let [last] = chunks.remainder() {
        sum += u32::from(*last) << 8;
    }
    sum
}

/// The folded one's complement of a [`sum16`].
pub(super) fn fold(mut sum: u32) -> u16 {
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// The pseudo-header sum of RFC 5798 §5.2.8 (v3 only).
fn pseudo_sum(src: IpAddr, dst: IpAddr, len: usize) -> u32 {
    match (src, dst) {
        (IpAddr::V4(s), IpAddr::V4(d)) => {
            let mut sum = sum16(0, &s.octets());
            sum = sum16(sum, &d.octets());
            sum + u32::from(IPPROTO_VRRP) + len as u32
        }
        (s, d) => {
            let v6 = |a: IpAddr| match a {
                IpAddr::V6(a) => a,
                IpAddr::V4(a) => a.to_ipv6_mapped(),
            };
            let mut sum = sum16(0, &v6(s).octets());
            sum = sum16(sum, &v6(d).octets());
            sum16(sum, &(len as u32).to_be_bytes()) + u32::from(IPPROTO_VRRP)
        }
    }
}

/// The checksum an advertisement of `version` carries: over the message
/// only for v2, with the pseudo-header for v3.
pub fn checksum(version: u8, msg: &[u8], src: IpAddr, dst: IpAddr) -> u16 {
    let start = if version == 3 {
        pseudo_sum(src, dst, msg.len())
    } else {
        0
    };
    fold(sum16(start, msg))
}

impl Advert {
    /// The message length for `count` addresses of a family.
    fn length(version: u8, count: usize, ipv6: bool) -> usize {
        let addr = if ipv6 { 16 } else { 4 };
        8 + count * addr + if version == 2 { AUTH_LEN } else { 0 }
    }

    /// The VRRP message, checksum included, as sent from `src` to `dst`
    /// (the addresses count for v3's pseudo-header only).
    pub fn encode(&self, src: IpAddr, dst: IpAddr) -> Vec<u8> {
        let ipv6 = self.addrs.first().is_some_and(IpAddr::is_ipv6);
        let mut m = Vec::with_capacity(Self::length(self.version, self.addrs.len(), ipv6));
        m.push(self.version << 4 | TYPE_ADVERT);
        m.push(self.vrid);
        m.push(self.priority);
        m.push(self.addrs.len() as u8);
        if self.version == 2 {
            m.push(self.auth.code());
            m.push((self.adver_int_cs / 100) as u8);
        } else {
            m.extend_from_slice(&(self.adver_int_cs & 0x0fff).to_be_bytes());
        }
        m.extend_from_slice(&[0, 0]);
        for a in &self.addrs {
            match a {
                IpAddr::V4(a) => m.extend_from_slice(&a.octets()),
                IpAddr::V6(a) => m.extend_from_slice(&a.octets()),
            }
        }
        if self.version == 2 {
            m.extend_from_slice(&self.auth_data);
        }
        let c = checksum(self.version, &m, src, dst);
        m[6..8].copy_from_slice(&c.to_be_bytes());
        m
    }

    /// Reads a VRRP message received from `src` for `dst` (IPv6 when they
    /// are), checking what keepalived checks before it looks at the
    /// instance: length, version, type, checksum.
    pub fn decode(msg: &[u8], src: IpAddr, dst: IpAddr) -> Result<Advert, AdvertError> {
        let ipv6 = src.is_ipv6();
        if msg.len() < 8 {
            return Err(AdvertError::TooShort {
                len: msg.len(),
                expected: 8,
            });
        }
        let version = msg[0] >> 4;
        if version != 2 && version != 3 {
            return Err(AdvertError::WrongVersion(version));
        }
        if ipv6 && version == 2 {
            return Err(AdvertError::Invalid("VRRPv2 over IPv6"));
        }
        let kind = msg[0] & 0x0f;
        if kind != TYPE_ADVERT {
            return Err(AdvertError::WrongType(kind));
        }
        let count = usize::from(msg[3]);
        let expected = Self::length(version, count, ipv6);
        if msg.len() < expected {
            return Err(AdvertError::TooShort {
                len: msg.len(),
                expected,
            });
        }
        if msg.len() > expected {
            return Err(AdvertError::TooLong {
                len: msg.len(),
                expected,
            });
        }
        if checksum(version, msg, src, dst) != 0 {
            return Err(AdvertError::BadChecksum(version));
        }
        let (auth, adver_int_cs) = if version == 2 {
            let auth = match msg[4] {
                0 => AuthType::None,
                1 => AuthType::Pass,
                2 => AuthType::Ah,
                _ => return Err(AdvertError::Invalid("unknown authentication type")),
            };
            (auth, u16::from(msg[5]) * 100)
        } else {
            (
                AuthType::None,
                u16::from_be_bytes([msg[4], msg[5]]) & 0x0fff,
            )
        };
        let mut addrs = Vec::with_capacity(count);
        let step = if ipv6 { 16 } else { 4 };
        for k in 0..count {
            let b = &msg[8 + k * step..8 + (k + 1) * step];
            addrs.push(if ipv6 {
                let mut o = [0u8; 16];
                o.copy_from_slice(b);
                IpAddr::V6(Ipv6Addr::from(o))
            } else {
                IpAddr::V4(Ipv4Addr::new(b[0], b[1], b[2], b[3]))
            });
        }
        let mut auth_data = [0u8; AUTH_LEN];
        if version == 2 {
            auth_data.copy_from_slice(&msg[expected - AUTH_LEN..]);
        }
        Ok(Advert {
            version,
            vrid: msg[1],
            priority: msg[2],
            adver_int_cs,
            addrs,
            auth,
            auth_data,
        })
    }
}

/// The IPv4 header keepalived puts before an advert it sends with
/// `IP_HDRINCL`: IHL 5, TOS 0xc0, id 0 (the kernel fills it), no DF,
/// TTL 255 (or the unicast TTL), protocol 112 (51 with AH).
pub fn ipv4_header(
    src: Ipv4Addr,
    dst: Ipv4Addr,
    payload_len: usize,
    ttl: u8,
    proto: u8,
) -> [u8; 20] {
    let mut h = [0u8; 20];
    h[0] = 0x45;
    h[1] = TOS;
    h[2..4].copy_from_slice(&((20 + payload_len) as u16).to_be_bytes());
    h[8] = ttl;
    h[9] = proto;
    h[12..16].copy_from_slice(&src.octets());
    h[16..20].copy_from_slice(&dst.octets());
    let c = fold(sum16(0, &h));
    h[10..12].copy_from_slice(&c.to_be_bytes());
    h
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::frame;
    use super::*;

    /// (VRRP message, source, destination) of an IPv4 or IPv6 frame,
    /// past AH when there is one.
    fn split(f: &[u8]) -> (Vec<u8>, IpAddr, IpAddr, &[u8]) {
        let ip = &f[14..];
        if f[12..14] == [0x86, 0xdd] {
            let mut s = [0u8; 16];
            let mut d = [0u8; 16];
            s.copy_from_slice(&ip[8..24]);
            d.copy_from_slice(&ip[24..40]);
            (
                ip[40..].to_vec(),
                Ipv6Addr::from(s).into(),
                Ipv6Addr::from(d).into(),
                &ip[..0],
            )
        } else {
            let s = Ipv4Addr::new(ip[12], ip[13], ip[14], ip[15]);
            let d = Ipv4Addr::new(ip[16], ip[17], ip[18], ip[19]);
            let body = if ip[9] == 51 {
                &ip[20 + 24..]
            } else {
                &ip[20..]
            };
            (body.to_vec(), s.into(), d.into(), &ip[..20])
        }
    }

    #[test]
    fn keepalived_s_adverts_decode_and_encode_to_the_same_bytes() {
        let cases: &[(&str, u8, u8, u8, u16, usize, AuthType)] = &[
            (
                "vrrpv2-ipv4-vrid10-advert.txt",
                2,
                10,
                200,
                100,
                3,
                AuthType::None,
            ),
            (
                "vrrpv2-ipv4-vrid10-prio0.txt",
                2,
                10,
                0,
                100,
                3,
                AuthType::None,
            ),
            (
                "vrrpv2-ipv4-vrid11-advert.txt",
                2,
                11,
                201,
                100,
                1,
                AuthType::Pass,
            ),
            (
                "vrrpv2-ipv4-vrid11-prio0.txt",
                2,
                11,
                0,
                100,
                1,
                AuthType::Pass,
            ),
            (
                "vrrpv2-ipv4-ah-vrid12-advert.txt",
                2,
                12,
                202,
                100,
                1,
                AuthType::Ah,
            ),
            (
                "vrrpv3-ipv4-vrid13-advert.txt",
                3,
                13,
                203,
                100,
                1,
                AuthType::None,
            ),
            (
                "vrrpv3-ipv4-vrid13-prio0.txt",
                3,
                13,
                0,
                100,
                1,
                AuthType::None,
            ),
            (
                "vrrpv3-ipv6-vrid14-advert.txt",
                3,
                14,
                204,
                50,
                1,
                AuthType::None,
            ),
            (
                "vrrpv3-ipv6-vrid14-prio0.txt",
                3,
                14,
                0,
                50,
                1,
                AuthType::None,
            ),
        ];
        for &(name, version, vrid, prio, cs, count, auth) in cases {
            let f = frame(name);
            let (msg, src, dst, _) = split(&f);
            let a = Advert::decode(&msg, src, dst).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(
                (
                    a.version,
                    a.vrid,
                    a.priority,
                    a.adver_int_cs,
                    a.addrs.len(),
                    a.auth
                ),
                (version, vrid, prio, cs, count, auth),
                "{name}"
            );
            assert_eq!(a.encode(src, dst), msg, "{name}: re-encoded bytes");
        }
        let f = frame("vrrpv2-ipv4-vrid11-advert.txt");
        let (msg, src, dst, _) = split(&f);
        assert_eq!(
            &Advert::decode(&msg, src, dst).unwrap().auth_data,
            b"secret1\0"
        );
    }

    #[test]
    fn the_ipv4_header_is_keepalived_s_but_for_the_kernel_s_id() {
        let f = frame("vrrpv2-ipv4-vrid10-advert.txt");
        let (msg, _, _, hdr) = split(&f);
        let mine = ipv4_header(
            Ipv4Addr::new(192, 0, 2, 1),
            Ipv4Addr::new(224, 0, 0, 18),
            msg.len(),
            TTL,
            IPPROTO_VRRP,
        );
        // keepalived leaves the id to the kernel (1 in the capture), which
        // then recomputes the header checksum.
        let mut theirs = hdr.to_vec();
        theirs[4..6].copy_from_slice(&[0, 0]);
        theirs[10..12].copy_from_slice(&[0, 0]);
        let mut ours = mine.to_vec();
        ours[10..12].copy_from_slice(&[0, 0]);
        assert_eq!(ours, theirs);
        assert_eq!(fold(sum16(0, &mine)), 0, "our header checksum adds up");
    }

    #[test]
    fn damaged_adverts_are_refused_with_keepalived_s_reason() {
        let f = frame("vrrpv3-ipv4-vrid13-advert.txt");
        let (msg, src, dst, _) = split(&f);
        let mut bad = msg.clone();
        bad[2] ^= 1;
        assert_eq!(
            Advert::decode(&bad, src, dst),
            Err(AdvertError::BadChecksum(3))
        );
        // v3 checksums include the pseudo-header: another source fails.
        let other: IpAddr = Ipv4Addr::new(192, 0, 2, 9).into();
        assert_eq!(
            Advert::decode(&msg, other, dst),
            Err(AdvertError::BadChecksum(3))
        );
        assert!(matches!(
            Advert::decode(&msg[..msg.len() - 1], src, dst),
            Err(AdvertError::TooShort { .. })
        ));
        let mut long = msg.clone();
        long.push(0);
        assert!(matches!(
            Advert::decode(&long, src, dst),
            Err(AdvertError::TooLong { .. })
        ));
        let mut v4 = msg.clone();
        v4[0] = 0x41;
        assert_eq!(
            Advert::decode(&v4, src, dst),
            Err(AdvertError::WrongVersion(4))
        );
        let mut t2 = msg;
        t2[0] = 0x32;
        assert_eq!(
            Advert::decode(&t2, src, dst),
            Err(AdvertError::WrongType(2))
        );
    }
}
