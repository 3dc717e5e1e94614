//! The three tasks of each half-open source (one raw socket): the sender
//! (queued SYNs out in `sendmmsg` batches), the paced reader (replies in
//! `recvmmsg` batches, handed to the probes waiting for them) and the
//! timeout task (`connect_timeout` ends the probes no reply came for).
//!
//! Under [`super`], which opens the source and spawns these; the packets'
//! bytes are [`super::super::syn`]'s.

use super::{Deadline, Packet, Source, Waiter, BATCH, SWEEP_SLACK};
use crate::check::conn::Failure;
use crate::check::syn::{self, Segment};
use nix::sys::socket::{
    recvmmsg, sendmmsg, ControlMessage, MsgFlags, MultiHeaders, SockaddrLike, SockaddrStorage,
};
use socket2::Socket;
use std::collections::hash_map::Entry;
use std::io::{self, IoSlice, IoSliceMut};
use std::net::{IpAddr, SocketAddr};
use std::os::fd::AsRawFd;
use std::sync::Arc;
use tokio::sync::{mpsc, Notify};
use tokio::time::Instant;

/// How long a sender whose socket's buffer is full waits to try again.
const FULL_RETRY: std::time::Duration = std::time::Duration::from_millis(1);

/// Sends what is queued, in batches of up to [`BATCH`] per `sendmmsg`.
/// A full send buffer (rare: a SYN's buffer is freed as it leaves) is
/// tried again a millisecond later; the socket is not in the I/O driver's
/// epoll set (see [`Source::open`]).
pub(super) async fn send_loop(
    fd: Arc<Socket>,
    mut rx: mpsc::UnboundedReceiver<(SocketAddr, Packet)>,
    queued: Arc<std::sync::atomic::AtomicUsize>,
) {
    let mut batch: Vec<(SocketAddr, Packet)> = Vec::with_capacity(BATCH);
    while let Some(first) = rx.recv().await {
        batch.push(first);
        while batch.len() < BATCH {
            match rx.try_recv() {
                Ok(p) => batch.push(p),
                Err(_) => break,
            }
        }
        let mut sent = 0;
        while sent < batch.len() {
            let rest = &batch[sent..];
            match send_batch(&fd, rest) {
                Ok(n) => sent += n.max(1),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    tokio::time::sleep(FULL_RETRY).await;
                }
                Err(e) => {
                    // A destination the kernel refuses (no route) must not
                    // hold up the others: that SYN is dropped and its probe
                    // times out.
                    log::debug!("half-open: sendmmsg to {}: {e}", rest[0].0);
                    sent += 1;
                }
            }
        }
        // Sent or dropped: a launch may send at once again.
        queued.fetch_sub(batch.len(), std::sync::atomic::Ordering::AcqRel);
        batch.clear();
    }
}

fn send_batch(s: &Socket, batch: &[(SocketAddr, Packet)]) -> io::Result<usize> {
    // Made per batch: its pointers keep it on one thread (not `Send`).
    let mut hdrs = MultiHeaders::<SockaddrStorage>::preallocate(batch.len(), None);
    let iovs: Vec<[IoSlice<'_>; 1]> = batch
        .iter()
        .map(|(_, p)| [IoSlice::new(p.bytes())])
        .collect();
    // A raw socket's destination port is not a TCP port: 0.
    let addrs: Vec<Option<SockaddrStorage>> = batch
        .iter()
        .map(|(d, _)| Some(SockaddrStorage::from(SocketAddr::new(d.ip(), 0))))
        .collect();
    let none: [ControlMessage<'_>; 0] = [];
    let r = sendmmsg(
        s.as_raw_fd(),
        &mut hdrs,
        &iovs,
        &addrs,
        none,
        MsgFlags::MSG_DONTWAIT,
    )
    .map_err(io::Error::from)?;
    Ok(r.count())
}

/// The reader's pace while probes are out: at the busiest, and at the
/// quietest.
const PACE: std::time::Duration = std::time::Duration::from_millis(1);
const PACE_MAX: std::time::Duration = std::time::Duration::from_millis(8);
/// Replies a read should find: fewer, and the pace slows (doubles); more
/// than [`MANY`], and it quickens (halves).
const FEW: usize = 8;
const MANY: usize = 32;

/// Reads replies while probes are out, at a pace between [`PACE`] and
/// [`PACE_MAX`] that finds [`FEW`] to [`MANY`] replies a read where it can,
/// and sleeps while none is out: not woken per reply. At tens of thousands
/// of probes a second, the wake-ups of a reader woken by each reply (the
/// socket's, the I/O driver's) were a fifth of the prober's cost; at a
/// thousand a second, a read every millisecond found one reply each and
/// was half of it. A reply is read up to a pace late (its latency so
/// measured), and the timeout task reads what came before it judges a
/// probe silent.
pub(super) async fn recv_loop(src: std::sync::Weak<Source>, reading: Arc<Notify>) {
    let mut pace = PACE;
    loop {
        let notified = reading.notified();
        tokio::pin!(notified);
        notified.as_mut().enable();
        let (out, beat) = {
            let Some(s) = src.upgrade() else { return };
            let got = s.read();
            if got > MANY {
                pace = (pace / 2).max(PACE);
            } else if got < FEW {
                pace = (pace * 2).min(PACE_MAX);
            }
            let out = !s.inflight.lock().expect("inflight").is_empty();
            (out, s.beat.get())
        };
        if !out {
            notified.await;
            pace = PACE;
        }
        tokio::time::sleep_until(beat.at(Instant::now() + pace)).await;
    }
}

impl Source {
    /// Reads every reply waiting, in batches of up to [`BATCH`] per
    /// `recvmmsg`, and hands each to the probe waiting for it. Returns how
    /// many came.
    fn read(&self) -> usize {
        let recv = if self.v6 { &RECV6 } else { &RECV4 };
        recv.with_borrow_mut(|(hdrs, bufs)| self.read_with(hdrs, bufs))
    }

    fn read_with(&self, hdrs: &mut MultiHeaders<SockaddrStorage>, bufs: &mut Bufs) -> usize {
        let mut any = 0;
        // A batch's answered probes and SYNs to send again.
        let mut answers: Vec<(Waiter, syn::Answer, SocketAddr, u16, u32)> = Vec::new();
        let mut again: Vec<(SocketAddr, u16, u32, u32)> = Vec::new();
        loop {
            let got = match recv_batch(&self.raw, hdrs, bufs) {
                Ok(g) => g,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return any,
                Err(e) => {
                    log::debug!("half-open: recvmmsg: {e}");
                    return any;
                }
            };
            let full = got.len() == BATCH;
            any += got.len();
            // The batch's replies matched under one hold of the probes'
            // lock, their waiters told and SYNs sent again after it: a hold
            // per reply, against the scheduler's launches on another
            // thread, slowed the reader below the replies' rate (at 60,000
            // a second on two threads, until they were read seconds late
            // and the probes timed out).
            {
                let mut inflight = self.inflight.lock().expect("inflight");
                for (i, (len, from)) in got.into_iter().enumerate() {
                    let pkt = &bufs[i][..len.min(syn::SNAP as usize)];
                    let reply = match (self.v6, from) {
                        (true, Some(IpAddr::V6(a))) => syn::parse_v6(a, pkt),
                        (false, _) => syn::parse_v4(pkt),
                        _ => None,
                    };
                    let Some(r) = reply else { continue };
                    let key = (r.from, r.to_port);
                    let Some(p) = inflight.get_mut(&key) else {
                        continue;
                    };
                    match r.segment {
                        Segment::Answer(a) if p.sent.wrapping_add(1) == r.ack => {
                            if let Some(p) = inflight.remove(&key) {
                                answers.push((p.waiter, a, r.from, r.to_port, p.sent));
                            }
                        }
                        // The backend holds an older connection between
                        // these ports and took our SYN for part of it (a
                        // full-connect checker's in TIME_WAIT, for one, if
                        // the backend closed first). A connect's kernel
                        // resets that ACK and sends its SYN again a second
                        // later; ours resets it too (the port is held, not
                        // listening), and the SYN goes again now, numbered
                        // past the old connection's (r.ack: its next
                        // number), which a TIME_WAIT takes as a new one even
                        // where resets do not end it (RFC 1337). Once per
                        // probe: a second such ACK leaves it to its timeout.
                        Segment::BareAck if p.sent == p.seq => {
                            // Past the old connection by a part of our own
                            // unpredictable number, not by a known step.
                            p.sent = r.ack.wrapping_add(1 + (p.seq >> 12));
                            again.push((r.from, r.to_port, r.ack, p.sent));
                        }
                        _ => {}
                    }
                }
            }
            for (w, a, from, port, sent) in answers.drain(..) {
                self.answered(w, a, from, port, sent);
            }
            for (from, port, ack, sent) in again.drain(..) {
                let us = SocketAddr::new(self.addr, port);
                if self.own_rst {
                    let rst = syn::rst(us, from, ack);
                    self.send(from, Packet::new(us, from, &rst));
                }
                let syn = syn::syn(us, from, sent);
                self.send(from, Packet::new(us, from, &syn));
            }
            // Replies come in the order the SYNs left: the deadlines of the
            // probes just answered are mostly first in line, and go now
            // rather than at their connect_timeout (at 20,000 probes a
            // second and 5 s, 100,000 entries held for nothing). Deadlines,
            // then probes: the locks' one order.
            let mut d = self.deadlines.lock().expect("deadlines");
            let inflight = self.inflight.lock().expect("inflight");
            let answered = |&(dst, port, seq): &Deadline| {
                inflight.get(&(dst, port)).is_none_or(|p| p.seq != seq)
            };
            d.prune_front(answered);
            // A probe that waits for its timeout, first in line, holds the
            // answered ones behind it until then (100,000 at 20,000 a
            // second and 5 s: 7 to 25 MB, as a start's timing fell): they
            // all go once they are most of the line (each sweep at least
            // halves it, so a probe pays for it O(1)).
            if d.len() > 2 * inflight.len() + SWEEP_SLACK {
                d.retain_wanted(answered);
            }
            if !full {
                return any;
            }
        }
    }
}

/// Ends the launched probes no answer came for by their deadline
/// (`connect_timeout`), asking their route again next time (a source that
/// moved gets no answer).
pub(super) async fn timeout_loop(src: std::sync::Weak<Source>, earlier: Arc<Notify>) {
    loop {
        // Taken before the queue is read: a deadline pushed after the read
        // still wakes us (its permit is kept).
        let notified = earlier.notified();
        tokio::pin!(notified);
        notified.as_mut().enable();
        let at = {
            let Some(s) = src.upgrade() else { return };
            let now = Instant::now();
            // What came before the deadline is an answer, not silence.
            s.read();
            let mut expired = Vec::new();
            let next = {
                let mut d = s.deadlines.lock().expect("deadlines");
                while let Some((_, e)) = d.pop_due(s.clock.tick(now)) {
                    expired.push(e);
                }
                let next = d.peek().map(|t| s.beat.get().at(s.clock.instant(t)));
                s.armed.store(
                    next.map_or(u64::MAX, |t| s.clock.tick(t)),
                    std::sync::atomic::Ordering::Relaxed,
                );
                next
            };
            // Most entries are of probes answered long since: all looked
            // up under one hold of the probes' lock, not one each.
            let mut silent = Vec::new();
            {
                let mut inflight = s.inflight.lock().expect("inflight");
                for (dst, port, seq) in expired {
                    let Entry::Occupied(e) = inflight.entry((dst, port)) else {
                        continue;
                    };
                    if e.get().seq == seq && matches!(e.get().waiter, Waiter::Report(_)) {
                        if let Waiter::Report(r) = e.remove().waiter {
                            silent.push((dst, r));
                        }
                    }
                }
            }
            for (dst, r) in silent {
                if r.routed {
                    s.routes.lock().expect("routes").forget(dst.ip());
                }
                r.tell(Err(Failure::ConnectTimeout));
            }
            next
        };
        match at {
            Some(at) => {
                tokio::select! {
                    _ = tokio::time::sleep_until(at) => {}
                    _ = &mut notified => {}
                }
            }
            None => notified.await,
        }
    }
}

/// A batch's buffers for the replies.
type Bufs = [[u8; syn::SNAP as usize]; BATCH];

/// A thread's headers and buffers for `recvmmsg`.
type Recv = std::cell::RefCell<(MultiHeaders<SockaddrStorage>, Box<Bufs>)>;

fn recv_state() -> Recv {
    std::cell::RefCell::new((
        MultiHeaders::preallocate(BATCH, None),
        Box::new([[0u8; syn::SNAP as usize]; BATCH]),
    ))
}

thread_local! {
    /// Each thread's headers and buffers for `recvmmsg`, made once: made
    /// per read (17 KB zeroed), they were a tenth of the prober's own
    /// instructions at a thousand probes a second. The headers hold
    /// pointers, and so stay on their thread. One set per family: the
    /// kernel writes each source address's length into its header, which
    /// the next call keeps, and an IPv6 address read into a header an
    /// IPv4 one shortened was cut (the probe then timed out).
    static RECV4: Recv = recv_state();
    static RECV6: Recv = recv_state();
}

fn recv_batch(
    s: &Socket,
    hdrs: &mut MultiHeaders<SockaddrStorage>,
    bufs: &mut Bufs,
) -> io::Result<Vec<(usize, Option<IpAddr>)>> {
    let mut iovs: Vec<[IoSliceMut<'_>; 1]> =
        bufs.iter_mut().map(|b| [IoSliceMut::new(b)]).collect();
    let r = recvmmsg(
        s.as_raw_fd(),
        hdrs,
        iovs.iter_mut(),
        MsgFlags::MSG_DONTWAIT,
        None,
    )
    .map_err(io::Error::from)?;
    Ok(r.map(|m| {
        let from = m.address.and_then(|a: SockaddrStorage| match a.family() {
            Some(nix::sys::socket::AddressFamily::Inet6) => {
                a.as_sockaddr_in6().map(|s| IpAddr::V6(s.ip()))
            }
            Some(nix::sys::socket::AddressFamily::Inet) => {
                a.as_sockaddr_in().map(|s| IpAddr::V4(s.ip()))
            }
            _ => None,
        });
        (m.bytes, from)
    })
    .collect())
}
