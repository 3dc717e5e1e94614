//! Slow start and drain (extensions) against the kernel's IPVS, in the qemu
//! guest of `compat-tests/guest.sh`: the payload
//! `compat-tests/graceful-guest.sh` holds a connection through a virtual
//! server, fails its real server's check, closes the connection, passes
//! the check again, and samples the kernel's weight and active connections
//! for the real server throughout; then deletes the real server's entry
//! with ipvsadm beside a foreign service, for the drift check to repair.

use std::path::Path;
use std::process::Command;

/// One sample: phase, uptime, and (weight, active connections) or absent.
type Sample = (String, f64, Option<(u32, u32)>);

fn samples(out: &str) -> Vec<Sample> {
    out.lines()
        .filter_map(|l| l.strip_prefix("@@S "))
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            let at = f.get(1)?.parse().ok()?;
            let wa = match (f.get(2), f.get(3)) {
                (Some(w), Some(a)) => Some((w.parse().ok()?, a.parse().ok()?)),
                _ => None,
            };
            Some((f[0].to_string(), at, wa))
        })
        .collect()
}

/// Runs `payload` in the guest with our binary; what the guest printed.
fn guest(payload: &str, timeout_s: u32) -> String {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = Command::new(root.join("compat-tests/guest.sh"))
        .arg(env!("CARGO_BIN_EXE_keepalived"))
        .arg(root.join(payload))
        .env("GUEST_TIMEOUT", timeout_s.to_string())
        .output()
        .expect("run compat-tests/guest.sh");
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success(),
        "guest failed ({}):\n{text}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    text
}

#[test]
#[cfg_attr(
    not(feature = "guest"),
    ignore = "needs root, qemu and keepalived for the IPVS guest: cargo test --features guest"
)]
fn slow_start_and_drain_in_the_kernel() {
    let text = guest("compat-tests/graceful-guest.sh", 600);
    let s = samples(&text);
    let of = |phase: &str| -> Vec<&Sample> { s.iter().filter(|x| x.0 == phase).collect() };
    // Held: in at its weight with the connection counted.
    let held = of("held");
    assert!(
        matches!(held[..], [(_, _, Some((12, n)))] if *n >= 1),
        "{held:?}\n{text}"
    );
    // Failed with the connection open: kept at weight 0, the connection
    // still counted, for the whole 5 s sampled.
    let draining = of("draining");
    assert_eq!(draining.len(), 10, "{text}");
    assert!(
        draining
            .iter()
            .all(|x| matches!(x.2, Some((0, n)) if n >= 1)),
        "{draining:?}"
    );
    // Once the connection ended, out (long before drain_timeout).
    assert!(matches!(of("drained")[..], [(_, _, None)]), "{text}");
    // Back: the weights rise from below 12 to 12, never falling.
    let ramp: Vec<u32> = of("ramp")
        .iter()
        .filter_map(|x| x.2.map(|(w, _)| w))
        .collect();
    assert!(ramp.first().is_some_and(|&w| w < 12), "{ramp:?}");
    assert_eq!(ramp.last(), Some(&12), "{ramp:?}");
    assert!(ramp.windows(2).all(|w| w[0] <= w[1]), "{ramp:?}");
    let mut steps = ramp.clone();
    steps.dedup();
    assert!(steps.len() >= 3, "in steps: {ramp:?}");
    // Drift: the deleted entry is back at its weight, repaired once with
    // the ipvsadm command logged; the foreign service is still there.
    assert!(
        matches!(of("repaired")[..], [(_, _, Some((12, _)))]),
        "{text}"
    );
    let repairs: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("@@LOG") && l.contains("drifted"))
        .collect();
    assert!(
        matches!(repairs[..], [l] if l.contains("ipvsadm -a -t 192.0.2.1:80 -r 192.0.2.10:8080")),
        "{repairs:?}\n{text}"
    );
    assert!(text.contains("@@FOREIGN kept"), "{text}");
    println!("drain: {draining:?}\nslow start weights: {ramp:?}\nrepair: {repairs:?}");
}

/// A planned failover refuses nothing: in the guest, an LVS-DR pair (ours
/// or keepalived 2.2.7 on the master, keepalived on the backup), a client
/// fetching through the VIP in a loop, SIGTERM to the master. keepalived's
/// checker deletes the services while its VRRP side still removes the
/// VIPs, and a connection to the still-local VIP meets the director's own
/// TCP stack and is refused; ours hands the VIPs off first
/// (docs/compat.md). keepalived's figures are printed beside ours.
#[test]
#[cfg_attr(
    not(feature = "guest"),
    ignore = "needs root, qemu and keepalived for the IPVS guest: cargo test --features guest"
)]
fn a_planned_failover_refuses_no_connection() {
    let text = guest("compat-tests/failover-guest.sh", 900);
    assert!(!text.contains("@@FAIL"), "{text}");
    // "@@R IMPL ROUND ok N refused N reset N timeout N other N"
    let rounds: Vec<(String, [u32; 5])> = text
        .lines()
        .filter_map(|l| l.strip_prefix("@@R "))
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            let n = |i: usize| f.get(i)?.parse::<u32>().ok();
            Some((f[0].to_string(), [n(3)?, n(5)?, n(7)?, n(9)?, n(11)?]))
        })
        .collect();
    let ours: Vec<&[u32; 5]> = rounds
        .iter()
        .filter(|(i, _)| i == "ours")
        .map(|(_, n)| n)
        .collect();
    let theirs: Vec<&[u32; 5]> = rounds
        .iter()
        .filter(|(i, _)| i == "keepalived")
        .map(|(_, n)| n)
        .collect();
    assert_eq!((ours.len(), theirs.len()), (3, 3), "{text}");
    println!("[ok, refused, reset, timed out, other] per SIGTERM of the master");
    println!("keepalived: {theirs:?}\nours:       {ours:?}");
    for n in &ours {
        assert!(
            n[0] >= 50,
            "requests served around the stop: {ours:?}\n{text}"
        );
        assert_eq!(n[1], 0, "refused: {ours:?}\n{text}");
    }
}
