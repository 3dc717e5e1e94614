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

#[cfg(test)]
mod tests;
