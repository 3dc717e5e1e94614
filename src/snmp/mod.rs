//! SNMP as keepalived 2.2.7 serves it, through an AgentX master such as
//! net-snmp's `snmpd` (`../shared/reference/snmp.md`): the AgentX codec
//! ([`agentx`]), a MIB view and the Get/GetNext/GetBulk procedures over it
//! ([`tree`]), and the MIB modules that build views from the
//! configuration and the subsystems' published state ([`vrrp_mib`]).
//! Pure; the subagent's session and socket are `daemon::snmp`.

pub mod agentx;
pub mod keepalived_mib;
pub mod traps;
pub mod tree;
pub mod vrrp_mib;
pub mod vrrpv3_mib;

use std::net::IpAddr;

/// `router_id`, else the host name (keepalived's default).
pub(crate) fn router_id(cfg: &crate::config::model::Config) -> String {
    cfg.global_defs.router_id.clone().unwrap_or_else(|| {
        nix::unistd::gethostname()
            .ok()
            .and_then(|h| h.into_string().ok())
            .unwrap_or_default()
    })
}

/// `root` followed by `tail`.
pub(crate) fn under(root: &[u32], tail: &[u32]) -> Vec<u32> {
    let mut o = Vec::with_capacity(root.len() + tail.len());
    o.extend_from_slice(root);
    o.extend_from_slice(tail);
    o
}

/// An InetAddress's octets.
pub(crate) fn octets(a: IpAddr) -> Vec<u8> {
    match a {
        IpAddr::V4(a) => a.octets().to_vec(),
        IpAddr::V6(a) => a.octets().to_vec(),
    }
}

/// InetAddressType: ipv4(1), ipv6(2).
pub(crate) fn inet_type(a: IpAddr) -> u32 {
    if a.is_ipv4() {
        1
    } else {
        2
    }
}

#[cfg(test)]
mod tests;
