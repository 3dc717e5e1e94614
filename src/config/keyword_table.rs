//! A block's keyword table with its index by name: the block parser
//! dispatches every line of a configuration through one.
//!
//! Part of the config pipeline beside [`super::keywords`], which fills the
//! tables.

use super::fx::FxMap;
use super::keywords::Kw;

/// A block's keywords in keepalived's order, with an index by name: every
/// line of a configuration is dispatched, tens of thousands of them to
/// tables of dozens of keywords.
pub struct Table {
    kws: Vec<Kw>,
    index: FxMap<&'static str, u32>,
    /// The keyword found last: configurations repeat one (`real_server`
    /// after `real_server`, `weight` in each), and a comparison is
    /// cheaper than a hash.
    last: std::cell::Cell<u32>,
}

impl From<Vec<Kw>> for Table {
    fn from(kws: Vec<Kw>) -> Table {
        let mut index = FxMap::default();
        for (i, k) in kws.iter().enumerate() {
            // The first of a name wins, as a search in order finds it.
            index.entry(k.name).or_insert(i as u32);
        }
        Table {
            kws,
            index,
            last: std::cell::Cell::new(0),
        }
    }
}

impl std::ops::Deref for Table {
    type Target = [Kw];
    fn deref(&self) -> &[Kw] {
        &self.kws
    }
}

impl Table {
    /// The keyword named `name`.
    pub fn find(&self, name: &str) -> Option<&Kw> {
        if let Some(k) = self.kws.get(self.last.get() as usize) {
            // The index holds the first of a name; the last found is one.
            if k.name == name {
                return Some(k);
            }
        }
        let i = *self.index.get(name)?;
        self.last.set(i);
        Some(&self.kws[i as usize])
    }
}
