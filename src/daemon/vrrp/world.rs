//! The real [`World`] of [`crate::vrrp::run`] that the VRRP subsystem's
//! loop ([`super::run`]) drives: advert sockets per link, family, protocol
//! and mode ([`super::wire`]), rtnetlink and a packet socket behind the
//! address worker ([`super::worker`]), notifications (scripts, FIFOs,
//! SMTP) through [`crate::services`], tracked processes and files, the
//! dumps and the status board.

use super::worker::Job;
use super::{procwatch, syncd, wire, NOTIFY_LIMIT};
use crate::config::model::Config;
use crate::config::vrrp::{
    Instance, NftTable, NotifyScript, Route, Rule, SyncGroup, Vip, VrrpScript,
};
use crate::services::scripts::{ScriptEnd, ScriptSpec, Scripts};
use crate::vrrp::dump::Dump;
use crate::vrrp::net::{AdvertSocket, Iface};
use crate::vrrp::nftables::Element;
use crate::vrrp::run::Changed;
use crate::vrrp::run::{Event, Node, Notified, Placement, Runner, Statics, World};
use crate::vrrp::script::Outcome;
use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;

/// What the world holds for one node.
pub(super) struct NodeIo {
    pub(super) name: String,
    /// `dont_track_primary` (link-local drop rules match the name).
    pub(super) dont_track_primary: bool,
    /// An IPv6 instance.
    pub(super) ipv6: bool,
    /// Shared with the other instances of the interface.
    pub(super) iface: Option<Arc<Iface>>,
    /// The instance's VMAC (`use_vmac`): its addresses go there, and its
    /// adverts unless `vmac_xmit_base`.
    pub(super) vmac: Option<Arc<Iface>>,
    pub(super) socket: Option<Arc<AdvertSocket>>,
    /// Its socket's number on the [`wire::Wire`].
    pub(super) rx: Option<crate::vrrp::dispatch::Rx>,
}

pub(super) struct RealWorld {
    pub(super) board: crate::vrrp::status::Board,
    /// When the counters were last published.
    pub(super) counted: Option<std::time::Instant>,
    /// The advert sockets.
    pub(super) wire: wire::Wire,
    /// Interfaces looked up in the last second, by name: a start or a
    /// reload of hundreds of instances reads each once.
    pub(super) ifaces: HashMap<String, (std::time::Instant, Arc<Iface>)>,
    /// `-V`: leave the addresses at stop.
    pub(super) dont_release: bool,
    /// `notify_fifo` and `vrrp_notify_fifo`: one line per state change.
    pub(super) fifos: Vec<(String, std::fs::File)>,
    pub(super) nodes: HashMap<usize, NodeIo>,
    pub(super) jobs: mpsc::UnboundedSender<Job>,
    pub(super) events: mpsc::UnboundedSender<Event>,
    /// `vrrp_script` checks: a pool of their own, so that hung notify
    /// scripts never hold back the checks that move the VIPs.
    pub(super) tracking: Scripts,
    /// Notify scripts, ended with their process groups at stop.
    pub(super) notifies: Scripts,
    pub(super) cfg: Arc<Config>,
    /// Addresses this daemon removed, and when (see `removed_by_us`).
    pub(super) removed: HashMap<IpAddr, std::time::Instant>,
    /// SMTP alerts (`smtp_server` and recipients configured).
    pub(super) alerter: Option<crate::services::smtp_alert::Alerter>,
    /// The state each instance last mailed about.
    pub(super) last_email: HashMap<String, Notified>,
    /// The FIFO scripts started here, killed at the end.
    pub(super) fifo_scripts: Vec<tokio::process::Child>,
    /// The IPVS sync daemons of `lvs_sync_daemon IF INSTANCE`.
    pub(super) syncd: Option<syncd::Syncd>,
    /// The process table `vrrp_track_process` counts.
    pub(super) procs: procwatch::Procs,
    /// Where state notifications go for SNMP traps, when SNMP runs.
    pub(super) snmp:
        Option<tokio::sync::mpsc::UnboundedSender<crate::daemon::subsystem::VrrpEvent>>,
}

/// The interface an instance uses: its `interface`, else the global
/// `default_interface`, else eth0 (keepalived's default).
pub(super) fn interface_of(cfg: &Config, i: &Instance) -> String {
    i.interface
        .clone()
        .unwrap_or_else(|| default_interface(cfg))
}

/// Deletes an instance's VMAC (keepalived's line when it went).
pub(super) fn remove_vmac(io: &NodeIo) {
    if let Some(v) = &io.vmac {
        match crate::vrrp::vmac::delete(v.index) {
            Ok(()) => log::info!("({}): Success removing VMAC interface {}", io.name, v.name),
            Err(e) => log::error!(
                "({}): cannot remove VMAC interface {}: {e}",
                io.name,
                v.name
            ),
        }
    }
}

/// What the VRRP side keeps of a reloaded configuration: its globals and
/// VRRP settings; not the checker's virtual servers, not the instances
/// (the runner holds those), not the raw blocks.
pub(super) fn globals_of(c: &Config) -> Config {
    Config {
        root: c.root.clone(),
        global_defs: c.global_defs.clone(),
        ssl: None,
        virtual_server_groups: Vec::new(),
        virtual_servers: Vec::new(),
        track_files: c.track_files.clone(),
        bfd_instances: c.bfd_instances.clone(),
        other_blocks: Vec::new(),
        vrrp: crate::config::vrrp::VrrpConfig {
            instances: Vec::new(),
            ..c.vrrp.clone()
        },
        default_user_ok: c.default_user_ok,
    }
}

/// The global `default_interface`, else eth0.
pub(super) fn default_interface(cfg: &Config) -> String {
    cfg.global_defs
        .default_interface
        .clone()
        .unwrap_or_else(|| "eth0".to_string())
}

impl RealWorld {
    /// A state notification for the SNMP subsystem's traps.
    fn tell_snmp(&self, group: bool, name: &str, state: Notified) {
        let Some(tx) = &self.snmp else { return };
        let state = match state {
            Notified::Master => "MASTER",
            Notified::Backup => "BACKUP",
            Notified::Fault => "FAULT",
            Notified::Stop => "STOP",
            Notified::Deleted => "DELETED",
            _ => return,
        };
        let _ = tx.send(crate::daemon::subsystem::VrrpEvent {
            group,
            name: name.to_string(),
            state,
        });
    }

    /// Interface `name` as it is (looked up at most once a second).
    fn iface(&mut self, name: &str) -> Option<Arc<Iface>> {
        let now = std::time::Instant::now();
        if let Some((t, f)) = self.ifaces.get(name) {
            if now.duration_since(*t) < Duration::from_secs(1) {
                return Some(f.clone());
            }
        }
        self.ifaces
            .retain(|_, (t, _)| now.duration_since(*t) < Duration::from_secs(1));
        let f = Arc::new(Iface::lookup(name).ok().flatten()?);
        self.ifaces.insert(name.to_string(), (now, f.clone()));
        Some(f)
    }

    /// One line to each VRRP FIFO: `INSTANCE "VI_1" MASTER 150\n`.
    fn fifo_line(&mut self, name: &str, word: &str, priority: u8) {
        self.fifo_write(format!("INSTANCE \"{name}\" {word} {priority}\n"));
    }

    /// One line to each VRRP FIFO.
    fn fifo_write(&mut self, line: String) {
        for (path, f) in &mut self.fifos {
            use std::io::Write;
            if let Err(e) = f.write_all(line.as_bytes()) {
                log::warn!("notify FIFO {path}: {e}");
            }
        }
    }

    /// keepalived's `vrrp_smtp_notifier()`: one mail per state entered
    /// (not twice the same), FAULT not with `no_email_faults`, none at
    /// stop.
    fn smtp(&mut self, inst: &Instance, state: Notified) {
        let Some(alerter) = &self.alerter else {
            return;
        };
        let on = inst.smtp_alert == Some(true);
        if !on
            || (state == Notified::Fault && self.cfg.vrrp.no_email_faults)
            || self.last_email.get(&inst.name) == Some(&state)
        {
            return;
        }
        let (subject, body) = match state {
            Notified::Master => (
                "Entering MASTER state",
                "=> VRRP Instance is now owning VRRP VIPs <=",
            ),
            Notified::Backup => (
                "Entering BACKUP state",
                "=> VRRP Instance is no longer owning VRRP VIPs <=",
            ),
            Notified::Fault => (
                "Entering FAULT state",
                "=> VRRP Instance is no longer owning VRRP VIPs <=",
            ),
            // keepalived words a "Stopping" mail too, but its VRRP process
            // ends before the mail leaves: none arrives (the lab's
            // vrrp_smtp_alerts test), so none is sent.
            _ => return,
        };
        alerter.send(alerter.alert(&format!("VRRP Instance {}", inst.name), subject, body));
        self.last_email.insert(inst.name.clone(), state);
    }

    fn spawn_notify(&self, s: &NotifyScript, extra: &[String]) {
        let user = s.user.clone().map(|u| (u, s.group.clone()));
        let run_as = crate::config::script_security::identity(&self.cfg, user.as_ref())
            .ok()
            .flatten();
        let mut argv = s.args.clone();
        argv.extend_from_slice(extra);
        let spec = ScriptSpec { argv, run_as };
        let scripts = self.notifies.clone();
        tokio::spawn(async move {
            if let Err(e) = scripts.run(&spec, NOTIFY_LIMIT).await {
                log::warn!("notify script {}: {e}", spec.argv.join(" "));
            }
        });
    }
}

impl World for RealWorld {
    fn release_at_stop(&self) -> bool {
        !self.dont_release
    }

    fn process_counts(&mut self) -> Vec<(String, u32)> {
        self.procs.counts()
    }

    fn track_file_value(&mut self, path: &str) -> Option<i64> {
        match crate::services::track_file::read_status(std::path::Path::new(path)) {
            Ok(v) => Some(v),
            Err(v) => {
                log::info!("Invalid number {v} read from {path} - ignoring");
                None
            }
        }
    }

    fn dump(&mut self, r: &Runner, what: Dump, now_us: u64) {
        let text = match what {
            Dump::Data => {
                let now_unix = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0.0, |d| d.as_secs_f64());
                crate::vrrp::dump::data(&self.cfg, r, crate::vrrp::dump::Clock { now_us, now_unix })
            }
            Dump::Stats | Dump::StatsClear => crate::vrrp::dump::stats(r),
            Dump::Json => crate::vrrp::dump::json(r),
        };
        let path = crate::vrrp::dump::path(what.file());
        match crate::print::write_private(&path, &text) {
            Ok(()) => log::info!("Printing VRRP {} to {}", what.file(), path.display()),
            Err(e) => log::error!("cannot write {}: {e}", path.display()),
        }
    }

    fn publish(&mut self, r: &Runner, changed: &Changed) {
        // Counters at most once a second: they move at every advert.
        let now = std::time::Instant::now();
        let counters = changed.all
            || (changed.counters
                && self
                    .counted
                    .is_none_or(|t| now.duration_since(t) >= Duration::from_secs(1)));
        if changed.all || !changed.nodes.is_empty() || counters {
            if let Ok(mut b) = self.board.lock() {
                crate::vrrp::status::update(&mut b, r, changed, counters);
            }
        }
        if counters {
            self.counted = Some(now);
        }
    }

    fn placement(&mut self, i: &Instance) -> Placement {
        let name = interface_of(&self.cfg, i);
        let f = self.iface(&name);
        if f.is_none() {
            log::error!("({}) interface {name} does not exist", i.name);
        }
        Placement {
            src: f.as_ref().and_then(|f| f.source(i.ipv6)),
            up: f.as_ref().is_some_and(|f| f.up),
            ifname: name,
        }
    }

    fn attach(&mut self, n: &Node) -> Option<crate::vrrp::dispatch::Rx> {
        let iface = self.iface(&n.ifname);
        let vmac = match (&n.cfg.vmac, &iface) {
            (Some(name), Some(parent)) => {
                let mac = crate::vrrp::vmac::mac(n.cfg.vrid, n.cfg.ipv6);
                match crate::vrrp::vmac::create(name, parent.index, mac) {
                    Ok(()) => {
                        crate::vrrp::vmac::configure(name, &parent.name, n.cfg.ipv6);
                        let up = nix::net::if_::if_nametoindex(name.as_str())
                            .map_err(std::io::Error::from)
                            .and_then(crate::vrrp::vmac::up);
                        if let Err(e) = up {
                            log::error!("({}): cannot set {name} up: {e}", n.cfg.name);
                        }
                        if let (true, Some(ll), Ok(index)) = (
                            n.cfg.ipv6,
                            parent.link_local(),
                            nix::net::if_::if_nametoindex(name.as_str()),
                        ) {
                            if let Err(e) = crate::vrrp::vmac::add_link_local(index, ll) {
                                log::error!("({}): {name}: link-local {ll}: {e}", n.cfg.name);
                            }
                        }
                        log::info!("({}): Success creating VMAC interface {name}", n.cfg.name);
                        let v = Iface::lookup(name).ok().flatten().map(Arc::new);
                        if let (Some(v), Some(table)) = (&v, &self.cfg.vrrp.nftables) {
                            let _ = self.jobs.send(Job::Vmac {
                                table: table.clone(),
                                ipv6: n.cfg.ipv6,
                                vmac: v.index,
                                parent: parent.index,
                                add: true,
                            });
                        }
                        v
                    }
                    Err(e) => {
                        log::error!("({}): cannot create VMAC interface {name}: {e}", n.cfg.name);
                        None
                    }
                }
            }
            _ => None,
        };
        // Adverts leave from the VMAC (its MAC the source) unless
        // vmac_xmit_base (an IPv6 one from the link-local it shares with
        // its interface).
        let send_on = match &vmac {
            Some(v) if !n.cfg.vmac_xmit_base => Some(v),
            _ => iface.as_ref(),
        };
        let opened = send_on.and_then(|f| {
            let key = wire::Key {
                ifname: f.name.clone(),
                ipv6: n.cfg.ipv6,
                proto: n.proto(),
                group: n.cfg.unicast_peers.is_empty().then(|| n.dsts[0]),
                bind: n.cfg.ipv6.then_some(n.src),
                hops: n.ttl(),
            };
            match self.wire.open(key, f) {
                Ok(s) => Some(s),
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
        let (rx, socket) = opened.map_or((None, None), |(rx, s)| (Some(rx), Some(s)));
        self.nodes.insert(
            n.id,
            NodeIo {
                name: n.cfg.name.clone(),
                dont_track_primary: n.cfg.dont_track_primary,
                ipv6: n.cfg.ipv6,
                iface,
                vmac,
                socket,
                rx,
            },
        );
        rx
    }

    fn detach(&mut self, id: usize) {
        if let Some(io) = self.nodes.remove(&id) {
            if let Some(rx) = io.rx {
                self.wire.close(rx);
            }
            if let (Some(v), Some(p), Some(table)) = (&io.vmac, &io.iface, &self.cfg.vrrp.nftables)
            {
                let _ = self.jobs.send(Job::Vmac {
                    table: table.clone(),
                    ipv6: io.ipv6,
                    vmac: v.index,
                    parent: p.index,
                    add: false,
                });
            }
            remove_vmac(&io);
        }
    }

    fn send(&mut self, id: usize, pkt: &[u8], dst: IpAddr) {
        let Some(io) = self.nodes.get(&id) else {
            return;
        };
        if let Some(s) = &io.socket {
            if let Err(e) = s.send(pkt, dst) {
                log::debug!("({}) sending an advert to {dst}: {e}", io.name);
            }
        }
    }

    fn removed_by_us(&mut self, addr: IpAddr) -> bool {
        // Our own deletions come back within milliseconds; two seconds is
        // room for a loaded machine.
        let now = std::time::Instant::now();
        self.removed
            .retain(|_, t| now.duration_since(*t) < Duration::from_secs(2));
        self.removed.contains_key(&addr)
    }

    fn addresses(&mut self, id: usize, vips: &[Vip], add: bool) {
        let now = std::time::Instant::now();
        for v in vips {
            if add {
                self.removed.remove(&v.addr);
            } else {
                self.removed.insert(v.addr, now);
            }
        }
        let Some(io) = self.nodes.get(&id) else {
            return;
        };
        // Addresses without `dev` go on the VMAC when there is one.
        let Some(iface) = io.vmac.as_ref().or(io.iface.as_ref()) else {
            return;
        };
        let _ = self.jobs.send(Job::Addresses {
            add,
            index: iface.index,
            vips: vips.to_vec(),
        });
    }

    fn firewall(&mut self, id: usize, table: &NftTable, vips: &[Vip], add: bool) {
        let Some(io) = self.nodes.get(&id) else {
            return;
        };
        let (index, ifname) = io
            .vmac
            .as_ref()
            .or(io.iface.as_ref())
            .map_or((0, String::new()), |f| (f.index, f.name.clone()));
        // keepalived matches a link-local address by interface name for an
        // instance with dont_track_primary, unless nftables_ifindex.
        let by_name = io.dont_track_primary && !table.ifindex;
        let elems = vips
            .iter()
            .map(|v| match &v.dev {
                Some(d) => {
                    let i = nix::net::if_::if_nametoindex(d.as_str()).unwrap_or(index);
                    Element::of(v.addr, i, d, by_name)
                }
                None => Element::of(v.addr, index, &ifname, by_name),
            })
            .collect();
        let _ = self.jobs.send(Job::Firewall {
            table: table.clone(),
            add,
            elems,
        });
    }

    fn routes(&mut self, id: usize, routes: &[Route], add: bool) {
        let Some(Some(iface)) = self.nodes.get(&id).map(|io| &io.iface) else {
            return;
        };
        let _ = self.jobs.send(Job::Routes {
            add,
            index: Some(iface.index),
            routes: routes.to_vec(),
        });
    }

    fn statics(&mut self, st: &Statics, add: bool) {
        // A static address without `dev` goes on the default interface.
        let index =
            nix::net::if_::if_nametoindex(default_interface(&self.cfg).as_str()).unwrap_or(0);
        let addresses = Job::Addresses {
            add,
            index,
            vips: st.addresses.clone(),
        };
        let routes = Job::Routes {
            add,
            index: None,
            routes: st.routes.clone(),
        };
        let rules = Job::Rules {
            add,
            rules: st.rules.clone(),
        };
        let jobs = if add {
            [addresses, routes, rules]
        } else {
            [rules, routes, addresses]
        };
        for j in jobs {
            let _ = self.jobs.send(j);
        }
    }

    fn rules(&mut self, _id: usize, rules: &[Rule], add: bool) {
        let _ = self.jobs.send(Job::Rules {
            add,
            rules: rules.to_vec(),
        });
    }

    fn announce(&mut self, id: usize, vips: &[Vip], count: u32) {
        let Some(io) = self.nodes.get(&id) else {
            return;
        };
        // From the VMAC (its MAC) when there is one.
        let Some(iface) = io.vmac.as_ref().or(io.iface.as_ref()) else {
            return;
        };
        // Fresh facts (the MAC may have changed since start).
        let iface = Iface::lookup(&iface.name)
            .ok()
            .flatten()
            .unwrap_or_else(|| (**iface).clone());
        let spacing = (
            self.cfg.vrrp.announce_interval_us(&iface.name, false),
            self.cfg.vrrp.announce_interval_us(&iface.name, true),
        );
        let _ = self.jobs.send(Job::Announce {
            iface,
            vips: vips.to_vec(),
            count,
            name: io.name.clone(),
            spacing,
        });
    }

    fn notify(&mut self, inst: &Instance, state: Notified, priority: u8) {
        if let Some(s) = &self.syncd {
            s.follow(&inst.name, state);
        }
        self.tell_snmp(false, &inst.name, state);
        let n = &inst.notify;
        let word = match state {
            Notified::Master => "MASTER",
            Notified::Backup => "BACKUP",
            Notified::Fault => "FAULT",
            Notified::Stop => "STOP",
            Notified::Deleted => "DELETED",
            Notified::MasterRxLowerPri => "MASTER_RX_LOWER_PRI",
            Notified::Priority(true) => "MASTER_PRIORITY",
            Notified::Priority(false) => "BACKUP_PRIORITY",
        };
        match state {
            Notified::MasterRxLowerPri => {
                if let Some(s) = &n.master_rx_lower_pri {
                    self.spawn_notify(s, &[]);
                }
                self.fifo_line(&inst.name, word, priority);
                return;
            }
            Notified::Priority(_) => {
                let on = inst.notify_priority_changes == Some(true);
                if on {
                    self.fifo_line(&inst.name, word, priority);
                }
                return;
            }
            _ => {}
        }
        let specific = match state {
            Notified::Master => n.master.as_ref(),
            Notified::Backup => n.backup.as_ref(),
            Notified::Fault => n.fault.as_ref(),
            Notified::Stop => n.stop.as_ref(),
            _ => n.deleted.as_ref().and_then(Option::as_ref),
        };
        if let Some(s) = specific {
            self.spawn_notify(s, &[]);
        }
        // keepalived's notify_fifo(): `INSTANCE "VI_1" MASTER 150\n`, no NUL.
        let fifo_word = match state {
            Notified::Deleted if n.deleted.is_none() => "FAULT",
            _ => word,
        };
        self.fifo_line(&inst.name, fifo_word, priority);
        if let Some(s) = &n.any {
            let extra = [
                "INSTANCE".to_string(),
                inst.name.clone(),
                word.to_string(),
                priority.to_string(),
            ];
            self.spawn_notify(s, &extra);
        }
        self.smtp(inst, state);
    }

    fn notify_group(&mut self, g: &SyncGroup, state: Notified) {
        self.tell_snmp(true, &g.name, state);
        let n = &g.notify;
        let (word, specific) = match state {
            Notified::Master => ("MASTER", n.master.as_ref()),
            Notified::Backup => ("BACKUP", n.backup.as_ref()),
            Notified::Fault => ("FAULT", n.fault.as_ref()),
            Notified::Stop => ("STOP", n.stop.as_ref()),
            _ => return,
        };
        if let Some(s) = specific {
            self.spawn_notify(s, &[]);
        }
        // keepalived's notify_fifo() for a group: `GROUP "G1" MASTER 0`.
        self.fifo_write(format!("GROUP \"{}\" {word} 0\n", g.name));
        if let Some(s) = &n.any {
            let extra = [
                "GROUP".to_string(),
                g.name.clone(),
                word.to_string(),
                "0".to_string(),
            ];
            self.spawn_notify(s, &extra);
        }
        // vrrp_sync_smtp_notifier(): MASTER and BACKUP only.
        let body = match state {
            Notified::Master => "=> All VRRP group instances are now in MASTER state <=",
            Notified::Backup => "=> All VRRP group instances are now in BACKUP state <=",
            _ => return,
        };
        if let (Some(alerter), Some(true)) = (&self.alerter, g.smtp_alert) {
            let subject = format!("Entering {word} state");
            alerter.send(alerter.alert(&format!("VRRP Group {}", g.name), &subject, body));
        }
    }

    fn globals(&mut self, cfg: &Arc<Config>) {
        self.alerter = crate::services::smtp_alert::Alerter::new(cfg);
        self.cfg = Arc::new(globals_of(cfg));
    }

    fn run_script(&mut self, s: &VrrpScript) {
        let run_as = crate::config::script_security::identity(&self.cfg, s.user.as_ref())
            .ok()
            .flatten();
        let timeout = if s.timeout_us > 0 {
            s.timeout_us
        } else {
            s.interval_us
        };
        let spec = ScriptSpec {
            argv: s.args.clone(),
            run_as,
        };
        let timeout = Duration::from_micros(timeout.max(1));
        let scripts = self.tracking.clone();
        let events = self.events.clone();
        let name = s.name.clone();
        tokio::spawn(async move {
            let o = match scripts.run(&spec, timeout).await {
                Ok(ScriptEnd::Exited(c)) => Outcome::Exited(c),
                Ok(ScriptEnd::Signaled(s)) => Outcome::Signaled(s),
                Ok(ScriptEnd::TimedOut) => Outcome::TimedOut,
                Err(_) => Outcome::Exited(127),
            };
            let _ = events.send(Event::Script(name, o));
        });
    }
}
