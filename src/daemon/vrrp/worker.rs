//! The VRRP subsystem's address worker (I/O shell): rtnetlink requests
//! for addresses, routes and rules, and the gratuitous ARPs / unsolicited
//! NAs announcing them, one job after the other in the order the runner
//! asked, so an address is there before the frame that announces it;
//! announcements paced per interface as keepalived paces them, and the
//! `no_accept` drop rules through nfnetlink ([`crate::vrrp::nftables`]). Part of
//! [`super`].

use crate::config::vrrp::NftTable;
use crate::config::vrrp::{Route, Rule, Vip};
use crate::vrrp::announce::{gratuitous_arp, unsolicited_na};
use crate::vrrp::net::{ipv6_forwarding, FrameSocket, Iface};
use crate::vrrp::nfnl::NfSocket;
use crate::vrrp::nftables::{Element, Firewall, Request};
use crate::vrrp::rtnl::Rtnl;
use std::collections::HashMap;
use std::net::IpAddr;
use std::time::Duration;
use tokio::sync::mpsc;

/// One ordered job for the address worker: addresses, then the frames
/// announcing them, in the order the runner asked.
pub(super) enum Job {
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
        /// The least spacing (µs) of gratuitous ARPs and of NAs on this
        /// interface (`vrrp_garp_interval`, `vrrp_gna_interval`,
        /// `garp_group`).
        spacing: (u64, u64),
    },
    Routes {
        add: bool,
        index: Option<u32>,
        routes: Vec<Route>,
    },
    Rules {
        add: bool,
        rules: Vec<Rule>,
    },
    /// Drop rules for addresses of an instance without accept mode.
    Firewall {
        table: NftTable,
        add: bool,
        elems: Vec<Element>,
    },
    /// keepalived's rules for a VMAC (IGMP/MLD reports from its
    /// interface): VMAC `vmac` on `parent` came (`add`) or went.
    Vmac {
        table: NftTable,
        ipv6: bool,
        vmac: u32,
        parent: u32,
        add: bool,
    },
    /// The drop rules' tables deleted (stop).
    FirewallEnd,
    Done(tokio::sync::oneshot::Sender<()>),
}

/// The nftables side of the worker: the socket (opened at first use) and
/// what the kernel holds.
#[derive(Default)]
struct Nft {
    socket: Option<NfSocket>,
    firewall: Option<Firewall>,
}

impl Nft {
    fn send(&mut self, reqs: Vec<Request>, table: &str) {
        if reqs.is_empty() {
            return;
        }
        if self.socket.is_none() {
            match NfSocket::open() {
                Ok(s) => self.socket = Some(s),
                Err(e) => {
                    log::error!("nftables: cannot open a netfilter netlink socket, no drop rule set in table {table}: {e}");
                    return;
                }
            }
        }
        let Some(sock) = &self.socket else { return };
        for r in reqs {
            match sock.send(&r) {
                Ok(errs) if !errs.is_empty() && !r.may_fail => {
                    let what: Vec<String> = errs
                        .iter()
                        .map(|e| nix::errno::Errno::from_raw(*e).desc().to_string())
                        .collect();
                    log::error!(
                        "nftables: table {table}: the kernel refused the drop rules ({})",
                        what.join(", ")
                    );
                }
                Ok(_) => {}
                Err(e) => log::error!("nftables: table {table}: {e}"),
            }
        }
    }

    fn firewall(&mut self, table: NftTable) -> &mut Firewall {
        self.firewall.get_or_insert_with(|| {
            let seq = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(1, |d| d.as_secs() as u32);
            Firewall::new(table, seq)
        })
    }

    fn update(&mut self, table: NftTable, add: bool, elems: &[Element]) {
        let fw = self.firewall(table);
        let reqs = if add { fw.add(elems) } else { fw.remove(elems) };
        let name = fw.table().name.clone();
        self.send(reqs, &name);
    }

    fn vmac(&mut self, table: NftTable, ipv6: bool, vmac: u32, parent: u32, add: bool) {
        let fw = self.firewall(table);
        let reqs = fw.vmac(ipv6, vmac, parent, add);
        let name = fw.table().name.clone();
        self.send(reqs, &name);
    }

    fn end(&mut self) {
        let Some(fw) = &mut self.firewall else { return };
        let name = fw.table().name.clone();
        if let Some(r) = fw.cleanup() {
            self.send(vec![r], &name);
        }
    }
}

/// Announcements held back on one interface by its spacing, as
/// keepalived's `send_gratuitous_arp()` queues them: one pending frame per
/// address (a second request for it while it waits adds nothing), sent one
/// per interval, the first of the instance's address list first (its
/// thread walks the list for the next pending address).
struct Paced {
    iface: Iface,
    spacing: Duration,
    next: tokio::time::Instant,
    /// (position in the address list, address, frame).
    queue: Vec<(usize, IpAddr, Vec<u8>)>,
}

/// Jobs after which the worker, once idle, gives freed memory back.
const TRIM_AFTER: usize = 64;

/// The address worker: one job after the other, so addresses are there
/// before the frames that announce them.
pub(super) async fn address_worker(
    rtnl: Rtnl,
    frames: Option<FrameSocket>,
    mut jobs: mpsc::UnboundedReceiver<Job>,
) {
    let mut paced: HashMap<(String, bool), Paced> = HashMap::new();
    let mut nft = Nft::default();
    let mut done = 0usize;
    loop {
        let wake = paced
            .values()
            .filter(|p| !p.queue.is_empty())
            .map(|p| p.next)
            .min();
        let job = tokio::select! {
            j = jobs.recv() => match j {
                Some(j) => j,
                None => return,
            },
            _ = async {
                match wake {
                    Some(t) => tokio::time::sleep_until(t).await,
                    None => std::future::pending().await,
                }
            } => {
                let now = tokio::time::Instant::now();
                for p in paced.values_mut() {
                    let first = (0..p.queue.len()).min_by_key(|&i| p.queue[i].0);
                    if p.next <= now {
                        if let (Some(i), Some(fs)) = (first, &frames) {
                            let (_, a, f) = p.queue.remove(i);
                            if let Err(e) = fs.send(&p.iface, &f) {
                                log::debug!("announcing {a} on {}: {e}", p.iface.name);
                            }
                            p.next = now + p.spacing;
                        }
                    }
                }
                continue;
            }
        };
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
                spacing,
            } => {
                let (Some(frames), Some(mac)) = (&frames, iface.mac) else {
                    continue;
                };
                let router = ipv6_forwarding(&iface.name);
                let built: Vec<(IpAddr, Vec<u8>)> = vips
                    .iter()
                    .map(|v| {
                        let f = match v.addr {
                            IpAddr::V4(a) => gratuitous_arp(mac, a),
                            IpAddr::V6(a) => unsolicited_na(mac, a, router),
                        };
                        (v.addr, f)
                    })
                    .collect();
                for v in &vips {
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
                }
                // keepalived's order: each repeat goes over every address.
                for _ in 0..count {
                    for (rank, (a, f)) in built.iter().enumerate() {
                        let us = if a.is_ipv4() { spacing.0 } else { spacing.1 };
                        if us > 0 {
                            let now = tokio::time::Instant::now();
                            let p = paced
                                .entry((iface.name.clone(), a.is_ipv6()))
                                .or_insert_with(|| Paced {
                                    iface: iface.clone(),
                                    spacing: Duration::from_micros(us),
                                    next: now,
                                    queue: Default::default(),
                                });
                            p.spacing = Duration::from_micros(us);
                            p.iface = iface.clone();
                            if now < p.next {
                                if !p.queue.iter().any(|(_, q, _)| q == a) {
                                    p.queue.push((rank, *a, f.clone()));
                                }
                                continue;
                            }
                            p.next = now + p.spacing;
                        }
                        if let Err(e) = frames.send(&iface, f) {
                            log::debug!("({name}) announcing {a} on {}: {e}", iface.name);
                        }
                    }
                }
            }
            Job::Routes { add, index, routes } => {
                for r in &routes {
                    if let Err(e) = rtnl.route(r, index, add).await {
                        log::error!("{e}");
                    }
                }
            }
            Job::Rules { add, rules } => {
                for r in &rules {
                    if let Err(e) = rtnl.rule(r, add).await {
                        log::error!("{e}");
                    }
                }
            }
            Job::Firewall { table, add, elems } => nft.update(table, add, &elems),
            Job::Vmac {
                table,
                ipv6,
                vmac,
                parent,
                add,
            } => nft.vmac(table, ipv6, vmac, parent, add),
            Job::FirewallEnd => nft.end(),
            Job::Done(tx) => {
                let _ = tx.send(());
            }
        }
        // A burst of jobs (hundreds of instances changing state together)
        // is built and freed at once; its memory given back once it is
        // done, or it stays resident for the daemon's life.
        done += 1;
        if done >= TRIM_AFTER && jobs.is_empty() {
            crate::daemon::memory::release_free_memory();
            done = 0;
        }
    }
}
