//! keepalived's retry families as pure transitions: one checker's result →
//! its up/down state and when it runs next.
//!
//! Pure (no sockets, no clock). The checker's schedule feeds it results and
//! sleeps for what it answers. Rules from
//! keepalived 2.2.7 (`check_*.c` epilogs, `ipwrapper.c`), summarised in
//! `../shared/reference/keepalived.md` §6.

/// How a checker type treats failures (§6.1's families).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RetryFamily {
    /// TCP_CHECK, UDP_CHECK, PING_CHECK (`tcp_epilog()` and kin).
    Simple,
    /// DNS_CHECK (`dns_final()`), and MISC_CHECK which differs only in
    /// scheduling from the start of its run.
    Counted,
    /// SMTP_CHECK (`smtp_final()`): the count restarts every cycle and
    /// retries also happen while down.
    Smtp,
}

/// When the checker runs next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Next {
    /// After `delay_loop`.
    DelayLoop,
    /// After `delay_before_retry`.
    DelayBeforeRetry,
    /// After the longer of the two (HTTP's failed url while down).
    LongerOfBoth,
    /// At once (HTTP's `fast_recovery`).
    Now,
    /// A success of a checker that is down, short of its healthy threshold
    /// (extension): `fast_interval`, else `delay_loop`.
    Recovering,
}

/// What one result did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Decision {
    /// `Some(up)` when the checker changed state.
    pub changed: Option<bool>,
    /// When to run again.
    pub next: Next,
    /// A first result confirmed a checker that started down (`alpha`):
    /// keepalived notifies the real server down then.
    pub first_down: bool,
    /// HTTP: a clean pass over every url while down or before the first
    /// result ("Remote Web server ... succeed on service").
    pub pass_complete: bool,
}

impl Decision {
    fn new(changed: Option<bool>, next: Next) -> Decision {
        Decision {
            changed,
            next,
            first_down: false,
            pass_complete: false,
        }
    }
}

/// One checker's state (`checker_t`: `is_up`, `has_run`, `retry_it`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct CheckerState {
    /// Currently up.
    pub is_up: bool,
    /// Has produced a result.
    pub has_run: bool,
    /// Failures counted towards `retry`.
    pub retry_it: u32,
    /// `retry` as configured (resolved default).
    pub retry: u32,
    /// Successes counted towards `healthy_threshold` while down
    /// (extension; keepalived's checkers come up on the first). 16 bits:
    /// the threshold is at most 1000, and a check's record stays small.
    /// The threshold itself is the checker's timing's, passed in.
    pub rise_it: u16,
}

impl CheckerState {
    /// At start: `alpha` checkers down, others up; `retry_it` preset to
    /// `retry` so that the first failure is decisive
    /// (`validate_check_config()`).
    pub fn new(retry: u32, alpha: bool) -> CheckerState {
        CheckerState {
            is_up: !alpha,
            has_run: false,
            retry_it: retry,
            retry,
            rise_it: 0,
        }
    }

    /// A success of a checker that is down: short of the healthy
    /// threshold `rise`, it is counted and changes nothing yet.
    fn rise_pending(&mut self, rise: u16) -> bool {
        if self.is_up || rise <= 1 {
            self.rise_it = 0;
            return false;
        }
        self.rise_it += 1;
        if self.rise_it < rise {
            return true;
        }
        self.rise_it = 0;
        false
    }

    fn set(&mut self, up: bool) -> Option<bool> {
        let changed = self.is_up != up;
        self.is_up = up;
        changed.then_some(up)
    }

    /// A run scheduled after `delay_loop` (or the first) begins a cycle:
    /// SMTP_CHECK counts its failures afresh every cycle (`smtp_final()`),
    /// so even a first failure is retried `retry` times.
    pub fn start_cycle(&mut self, family: RetryFamily) {
        if family == RetryFamily::Smtp {
            self.retry_it = 0;
        }
    }

    /// Applies one result, as keepalived does (up on the first success).
    pub fn result(&mut self, family: RetryFamily, success: bool) -> Decision {
        self.result_rising(family, success, 1)
    }

    /// Applies one result of a checker with a healthy threshold of `rise`
    /// successes (extension; 1 is keepalived's [`CheckerState::result`]).
    pub fn result_rising(&mut self, family: RetryFamily, success: bool, rise: u16) -> Decision {
        let first = !self.has_run;
        self.has_run = true;
        if success {
            self.retry_it = 0;
            if self.rise_pending(rise) {
                return Decision::new(None, Next::Recovering);
            }
            let changed = if !self.is_up || first {
                self.set(true)
            } else {
                None
            };
            return Decision::new(changed, Next::DelayLoop);
        }
        self.rise_it = 0;
        match family {
            // tcp_epilog() and dns_final() word it differently, but both
            // retry while fewer than `retry` failures are counted.
            RetryFamily::Simple | RetryFamily::Counted => {
                if !self.is_up && !first {
                    return Decision::new(None, Next::DelayLoop);
                }
                if self.retry_it >= self.retry {
                    self.retry_it = 0;
                    let mut d = Decision::new(self.set(false), Next::DelayLoop);
                    d.first_down = first && d.changed.is_none();
                    d
                } else {
                    self.retry_it += 1;
                    Decision::new(None, Next::DelayBeforeRetry)
                }
            }
            RetryFamily::Smtp => {
                self.retry_it += 1;
                if self.retry_it <= self.retry {
                    Decision::new(None, Next::DelayBeforeRetry)
                } else {
                    self.retry_it = 0;
                    let mut d = Decision::new(self.set(false), Next::DelayLoop);
                    d.first_down = first && d.changed.is_none();
                    d
                }
            }
        }
    }

    /// HTTP_GET/SSL_GET's `epilog()` (family B): one url per run; the
    /// checker comes up after a clean pass over every url, goes down after
    /// `retry + 1` failures of one url, and while down re-checks only the
    /// failed url.
    pub fn http_result(
        &mut self,
        urls: &mut UrlCycle,
        success: bool,
        fast_recovery: bool,
    ) -> Decision {
        self.http_result_rising(urls, success, fast_recovery, 1)
    }

    /// [`CheckerState::http_result`] with a healthy threshold of `rise`
    /// clean passes (extension).
    pub fn http_result_rising(
        &mut self,
        urls: &mut UrlCycle,
        success: bool,
        fast_recovery: bool,
        rise: u16,
    ) -> Decision {
        #[derive(PartialEq)]
        enum Method {
            New,
            Retry,
            Failed,
        }
        let method = if success {
            Method::New
        } else if self.is_up || !self.has_run {
            self.has_run = true;
            Method::Retry
        } else {
            Method::Failed
        };
        let mut changed = None;
        let mut pass_complete = false;
        let mut recovering = false;
        let mut url_it = Some(urls.current);
        if !success {
            self.rise_it = 0;
        }
        match method {
            Method::New => {
                url_it = (urls.current + 1 < urls.count).then_some(urls.current + 1);
                self.retry_it = 0;
            }
            Method::Retry => self.retry_it += 1,
            Method::Failed => {}
        }
        if method == Method::New && url_it.is_none() && urls.failed.is_none() {
            // A clean pass of a checker that is down counts towards the
            // healthy threshold (extension): short of it, pass again.
            if self.rise_pending(rise) {
                self.has_run = true;
                recovering = true;
            } else if !self.is_up || !self.has_run {
                changed = self.set(true);
                self.has_run = true;
                pass_complete = true;
            }
            url_it = Some(0);
            self.retry_it = 0;
        } else if method == Method::Retry && self.retry_it > self.retry {
            if self.is_up {
                changed = self.set(false);
            }
            urls.failed = url_it;
        } else if method == Method::New && urls.failed.is_some() {
            urls.failed = None;
            url_it = Some(0);
            self.retry_it = 0;
        }
        urls.current = url_it.unwrap_or(0);
        let mut next = if method == Method::New {
            if !self.has_run {
                self.retry_it = self.retry;
            }
            Next::DelayLoop
        } else if urls.failed.is_some() {
            Next::LongerOfBoth
        } else {
            Next::DelayBeforeRetry
        };
        if recovering {
            next = Next::Recovering;
        }
        if fast_recovery && (!self.has_run || (!self.is_up && urls.failed.is_none())) {
            next = Next::Now;
        }
        let mut d = Decision::new(changed, next);
        d.pass_complete = pass_complete;
        d
    }
}

/// Where an HTTP checker is in its list of urls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UrlCycle {
    /// The url checked next.
    pub current: usize,
    /// The url that took the checker down.
    pub failed: Option<usize>,
    /// How many urls.
    pub count: usize,
}

impl UrlCycle {
    /// At the first url.
    pub fn new(count: usize) -> UrlCycle {
        UrlCycle {
            current: 0,
            failed: None,
            count: count.max(1),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(c: &mut CheckerState, f: RetryFamily, results: &[bool]) -> Vec<Decision> {
        results.iter().map(|&ok| c.result(f, ok)).collect()
    }

    #[test]
    fn first_failure_is_decisive_then_retry_plus_one_failures() {
        let mut c = CheckerState::new(2, false);
        let d = c.result(RetryFamily::Simple, false);
        assert_eq!(d.changed, Some(false), "the first failure takes it down");
        // Back up on one success.
        assert_eq!(c.result(RetryFamily::Simple, true).changed, Some(true));
        // From an established up state: retry (2) failures are retried after
        // delay_before_retry, the third takes it down.
        let d = run(&mut c, RetryFamily::Simple, &[false, false, false]);
        assert_eq!(
            d.iter().map(|d| (d.changed, d.next)).collect::<Vec<_>>(),
            vec![
                (None, Next::DelayBeforeRetry),
                (None, Next::DelayBeforeRetry),
                (Some(false), Next::DelayLoop)
            ]
        );
        // While down, failures just wait for the next loop.
        assert_eq!(
            c.result(RetryFamily::Simple, false),
            Decision::new(None, Next::DelayLoop)
        );
    }

    #[test]
    fn alpha_checkers_start_down_and_come_up_on_success() {
        let mut c = CheckerState::new(1, true);
        assert!(!c.is_up);
        assert_eq!(c.result(RetryFamily::Simple, true).changed, Some(true));
        let mut c = CheckerState::new(1, true);
        // A first failure of an alpha checker changes nothing: it is down.
        assert_eq!(c.result(RetryFamily::Simple, false).changed, None);
    }

    #[test]
    fn counted_family_goes_down_after_retry_plus_one() {
        let mut c = CheckerState::new(1, false);
        c.result(RetryFamily::Counted, true);
        let d = run(&mut c, RetryFamily::Counted, &[false, false]);
        assert_eq!(d[0].changed, None);
        assert_eq!(d[0].next, Next::DelayBeforeRetry);
        assert_eq!(d[1].changed, Some(false));
    }

    #[test]
    fn smtp_retries_even_while_down_and_recounts_each_cycle() {
        let mut c = CheckerState::new(1, false);
        c.result(RetryFamily::Smtp, true);
        let d = run(&mut c, RetryFamily::Smtp, &[false, false]);
        assert_eq!((d[0].changed, d[0].next), (None, Next::DelayBeforeRetry));
        assert_eq!((d[1].changed, d[1].next), (Some(false), Next::DelayLoop));
        // Down: the next cycle retries again before giving up.
        let d = run(&mut c, RetryFamily::Smtp, &[false, false]);
        assert_eq!((d[0].changed, d[0].next), (None, Next::DelayBeforeRetry));
        assert_eq!((d[1].changed, d[1].next), (None, Next::DelayLoop));
    }

    #[test]
    fn a_healthy_threshold_needs_that_many_successes_in_a_row_while_down() {
        let mut c = CheckerState::new(0, false);
        let r = |c: &mut CheckerState, ok| c.result_rising(RetryFamily::Simple, ok, 3);
        assert_eq!(r(&mut c, true).changed, None, "up already");
        assert_eq!(r(&mut c, false).changed, Some(false));
        // Two successes count; a failure between starts the count again.
        let d: Vec<Decision> = [true, true, false, true, true]
            .iter()
            .map(|&ok| r(&mut c, ok))
            .collect();
        assert!(d.iter().all(|d| d.changed.is_none()), "{d:?}");
        assert_eq!(d[0].next, Next::Recovering);
        assert_eq!(
            d[2].next,
            Next::DelayLoop,
            "a failure while down waits a loop"
        );
        assert_eq!(c.rise_it, 2);
        let d = r(&mut c, true);
        assert_eq!((d.changed, d.next), (Some(true), Next::DelayLoop));
        assert_eq!(c.rise_it, 0);
        // Up: a single success changes nothing and counts nothing.
        r(&mut c, true);
        assert_eq!(c.rise_it, 0);
    }

    #[test]
    fn an_alpha_checker_needs_its_healthy_threshold_to_come_up_first() {
        for f in [RetryFamily::Simple, RetryFamily::Counted, RetryFamily::Smtp] {
            let mut c = CheckerState::new(1, true);
            assert_eq!(c.result_rising(f, true, 2).changed, None, "{f:?}");
            assert_eq!(c.result_rising(f, true, 2).changed, Some(true), "{f:?}");
        }
    }

    #[test]
    fn http_comes_back_after_healthy_threshold_clean_passes() {
        let mut c = CheckerState::new(0, false);
        let mut u = UrlCycle::new(2);
        let http = |c: &mut CheckerState, u: &mut UrlCycle, results: &[bool]| {
            results
                .iter()
                .map(|&ok| {
                    let d = c.http_result_rising(u, ok, false, 2);
                    (d.changed, d.next, u.current)
                })
                .collect::<Vec<_>>()
        };
        assert_eq!(http(&mut c, &mut u, &[false])[0].0, Some(false));
        // The failed url passes, then a full pass: one of two.
        let d = http(&mut c, &mut u, &[true, true, true]);
        assert!(d.iter().all(|d| d.0.is_none()), "{d:?}");
        assert_eq!(d[2].1, Next::Recovering);
        assert_eq!(c.rise_it, 1);
        // A failure starts the count again.
        http(&mut c, &mut u, &[false]);
        assert_eq!(c.rise_it, 0);
        // Two clean passes of two urls.
        let d = http(&mut c, &mut u, &[true, true, true, true]);
        assert_eq!(
            d.iter().map(|d| d.0).collect::<Vec<_>>(),
            [None, None, None, Some(true)]
        );
    }

    #[test]
    fn alpha_first_failure_confirms_down() {
        let mut c = CheckerState::new(1, true);
        let d = c.result(RetryFamily::Simple, false);
        assert!(d.first_down && d.changed.is_none());
        assert!(!c.result(RetryFamily::Simple, false).first_down);
    }

    fn http(
        c: &mut CheckerState,
        u: &mut UrlCycle,
        results: &[bool],
    ) -> Vec<(Option<bool>, Next, usize)> {
        results
            .iter()
            .map(|&ok| {
                let d = c.http_result(u, ok, false);
                (d.changed, d.next, u.current)
            })
            .collect()
    }

    #[test]
    fn http_urls_cycle_fail_and_recover_from_the_first() {
        // Two urls, retry 1.
        let mut c = CheckerState::new(1, false);
        let mut u = UrlCycle::new(2);
        // First pass: url 0 ok, url 1 ok → up (already up: no change).
        assert_eq!(
            http(&mut c, &mut u, &[true, true]),
            vec![(None, Next::DelayLoop, 1), (None, Next::DelayLoop, 0)]
        );
        // url 0 fails twice (retry 1): retried after delay_before_retry, then down.
        assert_eq!(
            http(&mut c, &mut u, &[false, false]),
            vec![
                (None, Next::DelayBeforeRetry, 0),
                (Some(false), Next::LongerOfBoth, 0)
            ]
        );
        assert_eq!(u.failed, Some(0));
        // While down only the failed url; failures keep the longer delay.
        assert_eq!(
            http(&mut c, &mut u, &[false]),
            vec![(None, Next::LongerOfBoth, 0)]
        );
        // It passes: every url again from the first, up after the last.
        assert_eq!(
            http(&mut c, &mut u, &[true, true, true]),
            vec![
                (None, Next::DelayLoop, 0),
                (None, Next::DelayLoop, 1),
                (Some(true), Next::DelayLoop, 0)
            ]
        );
    }

    #[test]
    fn http_first_failure_is_decisive_and_fast_recovery_runs_now() {
        let mut c = CheckerState::new(3, false);
        let mut u = UrlCycle::new(1);
        let d = c.http_result(&mut u, false, false);
        assert_eq!(d.changed, Some(false), "retry_it starts at retry");
        // fast_recovery: down with a failed url waits; once the failed url
        // passes, the remaining pass runs at once.
        let mut c = CheckerState::new(1, true);
        let mut u = UrlCycle::new(2);
        assert_eq!(c.http_result(&mut u, true, true).next, Next::Now);
        let d = c.http_result(&mut u, true, true);
        assert_eq!(d.changed, Some(true));
        assert_eq!(d.next, Next::DelayLoop);
    }
}
