//! The VRRP subsystem as the shell hosts it: the real [`World`] of
//! [`crate::vrrp::run`] — one raw socket per instance with a reader task,
//! rtnetlink for the addresses, a packet socket for the announcements, the
//! link watcher, and the scripts (run by the checker's script runner, so
//! both sides start scripts the same way) — and the loop that turns the
//! shell's [`Command`]s into runner events. It runs on a thread of its own,
//! so no checker load can delay an advert.

use super::shell::{Command, Progress, Reporter};
use crate::check::misc::{ScriptEnd, ScriptSpec, Scripts};
use crate::cli::Options;
use crate::config::model::Config;
use crate::config::vrrp::{Instance, Vip};
use crate::config::Loaded;
use crate::vrrp::announce::{gratuitous_arp, unsolicited_na};
use crate::vrrp::fsm::State;
use crate::vrrp::net::{ipv6_forwarding, AdvertSocket, FrameSocket, Iface};
use crate::vrrp::rtnl::{watch_links, Rtnl};
use crate::vrrp::run::{drive, Event, Placement, Runner, World};
use crate::vrrp::script::Outcome;
use std::net::IpAddr;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;

/// How long a notify script may run before it is cut (keepalived never
/// waits for them; we reap them).
const NOTIFY_LIMIT: Duration = Duration::from_secs(86_400);

/// One ordered job for the address worker: addresses, then the frames
/// announcing them, in the order the runner asked.
enum Job {
    Addresses {
        add: bool,
        index: u32,
        vips: Vec<Vip>,
    },
    Announce {
        iface: Iface,
        vips: Vec<Vip>,
        count: u32,
        name: String,
    },
    Done(tokio::sync::oneshot::Sender<()>),
}

struct RealWorld {
    instances: Vec<Instance>,
    ifaces: Vec<Option<Iface>>,
    sockets: Vec<Option<Arc<AdvertSocket>>>,
    jobs: mpsc::UnboundedSender<Job>,
    events: mpsc::UnboundedSender<Event>,
    scripts: Scripts,
    specs: Vec<(ScriptSpec, Duration)>,
    cfg: Arc<Config>,
}

impl RealWorld {
    fn vips(&self, i: usize) -> Vec<Vip> {
        let inst = &self.instances[i];
        inst.vips.iter().chain(&inst.evips).cloned().collect()
    }

    fn spawn_notify(&self, argv: Vec<String>, user: Option<&(String, Option<String>)>) {
        let run_as = crate::config::script_security::identity(&self.cfg, user)
            .ok()
            .flatten();
        let spec = ScriptSpec { argv, run_as };
        let scripts = self.scripts.clone();
        tokio::spawn(async move {
            if let Err(e) = scripts.run(&spec, NOTIFY_LIMIT).await {
                log::warn!("notify script {}: {e}", spec.argv.join(" "));
            }
        });
    }
}

impl World for RealWorld {
    fn send(&mut self, i: usize, pkt: &[u8], dst: IpAddr) {
        if let Some(s) = &self.sockets[i] {
            if let Err(e) = s.send(pkt, dst) {
                log::debug!(
                    "({}) sending an advert to {dst}: {e}",
                    self.instances[i].name
                );
            }
        }
    }

    fn addresses(&mut self, i: usize, add: bool) {
        let Some(iface) = &self.ifaces[i] else { return };
        let _ = self.jobs.send(Job::Addresses {
            add,
            index: iface.index,
            vips: self.vips(i),
        });
    }

    fn announce(&mut self, i: usize, count: u32) {
        let Some(iface) = &self.ifaces[i] else { return };
        // Fresh facts (the MAC may have changed since start).
        let iface = Iface::lookup(&iface.name)
            .ok()
            .flatten()
            .unwrap_or(iface.clone());
        let _ = self.jobs.send(Job::Announce {
            iface,
            vips: self.vips(i),
            count,
            name: self.instances[i].name.clone(),
        });
    }

    fn notify(&mut self, i: usize, state: State, priority: u8) {
        let inst = &self.instances[i];
        let n = &inst.notify;
        let word = match state {
            State::Master => "MASTER",
            State::Backup => "BACKUP",
            State::Fault => "FAULT",
            State::Init => "STOP",
        };
        let specific = match state {
            State::Master => n.master.as_ref(),
            State::Backup => n.backup.as_ref(),
            State::Fault => n.fault.as_ref(),
            State::Init => n.stop.as_ref(),
        };
        let user =
            |s: &crate::config::vrrp::NotifyScript| s.user.clone().map(|u| (u, s.group.clone()));
        if let Some(s) = specific {
            self.spawn_notify(s.args.clone(), user(s).as_ref());
        }
        if let Some(s) = &n.any {
            let mut argv = s.args.clone();
            argv.extend([
                "INSTANCE".to_string(),
                inst.name.clone(),
                word.to_string(),
                priority.to_string(),
            ]);
            self.spawn_notify(argv, user(s).as_ref());
        }
    }

    fn run_script(&mut self, s: usize) {
        let (spec, timeout) = self.specs[s].clone();
        let scripts = self.scripts.clone();
        let events = self.events.clone();
        tokio::spawn(async move {
            let o = match scripts.run(&spec, timeout).await {
                Ok(ScriptEnd::Exited(c)) => Outcome::Exited(c),
                Ok(ScriptEnd::Signaled(s)) => Outcome::Signaled(s),
                Ok(ScriptEnd::TimedOut) => Outcome::TimedOut,
                Err(_) => Outcome::Exited(127),
            };
            let _ = events.send(Event::Script(s, o));
        });
    }
}

/// The address worker: one job after the other, so addresses are there
/// before the frames that announce them.
async fn address_worker(
    rtnl: Rtnl,
    frames: Option<FrameSocket>,
    mut jobs: mpsc::UnboundedReceiver<Job>,
) {
    while let Some(job) = jobs.recv().await {
        match job {
            Job::Addresses { add, index, vips } => {
                for v in &vips {
                    let index = match &v.dev {
                        Some(d) => nix::net::if_::if_nametoindex(d.as_str()).unwrap_or(index),
                        None => index,
                    };
                    let r = if add {
                        rtnl.add(index, v).await
                    } else {
                        rtnl.del(index, v).await
                    };
                    if let Err(e) = r {
                        log::error!("{e}");
                    }
                }
            }
            Job::Announce {
                iface,
                vips,
                count,
                name,
            } => {
                let (Some(frames), Some(mac)) = (&frames, iface.mac) else {
                    continue;
                };
                let router = ipv6_forwarding(&iface.name);
                for v in &vips {
                    let frame = match v.addr {
                        IpAddr::V4(a) => gratuitous_arp(mac, a),
                        IpAddr::V6(a) => unsolicited_na(mac, a, router),
                    };
                    let what = if v.addr.is_ipv4() {
                        "gratuitous ARPs"
                    } else {
                        "Unsolicited Neighbour Adverts"
                    };
                    log::debug!(
                        "({name}) Sending/queueing {what} on {} for {}",
                        iface.name,
                        v.addr
                    );
                    for _ in 0..count {
                        if let Err(e) = frames.send(&iface, &frame) {
                            log::debug!("({name}) announcing {} on {}: {e}", v.addr, iface.name);
                        }
                    }
                }
            }
            Job::Done(tx) => {
                let _ = tx.send(());
            }
        }
    }
}

/// The interface an instance uses: its `interface`, else the global
/// `default_interface`, else eth0 (keepalived's default).
fn interface_of(cfg: &Config, i: &Instance) -> String {
    i.interface.clone().unwrap_or_else(|| {
        cfg.global_defs
            .other
            .iter()
            .find(|s| s.keyword == "default_interface")
            .and_then(|s| s.args.first().cloned())
            .unwrap_or_else(|| "eth0".to_string())
    })
}

/// The VRRP subsystem's loop.
pub async fn run(
    _opts: &Options,
    loaded: Arc<Loaded>,
    mut commands: mpsc::UnboundedReceiver<Command>,
    progress: Reporter,
) -> ExitCode {
    let cfg = Arc::new(loaded.config.clone());
    let vcfg = &cfg.vrrp;
    let rtnl = match Rtnl::open() {
        Ok(r) => r,
        Err(e) => {
            log::error!("VRRP: cannot open rtnetlink: {e}");
            return ExitCode::from(1);
        }
    };
    let frames = match FrameSocket::open() {
        Ok(f) => Some(f),
        Err(e) => {
            log::error!("VRRP: cannot open a packet socket, no gratuitous ARP will be sent: {e}");
            None
        }
    };
    let (etx, mut erx) = mpsc::unbounded_channel();
    let (jtx, jrx) = mpsc::unbounded_channel();
    tokio::spawn(address_worker(rtnl, frames, jrx));

    let mut ifaces = Vec::new();
    let mut runner = Runner::new(vcfg, |i| {
        let name = interface_of(&cfg, i);
        let f = Iface::lookup(&name).ok().flatten();
        if f.is_none() {
            log::error!("({}) interface {name} does not exist", i.name);
        }
        let p = Placement {
            ifname: name,
            src: f.as_ref().and_then(|f| f.source(i.ipv6)),
            up: f.as_ref().is_some_and(|f| f.up),
        };
        ifaces.push(f);
        p
    });
    let mut sockets = Vec::new();
    for (k, n) in runner.nodes.iter().enumerate() {
        let sock = ifaces[k].as_ref().and_then(|f| {
            let group = n.cfg.unicast_peers.is_empty().then(|| n.dsts[0]);
            let bind = if n.cfg.ipv6 { Some(n.src) } else { None };
            match AdvertSocket::open(f, n.cfg.ipv6, n.proto(), group, bind) {
                Ok(s) => Some(Arc::new(s)),
                Err(e) => {
                    log::error!(
                        "({}) cannot open the VRRP socket on {}: {e}",
                        n.cfg.name,
                        f.name
                    );
                    None
                }
            }
        });
        if let Some(s) = &sock {
            let s = s.clone();
            let tx = etx.clone();
            tokio::spawn(async move {
                loop {
                    match s.recv().await {
                        Ok(rx) => {
                            if tx.send(Event::Packet(k, rx)).is_err() {
                                return;
                            }
                        }
                        Err(e) => log::debug!("VRRP receive: {e}"),
                    }
                }
            });
        }
        sockets.push(sock);
    }
    let (ltx, mut lrx) = mpsc::unbounded_channel();
    if let Err(e) = watch_links(ltx) {
        log::error!("VRRP: cannot watch the links: {e}");
    }
    {
        let tx = etx.clone();
        tokio::spawn(async move {
            while let Some(ev) = lrx.recv().await {
                if tx.send(Event::Link(ev.name, ev.up)).is_err() {
                    return;
                }
            }
        });
    }
    let specs = runner
        .scripts
        .iter()
        .map(|(s, _)| {
            let run_as = crate::config::script_security::identity(&cfg, s.user.as_ref())
                .ok()
                .flatten();
            let timeout = if s.timeout_us > 0 {
                s.timeout_us
            } else {
                s.interval_us
            };
            (
                ScriptSpec {
                    argv: s.args.clone(),
                    run_as,
                },
                Duration::from_micros(timeout.max(1)),
            )
        })
        .collect();
    let mut world = RealWorld {
        instances: runner.nodes.iter().map(|n| n.cfg.clone()).collect(),
        ifaces,
        sockets,
        jobs: jtx.clone(),
        events: etx.clone(),
        scripts: Scripts::new(crate::check::misc::DEFAULT_MAX_SCRIPTS),
        specs,
        cfg: cfg.clone(),
    };
    // The shell's commands become runner events; a reload keeps every
    // instance as it is (the running state is what an unchanged file asks).
    let ctx = etx.clone();
    let rep = progress.clone();
    tokio::spawn(async move {
        while let Some(c) = commands.recv().await {
            match c {
                Command::Stop => {
                    let _ = ctx.send(Event::Stop);
                    return;
                }
                Command::Reload(_) => rep.send(Progress::Reloaded),
                Command::DumpData => {}
            }
        }
        let _ = ctx.send(Event::Stop);
    });
    progress.send(Progress::Started);
    drive(&mut runner, &mut world, &mut erx).await;
    // Wait for the address worker to finish the removals.
    let (dtx, drx) = tokio::sync::oneshot::channel();
    let _ = jtx.send(Job::Done(dtx));
    let _ = tokio::time::timeout(Duration::from_secs(5), drx).await;
    for (k, n) in runner.nodes.iter().enumerate() {
        if n.fsm.state == State::Init {
            world.notify(k, State::Init, n.fsm.params.priority);
        }
    }
    // STOP notifies get their second (keepalived's 1 s kill timer).
    if runner
        .nodes
        .iter()
        .any(|n| n.cfg.notify.stop.is_some() || n.cfg.notify.any.is_some())
    {
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    ExitCode::SUCCESS
}
