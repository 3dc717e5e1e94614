//! BFD on the namespace lab (`tests/common/lab.rs`): ours against
//! keepalived 2.2.7 in both directions, and ours against ours. Sessions
//! come up over IPv4 and IPv6, and a neighbour that stops (keepalived sends
//! no AdminDown) or whose cable is cut is detected in `multiplier x
//! interval` after its last packet, as `../shared/reference/bfd.md` §8.3
//! measured keepalived doing.
//!
//! Needs root and keepalived 2.2.7: `--features root,reference`
//! (`scripts/test.sh` turns them on); there it never skips.

mod common;

use common::lab::{Impl, Lab};

/// Director `n`'s sessions to the other one: IPv4 and IPv6 at 100 ms x 3
/// (the IPv6 one with keepalived's default hop limit of 64 on both sides).
fn conf(n: usize) -> String {
    let peer = 3 - n;
    format!(
        "bfd_instance to_peer {{\n  neighbor_ip 192.0.2.{peer}\n  source_ip 192.0.2.{n}\n  \
         min_rx 100\n  min_tx 100\n  multiplier 3\n}}\n\
         bfd_instance to_peer6 {{\n  neighbor_ip 2001:db8::{peer}\n  source_ip 2001:db8::{n}\n  \
         min_rx 100\n  min_tx 100\n  multiplier 3\n}}\n"
    )
}

/// The `Expired after N ms` values in `log` for session `name`, in order.
fn expiries(log: &str, name: &str) -> Vec<u64> {
    let key = format!("({name}) Expired after ");
    log.lines()
        .filter_map(|l| {
            let rest = &l[l.find(&key)? + key.len()..];
            rest.split_whitespace().next()?.parse().ok()
        })
        .collect()
}

fn ups(log: &str, name: &str) -> usize {
    log.matches(&format!("({name}) Entering Up state")).count()
}

fn wait_log(lab: &Lab, n: usize, imp: Impl, secs: f64, pred: impl Fn(&str) -> bool) -> bool {
    lab.wait_for(secs, |_| pred(&lab.log(n, imp)))
}

#[test]
#[cfg_attr(
    not(all(feature = "root", feature = "reference")),
    ignore = "needs root (--features root,reference)"
)]
fn sessions_come_up_with_keepalived_and_ours_and_detect_a_silent_neighbour() {
    let pairings = [
        (Impl::Ours, Impl::Keepalived),
        (Impl::Keepalived, Impl::Ours),
        (Impl::Ours, Impl::Ours),
    ];
    let mut problems = Vec::new();
    for (a, b) in pairings {
        let name = format!("[{}{}]", a.letter(), b.letter());
        let mut lab = Lab::up("kbfd");
        lab.start(1, a, &conf(1));
        lab.start(2, b, &conf(2));
        // Up on both sides, both families, within a few idle intervals.
        for (n, imp) in [(1, a), (2, b)] {
            let up = wait_log(&lab, n, imp, 8.0, |l| {
                ups(l, "to_peer") == 1 && ups(l, "to_peer6") == 1
            });
            if !up {
                problems.push(format!("{name} d{n} never Up: {}", lab.log(n, imp)));
            }
        }
        if !problems.is_empty() {
            continue;
        }
        // Steady for 2 s: no flap.
        std::thread::sleep(std::time::Duration::from_secs(2));
        for (n, imp) in [(1, a), (2, b)] {
            let l = lab.log(n, imp);
            if !expiries(&l, "to_peer").is_empty() || l.contains("Entering Down state") {
                problems.push(format!("{name} d{n} flapped: {l}"));
            }
        }
        // Director 2 stops: no AdminDown from either daemon, so director 1
        // detects the silence 300 ms after the last packet.
        lab.signal(2, "TERM");
        let seen = wait_log(&lab, 1, a, 3.0, |l| {
            expiries(l, "to_peer").len() == 1 && expiries(l, "to_peer6").len() == 1
        });
        let l = lab.log(1, a);
        let e: Vec<u64> = ["to_peer", "to_peer6"]
            .iter()
            .flat_map(|s| expiries(&l, s))
            .collect();
        if !seen || !e.iter().all(|ms| (300..=320).contains(ms)) {
            problems.push(format!("{name} d1 after d2's stop: expiries {e:?}: {l}"));
        }
        if !l.contains(
            "(to_peer) Entering Down state (Local diagnostic - Control Detection Time Expired, \
             Remote diagnostic - No Diagnostic)",
        ) {
            problems.push(format!("{name} d1: no Down line: {l}"));
        }
        // Back: Up again; then its cable is cut.
        lab.reap();
        lab.start(2, b, &conf(2));
        let again = wait_log(&lab, 1, a, 8.0, |l| ups(l, "to_peer") == 2);
        if !again {
            problems.push(format!("{name} d1 not Up again: {}", lab.log(1, a)));
            continue;
        }
        lab.carrier(2, false);
        let seen = wait_log(&lab, 1, a, 3.0, |l| expiries(l, "to_peer").len() == 2);
        let e = expiries(&lab.log(1, a), "to_peer");
        if !seen || !(300..=320).contains(&e[e.len() - 1]) {
            problems.push(format!("{name} d1 after the cut: expiries {e:?}"));
        }
        lab.carrier(2, true);
        lab.stop_all();
        // Ours says why in its transition lines.
        for (n, imp) in [(1, a), (2, b)] {
            if imp == Impl::Ours && !lab.log(n, imp).contains(r#"transition {"bfd":"to_peer""#) {
                problems.push(format!("{name} d{n}: no transition line"));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
