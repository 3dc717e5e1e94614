//! The SNMP subsystem: an AgentX subagent (RFC 2741) of the master at
//! `snmp_socket` (`-A`; net-snmp's `unix:/var/agentx/master` by default),
//! as keepalived 2.2.7's VRRP child is one (`../shared/reference/snmp.md`).
//! It registers the MIBs the configuration enables, answers the master's
//! Get, GetNext and GetBulk from views built at each request out of the
//! configuration and the subsystems' published state, and, when the master
//! is absent or goes away, tries again every 15 s (keepalived's period).
//! On a thread of its own, so a walk never delays an advert.

use super::subsystem::{Command, Progress, Reporter, VrrpEvent};
use crate::cli::Options;
use crate::config::model::Config;
use crate::config::Loaded;
use crate::snmp::agentx::{self, res_error, Ids, Message, Pdu, VarBind, HEADER_LEN};
use crate::snmp::keepalived_mib;
use crate::snmp::traps;
use crate::snmp::tree::Tree;
use crate::snmp::vrrp_mib::{self, Link};
use crate::snmp::vrrpv3_mib;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;

/// net-snmp's default master socket.
pub const DEFAULT_SOCKET: &str = "unix:/var/agentx/master";

/// How long after a failed connection, or a lost one, the next attempt
/// comes (net-snmp's period, measured with keepalived: 15.0 s).
pub const RETRY: Duration = Duration::from_secs(15);

/// How long the master may take to answer our administrative PDUs.
const ANSWER_WITHIN: Duration = Duration::from_secs(5);

/// At most this many varbinds in one GetBulk answer.
const BULK_LIMIT: usize = 1000;

/// The identity net-snmp's subagents open with (keepalived's too).
const SUBAGENT_ID: [u32; 10] = [1, 3, 6, 1, 4, 1, 8072, 3, 2, 10];

/// What the subagent reads its views from.
#[derive(Clone, Default)]
pub struct Sources {
    /// VRRP's published instances, when VRRP runs.
    pub vrrp: Option<crate::vrrp::status::Board>,
}

/// Whether the configuration asks for an SNMP part this daemon serves.
pub fn wanted(opts: &Options, cfg: &Config, vrrp_runs: bool) -> bool {
    let g = &cfg.global_defs.snmp;
    vrrp_runs && (opts.snmp || g.rfcv2 || g.rfcv3 || g.vrrp)
}

/// The master's socket: `-A`, else `snmp_socket`, else net-snmp's default.
fn socket_of(opts: &Options, cfg: &Config) -> String {
    opts.snmp_agent_socket
        .clone()
        .or_else(|| cfg.global_defs.snmp.socket.clone())
        .unwrap_or_else(|| DEFAULT_SOCKET.to_string())
}

/// A MIB this subagent registers: its subtree, its sysORTable row.
struct Module {
    root: Vec<u32>,
    descr: &'static str,
}

fn modules(opts: &Options, cfg: &Config, src: &Sources) -> Vec<Module> {
    let g = &cfg.global_defs.snmp;
    let mut m = Vec::new();
    if src.vrrp.is_some() && (opts.snmp || g.vrrp) {
        m.push(Module {
            root: keepalived_mib::GLOBAL.to_vec(),
            descr: "The MIB module for Keepalived",
        });
        m.push(Module {
            root: keepalived_mib::VRRP.to_vec(),
            descr: "The MIB module for KEEPALIVED-VRRP",
        });
    }
    if src.vrrp.is_some() && (opts.snmp || g.rfcv2) {
        m.push(Module {
            root: vrrp_mib::ROOT.to_vec(),
            descr: "The MIB module for VRRP",
        });
    }
    if src.vrrp.is_some() && (opts.snmp || g.rfcv3) {
        m.push(Module {
            root: vrrpv3_mib::ROOT.to_vec(),
            descr: "The MIB module for VRRPV3",
        });
    }
    m
}

/// The view of every registered module, now.
fn view(cfg: &Config, src: &Sources, mods: &[Module]) -> Tree {
    let mut t = Tree::new();
    let Some(board) = &src.vrrp else { return t };
    let published = board
        .lock()
        .map(|b| b.instances.clone())
        .unwrap_or_default();
    let pairs: Vec<_> = cfg
        .vrrp
        .instances
        .iter()
        .filter_map(|c| published.iter().find(|s| s.name == c.name).map(|s| (c, s)))
        .collect();
    // Each link and script path read once for the whole view, not once
    // per row that names it.
    let links = std::cell::RefCell::new(std::collections::HashMap::new());
    let link = |name: &str| {
        *links
            .borrow_mut()
            .entry(name.to_string())
            .or_insert_with(|| link(name))
    };
    let paths = std::cell::RefCell::new(std::collections::HashMap::new());
    let resolve = |p: &str| {
        paths
            .borrow_mut()
            .entry(p.to_string())
            .or_insert_with(|| resolve(p))
            .clone()
    };
    for m in mods {
        let part = if m.root == keepalived_mib::GLOBAL {
            keepalived_mib::global(cfg, &version())
        } else if m.root == keepalived_mib::VRRP {
            keepalived_mib::vrrp(cfg, &pairs, &link, &resolve)
        } else if m.root == vrrp_mib::ROOT {
            vrrp_mib::view(&pairs, &link, cfg.global_defs.snmp.traps)
        } else if m.root == vrrpv3_mib::ROOT {
            vrrpv3_mib::view(&pairs, &link)
        } else {
            continue;
        };
        for (o, v) in part.iter() {
            t.set(o, &[], v.clone());
        }
    }
    t
}

/// The next VRRP event, never when none come.
async fn next_event(rx: &mut Option<mpsc::UnboundedReceiver<VrrpEvent>>) -> Option<VrrpEvent> {
    match rx {
        Some(r) => r.recv().await,
        None => std::future::pending().await,
    }
}

/// The notifications for `e`, when `enable_traps` is on.
fn notifications(
    opts: &Options,
    cfg: &Config,
    src: &Sources,
    e: &VrrpEvent,
    uptime: u32,
) -> Vec<Vec<VarBind>> {
    let g = &cfg.global_defs.snmp;
    if !g.traps {
        return Vec::new();
    }
    let en = traps::Enabled {
        vrrp: opts.snmp || g.vrrp,
        rfcv2: opts.snmp || g.rfcv2,
        rfcv3: opts.snmp || g.rfcv3,
    };
    if e.group {
        return traps::group(cfg, en, &e.name, e.state, uptime);
    }
    let status = src.vrrp.as_ref().and_then(|b| {
        b.lock()
            .ok()
            .and_then(|b| b.instances.iter().find(|s| s.name == e.name).cloned())
    });
    traps::instance(cfg, en, &e.name, e.state, status.as_ref(), &link, uptime)
}

/// What `keepalived -v` says first, KEEPALIVED-MIB's `version`.
fn version() -> String {
    format!(
        "Keepalived v2.2.7 compatible (keepalived-rs {})",
        env!("CARGO_PKG_VERSION")
    )
}

/// A script's path as the kernel resolves it (keepalived shows it so).
fn resolve(path: &str) -> String {
    std::fs::canonicalize(path).map_or_else(|_| path.to_string(), |p| p.display().to_string())
}

/// An interface's ifIndex and MAC address, from the kernel.
fn link(name: &str) -> Option<Link> {
    let index = nix::net::if_::if_nametoindex(name).ok()?;
    let text = std::fs::read_to_string(format!("/sys/class/net/{name}/address")).ok()?;
    let mut mac = [0u8; 6];
    for (i, p) in text.trim().split(':').enumerate().take(6) {
        mac[i] = u8::from_str_radix(p, 16).ok()?;
    }
    Some(Link { index, mac })
}

/// A connection to the master, read by a task of its own (a read cut by
/// a command would lose half a PDU).
struct Session {
    writer: Box<dyn AsyncWrite + Send + Unpin>,
    inbox: mpsc::Receiver<std::io::Result<Message>>,
    id: u32,
    packet: u32,
    reader: tokio::task::JoinHandle<()>,
}

impl Drop for Session {
    fn drop(&mut self) {
        self.reader.abort();
    }
}

async fn read_pdus<R: AsyncRead + Unpin>(mut r: R, tx: mpsc::Sender<std::io::Result<Message>>) {
    loop {
        let mut head = [0u8; HEADER_LEN];
        if let Err(e) = r.read_exact(&mut head).await {
            let _ = tx.send(Err(e)).await;
            return;
        }
        let len = match agentx::payload_len(&head) {
            Ok(n) => n as usize,
            Err(e) => {
                let _ = tx.send(Err(std::io::Error::other(e))).await;
                return;
            }
        };
        let mut b = head.to_vec();
        b.resize(HEADER_LEN + len, 0);
        if let Err(e) = r.read_exact(&mut b[HEADER_LEN..]).await {
            let _ = tx.send(Err(e)).await;
            return;
        }
        let m = agentx::decode(&b).map_err(std::io::Error::other);
        let bad = m.is_err();
        if tx.send(m).await.is_err() || bad {
            return;
        }
    }
}

/// Connects to `spec` (`unix:PATH`, a path, or `tcp:HOST:PORT`).
async fn connect(spec: &str) -> std::io::Result<Session> {
    let (tx, inbox) = mpsc::channel(64);
    let (writer, reader): (Box<dyn AsyncWrite + Send + Unpin>, _) =
        if let Some(hp) = spec.strip_prefix("tcp:") {
            let hp = if hp.contains(':') {
                hp.to_string()
            } else {
                format!("{hp}:705")
            };
            let s = tokio::net::TcpStream::connect(hp).await?;
            let (r, w) = s.into_split();
            (Box::new(w), tokio::spawn(read_pdus(r, tx)))
        } else {
            let path = spec.strip_prefix("unix:").unwrap_or(spec);
            let s = tokio::net::UnixStream::connect(path).await?;
            let (r, w) = s.into_split();
            (Box::new(w), tokio::spawn(read_pdus(r, tx)))
        };
    Ok(Session {
        writer,
        inbox,
        id: 0,
        packet: 0,
        reader,
    })
}

impl Session {
    async fn send(&mut self, pdu: &Pdu, ids: Ids) -> std::io::Result<()> {
        let b = agentx::encode(pdu, ids, false, None);
        self.writer.write_all(&b).await
    }

    /// Sends an administrative PDU and waits for its Response (requests
    /// from the master meanwhile are not expected: nothing is registered
    /// until the last of these is answered).
    async fn request(&mut self, pdu: Pdu) -> std::io::Result<(u16, Vec<VarBind>, u32)> {
        self.packet = self.packet.wrapping_add(1);
        let ids = Ids {
            session: self.id,
            transaction: 0,
            packet: self.packet,
        };
        self.send(&pdu, ids).await?;
        let deadline = tokio::time::Instant::now() + ANSWER_WITHIN;
        loop {
            let m = tokio::time::timeout_at(deadline, self.inbox.recv())
                .await
                .map_err(|_| std::io::Error::other("no answer from the master"))?
                .ok_or_else(|| std::io::Error::other("connection closed"))??;
            if let Pdu::Response { error, vbs, .. } = m.pdu {
                if m.ids.packet == self.packet {
                    return Ok((error, vbs, m.ids.session));
                }
            }
        }
    }

    /// Open, then each module registered and listed in sysORTable.
    async fn open(&mut self, mods: &[Module]) -> std::io::Result<()> {
        let (error, _, session) = self
            .request(Pdu::Open {
                timeout: 1,
                id: SUBAGENT_ID.to_vec(),
                descr: b"Net-SNMP AgentX sub-agent".to_vec(),
            })
            .await?;
        if error != res_error::NO_ERROR {
            return Err(std::io::Error::other(format!("Open refused ({error})")));
        }
        self.id = session;
        for m in mods {
            let (error, ..) = self
                .request(Pdu::Register {
                    timeout: 0,
                    priority: 127,
                    subtree: m.root.clone(),
                })
                .await?;
            if error != res_error::NO_ERROR {
                log::warn!(
                    "SNMP: the master refused {} ({error})",
                    agentx::dotted(&m.root)
                );
            }
            self.request(Pdu::AddAgentCaps {
                id: m.root.clone(),
                descr: m.descr.as_bytes().to_vec(),
            })
            .await?;
        }
        Ok(())
    }

    /// Answers one request of the master from `tree`.
    async fn answer(&mut self, m: Message, tree: impl FnOnce() -> Tree) -> std::io::Result<()> {
        let (error, vbs) = match &m.pdu {
            Pdu::Get(rs) => {
                let t = tree();
                (res_error::NO_ERROR, rs.iter().map(|r| t.get(r)).collect())
            }
            Pdu::GetNext(rs) => {
                let t = tree();
                (res_error::NO_ERROR, rs.iter().map(|r| t.next(r)).collect())
            }
            Pdu::GetBulk {
                non_repeaters,
                max_repetitions,
                ranges,
            } => {
                let t = tree();
                let v = t.bulk(
                    usize::from(*non_repeaters),
                    usize::from(*max_repetitions),
                    ranges,
                    BULK_LIMIT,
                );
                (res_error::NO_ERROR, v)
            }
            // Nothing here is writable.
            Pdu::Set(8) => (res_error::NOT_WRITABLE, Vec::new()),
            Pdu::Set(_) => (res_error::NO_ERROR, Vec::new()),
            _ => return Ok(()),
        };
        let r = Pdu::Response {
            uptime: 0,
            error,
            index: if error == res_error::NO_ERROR { 0 } else { 1 },
            vbs,
        };
        self.send(&r, m.ids).await
    }

    /// Sends a notification (its Response is read and passed over).
    async fn notify(&mut self, vbs: Vec<VarBind>) -> std::io::Result<()> {
        self.packet = self.packet.wrapping_add(1);
        let ids = Ids {
            session: self.id,
            transaction: 0,
            packet: self.packet,
        };
        self.send(&Pdu::Notify(vbs), ids).await
    }

    async fn close(&mut self) {
        self.packet = self.packet.wrapping_add(1);
        let ids = Ids {
            session: self.id,
            transaction: 0,
            packet: self.packet,
        };
        let _ = tokio::time::timeout(
            Duration::from_secs(1),
            self.send(&Pdu::Close { reason: 5 }, ids),
        )
        .await;
    }
}

/// Runs the subagent until [`Command::Stop`].
pub async fn run(
    opts: &Options,
    loaded: Arc<Loaded>,
    mut commands: mpsc::UnboundedReceiver<Command>,
    reporter: Reporter,
    src: Sources,
    mut events: Option<mpsc::UnboundedReceiver<VrrpEvent>>,
) -> ExitCode {
    let started = tokio::time::Instant::now();
    let mut cfg = Arc::new(loaded.config.clone());
    drop(loaded);
    let mut spec = socket_of(opts, &cfg);
    let mut mods = modules(opts, &cfg, &src);
    log::info!("Starting SNMP subagent");
    reporter.send(Progress::Started);
    let mut session: Option<Session> = None;
    let mut retry_at = tokio::time::Instant::now();
    let mut warned = false;
    loop {
        if session.is_none() && tokio::time::Instant::now() >= retry_at {
            match connect(&spec).await {
                Ok(mut s) => match s.open(&mods).await {
                    Ok(()) => {
                        log::info!("SNMP: AgentX subagent connected to {spec}");
                        session = Some(s);
                        warned = false;
                    }
                    Err(e) => {
                        log::warn!("SNMP: the AgentX master at {spec} did not open a session: {e}");
                        retry_at = tokio::time::Instant::now() + RETRY;
                    }
                },
                Err(e) => {
                    if !warned {
                        log::warn!(
                            "Warning: Failed to connect to the agentx master agent ({spec}): {e}"
                        );
                        warned = true;
                    }
                    retry_at = tokio::time::Instant::now() + RETRY;
                }
            }
        }
        let connected = session.is_some();
        let inbox = async {
            match session.as_mut() {
                Some(s) => s.inbox.recv().await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            m = inbox => match m {
                Some(Ok(m)) => {
                    if matches!(m.pdu, Pdu::Close { .. }) {
                        log::warn!("AgentX master disconnected us, reconnecting in {}", RETRY.as_secs());
                        session = None;
                        retry_at = tokio::time::Instant::now() + RETRY;
                        continue;
                    }
                    let s = session.as_mut().expect("a session");
                    let (c, sr, md) = (&cfg, &src, &mods);
                    if let Err(e) = s.answer(m, || view(c, sr, md)).await {
                        log::warn!("SNMP: answering the master: {e}");
                        session = None;
                        retry_at = tokio::time::Instant::now() + RETRY;
                    }
                }
                Some(Err(_)) | None => {
                    log::warn!("AgentX master disconnected us, reconnecting in {}", RETRY.as_secs());
                    session = None;
                    retry_at = tokio::time::Instant::now() + RETRY;
                }
            },
            _ = tokio::time::sleep_until(retry_at), if !connected => {}
            e = next_event(&mut events) => {
                let Some(e) = e else {
                    events = None;
                    continue;
                };
                // Raised while no master listens: lost, as keepalived's.
                let Some(s) = session.as_mut() else { continue };
                let uptime = (started.elapsed().as_millis() / 10) as u32;
                for vbs in notifications(opts, &cfg, &src, &e, uptime) {
                    if let Err(err) = s.notify(vbs).await {
                        log::warn!("SNMP: sending a notification: {err}");
                        break;
                    }
                }
            }
            c = commands.recv() => match c {
                Some(Command::Reload(l)) => {
                    cfg = Arc::new(l.config.clone());
                    drop(l);
                    let (new_spec, new_mods) = (socket_of(opts, &cfg), modules(opts, &cfg, &src));
                    let same = new_spec == spec
                        && new_mods.iter().map(|m| &m.root).eq(mods.iter().map(|m| &m.root));
                    spec = new_spec;
                    mods = new_mods;
                    if !same {
                        // Registered again from scratch: a new socket or set of MIBs.
                        if let Some(mut s) = session.take() {
                            s.close().await;
                        }
                        retry_at = tokio::time::Instant::now();
                    }
                    reporter.send(Progress::Reloaded);
                }
                Some(Command::Stop) | None => break,
                Some(_) => {}
            },
        }
    }
    if let Some(mut s) = session.take() {
        s.close().await;
    }
    ExitCode::SUCCESS
}
