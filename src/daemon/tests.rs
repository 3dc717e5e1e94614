//! The shell and the checker together on paused time: signals from a
//! channel, probes scripted per port, the dry run as the backend (shared
//! with the test, which reads and tampers with its table). No sleep here
//! waits on the wall clock.

use super::checker::{self, Deps};
use super::shell::{dispatch, Hosted, Shell};
use super::signals::Signal;
use super::subsystem::{Command, Reporter};
use crate::check::conn::Failure;
use crate::check::engine::{Jitter, Outcome, Planned, ProbeKind, Prober};
use crate::cli::Options;
use crate::config::{self, LoadOptions};
use crate::ipvs::diff::Op;
use crate::ipvs::dryrun::DryRun;
use crate::ipvs::{Backend, Dest, IpvsError, Service, ServiceKey, SyncDaemon, Table, Timeouts};
use std::collections::HashSet;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::mpsc;

/// Runs a future the dry run answers at once (it never waits).
fn at_once<T>(f: impl Future<Output = T>) -> T {
    let mut f = std::pin::pin!(f);
    match f
        .as_mut()
        .poll(&mut std::task::Context::from_waker(std::task::Waker::noop()))
    {
        std::task::Poll::Ready(v) => v,
        std::task::Poll::Pending => unreachable!("the dry run never waits"),
    }
}

/// The dry run, shared: the daemon programs it, the test reads it. Counts
/// the batches of operations it was sent.
#[derive(Clone, Default)]
struct Shared(Arc<Mutex<(DryRun, usize)>>);

impl Shared {
    fn dests(&self) -> Vec<String> {
        let g = self.0.lock().unwrap();
        g.0.table()
            .save()
            .lines()
            .filter(|l| l.starts_with("-a"))
            .map(String::from)
            .collect()
    }

    fn batches(&self) -> usize {
        self.0.lock().unwrap().1
    }

    fn ops(&self) -> Vec<String> {
        let mut g = self.0.lock().unwrap();
        g.0.take_recorded()
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    /// Someone else changes the table (`ipvsadm -C` by hand).
    fn tamper(&self, op: Op) {
        let mut g = self.0.lock().unwrap();
        at_once(g.0.apply(&[op]));
        g.0.take_recorded();
    }
}

impl Backend for Shared {
    fn name(&self) -> &'static str {
        "shared dry run"
    }
    async fn dump(&mut self) -> Result<Table, IpvsError> {
        at_once(self.0.lock().unwrap().0.dump())
    }
    async fn services(&mut self) -> Result<Vec<Service>, IpvsError> {
        at_once(self.0.lock().unwrap().0.services())
    }
    async fn dests_of(&mut self, svc: &ServiceKey) -> Result<Option<Vec<Dest>>, IpvsError> {
        at_once(self.0.lock().unwrap().0.dests_of(svc))
    }
    async fn apply(&mut self, ops: &[Op]) -> Vec<Result<(), IpvsError>> {
        let mut g = self.0.lock().unwrap();
        g.1 += 1;
        at_once(g.0.apply(ops))
    }
    async fn timeouts(&mut self) -> Result<Timeouts, IpvsError> {
        at_once(self.0.lock().unwrap().0.timeouts())
    }
    async fn set_timeouts(&mut self, t: Timeouts) -> Result<(), IpvsError> {
        at_once(self.0.lock().unwrap().0.set_timeouts(t))
    }
    async fn start_daemon(&mut self, d: &SyncDaemon) -> Result<(), IpvsError> {
        at_once(self.0.lock().unwrap().0.start_daemon(d))
    }
    async fn stop_daemon(&mut self, state: u32, syncid: u32) -> Result<(), IpvsError> {
        at_once(self.0.lock().unwrap().0.stop_daemon(state, syncid))
    }
}

/// TCP probes answered by port: up unless the port is marked down.
#[derive(Clone, Default)]
struct Ports(Arc<Mutex<HashSet<u16>>>);

impl Ports {
    fn down(&self, port: u16) {
        self.0.lock().unwrap().insert(port);
    }

    fn up(&self, port: u16) {
        self.0.lock().unwrap().remove(&port);
    }
}

impl Prober for Ports {
    fn probe<'a>(
        &'a self,
        check: &'a Planned,
        _url: usize,
        _seq: u16,
    ) -> Pin<Box<dyn Future<Output = Outcome> + Send + 'a>> {
        let ProbeKind::Tcp(c) = &check.kind else {
            panic!("TCP checks only: {:?}", check.kind);
        };
        let down = self.0.lock().unwrap().contains(&c.dst.port());
        Box::pin(async move {
            if down {
                Err(Failure::ConnectTimeout)
            } else {
                Ok(None)
            }
        })
    }
}

/// A config of `ports` (weight 1 each, or `weight` for the last), TCP_CHECK
/// every second, first run at 1 s.
fn conf(ports: &[u16], weight: u32) -> String {
    let mut s = String::from(
        "virtual_server 192.0.2.1 80 {\n lvs_sched rr\n lvs_method NAT\n protocol TCP\n",
    );
    for (i, p) in ports.iter().enumerate() {
        let w = if i + 1 == ports.len() { weight } else { 1 };
        s.push_str(&format!(
            " real_server 127.0.0.1 {p} {{\n weight {w}\n TCP_CHECK {{\n delay_loop 1\n \
             warmup 0\n connect_timeout 1\n }}\n }}\n"
        ));
    }
    s + "}\n"
}

struct Daemon {
    signals: mpsc::UnboundedSender<Signal>,
    /// The checker's commands, beside the shell's.
    commands: mpsc::UnboundedSender<Command>,
    /// Where the BFD subsystem's events would come from.
    bfd: mpsc::UnboundedSender<super::subsystem::BfdEvent>,
    table: Shared,
    ports: Ports,
    path: PathBuf,
    dir: PathBuf,
}

impl Daemon {
    /// Writes `text` and starts the shell and the checker on it, on this
    /// (paused) runtime. The returned future ends when the checker does.
    fn start(tag: &str, text: &str) -> (Daemon, impl Future<Output = ExitCode>) {
        let dir = std::env::temp_dir().join(format!("krs-shell-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("keepalived.conf");
        std::fs::write(&path, text).unwrap();
        let opts = Options {
            use_file: Some(path.display().to_string()),
            dry_run: true,
            ..Options::default()
        };
        let loaded = config::load(
            &path,
            &LoadOptions {
                config_id: "test".into(),
                all_config: false,
                config_test: false,
            },
        );
        assert!(
            loaded.diagnostics.items().is_empty(),
            "{:?}",
            loaded.diagnostics.items()
        );
        let table = Shared(Arc::new(Mutex::new((
            DryRun::recording(Table::default()),
            0,
        ))));
        let ports = Ports::default();
        let (stx, srx) = mpsc::unbounded_channel();
        let (ctx, crx) = mpsc::unbounded_channel();
        let (ptx, prx) = mpsc::unbounded_channel();
        let (_qtx, qrx) = mpsc::unbounded_channel();
        let (btx, brx) = mpsc::unbounded_channel();
        let p2 = ports.clone();
        let deps = Deps {
            prober: Box::new(move |_| Arc::new(p2.clone()) as Arc<dyn Prober>),
            jitter: Box::new(|| Jitter::with_seed(1)),
            queries: qrx,
            peers: checker::Peers {
                bfd_events: Some(brx),
                ..Default::default()
            },
        };
        let backend = table.clone();
        let commands = ctx.clone();
        let run = async move {
            let shell = Shell::quiet();
            let hosted = [Hosted {
                name: "the checker",
                commands: ctx,
                stops_first: false,
            }];
            let (code, ()) = tokio::join!(
                checker::serve(
                    backend,
                    Arc::new(loaded),
                    &opts,
                    Path::new("/"),
                    deps,
                    crx,
                    Reporter::new(0, ptx)
                ),
                dispatch(srx, &opts, &hosted, prx, &shell),
            );
            code
        };
        let d = Daemon {
            signals: stx,
            commands,
            bfd: btx,
            table,
            ports,
            path,
            dir,
        };
        (d, run)
    }

    fn send(&self, s: Signal) {
        self.signals.send(s).unwrap();
    }

    fn write(&self, text: &str) {
        std::fs::write(&self.path, text).unwrap();
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

async fn secs(n: u64) {
    tokio::time::sleep(Duration::from_secs(n)).await;
}

fn has(dests: &[String], port: u16) -> bool {
    dests
        .iter()
        .any(|d| d.contains(&format!("127.0.0.1:{port} ")))
}

#[tokio::test(start_paused = true)]
async fn a_reload_through_the_shell_keeps_the_checkers_state() {
    let (d, run) = Daemon::start("reload", &conf(&[8081, 8082], 1));
    let test = async {
        secs(1).await;
        assert_eq!(d.table.dests().len(), 2, "{:?}", d.table.dests());
        d.ports.down(8082);
        secs(3).await;
        assert!(!has(&d.table.dests(), 8082), "{:?}", d.table.dests());
        d.table.ops();
        // A new server and a reload: the failed one stays out (its state is
        // carried), the new one goes in, the others are not touched.
        d.write(&conf(&[8081, 8082, 8083], 1));
        d.send(Signal::Reload);
        secs(1).await;
        let dests = d.table.dests();
        assert!(
            has(&dests, 8081) && has(&dests, 8083) && !has(&dests, 8082),
            "{dests:?}"
        );
        assert_eq!(
            d.table.ops(),
            vec!["-a -t 192.0.2.1:80 -r 127.0.0.1:8083 -m -w 1"],
            "only the new server"
        );
        // A reload then a stop, at once: the reload is applied first (the
        // weight change), then the stop clears the table.
        d.write(&conf(&[8081, 8082, 8083], 5));
        d.send(Signal::Reload);
        d.send(Signal::Stop);
    };
    let (code, ()) = tokio::join!(run, test);
    assert_eq!(code, ExitCode::SUCCESS);
    let ops = d.table.ops();
    assert_eq!(
        ops.first().map(String::as_str),
        Some("-e -t 192.0.2.1:80 -r 127.0.0.1:8083 -m -w 5"),
        "the reload before the stop: {ops:?}"
    );
    assert!(
        d.table.dests().is_empty(),
        "cleared at stop: {:?}",
        d.table.dests()
    );
}

#[tokio::test(start_paused = true)]
async fn slow_start_and_drain_follow_the_clock() {
    let text = conf(&[8111, 8112], 8).replace(
        " protocol TCP\n",
        " protocol TCP\n slow_start 4\n drain_timeout 10\n",
    );
    let (d, run) = Daemon::start("graceful", &text);
    let test = async {
        secs(1).await;
        assert_eq!(d.table.dests().len(), 2);
        d.table.ops();
        // It fails: weight 0 first; a dry run counts no connection, so the
        // next second's tick takes it out.
        d.ports.down(8112);
        secs(2).await;
        assert_eq!(
            d.table.ops(),
            [
                "-e -t 192.0.2.1:80 -r 127.0.0.1:8112 -m -w 0",
                "-d -t 192.0.2.1:80 -r 127.0.0.1:8112"
            ]
        );
        // Back: weight 1, then a step each second to 8 at 4 s.
        d.ports.up(8112);
        secs(6).await;
        let ops = d.table.ops();
        assert_eq!(
            ops[0], "-a -t 192.0.2.1:80 -r 127.0.0.1:8112 -m -w 1",
            "{ops:?}"
        );
        let weights: Vec<u32> = ops[1..]
            .iter()
            .filter_map(|o| o.rsplit(' ').next()?.parse().ok())
            .collect();
        assert_eq!(weights, [2, 4, 6, 8], "{ops:?}");
        d.send(Signal::Stop);
    };
    let (code, ()) = tokio::join!(run, test);
    assert_eq!(code, ExitCode::SUCCESS);
}

#[tokio::test(start_paused = true)]
async fn reports_of_one_wake_up_are_programmed_in_one_batch() {
    let ports = [8091, 8092, 8093, 8094];
    let (d, run) = Daemon::start("batch", &conf(&ports, 1));
    let test = async {
        secs(1).await;
        assert_eq!(d.table.dests().len(), 4);
        let before = d.table.batches();
        // Every server fails at the same instant: one batch of three
        // deletions, not three.
        for p in &ports[1..] {
            d.ports.down(*p);
        }
        secs(2).await;
        assert_eq!(d.table.dests().len(), 1, "{:?}", d.table.dests());
        assert_eq!(d.table.batches() - before, 1, "one batch");
        assert_eq!(
            d.table.ops().iter().filter(|o| o.starts_with("-d")).count(),
            3
        );
        d.send(Signal::Stop);
    };
    let (code, ()) = tokio::join!(run, test);
    assert_eq!(code, ExitCode::SUCCESS);
}

#[tokio::test(start_paused = true)]
async fn drift_is_repaired_at_the_next_check_of_the_table() {
    let (d, run) = Daemon::start("drift", &conf(&[8101, 8102], 1));
    let test = async {
        secs(1).await;
        assert_eq!(d.table.dests().len(), 2);
        // Someone flushes the table behind the daemon's back.
        d.table.tamper(Op::Flush);
        assert!(d.table.dests().is_empty());
        secs(super::checker::DRIFT_INTERVAL.as_secs()).await;
        assert_eq!(d.table.dests().len(), 2, "repaired: {:?}", d.table.dests());
        d.send(Signal::Stop);
    };
    let (code, ()) = tokio::join!(run, test);
    assert_eq!(code, ExitCode::SUCCESS);
}

#[tokio::test(start_paused = true)]
async fn the_drift_check_waits_while_a_reload_is_read() {
    let (d, run) = Daemon::start("reading", &conf(&[8141, 8142], 1));
    let test = async {
        secs(1).await;
        assert_eq!(d.table.dests().len(), 2);
        // The shell is reading a reload's file, and says no more yet.
        d.commands.send(Command::Reading).unwrap();
        d.table.tamper(Op::Flush);
        secs(super::checker::DRIFT_INTERVAL.as_secs()).await;
        assert!(
            d.table.dests().is_empty(),
            "no drift check while the file is read: {:?}",
            d.table.dests()
        );
        // The reload comes (the same file: it reprograms nothing); the
        // drift check after it repairs.
        d.send(Signal::Reload);
        secs(2 * super::checker::DRIFT_INTERVAL.as_secs()).await;
        assert_eq!(d.table.dests().len(), 2, "repaired: {:?}", d.table.dests());
        d.send(Signal::Stop);
    };
    let (code, ()) = tokio::join!(run, test);
    assert_eq!(code, ExitCode::SUCCESS);
}

#[tokio::test(start_paused = true)]
async fn a_refused_reload_keeps_the_running_table() {
    let (d, run) = Daemon::start("refused", &conf(&[8111, 8112], 1));
    let test = async {
        secs(1).await;
        d.table.ops();
        // A new error (an unknown scheduler is keepalived's error too).
        d.write(&conf(&[8111], 1).replace("lvs_sched rr", "lvs_sched rr\n nosuchkeyword 1"));
        d.send(Signal::Reload);
        secs(1).await;
        assert_eq!(d.table.dests().len(), 2, "kept: {:?}", d.table.dests());
        assert!(d.table.ops().is_empty());
        d.send(Signal::Stop);
    };
    let (code, ()) = tokio::join!(run, test);
    assert_eq!(code, ExitCode::SUCCESS);
}

#[tokio::test(start_paused = true)]
async fn the_shell_hosts_several_subsystems_alike() {
    use super::subsystem::{Command, Progress};
    // Two stand-in subsystems: each starts, answers reloads and records
    // what it was told.
    let dir = std::env::temp_dir().join(format!("krs-shell-two-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("keepalived.conf");
    std::fs::write(&path, conf(&[8121], 1)).unwrap();
    let opts = Options {
        use_file: Some(path.display().to_string()),
        ..Options::default()
    };
    let (ptx, prx) = mpsc::unbounded_channel();
    let (stx, srx) = mpsc::unbounded_channel();
    let mut hosted = Vec::new();
    let mut subsystems = Vec::new();
    for (id, name) in ["one", "two"].into_iter().enumerate() {
        let (tx, mut rx) = mpsc::unbounded_channel::<Command>();
        hosted.push(Hosted {
            name,
            commands: tx,
            stops_first: false,
        });
        let rep = Reporter::new(id, ptx.clone());
        subsystems.push(async move {
            let mut seen = Vec::new();
            // The second one takes its time to start.
            secs(id as u64 * 5).await;
            rep.send(Progress::Started);
            while let Some(c) = rx.recv().await {
                match c {
                    Command::Reload(l) => {
                        seen.push(format!("reload {}", l.config.virtual_servers.len()));
                        rep.send(Progress::Reloaded);
                    }
                    Command::Reading => seen.push("reading".to_string()),
                    Command::DumpData => seen.push("dump".to_string()),
                    Command::VrrpSignal(n) => seen.push(n.to_string()),
                    Command::Stop => {
                        seen.push("stop".to_string());
                        rep.send(Progress::Ended);
                        break;
                    }
                }
            }
            seen
        });
    }
    drop(ptx);
    let driver = async {
        // A reload during the second's start waits for it.
        stx.send(Signal::Reload).unwrap();
        secs(10).await;
        stx.send(Signal::DumpData).unwrap();
        stx.send(Signal::Stop).unwrap();
    };
    let two = subsystems.pop().unwrap();
    let one = subsystems.pop().unwrap();
    let shell = Shell::quiet();
    let ((), a, b, ()) = tokio::join!(dispatch(srx, &opts, &hosted, prx, &shell), one, two, driver);
    let want = vec![
        "reading".to_string(),
        "reload 1".into(),
        "dump".into(),
        "stop".into(),
    ];
    assert_eq!(a, want);
    assert_eq!(b, want);
    let _ = std::fs::remove_dir_all(&dir);
}

/// At SIGTERM the subsystem that hands the traffic off (VRRP) is stopped
/// first and the other (the checker, whose stop deletes the services) only
/// once it reports [`Progress::Released`]; one that never reports it holds
/// the other back for [`RELEASE_WAIT`] at most.
#[tokio::test(start_paused = true)]
async fn at_stop_the_traffic_is_handed_off_before_the_services_go() {
    use super::shell::RELEASE_WAIT;
    use super::subsystem::{Command, Progress};
    use tokio::time::Instant;
    let opts = Options::default();
    // (seconds the first takes to release, or none)
    for release in [Some(2), None] {
        let (ptx, prx) = mpsc::unbounded_channel();
        let (stx, srx) = mpsc::unbounded_channel();
        let mut hosted = Vec::new();
        let mut subsystems = Vec::new();
        let t0 = Instant::now();
        for (id, first) in [(0usize, false), (1, true)] {
            let (tx, mut rx) = mpsc::unbounded_channel::<Command>();
            hosted.push(Hosted {
                name: if first { "VRRP" } else { "the checker" },
                commands: tx,
                stops_first: first,
            });
            let rep = Reporter::new(id, ptx.clone());
            subsystems.push(async move {
                rep.send(Progress::Started);
                let mut stopped = None;
                while let Some(c) = rx.recv().await {
                    if let Command::Stop = c {
                        stopped = Some(t0.elapsed());
                        if first {
                            match release {
                                Some(n) => {
                                    secs(n).await;
                                    rep.send(Progress::Released);
                                }
                                None => secs(3600).await,
                            }
                        }
                        rep.send(Progress::Ended);
                        break;
                    }
                }
                stopped
            });
        }
        drop(ptx);
        let driver = async {
            secs(10).await;
            stx.send(Signal::Stop).unwrap();
        };
        let vrrp = subsystems.pop().unwrap();
        let checker = subsystems.pop().unwrap();
        let shell = Shell::quiet();
        let ((), c, v, ()) = tokio::join!(
            dispatch(srx, &opts, &hosted, prx, &shell),
            checker,
            vrrp,
            driver
        );
        let (c, v) = (c.unwrap().as_secs(), v.unwrap().as_secs());
        assert_eq!(v, 10, "{release:?}");
        match release {
            Some(n) => assert_eq!(c, 10 + n, "the checker after the release"),
            None => assert_eq!(
                c,
                10 + RELEASE_WAIT.as_secs(),
                "the checker after the bound"
            ),
        }
    }
}

#[tokio::test(start_paused = true)]
async fn a_reload_from_a_file_that_is_not_one_keeps_the_running_table() {
    let (d, run) = Daemon::start("nofile", &conf(&[8131, 8132], 1));
    let test = async {
        secs(1).await;
        assert_eq!(d.table.dests().len(), 2);
        d.table.ops();
        let moved = d.dir.join("moved");
        let cases: [(&str, &dyn Fn()); 4] = [
            ("moved away", &|| std::fs::rename(&d.path, &moved).unwrap()),
            ("empty", &|| std::fs::write(&d.path, "").unwrap()),
            ("a directory", &|| std::fs::create_dir(&d.path).unwrap()),
            ("a FIFO", &|| {
                nix::unistd::mkfifo(&d.path, nix::sys::stat::Mode::S_IRWXU).unwrap()
            }),
        ];
        for (what, make) in cases {
            make();
            d.send(Signal::Reload);
            secs(2).await;
            assert_eq!(d.table.dests().len(), 2, "{what}: kept");
            assert!(d.table.ops().is_empty(), "{what}: nothing sent");
            // Back to a file for the next case.
            if d.path.is_dir() {
                std::fs::remove_dir(&d.path).unwrap();
            } else {
                let _ = std::fs::remove_file(&d.path);
            }
        }
        // And a good file is taken again.
        d.write(&conf(&[8131], 1));
        d.send(Signal::Reload);
        secs(2).await;
        assert_eq!(d.table.dests().len(), 1, "{:?}", d.table.dests());
        d.send(Signal::Stop);
    };
    let (code, ()) = tokio::join!(run, test);
    assert_eq!(code, ExitCode::SUCCESS);
}

#[tokio::test(start_paused = true)]
async fn an_include_loop_at_start_and_at_reload_ends_and_loads() {
    // The file includes itself: the load ends (keepalived's open-problem
    // line) and what the file says is programmed.
    let (d, run) = Daemon::start("incloop", &conf(&[8141], 1));
    let looped = |ports: &[u16]| format!("include {}\n{}", d.path.display(), conf(ports, 1));
    let test = async {
        secs(1).await;
        assert_eq!(d.table.dests().len(), 1);
        d.write(&looped(&[8141, 8142]));
        d.send(Signal::Reload);
        secs(2).await;
        assert_eq!(d.table.dests().len(), 2, "{:?}", d.table.dests());
        d.send(Signal::Stop);
    };
    let (code, ()) = tokio::join!(run, test);
    assert_eq!(code, ExitCode::SUCCESS);
    // A start reads it the same way (the shell loads with this function).
    let loaded = config::load(
        &d.path,
        &LoadOptions {
            config_id: "test".into(),
            all_config: false,
            config_test: false,
        },
    );
    assert_eq!(loaded.config.virtual_servers.len(), 1);
    assert!(loaded
        .diagnostics
        .items()
        .iter()
        .any(|x| x.message.contains("Too many open files")));
}

/// BFD_CHECK follows its session as the BFD subsystem tells it: Down
/// takes the real server out, Up puts it back, a reload keeps what was
/// last heard (the other real server's TCP_CHECK is untouched).
#[tokio::test(start_paused = true)]
async fn a_bfd_check_follows_its_session_s_events() {
    let text = "bfd_instance to_rs {\n neighbor_ip 192.0.2.2\n}\n\
                virtual_server 192.0.2.1 80 {\n lb_algo rr\n lb_kind NAT\n protocol TCP\n delay_loop 1\n\
                 real_server 127.0.0.1 8091 {\n  BFD_CHECK {\n   name to_rs\n  }\n }\n\
                 real_server 127.0.0.1 8092 {\n  TCP_CHECK {\n   connect_timeout 1\n  }\n }\n}\n";
    let (d, run) = Daemon::start("bfdcheck", text);
    let event = |up: bool| {
        d.bfd
            .send(super::subsystem::BfdEvent {
                name: "to_rs".into(),
                up,
            })
            .unwrap()
    };
    let test = async {
        secs(2).await;
        assert!(has(&d.table.dests(), 8091), "{:?}", d.table.dests());
        event(false);
        secs(1).await;
        assert!(!has(&d.table.dests(), 8091), "{:?}", d.table.dests());
        assert!(has(&d.table.dests(), 8092), "{:?}", d.table.dests());
        event(true);
        secs(1).await;
        assert!(has(&d.table.dests(), 8091), "{:?}", d.table.dests());
        // Down, then a reload of the same file: it stays out.
        event(false);
        secs(1).await;
        d.send(Signal::Reload);
        secs(2).await;
        assert!(!has(&d.table.dests(), 8091), "{:?}", d.table.dests());
        event(true);
        secs(1).await;
        assert!(has(&d.table.dests(), 8091), "{:?}", d.table.dests());
        d.send(Signal::Stop);
    };
    let (code, ()) = tokio::join!(run, test);
    assert_eq!(code, ExitCode::SUCCESS);
}
