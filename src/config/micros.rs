//! An optional timer in µs packed in 8 bytes, for the configuration's
//! records (model) kept per real server and per checker. It sits under
//! the model, which re-exports it; it depends on nothing in the crate.

use serde::Serialize;

/// An optional duration in µs in 8 bytes, where `Option<u64>` takes 16: a
/// real server's and a checker's timers (`delay_loop`, `connect_timeout`,
/// `delay_before_retry`, `warmup`), kept as long as the configuration runs,
/// for each of tens of thousands. Written as `Option<u64>` is (a number or
/// null). `u64::MAX` µs (half a million years) is not a timer keepalived
/// reads.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Micros(u64);

impl Micros {
    /// Unset.
    pub const NONE: Micros = Micros(u64::MAX);

    /// Set to `us`.
    pub fn from_us(us: u64) -> Micros {
        Micros(us.min(u64::MAX - 1))
    }

    /// The value, if set.
    pub fn get(self) -> Option<u64> {
        (self.0 != u64::MAX).then_some(self.0)
    }

    /// Whether unset.
    pub fn is_none(self) -> bool {
        self.0 == u64::MAX
    }

    /// The value, else `default`.
    pub fn unwrap_or(self, default: u64) -> u64 {
        self.get().unwrap_or(default)
    }

    /// The value; set to `us` first when unset.
    pub fn get_or_insert(&mut self, us: u64) -> u64 {
        if self.is_none() {
            *self = Micros::from_us(us);
        }
        self.0
    }
}

impl Default for Micros {
    fn default() -> Micros {
        Micros::NONE
    }
}

impl From<Option<u64>> for Micros {
    fn from(v: Option<u64>) -> Micros {
        v.map_or(Micros::NONE, Micros::from_us)
    }
}

impl std::fmt::Debug for Micros {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.get().fmt(f)
    }
}

impl Serialize for Micros {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.get().serialize(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_and_writes_as_an_optional_number() {
        assert_eq!(Micros::from(None).get(), None);
        assert_eq!(Micros::from(Some(3_000_000)).get(), Some(3_000_000));
        assert_eq!(serde_json::to_string(&Micros::NONE).unwrap(), "null");
        assert_eq!(serde_json::to_string(&Micros::from_us(5)).unwrap(), "5");
        // The one value that would read as unset is kept as set.
        assert_eq!(Micros::from_us(u64::MAX).get(), Some(u64::MAX - 1));
        let mut m = Micros::NONE;
        assert_eq!(m.get_or_insert(7), 7);
        assert_eq!(m.get_or_insert(9), 7);
        assert_eq!(m.unwrap_or(1), 7);
    }
}
