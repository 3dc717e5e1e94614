//! A MIB view as the subagent answers from it: the instances of the
//! registered subtrees, in OID order, and the AgentX elements of
//! procedure for Get, GetNext and GetBulk over them (RFC 2741 §7.2.3).
//! Pure: the view is built from the subsystems' published state by the
//! MIB modules ([`super::vrrp_mib`], …) for each request.

use super::agentx::{Oid, SearchRange, Value, VarBind};
use std::collections::BTreeMap;

/// The instances of a view, by OID.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Tree {
    values: BTreeMap<Oid, Value>,
    /// The objects (scalars and columns) instances were set under.
    objects: std::collections::BTreeSet<Oid>,
}

impl Tree {
    /// An empty view.
    pub fn new() -> Tree {
        Tree::default()
    }

    /// Sets instance `index` of object `prefix` to `value`.
    pub fn set(&mut self, prefix: &[u32], index: &[u32], value: Value) {
        if !self.objects.contains(prefix) {
            self.objects.insert(prefix.to_vec());
        }
        let mut oid = Vec::with_capacity(prefix.len() + index.len());
        oid.extend_from_slice(prefix);
        oid.extend_from_slice(index);
        self.values.insert(oid, value);
    }

    /// How many instances it has.
    pub fn len(&self) -> usize {
        self.values.len()
    }

    /// Whether it has none.
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// Every instance in OID order.
    pub fn iter(&self) -> impl Iterator<Item = (&Oid, &Value)> {
        self.values.iter()
    }

    /// Get (§7.2.3.1): the instance at `start`, or noSuchInstance when
    /// its object has instances here, noSuchObject when not.
    pub fn get(&self, r: &SearchRange) -> VarBind {
        if let Some(v) = self.values.get(&r.start) {
            return VarBind {
                name: r.start.clone(),
                value: v.clone(),
            };
        }
        let known = self.objects.iter().any(|o| r.start.starts_with(o));
        VarBind {
            name: r.start.clone(),
            value: if known {
                Value::NoSuchInstance
            } else {
                Value::NoSuchObject
            },
        }
    }

    /// GetNext (§7.2.3.2): the first instance after `start` (or at it when
    /// `include`) and before `end`, else endOfMibView at `start`.
    pub fn next(&self, r: &SearchRange) -> VarBind {
        use std::ops::Bound::{Excluded, Included, Unbounded};
        let lower = if r.include {
            Included(r.start.clone())
        } else {
            Excluded(r.start.clone())
        };
        let found = self
            .values
            .range((lower, Unbounded))
            .next()
            .filter(|(k, _)| r.end.is_empty() || **k < r.end);
        match found {
            Some((k, v)) => VarBind {
                name: k.clone(),
                value: v.clone(),
            },
            None => VarBind {
                name: r.start.clone(),
                value: Value::EndOfMibView,
            },
        }
    }

    /// GetBulk (§7.2.3.3): the first `non_repeaters` ranges once, then the
    /// others `max_repetitions` times each, every round going on from the
    /// last answer, until all answers of a round are endOfMibView or
    /// `limit` varbinds are made.
    pub fn bulk(
        &self,
        non_repeaters: usize,
        max_repetitions: usize,
        ranges: &[SearchRange],
        limit: usize,
    ) -> Vec<VarBind> {
        let n = non_repeaters.min(ranges.len());
        let mut out: Vec<VarBind> = ranges[..n].iter().map(|r| self.next(r)).collect();
        let mut cur: Vec<SearchRange> = ranges[n..].to_vec();
        for _ in 0..max_repetitions {
            if cur.is_empty() || out.len() >= limit {
                break;
            }
            let mut all_end = true;
            for r in &mut cur {
                let vb = self.next(r);
                if vb.value != Value::EndOfMibView {
                    all_end = false;
                    r.start = vb.name.clone();
                    r.include = false;
                }
                out.push(vb);
            }
            if all_end {
                break;
            }
        }
        out.truncate(limit.max(n));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(start: &[u32], include: bool, end: &[u32]) -> SearchRange {
        SearchRange {
            start: start.to_vec(),
            include,
            end: end.to_vec(),
        }
    }

    fn tree() -> Tree {
        let mut t = Tree::new();
        t.set(&[1, 1], &[0], Value::Integer(2));
        t.set(&[1, 3, 1, 2], &[2, 61], Value::Integer(3));
        t.set(&[1, 3, 1, 2], &[2, 62], Value::Integer(2));
        t.set(&[1, 3, 1, 3], &[2, 61], Value::Integer(150));
        t.set(&[1, 10], &[2, 61], Value::Integer(1));
        t
    }

    #[test]
    fn get_answers_an_instance_or_says_which_kind_is_missing() {
        let t = tree();
        assert_eq!(t.get(&r(&[1, 1, 0], false, &[])).value, Value::Integer(2));
        assert_eq!(
            t.get(&r(&[1, 3, 1, 2, 3, 63], false, &[])).value,
            Value::NoSuchInstance
        );
        assert_eq!(t.get(&r(&[1, 7, 0], false, &[])).value, Value::NoSuchObject);
    }

    #[test]
    fn next_is_in_oid_order_within_the_range() {
        let t = tree();
        // Numeric order: .2.62 after .2.61, and 1.10 after 1.3.
        assert_eq!(
            t.next(&r(&[1, 3, 1, 2, 2, 61], false, &[])).name,
            vec![1, 3, 1, 2, 2, 62]
        );
        assert_eq!(
            t.next(&r(&[1, 3, 1, 3], false, &[])).name,
            vec![1, 3, 1, 3, 2, 61]
        );
        assert_eq!(
            t.next(&r(&[1, 3, 1, 3, 2, 61], false, &[])).name,
            vec![1, 10, 2, 61]
        );
        assert_eq!(t.next(&r(&[1, 1, 0], true, &[])).name, vec![1, 1, 0]);
        let end = t.next(&r(&[1, 3, 1, 2, 2, 62], false, &[1, 3, 1, 3]));
        assert_eq!(end.value, Value::EndOfMibView);
        assert_eq!(end.name, vec![1, 3, 1, 2, 2, 62]);
        assert_eq!(
            t.next(&r(&[1, 10, 2, 61], false, &[])).value,
            Value::EndOfMibView
        );
    }

    #[test]
    fn bulk_repeats_from_each_answer_and_stops_at_the_end() {
        let t = tree();
        let got = t.bulk(1, 10, &[r(&[1], false, &[]), r(&[1, 3], false, &[])], 100);
        let names: Vec<Oid> = got.iter().map(|v| v.name.clone()).collect();
        assert_eq!(
            names,
            vec![
                vec![1, 1, 0],
                vec![1, 3, 1, 2, 2, 61],
                vec![1, 3, 1, 2, 2, 62],
                vec![1, 3, 1, 3, 2, 61],
                vec![1, 10, 2, 61],
                vec![1, 10, 2, 61],
            ]
        );
        assert_eq!(got.last().unwrap().value, Value::EndOfMibView);
        assert_eq!(t.bulk(0, 10, &[r(&[1], false, &[])], 2).len(), 2);
    }
}
