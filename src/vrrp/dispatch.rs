//! Which instance an arriving advert is for, decided at the first look
//! (keepalived 2.2.7's `vrrp_index_lookup()`: the VRID on the socket it
//! came in on; instances of one VRID in unicast mode told apart by their
//! peers). One socket serves every instance of a link, family, protocol
//! and mode, so most of what arrives is another instance's or another
//! router's: a packet for a VRID run nowhere here is counted and dropped
//! before any instance sees it. Pure; the runner ([`super::run`]) holds
//! the table and the world numbers the sockets.

use super::ah::AH_LEN;
use super::net::IPPROTO_AH;
use super::packet::IPPROTO_VRRP;
use serde::Serialize;
use std::collections::HashMap;
use std::net::IpAddr;

/// A receive socket's number, as the world gave it at attach time.
pub type Rx = usize;

/// What the receive path counted before any instance looked.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Receipts {
    /// Packets handed to an instance.
    pub dispatched: u64,
    /// Packets for a VRID that no instance runs on the socket they came in
    /// on (keepalived ignores them, logging only with `log_unknown_vrids`).
    pub foreign: u64,
    /// Packets too short to carry a VRID, or AH not wrapping VRRP.
    pub malformed: u64,
    /// Packets the kernel dropped on the sockets before they were read,
    /// their buffers full (`SO_RXQ_OVFL`).
    pub overflow: u64,
}

/// The VRID of the VRRP message in `payload` (what follows the IP
/// header) of IP protocol `proto`: behind AH's header when AH wraps it.
/// `None` when the packet cannot be VRRP.
pub fn vrid_of(proto: u8, payload: &[u8]) -> Option<u8> {
    let body = match proto {
        IPPROTO_VRRP => payload,
        IPPROTO_AH if payload.first() == Some(&IPPROTO_VRRP) => payload.get(AH_LEN..)?,
        _ => return None,
    };
    body.get(1).copied()
}

/// The instances by (socket, VRID): node indices of the runner, several
/// only where unicast instances share a VRID on one socket.
#[derive(Debug, Default)]
pub struct Table {
    by_vrid: HashMap<(Rx, u8), smallvec::SmallVec<[usize; 1]>>,
}

impl Table {
    /// Empties the table (the runner fills it again after a reload).
    pub fn clear(&mut self) {
        self.by_vrid.clear();
    }

    /// Node `k` runs `vrid` on socket `rx`.
    pub fn insert(&mut self, rx: Rx, vrid: u8, k: usize) {
        self.by_vrid.entry((rx, vrid)).or_default().push(k);
    }

    /// The node a packet from `from` for `vrid` on `rx` is for: the only
    /// one, or of several the first whose unicast peers include `from`
    /// (`peers_of` gives a node's), else the first of them.
    pub fn lookup<'a>(
        &self,
        rx: Rx,
        vrid: u8,
        from: IpAddr,
        mut peers_of: impl FnMut(usize) -> &'a [IpAddr],
    ) -> Option<usize> {
        match self.by_vrid.get(&(rx, vrid))?.as_slice() {
            [] => None,
            [k] => Some(*k),
            many => many
                .iter()
                .copied()
                .find(|&k| peers_of(k).contains(&from))
                .or(many.first().copied()),
        }
    }

    /// How many (socket, VRID) pairs are run here.
    pub fn len(&self) -> usize {
        self.by_vrid.len()
    }

    /// Whether no instance receives anything.
    pub fn is_empty(&self) -> bool {
        self.by_vrid.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_vrid_is_read_behind_ah_and_nothing_else_is_taken_for_vrrp() {
        assert_eq!(vrid_of(IPPROTO_VRRP, &[0x21, 51, 100]), Some(51));
        assert_eq!(vrid_of(IPPROTO_VRRP, &[0x21]), None);
        let mut ah = vec![IPPROTO_VRRP; AH_LEN];
        ah.extend_from_slice(&[0x21, 12]);
        assert_eq!(vrid_of(IPPROTO_AH, &ah), Some(12));
        ah[0] = 6;
        assert_eq!(vrid_of(IPPROTO_AH, &ah), None);
        assert_eq!(vrid_of(6, &[0x21, 51]), None);
    }

    #[test]
    fn unicast_instances_of_one_vrid_are_told_apart_by_their_peers() {
        let a: IpAddr = "192.0.2.1".parse().unwrap();
        let b: IpAddr = "192.0.2.2".parse().unwrap();
        let peers = [vec![a], vec![b]];
        let mut t = Table::default();
        t.insert(0, 7, 0);
        t.insert(0, 7, 1);
        t.insert(1, 7, 2);
        assert_eq!(t.lookup(0, 7, b, |k| &peers[k]), Some(1));
        assert_eq!(t.lookup(0, 7, a, |k| &peers[k]), Some(0));
        let c: IpAddr = "192.0.2.3".parse().unwrap();
        assert_eq!(t.lookup(0, 7, c, |k| &peers[k]), Some(0));
        assert_eq!(t.lookup(1, 7, c, |_| &[]), Some(2));
        assert_eq!(t.lookup(0, 8, a, |_| &[]), None);
        assert_eq!(t.lookup(2, 7, a, |_| &[]), None);
    }
}
