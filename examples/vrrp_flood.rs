//! A flood of foreign and malformed VRRP adverts for the VRRP scale
//! benchmark (`benches/vrrp_scale.rs`): as fast as one core sends them, on
//! the interfaces named, for a number of seconds, from 192.0.2.200 to
//! 224.0.0.18 (run it inside the benchmark's observer namespace: nothing
//! leaves it). Half are well-formed VRRPv2 adverts for VRIDs no director
//! runs (`--foreign FROM`: VRIDs FROM..=255), half are malformed adverts
//! for the VRIDs the directors run (1..FROM): cut short, a bad checksum, a
//! wrong version, a wrong type, an address count the packet does not hold.
//! Prints the packets sent and the rate.
//!
//!   vrrp_flood SECONDS FOREIGN_FROM IFACE...

use keepalived::vrrp::packet::{checksum, ipv4_header, Advert, AuthType, IPPROTO_VRRP};
use socket2::{Domain, Protocol, Socket, Type};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::{Duration, Instant};

const FROM: Ipv4Addr = Ipv4Addr::new(192, 0, 2, 200);
const GROUP: Ipv4Addr = Ipv4Addr::new(224, 0, 0, 18);

/// A VRRPv2 advert for `vrid` with one address, as the daemon encodes it.
fn advert(vrid: u8) -> Vec<u8> {
    Advert {
        version: 2,
        vrid,
        priority: 100,
        adver_int_cs: 100,
        addrs: vec![IpAddr::V4(Ipv4Addr::new(198, 51, 100, vrid))],
        auth: AuthType::None,
        auth_data: [0; 8],
    }
    .encode(IpAddr::V4(FROM), IpAddr::V4(GROUP))
}

/// The malformed variants of an advert for `vrid`: cut short, a bad
/// checksum, a wrong version, a wrong type, an address count the packet
/// does not hold (the last three with their checksum right).
fn malformed(vrid: u8, kind: usize) -> Vec<u8> {
    let mut v = advert(vrid);
    match kind % 5 {
        0 => v.truncate(6),
        1 => v[6] ^= 0xff,
        k => {
            match k {
                2 => v[0] = 0x11,
                3 => v[0] = 0x22,
                _ => v[3] = 40,
            }
            v[6..8].fill(0);
            let c = checksum(2, &v, IpAddr::V4(FROM), IpAddr::V4(GROUP));
            v[6..8].copy_from_slice(&c.to_be_bytes());
        }
    }
    v
}

/// The IPv4 packet around `vrrp`.
fn packet(vrrp: &[u8]) -> Vec<u8> {
    let mut p = ipv4_header(FROM, GROUP, vrrp.len(), 255, IPPROTO_VRRP).to_vec();
    p.extend_from_slice(vrrp);
    p
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 4 {
        eprintln!("usage: vrrp_flood SECONDS FOREIGN_FROM IFACE...");
        std::process::exit(2);
    }
    let secs: f64 = args[1].parse().expect("seconds");
    let from: u8 = args[2].parse().expect("first foreign VRID");
    let mut frames = Vec::new();
    for (i, vrid) in (from..=255).enumerate() {
        frames.push(packet(&advert(vrid)));
        let mine = 1 + (i as u8 % from.saturating_sub(1).max(1));
        frames.push(packet(&malformed(mine, i)));
    }
    let to: SocketAddr = (GROUP, 0).into();
    let sockets: Vec<Socket> = args[3..]
        .iter()
        .map(|ifname| {
            let s = Socket::new(Domain::IPV4, Type::RAW, Some(Protocol::from(255)))
                .expect("raw socket");
            s.bind_device(Some(ifname.as_bytes())).expect("bind");
            s
        })
        .collect();
    let end = Instant::now() + Duration::from_secs_f64(secs);
    let started = Instant::now();
    let mut sent: u64 = 0;
    let mut failed: u64 = 0;
    let mut tries: u64 = 0;
    'out: loop {
        for f in &frames {
            for s in &sockets {
                match s.send_to_with_flags(f, &to.into(), nix::libc::MSG_DONTROUTE) {
                    Ok(_) => sent += 1,
                    Err(_) => failed += 1,
                }
            }
            tries += 1;
            if tries.is_multiple_of(256) && Instant::now() >= end {
                break 'out;
            }
        }
    }
    let took = started.elapsed().as_secs_f64();
    println!(
        "flood: {sent} packets in {took:.1} s, {:.0} a second ({failed} refused by the kernel)",
        sent as f64 / took
    );
}
