//! The BFD subsystem, hosted by the shell on a thread of its own as
//! keepalived 2.2.7 runs its `Keepalived_bfd` child: the sessions of the
//! file's `bfd_instance` blocks ([`crate::bfd::scheduler`]) on the sockets
//! of [`net`], their Up/Down events to VRRP and the checker, a reload that
//! keeps unchanged sessions, the SIGUSR1 dump. At stop the sockets close
//! and nothing more is sent (keepalived sends no AdminDown: the neighbour
//! detects the silence). The sockets and the clock come in, so the loop
//! runs on paused time in tests.

pub mod net;

use super::subsystem::{BfdEvent, BfdListeners, Command, Progress, Reporter};
use crate::bfd::random::OsRandom;
use crate::bfd::scheduler::{Action, Received, Scheduler, Spec};
use crate::bfd::session::Random;
use crate::cli::Options;
use crate::config::Loaded;
use net::{Inbox, Outbox, PORT};
use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;
use tokio::time::Instant;

/// keepalived retries a session's socket that would not open every 60 s.
pub const REOPEN_EVERY: Duration = Duration::from_secs(60);

/// Runs the BFD subsystem on its sockets until [`Command::Stop`].
pub async fn run(
    _opts: &Options,
    loaded: Arc<Loaded>,
    commands: mpsc::UnboundedReceiver<Command>,
    reporter: Reporter,
    (listeners, board): (BfdListeners, Option<crate::bfd::status::Board>),
) -> ExitCode {
    let inbox = match net::Listener::open() {
        Ok(l) => l,
        Err(e) => {
            log::error!("Unable to open listening socket: {e}");
            return ExitCode::from(1);
        }
    };
    let specs = Spec::all(&loaded.config.bfd_instances);
    let router_id = loaded.config.global_defs.router_id.clone();
    drop(loaded);
    let io = Io {
        outbox: net::Senders::default(),
        listeners,
        send_failed: Vec::new(),
        router_id,
        board,
    };
    serve(specs, inbox, io, commands, reporter, OsRandom::new()).await
}

/// What the loop does its I/O with besides the listener.
pub struct Io<O: Outbox> {
    /// The sessions' senders.
    pub outbox: O,
    /// Where events go.
    pub listeners: BfdListeners,
    /// Per session: a send error was logged since its socket opened.
    pub send_failed: Vec<bool>,
    /// For the dump.
    pub router_id: Option<String>,
    /// Where the status socket reads the sessions.
    pub board: Option<crate::bfd::status::Board>,
}

/// How often the counters on the status board are brought up to date
/// (a change of state is published at once).
pub const PUBLISH_EVERY: Duration = Duration::from_secs(1);

/// The loop: due timers first, then received datagrams and commands.
pub async fn serve<I: Inbox, O: Outbox>(
    specs: Vec<Spec>,
    mut inbox: I,
    mut io: Io<O>,
    mut commands: mpsc::UnboundedReceiver<Command>,
    reporter: Reporter,
    mut rng: impl Random,
) -> ExitCode {
    let epoch = Instant::now();
    let now = || epoch.elapsed().as_micros() as u64;
    // The wall clock at `epoch`: times shown are read off the loop's own
    // clock from it, so a transition keeps one time from one publication
    // to the next.
    let wall = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64());
    let mut out = Vec::new();
    let mut sched = Scheduler::new(specs, now(), &mut rng, &mut out);
    open_all(&mut sched, &mut io, None, now(), &mut rng, &mut out);
    admit(&mut inbox, &sched);
    io.act(&mut sched, &mut out, now(), &mut rng);
    let mut published = None;
    io.publish(&sched, now(), wall, &mut published);
    reporter.send(Progress::Started);
    let mut buf = [0u8; 64];
    let mut reopen = tokio::time::interval_at(epoch + REOPEN_EVERY, REOPEN_EVERY);
    loop {
        // Due timers first, read off the clock: under a flood the datagram
        // branch is always ready, and the runtime's timer wheel, driven
        // only between task polls, would run them late.
        let t = now();
        if sched.next_deadline().is_some_and(|d| d <= t) {
            sched.timers(t, &mut rng, &mut out);
            io.act(&mut sched, &mut out, t, &mut rng);
        }
        let deadline = sched
            .next_deadline()
            .map(|t| epoch + Duration::from_micros(t));
        tokio::select! {
            biased;
            _ = sleep_until(deadline) => {
                sched.timers(now(), &mut rng, &mut out);
            }
            r = inbox.recv(&mut buf) => match r {
                Ok((len, from, to, ttl)) if len <= buf.len() => {
                    let how = Received { src: from, dst: to, ttl };
                    sched.receive(now(), &buf[..len], how, &mut rng, &mut out);
                }
                Ok((_, from, _, _)) => {
                    sched.discards.bogus += 1;
                    log::debug!("recvmsg() message truncated from [{}]:{}", from.ip(), from.port());
                }
                Err(e) => {
                    log::error!("BFD: reading the listening socket: {e}");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            },
            c = commands.recv() => match c {
                Some(Command::Reload(l)) => {
                    let t0 = std::time::Instant::now();
                    let specs = Spec::all(&l.config.bfd_instances);
                    io.router_id = l.config.global_defs.router_id.clone();
                    drop(l);
                    let ttls: Vec<u8> = sched.entries().iter().map(|e| e.spec.ttl).collect();
                    let mut from = sched.reload(specs, now(), &mut rng, &mut out);
                    io.outbox.remap(&from);
                    // A kept session whose TTL changed keeps its state but
                    // not its socket (the TTL is the socket's).
                    for (id, f) in from.iter_mut().enumerate() {
                        if f.is_some_and(|i| ttls[i] != sched.entries()[id].spec.ttl) {
                            *f = None;
                        }
                    }
                    open_all(&mut sched, &mut io, Some(&from), now(), &mut rng, &mut out);
                    admit(&mut inbox, &sched);
                    log::info!("Reload finished in {} usec", t0.elapsed().as_micros());
                    published = None;
                    reporter.send(Progress::Reloaded);
                }
                Some(Command::DumpData) => io.dump(&sched, now()),
                Some(Command::Stop) | None => break,
                Some(Command::Reading | Command::VrrpSignal(_)) => {}
            },
            _ = reopen.tick() => {
                let held: Vec<usize> = sched.held_down().collect();
                for id in held {
                    io.reopen(&mut sched, id, now());
                }
            }
        }
        io.act(&mut sched, &mut out, now(), &mut rng);
        io.publish(&sched, now(), wall, &mut published);
    }
    ExitCode::SUCCESS
}

/// Lets only the sessions' neighbours through to the listener.
fn admit<I: Inbox>(inbox: &mut I, sched: &Scheduler) {
    let neighbours: Vec<std::net::IpAddr> =
        sched.entries().iter().map(|e| e.spec.neighbor).collect();
    if let Err(e) = inbox.admit(&neighbours) {
        // Not fatal: every datagram is then read and checked, as keepalived does.
        log::warn!("BFD: cannot filter the listening socket by neighbour: {e}");
    }
}

async fn sleep_until(t: Option<Instant>) {
    match t {
        Some(t) => tokio::time::sleep_until(t).await,
        None => std::future::pending().await,
    }
}

/// Opens the sender of every session that has none: all at start, after
/// a reload those that do not continue an old one (`from`).
fn open_all<O: Outbox>(
    sched: &mut Scheduler,
    io: &mut Io<O>,
    from: Option<&[Option<usize>]>,
    now: u64,
    rng: &mut impl Random,
    out: &mut Vec<Action>,
) {
    let n = sched.entries().len();
    io.send_failed = vec![false; n];
    for id in 0..n {
        if from.is_some_and(|f| f[id].is_some()) {
            continue;
        }
        let spec = sched.entries()[id].spec.clone();
        if io.outbox.open(id, &spec).is_err() {
            sched.socket_failed(id, now, rng, out);
        }
    }
}

impl<O: Outbox> Io<O> {
    /// Carries out what the scheduler asked.
    fn act(
        &mut self,
        sched: &mut Scheduler,
        out: &mut Vec<Action>,
        now: u64,
        rng: &mut impl Random,
    ) {
        while !out.is_empty() {
            for a in std::mem::take(out) {
                match a {
                    Action::Send { id, packet } => {
                        let e = &sched.entries()[id];
                        let to = SocketAddr::new(e.spec.neighbor, PORT);
                        if let Err(err) = self.outbox.send(id, to, &packet) {
                            if !std::mem::replace(&mut self.send_failed[id], true) {
                                log::info!("({}) Error sending packet", e.spec.name);
                                log::info!("sendto() error ({err})");
                            }
                        }
                    }
                    Action::Event { id, up } => {
                        let spec = &sched.entries()[id].spec;
                        let ev = BfdEvent {
                            name: spec.name.clone(),
                            up,
                        };
                        if spec.vrrp {
                            if let Some(tx) = &self.listeners.vrrp {
                                let _ = tx.send(ev.clone());
                            }
                        }
                        if spec.checker {
                            if let Some(tx) = &self.listeners.checker {
                                let _ = tx.send(ev);
                            }
                        }
                    }
                    Action::Reopen { id } => {
                        self.reopen(sched, id, now);
                    }
                }
            }
            // A reopened session may have work at once.
            if sched.next_deadline().is_some_and(|t| t <= now) {
                sched.timers(now, rng, out);
            }
        }
    }

    /// The board brought up to date when a state changed (or after a
    /// reload: `last` None), else at most every [`PUBLISH_EVERY`].
    /// `last` is (changes, when) of the last publication.
    /// Brings the board up to date (`wall`: the wall clock at the loop's
    /// time 0).
    fn publish(&self, sched: &Scheduler, now: u64, wall: f64, last: &mut Option<(u64, u64)>) {
        let Some(board) = &self.board else { return };
        let every = PUBLISH_EVERY.as_micros() as u64;
        if let Some((changes, at)) = *last {
            if changes == sched.changes && now < at + every {
                return;
            }
        }
        *last = Some((sched.changes, now));
        let p = crate::bfd::status::of(sched, now, wall + now as f64 / 1e6);
        if let Ok(mut b) = board.lock() {
            *b = p;
        }
    }

    fn reopen(&mut self, sched: &mut Scheduler, id: usize, now: u64) {
        let spec = sched.entries()[id].spec.clone();
        if self.outbox.open(id, &spec).is_ok() {
            self.send_failed[id] = false;
            sched.socket_opened(id, now);
        }
    }

    fn dump(&self, sched: &Scheduler, now: u64) {
        let unix = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0.0, |d| d.as_secs_f64());
        log::info!(
            "Printing BFD data for process({}) on signal",
            std::process::id()
        );
        let text = crate::bfd::dump::render(
            self.router_id.as_deref(),
            sched.entries(),
            now,
            unix,
            |id| self.outbox.local(id),
        );
        let path = crate::print::data_path().with_file_name("keepalived_bfd.data");
        if let Err(e) = crate::print::write_private(&path, &text) {
            log::error!("cannot write {}: {e}", path.display());
        }
    }
}

#[cfg(test)]
mod tests;
