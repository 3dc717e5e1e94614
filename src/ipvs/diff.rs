//! Pure diff between two IPVS tables, and the kernel's semantics for applying
//! one operation to a table.
//!
//! The reconciler calls [`diff`] with the kernel's table and the desired one;
//! the dry-run backend and the property tests use [`apply`], which answers
//! with the errno the kernel would (`EEXIST`, `ENOENT`, `ESRCH`).

use super::table::{Dest, DestKey, Service, ServiceKey, Table, TableService};
use nix::errno::Errno;
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

/// One IPVS operation: one generic netlink request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Op {
    /// `IPVS_CMD_NEW_SERVICE`.
    AddService(Service),
    /// `IPVS_CMD_SET_SERVICE`.
    EditService(Service),
    /// `IPVS_CMD_DEL_SERVICE`.
    DelService(ServiceKey),
    /// `IPVS_CMD_NEW_DEST`.
    AddDest(ServiceKey, Dest),
    /// `IPVS_CMD_SET_DEST`.
    EditDest(ServiceKey, Dest),
    /// `IPVS_CMD_DEL_DEST`.
    DelDest(ServiceKey, DestKey),
    /// `IPVS_CMD_FLUSH`.
    Flush,
}

impl fmt::Display for Op {
    /// The operation as the ipvsadm command that would make it.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use super::table::{fmt_addr_port, save_dest, save_service, thresholds};
        match self {
            Op::AddService(s) => write!(f, "{}", save_service(s)),
            Op::EditService(s) => write!(f, "-E{}", &save_service(s)[2..]),
            Op::DelService(k) => write!(f, "-D {k}"),
            Op::AddDest(k, d) => write!(f, "{}{}", save_dest(k, d), thresholds(d)),
            Op::EditDest(k, d) => write!(f, "-e{}{}", &save_dest(k, d)[2..], thresholds(d)),
            Op::DelDest(k, d) => write!(f, "-d {k} -r {}", fmt_addr_port(&d.addr, d.port)),
            Op::Flush => write!(f, "-C"),
        }
    }
}

/// The entries a reconciler is responsible for: only these are deleted when
/// they are no longer desired. Anything else in the kernel belongs to
/// someone else and is left alone, as keepalived leaves it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Owned {
    /// Services.
    pub services: BTreeSet<ServiceKey>,
    /// Destinations, per service (the service's key once, not per
    /// destination: tens of thousands of them).
    dests: BTreeMap<ServiceKey, KeySet>,
}

/// A service's owned destinations' keys, in order: 20 bytes a key, where a
/// B-tree set's nodes took some 25.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct KeySet(Vec<DestKey>);

impl KeySet {
    fn contains(&self, d: &DestKey) -> bool {
        self.0.binary_search(d).is_ok()
    }

    fn insert(&mut self, d: DestKey) {
        if let Err(i) = self.0.binary_search(&d) {
            self.0.insert(i, d);
        }
    }

    fn remove(&mut self, d: &DestKey) {
        if let Ok(i) = self.0.binary_search(d) {
            self.0.remove(i);
        }
    }

    fn iter(&self) -> std::slice::Iter<'_, DestKey> {
        self.0.iter()
    }

    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    fn retain(&mut self, f: impl FnMut(&DestKey) -> bool) {
        self.0.retain(f);
    }

    /// Adds keys it does not hold (one sort for the lot).
    fn add(&mut self, new: Vec<DestKey>) {
        if new.is_empty() {
            return;
        }
        self.0.extend(new);
        self.0.sort_unstable();
        self.0.dedup();
    }
}

impl FromIterator<DestKey> for KeySet {
    fn from_iter<I: IntoIterator<Item = DestKey>>(it: I) -> KeySet {
        let mut v: Vec<DestKey> = it.into_iter().collect();
        v.sort_unstable();
        v.dedup();
        v.shrink_to_fit();
        KeySet(v)
    }
}

impl Owned {
    /// Everything in `table`.
    pub fn all_of(table: &Table) -> Owned {
        let mut o = Owned::default();
        o.extend(table);
        o
    }

    /// Adds everything in `table`.
    pub fn extend(&mut self, table: &Table) {
        for (k, ts) in &table.services {
            self.services.insert(*k);
            if ts.dests.is_empty() {
                continue;
            }
            match self.dests.entry(*k) {
                // Built at once: packed nodes (see `Table::compact`).
                std::collections::btree_map::Entry::Vacant(v) => {
                    v.insert(ts.dests.keys().collect());
                }
                std::collections::btree_map::Entry::Occupied(mut o) => {
                    // A reload owns again what it owned: one walk of both
                    // sorted sets finds the new keys, where an insertion
                    // each searched the tree (tens of thousands a reload).
                    let set = o.get_mut();
                    // The same keys (most services of a reload): nothing
                    // new, found by one comparison instead of the walk.
                    if set.0.len() == ts.dests.len() && set.iter().copied().eq(ts.dests.keys()) {
                        continue;
                    }
                    let mut new = Vec::new();
                    merge(set.iter(), ts.dests.keys(), |d| {
                        if let (None, Some(d)) = d {
                            new.push(d);
                        }
                    });
                    set.add(new);
                }
            }
        }
    }

    /// Keeps only what `keep` holds: a service, or a destination of one,
    /// found in either of `a` and `b` (what is still desired or still in
    /// the kernel). One walk of each sorted set beside the tables'.
    pub fn retain_in(&mut self, a: &Table, b: &Table) {
        self.services
            .retain(|k| a.services.contains_key(k) || b.services.contains_key(k));
        self.dests.retain(|k, set| {
            let (da, db) = (a.services.get(k), b.services.get(k));
            let mut ia = da.map(|t| t.dests.keys()).into_iter().flatten().peekable();
            let mut ib = db.map(|t| t.dests.keys()).into_iter().flatten().peekable();
            set.retain(|d| {
                let mut found = false;
                for it in [&mut ia, &mut ib] {
                    while it.next_if(|x| x < d).is_some() {}
                    found |= it.peek() == Some(d);
                }
                found
            });
            !set.is_empty()
        });
    }

    /// Whether destination `d` of service `k` is ours.
    pub fn owns_dest(&self, k: &ServiceKey, d: &DestKey) -> bool {
        self.dests.get(k).is_some_and(|s| s.contains(d))
    }

    /// Makes destination `d` of service `k` ours.
    pub fn insert_dest(&mut self, k: ServiceKey, d: DestKey) {
        self.dests.entry(k).or_default().insert(d);
    }

    /// Destination `d` of service `k` is no longer ours.
    pub fn remove_dest(&mut self, k: &ServiceKey, d: &DestKey) {
        if let Some(s) = self.dests.get_mut(k) {
            s.remove(d);
            if s.is_empty() {
                self.dests.remove(k);
            }
        }
    }

    /// Every destination we own, by service.
    pub fn dests(&self) -> impl Iterator<Item = (ServiceKey, DestKey)> + '_ {
        self.dests
            .iter()
            .flat_map(|(k, s)| s.iter().map(move |d| (*k, *d)))
    }

    /// The destinations of service `k` we own.
    pub fn dests_of(&self, k: &ServiceKey) -> impl Iterator<Item = DestKey> + '_ {
        self.dests
            .get(k)
            .into_iter()
            .flat_map(KeySet::iter)
            .copied()
    }
}

/// The operations that turn `current` into `desired` for the entries of
/// `desired` and the owned entries of `current`. Deletions of destinations
/// come first, then service changes, then destination additions, so that a
/// service exists before its destinations are added.
pub fn diff(current: &Table, desired: &Table, owned: &Owned) -> Vec<Op> {
    let mut ops = Ops::default();
    let (mut a, mut b) = (
        current.services.keys().peekable(),
        desired.services.keys().peekable(),
    );
    loop {
        let k = match (a.peek(), b.peek()) {
            (None, None) => break,
            (Some(x), None) => *x,
            (None, Some(y)) => *y,
            (Some(x), Some(y)) => (*x).min(*y),
        };
        a.next_if(|x| **x == *k);
        b.next_if(|y| **y == *k);
        ops.service(current, desired, owned, k);
    }
    ops.into_vec()
}

/// [`diff`] over the services `keys` alone (sorted, each once): the same
/// operations in the same order for them, at the cost of those services
/// rather than of the whole table (a health change, a reload's services).
pub fn diff_services(
    current: &Table,
    desired: &Table,
    owned: &Owned,
    keys: &[ServiceKey],
) -> Vec<Op> {
    debug_assert!(keys.windows(2).all(|w| w[0] < w[1]));
    let mut ops = Ops::default();
    for k in keys {
        ops.service(current, desired, owned, k);
    }
    ops.into_vec()
}

/// A diff's operations by kind, joined in the order the kernel needs.
#[derive(Default)]
struct Ops {
    dels: Vec<Op>,
    del_services: Vec<Op>,
    services: Vec<Op>,
    adds: Vec<Op>,
}

impl Ops {
    /// What service `k` needs, from `current` to `desired`.
    fn service(&mut self, current: &Table, desired: &Table, owned: &Owned, k: &ServiceKey) {
        let (cur, want) = (current.services.get(k), desired.services.get(k));
        match (cur, want) {
            (None, None) => {}
            (Some(cur), None) => {
                if owned.services.contains(k) {
                    self.del_services.push(Op::DelService(*k));
                } else {
                    for dk in cur.dests.keys() {
                        if owned.owns_dest(k, &dk) {
                            self.dels.push(Op::DelDest(*k, dk));
                        }
                    }
                }
            }
            (None, Some(want)) => {
                self.services.push(Op::AddService(want.service.clone()));
                self.adds
                    .extend(want.dests.values().map(|d| Op::AddDest(*k, d.clone())));
            }
            (Some(cur), Some(want)) => {
                if !want.service.same_settings(&cur.service) {
                    self.services.push(Op::EditService(want.service.clone()));
                }
                // Most services of a reload or a health change: the same
                // destinations with the same settings, found by one
                // comparison of two vectors rather than a walk pairing
                // every destination (a fifth of a reload's work in the
                // checker at 40,000 destinations).
                if cur.dests == want.dests {
                    return;
                }
                let (dels, adds) = (&mut self.dels, &mut self.adds);
                merge(cur.dests.iter(), want.dests.iter(), |pair| match pair {
                    (Some((dk, _)), None) if owned.owns_dest(k, &dk) => {
                        dels.push(Op::DelDest(*k, dk));
                    }
                    (None, Some((_, d))) => adds.push(Op::AddDest(*k, d.clone())),
                    (Some((_, c)), Some((_, d))) if !d.same_settings(c) => {
                        adds.push(Op::EditDest(*k, d.clone()))
                    }
                    _ => {}
                });
            }
        }
    }

    fn into_vec(self) -> Vec<Op> {
        let mut v = self.dels;
        v.reserve_exact(self.del_services.len() + self.services.len() + self.adds.len());
        v.extend(self.del_services);
        v.extend(self.services);
        v.extend(self.adds);
        v
    }
}

/// Walks two sequences sorted by the same key (a tree's keys, or its
/// entries) side by side, calling `f` once per key with what each holds of
/// it, in key order: a table's diff without a tree search per destination.
fn merge<A, B>(a: A, b: B, mut f: impl FnMut((Option<A::Item>, Option<B::Item>)))
where
    A: Iterator,
    B: Iterator,
    A::Item: Keyed,
    B::Item: Keyed,
{
    use std::cmp::Ordering;
    let (mut a, mut b) = (a.peekable(), b.peekable());
    loop {
        let order = match (a.peek(), b.peek()) {
            (None, None) => return,
            (Some(_), None) => Ordering::Less,
            (None, Some(_)) => Ordering::Greater,
            (Some(x), Some(y)) => x.key().cmp(y.key()),
        };
        f(match order {
            Ordering::Less => (a.next(), None),
            Ordering::Greater => (None, b.next()),
            Ordering::Equal => (a.next(), b.next()),
        });
    }
}

/// What [`merge`] orders by: a destination's key.
trait Keyed {
    fn key(&self) -> &DestKey;
}

impl Keyed for &DestKey {
    fn key(&self) -> &DestKey {
        self
    }
}

impl Keyed for DestKey {
    fn key(&self) -> &DestKey {
        self
    }
}

impl Keyed for (DestKey, &Dest) {
    fn key(&self) -> &DestKey {
        &self.0
    }
}

/// Errors the kernel answers for an operation that does not fit the table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// `EEXIST`: adding what is there.
    Exists,
    /// `ESRCH`: the service is not there.
    NoService,
    /// `ENOENT`: the destination is not there.
    NoDest,
}

impl Refusal {
    /// The errno the kernel uses.
    pub fn errno(self) -> i32 {
        match self {
            Refusal::Exists => Errno::EEXIST as i32,
            Refusal::NoService => Errno::ESRCH as i32,
            Refusal::NoDest => Errno::ENOENT as i32,
        }
    }
}

/// Applies one operation to `table` as the kernel would.
pub fn apply(table: &mut Table, op: &Op) -> Result<(), Refusal> {
    match op {
        Op::Flush => table.services.clear(),
        Op::AddService(s) => {
            if table.services.contains_key(&s.key) {
                return Err(Refusal::Exists);
            }
            table.services.insert(
                s.key,
                TableService {
                    service: s.clone(),
                    dests: super::Dests::new(),
                },
            );
        }
        Op::EditService(s) => {
            let ts = table.services.get_mut(&s.key).ok_or(Refusal::NoService)?;
            ts.service = s.clone();
        }
        Op::DelService(k) => {
            table.services.remove(k).ok_or(Refusal::NoService)?;
        }
        Op::AddDest(k, d) => {
            let ts = table.services.get_mut(k).ok_or(Refusal::NoService)?;
            if ts.dests.contains_key(&d.key()) {
                return Err(Refusal::Exists);
            }
            ts.dests.insert(d.key(), d.clone());
        }
        Op::EditDest(k, d) => {
            let ts = table.services.get_mut(k).ok_or(Refusal::NoService)?;
            let slot = ts.dests.get_mut(&d.key()).ok_or(Refusal::NoDest)?;
            *slot = d.clone();
        }
        Op::DelDest(k, dk) => {
            let ts = table.services.get_mut(k).ok_or(Refusal::NoService)?;
            ts.dests.remove(dk).ok_or(Refusal::NoDest)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ipvs::table::{FwdMethod, AF_INET, IPPROTO_TCP, IPPROTO_UDP, SVC_F_PERSISTENT};
    use proptest::prelude::*;
    use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

    fn key() -> impl Strategy<Value = ServiceKey> {
        prop_oneof![
            (prop::bool::ANY, 0u8..4, 79u16..82).prop_map(|(udp, a, port)| ServiceKey::Addr {
                protocol: if udp { IPPROTO_UDP } else { IPPROTO_TCP },
                addr: IpAddr::V4(Ipv4Addr::new(10, 0, 0, a)),
                port,
            }),
            (0u8..2).prop_map(|a| ServiceKey::Addr {
                protocol: IPPROTO_TCP,
                addr: IpAddr::V6(Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, u16::from(a))),
                port: 80,
            }),
            (1u32..3).prop_map(|mark| ServiceKey::Fwmark { af: AF_INET, mark }),
        ]
    }

    fn dest() -> impl Strategy<Value = Dest> {
        (
            0u8..5,
            79u16..81,
            prop_oneof![
                Just(FwdMethod::Masq),
                Just(FwdMethod::Droute),
                Just(FwdMethod::Tunnel)
            ],
            0u32..4,
            0u32..3,
        )
            .prop_map(|(a, port, fwd_method, weight, u_thresh)| Dest {
                u_thresh,
                ..Dest::new(
                    IpAddr::V4(Ipv4Addr::new(127, 0, 0, a)),
                    port,
                    fwd_method,
                    weight,
                )
            })
    }

    fn table() -> impl Strategy<Value = Table> {
        prop::collection::vec(
            (
                key(),
                prop_oneof![Just("rr"), Just("wlc"), Just("sh")],
                prop::bool::ANY,
                prop::collection::vec(dest(), 0..5),
            ),
            0..6,
        )
        .prop_map(|svcs| {
            let mut t = Table::default();
            for (k, sched, persistent, dests) in svcs {
                let ts = t.ensure_service(Service {
                    key: k,
                    sched_name: sched.into(),
                    flags: if persistent { SVC_F_PERSISTENT } else { 0 },
                    timeout: if persistent { 300 } else { 0 },
                    netmask: Service::full_netmask(k.af()),
                    pe_name: None,
                });
                for d in dests {
                    ts.dests.insert(d.key(), d);
                }
            }
            t
        })
    }

    fn run(current: &Table, ops: &[Op]) -> Table {
        let mut t = current.clone();
        for op in ops {
            apply(&mut t, op).unwrap_or_else(|e| panic!("{op} refused: {e:?}"));
        }
        t
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(500))]

        /// Applying diff(current, desired) to current gives desired when
        /// everything in current is ours, and no operation is refused.
        #[test]
        fn diff_applied_gives_desired(current in table(), desired in table()) {
            let ops = diff(&current, &desired, &Owned::all_of(&current));
            prop_assert_eq!(run(&current, &ops), desired);
        }

        /// An unchanged table needs no operation, whoever owns what.
        #[test]
        fn unchanged_table_gives_no_ops(t in table(), owned_all in prop::bool::ANY) {
            let owned = if owned_all { Owned::all_of(&t) } else { Owned::default() };
            prop_assert!(diff(&t, &t, &owned).is_empty());
        }

        /// Entries we do not own are never touched; desired ones all arrive.
        #[test]
        fn foreign_entries_survive(current in table(), desired in table()) {
            let ops = diff(&current, &desired, &Owned::default());
            let after = run(&current, &ops);
            for (k, ts) in &desired.services {
                let got = &after.services[k];
                prop_assert_eq!(&got.service, &ts.service);
                for (dk, d) in &ts.dests {
                    prop_assert_eq!(&got.dests[&dk], d);
                }
            }
            for (k, ts) in &current.services {
                let got = after.services.get(k);
                prop_assert!(got.is_some(), "foreign service {} deleted", k);
                for dk in ts.dests.keys() {
                    prop_assert!(got.is_some_and(|g| g.dests.contains_key(&dk)));
                }
            }
        }

        /// Owning a table more adds exactly its entries (a reload's walk
        /// of both sorted sets, not an insertion each).
        #[test]
        fn extend_owns_the_union(a in table(), b in table()) {
            let mut owned = Owned::all_of(&a);
            owned.extend(&b);
            let all = |t: &Table| -> BTreeSet<(ServiceKey, DestKey)> {
                t.services.iter().flat_map(|(k, ts)| ts.dests.keys().map(move |d| (*k, d))).collect()
            };
            let want: BTreeSet<_> = all(&a).union(&all(&b)).copied().collect();
            prop_assert_eq!(owned.dests().collect::<BTreeSet<_>>(), want);
            let svcs: BTreeSet<_> = a.services.keys().chain(b.services.keys()).copied().collect();
            prop_assert_eq!(&owned.services, &svcs);
        }

        /// What stays owned is what either table still holds, and nothing
        /// is left as an empty set.
        #[test]
        fn retain_in_keeps_what_either_holds(o in table(), a in table(), b in table()) {
            let mut owned = Owned::all_of(&o);
            let before: Vec<_> = owned.dests().collect();
            owned.retain_in(&a, &b);
            let holds = |t: &Table, k: &ServiceKey, d: &DestKey| {
                t.services.get(k).is_some_and(|ts| ts.dests.contains_key(d))
            };
            let want: BTreeSet<_> = before
                .into_iter()
                .filter(|(k, d)| holds(&a, k, d) || holds(&b, k, d))
                .collect();
            prop_assert_eq!(owned.dests().collect::<BTreeSet<_>>(), want);
            let svcs: BTreeSet<_> = o
                .services
                .keys()
                .filter(|k| a.services.contains_key(k) || b.services.contains_key(k))
                .copied()
                .collect();
            prop_assert_eq!(&owned.services, &svcs);
            prop_assert!(owned.dests.values().all(|s| !s.is_empty()));
        }

        /// A second diff after applying the first is empty (idempotence).
        #[test]
        fn diff_is_idempotent(current in table(), desired in table()) {
            let owned = Owned::all_of(&current);
            let after = run(&current, &diff(&current, &desired, &owned));
            prop_assert!(diff(&after, &desired, &owned).is_empty());
        }
    }

    #[test]
    fn one_weight_change_is_one_operation() {
        let k = ServiceKey::Addr {
            protocol: IPPROTO_TCP,
            addr: IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1)),
            port: 80,
        };
        let mut t = Table::default();
        let ts = t.ensure_service(Service {
            key: k,
            sched_name: "wlc".into(),
            flags: 0,
            timeout: 0,
            netmask: !0,
            pe_name: None,
        });
        for a in 1..=200u8 {
            let d = Dest::new(
                IpAddr::V4(Ipv4Addr::new(127, 0, 1, a)),
                80,
                FwdMethod::Masq,
                1,
            );
            ts.dests.insert(d.key(), d);
        }
        let mut want = t.clone();
        let d = want
            .services
            .get_mut(&k)
            .unwrap()
            .dests
            .values_mut()
            .nth(17)
            .unwrap();
        d.weight = 5;
        let expect = Op::EditDest(k, d.clone());
        assert_eq!(diff(&t, &want, &Owned::all_of(&t)), vec![expect]);
    }

    #[test]
    fn kernel_reports_of_localnode_and_hashed_are_not_changes() {
        let k = ServiceKey::Fwmark {
            af: AF_INET,
            mark: 1,
        };
        let svc = Service {
            key: k,
            sched_name: "rr".into(),
            flags: 0,
            timeout: 0,
            netmask: !0,
            pe_name: None,
        };
        let d = Dest::new(IpAddr::V4(Ipv4Addr::LOCALHOST), 0, FwdMethod::Droute, 1);
        let mut want = Table::default();
        want.ensure_service(svc.clone())
            .dests
            .insert(d.key(), d.clone());
        let mut kernel = Table::default();
        let mut ksvc = svc;
        ksvc.flags |= crate::ipvs::table::SVC_F_HASHED;
        ksvc.timeout = 0;
        let mut kd = d;
        kd.fwd_method = FwdMethod::LocalNode;
        kernel.ensure_service(ksvc).dests.insert(kd.key(), kd);
        assert!(diff(&kernel, &want, &Owned::all_of(&want)).is_empty());
    }
}
