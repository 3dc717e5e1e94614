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

use socket2::{Domain, Protocol, Socket, Type};
use std::net::{Ipv4Addr, SocketAddr};
use std::time::{Duration, Instant};

fn checksum(b: &[u8]) -> u16 {
    let mut s: u32 = 0;
    for c in b.chunks(2) {
        let w = if c.len() == 2 {
            u16::from_be_bytes([c[0], c[1]])
        } else {
            u16::from(c[0]) << 8
        };
        s += u32::from(w);
    }
    while s > 0xffff {
        s = (s & 0xffff) + (s >> 16);
    }
    !(s as u16)
}

/// A VRRPv2 advert for `vrid` with one address, its checksum right.
fn advert(vrid: u8) -> Vec<u8> {
    let mut v = vec![
        0x21, vrid, 100, 1, 0, 1, 0, 0, 198, 51, 100, vrid, 0, 0, 0, 0, 0, 0, 0, 0,
    ];
    let c = checksum(&v);
    v[6..8].copy_from_slice(&c.to_be_bytes());
    v
}

/// The malformed variants of an advert for `vrid`.
fn malformed(vrid: u8, kind: usize) -> Vec<u8> {
    let mut v = advert(vrid);
    match kind % 5 {
        0 => v.truncate(6),
        1 => v[6] ^= 0xff,
        2 => {
            v[0] = 0x11;
            v[6..8].fill(0);
            let c = checksum(&v);
            v[6..8].copy_from_slice(&c.to_be_bytes());
        }
        3 => {
            v[0] = 0x22;
            v[6..8].fill(0);
            let c = checksum(&v);
            v[6..8].copy_from_slice(&c.to_be_bytes());
        }
        _ => {
            v[3] = 40;
            v[6..8].fill(0);
            let c = checksum(&v);
            v[6..8].copy_from_slice(&c.to_be_bytes());
        }
    }
    v
}

/// The IPv4 packet around `vrrp` (the kernel fills in the id and the
/// header checksum).
fn packet(vrrp: &[u8]) -> Vec<u8> {
    let len = (20 + vrrp.len()) as u16;
    let mut p = vec![
        0x45, 0xc0, 0, 0, 0, 0, 0, 0, 255, 112, 0, 0, 192, 0, 2, 200, 224, 0, 0, 18,
    ];
    p[2..4].copy_from_slice(&len.to_be_bytes());
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
    let to: SocketAddr = (Ipv4Addr::new(224, 0, 0, 18), 0).into();
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
