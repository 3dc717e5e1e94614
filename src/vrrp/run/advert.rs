//! The runner's receive path: a packet to the instance that runs its VRID
//! on the socket it came in on ([`crate::vrrp::dispatch`]), keepalived's
//! checks of it (AH, the packet, [`crate::vrrp::receive`]), then the state
//! machine; the refusals' log lines bounded. Part of [`super`].

use super::{Node, Received, Runner, World};
use crate::config::vrrp::Auth;
use crate::vrrp::ah::{self, AH_LEN};
use crate::vrrp::dispatch::{self, Rx};
use crate::vrrp::fsm::{Input, State};
use crate::vrrp::net::IPPROTO_AH;
use crate::vrrp::node::key8;
use crate::vrrp::packet::{Advert, AdvertError};
use crate::vrrp::receive::{self, Expect, Meta, Refusal};

impl Runner {
    /// A packet that came in on receive socket `rx`: to the instance that
    /// runs its VRID there (keepalived matches adverts to instances by VRID
    /// first), or counted and dropped.
    pub fn on_packet(&mut self, rx: Rx, now: u64, p: &Received<'_>, w: &mut impl World) {
        let Some(vrid) = dispatch::vrid_of(p.proto, p.payload) else {
            self.receipts.malformed += 1;
            return;
        };
        let nodes = &self.nodes;
        let Some(k) = self
            .dispatch
            .lookup(rx, vrid, p.from, |k| nodes[k].unicast_peers())
        else {
            self.receipts.foreign += 1;
            return;
        };
        self.receipts.dispatched += 1;
        let (before, transitions) = (self.nodes[k].visible(), self.transitions);
        self.advert(k, now, p, w);
        self.settle(k, before, transitions);
    }

    /// An advert for node `k`: keepalived's checks, then the state machine.
    fn advert(&mut self, k: usize, now: u64, rx: &Received<'_>, w: &mut impl World) {
        let n = &mut self.nodes[k];
        if n.fsm.state == State::Init || n.fsm.state == State::Fault {
            return;
        }
        if (rx.proto == IPPROTO_AH) != (n.proto() == IPPROTO_AH) {
            return;
        }
        let body: &[u8] = if rx.proto == IPPROTO_AH {
            &rx.payload[AH_LEN..]
        } else {
            rx.payload
        };
        if let Some(Auth::Ah(key)) = &n.cfg.auth {
            let unicast = !n.cfg.unicast_peers.is_empty();
            match ah::open(&n.cfg.name, &key8(key), rx.ip_header, rx.payload, unicast) {
                Ok(seq) if seq > n.ah_seq => n.ah_seq = seq,
                Ok(seq) => {
                    n.stats.auth_failure += 1;
                    let line = format!(
                        "({}) IPSEC-AH : sequence number {seq} already processed. Packet dropped. Local({})",
                        n.cfg.name, n.ah_seq
                    );
                    log_refusal(n, now, line, w);
                    return;
                }
                Err(line) => {
                    n.stats.auth_failure += 1;
                    log_refusal(n, now, line, w);
                    return;
                }
            }
        }
        let mut decoded = Advert::decode(body, rx.from, n.checksum_dst(rx.to));
        if matches!(decoded, Err(AdvertError::BadChecksum(3)))
            && !n.old_checksum
            && n.cfg.old_unicast_checksum.is_none()
            && rx.to.is_ipv4()
            && !rx.to.is_multicast()
        {
            // keepalived's automatic compatibility: a peer that sums over
            // the multicast group (keepalived before 2.0.x) is understood,
            // and answered the same way from now on.
            let old = Advert::decode(
                body,
                rx.from,
                std::net::IpAddr::from(crate::vrrp::node::GROUP4),
            );
            if old.is_ok() {
                n.old_checksum = true;
                w.log(format!(
                    "({}) Setting unicast VRRPv3 checksum to old version",
                    n.cfg.name
                ));
                decoded = old;
            }
        }
        let advert = match decoded {
            Ok(a) => a,
            Err(e) => {
                if matches!(
                    e,
                    AdvertError::TooShort { .. } | AdvertError::TooLong { .. }
                ) {
                    n.stats.packet_len_err += 1;
                }
                let line = format!("({}) {e}", n.cfg.name);
                log_refusal(n, now, line, w);
                return;
            }
        };
        let meta = Meta {
            from: rx.from,
            ttl: rx.ttl,
            multicast: rx.to.is_multicast(),
        };
        n.expect.skip_addr_check =
            n.cfg.skip_check_adv_addr && n.fsm.state == State::Backup && n.master == Some(rx.from);
        let mut checked = receive::check(&n.expect, &advert, &meta);
        let mut foreign = false;
        if let Err((Refusal::AddressList, line)) = &checked {
            // keepalived drops an advert whose addresses differ from ours,
            // and two directors configured otherwise then both hold them
            // (keepalived #1603). Ours follows such an advert only from a
            // sender it already trusts (a configured unicast peer; in
            // multicast, the master this backup follows) and only when
            // every other check holds (the list taken as theirs, so the
            // mode, unicast source and TTL range checks all stay), then
            // as any advert: priorities compared. Anyone else's is
            // refused as keepalived refuses it: a host on the LAN or a
            // second cluster on the same VRID moves nothing.
            let theirs = Expect {
                vips: advert.addrs.clone(),
                ..n.expect.clone()
            };
            let trusted = if n.cfg.unicast_peers.is_empty() {
                n.fsm.state == State::Backup && n.master == Some(rx.from)
            } else {
                n.unicast_peers().contains(&rx.from)
            };
            if trusted && receive::check(&theirs, &advert, &meta).is_ok() {
                n.stats.addr_list_err += 1;
                log_refusal(n, now, line.clone(), w);
                if n.mismatch.map(|m| m.0) != Some(rx.from) {
                    w.log(format!(
                        "({}) WARNING - {} advertises {} address(es) where we have {}: the directors' configurations differ. Its adverts are taken as a peer's (priorities compared) rather than discarded (keepalived #1603)",
                        n.cfg.name,
                        rx.from,
                        advert.addrs.len(),
                        n.expect.vips.len()
                    ));
                }
                n.mismatch = Some((rx.from, advert.addrs.len()));
                (checked, foreign) = (Ok(()), true);
            }
        }
        let n = &mut self.nodes[k];
        if let Err((why, line)) = checked {
            let s = &mut n.stats;
            match why {
                Refusal::Ttl => s.ip_ttl_err += 1,
                Refusal::Interval => s.advert_interval_err += 1,
                Refusal::Auth => s.auth_failure += 1,
                Refusal::AddressList => s.addr_list_err += 1,
                Refusal::Other => {}
            }
            log_refusal(n, now, line, w);
            return;
        }
        n.stats.advert_rcvd += 1;
        if !foreign && n.mismatch.is_some_and(|m| m.0 == rx.from) {
            w.log(format!(
                "({}) {} advertises our addresses again",
                n.cfg.name, rx.from
            ));
            n.mismatch = None;
        }
        if advert.priority == 0 {
            n.stats.pri_zero_rcvd += 1;
        }
        if n.fsm.state == State::Backup && advert.priority > 0 {
            n.master = Some(rx.from);
            n.last_master = Some(rx.from);
        }
        let input = Input::Advert {
            from: rx.from,
            priority: advert.priority,
            adver_int_us: u64::from(advert.adver_int_cs) * 10_000,
        };
        self.feed(k, now, input, w);
    }
}

/// At most this many refused adverts are logged a second per instance:
/// keepalived logs every one, and a flood of bad packets became a flood
/// of lines (`docs/compat.md`).
pub const REFUSALS_LOGGED: u32 = 10;

/// A refused advert's line, within [`REFUSALS_LOGGED`]; the count of
/// those held back is logged when the next second's first comes.
fn log_refusal(n: &mut Node, now: u64, line: String, w: &mut impl World) {
    let q = &mut n.refusals;
    if q.logged == 0 || now >= q.since + 1_000_000 {
        if q.held > 0 {
            w.log(format!(
                "({}) {} more refused adverts not logged",
                n.cfg.name, q.held
            ));
        }
        *q = crate::vrrp::node::Refusals {
            since: now,
            logged: 0,
            held: 0,
        };
    }
    if q.logged < REFUSALS_LOGGED {
        q.logged += 1;
        w.log(line);
    } else {
        q.held += 1;
    }
}
