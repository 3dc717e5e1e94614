//! The checker's beat: at high check rates, the timers of the scheduler
//! (when checks launch), of the half-open prober (when its replies are read
//! and its silences judged) and of the connect drivers (when connects time
//! out) fire on one grid (8 ms steps, shorter at the highest rates), so
//! that one wake-up of the checker thread serves them all.
//!
//! Under [`super::engine`], which picks the beat from its plan's check rate
//! and hands it to the prober; pure but for the grid's epoch, the first
//! instant asked for (any common instant would do). A wake-up costs the
//! checker 40 to 70 us on a virtual machine (its timer's interrupt, the
//! switch back in): at a thousand half-open probes a second it woke 380
//! times a second for 39.5 ms of CPU; on the beat, 110 times for 25. Each
//! launch, read and timeout is then up to a step late (8 ms at most, less
//! above 4,000 checks a second: [`PER_BEAT`]): nothing against
//! a `delay_loop` of seconds or a `connect_timeout`; below [`RATE`]
//! checks a second each timer fires at its own time, as
//! keepalived's (every check alone on its wake-up anyway).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::Duration;
use tokio::time::Instant;

/// The grid's longest step.
pub const PERIOD: Duration = Duration::from_millis(8);
/// Checks a second (one a `delay_loop` each) from which the timers keep
/// the beat: one check every 4 ms, two or more to a beat.
pub const RATE: f64 = 250.0;
/// Checks a beat is for: above 4,000 a second the step shortens (to 1 ms,
/// tokio's own, from 32,000). Hundreds of probes to a beat cost more each
/// than dozens (their records no longer in the cache): at 50,000 half-open
/// probes a second an 8 ms beat cost 5 to 8% more CPU a probe than none.
pub const PER_BEAT: f64 = 32.0;

/// A grid of timers, or none (each at its own time).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Beat {
    /// The step in nanoseconds; 0: no grid.
    step: u64,
}

impl Beat {
    /// No grid: every timer at its own time.
    pub const OFF: Beat = Beat { step: 0 };

    /// The beat for `rate` checks a second: [`PER_BEAT`] checks to a step,
    /// in whole milliseconds from 1 to [`PERIOD`]'s 8.
    pub fn for_rate(rate: f64) -> Beat {
        if rate < RATE {
            return Beat::OFF;
        }
        let longest = PERIOD.as_millis() as f64;
        let ms = (PER_BEAT * 1000.0 / rate).round().clamp(1.0, longest);
        Beat {
            step: ms as u64 * 1_000_000,
        }
    }

    /// The step; zero when off.
    pub fn step(self) -> Duration {
        Duration::from_nanos(self.step)
    }

    /// `at`, or the first step of the grid after it. The grid runs both
    /// ways from its epoch: paused-time tests run clocks of their own, some
    /// behind the epoch.
    pub fn at(self, at: Instant) -> Instant {
        if self.step == 0 {
            return at;
        }
        let epoch = *EPOCH.get_or_init(Instant::now);
        let ns = |d: Duration| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX / 2);
        match at.checked_duration_since(epoch) {
            Some(after) => epoch + Duration::from_nanos(ns(after).div_ceil(self.step) * self.step),
            None => epoch - Duration::from_nanos(ns(epoch - at) / self.step * self.step),
        }
    }
}

/// The grid's origin, common to every beat of the process: a prober
/// serves engines one after another (reloads), all on the same grid.
static EPOCH: OnceLock<Instant> = OnceLock::new();

/// A beat shared between an engine and the prober it drives, set anew at
/// each start of an engine.
#[derive(Debug, Default)]
pub struct SharedBeat(AtomicU64);

impl SharedBeat {
    /// The beat now.
    pub fn get(&self) -> Beat {
        Beat {
            step: self.0.load(Ordering::Relaxed),
        }
    }

    /// Sets the beat.
    pub fn set(&self, b: Beat) {
        self.0.store(b.step, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn off_below_the_rate_and_on_from_it() {
        assert_eq!(Beat::for_rate(RATE - 1.0), Beat::OFF);
        assert_eq!(Beat::for_rate(RATE).step(), PERIOD);
        assert_eq!(Beat::for_rate(4_000.0).step(), PERIOD);
        // Shorter as the rate grows, never below tokio's millisecond.
        assert_eq!(Beat::for_rate(8_000.0).step(), Duration::from_millis(4));
        assert_eq!(Beat::for_rate(50_000.0).step(), Duration::from_millis(1));
        let t = Instant::now() + Duration::from_nanos(123_457);
        assert_eq!(Beat::OFF.at(t), t);
    }

    #[test]
    fn instants_go_to_the_next_step_of_one_grid() {
        let b = Beat::for_rate(1000.0);
        let base = b.at(Instant::now() + Duration::from_millis(1));
        // A step of the grid stays where it is.
        assert_eq!(b.at(base), base);
        // Anything within a step after it goes to the next one, the same
        // for all: one wake-up.
        let next = base + PERIOD;
        for us in [1, 100, 4_000, 7_999] {
            assert_eq!(b.at(base + Duration::from_micros(us)), next);
        }
        assert_eq!(b.at(next + Duration::from_nanos(1)), next + PERIOD);
    }

    #[test]
    fn the_grid_runs_back_from_its_epoch_too() {
        let b = Beat::for_rate(1000.0);
        let epoch = *EPOCH.get_or_init(Instant::now);
        // The monotonic clock counts from boot: far more than 25 ms.
        let before = epoch
            .checked_sub(PERIOD * 3 + Duration::from_micros(1_234))
            .expect("an instant before the epoch");
        assert_eq!(b.at(before), epoch - PERIOD * 3);
        assert_eq!(b.at(epoch - PERIOD * 3), epoch - PERIOD * 3);
    }

    #[test]
    fn a_shared_beat_carries_the_engine_s_choice() {
        let s = SharedBeat::default();
        assert_eq!(s.get(), Beat::OFF);
        s.set(Beat::for_rate(5000.0));
        assert_eq!(s.get(), Beat::for_rate(5000.0));
        assert_ne!(s.get(), Beat::OFF);
    }
}
