//! The VRRP runner at scale under a flood, on paused time: 1,000
//! instances on five links (one receive socket each) run by `drive`, while
//! every millisecond a burst of packets arrives for VRIDs no instance runs
//! on the link they came in on, and malformed ones for VRIDs run there.
//! A burst also arrives at every instant the runner wakes for its timers.
//! What must hold: every instance's own adverts leave exactly on time (due
//! timers are served before the packets that arrived with them), the foreign packets are
//! dropped at the first look without any instance seeing them (one lookup
//! each), a malformed packet reaches only its own instance, the refusals'
//! log lines stay bounded, and the memory in use does not grow with the
//! packets read (a counting allocator measures it).

use keepalived::config::vrrp::{Instance, Vip, VrrpScript};
use keepalived::vrrp::dispatch::Rx;
use keepalived::vrrp::net::Received;
use keepalived::vrrp::run::{drive, Inbox, Node, Notified, Placement, Runner, World};
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::RefCell;
use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr};
use std::rc::Rc;
use std::sync::atomic::{AtomicIsize, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

/// The system allocator, counting the bytes in use.
struct Counting;

static IN_USE: AtomicIsize = AtomicIsize::new(0);

// SAFETY: every call is passed to the system allocator as it came; the
// counter is only arithmetic beside it.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        IN_USE.fetch_add(l.size() as isize, Ordering::Relaxed);
        // SAFETY: the caller's layout, passed on.
        unsafe { System.alloc(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        IN_USE.fetch_sub(l.size() as isize, Ordering::Relaxed);
        // SAFETY: a block of ours, with its layout.
        unsafe { System.dealloc(p, l) }
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, new: usize) -> *mut u8 {
        IN_USE.fetch_add(new as isize - l.size() as isize, Ordering::Relaxed);
        // SAFETY: a block of ours, with its layout.
        unsafe { System.realloc(p, l, new) }
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

const LINKS: usize = 5;
const PER_LINK: usize = 200;
/// Packets a burst, one burst a millisecond: 200,000 a second.
const BURST: usize = 200;

/// What the test sees of the runner: its sends and log lines, in order
/// with the packets read.
#[derive(Default)]
struct Seen {
    /// (µs, node id) of every advert sent.
    sends: Vec<(u64, usize)>,
    /// Packets read so far.
    read: u64,
    /// (µs, packets read before it) of every send.
    order: Vec<(u64, u64)>,
    /// µs -> packets read before the burst of that instant arrived.
    bursts: HashMap<u64, u64>,
    logs: usize,
    started: Option<tokio::time::Instant>,
}

struct Lan(Rc<RefCell<Seen>>);

fn now_us(s: &Seen) -> u64 {
    s.started.map_or(0, |t| t.elapsed().as_micros() as u64)
}

impl World for Lan {
    fn placement(&mut self, i: &Instance) -> Placement {
        Placement {
            ifname: i.interface.clone().unwrap_or_default(),
            src: Some(IpAddr::V4(Ipv4Addr::new(192, 0, 2, 1))),
            up: true,
        }
    }
    fn attach(&mut self, n: &Node) -> Option<Rx> {
        n.ifname.trim_start_matches("eth").parse().ok()
    }
    fn detach(&mut self, _: usize) {}
    fn send(&mut self, id: usize, _: &[u8], _: IpAddr) {
        let mut s = self.0.borrow_mut();
        let t = now_us(&s);
        let read = s.read;
        s.sends.push((t, id));
        s.order.push((t, read));
    }
    fn addresses(&mut self, _: usize, _: &[Vip], _: bool) {}
    fn announce(&mut self, _: usize, _: &[Vip], _: u32) {}
    fn notify(&mut self, _: &Instance, _: Notified, _: u8) {}
    fn run_script(&mut self, _: &VrrpScript) {}
    fn globals(&mut self, _: &std::sync::Arc<keepalived::config::model::Config>) {}
    fn log(&mut self, _: String) {
        self.0.borrow_mut().logs += 1;
    }
}

/// A burst of packets every millisecond and at every instant the runner
/// wakes at, on each link in turn: a well-formed advert for VRID 201..=255
/// (run on no link), and every tenth one cut short for a VRID the link
/// runs.
struct Flood {
    seen: Rc<RefCell<Seen>>,
    last: Option<tokio::time::Instant>,
    left: usize,
    until: tokio::time::Instant,
    timer: std::pin::Pin<Box<tokio::time::Sleep>>,
    pkt: [u8; 40],
    k: u64,
}

impl Flood {
    fn new(seen: Rc<RefCell<Seen>>, secs: u64) -> Flood {
        let now = tokio::time::Instant::now();
        let mut pkt = [0u8; 40];
        pkt[0] = 0x45;
        pkt[8] = 255;
        pkt[9] = 112;
        pkt[12..16].copy_from_slice(&[192, 0, 2, 200]);
        pkt[16..20].copy_from_slice(&[224, 0, 0, 18]);
        pkt[20..28].copy_from_slice(&[0x21, 201, 100, 1, 0, 1, 0, 0]);
        Flood {
            seen,
            last: None,
            left: 0,
            until: now + Duration::from_secs(secs),
            timer: Box::pin(tokio::time::sleep_until(now)),
            pkt,
            k: 0,
        }
    }
}

impl Inbox for Flood {
    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        let now = tokio::time::Instant::now();
        if self.last != Some(now) && now < self.until {
            self.last = Some(now);
            self.left += BURST;
            let mut s = self.seen.borrow_mut();
            let (t, read) = (now_us(&s), s.read);
            s.bursts.insert(t, read);
        }
        if self.left > 0 {
            return Poll::Ready(());
        }
        if now >= self.until {
            return Poll::Pending;
        }
        self.timer.as_mut().reset(now + Duration::from_millis(1));
        let _ = self.timer.as_mut().poll(cx);
        Poll::Pending
    }

    fn next(&mut self) -> Option<(Rx, Received<'_>)> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        self.k += 1;
        self.seen.borrow_mut().read += 1;
        let link = (self.k % LINKS as u64) as usize;
        let len = if self.k.is_multiple_of(10) {
            // Cut short, for a VRID the link runs.
            self.pkt[21] = 1 + (self.k / 10 % PER_LINK as u64) as u8;
            24
        } else {
            self.pkt[21] = 201 + (self.k % 55) as u8;
            40
        };
        let p = &self.pkt[..len];
        Some((
            link,
            Received {
                from: IpAddr::V4(Ipv4Addr::new(192, 0, 2, 200)),
                to: IpAddr::V4(Ipv4Addr::new(224, 0, 0, 18)),
                ttl: 255,
                proto: 112,
                ip_header: &p[..20],
                payload: &p[20..],
            },
        ))
    }
}

use std::future::Future;

fn config() -> keepalived::config::vrrp::VrrpConfig {
    let mut text = String::new();
    for i in 0..LINKS * PER_LINK {
        let (link, vrid) = (i / PER_LINK, i % PER_LINK + 1);
        text.push_str(&format!(
            "vrrp_instance VI_{i} {{\n interface eth{link}\n virtual_router_id {vrid}\n priority 150\n \
             advert_int 1\n virtual_ipaddress {{\n  198.51.100.{vrid}/32\n }}\n}}\n"
        ));
    }
    let l = keepalived::config::load_str(&text);
    assert_eq!(l.config.vrrp.instances.len(), LINKS * PER_LINK);
    l.config.vrrp
}

#[tokio::test(start_paused = true)]
async fn a_thousand_instances_keep_their_adverts_on_time_through_a_flood() {
    let cfg = config();
    // The test's own records made whole up front: what grows is the runner's.
    let seen = Rc::new(RefCell::new(Seen {
        sends: Vec::with_capacity(20_000),
        order: Vec::with_capacity(20_000),
        bursts: HashMap::with_capacity(40_000),
        ..Seen::default()
    }));
    let mut lan = Lan(seen.clone());
    let mut runner = Runner::new(&cfg, &mut lan);
    let (etx, mut erx) = tokio::sync::mpsc::unbounded_channel();
    let secs = 12;
    let mut flood = Flood::new(seen.clone(), secs);
    seen.borrow_mut().started = Some(tokio::time::Instant::now());
    let used = Rc::new(RefCell::new(Vec::new()));
    let probe = {
        let used = used.clone();
        async move {
            // The memory in use once every instance is MASTER, then near
            // the flood's end.
            tokio::time::sleep(Duration::from_millis(5_500)).await;
            used.borrow_mut().push(IN_USE.load(Ordering::Relaxed));
            tokio::time::sleep(Duration::from_secs(secs - 6)).await;
            used.borrow_mut().push(IN_USE.load(Ordering::Relaxed));
            let _ = etx.send(keepalived::vrrp::run::Event::Stop);
        }
    };
    let mut alarm = keepalived::vrrp::run::TokioAlarm::default();
    let run = drive(&mut runner, &mut lan, &mut erx, &mut flood, &mut alarm);
    tokio::join!(run, probe);

    let s = seen.borrow();
    let read = s.read;
    assert!(read >= 2_000_000, "the flood was read: {read} packets");
    let r = &runner.receipts;
    assert_eq!(r.foreign + r.dispatched + r.malformed, read, "{r:?}");
    assert_eq!(
        r.dispatched,
        read / 10,
        "only the cut-short ones, to their own instance"
    );
    assert_eq!(r.malformed, 0);
    // The cut-short ones counted where they went, nowhere else.
    let too_short: u64 = runner.nodes.iter().map(|n| n.stats.packet_len_err).sum();
    assert_eq!(too_short, r.dispatched);
    assert!(runner.nodes.iter().all(|n| n.stats.advert_rcvd == 0));
    // The refusals' lines: at most REFUSALS_LOGGED a second an instance,
    // plus the lines counting those held back.
    let bound =
        (secs as usize + 1) * 1000 * (keepalived::vrrp::run::REFUSALS_LOGGED as usize + 1) + 20_000;
    assert!(s.logs < bound, "{} log lines", s.logs);
    assert!(
        s.logs < read as usize / 10,
        "{} log lines for {read} packets",
        s.logs
    );

    // Every instance went MASTER and advertised every second, on the µs.
    let mut by: HashMap<usize, Vec<u64>> = HashMap::new();
    // (The stop's priority-0 adverts at 11.5 s aside.)
    for &(t, id) in s.sends.iter().filter(|s| s.0 < 11_500_000) {
        by.entry(id).or_default().push(t);
    }
    assert_eq!(by.len(), LINKS * PER_LINK);
    for (id, ts) in &by {
        assert!(ts.len() >= 8, "instance {id}: {} adverts", ts.len());
        for w in ts.windows(2) {
            assert_eq!(w[1] - w[0], 1_000_000, "instance {id}: {ts:?}");
        }
    }
    // Timers first: every advert left before any packet of the burst that
    // arrived at its instant was read.
    let mut checked = 0;
    for &(t, read) in s.order.iter().filter(|s| s.0 < 11_500_000) {
        if let Some(&before) = s.bursts.get(&t) {
            assert_eq!(
                read, before,
                "packets of the burst at {t} µs read before its adverts"
            );
            checked += 1;
        }
    }
    assert!(
        checked > s.order.len() / 2,
        "{checked} of {} adverts met a burst",
        s.order.len()
    );

    // Memory: what is in use does not grow with the packets read.
    let used = used.borrow();
    assert_eq!(used.len(), 2);
    let growth = used[1] - used[0];
    assert!(
        growth.abs() < 256 * 1024,
        "{} bytes more in use after {read} packets ({used:?})",
        growth
    );
}
