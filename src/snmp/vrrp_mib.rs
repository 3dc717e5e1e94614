//! VRRP-MIB (RFC 2787, `mib-2.68`) as keepalived 2.2.7 serves it
//! (`vrrp_snmp.c`, `../shared/reference/snmp.md` §3): the VRRPv2 IPv4
//! instances with at least one virtual address, indexed by the ifIndex of
//! their interface and their VRID; the values from the configuration and
//! the VRRP side's published state. Pure: the interfaces' indexes and
//! MAC addresses come in.

use super::agentx::Value;
use super::tree::Tree;

use crate::config::vrrp::{Auth, Instance};
use crate::vrrp::status::InstanceStatus;
use std::net::IpAddr;

/// `vrrpMIB`.
pub const ROOT: [u32; 7] = [1, 3, 6, 1, 2, 1, 68];

/// What the kernel says of a link.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Link {
    /// ifIndex.
    pub index: u32,
    /// Its MAC address.
    pub mac: [u8; 6],
}

fn oid(tail: &[u32]) -> Vec<u32> {
    super::under(&ROOT, tail)
}

fn ipv4(s: &str) -> Option<[u8; 4]> {
    match s.parse::<IpAddr>().ok()? {
        IpAddr::V4(a) => Some(a.octets()),
        IpAddr::V6(a) => a.to_ipv4_mapped().map(|a| a.octets()),
    }
}

/// keepalived's `suitable_for_rfc2787`: VRRPv2, IPv4, a virtual address.
pub(crate) fn suitable(i: &Instance) -> bool {
    i.version == 2 && !i.vips.is_empty() && i.vips.iter().all(|v| v.addr.is_ipv4())
}

/// The view of `instances` (configuration and state, paired by name),
/// `link` giving the ifIndex and MAC of an interface; `traps`:
/// `enable_traps`.
pub fn view(
    instances: &[(&Instance, &InstanceStatus)],
    link: &dyn Fn(&str) -> Option<Link>,
    traps: bool,
) -> Tree {
    let mut t = Tree::new();
    t.set(&oid(&[1, 1]), &[0], Value::Integer(2));
    // vrrpNotificationCntl: enabled(1) with `enable_traps`, else disabled(2).
    t.set(
        &oid(&[1, 2]),
        &[0],
        Value::Integer(if traps { 1 } else { 2 }),
    );
    for (c, s) in instances.iter().filter(|(c, _)| suitable(c)) {
        let Some(l) = link(&s.interface) else {
            continue;
        };
        let idx = [l.index, u32::from(c.vrid)];
        let col = |n: u32| oid(&[1, 3, 1, n]);
        // The interface's own MAC without use_vmac (keepalived's quirk).
        let mac = if c.vmac.is_some() {
            vec![0, 0, 0x5e, 0, 1, c.vrid]
        } else {
            l.mac.to_vec()
        };
        t.set(&col(2), &idx, Value::OctetString(mac));
        let state = match s.state {
            "BACKUP" => 2,
            "MASTER" => 3,
            _ => 1,
        };
        t.set(&col(3), &idx, Value::Integer(state));
        t.set(&col(4), &idx, Value::Integer(1));
        t.set(&col(5), &idx, Value::Integer(i32::from(c.priority)));
        t.set(&col(6), &idx, Value::Integer(c.vips.len() as i32));
        let source = ipv4(&s.source).unwrap_or([0; 4]);
        // The last other master heard (0.0.0.0 before any), kept after a
        // takeover, as keepalived's `master_saddr`.
        let master = s.last_master.as_deref().and_then(ipv4).unwrap_or([0; 4]);
        t.set(&col(7), &idx, Value::IpAddress(master));
        t.set(&col(8), &idx, Value::IpAddress(source));
        let auth = match c.auth {
            None => 1,
            Some(Auth::Pass(_)) => 2,
            Some(Auth::Ah(_)) => 3,
        };
        t.set(&col(9), &idx, Value::Integer(auth));
        t.set(
            &col(11),
            &idx,
            Value::Integer((c.advert_int_us / 1_000_000) as i32),
        );
        t.set(
            &col(12),
            &idx,
            Value::Integer(if c.nopreempt { 2 } else { 1 }),
        );
        t.set(&col(13), &idx, Value::TimeTicks(0));
        t.set(&col(14), &idx, Value::Integer(1));
        t.set(&col(15), &idx, Value::Integer(1));
        for v in &c.vips {
            if let IpAddr::V4(a) = v.addr {
                let mut i = idx.to_vec();
                i.extend(a.octets().iter().map(|b| u32::from(*b)));
                t.set(&oid(&[1, 4, 1, 2]), &i, Value::Integer(1));
            }
        }
        let st = &s.stats;
        let c32 = |v: u64| Value::Counter32(v as u32);
        for (n, v) in [
            (1, st.become_master),
            (2, st.advert_rcvd),
            (3, st.advert_interval_err),
            (4, st.auth_failure),
            (5, st.ip_ttl_err),
            (6, st.pri_zero_rcvd),
            (7, st.pri_zero_sent),
            (8, st.invalid_type_rcvd),
            (9, st.addr_list_err),
            (10, 0),
            (11, 0),
            (12, st.packet_len_err),
        ] {
            t.set(&oid(&[2, 4, 1, n]), &idx, c32(v));
        }
    }
    // vrrpRouterChecksumErrors, VersionErrors, VrIdErrors.
    for n in 1..=3 {
        t.set(&oid(&[2, n]), &[0], Value::Counter32(0));
    }
    t
}
