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
use std::sync::Arc;

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
    /// `lvs_sync_daemon` arguments as written.
    pub lvs_sync_daemon: Option<Vec<String>>,
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
            metrics_listen: None,
            state_file: None,
            state_file_interval: None,
            startup_script: None,
            shutdown_script: None,
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

/// A real server's checker.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "type")]
/// The variants other than TCP and PING are boxed: most real servers have
/// one TCP_CHECK, and the record stays the size of its common options.
pub enum Checker {
    /// `TCP_CHECK`.
    #[serde(rename = "TCP_CHECK")]
    Tcp(CheckerCommon),
    /// `HTTP_GET`.
    #[serde(rename = "HTTP_GET")]
    Http(Box<HttpCheck>),
    /// `SSL_GET`.
    #[serde(rename = "SSL_GET")]
    Ssl(Box<HttpCheck>),
    /// `MISC_CHECK`.
    #[serde(rename = "MISC_CHECK")]
    Misc(Box<MiscCheck>),
    /// `SMTP_CHECK`.
    #[serde(rename = "SMTP_CHECK")]
    Smtp(Box<SmtpCheck>),
    /// `DNS_CHECK`.
    #[serde(rename = "DNS_CHECK")]
    Dns(Box<DnsCheck>),
    /// `UDP_CHECK`.
    #[serde(rename = "UDP_CHECK")]
    Udp(Box<UdpCheck>),
    /// `PING_CHECK`.
    #[serde(rename = "PING_CHECK")]
    Ping(CheckerCommon),
    /// `FILE_CHECK`.
    #[serde(rename = "FILE_CHECK")]
    File(Box<FileCheck>),
    /// `BFD_CHECK`.
    #[serde(rename = "BFD_CHECK")]
    Bfd(Box<BfdCheck>),
}

impl Checker {
    /// A TCP_CHECK that probes half-open: its own `half_open`, else its
    /// virtual server's.
    pub fn half_open(&self, vs: &VirtualServer) -> bool {
        matches!(self, Checker::Tcp(t) if t.half_open.unwrap_or(vs.half_open))
    }

    /// The options every checker shares.
    pub fn common(&self) -> &CheckerCommon {
        match self {
            Checker::Tcp(c) | Checker::Ping(c) => c,
            Checker::Http(h) | Checker::Ssl(h) => &h.common,
            Checker::Misc(m) => &m.common,
            Checker::Smtp(s) => &s.common,
            Checker::Dns(d) => &d.common,
            Checker::Udp(u) => &u.common,
            Checker::File(f) => &f.common,
            Checker::Bfd(b) => &b.common,
        }
    }

    /// Mutable access to the shared options.
    pub fn common_mut(&mut self) -> &mut CheckerCommon {
        match self {
            Checker::Tcp(c) | Checker::Ping(c) => c,
            Checker::Http(h) | Checker::Ssl(h) => &mut h.common,
            Checker::Misc(m) => &mut m.common,
            Checker::Smtp(s) => &mut s.common,
            Checker::Dns(d) => &mut d.common,
            Checker::Udp(u) => &mut u.common,
            Checker::File(f) => &mut f.common,
            Checker::Bfd(b) => &mut b.common,
        }
    }
}

/// Where a checker's connections come from: the local end.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize)]
pub struct CheckerSource {
    /// `bindto`.
    pub bindto: Option<IpAddr>,
    /// `bind_port`.
    pub bind_port: Option<u16>,
    /// `bind_if`.
    pub bind_if: Option<Box<str>>,
    /// `fwmark` (SO_MARK).
    pub fwmark: Option<u32>,
}

impl Unset for CheckerSource {
    fn unset() -> &'static CheckerSource {
        static UNSET: CheckerSource = CheckerSource {
            bindto: None,
            bind_port: None,
            bind_if: None,
            fwmark: None,
        };
        &UNSET
    }
}

/// Options shared by checkers; `None` = inherited, resolved by validation.
#[derive(Debug, Clone, Default, Serialize)]
pub struct CheckerCommon {
    /// Line of the checker keyword (a u32: tens of thousands of checkers).
    pub line: u32,
    /// `connect_ip` (default: the real server's address).
    pub connect_ip: Option<IpAddr>,
    /// A `connect_ip` that did not parse was read: keepalived's parse
    /// then holds no destination family, so `bindto` is not compared.
    #[serde(skip)]
    pub connect_ip_invalid: bool,
    /// `connect_port` (default: the port on the real_server line, 0 if none).
    pub connect_port: Option<u16>,
    /// `bindto`, `bind_port`, `bind_if`, `fwmark` (seldom given).
    #[serde(flatten)]
    pub source: Rare<CheckerSource>,
    /// `connect_timeout` µs.
    pub connect_timeout: Micros,
    /// `retry`.
    pub retry: Option<u32>,
    /// `delay_before_retry` µs.
    pub delay_before_retry: Micros,
    /// `delay_loop` µs.
    pub delay_loop: Micros,
    /// `warmup` µs.
    pub warmup: Micros,
    /// `alpha`.
    pub alpha: Option<bool>,
    /// `log_all_failures`.
    pub log_all_failures: Option<bool>,
    /// `half_open` (extension, TCP_CHECK): SYN out, SYN-ACK up, RST down;
    /// unset = the virtual server's.
    pub half_open: Option<bool>,
    /// The threshold and interval extensions written in this checker
    /// (boxed: unset in a keepalived.conf, and a checker is kept small);
    /// validation fills in the virtual server's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub thresholds: Option<Box<Thresholds>>,
}

/// Extensions of keepalived-rs (grammar/keywords.md): hysteresis in both
/// directions and state-dependent intervals, as cloud load balancers and
/// HAProxy (`rise`, `fall`, `fastinter`, `downinter`) have them. Written in
/// a checker or a virtual server (for its checkers); unset = keepalived's
/// behaviour.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Thresholds {
    /// `healthy_threshold N`: consecutive successes before a checker that
    /// is down comes back up (keepalived: 1).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub healthy_threshold: Option<u32>,
    /// `unhealthy_threshold N`: consecutive failures before an up checker
    /// goes down; `retry N-1` said the other way.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unhealthy_threshold: Option<u32>,
    /// `fast_interval` µs: between the runs of a checker in transition
    /// (failures counting towards the unhealthy threshold, successes
    /// towards the healthy one); replaces `delay_before_retry`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fast_interval: Option<u64>,
    /// `down_interval` µs: between the runs of a checker that is down
    /// (instead of `delay_loop`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub down_interval: Option<u64>,
}

impl Thresholds {
    /// These settings, with `base`'s where these have none.
    pub fn or(&self, base: &Thresholds) -> Thresholds {
        Thresholds {
            healthy_threshold: self.healthy_threshold.or(base.healthy_threshold),
            unhealthy_threshold: self.unhealthy_threshold.or(base.unhealthy_threshold),
            fast_interval: self.fast_interval.or(base.fast_interval),
            down_interval: self.down_interval.or(base.down_interval),
        }
    }

    /// Nothing written.
    pub fn is_empty(&self) -> bool {
        *self == Thresholds::default()
    }
}

/// A `url { }` block of HTTP_GET / SSL_GET: where it is, and what it asks
/// and expects, shared with every url written alike (tens of thousands of
/// real servers mostly check one url the same way: one copy, a pointer
/// each). Reads its settings through `Deref`; a write copies them first if
/// shared (the parser writes while only it holds them).
#[derive(Debug, Clone, Default, Serialize)]
pub struct Url {
    /// What it asks and expects.
    #[serde(flatten)]
    body: Arc<UrlBody>,
    /// Line of the `url` keyword.
    pub line: usize,
}

impl Url {
    /// A url at `line` with nothing set.
    pub fn at(line: usize) -> Url {
        Url {
            body: Arc::default(),
            line,
        }
    }

    /// Its settings, shared with `alike`'s other urls written the same:
    /// the first seen of each is kept there.
    pub fn share(&mut self, alike: &mut std::collections::HashSet<Arc<UrlBody>>) {
        match alike.get(&self.body) {
            Some(b) => self.body = b.clone(),
            None => {
                alike.insert(self.body.clone());
            }
        }
    }
}

impl std::ops::Deref for Url {
    type Target = UrlBody;
    fn deref(&self) -> &UrlBody {
        &self.body
    }
}

impl std::ops::DerefMut for Url {
    fn deref_mut(&mut self) -> &mut UrlBody {
        Arc::make_mut(&mut self.body)
    }
}

/// What a url asks and expects ([`Url`]).
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize)]
pub struct UrlBody {
    /// `path` (boxed strings here: no spare capacity).
    pub path: Option<Box<str>>,
    /// `digest` (lower-case hex MD5).
    pub digest: Option<Box<str>>,
    /// `status_code` ranges, inclusive; empty = 200-299.
    pub status_code: Vec<(u16, u16)>,
    /// `virtualhost`.
    pub virtualhost: Option<Box<str>>,
    /// `regex`, `regex_no_match`, `regex_options`, `regex_min_offset`,
    /// `regex_max_offset`, `regex_stack`: seldom given, boxed as one.
    #[serde(flatten)]
    pub re: Rare<UrlRegexConf>,
    /// The extensions' expectations (boxed: unset in a keepalived.conf).
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub ext: Option<Box<UrlExt>>,
}

/// A url's regex settings ([`Url::re`]).
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize)]
pub struct UrlRegexConf {
    /// `regex`.
    pub regex: Option<String>,
    /// `regex_no_match`.
    pub regex_no_match: bool,
    /// `regex_options`.
    pub regex_options: Vec<String>,
    /// `regex_min_offset`.
    pub regex_min_offset: Option<u32>,
    /// `regex_max_offset`.
    pub regex_max_offset: Option<u32>,
    /// `regex_stack START MAX`.
    pub regex_stack: Option<(u32, u32)>,
}

impl Unset for UrlRegexConf {
    fn unset() -> &'static UrlRegexConf {
        static UNSET: UrlRegexConf = UrlRegexConf {
            regex: None,
            regex_no_match: false,
            regex_options: Vec::new(),
            regex_min_offset: None,
            regex_max_offset: None,
            regex_stack: None,
        };
        &UNSET
    }
}

/// A url's expectations beyond keepalived's (extensions).
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize)]
pub struct UrlExt {
    /// `expect_body TEXT`: the body must hold TEXT.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expect_body: Option<String>,
    /// `expect_header NAME [TEXT]`: the response must have the header
    /// (name without regard to case), its value holding TEXT.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expect_header: Option<(String, Option<String>)>,
}

impl UrlBody {
    /// Its extensions, none if unset.
    pub fn ext(&self) -> &UrlExt {
        static NONE: UrlExt = UrlExt {
            expect_body: None,
            expect_header: None,
        };
        self.ext.as_deref().unwrap_or(&NONE)
    }
}

/// `http_protocol`: a byte, shown as keepalived writes it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize)]
pub enum HttpProtocol {
    /// `1.0`: HTTP/1.0, the connection closed by the server.
    #[default]
    #[serde(rename = "1.0")]
    V10,
    /// `1.0C`: HTTP/1.0 with `Connection: close`.
    #[serde(rename = "1.0C")]
    V10C,
    /// `1.1`: HTTP/1.1 with `Connection: close`.
    #[serde(rename = "1.1")]
    V11,
}

impl HttpProtocol {
    /// As written in keepalived.conf.
    pub fn as_str(self) -> &'static str {
        match self {
            HttpProtocol::V10 => "1.0",
            HttpProtocol::V10C => "1.0C",
            HttpProtocol::V11 => "1.1",
        }
    }
}

/// HTTP_GET / SSL_GET.
#[derive(Debug, Clone, Default, Serialize)]
pub struct HttpCheck {
    /// Shared options.
    #[serde(flatten)]
    pub common: CheckerCommon,
    /// `http_protocol`.
    pub http_protocol: HttpProtocol,
    /// `virtualhost`.
    pub virtualhost: Option<Box<str>>,
    /// `fast_recovery`.
    pub fast_recovery: bool,
    /// `enable_sni`.
    pub enable_sni: bool,
    /// The urls (inline: a checker nearly always has one).
    pub urls: smallvec::SmallVec<[Url; 1]>,
    /// The extensions' settings (boxed: unset in a keepalived.conf).
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub ext: Option<Box<HttpExt>>,
}

/// HTTP_GET/SSL_GET settings beyond keepalived's (extensions).
#[derive(Debug, Clone, Default, Serialize)]
pub struct HttpExt {
    /// `method GET|HEAD` (GET unless written).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub method: Option<String>,
    /// `user_agent TEXT` (keepalived's `KeepAliveClient` unless written).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub user_agent: Option<String>,
    /// `ca_file PATH` (SSL_GET): the server's certificate chain is
    /// verified against these CAs (keepalived accepts any certificate).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ca_file: Option<String>,
    /// `verify_hostname [NAME]` (SSL_GET, with `ca_file`): the certificate
    /// must also be for NAME (`Some(None)`: the virtualhost, else the
    /// address connected to).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub verify_hostname: Option<Option<String>>,
}

impl HttpCheck {
    /// Its extensions, none if unset.
    pub fn ext(&self) -> &HttpExt {
        static NONE: HttpExt = HttpExt {
            method: None,
            user_agent: None,
            ca_file: None,
            verify_hostname: None,
        };
        self.ext.as_deref().unwrap_or(&NONE)
    }
}

/// MISC_CHECK.
#[derive(Debug, Clone, Default, Serialize)]
pub struct MiscCheck {
    /// Shared options.
    #[serde(flatten)]
    pub common: CheckerCommon,
    /// `misc_path` argv.
    pub misc_path: Option<Vec<String>>,
    /// `misc_timeout` µs (0 = the VS delay_loop).
    pub misc_timeout: Option<u64>,
    /// `misc_dynamic`.
    pub misc_dynamic: bool,
    /// `user USER [GROUP]`.
    pub user: Option<(String, Option<String>)>,
    /// Dropped while being read (its user could not be set); the rest of
    /// its block is read into it and it is discarded at its end.
    #[serde(skip)]
    pub removed: bool,
}

/// SMTP_CHECK.
#[derive(Debug, Clone, Default, Serialize)]
pub struct SmtpCheck {
    /// Shared options.
    #[serde(flatten)]
    pub common: CheckerCommon,
    /// `helo_name` (default `smtpchecker.keepalived.org`).
    pub helo_name: Option<String>,
}

/// DNS_CHECK.
#[derive(Debug, Clone, Default, Serialize)]
pub struct DnsCheck {
    /// Shared options.
    #[serde(flatten)]
    pub common: CheckerCommon,
    /// `type` (default SOA).
    pub r#type: String,
    /// `name` (default root).
    pub name: String,
}

/// UDP_CHECK.
#[derive(Debug, Clone, Default, Serialize)]
pub struct UdpCheck {
    /// Shared options.
    #[serde(flatten)]
    pub common: CheckerCommon,
    /// `payload` bytes.
    pub payload: Option<Vec<u8>>,
    /// `require_reply`.
    pub require_reply: bool,
    /// Reply pattern bytes with their nibble masks.
    pub reply_pattern: Option<Vec<(u8, u8)>>,
    /// `min_reply_length`.
    pub min_reply_length: u16,
    /// `max_reply_length` (default 255).
    pub max_reply_length: u16,
}

/// FILE_CHECK.
#[derive(Debug, Clone, Default, Serialize)]
pub struct FileCheck {
    /// Shared options (only `line` is meaningful).
    #[serde(flatten)]
    pub common: CheckerCommon,
    /// `track_file NAME`.
    pub track_file: Option<String>,
    /// `weight N [reverse|noreverse]`.
    pub weight: Option<i32>,
    /// `reverse`.
    pub reverse: Option<bool>,
}

/// BFD_CHECK.
#[derive(Debug, Clone, Default, Serialize)]
pub struct BfdCheck {
    /// Shared options (`alpha`).
    #[serde(flatten)]
    pub common: CheckerCommon,
    /// `name`.
    pub name: Option<String>,
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
