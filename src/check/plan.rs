//! The plan of a configuration's checks: every checker resolved into what
//! it does ([`ProbeKind`]) and how it is scheduled ([`Planned`]), identical
//! checks of one real server shared by the virtual servers that have it,
//! each started in the state the one startup rule gives
//! ([`crate::health::start_states`]).
//!
//! Pure but for two reads: the SSL block's files, and FILE_CHECK's files
//! (their start state). Between the config model and the [`super::engine`]
//! that runs the plan; [`crate::health::Tracker`] sees it as a [`Roster`].

use super::conn::ConnOpts;
use super::dns::DnsProbe;
use super::http::{HttpProbe, HttpSpec};
use super::tls::Tls;
use super::udp::UdpProbe;
use crate::config::model::{Checker, Config, RealServer, VirtualServer};
pub use crate::config::validate::RsName;
use crate::health::retry::RetryFamily;
use crate::health::{checker_keys, start_states, Roster, RsKey, Start, Subscriber};
use crate::services::scripts::{RunAs, ScriptSpec};
use crate::services::track_file::{self as file, FileState};
use std::collections::hash_map::Entry;
use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// What a check does, resolved. Equal kinds probe alike: a reload matches
/// checkers by it, and identical checks are shared by it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum ProbeKind {
    /// TCP_CHECK.
    Tcp(ConnOpts),
    /// HTTP_GET / SSL_GET (inline: its shared part is already behind an
    /// `Arc`, and a box of its own cost an HTTP check 112 bytes).
    Http(HttpProbe),
    /// SMTP_CHECK with its HELO name (boxed: a TCP_CHECK is the common
    /// check and sets the size of each).
    Smtp(Box<(ConnOpts, String)>),
    /// UDP_CHECK.
    Udp(Box<UdpProbe>),
    /// DNS_CHECK.
    Dns(Box<DnsProbe>),
    /// PING_CHECK.
    Ping(ConnOpts),
    /// MISC_CHECK.
    Misc {
        /// The script (boxed: a TCP_CHECK is the common check and sets the
        /// size of each).
        script: Box<ScriptSpec>,
        /// `misc_timeout` (else the VS delay_loop).
        timeout: Duration,
        /// `misc_dynamic`.
        dynamic: bool,
        /// The (first) virtual server's name, for its lines: not part of
        /// what the check does (a check shared by virtual servers is one).
        vs_name: Label,
    },
    /// FILE_CHECK.
    File {
        /// The tracked file.
        path: PathBuf,
        /// Its weight (checker's, else the track_file's).
        weight: i64,
        /// `reverse`.
        reverse: bool,
    },
    /// BFD_CHECK: the state of a `bfd_instance` session, as the BFD
    /// subsystem tells it.
    Bfd {
        /// The session.
        name: String,
    },
}

impl ProbeKind {
    /// keepalived's name for the checker type.
    pub fn type_name(&self) -> &'static str {
        match self {
            ProbeKind::Tcp(_) => "TCP_CHECK",
            ProbeKind::Http(h) if h.spec.tls.is_some() => "SSL_GET",
            ProbeKind::Http(_) => "HTTP_GET",
            ProbeKind::Smtp(..) => "SMTP_CHECK",
            ProbeKind::Udp(_) => "UDP_CHECK",
            ProbeKind::Dns(_) => "DNS_CHECK",
            ProbeKind::Ping(_) => "PING_CHECK",
            ProbeKind::Misc { .. } => "MISC_CHECK",
            ProbeKind::File { .. } => "FILE_CHECK",
            ProbeKind::Bfd { .. } => "BFD_CHECK",
        }
    }

    /// Its retry family (none for HTTP, which cycles urls, FILE_CHECK and
    /// BFD_CHECK, which follow what they watch).
    pub fn family(&self) -> Option<RetryFamily> {
        match self {
            ProbeKind::Tcp(_) | ProbeKind::Udp(_) | ProbeKind::Ping(_) => Some(RetryFamily::Simple),
            ProbeKind::Dns(_) | ProbeKind::Misc { .. } => Some(RetryFamily::Counted),
            ProbeKind::Smtp(..) => Some(RetryFamily::Smtp),
            ProbeKind::Http(_) | ProbeKind::File { .. } | ProbeKind::Bfd { .. } => None,
        }
    }
}

/// A name a check carries for its log lines only: two checks that differ
/// in it alone are the same check (equal, hashed alike).
#[derive(Debug, Clone)]
pub struct Label(pub Arc<str>);

impl PartialEq for Label {
    fn eq(&self, _: &Label) -> bool {
        true
    }
}

impl Eq for Label {}

impl std::hash::Hash for Label {
    fn hash<H: std::hash::Hasher>(&self, _: &mut H) {}
}

impl std::fmt::Display for Label {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// How a check is scheduled: what its checker's timers and retry say.
/// Most checks of a configuration share one (the virtual server's), so a
/// plan keeps one copy of each and the checks point to it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Timing {
    /// `delay_loop`.
    pub delay_loop: Duration,
    /// `delay_before_retry`.
    pub delay_before_retry: Duration,
    /// `warmup`: the first run is at 1 s plus a random part of it.
    pub warmup: Duration,
    /// `retry`.
    pub retry: u32,
    /// `alpha`.
    pub alpha: bool,
    /// `log_all_failures`.
    pub log_all_failures: bool,
    /// HTTP `fast_recovery`.
    pub fast_recovery: bool,
    /// How long one run may take at most (`connect_timeout`, MISC_CHECK's
    /// `misc_timeout`): the status's windows count with it.
    pub timeout: Duration,
    /// `healthy_threshold` (extension; 1 = keepalived's; at most 1000).
    pub rise: u16,
    /// `fast_interval` (extension): between runs in transition.
    pub fast_interval: Option<Duration>,
    /// `down_interval` (extension): between runs while down.
    pub down_interval: Option<Duration>,
}

impl Timing {
    /// How long, at the most, `remaining` consecutive results take that
    /// are `interval` apart: each may last the timeout (the cloud load
    /// balancers' window: timeout × threshold + interval × (threshold − 1)).
    pub fn window(&self, remaining: u32, interval: Duration) -> Duration {
        self.timeout * remaining + interval * remaining.saturating_sub(1)
    }

    /// Between the failures that count towards the unhealthy threshold.
    pub fn failing_interval(&self) -> Duration {
        self.fast_interval.unwrap_or(self.delay_before_retry)
    }

    /// Between the successes that count towards the healthy threshold.
    pub fn recovering_interval(&self) -> Duration {
        self.fast_interval.unwrap_or(self.delay_loop)
    }

    /// Between the runs of a checker that is down.
    pub fn down_delay(&self) -> Duration {
        self.down_interval.unwrap_or(self.delay_loop)
    }
}

/// Who gets a check's results: mostly one checker, stored in place.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Subscribers {
    /// The one checker (a check not shared).
    One(Subscriber),
    /// Several virtual servers' checkers of one real server.
    Many(Vec<Subscriber>),
}

impl Subscribers {
    /// Every subscriber, in the order they were added.
    pub fn as_slice(&self) -> &[Subscriber] {
        match self {
            Subscribers::One(s) => std::slice::from_ref(s),
            Subscribers::Many(v) => v,
        }
    }

    fn push(&mut self, sub: Subscriber) {
        match self {
            Subscribers::One(s) => *self = Subscribers::Many(vec![*s, sub]),
            Subscribers::Many(v) => v.push(sub),
        }
    }
}

impl std::ops::Deref for Subscribers {
    type Target = [Subscriber];
    fn deref(&self) -> &[Subscriber] {
        self.as_slice()
    }
}

impl<'a> IntoIterator for &'a Subscribers {
    type Item = &'a Subscriber;
    type IntoIter = std::slice::Iter<'a, Subscriber>;
    fn into_iter(self) -> Self::IntoIter {
        self.as_slice().iter()
    }
}

/// One distinct check and who listens to it.
#[derive(Debug, Clone)]
pub struct Planned {
    /// What it does.
    pub kind: ProbeKind,
    /// How it is scheduled (shared with the checks timed alike).
    pub timing: Arc<Timing>,
    /// keepalived's name for the checked service, `[ip]:proto:port`.
    pub name: RsName,
    /// Who gets the results.
    pub subscribers: Subscribers,
}

/// The checks of a configuration.
#[derive(Debug, Clone, Default)]
pub struct Plan {
    /// Distinct checks, shared with the engine that runs them (one copy,
    /// at exact size).
    pub checks: Arc<Vec<Planned>>,
    /// Per virtual server: the index in `rs_starts` of its first real
    /// server.
    vs_base: Vec<usize>,
    /// Per real server of every virtual server, in config order: where its
    /// checks start in `rs_checks` (one more at the end).
    rs_starts: Vec<u32>,
    /// Every real server's checks, one per checker, in order.
    rs_checks: Vec<u32>,
    /// The state each check starts in: keepalived's startup rules, or what
    /// a reload carried over from the same checker (§6.8). Read by the
    /// tracker's and the engine's starts, then released
    /// ([`Plan::release_starts`]): the engine's board holds each check's
    /// state from then on (32 bytes a check, tens of thousands).
    starts: Vec<Start>,
}

impl Plan {
    /// A plan of these checks alone, with no real server subscribed to
    /// them (probes run outside a configuration).
    pub fn of_checks(checks: Vec<Planned>) -> Plan {
        Plan {
            starts: checks
                .iter()
                .map(|c| Start::initial(c.timing.retry, c.timing.alpha))
                .collect(),
            checks: Arc::new(checks),
            ..Plan::default()
        }
    }

    /// The state check `check` starts in.
    ///
    /// # Panics
    /// Once [`Plan::release_starts`] has run: the engine's board holds the
    /// checks' states then.
    pub fn start(&self, check: usize) -> Start {
        self.starts[check]
    }

    /// Lets the start states go, once the tracker and the engine have
    /// started from them.
    pub fn release_starts(&mut self) {
        self.starts = Vec::new();
    }

    /// The checks of real server `rs` of virtual server `vs`, one per
    /// checker, in order (none for a server the plan does not have).
    pub fn checks_of(&self, vs: usize, rs: usize) -> &[u32] {
        let Some(&base) = self.vs_base.get(vs) else {
            return &[];
        };
        let end = self
            .vs_base
            .get(vs + 1)
            .copied()
            .unwrap_or(self.rs_starts.len().saturating_sub(1));
        let i = base + rs;
        if i >= end {
            return &[];
        }
        &self.rs_checks[self.rs_starts[i] as usize..self.rs_starts[i + 1] as usize]
    }

    /// How many checkers the real servers have in all (shared checks
    /// counted once per checker).
    pub fn checker_count(&self) -> usize {
        self.rs_checks.len()
    }
}

/// A check's or a checker's index as the plan keeps it (a configuration has
/// far fewer than 2^32).
fn index(i: usize) -> u32 {
    u32::try_from(i).expect("fewer than 2^32 checks")
}

/// The carry of a checker's state across a reload, keyed by its probe.
pub type Carry = crate::health::Carry<ProbeKind>;

impl Roster for Plan {
    type Probe = ProbeKind;

    fn len(&self) -> usize {
        self.checks.len()
    }

    fn subscribers(&self, check: usize) -> &[Subscriber] {
        self.checks[check].subscribers.as_slice()
    }

    fn start(&self, check: usize) -> Start {
        Plan::start(self, check)
    }

    fn probe(&self, check: usize) -> ProbeKind {
        self.checks[check].kind.clone()
    }

    fn checks_of(&self, vs: usize, rs: usize) -> &[u32] {
        Plan::checks_of(self, vs, rs)
    }

    fn may_check_vs(&self, vs: usize) -> bool {
        let Some(&base) = self.vs_base.get(vs) else {
            return false;
        };
        let end = self
            .vs_base
            .get(vs + 1)
            .copied()
            .unwrap_or(self.rs_starts.len().saturating_sub(1));
        // The checks of its real servers are one run of `rs_checks`.
        match (self.rs_starts.get(base), self.rs_starts.get(end)) {
            (Some(a), Some(b)) => a < b,
            _ => false,
        }
    }
}

/// What makes two planned checks one: everything they do, how they are
/// scheduled (`log_all_failures` aside: it does not keep checks apart) and
/// the state they start in. The plan's map of checks seen holds this
/// hash and the check's index, not a copy of each (at 20,000 checks a map
/// of copies was 10 MB at the start's peak, never given back).
fn share_hash(kind: &ProbeKind, start: &Start, timing: &Timing, name: &RsName) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::hash::DefaultHasher::new();
    kind.hash(&mut h);
    start.hash(&mut h);
    shared_timing(timing).hash(&mut h);
    name.hash(&mut h);
    h.finish()
}

/// The part of a check's timing that keeps checks apart.
fn shared_timing(t: &Timing) -> Timing {
    Timing {
        log_all_failures: false,
        ..t.clone()
    }
}

/// Whether a check planned already is the same as this one ([`share_hash`]'s
/// fields, compared: equal hashes only point to it).
fn same_check(
    (c, c_start): (&Planned, &Start),
    kind: &ProbeKind,
    start: &Start,
    timing: &Timing,
    name: &RsName,
) -> bool {
    c.kind == *kind
        && c_start == start
        && shared_timing(&c.timing) == shared_timing(timing)
        && c.name == *name
}

/// How [`plan`] builds checks.
#[derive(Debug, Clone)]
pub struct PlanOptions {
    /// Share identical checks between virtual servers (default); off runs
    /// one probe per configured checker, as keepalived does.
    pub share: bool,
    /// Values tracked files are taken to hold instead of reading them: an
    /// offline `--plan` predicts what `init_file` would write at a start
    /// without writing it.
    pub preset_files: HashMap<PathBuf, i64>,
}

impl Default for PlanOptions {
    fn default() -> Self {
        PlanOptions {
            share: true,
            preset_files: HashMap::new(),
        }
    }
}

/// keepalived's `FMT_RS()` for a real server of a virtual server.
pub fn format_rs(rs: &RealServer, vs: &VirtualServer) -> String {
    RsName::of(rs, vs).to_string()
}

/// Resolves the identity scripts run as: the script's own user, else
/// `script_user`, else `keepalived_script` if it exists, else ourselves.
pub fn script_identity(
    cfg: &Config,
    user: Option<&(String, Option<String>)>,
) -> Result<Option<RunAs>, String> {
    crate::config::script_security::identity(cfg, user)
}

/// The TLS contexts of a configuration's SSL_GETs: keepalived's one (made
/// at the first SSL_GET), and one per `ca_file` verification (extension).
#[derive(Default)]
struct TlsContexts {
    plain: Option<Option<Tls>>,
    verifying: HashMap<(String, bool, bool), Result<Tls, String>>,
}

impl TlsContexts {
    fn of(&mut self, cfg: &Config, h: &crate::config::model::HttpCheck) -> Result<Tls, String> {
        let x = h.ext();
        if let Some(ca) = &x.ca_file {
            let key = (ca.clone(), x.verify_hostname.is_some(), h.enable_sni);
            return self
                .verifying
                .entry(key)
                .or_insert_with(|| {
                    Tls::verifying(
                        cfg.ssl.as_ref(),
                        ca,
                        x.verify_hostname.is_some(),
                        h.enable_sni,
                    )
                    .map_err(|e| e.to_string())
                })
                .clone();
        }
        let t = self
            .plain
            .get_or_insert_with(|| match Tls::new(cfg.ssl.as_ref()) {
                Ok(t) => Some(t),
                Err(e) => {
                    log::error!("{e}");
                    None
                }
            });
        t.clone()
            .ok_or_else(|| "SSL_GET: no usable SSL context".into())
    }
}

// HttpSpec's Hash and Eq read a regex's pattern, not its match cache (the
// interior mutability clippy sees).
#[allow(clippy::mutable_key_type)]
fn probe_kind(
    cfg: &Config,
    vs: &VirtualServer,
    rs: &RealServer,
    c: &Checker,
    tls: &mut TlsContexts,
    http_specs: &mut HashSet<Arc<HttpSpec>>,
) -> Result<Option<ProbeKind>, String> {
    let conn = || ConnOpts::from_common(c.common());
    Ok(Some(match c {
        Checker::Tcp(_) => {
            let mut conn = conn();
            conn.half_open = c.half_open(vs);
            ProbeKind::Tcp(conn)
        }
        Checker::Ping(_) => ProbeKind::Ping(conn()),
        Checker::Http(h) | Checker::Ssl(h) => {
            let t = if matches!(c, Checker::Ssl(_)) {
                Some(tls.of(cfg, h)?)
            } else {
                None
            };
            if h.urls.is_empty() {
                return Ok(None);
            }
            let spec = HttpSpec::new(
                h,
                rs.seldom.virtualhost.as_deref(),
                vs.virtualhost.as_deref(),
                t,
            )
            .map_err(|e| e.to_string())?;
            // One copy of the urls and requests per distinct settings.
            let spec = match http_specs.get(&spec) {
                Some(s) => s.clone(),
                None => {
                    let s = Arc::new(spec);
                    http_specs.insert(s.clone());
                    s
                }
            };
            ProbeKind::Http(HttpProbe { conn: conn(), spec })
        }
        Checker::Smtp(s) => ProbeKind::Smtp(Box::new((conn(), s.helo().to_string()))),
        Checker::Udp(u) => ProbeKind::Udp(Box::new(UdpProbe::new(u, conn()))),
        Checker::Dns(d) => ProbeKind::Dns(Box::new(DnsProbe::new(d, conn()))),
        Checker::Misc(m) => {
            let Some(argv) = m.misc_path.clone() else {
                return Ok(None);
            };
            let run_as = script_identity(cfg, m.user.as_ref())?;
            // check_misc_script_security(): a script that may not run is
            // removed, as keepalived removes it.
            let v = crate::config::script_security::check(
                &argv[0],
                run_as.unwrap_or_else(RunAs::ours),
                cfg.global_defs.enable_script_security,
            );
            for l in &v.lines {
                log::info!("{l}");
            }
            if !v.runnable {
                return Ok(None);
            }
            let mut argv = argv;
            argv[0] = v.path;
            let timeout = match m.misc_timeout {
                Some(t) if t > 0 => Duration::from_micros(t),
                _ => vs.delay(),
            };
            ProbeKind::Misc {
                script: Box::new(ScriptSpec { argv, run_as }),
                timeout,
                dynamic: m.misc_dynamic,
                vs_name: Label(crate::config::validate::format_vs(vs).into()),
            }
        }
        Checker::File(f) => {
            let Some(tf) = f
                .track_file
                .as_ref()
                .and_then(|n| cfg.track_files.iter().find(|t| &t.name == n))
            else {
                return Ok(None);
            };
            let (Some(path), Some((weight, reverse))) = (tf.file.clone(), f.weight_reverse())
            else {
                return Ok(None);
            };
            ProbeKind::File {
                path: PathBuf::from(path),
                weight: i64::from(weight),
                reverse,
            }
        }
        Checker::Bfd(b) => {
            // A session whose events go to the checker (the config's
            // checks have refused any other name).
            let Some(name) = b.name.as_ref().filter(|n| {
                cfg.bfd_instances
                    .iter()
                    .any(|i| i.listed && &i.name == *n && (i.checker || !i.vrrp))
            }) else {
                return Ok(None);
            };
            ProbeKind::Bfd { name: name.clone() }
        }
    }))
}

/// Resolves every checker of `cfg`. Checkers that cannot run are reported
/// (with the virtual and real server) and left out, as keepalived drops
/// them; their real servers then count as having no such checker.
pub fn plan(cfg: &Config, opts: &PlanOptions) -> (Plan, Vec<String>) {
    plan_carrying(cfg, opts, &Carry::new())
}

/// [`plan`], with the checker states of a running configuration carried
/// over to the same checkers of the new one.
#[allow(clippy::mutable_key_type)] // as probe_kind's
pub fn plan_carrying(cfg: &Config, opts: &PlanOptions, carry: &Carry) -> (Plan, Vec<String>) {
    let mut p = Plan::default();
    // At most one check per configured checker: no slack to copy from.
    let most = cfg
        .virtual_servers
        .iter()
        .flat_map(|vs| &vs.real_servers)
        .map(|rs| rs.checkers.len())
        .sum();
    let mut checks: Vec<Planned> = Vec::with_capacity(most);
    let mut errors = Vec::new();
    // ProbeKind's Hash and Eq read only what never changes: a regex's
    // pattern (not its match cache), not the TLS context.
    let mut seen: HashMap<u64, usize> = HashMap::with_capacity(if opts.share { most } else { 0 });
    let mut tls = TlsContexts::default();
    let mut http_specs = HashSet::new();
    let mut timings: HashMap<Timing, Arc<Timing>> = HashMap::new();
    p.vs_base.reserve_exact(cfg.virtual_servers.len());
    p.rs_starts.reserve_exact(
        cfg.virtual_servers
            .iter()
            .map(|vs| vs.real_servers.len())
            .sum::<usize>()
            + 1,
    );
    p.rs_checks.reserve_exact(most);
    for (vi, vs) in cfg.virtual_servers.iter().enumerate() {
        let vs_name = carry.vs_name(crate::config::validate::format_vs(vs));
        p.vs_base.push(p.rs_starts.len());
        for (ri, rs) in vs.real_servers.iter().enumerate() {
            let mut kinds = Vec::new();
            for c in &rs.checkers {
                match probe_kind(cfg, vs, rs, c, &mut tls, &mut http_specs) {
                    Ok(Some(k)) => kinds.push((c, k)),
                    Ok(None) => {}
                    Err(e) => errors.push(format!(
                        "{}: checker of real server {} in VS {vs_name}: {e}",
                        c.common().line,
                        format_rs(rs, vs),
                    )),
                }
            }
            p.rs_starts.push(index(p.rs_checks.len()));
            if kinds.is_empty() {
                continue;
            }
            let rk = RsKey::of(&vs_name, rs);
            let keys = if carry.reload {
                checker_keys(&rk, kinds.iter().map(|(_, k)| k.clone()))
            } else {
                Vec::new()
            };
            let conf: Vec<(u32, bool)> = kinds
                .iter()
                .map(|(c, _)| {
                    let t = c.common().resolved();
                    (t.retry, t.alpha)
                })
                .collect();
            let starts = start_states(carry, &rk, &keys, &conf);
            for (n, ((c, kind), mut start)) in kinds.into_iter().zip(starts).enumerate() {
                // FILE_CHECK starts from the file as it reads now, at a
                // start as at a reload.
                if let Some(f) = file_state_with(&kind, &opts.preset_files) {
                    start.state.is_up = f != FileState::Fault;
                    start.cur_weight = match f {
                        FileState::Weight(w) => w,
                        FileState::Fault => 0,
                    };
                }
                let t = c.common().resolved();
                let timing = Timing {
                    delay_loop: t.delay_loop,
                    delay_before_retry: t.delay_before_retry,
                    warmup: t.warmup,
                    retry: t.retry,
                    alpha: t.alpha,
                    log_all_failures: t.log_all_failures,
                    fast_recovery: matches!(c, Checker::Http(h) | Checker::Ssl(h) if h.fast_recovery),
                    timeout: match &kind {
                        ProbeKind::Misc { timeout, .. } => *timeout,
                        _ => t.connect_timeout,
                    },
                    // At most 1000 (the keyword's range).
                    rise: t.healthy_threshold.min(u32::from(u16::MAX)) as u16,
                    fast_interval: t.fast_interval,
                    down_interval: t.down_interval,
                };
                let timing = match timings.get(&timing) {
                    Some(t) => t.clone(),
                    None => {
                        let t = Arc::new(timing.clone());
                        timings.insert(timing, t.clone());
                        t
                    }
                };
                let sub = Subscriber {
                    vs: vi,
                    rs: ri,
                    checker: n,
                };
                // Two checks are the same when everything they do, how
                // they are scheduled and the state they start in is; only
                // then may they share a probe.
                let name = RsName::of(rs, vs);
                let shared = if opts.share {
                    match seen.entry(share_hash(&kind, &start, &timing, &name)) {
                        // Two checks of one hash that differ (a 64-bit
                        // collision) are left to run apart.
                        Entry::Occupied(e) => Some(*e.get()).filter(|&i| {
                            same_check((&checks[i], &p.starts[i]), &kind, &start, &timing, &name)
                        }),
                        Entry::Vacant(e) => {
                            e.insert(checks.len());
                            None
                        }
                    }
                } else {
                    None
                };
                match shared {
                    Some(i) => {
                        checks[i].subscribers.push(sub);
                        p.rs_checks.push(index(i));
                    }
                    None => {
                        p.rs_checks.push(index(checks.len()));
                        checks.push(Planned {
                            kind,
                            timing,
                            name,
                            subscribers: Subscribers::One(sub),
                        });
                        p.starts.push(start);
                    }
                }
            }
        }
    }
    p.rs_starts.push(index(p.rs_checks.len()));
    checks.shrink_to_fit();
    p.starts.shrink_to_fit();
    p.checks = Arc::new(checks);
    (p, errors)
}

/// FILE_CHECK's state for a planned file check, read now.
pub fn file_state(c: &Planned) -> Option<FileState> {
    file_state_with(&c.kind, &HashMap::new())
}

fn file_state_with(kind: &ProbeKind, preset: &HashMap<PathBuf, i64>) -> Option<FileState> {
    match kind {
        ProbeKind::File {
            path,
            weight,
            reverse,
        } => preset
            .get(path)
            .copied()
            .or_else(|| file::read_value(path))
            .map(|v| file::status(v, *weight, *reverse)),
        _ => None,
    }
}

#[cfg(test)]
mod size_tests {
    use super::*;

    /// A planned check is kept once per configured checker, a real server
    /// and its checkers once each (tens of thousands): what they hold
    /// inline is what each costs.
    /// Real servers checked with the same HTTP_GET settings share one copy
    /// of its urls and requests; each still asks its own address as the
    /// Host, and a `virtualhost` sets a spec of its own.
    #[test]
    fn http_checks_alike_share_one_spec() {
        let url = "HTTP_GET {\n url {\n path /up\n }\n }";
        let body = format!(
            "virtual_server 192.0.2.1 80 {{\n protocol TCP\n lb_algo rr\n lb_kind NAT\n \
             real_server 192.0.2.10 8080 {{\n {url}\n }}\n \
             real_server 192.0.2.11 8080 {{\n {url}\n }}\n \
             real_server 192.0.2.12 8080 {{\n virtualhost www.example.org\n {url}\n }}\n}}\n"
        );
        let l = crate::config::load_str(&body);
        assert!(
            l.diagnostics.items().is_empty(),
            "{:?}",
            l.diagnostics.items()
        );
        let (p, errors) = plan(&l.config, &PlanOptions::default());
        assert!(errors.is_empty(), "{errors:?}");
        let http: Vec<&HttpProbe> = p
            .checks
            .iter()
            .filter_map(|c| match &c.kind {
                ProbeKind::Http(h) => Some(h),
                _ => None,
            })
            .collect();
        assert_eq!(http.len(), 3);
        assert!(Arc::ptr_eq(&http[0].spec, &http[1].spec));
        assert!(!Arc::ptr_eq(&http[0].spec, &http[2].spec));
        let req = |h: &HttpProbe| String::from_utf8(h.request(&h.spec.urls[0])).unwrap();
        assert_eq!(
            req(http[0]),
            "GET /up HTTP/1.0\r\nUser-Agent: KeepAliveClient\r\nHost: 192.0.2.10:8080\r\n\r\n"
        );
        assert!(req(http[1]).contains("\r\nHost: 192.0.2.11:8080\r\n\r\n"));
        assert!(req(http[2]).contains("\r\nHost: www.example.org\r\n\r\n"));
    }

    #[test]
    fn a_planned_check_stays_small() {
        eprintln!(
            "Planned {} ProbeKind {} ConnOpts {} Subscribers {} Start {} RsName {} RealServer {} Checker {}",
            std::mem::size_of::<Planned>(),
            std::mem::size_of::<ProbeKind>(),
            std::mem::size_of::<ConnOpts>(),
            std::mem::size_of::<Subscribers>(),
            std::mem::size_of::<Start>(),
            std::mem::size_of::<RsName>(),
            std::mem::size_of::<crate::config::model::RealServer>(),
            std::mem::size_of::<Checker>(),
        );
        // The timeout in µs (8 bytes, not a Duration's 16).
        assert!(std::mem::size_of::<ConnOpts>() <= 56);
        assert!(std::mem::size_of::<ProbeKind>() <= 64);
        // The name as its parts (20 bytes inline) rather than a boxed string
        // (16 inline and a 32-byte block).
        // MISC_CHECK's virtual-server name in its probe, not in every
        // check; the start state beside, released once the board holds it.
        assert!(std::mem::size_of::<Planned>() <= 128);
        assert!(std::mem::size_of::<Start>() <= 32);
        // The configuration's records, kept as long as it runs.
        // Its one checker inline (a heap block of 112 bytes before).
        assert!(std::mem::size_of::<crate::config::model::RealServer>() <= 200);
        assert!(std::mem::size_of::<Checker>() <= 96);
        // An HTTP checker's box: 176 bytes a real server before (http_protocol
        // a byte, the checker's line a u32).
        assert!(std::mem::size_of::<crate::config::model::HttpCheck>() <= 144);
    }
}
