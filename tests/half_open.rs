//! Half-open TCP probes (extension `half_open`) against real loopback
//! listeners: a SYN-ACK is up and the backend accepts nothing, a RST is
//! down, silence is a timeout; IPv4 and IPv6; without CAP_NET_RAW the
//! daemon says so at start and connects in full.

use keepalived::check::engine::{
    plan, Change, Engine, Jitter, NetProber, Outcome, PlanOptions, Planned, ProbeKind, Prober,
};
use keepalived::config::load_str;
use keepalived::services::scripts::Scripts;
use std::io::ErrorKind;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::time::{Duration, Instant};

fn planned(addr: SocketAddr, checker: &str) -> Planned {
    let ip = match addr {
        SocketAddr::V4(a) => a.ip().to_string(),
        SocketAddr::V6(a) => a.ip().to_string(),
    };
    let vip = if addr.is_ipv6() {
        "2001:db8::1"
    } else {
        "192.0.2.1"
    };
    let text = format!(
        "virtual_server {vip} 80 {{\n lb_algo rr\n lb_kind NAT\n protocol TCP\n \
         real_server {ip} {} {{\n {checker}\n }}\n}}\n",
        addr.port()
    );
    let l = load_str(&text);
    assert!(
        l.diagnostics.items().is_empty(),
        "{:?}",
        l.diagnostics.items()
    );
    let (p, errors) = plan(&l.config, &PlanOptions::default());
    assert!(errors.is_empty(), "{errors:?}");
    p.checks.first().cloned().expect("one check")
}

const HALF: &str = "TCP_CHECK {\n connect_timeout 1\n half_open\n }";
const FULL: &str = "TCP_CHECK {\n connect_timeout 1\n }";

/// How many connections completed and wait in the listener's queue.
fn queued(l: &TcpListener) -> usize {
    l.set_nonblocking(true).unwrap();
    let mut n = 0;
    loop {
        match l.accept() {
            Ok(_) => n += 1,
            Err(e) if e.kind() == ErrorKind::WouldBlock => return n,
            Err(e) => panic!("accept: {e}"),
        }
    }
}

/// `n` probes as a probe's future, then `n` launched as the engine's
/// scheduler launches them (no task of their own, the end told through a
/// channel): both ways must answer alike.
async fn probe_all(p: &NetProber, c: &Planned, n: usize) -> Vec<Outcome> {
    let mut out = Vec::new();
    for _ in 0..n {
        out.push(p.probe(c, 0, 1).await);
    }
    if matches!(&c.kind, ProbeKind::Tcp(o) if o.half_open) {
        out.extend(launch_all(p, c, n).await);
    }
    out
}

/// `n` probes launched one after the other, each awaited.
async fn launch_all(p: &NetProber, c: &Planned, n: usize) -> Vec<Outcome> {
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let mut out = Vec::new();
    for i in 0..n {
        assert!(p.launch(c, i, &tx), "a half-open probe launches");
        let (id, r, started, ended) = rx.recv().await.expect("its end is told");
        assert_eq!(id, i);
        assert!(ended >= started);
        out.push(r.map(|()| None));
    }
    out
}

#[tokio::test]
#[cfg_attr(
    not(feature = "root"),
    ignore = "needs CAP_NET_RAW (a raw socket): cargo test --features root"
)]
async fn syn_ack_is_up_and_the_backend_accepts_nothing() {
    for bind in ["127.0.0.1:0", "[::1]:0"] {
        let l = TcpListener::bind(bind).unwrap();
        let addr = l.local_addr().unwrap();
        let p = NetProber::new(Scripts::new(4));
        let c = planned(addr, HALF);
        let plan = keepalived::check::engine::Plan::of_checks(vec![c.clone()]);
        p.prepare(&plan, keepalived::check::beat::Beat::OFF);
        let out = probe_all(&p, &c, 5).await;
        assert!(out.iter().all(|o| o.is_ok()), "{bind}: {out:?}");
        // Five SYN-ACKs, each reset by the kernel: no connection completed.
        assert_eq!(queued(&l), 0, "{bind}");
        // The same check connecting in full does leave connections: the
        // count above could have seen them.
        let c = planned(addr, FULL);
        let out = probe_all(&p, &c, 2).await;
        assert!(out.iter().all(|o| o.is_ok()), "{bind}: {out:?}");
        assert_eq!(queued(&l), 2, "{bind}");
    }
}

#[tokio::test]
#[cfg_attr(
    not(feature = "root"),
    ignore = "needs CAP_NET_RAW (a raw socket): cargo test --features root"
)]
async fn rst_is_down_as_a_refused_connect() {
    for bind in ["127.0.0.1:0", "[::1]:0"] {
        // A port nobody listens on: bound a moment, then released.
        let addr = TcpListener::bind(bind).unwrap().local_addr().unwrap();
        let p = NetProber::new(Scripts::new(4));
        let c = planned(addr, HALF);
        let t = Instant::now();
        let o = p.probe(&c, 0, 1).await;
        assert!(
            matches!(&o, Err(e) if e.to_string().contains("Connection refused")),
            "{bind}: {o:?}"
        );
        // Answered, not timed out.
        assert!(
            t.elapsed() < Duration::from_millis(900),
            "{:?}",
            t.elapsed()
        );
        let t = Instant::now();
        let o = launch_all(&p, &c, 1).await.remove(0);
        assert!(
            matches!(&o, Err(e) if e.to_string().contains("Connection refused")),
            "{bind}, launched: {o:?}"
        );
        assert!(t.elapsed() < Duration::from_millis(900));
    }
}

#[tokio::test]
#[cfg_attr(
    not(feature = "root"),
    ignore = "needs CAP_NET_RAW (a raw socket): cargo test --features root"
)]
async fn silence_is_a_timeout() {
    // A listener whose accept queue is full drops new SYNs unanswered.
    let l = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
    l.bind(&"127.0.0.1:0".parse::<SocketAddr>().unwrap().into())
        .unwrap();
    l.listen(0).unwrap();
    let addr = l.local_addr().unwrap().as_socket().unwrap();
    let _fill: Vec<TcpStream> = (0..2)
        .filter_map(|_| TcpStream::connect_timeout(&addr, Duration::from_millis(300)).ok())
        .collect();
    let p = NetProber::new(Scripts::new(4));
    let c = planned(addr, HALF);
    let t = Instant::now();
    let o = p.probe(&c, 0, 1).await;
    assert!(
        matches!(&o, Err(e) if e.to_string().contains("timed out")),
        "{o:?}"
    );
    assert!(
        t.elapsed() >= Duration::from_millis(990),
        "{:?}",
        t.elapsed()
    );
    // Launched: the source's timeout task ends it at connect_timeout.
    let t = Instant::now();
    let o = launch_all(&p, &c, 1).await.remove(0);
    assert!(
        matches!(&o, Err(e) if e.to_string().contains("timed out")),
        "launched: {o:?}"
    );
    let took = t.elapsed();
    assert!(
        took >= Duration::from_millis(990) && took < Duration::from_secs(3),
        "{took:?}"
    );
}

#[tokio::test]
#[cfg_attr(
    not(feature = "root"),
    ignore = "needs CAP_NET_RAW (a raw socket): cargo test --features root"
)]
async fn the_engine_launches_half_open_checks_up_and_down() {
    // Two real servers, one listening, one refusing: the engine's checks
    // (launched by its scheduler, no task each) keep the first up with
    // nothing accepted and take the second down.
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let up = l.local_addr().unwrap();
    let down = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let rs = |a: SocketAddr| {
        format!(
            " real_server 127.0.0.1 {} {{\n TCP_CHECK {{\n connect_timeout 1\n delay_loop 1\n warmup 0\n half_open\n }}\n }}\n",
            a.port()
        )
    };
    let text = format!(
        "virtual_server 192.0.2.1 80 {{\n lb_algo rr\n lb_kind NAT\n protocol TCP\n{}{}}}\n",
        rs(up),
        rs(down)
    );
    let cfg = load_str(&text).config;
    let (p, errors) = plan(&cfg, &PlanOptions::default());
    assert!(errors.is_empty(), "{errors:?}");
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let prober = std::sync::Arc::new(NetProber::new(Scripts::new(4)));
    let e = Engine::start(&p, prober, tx, Jitter::with_seed(1));
    let ev = tokio::time::timeout(Duration::from_secs(5), rx.recv())
        .await
        .expect("a change within 5 s")
        .expect("an event");
    assert_eq!(ev.check, 1, "{ev:?}");
    assert_eq!(ev.change, Change::Down, "{ev:?}");
    // Two more rounds: the listening one stays up (no event), nothing is
    // accepted, and the board counts every run of both.
    tokio::time::sleep(Duration::from_millis(2500)).await;
    assert!(rx.try_recv().is_err(), "no other change");
    let board = e.board();
    let (a, b) = (board.get(0).unwrap(), board.get(1).unwrap());
    assert!(a.runs >= 2 && b.runs >= 2, "{} {}", a.runs, b.runs);
    assert!(a.last.as_ref().unwrap().ok);
    assert!(!b.last.as_ref().unwrap().ok);
    assert_eq!(queued(&l), 0);
    e.stop().await;
}

#[tokio::test]
#[cfg_attr(
    not(feature = "root"),
    ignore = "needs root to drop CAP_NET_RAW with setpriv: cargo test --features root"
)]
async fn without_cap_net_raw_the_daemon_says_so_and_connects_in_full() {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    let dir = std::env::temp_dir().join(format!("ka-halfopen-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let conf = dir.join("k.conf");
    std::fs::write(
        &conf,
        format!(
            "virtual_server 192.0.2.1 80 {{\n lb_algo rr\n lb_kind NAT\n protocol TCP\n delay_loop 1\n half_open\n \
             real_server 127.0.0.1 {port} {{\n TCP_CHECK {{\n connect_timeout 1\n }}\n }}\n}}\n"
        ),
    )
    .unwrap();
    let child = std::process::Command::new("setpriv")
        .args(["--bounding-set=-net_raw", "--inh-caps=-net_raw", "--"])
        .arg(env!("CARGO_BIN_EXE_keepalived"))
        .args(["--dry-run", "-n", "-l", "-f"])
        .arg(&conf)
        .arg("--status-socket")
        .arg(dir.join("s.sock"))
        .arg("-p")
        .arg(dir.join("p"))
        .arg("-c")
        .arg(dir.join("c"))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("setpriv");
    // Its first check runs 1 s after the start: connections queue up.
    let t = Instant::now();
    let mut n = 0;
    while n == 0 && t.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(200));
        n += queued(&l);
    }
    let _ = nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    );
    let out = child.wait_with_output().unwrap();
    let log =
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    assert!(n > 0, "no full connect came: {log}");
    assert!(
        log.contains("TCP_CHECK half_open to 127.0.0.1:")
            && log.contains("cannot open a raw socket")
            && log.contains("CAP_NET_RAW is needed")
            && log.contains("connecting in full instead"),
        "{log}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
#[cfg_attr(
    not(feature = "root"),
    ignore = "needs CAP_NET_RAW (a raw socket): cargo test --features root"
)]
async fn a_bind_port_held_elsewhere_gets_our_own_reset() {
    // The port `bind_port` names is taken (bound, not listening): the
    // prober cannot hold it, so the backend's SYN-ACK is answered by the
    // RST we send, and still nothing is accepted.
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    let taken = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
    taken
        .bind(&"0.0.0.0:0".parse::<SocketAddr>().unwrap().into())
        .unwrap();
    let port = taken.local_addr().unwrap().as_socket().unwrap().port();
    let p = NetProber::new(Scripts::new(4));
    let c = planned(
        addr,
        &format!("TCP_CHECK {{\n connect_timeout 1\n bind_port {port}\n half_open\n }}"),
    );
    let out = probe_all(&p, &c, 3).await;
    assert!(out.iter().all(|o| o.is_ok()), "{out:?}");
    assert_eq!(queued(&l), 0);
}

#[tokio::test]
#[cfg_attr(
    not(feature = "root"),
    ignore = "needs CAP_NET_RAW (a raw socket): cargo test --features root"
)]
async fn bindto_is_the_syn_s_source() {
    // What leaves the director, read with a raw socket of our own: the SYN
    // to the listener carries `bindto` as its source, and no connection
    // follows it.
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    let tap = socket2::Socket::new(
        socket2::Domain::IPV4,
        socket2::Type::RAW,
        Some(socket2::Protocol::TCP),
    )
    .unwrap();
    tap.set_nonblocking(true).unwrap();
    let p = NetProber::new(Scripts::new(4));
    let c = planned(
        addr,
        "TCP_CHECK {\n connect_timeout 1\n bindto 127.0.0.2\n half_open\n }",
    );
    let o = p.probe(&c, 0, 1).await;
    assert!(o.is_ok(), "{o:?}");
    let mut syns = Vec::new();
    let mut buf = [0u8; 128];
    while let Ok(n) = std::io::Read::read(&mut &tap, &mut buf) {
        let pkt = &buf[..n];
        let ihl = usize::from(pkt[0] & 0x0f) * 4;
        let dport = u16::from_be_bytes([pkt[ihl + 2], pkt[ihl + 3]]);
        let flags = pkt[ihl + 13];
        if dport == addr.port() && flags & 0x02 != 0 {
            syns.push(std::net::Ipv4Addr::new(pkt[12], pkt[13], pkt[14], pkt[15]));
        }
    }
    assert_eq!(syns, vec![std::net::Ipv4Addr::new(127, 0, 0, 2)]);
    assert_eq!(queued(&l), 0);
}

/// Whether the listener's side of a connection from `peer` port to `port`
/// on 127.0.0.1 waits in TIME_WAIT (/proc/net/tcp, state 06).
fn in_time_wait(port: u16, peer: u16) -> bool {
    let t = std::fs::read_to_string("/proc/net/tcp").unwrap();
    t.lines().skip(1).any(|l| {
        let f: Vec<&str> = l.split_whitespace().collect();
        f[1] == format!("0100007F:{port:04X}")
            && f[2] == format!("0100007F:{peer:04X}")
            && f[3] == "06"
    })
}

#[tokio::test]
#[cfg_attr(
    not(feature = "root"),
    ignore = "needs CAP_NET_RAW (a raw socket): cargo test --features root"
)]
async fn a_backend_s_time_wait_on_our_port_is_passed_not_a_timeout() {
    // The backend closed first an earlier connection from the port we
    // probe from (a full-connect checker's, another client's): it holds
    // it in TIME_WAIT and answers a SYN whose number is not past the old
    // connection's with a bare ACK, not a SYN-ACK (RFC 1122 4.2.2.13,
    // Linux's tcp_timewait_state_process). A connect gets through a
    // second later (its kernel resets that ACK and sends the SYN again);
    // a probe must not wait for its timeout and call a live backend down.
    // Half the SYNs (random numbers) fall short: eight rounds, alternately
    // a probe's future and a launched probe.
    use std::io::Read;
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    for round in 0..8 {
        let s = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
        s.set_reuse_address(true).unwrap();
        s.bind(&"127.0.0.1:0".parse::<SocketAddr>().unwrap().into())
            .unwrap();
        let port = s.local_addr().unwrap().as_socket().unwrap().port();
        s.connect(&addr.into()).unwrap();
        let mut c: TcpStream = s.into();
        // The backend closes first: its side goes to TIME_WAIT.
        drop(l.accept().unwrap().0);
        let mut b = [0u8; 1];
        assert_eq!(c.read(&mut b).unwrap(), 0);
        drop(c);
        let t0 = Instant::now();
        while !in_time_wait(addr.port(), port) {
            assert!(t0.elapsed() < Duration::from_secs(2), "no TIME_WAIT");
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        let p = NetProber::new(Scripts::new(4));
        let c = planned(
            addr,
            &format!("TCP_CHECK {{\n connect_timeout 1\n bind_port {port}\n half_open\n }}"),
        );
        let t0 = Instant::now();
        let o = if round % 2 == 0 {
            p.probe(&c, 0, 1).await
        } else {
            launch_all(&p, &c, 1).await.remove(0)
        };
        assert!(o.is_ok(), "round {round}: {o:?} after {:?}", t0.elapsed());
        assert!(t0.elapsed() < Duration::from_millis(500), "round {round}");
        assert_eq!(queued(&l), 0, "round {round}");
        l.set_nonblocking(false).unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(feature = "root"),
    ignore = "needs CAP_NET_RAW (a raw socket): cargo test --features root"
)]
async fn a_new_source_reads_its_replies_on_a_runtime_of_two_threads() {
    // A source's tasks spawned from inside its own construction could be
    // polled at once by the other thread, before they could reach the
    // source: that reader ended, and every probe waited for its timeout
    // (there, the timeout task reads what came). Each new prober here
    // opens a source of its own; its first answer must come at the
    // reader's pace, far within the second of its timeout.
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let c = planned(l.local_addr().unwrap(), HALF);
    let plan = keepalived::check::engine::Plan::of_checks(vec![c.clone()]);
    let mut slow = Vec::new();
    // Both workers kept busy, as a daemon's are at tens of thousands of
    // checks a second: a task spawned is then taken by the other one at
    // once, not after it wakes.
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    for _ in 0..2 {
        let stop = stop.clone();
        tokio::spawn(async move {
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                tokio::task::yield_now().await;
            }
        });
    }
    for i in 0..300 {
        let p = NetProber::new(Scripts::new(4));
        p.prepare(&plan, keepalived::check::beat::Beat::OFF);
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let t = Instant::now();
        assert!(p.launch(&c, i, &tx), "a half-open probe launches");
        let (_, r, _, _) = tokio::time::timeout(Duration::from_secs(3), rx.recv())
            .await
            .expect("the probe ends")
            .expect("its end is told");
        assert!(r.is_ok(), "{r:?}");
        if t.elapsed() > Duration::from_millis(500) {
            slow.push((i, t.elapsed()));
        }
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    assert!(
        slow.is_empty(),
        "answers read only at their timeout: {slow:?}"
    );
}
