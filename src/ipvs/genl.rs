//! The `IPVS` generic netlink family: commands and attributes of
//! `linux/ip_vs.h`, as bytes and back. No sockets here.
//!
//! Bottom of the LVS side: [`super::netlink`] sends these messages, the
//! conversions to and from [`super::table`] types live at the end. Attributes
//! this code does not know are kept as [`DefaultNla`] and never fail a parse,
//! so a newer kernel's replies still decode.

use super::diff::Op;
use super::table::{af_of, Dest, DestKey, FwdMethod, Service, ServiceKey, AF_INET, AF_INET6};
use netlink_packet_core::{
    emit_u16, emit_u16_be, emit_u32, emit_u64, parse_string, parse_u16, parse_u16_be, parse_u32,
    parse_u64, parse_u8, DecodeError, DefaultNla, Emitable, Nla, NlaBuffer, NlasIterator,
    Parseable, ParseableParametrized, NLA_F_NESTED,
};
use netlink_packet_generic::{GenlFamily, GenlHeader};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// The family's name for `CTRL_CMD_GETFAMILY`.
pub const IPVS_GENL_NAME: &str = "IPVS";
/// `IPVS_GENL_VERSION`.
pub const IPVS_GENL_VERSION: u8 = 1;

/// `IPVS_CMD_*`.
#[allow(missing_docs)]
pub mod cmd {
    pub const NEW_SERVICE: u8 = 1;
    pub const SET_SERVICE: u8 = 2;
    pub const DEL_SERVICE: u8 = 3;
    pub const GET_SERVICE: u8 = 4;
    pub const NEW_DEST: u8 = 5;
    pub const SET_DEST: u8 = 6;
    pub const DEL_DEST: u8 = 7;
    pub const GET_DEST: u8 = 8;
    pub const NEW_DAEMON: u8 = 9;
    pub const DEL_DAEMON: u8 = 10;
    pub const GET_DAEMON: u8 = 11;
    pub const SET_CONFIG: u8 = 12;
    pub const GET_CONFIG: u8 = 13;
    pub const SET_INFO: u8 = 14;
    pub const GET_INFO: u8 = 15;
    pub const ZERO: u8 = 16;
    pub const FLUSH: u8 = 17;
}

mod attr {
    // IPVS_CMD_ATTR_*
    pub const CMD_SERVICE: u16 = 1;
    pub const CMD_DEST: u16 = 2;
    pub const CMD_DAEMON: u16 = 3;
    pub const CMD_TIMEOUT_TCP: u16 = 4;
    pub const CMD_TIMEOUT_TCP_FIN: u16 = 5;
    pub const CMD_TIMEOUT_UDP: u16 = 6;
    // IPVS_SVC_ATTR_*
    pub const SVC_AF: u16 = 1;
    pub const SVC_PROTOCOL: u16 = 2;
    pub const SVC_ADDR: u16 = 3;
    pub const SVC_PORT: u16 = 4;
    pub const SVC_FWMARK: u16 = 5;
    pub const SVC_SCHED_NAME: u16 = 6;
    pub const SVC_FLAGS: u16 = 7;
    pub const SVC_TIMEOUT: u16 = 8;
    pub const SVC_NETMASK: u16 = 9;
    pub const SVC_STATS: u16 = 10;
    pub const SVC_PE_NAME: u16 = 11;
    pub const SVC_STATS64: u16 = 12;
    // IPVS_DEST_ATTR_*
    pub const DEST_ADDR: u16 = 1;
    pub const DEST_PORT: u16 = 2;
    pub const DEST_FWD_METHOD: u16 = 3;
    pub const DEST_WEIGHT: u16 = 4;
    pub const DEST_U_THRESH: u16 = 5;
    pub const DEST_L_THRESH: u16 = 6;
    pub const DEST_ACTIVE_CONNS: u16 = 7;
    pub const DEST_INACT_CONNS: u16 = 8;
    pub const DEST_PERSIST_CONNS: u16 = 9;
    pub const DEST_STATS: u16 = 10;
    pub const DEST_ADDR_FAMILY: u16 = 11;
    pub const DEST_STATS64: u16 = 12;
    pub const DEST_TUN_TYPE: u16 = 13;
    pub const DEST_TUN_PORT: u16 = 14;
    pub const DEST_TUN_FLAGS: u16 = 15;
    // IPVS_DAEMON_ATTR_*
    pub const DAEMON_STATE: u16 = 1;
    pub const DAEMON_MCAST_IFN: u16 = 2;
    pub const DAEMON_SYNC_ID: u16 = 3;
    pub const DAEMON_SYNC_MAXLEN: u16 = 4;
    pub const DAEMON_MCAST_GROUP: u16 = 5;
    pub const DAEMON_MCAST_GROUP6: u16 = 6;
    pub const DAEMON_MCAST_PORT: u16 = 7;
    pub const DAEMON_MCAST_TTL: u16 = 8;
    // IPVS_INFO_ATTR_*
    pub const INFO_VERSION: u16 = 1;
    pub const INFO_CONN_TAB_SIZE: u16 = 2;
}

/// One `IPVS_STATS_ATTR_*` counter. The kernel sends some as u32 and some
/// (bytes, and everything in the `STATS64` nest) as u64; the width is kept
/// so that a message re-encodes to the same bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Counter {
    /// `IPVS_STATS_ATTR_CONNS` (1) .. `IPVS_STATS_ATTR_OUTBPS` (10).
    pub kind: u16,
    /// The value.
    pub value: u64,
    /// Sent as 64 bits.
    pub wide: bool,
}

/// An attribute of a stats nest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StatsAttr {
    /// A counter.
    Counter(Counter),
    /// Padding (`IPVS_STATS_ATTR_PAD`) or anything newer.
    Other(DefaultNla),
}

/// `IPVS_SVC_ATTR_*`.
#[derive(Debug, Clone, PartialEq, Eq)]
#[allow(missing_docs)]
pub enum SvcAttr {
    Af(u16),
    Protocol(u16),
    /// `union nf_inet_addr`: 16 bytes on the wire, IPv4 in the first four.
    Addr([u8; 16]),
    /// Host order here, network order on the wire.
    Port(u16),
    Fwmark(u32),
    SchedName(String),
    /// `struct ip_vs_flags { flags, mask }`.
    Flags {
        flags: u32,
        mask: u32,
    },
    Timeout(u32),
    Netmask(u32),
    Stats(Vec<StatsAttr>),
    PeName(String),
    Stats64(Vec<StatsAttr>),
    Other(DefaultNla),
}

/// `IPVS_DEST_ATTR_*`.
#[derive(Debug, Clone, PartialEq, Eq)]
#[allow(missing_docs)]
pub enum DestAttr {
    Addr([u8; 16]),
    Port(u16),
    FwdMethod(u32),
    Weight(u32),
    UThresh(u32),
    LThresh(u32),
    ActiveConns(u32),
    InactConns(u32),
    PersistConns(u32),
    Stats(Vec<StatsAttr>),
    AddrFamily(u16),
    Stats64(Vec<StatsAttr>),
    TunType(u8),
    /// Host order here, network order on the wire.
    TunPort(u16),
    TunFlags(u16),
    Other(DefaultNla),
}

/// `IPVS_DAEMON_ATTR_*`.
#[derive(Debug, Clone, PartialEq, Eq)]
#[allow(missing_docs)]
pub enum DaemonAttr {
    /// `IP_VS_STATE_MASTER` (1) or `IP_VS_STATE_BACKUP` (2).
    State(u32),
    McastIfn(String),
    SyncId(u32),
    SyncMaxlen(u16),
    McastGroup([u8; 4]),
    McastGroup6([u8; 16]),
    /// Host order on the wire (`nla_get_u16`), unlike service ports.
    McastPort(u16),
    McastTtl(u8),
    Other(DefaultNla),
}

/// Top-level attributes of an IPVS message. Which set applies depends on the
/// command: replies to `GET_INFO` (`SET_INFO`) carry `IPVS_INFO_ATTR_*`,
/// whose numbers overlap `IPVS_CMD_ATTR_*`.
#[derive(Debug, Clone, PartialEq, Eq)]
#[allow(missing_docs)]
pub enum IpvsAttr {
    Service(Vec<SvcAttr>),
    Dest(Vec<DestAttr>),
    Daemon(Vec<DaemonAttr>),
    TimeoutTcp(u32),
    TimeoutTcpFin(u32),
    TimeoutUdp(u32),
    /// `IPVS_INFO_ATTR_VERSION`: `(major << 16) | (minor << 8) | patch`.
    InfoVersion(u32),
    InfoConnTabSize(u32),
    Other(DefaultNla),
}

/// One IPVS generic netlink message: a command and its attributes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IpvsMessage {
    /// `IPVS_CMD_*`.
    pub cmd: u8,
    /// Attributes in wire order.
    pub attrs: Vec<IpvsAttr>,
    /// Whether nests carry `NLA_F_NESTED`. libnl (ipvsadm, keepalived) sets
    /// it on requests, the kernel leaves it off in replies; both are read
    /// alike, and it is kept so that a message re-encodes to its own bytes.
    pub nested_flag: bool,
}

impl GenlFamily for IpvsMessage {
    fn family_name() -> &'static str {
        IPVS_GENL_NAME
    }
    fn command(&self) -> u8 {
        self.cmd
    }
    fn version(&self) -> u8 {
        IPVS_GENL_VERSION
    }
}

// ---- emitting -------------------------------------------------------------

fn nested_len<T: Nla>(v: &[T]) -> usize {
    v.as_ref().iter().map(|n| n.buffer_len()).sum()
}

fn emit_nested<T: Nla>(v: &[T], buf: &mut [u8]) {
    v.emit(buf)
}

impl Nla for StatsAttr {
    fn value_len(&self) -> usize {
        match self {
            StatsAttr::Counter(c) if c.wide => 8,
            StatsAttr::Counter(_) => 4,
            StatsAttr::Other(n) => n.value_len(),
        }
    }
    fn kind(&self) -> u16 {
        match self {
            StatsAttr::Counter(c) => c.kind,
            StatsAttr::Other(n) => n.kind(),
        }
    }
    fn emit_value(&self, buf: &mut [u8]) {
        match self {
            StatsAttr::Counter(c) if c.wide => emit_u64(buf, c.value).expect("8 bytes"),
            StatsAttr::Counter(c) => emit_u32(buf, c.value as u32).expect("4 bytes"),
            StatsAttr::Other(n) => n.emit_value(buf),
        }
    }
}

fn emit_str(buf: &mut [u8], s: &str) {
    buf[..s.len()].copy_from_slice(s.as_bytes());
    buf[s.len()] = 0;
}

impl Nla for SvcAttr {
    fn value_len(&self) -> usize {
        match self {
            SvcAttr::Af(_) | SvcAttr::Protocol(_) | SvcAttr::Port(_) => 2,
            SvcAttr::Addr(_) => 16,
            SvcAttr::Fwmark(_) | SvcAttr::Timeout(_) | SvcAttr::Netmask(_) => 4,
            SvcAttr::SchedName(s) | SvcAttr::PeName(s) => s.len() + 1,
            SvcAttr::Flags { .. } => 8,
            SvcAttr::Stats(v) | SvcAttr::Stats64(v) => nested_len(v),
            SvcAttr::Other(n) => n.value_len(),
        }
    }
    fn kind(&self) -> u16 {
        use attr::*;
        match self {
            SvcAttr::Af(_) => SVC_AF,
            SvcAttr::Protocol(_) => SVC_PROTOCOL,
            SvcAttr::Addr(_) => SVC_ADDR,
            SvcAttr::Port(_) => SVC_PORT,
            SvcAttr::Fwmark(_) => SVC_FWMARK,
            SvcAttr::SchedName(_) => SVC_SCHED_NAME,
            SvcAttr::Flags { .. } => SVC_FLAGS,
            SvcAttr::Timeout(_) => SVC_TIMEOUT,
            SvcAttr::Netmask(_) => SVC_NETMASK,
            SvcAttr::Stats(_) => SVC_STATS | NLA_F_NESTED,
            SvcAttr::PeName(_) => SVC_PE_NAME,
            SvcAttr::Stats64(_) => SVC_STATS64 | NLA_F_NESTED,
            SvcAttr::Other(n) => n.kind(),
        }
    }
    fn emit_value(&self, buf: &mut [u8]) {
        match self {
            SvcAttr::Af(v) | SvcAttr::Protocol(v) => emit_u16(buf, *v).expect("2 bytes"),
            SvcAttr::Port(v) => emit_u16_be(buf, *v).expect("2 bytes"),
            SvcAttr::Addr(a) => buf[..16].copy_from_slice(a),
            SvcAttr::Fwmark(v) | SvcAttr::Timeout(v) | SvcAttr::Netmask(v) => {
                emit_u32(buf, *v).expect("4 bytes")
            }
            SvcAttr::SchedName(s) | SvcAttr::PeName(s) => emit_str(buf, s),
            SvcAttr::Flags { flags, mask } => {
                emit_u32(&mut buf[..4], *flags).expect("4 bytes");
                emit_u32(&mut buf[4..8], *mask).expect("4 bytes");
            }
            SvcAttr::Stats(v) | SvcAttr::Stats64(v) => emit_nested(v, buf),
            SvcAttr::Other(n) => n.emit_value(buf),
        }
    }
}

impl Nla for DestAttr {
    fn value_len(&self) -> usize {
        match self {
            DestAttr::Addr(_) => 16,
            DestAttr::Port(_) | DestAttr::AddrFamily(_) => 2,
            DestAttr::TunPort(_) | DestAttr::TunFlags(_) => 2,
            DestAttr::TunType(_) => 1,
            DestAttr::FwdMethod(_)
            | DestAttr::Weight(_)
            | DestAttr::UThresh(_)
            | DestAttr::LThresh(_)
            | DestAttr::ActiveConns(_)
            | DestAttr::InactConns(_)
            | DestAttr::PersistConns(_) => 4,
            DestAttr::Stats(v) | DestAttr::Stats64(v) => nested_len(v),
            DestAttr::Other(n) => n.value_len(),
        }
    }
    fn kind(&self) -> u16 {
        use attr::*;
        match self {
            DestAttr::Addr(_) => DEST_ADDR,
            DestAttr::Port(_) => DEST_PORT,
            DestAttr::FwdMethod(_) => DEST_FWD_METHOD,
            DestAttr::Weight(_) => DEST_WEIGHT,
            DestAttr::UThresh(_) => DEST_U_THRESH,
            DestAttr::LThresh(_) => DEST_L_THRESH,
            DestAttr::ActiveConns(_) => DEST_ACTIVE_CONNS,
            DestAttr::InactConns(_) => DEST_INACT_CONNS,
            DestAttr::PersistConns(_) => DEST_PERSIST_CONNS,
            DestAttr::Stats(_) => DEST_STATS | NLA_F_NESTED,
            DestAttr::AddrFamily(_) => DEST_ADDR_FAMILY,
            DestAttr::Stats64(_) => DEST_STATS64 | NLA_F_NESTED,
            DestAttr::TunType(_) => DEST_TUN_TYPE,
            DestAttr::TunPort(_) => DEST_TUN_PORT,
            DestAttr::TunFlags(_) => DEST_TUN_FLAGS,
            DestAttr::Other(n) => n.kind(),
        }
    }
    fn emit_value(&self, buf: &mut [u8]) {
        match self {
            DestAttr::Addr(a) => buf[..16].copy_from_slice(a),
            DestAttr::Port(v) | DestAttr::TunPort(v) => emit_u16_be(buf, *v).expect("2 bytes"),
            DestAttr::AddrFamily(v) | DestAttr::TunFlags(v) => emit_u16(buf, *v).expect("2 bytes"),
            DestAttr::TunType(v) => buf[0] = *v,
            DestAttr::FwdMethod(v)
            | DestAttr::Weight(v)
            | DestAttr::UThresh(v)
            | DestAttr::LThresh(v)
            | DestAttr::ActiveConns(v)
            | DestAttr::InactConns(v)
            | DestAttr::PersistConns(v) => emit_u32(buf, *v).expect("4 bytes"),
            DestAttr::Stats(v) | DestAttr::Stats64(v) => emit_nested(v, buf),
            DestAttr::Other(n) => n.emit_value(buf),
        }
    }
}

impl Nla for DaemonAttr {
    fn value_len(&self) -> usize {
        match self {
            DaemonAttr::State(_) | DaemonAttr::SyncId(_) => 4,
            DaemonAttr::McastIfn(s) => s.len() + 1,
            DaemonAttr::SyncMaxlen(_) | DaemonAttr::McastPort(_) => 2,
            DaemonAttr::McastGroup(_) => 4,
            DaemonAttr::McastGroup6(_) => 16,
            DaemonAttr::McastTtl(_) => 1,
            DaemonAttr::Other(n) => n.value_len(),
        }
    }
    fn kind(&self) -> u16 {
        use attr::*;
        match self {
            DaemonAttr::State(_) => DAEMON_STATE,
            DaemonAttr::McastIfn(_) => DAEMON_MCAST_IFN,
            DaemonAttr::SyncId(_) => DAEMON_SYNC_ID,
            DaemonAttr::SyncMaxlen(_) => DAEMON_SYNC_MAXLEN,
            DaemonAttr::McastGroup(_) => DAEMON_MCAST_GROUP,
            DaemonAttr::McastGroup6(_) => DAEMON_MCAST_GROUP6,
            DaemonAttr::McastPort(_) => DAEMON_MCAST_PORT,
            DaemonAttr::McastTtl(_) => DAEMON_MCAST_TTL,
            DaemonAttr::Other(n) => n.kind(),
        }
    }
    fn emit_value(&self, buf: &mut [u8]) {
        match self {
            DaemonAttr::State(v) | DaemonAttr::SyncId(v) => emit_u32(buf, *v).expect("4 bytes"),
            DaemonAttr::McastIfn(s) => emit_str(buf, s),
            DaemonAttr::SyncMaxlen(v) => emit_u16(buf, *v).expect("2 bytes"),
            DaemonAttr::McastPort(v) => emit_u16(buf, *v).expect("2 bytes"),
            DaemonAttr::McastGroup(a) => buf[..4].copy_from_slice(a),
            DaemonAttr::McastGroup6(a) => buf[..16].copy_from_slice(a),
            DaemonAttr::McastTtl(v) => buf[0] = *v,
            DaemonAttr::Other(n) => n.emit_value(buf),
        }
    }
}

impl Nla for IpvsAttr {
    fn value_len(&self) -> usize {
        match self {
            IpvsAttr::Service(v) => nested_len(v),
            IpvsAttr::Dest(v) => nested_len(v),
            IpvsAttr::Daemon(v) => nested_len(v),
            IpvsAttr::TimeoutTcp(_)
            | IpvsAttr::TimeoutTcpFin(_)
            | IpvsAttr::TimeoutUdp(_)
            | IpvsAttr::InfoVersion(_)
            | IpvsAttr::InfoConnTabSize(_) => 4,
            IpvsAttr::Other(n) => n.value_len(),
        }
    }
    fn kind(&self) -> u16 {
        use attr::*;
        match self {
            IpvsAttr::Service(_) => CMD_SERVICE | NLA_F_NESTED,
            IpvsAttr::Dest(_) => CMD_DEST | NLA_F_NESTED,
            IpvsAttr::Daemon(_) => CMD_DAEMON | NLA_F_NESTED,
            IpvsAttr::TimeoutTcp(_) => CMD_TIMEOUT_TCP,
            IpvsAttr::TimeoutTcpFin(_) => CMD_TIMEOUT_TCP_FIN,
            IpvsAttr::TimeoutUdp(_) => CMD_TIMEOUT_UDP,
            IpvsAttr::InfoVersion(_) => INFO_VERSION,
            IpvsAttr::InfoConnTabSize(_) => INFO_CONN_TAB_SIZE,
            IpvsAttr::Other(n) => n.kind(),
        }
    }
    fn emit_value(&self, buf: &mut [u8]) {
        match self {
            IpvsAttr::Service(v) => emit_nested(v, buf),
            IpvsAttr::Dest(v) => emit_nested(v, buf),
            IpvsAttr::Daemon(v) => emit_nested(v, buf),
            IpvsAttr::TimeoutTcp(v)
            | IpvsAttr::TimeoutTcpFin(v)
            | IpvsAttr::TimeoutUdp(v)
            | IpvsAttr::InfoVersion(v)
            | IpvsAttr::InfoConnTabSize(v) => emit_u32(buf, *v).expect("4 bytes"),
            IpvsAttr::Other(n) => n.emit_value(buf),
        }
    }
}

impl Emitable for IpvsMessage {
    fn buffer_len(&self) -> usize {
        nested_len(&self.attrs)
    }
    fn emit(&self, buffer: &mut [u8]) {
        self.attrs.as_slice().emit(buffer);
        if !self.nested_flag {
            let info = self.cmd == cmd::SET_INFO || self.cmd == cmd::GET_INFO;
            if !info {
                clear_nested_flags(buffer, 0);
            }
        }
    }
}

/// Clears `NLA_F_NESTED` on the nests of an emitted IPVS attribute list:
/// the command nests at depth 0, the stats nests inside them at depth 1.
fn clear_nested_flags(buf: &mut [u8], depth: u8) {
    let mut off = 0;
    while off + 4 <= buf.len() {
        let len = u16::from_ne_bytes([buf[off], buf[off + 1]]) as usize;
        if len < 4 || off + len > buf.len() {
            return;
        }
        let kind = u16::from_ne_bytes([buf[off + 2], buf[off + 3]]);
        if kind & NLA_F_NESTED != 0 {
            buf[off + 2..off + 4].copy_from_slice(&(kind & !NLA_F_NESTED).to_ne_bytes());
            if depth == 0 {
                clear_nested_flags(&mut buf[off + 4..off + len], 1);
            }
        }
        off += (len + 3) & !3;
    }
}

// ---- parsing --------------------------------------------------------------

fn addr16(v: &[u8]) -> Result<[u8; 16], DecodeError> {
    // The kernel always sends the whole union; accept a bare IPv4 address too.
    let mut a = [0u8; 16];
    match v.len() {
        n if n >= 16 => a.copy_from_slice(&v[..16]),
        4 => a[..4].copy_from_slice(v),
        n => return Err(DecodeError::from(format!("address attribute of {n} bytes"))),
    }
    Ok(a)
}

fn flags_pair(v: &[u8]) -> Result<(u32, u32), DecodeError> {
    if v.len() < 8 {
        return Err(DecodeError::from(format!(
            "flags attribute of {} bytes",
            v.len()
        )));
    }
    Ok((parse_u32(&v[..4])?, parse_u32(&v[4..8])?))
}

fn parse_nested<T>(
    v: &[u8],
    f: impl Fn(NlaBuffer<&[u8]>) -> Result<T, DecodeError>,
) -> Result<Vec<T>, DecodeError> {
    NlasIterator::new(v).map(|n| f(n?)).collect()
}

fn other(n: &NlaBuffer<&[u8]>) -> Result<DefaultNla, DecodeError> {
    DefaultNla::parse(n)
}

fn parse_stats(n: NlaBuffer<&[u8]>) -> Result<StatsAttr, DecodeError> {
    let v = n.value();
    Ok(match (n.kind(), v.len()) {
        (kind @ 1..=10, 8) => StatsAttr::Counter(Counter {
            kind,
            value: parse_u64(v)?,
            wide: true,
        }),
        (kind @ 1..=10, 4) => StatsAttr::Counter(Counter {
            kind,
            value: u64::from(parse_u32(v)?),
            wide: false,
        }),
        _ => StatsAttr::Other(other(&n)?),
    })
}

fn parse_svc(n: NlaBuffer<&[u8]>) -> Result<SvcAttr, DecodeError> {
    use attr::*;
    let v = n.value();
    Ok(match n.kind() {
        SVC_AF => SvcAttr::Af(parse_u16(v)?),
        SVC_PROTOCOL => SvcAttr::Protocol(parse_u16(v)?),
        SVC_ADDR => SvcAttr::Addr(addr16(v)?),
        SVC_PORT => SvcAttr::Port(parse_u16_be(v)?),
        SVC_FWMARK => SvcAttr::Fwmark(parse_u32(v)?),
        SVC_SCHED_NAME => SvcAttr::SchedName(parse_string(v)?),
        SVC_FLAGS => {
            let (flags, mask) = flags_pair(v)?;
            SvcAttr::Flags { flags, mask }
        }
        SVC_TIMEOUT => SvcAttr::Timeout(parse_u32(v)?),
        SVC_NETMASK => SvcAttr::Netmask(parse_u32(v)?),
        SVC_STATS => SvcAttr::Stats(parse_nested(v, parse_stats)?),
        SVC_PE_NAME => SvcAttr::PeName(parse_string(v)?),
        SVC_STATS64 => SvcAttr::Stats64(parse_nested(v, parse_stats)?),
        _ => SvcAttr::Other(other(&n)?),
    })
}

fn parse_dest(n: NlaBuffer<&[u8]>) -> Result<DestAttr, DecodeError> {
    use attr::*;
    let v = n.value();
    Ok(match n.kind() {
        DEST_ADDR => DestAttr::Addr(addr16(v)?),
        DEST_PORT => DestAttr::Port(parse_u16_be(v)?),
        DEST_FWD_METHOD => DestAttr::FwdMethod(parse_u32(v)?),
        DEST_WEIGHT => DestAttr::Weight(parse_u32(v)?),
        DEST_U_THRESH => DestAttr::UThresh(parse_u32(v)?),
        DEST_L_THRESH => DestAttr::LThresh(parse_u32(v)?),
        DEST_ACTIVE_CONNS => DestAttr::ActiveConns(parse_u32(v)?),
        DEST_INACT_CONNS => DestAttr::InactConns(parse_u32(v)?),
        DEST_PERSIST_CONNS => DestAttr::PersistConns(parse_u32(v)?),
        DEST_STATS => DestAttr::Stats(parse_nested(v, parse_stats)?),
        DEST_ADDR_FAMILY => DestAttr::AddrFamily(parse_u16(v)?),
        DEST_STATS64 => DestAttr::Stats64(parse_nested(v, parse_stats)?),
        DEST_TUN_TYPE => DestAttr::TunType(parse_u8(v)?),
        DEST_TUN_PORT => DestAttr::TunPort(parse_u16_be(v)?),
        DEST_TUN_FLAGS => DestAttr::TunFlags(parse_u16(v)?),
        _ => DestAttr::Other(other(&n)?),
    })
}

fn parse_daemon(n: NlaBuffer<&[u8]>) -> Result<DaemonAttr, DecodeError> {
    use attr::*;
    let v = n.value();
    Ok(match n.kind() {
        DAEMON_STATE => DaemonAttr::State(parse_u32(v)?),
        DAEMON_MCAST_IFN => DaemonAttr::McastIfn(parse_string(v)?),
        DAEMON_SYNC_ID => DaemonAttr::SyncId(parse_u32(v)?),
        DAEMON_SYNC_MAXLEN => DaemonAttr::SyncMaxlen(parse_u16(v)?),
        DAEMON_MCAST_GROUP if v.len() >= 4 => DaemonAttr::McastGroup([v[0], v[1], v[2], v[3]]),
        DAEMON_MCAST_GROUP6 => DaemonAttr::McastGroup6(addr16(v)?),
        DAEMON_MCAST_PORT => DaemonAttr::McastPort(parse_u16(v)?),
        DAEMON_MCAST_TTL => DaemonAttr::McastTtl(parse_u8(v)?),
        _ => DaemonAttr::Other(other(&n)?),
    })
}

impl ParseableParametrized<[u8], GenlHeader> for IpvsMessage {
    fn parse_with_param(buf: &[u8], header: GenlHeader) -> Result<Self, DecodeError> {
        use attr::*;
        let info = header.cmd == cmd::SET_INFO || header.cmd == cmd::GET_INFO;
        let attrs = parse_nested(buf, |n| {
            let v = n.value();
            Ok(match (info, n.kind()) {
                (true, INFO_VERSION) => IpvsAttr::InfoVersion(parse_u32(v)?),
                (true, INFO_CONN_TAB_SIZE) => IpvsAttr::InfoConnTabSize(parse_u32(v)?),
                (false, CMD_SERVICE) => IpvsAttr::Service(parse_nested(v, parse_svc)?),
                (false, CMD_DEST) => IpvsAttr::Dest(parse_nested(v, parse_dest)?),
                (false, CMD_DAEMON) => IpvsAttr::Daemon(parse_nested(v, parse_daemon)?),
                (false, CMD_TIMEOUT_TCP) => IpvsAttr::TimeoutTcp(parse_u32(v)?),
                (false, CMD_TIMEOUT_TCP_FIN) => IpvsAttr::TimeoutTcpFin(parse_u32(v)?),
                (false, CMD_TIMEOUT_UDP) => IpvsAttr::TimeoutUdp(parse_u32(v)?),
                _ => IpvsAttr::Other(other(&n)?),
            })
        })?;
        let nested_flag = NlasIterator::new(buf)
            .filter_map(Result::ok)
            .any(|n| n.nested_flag());
        Ok(IpvsMessage {
            cmd: header.cmd,
            attrs,
            nested_flag,
        })
    }
}

// ---- table types <-> attributes ------------------------------------------

fn ip_to16(a: &IpAddr) -> [u8; 16] {
    let mut out = [0u8; 16];
    match a {
        IpAddr::V4(v) => out[..4].copy_from_slice(&v.octets()),
        IpAddr::V6(v) => out = v.octets(),
    }
    out
}

fn ip_from16(af: u16, a: &[u8; 16]) -> IpAddr {
    if af == AF_INET6 {
        IpAddr::V6(Ipv6Addr::from(*a))
    } else {
        IpAddr::V4(Ipv4Addr::new(a[0], a[1], a[2], a[3]))
    }
}

/// The identity attributes of a service (enough for dest commands and
/// deletions).
pub fn service_key_attrs(k: &ServiceKey) -> Vec<SvcAttr> {
    match k {
        ServiceKey::Addr {
            protocol,
            addr,
            port,
        } => vec![
            SvcAttr::Af(af_of(addr)),
            SvcAttr::Protocol(*protocol),
            SvcAttr::Addr(ip_to16(addr)),
            SvcAttr::Port(*port),
        ],
        ServiceKey::Fwmark { af, mark } => vec![SvcAttr::Af(*af), SvcAttr::Fwmark(*mark)],
    }
}

/// Every attribute of a service, as `NEW_SERVICE`/`SET_SERVICE` need.
pub fn service_attrs(s: &Service) -> Vec<SvcAttr> {
    let mut v = service_key_attrs(&s.key);
    v.push(SvcAttr::SchedName(s.sched_name.clone()));
    if let Some(pe) = &s.pe_name {
        v.push(SvcAttr::PeName(pe.clone()));
    }
    v.push(SvcAttr::Flags {
        flags: s.flags,
        mask: !0,
    });
    v.push(SvcAttr::Timeout(s.timeout));
    v.push(SvcAttr::Netmask(s.netmask));
    v
}

/// A service from a dump reply's attributes.
pub fn service_from_attrs(attrs: &[SvcAttr]) -> Result<Service, DecodeError> {
    let mut af = None;
    let (mut protocol, mut addr, mut port, mut fwmark) = (0u16, [0u8; 16], 0u16, 0u32);
    let mut s = Service {
        key: ServiceKey::Fwmark { af: 0, mark: 0 },
        sched_name: String::new(),
        flags: 0,
        timeout: 0,
        netmask: 0,
        pe_name: None,
    };
    for a in attrs {
        match a {
            SvcAttr::Af(v) => af = Some(*v),
            SvcAttr::Protocol(v) => protocol = *v,
            SvcAttr::Addr(v) => addr = *v,
            SvcAttr::Port(v) => port = *v,
            SvcAttr::Fwmark(v) => fwmark = *v,
            SvcAttr::SchedName(v) => s.sched_name = v.clone(),
            SvcAttr::Flags { flags, .. } => s.flags = *flags,
            SvcAttr::Timeout(v) => s.timeout = *v,
            SvcAttr::Netmask(v) => s.netmask = *v,
            SvcAttr::PeName(v) => s.pe_name = Some(v.clone()).filter(|p| !p.is_empty()),
            _ => {}
        }
    }
    let af = af.ok_or_else(|| DecodeError::from("service without IPVS_SVC_ATTR_AF"))?;
    if af != AF_INET && af != AF_INET6 {
        return Err(DecodeError::from(format!(
            "service with address family {af}"
        )));
    }
    s.key = if fwmark != 0 {
        ServiceKey::Fwmark { af, mark: fwmark }
    } else {
        ServiceKey::Addr {
            protocol,
            addr: ip_from16(af, &addr),
            port,
        }
    };
    Ok(s)
}

/// Every attribute of a destination, as `NEW_DEST`/`SET_DEST` need.
pub fn dest_attrs(d: &Dest) -> Vec<DestAttr> {
    let mut v = vec![
        DestAttr::AddrFamily(af_of(&d.addr)),
        DestAttr::Addr(ip_to16(&d.addr)),
        DestAttr::Port(d.port),
        DestAttr::FwdMethod(d.fwd_method.to_kernel()),
        DestAttr::Weight(d.weight),
    ];
    if d.fwd_method == FwdMethod::Tunnel {
        v.push(DestAttr::TunType(d.tun_type));
        v.push(DestAttr::TunPort(d.tun_port));
        v.push(DestAttr::TunFlags(d.tun_flags));
    }
    v.push(DestAttr::UThresh(d.u_thresh));
    v.push(DestAttr::LThresh(d.l_thresh));
    v
}

/// The identity attributes of a destination (for `DEL_DEST`).
pub fn dest_key_attrs(addr: &IpAddr, port: u16) -> Vec<DestAttr> {
    vec![
        DestAttr::AddrFamily(af_of(addr)),
        DestAttr::Addr(ip_to16(addr)),
        DestAttr::Port(port),
    ]
}

/// A destination from a dump reply. Kernels before 4.x omit
/// `IPVS_DEST_ATTR_ADDR_FAMILY`; the service's family is used then.
pub fn dest_from_attrs(service_af: u16, attrs: &[DestAttr]) -> Result<Dest, DecodeError> {
    let mut af = service_af;
    let mut addr = None;
    let mut d = Dest::new(IpAddr::V4(Ipv4Addr::UNSPECIFIED), 0, FwdMethod::Masq, 0);
    for a in attrs {
        match a {
            DestAttr::AddrFamily(v) => af = *v,
            DestAttr::Addr(v) => addr = Some(*v),
            DestAttr::Port(v) => d.port = *v,
            DestAttr::FwdMethod(v) => d.fwd_method = FwdMethod::from_kernel(*v),
            DestAttr::Weight(v) => d.weight = *v,
            DestAttr::UThresh(v) => d.u_thresh = *v,
            DestAttr::LThresh(v) => d.l_thresh = *v,
            DestAttr::TunType(v) => d.tun_type = *v,
            DestAttr::TunPort(v) => d.tun_port = *v,
            DestAttr::TunFlags(v) => d.tun_flags = *v,
            _ => {}
        }
    }
    let addr = addr.ok_or_else(|| DecodeError::from("destination without IPVS_DEST_ATTR_ADDR"))?;
    d.addr = ip_from16(af, &addr);
    Ok(d)
}

impl IpvsMessage {
    /// A message with a command and attributes.
    pub fn new(cmd: u8, attrs: Vec<IpvsAttr>) -> IpvsMessage {
        IpvsMessage {
            cmd,
            attrs,
            nested_flag: true,
        }
    }
}

/// The request for one operation.
pub fn op_message(op: &Op) -> IpvsMessage {
    match op {
        Op::AddService(s) => {
            IpvsMessage::new(cmd::NEW_SERVICE, vec![IpvsAttr::Service(service_attrs(s))])
        }
        Op::EditService(s) => {
            IpvsMessage::new(cmd::SET_SERVICE, vec![IpvsAttr::Service(service_attrs(s))])
        }
        Op::DelService(k) => IpvsMessage::new(
            cmd::DEL_SERVICE,
            vec![IpvsAttr::Service(service_key_attrs(k))],
        ),
        Op::AddDest(k, d) => IpvsMessage::new(
            cmd::NEW_DEST,
            vec![
                IpvsAttr::Service(service_key_attrs(k)),
                IpvsAttr::Dest(dest_attrs(d)),
            ],
        ),
        Op::EditDest(k, d) => IpvsMessage::new(
            cmd::SET_DEST,
            vec![
                IpvsAttr::Service(service_key_attrs(k)),
                IpvsAttr::Dest(dest_attrs(d)),
            ],
        ),
        Op::DelDest(k, d) => IpvsMessage::new(
            cmd::DEL_DEST,
            vec![
                IpvsAttr::Service(service_key_attrs(k)),
                IpvsAttr::Dest(dest_key_attrs(&d.addr, d.port)),
            ],
        ),
        Op::Flush => IpvsMessage::new(cmd::FLUSH, vec![]),
    }
}

/// The operation a request carries (the inverse of [`op_message`]); `None`
/// for commands that are not table operations or lack their attributes.
pub fn op_from_message(m: &IpvsMessage) -> Option<Op> {
    let mut svc = None;
    let mut dest = None;
    for a in &m.attrs {
        match a {
            IpvsAttr::Service(s) => svc = Some(s.as_slice()),
            IpvsAttr::Dest(d) => dest = Some(d.as_slice()),
            _ => {}
        }
    }
    let service = || svc.and_then(|s| service_from_attrs(s).ok());
    let dest = |af: u16| dest.and_then(|d| dest_from_attrs(af, d).ok());
    Some(match m.cmd {
        cmd::NEW_SERVICE => Op::AddService(service()?),
        cmd::SET_SERVICE => Op::EditService(service()?),
        cmd::DEL_SERVICE => Op::DelService(service()?.key),
        cmd::NEW_DEST => {
            let s = service()?;
            Op::AddDest(s.key, dest(s.key.af())?)
        }
        cmd::SET_DEST => {
            let s = service()?;
            Op::EditDest(s.key, dest(s.key.af())?)
        }
        cmd::DEL_DEST => {
            let s = service()?;
            let d = dest(s.key.af())?;
            Op::DelDest(
                s.key,
                DestKey {
                    addr: d.addr,
                    port: d.port,
                },
            )
        }
        cmd::FLUSH => Op::Flush,
        _ => return None,
    })
}
