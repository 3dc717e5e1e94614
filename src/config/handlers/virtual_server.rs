//! `virtual_server`: the service, its scheduler and forwarding, persistence,
//! quorum and the sorry server.

use super::*;

pub fn vs_open(p: P, w: &[Word]) -> HandlerResult {
    let a1 = p.arg(w, 1)?.to_string();
    let address = match a1.as_str() {
        "group" => VsAddress::Group {
            name: p.arg(w, 2)?.to_string(),
        },
        "fwmark" => {
            let s = p.arg(w, 2)?.to_string();
            match p.read_unsigned(&s, 0, U32MAX, false) {
                Some(m) => VsAddress::Fwmark { fwmark: m as u32 },
                None => {
                    p.err(
                        ErrClass::GeneralError,
                        format!(
                            "virtual server fwmark '{s}' must be in [0, {}] - skipping",
                            u32::MAX
                        ),
                    );
                    p.skip_block();
                    return Ok(());
                }
            }
        }
        _ => {
            let port_s = w.get(2).map(|x| x.text.clone());
            let ip = parse_ip(&a1);
            let port = match &port_s {
                None => Some(0),
                Some(s) => parse_port(s),
            };
            if let (Some(s), None) = (&port_s, port) {
                // inet_stosockaddr() reads the port first, with its message.
                crate::config::numbers::read_unsigned(p, s, 1, 65535, false);
            }
            match (ip, port) {
                (Some(ip), Some(port)) => VsAddress::Addr { ip, port },
                _ => {
                    p.err_hint(
                        ErrClass::GeneralError,
                        format!(
                            "Invalid virtual server IP address/port {}/{} - skipping",
                            a1,
                            port_s.unwrap_or_default()
                        ),
                        "use a numeric IPv4 or IPv6 address and a port 1-65535; the whole block is ignored",
                    );
                    p.skip_block();
                    return Ok(());
                }
            }
        }
    };
    p.vs = Some(VirtualServer {
        address,
        line: p.pos.line,
        protocol: None,
        lvs_sched: None,
        lvs_method: None,
        persistence_timeout: 0,
        persistence_granularity: None,
        persistence_engine: None,
        ops: false,
        sched_flags: [false; 3],
        ha_suspend: false,
        alpha: false,
        omega: false,
        quorum: 1,
        hysteresis: 0,
        quorum_up: None,
        quorum_down: None,
        sorry_server: None,
        ip_family: None,
        virtualhost: None,
        smtp_alert: None,
        snmp_name: None,
        weight: 1,
        delay_loop: None,
        connect_timeout: None,
        retry: None,
        delay_before_retry: None,
        warmup: None,
        inhibit_on_failure: false,
        half_open: false,
        thresholds: Thresholds::default(),
        fail_open: false,
        slow_start: None,
        drain_timeout: None,
        real_servers: Vec::with_capacity(p.rs_room),
        orphaned_misc: Vec::new(),
        first_rs_af: None,
    });
    Ok(())
}

pub fn vs_close(p: P) {
    let Some(mut vs) = p.vs.take() else {
        return;
    };
    // vs_end_handler(): a sorry server that is not tunnelled must have the
    // virtual server's family.
    if let Some(s) = &vs.sorry_server {
        let tun = matches!(s.lvs_method, Some(Forwarding::Tun { .. }));
        if !tun && parse_family(&vs).is_some_and(|v6| v6 != s.ip.is_ipv6()) {
            p.err(
                ErrClass::GeneralError,
                format!(
                    "Address family of virtual server and sorry server {} don't match - skipping sorry server.",
                    s.ip
                ),
            );
            vs.sorry_server = None;
        }
    }
    // The model is kept for reloads: no doubling slack per virtual server.
    vs.real_servers.shrink_to_fit();
    p.rs_room = vs.real_servers.len();
    p.cfg.virtual_servers.push(vs);
}

pub(super) fn vs<'a>(p: &'a mut Parser<'_, '_>) -> Option<&'a mut VirtualServer> {
    p.vs.as_mut()
}

const SCHEDULERS: &[&str] = &[
    "rr", "wrr", "lc", "wlc", "lblc", "sh", "mh", "dh", "fo", "ovf", "lblcr", "sed", "nq", "twos",
];

pub fn vs_sched(p: P, w: &[Word]) -> HandlerResult {
    let s = p.arg(w, 1)?.to_string();
    if SCHEDULERS.contains(&s.as_str()) {
        if let Some(v) = vs(p) {
            v.lvs_sched = Some(s);
        }
    } else {
        p.err_hint(
            ErrClass::GeneralError,
            format!("Invalid lvs_scheduler '{s}' - ignoring"),
            format!("one of: {}", SCHEDULERS.join(" ")),
        );
    }
    Ok(())
}

/// What a TUN method with a bad tunnel option becomes: keepalived has
/// already set the method to plain TUN when it meets the error.
const TUN_IPIP: Forwarding = Forwarding::Tun {
    tunnel: TunnelType::Ipip,
    csum: None,
};

pub(super) fn forwarding(p: P, w: &[Word], what: &str) -> Option<Forwarding> {
    let m = w.get(1)?.text.clone();
    match m.as_str() {
        "NAT" => Some(Forwarding::Nat),
        "DR" => Some(Forwarding::Dr),
        "TUN" => {
            let mut tunnel = TunnelType::Ipip;
            let mut csum = None;
            let mut i = 2;
            while i < w.len() {
                match w[i].text.as_str() {
                    "type" => {
                        match w.get(i + 1).map(|x| x.text.as_str()) {
                            Some("ipip") => tunnel = TunnelType::Ipip,
                            Some("gue") => tunnel = TunnelType::Gue { port: 0 },
                            Some("gre") => tunnel = TunnelType::Gre,
                            o => {
                                p.err(
                                    ErrClass::GeneralError,
                                    format!("Unknown tunnel type {}", o.unwrap_or("")),
                                );
                                return Some(TUN_IPIP);
                            }
                        }
                        i += 2;
                    }
                    "port" => {
                        let port = w
                            .get(i + 1)
                            .and_then(|x| parse_port(&x.text))
                            .filter(|&x| x > 0);
                        match (port, &mut tunnel) {
                            (Some(pt), TunnelType::Gue { port }) => *port = pt,
                            _ => {
                                p.err(ErrClass::GeneralError, "Invalid gue tunnel port");
                                return Some(TUN_IPIP);
                            }
                        }
                        i += 2;
                    }
                    "nocsum" => {
                        csum = Some(TunnelCsum::Nocsum);
                        i += 1;
                    }
                    "csum" => {
                        csum = Some(TunnelCsum::Csum);
                        i += 1;
                    }
                    "remcsum" => {
                        csum = Some(TunnelCsum::Remcsum);
                        i += 1;
                    }
                    o => {
                        p.err(ErrClass::GeneralError, format!("Unknown TUN option {o}"));
                        i += 1;
                    }
                }
            }
            if let TunnelType::Gue { port: 0 } = tunnel {
                p.err(ErrClass::GeneralError, "gue tunnel requires a port");
                return Some(TUN_IPIP);
            }
            if tunnel == TunnelType::Ipip && csum.is_some() {
                p.err(
                    ErrClass::GeneralError,
                    "ipip tunnels do not support checksum options",
                );
                csum = None;
            }
            if tunnel == TunnelType::Gre && csum == Some(TunnelCsum::Remcsum) {
                p.err(ErrClass::GeneralError, "gre tunnels do not support remcsum");
                csum = None;
            }
            Some(Forwarding::Tun { tunnel, csum })
        }
        other => {
            p.err_hint(
                ErrClass::GeneralError,
                format!("PARSER : unknown [{other}] routing method for {what}."),
                "use NAT, DR or TUN",
            );
            None
        }
    }
}

pub fn vs_method(p: P, w: &[Word]) -> HandlerResult {
    p.arg(w, 1)?;
    if let Some(f) = forwarding(p, w, "virtual server") {
        if let Some(v) = vs(p) {
            v.lvs_method = Some(f);
        }
    }
    Ok(())
}

pub fn vs_protocol(p: P, w: &[Word]) -> HandlerResult {
    let s = p.arg(w, 1)?.to_string();
    let proto = match s.to_ascii_uppercase().as_str() {
        "TCP" => Protocol::Tcp,
        "UDP" => Protocol::Udp,
        "SCTP" => Protocol::Sctp,
        _ => {
            p.err_hint(
                ErrClass::GeneralError,
                format!("Unknown protocol {s} - ignoring"),
                "use TCP, UDP or SCTP",
            );
            return Ok(());
        }
    };
    if let Some(v) = vs(p) {
        v.protocol = Some(proto);
    }
    Ok(())
}

pub fn vs_persistence_timeout(p: P, w: &[Word]) -> HandlerResult {
    let t = match w.get(1) {
        None => 360,
        Some(x) => {
            let s = x.text.clone();
            match p.read_unsigned(&s, 1, 2678400, true) {
                Some(v) => v as u32,
                None => {
                    p.err(ErrClass::GeneralError, "persistence_timeout invalid");
                    return Ok(());
                }
            }
        }
    };
    if let Some(v) = vs(p) {
        v.persistence_timeout = t;
    }
    Ok(())
}

pub fn vs_persistence_granularity(p: P, w: &[Word]) -> HandlerResult {
    let s = p.arg(w, 1)?.to_string();
    let ok = if s.contains('.') {
        s.parse::<std::net::Ipv4Addr>().is_ok()
    } else {
        matches!(s.parse::<u32>(), Ok(1..=128))
    };
    if !ok {
        p.err(
            ErrClass::GeneralError,
            format!("Invalid persistence_granularity specified - {s}"),
        );
        return Ok(());
    }
    if let Some(v) = vs(p) {
        v.persistence_granularity = Some(s);
        if v.persistence_timeout == 0 {
            v.persistence_timeout = 360;
        }
    }
    Ok(())
}

pub fn vs_persistence_engine(p: P, w: &[Word]) -> HandlerResult {
    let s = p.arg(w, 1)?.to_string();
    if s.len() > 15 {
        p.err(
            ErrClass::GeneralError,
            format!("persistence_engine name too long - {s}"),
        );
        return Ok(());
    }
    if let Some(v) = vs(p) {
        v.persistence_engine = Some(s);
    }
    Ok(())
}

pub fn vs_ops(p: P, _w: &[Word]) -> HandlerResult {
    if let Some(v) = vs(p) {
        v.ops = true;
    }
    Ok(())
}

pub fn vs_flag(p: P, w: &[Word]) -> HandlerResult {
    let k = w[0].text.as_str();
    let sched = p.vs.as_ref().and_then(|v| v.lvs_sched.clone());
    let idx = match k {
        "flag-1" => 0,
        "flag-2" => 1,
        "flag-3" => 2,
        "sh-port" | "mh-port" => 1,
        "sh-fallback" | "mh-fallback" => 0,
        _ => return Ok(()),
    };
    if let Some(prefix) = k
        .strip_suffix("-port")
        .or_else(|| k.strip_suffix("-fallback"))
    {
        // lbflags_handler(): with sh or mh already chosen, the other's
        // flags are dropped silently; with any other (or no) scheduler it is
        // an error, worded for sh whichever flag it was.
        match sched.as_deref() {
            Some(s) if s == prefix => {}
            Some("sh" | "mh") => return Ok(()),
            _ => {
                p.err_hint(
                    ErrClass::GeneralError,
                    format!("{k} only applies to sh scheduler - ignoring"),
                    format!("put 'lvs_sched {prefix}' before '{k}'"),
                );
                return Ok(());
            }
        }
    }
    if let Some(v) = vs(p) {
        v.sched_flags[idx] = true;
    }
    Ok(())
}

macro_rules! vs_flag_setter {
    ($name:ident, $field:ident) => {
        pub fn $name(p: P, _w: &[Word]) -> HandlerResult {
            if let Some(v) = vs(p) {
                v.$field = true;
            }
            Ok(())
        }
    };
}
vs_flag_setter!(vs_ha_suspend, ha_suspend);
vs_flag_setter!(vs_alpha, alpha);
vs_flag_setter!(vs_omega, omega);
vs_flag_setter!(vs_inhibit, inhibit_on_failure);

/// `half_open [BOOL]` (extension): the virtual server's TCP_CHECKs default.
pub fn vs_half_open(p: P, w: &[Word]) -> HandlerResult {
    if let Some(b) = p.opt_bool(w, "half_open") {
        if let Some(v) = vs(p) {
            v.half_open = b;
        }
    }
    Ok(())
}

/// `fail_open [BOOL]` (extension): every real server failed = all kept in.
pub fn vs_fail_open(p: P, w: &[Word]) -> HandlerResult {
    if let Some(b) = p.opt_bool(w, "fail_open") {
        if let Some(v) = vs(p) {
            v.fail_open = b;
        }
    }
    Ok(())
}

pub fn vs_quorum(p: P, w: &[Word]) -> HandlerResult {
    let s = p.arg(w, 1)?.to_string();
    let q = match p.read_unsigned(&s, 1, U32MAX, true) {
        Some(v) => v as u32,
        None => {
            p.err(
                ErrClass::GeneralError,
                format!("Quorum {s} must be in [1, {}]. Setting to 1.", u32::MAX),
            );
            1
        }
    };
    if let Some(v) = vs(p) {
        v.quorum = q;
    }
    Ok(())
}

pub fn vs_hysteresis(p: P, w: &[Word]) -> HandlerResult {
    let s = p.arg(w, 1)?.to_string();
    match p.read_unsigned(&s, 0, U32MAX, true) {
        Some(h) => {
            if let Some(v) = vs(p) {
                v.hysteresis = h as u32;
            }
        }
        None => p.err(
            ErrClass::GeneralError,
            format!("Hysteresis {s} must be in [0, {}] - ignoring", u32::MAX),
        ),
    }
    Ok(())
}

pub fn vs_quorum_up(p: P, w: &[Word]) -> HandlerResult {
    let s = p.notify_script(w)?;
    set_once(p, "quorum_up script", s, |p| {
        vs(p).map(|v| &mut v.quorum_up)
    })
}

pub fn vs_quorum_down(p: P, w: &[Word]) -> HandlerResult {
    let s = p.notify_script(w)?;
    set_once(p, "quorum_down script", s, |p| {
        vs(p).map(|v| &mut v.quorum_down)
    })
}

pub fn vs_sorry_server(p: P, w: &[Word]) -> HandlerResult {
    let a = p.arg(w, 1)?.to_string();
    let ps = w.get(2).map(|x| x.text.clone());
    let ip = parse_ip(&a);
    let port = match &ps {
        None => Some(0),
        Some(s) => parse_port(s),
    };
    if let (Some(s), None) = (&ps, port) {
        crate::config::numbers::read_unsigned(p, s, 1, 65535, false);
    }
    match (ip, port) {
        (Some(ip), Some(port)) => {
            if let Some(v) = vs(p) {
                // keepalived copies the virtual server's method as it stands
                // at this line (alloc_ssvr()); a later lvs_method does not
                // change the sorry server's.
                let lvs_method = v.lvs_method;
                v.sorry_server = Some(SorryServer {
                    ip,
                    port,
                    lvs_method,
                    inhibit: false,
                });
            }
        }
        _ => p.err(
            ErrClass::GeneralError,
            format!("Invalid sorry server IP address {a} - skipping"),
        ),
    }
    Ok(())
}

pub fn vs_sorry_server_inhibit(p: P, _w: &[Word]) -> HandlerResult {
    match p.vs.as_mut().and_then(|v| v.sorry_server.as_mut()) {
        Some(s) => s.inhibit = true,
        None => p.err_hint(
            ErrClass::GeneralError,
            "No sorry server defined for sorry_server_inhibit",
            "sorry_server_inhibit must come after sorry_server",
        ),
    }
    Ok(())
}

pub fn vs_sorry_server_lvs_method(p: P, w: &[Word]) -> HandlerResult {
    // keepalived looks for the sorry server before the value.
    if p.vs.as_ref().is_some_and(|v| v.sorry_server.is_none()) {
        p.err_hint(
            ErrClass::GeneralError,
            "sorry_server forwarding used without sorry_server",
            "sorry_server_lvs_method must come after sorry_server",
        );
        return Ok(());
    }
    p.arg(w, 1)?;
    let f = forwarding(p, w, "sorry server");
    if let (Some(f), Some(s)) = (f, p.vs.as_mut().and_then(|v| v.sorry_server.as_mut())) {
        s.lvs_method = Some(f);
    }
    Ok(())
}

pub fn vs_ip_family(p: P, w: &[Word]) -> HandlerResult {
    let s = p.arg(w, 1)?.to_string();
    let f = match s.as_str() {
        "inet" => Family::Inet,
        "inet6" => Family::Inet6,
        _ => {
            p.err(
                ErrClass::GeneralError,
                format!("unknown address family {s}"),
            );
            return Ok(());
        }
    };
    if let Some(v) = vs(p) {
        v.ip_family = Some(f);
    }
    Ok(())
}

pub fn vs_virtualhost(p: P, w: &[Word]) -> HandlerResult {
    let Some(s) = p.value_or(w, 1, "virtual server virtualhost missing") else {
        return Ok(());
    };
    if let Some(v) = vs(p) {
        v.virtualhost = Some(s);
    }
    Ok(())
}

pub fn vs_smtp_alert(p: P, w: &[Word]) -> HandlerResult {
    if let Some(b) = p.opt_bool(w, "smtp_alert") {
        if let Some(v) = vs(p) {
            v.smtp_alert = Some(b);
        }
    }
    Ok(())
}

pub fn vs_snmp_name(p: P, w: &[Word]) -> HandlerResult {
    let Some(s) = p.value_or(w, 1, "virtual server snmp_name missing or extra parameters") else {
        return Ok(());
    };
    if let Some(v) = vs(p) {
        v.snmp_name = Some(s);
    }
    Ok(())
}

pub fn vs_weight(p: P, w: &[Word]) -> HandlerResult {
    let s = p.arg(w, 1)?.to_string();
    match p.read_int(&s, 1, i32::MAX as i64, true) {
        Some(x) => {
            if let Some(v) = vs(p) {
                v.weight = x as i32;
            }
        }
        None => p.err(
            ErrClass::GeneralError,
            format!("Virtual server weight {s} is outside range 1-{}", i32::MAX),
        ),
    }
    Ok(())
}
