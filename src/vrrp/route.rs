//! One `virtual_routes` / `static_routes` line, read as keepalived 2.2.7's
//! `vrrp_iproute.c:alloc_route()` reads it: `[src IP] [to] PREFIX [via|gw
//! IP] [or IP] [dev IF] [scope S] [table T] [metric N] [blackhole |
//! unreachable | prohibit | throw] [no_track]` (the other `ip route` words
//! are skipped with their value). Pure: the runner adds the routes after
//! the addresses and removes them before.

use std::net::IpAddr;

/// A route's type, when not a plain unicast route.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RouteKind {
    /// Forwarding through a gateway or out of an interface.
    Unicast,
    /// `blackhole`.
    Blackhole,
    /// `unreachable`.
    Unreachable,
    /// `prohibit`.
    Prohibit,
    /// `throw`.
    Throw,
}

/// A virtual route.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VRoute {
    /// Destination.
    pub dst: IpAddr,
    /// Its prefix length.
    pub prefix: u8,
    /// `via`/`gw`.
    pub via: Option<IpAddr>,
    /// `src`: the preferred source.
    pub src: Option<IpAddr>,
    /// `dev`, else the instance's interface when there is no gateway.
    pub dev: Option<String>,
    /// `metric`/`priority`/`preference`.
    pub metric: Option<u32>,
    /// `table` (number, or `main`/`local`/`default`).
    pub table: Option<u32>,
    /// `scope` (number or name).
    pub scope: Option<u8>,
    /// Its type.
    pub kind: RouteKind,
    /// `no_track`.
    pub no_track: bool,
}

fn prefix_of(text: &str) -> Option<(IpAddr, u8)> {
    if text == "default" {
        return Some((IpAddr::from([0, 0, 0, 0]), 0));
    }
    let (a, p) = match text.split_once('/') {
        Some((a, p)) => (a, Some(p)),
        None => (text, None),
    };
    let addr: IpAddr = a.parse().ok()?;
    let max = if addr.is_ipv4() { 32 } else { 128 };
    let prefix = match p {
        Some(p) => p.parse().ok().filter(|n| *n <= max)?,
        None => max,
    };
    Some((addr, prefix))
}

fn scope_of(w: &str) -> Option<u8> {
    Some(match w {
        "global" | "universe" => 0,
        "site" => 200,
        "link" => 253,
        "host" => 254,
        "nowhere" => 255,
        n => n.parse().ok()?,
    })
}

fn table_of(w: &str) -> Option<u32> {
    Some(match w {
        "main" => 254,
        "local" => 255,
        "default" => 253,
        n => n.parse().ok()?,
    })
}

/// Reads one route line; `Err` says what keepalived would refuse.
pub fn parse_route(words: &[String]) -> Result<VRoute, String> {
    let mut r = VRoute {
        dst: IpAddr::from([0, 0, 0, 0]),
        prefix: 0,
        via: None,
        src: None,
        dev: None,
        metric: None,
        table: None,
        scope: None,
        kind: RouteKind::Unicast,
        no_track: false,
    };
    let mut have_dst = false;
    let mut it = words.iter().map(String::as_str);
    while let Some(w) = it.next() {
        let mut value = |what: &str| it.next().ok_or_else(|| format!("{what} needs a value"));
        match w {
            "src" => r.src = Some(value("src")?.parse().map_err(|_| "invalid src address")?),
            "via" | "gw" => r.via = Some(value("via")?.parse().map_err(|_| "invalid via address")?),
            "or" => {
                value("or")?;
            }
            "dev" | "oif" => r.dev = Some(value("dev")?.to_string()),
            "scope" => r.scope = Some(scope_of(value("scope")?).ok_or("invalid scope")?),
            "table" => r.table = Some(table_of(value("table")?).ok_or("invalid table")?),
            "metric" | "priority" | "preference" => {
                r.metric = Some(value("metric")?.parse().map_err(|_| "invalid metric")?)
            }
            "blackhole" => r.kind = RouteKind::Blackhole,
            "unreachable" => r.kind = RouteKind::Unreachable,
            "prohibit" => r.kind = RouteKind::Prohibit,
            "throw" => r.kind = RouteKind::Throw,
            "no_track" => r.no_track = true,
            "onlink" | "pervasive" => {}
            "to" => {
                let (a, p) = prefix_of(value("to")?).ok_or("invalid destination")?;
                (r.dst, r.prefix, have_dst) = (a, p, true);
            }
            other if !have_dst => {
                let (a, p) =
                    prefix_of(other).ok_or_else(|| format!("unknown route keyword {other}"))?;
                (r.dst, r.prefix, have_dst) = (a, p, true);
            }
            // ip(8)'s other options take one value each.
            _ => {
                it.next();
            }
        }
    }
    if !have_dst {
        return Err("no destination".into());
    }
    if r.via.is_some_and(|v| v.is_ipv4() != r.dst.is_ipv4()) {
        return Err("via address family does not match the destination".into());
    }
    Ok(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(s: &str) -> Vec<String> {
        s.split_whitespace().map(str::to_string).collect()
    }

    #[test]
    fn route_lines_read_as_keepalived_reads_them() {
        let r = parse_route(&w(
            "src 192.0.2.100 to 198.51.100.0/24 via 192.0.2.254 dev eth0 metric 5 table 100",
        ))
        .unwrap();
        assert_eq!(r.dst, "198.51.100.0".parse::<IpAddr>().unwrap());
        assert_eq!(r.prefix, 24);
        assert_eq!(r.via, Some("192.0.2.254".parse().unwrap()));
        assert_eq!(r.src, Some("192.0.2.100".parse().unwrap()));
        assert_eq!(
            (r.dev.as_deref(), r.metric, r.table),
            (Some("eth0"), Some(5), Some(100))
        );
        let r = parse_route(&w("blackhole 2001:db8:1::/48")).unwrap();
        assert_eq!((r.kind, r.prefix), (RouteKind::Blackhole, 48));
        assert!(parse_route(&w("10.0.0.0/33")).is_err());
        assert!(parse_route(&w("192.0.2.0/24 via 2001:db8::1")).is_err());
        assert!(parse_route(&w("metric 5")).is_err());
    }
}
