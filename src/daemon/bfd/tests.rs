//! Two BFD loops on paused time, joined by an in-memory wire.

use super::*;
use crate::bfd::status::Board;
use crate::config::load_str;
use std::io;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};

type Wire = mpsc::UnboundedSender<(Vec<u8>, SocketAddr, IpAddr)>;

struct MemInbox(mpsc::UnboundedReceiver<(Vec<u8>, SocketAddr, IpAddr)>);

impl Inbox for MemInbox {
    async fn recv(&mut self, buf: &mut [u8]) -> io::Result<net::Datagram> {
        match self.0.recv().await {
            Some((b, from, to)) => {
                buf[..b.len()].copy_from_slice(&b);
                Ok((b.len(), from, to, Some(255)))
            }
            None => std::future::pending().await,
        }
    }
}

/// Sends to the other side, noting when.
struct MemOutbox {
    me: IpAddr,
    peer: Wire,
    sent: Arc<Mutex<Vec<Instant>>>,
}

impl Outbox for MemOutbox {
    fn open(&mut self, _: usize, _: &Spec) -> io::Result<()> {
        Ok(())
    }
    fn send(&mut self, _: usize, to: SocketAddr, bytes: &[u8]) -> io::Result<()> {
        self.sent.lock().unwrap().push(Instant::now());
        let _ = self
            .peer
            .send((bytes.to_vec(), SocketAddr::new(self.me, 49152), to.ip()));
        Ok(())
    }
    fn remap(&mut self, _: &[Option<usize>]) {}
    fn local(&self, _: usize) -> Option<SocketAddr> {
        None
    }
}

const A: &str = "bfd_instance to_b {\n neighbor_ip 192.0.2.2\n source_ip 192.0.2.1\n \
                 min_rx 100\n min_tx 100\n multiplier 3\n}\n";
const B: &str = "bfd_instance to_a {\n neighbor_ip 192.0.2.1\n source_ip 192.0.2.2\n \
                 min_rx 100\n min_tx 100\n multiplier 3\n}\n";

struct Side {
    commands: mpsc::UnboundedSender<Command>,
    events: mpsc::UnboundedReceiver<BfdEvent>,
    progress: mpsc::UnboundedReceiver<(usize, Progress)>,
    sent: Arc<Mutex<Vec<Instant>>>,
    task: tokio::task::JoinHandle<ExitCode>,
}

fn side(
    text: &str,
    me: &str,
    inbox: MemInbox,
    peer: Wire,
    seed: u64,
    board: Option<Board>,
) -> Side {
    let (ctx, crx) = mpsc::unbounded_channel();
    let (etx, erx) = mpsc::unbounded_channel();
    let (ptx, prx) = mpsc::unbounded_channel();
    let sent = Arc::new(Mutex::new(Vec::new()));
    let io = Io {
        outbox: MemOutbox {
            me: me.parse().unwrap(),
            peer,
            sent: sent.clone(),
        },
        listeners: BfdListeners {
            vrrp: Some(etx),
            checker: None,
        },
        send_failed: Vec::new(),
        router_id: None,
        board,
    };
    let specs = Spec::all(&load_str(text).config.bfd_instances);
    let rng = crate::bfd::random::OsRandom::with_seed(seed);
    let task = tokio::spawn(serve(specs, inbox, io, crx, Reporter::new(0, ptx), rng));
    Side {
        commands: ctx,
        events: erx,
        progress: prx,
        sent,
        task,
    }
}

fn drain(rx: &mut mpsc::UnboundedReceiver<BfdEvent>) -> Vec<bool> {
    let mut v = Vec::new();
    while let Ok(e) = rx.try_recv() {
        v.push(e.up);
    }
    v
}

#[tokio::test(start_paused = true)]
async fn two_loops_come_up_survive_a_reload_and_detect_a_stop() {
    let (to_a, a_in) = mpsc::unbounded_channel();
    let (to_b, b_in) = mpsc::unbounded_channel();
    let board = Board::default();
    let mut a = side(A, "192.0.2.1", MemInbox(a_in), to_b, 1, Some(board.clone()));
    let mut b = side(B, "192.0.2.2", MemInbox(b_in), to_a, 2, None);
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(drain(&mut a.events), vec![false, true]);
    // The board shows the change, at one time however often it is
    // published (once a second).
    let shown = || {
        board.lock().unwrap().sessions[0]
            .last_transition
            .clone()
            .unwrap()
    };
    let first = shown();
    assert_eq!(
        (first.from.as_str(), first.to.as_str()),
        ("Init", "Up"),
        "{first:?}"
    );
    tokio::time::sleep(Duration::from_millis(2500)).await;
    assert_eq!(shown(), first);
    assert_eq!(drain(&mut b.events), vec![false, true]);
    assert_eq!(a.progress.recv().await, Some((0, Progress::Started)));
    // Steady: a packet every 75-90 ms (100 ms less 10-25 %).
    let gaps: Vec<u128> = {
        let s = b.sent.lock().unwrap();
        s.windows(2)
            .rev()
            .take(10)
            .map(|w| (w[1] - w[0]).as_millis())
            .collect()
    };
    assert!(gaps.iter().all(|g| (75..=90).contains(g)), "{gaps:?}");

    // An unchanged file: the session stays Up, the state is announced.
    a.commands
        .send(Command::Reload(Arc::new(load_str(A))))
        .unwrap();
    assert_eq!(a.progress.recv().await, Some((0, Progress::Reloaded)));
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(drain(&mut a.events), vec![true]);
    assert_eq!(drain(&mut b.events), Vec::<bool>::new(), "no flap");

    // B stops (sending nothing more): A is Down 300 ms after B's last
    // packet.
    b.commands.send(Command::Stop).unwrap();
    assert_eq!(b.task.await.unwrap(), ExitCode::SUCCESS);
    let last = *b.sent.lock().unwrap().last().unwrap();
    let down = loop {
        let e = a.events.recv().await.unwrap();
        if !e.up {
            break Instant::now();
        }
    };
    let took = (down - last).as_millis();
    assert!((299..=301).contains(&took), "{took} ms");
    a.commands.send(Command::Stop).unwrap();
    assert_eq!(a.task.await.unwrap(), ExitCode::SUCCESS);
}
