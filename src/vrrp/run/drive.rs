//! The VRRP runner's loop ([`drive`]): the runner fed on tokio's clock
//! with what the sockets bring ([`Inbox`]), the commands of its channel
//! and its own deadlines ([`Alarm`]), due timers first; and what an event
//! changed, for the status ([`Changed`]). Part of [`super`].

use super::{Event, Received, Runner, Stats, World};
use crate::vrrp::dispatch::Rx;
use std::future::Future;
use std::task::{Context, Poll};
use tokio::sync::mpsc;

/// Where adverts arrive: the receive sockets the world opened, read a
/// packet at a time (into one buffer, reused) when the runner is ready for
/// it, so nothing waits between a socket and the runner but in the
/// kernel's own bounded queue.
pub trait Inbox {
    /// Ready when some socket has a packet to read.
    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<()>;
    /// The next packet waiting, from whichever socket, with the number of
    /// the socket it came in on; `None` when none waits.
    fn next(&mut self) -> Option<(Rx, Received<'_>)>;
    /// The packets the kernel dropped on the sockets so far, their
    /// buffers full (the bound of the path from the wire to the runner).
    fn overflow(&self) -> u64 {
        0
    }
}

/// An inbox that never has anything (a runner without sockets).
pub struct NoPackets;

impl Inbox for NoPackets {
    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<()> {
        Poll::Pending
    }
    fn next(&mut self) -> Option<(Rx, Received<'_>)> {
        None
    }
}

/// What wakes the runner at its next deadline.
pub trait Alarm {
    /// Ring at `at` (on tokio's clock), or never.
    fn set(&mut self, at: Option<tokio::time::Instant>);
    /// Ready once the time set has come.
    fn poll_ring(&mut self, cx: &mut Context<'_>) -> Poll<()>;
}

/// An [`Alarm`] on tokio's timer (paused time in tests). Its wheel rings
/// to the millisecond, with a wake-up or two on the way to a deadline a
/// second ahead.
pub struct TokioAlarm {
    sleep: std::pin::Pin<Box<tokio::time::Sleep>>,
    set: bool,
}

impl Default for TokioAlarm {
    fn default() -> Self {
        TokioAlarm {
            sleep: Box::pin(tokio::time::sleep(std::time::Duration::ZERO)),
            set: false,
        }
    }
}

impl Alarm for TokioAlarm {
    fn set(&mut self, at: Option<tokio::time::Instant>) {
        self.set = at.is_some();
        if let Some(at) = at {
            self.sleep.as_mut().reset(at);
        }
    }
    fn poll_ring(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        if !self.set {
            return Poll::Pending;
        }
        self.sleep.as_mut().poll(cx)
    }
}

/// At most this many packets are read before the timers are looked at
/// again and the other events get their turn.
pub const PACKET_BATCH: usize = 32;

/// What an event changed that a reader of the status can see.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Changed {
    /// Anything (start, reload, a transition, a tracker): publish all.
    pub all: bool,
    /// These nodes (by index) changed state, priority or master.
    pub nodes: Vec<usize>,
    /// Counters moved (published lazily).
    pub counters: bool,
}

impl Changed {
    /// Nothing to publish.
    pub fn is_empty(&self) -> bool {
        !self.all && self.nodes.is_empty() && !self.counters
    }
}

/// Runs `r` until [`Event::Stop`] (or the end of `events`): the timers on
/// tokio's clock, the adverts from `inbox`, everything else from
/// `events`. Due timers come first: no packet and no command is taken
/// while an advert or a down timer is due, and packets are read a
/// [`PACKET_BATCH`] at a time between looks at the clock.
pub async fn drive(
    r: &mut Runner,
    w: &mut impl World,
    events: &mut mpsc::UnboundedReceiver<Event>,
    inbox: &mut impl Inbox,
    alarm: &mut impl Alarm,
) {
    let base = tokio::time::Instant::now();
    let now = |base: tokio::time::Instant| base.elapsed().as_micros() as u64;
    r.start(now(base), w);
    publish(r, w);
    // When the alarm rings.
    let mut armed: Option<u64> = None;
    loop {
        let t = now(base);
        let due = r.next_deadline();
        if due.is_some_and(|d| d <= t) {
            r.on_timer(t, w);
            publish(r, w);
            continue;
        }
        // Set again whenever the next deadline moved: one timerfd call a
        // wake-up, where a backup's down timer, pushed back by every
        // advert, left alone would ring early and cost a wake-up of its
        // own every few seconds.
        if due != armed {
            alarm.set(due.map(|d| base + std::time::Duration::from_micros(d)));
            armed = due;
        }
        let ready = std::future::poll_fn(|cx| inbox.poll_ready(cx));
        let ring = std::future::poll_fn(|cx| alarm.poll_ring(cx));
        tokio::select! {
            biased;
            _ = ring => {
                armed = None;
                r.on_timer(now(base), w)
            }
            ev = events.recv() => match ev {
                None | Some(Event::Stop) => {
                    r.stop(now(base), w);
                    publish(r, w);
                    return;
                }
                Some(Event::Link(name, up)) => r.on_link(now(base), &name, up, w),
                Some(Event::AddressGone(name, a)) => r.on_address_gone(now(base), &name, a, w),
                Some(Event::RouteGone(g)) => r.on_gone(now(base), &g, w),
                Some(Event::RuleGone(g)) => r.on_gone(now(base), &g, w),
                Some(Event::Script(name, o)) => r.on_script(now(base), &name, o, w),
                Some(Event::TrackFile(name)) => r.on_track_file(now(base), &name, w),
                Some(Event::Process(c)) => r.on_process(now(base), &c, w),
                Some(Event::Bfd(name, up)) => r.on_bfd(now(base), &name, up, w),
                Some(Event::Reload(cfg)) => {
                    w.globals(&cfg);
                    r.reload(&cfg.vrrp, now(base), w)
                }
                Some(Event::Dump(d)) => {
                    w.dump(r, d, now(base));
                    if d == crate::vrrp::dump::Dump::StatsClear {
                        for n in &mut r.nodes {
                            n.stats = Stats::default();
                        }
                        r.changed.counters = true;
                    }
                }
            },
            _ = ready => {
                for _ in 0..PACKET_BATCH {
                    let t = now(base);
                    if r.next_deadline().is_some_and(|d| d <= t) {
                        break;
                    }
                    let Some((rx, p)) = inbox.next() else { break };
                    r.on_packet(rx, t, &p, w);
                }
                r.receipts.overflow = inbox.overflow();
            }
        }
        publish(r, w);
    }
}

/// Hands what changed to the world, if anything did.
fn publish(r: &mut Runner, w: &mut impl World) {
    let c = r.take_changes();
    if !c.is_empty() {
        w.publish(r, &c);
    }
}
