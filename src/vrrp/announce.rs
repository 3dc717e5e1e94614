//! The announcements of a new master, as keepalived 2.2.7 builds them:
//! the gratuitous ARP (`vrrp_arp.c:send_gratuitous_arp`) and the
//! unsolicited neighbour advertisement (`vrrp_ndisc.c`), whole Ethernet
//! frames for a packet socket. Pure.

use super::packet::{fold, sum16};
use std::net::{Ipv4Addr, Ipv6Addr};

/// A MAC address.
pub type Mac = [u8; 6];

const BROADCAST: Mac = [0xff; 6];

/// The gratuitous ARP for `ip` from `mac`: broadcast, an ARP *request*
/// whose sender and target are the address and whose target hardware
/// address is broadcast (42 bytes, not padded).
pub fn gratuitous_arp(mac: Mac, ip: Ipv4Addr) -> Vec<u8> {
    let mut f = Vec::with_capacity(42);
    f.extend_from_slice(&BROADCAST);
    f.extend_from_slice(&mac);
    f.extend_from_slice(&[0x08, 0x06]);
    f.extend_from_slice(&[0x00, 0x01, 0x08, 0x00, 6, 4, 0x00, 0x01]);
    f.extend_from_slice(&mac);
    f.extend_from_slice(&ip.octets());
    f.extend_from_slice(&BROADCAST);
    f.extend_from_slice(&ip.octets());
    f
}

/// The unsolicited neighbour advertisement for `ip` from `mac`: to
/// ff02::1 from the address itself, hop limit 255, Override set, Router
/// set only when the interface forwards IPv6, with the target link-layer
/// address option.
pub fn unsolicited_na(mac: Mac, ip: Ipv6Addr, router: bool) -> Vec<u8> {
    let all_nodes = Ipv6Addr::new(0xff02, 0, 0, 0, 0, 0, 0, 1);
    let mut icmp = Vec::with_capacity(32);
    icmp.extend_from_slice(&[136, 0, 0, 0]);
    let flags: u8 = 0x20 | if router { 0x80 } else { 0 };
    icmp.extend_from_slice(&[flags, 0, 0, 0]);
    icmp.extend_from_slice(&ip.octets());
    icmp.extend_from_slice(&[2, 1]);
    icmp.extend_from_slice(&mac);
    // ICMPv6 checksum over the pseudo-header (src, dst, length, 58).
    let mut sum = sum16(0, &ip.octets());
    sum = sum16(sum, &all_nodes.octets());
    sum = sum16(sum, &(icmp.len() as u32).to_be_bytes());
    sum = sum16(sum, &[0, 0, 0, 58]);
    sum = sum16(sum, &icmp);
    icmp[2..4].copy_from_slice(&fold(sum).to_be_bytes());
    let mut f = Vec::with_capacity(14 + 40 + icmp.len());
    f.extend_from_slice(&[0x33, 0x33, 0, 0, 0, 1]);
    f.extend_from_slice(&mac);
    f.extend_from_slice(&[0x86, 0xdd]);
    f.extend_from_slice(&[0x60, 0, 0, 0]);
    f.extend_from_slice(&(icmp.len() as u16).to_be_bytes());
    f.extend_from_slice(&[58, 255]);
    f.extend_from_slice(&ip.octets());
    f.extend_from_slice(&all_nodes.octets());
    f.extend_from_slice(&icmp);
    f
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::frame;
    use super::*;

    const MAC: Mac = [0x02, 0, 0, 0, 0, 0x01];

    #[test]
    fn our_gratuitous_arp_is_keepalived_s_byte_for_byte() {
        assert_eq!(
            gratuitous_arp(MAC, Ipv4Addr::new(192, 0, 2, 140)),
            frame("garp-192.0.2.140.txt")
        );
    }

    #[test]
    fn our_unsolicited_na_is_keepalived_s_byte_for_byte() {
        let ip: Ipv6Addr = "2001:db8::140".parse().unwrap();
        assert_eq!(
            unsolicited_na(MAC, ip, false),
            frame("na-2001:db8::140.txt")
        );
        // With forwarding on, the Router flag (and so the checksum) changes.
        assert_ne!(unsolicited_na(MAC, ip, true)[58], 0x20);
    }
}
