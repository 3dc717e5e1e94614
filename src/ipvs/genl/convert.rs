//! The family's messages and the table's types: services and destinations
//! as attributes and back, and one request per [`Op`].

use super::attr::{DestAttr, IpvsAttr, SvcAttr};
use super::{IpvsCmd, IpvsMessage};
use crate::ipvs::diff::Op;
use crate::ipvs::table::{af_of, Dest, DestKey, FwdMethod, Service, ServiceKey, AF_INET, AF_INET6};
use netlink_packet_core::DecodeError;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

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

/// A destination and its active connections read straight from one
/// `GET_DEST` dump message (its generic netlink header and attributes):
/// what [`dest_from_attrs`] and its `IPVS_DEST_ATTR_ACTIVE_CONNS` give from
/// the decoded message, without building its attribute lists and without
/// reading the two stats nests, twenty counters a destination that neither
/// the drift check nor a connection count looks at. `None` when the
/// message holds no destination.
pub fn dest_entry(service_af: u16, genl: &[u8]) -> Result<Option<(Dest, u32)>, DecodeError> {
    use super::attr::*;
    use netlink_packet_core::{parse_u16, parse_u16_be, parse_u32, parse_u8, NlasIterator};
    let Some(attrs) = genl.get(4..) else {
        return Err(DecodeError::from("message shorter than its genl header"));
    };
    // The info commands number their attributes in a set of their own.
    if matches!(IpvsCmd::from(genl[0]), IpvsCmd::SetInfo | IpvsCmd::GetInfo) {
        return Ok(None);
    }
    for nla in NlasIterator::new(attrs) {
        let nla = nla?;
        if nla.kind() != CMD_DEST {
            continue;
        }
        let mut af = service_af;
        let mut addr = None;
        let mut active = 0;
        let mut d = Dest::new(IpAddr::V4(Ipv4Addr::UNSPECIFIED), 0, FwdMethod::Masq, 0);
        for n in NlasIterator::new(nla.value()) {
            let n = n?;
            let v = n.value();
            match n.kind() {
                DEST_ADDR_FAMILY => af = parse_u16(v)?,
                DEST_ADDR => addr = Some(addr16(v)?),
                DEST_PORT => d.port = parse_u16_be(v)?,
                DEST_FWD_METHOD => d.fwd_method = FwdMethod::from_kernel(parse_u32(v)?),
                DEST_WEIGHT => d.weight = parse_u32(v)?,
                DEST_U_THRESH => d.u_thresh = parse_u32(v)?,
                DEST_L_THRESH => d.l_thresh = parse_u32(v)?,
                DEST_ACTIVE_CONNS => active = parse_u32(v)?,
                DEST_TUN_TYPE => d.tun_type = parse_u8(v)?,
                DEST_TUN_PORT => d.tun_port = parse_u16_be(v)?,
                DEST_TUN_FLAGS => d.tun_flags = parse_u16(v)?,
                _ => {}
            }
        }
        let addr =
            addr.ok_or_else(|| DecodeError::from("destination without IPVS_DEST_ATTR_ADDR"))?;
        d.addr = ip_from16(af, &addr);
        return Ok(Some((d, active)));
    }
    Ok(None)
}

pub fn op_message(op: &Op) -> IpvsMessage {
    match op {
        Op::AddService(s) => IpvsMessage::new(
            IpvsCmd::NewService,
            vec![IpvsAttr::Service(service_attrs(s))],
        ),
        Op::EditService(s) => IpvsMessage::new(
            IpvsCmd::SetService,
            vec![IpvsAttr::Service(service_attrs(s))],
        ),
        Op::DelService(k) => IpvsMessage::new(
            IpvsCmd::DelService,
            vec![IpvsAttr::Service(service_key_attrs(k))],
        ),
        Op::AddDest(k, d) => IpvsMessage::new(
            IpvsCmd::NewDest,
            vec![
                IpvsAttr::Service(service_key_attrs(k)),
                IpvsAttr::Dest(dest_attrs(d)),
            ],
        ),
        Op::EditDest(k, d) => IpvsMessage::new(
            IpvsCmd::SetDest,
            vec![
                IpvsAttr::Service(service_key_attrs(k)),
                IpvsAttr::Dest(dest_attrs(d)),
            ],
        ),
        Op::DelDest(k, d) => IpvsMessage::new(
            IpvsCmd::DelDest,
            vec![
                IpvsAttr::Service(service_key_attrs(k)),
                IpvsAttr::Dest(dest_key_attrs(&d.addr, d.port)),
            ],
        ),
        Op::Flush => IpvsMessage::new(IpvsCmd::Flush, vec![]),
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
        IpvsCmd::NewService => Op::AddService(service()?),
        IpvsCmd::SetService => Op::EditService(service()?),
        IpvsCmd::DelService => Op::DelService(service()?.key),
        IpvsCmd::NewDest => {
            let s = service()?;
            Op::AddDest(s.key, dest(s.key.af())?)
        }
        IpvsCmd::SetDest => {
            let s = service()?;
            Op::EditDest(s.key, dest(s.key.af())?)
        }
        IpvsCmd::DelDest => {
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
        IpvsCmd::Flush => Op::Flush,
        _ => return None,
    })
}
