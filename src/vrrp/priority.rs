//! An instance's effective priority and its fault state from what it
//! tracks, by keepalived 2.2.7's rules (`vrrp_track.c`,
//! `trackers/track_file.c`; `../shared/reference/vrrp.md` §4). Pure.

/// The state of one tracked object as the instance sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tracked {
    /// A script, interface, process or BFD session: up or down, with the
    /// weight that applies (the reference's, else the object's) and
    /// `reverse`.
    UpDown {
        /// The object is up (script succeeding, link up, ...).
        up: bool,
        /// Its weight: 0 = down means FAULT.
        weight: i32,
        /// `reverse`: up counts as down.
        reverse: bool,
    },
    /// A `track_file`: the number in the file, with its weight.
    File {
        /// The file's value (`strtol(content, 0)`).
        value: i64,
        /// Its weight (default 1).
        weight: i32,
        /// `reverse`.
        reverse: bool,
    },
}

/// The result: the priority to advertise and whether the instance is in FAULT.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Effective {
    /// 1..254 for a non-owner; 255 for an owner, always.
    pub priority: u8,
    /// Some tracked object puts the instance in FAULT.
    pub fault: bool,
    /// The base plus every contribution, unclamped (keepalived's
    /// `total_priority`).
    pub total: i64,
}

impl Tracked {
    /// Whether this object alone puts the instance in FAULT.
    pub fn faults(&self) -> bool {
        contribution(self).is_none()
    }

    /// What it adds to the base priority (0 when it faults).
    pub fn contribution(&self) -> i64 {
        contribution(self).unwrap_or(0)
    }
}

/// One object's contribution, or `None` when it means FAULT.
fn contribution(t: &Tracked) -> Option<i64> {
    match *t {
        Tracked::UpDown {
            up,
            weight,
            reverse,
        } => {
            let up = up != reverse;
            match weight {
                0 if !up => None,
                0 => Some(0),
                w if w > 0 => Some(if up { i64::from(w) } else { 0 }),
                w => Some(if up { 0 } else { i64::from(w) }),
            }
        }
        Tracked::File {
            value,
            weight,
            reverse,
        } => {
            if weight == 0 {
                return if value == 0 { Some(0) } else { None };
            }
            let v = value.saturating_mul(i64::from(weight)) * if reverse { -1 } else { 1 };
            let v = v.clamp(-254, 253);
            if v == -254 {
                None
            } else {
                Some(v)
            }
        }
    }
}

/// keepalived's effective priority: the base plus every contribution,
/// kept within 1..254; an address owner (255) never changes.
pub fn effective(base: u8, tracked: &[Tracked]) -> Effective {
    let mut fault = false;
    let mut total: i64 = i64::from(base);
    for t in tracked {
        match contribution(t) {
            None => fault = true,
            Some(c) => total += c,
        }
    }
    let priority = if base == 255 {
        255
    } else {
        total.clamp(1, 254) as u8
    };
    Effective {
        priority,
        fault,
        total,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn script(up: bool, weight: i32) -> Tracked {
        Tracked::UpDown {
            up,
            weight,
            reverse: false,
        }
    }

    #[test]
    fn weights_add_while_up_and_subtract_while_down() {
        // vrrp.md §4: 150 with a script of weight -60 failing advertises 90.
        assert_eq!(effective(150, &[script(false, -60)]).priority, 90);
        assert_eq!(effective(150, &[script(true, -60)]).priority, 150);
        assert_eq!(effective(100, &[script(true, 20)]).priority, 120);
        assert_eq!(effective(100, &[script(false, 20)]).priority, 100);
        // Never 255 nor 0 for a non-owner; an owner never moves.
        assert_eq!(effective(250, &[script(true, 50)]).priority, 254);
        assert_eq!(effective(10, &[script(false, -50)]).priority, 1);
        assert_eq!(effective(255, &[script(false, -50)]).priority, 255);
    }

    #[test]
    fn weight_zero_and_reverse_give_fault_as_keepalived_does() {
        assert!(effective(100, &[script(false, 0)]).fault);
        assert!(!effective(100, &[script(true, 0)]).fault);
        let rev = Tracked::UpDown {
            up: true,
            weight: 0,
            reverse: true,
        };
        assert!(
            effective(100, &[rev]).fault,
            "weight 0 reverse: FAULT while up"
        );
    }

    #[test]
    fn a_tracked_file_counts_its_value_times_its_weight() {
        let f = |value, weight, reverse| Tracked::File {
            value,
            weight,
            reverse,
        };
        assert_eq!(effective(100, &[f(5, 2, false)]).priority, 110);
        assert_eq!(effective(100, &[f(5, 2, true)]).priority, 90);
        assert!(effective(100, &[f(-254, 1, false)]).fault);
        assert!(
            effective(100, &[f(-999, 1, false)]).fault,
            "clamped to -254"
        );
        assert!(
            effective(100, &[f(3, 0, false)]).fault,
            "non-zero with weight 0"
        );
        assert!(!effective(100, &[f(0, 0, false)]).fault);
        assert_eq!(
            effective(100, &[f(999, 1, false)]).priority,
            254,
            "253 at most"
        );
    }
}
