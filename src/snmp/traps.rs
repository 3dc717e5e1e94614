//! The notifications keepalived 2.2.7's VRRP side sends
//! (`../shared/reference/snmp.md` §4), as the varbinds of AgentX Notify
//! PDUs: `vrrpInstanceStateChange` and `vrrpSyncGroupStateChange`
//! (KEEPALIVED-MIB, with the columns' OIDs without an index, as keepalived
//! sends them), `vrrpTrapNewMaster` (VRRP-MIB) and `vrrpv3NewMaster`
//! (VRRPv3-MIB), in keepalived's order. Pure.

use super::agentx::{Value, VarBind};
use super::keepalived_mib;
use super::vrrp_mib::Link;
use crate::config::model::Config;
use crate::config::vrrp::InitState;
use crate::vrrp::status::InstanceStatus;
use std::net::IpAddr;

/// `sysUpTime.0`.
pub const SYS_UPTIME: [u32; 9] = [1, 3, 6, 1, 2, 1, 1, 3, 0];
/// `snmpTrapOID.0`.
pub const TRAP_OID: [u32; 11] = [1, 3, 6, 1, 6, 3, 1, 1, 4, 1, 0];

/// Which notifications are on (`enable_traps` and the MIBs' switches).
#[derive(Debug, Clone, Copy, Default)]
pub struct Enabled {
    /// KEEPALIVED-MIB's (`enable_snmp_vrrp`).
    pub vrrp: bool,
    /// VRRP-MIB's (`enable_snmp_rfcv2`).
    pub rfcv2: bool,
    /// VRRPv3-MIB's (`enable_snmp_rfcv3`).
    pub rfcv3: bool,
}

fn kmib(tail: &[u32]) -> Vec<u32> {
    let mut o = keepalived_mib::ROOT.to_vec();
    o.extend_from_slice(tail);
    o
}

fn vb(name: Vec<u32>, value: Value) -> VarBind {
    VarBind { name, value }
}

/// shutdown(5) at stop, deleted(6) on a reload's removal.
fn state(word: &str) -> i32 {
    match word {
        "BACKUP" => 1,
        "MASTER" => 2,
        "FAULT" => 3,
        "STOP" => 5,
        "DELETED" => 6,
        _ => 0,
    }
}

fn head(uptime_cs: u32, trap: Vec<u32>) -> Vec<VarBind> {
    vec![
        vb(SYS_UPTIME.to_vec(), Value::TimeTicks(uptime_cs)),
        vb(TRAP_OID.to_vec(), Value::ObjectId(trap)),
    ]
}

fn router_id(cfg: &Config) -> VarBind {
    vb(kmib(&[1, 2, 0]), Value::text(&super::router_id(cfg)))
}

/// The notifications for a sync group's state `word`.
pub fn group(
    cfg: &Config,
    en: Enabled,
    name: &str,
    word: &str,
    uptime_cs: u32,
) -> Vec<Vec<VarBind>> {
    if !en.vrrp {
        return Vec::new();
    }
    let mut v = head(uptime_cs, kmib(&[2, 10, 0, 1]));
    v.push(vb(kmib(&[2, 1, 1, 2]), Value::text(name)));
    v.push(vb(kmib(&[2, 1, 1, 3]), Value::Integer(state(word))));
    v.push(router_id(cfg));
    vec![v]
}

/// The notifications for an instance's state `word`; `status` its
/// published state (its address and counters), `link` its interface's.
pub fn instance(
    cfg: &Config,
    en: Enabled,
    name: &str,
    word: &str,
    status: Option<&InstanceStatus>,
    link: &dyn Fn(&str) -> Option<Link>,
    uptime_cs: u32,
) -> Vec<Vec<VarBind>> {
    let Some(c) = cfg.vrrp.instances.iter().find(|i| i.name == name) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    if en.vrrp {
        let mut v = head(uptime_cs, kmib(&[2, 10, 0, 2]));
        v.push(vb(kmib(&[2, 3, 1, 2]), Value::text(name)));
        v.push(vb(kmib(&[2, 3, 1, 4]), Value::Integer(state(word))));
        let init = match c.init_state {
            InitState::Master => 2,
            InitState::Backup => 1,
        };
        v.push(vb(kmib(&[2, 3, 1, 5]), Value::Integer(init)));
        v.push(router_id(cfg));
        out.push(v);
    }
    if word != "MASTER" {
        return out;
    }
    let Some(s) = status else { return out };
    let Some(l) = link(&s.interface) else {
        return out;
    };
    let own: Option<IpAddr> = s.source.parse().ok();
    if en.rfcv2 && super::vrrp_mib::suitable(c) {
        if let Some(IpAddr::V4(a)) = own {
            let mut v = head(uptime_cs, vec![1, 3, 6, 1, 2, 1, 68, 0, 1]);
            v.push(vb(
                vec![1, 3, 6, 1, 2, 1, 68, 1, 3, 1, 7, l.index, u32::from(c.vrid)],
                Value::IpAddress(a.octets()),
            ));
            out.push(v);
        }
    }
    if let (true, Some(first), Some(own)) = (en.rfcv3, c.vips.first(), own) {
        let fam = if first.addr.is_ipv4() { 1 } else { 2 };
        let idx = [l.index, u32::from(c.vrid), fam];
        let octets = match own {
            IpAddr::V4(a) => a.octets().to_vec(),
            IpAddr::V6(a) => a.octets().to_vec(),
        };
        let mut v = head(uptime_cs, vec![1, 3, 6, 1, 2, 1, 207, 0, 1]);
        let mut addr = vec![1, 3, 6, 1, 2, 1, 207, 1, 1, 1, 1, 3];
        addr.extend_from_slice(&idx);
        v.push(vb(addr, Value::OctetString(octets)));
        let mut reason = vec![1, 3, 6, 1, 2, 1, 207, 1, 2, 5, 1, 2];
        reason.extend_from_slice(&idx);
        // The published state may not say MASTER yet: the reason alone.
        let r = super::vrrpv3_mib::master_reason(c, s);
        v.push(vb(reason, Value::Integer(r)));
        out.push(v);
    }
    out
}
