//! KEEPALIVED-MIB (`enterprises.9586.100.5`) as keepalived 2.2.7 serves it
//! (`vrrp_snmp.c`, `../shared/reference/snmp.md` §3), its global scalars
//! (`.1`) and its VRRP part (`.2`): the sync group, member, instance and
//! address tables, the tracked interface, script, file, BFD and process
//! tables of instances and sync groups, the route and script tables,
//! indexed by position in the configuration (1-based), with keepalived's
//! quirks (§3.1). The file, BFD and process tables themselves, rules and
//! next hops are not built yet. Pure: the interfaces and scripts' paths
//! come in.

use super::agentx::Value;
use super::tree::Tree;
use super::vrrp_mib::Link;
use super::{inet_type, octets};
use crate::config::model::Config;
use crate::config::vrrp::iproute::{Route, RTPROT_KEEPALIVED};
use crate::config::vrrp::{Auth, InitState, Instance, NotifyScript, Tracked, Vip};
use crate::vrrp::status::InstanceStatus;
use std::net::IpAddr;

/// `keepalived`'s subtree.
pub const ROOT: [u32; 9] = [1, 3, 6, 1, 4, 1, 9586, 100, 5];
/// Its global scalars.
pub const GLOBAL: [u32; 10] = [1, 3, 6, 1, 4, 1, 9586, 100, 5, 1];
/// Its VRRP part.
pub const VRRP: [u32; 10] = [1, 3, 6, 1, 4, 1, 9586, 100, 5, 2];

fn oid(tail: &[u32]) -> Vec<u32> {
    super::under(&ROOT, tail)
}

/// TruthValue / enabled-disabled: 1 or 2.
fn yes(b: bool) -> Value {
    Value::Integer(if b { 1 } else { 2 })
}

/// keepalived's `cmd_str`: every word quoted.
fn command(s: &NotifyScript) -> Value {
    Value::text(
        &s.args
            .iter()
            .map(|a| format!("'{a}'"))
            .collect::<Vec<_>>()
            .join(" "),
    )
}

/// The global scalars (`.1`); `version` is what `keepalived -v` says.
pub fn global(cfg: &Config, version: &str) -> Tree {
    let mut t = Tree::new();
    let g = &cfg.global_defs;
    t.set(&oid(&[1, 1]), &[0], Value::text(version));
    t.set(&oid(&[1, 2]), &[0], Value::text(&super::router_id(cfg)));
    let smtp: Option<(IpAddr, u16)> = g
        .smtp_server
        .as_ref()
        .and_then(|(h, p)| h.parse().ok().map(|a| (a, *p)));
    // No server: family "not IPv4" and four zero bytes (keepalived's quirk).
    let (fam, addr) = match smtp {
        Some((a, _)) => (inet_type(a), octets(a)),
        None => (2, vec![0; 4]),
    };
    t.set(&oid(&[1, 3, 1]), &[0], Value::Integer(fam as i32));
    t.set(&oid(&[1, 3, 2]), &[0], Value::OctetString(addr));
    let timeout = if smtp.is_some() {
        (g.smtp_connect_timeout / 1_000_000) as u32
    } else {
        0
    };
    t.set(&oid(&[1, 3, 3]), &[0], Value::Gauge32(timeout));
    if let Some(f) = &g.notification_email_from {
        t.set(&oid(&[1, 3, 4]), &[0], Value::text(f));
    }
    for (i, e) in g.notification_email.iter().enumerate() {
        t.set(&oid(&[1, 3, 5, 1, 2]), &[i as u32 + 1], Value::text(e));
    }
    let port = smtp.map_or(0, |(_, p)| if p == 0 { 25 } else { p });
    t.set(&oid(&[1, 3, 6]), &[0], Value::Gauge32(u32::from(port)));
    t.set(&oid(&[1, 3, 7]), &[0], Value::Integer(1));
    let tri = |b: Option<bool>| Value::Integer(b.map_or(3, |b| if b { 1 } else { 2 }));
    t.set(&oid(&[1, 3, 8]), &[0], tri(g.smtp_alert));
    t.set(
        &oid(&[1, 3, 9]),
        &[0],
        tri(cfg.vrrp.globals.smtp_alert_vrrp),
    );
    t.set(&oid(&[1, 3, 10]), &[0], tri(g.smtp_alert_checker));
    t.set(&oid(&[1, 4]), &[0], yes(g.snmp.traps));
    // linkBeat: netlink(1).
    t.set(&oid(&[1, 5]), &[0], Value::Integer(1));
    t.set(&oid(&[1, 6]), &[0], yes(g.lvs_flush));
    t.set(&oid(&[1, 7]), &[0], Value::Integer(1));
    t.set(&oid(&[1, 8]), &[0], Value::text(""));
    t.set(&oid(&[1, 9]), &[0], Value::Integer(2));
    t.set(
        &oid(&[1, 10]),
        &[0],
        yes(cfg.vrrp.globals.dynamic_interfaces),
    );
    let flush_on_stop = !matches!(g.lvs_flush_on_stop, crate::config::model::FlushOnStop::Off);
    t.set(&oid(&[1, 11]), &[0], yes(flush_on_stop));
    t
}

/// init(0) backup(1) master(2) fault(3).
fn state(s: &str) -> i32 {
    match s {
        "BACKUP" => 1,
        "MASTER" => 2,
        "FAULT" => 3,
        _ => 0,
    }
}

/// The VRRP part (`.2`): `instances` paired with their published state,
/// in configuration order.
pub fn vrrp(
    cfg: &Config,
    instances: &[(&Instance, &InstanceStatus)],
    link: &dyn Fn(&str) -> Option<Link>,
    resolve: &dyn Fn(&str) -> String,
) -> Tree {
    let mut t = Tree::new();
    scripts(&mut t, cfg, instances, resolve);
    sync_groups(&mut t, cfg, instances);
    let syncd_of = cfg
        .global_defs
        .lvs_sync_daemon
        .as_ref()
        .and_then(|d| d.vrrp_instance.clone().map(|n| (n, d.ifname.clone())));
    for (ii, (c, s)) in instances.iter().enumerate() {
        instance(&mut t, cfg, ii, (c, s), syncd_of.as_ref(), link);
    }
    t
}

/// The sync group and member tables, and the groups' tracked objects.
fn sync_groups(t: &mut Tree, cfg: &Config, instances: &[(&Instance, &InstanceStatus)]) {
    for (gi, g) in cfg.vrrp.sync_groups.iter().enumerate() {
        let i = [gi as u32 + 1];
        let col = |n: u32| oid(&[2, 1, 1, n]);
        t.set(&col(2), &i, Value::text(&g.name));
        let st = instances
            .iter()
            .find_map(|(_, s)| {
                let (name, word) = s.sync_group.as_deref()?.split_once(' ')?;
                (name == g.name).then(|| state(word))
            })
            .unwrap_or(0);
        t.set(&col(3), &i, Value::Integer(st));
        t.set(&col(4), &i, yes(g.smtp_alert.unwrap_or(false)));
        let n = &g.notify;
        let any = n.master.is_some()
            || n.backup.is_some()
            || n.fault.is_some()
            || n.any.is_some()
            || n.stop.is_some();
        t.set(&col(5), &i, yes(any));
        for (c, s) in [
            (6, &n.master),
            (7, &n.backup),
            (8, &n.fault),
            (9, &n.any),
            (11, &n.stop),
        ] {
            if let Some(s) = s {
                t.set(&col(c), &i, command(s));
            }
        }
        t.set(&col(10), &i, yes(g.tracking_weight));
        tracked(t, 14, 1, gi, &g.track_interfaces, &|_| (0, false));
        tracked(t, 15, 2, gi, &g.track_scripts, &|n| script_defaults(cfg, n));
        tracked(t, 16, 2, gi, &g.track_files, &|n| file_defaults(cfg, n));
        tracked(t, 22, 2, gi, &g.track_processes, &|n| {
            process_defaults(cfg, n)
        });
        for (mi, m) in g.members.iter().enumerate() {
            t.set(
                &oid(&[2, 2, 1, 2]),
                &[gi as u32 + 1, mi as u32 + 1],
                Value::text(m),
            );
        }
    }
}

/// Instance `ii`'s row of vrrpInstanceTable with its tracked objects,
/// routes and addresses; `syncd_of`: the instance an LVS sync daemon
/// follows, and its interface.
fn instance(
    t: &mut Tree,
    cfg: &Config,
    ii: usize,
    (c, s): (&Instance, &InstanceStatus),
    syncd_of: Option<&(String, String)>,
    link: &dyn Fn(&str) -> Option<Link>,
) {
    let i = [ii as u32 + 1];
    let col = |n: u32| oid(&[2, 3, 1, n]);
    t.set(&col(2), &i, Value::text(&c.name));
    t.set(&col(3), &i, Value::Gauge32(u32::from(c.vrid)));
    let now = state(s.state);
    t.set(&col(4), &i, Value::Integer(now));
    let init = match c.init_state {
        InitState::Master => 2,
        InitState::Backup => 1,
    };
    t.set(&col(5), &i, Value::Integer(init));
    t.set(&col(6), &i, Value::Integer(now));
    t.set(&col(7), &i, Value::Integer(i32::from(c.priority)));
    t.set(&col(8), &i, Value::Integer(i32::from(s.effective_priority)));
    t.set(&col(9), &i, yes(s.state == "MASTER"));
    t.set(&col(10), &i, Value::text(&s.interface));
    // keepalived reports tracked(1) only with dont_track_primary.
    t.set(&col(11), &i, yes(c.dont_track_primary));
    let adv = if c.version == 2 {
        c.advert_int_us / 1_000_000
    } else {
        c.advert_int_us / 10_000
    };
    t.set(&col(12), &i, Value::Gauge32(adv as u32));
    t.set(&col(13), &i, yes(!c.nopreempt));
    t.set(
        &col(14),
        &i,
        Value::Gauge32((c.preempt_delay_us / 1_000_000) as u32),
    );
    let auth = match c.auth {
        None => 0,
        Some(Auth::Pass(_)) => 1,
        Some(Auth::Ah(_)) => 2,
    };
    t.set(&col(15), &i, Value::Integer(auth));
    let syncd = syncd_of.as_ref().filter(|(n, _)| *n == c.name);
    t.set(&col(16), &i, yes(syncd.is_some()));
    if let Some((_, ifname)) = syncd {
        t.set(&col(17), &i, Value::text(ifname));
    }
    if let Some(g) = &c.sync_group {
        t.set(&col(18), &i, Value::text(g));
    }
    t.set(
        &col(19),
        &i,
        Value::Gauge32((c.garp.master_delay_us / 1_000_000) as u32),
    );
    let smtp = c
        .smtp_alert
        .or(cfg.vrrp.globals.smtp_alert_vrrp)
        .or(cfg.global_defs.smtp_alert)
        .unwrap_or(false);
    t.set(&col(20), &i, yes(smtp));
    let n = &c.notify;
    let any = n.master.is_some()
        || n.backup.is_some()
        || n.fault.is_some()
        || n.stop.is_some()
        || n.any.is_some()
        || n.master_rx_lower_pri.is_some()
        || matches!(n.deleted, Some(Some(_)));
    t.set(&col(21), &i, yes(any));
    for (k, s) in [
        (22, &n.master),
        (23, &n.backup),
        (24, &n.fault),
        (25, &n.stop),
        (26, &n.any),
    ] {
        if let Some(s) = s {
            t.set(&col(k), &i, command(s));
        }
    }
    // A VRRPv2 instance: 0, not a TruthValue (keepalived sets accept
    // mode for VRRPv3 only).
    let accept = if c.version == 2 {
        Value::Integer(0)
    } else {
        yes(c.accept || !c.strict)
    };
    t.set(&col(27), &i, accept);
    t.set(&col(28), &i, yes(c.promote_secondaries));
    t.set(&col(29), &i, Value::Integer(2));
    t.set(&col(30), &i, Value::Integer(i32::from(c.version)));
    if let Some(s) = &n.master_rx_lower_pri {
        t.set(&col(31), &i, command(s));
    }
    if let Some(Some(s)) = &n.deleted {
        t.set(&col(32), &i, command(s));
    }
    t.set(&col(33), &i, yes(n.deleted.is_some()));
    let v6 = c.vips.first().is_some_and(|v| v.addr.is_ipv6());
    let mcast: IpAddr = c.mcast_dst.unwrap_or(if v6 {
        "ff02::12".parse().expect("literal")
    } else {
        "224.0.0.18".parse().expect("literal")
    });
    t.set(&col(34), &i, Value::Integer(inet_type(mcast) as i32));
    t.set(&col(35), &i, Value::OctetString(octets(mcast)));
    // Its own, not those its sync group hands every member.
    let group = c
        .sync_group
        .as_ref()
        .and_then(|g| cfg.vrrp.sync_groups.iter().find(|x| x.name == *g));
    let own = |list: &[Tracked], of_group: Option<&[Tracked]>| -> Vec<Tracked> {
        list.iter()
            .filter(|x| {
                !of_group.is_some_and(|g| g.iter().any(|y| y.name == x.name && y.line == x.line))
            })
            .cloned()
            .collect()
    };
    let ifs = own(
        &c.track_interfaces,
        group.map(|g| g.track_interfaces.as_slice()),
    );
    let scs = own(&c.track_scripts, group.map(|g| g.track_scripts.as_slice()));
    tracked(t, 4, 1, ii, &ifs, &|_| (0, false));
    tracked(t, 5, 2, ii, &scs, &|n| script_defaults(cfg, n));
    let files = own(&c.track_files, group.map(|g| g.track_files.as_slice()));
    tracked(t, 12, 2, ii, &files, &|n| file_defaults(cfg, n));
    let bfds = own(&c.track_bfds, group.map(|g| g.track_bfds.as_slice()));
    tracked(t, 17, 2, ii, &bfds, &|n| bfd_defaults(cfg, n));
    let procs = own(
        &c.track_processes,
        group.map(|g| g.track_processes.as_slice()),
    );
    tracked(t, 20, 2, ii, &procs, &|n| process_defaults(cfg, n));
    let held = s.state == "MASTER";
    for (ri, r) in c.virtual_routes.iter().enumerate() {
        route(
            t,
            [ii as u32 + 1, ri as u32 + 1],
            r,
            held,
            &s.interface,
            link,
        );
    }
    let all = c
        .vips
        .iter()
        .map(|v| (v, true))
        .chain(c.evips.iter().map(|v| (v, false)));
    for (ai, (v, in_advert)) in all.enumerate() {
        address(
            t,
            [ii as u32 + 1, ai as u32 + 1],
            v,
            in_advert,
            held,
            &s.interface,
            link,
        );
    }
}

/// One row of vrrpAddressTable.
fn address(
    t: &mut Tree,
    i: [u32; 2],
    v: &Vip,
    in_advert: bool,
    held: bool,
    interface: &str,
    link: &dyn Fn(&str) -> Option<Link>,
) {
    let col = |n: u32| oid(&[2, 6, 1, n]);
    t.set(&col(2), &i, Value::Integer(inet_type(v.addr) as i32));
    t.set(&col(3), &i, Value::OctetString(octets(v.addr)));
    if v.addr.is_ipv4() {
        let b = v.broadcast.map_or(vec![0; 4], octets);
        t.set(&col(4), &i, Value::OctetString(b));
    }
    t.set(&col(5), &i, Value::Gauge32(u32::from(v.prefix)));
    // global(14), keepalived's word for scope 0.
    let scope = match v.scope {
        None | Some(0) => 14,
        Some(s) => i32::from(s),
    };
    t.set(&col(6), &i, Value::Integer(scope));
    let dev = v.dev.as_deref().unwrap_or(interface);
    if let Some(l) = link(dev) {
        t.set(&col(7), &i, Value::Integer(l.index as i32));
    }
    t.set(&col(8), &i, Value::text(dev));
    if let Some(l) = &v.label {
        t.set(&col(9), &i, Value::text(l));
    }
    t.set(&col(10), &i, yes(held));
    // keepalived's `state == HEADER_STATE_VIRTUAL_ADDRESS`: true only for
    // the first instance's virtual addresses (its walk state is not reset
    // for the next instance).
    t.set(&col(11), &i, yes(in_advert && i[0] == 1));
    if let Some(p) = v.peer {
        t.set(&col(12), &i, Value::OctetString(octets(p)));
    }
}

/// A tracked script's weight and reverse where the tracking line gives
/// none: the `vrrp_script`'s.
fn script_defaults(cfg: &Config, name: &str) -> (i32, bool) {
    cfg.vrrp
        .scripts
        .iter()
        .find(|s| s.name == name)
        .map_or((0, false), |s| (s.weight, s.reverse))
}

/// A tracked file's weight and reverse by default: its block's.
fn file_defaults(cfg: &Config, name: &str) -> (i32, bool) {
    cfg.vrrp
        .track_files
        .iter()
        .find(|f| f.name == name)
        .map_or((0, false), |f| (f.weight, f.reverse))
}

/// A tracked BFD session's: its `bfd_instance`'s.
fn bfd_defaults(cfg: &Config, name: &str) -> (i32, bool) {
    cfg.vrrp
        .track_bfds
        .iter()
        .find(|f| f.name == name)
        .map_or((0, false), |f| (f.weight, f.reverse))
}

/// A tracked process's: its `vrrp_track_process`'s.
fn process_defaults(cfg: &Config, name: &str) -> (i32, bool) {
    cfg.vrrp
        .track_processes
        .iter()
        .find(|f| f.name == name)
        .map_or((0, false), |f| (f.weight, f.reverse))
}

/// A table of tracked objects (`table` under `.2`), the name in column
/// `first`, weight and reverse after it, indexed by owner then position.
/// The weight is the tracking line's for interfaces and scripts, and, as
/// keepalived's `vrrp_snmp.c` reads it, the object's own for files, BFD
/// sessions and processes (`defaults` gives the object's).
fn tracked(
    t: &mut Tree,
    table: u32,
    first: u32,
    owner: usize,
    list: &[Tracked],
    defaults: &dyn Fn(&str) -> (i32, bool),
) {
    let own_weight = !matches!(table, 4 | 5 | 14 | 15);
    for (n, x) in list.iter().enumerate() {
        let i = [owner as u32 + 1, n as u32 + 1];
        let col = |k: u32| oid(&[2, table, 1, first + k]);
        let (w, r) = defaults(&x.name);
        let (w, r) = if own_weight {
            (w, r)
        } else {
            (x.weight.unwrap_or(w), x.reverse.unwrap_or(r))
        };
        t.set(&col(0), &i, Value::text(&x.name));
        t.set(&col(1), &i, Value::Integer(w));
        t.set(&col(2), &i, yes(r));
    }
}

/// vrrpScriptTable: every `vrrp_script` something tracks (keepalived
/// drops the others: "script X is not used"), its command with its path
/// resolved (`resolve`), its result as the instances tracking it see it.
fn scripts(
    t: &mut Tree,
    cfg: &Config,
    instances: &[(&Instance, &InstanceStatus)],
    resolve: &dyn Fn(&str) -> String,
) {
    let used = |name: &str| {
        cfg.vrrp
            .instances
            .iter()
            .any(|i| i.track_scripts.iter().any(|x| x.name == name))
            || cfg
                .vrrp
                .sync_groups
                .iter()
                .any(|g| g.track_scripts.iter().any(|x| x.name == name))
    };
    let kept = cfg.vrrp.scripts.iter().filter(|s| used(&s.name));
    for (n, sc) in kept.enumerate() {
        let i = [n as u32 + 1];
        let col = |k: u32| oid(&[2, 9, 1, k]);
        t.set(&col(2), &i, Value::text(&sc.name));
        let mut words = sc.args.clone();
        if let Some(first) = words.first_mut() {
            *first = resolve(first);
        }
        let cmd = words
            .iter()
            .map(|a| format!("'{a}'"))
            .collect::<Vec<_>>()
            .join(" ");
        t.set(&col(3), &i, Value::text(&cmd));
        t.set(
            &col(4),
            &i,
            Value::Integer((sc.interval_us / 1_000_000) as i32),
        );
        t.set(&col(5), &i, Value::Integer(sc.weight));
        let up = instances.iter().find_map(|(_, s)| {
            s.trackers
                .iter()
                .find(|x| x.kind == "script" && x.name == sc.name)
                .and_then(|x| x.up)
        });
        // init(1), bad(2), good(3).
        let result = match up {
            Some(true) => 3,
            Some(false) => 2,
            None => 1,
        };
        t.set(&col(6), &i, Value::Integer(result));
        t.set(&col(7), &i, Value::Gauge32(sc.rise));
        t.set(&col(8), &i, Value::Gauge32(sc.fall));
        t.set(&col(9), &i, yes(sc.reverse));
    }
}

/// One row of vrrpRouteTable.
fn route(
    t: &mut Tree,
    i: [u32; 2],
    r: &Route,
    held: bool,
    interface: &str,
    link: &dyn Fn(&str) -> Option<Link>,
) {
    let col = |n: u32| oid(&[2, 7, 1, n]);
    t.set(&col(2), &i, Value::Integer(inet_type(r.dst) as i32));
    t.set(&col(3), &i, Value::OctetString(octets(r.dst)));
    t.set(&col(4), &i, Value::Gauge32(u32::from(r.prefix)));
    if let Some(g) = r.via {
        t.set(&col(5), &i, Value::OctetString(octets(g)));
    }
    if let Some(src) = r.src {
        t.set(&col(7), &i, Value::OctetString(octets(src)));
    }
    t.set(&col(8), &i, Value::Gauge32(r.metric.unwrap_or(0)));
    let scope = match r.scope {
        None | Some(0) => 14,
        Some(s) => i32::from(s),
    };
    t.set(&col(9), &i, Value::Integer(scope));
    t.set(&col(10), &i, Value::Integer(i32::from(r.rtype)));
    if let Some(dev) = r
        .dev
        .as_deref()
        .or(Some(interface).filter(|_| r.via.is_none()))
    {
        if let Some(l) = link(dev) {
            t.set(&col(11), &i, Value::Integer(l.index as i32));
        }
        t.set(&col(12), &i, Value::text(dev));
    }
    t.set(&col(13), &i, Value::Gauge32(r.table));
    t.set(&col(14), &i, yes(held));
    if let Some((a, p)) = r.from {
        t.set(&col(15), &i, Value::OctetString(octets(a)));
        t.set(&col(16), &i, Value::Gauge32(u32::from(p)));
    }
    if let Some(tos) = r.tos {
        t.set(&col(17), &i, Value::Integer(i32::from(tos)));
    }
    // The MIB's enumeration counts from 1 for the kernel's 0.
    let proto = i32::from(r.protocol.unwrap_or(RTPROT_KEEPALIVED)) + 1;
    t.set(&col(18), &i, Value::Integer(proto));
    t.set(&col(19), &i, Value::Integer(2));
    t.set(&col(20), &i, Value::Integer(2));
}
