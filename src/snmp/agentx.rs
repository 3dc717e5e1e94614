//! The AgentX protocol (RFC 2741) as a subagent speaks it: the PDUs it
//! sends (Open, Close, Register, Unregister, AddAgentCaps,
//! RemoveAgentCaps, Notify, Ping, Response) and those a master sends it
//! (Get, GetNext, GetBulk, the Set family, Close, Response), encoded and
//! decoded byte for byte (§5, §6). Pure: no socket here.
//!
//! Hand-written rather than on the `agentx` crate: its octet strings are
//! UTF-8 `String`s, so an IpAddress, a MAC address or an InetAddress (all
//! binary) can be neither sent nor read.

/// An object identifier.
pub type Oid = Vec<u32>;

/// Why bytes are not a PDU.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum AgentxError {
    /// Fewer bytes than a field needs.
    #[error("truncated PDU ({0})")]
    Truncated(&'static str),
    /// Not AgentX version 1.
    #[error("AgentX version {0} (1 expected)")]
    Version(u8),
    /// A PDU type RFC 2741 does not define.
    #[error("unknown PDU type {0}")]
    Type(u8),
    /// A varbind type RFC 2741 does not define.
    #[error("unknown value type {0}")]
    ValueType(u16),
    /// More than 128 sub-identifiers (§5.1).
    #[error("object identifier of {0} sub-identifiers")]
    OidLength(usize),
    /// The payload length is not a multiple of 4 or exceeds the limit.
    #[error("payload length {0}")]
    Length(u32),
}

/// The header's flags (§6.1).
pub mod flags {
    /// Register: an instance, not a subtree.
    pub const INSTANCE_REGISTRATION: u8 = 0x01;
    /// A context octet string follows the header.
    pub const NON_DEFAULT_CONTEXT: u8 = 0x08;
    /// Multi-byte fields are big-endian.
    pub const NETWORK_BYTE_ORDER: u8 = 0x10;
}

/// Largest payload read (a GetBulk answer is bounded by the master's own
/// buffer; this bounds what a hostile peer can make us hold).
pub const MAX_PAYLOAD: u32 = 1 << 20;

/// Bytes of the header.
pub const HEADER_LEN: usize = 20;

/// A varbind's value (§5.4).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Value {
    /// INTEGER.
    Integer(i32),
    /// OCTET STRING (any bytes).
    OctetString(Vec<u8>),
    /// NULL.
    Null,
    /// OBJECT IDENTIFIER.
    ObjectId(Oid),
    /// IpAddress.
    IpAddress([u8; 4]),
    /// Counter32.
    Counter32(u32),
    /// Gauge32 / Unsigned32.
    Gauge32(u32),
    /// TimeTicks (hundredths of a second).
    TimeTicks(u32),
    /// Opaque.
    Opaque(Vec<u8>),
    /// Counter64.
    Counter64(u64),
    /// noSuchObject.
    NoSuchObject,
    /// noSuchInstance.
    NoSuchInstance,
    /// endOfMibView.
    EndOfMibView,
}

impl Value {
    fn tag(&self) -> u16 {
        match self {
            Value::Integer(_) => 2,
            Value::OctetString(_) => 4,
            Value::Null => 5,
            Value::ObjectId(_) => 6,
            Value::IpAddress(_) => 64,
            Value::Counter32(_) => 65,
            Value::Gauge32(_) => 66,
            Value::TimeTicks(_) => 67,
            Value::Opaque(_) => 68,
            Value::Counter64(_) => 70,
            Value::NoSuchObject => 128,
            Value::NoSuchInstance => 129,
            Value::EndOfMibView => 130,
        }
    }

    /// A DisplayString.
    pub fn text(s: &str) -> Value {
        Value::OctetString(s.as_bytes().to_vec())
    }
}

/// A name and its value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VarBind {
    /// The instance's OID.
    pub name: Oid,
    /// Its value.
    pub value: Value,
}

/// A search range (§5.2): from `start` (itself included when `include`)
/// up to, not including, `end` (empty: no bound).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchRange {
    /// First OID.
    pub start: Oid,
    /// Whether `start` itself may be answered.
    pub include: bool,
    /// Bound (exclusive); empty for none.
    pub end: Oid,
}

/// `res.error` of a Response (§6.2.16).
pub mod res_error {
    /// No error.
    pub const NO_ERROR: u16 = 0;
    /// genErr.
    pub const GEN_ERR: u16 = 5;
    /// notWritable: every object here is read-only.
    pub const NOT_WRITABLE: u16 = 17;
    /// The master's parse error.
    pub const PARSE_ERROR: u16 = 266;
    /// requestDenied.
    pub const REQUEST_DENIED: u16 = 267;
    /// processingError.
    pub const PROCESSING_ERROR: u16 = 268;
}

/// A PDU's body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Pdu {
    /// 1: open a session.
    Open {
        /// Seconds the master waits for an answer.
        timeout: u8,
        /// The subagent's identity.
        id: Oid,
        /// Its description.
        descr: Vec<u8>,
    },
    /// 2: close it, with a reason (§6.2.2).
    Close {
        /// 1 other, 2 parseError, 3 protocolError, 4 timeouts, 5 shutdown,
        /// 6 byManager.
        reason: u8,
    },
    /// 3: register a subtree.
    Register {
        /// Seconds (0: the session's).
        timeout: u8,
        /// 1-255, lower wins; 127 by default.
        priority: u8,
        /// The subtree.
        subtree: Oid,
    },
    /// 4: unregister it.
    Unregister {
        /// As registered.
        priority: u8,
        /// The subtree.
        subtree: Oid,
    },
    /// 5.
    Get(Vec<SearchRange>),
    /// 6.
    GetNext(Vec<SearchRange>),
    /// 7.
    GetBulk {
        /// The first ranges answered once.
        non_repeaters: u16,
        /// How many times the others are.
        max_repetitions: u16,
        /// The ranges.
        ranges: Vec<SearchRange>,
    },
    /// 8-11: TestSet, CommitSet, UndoSet, CleanupSet (their bodies are
    /// not needed: nothing here is writable).
    Set(u8),
    /// 12.
    Notify(Vec<VarBind>),
    /// 13.
    Ping,
    /// 14-15: IndexAllocate / IndexDeallocate (never sent to a subagent).
    Index(u8),
    /// 16: a sysORTable row.
    AddAgentCaps {
        /// sysORID.
        id: Oid,
        /// sysORDescr.
        descr: Vec<u8>,
    },
    /// 17.
    RemoveAgentCaps {
        /// sysORID.
        id: Oid,
    },
    /// 18.
    Response {
        /// sysUpTime (hundredths), from the master.
        uptime: u32,
        /// res.error.
        error: u16,
        /// res.index.
        index: u16,
        /// The varbinds.
        vbs: Vec<VarBind>,
    },
}

impl Pdu {
    fn type_byte(&self) -> u8 {
        match self {
            Pdu::Open { .. } => 1,
            Pdu::Close { .. } => 2,
            Pdu::Register { .. } => 3,
            Pdu::Unregister { .. } => 4,
            Pdu::Get(_) => 5,
            Pdu::GetNext(_) => 6,
            Pdu::GetBulk { .. } => 7,
            Pdu::Set(t) | Pdu::Index(t) => *t,
            Pdu::Notify(_) => 12,
            Pdu::Ping => 13,
            Pdu::AddAgentCaps { .. } => 16,
            Pdu::RemoveAgentCaps { .. } => 17,
            Pdu::Response { .. } => 18,
        }
    }
}

/// The header's identifiers (§6.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Ids {
    /// sessionID.
    pub session: u32,
    /// transactionID.
    pub transaction: u32,
    /// packetID.
    pub packet: u32,
}

/// A PDU with its header's identifiers and flags.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    /// The header's flags as received (byte order, context, instance).
    pub flags: u8,
    /// Its identifiers.
    pub ids: Ids,
    /// The context, when NON_DEFAULT_CONTEXT is set.
    pub context: Option<Vec<u8>>,
    /// The body.
    pub pdu: Pdu,
}

/// Writes multi-byte fields in one byte order.
struct Out {
    buf: Vec<u8>,
    big: bool,
}

impl Out {
    fn u16(&mut self, v: u16) {
        let b = if self.big {
            v.to_be_bytes()
        } else {
            v.to_le_bytes()
        };
        self.buf.extend_from_slice(&b);
    }
    fn u32(&mut self, v: u32) {
        let b = if self.big {
            v.to_be_bytes()
        } else {
            v.to_le_bytes()
        };
        self.buf.extend_from_slice(&b);
    }
    fn u64(&mut self, v: u64) {
        // §5.4: the high 32 bits first in the byte order of the PDU.
        self.u32((v >> 32) as u32);
        self.u32(v as u32);
    }
    fn oid(&mut self, oid: &[u32], include: bool) {
        // §5.1: "1.3.6.1.X.…" with X < 256 is sent as prefix X.
        let prefixed = oid.len() >= 5 && oid[..4] == [1, 3, 6, 1] && oid[4] > 0 && oid[4] < 256;
        let (prefix, rest) = if prefixed {
            (oid[4] as u8, &oid[5..])
        } else {
            (0, oid)
        };
        self.buf
            .extend_from_slice(&[rest.len() as u8, prefix, u8::from(include), 0]);
        for s in rest {
            self.u32(*s);
        }
    }
    fn octets(&mut self, b: &[u8]) {
        self.u32(b.len() as u32);
        self.buf.extend_from_slice(b);
        while !self.buf.len().is_multiple_of(4) {
            self.buf.push(0);
        }
    }
    fn varbind(&mut self, vb: &VarBind) {
        self.u16(vb.value.tag());
        self.u16(0);
        self.oid(&vb.name, false);
        match &vb.value {
            Value::Integer(v) => self.u32(*v as u32),
            Value::Counter32(v) | Value::Gauge32(v) | Value::TimeTicks(v) => self.u32(*v),
            Value::Counter64(v) => self.u64(*v),
            Value::OctetString(b) | Value::Opaque(b) => self.octets(b),
            Value::IpAddress(a) => self.octets(a),
            // net-snmp sets `include` in a value's OID; the master ignores it.
            Value::ObjectId(o) => self.oid(o, true),
            Value::Null | Value::NoSuchObject | Value::NoSuchInstance | Value::EndOfMibView => {}
        }
    }
    fn ranges(&mut self, rs: &[SearchRange]) {
        for r in rs {
            self.oid(&r.start, r.include);
            self.oid(&r.end, false);
        }
    }
}

/// Encodes `pdu` with `ids`, little-endian as net-snmp's subagents send
/// (`big`: network byte order, flagged). `context`: a non-default
/// context (flagged).
pub fn encode(pdu: &Pdu, ids: Ids, big: bool, context: Option<&[u8]>) -> Vec<u8> {
    let mut o = Out {
        buf: Vec::with_capacity(64),
        big,
    };
    let mut fl = if big { flags::NETWORK_BYTE_ORDER } else { 0 };
    let carries_context = matches!(
        pdu,
        Pdu::Register { .. }
            | Pdu::Unregister { .. }
            | Pdu::Get(_)
            | Pdu::GetNext(_)
            | Pdu::GetBulk { .. }
            | Pdu::Notify(_)
            | Pdu::Ping
            | Pdu::AddAgentCaps { .. }
            | Pdu::RemoveAgentCaps { .. }
            // net-snmp's agents answer a request in a context with it.
            | Pdu::Response { .. }
    );
    let context = context.filter(|_| carries_context);
    if context.is_some() {
        fl |= flags::NON_DEFAULT_CONTEXT;
    }
    o.buf.extend_from_slice(&[1, pdu.type_byte(), fl, 0]);
    o.u32(ids.session);
    o.u32(ids.transaction);
    o.u32(ids.packet);
    o.u32(0);
    if let Some(c) = context {
        o.octets(c);
    }
    match pdu {
        Pdu::Open { timeout, id, descr } => {
            o.buf.extend_from_slice(&[*timeout, 0, 0, 0]);
            o.oid(id, false);
            o.octets(descr);
        }
        Pdu::Close { reason } => o.buf.extend_from_slice(&[*reason, 0, 0, 0]),
        Pdu::Register {
            timeout,
            priority,
            subtree,
        } => {
            o.buf.extend_from_slice(&[*timeout, *priority, 0, 0]);
            o.oid(subtree, false);
        }
        Pdu::Unregister { priority, subtree } => {
            o.buf.extend_from_slice(&[0, *priority, 0, 0]);
            o.oid(subtree, false);
        }
        Pdu::Get(rs) | Pdu::GetNext(rs) => o.ranges(rs),
        Pdu::GetBulk {
            non_repeaters,
            max_repetitions,
            ranges,
        } => {
            o.u16(*non_repeaters);
            o.u16(*max_repetitions);
            o.ranges(ranges);
        }
        Pdu::Set(_) | Pdu::Index(_) | Pdu::Ping => {}
        Pdu::Notify(vbs) => vbs.iter().for_each(|v| o.varbind(v)),
        Pdu::AddAgentCaps { id, descr } => {
            o.oid(id, false);
            o.octets(descr);
        }
        Pdu::RemoveAgentCaps { id } => o.oid(id, false),
        Pdu::Response {
            uptime,
            error,
            index,
            vbs,
        } => {
            o.u32(*uptime);
            o.u16(*error);
            o.u16(*index);
            vbs.iter().for_each(|v| o.varbind(v));
        }
    }
    let len = (o.buf.len() - HEADER_LEN) as u32;
    let b = if big {
        len.to_be_bytes()
    } else {
        len.to_le_bytes()
    };
    o.buf[16..20].copy_from_slice(&b);
    o.buf
}

/// Reads fields in the PDU's byte order.
struct In<'a> {
    b: &'a [u8],
    big: bool,
}

impl<'a> In<'a> {
    fn take(&mut self, n: usize, what: &'static str) -> Result<&'a [u8], AgentxError> {
        if self.b.len() < n {
            return Err(AgentxError::Truncated(what));
        }
        let (h, t) = self.b.split_at(n);
        self.b = t;
        Ok(h)
    }
    fn u8(&mut self, what: &'static str) -> Result<u8, AgentxError> {
        Ok(self.take(1, what)?[0])
    }
    fn u16(&mut self, what: &'static str) -> Result<u16, AgentxError> {
        let b: [u8; 2] = self.take(2, what)?.try_into().expect("2 bytes");
        Ok(if self.big {
            u16::from_be_bytes(b)
        } else {
            u16::from_le_bytes(b)
        })
    }
    fn u32(&mut self, what: &'static str) -> Result<u32, AgentxError> {
        let b: [u8; 4] = self.take(4, what)?.try_into().expect("4 bytes");
        Ok(if self.big {
            u32::from_be_bytes(b)
        } else {
            u32::from_le_bytes(b)
        })
    }
    fn oid(&mut self) -> Result<(Oid, bool), AgentxError> {
        let h = self.take(4, "object identifier")?;
        let (n, prefix, include) = (h[0] as usize, h[1], h[2] != 0);
        if n > 128 {
            return Err(AgentxError::OidLength(n));
        }
        let mut oid = Vec::with_capacity(n + 5);
        if prefix != 0 {
            oid.extend_from_slice(&[1, 3, 6, 1, u32::from(prefix)]);
        }
        for _ in 0..n {
            oid.push(self.u32("sub-identifier")?);
        }
        Ok((oid, include))
    }
    fn octets(&mut self) -> Result<Vec<u8>, AgentxError> {
        let n = self.u32("octet string length")? as usize;
        let padded = n.div_ceil(4) * 4;
        let b = self.take(padded, "octet string")?;
        Ok(b[..n].to_vec())
    }
    fn ranges(&mut self) -> Result<Vec<SearchRange>, AgentxError> {
        let mut v = Vec::new();
        while !self.b.is_empty() {
            let (start, include) = self.oid()?;
            let (end, _) = self.oid()?;
            v.push(SearchRange {
                start,
                include,
                end,
            });
        }
        Ok(v)
    }
    fn varbind(&mut self) -> Result<VarBind, AgentxError> {
        let tag = self.u16("varbind type")?;
        self.u16("varbind reserved")?;
        let (name, _) = self.oid()?;
        let value = match tag {
            2 => Value::Integer(self.u32("integer")? as i32),
            4 => Value::OctetString(self.octets()?),
            5 => Value::Null,
            6 => Value::ObjectId(self.oid()?.0),
            64 => {
                let b = self.octets()?;
                Value::IpAddress(
                    b.try_into()
                        .map_err(|_| AgentxError::Truncated("IpAddress"))?,
                )
            }
            65 => Value::Counter32(self.u32("counter")?),
            66 => Value::Gauge32(self.u32("gauge")?),
            67 => Value::TimeTicks(self.u32("timeticks")?),
            68 => Value::Opaque(self.octets()?),
            70 => {
                let hi = self.u32("counter64")?;
                let lo = self.u32("counter64")?;
                Value::Counter64((u64::from(hi) << 32) | u64::from(lo))
            }
            128 => Value::NoSuchObject,
            129 => Value::NoSuchInstance,
            130 => Value::EndOfMibView,
            t => return Err(AgentxError::ValueType(t)),
        };
        Ok(VarBind { name, value })
    }
}

/// The payload length a header announces (to read that many bytes more).
pub fn payload_len(header: &[u8; HEADER_LEN]) -> Result<u32, AgentxError> {
    let b: [u8; 4] = header[16..20].try_into().expect("4 bytes");
    let n = if header[2] & flags::NETWORK_BYTE_ORDER != 0 {
        u32::from_be_bytes(b)
    } else {
        u32::from_le_bytes(b)
    };
    if n % 4 != 0 || n > MAX_PAYLOAD {
        return Err(AgentxError::Length(n));
    }
    Ok(n)
}

/// Decodes one whole PDU (header and payload).
pub fn decode(b: &[u8]) -> Result<Message, AgentxError> {
    if b.len() < HEADER_LEN {
        return Err(AgentxError::Truncated("header"));
    }
    if b[0] != 1 {
        return Err(AgentxError::Version(b[0]));
    }
    let (ty, fl) = (b[1], b[2]);
    let mut i = In {
        b: &b[4..],
        big: fl & flags::NETWORK_BYTE_ORDER != 0,
    };
    let ids = Ids {
        session: i.u32("sessionID")?,
        transaction: i.u32("transactionID")?,
        packet: i.u32("packetID")?,
    };
    let len = i.u32("payload length")? as usize;
    if i.b.len() < len {
        return Err(AgentxError::Truncated("payload"));
    }
    i.b = &i.b[..len];
    let context = if fl & flags::NON_DEFAULT_CONTEXT != 0 && matches!(ty, 3..=18) {
        Some(i.octets()?)
    } else {
        None
    };
    let pdu = match ty {
        1 => {
            let timeout = i.u8("timeout")?;
            i.take(3, "reserved")?;
            let (id, _) = i.oid()?;
            Pdu::Open {
                timeout,
                id,
                descr: i.octets()?,
            }
        }
        2 => Pdu::Close {
            reason: i.u8("reason")?,
        },
        3 | 4 => {
            let timeout = i.u8("timeout")?;
            let priority = i.u8("priority")?;
            i.take(2, "range")?;
            let (subtree, _) = i.oid()?;
            if ty == 3 {
                Pdu::Register {
                    timeout,
                    priority,
                    subtree,
                }
            } else {
                Pdu::Unregister { priority, subtree }
            }
        }
        5 => Pdu::Get(i.ranges()?),
        6 => Pdu::GetNext(i.ranges()?),
        7 => Pdu::GetBulk {
            non_repeaters: i.u16("non_repeaters")?,
            max_repetitions: i.u16("max_repetitions")?,
            ranges: i.ranges()?,
        },
        8..=11 => Pdu::Set(ty),
        12 => {
            let mut v = Vec::new();
            while !i.b.is_empty() {
                v.push(i.varbind()?);
            }
            Pdu::Notify(v)
        }
        13 => Pdu::Ping,
        14 | 15 => Pdu::Index(ty),
        16 => {
            let (id, _) = i.oid()?;
            Pdu::AddAgentCaps {
                id,
                descr: i.octets()?,
            }
        }
        17 => Pdu::RemoveAgentCaps { id: i.oid()?.0 },
        18 => {
            let uptime = i.u32("sysUpTime")?;
            let error = i.u16("res.error")?;
            let index = i.u16("res.index")?;
            let mut vbs = Vec::new();
            while !i.b.is_empty() {
                vbs.push(i.varbind()?);
            }
            Pdu::Response {
                uptime,
                error,
                index,
                vbs,
            }
        }
        t => return Err(AgentxError::Type(t)),
    };
    Ok(Message {
        flags: fl,
        ids,
        context,
        pdu,
    })
}

/// An OID written with dots, for logs.
pub fn dotted(oid: &[u32]) -> String {
    oid.iter().map(|s| format!(".{s}")).collect()
}

#[cfg(test)]
mod tests;
