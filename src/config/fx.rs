//! The hash of maps and sets keyed by configuration: a load and a reload
//! key tens of thousands of real servers and checkers by what the file
//! says, which is the operator's own (no attacker chooses the keys), so a
//! fast multiply-rotate hash serves where SipHash cost a tenth of a reload.
//!
//! At the bottom of the pipeline (config and everything above use it).

use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};

/// rustc's "Fx" hash, with a final fold (see `finish`).
#[derive(Default, Clone, Copy)]
pub struct FxHasher(u64);

impl Hasher for FxHasher {
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            self.add(u64::from_le_bytes(c.try_into().expect("8 bytes")));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut b = [0u8; 8];
            b[..rest.len()].copy_from_slice(rest);
            self.add(u64::from_le_bytes(b) ^ ((rest.len() as u64) << 59));
        }
    }
    fn write_u8(&mut self, n: u8) {
        self.add(u64::from(n));
    }
    fn write_u16(&mut self, n: u16) {
        self.add(u64::from(n));
    }
    fn write_u32(&mut self, n: u32) {
        self.add(u64::from(n));
    }
    fn write_u64(&mut self, n: u64) {
        self.add(n);
    }
    fn write_usize(&mut self, n: usize) {
        self.add(n as u64);
    }
    fn finish(&self) -> u64 {
        // The multiply mixes each word into the high bits only, and a map's
        // bucket is read from the low ones: folded once more (murmur3's
        // finalizer), so that keys alike in their low bits (addresses of
        // one prefix, written first byte first) or differing only in their
        // last word's top bits (IPv6 suffixes) do not share a bucket run.
        let mut h = self.0;
        h ^= h >> 33;
        h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
        h ^ (h >> 33)
    }
}

impl FxHasher {
    #[inline]
    fn add(&mut self, w: u64) {
        self.0 = (self.0.rotate_left(5) ^ w).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
}

/// A map keyed by configuration (see [`FxHasher`]).
pub type FxMap<K, V> = HashMap<K, V, BuildHasherDefault<FxHasher>>;
/// A set of configuration keys (see [`FxHasher`]).
pub type FxSet<K> = HashSet<K, BuildHasherDefault<FxHasher>>;

#[cfg(test)]
mod tests {
    use super::*;
    use std::hash::BuildHasher;
    use std::sync::Arc;

    fn h(b: &[u8]) -> u64 {
        let mut s = BuildHasherDefault::<FxHasher>::default().build_hasher();
        s.write(b);
        s.finish()
    }

    #[test]
    fn tails_and_lengths_hash_apart_and_a_map_holds_every_key() {
        // A tail shorter than a word is padded with its length mixed in:
        // "ab" and "ab\0" must not collide.
        assert_ne!(h(b"ab"), h(b"ab\0"));
        assert_ne!(h(b"[192.0.2.1]:tcp:80"), h(b"[192.0.2.2]:tcp:80"));
        let mut m: FxMap<(Arc<str>, u16), usize> = FxMap::default();
        let vs: Arc<str> = "[192.0.2.1]:tcp:80".into();
        for p in 0..50_000u16 {
            m.insert((vs.clone(), p), usize::from(p));
        }
        assert_eq!(m.len(), 50_000);
        assert!((0..50_000u16).all(|p| m[&(vs.clone(), p)] == usize::from(p)));
    }

    #[test]
    fn addresses_alike_in_their_first_bytes_spread_over_the_low_bits() {
        // A map's bucket is the hash's low bits. The multiply leaves them
        // to the key's own low bits, which for an address written as bytes
        // are its first octets: 20,000 real servers in 127.40.0.0/16 (or a
        // director's 10.1.0.0/16) all fell in one run of buckets, and each
        // half-open probe's route look-up walked it (14% of the checker's
        // CPU at 20,000 probes a second).
        use std::collections::HashSet;
        let low =
            |ip: std::net::IpAddr| BuildHasherDefault::<FxHasher>::default().hash_one(ip) & 0x7fff;
        let v4: HashSet<u64> = (0..20_000u32)
            .map(|i| {
                low(std::net::Ipv4Addr::new(127, 40, (i / 250) as u8, (i % 250 + 1) as u8).into())
            })
            .collect();
        assert!(v4.len() > 10_000, "{} distinct buckets of 32,768", v4.len());
        let v6: HashSet<u64> = (0..20_000u16)
            .map(|i| {
                low(std::net::Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, i / 250, i % 250).into())
            })
            .collect();
        assert!(v6.len() > 10_000, "{} distinct buckets of 32,768", v6.len());
    }
}
