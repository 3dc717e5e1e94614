//! Half-open TCP probes (extension `half_open`): a SYN out, a SYN-ACK is up,
//! a RST is down, silence within `connect_timeout` is a timeout. No
//! connection is made: the backend's SYN-ACK reaches a port we hold bound
//! but not listening, so the kernel answers it with a RST (we send our own
//! where we could not hold the port). It proves less than a connect (an
//! application that never accepts still passes: docs/compat.md).
//!
//! I/O shell of the checker, beside [`super::tcp`], called by the prober.
//! One raw socket per [`Key`] (IPv4, or an IPv6 source address; `bind_if`,
//! `fwmark`, `bind_port`), filtered in the kernel by [`super::syn::filter`]
//! to replies to our ports; SYNs leave in batches (`sendmmsg`) and replies
//! are read in batches (`recvmmsg`), each by one task per socket
//! ([`tasks`]). The
//! source address of a destination is the kernel's route, asked once and
//! asked again after a timeout (the route may have moved). A probe the
//! engine's scheduler launches ([`HalfOpen::launch`]) has no task, box or
//! timer of its own: the receiver, or the source's one timeout task at
//! `connect_timeout`, sends its end to the scheduler; [`HalfOpen::probe`]
//! is the same probe as a future (the fallback's and the tests' way). The
//! wire format is [`super::syn`].

mod tasks;

use super::beat::SharedBeat;
use super::conn::{ConnOpts, Failure};
use super::syn::{self, Answer};
use super::timeline::{Clock, Timeline};
use crate::health::FxMap;
use socket2::{Domain, Protocol, SockAddr, Socket, Type};
use std::hash::{BuildHasher, Hasher};
use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use tokio::sync::{mpsc, oneshot, Notify};
use tokio::time::Instant;

/// Ports held per source: probes of one destination in flight at once.
const PORTS: u16 = 8;
/// SYNs per `sendmmsg`, replies per `recvmmsg`.
const BATCH: usize = 64;
/// Deadlines beyond twice the probes in flight, plus this, are swept.
const SWEEP_SLACK: usize = 1024;
/// The raw socket's receive buffer, bytes.
const RCVBUF: usize = 16 << 20;

/// Where probes leave from: one raw socket each, bound to its source
/// address, so that it reads only the packets sent to that address: the
/// kernel hands a raw socket a copy of every TCP packet it matches, and an
/// unbound one matched our own SYNs and the kernel's resets too (on
/// loopback, three copies filtered per probe instead of one). An IPv4 one
/// writes each packet's IP header (`IP_HDRINCL`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Key {
    src: IpAddr,
    /// `bind_port`, else 0 (ports of our own).
    port: u16,
    bind_if: Option<Box<str>>,
    fwmark: Option<u32>,
}

/// A destination with the device and mark its route is looked up with.
type RouteKey = (IpAddr, Option<Box<str>>, Option<u32>);
/// The source address the kernel picks per destination and options.
type Routes = Arc<Mutex<RouteCache>>;

/// The source addresses routes gave, by destination, device and mark.
/// Most checks set neither and are IPv4: theirs are kept as pairs of IPv4
/// addresses (8 bytes an entry; 34 as a pair of `IpAddr`, 72 with the
/// options in every key: 2.4 MB at 20,000 destinations).
#[derive(Default)]
struct RouteCache {
    v4: FxMap<Ipv4Addr, Ipv4Addr>,
    other: FxMap<RouteKey, IpAddr>,
}

impl RouteCache {
    fn get(&self, k: &RouteKey) -> Option<IpAddr> {
        match k {
            (IpAddr::V4(ip), None, None) => self
                .v4
                .get(ip)
                .map(|&s| IpAddr::V4(s))
                .or_else(|| self.other.get(k).copied()),
            _ => self.other.get(k).copied(),
        }
    }

    fn insert(&mut self, k: RouteKey, src: IpAddr) {
        match (&k, src) {
            ((IpAddr::V4(ip), None, None), IpAddr::V4(src)) => {
                self.v4.insert(*ip, src);
            }
            ((IpAddr::V4(ip), None, None), _) => {
                // Not an IPv4 pair (no route gives one): kept as given.
                self.v4.remove(ip);
                self.other.insert(k, src);
            }
            _ => {
                self.other.insert(k, src);
            }
        }
    }

    /// Every route kept to `ip` (whatever its device and mark): a probe
    /// there timed out, and the source it gave may have moved.
    fn forget(&mut self, ip: IpAddr) {
        if let IpAddr::V4(v4) = ip {
            self.v4.remove(&v4);
        }
        if !self.other.is_empty() {
            self.other.retain(|k, _| k.0 != ip);
        }
    }
}
/// A probe in flight.
struct Pending {
    /// Its first SYN's sequence number: the probe's identity (its
    /// deadline's and its claim's).
    seq: u32,
    /// The sequence number of the SYN last sent, which its answer
    /// acknowledges (plus one): `seq`, or the one sent again past an older
    /// connection's ([`syn::Segment::BareAck`]).
    sent: u32,
    /// Who waits for it.
    waiter: Waiter,
}

pub use super::conn::Done;

/// A launched probe, by when it times out: (destination, our port, its
/// sequence number).
type Deadline = (SocketAddr, u16, u32);

/// Who waits for a probe's answer.
enum Waiter {
    /// A probe's future ([`HalfOpen::probe`]).
    Future(oneshot::Sender<(Answer, u32)>),
    /// The scheduler ([`HalfOpen::launch`]): no task and no timer of the
    /// probe's own; the source's receiver tells it, or its timeout task.
    /// Kept in place (a box was an allocation and a free per probe).
    Report(Report),
}

/// A launched probe: whom to tell. Our end of it is the source's address
/// and the port it holds; its route, if one was looked up, is the
/// destination's (forgotten after a timeout).
struct Report {
    id: usize,
    started: Instant,
    tx: mpsc::UnboundedSender<Done>,
    /// Its source address came from a route (not `bindto`).
    routed: bool,
}

impl Report {
    fn tell(self, r: Result<(), Failure>) {
        let _ = self.tx.send((self.id, r, self.started, Instant::now()));
    }
}

fn refused() -> Failure {
    Failure::Connect(io::Error::from_raw_os_error(nix::libc::ECONNREFUSED))
}

/// The half-open prober: its sources, opened at first need.
#[derive(Default)]
pub struct HalfOpen {
    sources: Mutex<FxMap<Key, Option<Arc<Source>>>>,
    /// A raw socket could not be opened when the checks started (told
    /// then): every probe connects in full.
    denied: std::sync::OnceLock<bool>,
    routes: Routes,
    seq: AtomicU64,
    /// The engine's beat, which the sources' reads and timeouts keep.
    beat: Arc<SharedBeat>,
}

/// One raw socket, its ports and the probes in flight on it.
struct Source {
    lo: u16,
    hi: u16,
    /// The TCP sockets holding our ports (bound, never listening): the
    /// kernel resets what a backend sends them. Empty when `bind_port` was
    /// already taken: then we send the RST.
    _held: Vec<Socket>,
    own_rst: bool,
    /// Keyed by (destination, our port): the keys are the configuration's
    /// destinations (a reply only looks one up), so the fast hash serves.
    inflight: Mutex<FxMap<(SocketAddr, u16), Pending>>,
    /// Launched probes by their deadline (nanoseconds from `clock`'s
    /// epoch: 8 bytes, not an `Instant`'s 16, in an entry a probe kept for
    /// its `connect_timeout`), earliest first. An entry whose probe was
    /// answered is passed over when it comes due.
    deadlines: Mutex<Timeline<u64, Deadline>>,
    /// Wakes the timeout task when a deadline earlier than the one it
    /// sleeps to came.
    earlier: Arc<Notify>,
    /// The deadline the timeout task sleeps to (on the beat), as
    /// nanoseconds from `clock`'s epoch (`u64::MAX`: none); written and
    /// read under `deadlines`' lock.
    /// A launch wakes the task only for an earlier one: at a thousand
    /// probes a second, with each answered probe's deadline gone at once,
    /// "earlier than all others" was nearly every launch, a wake-up each.
    armed: AtomicU64,
    clock: Clock,
    /// Packets queued for the sender and not yet sent.
    queued: Arc<AtomicUsize>,
    /// The millisecond (of `clock`) of the last SYN sent at once.
    lone_at: AtomicU64,
    /// Wakes the reader when a probe goes out with none in flight before.
    reading: Arc<Notify>,
    /// The raw socket, read without readiness events (see [`tasks::recv_loop`]).
    raw: Arc<Socket>,
    /// It is an IPv6 socket (replies come without their IP header).
    v6: bool,
    /// Our address, the source of its SYNs.
    addr: IpAddr,
    routes: Routes,
    /// When the reader and the timeout task wake.
    beat: Arc<SharedBeat>,
    tx: mpsc::UnboundedSender<(SocketAddr, Packet)>,
    /// Its three tasks, spawned once the source is whole (set once).
    tasks: std::sync::OnceLock<[tokio::task::JoinHandle<()>; 3]>,
}

impl Source {
    /// Sends `packet` to `dst`: at once when it is alone (nothing queued
    /// for the sender, and none sent so this millisecond), else through the
    /// sender's batches. At a thousand probes a second, a wake-up of the
    /// sender per SYN cost more than the `sendto`; at tens of thousands, one
    /// `sendto` a millisecond leaves the rest to `sendmmsg`.
    fn send(&self, dst: SocketAddr, packet: Packet) {
        let ms = self.clock.tick(Instant::now()) / 1_000_000;
        if self.queued.load(Ordering::Acquire) == 0 && self.lone_at.swap(ms, Ordering::AcqRel) != ms
        {
            let to = SockAddr::from(SocketAddr::new(dst.ip(), 0));
            match self.raw.send_to(packet.bytes(), &to) {
                Ok(_) => return,
                // As the sender does: that SYN is dropped, its probe times
                // out.
                Err(e) if e.kind() != io::ErrorKind::WouldBlock => {
                    log::debug!("half-open: sendto {dst}: {e}");
                    return;
                }
                Err(_) => {}
            }
        }
        self.queued.fetch_add(1, Ordering::AcqRel);
        // A stopped sender: the probe times out.
        let _ = self.tx.send((dst, packet));
    }
}

impl Drop for Source {
    fn drop(&mut self) {
        for t in self.tasks.get().into_iter().flatten() {
            t.abort();
        }
    }
}

/// One packet to send: a SYN or RST, after its IPv4 header if any.
#[derive(Clone, Copy)]
struct Packet {
    buf: [u8; 20 + syn::SYN_LEN],
    len: usize,
}

impl Packet {
    fn new(src: SocketAddr, dst: SocketAddr, segment: &[u8]) -> Packet {
        let mut buf = [0u8; 20 + syn::SYN_LEN];
        let mut len = 0;
        if let (IpAddr::V4(s), IpAddr::V4(d)) = (src.ip(), dst.ip()) {
            buf[..20].copy_from_slice(&syn::ipv4_header(s, d, segment.len()));
            len = 20;
        }
        buf[len..len + segment.len()].copy_from_slice(segment);
        Packet {
            buf,
            len: len + segment.len(),
        }
    }

    fn bytes(&self) -> &[u8] {
        &self.buf[..self.len]
    }
}

/// Takes a probe's place in flight back when it ends, however it ends.
struct Claim<'a> {
    src: &'a Source,
    key: (SocketAddr, u16),
    seq: u32,
}

impl Drop for Claim<'_> {
    fn drop(&mut self) {
        let mut inflight = self.src.inflight.lock().expect("inflight");
        // A reply took it out already, and another probe of the same
        // destination may have taken the place since: leave that one.
        if inflight.get(&self.key).is_some_and(|p| p.seq == self.seq) {
            inflight.remove(&self.key);
        }
    }
}

impl HalfOpen {
    /// A prober with no source open yet, its timers on `beat`.
    pub fn new(beat: Arc<SharedBeat>) -> HalfOpen {
        HalfOpen {
            beat,
            ..HalfOpen::default()
        }
    }

    /// Finds out whether raw sockets may be opened, so that a missing
    /// capability is reported (once) when the checks start; `c` then
    /// connects in full. No route is asked here (tens of thousands of
    /// checks add no lookup to the start): the sockets open at first use.
    pub fn prepare(&self, c: &ConnOpts) {
        self.denied.get_or_init(|| {
            let domain = match c.dst.ip() {
                IpAddr::V4(_) => Domain::IPV4,
                IpAddr::V6(_) => Domain::IPV6,
            };
            match Socket::new(domain, Type::RAW.cloexec(), Some(Protocol::TCP)) {
                Ok(_) => false,
                Err(e) => {
                    log_unopened(c, &e);
                    true
                }
            }
        });
    }

    /// One half-open probe of `c`'s destination; `None` when this source
    /// cannot probe half-open (then the caller connects in full).
    pub async fn probe(&self, c: &ConnOpts) -> Option<Result<(), Failure>> {
        let (key, from) = match self.key(c) {
            Ok(k) => k,
            Err(e) => return Some(Err(Failure::Socket(e))),
        };
        let src = self.source(&key, c)?;
        Some(self.run(&src, from, c).await)
    }

    /// Starts one half-open probe of `c`'s destination as check `id` of
    /// the engine, whose scheduler `tx` is then told its end: no task and
    /// no timer of its own. False when this source cannot probe half-open
    /// (then the caller connects in full).
    pub fn launch(&self, c: &ConnOpts, id: usize, tx: &mpsc::UnboundedSender<Done>) -> bool {
        let started = Instant::now();
        let (key, from) = match self.key(c) {
            Ok(k) => k,
            Err(e) => {
                let _ = tx.send((id, Err(Failure::Socket(e)), started, started));
                return true;
            }
        };
        let Some(src) = self.source(&key, c) else {
            return false;
        };
        let seq = self.next_seq();
        let report = Report {
            id,
            started,
            tx: tx.clone(),
            routed: bound_ip(c).is_none(),
        };
        let claimed = src.claim(c.dst, seq, |_| Waiter::Report(report));
        let port = match claimed {
            Ok(p) => p,
            Err((e, w)) => {
                if let Waiter::Report(r) = w {
                    r.tell(Err(e));
                }
                return true;
            }
        };
        let deadline = started + c.timeout();
        {
            let mut d = src.deadlines.lock().expect("deadlines");
            d.push(src.clock.tick(deadline), (c.dst, port, seq));
            let at = src.clock.tick(src.beat.get().at(deadline));
            if at < src.armed.load(Ordering::Relaxed) {
                src.armed.store(at, Ordering::Relaxed);
                src.earlier.notify_one();
            }
        }
        let from = SocketAddr::new(from, port);
        let packet = Packet::new(from, c.dst, &syn::syn(from, c.dst, seq));
        src.send(c.dst, packet);
        true
    }

    async fn run(&self, src: &Source, from: IpAddr, c: &ConnOpts) -> Result<(), Failure> {
        let seq = self.next_seq();
        let (done, answer) = oneshot::channel();
        let port = src
            .claim(c.dst, seq, |_| Waiter::Future(done))
            .map_err(|(e, _)| e)?;
        let _claim = Claim {
            src,
            key: (c.dst, port),
            seq,
        };
        let from = SocketAddr::new(from, port);
        let packet = Packet::new(from, c.dst, &syn::syn(from, c.dst, seq));
        src.send(c.dst, packet);
        match tokio::time::timeout(c.timeout(), answer).await {
            Ok(Ok((Answer::Open, sent))) => {
                if src.own_rst {
                    let rst = syn::rst(from, c.dst, sent.wrapping_add(1));
                    src.send(c.dst, Packet::new(from, c.dst, &rst));
                }
                Ok(())
            }
            Ok(Ok((Answer::Refused, _))) => Err(refused()),
            Ok(Err(_)) => Err(Failure::Socket(io::Error::other(
                "half-open receiver stopped",
            ))),
            Err(_) => {
                // Ask the route again next time: a source that moved gets
                // no answer (as a launched probe's timeout does).
                if bound_ip(c).is_none() {
                    self.routes.lock().expect("routes").forget(c.dst.ip());
                }
                Err(Failure::ConnectTimeout)
            }
        }
    }

    fn next_seq(&self) -> u32 {
        // Unpredictable initial sequence numbers, as a connect's: a keyed
        // hash of a counter (std's per-process random keys).
        let n = self.seq.fetch_add(1, Ordering::Relaxed);
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u64(n);
        h.finish() as u32
    }

    /// The socket `c` probes from, and its source address: `bindto`, else
    /// the address the kernel picks for the destination (asked once per
    /// destination).
    fn key(&self, c: &ConnOpts) -> io::Result<(Key, IpAddr)> {
        let src = match bound_ip(c) {
            Some(ip) => ip,
            None => {
                let rk = route_key(c);
                let cached = self.routes.lock().expect("routes").get(&rk);
                match cached {
                    Some(ip) => ip,
                    None => {
                        let ip = route_source(c)?;
                        self.routes.lock().expect("routes").insert(rk, ip);
                        ip
                    }
                }
            }
        };
        let key = Key {
            src,
            port: c.bind().map(|b| b.port()).unwrap_or(0),
            bind_if: c.bind_if().map(Into::into),
            fwmark: c.fwmark(),
        };
        Ok((key, src))
    }

    fn source(&self, key: &Key, c: &ConnOpts) -> Option<Arc<Source>> {
        let mut sources = self.sources.lock().expect("sources");
        if let Some(s) = sources.get(key) {
            return s.clone();
        }
        if self.denied.get() == Some(&true) {
            return None;
        }
        let s = match Source::open(key, self.routes.clone(), self.beat.clone()) {
            Ok(s) => Some(s),
            Err(e) => {
                log_unopened(c, &e);
                None
            }
        };
        sources.insert(key.clone(), s.clone());
        s
    }
}

/// `bindto`'s address, when it names one: the probes' source, no route
/// asked.
fn bound_ip(c: &ConnOpts) -> Option<IpAddr> {
    c.bind().map(|b| b.ip()).filter(|ip| !ip.is_unspecified())
}

/// How `c`'s route is looked up (and cached): destination, device, mark.
fn route_key(c: &ConnOpts) -> RouteKey {
    (c.dst.ip(), c.bind_if().map(Into::into), c.fwmark())
}

fn log_unopened(c: &ConnOpts, e: &io::Error) {
    let hint = if e.kind() == io::ErrorKind::PermissionDenied {
        " (CAP_NET_RAW is needed)"
    } else {
        ""
    };
    log::error!(
        "TCP_CHECK half_open to {}: cannot open a raw socket: {e}{hint} - connecting in full instead",
        c.dst
    );
}

/// The source address the kernel routes `c`'s destination from (with its
/// device and mark): a UDP socket connected there tells.
fn route_source(c: &ConnOpts) -> io::Result<IpAddr> {
    let s = c.socket(Type::DGRAM, Some(Protocol::UDP))?;
    s.connect(&SockAddr::from(c.dst))?;
    s.local_addr()?
        .as_socket()
        .map(|a| a.ip())
        .ok_or_else(|| io::Error::other("no source address"))
}

impl Source {
    /// Takes a free port of ours for a probe of `dst`, with who waits on
    /// it; every port busy for `dst` gives the waiter back with the error.
    fn claim(
        &self,
        dst: SocketAddr,
        seq: u32,
        waiter: impl FnOnce(u16) -> Waiter,
    ) -> Result<u16, (Failure, Waiter)> {
        let mut inflight = self.inflight.lock().expect("inflight");
        let span = self.hi - self.lo + 1;
        let start = (seq % u32::from(span)) as u16;
        let free = (0..span)
            .map(|i| self.lo + (start + i) % span)
            .find(|p| !inflight.contains_key(&(dst, *p)));
        let w = waiter(free.unwrap_or(0));
        let Some(port) = free else {
            // Every port already has a probe of this destination out.
            return Err((
                Failure::Socket(io::Error::new(
                    io::ErrorKind::AddrInUse,
                    "every half-open probe port is busy for this destination",
                )),
                w,
            ));
        };
        if inflight.is_empty() {
            self.reading.notify_one();
        }
        inflight.insert(
            (dst, port),
            Pending {
                seq,
                sent: seq,
                waiter: w,
            },
        );
        Ok(port)
    }

    /// A reply's probe answered (to its SYN numbered `sent`, from our
    /// `port`): its waiter told.
    fn answered(&self, w: Waiter, answer: Answer, dst: SocketAddr, port: u16, sent: u32) {
        match w {
            Waiter::Future(done) => {
                let _ = done.send((answer, sent));
            }
            Waiter::Report(r) => {
                let result = match answer {
                    Answer::Open => {
                        if self.own_rst {
                            let us = SocketAddr::new(self.addr, port);
                            let rst = syn::rst(us, dst, sent.wrapping_add(1));
                            self.send(dst, Packet::new(us, dst, &rst));
                        }
                        Ok(())
                    }
                    Answer::Refused => Err(refused()),
                };
                r.tell(result);
            }
        }
    }

    fn open(key: &Key, routes: Routes, beat: Arc<SharedBeat>) -> io::Result<Arc<Source>> {
        let v6 = key.src.is_ipv6();
        let domain = if v6 { Domain::IPV6 } else { Domain::IPV4 };
        let raw = Socket::new(
            domain,
            Type::RAW.nonblocking().cloexec(),
            Some(Protocol::TCP),
        )?;
        if let Some(dev) = &key.bind_if {
            raw.bind_device(Some(dev.as_bytes()))?;
        }
        if let Some(mark) = key.fwmark {
            raw.set_mark(mark)?;
        }
        // The source of every SYN, and only replies to it are read.
        if !v6 {
            raw.set_header_included_v4(true)?;
        }
        raw.bind(&SockAddr::from(SocketAddr::new(key.src, 0)))?;
        // Replies come in bursts (every check of a start is due at once):
        // room for tens of thousands, beyond rmem_max when we may.
        if nix::sys::socket::setsockopt(&raw, nix::sys::socket::sockopt::RcvBufForce, &RCVBUF)
            .is_err()
        {
            let _ = raw.set_recv_buffer_size(RCVBUF);
        }
        let (held, lo, hi, own_rst) = hold_ports(key)?;
        raw.attach_filter(&syn::filter(v6, lo, hi))?;
        // Replies that came before the filter was in place: drop them.
        let mut junk = [std::mem::MaybeUninit::<u8>::uninit(); 128];
        while raw.recv(&mut junk).is_ok() {}
        // Not in the I/O driver's epoll set at all: the reader polls while
        // probes are out (recv_loop), and the sender tries a full buffer
        // again later (send_loop). Registered, each reply queued and each
        // SYN's buffer freed woke the epoll entry (taking its lock), and
        // for writing each freed buffer made a readiness event: a wake-up
        // of the I/O driver per probe.
        let raw = Arc::new(raw);
        let (tx, rx) = mpsc::unbounded_channel();
        let earlier = Arc::new(Notify::new());
        let reading = Arc::new(Notify::new());
        let queued = Arc::new(AtomicUsize::new(0));
        let src = Arc::new(Source {
            armed: u64::MAX.into(),
            clock: Clock::from(Instant::now()),
            queued: queued.clone(),
            lone_at: u64::MAX.into(),
            lo,
            hi,
            _held: held,
            own_rst,
            inflight: Mutex::new(FxMap::default()),
            deadlines: Mutex::new(Timeline::new()),
            earlier: earlier.clone(),
            reading: reading.clone(),
            raw: raw.clone(),
            v6,
            addr: key.src,
            routes,
            beat,
            tx,
            tasks: std::sync::OnceLock::new(),
        });
        // Spawned after the source is made, never from inside
        // `Arc::new_cyclic`: on a runtime of two threads the other one
        // polled a task at once, its weak reference could not be upgraded
        // yet, and the task ended. A reader so lost left every probe to
        // its timeout (a third of the starts of 12,500 probes every 0.2 s
        // ran at 2,500 checks a second, against 61,000).
        let me = Arc::downgrade(&src);
        let _ = src.tasks.set([
            tokio::spawn(tasks::send_loop(raw, rx, queued)),
            tokio::spawn(tasks::recv_loop(me.clone(), reading)),
            tokio::spawn(tasks::timeout_loop(me, earlier)),
        ]);
        Ok(src)
    }
}

/// Binds TCP sockets (never listening) to `PORTS` consecutive ports of the
/// key's family, or to its `bind_port`: no local socket can take them, and
/// the kernel resets a SYN-ACK sent to them. Returns them, the range, and
/// whether we must send the RST ourselves (a `bind_port` already taken).
fn hold_ports(key: &Key) -> io::Result<(Vec<Socket>, u16, u16, bool)> {
    let any = match key.src {
        IpAddr::V4(_) => IpAddr::V4(Ipv4Addr::UNSPECIFIED),
        IpAddr::V6(_) => IpAddr::V6(Ipv6Addr::UNSPECIFIED),
    };
    let bind = |port: u16| -> io::Result<Socket> {
        let s = Socket::new(
            Domain::for_address(SocketAddr::new(any, 0)),
            Type::STREAM.cloexec(),
            Some(Protocol::TCP),
        )?;
        if any.is_ipv6() {
            s.set_only_v6(true)?;
        }
        // A port whose old connections linger in TIME_WAIT (a checker that
        // closed with FIN ran before) is free for us: their 4-tuples are
        // not ours to reuse, and a SYN-ACK still reaches the raw socket.
        s.set_reuse_address(true)?;
        s.bind(&SockAddr::from(SocketAddr::new(any, port)))?;
        Ok(s)
    };
    if key.port != 0 {
        return Ok(match bind(key.port) {
            Ok(s) => (vec![s], key.port, key.port, false),
            Err(_) => (Vec::new(), key.port, key.port, true),
        });
    }
    // The widest range found, should no try give all PORTS.
    let mut best: Vec<Socket> = Vec::new();
    let mut best_lo = 0;
    // Above the kernel's ephemeral range first (61000-65535 by default):
    // a connect() never takes those ports, so no checker's old connection
    // (a full-connect keepalived's, by the hundred thousand in TIME_WAIT)
    // shares a 4-tuple with a probe, and services seldom listen there.
    // From inside the range, a burst of connects left probes answered by
    // resets or by rate-limited ACKs: live servers called down. Then, as
    // before, a range the kernel picks.
    let above = reserved_starts(ephemeral_high());
    for at in above
        .into_iter()
        .map(Some)
        .chain(std::iter::repeat_n(None, 16))
    {
        let first = match at {
            Some(p) => match bind(p) {
                Ok(s) => s,
                Err(_) => continue,
            },
            None => bind(0)?,
        };
        let lo = first
            .local_addr()?
            .as_socket()
            .map(|a| a.port())
            .unwrap_or(0);
        if lo == 0 || lo > u16::MAX - PORTS {
            continue;
        }
        let mut held = vec![first];
        for p in lo + 1..lo + PORTS {
            match bind(p) {
                Ok(s) => held.push(s),
                Err(_) => break,
            }
        }
        if held.len() as u16 == PORTS {
            let hi = lo + PORTS - 1;
            return Ok((held, lo, hi, false));
        }
        if held.len() > best.len() {
            best = held;
            best_lo = lo;
        }
    }
    // Fewer ports only limit how many probes of one destination can be
    // out at once; none at all is an error (then connects in full).
    if best.is_empty() {
        return Err(io::Error::new(
            io::ErrorKind::AddrInUse,
            "no free port to probe half-open from",
        ));
    }
    let hi = best_lo + best.len() as u16 - 1;
    Ok((best, best_lo, hi, false))
}

/// The high end of the kernel's ephemeral port range (60999 unless set).
fn ephemeral_high() -> u16 {
    std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|t| t.split_whitespace().nth(1)?.parse().ok())
        .unwrap_or(60999)
}

/// Where to try a range of [`PORTS`] above the ephemeral range's `high`
/// end: a few places spread over (`high`, 65535], from a per-process start
/// (two daemons on one host try different places first). None when the
/// ephemeral range reaches the top.
fn reserved_starts(high: u16) -> Vec<u16> {
    let Some(span) = (u16::MAX - PORTS + 1)
        .checked_sub(high)
        .filter(|&s| s > 2 * PORTS)
    else {
        return Vec::new();
    };
    let seed = std::process::id().wrapping_mul(2_654_435_761);
    (0..8u32)
        .map(|i| high + 1 + (seed.wrapping_add(i.wrapping_mul(7_919)) % u32::from(span - 1)) as u16)
        .collect()
}

#[cfg(test)]
mod port_tests {
    use super::*;

    #[test]
    fn probe_ports_are_tried_above_the_ephemeral_range_first() {
        for high in [60999u16, 50000, 65000] {
            let starts = reserved_starts(high);
            assert_eq!(starts.len(), 8);
            for s in starts {
                assert!(s > high && s <= u16::MAX - PORTS + 1, "{s} above {high}");
            }
        }
        // A range reaching the top leaves nothing above it.
        assert!(reserved_starts(65530).is_empty());
        assert!(reserved_starts(u16::MAX).is_empty());
    }
}
