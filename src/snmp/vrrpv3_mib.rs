//! VRRPv3-MIB (RFC 6527, `mib-2.207`) as keepalived 2.2.7 serves it
//! (`vrrp_snmp.c`, `../shared/reference/snmp.md` §3): every instance with
//! a virtual address, VRRPv2 ones included (Debian's build has
//! `SNMP_V3_FOR_V2`), indexed by the ifIndex of its interface, its VRID and
//! its address family; the values from the configuration and the VRRP
//! side's published state. Pure: the interfaces come in.

use super::agentx::Value;
use super::tree::Tree;
use super::vrrp_mib::Link;
use super::{inet_type, octets};
use crate::config::vrrp::Instance;
use crate::vrrp::status::InstanceStatus;
use std::net::IpAddr;

/// `vrrpv3MIB`.
pub const ROOT: [u32; 7] = [1, 3, 6, 1, 2, 1, 207];

fn oid(tail: &[u32]) -> Vec<u32> {
    super::under(&ROOT, tail)
}

/// vrrpv3StatisticsNewMasterReason: notMaster(0), priority(1) for an
/// address owner, preempted(2) after hearing a master, masterNoResponse(3)
/// when none was heard.
fn new_master_reason(c: &Instance, s: &InstanceStatus) -> i32 {
    if s.state != "MASTER" {
        0
    } else {
        master_reason(c, s)
    }
}

/// Why an instance is (or is becoming) MASTER: priority(1) for an address
/// owner, preempted(2) after hearing a master, masterNoResponse(3) when
/// none was heard.
pub(crate) fn master_reason(c: &Instance, s: &InstanceStatus) -> i32 {
    if c.priority == 255 {
        1
    } else if s.stats.advert_rcvd > 0 {
        2
    } else {
        3
    }
}

/// The view of `instances` (configuration and state, paired by name).
pub fn view(
    instances: &[(&Instance, &InstanceStatus)],
    link: &dyn Fn(&str) -> Option<Link>,
) -> Tree {
    let mut t = Tree::new();
    for (c, s) in instances {
        let Some(first) = c.vips.first() else {
            continue;
        };
        let Some(l) = link(&s.interface) else {
            continue;
        };
        let fam = inet_type(first.addr);
        let idx = [l.index, u32::from(c.vrid), fam];
        let col = |n: u32| oid(&[1, 1, 1, 1, n]);
        let source: Option<IpAddr> = s.source.parse().ok();
        let own = source.map(octets).unwrap_or_default();
        // Its own address while MASTER, else the master heard.
        let master = if s.state == "MASTER" {
            own.clone()
        } else {
            s.master
                .as_deref()
                .and_then(|m| m.parse().ok())
                .map(octets)
                .unwrap_or_default()
        };
        t.set(&col(3), &idx, Value::OctetString(master));
        t.set(&col(4), &idx, Value::OctetString(own));
        let mac = if c.vmac.is_some() {
            let b = if fam == 1 { 1 } else { 2 };
            vec![0, 0, 0x5e, 0, b, c.vrid]
        } else {
            l.mac.to_vec()
        };
        t.set(&col(5), &idx, Value::OctetString(mac));
        let state = match s.state {
            "BACKUP" => 2,
            "MASTER" => 3,
            _ => 1,
        };
        t.set(&col(6), &idx, Value::Integer(state));
        t.set(&col(7), &idx, Value::Gauge32(u32::from(c.priority)));
        t.set(&col(8), &idx, Value::Integer(c.vips.len() as i32));
        t.set(
            &col(9),
            &idx,
            Value::Integer((c.advert_int_us / 10_000) as i32),
        );
        t.set(
            &col(10),
            &idx,
            Value::Integer(if c.nopreempt { 2 } else { 1 }),
        );
        let accept = c.accept || !c.strict;
        t.set(&col(11), &idx, Value::Integer(if accept { 1 } else { 2 }));
        t.set(&col(12), &idx, Value::TimeTicks(0));
        t.set(&col(13), &idx, Value::Integer(1));
        for v in c.vips.iter().filter(|v| inet_type(v.addr) == fam) {
            let mut i = idx.to_vec();
            i.extend(octets(v.addr).iter().map(|b| u32::from(*b)));
            t.set(&oid(&[1, 1, 2, 1, 2]), &i, Value::Integer(1));
        }
        let st = &s.stats;
        let stat = |n: u32| oid(&[1, 2, 5, 1, n]);
        t.set(&stat(1), &idx, Value::Counter32(st.become_master as u32));
        t.set(&stat(2), &idx, Value::Integer(new_master_reason(c, s)));
        for (n, v) in [
            (3, st.advert_rcvd),
            (4, st.advert_interval_err),
            (5, st.ip_ttl_err),
        ] {
            t.set(&stat(n), &idx, Value::Counter64(v));
        }
        t.set(&stat(6), &idx, Value::Integer(0));
        for (n, v) in [
            (7, st.pri_zero_rcvd),
            (8, st.pri_zero_sent),
            (9, st.invalid_type_rcvd),
            (10, st.addr_list_err),
            (11, st.packet_len_err),
        ] {
            t.set(&stat(n), &idx, Value::Counter64(v));
        }
        t.set(&stat(12), &idx, Value::TimeTicks(0));
        t.set(
            &stat(13),
            &idx,
            Value::Gauge32((c.advert_int_us / 1000) as u32),
        );
    }
    // The global error counters and their discontinuity time.
    for n in 1..=3 {
        t.set(&oid(&[1, 2, n]), &[0], Value::Counter64(0));
    }
    t.set(&oid(&[1, 2, 4]), &[0], Value::TimeTicks(0));
    t
}
