//! The typed configuration model: what the parser produces and the checkers,
//! the reconciler and `--dump-json` consume.
//!
//! Third stage of the config pipeline (after [`super::parser`], finished by
//! [`super::validate`], which fills in keepalived's defaults and inheritance).
//! Field names are keepalived's keywords. Times are microseconds, as
//! keepalived stores them (`TIMER_HZ`). Sections whose runtime is not built
//! yet (VRRP, BFD, static addresses/routes/rules) are kept as checked,
//! generic [`Block`]s so that nothing an operator wrote is lost.

pub use super::micros::Micros;
pub use super::rare::{Rare, Unset};
use serde::Serialize;
use std::net::IpAddr;

mod checkers;
pub mod syncd;
pub use checkers::*;

/// Microseconds per second (keepalived's `TIMER_HZ`).
pub const TIMER_HZ: u64 = 1_000_000;

/// The whole configuration.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Config {
    /// Root-level settings that are not inside `global_defs`.
    pub root: RootSettings,
    /// `global_defs`.
    pub global_defs: GlobalDefs,
    /// The top-level `SSL` block (client certificate for SSL_GET).
    pub ssl: Option<SslBlock>,
    /// `virtual_server_group` blocks, in file order.
    pub virtual_server_groups: Vec<VirtualServerGroup>,
    /// `virtual_server` blocks that survived validation, in file order.
    pub virtual_servers: Vec<VirtualServer>,
    /// `track_file` (and deprecated `vrrp_track_file`) blocks.
    pub track_files: Vec<TrackFile>,
    /// `bfd_instance` blocks in file order, those keepalived's BFD process
    /// drops included (`valid` false): the checker and VRRP still know
    /// their names.
    pub bfd_instances: Vec<BfdInstance>,
    /// VRRP and static sections as written.
    pub other_blocks: Vec<Block>,
    /// The VRRP side, typed and checked (built from `other_blocks`).
    pub vrrp: super::vrrp::VrrpConfig,
    /// The default script user as the checker's parse left it: `None` not
    /// needed, else whether it could be set. keepalived's `-t` runs its
    /// parses in one process and this state outlives the checker's, so
    /// the VRRP parse starts from it.
    #[serde(skip)]
    pub default_user_ok: Option<bool>,
}

/// Root-level keywords (not valid inside `global_defs`).
#[derive(Debug, Clone, Default, Serialize)]
pub struct RootSettings {
    /// `net_namespace NAME`.
    pub net_namespace: Option<String>,
    /// `net_namespace_ipvs [NAME]` (`Some("")` = default namespace).
    pub net_namespace_ipvs: Option<String>,
    /// `namespace_with_ipsets`.
    pub namespace_with_ipsets: bool,
    /// `use_pid_dir`.
    pub use_pid_dir: bool,
    /// `instance NAME`.
    pub instance: Option<String>,
    /// `child_wait_time SECS` (default 5).
    pub child_wait_time: Option<u32>,
    /// `linkbeat_use_polling`.
    pub linkbeat_use_polling: bool,
}

/// A keyword and its arguments as written, with its line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Setting {
    /// The keyword.
    pub keyword: String,
    /// Its arguments.
    pub args: Vec<String>,
    /// The line it was on.
    pub line: usize,
}

/// `lvs_flush_on_stop` modes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FlushOnStop {
    /// Delete each dest then each VS (keepalived's default).
    Off,
    /// Flush the whole table.
    Full,
    /// Delete each managed VS, keeping their dests' deletion to the kernel.
    Vs,
}

/// `lvs_timeouts`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct LvsTimeouts {
    /// `tcp N` seconds.
    pub tcp: Option<u32>,
    /// `tcpfin N` seconds.
    pub tcpfin: Option<u32>,
    /// `udp N` seconds.
    pub udp: Option<u32>,
}

/// A script with its optional user and group (`CMD [USER [[:]GROUP]]`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Script {
    /// argv, escapes processed.
    pub args: Vec<String>,
    /// `USER` when given.
    pub user: Option<String>,
    /// `GROUP` when given.
    pub group: Option<String>,
}

/// A notify FIFO with its optional owner.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Fifo {
    /// Path of the FIFO.
    pub path: String,
    /// Owner user.
    pub user: Option<String>,
    /// Owner group.
    pub group: Option<String>,
}

/// The SNMP settings of `global_defs` (keepalived's `-x` sets the four
/// `enable_snmp_*`, `-A` the socket).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct SnmpGlobals {
    /// `snmp_socket` (the first one: keepalived ignores later ones).
    pub socket: Option<String>,
    /// `enable_snmp_vrrp` (or its old name `enable_snmp_keepalived`):
    /// KEEPALIVED-MIB's VRRP part.
    pub vrrp: bool,
    /// `enable_snmp_checker`: KEEPALIVED-MIB's checker part.
    pub checker: bool,
    /// `enable_snmp_rfcv2` (or `enable_snmp_rfc`): VRRP-MIB.
    pub rfcv2: bool,
    /// `enable_snmp_rfcv3` (or `enable_snmp_rfc`): VRRPv3-MIB.
    pub rfcv3: bool,
    /// `enable_traps`.
    pub traps: bool,
}

/// `global_defs`: the checker/LVS settings typed, everything else kept.
#[derive(Debug, Clone, Serialize)]
pub struct GlobalDefs {
    /// `router_id`.
    pub router_id: Option<String>,
    /// `lvs_flush`.
    pub lvs_flush: bool,
    /// `lvs_flush_on_stop [VS]`.
    pub lvs_flush_on_stop: FlushOnStop,
    /// `lvs_timeouts`.
    pub lvs_timeouts: Option<LvsTimeouts>,
    /// `lvs_sync_daemon`.
    pub lvs_sync_daemon: Option<syncd::SyncdConfig>,
    /// `script_user USER [GROUP]`.
    pub script_user: Option<(String, Option<String>)>,
    /// `enable_script_security`.
    pub enable_script_security: bool,
    /// `checker_log_all_failures`.
    pub checker_log_all_failures: bool,
    /// `rs_init_notifies`.
    pub rs_init_notifies: bool,
    /// `no_checker_emails`.
    pub no_checker_emails: bool,
    /// `smtp_alert`.
    pub smtp_alert: Option<bool>,
    /// `smtp_alert_checker`.
    pub smtp_alert_checker: Option<bool>,
    /// `notify_fifo`.
    pub notify_fifo: Option<Fifo>,
    /// `notify_fifo_script`.
    pub notify_fifo_script: Option<Script>,
    /// `lvs_notify_fifo`.
    pub lvs_notify_fifo: Option<Fifo>,
    /// `lvs_notify_fifo_script`.
    pub lvs_notify_fifo_script: Option<Script>,
    /// `notification_email` addresses.
    pub notification_email: Vec<String>,
    /// `notification_email_from`.
    pub notification_email_from: Option<String>,
    /// `smtp_server IP|NAME [PORT]`.
    pub smtp_server: Option<(String, u16)>,
    /// `smtp_helo_name`.
    pub smtp_helo_name: Option<String>,
    /// `smtp_connect_timeout` (µs; default 30 s).
    pub smtp_connect_timeout: u64,
    /// `checker_process_name`.
    pub checker_process_name: Option<String>,
    /// `random_seed`.
    pub random_seed: Option<u32>,
    /// `reload_check_config [LOGFILE]`.
    pub reload_check_config: Option<String>,
    /// `status_socket PATH` (keepalived-rs extension): the status socket.
    pub status_socket: Option<String>,
    /// `umask` as written, its words joined (`-u` overrides it).
    pub umask: Option<String>,
    /// `default_interface IF`: VRRP's interface where an instance names
    /// none (the last line wins, as in keepalived); eth0 when unset.
    pub default_interface: Option<String>,
    /// `metrics_listen ADDR PORT` (keepalived-rs extension): where
    /// Prometheus metrics are served; none by default.
    pub metrics_listen: Option<std::net::SocketAddr>,
    /// `state_file PATH` (keepalived-rs extension): the checkers' states are
    /// written there at stop and every `state_file_interval`, and read at
    /// start (HAProxy's `server-state-file`).
    pub state_file: Option<String>,
    /// `state_file_interval SECONDS` (extension; default 30 s).
    pub state_file_interval: Option<u64>,
    /// `startup_script` (kept; keepalived's parent runs it before the children).
    pub startup_script: Option<Script>,
    /// `shutdown_script` (kept; run by keepalived's parent at stop).
    pub shutdown_script: Option<Script>,
    /// `snmp_socket`, `enable_snmp_*`, `enable_traps`.
    pub snmp: SnmpGlobals,
    /// Every other `global_defs` keyword, checked and kept as written.
    pub other: Vec<Setting>,
}

impl Default for GlobalDefs {
    fn default() -> Self {
        GlobalDefs {
            router_id: None,
            lvs_flush: false,
            lvs_flush_on_stop: FlushOnStop::Off,
            lvs_timeouts: None,
            lvs_sync_daemon: None,
            script_user: None,
            enable_script_security: false,
            checker_log_all_failures: false,
            rs_init_notifies: false,
            no_checker_emails: false,
            smtp_alert: None,
            smtp_alert_checker: None,
            notify_fifo: None,
            notify_fifo_script: None,
            lvs_notify_fifo: None,
            lvs_notify_fifo_script: None,
            notification_email: Vec::new(),
            notification_email_from: None,
            smtp_server: None,
            smtp_helo_name: None,
            smtp_connect_timeout: 30 * TIMER_HZ,
            checker_process_name: None,
            random_seed: None,
            reload_check_config: None,
            status_socket: None,
            default_interface: None,
            umask: None,
            metrics_listen: None,
            state_file: None,
            state_file_interval: None,
            startup_script: None,
            shutdown_script: None,
            snmp: SnmpGlobals::default(),
            other: Vec::new(),
        }
    }
}

/// The top-level `SSL` block.
#[derive(Debug, Clone, Default, Serialize)]
pub struct SslBlock {
    /// `password`.
    pub password: Option<String>,
    /// `ca`.
    pub ca: Option<String>,
    /// `certificate`.
    pub certificate: Option<String>,
    /// `key`.
    pub key: Option<String>,
}

/// Address family.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Family {
    /// IPv4.
    Inet,
    /// IPv6.
    Inet6,
}

/// One entry of a `virtual_server_group`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum VsgEntry {
    /// A range of addresses `first..=last` (a single address has first == last).
    Range {
        /// First address.
        first: IpAddr,
        /// Last address, inclusive.
        last: IpAddr,
        /// Port, 0 = none.
        port: u16,
        /// Line of the entry.
        line: usize,
    },
    /// `fwmark N [inet|inet6]`.
    Fwmark {
        /// The mark.
        fwmark: u32,
        /// Family when given.
        family: Option<Family>,
        /// Line of the entry.
        line: usize,
    },
}

/// `virtual_server_group NAME { ... }`.
#[derive(Debug, Clone, Serialize)]
pub struct VirtualServerGroup {
    /// The group's name.
    pub name: String,
    /// Its entries.
    pub entries: Vec<VsgEntry>,
    /// Line of the keyword.
    pub line: usize,
}

/// How a virtual server is identified.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum VsAddress {
    /// `IP [PORT]`.
    Addr {
        /// The address.
        ip: IpAddr,
        /// The port, 0 = none.
        port: u16,
    },
    /// `fwmark N`.
    Fwmark {
        /// The mark.
        fwmark: u32,
    },
    /// `group NAME`.
    Group {
        /// The group's name.
        name: String,
    },
}

/// `protocol`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Protocol {
    /// TCP.
    Tcp,
    /// UDP.
    Udp,
    /// SCTP.
    Sctp,
}

/// Tunnel encapsulation for `TUN`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "type")]
pub enum TunnelType {
    /// IP-in-IP.
    Ipip,
    /// Generic UDP encapsulation on a port.
    Gue {
        /// The UDP port.
        port: u16,
    },
    /// GRE.
    Gre,
}

/// Tunnel checksum option.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TunnelCsum {
    /// `nocsum`.
    Nocsum,
    /// `csum`.
    Csum,
    /// `remcsum`.
    Remcsum,
}

/// `lvs_method` / `lb_kind`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "method")]
pub enum Forwarding {
    /// Masquerading.
    Nat,
    /// Direct routing.
    Dr,
    /// Tunnelling.
    Tun {
        /// Encapsulation.
        tunnel: TunnelType,
        /// Checksum option.
        csum: Option<TunnelCsum>,
    },
}

/// A real server's seldom-given settings ([`RealServer::seldom`]).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct RsSeldom {
    /// `notify_up`.
    pub notify_up: Option<Box<Script>>,
    /// `notify_down`.
    pub notify_down: Option<Box<Script>>,
    /// `uthreshold`.
    pub uthreshold: u32,
    /// `lthreshold`.
    pub lthreshold: u32,
    /// `smtp_alert`.
    pub smtp_alert: Option<bool>,
    /// `virtualhost`.
    pub virtualhost: Option<Box<str>>,
    /// `snmp_name`.
    pub snmp_name: Option<Box<str>>,
}

impl Unset for RsSeldom {
    fn unset() -> &'static RsSeldom {
        static UNSET: RsSeldom = RsSeldom {
            notify_up: None,
            notify_down: None,
            uthreshold: 0,
            lthreshold: 0,
            smtp_alert: None,
            virtualhost: None,
            snmp_name: None,
        };
        &UNSET
    }
}

/// `real_server IP [PORT] { ... }`.
#[derive(Debug, Clone, Serialize)]
pub struct RealServer {
    /// Address.
    pub ip: IpAddr,
    /// Port, 0 = none written.
    pub port: u16,
    /// Line of the keyword.
    pub line: usize,
    /// `weight` (resolved: VS `weight`, default 1).
    pub weight: Option<i32>,
    /// `lvs_method` (resolved: the VS's).
    pub lvs_method: Option<Forwarding>,
    /// `inhibit_on_failure`.
    pub inhibit_on_failure: Option<bool>,
    /// `notify_up`, `notify_down`, `uthreshold`, `lthreshold`,
    /// `smtp_alert`, `virtualhost`, `snmp_name`: seldom given, boxed as one
    /// (a real server's record is kept small for configs of tens of
    /// thousands).
    #[serde(flatten)]
    pub seldom: Rare<RsSeldom>,
    /// `alpha`.
    pub alpha: Option<bool>,
    /// `retry`.
    pub retry: Option<u32>,
    /// `delay_before_retry` µs.
    pub delay_before_retry: Micros,
    /// `warmup` µs.
    pub warmup: Micros,
    /// `connect_timeout` µs.
    pub connect_timeout: Micros,
    /// `delay_loop` µs.
    pub delay_loop: Micros,
    /// Checkers; none = always up.
    pub checkers: Checkers,
}

/// A real server's checkers: one inline (most have one; a vector of one
/// was a heap block of its own per real server, 24 bytes here and 112
/// there), more on the heap.
pub type Checkers = smallvec::SmallVec<[Checker; 1]>;

/// `sorry_server IP [PORT]`.
#[derive(Debug, Clone, Serialize)]
pub struct SorryServer {
    /// Address.
    pub ip: IpAddr,
    /// Port, 0 = none.
    pub port: u16,
    /// `sorry_server_lvs_method` (resolved: the VS's).
    pub lvs_method: Option<Forwarding>,
    /// `sorry_server_inhibit`.
    pub inhibit: bool,
}

/// `virtual_server`.
#[derive(Debug, Clone, Serialize)]
pub struct VirtualServer {
    /// Identity.
    pub address: VsAddress,
    /// Line of the keyword.
    pub line: usize,
    /// `protocol`.
    pub protocol: Option<Protocol>,
    /// `lvs_sched` / `lb_algo` (resolved default `wlc`).
    pub lvs_sched: Option<String>,
    /// `lvs_method` / `lb_kind` (resolved default NAT).
    pub lvs_method: Option<Forwarding>,
    /// `persistence_timeout` seconds (0 = not persistent).
    pub persistence_timeout: u32,
    /// `persistence_granularity` (dotted mask or prefix length), as written.
    pub persistence_granularity: Option<String>,
    /// `persistence_engine`.
    pub persistence_engine: Option<String>,
    /// `ops`.
    pub ops: bool,
    /// `flag-1`, `flag-2`, `flag-3` (also `sh-*`/`mh-*`).
    pub sched_flags: [bool; 3],
    /// `ha_suspend`.
    pub ha_suspend: bool,
    /// `alpha`.
    pub alpha: bool,
    /// `omega`.
    pub omega: bool,
    /// `quorum` (default 1).
    pub quorum: u32,
    /// `hysteresis`.
    pub hysteresis: u32,
    /// `quorum_up`.
    pub quorum_up: Option<Script>,
    /// `quorum_down`.
    pub quorum_down: Option<Script>,
    /// `sorry_server`.
    pub sorry_server: Option<SorryServer>,
    /// `ip_family`.
    pub ip_family: Option<Family>,
    /// `virtualhost`.
    pub virtualhost: Option<String>,
    /// `smtp_alert`.
    pub smtp_alert: Option<bool>,
    /// `snmp_name`.
    pub snmp_name: Option<String>,
    /// `weight` (default for its real servers).
    pub weight: i32,
    /// `delay_loop` µs (default 60 s).
    pub delay_loop: Option<u64>,
    /// `connect_timeout` µs (default 5 s).
    pub connect_timeout: Option<u64>,
    /// `retry`.
    pub retry: Option<u32>,
    /// `delay_before_retry` µs.
    pub delay_before_retry: Option<u64>,
    /// `warmup` µs.
    pub warmup: Option<u64>,
    /// `inhibit_on_failure`.
    pub inhibit_on_failure: bool,
    /// `half_open` (extension): its TCP_CHECKs probe half-open unless they
    /// say otherwise.
    pub half_open: bool,
    /// Threshold and interval extensions for its checkers.
    #[serde(skip_serializing_if = "Thresholds::is_empty")]
    pub thresholds: Thresholds,
    /// `slow_start` µs (extension): a real server that comes up gets its
    /// weight in steps from 1 to its configured weight over this time.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub slow_start: Option<u64>,
    /// `drain_timeout` µs (extension): a real server that fails, or that a
    /// reload removes, stays at weight 0 until its active connections end
    /// or this time passes, then goes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub drain_timeout: Option<u64>,
    /// `fail_open` (extension): when every real server has failed, all are
    /// kept in at their configured weights (the sorry server unused) until
    /// one comes back, as cloud load balancers fail open.
    pub fail_open: bool,
    /// Real servers.
    pub real_servers: Vec<RealServer>,
    /// The MISC_CHECKs of its real servers dropped at their block's end
    /// (an address family that is not the virtual server's). keepalived
    /// frees the real server but leaves its checkers queued until the
    /// virtual server goes, so their scripts still count for SECURITY
    /// VIOLATION; they never run.
    #[serde(skip)]
    pub orphaned_misc: Vec<MiscCheck>,
    /// The family keepalived fixed for the service from its first
    /// untunnelled real server, at the time it was read (`vs->af`); later
    /// `lb_kind` lines do not change it.
    #[serde(skip)]
    pub first_rs_af: Option<bool>,
}

/// `bfd_instance NAME { ... }`, as keepalived 2.2.7 reads it (BFD itself
/// does not run yet).
#[derive(Debug, Clone, Serialize)]
pub struct BfdInstance {
    /// The instance name (< 32 characters).
    pub name: String,
    /// Line of the keyword.
    pub line: usize,
    /// `neighbor_ip` / `neighbour_ip` (required).
    pub neighbor: Option<IpAddr>,
    /// `source_ip`.
    pub source: Option<IpAddr>,
    /// `min_rx` (ms, kept in µs; default 10 ms).
    pub min_rx_us: u64,
    /// `min_tx` (default 10 ms).
    pub min_tx_us: u64,
    /// `idle_tx` (default 1 s).
    pub idle_tx_us: u64,
    /// `multiplier` (1..255, default 5).
    pub multiplier: u8,
    /// `passive`.
    pub passive: bool,
    /// `ttl` / `hoplimit` (default 255 for IPv4, 64 for IPv6).
    pub ttl: Option<u8>,
    /// `max_hops` (-1..ttl, default 0).
    pub max_hops: i16,
    /// `weight` for the VRRP instances tracking it (-253..253).
    pub weight: i32,
    /// `weight W reverse`.
    pub weight_reverse: bool,
    /// How many top-level blocks of `Config::other_blocks` came before it:
    /// keepalived's VRRP process finds a `track_bfd`'s session only if its
    /// block came first.
    #[serde(skip)]
    pub blocks_before: usize,
    /// `vrrp`: events go to VRRP (with `checker`: only the named ones).
    pub vrrp: bool,
    /// `checker`: events go to the checker.
    pub checker: bool,
    /// Kept by keepalived's BFD process.
    pub valid: bool,
    /// In the checker's and VRRP's lists (the first block of its name).
    pub listed: bool,
}

impl BfdInstance {
    /// A session with keepalived's defaults.
    pub fn new(name: String, line: usize) -> Self {
        BfdInstance {
            name,
            line,
            neighbor: None,
            source: None,
            min_rx_us: 10_000,
            min_tx_us: 10_000,
            idle_tx_us: 1_000_000,
            multiplier: 5,
            passive: false,
            ttl: None,
            max_hops: 0,
            weight: 0,
            weight_reverse: false,
            blocks_before: 0,
            vrrp: false,
            checker: false,
            valid: true,
            listed: true,
        }
    }

    /// A block whose name is too long for keepalived's BFD process: only
    /// the checker and VRRP keep it.
    pub fn unnamed(name: String, line: usize) -> Self {
        BfdInstance {
            valid: false,
            listed: true,
            ..Self::new(name, line)
        }
    }
}

/// `track_file NAME { file PATH; weight N [reverse]; init_file [VAL] [overwrite] }`.
#[derive(Debug, Clone, Serialize)]
pub struct TrackFile {
    /// Name.
    pub name: String,
    /// `file`.
    pub file: Option<String>,
    /// `weight` (default 1).
    pub weight: i32,
    /// `reverse`.
    pub reverse: bool,
    /// `init_file` arguments.
    pub init_file: Option<Vec<String>>,
    /// Line of the keyword.
    pub line: usize,
}

/// A checked block kept as written (VRRP, BFD, static sections).
#[derive(Debug, Clone, Serialize)]
pub struct Block {
    /// The block's keyword (`vrrp_instance`, `static_routes`, ...).
    pub keyword: String,
    /// Its arguments (usually the name).
    pub args: Vec<String>,
    /// Line of the keyword.
    pub line: usize,
    /// Line of its closing `}` (keepalived reports a block's end checks
    /// there).
    pub end_line: usize,
    /// Keywords inside, in order.
    pub settings: Vec<Setting>,
    /// Value-block lines (addresses, routes, ...).
    pub values: Vec<ValueLine>,
    /// Nested blocks.
    pub children: Vec<Block>,
}

/// One line of a value block (`virtual_ipaddress { ... }` and the like).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ValueLine {
    /// Its words.
    pub words: Vec<String>,
    /// Its line (keepalived reports problems per entry).
    pub line: usize,
}

// === resolved values ===
//
// Inheritance (checker ← real server ← virtual server) and keepalived's
// type defaults are applied once, by validation, which fills these
// `Option`s (they stay `Option` so that validation can tell what was
// written). Everything downstream reads them through these accessors,
// which apply nothing: a model that was not validated is a bug, not a
// default.

const RESOLVED: &str = "filled by validation (config::validate)";

/// keepalived's HELO name when neither SMTP_CHECK nor `global_defs` gives
/// one.
pub const SMTP_DEFAULT_HELO: &str = "smtpchecker.keepalived.org";

impl SmtpCheck {
    /// The HELO name (its own, else `smtp_helo_name`, else keepalived's).
    pub fn helo(&self) -> &str {
        self.helo_name.as_deref().expect(RESOLVED)
    }
}

impl FileCheck {
    /// Its weight and `reverse` (its own, else its `track_file`'s); `None`
    /// when its `track_file` does not exist (the checker does not run).
    pub fn weight_reverse(&self) -> Option<(i32, bool)> {
        Some((self.weight?, self.reverse?))
    }
}

/// A checker's common settings as validation resolved them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CheckerTiming {
    /// `connect_ip` (the real server's address unless written).
    pub connect_ip: IpAddr,
    /// `connect_port` (the real_server line's port unless written).
    pub connect_port: u16,
    /// `connect_timeout`.
    pub connect_timeout: std::time::Duration,
    /// `delay_loop`.
    pub delay_loop: std::time::Duration,
    /// `delay_before_retry`.
    pub delay_before_retry: std::time::Duration,
    /// `warmup`.
    pub warmup: std::time::Duration,
    /// `retry`.
    pub retry: u32,
    /// `alpha`.
    pub alpha: bool,
    /// `log_all_failures`.
    pub log_all_failures: bool,
    /// `healthy_threshold` (extension; 1 = keepalived's).
    pub healthy_threshold: u32,
    /// `fast_interval` (extension).
    pub fast_interval: Option<std::time::Duration>,
    /// `down_interval` (extension).
    pub down_interval: Option<std::time::Duration>,
}

impl CheckerCommon {
    /// The settings validation resolved.
    pub fn resolved(&self) -> CheckerTiming {
        let us = |v: Micros| std::time::Duration::from_micros(v.get().expect(RESOLVED));
        CheckerTiming {
            connect_ip: self.connect_ip.expect(RESOLVED),
            connect_port: self.connect_port.expect(RESOLVED),
            connect_timeout: us(self.connect_timeout),
            delay_loop: us(self.delay_loop),
            delay_before_retry: us(self.delay_before_retry),
            warmup: us(self.warmup),
            retry: self.retry.expect(RESOLVED),
            alpha: self.alpha.expect(RESOLVED),
            log_all_failures: self.log_all_failures.expect(RESOLVED),
            healthy_threshold: self
                .thresholds
                .as_ref()
                .and_then(|t| t.healthy_threshold)
                .unwrap_or(1),
            fast_interval: self
                .thresholds
                .as_ref()
                .and_then(|t| t.fast_interval)
                .map(std::time::Duration::from_micros),
            down_interval: self
                .thresholds
                .as_ref()
                .and_then(|t| t.down_interval)
                .map(std::time::Duration::from_micros),
        }
    }
}

impl RealServer {
    /// Its configured weight (`iweight`: its own, else the virtual server's).
    pub fn iweight(&self) -> i32 {
        self.weight.expect(RESOLVED)
    }

    /// Its forwarding method (its own, else the virtual server's).
    pub fn method(&self) -> Forwarding {
        self.lvs_method.expect(RESOLVED)
    }

    /// `inhibit_on_failure` (its own, else the virtual server's).
    pub fn inhibit(&self) -> bool {
        self.inhibit_on_failure.expect(RESOLVED)
    }
}

impl SorryServer {
    /// Its forwarding method (its own, else the virtual server's).
    pub fn method(&self) -> Forwarding {
        self.lvs_method.expect(RESOLVED)
    }
}

impl VirtualServer {
    /// Its scheduler (`wlc` unless written).
    pub fn sched(&self) -> &str {
        self.lvs_sched.as_deref().expect(RESOLVED)
    }

    /// Its forwarding method (NAT unless written).
    pub fn method(&self) -> Forwarding {
        self.lvs_method.expect(RESOLVED)
    }

    /// `delay_loop` (60 s unless written).
    pub fn delay(&self) -> std::time::Duration {
        std::time::Duration::from_micros(self.delay_loop.expect(RESOLVED))
    }
}
