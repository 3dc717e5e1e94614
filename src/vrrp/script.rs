//! A `vrrp_script`'s result with keepalived 2.2.7's hysteresis
//! (`vrrp_scheduler.c:vrrp_script_child_thread`): a counter from 0 to
//! `rise + fall − 1`, OK from `rise` up; a success below `rise − 1` counts
//! up, the one that reaches it jumps to the top ("succeeded"); a failure
//! above `rise` counts down, the one that reaches it drops to 0
//! ("failed"). Pure: the runner feeds each run's end.

/// How one run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Exited with this status (0 = success).
    Exited(i32),
    /// Killed by this signal.
    Signaled(i32),
    /// Cut at the timeout.
    TimedOut,
}

/// One script's state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScriptState {
    /// The script's name.
    pub name: String,
    rise: u32,
    fall: u32,
    result: u32,
    last_status: Option<i32>,
    /// No run has ended yet.
    pub pending: bool,
}

impl ScriptState {
    /// keepalived's `result`: 0..rise+fall-1, OK from `rise` on.
    pub fn result(&self) -> u32 {
        self.result
    }

    /// A script as it starts: one success away from OK, or at 0 with
    /// `init_fail`.
    pub fn new(name: &str, rise: u32, fall: u32, init_fail: bool) -> ScriptState {
        let rise = rise.max(1);
        ScriptState {
            name: name.to_string(),
            rise,
            fall: fall.max(1),
            result: if init_fail { 0 } else { rise - 1 },
            last_status: None,
            pending: true,
        }
    }

    /// The script counts as up.
    pub fn up(&self) -> bool {
        self.result >= self.rise
    }

    /// Feeds one run's end; returns keepalived's log lines and whether the
    /// up/down state changed.
    pub fn record(&mut self, o: Outcome) -> (Vec<String>, bool) {
        let mut lines = Vec::new();
        let before = self.up();
        self.pending = false;
        if let Outcome::Exited(status) = o {
            if self.last_status != Some(status) {
                lines.push(format!("Script `{}` now returning {status}", self.name));
                self.last_status = Some(status);
            }
        }
        let top = self.rise + self.fall - 1;
        if o == Outcome::Exited(0) {
            if self.result < self.rise - 1 {
                self.result += 1;
            } else {
                if self.result < self.rise {
                    lines.push(format!("VRRP_Script({}) succeeded", self.name));
                }
                self.result = top;
            }
        } else if self.result > self.rise {
            self.result -= 1;
        } else {
            if self.result >= self.rise {
                let why = match o {
                    Outcome::Exited(s) => format!(" (exited with status {s})"),
                    Outcome::Signaled(s) => format!(" (due to signal {s})"),
                    Outcome::TimedOut => String::new(),
                };
                if o == Outcome::TimedOut {
                    lines.push(format!("VRRP_Script({}) timed_out", self.name));
                } else {
                    lines.push(format!("VRRP_Script({}) failed{why}", self.name));
                }
            }
            self.result = 0;
        }
        (lines, before != self.up())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rise_and_fall_count_consecutive_runs() {
        let mut s = ScriptState::new("chk", 2, 3, false);
        assert!(!s.up());
        let (l, changed) = s.record(Outcome::Exited(0));
        assert!(changed && s.up(), "one success away at start");
        assert_eq!(
            l,
            ["Script `chk` now returning 0", "VRRP_Script(chk) succeeded"]
        );
        assert!(!s.record(Outcome::Exited(1)).1);
        assert!(!s.record(Outcome::Exited(1)).1);
        let (l, changed) = s.record(Outcome::Exited(1));
        assert!(changed && !s.up(), "the third failure");
        assert_eq!(l, ["VRRP_Script(chk) failed (exited with status 1)"]);
        assert!(!s.record(Outcome::Exited(0)).1, "rise 2 from 0");
        assert!(s.record(Outcome::Exited(0)).1 && s.up());
    }

    #[test]
    fn init_fail_starts_at_the_bottom_and_timeouts_fail() {
        let mut s = ScriptState::new("chk", 1, 1, true);
        assert!(s.pending && !s.up());
        assert!(s.record(Outcome::Exited(0)).1);
        let (l, changed) = s.record(Outcome::TimedOut);
        assert!(changed);
        assert_eq!(l, ["VRRP_Script(chk) timed_out"]);
    }
}
