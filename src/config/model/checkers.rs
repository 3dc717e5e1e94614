//! The checker records of the configuration model ([`super`]): a real
//! server's checkers as written, their shared options and the HTTP urls.
//! Kept per real server, tens of thousands at a time: their sizes are
//! watched (`check::plan`'s size test).

use super::*;
use std::sync::Arc;

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
