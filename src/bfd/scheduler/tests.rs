use super::*;
use crate::bfd::random::OsRandom;

fn specs(text: &str) -> Vec<Spec> {
    Spec::all(&crate::config::load_str(text).config.bfd_instances)
}

const A: &str = "bfd_instance to_b {\n neighbor_ip 192.0.2.2\n source_ip 192.0.2.1\n \
                 min_rx 100\n min_tx 100\n multiplier 3\n}\n";
const B: &str = "bfd_instance to_a {\n neighbor_ip 192.0.2.1\n source_ip 192.0.2.2\n \
                 min_rx 100\n min_tx 100\n multiplier 3\n}\n";

fn addr(s: &str) -> SocketAddr {
    SocketAddr::new(s.parse().unwrap(), 49152)
}

fn via(src: &str, dst: IpAddr, ttl: u8) -> Received {
    Received {
        src: addr(src),
        dst,
        ttl: Some(ttl),
    }
}

/// Two schedulers on a wire without delay, stepped every millisecond from
/// `from` to `until`; B silent from `b_mute`. Returns the events seen
/// (time, side, up).
fn run(
    a: &mut Scheduler,
    b: &mut Scheduler,
    rng: &mut OsRandom,
    (from, until, b_mute): (u64, u64, u64),
) -> Vec<(u64, char, bool)> {
    let mut events = Vec::new();
    let mut now = from;
    while now <= until {
        let (mut oa, mut ob) = (Vec::new(), Vec::new());
        a.timers(now, rng, &mut oa);
        b.timers(now, rng, &mut ob);
        // Deliveries until quiet (Finals answer at once).
        while !oa.is_empty() || !ob.is_empty() {
            let (xa, xb) = (std::mem::take(&mut oa), std::mem::take(&mut ob));
            for x in xa {
                match x {
                    // Only session 0 talks to B.
                    Action::Send { id: 0, packet } => {
                        let ip = "192.0.2.2".parse().unwrap();
                        b.receive(now, &packet, via("192.0.2.1", ip, 255), rng, &mut ob)
                    }
                    Action::Event { id: 0, up } => events.push((now, 'A', up)),
                    _ => {}
                }
            }
            for x in xb {
                match x {
                    Action::Send { packet, .. } if now < b_mute => {
                        let ip = "192.0.2.1".parse().unwrap();
                        a.receive(now, &packet, via("192.0.2.2", ip, 255), rng, &mut oa)
                    }
                    Action::Event { up, .. } => events.push((now, 'B', up)),
                    _ => {}
                }
            }
        }
        now += 1_000;
    }
    events
}

#[test]
fn sessions_come_up_tell_their_listeners_and_expire_in_detection_time() {
    let mut rng = OsRandom::with_seed(7);
    let mut out = Vec::new();
    let mut a = Scheduler::new(specs(A), 0, &mut rng, &mut out);
    assert_eq!(
        out,
        vec![Action::Event { id: 0, up: false }],
        "start-up state"
    );
    let mut out = Vec::new();
    let mut b = Scheduler::new(specs(B), 0, &mut rng, &mut out);
    let ev = run(&mut a, &mut b, &mut rng, (0, 4_000_000, 3_000_000));
    let ups: Vec<_> = ev.iter().filter(|e| e.2).collect();
    assert_eq!(ups.len(), 2, "{ev:?}");
    assert!(ups.iter().all(|e| e.0 < 2_000_000), "{ev:?}");
    assert_eq!(a.entries()[0].session.detection_time(), 300_000);
    // B silent from 3 s: A's Down comes 300 ms after B's last packet
    // (which left at most one jittered interval, 90 ms, before 3 s).
    let downs: Vec<_> = ev.iter().filter(|e| !e.2 && e.1 == 'A').collect();
    assert_eq!(downs.len(), 1, "{ev:?}");
    let t = downs[0].0;
    assert!((3_210_000..=3_300_000).contains(&t), "{ev:?}");
    assert_eq!(a.entries()[0].session.diag(), Diag::DETECTION_TIME_EXPIRED);
}

#[test]
fn what_is_not_for_a_session_is_counted_and_passed_over() {
    let mut rng = OsRandom::with_seed(1);
    let mut out = Vec::new();
    let mut a = Scheduler::new(specs(A), 0, &mut rng, &mut out);
    out.clear();
    let me: IpAddr = "192.0.2.1".parse().unwrap();
    let mut pkt = Control {
        diag: Diag::NONE,
        state: State::Down,
        poll: false,
        fin: false,
        cpi: false,
        demand: false,
        detect_mult: 3,
        my_disc: 5,
        your_disc: 0,
        desired_min_tx: 1_000_000,
        required_min_rx: 100_000,
        required_min_echo_rx: 0,
    };
    // Truncated, and a stranger.
    a.receive(
        1,
        &pkt.encode()[..20],
        via("192.0.2.2", me, 255),
        &mut rng,
        &mut out,
    );
    a.receive(
        2,
        &pkt.encode(),
        via("192.0.2.9", me, 255),
        &mut rng,
        &mut out,
    );
    // A discriminator nobody has.
    pkt.your_disc = 0xdead;
    a.receive(
        3,
        &pkt.encode(),
        via("192.0.2.2", me, 255),
        &mut rng,
        &mut out,
    );
    // One hop away: GTSM refuses it.
    pkt.your_disc = 0;
    a.receive(
        4,
        &pkt.encode(),
        via("192.0.2.2", me, 254),
        &mut rng,
        &mut out,
    );
    assert_eq!(
        a.discards,
        Discards {
            bogus: 1,
            unknown: 2,
            ttl: 1
        }
    );
    assert!(out.is_empty(), "{out:?}");
    assert_eq!(a.entries()[0].rx, 0);
    // The right one moves it to Init.
    a.receive(
        5,
        &pkt.encode(),
        via("192.0.2.2", me, 255),
        &mut rng,
        &mut out,
    );
    assert_eq!(a.entries()[0].session.state(), State::Init);
}

#[test]
fn a_neighbour_going_admin_down_tells_nobody() {
    let mut rng = OsRandom::with_seed(3);
    let mut out = Vec::new();
    let mut a = Scheduler::new(specs(A), 0, &mut rng, &mut out);
    let mut b = Scheduler::new(specs(B), 0, &mut rng, &mut out);
    run(&mut a, &mut b, &mut rng, (0, 2_000_000, u64::MAX));
    assert_eq!(a.entries()[0].session.state(), State::Up);
    let mut c = b.entries()[0].session.packet();
    c.state = State::AdminDown;
    c.diag = Diag::ADMIN_DOWN;
    let me: IpAddr = "192.0.2.1".parse().unwrap();
    let mut out = Vec::new();
    a.receive(
        2_001_000,
        &c.encode(),
        via("192.0.2.2", me, 255),
        &mut rng,
        &mut out,
    );
    assert_eq!(a.entries()[0].session.state(), State::Down);
    assert!(
        !out.iter().any(|x| matches!(x, Action::Event { .. })),
        "{out:?}"
    );
}

#[test]
fn a_reload_keeps_a_session_found_again_and_announces_every_state() {
    let mut rng = OsRandom::with_seed(9);
    let mut out = Vec::new();
    let mut a = Scheduler::new(specs(A), 0, &mut rng, &mut out);
    let mut b = Scheduler::new(specs(B), 0, &mut rng, &mut out);
    run(&mut a, &mut b, &mut rng, (0, 2_000_000, u64::MAX));
    let disc = a.entries()[0].session.local_disc();
    // The same session with a new min_tx, and a new one.
    let text =
        A.replace("min_tx 100", "min_tx 200") + "bfd_instance to_c {\n neighbor_ip 192.0.2.3\n}\n";
    let mut out = Vec::new();
    let from = a.reload(specs(&text), 2_001_000, &mut rng, &mut out);
    assert_eq!(from, vec![Some(0), None]);
    assert_eq!(
        out,
        vec![
            Action::Event { id: 0, up: true },
            Action::Event { id: 1, up: false }
        ]
    );
    let s = &a.entries()[0].session;
    assert_eq!((s.state(), s.local_disc()), (State::Up, disc));
    assert!(s.polling(), "a changed min_tx polls");
    // It stays Up through the poll sequence.
    let ev = run(&mut a, &mut b, &mut rng, (2_002_000, 4_000_000, u64::MAX));
    assert!(ev.is_empty(), "{ev:?}");
    assert!(!a.entries()[0].session.polling());
    // A session whose neighbour changed starts again.
    let text = A.replace("192.0.2.2", "192.0.2.4");
    let from = a.reload(specs(&text), 4_001_000, &mut rng, &mut Vec::new());
    assert_eq!(from, vec![None]);
    assert_eq!(a.entries()[0].session.state(), State::Down);
}
