//! The reconciler's tests: syncs, partial updates, drift and stop over the dry
//! run and a scripted kernel.

use super::*;
use crate::config::load_str;
use crate::health::Health;
use crate::ipvs::dryrun::DryRun;
use crate::lvs::desired;

fn table_of(conf: &str) -> Table {
    let cfg = load_str(conf).config;
    desired(&cfg, &Health::all_alive(&cfg))
}

const TWO: &str = "virtual_server 10.0.0.1 80 {\n protocol TCP\n lvs_sched rr\n \
    real_server 127.0.0.2 80 {\n weight 2\n }\n real_server 127.0.0.3 80 {\n }\n}\n";
const ONE_REWEIGHTED: &str = "virtual_server 10.0.0.1 80 {\n protocol TCP\n lvs_sched rr\n \
    real_server 127.0.0.2 80 {\n weight 4\n }\n}\n";

#[tokio::test]
async fn partial_updates_touch_only_their_services_and_end_where_a_full_one_does() {
    use crate::lvs::desired::{desired_for, service_sharing};
    use std::collections::BTreeSet;
    let conf = "virtual_server 10.0.0.1 80 {\n protocol TCP\n lvs_sched rr\n quorum 3\n \
        sorry_server 127.0.0.9 80\n real_server 127.0.0.2 80 {\n weight 2\n }\n \
        real_server 127.0.0.3 80 {\n }\n}\n\
        virtual_server 10.0.0.2 80 {\n protocol TCP\n lvs_sched rr\n \
        real_server 127.0.0.4 80 {\n inhibit_on_failure\n }\n}\n";
    let cfg = load_str(conf).config;
    let mut health = Health::all_alive(&cfg);
    let mut rec = Reconciler::new(DryRun::new());
    rec.start(desired(&cfg, &health), false, None)
        .await
        .unwrap();
    let sharing = service_sharing(&cfg);
    // The first server fails: quorum lost, sorry server in.
    health.set_rs_alive(&cfg, 0, 0, false);
    let r = rec
        .set_services(desired_for(&cfg, &health, &sharing[0]))
        .await;
    assert_eq!(r.sent, 3, "two dests out, the sorry server in");
    assert_eq!(rec.expected(), &desired(&cfg, &health));
    // The inhibited one of the other service fails: weight 0, one edit.
    health.set_rs_alive(&cfg, 1, 0, false);
    let r = rec
        .set_services(desired_for(&cfg, &health, &BTreeSet::from([1])))
        .await;
    assert_eq!(r.sent, 1);
    assert_eq!(rec.expected(), &desired(&cfg, &health));
    // And back.
    health.set_rs_alive(&cfg, 0, 0, true);
    rec.set_services(desired_for(&cfg, &health, &sharing[0]))
        .await;
    assert_eq!(rec.expected(), &desired(&cfg, &health));
    // A full set_desired afterwards has nothing left to do.
    assert_eq!(rec.set_desired(desired(&cfg, &health)).await.sent, 0);
    // Stopping removes everything: ownership was kept right.
    rec.stop(FlushOnStop::Off, false).await;
    assert!(rec.expected().services.is_empty());
}

#[tokio::test]
async fn start_adopts_and_keeps_foreign_entries() {
    let foreign = table_of(
        "virtual_server 10.9.9.9 80 {\n protocol TCP\n lvs_sched wlc\n real_server 127.0.0.9 80 {\n }\n}\n",
    );
    let mut kernel = foreign.clone();
    // Part of our table is already there (a restart over a live table).
    let ours = table_of(TWO);
    let (k, ts) = ours.services.iter().next().unwrap();
    let mut partial = ts.clone();
    partial.dests.pop_last();
    kernel.services.insert(*k, partial);

    let mut rec = Reconciler::new(DryRun::with_table(kernel));
    let r = rec.start(ours.clone(), false, None).await.unwrap();
    assert_eq!(r.sent, 1, "only the missing destination is added");
    let mut want = ours.clone();
    want.services.extend(foreign.services.clone());
    assert_eq!(rec.backend_mut().table(), &want);

    // A reload that drops a server and re-weights the other: two operations.
    let r = rec.set_desired(table_of(ONE_REWEIGHTED)).await;
    assert_eq!(r.sent, 2);
    let stop = rec.stop(FlushOnStop::Off, false).await;
    assert_eq!(stop.sent, 2, "one destination, one service");
    assert_eq!(rec.backend_mut().table(), &foreign);
}

#[tokio::test]
async fn lvs_flush_clears_foreign_entries_first() {
    let foreign = table_of(
        "virtual_server 10.9.9.9 80 {\n protocol TCP\n real_server 127.0.0.9 80 {\n }\n}\n",
    );
    let mut rec = Reconciler::new(DryRun::with_table(foreign));
    rec.start(table_of(TWO), true, None).await.unwrap();
    assert_eq!(rec.backend_mut().table(), &table_of(TWO));
}

#[tokio::test]
async fn drift_is_repaired() {
    let mut rec = Reconciler::new(DryRun::new());
    rec.start(table_of(TWO), false, None).await.unwrap();
    assert_eq!(rec.check_drift().await.unwrap().sent, 0);
    // Someone runs `ipvsadm -C`.
    rec.backend_mut().apply(&[Op::Flush]).await;
    let r = rec.check_drift().await.unwrap();
    assert_eq!(r.sent, 3);
    assert_eq!(rec.backend_mut().table(), &table_of(TWO));
}

#[tokio::test]
async fn a_drift_check_reads_the_table_whole_only_when_it_drifted() {
    let mut rec = Reconciler::new(test_kernel::Kernel::refusing(None));
    rec.start(table_of(TWO), false, None).await.unwrap();
    rec.backend_mut().dumps = 0;
    for _ in 0..3 {
        assert_eq!(rec.check_drift().await.unwrap().sent, 0);
    }
    assert_eq!(
        rec.backend_mut().dumps,
        0,
        "no drift: read service by service"
    );
    // Someone else's service is taken as it is, without a repair.
    let foreign = table_of(
        "virtual_server 10.9.9.9 81 {\n protocol TCP\n real_server 127.0.0.9 81 {\n }\n}\n",
    );
    let ops = crate::ipvs::diff(&Table::default(), &foreign, &Owned::all_of(&foreign));
    rec.backend_mut().apply(&ops).await;
    assert_eq!(rec.check_drift().await.unwrap().sent, 0);
    assert_eq!(rec.backend_mut().dumps, 0);
    assert_eq!(rec.expected().services.len(), 2);
    // One of ours deleted behind our back: read whole, repaired.
    let (k, ts) = table_of(TWO).services.into_iter().next().unwrap();
    let d = ts.dests.keys().next().unwrap();
    rec.backend_mut().apply(&[Op::DelDest(k, d)]).await;
    assert_eq!(rec.check_drift().await.unwrap().sent, 1);
    assert_eq!(rec.backend_mut().dumps, 1);
    let mut want = table_of(TWO);
    want.services.extend(foreign.services);
    assert_eq!(rec.backend_mut().dry.table(), &want);
    assert_eq!(rec.check_drift().await.unwrap().sent, 0);
}

#[tokio::test]
async fn a_drift_check_goes_a_budget_of_destinations_at_a_time() {
    let three = "virtual_server 10.0.0.1 80 {\n protocol TCP\n real_server 127.0.0.2 80 {\n }\n \
        real_server 127.0.0.3 80 {\n }\n}\n\
        virtual_server 10.0.0.2 80 {\n protocol TCP\n real_server 127.0.0.2 80 {\n }\n}\n\
        virtual_server 10.0.0.3 80 {\n protocol TCP\n real_server 127.0.0.2 80 {\n }\n}\n";
    let mut rec = Reconciler::new(test_kernel::Kernel::refusing(None));
    rec.start(table_of(three), false, None).await.unwrap();
    rec.backend_mut().dumps = 0;
    // No drift: one service a step at a budget of one destination, the
    // first service's two destinations in one step (a service is never
    // split), and the report at the last.
    let mut check = rec.begin_drift_check().await.unwrap();
    for step in 0..2 {
        let r = rec.continue_drift_check(&mut check, 1).await.unwrap();
        assert!(r.is_none(), "step {step}: {r:?}");
    }
    let r = rec.continue_drift_check(&mut check, 1).await.unwrap();
    assert_eq!(r.map(|r| r.sent), Some(0));
    assert_eq!(rec.backend_mut().dumps, 0);
    // The last service loses its destination while the first is read:
    // found at its own step, read whole, repaired.
    let mut check = rec.begin_drift_check().await.unwrap();
    assert!(rec
        .continue_drift_check(&mut check, 1)
        .await
        .unwrap()
        .is_none());
    let (k, ts) = table_of(three).services.into_iter().next_back().unwrap();
    let d = ts.dests.keys().next().unwrap();
    rec.backend_mut().apply(&[Op::DelDest(k, d)]).await;
    assert!(rec
        .continue_drift_check(&mut check, 1)
        .await
        .unwrap()
        .is_none());
    let r = rec.continue_drift_check(&mut check, 1).await.unwrap();
    assert_eq!(r.map(|r| r.sent), Some(1));
    assert_eq!(rec.backend_mut().dumps, 1);
    assert_eq!(rec.backend_mut().dry.table(), &table_of(three));
}

#[tokio::test]
async fn stop_modes() {
    for (mode, keep, sent, left) in [
        (FlushOnStop::Off, false, 3, 0),
        (FlushOnStop::Vs, false, 1, 0),
        (FlushOnStop::Full, false, 1, 0),
        (FlushOnStop::Off, true, 0, 1),
    ] {
        let mut rec = Reconciler::new(DryRun::new());
        rec.start(table_of(TWO), false, None).await.unwrap();
        let r = rec.stop(mode, keep).await;
        assert_eq!(
            (r.sent, rec.backend_mut().table().services.len()),
            (sent, left),
            "{mode:?} keep={keep}"
        );
    }
}

#[tokio::test]
async fn timeouts_are_restored_at_stop() {
    let mut rec = Reconciler::new(DryRun::new());
    let t = Timeouts {
        tcp: 1000,
        tcp_fin: 0,
        udp: 200,
    };
    rec.start(Table::default(), false, Some(t)).await.unwrap();
    let now = rec.backend_mut().timeouts().await.unwrap();
    assert_eq!(
        now,
        Timeouts {
            tcp: 1000,
            tcp_fin: 120,
            udp: 200
        }
    );
    rec.stop(FlushOnStop::Off, false).await;
    let after = rec.backend_mut().timeouts().await.unwrap();
    assert_eq!(
        after,
        Timeouts {
            tcp: 900,
            tcp_fin: 120,
            udp: 300
        }
    );
}
