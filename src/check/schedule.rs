//! One check's schedule as a pure step function, in the spirit of
//! pingora's `Health::observe_health`: a probe's verdict in; the checker's
//! new state, when it runs next, what it reports and what it logs out.
//!
//! Pure (no clock, no sockets): the [`super::engine`]'s task sleeps, probes
//! and hands the verdict to [`Schedule::observe`]. keepalived's retry
//! families ([`crate::health::retry`]) decide; this adds the HTTP url
//! cycle, MISC_CHECK's dynamic status and keepalived's log lines.

use super::conn::Failure;
use super::plan::{Planned, ProbeKind};
use crate::health::retry::{CheckerState, Next, UrlCycle};
use crate::health::{Change, Start, UrlAt};
use std::time::Duration;

/// A probe's verdict, as the schedule takes it.
#[derive(Debug)]
pub enum Verdict {
    /// It passed (with MISC_CHECK's exit status when dynamic).
    Pass(Option<u8>),
    /// It failed: why, in words, and the kind of failure.
    Fail(String, &'static str),
    /// It could not be run here (no socket): keepalived reschedules without
    /// a verdict.
    Local(String),
}

impl Verdict {
    /// From a probe's outcome.
    pub fn of(o: Result<Option<u8>, Failure>) -> Verdict {
        match o {
            Ok(s) => Verdict::Pass(s),
            Err(f) if f.is_local() => Verdict::Local(f.to_string()),
            Err(f) => Verdict::Fail(f.to_string(), f.kind()),
        }
    }
}

/// What one step decided.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Step {
    /// How long until the next run.
    pub delay: Duration,
    /// The delay counts from the start of the run (MISC_CHECK), not its
    /// end.
    pub from_start: bool,
    /// A verdict was reached (the status records the run).
    pub judged: bool,
    /// What to report, in order, with the reason in words.
    pub changes: Vec<(Change, String)>,
    /// keepalived's lines for the run: info lines, and warnings.
    pub info: Vec<String>,
    /// Warnings (a run that could not be made).
    pub warn: Vec<String>,
}

/// One check's schedule state between runs.
#[derive(Debug, Clone)]
pub struct Schedule {
    /// `is_up`, `has_run`, `retry_it`.
    pub state: CheckerState,
    /// HTTP: which url runs next, which one failed (as a start state
    /// keeps it: 8 bytes, tens of thousands of records).
    pub url: UrlAt,
    /// HTTP: how many urls (1 for the other checkers).
    url_count: u32,
    /// MISC_CHECK `misc_dynamic`: the last exit status applied.
    pub misc_status: Option<u8>,
    /// PING/DNS sequence numbers.
    seq: u16,
    /// The next run starts a retry cycle (SMTP's and DNS's counts).
    cycle_start: bool,
}

impl Schedule {
    /// The schedule of check `id` of a plan, from its start state.
    pub fn new(id: usize, c: &Planned, start: Start) -> Schedule {
        let count = match &c.kind {
            ProbeKind::Http(h) => h.spec.urls.len(),
            _ => 1,
        }
        .max(1);
        // A reload may have shortened the url list.
        let url = if start.url.next() < count {
            UrlAt::new(start.url.next(), start.url.failed().filter(|&f| f < count))
        } else {
            UrlAt::FIRST
        };
        Schedule {
            state: start.state,
            url,
            url_count: u32::try_from(count).unwrap_or(u32::MAX),
            misc_status: start.misc_status,
            seq: (id as u16).wrapping_mul(7919),
            cycle_start: true,
        }
    }

    /// Where the checker is in its urls.
    pub fn urls(&self) -> UrlCycle {
        UrlCycle {
            current: self.url.next(),
            failed: self.url.failed(),
            count: self.url_count as usize,
        }
    }

    /// The sequence number of the next run (PING, DNS).
    pub fn next_seq(&mut self) -> u16 {
        self.seq = self.seq.wrapping_add(1);
        self.seq
    }

    /// Applies one run's verdict.
    pub fn observe(&mut self, c: &Planned, v: &Verdict) -> Step {
        let mut step = Step::default();
        let (ok, status, reason) = match v {
            Verdict::Pass(s) => (true, *s, ""),
            Verdict::Fail(r, _) => (false, None, r.as_str()),
            Verdict::Local(r) => {
                step.warn
                    .push(format!("{} on {}: {r}", c.kind.type_name(), c.name));
                step.delay = c.timing.delay_loop;
                return step;
            }
        };
        let mut urls = self.urls();
        let st = &mut self.state;
        let (was_up, had_run, retry_it) = (st.is_up, st.has_run, st.retry_it);
        if !ok && c.timing.log_all_failures {
            step.info.push(format!(
                "{} on service {} failed: {reason}",
                c.kind.type_name(),
                c.name
            ));
        }
        let d = match (&c.kind, c.kind.family()) {
            (ProbeKind::Http(_), _) => {
                let d = st.http_result_rising(&mut urls, ok, c.timing.fast_recovery, c.timing.rise);
                self.url = UrlAt::new(urls.current, urls.failed);
                d
            }
            (_, Some(f)) => {
                if self.cycle_start {
                    st.start_cycle(f);
                }
                st.result_rising(f, ok, c.timing.rise)
            }
            // A kind without a retry family (FILE_CHECK is watched, not
            // probed): no decision, and never a run without a wait.
            (_, None) => {
                step.delay = c.timing.delay_loop.max(Duration::from_secs(1));
                return step;
            }
        };
        step.judged = true;
        self.cycle_start = d.next != Next::DelayBeforeRetry;
        if let ProbeKind::Misc { dynamic: true, .. } = c.kind {
            // update_svr_wgt() on a changed exit status of a success.
            let s = if ok { Some(status.unwrap_or(0)) } else { None };
            if let Some(s) = s.filter(|s| Some(*s) != self.misc_status) {
                self.misc_status = Some(s);
                step.changes.push((Change::MiscStatus(s), String::new()));
            }
            if !ok && d.changed == Some(false) {
                self.misc_status = None;
            }
        }
        if d.next == Next::Recovering {
            step.info.push(format!(
                "{} on service {} passed {} of {} times needed to put it back (healthy_threshold)",
                c.kind.type_name(),
                c.name,
                self.state.rise_it,
                c.timing.rise
            ));
        } else if ok && (!was_up || !had_run) && !matches!(c.kind, ProbeKind::Http(_)) {
            step.info.push(success_line(c));
        }
        if d.pass_complete {
            step.info.push(success_line(c));
        }
        if d.changed == Some(false) {
            // keepalived prints HTTP's count before the failing attempt.
            let retries = if matches!(c.kind, ProbeKind::Http(_)) {
                retry_it
            } else {
                c.timing.retry
            };
            if had_run && c.timing.retry > 0 {
                step.info.push(format!(
                    "{} on service {} failed after {retries} retries.",
                    check_word(c),
                    c.name
                ));
            } else {
                step.info
                    .push(format!("{} on service {} failed.", check_word(c), c.name));
            }
            step.info.push(format!(
                "{} on service {}: {reason}",
                c.kind.type_name(),
                c.name
            ));
        }
        let t = &c.timing;
        step.delay = match d.next {
            // down_interval (extension) while down, else keepalived's.
            Next::DelayLoop if !self.state.is_up => t.down_delay(),
            Next::DelayLoop => t.delay_loop,
            Next::DelayBeforeRetry => t.failing_interval(),
            Next::LongerOfBoth => t
                .down_interval
                .unwrap_or(t.delay_loop.max(t.delay_before_retry)),
            Next::Recovering => t.recovering_interval(),
            Next::Now => Duration::ZERO,
        };
        // MISC_CHECK schedules from the start of the run.
        step.from_start = matches!(c.kind, ProbeKind::Misc { .. });
        match d.changed {
            Some(true) => step.changes.push((Change::Up, "success".into())),
            Some(false) => step.changes.push((Change::Down, reason.to_string())),
            None if d.first_down => step.changes.push((Change::FirstDown, reason.to_string())),
            None => {}
        }
        step
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
        ProbeKind::Misc {
            script, vs_name, ..
        } => format!(
            "Misc check for [{} VS {}] by [{}] succeeded.",
            c.name,
            vs_name,
            script.argv.first().map_or("", String::as_str)
        ),
        ProbeKind::File { .. } => format!("FILE_CHECK on service {} up.", c.name),
        ProbeKind::Bfd { name } => format!("BFD CHECK {name} succeeded on service {}.", c.name),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::plan::{plan, PlanOptions};
    use crate::config::load_str;

    fn planned(checker: &str) -> (Planned, Start) {
        let text = format!(
            "virtual_server 192.0.2.1 80 {{\n lvs_sched rr\n lvs_method NAT\n protocol TCP\n \
             real_server 192.0.2.10 80 {{\n {checker}\n }}\n}}\n"
        );
        let cfg = load_str(&text).config;
        let (p, errors) = plan(&cfg, &PlanOptions::default());
        assert!(errors.is_empty(), "{errors:?}");
        (p.checks[0].clone(), p.start(0))
    }

    fn fail() -> Verdict {
        Verdict::Fail("connection refused".into(), "refused")
    }

    #[test]
    fn a_misc_check_shared_by_two_virtual_servers_names_the_first() {
        let vs = |addr: &str| {
            format!(
                "virtual_server {addr} 80 {{\n protocol TCP\n real_server 192.0.2.10 80 {{\n \
                 MISC_CHECK {{\n misc_path /bin/true\n }}\n }}\n}}\n"
            )
        };
        let cfg = load_str(&(vs("192.0.2.1") + &vs("192.0.2.2"))).config;
        let (p, errors) = plan(&cfg, &PlanOptions::default());
        assert!(errors.is_empty(), "{errors:?}");
        // The name is no part of what the check does: one check for both.
        assert_eq!(p.checks.len(), 1);
        assert_eq!(p.checks[0].subscribers.len(), 2);
        // (The script as resolved: /usr/bin/true where /bin is a link.)
        let line = success_line(&p.checks[0]);
        assert!(
            line.starts_with("Misc check for [[192.0.2.10]:tcp:80 VS [192.0.2.1]:tcp:80] by [/")
                && line.ends_with("/true] succeeded."),
            "{line}"
        );
    }

    #[test]
    fn a_tcp_check_goes_down_after_its_retries_and_back_on_a_pass() {
        let (c, start) =
            planned("TCP_CHECK {\n retry 2\n delay_before_retry 3\n delay_loop 10\n }");
        let mut s = Schedule::new(0, &c, start);
        // Up and established by a first pass: nothing to report.
        let st = s.observe(&c, &Verdict::Pass(None));
        assert!(st.changes.is_empty() && st.judged);
        assert_eq!(st.delay, Duration::from_secs(10));
        // Two failures are retried after delay_before_retry, the third is
        // decisive.
        for _ in 0..2 {
            let st = s.observe(&c, &fail());
            assert!(st.changes.is_empty(), "{st:?}");
            assert_eq!(st.delay, Duration::from_secs(3));
        }
        let st = s.observe(&c, &fail());
        assert_eq!(
            st.changes,
            vec![(Change::Down, "connection refused".into())]
        );
        assert_eq!(
            st.info,
            vec![
                "TCP_CHECK on service [192.0.2.10]:tcp:80 failed after 2 retries.".to_string(),
                "TCP_CHECK on service [192.0.2.10]:tcp:80: connection refused".to_string(),
            ]
        );
        let st = s.observe(&c, &Verdict::Pass(None));
        assert_eq!(st.changes, vec![(Change::Up, "success".into())]);
        assert_eq!(
            st.info,
            vec!["TCP connection to [192.0.2.10]:tcp:80 success."]
        );
    }

    #[test]
    fn thresholds_and_intervals_follow_the_checker_s_state() {
        let (c, start) = planned(
            "TCP_CHECK {\n unhealthy_threshold 2\n healthy_threshold 3\n delay_loop 10\n \
             delay_before_retry 4\n fast_interval 0.5\n down_interval 30\n }",
        );
        assert_eq!(c.timing.retry, 1, "unhealthy_threshold 2 is retry 1");
        let mut s = Schedule::new(0, &c, start);
        assert!(s.observe(&c, &Verdict::Pass(None)).changes.is_empty());
        // Failing: fast_interval instead of delay_before_retry, then down
        // and down_interval instead of delay_loop.
        assert_eq!(s.observe(&c, &fail()).delay, Duration::from_millis(500));
        let st = s.observe(&c, &fail());
        assert_eq!(st.changes.len(), 1);
        assert_eq!(st.delay, Duration::from_secs(30));
        assert_eq!(s.observe(&c, &fail()).delay, Duration::from_secs(30));
        // Recovering: two passes counted, fast_interval apart, the third
        // puts it back and the loop is delay_loop again.
        for n in 1..=2 {
            let st = s.observe(&c, &Verdict::Pass(None));
            assert!(st.changes.is_empty(), "{st:?}");
            assert_eq!(st.delay, Duration::from_millis(500));
            assert_eq!(
                st.info,
                vec![format!(
                    "TCP_CHECK on service [192.0.2.10]:tcp:80 passed {n} of 3 times needed to put it back (healthy_threshold)"
                )]
            );
        }
        let st = s.observe(&c, &Verdict::Pass(None));
        assert_eq!(st.changes, vec![(Change::Up, "success".into())]);
        assert_eq!(st.delay, Duration::from_secs(10));
    }

    #[test]
    fn without_the_extensions_the_intervals_are_keepalived_s() {
        let (c, start) =
            planned("TCP_CHECK {\n retry 1\n delay_loop 10\n delay_before_retry 4\n }");
        let mut s = Schedule::new(0, &c, start);
        s.observe(&c, &Verdict::Pass(None));
        assert_eq!(s.observe(&c, &fail()).delay, Duration::from_secs(4));
        assert_eq!(s.observe(&c, &fail()).delay, Duration::from_secs(10));
        assert_eq!(s.observe(&c, &fail()).delay, Duration::from_secs(10));
        let st = s.observe(&c, &Verdict::Pass(None));
        assert_eq!(st.changes, vec![(Change::Up, "success".into())]);
    }

    #[test]
    fn a_local_error_reschedules_without_a_verdict() {
        let (c, start) = planned("TCP_CHECK {\n delay_loop 7\n }");
        let mut s = Schedule::new(0, &c, start);
        let st = s.observe(&c, &Verdict::Local("cannot create socket".into()));
        assert!(!st.judged && st.changes.is_empty());
        assert_eq!(st.delay, Duration::from_secs(7));
        assert_eq!(st.warn.len(), 1);
        assert!(!s.state.has_run, "no verdict, no state change");
    }

    #[test]
    fn a_kind_without_a_family_never_runs_back_to_back() {
        let (mut c, start) = planned("TCP_CHECK {\n delay_loop 1\n }");
        c.kind = ProbeKind::File {
            path: "/nonexistent".into(),
            weight: 0,
            reverse: false,
        };
        std::sync::Arc::make_mut(&mut c.timing).delay_loop = Duration::ZERO;
        let mut s = Schedule::new(0, &c, start);
        let st = s.observe(&c, &Verdict::Pass(None));
        assert!(st.delay > Duration::ZERO, "{st:?}");
    }

    #[test]
    fn misc_dynamic_reports_each_new_status_once() {
        let (c, start) = planned("MISC_CHECK {\n misc_path /bin/true\n misc_dynamic\n }");
        let mut s = Schedule::new(0, &c, start);
        let st = s.observe(&c, &Verdict::Pass(Some(5)));
        assert_eq!(st.changes, vec![(Change::MiscStatus(5), String::new())]);
        assert!(
            st.from_start,
            "MISC_CHECK schedules from the start of its run"
        );
        assert!(s.observe(&c, &Verdict::Pass(Some(5))).changes.is_empty());
        assert_eq!(
            s.observe(&c, &Verdict::Pass(Some(0))).changes,
            vec![(Change::MiscStatus(0), String::new())]
        );
    }
}
