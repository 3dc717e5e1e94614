//! `auth_type AH`: the IPsec Authentication Header keepalived 2.2.7 puts
//! between the IPv4 header and a VRRPv2 advert (`vrrp.c:vrrp_build_ipsecah`,
//! `vrrp_update_pkt`, `vrrp_in_chk_ipsecah`). Not real IPsec: no SA, the
//! SPI is the sender's address, the ICV is HMAC-MD5 truncated to 96 bits,
//! keyed by the 8 `auth_pass` bytes, over the IP header (TOS, fragment
//! offset and checksum zeroed; the TTL too when unicast), the AH with a
//! zero ICV, and the advert. The sequence number counts adverts from 1; a
//! BACKUP drops one that does not go forward. Pure.

use super::packet::IPPROTO_VRRP;
use hmac::{Hmac, KeyInit, Mac};
use md5::Md5;

/// Length of the AH (payload length field 4: (4 + 2) × 4 bytes).
pub const AH_LEN: usize = 24;
/// The ICV is 96 bits.
const ICV_LEN: usize = 12;

type HmacMd5 = Hmac<Md5>;

fn icv(key: &[u8; 8], ip: &[u8], ah: &[u8], vrrp: &[u8], unicast: bool) -> [u8; ICV_LEN] {
    let mut h = ip.to_vec();
    h[1] = 0; // TOS
    h[6] = 0; // flags, fragment offset
    h[7] = 0;
    h[10] = 0; // checksum
    h[11] = 0;
    if unicast {
        h[8] = 0; // TTL
    }
    let mut a = ah.to_vec();
    a[12..AH_LEN].fill(0);
    let mut mac = <HmacMd5 as KeyInit>::new_from_slice(key).expect("HMAC takes any key length");
    mac.update(&h);
    mac.update(&a);
    mac.update(vrrp);
    let out = mac.finalize().into_bytes();
    let mut r = [0u8; ICV_LEN];
    r.copy_from_slice(&out[..ICV_LEN]);
    r
}

/// The AH for `vrrp` behind IPv4 header `ip` (its length field already
/// counting the AH, checksum zero), with sequence number `seq`.
pub fn seal(key: &[u8; 8], ip: &[u8], seq: u32, vrrp: &[u8], unicast: bool) -> [u8; AH_LEN] {
    let mut ah = [0u8; AH_LEN];
    ah[0] = IPPROTO_VRRP;
    ah[1] = 4;
    ah[4..8].copy_from_slice(&ip[12..16]);
    ah[8..12].copy_from_slice(&seq.to_be_bytes());
    let v = icv(key, ip, &ah, vrrp, unicast);
    ah[12..].copy_from_slice(&v);
    ah
}

/// Checks a received AH (`payload` = AH + advert) against IPv4 header
/// `ip`; returns the sequence number, or keepalived's log line.
pub fn open(
    name: &str,
    key: &[u8; 8],
    ip: &[u8],
    payload: &[u8],
    unicast: bool,
) -> Result<u32, String> {
    if payload.len() < AH_LEN || ip.len() < 20 {
        return Err(format!("({name}) ip/vrrp header too short"));
    }
    let (ah, vrrp) = payload.split_at(AH_LEN);
    if ah[0] != IPPROTO_VRRP {
        return Err(format!("({name}) AH for another protocol"));
    }
    if icv(key, ip, ah, vrrp, unicast) != ah[12..AH_LEN] {
        return Err(format!(
            "({name}) IPSEC-AH : invalid IPSEC HMAC-MD5 value. Due to fields mutation or bad password !"
        ));
    }
    if ah[4..8] != ip[12..16] {
        let spi = u32::from_be_bytes([ah[4], ah[5], ah[6], ah[7]]);
        let src = u32::from_be_bytes([ip[12], ip[13], ip[14], ip[15]]);
        return Err(format!(
            "IPSEC AH : invalid IPSEC SPI value. {src} and expect {spi}"
        ));
    }
    Ok(u32::from_be_bytes([ah[8], ah[9], ah[10], ah[11]]))
}

#[cfg(test)]
mod tests {
    use super::super::packet::ipv4_header;
    use super::*;
    use std::net::Ipv4Addr;

    #[test]
    fn a_sealed_advert_opens_and_any_change_is_refused() {
        let key = *b"secret1\0";
        let vrrp = [
            0x21u8, 12, 202, 1, 2, 1, 0x50, 0x6e, 192, 0, 2, 130, 0, 0, 0, 0, 0, 0, 0, 0,
        ];
        let mut ip = ipv4_header(
            Ipv4Addr::new(192, 0, 2, 1),
            Ipv4Addr::new(224, 0, 0, 18),
            AH_LEN + vrrp.len(),
            255,
            51,
        );
        ip[4..6].copy_from_slice(&1u16.to_be_bytes());
        ip[10] = 0;
        ip[11] = 0;
        let ah = seal(&key, &ip, 1, &vrrp, false);
        assert_eq!(&ah[..12], &[112, 4, 0, 0, 192, 0, 2, 1, 0, 0, 0, 1]);
        let mut payload = ah.to_vec();
        payload.extend_from_slice(&vrrp);
        // The kernel fills the checksum and a router may change the TOS:
        // neither is covered.
        let mut got = ip;
        got[10] = 0x18;
        got[1] = 0;
        assert_eq!(open("VI_1", &key, &got, &payload, false), Ok(1));
        let mut bad = payload.clone();
        bad[24 + 2] = 100;
        assert!(open("VI_1", &key, &got, &bad, false)
            .unwrap_err()
            .contains("invalid IPSEC HMAC-MD5 value"));
        assert!(open("VI_1", b"other\0\0\0", &got, &payload, false).is_err());
    }
}
