//! The randomness a BFD session needs (discriminators, transmit jitter),
//! seeded from the kernel: keepalived 2.2.7 seeds `random()` with the
//! second it started, so two directors started in the same second pick
//! the same discriminators (`../shared/reference/bfd.md` §5.1).

use super::session::Random;

/// SplitMix64 over a seed read from `/dev/urandom` (the clock's
/// nanoseconds and the pid if that cannot be read).
#[derive(Debug, Clone)]
pub struct OsRandom {
    state: u64,
}

impl OsRandom {
    /// A generator seeded by the kernel.
    pub fn new() -> OsRandom {
        use std::io::Read;
        let mut b = [0u8; 8];
        let seeded = std::fs::File::open("/dev/urandom")
            .and_then(|mut f| f.read_exact(&mut b))
            .is_ok();
        let seed = if seeded {
            u64::from_ne_bytes(b)
        } else {
            let t = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos() as u64)
                .unwrap_or(0);
            t ^ (u64::from(std::process::id()) << 32)
        };
        OsRandom::with_seed(seed)
    }

    /// A generator from `seed` (tests).
    pub fn with_seed(seed: u64) -> OsRandom {
        OsRandom { state: seed }
    }

    /// A number below `n` (not 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }

    fn next(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

impl Default for OsRandom {
    fn default() -> Self {
        OsRandom::new()
    }
}

impl Random for OsRandom {
    fn discriminator(&mut self) -> u32 {
        loop {
            let d = self.next() as u32;
            if d != 0 {
                return d;
            }
        }
    }

    /// 10 to 25 % of `us`, as keepalived cuts every interval.
    fn jitter(&mut self, us: u64) -> u64 {
        let percent = 10 + self.next() % 16;
        us * percent / 100
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn discriminators_differ_between_generators_and_are_never_zero() {
        let (mut a, mut b) = (OsRandom::new(), OsRandom::new());
        let da: Vec<u32> = (0..100).map(|_| a.discriminator()).collect();
        let db: Vec<u32> = (0..100).map(|_| b.discriminator()).collect();
        assert!(da.iter().chain(&db).all(|d| *d != 0));
        assert_ne!(da, db, "two directors started at once pick alike");
        let mut sorted = da.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), 100);
    }

    #[test]
    fn jitter_cuts_ten_to_twenty_five_percent_across_the_range() {
        let mut r = OsRandom::with_seed(42);
        let cuts: Vec<u64> = (0..2_000).map(|_| r.jitter(100_000)).collect();
        assert!(
            cuts.iter().all(|c| (10_000..=25_000).contains(c)),
            "{cuts:?}"
        );
        assert_eq!(cuts.iter().min(), Some(&10_000));
        assert_eq!(cuts.iter().max(), Some(&25_000));
    }
}
