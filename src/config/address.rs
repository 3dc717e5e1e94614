//! Addresses and ports as keepalived's parser reads them
//! (`inet_stosockaddr()`): a dotted quad by a byte loop, every other text
//! by the standard parsers. Used by the block parser's handlers and the
//! VRRP model.

use std::net::IpAddr;

/// keepalived's `inet_stosockaddr()` address part: numeric only, anything
/// after `-` or `/` ignored, IPv6 iff it contains `:`.
pub fn parse_ip(s: &str) -> Option<IpAddr> {
    // A dotted quad has neither `-` nor `/`: where it ends is the cut.
    if let Some((a, rest)) = dotted_quad(s.as_bytes()) {
        if matches!(rest.first(), None | Some(b'-' | b'/')) {
            return Some(IpAddr::V4(a));
        }
    }
    let cut = match s.bytes().position(|b| b == b'-' || b == b'/') {
        Some(i) => &s[..i],
        None => s,
    };
    if cut.contains(':') {
        cut.parse::<std::net::Ipv6Addr>().ok().map(IpAddr::V6)
    } else {
        cut.parse::<std::net::Ipv4Addr>().ok().map(IpAddr::V4)
    }
}

/// An IPv4 address in its plain form (four parts of 1 to 3 digits, no
/// leading zero, each at most 255) at the start of `b`, read by a byte
/// loop (tens of thousands of real servers each have one), and the bytes
/// after it. `None` for any other text, which the standard parser then
/// reads (and so decides) as before.
fn dotted_quad(b: &[u8]) -> Option<(std::net::Ipv4Addr, &[u8])> {
    let mut parts = [0u8; 4];
    let mut i = 0;
    for (n, part) in parts.iter_mut().enumerate() {
        if n > 0 {
            if b.get(i) != Some(&b'.') {
                return None;
            }
            i += 1;
        }
        let start = i;
        let mut v: u32 = 0;
        while let Some(d) = b.get(i).filter(|d| d.is_ascii_digit()) {
            v = v * 10 + u32::from(d - b'0');
            i += 1;
            if i - start > 3 {
                return None;
            }
        }
        if i == start || (i - start > 1 && b[start] == b'0') {
            return None;
        }
        *part = u8::try_from(v).ok()?;
    }
    // A fifth digit run or part is no plain address.
    match b.get(i) {
        Some(c) if c.is_ascii_digit() || *c == b'.' => None,
        _ => Some((std::net::Ipv4Addr::from(parts), &b[i..])),
    }
}

/// Port: 1..65535, all zeros = none (0); `None` when invalid.
pub fn parse_port(s: &str) -> Option<u16> {
    if !s.is_empty() && s.bytes().all(|b| b == b'0') {
        return Some(0);
    }
    match s.parse::<u32>() {
        Ok(p) if (1..=65535).contains(&p) => Some(p as u16),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_fast_address_reader_agrees_with_the_standard_one() {
        use super::{dotted_quad, parse_ip};
        for a in [
            "192.0.2.1",
            "0.0.0.0",
            "255.255.255.255",
            "256.1.1.1",
            "01.2.3.4",
            "1.2.3",
            "1.2.3.4.5",
            "1..2.3",
            "1.2.3.4 ",
            "",
            ".",
            "1.2.3.04",
            "1.2.3.1000",
            "10.0.0.255",
            "1.2.3.x",
        ] {
            let std = a.parse::<std::net::Ipv4Addr>().ok();
            let fast = dotted_quad(a.as_bytes()).filter(|(_, rest)| rest.is_empty());
            // The fast reader takes a subset of what the standard one does,
            // with the same value; parse_ip then agrees with it everywhere.
            assert!(
                fast.is_none() || fast.map(|f| f.0) == std,
                "{a}: {fast:?} {std:?}"
            );
            assert_eq!(parse_ip(a), std.map(std::net::IpAddr::V4), "{a}");
            // What follows a `-` or `/` is not read (inet_stosockaddr).
            for tail in ["-", "/24", "-10", "/x"] {
                let with = format!("{a}{tail}");
                assert_eq!(parse_ip(&with), parse_ip(a), "{with}");
            }
        }
    }
}
