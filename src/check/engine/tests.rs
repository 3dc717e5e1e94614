//! The engine's tests: the scheduler on paused time with scripted probers
//! (when checks run, what the board and the tracker are told).

use super::*;
use crate::check::conn::Failure;
use crate::config::load_str;
use crate::config::model::Config;
use crate::health::retry::CheckerState;
use crate::health::{Effect, Health, Tracker, Transition};
use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
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
                .push((check.name.to_string(), t0.elapsed()));
            let takes = self
                .takes
                .lock()
                .unwrap()
                .get(&*check.name.to_string())
                .copied();
            if let Some(d) = takes {
                tokio::time::sleep(d).await;
            }
            if self
                .ok
                .lock()
                .unwrap()
                .get(&*check.name.to_string())
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

async fn collect(rx: &mut mpsc::UnboundedReceiver<Event>, until: Duration) -> Vec<(f64, Event)> {
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
    let (_plan, p, _e, _rx) = start_tcp_checks(50, 10, 4);
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

/// An engine running `n` scripted TCP_CHECKs (ports from 9000) at
/// `delay_loop` and `warmup` seconds, jitter seeded with 7.
fn start_tcp_checks(
    n: u16,
    delay: u32,
    warmup: u32,
) -> (Plan, Arc<Scripted>, Engine, mpsc::UnboundedReceiver<Event>) {
    let mut body = format!("virtual_server 10.0.0.1 80 {{\n protocol TCP\n delay_loop {delay}\n");
    for i in 0..n {
        body.push_str(&format!(
            " real_server 127.0.0.1 {} {{\n TCP_CHECK {{\n warmup {warmup}\n }}\n }}\n",
            9000 + i
        ));
    }
    body.push_str("}\n");
    let cfg = conf(&body);
    let (plan, _) = plan(&cfg, &PlanOptions::default());
    let p = Arc::new(Scripted::default());
    *p.t0.lock().unwrap() = Some(Instant::now());
    let (tx, rx) = mpsc::unbounded_channel();
    let e = Engine::start(&plan, p.clone(), tx, Jitter::with_seed(7));
    (plan, p, e, rx)
}

/// `n` TCP_CHECKs at `delay_loop 1`, `warmup 1`: when each first ran,
/// and when it was due (the engine's jitter, drawn again).
async fn first_runs(n: u16) -> Vec<(Duration, Duration)> {
    let (plan, p, _e, _rx) = start_tcp_checks(n, 1, 1);
    tokio::time::sleep(Duration::from_millis(2100)).await;
    let mut j = Jitter::with_seed(7);
    plan.checks
        .iter()
        .map(|c| {
            let due = Duration::from_secs(1) + j.upto(Duration::from_secs(1));
            let ran = p
                .runs
                .lock()
                .unwrap()
                .iter()
                .find(|r| r.0 == *c.name.to_string())
                .expect("ran")
                .1;
            (ran, due)
        })
        .collect()
}

#[tokio::test(start_paused = true)]
async fn at_high_rates_checks_launch_on_the_beat() {
    // 300 checks a second: over beat::RATE.
    let runs = first_runs(300).await;
    let step = crate::check::beat::PERIOD;
    // Each within one step of when it was due (and tokio's rounding up
    // to its millisecond), never before.
    for &(ran, due) in &runs {
        assert!(
            ran >= due && ran - due <= step + Duration::from_millis(1),
            "ran {ran:?}, due {due:?}"
        );
    }
    // And all on one grid: a few dozen wake-ups for 300 launches.
    let first = runs.iter().map(|r| r.0).min().unwrap();
    for &(ran, _) in &runs {
        assert_eq!((ran - first).as_nanos() % step.as_nanos(), 0, "{ran:?}");
    }
    let wakes: std::collections::BTreeSet<Duration> = runs.iter().map(|r| r.0).collect();
    assert!(wakes.len() <= 126, "{} wake-ups", wakes.len());
}

#[tokio::test(start_paused = true)]
async fn at_low_rates_each_check_launches_at_its_own_time() {
    // 100 checks a second: under beat::RATE; tokio's timers round up to
    // the millisecond.
    let runs = first_runs(100).await;
    for &(ran, due) in &runs {
        assert!(
            ran >= due && ran - due < Duration::from_millis(1),
            "ran {ran:?}, due {due:?}"
        );
    }
    let wakes: std::collections::BTreeSet<Duration> = runs.iter().map(|r| r.0).collect();
    assert!(wakes.len() > 80, "{} wake-ups", wakes.len());
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
    board.update(0, |now| {
        now.state.is_up = false;
        now.state.has_run = true;
    });
    let carry = t.carry(&old, &p, |id| board.now(id), &h);
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
        board.update(id, |now| now.state = st);
    }
    let carry = t.carry(&old, &p, |id| board.now(id), &h);
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
        rise_it: 0,
    }
}

#[test]
fn a_reload_migrates_retry_counts_as_keepalived() {
    // 8001: retry 2, two failures counted; 8002: retry 1, up.
    let states = [(0, st(true, true, 2, 2)), (1, st(true, true, 0, 1))];
    // Same retry: the count is kept below retry, so one more failure
    // is decisive.
    let (p, _) = reloaded(TCP, &states, TCP);
    assert_eq!(p.start(0).state, st(true, true, 1, 2));
    assert_eq!(p.start(1).state, st(true, true, 0, 1));
    // retry 2 -> 5: the count carries.
    let (p, _) = reloaded(
        TCP,
        &[(0, st(true, true, 1, 2))],
        &TCP.replace("retry 2", "retry 5"),
    );
    assert_eq!(p.start(0).state.retry_it, 1);
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
    assert_eq!(p.checks[1].name.to_string(), "[127.0.0.1]:tcp:8003");
    assert_eq!(p.start(1).state, st(false, false, 0, 1));
    assert_eq!(p.start(2).state, st(true, false, 0, 1));
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
    assert_eq!(p.start(1).state, st(true, false, 1, 1));
    assert!(h.vs[0].rs[1].alive);
    let alpha = changed.replace("connect_timeout 7", "connect_timeout 7\n alpha");
    let (p, h) = reloaded(TCP, &states, &alpha);
    assert_eq!(p.start(1).state, st(false, false, 1, 1));
    assert!(!h.vs[0].rs[1].alive);
    // Unchanged, it stays down and needs a success.
    let (p, h) = reloaded(TCP, &states, TCP);
    assert_eq!(p.start(1).state, st(false, true, 0, 1));
    assert!(!h.vs[0].rs[1].alive);
}

#[test]
fn alpha_servers_live_in_the_kernel_start_up() {
    let body = TCP.replace("warmup 0\n }\n }\n}", "warmup 0\n alpha\n }\n }\n}");
    let cfg = conf(&body);
    let (p, _) = plan(&cfg, &PlanOptions::default());
    assert!(!p.start(1).state.is_up);
    let mut carry = Carry::new();
    carry.live_in_kernel.insert(RsKey {
        vs: "[10.0.0.1]:tcp:80".into(),
        ip: "127.0.0.1".parse().unwrap(),
        port: 8002,
    });
    let (p, _) = plan_carrying(&cfg, &PlanOptions::default(), &carry);
    // Up, and the first failure decisive: out at the first failed check.
    assert_eq!(p.start(1).state, st(true, false, 1, 1));
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

/// Counts, as each probe starts, the probes that started before it and
/// whose end the scheduler has not observed yet (their runs not on the
/// board): ended tasks kept waiting.
#[derive(Default)]
struct Lagging {
    board: std::sync::OnceLock<Arc<Board>>,
    checks: usize,
    started: std::sync::atomic::AtomicUsize,
    worst: std::sync::atomic::AtomicUsize,
}

impl Prober for Lagging {
    fn probe<'a>(
        &'a self,
        _check: &'a Planned,
        _url: usize,
        _seq: u16,
    ) -> Pin<Box<dyn Future<Output = Outcome> + Send + 'a>> {
        use std::sync::atomic::Ordering::Relaxed;
        Box::pin(async move {
            let before = self.started.fetch_add(1, Relaxed);
            let board = self.board.get().expect("board");
            let observed: u64 = (0..self.checks)
                .map(|i| board.get(i).map_or(0, |s| s.runs))
                .sum();
            self.worst
                .fetch_max(before.saturating_sub(observed as usize), Relaxed);
            Ok(None)
        })
    }
}

#[tokio::test(start_paused = true)]
async fn ended_probes_are_observed_before_more_are_launched() {
    // 2,000 checks due at once, each probe ending as it starts: taken
    // in turn with the launches, the ends waited (their tasks kept)
    // while batch after batch was launched.
    let mut body = String::from("virtual_server 10.0.0.1 80 {\n protocol TCP\n delay_loop 5\n");
    for i in 0..2000 {
        body.push_str(&format!(
            " real_server 127.0.0.1 {} {{\n TCP_CHECK {{\n warmup 0\n }}\n }}\n",
            9000 + i
        ));
    }
    body.push_str("}\n");
    let (plan, _) = plan(&conf(&body), &PlanOptions::default());
    let p = Arc::new(Lagging {
        checks: plan.checks.len(),
        ..Lagging::default()
    });
    let (tx, _rx) = mpsc::unbounded_channel();
    let e = Engine::start(&plan, p.clone(), tx, Jitter::with_seed(7));
    assert!(p.board.set(e.board()).is_ok(), "board set once");
    tokio::time::sleep(Duration::from_secs(3)).await;
    let started = p.started.load(std::sync::atomic::Ordering::Relaxed);
    assert_eq!(started, 2000, "every check ran once");
    let worst = p.worst.load(std::sync::atomic::Ordering::Relaxed);
    // A batch launched is observed before the next: at most one
    // batch and the probe in hand.
    assert!(
        worst <= LAUNCH_BATCH,
        "{worst} ended probes unobserved at a launch"
    );
}
