//! keepalived 2.2.7's checks of a received advertisement against the
//! instance it is for (`vrrp.c:vrrp_check_packet`, after the VRID picked
//! the instance), in keepalived's order, each refusal with its log line.
//! Pure: the socket layer passes what the kernel told it (TTL, whether
//! the destination was multicast).

use super::packet::{Advert, AuthType};
use std::net::IpAddr;

/// What the instance expects of adverts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Expect {
    /// Instance name, for log lines.
    pub name: String,
    /// 2 or 3.
    pub version: u8,
    /// v2 interval in whole seconds × 100 (v3 is not checked).
    pub adver_int_cs: u16,
    /// The virtual addresses, as advertised.
    pub vips: Vec<IpAddr>,
    /// v2 authentication and its 8 bytes.
    pub auth: AuthType,
    /// The password, zero padded.
    pub auth_data: [u8; 8],
    /// Unicast peers with their `min_ttl`/`max_ttl` (empty: multicast).
    pub peers: Vec<(IpAddr, u8, u8)>,
    /// `check_unicast_src`: a unicast advert must come from a peer.
    pub check_unicast_src: bool,
    /// `skip_check_adv_addr` (BACKUP, same master as before).
    pub skip_addr_check: bool,
}

/// Where the advert came in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Meta {
    /// Its source.
    pub from: IpAddr,
    /// TTL / hop limit on arrival.
    pub ttl: u8,
    /// Sent to a multicast group.
    pub multicast: bool,
}

/// Which of keepalived's counters (`vrrp_stats`) a refusal counts in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// `ip_ttl_err`.
    Ttl,
    /// `advert_interval_err`.
    Interval,
    /// `auth_failure`.
    Auth,
    /// `addr_list_err`.
    AddressList,
    /// Counted nowhere (version, mode, source).
    Other,
}

/// Checks `a` for the instance; `Err` carries the counter it counts in and
/// keepalived's log line.
pub fn check(e: &Expect, a: &Advert, m: &Meta) -> Result<(), (Refusal, String)> {
    use Refusal::*;
    let n = &e.name;
    let unicast = !e.peers.is_empty();
    if !unicast && m.ttl != 255 {
        return Err((
            Ttl,
            format!("({n}) invalid TTL/HL. Received {} and expect 255", m.ttl),
        ));
    }
    if a.version != e.version {
        return Err((
            Other,
            format!(
                "({n}) wrong version. Received {} and expect {}",
                a.version, e.version
            ),
        ));
    }
    if e.version == 2 {
        if a.auth != e.auth {
            return Err((Auth, format!("({n}) received an invalid auth type")));
        }
        if e.auth == AuthType::Pass && a.auth_data != e.auth_data {
            return Err((Auth, format!("({n}) received an invalid passwd!")));
        }
        if a.adver_int_cs != e.adver_int_cs {
            return Err((
                Interval,
                format!(
                    "({n}) advertisement interval mismatch mine={} sec rcv'd={} sec",
                    e.adver_int_cs / 100,
                    a.adver_int_cs / 100
                ),
            ));
        }
    }
    if !e.skip_addr_check && a.addrs.len() != e.vips.len() {
        return Err((
            AddressList,
            format!(
                "({n}) received an unexpected ip number count {}, expected {}!",
                a.addrs.len(),
                e.vips.len()
            ),
        ));
    }
    if unicast == m.multicast {
        return Err((
            AddressList,
            if unicast {
                format!("({n}) Expected unicast packet but received multicast packet")
            } else {
                format!("({n}) Expected multicast packet but received unicast packet")
            },
        ));
    }
    if !e.skip_addr_check {
        if let Some(missing) = e.vips.iter().find(|v| !a.addrs.contains(v)) {
            return Err((
                AddressList,
                format!(
                "({n}) ip address associated with VRID {} not present in MASTER advert: {missing}",
                a.vrid
            ),
            ));
        }
    }
    // With the address checks: the sender must be a peer, its TTL within
    // the peer's min_ttl..max_ttl.
    if unicast && e.check_unicast_src && !e.skip_addr_check {
        let Some((_, min, max)) = e.peers.iter().find(|p| p.0 == m.from) else {
            return Err((
                Other,
                format!("({n}) unicast source address {} not a unicast peer", m.from),
            ));
        };
        if m.ttl < *min || m.ttl > *max {
            return Err((
                Ttl,
                format!("({n}) TTL/HL {} not in range {min} - {max}", m.ttl),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vip(last: u8) -> IpAddr {
        IpAddr::from([192, 0, 2, last])
    }

    fn expect() -> Expect {
        Expect {
            name: "VI_1".into(),
            version: 2,
            adver_int_cs: 100,
            vips: vec![vip(100)],
            auth: AuthType::Pass,
            auth_data: *b"secret\0\0",
            peers: Vec::new(),
            check_unicast_src: false,
            skip_addr_check: false,
        }
    }

    fn advert() -> Advert {
        Advert {
            version: 2,
            vrid: 51,
            priority: 100,
            adver_int_cs: 100,
            addrs: vec![vip(100)],
            auth: AuthType::Pass,
            auth_data: *b"secret\0\0",
        }
    }

    const MC: Meta = Meta {
        from: IpAddr::V4(std::net::Ipv4Addr::new(192, 0, 2, 1)),
        ttl: 255,
        multicast: true,
    };

    #[test]
    fn a_matching_advert_passes_and_each_mismatch_gives_keepalived_s_line() {
        let e = expect();
        assert_eq!(check(&e, &advert(), &MC), Ok(()));
        let ttl = Meta { ttl: 64, ..MC };
        assert_eq!(check(&e, &advert(), &ttl).unwrap_err().0, Refusal::Ttl);
        assert_eq!(
            check(&e, &advert(), &ttl).unwrap_err().1,
            "(VI_1) invalid TTL/HL. Received 64 and expect 255"
        );
        let mut a = advert();
        a.auth_data = *b"wrong\0\0\0";
        assert_eq!(
            check(&e, &a, &MC).unwrap_err().1,
            "(VI_1) received an invalid passwd!"
        );
        let mut a = advert();
        a.adver_int_cs = 200;
        assert_eq!(
            check(&e, &a, &MC).unwrap_err().1,
            "(VI_1) advertisement interval mismatch mine=1 sec rcv'd=2 sec"
        );
        let mut a = advert();
        a.addrs.push(vip(101));
        assert_eq!(
            check(&e, &a, &MC).unwrap_err().1,
            "(VI_1) received an unexpected ip number count 2, expected 1!"
        );
        let mut a = advert();
        a.addrs = vec![vip(99)];
        assert!(check(&e, &a, &MC)
            .unwrap_err()
            .1
            .contains("not present in MASTER advert: 192.0.2.100"));
        let uc = Meta {
            multicast: false,
            ..MC
        };
        assert_eq!(
            check(&e, &advert(), &uc).unwrap_err().1,
            "(VI_1) Expected multicast packet but received unicast packet"
        );
    }

    #[test]
    fn unicast_instances_skip_the_ttl_rule_and_may_check_the_source() {
        let mut e = expect();
        e.peers = vec![(vip(2), 10, 100)];
        e.check_unicast_src = true;
        let from_peer = Meta {
            from: vip(2),
            ttl: 64,
            multicast: false,
        };
        assert_eq!(check(&e, &advert(), &from_peer), Ok(()));
        let stranger = Meta {
            from: vip(7),
            ..from_peer
        };
        assert_eq!(
            check(&e, &advert(), &stranger).unwrap_err().1,
            "(VI_1) unicast source address 192.0.2.7 not a unicast peer"
        );
        let far = Meta {
            ttl: 5,
            ..from_peer
        };
        assert_eq!(
            check(&e, &advert(), &far).unwrap_err(),
            (
                Refusal::Ttl,
                "(VI_1) TTL/HL 5 not in range 10 - 100".to_string()
            )
        );
        // v3 adopts the master's interval: no mismatch check.
        let mut e3 = expect();
        e3.version = 3;
        e3.auth = AuthType::None;
        let mut a = advert();
        a.version = 3;
        a.auth = AuthType::None;
        a.adver_int_cs = 50;
        assert_eq!(check(&e3, &a, &MC), Ok(()));
    }
}
