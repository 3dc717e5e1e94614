//! Which session a received packet is for, and whether its TTL lets it in
//! (keepalived 2.2.7's `bfd_handle_packet`, `../shared/reference/bfd.md`
//! §5.3 steps 10–11); a session's timers from its `bfd_instance`. Pure.

use super::packet::Control;
use super::session::Params;
use crate::config::model::BfdInstance;
use std::collections::HashMap;
use std::net::IpAddr;

/// keepalived's TTL (IPv4) or hop limit (IPv6) when `ttl`/`hoplimit` is
/// not written: 255, and 64 over IPv6 (which FRR refuses: RFC 5881 §5
/// wants 255; the reference measured it).
pub fn default_ttl(ipv6: bool) -> u8 {
    if ipv6 {
        64
    } else {
        255
    }
}

/// Whether a packet received with `received` TTL passes the session's
/// check: `max_hops` 255 (or -1) disables it, else the TTL must be at
/// least `ttl - max_hops` (GTSM, RFC 5881 §5, widened for multihop).
pub fn ttl_ok(received: u8, ttl: u8, max_hops: i16) -> bool {
    if !(0..255).contains(&max_hops) {
        return true;
    }
    i16::from(received) + max_hops >= i16::from(ttl)
}

/// A `bfd_instance`'s timers.
pub fn params(b: &BfdInstance) -> Params {
    let us = |v: u64| u32::try_from(v).unwrap_or(u32::MAX);
    Params {
        min_tx: us(b.min_tx_us),
        min_rx: us(b.min_rx_us),
        idle_tx: us(b.idle_tx_us),
        mult: b.multiplier,
        passive: b.passive,
    }
}

/// The sessions as a received packet finds them.
#[derive(Debug, Default)]
pub struct Lookup {
    by_disc: HashMap<u32, usize>,
    /// (neighbour, our source if bound) per session.
    by_addr: Vec<(IpAddr, Option<IpAddr>, usize)>,
}

impl Lookup {
    /// Session `id` talks to `neighbor` from `source` (if bound).
    pub fn add(&mut self, id: usize, neighbor: IpAddr, source: Option<IpAddr>, disc: u32) {
        self.by_disc.insert(disc, id);
        self.by_addr.push((neighbor, source, id));
    }

    /// Session `id` took a new discriminator.
    pub fn rekey(&mut self, id: usize, old: u32, new: u32) {
        if self.by_disc.get(&old) == Some(&id) {
            self.by_disc.remove(&old);
        }
        self.by_disc.insert(new, id);
    }

    /// The session a packet from `src` to `dst` is for: by our
    /// discriminator when the sender knows it, else by the addresses (a
    /// session bound to a source only for packets to it).
    pub fn find(&self, c: &Control, src: IpAddr, dst: IpAddr) -> Option<usize> {
        if c.your_disc != 0 {
            return self.by_disc.get(&c.your_disc).copied();
        }
        self.by_addr
            .iter()
            .find(|(n, s, _)| *n == src && s.is_none_or(|s| s == dst))
            .map(|x| x.2)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bfd::packet::{Diag, State};

    #[test]
    fn the_ttl_check_is_keepalived_s() {
        // IPv4 default: 255 required.
        assert!(ttl_ok(255, 255, 0));
        assert!(!ttl_ok(254, 255, 0));
        // max_hops widens it; 255 and -1 turn it off.
        assert!(ttl_ok(253, 255, 2));
        assert!(!ttl_ok(252, 255, 2));
        assert!(ttl_ok(1, 255, 255));
        assert!(ttl_ok(1, 255, -1));
        // IPv6 default 64: FRR's 255 passes, a Linux default 64 passes.
        assert!(ttl_ok(255, default_ttl(true), 0));
        assert!(ttl_ok(64, default_ttl(true), 0));
        assert!(!ttl_ok(63, default_ttl(true), 0));
    }

    #[test]
    fn packets_find_their_session_by_discriminator_then_by_address() {
        let a: IpAddr = "192.0.2.2".parse().unwrap();
        let b: IpAddr = "192.0.2.3".parse().unwrap();
        let me: IpAddr = "192.0.2.1".parse().unwrap();
        let other: IpAddr = "192.0.2.9".parse().unwrap();
        let mut l = Lookup::default();
        l.add(0, a, Some(me), 10);
        l.add(1, b, None, 12);
        let pkt = |your| Control {
            diag: Diag::NONE,
            state: State::Down,
            poll: false,
            fin: false,
            cpi: false,
            demand: false,
            detect_mult: 3,
            my_disc: 99,
            your_disc: your,
            desired_min_tx: 1_000_000,
            required_min_rx: 100_000,
            required_min_echo_rx: 0,
        };
        assert_eq!(l.find(&pkt(0), a, me), Some(0));
        assert_eq!(l.find(&pkt(0), a, other), None, "bound to its source");
        assert_eq!(l.find(&pkt(0), b, other), Some(1));
        assert_eq!(
            l.find(&pkt(12), a, me),
            Some(1),
            "the discriminator decides"
        );
        assert_eq!(l.find(&pkt(13), a, me), None);
        l.rekey(1, 12, 14);
        assert_eq!(l.find(&pkt(12), b, me), None);
        assert_eq!(l.find(&pkt(14), b, me), Some(1));
    }
}
