//! The IPVS table as plain data: services, their destinations, and the
//! kernel's constants for them.
//!
//! Shared vocabulary of the LVS side: the reconciler computes a desired
//! [`Table`] from the config and health state, the backends report the
//! current one, and [`super::diff`] turns the two into operations. Names follow
//! `linux/ip_vs.h`. [`Table::save`] prints what `ipvsadm -S -n` prints, so the
//! dry-run backend's table reads like the kernel's.

use super::dests::Dests;
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt;
use std::net::IpAddr;

/// `AF_INET`.
pub const AF_INET: u16 = 2;
/// `AF_INET6`.
pub const AF_INET6: u16 = 10;

/// `IPPROTO_TCP`.
pub const IPPROTO_TCP: u16 = 6;
/// `IPPROTO_UDP`.
pub const IPPROTO_UDP: u16 = 17;
/// `IPPROTO_SCTP`.
pub const IPPROTO_SCTP: u16 = 132;

/// `IP_VS_SVC_F_PERSISTENT`.
pub const SVC_F_PERSISTENT: u32 = 0x1;
/// `IP_VS_SVC_F_HASHED`: set by the kernel on every live service.
pub const SVC_F_HASHED: u32 = 0x2;
/// `IP_VS_SVC_F_ONEPACKET`.
pub const SVC_F_ONEPACKET: u32 = 0x4;
/// `IP_VS_SVC_F_SCHED1` (`flag-1`, `sh-fallback`, `mh-fallback`).
pub const SVC_F_SCHED1: u32 = 0x8;
/// `IP_VS_SVC_F_SCHED2` (`flag-2`, `sh-port`, `mh-port`).
pub const SVC_F_SCHED2: u32 = 0x10;
/// `IP_VS_SVC_F_SCHED3` (`flag-3`).
pub const SVC_F_SCHED3: u32 = 0x20;

/// Forwarding methods (`IP_VS_CONN_F_*` & `IP_VS_CONN_F_FWD_MASK`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FwdMethod {
    /// `IP_VS_CONN_F_MASQ` (NAT, `-m`).
    Masq,
    /// `IP_VS_CONN_F_LOCALNODE`: the kernel's own report for a local address.
    LocalNode,
    /// `IP_VS_CONN_F_TUNNEL` (`-i`).
    Tunnel,
    /// `IP_VS_CONN_F_DROUTE` (`-g`).
    Droute,
    /// `IP_VS_CONN_F_BYPASS`.
    Bypass,
}

impl FwdMethod {
    /// The kernel's value.
    pub fn to_kernel(self) -> u32 {
        match self {
            FwdMethod::Masq => 0,
            FwdMethod::LocalNode => 1,
            FwdMethod::Tunnel => 2,
            FwdMethod::Droute => 3,
            FwdMethod::Bypass => 4,
        }
    }

    /// From the kernel's value (masked with `IP_VS_CONN_F_FWD_MASK`).
    pub fn from_kernel(v: u32) -> FwdMethod {
        match v & 7 {
            1 => FwdMethod::LocalNode,
            2 => FwdMethod::Tunnel,
            3 => FwdMethod::Droute,
            4 => FwdMethod::Bypass,
            _ => FwdMethod::Masq,
        }
    }
}

/// `IP_VS_CONN_F_TUNNEL_TYPE_*`.
pub const TUN_TYPE_IPIP: u8 = 0;
/// GUE.
pub const TUN_TYPE_GUE: u8 = 1;
/// GRE.
pub const TUN_TYPE_GRE: u8 = 2;
/// `IP_VS_TUNNEL_ENCAP_FLAG_CSUM`.
pub const TUN_F_CSUM: u16 = 1;
/// `IP_VS_TUNNEL_ENCAP_FLAG_REMCSUM`.
pub const TUN_F_REMCSUM: u16 = 2;

/// What identifies a virtual service in the kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ServiceKey {
    /// Protocol, address and port.
    Addr {
        /// `IPPROTO_*`.
        protocol: u16,
        /// Virtual address.
        addr: IpAddr,
        /// Virtual port (0 for a port-less persistent service).
        port: u16,
    },
    /// Firewall mark and address family.
    Fwmark {
        /// `AF_INET` or `AF_INET6`.
        af: u16,
        /// The mark.
        mark: u32,
    },
}

impl ServiceKey {
    /// The service's address family.
    pub fn af(&self) -> u16 {
        match self {
            ServiceKey::Addr { addr, .. } => af_of(addr),
            ServiceKey::Fwmark { af, .. } => *af,
        }
    }
}

/// Address family of an address.
pub fn af_of(addr: &IpAddr) -> u16 {
    if addr.is_ipv4() {
        AF_INET
    } else {
        AF_INET6
    }
}

fn proto_flag(p: u16) -> &'static str {
    match p {
        IPPROTO_TCP => "-t",
        IPPROTO_UDP => "-u",
        IPPROTO_SCTP => "--sctp-service",
        _ => "-?",
    }
}

/// `addr:port` as ipvsadm prints it (`[v6]:port`).
pub fn fmt_addr_port(addr: &IpAddr, port: u16) -> String {
    match addr {
        IpAddr::V4(a) => format!("{a}:{port}"),
        IpAddr::V6(a) => format!("[{a}]:{port}"),
    }
}

impl fmt::Display for ServiceKey {
    /// ipvsadm's service argument: `-t 10.0.0.1:80`, `-f 1`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ServiceKey::Addr {
                protocol,
                addr,
                port,
            } => write!(
                f,
                "{} {}",
                proto_flag(*protocol),
                fmt_addr_port(addr, *port)
            ),
            ServiceKey::Fwmark { af, mark } => {
                if *af == AF_INET6 {
                    write!(f, "-f {mark} -6")
                } else {
                    write!(f, "-f {mark}")
                }
            }
        }
    }
}

/// A virtual service's attributes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Service {
    /// Identity.
    pub key: ServiceKey,
    /// Scheduler (`rr`, `wlc`, ...).
    pub sched_name: String,
    /// `IP_VS_SVC_F_*` without `HASHED`.
    pub flags: u32,
    /// Persistence timeout in seconds.
    pub timeout: u32,
    /// Persistence netmask: an IPv4 mask as the kernel stores it (network
    /// byte order read as a native u32) or an IPv6 prefix length.
    pub netmask: u32,
    /// Persistence engine.
    pub pe_name: Option<String>,
}

impl Service {
    /// The netmask meaning "whole address" for the family.
    pub fn full_netmask(af: u16) -> u32 {
        if af == AF_INET6 {
            128
        } else {
            0xffff_ffff
        }
    }

    /// Whether `self` (desired) and `other` (as reported by the kernel) are
    /// the same service setting, ignoring what the kernel adds itself.
    pub fn same_settings(&self, other: &Service) -> bool {
        let persistent = self.flags & SVC_F_PERSISTENT != 0;
        self.sched_name == other.sched_name
            && (self.flags & !SVC_F_HASHED) == (other.flags & !SVC_F_HASHED)
            && (!persistent || (self.timeout == other.timeout && self.netmask == other.netmask))
            && self.pe_name == other.pe_name
    }
}

/// Identity of a destination within its service.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct DestKey {
    /// Real server address.
    pub addr: IpAddr,
    /// Real server port.
    pub port: u16,
}

impl DestKey {
    /// The lowest key (for ranges over one service's destinations).
    pub const MIN: DestKey = DestKey {
        addr: IpAddr::V4(std::net::Ipv4Addr::UNSPECIFIED),
        port: 0,
    };
    /// The highest key.
    pub const MAX: DestKey = DestKey {
        addr: IpAddr::V6(std::net::Ipv6Addr::new(
            0xffff, 0xffff, 0xffff, 0xffff, 0xffff, 0xffff, 0xffff, 0xffff,
        )),
        port: u16::MAX,
    };
}

/// A destination (real server) of a service.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Dest {
    /// Real server address.
    pub addr: IpAddr,
    /// Real server port.
    pub port: u16,
    /// Forwarding method.
    pub fwd_method: FwdMethod,
    /// Weight (0 = no new connections).
    pub weight: u32,
    /// Upper connection threshold (0 = none).
    pub u_thresh: u32,
    /// Lower connection threshold.
    pub l_thresh: u32,
    /// Tunnel type (TUN only).
    pub tun_type: u8,
    /// Tunnel port (GUE only).
    pub tun_port: u16,
    /// Tunnel checksum flags (GUE/GRE only).
    pub tun_flags: u16,
}

impl Dest {
    /// A destination without thresholds or tunnel options.
    pub fn new(addr: IpAddr, port: u16, fwd_method: FwdMethod, weight: u32) -> Dest {
        Dest {
            addr,
            port,
            fwd_method,
            weight,
            u_thresh: 0,
            l_thresh: 0,
            tun_type: 0,
            tun_port: 0,
            tun_flags: 0,
        }
    }

    /// The destination's key.
    pub fn key(&self) -> DestKey {
        DestKey {
            addr: self.addr,
            port: self.port,
        }
    }

    /// Whether `self` (desired) and `other` (as reported by the kernel) are
    /// the same setting. The kernel reports a destination whose address is
    /// local as `LOCALNODE` whatever method it was given, so that matches
    /// anything.
    pub fn same_settings(&self, other: &Dest) -> bool {
        let fwd = other.fwd_method == FwdMethod::LocalNode
            || self.fwd_method == FwdMethod::LocalNode
            || self.fwd_method == other.fwd_method;
        let tun = self.fwd_method != FwdMethod::Tunnel
            || other.fwd_method != FwdMethod::Tunnel
            || (self.tun_type == other.tun_type
                && (self.tun_type != TUN_TYPE_GUE || self.tun_port == other.tun_port)
                && (self.tun_type == TUN_TYPE_IPIP || self.tun_flags == other.tun_flags));
        fwd && tun
            && self.weight == other.weight
            && self.u_thresh == other.u_thresh
            && self.l_thresh == other.l_thresh
    }
}

/// A service with its destinations.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TableService {
    /// The service.
    pub service: Service,
    /// Its destinations.
    pub dests: Dests,
}

/// A whole IPVS table.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Table {
    /// Services by key.
    pub services: BTreeMap<ServiceKey, TableService>,
}

impl Table {
    /// A copy holding only the services `keys` (those present).
    pub fn only(&self, keys: &[ServiceKey]) -> Table {
        Table {
            services: keys
                .iter()
                .filter_map(|k| self.services.get(k).map(|s| (*k, s.clone())))
                .collect(),
        }
    }

    /// Number of destinations over all services.
    pub fn dest_count(&self) -> usize {
        self.services.values().map(|s| s.dests.len()).sum()
    }

    /// Adds a service, keeping the existing one if present.
    pub fn ensure_service(&mut self, service: Service) -> &mut TableService {
        self.services
            .entry(service.key)
            .or_insert_with(|| TableService {
                service,
                dests: Dests::new(),
            })
    }

    /// Gives back each service's spare room for destinations (a vector
    /// grown by doubling holds up to twice what it needs): at tens of
    /// thousands of destinations, per copy of the table. Worth it after a
    /// batch that touched a good part of the table ([`Table::worth_compacting`]).
    pub fn compact(&mut self) {
        for ts in self.services.values_mut() {
            ts.dests.shrink_to_fit();
        }
    }

    /// Whether `ops` operations just applied are enough for [`Table::compact`]
    /// to pay: a start, a reload that moved much, not a health change.
    pub fn worth_compacting(&self, ops: usize) -> bool {
        ops >= 64 && ops.saturating_mul(4) >= self.dest_count()
    }

    /// The table in `ipvsadm -S -n` form, one rule per line, services in
    /// key order, each followed by its destinations.
    pub fn save(&self) -> String {
        let mut out = String::new();
        for ts in self.services.values() {
            out.push_str(&save_service(&ts.service));
            out.push('\n');
            for d in ts.dests.values() {
                out.push_str(&save_dest(&ts.service.key, d));
                out.push('\n');
            }
        }
        out
    }
}

/// One `-A` line as `ipvsadm -S -n` prints it.
pub fn save_service(s: &Service) -> String {
    let mut line = format!("-A {} -s {}", s.key, s.sched_name);
    if s.flags & SVC_F_PERSISTENT != 0 {
        line.push_str(&format!(" -p {}", s.timeout));
        let af = s.key.af();
        if af == AF_INET && s.netmask != 0xffff_ffff {
            line.push_str(&format!(
                " -M {}",
                std::net::Ipv4Addr::from(s.netmask.to_ne_bytes())
            ));
        } else if af == AF_INET6 && s.netmask != 128 {
            line.push_str(&format!(" -M {}", s.netmask));
        }
        if let Some(pe) = &s.pe_name {
            line.push_str(&format!(" --pe {pe}"));
        }
    }
    if s.flags & SVC_F_ONEPACKET != 0 {
        line.push_str(" -o");
    }
    let mut names = Vec::new();
    for (bit, name) in [
        (SVC_F_SCHED1, "flag-1"),
        (SVC_F_SCHED2, "flag-2"),
        (SVC_F_SCHED3, "flag-3"),
    ] {
        if s.flags & bit != 0 {
            // ipvsadm names the bits after the scheduler that reads them.
            names.push(match (s.sched_name.as_str(), bit) {
                ("sh", SVC_F_SCHED1) => "sh-fallback",
                ("sh", SVC_F_SCHED2) => "sh-port",
                ("mh", SVC_F_SCHED1) => "mh-fallback",
                ("mh", SVC_F_SCHED2) => "mh-port",
                _ => name,
            });
        }
    }
    if !names.is_empty() {
        line.push_str(&format!(" -b {}", names.join(",")));
    }
    line
}

/// One `-a` line as `ipvsadm -S -n` prints it (which leaves thresholds out).
pub fn save_dest(key: &ServiceKey, d: &Dest) -> String {
    let method = match d.fwd_method {
        FwdMethod::Masq => "-m",
        FwdMethod::Tunnel => "-i",
        FwdMethod::LocalNode | FwdMethod::Droute | FwdMethod::Bypass => "-g",
    };
    let mut line = format!(
        "-a {} -r {} {} -w {}",
        key,
        fmt_addr_port(&d.addr, d.port),
        method,
        d.weight
    );
    if d.fwd_method == FwdMethod::Tunnel {
        match d.tun_type {
            TUN_TYPE_GUE => {
                line.push_str(&format!(" --tun-type gue --tun-port {}", d.tun_port));
            }
            TUN_TYPE_GRE => line.push_str(" --tun-type gre"),
            _ => line.push_str(" --tun-type ipip"),
        }
        if d.tun_type != TUN_TYPE_IPIP {
            if d.tun_flags & TUN_F_CSUM != 0 {
                line.push_str(" --tun-csum");
            } else if d.tun_flags & TUN_F_REMCSUM != 0 {
                line.push_str(" --tun-remcsum");
            } else {
                line.push_str(" --tun-nocsum");
            }
        }
    }
    line
}

/// The `-x`/`-y` options for a destination's thresholds, if any.
pub fn thresholds(d: &Dest) -> String {
    let mut s = String::new();
    if d.u_thresh != 0 {
        s.push_str(&format!(" -x {}", d.u_thresh));
    }
    if d.l_thresh != 0 {
        s.push_str(&format!(" -y {}", d.l_thresh));
    }
    s
}
