//! The checker engine: turns the configuration's checkers into running
//! tasks, one per distinct check, and reports their state changes.
//!
//! Between the config model and the daemon. [`plan`] resolves every
//! checker (no sockets; it reads the SSL block's files; identical checks of one real server shared by several
//! virtual servers become one, with several subscribers). [`Engine`] runs
//! each planned check as its own tokio task, so a hung backend only ever
//! delays its own check, cut at its timeout. Each task applies the pure
//! decisions of [`super::state`] and sends an [`Event`] when its checker
//! changes; [`Tracker`] (pure) turns those into real-server and quorum
//! transitions on [`Health`]. The probes are reached through [`Prober`], so
//! scheduling is tested on paused time with scripted results.

use super::conn::{ConnOpts, Failure};
use super::dns::DnsProbe;
use super::file::{self, FileState};
use super::http::{HttpProbe, Tls};
use super::misc::{self, RunAs, ScriptSpec, Scripts};
use super::smtp::DEFAULT_HELO;
use super::udp::UdpProbe;
use crate::config::model::{Checker, Config, RealServer, VirtualServer};
use crate::health::retry::{Next, RetryFamily, UrlCycle};
pub use crate::health::{
    checker_keys, start_states, Change, Event, Roster, RsKey, Start, Subscriber,
};
use std::collections::HashMap;
use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;
use tokio::task::JoinSet;

/// What a check does, resolved. Equal kinds probe alike: a reload matches
/// checkers by it, and identical checks are shared by it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum ProbeKind {
    /// TCP_CHECK.
    Tcp(ConnOpts),
    /// HTTP_GET / SSL_GET.
    Http(Arc<HttpProbe>),
    /// SMTP_CHECK with its HELO name.
    Smtp(ConnOpts, String),
    /// UDP_CHECK.
    Udp(UdpProbe),
    /// DNS_CHECK.
    Dns(DnsProbe),
    /// PING_CHECK.
    Ping(ConnOpts),
    /// MISC_CHECK.
    Misc {
        /// The script.
        script: ScriptSpec,
        /// `misc_timeout` (else the VS delay_loop).
        timeout: Duration,
        /// `misc_dynamic`.
        dynamic: bool,
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
}

impl ProbeKind {
    /// keepalived's name for the checker type.
    pub fn type_name(&self) -> &'static str {
        match self {
            ProbeKind::Tcp(_) => "TCP_CHECK",
            ProbeKind::Http(h) if h.tls.is_some() => "SSL_GET",
            ProbeKind::Http(_) => "HTTP_GET",
            ProbeKind::Smtp(..) => "SMTP_CHECK",
            ProbeKind::Udp(_) => "UDP_CHECK",
            ProbeKind::Dns(_) => "DNS_CHECK",
            ProbeKind::Ping(_) => "PING_CHECK",
            ProbeKind::Misc { .. } => "MISC_CHECK",
            ProbeKind::File { .. } => "FILE_CHECK",
        }
    }

    fn family(&self) -> Option<RetryFamily> {
        match self {
            ProbeKind::Tcp(_) | ProbeKind::Udp(_) | ProbeKind::Ping(_) => Some(RetryFamily::Simple),
            ProbeKind::Dns(_) | ProbeKind::Misc { .. } => Some(RetryFamily::Counted),
            ProbeKind::Smtp(..) => Some(RetryFamily::Smtp),
            ProbeKind::Http(_) | ProbeKind::File { .. } => None,
        }
    }
}

/// One distinct check and who listens to it.
#[derive(Debug, Clone)]
pub struct Planned {
    /// What it does.
    pub kind: ProbeKind,
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
    /// keepalived's name for the checked service, `[ip]:proto:port`.
    pub name: String,
    /// The (first) virtual server's name, for MISC_CHECK's lines.
    pub vs_name: String,
    /// Who gets the results.
    pub subscribers: Vec<Subscriber>,
    /// The state its task starts in: keepalived's startup rules, or what a
    /// reload carried over from the same checker (§6.8).
    pub start: Start,
}

/// The checks of a configuration.
#[derive(Debug, Clone, Default)]
pub struct Plan {
    /// Distinct checks.
    pub checks: Vec<Planned>,
    /// Per (vs, rs): how many checkers it has (shared ones counted for
    /// each subscriber).
    pub per_rs: HashMap<(usize, usize), usize>,
    /// Per (vs, rs): the check of each of its checkers, in order.
    pub by_rs: HashMap<(usize, usize), Vec<usize>>,
}

/// The carry of a checker's state across a reload, keyed by its probe.
pub type Carry = crate::health::Carry<ProbeKind>;

impl Roster for Plan {
    type Probe = ProbeKind;

    fn len(&self) -> usize {
        self.checks.len()
    }

    fn subscribers(&self, check: usize) -> &[Subscriber] {
        &self.checks[check].subscribers
    }

    fn start(&self, check: usize) -> Start {
        self.checks[check].start
    }

    fn probe(&self, check: usize) -> ProbeKind {
        self.checks[check].kind.clone()
    }

    fn checks_of(&self, vs: usize, rs: usize) -> &[usize] {
        self.by_rs.get(&(vs, rs)).map_or(&[], Vec::as_slice)
    }
}

/// What makes two planned checks one: everything they do, how they are
/// scheduled and the state they start in.
#[derive(PartialEq, Eq, Hash)]
struct ShareKey {
    kind: ProbeKind,
    start: Start,
    delay_loop: Duration,
    delay_before_retry: Duration,
    warmup: Duration,
    retry: u32,
    alpha: bool,
    fast_recovery: bool,
    name: String,
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

fn micros(v: Option<u64>, default: u64) -> Duration {
    Duration::from_micros(v.unwrap_or(default))
}

/// keepalived's `FMT_RS()` for a real server of a virtual server.
pub fn format_rs(rs: &RealServer, vs: &VirtualServer) -> String {
    crate::config::validate::format_rs(rs.ip, rs.port, vs.protocol)
}

/// Resolves the identity scripts run as: the script's own user, else
/// `script_user`, else `keepalived_script` if it exists, else ourselves.
pub fn script_identity(
    cfg: &Config,
    user: Option<&(String, Option<String>)>,
) -> Result<Option<RunAs>, String> {
    let (u, g) = match user.or(cfg.global_defs.script_user.as_ref()) {
        Some((u, g)) => (u.clone(), g.clone()),
        None => match nix::unistd::User::from_name("keepalived_script") {
            Ok(Some(_)) => ("keepalived_script".to_string(), None),
            _ => return Ok(None),
        },
    };
    RunAs::resolve(&u, g.as_deref()).map(Some)
}

fn probe_kind(
    cfg: &Config,
    vs: &VirtualServer,
    rs: &RealServer,
    c: &Checker,
    tls: &mut Option<Option<Tls>>,
) -> Result<Option<ProbeKind>, String> {
    let conn = || ConnOpts::from_common(c.common(), rs.ip);
    Ok(Some(match c {
        Checker::Tcp(_) => ProbeKind::Tcp(conn()),
        Checker::Ping(_) => ProbeKind::Ping(conn()),
        Checker::Http(h) | Checker::Ssl(h) => {
            let t = if matches!(c, Checker::Ssl(_)) {
                let t = tls.get_or_insert_with(|| match Tls::new(cfg.ssl.as_ref()) {
                    Ok(t) => Some(t),
                    Err(e) => {
                        log::error!("{e}");
                        None
                    }
                });
                match t {
                    Some(t) => Some(t.clone()),
                    None => return Err("SSL_GET: no usable SSL context".into()),
                }
            } else {
                None
            };
            if h.urls.is_empty() {
                return Ok(None);
            }
            ProbeKind::Http(Arc::new(
                HttpProbe::new(
                    h,
                    conn(),
                    rs.virtualhost.as_deref(),
                    vs.virtualhost.as_deref(),
                    t,
                )
                .map_err(|e| e.to_string())?,
            ))
        }
        Checker::Smtp(s) => ProbeKind::Smtp(
            conn(),
            s.helo_name
                .clone()
                .or_else(|| cfg.global_defs.smtp_helo_name.clone())
                .unwrap_or_else(|| DEFAULT_HELO.into()),
        ),
        Checker::Udp(u) => ProbeKind::Udp(UdpProbe::new(u, conn())),
        Checker::Dns(d) => ProbeKind::Dns(DnsProbe::new(d, conn())),
        Checker::Misc(m) => {
            let Some(argv) = m.misc_path.clone() else {
                return Ok(None);
            };
            let run_as = script_identity(cfg, m.user.as_ref())?;
            let timeout = match m.misc_timeout {
                Some(t) if t > 0 => Duration::from_micros(t),
                _ => micros(vs.delay_loop, 60_000_000),
            };
            ProbeKind::Misc {
                script: ScriptSpec { argv, run_as },
                timeout,
                dynamic: m.misc_dynamic,
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
            let Some(path) = tf.file.clone() else {
                return Ok(None);
            };
            ProbeKind::File {
                path: PathBuf::from(path),
                weight: i64::from(f.weight.unwrap_or(tf.weight)),
                reverse: f.reverse.unwrap_or(tf.reverse),
            }
        }
        Checker::Bfd(_) => return Ok(None),
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
pub fn plan_carrying(cfg: &Config, opts: &PlanOptions, carry: &Carry) -> (Plan, Vec<String>) {
    let mut p = Plan::default();
    let mut errors = Vec::new();
    // ProbeKind's Hash and Eq read only what never changes: a regex's
    // pattern (not its match cache), not the TLS context.
    #[allow(clippy::mutable_key_type)]
    let mut seen: HashMap<ShareKey, usize> = HashMap::new();
    let mut tls = None;
    for (vi, vs) in cfg.virtual_servers.iter().enumerate() {
        let vs_name = crate::config::validate::format_vs(vs);
        for (ri, rs) in vs.real_servers.iter().enumerate() {
            let mut kinds = Vec::new();
            for c in &rs.checkers {
                match probe_kind(cfg, vs, rs, c, &mut tls) {
                    Ok(Some(k)) => kinds.push((c, k)),
                    Ok(None) => {}
                    Err(e) => errors.push(format!(
                        "{}: checker of real server {} in VS {vs_name}: {e}",
                        c.common().line,
                        format_rs(rs, vs),
                    )),
                }
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
                    let cm = c.common();
                    (cm.retry.unwrap_or(1), cm.alpha.unwrap_or(false))
                })
                .collect();
            let starts = start_states(carry, &rk, &keys, &conf);
            let mut ids = Vec::with_capacity(kinds.len());
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
                let cm = c.common();
                let delay_loop = micros(cm.delay_loop, 60_000_000);
                let planned = Planned {
                    delay_loop,
                    delay_before_retry: micros(cm.delay_before_retry, 1_000_000),
                    warmup: cm.warmup.map(Duration::from_micros).unwrap_or(delay_loop),
                    retry: cm.retry.unwrap_or(1),
                    alpha: cm.alpha.unwrap_or(false),
                    log_all_failures: cm.log_all_failures.unwrap_or(false),
                    fast_recovery: matches!(c, Checker::Http(h) | Checker::Ssl(h) if h.fast_recovery),
                    name: format_rs(rs, vs),
                    vs_name: vs_name.clone(),
                    start,
                    kind,
                    subscribers: Vec::new(),
                };
                let sub = Subscriber {
                    vs: vi,
                    rs: ri,
                    checker: n,
                };
                // Two checks are the same when everything they do, how
                // they are scheduled and the state they start in is; only
                // then may they share a probe.
                let shared = if opts.share {
                    let key = ShareKey {
                        kind: planned.kind.clone(),
                        start: planned.start,
                        delay_loop: planned.delay_loop,
                        delay_before_retry: planned.delay_before_retry,
                        warmup: planned.warmup,
                        retry: planned.retry,
                        alpha: planned.alpha,
                        fast_recovery: planned.fast_recovery,
                        name: planned.name.clone(),
                    };
                    match seen.get(&key) {
                        Some(&i) => Some(i),
                        None => {
                            seen.insert(key, p.checks.len());
                            None
                        }
                    }
                } else {
                    None
                };
                match shared {
                    Some(i) => {
                        p.checks[i].subscribers.push(sub);
                        ids.push(i);
                    }
                    None => {
                        ids.push(p.checks.len());
                        let mut planned = planned;
                        planned.subscribers.push(sub);
                        p.checks.push(planned);
                    }
                }
            }
            p.per_rs.insert((vi, ri), ids.len());
            p.by_rs.insert((vi, ri), ids);
        }
    }
    (p, errors)
}

/// The outcome of one probe run: `Ok(Some(status))` carries a MISC
/// dynamic status.
pub type Outcome = Result<Option<u8>, Failure>;

/// Runs one probe. The real one does I/O; tests script results.
pub trait Prober: Send + Sync + 'static {
    /// Runs check `check` of the plan against url `url` (HTTP) with
    /// sequence number `seq` (PING/DNS).
    fn probe<'a>(
        &'a self,
        check: &'a Planned,
        url: usize,
        seq: u16,
    ) -> Pin<Box<dyn Future<Output = Outcome> + Send + 'a>>;
}

/// The prober that talks to the real servers.
#[derive(Debug, Clone)]
pub struct NetProber {
    scripts: Scripts,
}

impl NetProber {
    /// MISC_CHECK scripts run under `scripts`' cap, shared with the notify
    /// scripts.
    pub fn new(scripts: Scripts) -> NetProber {
        NetProber { scripts }
    }
}

impl Prober for NetProber {
    fn probe<'a>(
        &'a self,
        check: &'a Planned,
        url: usize,
        seq: u16,
    ) -> Pin<Box<dyn Future<Output = Outcome> + Send + 'a>> {
        Box::pin(async move {
            match &check.kind {
                ProbeKind::Tcp(c) => super::tcp::check(c).await.map(|()| None),
                ProbeKind::Http(h) => h.check(url).await.map(|()| None),
                ProbeKind::Smtp(c, helo) => super::smtp::check(c, helo).await.map(|()| None),
                ProbeKind::Udp(u) => u.check().await.map(|()| None),
                ProbeKind::Dns(d) => d.check(seq).await.map(|()| None),
                ProbeKind::Ping(c) => super::ping::check(c, seq).await.map(|()| None),
                ProbeKind::Misc {
                    script,
                    timeout,
                    dynamic,
                } => {
                    let end = self.scripts.run(script, *timeout).await?;
                    misc::verdict(end, *dynamic)
                }
                ProbeKind::File { .. } => Ok(None),
            }
        })
    }
}

/// A small xorshift: jitter needs spread, not quality.
#[derive(Debug, Clone)]
pub struct Jitter(u64);

impl Jitter {
    /// Seeded from the clock and pid.
    pub fn seeded() -> Jitter {
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(1);
        Jitter(t ^ (u64::from(std::process::id()) << 32) | 1)
    }

    /// Fixed seed (tests).
    pub fn with_seed(s: u64) -> Jitter {
        Jitter(s | 1)
    }

    /// Next value.
    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }

    /// Uniform in `0..=d`.
    pub fn upto(&mut self, d: Duration) -> Duration {
        let us = d.as_micros() as u64;
        if us == 0 {
            return Duration::ZERO;
        }
        Duration::from_micros(self.next_u64() % (us + 1))
    }
}

/// How one check went last.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LastRun {
    /// It passed.
    pub ok: bool,
    /// Why not, in words.
    pub error: String,
    /// How long the probe took.
    pub latency: Duration,
    /// When it ended.
    pub at: tokio::time::Instant,
}

/// Upper bounds (seconds) of the probe latency histogram's buckets; the
/// last bucket is everything above.
pub const LATENCY_BUCKETS: [f64; 12] = [
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 5.0,
];

/// A check's live status.
#[derive(Debug, Clone)]
pub struct CheckStatus {
    /// Its state now, as a reload would carry it.
    pub now: Start,
    /// Probes run.
    pub runs: u64,
    /// Consecutive passes (0 after a failure).
    pub successes: u64,
    /// Consecutive failures (0 after a pass).
    pub failures: u64,
    /// The latest result.
    pub last: Option<LastRun>,
    /// When it runs next.
    pub next_run: Option<tokio::time::Instant>,
    /// Probe latencies: counts per [`LATENCY_BUCKETS`] bucket (and one
    /// above), and their sum in seconds.
    pub latency_counts: [u64; LATENCY_BUCKETS.len() + 1],
    /// Sum of the latencies, seconds.
    pub latency_sum: f64,
    /// Failures by kind ([`super::conn::Failure::kind`]).
    pub errors: Vec<(&'static str, u64)>,
}

impl CheckStatus {
    fn record(
        &mut self,
        ok: bool,
        reason: &str,
        kind: &'static str,
        latency: Duration,
        at: tokio::time::Instant,
        next: tokio::time::Instant,
    ) {
        self.runs += 1;
        let secs = latency.as_secs_f64();
        let bucket = LATENCY_BUCKETS
            .iter()
            .position(|&b| secs <= b)
            .unwrap_or(LATENCY_BUCKETS.len());
        self.latency_counts[bucket] += 1;
        self.latency_sum += secs;
        if !ok {
            let kind = if kind.is_empty() { "failed" } else { kind };
            match self.errors.iter_mut().find(|(k, _)| *k == kind) {
                Some((_, n)) => *n += 1,
                None => self.errors.push((kind, 1)),
            }
        }
        if ok {
            self.successes += 1;
            self.failures = 0;
        } else {
            self.failures += 1;
            self.successes = 0;
        }
        match &mut self.last {
            // The error string is reused: most runs pass, a failing check
            // repeats its reason.
            Some(l) => {
                l.ok = ok;
                l.error.clear();
                l.error.push_str(reason);
                l.latency = latency;
                l.at = at;
            }
            None => {
                self.last = Some(LastRun {
                    ok,
                    error: reason.to_string(),
                    latency,
                    at,
                })
            }
        }
        self.next_run = Some(next);
    }
}

/// Every check's status, written by its task after each run and read by
/// the daemon: what a reload carries (§6.8), and what operators are shown.
#[derive(Debug)]
pub struct Board(Vec<std::sync::Mutex<CheckStatus>>);

impl Board {
    /// Each check at its start state.
    pub fn new(plan: &Plan) -> Board {
        Board(
            plan.checks
                .iter()
                .map(|c| {
                    std::sync::Mutex::new(CheckStatus {
                        now: c.start,
                        runs: 0,
                        successes: 0,
                        failures: 0,
                        last: None,
                        next_run: None,
                        latency_counts: [0; LATENCY_BUCKETS.len() + 1],
                        latency_sum: 0.0,
                        errors: Vec::new(),
                    })
                })
                .collect(),
        )
    }

    /// Check `id`'s status now.
    pub fn get(&self, id: usize) -> Option<CheckStatus> {
        self.0
            .get(id)
            // A task that panicked holding the lock left a usable status.
            .map(|m| m.lock().unwrap_or_else(|e| e.into_inner()).clone())
    }

    fn update(&self, id: usize, f: impl FnOnce(&mut CheckStatus)) {
        if let Some(m) = self.0.get(id) {
            f(&mut m.lock().unwrap_or_else(|e| e.into_inner()));
        }
    }
}

/// Running checks. Dropping it stops them (scripts are killed).
pub struct Engine {
    tasks: JoinSet<()>,
    board: Arc<Board>,
}

impl Engine {
    /// Starts every check of `plan`; events go to `tx`. File checks are
    /// watched by one task.
    pub fn start(
        plan: &Plan,
        prober: Arc<dyn Prober>,
        tx: mpsc::UnboundedSender<Event>,
        mut jitter: Jitter,
    ) -> Engine {
        let mut tasks = JoinSet::new();
        let board = Arc::new(Board::new(plan));
        let mut files = Vec::new();
        for (i, c) in plan.checks.iter().enumerate() {
            if let ProbeKind::File { .. } = c.kind {
                files.push(i);
                continue;
            }
            // register_checkers_thread(): 1 s plus a random part of warmup.
            let first = Duration::from_secs(1) + jitter.upto(c.warmup);
            let check = Arc::new(c.clone());
            tasks.spawn(run_check(
                i,
                check,
                prober.clone(),
                tx.clone(),
                board.clone(),
                first,
            ));
        }
        if !files.is_empty() {
            let checks: Vec<(usize, Planned)> =
                files.iter().map(|&i| (i, plan.checks[i].clone())).collect();
            tasks.spawn(watch_files(checks, tx));
        }
        Engine { tasks, board }
    }

    /// The checks' status.
    pub fn board(&self) -> Arc<Board> {
        self.board.clone()
    }

    /// Stops every check now.
    pub async fn stop(mut self) {
        self.halt().await;
    }

    /// Stops every check now, keeping the board readable.
    pub async fn halt(&mut self) {
        self.tasks.shutdown().await;
    }
}

fn delay_for(c: &Planned, next: Next) -> Duration {
    match next {
        Next::DelayLoop => c.delay_loop,
        Next::DelayBeforeRetry => c.delay_before_retry,
        Next::LongerOfBoth => c.delay_loop.max(c.delay_before_retry),
        Next::Now => Duration::ZERO,
    }
}

async fn run_check(
    id: usize,
    c: Arc<Planned>,
    prober: Arc<dyn Prober>,
    tx: mpsc::UnboundedSender<Event>,
    board: Arc<Board>,
    first: Duration,
) {
    let mut st = c.start.state;
    let mut urls = UrlCycle::new(match &c.kind {
        ProbeKind::Http(h) => h.urls.len(),
        _ => 1,
    });
    // A reload may have shortened the url list.
    if c.start.url.0 < urls.count {
        urls.current = c.start.url.0;
        urls.failed = c.start.url.1.filter(|&f| f < urls.count);
    }
    let mut seq: u16 = (id as u16).wrapping_mul(7919);
    let mut last_status: Option<u8> = c.start.misc_status;
    board.update(id, |b| {
        b.next_run = Some(tokio::time::Instant::now() + first)
    });
    tokio::time::sleep(first).await;
    let is_misc = matches!(c.kind, ProbeKind::Misc { .. });
    let mut cycle_start = true;
    loop {
        let started = tokio::time::Instant::now();
        let mut error_kind = "";
        seq = seq.wrapping_add(1);
        let outcome = prober.probe(&c, urls.current, seq).await;
        let ended = tokio::time::Instant::now();
        let (ok, status, reason) = match outcome {
            Ok(s) => (true, s, String::new()),
            Err(f) if f.is_local() => {
                // keepalived reschedules without a verdict.
                log::warn!("{} on {}: {f}", c.kind.type_name(), c.name);
                tokio::time::sleep(c.delay_loop).await;
                continue;
            }
            Err(f) => {
                error_kind = f.kind();
                (false, None, f.to_string())
            }
        };
        let (was_up, had_run, retry_it) = (st.is_up, st.has_run, st.retry_it);
        if !ok && c.log_all_failures {
            log::info!(
                "{} on service {} failed: {reason}",
                c.kind.type_name(),
                c.name
            );
        }
        let d = match (&c.kind, c.kind.family()) {
            (ProbeKind::Http(_), _) => st.http_result(&mut urls, ok, c.fast_recovery),
            (_, Some(f)) => {
                if cycle_start {
                    st.start_cycle(f);
                }
                st.result(f, ok)
            }
            (_, None) => continue,
        };
        cycle_start = d.next != Next::DelayBeforeRetry;
        if let ProbeKind::Misc { dynamic: true, .. } = c.kind {
            // update_svr_wgt() on a changed exit status of a success.
            let s = if ok { Some(status.unwrap_or(0)) } else { None };
            if let Some(s) = s.filter(|s| Some(*s) != last_status) {
                last_status = Some(s);
                send(&tx, id, Change::MiscStatus(s), String::new());
            }
            if !ok && d.changed == Some(false) {
                last_status = None;
            }
        }
        if ok && (!was_up || !had_run) && !matches!(c.kind, ProbeKind::Http(_)) {
            log::info!("{}", success_line(&c));
        }
        if d.pass_complete {
            log::info!("{}", success_line(&c));
        }
        if d.changed == Some(false) {
            // keepalived prints HTTP's count before the failing attempt.
            let retries = if matches!(c.kind, ProbeKind::Http(_)) {
                retry_it
            } else {
                c.retry
            };
            if had_run && c.retry > 0 {
                log::info!(
                    "{} on service {} failed after {retries} retries.",
                    check_word(&c),
                    c.name
                );
            } else {
                log::info!("{} on service {} failed.", check_word(&c), c.name);
            }
            log::info!("{} on service {}: {reason}", c.kind.type_name(), c.name);
        }
        let delay = delay_for(&c, d.next);
        // MISC_CHECK schedules from the start of the run.
        let next = if is_misc { started } else { ended } + delay;
        // Written before the event is sent, with no await between: a
        // reload that stops the tasks then drains the events finds the
        // board and the events in agreement.
        board.update(id, |b| {
            b.now.state = st;
            b.now.url = (urls.current, urls.failed);
            b.now.misc_status = last_status;
            b.record(ok, &reason, error_kind, ended - started, ended, next);
        });
        match d.changed {
            Some(true) => send(&tx, id, Change::Up, "success".into()),
            Some(false) => send(&tx, id, Change::Down, reason),
            None if d.first_down => send(&tx, id, Change::FirstDown, reason),
            None => {}
        }
        tokio::time::sleep_until(next).await;
    }
}

/// keepalived's word for the checker in failure lines.
fn check_word(c: &Planned) -> &'static str {
    match c.kind {
        ProbeKind::Http(_) => "HTTP_CHECK",
        ProbeKind::Ping(_) => "PING_CHECK",
        _ => c.kind.type_name(),
    }
}

/// keepalived's line when a checker passes while down or for the first time.
fn success_line(c: &Planned) -> String {
    match &c.kind {
        ProbeKind::Tcp(_) => format!("TCP connection to {} success.", c.name),
        ProbeKind::Udp(_) => format!("UDP connection to {} success.", c.name),
        ProbeKind::Ping(_) => format!("ICMP connection to {} success.", c.name),
        ProbeKind::Http(_) => format!("Remote Web server {} succeed on service.", c.name),
        ProbeKind::Smtp(..) => format!("Remote SMTP server {} succeed on service.", c.name),
        ProbeKind::Dns(_) => format!("DNS_CHECK on service {} succeed.", c.name),
        ProbeKind::Misc { script, .. } => format!(
            "Misc check for [{} VS {}] by [{}] succeeded.",
            c.name,
            c.vs_name,
            script.argv.first().map_or("", String::as_str)
        ),
        ProbeKind::File { .. } => format!("FILE_CHECK on service {} up.", c.name),
    }
}

fn send(tx: &mpsc::UnboundedSender<Event>, check: usize, change: Change, reason: String) {
    // The receiver is gone only while the engine is being torn down.
    let _ = tx.send(Event {
        check,
        change,
        reason,
    });
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

async fn watch_files(checks: Vec<(usize, Planned)>, tx: mpsc::UnboundedSender<Event>) {
    let paths: Vec<PathBuf> = checks
        .iter()
        .filter_map(|(_, c)| match &c.kind {
            ProbeKind::File { path, .. } => Some(path.clone()),
            _ => None,
        })
        .collect();
    let mut current: Vec<Option<FileState>> = checks.iter().map(|(_, c)| file_state(c)).collect();
    let mut watch = match file::Watch::new(&paths) {
        Ok(w) => w,
        Err(e) => {
            log::error!("FILE_CHECK: cannot watch tracked files: {e}");
            return;
        }
    };
    loop {
        let touched = match watch.changed().await {
            Ok(t) => t,
            Err(e) => {
                log::error!("FILE_CHECK: inotify: {e}");
                return;
            }
        };
        for (k, (id, c)) in checks.iter().enumerate() {
            let ProbeKind::File { path, .. } = &c.kind else {
                continue;
            };
            if !touched.iter().any(|t| t == path) {
                continue;
            }
            // Out of range values are ignored, as keepalived does.
            let Some(new) = file_state(c) else {
                continue;
            };
            let old = current[k];
            if old == Some(new) {
                continue;
            }
            current[k] = Some(new);
            match (old, new) {
                (Some(FileState::Fault), FileState::Weight(w)) => {
                    send(&tx, *id, Change::FileWeight(w), String::new());
                    send(&tx, *id, Change::Up, "file value".into());
                }
                (_, FileState::Weight(w)) => send(&tx, *id, Change::FileWeight(w), String::new()),
                (_, FileState::Fault) => send(&tx, *id, Change::Down, "file value".into()),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::load_str;
    use crate::health::retry::CheckerState;
    use crate::health::{Effect, Health, Tracker, Transition};
    use std::sync::Mutex;
    use tokio::time::Instant;

    /// Results by check name; records when each probe started.
    #[derive(Default)]
    struct Scripted {
        ok: Mutex<HashMap<String, bool>>,
        /// How long a probe of this name takes.
        takes: Mutex<HashMap<String, Duration>>,
        runs: Mutex<Vec<(String, Duration)>>,
        t0: Mutex<Option<Instant>>,
    }

    impl Scripted {
        fn set(&self, name: &str, ok: bool) {
            self.ok.lock().unwrap().insert(name.into(), ok);
        }
        fn runs_of(&self, name: &str) -> Vec<f64> {
            self.runs
                .lock()
                .unwrap()
                .iter()
                .filter(|(n, _)| n == name)
                .map(|(_, t)| t.as_secs_f64())
                .collect()
        }
    }

    impl Prober for Scripted {
        fn probe<'a>(
            &'a self,
            check: &'a Planned,
            _url: usize,
            _seq: u16,
        ) -> Pin<Box<dyn Future<Output = Outcome> + Send + 'a>> {
            Box::pin(async move {
                let t0 = self.t0.lock().unwrap().expect("t0");
                self.runs
                    .lock()
                    .unwrap()
                    .push((check.name.clone(), t0.elapsed()));
                let takes = self.takes.lock().unwrap().get(&check.name).copied();
                if let Some(d) = takes {
                    tokio::time::sleep(d).await;
                }
                if self
                    .ok
                    .lock()
                    .unwrap()
                    .get(&check.name)
                    .copied()
                    .unwrap_or(true)
                {
                    Ok(None)
                } else {
                    Err(Failure::Protocol("scripted failure".into()))
                }
            })
        }
    }

    fn conf(body: &str) -> Config {
        // Scripts run as whoever runs the tests.
        let me = nix::unistd::User::from_uid(nix::unistd::getuid())
            .unwrap()
            .unwrap()
            .name;
        let body = format!(
            "global_defs {{\n enable_script_security\n script_user {me}\n}}\n{}",
            body.replace(
                " protocol TCP\n",
                " protocol TCP\n lb_algo rr\n lb_kind NAT\n"
            )
        );
        let l = load_str(&body);
        assert!(
            l.diagnostics.items().is_empty(),
            "{:?}",
            l.diagnostics.items()
        );
        l.config
    }

    const TCP: &str = "virtual_server 10.0.0.1 80 {\n protocol TCP\n delay_loop 5\n \
        real_server 127.0.0.1 8001 {\n TCP_CHECK {\n retry 2\n delay_before_retry 2\n warmup 0\n }\n }\n \
        real_server 127.0.0.1 8002 {\n TCP_CHECK {\n warmup 0\n }\n }\n}\n";

    async fn collect(
        rx: &mut mpsc::UnboundedReceiver<Event>,
        until: Duration,
    ) -> Vec<(f64, Event)> {
        let t0 = Instant::now();
        let mut out = Vec::new();
        while let Ok(Some(e)) = tokio::time::timeout_at(t0 + until, rx.recv()).await {
            out.push((t0.elapsed().as_secs_f64(), e));
        }
        out
    }

    #[tokio::test(start_paused = true)]
    async fn retries_are_spaced_by_delay_before_retry_and_down_after_retry_plus_one() {
        let cfg = conf(TCP);
        let (plan, errs) = plan(&cfg, &PlanOptions::default());
        assert!(errs.is_empty());
        let p = Arc::new(Scripted::default());
        *p.t0.lock().unwrap() = Some(Instant::now());
        let (tx, mut rx) = mpsc::unbounded_channel();
        let _e = Engine::start(&plan, p.clone(), tx, Jitter::with_seed(1));
        // Healthy until 10.5 s, then failing.
        tokio::time::sleep(Duration::from_millis(10_500)).await;
        p.set("[127.0.0.1]:tcp:8001", false);
        let evs = collect(&mut rx, Duration::from_secs(20)).await;
        // Runs at 1, 6, 11 (fail 1), 13 (fail 2), 15 (fail 3 → down), 20.
        let runs = p.runs_of("[127.0.0.1]:tcp:8001");
        assert_eq!(&runs[..6], &[1.0, 6.0, 11.0, 13.0, 15.0, 20.0]);
        assert_eq!(evs.len(), 1, "{evs:?}");
        assert_eq!(evs[0].1.change, Change::Down);
        assert_eq!(evs[0].0, 15.0 - 10.5);
        // The other server's check kept its own rhythm.
        assert_eq!(
            &p.runs_of("[127.0.0.1]:tcp:8002")[..4],
            &[1.0, 6.0, 11.0, 16.0]
        );
    }

    #[tokio::test(start_paused = true)]
    async fn smtp_counts_afresh_each_cycle_even_at_startup() {
        let cfg = conf(
            "virtual_server 10.0.0.1 25 {\n protocol TCP\n delay_loop 10\n \
             real_server 127.0.0.1 2525 {\n SMTP_CHECK {\n retry 2\n delay_before_retry 1\n warmup 0\n }\n }\n}\n",
        );
        let (plan, _) = plan(&cfg, &PlanOptions::default());
        let p = Arc::new(Scripted::default());
        *p.t0.lock().unwrap() = Some(Instant::now());
        p.set("[127.0.0.1]:tcp:2525", false);
        let (tx, mut rx) = mpsc::unbounded_channel();
        let _e = Engine::start(&plan, p.clone(), tx, Jitter::with_seed(1));
        let evs = collect(&mut rx, Duration::from_secs(15)).await;
        // Failures at 1, 2, 3 (retry 2): down at the third; next cycle at 13.
        assert_eq!(
            p.runs_of("[127.0.0.1]:tcp:2525"),
            vec![1.0, 2.0, 3.0, 13.0, 14.0]
        );
        assert_eq!(evs.len(), 1, "{evs:?}");
        assert_eq!((evs[0].0, evs[0].1.change), (3.0, Change::Down));
    }

    #[tokio::test(start_paused = true)]
    async fn a_hung_probe_delays_nobody_else() {
        let cfg = conf(TCP);
        let (plan, _) = plan(&cfg, &PlanOptions::default());
        let p = Arc::new(Scripted::default());
        *p.t0.lock().unwrap() = Some(Instant::now());
        p.takes
            .lock()
            .unwrap()
            .insert("[127.0.0.1]:tcp:8001".into(), Duration::from_secs(3600));
        let (tx, _rx) = mpsc::unbounded_channel();
        let _e = Engine::start(&plan, p.clone(), tx, Jitter::with_seed(1));
        tokio::time::sleep(Duration::from_secs(30)).await;
        assert_eq!(p.runs_of("[127.0.0.1]:tcp:8001"), vec![1.0]);
        assert_eq!(
            p.runs_of("[127.0.0.1]:tcp:8002"),
            vec![1.0, 6.0, 11.0, 16.0, 21.0, 26.0]
        );
    }

    #[tokio::test(start_paused = true)]
    async fn misc_check_schedules_from_the_start_of_its_run() {
        let cfg = conf(
            "virtual_server 10.0.0.1 80 {\n protocol TCP\n delay_loop 5\n \
             real_server 127.0.0.1 8001 {\n MISC_CHECK {\n misc_path /bin/true\n warmup 0\n }\n }\n}\n",
        );
        let (plan, _) = plan(&cfg, &PlanOptions::default());
        let p = Arc::new(Scripted::default());
        *p.t0.lock().unwrap() = Some(Instant::now());
        p.takes
            .lock()
            .unwrap()
            .insert("[127.0.0.1]:tcp:8001".into(), Duration::from_secs(3));
        let (tx, _rx) = mpsc::unbounded_channel();
        let _e = Engine::start(&plan, p.clone(), tx, Jitter::with_seed(1));
        tokio::time::sleep(Duration::from_secs(17)).await;
        assert_eq!(
            p.runs_of("[127.0.0.1]:tcp:8001"),
            vec![1.0, 6.0, 11.0, 16.0]
        );
    }

    #[tokio::test(start_paused = true)]
    async fn warmup_spreads_first_runs_within_one_second_plus_warmup() {
        let mut body =
            String::from("virtual_server 10.0.0.1 80 {\n protocol TCP\n delay_loop 10\n");
        for i in 0..50 {
            body.push_str(&format!(
                " real_server 127.0.0.1 {} {{\n TCP_CHECK {{\n warmup 4\n }}\n }}\n",
                9000 + i
            ));
        }
        body.push_str("}\n");
        let cfg = conf(&body);
        let (plan, _) = plan(&cfg, &PlanOptions::default());
        let p = Arc::new(Scripted::default());
        *p.t0.lock().unwrap() = Some(Instant::now());
        let (tx, _rx) = mpsc::unbounded_channel();
        let _e = Engine::start(&plan, p.clone(), tx, Jitter::with_seed(7));
        tokio::time::sleep(Duration::from_secs(6)).await;
        let firsts: Vec<f64> = p
            .runs
            .lock()
            .unwrap()
            .iter()
            .map(|r| r.1.as_secs_f64())
            .collect();
        assert_eq!(firsts.len(), 50);
        assert!(firsts.iter().all(|&t| (1.0..=5.0).contains(&t)));
        let distinct: std::collections::BTreeSet<u64> =
            firsts.iter().map(|t| (t * 10.0) as u64).collect();
        assert!(distinct.len() > 20, "spread: {distinct:?}");
    }

    #[tokio::test(start_paused = true)]
    async fn a_reload_carries_checker_states() {
        let old = conf(TCP);
        let (p, _) = plan(&old, &PlanOptions::default());
        let (mut t, mut h) = Tracker::start(&old, &p);
        t.apply(
            &old,
            &p,
            &mut h,
            &Event {
                check: 0,
                change: Change::Down,
                reason: String::new(),
            },
        );
        // Its task saw the failure.
        let board = Board::new(&p);
        board.update(0, |b| {
            b.now.state.is_up = false;
            b.now.state.has_run = true;
        });
        let carry = t.carry(&old, &p, |id| board.get(id).map(|s| s.now), &h);
        // The new file adds a server; the failed one must stay out.
        let new = conf(&TCP.replace(
            " real_server 127.0.0.1 8002",
            " real_server 127.0.0.1 8003 {\n TCP_CHECK {\n warmup 0\n }\n }\n real_server 127.0.0.1 8002",
        ));
        let (p2, _) = plan_carrying(&new, &PlanOptions::default(), &carry);
        let (_, h2) = Tracker::start(&new, &p2);
        let alive: Vec<bool> = h2.vs[0].rs.iter().map(|r| r.alive).collect();
        assert_eq!(alive, vec![false, true, true]);
        // Its checker starts down: a failure changes nothing, a success
        // brings it up.
        let pr = Arc::new(Scripted::default());
        *pr.t0.lock().unwrap() = Some(Instant::now());
        pr.set("[127.0.0.1]:tcp:8001", false);
        let (tx, mut rx) = mpsc::unbounded_channel();
        let _e = Engine::start(&p2, pr.clone(), tx, Jitter::with_seed(1));
        let evs = collect(&mut rx, Duration::from_secs(3)).await;
        assert!(evs.is_empty(), "{evs:?}");
        pr.set("[127.0.0.1]:tcp:8001", true);
        let evs = collect(&mut rx, Duration::from_secs(6)).await;
        assert_eq!(evs.len(), 1, "{evs:?}");
        assert_eq!(evs[0].1.change, Change::Up);
    }

    /// The plan of `body` after a reload from `old`, whose checks ended in
    /// `states` (by check index).
    fn reloaded(old: &str, states: &[(usize, CheckerState)], body: &str) -> (Plan, Health) {
        let old = conf(old);
        let (p, _) = plan(&old, &PlanOptions::default());
        let (mut t, mut h) = Tracker::start(&old, &p);
        let board = Board::new(&p);
        for &(id, st) in states {
            if st.is_up != board.get(id).unwrap().now.state.is_up {
                t.apply(
                    &old,
                    &p,
                    &mut h,
                    &Event {
                        check: id,
                        change: if st.is_up { Change::Up } else { Change::Down },
                        reason: String::new(),
                    },
                );
            }
            board.update(id, |b| b.now.state = st);
        }
        let carry = t.carry(&old, &p, |id| board.get(id).map(|s| s.now), &h);
        let new = conf(body);
        let (p2, _) = plan_carrying(&new, &PlanOptions::default(), &carry);
        let (_, h2) = Tracker::start(&new, &p2);
        (p2, h2)
    }

    fn st(is_up: bool, has_run: bool, retry_it: u32, retry: u32) -> CheckerState {
        CheckerState {
            is_up,
            has_run,
            retry_it,
            retry,
        }
    }

    #[test]
    fn a_reload_migrates_retry_counts_as_keepalived() {
        // 8001: retry 2, two failures counted; 8002: retry 1, up.
        let states = [(0, st(true, true, 2, 2)), (1, st(true, true, 0, 1))];
        // Same retry: the count is kept below retry, so one more failure
        // is decisive.
        let (p, _) = reloaded(TCP, &states, TCP);
        assert_eq!(p.checks[0].start.state, st(true, true, 1, 2));
        assert_eq!(p.checks[1].start.state, st(true, true, 0, 1));
        // retry 2 -> 5: the count carries.
        let (p, _) = reloaded(
            TCP,
            &[(0, st(true, true, 1, 2))],
            &TCP.replace("retry 2", "retry 5"),
        );
        assert_eq!(p.checks[0].start.state.retry_it, 1);
    }

    #[test]
    fn a_reload_starts_new_servers_as_keepalived() {
        let body = TCP.replace(
            " real_server 127.0.0.1 8002",
            " real_server 127.0.0.1 8003 {\n TCP_CHECK {\n alpha\n }\n }\n              real_server 127.0.0.1 8004 {\n TCP_CHECK {\n }\n }\n real_server 127.0.0.1 8002",
        );
        let (p, h) = reloaded(
            TCP,
            &[(0, st(true, true, 0, 2)), (1, st(true, true, 0, 1))],
            &body,
        );
        // check_new_rs_state(): the alpha one down; neither's first failure
        // is decisive after a reload.
        assert_eq!(p.checks[1].name, "[127.0.0.1]:tcp:8003");
        assert_eq!(p.checks[1].start.state, st(false, false, 0, 1));
        assert_eq!(p.checks[2].start.state, st(true, false, 0, 1));
        let alive: Vec<bool> = h.vs[0].rs.iter().map(|r| r.alive).collect();
        assert_eq!(alive, vec![true, false, true, true]);
    }

    #[test]
    fn a_changed_checker_on_a_failed_server_starts_afresh() {
        // 8002 failed; its checker changes. keepalived finds no failed
        // checker that has run and the server down with nothing run, so
        // an alpha checker starts down and a plain one up.
        let states = [(0, st(true, true, 0, 2)), (1, st(false, true, 0, 1))];
        let changed = TCP.replace(
            "TCP_CHECK {\n warmup 0\n }",
            "TCP_CHECK {\n warmup 0\n connect_timeout 7\n }",
        );
        let (p, h) = reloaded(TCP, &states, &changed);
        assert_eq!(p.checks[1].start.state, st(true, false, 1, 1));
        assert!(h.vs[0].rs[1].alive);
        let alpha = changed.replace("connect_timeout 7", "connect_timeout 7\n alpha");
        let (p, h) = reloaded(TCP, &states, &alpha);
        assert_eq!(p.checks[1].start.state, st(false, false, 1, 1));
        assert!(!h.vs[0].rs[1].alive);
        // Unchanged, it stays down and needs a success.
        let (p, h) = reloaded(TCP, &states, TCP);
        assert_eq!(p.checks[1].start.state, st(false, true, 0, 1));
        assert!(!h.vs[0].rs[1].alive);
    }

    #[test]
    fn alpha_servers_live_in_the_kernel_start_up() {
        let body = TCP.replace("warmup 0\n }\n }\n}", "warmup 0\n alpha\n }\n }\n}");
        let cfg = conf(&body);
        let (p, _) = plan(&cfg, &PlanOptions::default());
        assert!(!p.checks[1].start.state.is_up);
        let mut carry = Carry::new();
        carry.live_in_kernel.insert(RsKey {
            vs: "[10.0.0.1]:tcp:80".to_string(),
            ip: "127.0.0.1".parse().unwrap(),
            port: 8002,
        });
        let (p, _) = plan_carrying(&cfg, &PlanOptions::default(), &carry);
        // Up, and the first failure decisive: out at the first failed check.
        assert_eq!(p.checks[1].start.state, st(true, false, 1, 1));
    }

    #[test]
    fn identical_checks_of_one_server_are_shared_between_virtual_servers() {
        let vs = |addr: &str| {
            format!(
                "virtual_server {addr} 80 {{\n protocol TCP\n real_server 127.0.0.1 8001 {{\n \
                 TCP_CHECK {{\n connect_timeout 2\n }}\n }}\n real_server 127.0.0.2 8001 {{\n TCP_CHECK {{\n }}\n }}\n}}\n"
            )
        };
        let cfg = conf(&(vs("10.0.0.1") + &vs("10.0.0.2")));
        let (p, _) = plan(&cfg, &PlanOptions::default());
        assert_eq!(p.checks.len(), 2);
        assert_eq!(p.checks[0].subscribers.len(), 2);
        let (p, _) = plan(
            &cfg,
            &PlanOptions {
                share: false,
                ..PlanOptions::default()
            },
        );
        assert_eq!(p.checks.len(), 4);
    }

    #[test]
    fn tracker_needs_every_checker_and_applies_dynamic_weights() {
        let cfg = conf(
            "virtual_server 10.0.0.1 80 {\n protocol TCP\n \
             real_server 127.0.0.1 8001 {\n weight 5\n TCP_CHECK {\n }\n \
             MISC_CHECK {\n misc_path /bin/true\n misc_dynamic\n alpha\n }\n }\n}\n\
             virtual_server 10.0.0.2 80 {\n protocol TCP\n real_server 127.0.0.2 8001 {\n }\n}\n",
        );
        let (plan, _) = plan(&cfg, &PlanOptions::default());
        let (mut t, mut h) = Tracker::start(&cfg, &plan);
        assert!(!h.vs[0].rs[0].alive, "the alpha MISC_CHECK starts down");
        assert!(h.vs[1].rs[0].alive, "a server without checkers is alive");
        let ev = |check, change| Event {
            check,
            change,
            reason: String::new(),
        };
        // TCP down then MISC up: still one failed checker.
        t.apply(&cfg, &plan, &mut h, &ev(0, Change::Down));
        let e = t.apply(&cfg, &plan, &mut h, &ev(1, Change::Up));
        assert!(e.is_empty());
        assert!(!h.vs[0].rs[0].alive);
        let e = t.apply(&cfg, &plan, &mut h, &ev(0, Change::Up));
        assert_eq!(
            e,
            vec![
                Effect::Transition(Transition::RsUp { vs: 0, rs: 0 }),
                Effect::Transition(Transition::QuorumGained {
                    vs: 0,
                    weight_sum: 5
                })
            ]
        );
        // Exit status 12 → weight 10.
        let e = t.apply(&cfg, &plan, &mut h, &ev(1, Change::MiscStatus(12)));
        assert_eq!(
            e[0],
            Effect::Weight {
                vs: 0,
                rs: 0,
                from: 5,
                to: 10
            }
        );
        assert_eq!(h.vs[0].rs[0].effective_weight, 10);
        // Exit 0 → back to the configured weight.
        t.apply(&cfg, &plan, &mut h, &ev(1, Change::MiscStatus(0)));
        assert_eq!(h.vs[0].rs[0].effective_weight, 5);
    }
}
