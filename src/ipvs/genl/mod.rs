//! The `IPVS` generic netlink family: commands and attributes of
//! `linux/ip_vs.h`, as bytes and back, in netlink-packet-generic's layout:
//! the command enum ([`cmd`]), the attribute types with their encoding
//! ([`attr`]), the message ([`IpvsMessage`], a [`GenlFamily`]), and the
//! conversions to and from [`super::table`] types and operations
//! ([`convert`]). No sockets here.
//!
//! Bottom of the LVS side: [`super::netlink`] sends these messages.
//! Attributes this code does not know are kept as `DefaultNla` and never
//! fail a parse, so a newer kernel's replies still decode.

pub mod attr;
pub mod cmd;
pub mod convert;

pub use attr::{Counter, DaemonAttr, DestAttr, IpvsAttr, StatsAttr, SvcAttr};
pub use cmd::IpvsCmd;
pub use convert::{
    dest_attrs, dest_entry, dest_from_attrs, dest_key_attrs, op_from_message, op_message,
    service_attrs, service_from_attrs, service_key_attrs,
};

use attr::nested_len;
use netlink_packet_core::{
    parse_u32, DecodeError, Emitable, NlasIterator, ParseableParametrized, NLA_F_NESTED,
};
use netlink_packet_generic::{GenlFamily, GenlHeader};

/// The family's name for `CTRL_CMD_GETFAMILY`.
pub const IPVS_GENL_NAME: &str = "IPVS";
/// `IPVS_GENL_VERSION`.
pub const IPVS_GENL_VERSION: u8 = 1;

/// One IPVS generic netlink message: a command and its attributes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IpvsMessage {
    /// The command.
    pub cmd: IpvsCmd,
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
        self.cmd.into()
    }
    fn version(&self) -> u8 {
        IPVS_GENL_VERSION
    }
}

impl Emitable for IpvsMessage {
    fn buffer_len(&self) -> usize {
        nested_len(&self.attrs)
    }
    fn emit(&self, buffer: &mut [u8]) {
        self.attrs.as_slice().emit(buffer);
        if !self.nested_flag {
            let info = matches!(self.cmd, IpvsCmd::SetInfo | IpvsCmd::GetInfo);
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

impl ParseableParametrized<[u8], GenlHeader> for IpvsMessage {
    fn parse_with_param(buf: &[u8], header: GenlHeader) -> Result<Self, DecodeError> {
        use attr::*;
        let info = matches!(
            IpvsCmd::from(header.cmd),
            IpvsCmd::SetInfo | IpvsCmd::GetInfo
        );
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
            cmd: IpvsCmd::from(header.cmd),
            attrs,
            nested_flag,
        })
    }
}

impl IpvsMessage {
    /// A message with a command and attributes.
    pub fn new(cmd: IpvsCmd, attrs: Vec<IpvsAttr>) -> IpvsMessage {
        IpvsMessage {
            cmd,
            attrs,
            nested_flag: true,
        }
    }
}
