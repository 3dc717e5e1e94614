//! The reconciler against a kernel that refuses: keepalived's tolerances
//! (already so, retried as another operation, reported once).

use super::*;
use crate::ipvs::{Dest, FwdMethod, Service, ServiceKey};
use std::net::{IpAddr, Ipv4Addr};

fn table(scheds: &[&str]) -> Table {
    let mut t = Table::default();
    for (i, s) in scheds.iter().enumerate() {
        let key = ServiceKey::Addr {
            protocol: 6,
            addr: IpAddr::V4(Ipv4Addr::new(10, 0, 0, i as u8 + 1)),
            port: 80,
        };
        let d = Dest::new(IpAddr::V4(Ipv4Addr::LOCALHOST), 80, FwdMethod::Masq, 1);
        t.ensure_service(Service {
            key,
            sched_name: s.to_string(),
            flags: 0,
            timeout: 0,
            netmask: !0,
            pe_name: None,
        })
        .dests
        .insert(d.key(), d);
    }
    t
}

#[tokio::test]
async fn a_refused_entry_is_reported_once_not_retried_as_drift() {
    let mut rec = Reconciler::new(test_kernel::Kernel::refusing(Some("twos")));
    let r = rec
        .start(table(&["wlc", "twos", "rr"]), false, None)
        .await
        .unwrap();
    assert!(!r.errors.is_empty(), "the refusal is reported");
    let mut want = table(&["wlc", "twos", "rr"]);
    let refused = *want.services.keys().nth(1).unwrap();
    want.services.remove(&refused);
    assert_eq!(rec.backend_mut().dry.table(), &want);
    // The next drift checks find nothing to do.
    assert_eq!(rec.check_drift().await.unwrap().sent, 0);
    assert_eq!(rec.check_drift().await.unwrap().sent, 0);
}

/// One table is kept: what the kernel took is no longer held apart as
/// desired; what it refused is, until it takes it, across health
/// changes of other services.
#[tokio::test]
async fn only_what_the_kernel_has_not_taken_is_kept_beside_the_expected_table() {
    let mut rec = Reconciler::new(test_kernel::Kernel::refusing(Some("twos")));
    let all = table(&["wlc", "twos", "rr"]);
    let keys: Vec<ServiceKey> = all.services.keys().copied().collect();
    rec.start(all.clone(), false, None).await.unwrap();
    assert_eq!(
        rec.pending.keys(),
        vec![keys[1]],
        "only the refused service"
    );
    // A health change of another service: sent alone, the refused one
    // still pending.
    let mut partial = all.only(&keys[2..]);
    for d in partial
        .services
        .values_mut()
        .flat_map(|s| s.dests.values_mut())
    {
        d.weight = 5;
    }
    let r = rec.set_services(partial).await;
    assert_eq!(r.sent, 1, "one EditDest");
    assert_eq!(rec.pending.keys(), vec![keys[1]]);
    // The kernel takes it now (the module loaded): the next full sync
    // adds it, and nothing is held apart any more.
    rec.backend_mut().refuse = None;
    let mut want = all.clone();
    for d in want.services.get_mut(&keys[2]).unwrap().dests.values_mut() {
        d.weight = 5;
    }
    let r = rec.set_desired(want.clone()).await;
    assert!(r.errors.is_empty());
    assert_eq!(r.sent, 2, "AddService and its AddDest: {r:?}");
    assert!(rec.pending.keys().is_empty());
    assert_eq!(rec.expected(), &want);
    assert_eq!(rec.backend_mut().dry.table(), &want);
    // A service no longer desired is deleted and forgotten.
    let fewer = want.only(&keys[..2]);
    assert_eq!(rec.set_desired(fewer.clone()).await.sent, 1);
    assert!(rec.pending.keys().is_empty());
    assert_eq!(rec.backend_mut().dry.table(), &fewer);
    assert_eq!(rec.set_desired(fewer).await.sent, 0);
}
