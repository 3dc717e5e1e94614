//! A queue of timed items, earliest first: the checker engine's next runs
//! and the half-open prober's deadlines.
//!
//! Pure (times are passed in), under [`super::engine`] and
//! [`super::halfopen`]. Their items come nearly in time order: a check's
//! next run is its end plus its delay, a probe's deadline its start plus its
//! `connect_timeout`, and a configuration has few distinct delays. So items
//! are kept in a few first-in first-out lanes, each in time order, at O(1) a
//! push and a pop; an item earlier than the last of every lane (when every
//! lane is taken) goes to a binary heap. The earliest item is the least of
//! the lanes' fronts and the heap's top. A heap of every check cost the
//! scheduler a fifth of its own CPU at 20,000 checks a second (a sift of
//! some fifteen levels, each a cache miss, per push and per pop).

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

/// Times as nanoseconds from an epoch: 8 bytes where a tokio `Instant`
/// takes 16 (the engine's queue and the board keep one per check).
#[derive(Debug, Clone, Copy)]
pub struct Clock(tokio::time::Instant);

impl Clock {
    /// Counting from `epoch`.
    pub fn from(epoch: tokio::time::Instant) -> Clock {
        Clock(epoch)
    }

    /// `at` in nanoseconds from the epoch (0 before it; below `u64::MAX`,
    /// which callers may keep for "never").
    pub fn tick(self, at: tokio::time::Instant) -> u64 {
        let ns = at.saturating_duration_since(self.0).as_nanos();
        u64::try_from(ns).unwrap_or(u64::MAX).min(u64::MAX - 1)
    }

    /// The instant `tick` nanoseconds after the epoch.
    pub fn instant(self, tick: u64) -> tokio::time::Instant {
        self.0 + std::time::Duration::from_nanos(tick)
    }
}

/// Lanes at most; more out-of-order items go to the heap.
const LANES: usize = 8;

/// Items of type `T` due at times `K`, earliest first.
#[derive(Debug)]
pub struct Timeline<K, T> {
    lanes: Vec<VecDeque<(K, T)>>,
    heap: BinaryHeap<Reverse<(K, T)>>,
}

impl<K: Ord + Copy, T: Ord> Default for Timeline<K, T> {
    fn default() -> Self {
        Timeline {
            lanes: Vec::new(),
            heap: BinaryHeap::new(),
        }
    }
}

/// Where the earliest item is.
enum At {
    Lane(usize),
    Heap,
}

impl<K: Ord + Copy, T: Ord> Timeline<K, T> {
    /// An empty timeline.
    pub fn new() -> Self {
        Self::default()
    }

    /// A timeline of `items` in any order (sorted once, into one lane).
    pub fn from_unsorted(mut items: Vec<(K, T)>) -> Self {
        items.sort_unstable_by_key(|e| e.0);
        let mut t = Self::new();
        if !items.is_empty() {
            t.lanes.push(items.into());
        }
        t
    }

    /// How many items it holds.
    pub fn len(&self) -> usize {
        self.lanes.iter().map(VecDeque::len).sum::<usize>() + self.heap.len()
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.heap.is_empty() && self.lanes.iter().all(VecDeque::is_empty)
    }

    /// Adds `item` due at `at`: behind the lane whose last item is the
    /// latest not after `at` (the tightest fit keeps the lanes few), else
    /// in an empty or a new lane, else in the heap.
    pub fn push(&mut self, at: K, item: T) {
        let mut fit: Option<(usize, K)> = None;
        let mut empty = None;
        for (i, lane) in self.lanes.iter().enumerate() {
            match lane.back() {
                Some(&(last, _)) if last <= at => {
                    if fit.is_none_or(|(_, best)| last > best) {
                        fit = Some((i, last));
                    }
                }
                Some(_) => {}
                None => empty = empty.or(Some(i)),
            }
        }
        match (fit, empty) {
            (Some((i, _)), _) | (None, Some(i)) => self.lanes[i].push_back((at, item)),
            (None, None) if self.lanes.len() < LANES => {
                self.lanes.push(VecDeque::from([(at, item)]));
            }
            (None, None) => self.heap.push(Reverse((at, item))),
        }
    }

    fn earliest(&self) -> Option<(K, At)> {
        let mut best = self.heap.peek().map(|Reverse((at, _))| (*at, At::Heap));
        for (i, lane) in self.lanes.iter().enumerate() {
            if let Some(&(at, _)) = lane.front() {
                if best.as_ref().is_none_or(|(b, _)| at < *b) {
                    best = Some((at, At::Lane(i)));
                }
            }
        }
        best
    }

    /// When the earliest item is due.
    pub fn peek(&self) -> Option<K> {
        self.earliest().map(|(at, _)| at)
    }

    /// The earliest item and its time, taken out if it is due by `now`.
    pub fn pop_due(&mut self, now: K) -> Option<(K, T)> {
        match self.earliest()? {
            (at, _) if at > now => None,
            (_, At::Heap) => self.heap.pop().map(|Reverse(e)| e),
            (_, At::Lane(i)) => self.lanes[i].pop_front(),
        }
    }
}

impl<K: Ord + Copy, T: Ord> Timeline<K, T> {
    /// Takes out, wherever they are first in line, the items `stale` says
    /// are no longer wanted (however far off their time): a probe answered
    /// long before its deadline need not be held until then. Returns how
    /// many went.
    pub fn prune_front(&mut self, mut stale: impl FnMut(&T) -> bool) -> usize {
        let mut n = 0;
        for lane in &mut self.lanes {
            while lane.front().is_some_and(|(_, t)| stale(t)) {
                lane.pop_front();
                n += 1;
            }
        }
        while self.heap.peek().is_some_and(|Reverse((_, t))| stale(t)) {
            self.heap.pop();
            n += 1;
        }
        n
    }

    /// Takes out every item `stale` says is no longer wanted, wherever it
    /// is (O(n)): for when one item not yet stale, first in line, holds
    /// many stale ones behind it (one probe waiting for its timeout held
    /// every later answered probe's deadline, seconds of them).
    pub fn retain_wanted(&mut self, mut stale: impl FnMut(&T) -> bool) {
        for lane in &mut self.lanes {
            lane.retain(|(_, t)| !stale(t));
        }
        self.heap.retain(|Reverse((_, t))| !stale(t));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn drain(t: &mut Timeline<u64, u32>) -> Vec<(u64, u32)> {
        let mut out = Vec::new();
        while let Some(e) = t.pop_due(u64::MAX) {
            out.push(e);
        }
        out
    }

    #[test]
    fn items_come_out_in_time_order_whatever_order_they_went_in() {
        // Interleaved delays (in order per delay), then disorder enough to
        // take every lane and reach the heap.
        let mut t = Timeline::new();
        let mut want = Vec::new();
        let mut x: u64 = 7;
        for i in 0..2_000u32 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let at = if i % 3 == 0 {
                u64::from(i) * 10
            } else if i % 3 == 1 {
                u64::from(i) * 10 + 5_000
            } else {
                (x >> 33) % 30_000
            };
            t.push(at, i);
            want.push((at, i));
        }
        assert_eq!(t.len(), 2_000);
        assert!(!t.heap.is_empty(), "random times overflow the lanes");
        want.sort();
        let got = drain(&mut t);
        let times: Vec<u64> = got.iter().map(|e| e.0).collect();
        assert!(times.windows(2).all(|w| w[0] <= w[1]), "{times:?}");
        let mut sorted = got.clone();
        sorted.sort();
        assert_eq!(sorted, want);
        assert!(t.is_empty());
    }

    #[test]
    fn items_in_order_per_delay_stay_in_lanes() {
        let mut t = Timeline::new();
        for i in 0..100u32 {
            t.push(u64::from(i) * 2, i);
            t.push(u64::from(i) * 2 + 1_000, i + 1_000);
        }
        assert!(t.heap.is_empty());
        assert_eq!(t.lanes.len(), 2);
        assert_eq!(t.peek(), Some(0));
    }

    #[test]
    fn stale_items_first_in_line_go_at_once() {
        let mut t = Timeline::from_unsorted((0..10u32).map(|i| (u64::from(i), i)).collect());
        // 0..3 answered, 4 not, 5.. answered: only what is first in line
        // goes; 5.. wait behind 4 for their time.
        let answered = |i: &u32| *i != 4;
        assert_eq!(t.prune_front(answered), 4);
        assert_eq!(t.peek(), Some(4));
        assert_eq!(t.len(), 6);
        assert_eq!(t.pop_due(4), Some((4, 4)));
        assert_eq!(t.prune_front(answered), 5);
        assert!(t.is_empty());
    }

    #[test]
    fn stale_items_behind_a_wanted_one_go_when_retained() {
        let mut items: Vec<(u64, u32)> = (0..10u32).map(|i| (u64::from(i), i)).collect();
        // Out of order too: some go to the heap.
        // Later first: a new lane each, then the heap.
        items.extend((0..20u32).map(|i| (u64::from(100 - i), 100 + i)));
        let mut t = Timeline::new();
        for (at, i) in items {
            t.push(at, i);
        }
        assert!(!t.heap.is_empty());
        let stale = |i: &u32| *i != 4 && *i != 107;
        t.prune_front(stale);
        assert!(t.len() > 2, "4 holds 5..10 behind it");
        t.retain_wanted(stale);
        assert_eq!(t.len(), 2);
        assert_eq!(drain(&mut t), vec![(4, 4), (93, 107)]);
    }

    #[test]
    fn only_what_is_due_is_popped() {
        let mut t = Timeline::from_unsorted(vec![(30, 3), (10, 1), (20, 2)]);
        assert_eq!(t.pop_due(5), None);
        assert_eq!(t.pop_due(20), Some((10, 1)));
        assert_eq!(t.pop_due(20), Some((20, 2)));
        assert_eq!(t.pop_due(20), None);
        assert_eq!(t.peek(), Some(30));
        // An emptied lane takes an item earlier than the others' last.
        t.push(1, 9);
        assert_eq!(t.pop_due(100), Some((1, 9)));
        assert_eq!(t.pop_due(100), Some((30, 3)));
        assert_eq!(t.pop_due(100), None);
        assert_eq!(t.peek(), None);
    }
}
