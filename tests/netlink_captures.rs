//! The IPVS packet layer against bytes captured from the real kernel.
//!
//! Each file of `tests/fixtures/netlink/` is the generic netlink traffic of
//! one ipvsadm command (named on its first line), captured with nlmon in the
//! guest by `compat-tests/capture-netlink.sh`: `>` lines went to the kernel,
//! `<` lines came back. Every message must decode and re-encode to the same
//! bytes; requests must decode to the operation the command makes; replies
//! of dumps must decode to the table ipvsadm printed.

use keepalived::ipvs::genl;
use keepalived::ipvs::genl::{op_from_message, IpvsAttr, IpvsMessage};
use keepalived::ipvs::netlink::frames;
use keepalived::ipvs::table::{Table, TableService};
use netlink_packet_core::{NetlinkMessage, NetlinkPayload};
use netlink_packet_generic::GenlMessage;
use std::path::Path;

type Msg = NetlinkMessage<GenlMessage<IpvsMessage>>;

struct Capture {
    command: String,
    /// (to the kernel, message bytes)
    messages: Vec<(bool, Vec<u8>)>,
}

fn hex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex"))
        .collect()
}

fn load(name: &str) -> Capture {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/netlink")
        .join(format!("{name}.txt"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path:?}: {e}"));
    let mut command = String::new();
    let mut messages = Vec::new();
    for line in text.lines() {
        if let Some(c) = line.strip_prefix("# ") {
            if command.is_empty() {
                command = c.to_string();
            }
        } else if let Some((dir, h)) = line.split_once(' ') {
            let datagram = hex(h.trim());
            for f in frames(&datagram).expect("datagram splits into messages") {
                messages.push((dir == ">", f.to_vec()));
            }
        }
    }
    Capture { command, messages }
}

fn all_fixtures() -> Vec<String> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/netlink");
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .expect("fixtures")
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            e.file_name()
                .to_str()?
                .strip_suffix(".txt")
                .map(String::from)
        })
        .collect();
    v.sort();
    v
}

fn decode(bytes: &[u8]) -> Msg {
    Msg::deserialize(bytes).unwrap_or_else(|e| panic!("decode {}: {e}", hexs(bytes)))
}

fn hexs(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn requests(c: &Capture) -> Vec<IpvsMessage> {
    c.messages
        .iter()
        .filter(|(to_kernel, _)| *to_kernel)
        .filter_map(|(_, b)| match decode(b).payload {
            NetlinkPayload::InnerMessage(g) => Some(g.payload),
            _ => None,
        })
        .collect()
}

fn replies(c: &Capture) -> Vec<IpvsMessage> {
    c.messages
        .iter()
        .filter(|(to_kernel, _)| !*to_kernel)
        .filter_map(|(_, b)| match decode(b).payload {
            NetlinkPayload::InnerMessage(g) => Some(g.payload),
            _ => None,
        })
        .collect()
}

fn ops(name: &str) -> Vec<String> {
    requests(&load(name))
        .iter()
        .filter_map(op_from_message)
        .map(|o| o.to_string())
        .collect()
}

#[test]
fn every_captured_message_round_trips_byte_for_byte() {
    let names = all_fixtures();
    assert!(names.len() >= 20, "fixtures missing: {names:?}");
    let mut count = 0;
    for name in names {
        let c = load(&name);
        assert!(!c.messages.is_empty(), "{name}: empty capture");
        for (_, bytes) in &c.messages {
            let mut m = decode(bytes);
            m.finalize();
            let mut out = vec![0u8; m.buffer_len()];
            m.serialize(&mut out);
            assert_eq!(
                hexs(&out),
                hexs(bytes),
                "{name} ({}): re-encoding differs",
                c.command
            );
            count += 1;
        }
    }
    eprintln!("{count} captured messages round-trip");
}

#[test]
fn requests_decode_to_the_operations_ipvsadm_made() {
    let cases: &[(&str, &str)] = &[
        ("add-service-tcp", "-A -t 10.0.0.1:80 -s rr"),
        (
            "add-dest-masq",
            "-a -t 10.0.0.1:80 -r 127.0.0.2:8080 -m -w 3 -x 100 -y 10",
        ),
        ("edit-dest", "-e -t 10.0.0.1:80 -r 127.0.0.2:8080 -m -w 5"),
        (
            "add-service-persistent",
            "-A -t 10.0.0.2:443 -s wlc -p 300 -M 255.255.255.0",
        ),
        (
            "add-service-sh-flags",
            "-A -t 10.0.0.3:80 -s sh -b sh-fallback,sh-port",
        ),
        ("add-service-udp-ops", "-A -u 10.0.0.4:53 -s rr -o"),
        (
            "add-service-pe-sip",
            "-A -u 10.0.0.5:5060 -s rr -p 60 --pe sip",
        ),
        ("add-service-fwmark", "-A -f 7 -s wrr"),
        ("add-dest-fwmark-dr", "-a -f 7 -r 127.0.0.3:0 -g -w 2"),
        ("add-service-v6", "-A -t [2001:db8::1]:80 -s lc -p 60 -M 64"),
        (
            "add-dest-v6",
            "-a -t [2001:db8::1]:80 -r [::1]:8080 -m -w 1",
        ),
        (
            "add-dest-tun-gue",
            "-a -t 10.0.0.1:80 -r 127.0.0.4:80 -i -w 1 --tun-type gue --tun-port 6080 --tun-csum",
        ),
        (
            "add-dest-tun-gre",
            "-a -t 10.0.0.1:80 -r 127.0.0.5:80 -i -w 1 --tun-type gre --tun-csum",
        ),
        ("edit-service", "-E -t 10.0.0.1:80 -s wrr"),
        ("del-dest", "-d -t 10.0.0.1:80 -r 127.0.0.2:8080"),
        ("del-service", "-D -t 10.0.0.2:443"),
        ("flush", "-C"),
    ];
    for (name, want) in cases {
        assert_eq!(ops(name), vec![want.to_string()], "{name}");
    }
}

#[test]
fn our_requests_carry_what_ipvsadm_sends() {
    // Re-encoding the decoded operation with our own builder must give a
    // request the kernel reads the same way: decode ours back to the same op.
    for name in all_fixtures() {
        for req in requests(&load(&name)) {
            let Some(op) = op_from_message(&req) else {
                continue;
            };
            let ours = genl::op_message(&op);
            assert_eq!(ours.cmd, req.cmd, "{name}");
            assert_eq!(op_from_message(&ours), Some(op.clone()), "{name}: {op}");
        }
    }
}

#[test]
fn dump_replies_decode_to_the_table() {
    let c = load("dump-table");
    let mut t = Table::default();
    // Destination replies carry no service: they answer the GET_DEST
    // request before them, whose service nest names it.
    let mut current = None;
    for (to_kernel, bytes) in &c.messages {
        let NetlinkPayload::InnerMessage(g) = decode(bytes).payload else {
            continue;
        };
        for a in &g.payload.attrs {
            match (to_kernel, a) {
                (true, IpvsAttr::Service(s)) => {
                    current = Some(genl::service_from_attrs(s).expect("service").key);
                }
                (false, IpvsAttr::Service(s)) => {
                    let svc = genl::service_from_attrs(s).expect("service");
                    t.services.insert(
                        svc.key,
                        TableService {
                            service: svc,
                            dests: Default::default(),
                        },
                    );
                }
                (false, IpvsAttr::Dest(d)) => {
                    let k = current.expect("a GET_DEST request before its replies");
                    let dest = genl::dest_from_attrs(k.af(), d).expect("dest");
                    t.services
                        .get_mut(&k)
                        .unwrap()
                        .dests
                        .insert(dest.key(), dest);
                }
                _ => {}
            }
        }
    }
    let mut got: Vec<&str> = Vec::new();
    let saved = t.save();
    got.extend(saved.lines());
    got.sort();
    let mut want = vec![
        "-A -f 7 -s wrr",
        "-A -t 10.0.0.1:80 -s wrr",
        "-A -t 10.0.0.2:443 -s wlc -p 300 -M 255.255.255.0",
        "-A -t 10.0.0.3:80 -s sh -b sh-fallback,sh-port",
        "-A -t [2001:db8::1]:80 -s lc -p 60 -M 64",
        "-A -u 10.0.0.4:53 -s rr -o",
        "-A -u 10.0.0.5:5060 -s rr -p 60 --pe sip",
        "-a -f 7 -r 127.0.0.3:0 -g -w 2",
        "-a -t 10.0.0.1:80 -r 127.0.0.2:8080 -m -w 5",
        "-a -t 10.0.0.1:80 -r 127.0.0.4:80 -i -w 1 --tun-type gue --tun-port 6080 --tun-csum",
        "-a -t 10.0.0.1:80 -r 127.0.0.5:80 -i -w 1 --tun-type gre --tun-csum",
        "-a -t [2001:db8::1]:80 -r [::1]:8080 -m -w 1",
    ];
    want.sort();
    assert_eq!(got, want);
}

#[test]
fn kernel_refusals_carry_their_errno() {
    let errno_of = |name: &str| -> Vec<i32> {
        load(name)
            .messages
            .iter()
            .filter(|(to_kernel, _)| !*to_kernel)
            .filter_map(|(_, b)| match decode(b).payload {
                NetlinkPayload::Error(e) => e.code.map(|c| -c.get()),
                _ => None,
            })
            .collect()
    };
    assert_eq!(errno_of("error-exists"), vec![17], "EEXIST");
    assert_eq!(errno_of("error-no-service"), vec![3], "ESRCH");
}

#[test]
fn timeouts_and_daemons_decode() {
    let set = requests(&load("set-timeouts"));
    let set = set
        .iter()
        .find(|m| m.cmd == genl::IpvsCmd::SetConfig)
        .expect("SET_CONFIG");
    assert_eq!(
        set.attrs,
        vec![
            IpvsAttr::TimeoutTcp(1000),
            IpvsAttr::TimeoutTcpFin(100),
            IpvsAttr::TimeoutUdp(200)
        ]
    );
    let got = replies(&load("get-timeouts"));
    assert!(got
        .iter()
        .any(|m| m.attrs.contains(&IpvsAttr::TimeoutTcp(1000))));
    let daemons = replies(&load("list-daemons"));
    let d = daemons
        .iter()
        .flat_map(|m| &m.attrs)
        .find_map(|a| match a {
            IpvsAttr::Daemon(d) => Some(d.clone()),
            _ => None,
        })
        .expect("a daemon in the dump");
    assert!(d.contains(&genl::DaemonAttr::State(1)), "{d:?}");
    assert!(
        d.contains(&genl::DaemonAttr::McastIfn("lo".into())),
        "{d:?}"
    );
    assert!(d.contains(&genl::DaemonAttr::SyncId(5)), "{d:?}");
    // Every optional daemon attribute as ipvsadm sends it; the multicast
    // port travels in host order, unlike service and destination ports.
    let start = requests(&load("start-daemon-attrs"));
    let d = start
        .iter()
        .flat_map(|m| &m.attrs)
        .find_map(|a| match a {
            IpvsAttr::Daemon(d) => Some(d.clone()),
            _ => None,
        })
        .expect("NEW_DAEMON");
    for want in [
        genl::DaemonAttr::State(2),
        genl::DaemonAttr::SyncId(6),
        genl::DaemonAttr::SyncMaxlen(1400),
        genl::DaemonAttr::McastGroup([224, 0, 0, 81]),
        genl::DaemonAttr::McastPort(8848),
        genl::DaemonAttr::McastTtl(2),
    ] {
        assert!(d.contains(&want), "{want:?} not in {d:?}");
    }
    let info = replies(&load("info"));
    assert!(info
        .iter()
        .flat_map(|m| &m.attrs)
        .any(|a| matches!(a, IpvsAttr::InfoVersion(v) if *v >> 16 == 1)));
}

#[test]
fn unknown_attributes_are_kept_and_missing_family_tolerated() {
    use keepalived::ipvs::genl::{DestAttr, SvcAttr};
    use netlink_packet_core::DefaultNla;
    // A service reply from a newer kernel with an attribute we do not know.
    let c = load("dump-table");
    let (_, bytes) = c
        .messages
        .iter()
        .find(|(to_kernel, b)| {
            !*to_kernel
                && matches!(decode(b).payload, NetlinkPayload::InnerMessage(ref g)
                    if g.payload.attrs.iter().any(|a| matches!(a, IpvsAttr::Service(_))))
        })
        .expect("a service reply");
    let mut m = decode(bytes);
    if let NetlinkPayload::InnerMessage(g) = &mut m.payload {
        for a in &mut g.payload.attrs {
            if let IpvsAttr::Service(s) = a {
                s.push(SvcAttr::Other(DefaultNla::new(99, vec![1, 2, 3, 4])));
            }
        }
    }
    m.finalize();
    let mut buf = vec![0u8; m.buffer_len()];
    m.serialize(&mut buf);
    let back = decode(&buf);
    let NetlinkPayload::InnerMessage(g) = back.payload else {
        panic!("not a message")
    };
    let s = g
        .payload
        .attrs
        .iter()
        .find_map(|a| match a {
            IpvsAttr::Service(s) => Some(s.clone()),
            _ => None,
        })
        .unwrap();
    assert!(s.contains(&SvcAttr::Other(DefaultNla::new(99, vec![1, 2, 3, 4]))));
    assert!(
        genl::service_from_attrs(&s).is_ok(),
        "an unknown attribute is not fatal"
    );

    // An IPv6 destination without IPVS_DEST_ATTR_ADDR_FAMILY (kernels before
    // 4.x): the service's family is used.
    let c = load("add-dest-v6");
    let req = requests(&c)
        .into_iter()
        .find(|m| m.cmd == genl::IpvsCmd::NewDest)
        .unwrap();
    let mut dest = req
        .attrs
        .iter()
        .find_map(|a| match a {
            IpvsAttr::Dest(d) => Some(d.clone()),
            _ => None,
        })
        .unwrap();
    dest.retain(|a| !matches!(a, DestAttr::AddrFamily(_)));
    let d = genl::dest_from_attrs(keepalived::ipvs::table::AF_INET6, &dest).unwrap();
    assert_eq!(d.addr.to_string(), "::1");
}

#[test]
fn batched_encoding_matches_the_message_library() {
    use keepalived::ipvs::netlink::encode_request;
    use netlink_packet_core::{NLM_F_ACK, NLM_F_REQUEST};
    // Every captured request, re-encoded by our batch encoder into one
    // buffer, must split back into the same messages.
    let mut batch = Vec::new();
    let mut want = Vec::new();
    for name in all_fixtures() {
        let c = load(&name);
        for (to_kernel, bytes) in &c.messages {
            let m = decode(bytes);
            let (true, NetlinkPayload::InnerMessage(g)) = (*to_kernel, m.payload) else {
                continue;
            };
            let seq = want.len() as u32 + 1;
            encode_request(
                m.header.message_type,
                seq,
                NLM_F_REQUEST | NLM_F_ACK,
                &g.payload,
                &mut batch,
            );
            want.push((m.header.message_type, seq, g.payload));
        }
    }
    let got = frames(&batch).expect("frames");
    assert_eq!(got.len(), want.len());
    for (bytes, (ty, seq, msg)) in got.iter().zip(want) {
        let m = decode(bytes);
        assert_eq!((m.header.message_type, m.header.sequence_number), (ty, seq));
        assert_eq!(m.header.flags, NLM_F_REQUEST | NLM_F_ACK);
        let NetlinkPayload::InnerMessage(g) = m.payload else {
            panic!()
        };
        assert_eq!(g.payload, msg);
    }
}

/// The drift check's and the connection count's reader, which takes a
/// destination straight from a reply's bytes, reads every destination the
/// kernel sent in these captures as the full decoding does.
#[test]
fn destinations_read_from_the_bytes_equal_the_decoded_ones() {
    let mut seen = 0;
    for name in all_fixtures() {
        let c = load(&name);
        for (to_kernel, bytes) in &c.messages {
            let NetlinkPayload::InnerMessage(g) = decode(bytes).payload else {
                continue;
            };
            for af in [2u16, 10] {
                let fast = genl::dest_entry(af, &bytes[16..]).expect("reads");
                let full = g.payload.attrs.iter().find_map(|a| match a {
                    IpvsAttr::Dest(d) => Some((
                        genl::dest_from_attrs(af, d).expect("dest"),
                        d.iter()
                            .find_map(|a| match a {
                                genl::DestAttr::ActiveConns(n) => Some(*n),
                                _ => None,
                            })
                            .unwrap_or(0),
                    )),
                    _ => None,
                });
                assert_eq!(fast, full, "{name}: {}", hexs(bytes));
                if fast.is_some() && !to_kernel {
                    seen += 1;
                }
            }
        }
    }
    assert!(
        seen >= 10,
        "only {seen} destinations in the kernel's replies"
    );
}
