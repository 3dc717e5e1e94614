//! The VRRP side of the configuration, typed: `vrrp_instance`,
//! `vrrp_script`, `vrrp_sync_group` and what they track, with keepalived
//! 2.2.7's defaults and checks. Built by [`build`] from the blocks the
//! parser keeps as written (`Config::other_blocks`), after the checker's
//! side is validated; the VRRP runtime reads only this model.

mod address;
pub mod build;
mod complete;
mod ctx;
pub mod encap;
pub mod firewall;
pub mod iproute;
pub mod iprule;
mod nexthop;
mod parts;
pub mod rttables;
mod track;

pub use address::{parse_vip, Vip};
pub use build::build;
#[cfg(test)]
pub use ctx::testing;
pub use iproute::{NextHop, Route};
pub use iprule::{Rule, RuleAction};

/// The GARP/NA timing an instance without its own settings takes (the
/// global `vrrp_garp_*` keywords, else keepalived's defaults).
pub fn global_garp(g: &crate::config::model::GlobalDefs) -> Garp {
    parts::global_garp(g).0
}

use serde::Serialize;
use std::net::IpAddr;

/// VRRP's global settings that the run and its dumps read, as the file
/// has them (the last line of each winning).
#[derive(Debug, Clone, Default, Serialize)]
pub struct VrrpGlobals {
    /// `smtp_alert_vrrp`.
    pub smtp_alert_vrrp: Option<bool>,
    /// `dynamic_interfaces`.
    pub dynamic_interfaces: bool,
    /// `fifo_write_vrrp_states_on_reload`.
    pub fifo_write_states_on_reload: bool,
    /// `vrrp_notify_priority_changes`.
    pub notify_priority_changes: bool,
    /// `vrrp_mcast_group4` as written (224.0.0.18 when unset).
    pub mcast_group4: Option<String>,
    /// `vrrp_mcast_group6` as written (ff02::12 when unset).
    pub mcast_group6: Option<String>,
    /// `vrrp_down_timer_adverts` as written (3 when unset).
    pub down_timer_adverts: Option<String>,
    /// `vrrp_lower_prio_no_advert`.
    pub lower_prio_no_advert: bool,
    /// `vrrp_higher_prio_send_advert`.
    pub higher_prio_send_advert: bool,
    /// `vrrp_version` as written (2 when unset).
    pub version: Option<String>,
    /// `vrrp_check_unicast_src`.
    pub check_unicast_src: bool,
    /// `vrrp_skip_check_adv_addr`.
    pub skip_check_adv_addr: bool,
    /// `vrrp_strict`.
    pub strict: bool,
    /// `vrrp_notify_fifo PATH [USER [GROUP]]`.
    pub notify_fifo: Option<crate::config::model::Fifo>,
    /// `vrrp_notify_fifo_script SCRIPT [USER [GROUP]]`: the FIFO's reader.
    pub notify_fifo_script: Option<crate::config::model::Script>,
}

/// Everything the VRRP process runs.
#[derive(Debug, Clone, Default, Serialize)]
pub struct VrrpConfig {
    /// The global settings.
    pub globals: VrrpGlobals,
    /// `vrrp_instance` blocks keepalived keeps, in file order.
    pub instances: Vec<Instance>,
    /// `vrrp_script` blocks with a script.
    pub scripts: Vec<VrrpScript>,
    /// The `track_file` blocks some instance tracks.
    pub track_files: Vec<VrrpTrackFile>,
    /// `vrrp_track_process` blocks some instance tracks.
    pub track_processes: Vec<VrrpTrackProcess>,
    /// The `bfd_instance` blocks some instance tracks (or takes over by).
    pub track_bfds: Vec<VrrpTrackBfd>,
    /// `vrrp_sync_group` blocks with at least one member.
    pub sync_groups: Vec<SyncGroup>,
    /// `static_ipaddress`: set at start, removed at stop, whatever the
    /// state.
    pub static_addresses: Vec<Vip>,
    /// `static_routes`.
    pub static_routes: Vec<Route>,
    /// `static_rules`.
    pub static_rules: Vec<Rule>,
    /// Global `vrrp_startup_delay`, µs: instances' first timers count from
    /// the start plus this.
    pub startup_delay_us: u64,
    /// `interface_up_down_delays { IF DOWN [UP] }`: how long (µs) a link
    /// must stay down, or up, before the instances see it (UP 0 when not
    /// given, as keepalived's code does).
    pub up_down_delays: Vec<(String, u64, u64)>,
    /// Global `vrrp_garp_interval`, µs: the least time between two
    /// gratuitous ARPs on one interface (0: none).
    pub garp_interval_us: u64,
    /// Global `vrrp_gna_interval`, µs: the same for unsolicited NAs.
    pub gna_interval_us: u64,
    /// `garp_group` blocks: their interfaces' own intervals.
    pub garp_groups: Vec<GarpGroup>,
    /// Global `no_email_faults`: no SMTP alert on entering FAULT.
    pub no_email_faults: bool,
    /// The nftables table holding the `no_accept` drop rules: the global
    /// `nftables` (or `vrrp_iptables`) keyword's, or keepalived's default
    /// one when an instance needs a firewall and none is configured.
    pub nftables: Option<NftTable>,
    /// The table is keepalived's default, taken because an instance needs
    /// one ("use_vmac or no_accept/strict specified, but no firewall
    /// configured - using nftables" at each load).
    pub nftables_defaulted: bool,
}

/// A `track_file` an instance tracks: the number in the file, times the
/// weight, shifts the priority (keepalived's `trackers/track_file.c`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct VrrpTrackFile {
    pub name: String,
    /// The file's path.
    pub path: String,
    /// `weight` (default 1): 0 = any non-zero value means FAULT.
    pub weight: i32,
    /// `reverse`.
    pub reverse: bool,
}

/// A `bfd_instance` as VRRP tracks it (keepalived's `vrrp_tracked_bfd_t`):
/// its name and the default weight of a `track_bfd` that names it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct VrrpTrackBfd {
    /// The `bfd_instance` name.
    pub name: String,
    /// Its `weight` (default 0: Down means FAULT).
    pub weight: i32,
    /// `weight W reverse`.
    pub reverse: bool,
}

/// How a `vrrp_track_process`'s parameters must match a process's
/// (`param_match`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum ParamMatch {
    /// No parameters given: any process of that name.
    None,
    /// The same parameters, no more.
    Exact,
    /// The process's parameters start with these.
    Partial,
    /// As partial, the last one a prefix of the process's.
    Initial,
}

/// `vrrp_track_process NAME { ... }` (keepalived's
/// `vrrp_tracked_process_t`): the number of processes matching, within
/// `quorum..=quorum_max`, is the object up.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct VrrpTrackProcess {
    pub name: String,
    /// The process name (its `comm`), or with `full_command` its path as
    /// it was run (`argv[0]`).
    pub process: String,
    /// The parameters after it.
    pub params: Vec<String>,
    pub param_match: ParamMatch,
    /// `full_command`.
    pub full_command: bool,
    /// `weight` (0 = FAULT while down).
    pub weight: i32,
    /// `weight … reverse`.
    pub reverse: bool,
    /// `quorum` (default 1).
    pub quorum: u32,
    /// `quorum_max` (default unlimited).
    pub quorum_max: u32,
    /// `fork_delay` (or `delay`), µs: a process forked by a counted one
    /// counts once it has lived this long.
    pub fork_delay_us: u64,
    /// `terminate_delay` (or `delay`), µs: a loss by exit counts once it
    /// has lasted this long.
    pub terminate_delay_us: u64,
}

impl VrrpTrackProcess {
    /// `vrrp_track_process NAME` for `process`, with keepalived's defaults
    /// (quorum 1, no maximum, no delays, weight 0).
    pub fn new(name: &str, process: &str) -> VrrpTrackProcess {
        VrrpTrackProcess {
            name: name.to_string(),
            process: process.to_string(),
            params: Vec::new(),
            param_match: ParamMatch::None,
            full_command: false,
            weight: 0,
            reverse: false,
            quorum: 1,
            quorum_max: u32::MAX,
            fork_delay_us: 0,
            terminate_delay_us: 0,
        }
    }
}

/// keepalived's nftables settings (`nftables [NAME]`, `nftables_priority`,
/// `nftables_counters`, `nftables_ifindex`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NftTable {
    /// The table's name (`keepalived` by default), one per family.
    pub name: String,
    /// The input and output chains' hook priority (-1 by default).
    pub priority: i32,
    /// `nftables_counters`: a counter in every rule.
    pub counters: bool,
    /// `nftables_ifindex`: link-local addresses of `dont_track_primary`
    /// instances matched by interface index rather than name.
    pub ifindex: bool,
}

/// `garp_group { garp_interval S ; gna_interval S ; interface IF |
/// interfaces { … } }`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct GarpGroup {
    /// The interfaces it paces.
    pub interfaces: Vec<String>,
    /// `garp_interval`, µs.
    pub garp_interval_us: Option<u64>,
    /// `gna_interval`, µs.
    pub gna_interval_us: Option<u64>,
}

impl VrrpConfig {
    /// The least time between two announcements (gratuitous ARP for
    /// IPv4, unsolicited NA for IPv6) on interface `ifname`, µs: its
    /// `garp_group`'s, else the global one.
    pub fn announce_interval_us(&self, ifname: &str, ipv6: bool) -> u64 {
        let g = self
            .garp_groups
            .iter()
            .find(|g| g.interfaces.iter().any(|i| i == ifname));
        match (g, ipv6) {
            (Some(g), false) => g.garp_interval_us.unwrap_or(0),
            (Some(g), true) => g.gna_interval_us.unwrap_or(0),
            (None, false) => self.garp_interval_us,
            (None, true) => self.gna_interval_us,
        }
    }
}

/// `state MASTER|BACKUP`: only the state wanted at start.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum InitState {
    /// `state MASTER`.
    Master,
    /// `state BACKUP` (and any unknown word).
    Backup,
}

/// `authentication { auth_type ... }` (VRRPv2 over IPv4 only).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub enum Auth {
    /// `auth_type PASS`: the password, at most 8 bytes.
    Pass(Vec<u8>),
    /// `auth_type AH`: the HMAC key, at most 8 bytes.
    Ah(Vec<u8>),
}

/// A tracked object with its weight (`track_interface`, `track_script`...).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Tracked {
    /// The interface, script, file or process name.
    pub name: String,
    /// The weight given here, else the object's own.
    pub weight: Option<i32>,
    /// `reverse` (or `noreverse`: Some(false)).
    pub reverse: Option<bool>,
    /// Line of the entry.
    pub line: usize,
}

/// `unicast_peer { IP [min_ttl N] [max_ttl N] }`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct UnicastPeer {
    /// The peer's address.
    pub addr: IpAddr,
    /// `min_ttl` (0 = none).
    pub min_ttl: u8,
    /// `max_ttl` (255 = none).
    pub max_ttl: u8,
    /// Line of the entry (the first address read fixes the instance's
    /// family).
    #[serde(skip)]
    pub line: usize,
}

/// The notify scripts of an instance or a sync group.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Notify {
    /// `notify_master`.
    pub master: Option<NotifyScript>,
    /// `notify_backup`.
    pub backup: Option<NotifyScript>,
    /// `notify_fault`.
    pub fault: Option<NotifyScript>,
    /// `notify_stop`.
    pub stop: Option<NotifyScript>,
    /// `notify_deleted` (instances only; a bare keyword: DELETED to `notify`).
    pub deleted: Option<Option<NotifyScript>>,
    /// `notify`: called with `INSTANCE|GROUP NAME STATE PRIORITY`.
    pub any: Option<NotifyScript>,
    /// `notify_master_rx_lower_pri`.
    pub master_rx_lower_pri: Option<NotifyScript>,
}

/// A notify script: its command line and who runs it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NotifyScript {
    /// argv.
    pub args: Vec<String>,
    /// `USER`, else the global script user.
    pub user: Option<String>,
    /// `GROUP`.
    pub group: Option<String>,
    /// Line of the keyword.
    pub line: usize,
}

/// The gratuitous ARP / unsolicited NA timing of an instance (µs, counts).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Garp {
    /// `garp_master_delay`: the second burst after becoming MASTER.
    pub master_delay_us: u64,
    /// `garp_master_repeat`: per burst.
    pub master_repeat: u32,
    /// `garp_master_refresh`: periodic bursts while MASTER (0 = off).
    pub master_refresh_us: u64,
    /// `garp_master_refresh_repeat`.
    pub master_refresh_repeat: u32,
    /// `garp_lower_prio_delay`.
    pub lower_prio_delay_us: u64,
    /// `garp_lower_prio_repeat`.
    pub lower_prio_repeat: u32,
}

impl Default for Garp {
    fn default() -> Self {
        Garp {
            master_delay_us: 5_000_000,
            master_repeat: 5,
            master_refresh_us: 0,
            master_refresh_repeat: 1,
            lower_prio_delay_us: 5_000_000,
            lower_prio_repeat: 5,
        }
    }
}

/// One `vrrp_instance`, resolved as keepalived's `vrrp_complete_instance()`
/// leaves it.
#[derive(Debug, Clone, Serialize)]
pub struct Instance {
    /// The instance name.
    pub name: String,
    /// Line of `vrrp_instance`.
    pub line: usize,
    /// `interface`.
    pub interface: Option<String>,
    /// `virtual_router_id` (1..255).
    pub vrid: u8,
    /// Base priority: `priority`, else 255 with `state MASTER`, else 100.
    pub priority: u8,
    /// `state` as written (the state wanted at start).
    pub init_state: InitState,
    /// `advert_int` in µs, rounded for the version (v2 whole seconds).
    pub advert_int_us: u64,
    /// VRRP version (2 or 3).
    pub version: u8,
    /// IPv6 instance (its addresses are IPv6).
    pub ipv6: bool,
    /// `nopreempt` (cleared for an owner).
    pub nopreempt: bool,
    /// `preempt_delay` in µs.
    pub preempt_delay_us: u64,
    /// `accept` / `no_accept`, resolved: unless given, accept for an
    /// owner or out of strict mode (keepalived's default); never for a
    /// VRRPv2 non-owner in strict mode. Without it a MASTER that does not
    /// own its addresses drops traffic to them (nftables).
    pub accept: bool,
    /// `strict_mode` (or global `vrrp_strict`).
    pub strict: bool,
    /// `dont_track_primary`.
    pub dont_track_primary: bool,
    /// `bfd_takeover NAME` (extension): the `bfd_instance` to the peer
    /// whose loss, seen while following that peer as BACKUP, counts as
    /// the master-down timer's expiry; and its neighbour's address.
    pub bfd_takeover: Option<(String, std::net::IpAddr)>,
    /// `track_src_ip`.
    pub track_src_ip: bool,
    /// `mcast_src_ip` / `unicast_src_ip`.
    pub src_ip: Option<IpAddr>,
    /// `mcast_dst_ip`, else the global group.
    pub mcast_dst: Option<IpAddr>,
    /// `unicast_peer`s: with any, the instance is unicast.
    pub unicast_peers: Vec<UnicastPeer>,
    /// `unicast_ttl`.
    pub unicast_ttl: u8,
    /// `unicast_fault_no_peer`.
    pub unicast_fault_no_peer: bool,
    /// `check_unicast_src` (or global `vrrp_check_unicast_src`).
    pub check_unicast_src: bool,
    /// `old_unicast_checksum`: `Some(true)` = the VRRPv3 checksum of a
    /// unicast advert over the multicast group (keepalived before 2.0.x),
    /// `Some(false)` (`never`) = never switch to it, `None` = switch when
    /// a peer's adverts only check that way.
    pub old_unicast_checksum: Option<bool>,
    /// `virtual_ipaddress`: advertised and checked.
    pub vips: Vec<Vip>,
    /// `virtual_ipaddress_excluded`: set with the VIPs, not advertised.
    pub evips: Vec<Vip>,
    /// `virtual_routes`: set with the VIPs.
    pub virtual_routes: Vec<Route>,
    /// `virtual_rules`: set with the VIPs.
    pub virtual_rules: Vec<Rule>,
    /// `track_interface`.
    pub track_interfaces: Vec<Tracked>,
    /// `track_script` (names of existing `vrrp_script`s).
    pub track_scripts: Vec<Tracked>,
    /// `track_file`.
    pub track_files: Vec<Tracked>,
    /// `track_process`.
    pub track_processes: Vec<Tracked>,
    /// `track_bfd`.
    pub track_bfds: Vec<Tracked>,
    /// `authentication`.
    pub auth: Option<Auth>,
    /// GARP/NA timing.
    pub garp: Garp,
    /// `down_timer_adverts` (1..100, default 3).
    pub down_timer_adverts: u32,
    /// `lower_prio_no_advert`.
    pub lower_prio_no_advert: bool,
    /// `higher_prio_send_advert`.
    pub higher_prio_send_advert: bool,
    /// `skip_check_adv_addr`.
    pub skip_check_adv_addr: bool,
    /// Notify scripts.
    pub notify: Notify,
    /// `smtp_alert`, else global `smtp_alert_vrrp`, else `smtp_alert`
    /// (always `Some` once built).
    pub smtp_alert: Option<bool>,
    /// `notify_priority_changes`, else global
    /// `vrrp_notify_priority_changes` (always `Some` once built).
    pub notify_priority_changes: Option<bool>,
    /// `use_vmac [NAME]`: the macvlan's name.
    pub vmac: Option<String>,
    /// `vmac_xmit_base`.
    pub vmac_xmit_base: bool,
    /// `promote_secondaries`.
    pub promote_secondaries: bool,
    /// The sync group the instance is in.
    pub sync_group: Option<String>,
}

/// `vrrp_script NAME { ... }`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct VrrpScript {
    /// Its name.
    pub name: String,
    /// Line of `vrrp_script`.
    pub line: usize,
    /// The command line, split.
    pub args: Vec<String>,
    /// `interval` in µs (default 1 s).
    pub interval_us: u64,
    /// `timeout` in µs (0 = the interval).
    pub timeout_us: u64,
    /// `weight` (-253..253).
    pub weight: i32,
    /// `weight ... reverse`.
    pub reverse: bool,
    /// `rise` (default 1).
    pub rise: u32,
    /// `fall` (default 1).
    pub fall: u32,
    /// `user USER [GROUP]`.
    pub user: Option<(String, Option<String>)>,
    /// `init_fail`.
    pub init_fail: bool,
}

/// `vrrp_sync_group NAME { group { ... } ... }`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SyncGroup {
    /// Its name.
    pub name: String,
    /// Line of `vrrp_sync_group`.
    pub line: usize,
    /// Member instances (existing ones, each in one group only).
    pub members: Vec<String>,
    /// Notify scripts of the group.
    pub notify: Notify,
    /// `sync_group_tracking_weight`.
    pub tracking_weight: bool,
    /// `track_interface` of the group: tracked by every member.
    pub track_interfaces: Vec<Tracked>,
    /// `track_script` of the group.
    pub track_scripts: Vec<Tracked>,
    /// `track_file` of the group.
    pub track_files: Vec<Tracked>,
    /// `track_process` of the group.
    pub track_processes: Vec<Tracked>,
    /// `track_bfd` of the group.
    pub track_bfds: Vec<Tracked>,
    /// `smtp_alert`.
    pub smtp_alert: Option<bool>,
}
