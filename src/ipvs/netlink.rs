//! The async handle on the kernel's IPVS: family resolution, dumps of any
//! size, and operations batched several per `sendmsg` with every
//! acknowledgement checked.
//!
//! The I/O shell under [`super::genl`]'s messages; the [`Backend`] the daemon
//! uses when it is not a dry run. keepalived sends one synchronous message per
//! operation (`libipvs.c`); here a batch of up to [`BATCH`] requests goes out in
//! one datagram; the kernel reports each failure and acknowledges the
//! batch once, so a cold start of 20,000 destinations costs ~80 sendmsg
//! calls instead of 20,000 round trips.

use super::diff::Op;
use super::genl::{
    dest_entry, op_message, service_from_attrs, service_key_attrs, DaemonAttr, IpvsAttr, IpvsCmd,
    IpvsMessage, IPVS_GENL_VERSION,
};
use super::table::{Dest, DestKey, Service, ServiceKey, Table, TableService};
use super::{Backend, IpvsError, SyncDaemon, Timeouts};
use netlink_packet_core::{
    DecodeError, Emitable, NetlinkBuffer, NetlinkMessage, NetlinkPayload, NLMSG_DONE, NLMSG_ERROR,
    NLM_F_ACK, NLM_F_DUMP, NLM_F_REQUEST,
};
use netlink_packet_generic::ctrl::nlas::GenlCtrlAttrs;
use netlink_packet_generic::ctrl::{GenlCtrl, GenlCtrlCmd};
use netlink_packet_generic::GenlMessage;
use netlink_sys::{protocols::NETLINK_GENERIC, AsyncSocket, AsyncSocketExt, TokioSocket};
use nix::errno::Errno;
use std::collections::HashMap;

/// Requests sent per datagram. A failed request is answered with a 36-byte
/// message, so even a batch that fails entirely fits the receive buffer.
pub const BATCH: usize = 256;

/// `NLM_F_DUMP_INTR`: the table changed while it was being dumped.
const NLM_F_DUMP_INTR: u16 = 0x10;

type IpvsNl = NetlinkMessage<GenlMessage<IpvsMessage>>;

/// What arrived for one request; `T` is a message as the request's reader
/// made it (the decoded [`IpvsMessage`] unless told otherwise).
enum Reply<T = IpvsMessage> {
    /// A message of a dump or a `GET_*` answer.
    Msg(T),
    /// The request's acknowledgement (`Ok`) or refusal (errno).
    Ack(Result<(), i32>),
    /// End of a dump.
    Done { interrupted: bool },
}

/// `NLMSG_MIN_TYPE`: message types below are netlink's own.
const NLMSG_MIN_TYPE: u16 = 16;

/// A reader of one reply message (its whole frame): `None` skips it.
type Read<'a, T> = &'a mut (dyn FnMut(&[u8]) -> Result<Option<T>, DecodeError> + Send);

/// A destination of a dump with its active connections, or why that one
/// entry could not be read.
type DestEntry = Result<(Dest, u32), DecodeError>;

/// The reply as an [`IpvsMessage`]: every attribute decoded.
fn read_message(frame: &[u8]) -> Result<Option<IpvsMessage>, DecodeError> {
    Ok(match IpvsNl::deserialize(frame)?.payload {
        NetlinkPayload::InnerMessage(g) => Some(g.payload),
        _ => None,
    })
}

/// An open, resolved IPVS generic netlink socket.
pub struct IpvsHandle {
    sock: TokioSocket,
    family: u16,
    seq: u32,
    /// `(major, minor, patch)` of the kernel's IPVS.
    pub version: (u8, u8, u8),
    /// Connection table size.
    pub conn_tab_size: u32,
    /// Receive buffer, reused: one `recv` per datagram, no allocation.
    rbuf: Vec<u8>,
}

/// Receive buffer size. Netlink sizes dump datagrams to at most 32 KiB; a
/// larger buffer leaves room for whatever a future kernel sends.
const RBUF: usize = 1 << 20;

fn io_err(what: &str) -> impl FnOnce(std::io::Error) -> IpvsError + '_ {
    move |source| IpvsError::Io {
        what: what.to_string(),
        source,
    }
}

impl IpvsHandle {
    /// Opens the socket and resolves the `IPVS` family; if that fails, runs
    /// `modprobe ip_vs` and tries once more, as keepalived does.
    pub async fn open() -> Result<IpvsHandle, IpvsError> {
        match Self::open_once().await {
            Ok(h) => Ok(h),
            Err(first) => {
                // As keepalived's modprobe_ipvs(): the kernel's configured
                // modprobe, quietly, then one more try.
                let modprobe = std::fs::read_to_string("/proc/sys/kernel/modprobe")
                    .ok()
                    .map(|s| s.trim_end_matches('\n').to_string())
                    .filter(|s| !s.is_empty())
                    .unwrap_or_else(|| "/sbin/modprobe".into());
                log::info!("{first}; trying {modprobe} ip_vs");
                match std::process::Command::new(&modprobe)
                    .args(["-s", "--", "ip_vs"])
                    .status()
                {
                    Ok(s) if !s.success() => log::warn!("IPVS: {modprobe} ip_vs failed ({s})"),
                    Ok(_) => {}
                    Err(e) => log::warn!("IPVS: cannot run {modprobe}: {e}"),
                }
                Self::open_once().await
            }
        }
    }

    async fn open_once() -> Result<IpvsHandle, IpvsError> {
        let mut sock = TokioSocket::new(NETLINK_GENERIC).map_err(io_err("open netlink socket"))?;
        sock.socket_mut()
            .bind_auto()
            .map_err(io_err("bind netlink socket"))?;
        // Best effort: acknowledgements without the request echoed back, and
        // room for large dumps. Neither is required for correctness.
        let _ = sock.socket_mut().set_cap_ack(true);
        let _ = sock.socket_mut().set_rx_buf_sz(4 << 20);
        let mut h = IpvsHandle {
            sock,
            family: 0,
            seq: 0,
            version: (0, 0, 0),
            conn_tab_size: 0,
            rbuf: Vec::with_capacity(RBUF),
        };
        h.family = h.resolve_family().await?;
        let info = h
            .request(
                IpvsMessage::new(IpvsCmd::GetInfo, vec![]),
                false,
                "get info",
            )
            .await?;
        for m in info {
            for a in m.attrs {
                match a {
                    IpvsAttr::InfoVersion(v) => {
                        h.version = ((v >> 16) as u8, (v >> 8) as u8, v as u8);
                    }
                    IpvsAttr::InfoConnTabSize(v) => h.conn_tab_size = v,
                    _ => {}
                }
            }
        }
        Ok(h)
    }

    fn next_seq(&mut self) -> u32 {
        self.seq = self.seq.wrapping_add(1);
        self.seq
    }

    async fn resolve_family(&mut self) -> Result<u16, IpvsError> {
        let mut genl = GenlMessage::from_payload(GenlCtrl {
            cmd: GenlCtrlCmd::GetFamily,
            nlas: vec![GenlCtrlAttrs::FamilyName("IPVS".into())],
        });
        genl.finalize();
        let mut msg = NetlinkMessage::from(genl);
        msg.header.flags = NLM_F_REQUEST | NLM_F_ACK;
        msg.header.sequence_number = self.next_seq();
        msg.finalize();
        let mut buf = vec![0u8; msg.buffer_len()];
        msg.serialize(&mut buf);
        self.sock
            .send(&buf)
            .await
            .map_err(io_err("resolve family IPVS"))?;
        let mut family = None;
        loop {
            let (data, _) = self
                .sock
                .recv_from_full()
                .await
                .map_err(io_err("resolve family IPVS"))?;
            let frames = frames(&data).map_err(|detail| IpvsError::Decode {
                what: "resolve family IPVS".into(),
                detail,
            })?;
            for frame in frames {
                let m =
                    NetlinkMessage::<GenlMessage<GenlCtrl>>::deserialize(frame).map_err(|e| {
                        IpvsError::Decode {
                            what: "resolve family IPVS".into(),
                            detail: e.to_string(),
                        }
                    })?;
                match m.payload {
                    NetlinkPayload::InnerMessage(g) => {
                        for a in g.payload.nlas {
                            if let GenlCtrlAttrs::FamilyId(id) = a {
                                family = Some(id);
                            }
                        }
                    }
                    NetlinkPayload::Error(e) => {
                        return match (e.code, family) {
                            (None, Some(id)) => Ok(id),
                            (None, None) => {
                                Err(IpvsError::NoFamily("no family id in the reply".into()))
                            }
                            (Some(code), _) => Err(IpvsError::NoFamily(format!(
                                "generic netlink family IPVS: {}",
                                super::errno_text(-code.get())
                            ))),
                        };
                    }
                    _ => {}
                }
            }
        }
    }

    fn frame(&mut self, m: IpvsMessage, flags: u16) -> (u32, Vec<u8>) {
        let mut buf = Vec::new();
        let seq = self.frame_into(&m, flags, &mut buf);
        (seq, buf)
    }

    /// Appends one request to `out` and returns its sequence number.
    fn frame_into(&mut self, m: &IpvsMessage, flags: u16, out: &mut Vec<u8>) -> u32 {
        let seq = self.next_seq();
        encode_request(self.family, seq, flags, m, out);
        seq
    }

    /// Reads one datagram and splits it into `(seq, reply)` pairs.
    async fn recv(&mut self, what: &str) -> Result<Vec<(u32, Reply)>, IpvsError> {
        self.recv_with(what, &mut read_message).await
    }

    /// [`Self::recv`] with the messages made by `read`.
    async fn recv_with<T>(
        &mut self,
        what: &str,
        read: Read<'_, T>,
    ) -> Result<Vec<(u32, Reply<T>)>, IpvsError> {
        self.rbuf.clear();
        self.sock.recv(&mut self.rbuf).await.map_err(io_err(what))?;
        let data = std::mem::take(&mut self.rbuf);
        let out = Self::split_with(&data, what, read);
        self.rbuf = data;
        out
    }

    #[cfg(test)]
    fn split(data: &[u8], what: &str) -> Result<Vec<(u32, Reply)>, IpvsError> {
        Self::split_with(data, what, &mut read_message)
    }

    fn split_with<T>(
        data: &[u8],
        what: &str,
        read: Read<'_, T>,
    ) -> Result<Vec<(u32, Reply<T>)>, IpvsError> {
        let decode = |detail: String| IpvsError::Decode {
            what: what.into(),
            detail,
        };
        let mut out = Vec::new();
        for frame in frames(data).map_err(decode)? {
            let head = NetlinkBuffer::new_checked(frame).map_err(|e| decode(e.to_string()))?;
            let seq = head.sequence_number();
            let interrupted = head.flags() & NLM_F_DUMP_INTR != 0;
            let reply = match head.message_type() {
                // Acknowledgements and the end of a dump, decoded whole
                // (one per request, however large the dump).
                NLMSG_ERROR | NLMSG_DONE => {
                    match IpvsNl::deserialize(frame)
                        .map_err(|e| decode(e.to_string()))?
                        .payload
                    {
                        NetlinkPayload::Error(e) => Reply::Ack(match e.code {
                            None => Ok(()),
                            Some(c) => Err(-c.get()),
                        }),
                        NetlinkPayload::Done(_) => Reply::Done { interrupted },
                        _ => continue,
                    }
                }
                t if t < NLMSG_MIN_TYPE => continue,
                _ => match read(frame).map_err(|e| decode(e.to_string()))? {
                    Some(m) => Reply::Msg(m),
                    None => continue,
                },
            };
            out.push((seq, reply));
        }
        Ok(out)
    }

    /// One request; for a dump, every message until `NLMSG_DONE`. A dump the
    /// kernel marks interrupted (the table changed under it) is repeated.
    async fn request(
        &mut self,
        m: IpvsMessage,
        dump: bool,
        what: &str,
    ) -> Result<Vec<IpvsMessage>, IpvsError> {
        self.request_with(m, dump, what, &mut read_message).await
    }

    /// [`Self::request`] with the messages made by `read`.
    async fn request_with<T>(
        &mut self,
        m: IpvsMessage,
        dump: bool,
        what: &str,
        read: Read<'_, T>,
    ) -> Result<Vec<T>, IpvsError> {
        let mut attempts = 0;
        'again: loop {
            attempts += 1;
            let flags = if dump {
                NLM_F_REQUEST | NLM_F_DUMP | NLM_F_ACK
            } else {
                NLM_F_REQUEST | NLM_F_ACK
            };
            let (seq, buf) = self.frame(m.clone(), flags);
            self.sock.send(&buf).await.map_err(io_err(what))?;
            let mut msgs = Vec::new();
            loop {
                for (s, r) in self.recv_with(what, read).await? {
                    if s != seq {
                        continue; // a late answer to an abandoned request
                    }
                    match r {
                        Reply::Msg(m) => msgs.push(m),
                        Reply::Ack(Ok(())) => {
                            if !dump {
                                return Ok(msgs);
                            }
                        }
                        Reply::Ack(Err(errno)) => {
                            return Err(IpvsError::Kernel {
                                op: what.into(),
                                errno,
                            })
                        }
                        Reply::Done { interrupted } => {
                            if interrupted && attempts < 5 {
                                log::info!(
                                    "IPVS: {what}: table changed during the dump, repeating"
                                );
                                continue 'again;
                            }
                            return Ok(msgs);
                        }
                    }
                }
            }
        }
    }

    /// Every service, without destinations.
    pub async fn services(&mut self) -> Result<Vec<Service>, IpvsError> {
        let msgs = self
            .request(
                IpvsMessage::new(IpvsCmd::GetService, vec![]),
                true,
                "list services",
            )
            .await?;
        let mut out = Vec::new();
        for m in msgs {
            for a in m.attrs {
                if let IpvsAttr::Service(attrs) = a {
                    match service_from_attrs(&attrs) {
                        Ok(s) => out.push(s),
                        // One odd entry (an address family we do not know)
                        // must not hide the rest of the table.
                        Err(e) => log::warn!("IPVS: list services: skipping an entry: {e}"),
                    }
                }
            }
        }
        Ok(out)
    }

    /// The destinations of service `svc` with their active connections,
    /// read straight from the replies' bytes ([`dest_entry`]): at tens of
    /// thousands of destinations this read is most of a drift check. An
    /// entry that cannot be read is skipped with a warning.
    async fn dest_entries(&mut self, svc: &ServiceKey) -> Result<Vec<(Dest, u32)>, IpvsError> {
        let what = format!("list destinations of {svc}");
        let af = svc.af();
        let mut read = |frame: &[u8]| -> Result<Option<DestEntry>, DecodeError> {
            let payload = NetlinkBuffer::new_checked(frame)?.payload();
            // An entry that cannot be read is skipped, not the dump.
            Ok(dest_entry(af, payload).transpose())
        };
        let entries = self
            .request_with(
                IpvsMessage::new(
                    IpvsCmd::GetDest,
                    vec![IpvsAttr::Service(service_key_attrs(svc))],
                ),
                true,
                &what,
                &mut read,
            )
            .await?;
        let mut out = Vec::with_capacity(entries.len());
        for e in entries {
            match e {
                Ok(d) => out.push(d),
                Err(e) => log::warn!("IPVS: {what}: skipping an entry: {e}"),
            }
        }
        Ok(out)
    }

    /// The active connections of each destination of service `svc`.
    pub async fn conns(&mut self, svc: &ServiceKey) -> Result<Vec<(DestKey, u32)>, IpvsError> {
        let d = self.dest_entries(svc).await?;
        Ok(d.into_iter().map(|(d, n)| (d.key(), n)).collect())
    }

    /// The whole table. A service that disappears between the two dumps is
    /// simply absent (keepalived #2295).
    pub async fn table(&mut self) -> Result<Table, IpvsError> {
        let mut t = Table::default();
        for s in self.services().await? {
            let Some(dests) = Backend::dests_of(self, &s.key).await? else {
                continue;
            };
            let key = s.key;
            let ts = t.services.entry(key).or_insert(TableService {
                service: s,
                dests: Default::default(),
            });
            ts.dests.extend(dests.into_iter().map(|d| (d.key(), d)));
        }
        t.compact();
        Ok(t)
    }

    /// Sends `ops` in batches of [`BATCH`] per datagram and collects one
    /// result per operation from the acknowledgements.
    pub async fn batch(&mut self, ops: &[Op]) -> Vec<Result<(), IpvsError>> {
        let mut results: Vec<Option<Result<(), IpvsError>>> =
            (0..ops.len()).map(|_| None).collect();
        for (chunk_no, chunk) in ops.chunks(BATCH).enumerate() {
            let base = chunk_no * BATCH;
            let mut buf = Vec::new();
            let mut pending: HashMap<u32, usize> = HashMap::new();
            let mut last_seq = 0;
            for (i, op) in chunk.iter().enumerate() {
                // Every request's outcome is checked, with one positive
                // acknowledgement per batch: the kernel answers each failed
                // request with its errno whatever the flags, handles a
                // datagram's requests in order, and queues the answers
                // before sendmsg returns. So the acknowledgement asked for
                // on the last request arrives after the error of any
                // earlier one, and every request without an error by then
                // succeeded. (Asking on every request doubled the cold-start
                // time of 20,000 destinations in the guest.)
                let flags = if i + 1 == chunk.len() {
                    NLM_F_REQUEST | NLM_F_ACK
                } else {
                    NLM_F_REQUEST
                };
                let seq = self.frame_into(&op_message(op), flags, &mut buf);
                pending.insert(seq, base + i);
                last_seq = seq;
            }
            let fail_all = |results: &mut Vec<Option<Result<(), IpvsError>>>,
                            pending: &mut HashMap<u32, usize>,
                            msg: String| {
                for (_, i) in pending.drain() {
                    results[i] = Some(Err(IpvsError::Io {
                        what: ops[i].to_string(),
                        source: std::io::Error::other(msg.clone()),
                    }));
                }
            };
            if let Err(e) = self.sock.send(&buf).await {
                fail_all(&mut results, &mut pending, e.to_string());
                continue;
            }
            'acks: while !pending.is_empty() {
                let replies = match self.recv("apply").await {
                    Ok(r) => r,
                    Err(e) => {
                        // ENOBUFS and the like: outcomes unknown; the
                        // reconciler re-reads the kernel.
                        fail_all(&mut results, &mut pending, e.to_string());
                        break;
                    }
                };
                for (seq, r) in replies {
                    let Reply::Ack(res) = r else { continue };
                    if let Some(i) = pending.remove(&seq) {
                        results[i] = Some(res.map_err(|errno| IpvsError::Kernel {
                            op: ops[i].to_string(),
                            errno,
                        }));
                    }
                    if seq == last_seq {
                        // The barrier: everything not refused succeeded.
                        for (_, i) in pending.drain() {
                            results[i] = Some(Ok(()));
                        }
                        break 'acks;
                    }
                }
            }
        }
        results.into_iter().map(|r| r.unwrap_or(Ok(()))).collect()
    }

    /// `IPVS_CMD_GET_CONFIG`.
    pub async fn get_timeouts(&mut self) -> Result<Timeouts, IpvsError> {
        let msgs = self
            .request(
                IpvsMessage::new(IpvsCmd::GetConfig, vec![]),
                false,
                "get timeouts",
            )
            .await?;
        let mut t = Timeouts::default();
        for a in msgs.into_iter().flat_map(|m| m.attrs) {
            match a {
                IpvsAttr::TimeoutTcp(v) => t.tcp = v,
                IpvsAttr::TimeoutTcpFin(v) => t.tcp_fin = v,
                IpvsAttr::TimeoutUdp(v) => t.udp = v,
                _ => {}
            }
        }
        Ok(t)
    }

    /// `IPVS_CMD_SET_CONFIG` with all three values, as keepalived sends them.
    pub async fn put_timeouts(&mut self, t: Timeouts) -> Result<(), IpvsError> {
        self.request(
            IpvsMessage::new(
                IpvsCmd::SetConfig,
                vec![
                    IpvsAttr::TimeoutTcp(t.tcp),
                    IpvsAttr::TimeoutTcpFin(t.tcp_fin),
                    IpvsAttr::TimeoutUdp(t.udp),
                ],
            ),
            false,
            &format!("set timeouts {t}"),
        )
        .await
        .map(|_| ())
    }

    /// `IPVS_CMD_NEW_DAEMON`: starts a sync daemon.
    pub async fn new_daemon(&mut self, d: &SyncDaemon) -> Result<(), IpvsError> {
        let mut attrs = vec![
            DaemonAttr::State(d.state),
            DaemonAttr::McastIfn(d.mcast_ifn.clone()),
            DaemonAttr::SyncId(d.syncid),
        ];
        if let Some(m) = d.maxlen {
            attrs.push(DaemonAttr::SyncMaxlen(m));
        }
        match d.group {
            Some(std::net::IpAddr::V4(g)) => attrs.push(DaemonAttr::McastGroup(g.octets())),
            Some(std::net::IpAddr::V6(g)) => attrs.push(DaemonAttr::McastGroup6(g.octets())),
            None => {}
        }
        if let Some(p) = d.port {
            attrs.push(DaemonAttr::McastPort(p));
        }
        if let Some(t) = d.ttl {
            attrs.push(DaemonAttr::McastTtl(t));
        }
        self.request(
            IpvsMessage::new(IpvsCmd::NewDaemon, vec![IpvsAttr::Daemon(attrs)]),
            false,
            &format!("ipvsadm {d}"),
        )
        .await
        .map(|_| ())
    }

    /// `IPVS_CMD_DEL_DAEMON`: stops the sync daemon in `state` (1 master,
    /// 2 backup).
    pub async fn del_daemon(&mut self, state: u32, sync_id: u32) -> Result<(), IpvsError> {
        self.request(
            IpvsMessage::new(
                IpvsCmd::DelDaemon,
                vec![IpvsAttr::Daemon(vec![
                    DaemonAttr::State(state),
                    DaemonAttr::SyncId(sync_id),
                ])],
            ),
            false,
            "stop sync daemon",
        )
        .await
        .map(|_| ())
    }

    /// `IPVS_CMD_GET_DAEMON` (dump): the running sync daemons.
    pub async fn daemons(&mut self) -> Result<Vec<Vec<DaemonAttr>>, IpvsError> {
        let msgs = self
            .request(
                IpvsMessage::new(IpvsCmd::GetDaemon, vec![]),
                true,
                "list sync daemons",
            )
            .await?;
        Ok(msgs
            .into_iter()
            .flat_map(|m| m.attrs)
            .filter_map(|a| match a {
                IpvsAttr::Daemon(d) => Some(d),
                _ => None,
            })
            .collect())
    }
}

/// Appends one request to `out`. The headers are written in place
/// (`nlmsghdr`, then `genlmsghdr`) so that a batch of thousands of requests
/// is one buffer, not one allocation per request.
pub fn encode_request(family: u16, seq: u32, flags: u16, m: &IpvsMessage, out: &mut Vec<u8>) {
    const HDR: usize = 16 + 4;
    let start = out.len();
    let len = HDR + m.buffer_len();
    out.resize(start + len, 0);
    let b = &mut out[start..];
    b[0..4].copy_from_slice(&(len as u32).to_ne_bytes());
    b[4..6].copy_from_slice(&family.to_ne_bytes());
    b[6..8].copy_from_slice(&flags.to_ne_bytes());
    b[8..12].copy_from_slice(&seq.to_ne_bytes());
    // nlmsg_pid stays 0: the kernel fills in our port.
    b[16] = m.cmd.into();
    b[17] = IPVS_GENL_VERSION;
    m.emit(&mut b[HDR..]);
}

/// Splits a datagram into its netlink messages, each checked for length.
pub fn frames(data: &[u8]) -> Result<Vec<&[u8]>, String> {
    let mut out = Vec::new();
    let mut off = 0;
    while off < data.len() {
        let len = NetlinkBuffer::new_checked(&data[off..])
            .map_err(|e| e.to_string())?
            .length() as usize;
        out.push(&data[off..off + len]);
        // Messages are 4-byte aligned within a datagram.
        off += (len + 3) & !3;
    }
    Ok(out)
}

impl Backend for IpvsHandle {
    fn name(&self) -> &'static str {
        "netlink"
    }

    async fn dump(&mut self) -> Result<Table, IpvsError> {
        self.table().await
    }

    async fn services(&mut self) -> Result<Vec<Service>, IpvsError> {
        IpvsHandle::services(self).await
    }

    async fn dests_of(&mut self, svc: &ServiceKey) -> Result<Option<Vec<Dest>>, IpvsError> {
        match self.dest_entries(svc).await {
            Ok(d) => Ok(Some(d.into_iter().map(|(d, _)| d).collect())),
            Err(e) if e.errno() == Some(Errno::ESRCH as i32) => Ok(None),
            Err(e) => Err(e),
        }
    }

    async fn apply(&mut self, ops: &[Op]) -> Vec<Result<(), IpvsError>> {
        self.batch(ops).await
    }

    async fn timeouts(&mut self) -> Result<Timeouts, IpvsError> {
        self.get_timeouts().await
    }

    async fn set_timeouts(&mut self, t: Timeouts) -> Result<(), IpvsError> {
        self.put_timeouts(t).await
    }

    async fn start_daemon(&mut self, d: &SyncDaemon) -> Result<(), IpvsError> {
        self.new_daemon(d).await
    }

    async fn stop_daemon(&mut self, state: u32, syncid: u32) -> Result<(), IpvsError> {
        self.del_daemon(state, syncid).await
    }

    async fn daemons(&mut self) -> Result<Vec<(u32, u32)>, IpvsError> {
        Ok(IpvsHandle::daemons(self)
            .await?
            .into_iter()
            .filter_map(|attrs| {
                let state = attrs.iter().find_map(|a| match a {
                    DaemonAttr::State(s) => Some(*s),
                    _ => None,
                })?;
                let id = attrs
                    .iter()
                    .find_map(|a| match a {
                        DaemonAttr::SyncId(i) => Some(*i),
                        _ => None,
                    })
                    .unwrap_or(0);
                Some((state, id))
            })
            .collect())
    }

    async fn active_conns(&mut self, svc: &ServiceKey) -> Result<Vec<(DestKey, u32)>, IpvsError> {
        self.conns(svc).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ipvs::genl::{dest_from_attrs, service_from_attrs};
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        /// Whatever a socket hands us, splitting and decoding ends without
        /// a panic: a bad reply is an error, never a crash.
        #[test]
        fn arbitrary_datagrams_never_panic(data in prop::collection::vec(any::<u8>(), 0..512)) {
            if let Ok(fs) = frames(&data) {
                for f in fs {
                    let _ = IpvsNl::deserialize(f);
                }
            }
            let _ = IpvsHandle::split(&data, "test");
        }

        /// Valid headers around arbitrary attribute bytes, the likelier
        /// shape of a confused or newer kernel's reply.
        #[test]
        fn arbitrary_attributes_never_panic(
            cmd in 0u8..20,
            attrs in prop::collection::vec(any::<u8>(), 0..256),
        ) {
            let len = 20 + attrs.len();
            let mut b = Vec::with_capacity(len);
            b.extend_from_slice(&(len as u32).to_ne_bytes());
            b.extend_from_slice(&30u16.to_ne_bytes());
            b.extend_from_slice(&0u16.to_ne_bytes());
            b.extend_from_slice(&[0u8; 8]);
            b.extend_from_slice(&[cmd, 1, 0, 0]);
            b.extend_from_slice(&attrs);
            let _ = dest_entry(10, &b[16..]);
            if let Ok(replies) = IpvsHandle::split(&b, "test") {
                for (_, r) in replies {
                    if let Reply::Msg(m) = r {
                        for a in &m.attrs {
                            match a {
                                IpvsAttr::Service(s) => {
                                    let _ = service_from_attrs(s);
                                }
                                IpvsAttr::Dest(d) => {
                                    let _ = dest_from_attrs(10, d);
                                }
                                _ => {}
                            }
                        }
                    }
                }
            }
        }
    }
}
