//! Every `bfd_instance` of the file as keepalived 2.2.7's BFD process runs
//! them (`bfd_scheduler.c`): a received datagram checked, matched to its
//! session and fed to it; the sessions' timers; the Up/Down events VRRP
//! and the checker hear (at start, at each reload, on entering Up, on
//! leaving Up unless the neighbour said AdminDown); a reload that keeps the
//! sessions it finds again by name; keepalived's log lines for all of it.
//! Pure: time and chance come in, packets and events go out; the sockets
//! are the daemon's (`daemon::bfd`).

use super::dispatch::{self, Lookup};
use super::packet::{Control, Diag, State, LEN};
use super::session::{Output, Params, Random, Session};
use crate::config::model::BfdInstance;
use std::net::{IpAddr, SocketAddr};

/// What a session is told to be: a `bfd_instance` as the BFD process keeps
/// it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Spec {
    /// The instance name.
    pub name: String,
    /// `neighbor_ip`.
    pub neighbor: IpAddr,
    /// `source_ip`: the sending socket is bound to it.
    pub source: Option<IpAddr>,
    /// Timers.
    pub params: Params,
    /// TTL / hop limit sent, and the reference of the receive check.
    pub ttl: u8,
    /// `max_hops` (255 or -1: no check).
    pub max_hops: i16,
    /// Events go to VRRP.
    pub vrrp: bool,
    /// Events go to the checker.
    pub checker: bool,
}

impl Spec {
    /// The session `b` asks for; `None` for a block keepalived's BFD
    /// process drops (invalid, a second of its name, no neighbour).
    pub fn of(b: &BfdInstance) -> Option<Spec> {
        if !b.valid || !b.listed {
            return None;
        }
        let neighbor = b.neighbor?;
        // Neither keyword: both hear of it.
        let both = !b.vrrp && !b.checker;
        Some(Spec {
            name: b.name.clone(),
            neighbor,
            source: b.source,
            params: dispatch::params(b),
            ttl: b
                .ttl
                .unwrap_or_else(|| dispatch::default_ttl(neighbor.is_ipv6())),
            max_hops: b.max_hops,
            vrrp: both || b.vrrp,
            checker: both || b.checker,
        })
    }

    /// The sessions of a configuration.
    pub fn all(bfds: &[BfdInstance]) -> Vec<Spec> {
        bfds.iter().filter_map(Spec::of).collect()
    }
}

/// A session with what the status and the dump show of it.
#[derive(Debug, Clone)]
pub struct Entry {
    /// Its instance.
    pub spec: Spec,
    /// The protocol.
    pub session: Session,
    /// When its last packet was accepted, µs.
    pub last_seen: Option<u64>,
    /// Packets accepted and sent.
    pub rx: u64,
    /// Packets sent.
    pub tx: u64,
    /// The last change: when (µs), from, to, the local diagnostic.
    pub last_change: Option<(u64, State, State, Diag)>,
    /// Whether its last event said Up (what VRRP and the checker know).
    pub told_up: bool,
}

/// What the scheduler asks of the daemon.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Send `packet` to session `id`'s neighbour, from its socket.
    Send {
        /// The session.
        id: usize,
        /// A control packet.
        packet: [u8; LEN],
    },
    /// Tell the session's listeners (VRRP, the checker, as its spec says)
    /// that it is Up or Down.
    Event {
        /// The session.
        id: usize,
        /// Up (else Down).
        up: bool,
    },
    /// Session `id` is held AdminDown for want of a socket: try again.
    Reopen {
        /// The session.
        id: usize,
    },
}

/// How a datagram came: from where, to which of our addresses, with what
/// TTL (hop limit) as the kernel told it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Received {
    /// The sender.
    pub src: SocketAddr,
    /// Our address it was sent to.
    pub dst: IpAddr,
    /// Its TTL or hop limit, if the kernel said.
    pub ttl: Option<u8>,
}

/// Datagrams passed over before reaching a session, by reason.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct Discards {
    /// Failed the checks that need no session.
    pub bogus: u64,
    /// For no session of ours.
    pub unknown: u64,
    /// TTL or hop limit too low.
    pub ttl: u64,
}

/// Every session.
#[derive(Debug, Default)]
pub struct Scheduler {
    entries: Vec<Entry>,
    lookup: Lookup,
    /// What was passed over.
    pub discards: Discards,
    /// State changes so far (a reader republishes when it moves).
    pub changes: u64,
}

impl Scheduler {
    /// The sessions of `specs`, starting Down at `now`; every session's
    /// state is announced (keepalived's start-up events).
    pub fn new(specs: Vec<Spec>, now: u64, rng: &mut impl Random, out: &mut Vec<Action>) -> Self {
        let mut s = Scheduler::default();
        for spec in specs {
            let session = Session::new(spec.params, now, rng);
            s.entries.push(Entry {
                spec,
                session,
                last_seen: None,
                rx: 0,
                tx: 0,
                last_change: None,
                told_up: false,
            });
        }
        s.relist();
        s.announce(out);
        s
    }

    /// The sessions.
    pub fn entries(&self) -> &[Entry] {
        &self.entries
    }

    fn relist(&mut self) {
        self.lookup = Lookup::default();
        for (id, e) in self.entries.iter().enumerate() {
            self.lookup
                .add(id, e.spec.neighbor, e.spec.source, e.session.local_disc());
        }
    }

    /// Every session's state as an event (at start and after a reload).
    fn announce(&mut self, out: &mut Vec<Action>) {
        for (id, e) in self.entries.iter_mut().enumerate() {
            e.told_up = e.session.state() == State::Up;
            out.push(Action::Event { id, up: e.told_up });
        }
    }

    /// When [`Scheduler::timers`] has work next.
    pub fn next_deadline(&self) -> Option<u64> {
        self.entries
            .iter()
            .filter_map(|e| e.session.next_deadline())
            .min()
    }

    /// A datagram `bytes` received as `how`.
    pub fn receive(
        &mut self,
        now: u64,
        bytes: &[u8],
        how: Received,
        rng: &mut impl Random,
        out: &mut Vec<Action>,
    ) {
        let Received { src, dst, ttl } = how;
        let from = src.ip();
        let c = match Control::decode(bytes) {
            Ok(c) => c,
            Err(e) => {
                self.discards.bogus += 1;
                log::debug!("Discarding bogus packet from [{from}]:{}: {e}", src.port());
                return;
            }
        };
        let Some(id) = self.lookup.find(&c, from, dst) else {
            self.discards.unknown += 1;
            log::debug!(
                "Discarding packet from [{from}]:{} (session is not found - your discriminator field is {:#x})",
                src.port(),
                c.your_disc
            );
            return;
        };
        let e = &mut self.entries[id];
        let Some(ttl) = ttl else {
            self.discards.ttl += 1;
            log::debug!("recvmsg() returned no TTL control message");
            return;
        };
        if !dispatch::ttl_ok(ttl, e.spec.ttl, e.spec.max_hops) {
            self.discards.ttl += 1;
            log::debug!("Packet ttl({ttl}) < {} - discarding", e.spec.ttl);
            return;
        }
        if e.session.state() == State::AdminDown {
            out.push(Action::Reopen { id });
            return;
        }
        e.rx += 1;
        e.last_seen = Some(now);
        let mut o = Vec::new();
        let (disc, detect) = (e.session.local_disc(), e.session.detection_time());
        e.session.receive(now, &c, rng, &mut o);
        self.take(id, now, o, disc, detect, out);
    }

    /// What is due at `now`.
    pub fn timers(&mut self, now: u64, rng: &mut impl Random, out: &mut Vec<Action>) {
        for id in 0..self.entries.len() {
            let e = &mut self.entries[id];
            if e.session.next_deadline().is_none_or(|t| t > now) {
                continue;
            }
            let expiring = e.session.detect_at().filter(|&t| t <= now);
            if let Some(t) = expiring {
                let since = e.last_seen.map_or(0, |s| now.saturating_sub(s));
                let line = format!(
                    "({}) Expired after {} ms ({} usec overdue)",
                    e.spec.name,
                    since / 1000,
                    now - t
                );
                if e.session.state() == State::Up {
                    log::info!("{line}");
                } else {
                    log::debug!("{line}");
                }
            }
            let mut o = Vec::new();
            let (disc, detect) = (e.session.local_disc(), e.session.detection_time());
            e.session.timers(now, rng, &mut o);
            self.take(id, now, o, disc, detect, out);
        }
    }

    /// Session `id` could not open its socket: AdminDown until it can.
    pub fn socket_failed(
        &mut self,
        id: usize,
        now: u64,
        rng: &mut impl Random,
        out: &mut Vec<Action>,
    ) {
        let e = &mut self.entries[id];
        if e.session.state() == State::AdminDown {
            return;
        }
        log::info!(
            "({}) Unable to open output socket, disabling instance",
            e.spec.name
        );
        let mut o = Vec::new();
        let (disc, detect) = (e.session.local_disc(), e.session.detection_time());
        e.session.admin_down(now, &mut o, rng);
        self.take(id, now, o, disc, detect, out);
    }

    /// Session `id`'s socket is open again.
    pub fn socket_opened(&mut self, id: usize, now: u64) {
        self.entries[id].session.resume(now);
    }

    /// The sessions held AdminDown (to retry their sockets).
    pub fn held_down(&self) -> impl Iterator<Item = usize> + '_ {
        self.entries
            .iter()
            .enumerate()
            .filter(|(_, e)| e.session.state() == State::AdminDown)
            .map(|(id, _)| id)
    }

    /// A reload's sessions: one found again by name keeps its state,
    /// discriminators and timers (a changed `min_rx`/`min_tx` polls), as
    /// keepalived's `bfd_copy_state` does; the others start Down. Every
    /// state is announced again. Returns, per new session, the old index
    /// it continues (its socket kept when its addresses are the same).
    pub fn reload(
        &mut self,
        specs: Vec<Spec>,
        now: u64,
        rng: &mut impl Random,
        out: &mut Vec<Action>,
    ) -> Vec<Option<usize>> {
        let mut old: Vec<Option<Entry>> = std::mem::take(&mut self.entries)
            .into_iter()
            .map(Some)
            .collect();
        let mut from = Vec::with_capacity(specs.len());
        for spec in specs {
            let found = old
                .iter()
                .position(|o| o.as_ref().is_some_and(|o| o.spec.name == spec.name));
            let entry = match found.and_then(|i| old[i].take().map(|e| (i, e))) {
                Some((i, mut e))
                    if e.spec.neighbor == spec.neighbor && e.spec.source == spec.source =>
                {
                    let (disc, detect) = (e.session.local_disc(), e.session.detection_time());
                    e.session.set_params(now, spec.params);
                    e.spec = spec;
                    from.push(Some(i));
                    let id = self.entries.len();
                    self.entries.push(e);
                    self.take(id, now, Vec::new(), disc, detect, out);
                    continue;
                }
                _ => Entry {
                    session: Session::new(spec.params, now, rng),
                    spec,
                    last_seen: None,
                    rx: 0,
                    tx: 0,
                    last_change: None,
                    told_up: false,
                },
            };
            from.push(None);
            self.entries.push(entry);
        }
        self.relist();
        self.announce(out);
        from
    }

    /// A step's outputs for session `id`, whose discriminator and
    /// detection time were `disc` and `detect` before it: logged,
    /// counted, turned into actions.
    fn take(
        &mut self,
        id: usize,
        now: u64,
        o: Vec<Output>,
        disc: u32,
        detect: u64,
        out: &mut Vec<Action>,
    ) {
        let e = &mut self.entries[id];
        for x in o {
            match x {
                Output::Send(c) => {
                    e.tx += 1;
                    out.push(Action::Send {
                        id,
                        packet: c.encode(),
                    });
                }
                Output::Changed {
                    from,
                    to,
                    diag,
                    notify,
                } => {
                    log_change(&e.spec.name, from, to, diag, e.session.remote().1);
                    self.changes += 1;
                    e.last_change = Some((now, from, to, diag));
                    let up = to == State::Up;
                    // Events on entering Up, and on leaving it unless the
                    // neighbour said AdminDown (RFC 5882 §4.2).
                    if (up || from == State::Up) && notify && e.told_up != up {
                        e.told_up = up;
                        out.push(Action::Event { id, up });
                    }
                }
            }
        }
        let new = e.session.detection_time();
        if new != detect && new != 0 {
            log::info!(
                "{:width$}Detection time is {new} us (was {detect} us)",
                "",
                width = e.spec.name.len() + 2
            );
        }
        let d = e.session.local_disc();
        if d != disc {
            self.lookup.rekey(id, disc, d);
        }
    }
}

/// keepalived's lines for a change, and the `transition {json}` line.
fn log_change(name: &str, from: State, to: State, diag: Diag, remote_diag: Diag) {
    match to {
        State::Up => log::info!("({name}) Entering Up state"),
        State::Init => log::debug!("({name}) Entering Init state"),
        State::AdminDown => log::info!("({name}) Entering AdminDown state"),
        State::Down => {
            let line = format!(
                "({name}) Entering Down state (Local diagnostic - {diag}, Remote diagnostic - {remote_diag})"
            );
            if from == State::Up {
                log::info!("{line}");
            } else {
                log::debug!("{line}");
            }
        }
    }
    log::info!(
        target: "keepalived::bfd::transition",
        "transition {}",
        serde_json::json!({
            "bfd": name, "from": from.to_string(), "to": to.to_string(),
            "diag": diag.to_string(),
        })
    );
}

#[cfg(test)]
mod tests;
