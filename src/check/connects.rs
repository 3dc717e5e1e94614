//! TCP_CHECK's connects as records, not tasks: the scheduler hands each
//! connect to one of a few driver tasks (one per core), which makes it
//! (`socket`, `connect`, one `epoll_ctl`), reads the outcomes of its
//! connects in batches from an epoll set of its own, and ends those
//! `connect_timeout` cuts. A connect waiting on its backend costs a slot of
//! a few dozen bytes and a deadline of 16, where a task, its timer and its
//! tokio I/O registration cost a kilobyte and more: tens of thousands are
//! out when backends are slow to accept.
//!
//! I/O shell of the checker, beside [`super::tcp`] (the same check as a
//! future, for the other callers) and [`super::halfopen`]; its ends go to
//! the [`super::engine`]'s scheduler as [`Done`]s.

use super::beat::SharedBeat;
use super::conn::{ConnOpts, Done, Failure};
use super::tcp::close_with_reset;
use super::timeline::{Clock, Timeline};
use nix::sys::epoll::{Epoll, EpollCreateFlags, EpollEvent, EpollFlags, EpollTimeout};
use socket2::{Protocol, SockAddr, Socket, Type};
use std::io;
use std::os::fd::{AsRawFd, RawFd};
use std::sync::{Arc, Mutex, OnceLock, Weak};
use tokio::io::unix::AsyncFd;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio::time::Instant;

/// Outcomes read per `epoll_wait`.
const BATCH: usize = 256;

/// The full connects of a prober: its drivers, started at the first.
#[derive(Default)]
pub struct Connects {
    drivers: OnceLock<Option<Vec<Arc<Driver>>>>,
    /// The engine's beat, which the drivers' timeouts keep.
    beat: Arc<SharedBeat>,
}

/// A connect to make: the check's options, its id, when it was launched,
/// and where its end goes.
type Launch = (ConnOpts, u32, Instant, mpsc::UnboundedSender<Done>);

impl Connects {
    /// A prober's, with no driver yet, its timeouts on `beat`.
    pub fn new(beat: Arc<SharedBeat>) -> Connects {
        Connects {
            beat,
            drivers: OnceLock::new(),
        }
    }

    /// Starts check `id`'s connect to `c`; its end goes to `tx`. False when
    /// it cannot be run here (no epoll set): the caller runs the check as a
    /// future.
    pub fn launch(&self, c: &ConnOpts, id: usize, tx: &mpsc::UnboundedSender<Done>) -> bool {
        let Some(drivers) = self.drivers() else {
            return false;
        };
        // The connects are made by the drivers, a share each: the
        // `socket` and `connect` calls (the handshake with a local backend
        // runs inside `connect`) are most of a check's cost, and one task
        // making them all would hold the checker to one core.
        let d = &drivers[id % drivers.len()];
        let _ = d
            .launches
            .send((c.clone(), id as u32, Instant::now(), tx.clone()));
        true
    }

    /// The drivers, started now if they are not yet; `None` if no epoll
    /// set could be made (logged once).
    fn drivers(&self) -> Option<&[Arc<Driver>]> {
        self.drivers
            .get_or_init(|| {
                let n = std::thread::available_parallelism().map_or(2, |n| n.get().clamp(2, 8));
                match (0..n)
                    .map(|_| Driver::start(self.beat.clone()))
                    .collect::<io::Result<Vec<_>>>()
                {
                    Ok(d) => Some(d),
                    Err(e) => {
                        log::warn!("TCP_CHECK: no epoll set ({e}); each connect runs as a task");
                        None
                    }
                }
            })
            .as_deref()
    }
}

/// Makes connect `l`: handed to the driver while under way, else ended now.
fn connect(d: &Driver, l: Launch) {
    let (c, id, started, tx) = l;
    let tell = |r: Result<(), Failure>| {
        let _ = tx.send((id as usize, r, started, Instant::now()));
    };
    let sock = match c.socket(Type::STREAM, Some(Protocol::TCP)) {
        Ok(s) => s,
        Err(e) => return tell(Err(Failure::Socket(e))),
    };
    match sock.connect(&SockAddr::from(c.dst)) {
        Ok(()) => {
            close_with_reset(sock);
            tell(Ok(()));
        }
        Err(e) if e.raw_os_error() == Some(nix::errno::Errno::EINPROGRESS as i32) => {
            d.watch(sock, &c, id, started, tx);
        }
        Err(e) => tell(Err(Failure::Connect(e))),
    }
}

/// The epoll set as a descriptor tokio can watch.
struct EpollFd(Epoll);

impl AsRawFd for EpollFd {
    fn as_raw_fd(&self) -> RawFd {
        self.0 .0.as_raw_fd()
    }
}

/// The connects out, and the task that ends them.
struct Driver {
    /// Connects to make.
    launches: mpsc::UnboundedSender<Launch>,
    epoll: AsyncFd<EpollFd>,
    out: Mutex<Out>,
    beat: Arc<SharedBeat>,
    /// Its task, spawned once the driver is whole (set once).
    task: std::sync::OnceLock<JoinHandle<()>>,
}

/// Connects out: a slab of slots, and their deadlines.
struct Out {
    slots: Vec<Slot>,
    free: Vec<u32>,
    /// (deadline, slot and generation): stale entries (connects ended
    /// before) are skipped, and taken out when first in line.
    deadlines: Timeline<u64, u64>,
    clock: Clock,
}

/// One connect out; `sock` is `None` in a free slot.
struct Slot {
    sock: Option<Socket>,
    gen: u32,
    id: u32,
    started: Instant,
    tx: Option<mpsc::UnboundedSender<Done>>,
}

/// The drivers' tasks hold their driver while they wait (its epoll set is
/// what they wait on), so a driver cannot end by being dropped: the
/// prober that goes (a reload) ends their tasks, and with them the drivers
/// and their epoll sets.
impl Drop for Connects {
    fn drop(&mut self) {
        for d in self.drivers.get().into_iter().flatten().flatten() {
            if let Some(t) = d.task.get() {
                t.abort();
            }
        }
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        if let Some(t) = self.task.get() {
            t.abort();
        }
    }
}

impl Driver {
    fn start(beat: Arc<SharedBeat>) -> io::Result<Arc<Driver>> {
        let epoll = Epoll::new(EpollCreateFlags::EPOLL_CLOEXEC).map_err(io::Error::from)?;
        // SAFETY: the AsyncFd owns the epoll set, and so its descriptor,
        // which stays open and the same until the AsyncFd is dropped.
        let epoll = unsafe {
            AsyncFd::register_with_interest(EpollFd(epoll), tokio::io::Interest::READABLE)
        }
        .map_err(io::Error::from)?;
        let (launches, rx) = mpsc::unbounded_channel();
        let d = Arc::new(Driver {
            launches,
            epoll,
            out: Mutex::new(Out {
                slots: Vec::new(),
                free: Vec::new(),
                deadlines: Timeline::new(),
                clock: Clock::from(Instant::now()),
            }),
            beat,
            task: std::sync::OnceLock::new(),
        });
        // Spawned once the driver is made, not inside `Arc::new_cyclic`:
        // polled at once on another thread, the task could not upgrade its
        // weak reference yet and ended (see `halfopen`'s `Source::open`).
        let _ = d.task.set(tokio::spawn(drive(Arc::downgrade(&d), rx)));
        Ok(d)
    }

    /// Hands a connect under way to the driver.
    fn watch(
        &self,
        sock: Socket,
        c: &ConnOpts,
        id: u32,
        started: Instant,
        tx: mpsc::UnboundedSender<Done>,
    ) {
        let mut out = self.out.lock().expect("connects");
        let deadline = out.clock.tick(started + c.timeout());
        let slot = match out.free.pop() {
            Some(s) => s,
            None => {
                out.slots.push(Slot {
                    sock: None,
                    gen: 0,
                    id: 0,
                    started,
                    tx: None,
                });
                (out.slots.len() - 1) as u32
            }
        };
        let s = &mut out.slots[slot as usize];
        s.gen = s.gen.wrapping_add(1);
        let key = u64::from(slot) << 32 | u64::from(s.gen);
        // One event, then none: the socket is closed at its first.
        let ev = EpollEvent::new(EpollFlags::EPOLLOUT | EpollFlags::EPOLLONESHOT, key);
        if let Err(e) = self.epoll.get_ref().0.add(&sock, ev) {
            out.free.push(slot);
            drop(out);
            let _ = tx.send((
                id as usize,
                Err(Failure::Socket(e.into())),
                started,
                Instant::now(),
            ));
            return;
        }
        *s = Slot {
            sock: Some(sock),
            gen: s.gen,
            id,
            started,
            tx: Some(tx),
        };
        // Made by the driver's own task, which sets its timer from the
        // deadlines before it waits again: no wake-up needed.
        out.deadlines.push(deadline, key);
    }

    /// Takes connect `key` out if it is still the one its slot holds.
    fn take(
        out: &mut Out,
        key: u64,
    ) -> Option<(Socket, u32, Instant, mpsc::UnboundedSender<Done>)> {
        let (slot, gen) = ((key >> 32) as usize, key as u32);
        let s = out.slots.get_mut(slot).filter(|s| s.gen == gen)?;
        let r = (s.sock.take()?, s.id, s.started, s.tx.take()?);
        out.free.push(slot as u32);
        Some(r)
    }

    /// Reads the outcomes the epoll set holds; false when it holds none.
    fn read(&self) -> bool {
        let mut events = [EpollEvent::empty(); BATCH];
        let n = match self.epoll.get_ref().0.wait(&mut events, EpollTimeout::ZERO) {
            Ok(n) => n,
            Err(nix::errno::Errno::EINTR) => return true,
            Err(_) => return false,
        };
        let mut ended = Vec::with_capacity(n);
        {
            let mut out = self.out.lock().expect("connects");
            for e in &events[..n] {
                if let Some(t) = Driver::take(&mut out, e.data()) {
                    ended.push(t);
                }
            }
            // The deadlines of connects ended early, when first in line.
            let Out {
                slots, deadlines, ..
            } = &mut *out;
            deadlines.prune_front(|&k| {
                slots
                    .get((k >> 32) as usize)
                    .is_none_or(|s| s.gen != k as u32 || s.sock.is_none())
            });
        }
        let now = Instant::now();
        for (sock, id, started, tx) in ended {
            // SO_ERROR: 0 once connected, else why the connect failed.
            let r = match sock.take_error() {
                Ok(None) => {
                    close_with_reset(sock);
                    Ok(())
                }
                Ok(Some(e)) | Err(e) => Err(Failure::Connect(e)),
            };
            let _ = tx.send((id as usize, r, started, now));
        }
        n == BATCH
    }

    /// Ends the connects whose deadline passed; returns the next deadline.
    fn expire(&self) -> Option<Instant> {
        let now = Instant::now();
        let due = {
            let out = self.out.lock().expect("connects");
            out.deadlines
                .peek()
                .is_some_and(|t| t <= out.clock.tick(now))
        };
        if due {
            // What came before the deadline is an answer, not silence.
            while self.read() {}
        }
        let mut ended = Vec::new();
        let next = {
            let mut out = self.out.lock().expect("connects");
            let tick = out.clock.tick(now);
            while let Some((_, key)) = out.deadlines.pop_due(tick) {
                if let Some(t) = Driver::take(&mut out, key) {
                    ended.push(t);
                }
            }
            out.deadlines.peek().map(|t| out.clock.instant(t))
        };
        for (sock, id, started, tx) in ended {
            drop(sock);
            let _ = tx.send((id as usize, Err(Failure::ConnectTimeout), started, now));
        }
        next
    }
}

/// The driver's task: outcomes as the epoll set has them, timeouts as they
/// fall due. Ends with its driver.
async fn drive(d: Weak<Driver>, mut launches: mpsc::UnboundedReceiver<Launch>) {
    let timer = tokio::time::sleep_until(Instant::now());
    tokio::pin!(timer);
    loop {
        let Some(me) = d.upgrade() else { return };
        let next = me.expire();
        if let Some(at) = next {
            timer.as_mut().reset(me.beat.get().at(at));
        }
        tokio::select! {
            r = me.epoll.readable() => match r {
                Ok(mut guard) => {
                    while me.read() {}
                    guard.clear_ready();
                }
                Err(e) => {
                    log::error!("TCP_CHECK: epoll set: {e}");
                    return;
                }
            },
            l = launches.recv() => {
                let Some(l) = l else { return };
                connect(&me, l);
                for _ in 1..BATCH {
                    match launches.try_recv() {
                        Ok(l) => connect(&me, l),
                        Err(_) => break,
                    }
                }
            }
            () = &mut timer, if next.is_some() => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{Ipv4Addr, SocketAddr, TcpListener};
    use std::time::Duration;

    async fn one(
        c: &Connects,
        to: SocketAddr,
        timeout: Duration,
    ) -> (Result<(), Failure>, Duration) {
        let (tx, mut rx) = mpsc::unbounded_channel();
        assert!(c.launch(&ConnOpts::to(to, timeout), 7, &tx));
        let (id, r, started, ended) = rx.recv().await.expect("an end");
        assert_eq!(id, 7);
        (r, ended - started)
    }

    #[tokio::test]
    async fn a_listener_passes_a_closed_port_is_refused() {
        let l = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
        let up = l.local_addr().unwrap();
        let down = {
            let t = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
            t.local_addr().unwrap()
        };
        let c = Connects::new(Default::default());
        for _ in 0..3 {
            let (r, _) = one(&c, up, Duration::from_secs(2)).await;
            assert!(r.is_ok(), "{r:?}");
            let (r, _) = one(&c, down, Duration::from_secs(2)).await;
            assert_eq!(r.as_ref().map_err(Failure::kind), Err("refused"), "{r:?}");
        }
        // The connects were accepted by the kernel, then reset by us.
        l.set_nonblocking(true).unwrap();
        let mut accepted = 0;
        while l.accept().is_ok() {
            accepted += 1;
        }
        assert_eq!(accepted, 3);
    }

    #[tokio::test]
    async fn silence_ends_at_connect_timeout_and_many_are_out_at_once() {
        // A listener with a backlog of one that never accepts: once it is
        // full, the kernel drops further SYNs, and those connects hang.
        let s = Socket::new(socket2::Domain::IPV4, Type::STREAM, None).unwrap();
        s.bind(&SockAddr::from(SocketAddr::from((Ipv4Addr::LOCALHOST, 0))))
            .unwrap();
        s.listen(0).unwrap();
        let to = s.local_addr().unwrap().as_socket().unwrap();
        let c = Connects::new(Default::default());
        let (tx, mut rx) = mpsc::unbounded_channel();
        let n = 20;
        for i in 0..n {
            assert!(c.launch(&ConnOpts::to(to, Duration::from_millis(300)), i, &tx));
        }
        let t0 = std::time::Instant::now();
        let mut seen = vec![0; n];
        let (mut ok, mut timeouts) = (0, 0);
        for _ in 0..n {
            let (id, r, _, _) = rx.recv().await.expect("an end");
            seen[id] += 1;
            match r {
                Ok(()) => ok += 1,
                Err(Failure::ConnectTimeout) => timeouts += 1,
                Err(e) => panic!("{e}"),
            }
        }
        assert!(seen.iter().all(|&k| k == 1), "{seen:?}");
        assert!(timeouts > 0 && ok + timeouts == n, "{ok} {timeouts}");
        let took = t0.elapsed();
        assert!(took >= Duration::from_millis(290), "{took:?}");
        // All were out together: one timeout, not one after another.
        assert!(took < Duration::from_millis(3000), "{took:?}");
        // Every slot is free again, the deadlines gone.
        for d in c.drivers().unwrap() {
            let out = d.out.lock().unwrap();
            assert_eq!(out.free.len(), out.slots.len());
        }
    }
}
