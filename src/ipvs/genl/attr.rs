//! The family's attributes (`IPVS_CMD_ATTR_*`, `IPVS_SVC_ATTR_*`,
//! `IPVS_DEST_ATTR_*`, `IPVS_DAEMON_ATTR_*`, `IPVS_STATS_ATTR_*`,
//! `IPVS_INFO_ATTR_*`): their types, their encoding as [`Nla`]s, and their
//! parsing. Unknown attributes are kept as [`DefaultNla`].

use netlink_packet_core::{
    emit_u16, emit_u16_be, emit_u32, emit_u64, parse_string, parse_u16, parse_u16_be, parse_u32,
    parse_u64, parse_u8, DecodeError, DefaultNla, Emitable, Nla, NlaBuffer, NlasIterator,
    Parseable, NLA_F_NESTED,
};

// IPVS_CMD_ATTR_*
pub(super) const CMD_SERVICE: u16 = 1;
pub(super) const CMD_DEST: u16 = 2;
pub(super) const CMD_DAEMON: u16 = 3;
pub(super) const CMD_TIMEOUT_TCP: u16 = 4;
pub(super) const CMD_TIMEOUT_TCP_FIN: u16 = 5;
pub(super) const CMD_TIMEOUT_UDP: u16 = 6;
// IPVS_SVC_ATTR_*
pub(super) const SVC_AF: u16 = 1;
pub(super) const SVC_PROTOCOL: u16 = 2;
pub(super) const SVC_ADDR: u16 = 3;
pub(super) const SVC_PORT: u16 = 4;
pub(super) const SVC_FWMARK: u16 = 5;
pub(super) const SVC_SCHED_NAME: u16 = 6;
pub(super) const SVC_FLAGS: u16 = 7;
pub(super) const SVC_TIMEOUT: u16 = 8;
pub(super) const SVC_NETMASK: u16 = 9;
pub(super) const SVC_STATS: u16 = 10;
pub(super) const SVC_PE_NAME: u16 = 11;
pub(super) const SVC_STATS64: u16 = 12;
// IPVS_DEST_ATTR_*
pub(super) const DEST_ADDR: u16 = 1;
pub(super) const DEST_PORT: u16 = 2;
pub(super) const DEST_FWD_METHOD: u16 = 3;
pub(super) const DEST_WEIGHT: u16 = 4;
pub(super) const DEST_U_THRESH: u16 = 5;
pub(super) const DEST_L_THRESH: u16 = 6;
pub(super) const DEST_ACTIVE_CONNS: u16 = 7;
pub(super) const DEST_INACT_CONNS: u16 = 8;
pub(super) const DEST_PERSIST_CONNS: u16 = 9;
pub(super) const DEST_STATS: u16 = 10;
pub(super) const DEST_ADDR_FAMILY: u16 = 11;
pub(super) const DEST_STATS64: u16 = 12;
pub(super) const DEST_TUN_TYPE: u16 = 13;
pub(super) const DEST_TUN_PORT: u16 = 14;
pub(super) const DEST_TUN_FLAGS: u16 = 15;
// IPVS_DAEMON_ATTR_*
pub(super) const DAEMON_STATE: u16 = 1;
pub(super) const DAEMON_MCAST_IFN: u16 = 2;
pub(super) const DAEMON_SYNC_ID: u16 = 3;
pub(super) const DAEMON_SYNC_MAXLEN: u16 = 4;
pub(super) const DAEMON_MCAST_GROUP: u16 = 5;
pub(super) const DAEMON_MCAST_GROUP6: u16 = 6;
pub(super) const DAEMON_MCAST_PORT: u16 = 7;
pub(super) const DAEMON_MCAST_TTL: u16 = 8;
// IPVS_INFO_ATTR_*
pub(super) const INFO_VERSION: u16 = 1;
pub(super) const INFO_CONN_TAB_SIZE: u16 = 2;

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

pub(super) fn nested_len<T: Nla>(v: &[T]) -> usize {
    v.as_ref().iter().map(|n| n.buffer_len()).sum()
}

pub(super) fn emit_nested<T: Nla>(v: &[T], buf: &mut [u8]) {
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

pub(super) fn emit_str(buf: &mut [u8], s: &str) {
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

pub(super) fn addr16(v: &[u8]) -> Result<[u8; 16], DecodeError> {
    // The kernel always sends the whole union; accept a bare IPv4 address too.
    let mut a = [0u8; 16];
    match v.len() {
        n if n >= 16 => a.copy_from_slice(&v[..16]),
        4 => a[..4].copy_from_slice(v),
        n => return Err(DecodeError::from(format!("address attribute of {n} bytes"))),
    }
    Ok(a)
}

pub(super) fn flags_pair(v: &[u8]) -> Result<(u32, u32), DecodeError> {
    if v.len() < 8 {
        return Err(DecodeError::from(format!(
            "flags attribute of {} bytes",
            v.len()
        )));
    }
    Ok((parse_u32(&v[..4])?, parse_u32(&v[4..8])?))
}

pub(super) fn parse_nested<T>(
    v: &[u8],
    f: impl Fn(NlaBuffer<&[u8]>) -> Result<T, DecodeError>,
) -> Result<Vec<T>, DecodeError> {
    NlasIterator::new(v).map(|n| f(n?)).collect()
}

pub(super) fn other(n: &NlaBuffer<&[u8]>) -> Result<DefaultNla, DecodeError> {
    DefaultNla::parse(n)
}

pub(super) fn parse_stats(n: NlaBuffer<&[u8]>) -> Result<StatsAttr, DecodeError> {
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

pub(super) fn parse_svc(n: NlaBuffer<&[u8]>) -> Result<SvcAttr, DecodeError> {
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

pub(super) fn parse_dest(n: NlaBuffer<&[u8]>) -> Result<DestAttr, DecodeError> {
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

pub(super) fn parse_daemon(n: NlaBuffer<&[u8]>) -> Result<DaemonAttr, DecodeError> {
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
