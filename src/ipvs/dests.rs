//! A service's destinations in one table ([`super::table::TableService`]):
//! kept in key order in one vector, as a B-tree map keyed by [`DestKey`]
//! would keep them, but the key read from the destination itself.
//!
//! A table holds tens of thousands of destinations, and a daemon two
//! tables (what the kernel is expected to hold, and with `--dry-run` the
//! "kernel" itself): a map entry was the key (20 bytes) beside a
//! destination holding it again (40), in nodes about 11/12 full at best
//! (some 61 bytes a destination); here 40. The diff sends a service's
//! operations in key order, so the inserts that build a service append.

use super::table::{Dest, DestKey};
use serde::ser::SerializeMap;
use serde::{Serialize, Serializer};

/// Destinations in key order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Dests(Vec<Dest>);

impl Dests {
    /// None.
    pub fn new() -> Dests {
        Dests(Vec::new())
    }

    fn find(&self, k: &DestKey) -> Result<usize, usize> {
        // Appends are the common case: the last one first.
        match self.0.last() {
            Some(last) if last.key() < *k => Err(self.0.len()),
            _ => self.0.binary_search_by(|d| d.key().cmp(k)),
        }
    }

    /// How many.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The destination at `k`.
    pub fn get(&self, k: &DestKey) -> Option<&Dest> {
        self.find(k).ok().map(|i| &self.0[i])
    }

    /// The destination at `k`, to change its settings (not its key).
    pub fn get_mut(&mut self, k: &DestKey) -> Option<&mut Dest> {
        self.find(k).ok().map(|i| &mut self.0[i])
    }

    /// Whether there is one at `k`.
    pub fn contains_key(&self, k: &DestKey) -> bool {
        self.find(k).is_ok()
    }

    /// Puts `d` at `k` (its own key), returning the one it replaced.
    pub fn insert(&mut self, k: DestKey, d: Dest) -> Option<Dest> {
        debug_assert_eq!(k, d.key());
        match self.find(&k) {
            Ok(i) => Some(std::mem::replace(&mut self.0[i], d)),
            Err(i) => {
                self.0.insert(i, d);
                None
            }
        }
    }

    /// Takes out the one at `k`.
    pub fn remove(&mut self, k: &DestKey) -> Option<Dest> {
        self.find(k).ok().map(|i| self.0.remove(i))
    }

    /// The one at `k`, put there from `f` if there was none.
    pub fn get_or_insert_with(&mut self, k: DestKey, f: impl FnOnce() -> Dest) -> &mut Dest {
        let i = match self.find(&k) {
            Ok(i) => i,
            Err(i) => {
                let d = f();
                debug_assert_eq!(k, d.key());
                self.0.insert(i, d);
                i
            }
        };
        &mut self.0[i]
    }

    /// Takes out the last.
    pub fn pop_last(&mut self) -> Option<Dest> {
        self.0.pop()
    }

    /// The keys, in order.
    pub fn keys(&self) -> impl DoubleEndedIterator<Item = DestKey> + ExactSizeIterator + '_ {
        self.0.iter().map(Dest::key)
    }

    /// The destinations, in key order.
    pub fn values(&self) -> std::slice::Iter<'_, Dest> {
        self.0.iter()
    }

    /// The destinations, in key order, to change their settings (not their
    /// keys).
    pub fn values_mut(&mut self) -> std::slice::IterMut<'_, Dest> {
        self.0.iter_mut()
    }

    /// Keys and destinations, in order.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = (DestKey, &Dest)> + '_ {
        self.0.iter().map(|d| (d.key(), d))
    }

    /// Keeps those `f` says.
    pub fn retain(&mut self, mut f: impl FnMut(&DestKey, &mut Dest) -> bool) {
        self.0.retain_mut(|d| f(&d.key(), d));
    }

    /// At exact capacity (a table built or changed much).
    pub fn shrink_to_fit(&mut self) {
        self.0.shrink_to_fit();
    }
}

/// Into key order, the last given of equal keys kept, as a map keeps it.
fn normalize(v: &mut Vec<Dest>) {
    if v.windows(2).all(|w| w[0].key() < w[1].key()) {
        return;
    }
    // A stable sort of the reversed order puts the last given of a key
    // first, which dedup keeps.
    v.reverse();
    v.sort_by_key(Dest::key);
    v.dedup_by_key(|d| d.key());
}

impl FromIterator<(DestKey, Dest)> for Dests {
    fn from_iter<I: IntoIterator<Item = (DestKey, Dest)>>(it: I) -> Dests {
        let mut v: Vec<Dest> = it.into_iter().map(|(_, d)| d).collect();
        normalize(&mut v);
        v.shrink_to_fit();
        Dests(v)
    }
}

impl Extend<(DestKey, Dest)> for Dests {
    /// One sort for the lot (a kernel's dump comes in its hash order: an
    /// insertion each would move the vector's tail each time).
    fn extend<I: IntoIterator<Item = (DestKey, Dest)>>(&mut self, it: I) {
        self.0.extend(it.into_iter().map(|(_, d)| d));
        normalize(&mut self.0);
    }
}

impl IntoIterator for Dests {
    type Item = (DestKey, Dest);
    type IntoIter = std::iter::Map<std::vec::IntoIter<Dest>, fn(Dest) -> (DestKey, Dest)>;
    fn into_iter(self) -> Self::IntoIter {
        self.0.into_iter().map(|d| (d.key(), d))
    }
}

impl<'a> IntoIterator for &'a Dests {
    type Item = (DestKey, &'a Dest);
    type IntoIter = std::iter::Map<std::slice::Iter<'a, Dest>, fn(&Dest) -> (DestKey, &Dest)>;
    fn into_iter(self) -> Self::IntoIter {
        self.0.iter().map(|d| (d.key(), d))
    }
}

impl std::ops::Index<&DestKey> for Dests {
    type Output = Dest;
    fn index(&self, k: &DestKey) -> &Dest {
        self.get(k).expect("a destination at this key")
    }
}

impl Serialize for Dests {
    /// As the map it stands for.
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(self.0.len()))?;
        for d in &self.0 {
            m.serialize_entry(&d.key(), d)?;
        }
        m.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ipvs::table::FwdMethod;
    use std::collections::BTreeMap;

    fn d(last: u8, port: u16, weight: u32) -> Dest {
        Dest::new(
            std::net::IpAddr::from([192, 0, 2, last]),
            port,
            FwdMethod::Masq,
            weight,
        )
    }

    #[test]
    fn behaves_as_the_map_it_replaces() {
        let mut ours = Dests::new();
        let mut map = BTreeMap::new();
        // Appends, inserts before, replacements, removals.
        let steps: [(u8, u16, u32, bool); 9] = [
            (5, 80, 1, true),
            (9, 80, 1, true),
            (1, 80, 1, true),
            (5, 81, 2, true),
            (5, 80, 3, true),
            (9, 80, 0, false),
            (7, 80, 4, true),
            (1, 80, 0, false),
            (2, 80, 0, false),
        ];
        for (last, port, w, add) in steps {
            let x = d(last, port, w);
            if add {
                assert_eq!(
                    ours.insert(x.key(), x.clone()),
                    map.insert(x.key(), x.clone())
                );
            } else {
                assert_eq!(ours.remove(&x.key()), map.remove(&x.key()));
            }
            assert!(ours.values().eq(map.values()));
            assert!(ours.keys().eq(map.keys().copied()));
        }
        assert_eq!(ours.get(&d(5, 80, 0).key()).unwrap().weight, 3);
        assert!(!ours.contains_key(&d(9, 80, 0).key()));
        // Built from pairs out of order, a repeated key's last one kept.
        let built: Dests = [d(7, 80, 1), d(3, 80, 1), d(7, 80, 2)]
            .into_iter()
            .map(|x| (x.key(), x))
            .collect();
        let map: BTreeMap<_, _> = [d(7, 80, 1), d(3, 80, 1), d(7, 80, 2)]
            .into_iter()
            .map(|x| (x.key(), x))
            .collect();
        assert!(built.values().eq(map.values()));
        let mut more = built.clone();
        let mut more_map = map.clone();
        let extra = [d(9, 80, 1), d(3, 80, 5), d(1, 80, 1), d(9, 80, 6)];
        more.extend(extra.iter().map(|x| (x.key(), x.clone())));
        more_map.extend(extra.iter().map(|x| (x.key(), x.clone())));
        assert!(more.values().eq(more_map.values()));
        assert_eq!(
            serde_json::to_string(
                &built
                    .iter()
                    .map(|(k, v)| (k.port, v.weight))
                    .collect::<Vec<_>>()
            )
            .unwrap(),
            "[[80,1],[80,2]]"
        );
    }
}
