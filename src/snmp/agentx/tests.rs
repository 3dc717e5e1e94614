//! The codec against the PDUs keepalived 2.2.7 (net-snmp 5.9.3's agent
//! library) and snmpd exchanged (`../shared/snmp-fixtures/agentx/`).

use super::*;

fn hex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

/// (direction and type, bytes) as captured.
const CAPTURED: &[(&str, &str)] = &[
    ("> Open", "010100000000000000000000ddbefe7a3c000000010000000504000001000000881f000003000000020000000a000000190000004e65742d534e4d50204167656e7458207375622d6167656e74000000"),
    ("< Response", "011200000600000000000000ddbefe7a440000009b00000000000000040000000504000001000000881f000003000000020000000a000000190000004e65742d534e4d50204167656e7458207375622d6167656e74000000"),
    ("> Register", "010308000600000000000000debefe7a2400000000000000ff7f000006040000010000007225000064000000050000000100000001000000"),
    ("> AddAgentCaps", "011000000600000000000000f2befe7a3c0000000504000001000000722500006400000005000000010000001d000000546865204d4942206d6f64756c6520666f72204b656570616c69766564000000"),
    ("> Notify", "010c000006000000000000000ec0fe7a18010000430000000402000001000000010000000300000000000000a100000006000000060600000300000001000000010000000400000001000000000000000804010001000000722500006400000005000000020000000a0000000000000002000000040000000804000001000000722500006400000005000000020000000300000001000000020000000400000056495f3102000000080400000100000072250000640000000500000002000000030000000100000004000000010000000200000008040000010000007225000064000000050000000200000003000000010000000500000001000000040000000704000001000000722500006400000005000000010000000200000000000000050000006b62735f61000000"),
    ("< Get", "010508000600000001000000020000002800000000000000070400000100000072250000640000000500000001000000010000000000000000000000"),
    ("> Response", "01120800060000000100000002000000540000000000000000000000000000000400000007040000010000007225000064000000050000000100000001000000000000001e0000004b656570616c697665642076322e322e37202830312f31362c32303232290000"),
    ("< GetNext", "010608000600000003000000040000004c00000000000000080400000100000072250000640000000500000002000000030000000100000002000000080400000100000072250000640000000500000002000000030000000100000003000000"),
    ("> Close", "01020000060000000000000023c0fe7a0400000005000000"),
];

fn captured(what: &str) -> Vec<u8> {
    hex(CAPTURED.iter().find(|(w, _)| *w == what).unwrap().1)
}

#[test]
fn every_captured_pdu_decodes_and_encodes_to_the_same_bytes() {
    for (what, h) in CAPTURED {
        let b = hex(h);
        let m = decode(&b).unwrap_or_else(|e| panic!("{what}: {e}"));
        let again = encode(
            &m.pdu,
            m.ids,
            m.flags & flags::NETWORK_BYTE_ORDER != 0,
            m.context.as_deref(),
        );
        assert_eq!(again, b, "{what}: {m:?}");
        let mut head = [0u8; HEADER_LEN];
        head.copy_from_slice(&b[..HEADER_LEN]);
        assert_eq!(payload_len(&head).unwrap() as usize, b.len() - HEADER_LEN);
    }
}

#[test]
fn the_captured_pdus_say_what_the_capture_decoded() {
    let open = decode(&captured("> Open")).unwrap();
    assert_eq!(
        open.pdu,
        Pdu::Open {
            timeout: 1,
            id: vec![1, 3, 6, 1, 4, 1, 8072, 3, 2, 10],
            descr: b"Net-SNMP AgentX sub-agent".to_vec(),
        }
    );
    let reg = decode(&captured("> Register")).unwrap();
    assert_eq!(reg.ids.session, 6);
    assert_eq!(reg.context, Some(Vec::new()));
    assert_eq!(
        reg.pdu,
        Pdu::Register {
            timeout: 255,
            priority: 127,
            subtree: vec![1, 3, 6, 1, 4, 1, 9586, 100, 5, 1, 1],
        }
    );
    let next = decode(&captured("< GetNext")).unwrap();
    assert_eq!(
        next.pdu,
        Pdu::GetNext(vec![SearchRange {
            start: vec![1, 3, 6, 1, 4, 1, 9586, 100, 5, 2, 3, 1, 2],
            include: false,
            end: vec![1, 3, 6, 1, 4, 1, 9586, 100, 5, 2, 3, 1, 3],
        }])
    );
    let Pdu::Notify(vbs) = decode(&captured("> Notify")).unwrap().pdu else {
        panic!("not a Notify");
    };
    assert_eq!(vbs[0].name, vec![1, 3, 6, 1, 2, 1, 1, 3, 0]);
    assert_eq!(vbs[0].value, Value::TimeTicks(161));
    assert_eq!(
        vbs[1].value,
        Value::ObjectId(vec![1, 3, 6, 1, 4, 1, 9586, 100, 5, 2, 10, 0, 2])
    );
    assert_eq!(vbs[2].value, Value::text("VI_1"));
    let Pdu::Response { vbs, .. } = decode(&captured("> Response")).unwrap().pdu else {
        panic!("not a Response");
    };
    assert_eq!(vbs[0].value, Value::text("Keepalived v2.2.7 (01/16,2022)"));
    assert_eq!(
        decode(&captured("> Close")).unwrap().pdu,
        Pdu::Close { reason: 5 }
    );
}

#[test]
fn binary_values_and_both_byte_orders_round_trip() {
    let vbs = vec![
        VarBind {
            name: vec![1, 3, 6, 1, 2, 1, 68, 1, 3, 1, 2, 2, 61],
            value: Value::OctetString(vec![2, 0, 0, 0xff, 0xfe, 1]),
        },
        VarBind {
            name: vec![1, 3, 6, 1, 2, 1, 68, 1, 3, 1, 7, 2, 61],
            value: Value::IpAddress([192, 0, 2, 2]),
        },
        VarBind {
            name: vec![1, 3, 6, 1, 2, 1, 207, 1, 2, 2, 0],
            value: Value::Counter64(0x1_0000_0002),
        },
        VarBind {
            name: vec![2, 1],
            value: Value::Integer(-3),
        },
        VarBind {
            name: vec![1, 3, 6, 1, 2, 1, 68, 1, 1, 0],
            value: Value::EndOfMibView,
        },
    ];
    for big in [false, true] {
        let pdu = Pdu::Response {
            uptime: 7,
            error: 0,
            index: 0,
            vbs: vbs.clone(),
        };
        let ids = Ids {
            session: 9,
            transaction: 8,
            packet: 7,
        };
        let b = encode(&pdu, ids, big, None);
        let m = decode(&b).unwrap();
        assert_eq!((m.pdu, m.ids), (pdu, ids), "big-endian {big}");
    }
}

#[test]
fn hostile_bytes_are_errors_not_panics() {
    let good = captured("< GetNext");
    for n in 0..good.len() {
        let _ = decode(&good[..n]);
    }
    let mut long_oid = good.clone();
    long_oid[24] = 200;
    assert_eq!(decode(&long_oid), Err(AgentxError::OidLength(200)));
    let mut v2 = good.clone();
    v2[0] = 2;
    assert_eq!(decode(&v2), Err(AgentxError::Version(2)));
    let mut odd = [0u8; HEADER_LEN];
    odd[..HEADER_LEN].copy_from_slice(&good[..HEADER_LEN]);
    odd[16] = 3;
    assert_eq!(payload_len(&odd), Err(AgentxError::Length(3)));
    // Every byte changed in turn: an error or a PDU, never a panic.
    for i in 0..good.len() {
        let mut b = good.clone();
        b[i] ^= 0xa5;
        let _ = decode(&b);
    }
}
