//! The random part of a check's first run (`warmup`): spread, not quality.
//!
//! Pure; the daemon seeds it from the clock, tests with a fixed seed.

use std::time::Duration;

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
