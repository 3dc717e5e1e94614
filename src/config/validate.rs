//! Post-parse validation and fix-ups (keepalived's `validate_check_config()`
//! and the VRRP checks whose results change `keepalived -t`'s verdict).
//!
//! Last stage of the config pipeline: takes the parsed [`Config`], applies
//! keepalived 2.2.7's defaults and inheritance (VS → RS → checker), drops
//! what keepalived drops, with the same messages, and leaves a model the
//! checkers and the IPVS reconciler can use without further defaulting.
//! The outside world it needs (does an interface exist?) is passed in.

use super::diag::{Diagnostics, ErrClass, Pos};
use super::model::*;
use std::sync::Arc;

/// What validation needs to know about the host.
pub trait Host {
    /// True when a network interface of that name exists.
    fn interface_exists(&self, name: &str) -> bool;
    /// True unless the interface is known not to do multicast.
    fn interface_multicast(&self, _name: &str) -> bool {
        true
    }
}

/// The running host, via `/sys/class/net`.
#[derive(Debug, Default, Clone, Copy)]
pub struct RealHost;

impl Host for RealHost {
    fn interface_exists(&self, name: &str) -> bool {
        !name.is_empty()
            && !name.contains('/')
            && std::path::Path::new("/sys/class/net").join(name).exists()
    }
    fn interface_multicast(&self, name: &str) -> bool {
        // IFF_MULTICAST in the flags sysfs shows as hex.
        const IFF_MULTICAST: u64 = 0x1000;
        let flags = std::fs::read_to_string(
            std::path::Path::new("/sys/class/net")
                .join(name)
                .join("flags"),
        );
        match flags {
            Ok(f) => u64::from_str_radix(f.trim().trim_start_matches("0x"), 16)
                .map_or(true, |v| v & IFF_MULTICAST != 0),
            Err(_) => true,
        }
    }
}

/// The protocol as keepalived's messages spell it.
fn proto_name(p: Option<Protocol>) -> &'static str {
    match p {
        Some(Protocol::Tcp) => "tcp",
        Some(Protocol::Udp) => "udp",
        Some(Protocol::Sctp) => "sctp",
        None => "none",
    }
}

/// keepalived's `format_vs()`.
pub fn format_vs(vs: &VirtualServer) -> String {
    let proto = proto_name(vs.protocol);
    match &vs.address {
        // Written by hand: a reload names every virtual server a dozen
        // times, and the formatter took 2,400 instructions a name.
        VsAddress::Addr {
            ip: std::net::IpAddr::V4(a),
            port,
        } => {
            let mut s = String::with_capacity(32);
            s.push('[');
            for (i, o) in a.octets().into_iter().enumerate() {
                if i > 0 {
                    s.push('.');
                }
                push_decimal(&mut s, u32::from(o));
            }
            s.push_str("]:");
            s.push_str(proto);
            s.push(':');
            push_decimal(&mut s, u32::from(*port));
            s
        }
        VsAddress::Addr { ip, port } => format!("[{ip}]:{proto}:{port}"),
        VsAddress::Fwmark { fwmark } => format!("FWM {fwmark}"),
        VsAddress::Group { name } => format!("[{name}]:0"),
    }
}

/// `n` in decimal, as `{n}` writes it.
fn push_decimal(s: &mut String, n: u32) {
    let mut digits = [0u8; 10];
    let mut i = digits.len();
    let mut n = n;
    loop {
        i -= 1;
        digits[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    for &d in &digits[i..] {
        s.push(char::from(d));
    }
}

/// keepalived's `format_rs()`: the real server with its VS's protocol.
pub fn format_rs(ip: std::net::IpAddr, port: u16, vs_protocol: Option<Protocol>) -> String {
    RsName {
        ip,
        port,
        protocol: vs_protocol,
    }
    .to_string()
}

/// keepalived's name for a checked service, `[ip]:proto:port` (the real
/// server's address and port, its virtual server's protocol): kept as what
/// it is made of and written when shown ([`format_rs`]), not as a string
/// per check.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RsName {
    /// The real server's address.
    pub ip: std::net::IpAddr,
    /// Its port.
    pub port: u16,
    /// The virtual server's protocol.
    pub protocol: Option<Protocol>,
}

impl RsName {
    /// Real server `rs` of `vs`.
    pub fn of(rs: &RealServer, vs: &VirtualServer) -> RsName {
        RsName {
            ip: rs.ip,
            port: rs.port,
            protocol: vs.protocol,
        }
    }
}

impl std::fmt::Display for RsName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let proto = proto_name(self.protocol);
        write!(f, "[{}]:{proto}:{}", self.ip, self.port)
    }
}

/// Runs every check and fix-up; problems go to `diags`.
pub fn validate(cfg: &mut Config, diags: &mut Diagnostics, file: &Arc<str>, host: &dyn Host) {
    validate_check(cfg, diags, file);
    resolve_references(cfg);
    validate_vrrp(cfg, diags, file, host);
}

/// What checkers take from elsewhere in the file: SMTP_CHECK's HELO name
/// (its own, else `smtp_helo_name`, else keepalived's), FILE_CHECK's
/// weight and `reverse` (its own, else its `track_file`'s).
fn resolve_references(cfg: &mut Config) {
    let helo = cfg
        .global_defs
        .smtp_helo_name
        .clone()
        .unwrap_or_else(|| SMTP_DEFAULT_HELO.into());
    let files = &cfg.track_files;
    for rs in cfg
        .virtual_servers
        .iter_mut()
        .flat_map(|vs| vs.real_servers.iter_mut())
    {
        for c in &mut rs.checkers {
            match c {
                Checker::Smtp(s) => {
                    s.helo_name.get_or_insert_with(|| helo.clone());
                }
                Checker::File(f) => {
                    let tf = f
                        .track_file
                        .as_ref()
                        .and_then(|n| files.iter().find(|t| &t.name == n));
                    if let Some(tf) = tf {
                        f.weight.get_or_insert(tf.weight);
                        f.reverse.get_or_insert(tf.reverse);
                    }
                }
                _ => {}
            }
        }
    }
}

fn at(file: &Arc<str>, line: usize) -> Pos {
    Pos {
        file: file.clone(),
        line,
    }
}

fn validate_check(cfg: &mut Config, diags: &mut Diagnostics, file: &Arc<str>) {
    let none = Pos::none();
    let groups: Vec<String> = cfg
        .virtual_server_groups
        .iter()
        .filter(|g| !g.entries.is_empty())
        .map(|g| g.name.clone())
        .collect();
    let mut kept = Vec::new();
    for mut vs in std::mem::take(&mut cfg.virtual_servers) {
        if vs.real_servers.is_empty() {
            diags.report_hint(
                &at(file, vs.line),
                ErrClass::GeneralError,
                format!(
                    "Virtual server {} has no real servers - ignoring",
                    format_vs(&vs)
                ),
                "add a real_server; keepalived drops a virtual server without one",
            );
            continue;
        }
        if let VsAddress::Group { name } = &vs.address {
            if !groups.contains(name) {
                // keepalived finds this when it programs the table and
                // logs it; `-t` says nothing and exits 0 for it.
                diags.report(
                    &at(file, vs.line),
                    ErrClass::Ok,
                    format!("Virtual server group {name} specified but not configured - ignoring virtual server {}", format_vs(&vs)),
                );
                continue;
            }
        }
        // keepalived's address checks (protocol, OPS) apply to a virtual
        // server given by address, or by a group with address entries; a
        // group of fwmarks only is a fwmark service.
        let by_address = match &vs.address {
            VsAddress::Addr { .. } => true,
            VsAddress::Fwmark { .. } => false,
            VsAddress::Group { name } => cfg.virtual_server_groups.iter().any(|g| {
                &g.name == name
                    && g.entries
                        .iter()
                        .any(|e| matches!(e, VsgEntry::Range { .. }))
            }),
        };
        if matches!(vs.address, VsAddress::Fwmark { .. }) && vs.protocol.is_some() {
            diags.report(
                &none,
                ErrClass::Warning,
                format!(
                    "Warning: Virtual server {}: protocol specified for fwmark - protocol will be ignored",
                    format_vs(&vs)
                ),
            );
            vs.protocol = None;
        } else if by_address && vs.protocol.is_none() {
            diags.report(
                &none,
                ErrClass::GeneralError,
                format!(
                    "Virtual server {}: no protocol set - defaulting to UDP",
                    format_vs(&vs)
                ),
            );
            vs.protocol = Some(Protocol::Udp);
        }
        if vs.lvs_method.is_none() {
            diags.report(
                &none,
                ErrClass::GeneralError,
                format!(
                    "Virtual server {}: no forwarding method set, setting default NAT",
                    format_vs(&vs)
                ),
            );
            vs.lvs_method = Some(DEFAULT_METHOD);
        }
        if vs.lvs_sched.is_none() {
            diags.report(
                &none,
                ErrClass::GeneralError,
                format!(
                    "Virtual server {}: no scheduler set, setting default 'wlc'",
                    format_vs(&vs)
                ),
            );
            vs.lvs_sched = Some(DEFAULT_SCHED.into());
        }
        if vs.ops && by_address && vs.protocol != Some(Protocol::Udp) {
            diags.report(
                &none,
                ErrClass::GeneralError,
                format!(
                    "Virtual server {}: one packet scheduling requires UDP - resetting",
                    format_vs(&vs)
                ),
            );
            vs.ops = false;
        }
        let zero_port = match &vs.address {
            VsAddress::Addr { port, .. } => *port == 0,
            VsAddress::Group { name } => cfg.virtual_server_groups.iter().any(|g| {
                &g.name == name
                    && g.entries
                        .iter()
                        .any(|e| matches!(e, VsgEntry::Range { port: 0, .. }))
            }),
            VsAddress::Fwmark { .. } => false,
        };
        if zero_port && vs.persistence_timeout == 0 {
            diags.report(
                &none,
                ErrClass::GeneralError,
                format!(
                    "Virtual server {}: zero port only valid for persistent services - setting",
                    format_vs(&vs)
                ),
            );
            vs.persistence_timeout = 360;
        }
        if vs.ha_suspend && matches!(vs.address, VsAddress::Fwmark { .. }) {
            diags.report(
                &none,
                ErrClass::GeneralError,
                format!(
                    "Virtual server {}: cannot use ha_suspend with fwmark - clearing ha_suspend",
                    format_vs(&vs)
                ),
            );
            vs.ha_suspend = false;
        }
        // Duplicate real servers: the second is removed, in place (no
        // second list, no quadratic search at thousands per service).
        let mut seen = super::fx::FxSet::default();
        seen.reserve(vs.real_servers.len());
        let vs_name = format_vs(&vs);
        let protocol = vs.protocol;
        vs.real_servers.retain(|rs| {
            if seen.insert((rs.ip, rs.port)) {
                return true;
            }
            diags.report(
                &none,
                ErrClass::GeneralError,
                format!(
                    "VS {vs_name}: real server {} is duplicated - removing second rs",
                    format_rs(rs.ip, rs.port, protocol)
                ),
            );
            false
        });
        resolve_defaults(&mut vs, cfg.global_defs.checker_log_all_failures, diags);
        check_sorry_server(&mut vs, diags);
        check_quorum(&mut vs, diags);
        kept.push(vs);
    }
    cfg.virtual_servers = kept;
    cfg.virtual_server_groups.retain(|g| !g.entries.is_empty());

    super::violation::start_stop_scripts(cfg, diags);
    super::violation::check_scripts(cfg, diags);
}

/// The sorry server as keepalived fixes it up: one that is also a real
/// server takes that server's `inhibit_on_failure`; unless NAT, its port is
/// cleared for a fwmark service and is the virtual server's otherwise.
fn check_sorry_server(vs: &mut VirtualServer, diags: &mut Diagnostics) {
    let vs_name = format_vs(vs);
    let Some(s) = vs.sorry_server.as_mut() else {
        return;
    };
    if let Some(rs) = vs
        .real_servers
        .iter()
        .find(|r| r.ip == s.ip && r.port == s.port)
    {
        let inhibit = rs.inhibit();
        if inhibit != s.inhibit {
            diags.report(
                &Pos::none(),
                ErrClass::GeneralError,
                format!(
                    "Virtual server {vs_name}: real server {} matches sorry server, but inhibit setting differs, {}ing on sorry server",
                    format_rs(rs.ip, rs.port, vs.protocol),
                    if inhibit { "sett" } else { "clear" }
                ),
            );
            s.inhibit = inhibit;
        }
    }
    if s.lvs_method == Some(Forwarding::Nat) {
        return;
    }
    match vs.address {
        VsAddress::Fwmark { .. } if s.port != 0 => {
            diags.report(
                &Pos::none(),
                ErrClass::GeneralError,
                format!("WARNING - virtual server {vs_name}, sorry server has port specified - clearing"),
            );
            s.port = 0;
        }
        VsAddress::Addr { port, .. } if s.port == 0 => s.port = port,
        VsAddress::Addr { port, .. } if s.port != port => {
            diags.report(
                &Pos::none(),
                ErrClass::GeneralError,
                format!(
                    "WARNING - virtual server {vs_name} and sorry server ports don't match - resetting"
                ),
            );
            s.port = port;
        }
        _ => {}
    }
}

/// keepalived's quorum checks: never above the real servers' total weight
/// (it could never be gained), and hysteresis below the quorum — computed
/// in its unsigned arithmetic, so a quorum cut to 0 leaves a hysteresis of
/// 2^32 - 1 and the quorum is never gained.
fn check_quorum(vs: &mut VirtualServer, diags: &mut Diagnostics) {
    let total: u64 = vs
        .real_servers
        .iter()
        .map(|r| r.weight.unwrap_or(vs.weight).max(0) as u64)
        .sum();
    let total = u32::try_from(total).unwrap_or(u32::MAX);
    if vs.quorum > total {
        diags.report(
            &Pos::none(),
            ErrClass::GeneralError,
            format!(
                "Warning - quorum {} for {} exceeds total weight of real servers {total}, reducing quorum to {total}",
                vs.quorum,
                format_vs(vs)
            ),
        );
        vs.quorum = total;
    }
    if vs.hysteresis >= vs.quorum {
        let h = vs.quorum.wrapping_sub(1);
        diags.report(
            &Pos::none(),
            ErrClass::GeneralError,
            format!(
                "Virtual server {}: hysteresis {} >= quorum {}; setting hysteresis to {h}",
                format_vs(vs),
                vs.hysteresis,
                vs.quorum
            ),
        );
        vs.hysteresis = h;
    }
}

/// keepalived's forwarding method when none is set.
const DEFAULT_METHOD: Forwarding = Forwarding::Nat;
/// keepalived's scheduler when none is set.
const DEFAULT_SCHED: &str = "wlc";

/// The resolution alone, without validation's checks and messages: a
/// load that stopped at a fatal include still hands out a model whose
/// every value is resolved (see the accessors of [`super::model`]).
pub fn resolve(cfg: &mut Config) {
    let mut scratch = Diagnostics::default();
    let log_all = cfg.global_defs.checker_log_all_failures;
    for vs in &mut cfg.virtual_servers {
        vs.lvs_method.get_or_insert(DEFAULT_METHOD);
        vs.lvs_sched.get_or_insert_with(|| DEFAULT_SCHED.into());
        resolve_defaults(vs, log_all, &mut scratch);
    }
    resolve_references(cfg);
}

/// RS ← VS and checker ← RS inheritance, with keepalived's type defaults.
fn resolve_defaults(vs: &mut VirtualServer, global_log_all: bool, diags: &mut Diagnostics) {
    let vs_name = format_vs(vs);
    let vs_delay = vs.delay_loop.unwrap_or(60 * TIMER_HZ);
    let vs_ct = vs.connect_timeout.unwrap_or(5 * TIMER_HZ);
    vs.delay_loop = Some(vs_delay);
    vs.connect_timeout = Some(vs_ct);
    let method = vs.lvs_method.unwrap_or(DEFAULT_METHOD);
    if let Some(s) = vs.sorry_server.as_mut() {
        s.lvs_method.get_or_insert(method);
    }
    let vs_port = match vs.address {
        VsAddress::Addr { port, .. } => Some(port),
        _ => None,
    };
    let fwmark = matches!(vs.address, VsAddress::Fwmark { .. });
    let vs_protocol = vs.protocol;
    // unhealthy_threshold (extension) is `retry` counted the other way; the
    // parser kept at most one of the two per block.
    if let Some(n) = vs.thresholds.unhealthy_threshold {
        vs.retry.get_or_insert(n - 1);
    }
    let vs_thresholds = vs.thresholds.clone();
    for rs in &mut vs.real_servers {
        rs.weight.get_or_insert(vs.weight);
        rs.lvs_method.get_or_insert(method);
        rs.inhibit_on_failure.get_or_insert(vs.inhibit_on_failure);
        rs.alpha.get_or_insert(vs.alpha);
        if rs.retry.is_none() {
            rs.retry = vs.retry;
        }
        if rs.delay_before_retry.is_none() {
            rs.delay_before_retry = vs.delay_before_retry.into();
        }
        if rs.warmup.is_none() {
            rs.warmup = vs.warmup.into();
        }
        rs.connect_timeout.get_or_insert(vs_ct);
        rs.delay_loop.get_or_insert(vs_delay);
        // Checkers aim at the address and port written on the real_server
        // line, before the port fix-ups below (keepalived copies them at parse time).
        let (ip, rs_line_port) = (rs.ip, rs.port);
        let is_nat = rs.lvs_method == Some(Forwarding::Nat);
        if let Some(vp) = vs_port {
            if is_nat {
                if rs.port == 0 {
                    rs.port = vp;
                }
            } else {
                if rs.port != 0 && rs.port != vp {
                    diags.report(
                        &Pos::none(),
                        ErrClass::Warning,
                        format!(
                            "WARNING - virtual server {vs_name} and real server {} ports don't match - resetting",
                            format_rs(rs.ip, rs.port, vs_protocol)
                        ),
                    );
                }
                rs.port = vp;
            }
        } else if fwmark && !is_nat && rs.port != 0 {
            diags.report(
                &Pos::none(),
                ErrClass::GeneralError,
                format!(
                    "WARNING - fwmark virtual server {vs_name}, real server {} has port specified - clearing",
                    format_rs(rs.ip, rs.port, vs_protocol)
                ),
            );
            rs.port = 0;
        }
        for c in &mut rs.checkers {
            let is_misc = matches!(c, Checker::Misc(_));
            let is_dns = matches!(c, Checker::Dns(_));
            let is_http = matches!(c, Checker::Http(_) | Checker::Ssl(_));
            let cm = c.common_mut();
            if let Some(n) = cm.thresholds.as_ref().and_then(|t| t.unhealthy_threshold) {
                cm.retry.get_or_insert(n - 1);
            }
            if !vs_thresholds.is_empty() {
                let own = cm.thresholds.as_deref().cloned().unwrap_or_default();
                let mut merged = own.or(&vs_thresholds);
                // The virtual server's unhealthy_threshold reached the
                // checker as `retry` (a real server's `retry` before it):
                // only the checker's own is kept beside its retry.
                merged.unhealthy_threshold = own.unhealthy_threshold;
                cm.thresholds = Some(Box::new(merged));
            }
            cm.connect_ip.get_or_insert(ip);
            cm.connect_port.get_or_insert(rs_line_port);
            cm.connect_timeout
                .get_or_insert(rs.connect_timeout.unwrap_or(vs_ct));
            let delay = cm
                .delay_loop
                .get_or_insert(rs.delay_loop.unwrap_or(vs_delay));
            if cm.retry.is_none() {
                cm.retry = Some(rs.retry.unwrap_or(if is_misc {
                    0
                } else if is_dns {
                    3
                } else {
                    1
                }));
            }
            if cm.delay_before_retry.is_none() {
                cm.delay_before_retry =
                    Micros::from_us(rs.delay_before_retry.unwrap_or(if is_dns {
                        delay
                    } else if is_http {
                        3 * TIMER_HZ
                    } else {
                        TIMER_HZ
                    }));
            }
            if cm.warmup.is_none() {
                cm.warmup = Micros::from_us(rs.warmup.unwrap_or(delay));
            }
            cm.alpha.get_or_insert(rs.alpha.unwrap_or(false));
            cm.log_all_failures.get_or_insert(global_log_all);
        }
    }
}

/// The VRRP side's checks, then its script audit unless keepalived's VRRP
/// process would stop first (a non-existent interface).
fn validate_vrrp(cfg: &mut Config, diags: &mut Diagnostics, file: &Arc<str>, host: &dyn Host) {
    let dropped = super::violation::vrrp_script_users(cfg, diags, file);
    let script_names: Vec<String> = cfg
        .other_blocks
        .iter()
        .filter(|b| b.keyword == "vrrp_script")
        .filter(|b| has_script(b))
        .filter_map(|b| b.args.first().cloned())
        .filter(|n| !dropped.names.contains(n))
        .collect();
    let mut bad_if = false;
    for b in &cfg.other_blocks {
        match b.keyword.as_str() {
            "vrrp_script" if !has_script(b) => {
                diags.report(
                    &at(file, b.end_line),
                    ErrClass::GeneralError,
                    format!(
                        "No script set for vrrp_script {} - removing",
                        b.args.first().cloned().unwrap_or_default()
                    ),
                );
            }
            _ => {}
        }
    }
    let mut cx = super::vrrp::build::Ctx::new(diags, file.clone(), host, true);
    cx.dynamic_interfaces = cfg
        .global_defs
        .other
        .iter()
        .any(|s| s.keyword == "dynamic_interfaces");
    cfg.vrrp = super::vrrp::build(cfg, &mut cx, &script_names);
    bad_if |= cx.bad_if;
    if bad_if {
        diags.push(
            &Pos::none(),
            ErrClass::Ok,
            "Non-existent interface specified in configuration".to_string(),
            None,
            None,
        );
    }
    if !bad_if {
        super::violation::vrrp_scripts(cfg, &dropped, diags);
    }
}

/// A `vrrp_script` block with a `script` that has a command.
fn has_script(b: &Block) -> bool {
    b.settings
        .iter()
        .any(|s| s.keyword == "script" && !s.args.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_ipv4_virtual_server_is_named_as_the_formatter_names_it() {
        for (addr, port, proto) in [
            ("0.0.0.0", 1u16, "TCP"),
            ("255.255.255.255", 65535, "UDP"),
            ("192.0.2.10", 80, "SCTP"),
            ("10.0.0.1", 10000, "TCP"),
        ] {
            let conf = format!(
                "virtual_server {addr} {port} {{\n protocol {proto}\n real_server 192.0.2.1 80 {{\n }}\n}}\n"
            );
            let loaded = crate::config::load_str(&conf);
            let vs = &loaded.config.virtual_servers[0];
            let VsAddress::Addr { ip, port } = &vs.address else {
                panic!("{conf}");
            };
            let expected = format!("[{ip}]:{}:{port}", proto_name(vs.protocol));
            assert_eq!(format_vs(vs), expected);
        }
    }
}
