//! When each instance next has something due (its advert or down timer,
//! a delayed start, a GARP burst), ordered, so the runner finds the next
//! deadline and the instances due in O(log N) rather than by a walk over
//! every instance at every event. Part of [`super`].

use std::collections::BTreeSet;

/// Each node's next due time, by node index.
#[derive(Debug, Default)]
pub(super) struct Agenda {
    order: BTreeSet<(u64, usize)>,
    at: Vec<Option<u64>>,
}

impl Agenda {
    /// Forgets everything: `n` nodes, nothing due.
    pub(super) fn reset(&mut self, n: usize) {
        self.order.clear();
        self.at.clear();
        self.at.resize(n, None);
    }

    /// Node `k` is next due at `due`.
    pub(super) fn set(&mut self, k: usize, due: Option<u64>) {
        if k >= self.at.len() {
            self.at.resize(k + 1, None);
        }
        if self.at[k] == due {
            return;
        }
        if let Some(old) = self.at[k] {
            self.order.remove(&(old, k));
        }
        if let Some(d) = due {
            self.order.insert((d, k));
        }
        self.at[k] = due;
    }

    /// The earliest due time.
    pub(super) fn first(&self) -> Option<u64> {
        self.order.first().map(|e| e.0)
    }

    /// The nodes due at `now`, into `out`, by index.
    pub(super) fn due(&self, now: u64, out: &mut Vec<usize>) {
        out.clear();
        out.extend(self.order.iter().take_while(|e| e.0 <= now).map(|e| e.1));
        out.sort_unstable();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_earliest_comes_first_and_a_node_is_due_once() {
        let mut a = Agenda::default();
        a.reset(3);
        a.set(2, Some(50));
        a.set(0, Some(70));
        a.set(1, Some(60));
        assert_eq!(a.first(), Some(50));
        a.set(2, Some(80));
        assert_eq!(a.first(), Some(60));
        let mut due = Vec::new();
        a.due(70, &mut due);
        assert_eq!(due, [0, 1]);
        a.set(0, None);
        a.set(1, None);
        assert_eq!(a.first(), Some(80));
        a.reset(1);
        assert_eq!(a.first(), None);
    }
}
