//! The IPVS table keepalived would program for a configuration and a health
//! state: services from virtual servers (groups expanded), destinations from
//! the live real servers, `inhibit_on_failure` as weight 0, the sorry server
//! while quorum is down.
//!
//! Pure: config model + [`Health`] in, [`Table`] out. Rules from keepalived's
//! `ipwrapper.c`/`ipvswrapper.c` (see `../shared/reference/keepalived.md` §6-§7).

use crate::config::model::{
    Config, Family, Forwarding, Protocol, RealServer, TunnelCsum, TunnelType, VirtualServer,
    VsAddress, VsgEntry,
};
use crate::health::{real_weight, Health, RsHealth};
use crate::ipvs::table::{
    af_of, Dest, DestKey, FwdMethod, Service, ServiceKey, Table, AF_INET, AF_INET6, IPPROTO_SCTP,
    IPPROTO_TCP, IPPROTO_UDP, SVC_F_ONEPACKET, SVC_F_PERSISTENT, SVC_F_SCHED1, SVC_F_SCHED2,
    SVC_F_SCHED3, TUN_F_CSUM, TUN_F_REMCSUM, TUN_TYPE_GRE, TUN_TYPE_GUE, TUN_TYPE_IPIP,
};
use std::collections::{BTreeSet, HashMap};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

fn protocol_num(p: Option<Protocol>) -> u16 {
    match p {
        Some(Protocol::Tcp) => IPPROTO_TCP,
        Some(Protocol::Sctp) => IPPROTO_SCTP,
        // validate() turns a missing protocol into UDP, as keepalived does.
        Some(Protocol::Udp) | None => IPPROTO_UDP,
    }
}

fn family_num(f: Family) -> u16 {
    match f {
        Family::Inet => AF_INET,
        Family::Inet6 => AF_INET6,
    }
}

/// The address family of a virtual server: written, or from its address,
/// its real servers (non-tunnelled first), its sorry server, else IPv4.
pub fn vs_family(vs: &VirtualServer, cfg: &Config) -> u16 {
    if let Some(f) = vs.ip_family {
        return family_num(f);
    }
    match &vs.address {
        VsAddress::Addr { ip, .. } => return af_of(ip),
        VsAddress::Group { name } => {
            if let Some(g) = cfg.virtual_server_groups.iter().find(|g| &g.name == name) {
                for e in &g.entries {
                    match e {
                        VsgEntry::Range { first, .. } => return af_of(first),
                        VsgEntry::Fwmark {
                            family: Some(f), ..
                        } => return family_num(*f),
                        VsgEntry::Fwmark { .. } => {}
                    }
                }
            }
        }
        VsAddress::Fwmark { .. } => {}
    }
    let non_tun = vs
        .real_servers
        .iter()
        .find(|r| !matches!(r.lvs_method, Some(Forwarding::Tun { .. })));
    if let Some(r) = non_tun.or(vs.real_servers.first()) {
        return af_of(&r.ip);
    }
    if let Some(s) = &vs.sorry_server {
        return af_of(&s.ip);
    }
    if let Some(g) = &vs.persistence_granularity {
        if !g.contains('.') {
            return AF_INET6;
        }
    }
    AF_INET
}

/// The persistence netmask as the kernel takes it.
fn netmask(vs: &VirtualServer, af: u16) -> u32 {
    match vs.persistence_granularity.as_deref() {
        Some(g) if af == AF_INET => g
            .parse::<Ipv4Addr>()
            .map(|m| u32::from_ne_bytes(m.octets()))
            .unwrap_or(0xffff_ffff),
        Some(g) => g.parse::<u32>().unwrap_or(128),
        None => Service::full_netmask(af),
    }
}

/// The service attributes of `vs` for one key.
fn service(vs: &VirtualServer, key: ServiceKey) -> Service {
    let af = key.af();
    let mut flags = 0;
    if vs.persistence_timeout > 0 {
        flags |= SVC_F_PERSISTENT;
    }
    if vs.ops {
        flags |= SVC_F_ONEPACKET;
    }
    for (on, bit) in vs
        .sched_flags
        .iter()
        .zip([SVC_F_SCHED1, SVC_F_SCHED2, SVC_F_SCHED3])
    {
        if *on {
            flags |= bit;
        }
    }
    let persistent = flags & SVC_F_PERSISTENT != 0;
    Service {
        key,
        sched_name: vs.sched().to_string(),
        flags,
        timeout: vs.persistence_timeout,
        netmask: if persistent {
            netmask(vs, af)
        } else {
            Service::full_netmask(af)
        },
        pe_name: if persistent {
            vs.persistence_engine.clone()
        } else {
            None
        },
    }
}

fn next_ip(a: IpAddr) -> Option<IpAddr> {
    match a {
        IpAddr::V4(v) => u32::from(v)
            .checked_add(1)
            .map(|n| IpAddr::V4(Ipv4Addr::from(n))),
        IpAddr::V6(v) => u128::from(v)
            .checked_add(1)
            .map(|n| IpAddr::V6(Ipv6Addr::from(n))),
    }
}

/// One service of a virtual server and the port its non-NAT destinations
/// take there.
struct Slot {
    key: ServiceKey,
    dr_port: u16,
}

fn slots(vs: &VirtualServer, cfg: &Config, af: u16) -> Vec<Slot> {
    let protocol = protocol_num(vs.protocol);
    match &vs.address {
        VsAddress::Addr { ip, port } => vec![Slot {
            key: ServiceKey::Addr {
                protocol,
                addr: *ip,
                port: *port,
            },
            dr_port: *port,
        }],
        VsAddress::Fwmark { fwmark } => vec![Slot {
            key: ServiceKey::Fwmark { af, mark: *fwmark },
            dr_port: 0,
        }],
        VsAddress::Group { name } => {
            let mut out = Vec::new();
            let Some(g) = cfg.virtual_server_groups.iter().find(|g| &g.name == name) else {
                return out;
            };
            for e in &g.entries {
                match e {
                    VsgEntry::Range {
                        first, last, port, ..
                    } => {
                        let mut a = *first;
                        loop {
                            out.push(Slot {
                                key: ServiceKey::Addr {
                                    protocol,
                                    addr: a,
                                    port: *port,
                                },
                                dr_port: *port,
                            });
                            if a >= *last {
                                break;
                            }
                            match next_ip(a) {
                                Some(n) => a = n,
                                None => break,
                            }
                        }
                    }
                    VsgEntry::Fwmark { fwmark, family, .. } => out.push(Slot {
                        key: ServiceKey::Fwmark {
                            af: family.map(family_num).unwrap_or(af),
                            mark: *fwmark,
                        },
                        dr_port: 0,
                    }),
                }
            }
            out
        }
    }
}

fn fwd(f: Forwarding) -> (FwdMethod, u8, u16, u16) {
    match f {
        Forwarding::Nat => (FwdMethod::Masq, 0, 0, 0),
        Forwarding::Dr => (FwdMethod::Droute, 0, 0, 0),
        Forwarding::Tun { tunnel, csum } => {
            let (ty, port) = match tunnel {
                TunnelType::Ipip => (TUN_TYPE_IPIP, 0),
                TunnelType::Gue { port } => (TUN_TYPE_GUE, port),
                TunnelType::Gre => (TUN_TYPE_GRE, 0),
            };
            let flags = match csum {
                Some(TunnelCsum::Csum) => TUN_F_CSUM,
                Some(TunnelCsum::Remcsum) => TUN_F_REMCSUM,
                Some(TunnelCsum::Nocsum) | None => 0,
            };
            (FwdMethod::Tunnel, ty, port, flags)
        }
    }
}

#[allow(clippy::too_many_arguments)]
fn dest(
    ip: IpAddr,
    port: u16,
    method: Forwarding,
    slot: &Slot,
    weight: u32,
    u_thresh: u32,
    l_thresh: u32,
) -> Dest {
    let (fwd_method, tun_type, tun_port, tun_flags) = fwd(method);
    Dest {
        addr: ip,
        // NAT goes to the real server's port; DR/TUN keep the packet's port,
        // which is the service's (0 for fwmark services).
        port: if fwd_method == FwdMethod::Masq {
            port
        } else {
            slot.dr_port
        },
        fwd_method,
        weight,
        u_thresh,
        l_thresh,
        tun_type,
        tun_port,
        tun_flags,
    }
}

/// A weight during slow start (extension): `ramp` thousandths of it, 1 at
/// least (0 stays 0: a weight-0 server gets no traffic ramped or not).
pub fn ramped(weight: u32, ramp: u16) -> u32 {
    if ramp >= crate::health::RAMP_FULL || weight == 0 {
        return weight;
    }
    ((u64::from(weight) * u64::from(ramp) / 1000) as u32).max(1)
}

/// `fail_open` (extension) is in force for this virtual server: it asks for
/// it and every real server has failed. Its real servers are then all in at
/// their configured weights, and its sorry server is not used.
pub fn fail_open(vs: &VirtualServer, h: &crate::health::VsHealth) -> bool {
    vs.fail_open && h.all_failed()
}

/// The table for `cfg` in `health`: a start's or a reload's, kept as the
/// desired table, so packed (a health change's part of it is not).
pub fn desired(cfg: &Config, health: &Health) -> Table {
    let mut t = desired_where(cfg, health, |_| true);
    t.compact();
    t
}

/// The services of the virtual servers in `only` (indices), with their
/// destinations: what a health change of those virtual servers touches.
/// Callers include every virtual server that shares a service with one of
/// them ([`service_sharing`]).
pub fn desired_for(cfg: &Config, health: &Health, only: &BTreeSet<usize>) -> Table {
    desired_where(cfg, health, |i| only.contains(&i))
}

/// Groups of virtual servers that program a common IPVS service (a shared
/// group, say): per virtual server, every virtual server sharing one of its
/// services, itself included.
pub fn service_sharing(cfg: &Config) -> Vec<BTreeSet<usize>> {
    let mut by_key: HashMap<ServiceKey, BTreeSet<usize>> = HashMap::new();
    let keys: Vec<Vec<ServiceKey>> = cfg
        .virtual_servers
        .iter()
        .map(|vs| {
            slots(vs, cfg, vs_family(vs, cfg))
                .into_iter()
                .map(|s| s.key)
                .collect()
        })
        .collect();
    for (i, ks) in keys.iter().enumerate() {
        for k in ks {
            by_key.entry(*k).or_default().insert(i);
        }
    }
    keys.iter()
        .enumerate()
        .map(|(i, ks)| {
            let mut set: BTreeSet<usize> = BTreeSet::from([i]);
            for k in ks {
                set.extend(by_key[k].iter().copied());
            }
            set
        })
        .collect()
}

fn desired_where(cfg: &Config, health: &Health, keep: impl Fn(usize) -> bool) -> Table {
    let mut t = Table::default();
    for (i, vs) in cfg.virtual_servers.iter().enumerate() {
        if !keep(i) {
            continue;
        }
        let h = health.vs.get(i);
        let af = vs_family(vs, cfg);
        let open = h.is_some_and(|h| fail_open(vs, h));
        let sorry_in_use = !open && vs.sorry_server.is_some() && !h.is_some_and(|h| h.quorum_up);
        for slot in slots(vs, cfg, af) {
            let ts = t.ensure_service(service(vs, slot.key));
            // Gathered, then built at once: packed nodes, and no tree
            // search per destination (see `Table::compact`); the last of
            // equal keys wins, as insertion in this order had it.
            let mut dests = Vec::with_capacity(vs.real_servers.len() + 1);
            for (j, rs) in vs.real_servers.iter().enumerate() {
                let st = h
                    .and_then(|h| h.rs.get(j))
                    .copied()
                    .unwrap_or(RsHealth::new(true, i64::from(rs.iweight())));
                let inhibit = rs.inhibit();
                let weight = if open {
                    real_weight(i64::from(rs.iweight()))
                } else if st.alive && !sorry_in_use {
                    ramped(real_weight(st.effective_weight), st.ramp)
                } else if inhibit || st.draining {
                    0
                } else {
                    continue;
                };
                let d = dest(
                    rs.ip,
                    rs.port,
                    rs.method(),
                    &slot,
                    weight,
                    rs.seldom.uthreshold,
                    rs.seldom.lthreshold,
                );
                dests.push((d.key(), d));
            }
            if let Some(s) = &vs.sorry_server {
                let weight = if sorry_in_use {
                    Some(1)
                } else if s.inhibit {
                    Some(0)
                } else {
                    None
                };
                if let Some(weight) = weight {
                    let port = if s.port == 0 { slot.dr_port } else { s.port };
                    let d = dest(s.ip, port, s.method(), &slot, weight, 0, 0);
                    dests.push((d.key(), d));
                }
            }
            if ts.dests.is_empty() {
                ts.dests = dests.into_iter().collect();
            } else {
                ts.dests.extend(dests);
            }
        }
    }
    t
}

/// The table entries real server `ri` of virtual server `vi` would have:
/// one per service of the virtual server.
pub fn rs_dest_keys(cfg: &Config, vi: usize, ri: usize) -> Vec<(ServiceKey, DestKey)> {
    let Some(vs) = cfg.virtual_servers.get(vi) else {
        return Vec::new();
    };
    let Some(rs) = vs.real_servers.get(ri) else {
        return Vec::new();
    };
    slots(vs, cfg, vs_family(vs, cfg))
        .iter()
        .map(|slot| (slot.key, dest_key(rs, slot)))
        .collect()
}

/// The key real server `rs` has among `slot`'s destinations.
fn dest_key(rs: &RealServer, slot: &Slot) -> DestKey {
    dest(rs.ip, rs.port, rs.method(), slot, 0, 0, 0).key()
}

/// The weights real server `ri` of virtual server `vi` has in `table`, one
/// per service of the virtual server (`None` where it is absent).
pub fn rs_weights_in(cfg: &Config, vi: usize, ri: usize, table: &Table) -> Vec<Option<u32>> {
    rs_dest_keys(cfg, vi, ri)
        .iter()
        .map(|(svc, key)| {
            table
                .services
                .get(svc)
                .and_then(|s| s.dests.get(key))
                .map(|d| d.weight)
        })
        .collect()
}

/// Per real server of virtual server `vi`, its weight in the virtual
/// server's first service in `table` (`None` where it is absent): what
/// status views show as the in-kernel weight. The services are expanded
/// once for all the real servers.
pub fn kernel_weights(cfg: &Config, vi: usize, table: &Table) -> Vec<Option<u32>> {
    let Some(vs) = cfg.virtual_servers.get(vi) else {
        return Vec::new();
    };
    let slots = slots(vs, cfg, vs_family(vs, cfg));
    vs.real_servers
        .iter()
        .map(|rs| slots.first().and_then(|slot| dest_weight(rs, slot, table)))
        .collect()
}

fn dest_weight(rs: &RealServer, slot: &Slot, table: &Table) -> Option<u32> {
    let key = dest_key(rs, slot);
    table
        .services
        .get(&slot.key)
        .and_then(|s| s.dests.get(&key))
        .map(|d| d.weight)
}

/// Whether real server `ri` of virtual server `vi` is in `table` with a
/// non-zero weight in every service of the virtual server: it was live
/// when a previous run left the table (adoption at start, §6.2 for a
/// restart).
pub fn rs_live_in(cfg: &Config, vi: usize, ri: usize, table: &Table) -> bool {
    let w = rs_weights_in(cfg, vi, ri, table);
    !w.is_empty() && w.iter().all(|w| w.is_some_and(|w| w > 0))
}

/// A health change and the table it gives: quorum, the sorry server,
/// `inhibit_on_failure`.
#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::load_str;
    use crate::health::Transition;

    fn config(text: &str) -> Config {
        load_str(text).config
    }

    const SORRY: &str = "virtual_server 10.0.0.1 80 {\n protocol TCP\n quorum 2\n \
        sorry_server 127.0.0.9 80\n real_server 127.0.0.1 80 {\n weight 2\n }\n \
        real_server 127.0.0.2 80 {\n weight 1\n inhibit_on_failure\n }\n}\n";

    fn dests(cfg: &Config, h: &Health) -> Vec<String> {
        desired(cfg, h)
            .save()
            .lines()
            .filter(|l| l.starts_with("-a"))
            .map(String::from)
            .collect()
    }

    #[test]
    fn losing_quorum_swaps_in_the_sorry_server_and_back() {
        let cfg = config(SORRY);
        let mut h = Health::all_alive(&cfg);
        assert!(h.vs[0].quorum_up);
        // Weight 2 leaves: 1 < quorum 2.
        let t = h.set_rs_alive(&cfg, 0, 0, false);
        assert_eq!(
            t,
            vec![
                Transition::RsDown { vs: 0, rs: 0 },
                Transition::QuorumLost {
                    vs: 0,
                    weight_sum: 1
                }
            ]
        );
        // Sorry server in, the live inhibited server kept at weight 0.
        assert_eq!(
            dests(&cfg, &h),
            vec![
                "-a -t 10.0.0.1:80 -r 127.0.0.2:80 -m -w 0",
                "-a -t 10.0.0.1:80 -r 127.0.0.9:80 -m -w 1",
            ]
        );
        let t = h.set_rs_alive(&cfg, 0, 0, true);
        assert_eq!(
            t[1],
            Transition::QuorumGained {
                vs: 0,
                weight_sum: 3
            }
        );
        assert_eq!(
            dests(&cfg, &h),
            vec![
                "-a -t 10.0.0.1:80 -r 127.0.0.1:80 -m -w 2",
                "-a -t 10.0.0.1:80 -r 127.0.0.2:80 -m -w 1",
            ]
        );
    }

    #[test]
    fn inhibited_server_stays_at_weight_zero_and_weights_move_quorum() {
        let cfg = config(SORRY);
        let mut h = Health::all_alive(&cfg);
        assert_eq!(
            h.set_rs_alive(&cfg, 0, 1, false).len(),
            1,
            "3-1=2: quorum kept"
        );
        assert!(dests(&cfg, &h).contains(&"-a -t 10.0.0.1:80 -r 127.0.0.2:80 -m -w 0".to_string()));
        // A dynamic weight of 0 on the other drops the live sum to 0.
        let t = h.set_rs_weight(&cfg, 0, 0, 0);
        assert_eq!(
            t,
            vec![Transition::QuorumLost {
                vs: 0,
                weight_sum: 0
            }]
        );
        // No change, no transition.
        assert!(h.set_rs_alive(&cfg, 0, 1, false).is_empty());
    }

    #[test]
    fn fail_open_keeps_every_server_in_only_while_all_have_failed() {
        let cfg = config(&SORRY.replace("quorum 2\n", "quorum 2\n fail_open\n"));
        let mut h = Health::all_alive(&cfg);
        h.set_rs_alive(&cfg, 0, 0, false);
        // One left: keepalived's rules (quorum lost, the sorry server).
        assert!(!fail_open(&cfg.virtual_servers[0], &h.vs[0]));
        assert_eq!(
            dests(&cfg, &h),
            [
                "-a -t 10.0.0.1:80 -r 127.0.0.2:80 -m -w 0",
                "-a -t 10.0.0.1:80 -r 127.0.0.9:80 -m -w 1"
            ]
        );
        // Every one failed: all in at their configured weights, no sorry
        // server, the inhibited one too.
        h.set_rs_alive(&cfg, 0, 1, false);
        assert!(fail_open(&cfg.virtual_servers[0], &h.vs[0]));
        assert_eq!(
            dests(&cfg, &h),
            [
                "-a -t 10.0.0.1:80 -r 127.0.0.1:80 -m -w 2",
                "-a -t 10.0.0.1:80 -r 127.0.0.2:80 -m -w 1"
            ]
        );
        // Without the keyword: keepalived's table.
        let plain = config(SORRY);
        let mut h = Health::all_alive(&plain);
        h.set_rs_alive(&plain, 0, 0, false);
        h.set_rs_alive(&plain, 0, 1, false);
        assert!(!fail_open(&plain.virtual_servers[0], &h.vs[0]));
        assert_eq!(
            dests(&plain, &h),
            [
                "-a -t 10.0.0.1:80 -r 127.0.0.2:80 -m -w 0",
                "-a -t 10.0.0.1:80 -r 127.0.0.9:80 -m -w 1"
            ]
        );
    }
}
