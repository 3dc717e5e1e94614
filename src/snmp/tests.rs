//! The MIB modules' views against keepalived 2.2.7's walks
//! (`../shared/snmp-fixtures/walk/`, the configuration of
//! `conf/keepalived-a.conf`, its VRRP part, both instances MASTER).

use super::agentx::Value;
use super::tree::Tree;
use crate::config::load_str;
use crate::vrrp::node::Stats;
use crate::vrrp::status::InstanceStatus;

/// The VRRP part of the walked configuration.
pub const CONF: &str = "global_defs {\n router_id kbs_a\n}\n\
vrrp_instance VI_1 {\n state BACKUP\n interface eth0\n virtual_router_id 61\n priority 150\n advert_int 1\n\
 authentication {\n auth_type PASS\n auth_pass secret1\n }\n\
 virtual_ipaddress {\n 192.0.2.161/24\n 192.0.2.162/24 label eth0:vi1\n }\n\
 virtual_ipaddress_excluded {\n 198.51.100.161/24 dev eth1\n }\n}\n\
vrrp_instance VI_2 {\n state BACKUP\n interface eth0\n virtual_router_id 62\n version 3\n priority 150\n\
 advert_int 0.5\n virtual_ipaddress {\n 2001:db8::162/64\n }\n}\n";

/// keepalived's `snmpwalk -On` of VRRP-MIB for it.
const VRRP_MIB_WALK: &str = ".1.3.6.1.2.1.68.1.1.0 = INTEGER: 2
.1.3.6.1.2.1.68.1.2.0 = INTEGER: enabled(1)
.1.3.6.1.2.1.68.1.3.1.2.2.61 = STRING: 2:0:0:0:0:1
.1.3.6.1.2.1.68.1.3.1.3.2.61 = INTEGER: master(3)
.1.3.6.1.2.1.68.1.3.1.4.2.61 = INTEGER: up(1)
.1.3.6.1.2.1.68.1.3.1.5.2.61 = INTEGER: 150
.1.3.6.1.2.1.68.1.3.1.6.2.61 = INTEGER: 2
.1.3.6.1.2.1.68.1.3.1.7.2.61 = IpAddress: 192.0.2.2
.1.3.6.1.2.1.68.1.3.1.8.2.61 = IpAddress: 192.0.2.1
.1.3.6.1.2.1.68.1.3.1.9.2.61 = INTEGER: simpleTextPassword(2)
.1.3.6.1.2.1.68.1.3.1.11.2.61 = INTEGER: 1 seconds
.1.3.6.1.2.1.68.1.3.1.12.2.61 = INTEGER: true(1)
.1.3.6.1.2.1.68.1.3.1.13.2.61 = Timeticks: (0) 0:00:00.00
.1.3.6.1.2.1.68.1.3.1.14.2.61 = INTEGER: ip(1)
.1.3.6.1.2.1.68.1.3.1.15.2.61 = INTEGER: active(1)
.1.3.6.1.2.1.68.1.4.1.2.2.61.192.0.2.161 = INTEGER: active(1)
.1.3.6.1.2.1.68.1.4.1.2.2.61.192.0.2.162 = INTEGER: active(1)
.1.3.6.1.2.1.68.2.1.0 = Counter32: 0
.1.3.6.1.2.1.68.2.2.0 = Counter32: 0
.1.3.6.1.2.1.68.2.3.0 = Counter32: 0
.1.3.6.1.2.1.68.2.4.1.1.2.61 = Counter32: 1
.1.3.6.1.2.1.68.2.4.1.2.2.61 = Counter32: 1
.1.3.6.1.2.1.68.2.4.1.3.2.61 = Counter32: 0
.1.3.6.1.2.1.68.2.4.1.4.2.61 = Counter32: 0
.1.3.6.1.2.1.68.2.4.1.5.2.61 = Counter32: 0
.1.3.6.1.2.1.68.2.4.1.6.2.61 = Counter32: 0
.1.3.6.1.2.1.68.2.4.1.7.2.61 = Counter32: 0
.1.3.6.1.2.1.68.2.4.1.8.2.61 = Counter32: 0
.1.3.6.1.2.1.68.2.4.1.9.2.61 = Counter32: 0
.1.3.6.1.2.1.68.2.4.1.10.2.61 = Counter32: 0
.1.3.6.1.2.1.68.2.4.1.11.2.61 = Counter32: 0
.1.3.6.1.2.1.68.2.4.1.12.2.61 = Counter32: 0";

/// keepalived's `snmpwalk -On` of VRRPv3-MIB for it.
const VRRPV3_MIB_WALK: &str = ".1.3.6.1.2.1.207.1.1.1.1.3.2.61.1 = Hex-STRING: C0 00 02 01 
.1.3.6.1.2.1.207.1.1.1.1.3.2.62.2 = Hex-STRING: FE 80 00 00 00 00 00 00 00 00 00 FF FE 00 00 01 
.1.3.6.1.2.1.207.1.1.1.1.4.2.61.1 = Hex-STRING: C0 00 02 01 
.1.3.6.1.2.1.207.1.1.1.1.4.2.62.2 = Hex-STRING: FE 80 00 00 00 00 00 00 00 00 00 FF FE 00 00 01 
.1.3.6.1.2.1.207.1.1.1.1.5.2.61.1 = STRING: 2:0:0:0:0:1
.1.3.6.1.2.1.207.1.1.1.1.5.2.62.2 = STRING: 2:0:0:0:0:1
.1.3.6.1.2.1.207.1.1.1.1.6.2.61.1 = INTEGER: master(3)
.1.3.6.1.2.1.207.1.1.1.1.6.2.62.2 = INTEGER: master(3)
.1.3.6.1.2.1.207.1.1.1.1.7.2.61.1 = Gauge32: 150
.1.3.6.1.2.1.207.1.1.1.1.7.2.62.2 = Gauge32: 150
.1.3.6.1.2.1.207.1.1.1.1.8.2.61.1 = INTEGER: 2
.1.3.6.1.2.1.207.1.1.1.1.8.2.62.2 = INTEGER: 1
.1.3.6.1.2.1.207.1.1.1.1.9.2.61.1 = INTEGER: 100 centiseconds
.1.3.6.1.2.1.207.1.1.1.1.9.2.62.2 = INTEGER: 50 centiseconds
.1.3.6.1.2.1.207.1.1.1.1.10.2.61.1 = INTEGER: true(1)
.1.3.6.1.2.1.207.1.1.1.1.10.2.62.2 = INTEGER: true(1)
.1.3.6.1.2.1.207.1.1.1.1.11.2.61.1 = INTEGER: true(1)
.1.3.6.1.2.1.207.1.1.1.1.11.2.62.2 = INTEGER: true(1)
.1.3.6.1.2.1.207.1.1.1.1.12.2.61.1 = Timeticks: (841) 0:00:08.41
.1.3.6.1.2.1.207.1.1.1.1.12.2.62.2 = Timeticks: (841) 0:00:08.41
.1.3.6.1.2.1.207.1.1.1.1.13.2.61.1 = INTEGER: active(1)
.1.3.6.1.2.1.207.1.1.1.1.13.2.62.2 = INTEGER: active(1)
.1.3.6.1.2.1.207.1.1.2.1.2.2.61.1.192.0.2.161 = INTEGER: active(1)
.1.3.6.1.2.1.207.1.1.2.1.2.2.61.1.192.0.2.162 = INTEGER: active(1)
.1.3.6.1.2.1.207.1.1.2.1.2.2.62.2.32.1.13.184.0.0.0.0.0.0.0.0.0.0.1.98 = INTEGER: active(1)
.1.3.6.1.2.1.207.1.2.1.0 = Counter64: 0
.1.3.6.1.2.1.207.1.2.2.0 = Counter64: 0
.1.3.6.1.2.1.207.1.2.3.0 = Counter64: 0
.1.3.6.1.2.1.207.1.2.4.0 = Timeticks: (0) 0:00:00.00
.1.3.6.1.2.1.207.1.2.5.1.1.2.61.1 = Counter32: 1
.1.3.6.1.2.1.207.1.2.5.1.1.2.62.2 = Counter32: 1
.1.3.6.1.2.1.207.1.2.5.1.2.2.61.1 = INTEGER: preempted(2)
.1.3.6.1.2.1.207.1.2.5.1.2.2.62.2 = INTEGER: preempted(2)
.1.3.6.1.2.1.207.1.2.5.1.3.2.61.1 = Counter64: 1
.1.3.6.1.2.1.207.1.2.5.1.3.2.62.2 = Counter64: 1
.1.3.6.1.2.1.207.1.2.5.1.4.2.61.1 = Counter64: 0
.1.3.6.1.2.1.207.1.2.5.1.4.2.62.2 = Counter64: 0
.1.3.6.1.2.1.207.1.2.5.1.5.2.61.1 = Counter64: 0
.1.3.6.1.2.1.207.1.2.5.1.5.2.62.2 = Counter64: 0
.1.3.6.1.2.1.207.1.2.5.1.6.2.61.1 = INTEGER: noError(0)
.1.3.6.1.2.1.207.1.2.5.1.6.2.62.2 = INTEGER: noError(0)
.1.3.6.1.2.1.207.1.2.5.1.7.2.61.1 = Counter64: 0
.1.3.6.1.2.1.207.1.2.5.1.7.2.62.2 = Counter64: 0
.1.3.6.1.2.1.207.1.2.5.1.8.2.61.1 = Counter64: 0
.1.3.6.1.2.1.207.1.2.5.1.8.2.62.2 = Counter64: 0
.1.3.6.1.2.1.207.1.2.5.1.9.2.61.1 = Counter64: 0
.1.3.6.1.2.1.207.1.2.5.1.9.2.62.2 = Counter64: 0
.1.3.6.1.2.1.207.1.2.5.1.10.2.61.1 = Counter64: 0
.1.3.6.1.2.1.207.1.2.5.1.10.2.62.2 = Counter64: 0
.1.3.6.1.2.1.207.1.2.5.1.11.2.61.1 = Counter64: 0
.1.3.6.1.2.1.207.1.2.5.1.11.2.62.2 = Counter64: 0
.1.3.6.1.2.1.207.1.2.5.1.12.2.61.1 = Timeticks: (0) 0:00:00.00
.1.3.6.1.2.1.207.1.2.5.1.12.2.62.2 = Timeticks: (0) 0:00:00.00
.1.3.6.1.2.1.207.1.2.5.1.13.2.61.1 = Gauge32: 1000 milliseconds
.1.3.6.1.2.1.207.1.2.5.1.13.2.62.2 = Gauge32: 500 milliseconds";

/// One instance's published state as it was during the walk.
pub fn status(name: &str, vrid: u8, version: u8, source: &str, master: &str) -> InstanceStatus {
    InstanceStatus {
        name: name.into(),
        vrid,
        interface: "eth0".into(),
        state: "MASTER",
        base_priority: 150,
        effective_priority: 150,
        source: source.into(),
        master: None,
        last_master: Some(master.into()),
        version,
        vips: Vec::new(),
        last_transition: None,
        stats: Stats {
            advert_rcvd: 1,
            become_master: 1,
            ..Stats::default()
        },
        trackers: Vec::new(),
        address_mismatch: None,
        sync_group: None,
    }
}

/// `snmpwalk -On`'s line read back as OID and value, the MIB's
/// decorations (enumeration labels, units, display hints) taken off.
fn walked(line: &str) -> (String, String) {
    let (oid, v) = line.split_once(" = ").unwrap();
    let (ty, v) = v.split_once(": ").unwrap_or((v, ""));
    let v = match ty {
        "INTEGER" => {
            // "master(3)", "1 seconds", "2"
            let v = v.split_whitespace().next().unwrap();
            match v.split_once('(') {
                Some((_, n)) => n.trim_end_matches(')').to_string(),
                None => v.to_string(),
            }
        }
        "Timeticks" => v
            .trim_start_matches('(')
            .split(')')
            .next()
            .unwrap()
            .to_string(),
        // A MacAddress shown with its display hint, else text.
        "STRING" => {
            let parts: Vec<&str> = v.split(':').collect();
            let mac = parts.len() == 6
                && parts
                    .iter()
                    .all(|x| (1..=2).contains(&x.len()) && u8::from_str_radix(x, 16).is_ok());
            let bytes: Vec<u8> = if mac {
                parts
                    .iter()
                    .map(|x| u8::from_str_radix(x, 16).unwrap())
                    .collect()
            } else {
                v.as_bytes().to_vec()
            };
            bytes
                .iter()
                .map(|x| format!("{x:02X}"))
                .collect::<Vec<_>>()
                .join(" ")
        }
        "Hex-STRING" => v.trim().to_string(),
        // Units after the number.
        "Gauge32" => v.split_whitespace().next().unwrap().to_string(),
        _ => v.to_string(),
    };
    let ty = match ty {
        "STRING" | "Hex-STRING" => "OCTETS",
        t => t,
    };
    (oid.to_string(), format!("{ty}: {v}"))
}

/// Our value in the same words.
fn ours(v: &Value) -> String {
    match v {
        Value::Integer(n) => format!("INTEGER: {n}"),
        Value::OctetString(b) => format!(
            "OCTETS: {}",
            b.iter()
                .map(|x| format!("{x:02X}"))
                .collect::<Vec<_>>()
                .join(" ")
        ),
        Value::IpAddress(a) => format!("IpAddress: {}.{}.{}.{}", a[0], a[1], a[2], a[3]),
        Value::Counter32(n) => format!("Counter32: {n}"),
        Value::Gauge32(n) => format!("Gauge32: {n}"),
        Value::Counter64(n) => format!("Counter64: {n}"),
        Value::TimeTicks(n) => format!("Timeticks: {n}"),
        v => format!("{v:?}"),
    }
}

/// Both instances as they were during the walks: MASTER, VI_1 having
/// heard 192.0.2.2 before.
fn walked_states() -> [InstanceStatus; 2] {
    [
        status("VI_1", 61, 2, "192.0.2.1", "192.0.2.2"),
        status("VI_2", 62, 3, "fe80::ff:fe00:1", "fe80::ff:fe00:1"),
    ]
}

/// The walked host's links: eth0 (ifIndex 2) and eth1 (3).
fn link(name: &str) -> Option<super::vrrp_mib::Link> {
    let (index, last) = match name {
        "eth0" => (2, 1),
        "eth1" => (3, 2),
        _ => return None,
    };
    Some(super::vrrp_mib::Link {
        index,
        mac: [2, 0, 0, 0, 0, last],
    })
}

/// The view as walked lines, for comparing with keepalived's.
pub fn lines(t: &Tree) -> Vec<(String, String)> {
    t.iter()
        .map(|(o, v)| (super::agentx::dotted(o), ours(v)))
        .collect()
}

#[test]
fn vrrp_mib_is_keepalived_s_walk() {
    let cfg = load_str(CONF).config;
    let st = walked_states();
    let pairs: Vec<_> = cfg.vrrp.instances.iter().zip(st.iter()).collect();
    let t = super::vrrp_mib::view(&pairs, &link, true);
    let want: Vec<(String, String)> = VRRP_MIB_WALK.lines().map(walked).collect();
    assert_eq!(lines(&t), want);
}

/// Times masked: the walk's uptimes count from keepalived's start.
fn untimed(l: (String, String)) -> (String, String) {
    if l.1.starts_with("Timeticks") {
        (l.0, "Timeticks: (time)".into())
    } else {
        l
    }
}

#[test]
fn vrrpv3_mib_is_keepalived_s_walk() {
    let cfg = load_str(CONF).config;
    let st = walked_states();
    let pairs: Vec<_> = cfg.vrrp.instances.iter().zip(st.iter()).collect();
    let t = super::vrrpv3_mib::view(&pairs, &link);
    let want: Vec<(String, String)> = VRRPV3_MIB_WALK.lines().map(walked).map(untimed).collect();
    let got: Vec<(String, String)> = lines(&t).into_iter().map(untimed).collect();
    assert_eq!(got, want);
}

/// The whole walked configuration.
const CONF_A: &str = "global_defs {
    router_id kbs_a
    enable_traps
    enable_snmp_vrrp
    enable_snmp_checker
    enable_snmp_rfcv2
    enable_snmp_rfcv3
    snmp_socket unix:/tmp/master
}
vrrp_script chk_true {
    script \"/bin/true\"
    interval 2
    weight 0
}
vrrp_sync_group G1 {
    group {
        VI_1
        VI_2
    }
    track_interface {
        trk0
    }
}
vrrp_instance VI_1 {
    state BACKUP
    interface eth0
    virtual_router_id 61
    priority 150
    advert_int 1
    authentication {
        auth_type PASS
        auth_pass secret1
    }
    virtual_ipaddress {
        192.0.2.161/24
        192.0.2.162/24 label eth0:vi1
    }
    virtual_ipaddress_excluded {
        198.51.100.161/24 dev eth1
    }
    virtual_routes {
        192.0.2.128/25 dev eth0 table 100
    }
    track_script {
        chk_true
    }
}
vrrp_instance VI_2 {
    state BACKUP
    interface eth0
    virtual_router_id 62
    version 3
    priority 150
    advert_int 0.5
    virtual_ipaddress {
        2001:db8::162/64
    }
}
virtual_server 192.0.2.200 80 {
    delay_loop 5
    lb_algo rr
    lb_kind NAT
    protocol TCP
    real_server 198.51.100.10 80 {
        weight 1
        TCP_CHECK {
            connect_timeout 2
        }
    }
    real_server 198.51.100.11 80 {
        weight 2
        TCP_CHECK {
            connect_timeout 2
        }
    }
}
";

/// keepalived's `snmpwalk -On` of KEEPALIVED-MIB for it.
const KEEPALIVED_MIB_WALK: &str =
    ".1.3.6.1.4.1.9586.100.5.1.1.0 = STRING: Keepalived v2.2.7 (01/16,2022)
.1.3.6.1.4.1.9586.100.5.1.2.0 = STRING: kbs_a
.1.3.6.1.4.1.9586.100.5.1.3.1.0 = INTEGER: ipv6(2)
.1.3.6.1.4.1.9586.100.5.1.3.2.0 = Hex-STRING: 00 00 00 00 
.1.3.6.1.4.1.9586.100.5.1.3.3.0 = Gauge32: 0 seconds
.1.3.6.1.4.1.9586.100.5.1.3.6.0 = Gauge32: 0
.1.3.6.1.4.1.9586.100.5.1.3.7.0 = INTEGER: enabled(1)
.1.3.6.1.4.1.9586.100.5.1.3.8.0 = INTEGER: unset(3)
.1.3.6.1.4.1.9586.100.5.1.3.9.0 = INTEGER: unset(3)
.1.3.6.1.4.1.9586.100.5.1.3.10.0 = INTEGER: unset(3)
.1.3.6.1.4.1.9586.100.5.1.4.0 = INTEGER: enabled(1)
.1.3.6.1.4.1.9586.100.5.1.5.0 = INTEGER: netlink(1)
.1.3.6.1.4.1.9586.100.5.1.6.0 = INTEGER: disabled(2)
.1.3.6.1.4.1.9586.100.5.1.7.0 = INTEGER: true(1)
.1.3.6.1.4.1.9586.100.5.1.8.0 = STRING: 
.1.3.6.1.4.1.9586.100.5.1.9.0 = INTEGER: false(2)
.1.3.6.1.4.1.9586.100.5.1.10.0 = INTEGER: false(2)
.1.3.6.1.4.1.9586.100.5.1.11.0 = INTEGER: disabled(2)
.1.3.6.1.4.1.9586.100.5.2.1.1.2.1 = STRING: G1
.1.3.6.1.4.1.9586.100.5.2.1.1.3.1 = INTEGER: master(2)
.1.3.6.1.4.1.9586.100.5.2.1.1.4.1 = INTEGER: disabled(2)
.1.3.6.1.4.1.9586.100.5.2.1.1.5.1 = INTEGER: disabled(2)
.1.3.6.1.4.1.9586.100.5.2.1.1.10.1 = INTEGER: disabled(2)
.1.3.6.1.4.1.9586.100.5.2.2.1.2.1.1 = STRING: VI_1
.1.3.6.1.4.1.9586.100.5.2.2.1.2.1.2 = STRING: VI_2
.1.3.6.1.4.1.9586.100.5.2.3.1.2.1 = STRING: VI_1
.1.3.6.1.4.1.9586.100.5.2.3.1.2.2 = STRING: VI_2
.1.3.6.1.4.1.9586.100.5.2.3.1.3.1 = Gauge32: 61
.1.3.6.1.4.1.9586.100.5.2.3.1.3.2 = Gauge32: 62
.1.3.6.1.4.1.9586.100.5.2.3.1.4.1 = INTEGER: master(2)
.1.3.6.1.4.1.9586.100.5.2.3.1.4.2 = INTEGER: master(2)
.1.3.6.1.4.1.9586.100.5.2.3.1.5.1 = INTEGER: backup(1)
.1.3.6.1.4.1.9586.100.5.2.3.1.5.2 = INTEGER: backup(1)
.1.3.6.1.4.1.9586.100.5.2.3.1.6.1 = INTEGER: master(2)
.1.3.6.1.4.1.9586.100.5.2.3.1.6.2 = INTEGER: master(2)
.1.3.6.1.4.1.9586.100.5.2.3.1.7.1 = INTEGER: 150
.1.3.6.1.4.1.9586.100.5.2.3.1.7.2 = INTEGER: 150
.1.3.6.1.4.1.9586.100.5.2.3.1.8.1 = INTEGER: 150
.1.3.6.1.4.1.9586.100.5.2.3.1.8.2 = INTEGER: 150
.1.3.6.1.4.1.9586.100.5.2.3.1.9.1 = INTEGER: allSet(1)
.1.3.6.1.4.1.9586.100.5.2.3.1.9.2 = INTEGER: allSet(1)
.1.3.6.1.4.1.9586.100.5.2.3.1.10.1 = STRING: eth0
.1.3.6.1.4.1.9586.100.5.2.3.1.10.2 = STRING: eth0
.1.3.6.1.4.1.9586.100.5.2.3.1.11.1 = INTEGER: notTracked(2)
.1.3.6.1.4.1.9586.100.5.2.3.1.11.2 = INTEGER: notTracked(2)
.1.3.6.1.4.1.9586.100.5.2.3.1.12.1 = Gauge32: 1 seconds(VRRPv2) / centiseconds(VRRPv3)
.1.3.6.1.4.1.9586.100.5.2.3.1.12.2 = Gauge32: 50 seconds(VRRPv2) / centiseconds(VRRPv3)
.1.3.6.1.4.1.9586.100.5.2.3.1.13.1 = INTEGER: preempt(1)
.1.3.6.1.4.1.9586.100.5.2.3.1.13.2 = INTEGER: preempt(1)
.1.3.6.1.4.1.9586.100.5.2.3.1.14.1 = Gauge32: 0 seconds
.1.3.6.1.4.1.9586.100.5.2.3.1.14.2 = Gauge32: 0 seconds
.1.3.6.1.4.1.9586.100.5.2.3.1.15.1 = INTEGER: password(1)
.1.3.6.1.4.1.9586.100.5.2.3.1.15.2 = INTEGER: none(0)
.1.3.6.1.4.1.9586.100.5.2.3.1.16.1 = INTEGER: disabled(2)
.1.3.6.1.4.1.9586.100.5.2.3.1.16.2 = INTEGER: disabled(2)
.1.3.6.1.4.1.9586.100.5.2.3.1.18.1 = STRING: G1
.1.3.6.1.4.1.9586.100.5.2.3.1.18.2 = STRING: G1
.1.3.6.1.4.1.9586.100.5.2.3.1.19.1 = Gauge32: 5 seconds
.1.3.6.1.4.1.9586.100.5.2.3.1.19.2 = Gauge32: 5 seconds
.1.3.6.1.4.1.9586.100.5.2.3.1.20.1 = INTEGER: disabled(2)
.1.3.6.1.4.1.9586.100.5.2.3.1.20.2 = INTEGER: disabled(2)
.1.3.6.1.4.1.9586.100.5.2.3.1.21.1 = INTEGER: disabled(2)
.1.3.6.1.4.1.9586.100.5.2.3.1.21.2 = INTEGER: disabled(2)
.1.3.6.1.4.1.9586.100.5.2.3.1.27.1 = INTEGER: 0
.1.3.6.1.4.1.9586.100.5.2.3.1.27.2 = INTEGER: true(1)
.1.3.6.1.4.1.9586.100.5.2.3.1.28.1 = INTEGER: false(2)
.1.3.6.1.4.1.9586.100.5.2.3.1.28.2 = INTEGER: false(2)
.1.3.6.1.4.1.9586.100.5.2.3.1.29.1 = INTEGER: false(2)
.1.3.6.1.4.1.9586.100.5.2.3.1.29.2 = INTEGER: false(2)
.1.3.6.1.4.1.9586.100.5.2.3.1.30.1 = INTEGER: vrrpv2(2)
.1.3.6.1.4.1.9586.100.5.2.3.1.30.2 = INTEGER: vrrpv3(3)
.1.3.6.1.4.1.9586.100.5.2.3.1.33.1 = INTEGER: false(2)
.1.3.6.1.4.1.9586.100.5.2.3.1.33.2 = INTEGER: false(2)
.1.3.6.1.4.1.9586.100.5.2.3.1.34.1 = INTEGER: ipv4(1)
.1.3.6.1.4.1.9586.100.5.2.3.1.34.2 = INTEGER: ipv6(2)
.1.3.6.1.4.1.9586.100.5.2.3.1.35.1 = Hex-STRING: E0 00 00 12 
.1.3.6.1.4.1.9586.100.5.2.3.1.35.2 = Hex-STRING: FF 02 00 00 00 00 00 00 00 00 00 00 00 00 00 12 
.1.3.6.1.4.1.9586.100.5.2.5.1.2.1.1 = STRING: chk_true
.1.3.6.1.4.1.9586.100.5.2.5.1.3.1.1 = INTEGER: 0
.1.3.6.1.4.1.9586.100.5.2.5.1.4.1.1 = INTEGER: false(2)
.1.3.6.1.4.1.9586.100.5.2.6.1.2.1.1 = INTEGER: ipv4(1)
.1.3.6.1.4.1.9586.100.5.2.6.1.2.1.2 = INTEGER: ipv4(1)
.1.3.6.1.4.1.9586.100.5.2.6.1.2.1.3 = INTEGER: ipv4(1)
.1.3.6.1.4.1.9586.100.5.2.6.1.2.2.1 = INTEGER: ipv6(2)
.1.3.6.1.4.1.9586.100.5.2.6.1.3.1.1 = Hex-STRING: C0 00 02 A1 
.1.3.6.1.4.1.9586.100.5.2.6.1.3.1.2 = Hex-STRING: C0 00 02 A2 
.1.3.6.1.4.1.9586.100.5.2.6.1.3.1.3 = Hex-STRING: C6 33 64 A1 
.1.3.6.1.4.1.9586.100.5.2.6.1.3.2.1 = Hex-STRING: 20 01 0D B8 00 00 00 00 00 00 00 00 00 00 01 62 
.1.3.6.1.4.1.9586.100.5.2.6.1.4.1.1 = Hex-STRING: 00 00 00 00 
.1.3.6.1.4.1.9586.100.5.2.6.1.4.1.2 = Hex-STRING: 00 00 00 00 
.1.3.6.1.4.1.9586.100.5.2.6.1.4.1.3 = Hex-STRING: 00 00 00 00 
.1.3.6.1.4.1.9586.100.5.2.6.1.5.1.1 = Gauge32: 24
.1.3.6.1.4.1.9586.100.5.2.6.1.5.1.2 = Gauge32: 24
.1.3.6.1.4.1.9586.100.5.2.6.1.5.1.3 = Gauge32: 24
.1.3.6.1.4.1.9586.100.5.2.6.1.5.2.1 = Gauge32: 64
.1.3.6.1.4.1.9586.100.5.2.6.1.6.1.1 = INTEGER: global(14)
.1.3.6.1.4.1.9586.100.5.2.6.1.6.1.2 = INTEGER: global(14)
.1.3.6.1.4.1.9586.100.5.2.6.1.6.1.3 = INTEGER: global(14)
.1.3.6.1.4.1.9586.100.5.2.6.1.6.2.1 = INTEGER: global(14)
.1.3.6.1.4.1.9586.100.5.2.6.1.7.1.1 = INTEGER: 2
.1.3.6.1.4.1.9586.100.5.2.6.1.7.1.2 = INTEGER: 2
.1.3.6.1.4.1.9586.100.5.2.6.1.7.1.3 = INTEGER: 3
.1.3.6.1.4.1.9586.100.5.2.6.1.7.2.1 = INTEGER: 2
.1.3.6.1.4.1.9586.100.5.2.6.1.8.1.1 = STRING: eth0
.1.3.6.1.4.1.9586.100.5.2.6.1.8.1.2 = STRING: eth0
.1.3.6.1.4.1.9586.100.5.2.6.1.8.1.3 = STRING: eth1
.1.3.6.1.4.1.9586.100.5.2.6.1.8.2.1 = STRING: eth0
.1.3.6.1.4.1.9586.100.5.2.6.1.9.1.2 = STRING: eth0:vi1
.1.3.6.1.4.1.9586.100.5.2.6.1.10.1.1 = INTEGER: set(1)
.1.3.6.1.4.1.9586.100.5.2.6.1.10.1.2 = INTEGER: set(1)
.1.3.6.1.4.1.9586.100.5.2.6.1.10.1.3 = INTEGER: set(1)
.1.3.6.1.4.1.9586.100.5.2.6.1.10.2.1 = INTEGER: set(1)
.1.3.6.1.4.1.9586.100.5.2.6.1.11.1.1 = INTEGER: advertised(1)
.1.3.6.1.4.1.9586.100.5.2.6.1.11.1.2 = INTEGER: advertised(1)
.1.3.6.1.4.1.9586.100.5.2.6.1.11.1.3 = INTEGER: notAdvertised(2)
.1.3.6.1.4.1.9586.100.5.2.6.1.11.2.1 = INTEGER: notAdvertised(2)
.1.3.6.1.4.1.9586.100.5.2.7.1.2.1.1 = INTEGER: ipv4(1)
.1.3.6.1.4.1.9586.100.5.2.7.1.3.1.1 = Hex-STRING: C0 00 02 80 
.1.3.6.1.4.1.9586.100.5.2.7.1.4.1.1 = Gauge32: 25
.1.3.6.1.4.1.9586.100.5.2.7.1.8.1.1 = Gauge32: 0
.1.3.6.1.4.1.9586.100.5.2.7.1.9.1.1 = INTEGER: global(14)
.1.3.6.1.4.1.9586.100.5.2.7.1.10.1.1 = INTEGER: unicast(1)
.1.3.6.1.4.1.9586.100.5.2.7.1.11.1.1 = INTEGER: 2
.1.3.6.1.4.1.9586.100.5.2.7.1.12.1.1 = STRING: eth0
.1.3.6.1.4.1.9586.100.5.2.7.1.13.1.1 = Gauge32: 100
.1.3.6.1.4.1.9586.100.5.2.7.1.14.1.1 = INTEGER: set(1)
.1.3.6.1.4.1.9586.100.5.2.7.1.18.1.1 = INTEGER: 19
.1.3.6.1.4.1.9586.100.5.2.7.1.19.1.1 = INTEGER: false(2)
.1.3.6.1.4.1.9586.100.5.2.7.1.20.1.1 = INTEGER: false(2)
.1.3.6.1.4.1.9586.100.5.2.9.1.2.1 = STRING: chk_true
.1.3.6.1.4.1.9586.100.5.2.9.1.3.1 = STRING: '/usr/bin/true'
.1.3.6.1.4.1.9586.100.5.2.9.1.4.1 = INTEGER: 2 seconds
.1.3.6.1.4.1.9586.100.5.2.9.1.5.1 = INTEGER: 0
.1.3.6.1.4.1.9586.100.5.2.9.1.6.1 = INTEGER: good(3)
.1.3.6.1.4.1.9586.100.5.2.9.1.7.1 = Gauge32: 1
.1.3.6.1.4.1.9586.100.5.2.9.1.8.1 = Gauge32: 1
.1.3.6.1.4.1.9586.100.5.2.9.1.9.1 = INTEGER: false(2)
.1.3.6.1.4.1.9586.100.5.2.14.1.1.1.1 = STRING: trk0
.1.3.6.1.4.1.9586.100.5.2.14.1.2.1.1 = INTEGER: 0
.1.3.6.1.4.1.9586.100.5.2.14.1.3.1.1 = INTEGER: false(2)";

#[test]
fn keepalived_mib_global_and_vrrp_tables_are_keepalived_s_walk() {
    let cfg = load_str(CONF_A).config;
    let mut st = walked_states();
    for s in &mut st {
        s.sync_group = Some("G1 MASTER".into());
    }
    st[0].trackers.push(crate::vrrp::status::TrackerStatus {
        kind: "script",
        name: "chk_true".into(),
        up: Some(true),
        weight: 0,
    });
    let pairs: Vec<_> = cfg.vrrp.instances.iter().zip(st.iter()).collect();
    let mut t = super::keepalived_mib::global(&cfg, "Keepalived v2.2.7 (01/16,2022)");
    let resolve = |p: &str| {
        if p == "/bin/true" {
            "/usr/bin/true".to_string()
        } else {
            p.to_string()
        }
    };
    for (o, v) in super::keepalived_mib::vrrp(&cfg, &pairs, &link, &resolve).iter() {
        t.set(o, &[], v.clone());
    }
    // The whole walk: every table in it is built.
    let want: Vec<(String, String)> = KEEPALIVED_MIB_WALK.lines().map(walked).collect();
    assert_eq!(lines(&t), want);
}
