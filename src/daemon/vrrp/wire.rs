//! The VRRP subsystem's advert sockets (I/O shell), as keepalived 2.2.7
//! keeps them: one raw socket per interface, family, protocol and mode
//! (group, source, unicast hop limit), shared by every instance that
//! sends and receives alike, opened by the first and closed with the
//! last; and the [`Inbox`] the runner reads them through, one packet at a
//! time into one buffer. With a socket per instance every advert on a
//! link was read once per instance. And the runner's alarm, a timerfd:
//! one wake-up at the microsecond of each deadline. Part of [`super`].

use crate::vrrp::dispatch::Rx;
use crate::vrrp::net::{AdvertSocket, Datagram, Iface, Received, RecvBuffer};
use crate::vrrp::run::{Alarm, Inbox};
use nix::sys::time::TimeSpec;
use nix::sys::timerfd::{ClockId, Expiration, TimerFd, TimerFlags, TimerSetTimeFlags};
use std::collections::HashMap;
use std::io;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use tokio::io::unix::AsyncFd;

/// What makes two instances' sockets the same socket: everything
/// [`AdvertSocket::open`] is given.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(super) struct Key {
    pub ifname: String,
    pub ipv6: bool,
    pub proto: u8,
    /// The group joined (multicast mode).
    pub group: Option<IpAddr>,
    /// The source bound (IPv6).
    pub bind: Option<IpAddr>,
    /// `unicast_ttl`.
    pub hops: u8,
}

struct Open {
    rx: Rx,
    socket: Arc<AdvertSocket>,
    users: usize,
}

/// The receive sockets, as the inbox reads them.
type Receivers = Arc<Mutex<Vec<(Rx, Arc<AdvertSocket>)>>>;

/// The sockets open, by what they are.
#[derive(Default)]
pub(super) struct Wire {
    open: HashMap<Key, Open>,
    next: Rx,
    receivers: Receivers,
}

impl Wire {
    /// The socket for `key` on `iface`: the one open, or a new one.
    pub(super) fn open(&mut self, key: Key, iface: &Iface) -> io::Result<(Rx, Arc<AdvertSocket>)> {
        if let Some(o) = self.open.get_mut(&key) {
            o.users += 1;
            return Ok((o.rx, o.socket.clone()));
        }
        let s = AdvertSocket::open(iface, key.ipv6, key.proto, key.group, key.bind, key.hops)?;
        let socket = Arc::new(s);
        let rx = self.next;
        self.next += 1;
        if let Ok(mut l) = self.receivers.lock() {
            l.push((rx, socket.clone()));
        }
        log::debug!(
            "VRRP socket {rx} opened on {} ({}, protocol {})",
            key.ifname,
            if key.ipv6 { "IPv6" } else { "IPv4" },
            key.proto
        );
        self.open.insert(
            key,
            Open {
                rx,
                socket: socket.clone(),
                users: 1,
            },
        );
        Ok((rx, socket))
    }

    /// One user of socket `rx` is gone; the last closes it.
    pub(super) fn close(&mut self, rx: Rx) {
        let Some(key) = self
            .open
            .iter()
            .find(|(_, o)| o.rx == rx)
            .map(|(k, _)| k.clone())
        else {
            return;
        };
        let last = self.open.get_mut(&key).is_some_and(|o| {
            o.users -= 1;
            o.users == 0
        });
        if last {
            self.open.remove(&key);
            if let Ok(mut l) = self.receivers.lock() {
                l.retain(|(r, _)| *r != rx);
            }
        }
    }

    /// The inbox reading these sockets.
    pub(super) fn inbox(&self) -> WireInbox {
        WireInbox {
            receivers: self.receivers.clone(),
            buf: RecvBuffer::default(),
            turn: 0,
            batch_of: 0,
        }
    }
}

/// The runner's [`Inbox`]: every receive socket, taken in turn.
pub(super) struct WireInbox {
    receivers: Receivers,
    buf: RecvBuffer,
    /// The socket to try first (each gets its turn under a flood on one).
    turn: usize,
    /// The socket the batch in `buf` came from.
    batch_of: Rx,
}

impl WireInbox {
    /// The next datagram: of the batch read last, else of a new batch
    /// from the next socket that has any; with its socket's number.
    fn read(&mut self) -> Option<(Rx, Datagram)> {
        if let Some(d) = self.buf.take() {
            return Some((self.batch_of, d));
        }
        let count = self.receivers.lock().map_or(0, |l| l.len());
        for i in 0..count {
            let at = (self.turn + i) % count;
            let Some((rx, s)) = self.receivers.lock().ok()?.get(at).cloned() else {
                continue;
            };
            loop {
                match s.try_recv(&mut self.buf) {
                    None => break,
                    Some(Ok(_)) => {
                        // Each socket its turn (under a flood on one).
                        self.turn = at + 1;
                        self.batch_of = rx;
                        if let Some(d) = self.buf.take() {
                            return Some((rx, d));
                        }
                        // Only datagrams passed over: read on.
                    }
                    Some(Err(e)) => {
                        log::debug!("VRRP receive on socket {rx}: {e}");
                        break;
                    }
                }
            }
        }
        None
    }
}

impl Inbox for WireInbox {
    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        let Ok(l) = self.receivers.lock() else {
            return Poll::Pending;
        };
        for (_, s) in l.iter() {
            if s.poll_ready(cx).is_ready() {
                return Poll::Ready(());
            }
        }
        Poll::Pending
    }

    fn next(&mut self) -> Option<(Rx, Received<'_>)> {
        let (rx, d) = self.read()?;
        Some((rx, self.buf.received(d)))
    }

    fn overflow(&self) -> u64 {
        self.receivers
            .lock()
            .map_or(0, |l| l.iter().map(|(_, s)| u64::from(s.dropped())).sum())
    }
}

/// The runner's [`Alarm`] on a timerfd: it rings at the microsecond, with
/// one wake-up; tokio's wheel rings to the millisecond and wakes on the
/// way to a deadline a second ahead, which cost the VRRP thread two or
/// three wake-ups an advert.
pub(super) struct TimerAlarm {
    fd: AsyncFd<Timer>,
    set: bool,
}

/// The timerfd as tokio registers it (by its raw descriptor).
struct Timer(TimerFd);

impl std::os::fd::AsRawFd for Timer {
    fn as_raw_fd(&self) -> std::os::fd::RawFd {
        use std::os::fd::AsFd;
        self.0.as_fd().as_raw_fd()
    }
}

impl TimerAlarm {
    pub(super) fn new() -> io::Result<TimerAlarm> {
        let t = TimerFd::new(
            ClockId::CLOCK_MONOTONIC,
            TimerFlags::TFD_NONBLOCK | TimerFlags::TFD_CLOEXEC,
        )?;
        // SAFETY: the AsyncFd owns the timerfd, and so its descriptor,
        // which stays open and the same until the AsyncFd is dropped.
        let fd =
            unsafe { AsyncFd::register_with_interest(Timer(t), tokio::io::Interest::READABLE) }
                .map_err(io::Error::from)?;
        Ok(TimerAlarm { fd, set: false })
    }
}

impl Alarm for TimerAlarm {
    fn set(&mut self, at: Option<tokio::time::Instant>) {
        let t = &self.fd.get_ref().0;
        let r = match at {
            Some(at) => {
                // Relative: tokio's clock is the monotonic one; a zero
                // value would disarm it.
                let d = at
                    .saturating_duration_since(tokio::time::Instant::now())
                    .max(std::time::Duration::from_nanos(1));
                t.set(
                    Expiration::OneShot(TimeSpec::from_duration(d)),
                    TimerSetTimeFlags::empty(),
                )
            }
            None => t.unset(),
        };
        if let Err(e) = r {
            log::error!("VRRP: cannot set the timer: {e}");
        }
        self.set = at.is_some();
    }

    fn poll_ring(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        loop {
            let Poll::Ready(Ok(mut g)) = self.fd.poll_read_ready(cx) else {
                return Poll::Pending;
            };
            // The expiry count read clears it; EAGAIN: not yet.
            match g.try_io(|t| {
                nix::unistd::read(&t.get_ref().0, &mut [0u8; 8]).map_err(io::Error::from)
            }) {
                Ok(Ok(_)) if self.set => return Poll::Ready(()),
                Ok(Ok(_)) => {}
                Ok(Err(e)) => {
                    log::error!("VRRP: the timer: {e}");
                    return Poll::Pending;
                }
                Err(_would_block) => {}
            }
        }
    }
}
