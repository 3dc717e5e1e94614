//! keepalived's nftables drop rules for instances without accept mode
//! (`no_accept`, and strict mode's default): while such an instance is
//! MASTER without owning its addresses, traffic to and from them is
//! dropped (RFC 5798 §6.4.3), as keepalived 2.2.7's `vrrp_nftables.c`
//! builds it — table `keepalived` (or the configured one) per family,
//! chains `in`/`out` at priority -1 on the input and output hooks, a set
//! `vips` and a drop rule each way; for IPv6 neighbour discovery let
//! through and link-local addresses matched with their interface.
//!
//! Pure: this builds the nfnetlink batches and keeps what the kernel holds
//! ([`Firewall`]); the VRRP address worker sends them
//! ([`crate::daemon`]). There is no well-kept crate for nf_tables netlink
//! under a licence this GPL-2.0-or-later program can take, and the
//! messages are plain netlink attributes, so they are written here.

use crate::config::vrrp::NftTable;
use std::collections::HashMap;
use std::net::{IpAddr, Ipv6Addr};

/// `NFPROTO_IPV4` / `NFPROTO_IPV6`: the tables' families.
pub const NFPROTO_IPV4: u8 = 2;
pub const NFPROTO_IPV6: u8 = 10;

const NFNL_SUBSYS_NFTABLES: u16 = 10;
const NFNL_MSG_BATCH_BEGIN: u16 = 16;
const NFNL_MSG_BATCH_END: u16 = 17;

const NFT_MSG_NEWTABLE: u16 = 0;
const NFT_MSG_DELTABLE: u16 = 2;
const NFT_MSG_NEWCHAIN: u16 = 3;
const NFT_MSG_NEWRULE: u16 = 6;
const NFT_MSG_NEWSET: u16 = 9;
const NFT_MSG_NEWSETELEM: u16 = 12;
const NFT_MSG_DELSETELEM: u16 = 14;

const NLM_F_REQUEST: u16 = 0x1;
const NLM_F_ACK: u16 = 0x4;
const NLM_F_EXCL: u16 = 0x200;
const NLM_F_CREATE: u16 = 0x400;
const NLM_F_APPEND: u16 = 0x800;
const NLA_F_NESTED: u16 = 0x8000;

// nftables' own type numbers (nftables `include/datatype.h`), which `nft`
// uses to print a set's elements.
const TYPE_IPADDR: u32 = 7;
const TYPE_IP6ADDR: u32 = 8;
const TYPE_IFINDEX: u32 = 20;
const TYPE_ICMPV6_TYPE: u32 = 29;
const TYPE_IFNAME: u32 = 41;
const TYPE_BITS: u32 = 6;
const IFNAMSIZ: usize = 16;

const NF_DROP: u32 = 0;
const NF_ACCEPT: u32 = 1;
const NFT_GOTO: u32 = -4i32 as u32;
const NF_INET_LOCAL_IN: u32 = 1;
const NF_INET_LOCAL_OUT: u32 = 3;
const NFT_SET_CONSTANT: u32 = 0x2;
const NFT_PAYLOAD_NETWORK_HEADER: u32 = 1;
const NFT_PAYLOAD_TRANSPORT_HEADER: u32 = 2;
const NFT_REG_VERDICT: u32 = 0;
const NFT_REG_1: u32 = 1;
const NFT_REG_2: u32 = 2;
const NFT_META_IIF: u32 = 4;
const NFT_META_OIF: u32 = 5;
const NFT_META_IIFNAME: u32 = 6;
const NFT_META_OIFNAME: u32 = 7;
const NFT_META_L4PROTO: u32 = 16;
const NFT_META_OIFKIND: u32 = 27;
const NFT_SET_MAP: u32 = 0x8;
const IPPROTO_IGMP: u8 = 2;
const MLD2_LISTENER_REPORT: u8 = 143;
const ND_ROUTER_SOLICIT: u8 = 133;
const NFT_CMP_EQ: u32 = 0;
const ND_NEIGHBOR_SOLICIT: u8 = 135;
const ND_NEIGHBOR_ADVERT: u8 = 136;
const IPPROTO_ICMPV6: u8 = 58;

/// One address in the drop sets, as keepalived keys it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Element {
    /// `ip keepalived vips`.
    V4(std::net::Ipv4Addr),
    /// `ip6 keepalived vips` (not link-local).
    V6(Ipv6Addr),
    /// `vips_link_local`: a link-local address with its interface index.
    LinkLocal(Ipv6Addr, u32),
    /// `vips_link_local_name`: with its interface's name (an instance with
    /// `dont_track_primary`, unless `nftables_ifindex`).
    LinkLocalName(Ipv6Addr, String),
}

impl Element {
    /// The element for `addr` on interface `ifindex` / `ifname`: link-local
    /// IPv6 addresses carry their interface, by name when `by_name`.
    pub fn of(addr: IpAddr, ifindex: u32, ifname: &str, by_name: bool) -> Element {
        match addr {
            IpAddr::V4(a) => Element::V4(a),
            IpAddr::V6(a) if a.is_unicast_link_local() => {
                if by_name {
                    Element::LinkLocalName(a, ifname.to_string())
                } else {
                    Element::LinkLocal(a, ifindex)
                }
            }
            IpAddr::V6(a) => Element::V6(a),
        }
    }

    fn family(&self) -> u8 {
        match self {
            Element::V4(_) => NFPROTO_IPV4,
            _ => NFPROTO_IPV6,
        }
    }

    fn set(&self) -> &'static str {
        match self {
            Element::V4(_) | Element::V6(_) => "vips",
            Element::LinkLocal(..) => "vips_link_local",
            Element::LinkLocalName(..) => "vips_link_local_name",
        }
    }

    /// The key bytes: addresses in network order, an interface index in
    /// host order (as `meta iif` loads it), a name NUL-padded to IFNAMSIZ.
    fn key(&self) -> Vec<u8> {
        match self {
            Element::V4(a) => a.octets().to_vec(),
            Element::V6(a) => a.octets().to_vec(),
            Element::LinkLocal(a, i) => {
                let mut k = a.octets().to_vec();
                k.extend_from_slice(&i.to_ne_bytes());
                k
            }
            Element::LinkLocalName(a, n) => {
                let mut k = a.octets().to_vec();
                let mut name = [0u8; IFNAMSIZ];
                let b = n.as_bytes();
                let l = b.len().min(IFNAMSIZ - 1);
                name[..l].copy_from_slice(&b[..l]);
                k.extend_from_slice(&name);
                k
            }
        }
    }
}

/// `NFTA_SET_USERDATA`.
const NFTA_SET_USERDATA: u16 = 13;

/// The set's user data saying its keys (and a map's values) are in host
/// order, as nft records it for an interface index: without it `nft`
/// prints the index as a big-endian number rather than the interface.
fn host_order_udata(map: bool) -> Vec<u8> {
    // NFTNL_UDATA_SET_KEYBYTEORDER (0), DATABYTEORDER (1): BYTEORDER_HOST_ENDIAN.
    let mut u = vec![0u8, 4];
    u.extend_from_slice(&1u32.to_ne_bytes());
    if map {
        u.extend_from_slice(&[1, 4]);
        u.extend_from_slice(&1u32.to_ne_bytes());
    }
    u
}

/// One netlink message being written: the header, `nfgenmsg`, attributes.
struct Msg {
    buf: Vec<u8>,
    nests: Vec<usize>,
}

impl Msg {
    fn new(kind: u16, flags: u16, seq: u32, family: u8, res_id: u16) -> Msg {
        let mut buf = Vec::with_capacity(256);
        buf.extend_from_slice(&0u32.to_ne_bytes());
        buf.extend_from_slice(&kind.to_ne_bytes());
        buf.extend_from_slice(&(flags | NLM_F_REQUEST).to_ne_bytes());
        buf.extend_from_slice(&seq.to_ne_bytes());
        buf.extend_from_slice(&0u32.to_ne_bytes());
        buf.push(family);
        buf.push(0); // NFNETLINK_V0
        buf.extend_from_slice(&res_id.to_be_bytes());
        Msg {
            buf,
            nests: Vec::new(),
        }
    }

    fn nft(msg: u16, flags: u16, seq: u32, family: u8) -> Msg {
        Msg::new((NFNL_SUBSYS_NFTABLES << 8) | msg, flags, seq, family, 0)
    }

    fn pad(&mut self) {
        while !self.buf.len().is_multiple_of(4) {
            self.buf.push(0);
        }
    }

    fn attr(&mut self, kind: u16, data: &[u8]) -> &mut Msg {
        let len = (4 + data.len()) as u16;
        self.buf.extend_from_slice(&len.to_ne_bytes());
        self.buf.extend_from_slice(&kind.to_ne_bytes());
        self.buf.extend_from_slice(data);
        self.pad();
        self
    }

    fn str(&mut self, kind: u16, s: &str) -> &mut Msg {
        let mut d = s.as_bytes().to_vec();
        d.push(0);
        self.attr(kind, &d)
    }

    /// nf_tables integers are big-endian.
    fn u32(&mut self, kind: u16, v: u32) -> &mut Msg {
        self.attr(kind, &v.to_be_bytes())
    }

    fn nest(&mut self, kind: u16) -> &mut Msg {
        self.nests.push(self.buf.len());
        self.buf.extend_from_slice(&0u16.to_ne_bytes());
        self.buf
            .extend_from_slice(&(kind | NLA_F_NESTED).to_ne_bytes());
        self
    }

    fn end(&mut self) -> &mut Msg {
        let at = self.nests.pop().expect("an open nest");
        let len = (self.buf.len() - at) as u16;
        self.buf[at..at + 2].copy_from_slice(&len.to_ne_bytes());
        self
    }

    fn finish(mut self) -> Vec<u8> {
        debug_assert!(self.nests.is_empty());
        let len = self.buf.len() as u32;
        self.buf[..4].copy_from_slice(&len.to_ne_bytes());
        self.buf
    }

    // Expressions (`NFTA_LIST_ELEM { NFTA_EXPR_NAME, NFTA_EXPR_DATA }`).

    fn expr(&mut self, name: &str) -> &mut Msg {
        self.nest(1).str(1, name).nest(2)
    }

    fn expr_end(&mut self) -> &mut Msg {
        self.end().end()
    }

    fn payload(&mut self, base: u32, offset: u32, len: u32) -> &mut Msg {
        self.expr("payload")
            .u32(1, NFT_REG_1)
            .u32(2, base)
            .u32(3, offset)
            .u32(4, len)
            .expr_end()
    }

    fn meta(&mut self, key: u32) -> &mut Msg {
        self.expr("meta").u32(2, key).u32(1, NFT_REG_2).expr_end()
    }

    fn lookup(&mut self, set: &str) -> &mut Msg {
        self.expr("lookup").u32(2, NFT_REG_1).str(1, set).expr_end()
    }

    fn cmp(&mut self, op: u32, data: &[u8]) -> &mut Msg {
        self.expr("cmp")
            .u32(1, NFT_REG_1)
            .u32(2, op)
            .nest(3)
            .attr(1, data)
            .end()
            .expr_end()
    }

    /// `reg = payload[offset..offset+len]`.
    fn payload_to(&mut self, reg: u32, base: u32, offset: u32, len: u32) -> &mut Msg {
        self.expr("payload")
            .u32(1, reg)
            .u32(2, base)
            .u32(3, offset)
            .u32(4, len)
            .expr_end()
    }

    /// `reg = meta key`.
    fn meta_to(&mut self, reg: u32, key: u32) -> &mut Msg {
        self.expr("meta").u32(2, key).u32(1, reg).expr_end()
    }

    /// `reg == data`.
    fn cmp_reg(&mut self, reg: u32, data: &[u8]) -> &mut Msg {
        self.expr("cmp")
            .u32(1, reg)
            .u32(2, NFT_CMP_EQ)
            .nest(3)
            .attr(1, data)
            .end()
            .expr_end()
    }

    /// `reg` in `set` (a map's value into `dreg`).
    fn lookup_reg(&mut self, reg: u32, set: &str, dreg: Option<u32>) -> &mut Msg {
        self.expr("lookup").str(1, set).u32(2, reg);
        if let Some(d) = dreg {
            self.u32(3, d);
        }
        self.expr_end()
    }

    /// `dup to <address in reg addr> device <index in reg dev>`.
    fn dup(&mut self, addr: u32, dev: u32) -> &mut Msg {
        self.expr("dup").u32(1, addr).u32(2, dev).expr_end()
    }

    /// `meta oifkind "macvlan"`.
    fn oif_macvlan(&mut self) -> &mut Msg {
        let mut kind = [0u8; IFNAMSIZ];
        kind[..7].copy_from_slice(b"macvlan");
        self.meta_to(NFT_REG_2, NFT_META_OIFKIND)
            .cmp_reg(NFT_REG_2, &kind)
    }

    /// `reg 1 = (reg 1 & mask) ^ 0`.
    fn bitwise(&mut self, mask: &[u8]) -> &mut Msg {
        let xor = vec![0u8; mask.len()];
        self.expr("bitwise")
            .u32(1, NFT_REG_1)
            .u32(2, NFT_REG_1)
            .u32(3, mask.len() as u32)
            .nest(4)
            .attr(1, mask)
            .end()
            .nest(5)
            .attr(1, &xor)
            .end()
            .expr_end()
    }

    fn counter(&mut self, on: bool) -> &mut Msg {
        if on {
            self.expr("counter").expr_end();
        }
        self
    }

    fn verdict(&mut self, code: u32, chain: Option<&str>) -> &mut Msg {
        self.expr("immediate")
            .u32(1, NFT_REG_VERDICT)
            .nest(2)
            .nest(2);
        self.u32(1, code);
        if let Some(c) = chain {
            self.str(2, c);
        }
        self.end().end().expr_end()
    }
}

/// One nfnetlink batch: begin, messages, end; sent in one write, applied
/// by the kernel as one transaction.
struct Batch {
    msgs: Vec<u8>,
    acks: usize,
}

/// What the kernel holds and the next sequence number: the drop rules'
/// state, one [`Firewall`] per daemon.
#[derive(Debug)]
pub struct Firewall {
    table: NftTable,
    seq: u32,
    /// The family's table (and its `out` chain) exists.
    table_v4: bool,
    table_v6: bool,
    /// The family's `in` chain, `vips` set and drop rules exist.
    vips_v4: bool,
    vips_v6: bool,
    /// The link-local sets (by index, by name) and their rules exist.
    ll_index: bool,
    ll_name: bool,
    /// The family's VMAC map and its rules exist.
    vmac_v4: bool,
    vmac_v6: bool,
    /// The elements set, with how many instances asked for each.
    held: HashMap<Element, u32>,
}

/// A batch ready to send, and how many acknowledgements it asks for.
pub struct Request {
    pub bytes: Vec<u8>,
    pub acks: usize,
    /// Errors are expected and harmless (deleting what may not exist).
    pub may_fail: bool,
}

impl Firewall {
    /// The state before anything is set; `seq` the first sequence number
    /// (keepalived starts from the time of day).
    pub fn new(table: NftTable, seq: u32) -> Firewall {
        Firewall {
            table,
            seq,
            table_v4: false,
            table_v6: false,
            vips_v4: false,
            vips_v6: false,
            ll_index: false,
            ll_name: false,
            vmac_v4: false,
            vmac_v6: false,
            held: HashMap::new(),
        }
    }

    /// The table it works on.
    pub fn table(&self) -> &NftTable {
        &self.table
    }

    /// Whether anything is set.
    pub fn is_set_up(&self) -> bool {
        self.table_v4 || self.table_v6
    }

    fn next(&mut self) -> u32 {
        let s = self.seq;
        self.seq = self.seq.wrapping_add(1);
        s
    }

    fn begin(&mut self) -> Batch {
        let seq = self.next();
        let m = Msg::new(NFNL_MSG_BATCH_BEGIN, 0, seq, 0, NFNL_SUBSYS_NFTABLES);
        Batch {
            msgs: m.finish(),
            acks: 0,
        }
    }

    fn push(b: &mut Batch, m: Msg) {
        b.msgs.extend_from_slice(&m.finish());
        b.acks += 1;
    }

    fn end(&mut self, mut b: Batch, may_fail: bool) -> Request {
        let seq = self.next();
        let m = Msg::new(NFNL_MSG_BATCH_END, 0, seq, 0, NFNL_SUBSYS_NFTABLES);
        b.msgs.extend_from_slice(&m.finish());
        Request {
            bytes: b.msgs,
            acks: b.acks,
            may_fail,
        }
    }

    fn table_msg(&mut self, kind: u16, flags: u16, family: u8) -> Msg {
        let seq = self.next();
        let mut m = Msg::nft(kind, flags, seq, family);
        m.str(1, &self.table.name.clone());
        m
    }

    fn chain(&mut self, b: &mut Batch, family: u8, name: &str, hook: Option<u32>) {
        let seq = self.next();
        let mut m = Msg::nft(NFT_MSG_NEWCHAIN, NLM_F_CREATE | NLM_F_ACK, seq, family);
        m.str(1, &self.table.name).str(3, name);
        if let Some(h) = hook {
            m.nest(4)
                .u32(1, h)
                .u32(2, self.table.priority as u32)
                .end()
                .u32(5, NF_ACCEPT)
                .str(7, "filter");
        }
        Self::push(b, m);
    }

    fn set(&mut self, b: &mut Batch, family: u8, name: &str, key_type: u32, key_len: u32) {
        let seq = self.next();
        let mut m = Msg::nft(NFT_MSG_NEWSET, NLM_F_CREATE | NLM_F_ACK, seq, family);
        m.str(1, &self.table.name).str(2, name);
        if key_type == TYPE_ICMPV6_TYPE {
            m.u32(3, NFT_SET_CONSTANT);
        }
        m.u32(4, key_type).u32(5, key_len).u32(10, seq);
        if key_type == TYPE_IFINDEX {
            m.attr(NFTA_SET_USERDATA, &host_order_udata(false));
        }
        Self::push(b, m);
    }

    /// A rule in `chain`: the expressions `body` writes.
    fn rule(&mut self, b: &mut Batch, family: u8, chain: &str, body: impl FnOnce(&mut Msg)) {
        let seq = self.next();
        let flags = NLM_F_APPEND | NLM_F_CREATE | NLM_F_ACK;
        let mut m = Msg::nft(NFT_MSG_NEWRULE, flags, seq, family);
        m.str(1, &self.table.name).str(2, chain).nest(4);
        body(&mut m);
        m.end();
        Self::push(b, m);
    }

    /// `ip[6] saddr|daddr @set drop` (with the interface for link-local).
    fn drop_rule(&mut self, b: &mut Batch, family: u8, chain: &str, set: &str, saddr: bool) {
        let counters = self.table.counters;
        let (off, len) = match (family == NFPROTO_IPV4, saddr) {
            (true, true) => (12, 4),
            (true, false) => (16, 4),
            (false, true) => (8, 16),
            (false, false) => (24, 16),
        };
        self.rule(b, family, chain, |m| {
            m.payload(NFT_PAYLOAD_NETWORK_HEADER, off, len);
            match (set, saddr) {
                ("vips_link_local", true) => m.meta(NFT_META_OIF),
                ("vips_link_local", false) => m.meta(NFT_META_IIF),
                ("vips_link_local_name", true) => m.meta(NFT_META_OIFNAME),
                ("vips_link_local_name", false) => m.meta(NFT_META_IIFNAME),
                _ => m,
            };
            m.lookup(set).counter(counters).verdict(NF_DROP, None);
        });
    }

    /// The family's table and `out` chain, after a separate batch deleting
    /// what a previous run may have left (keepalived's `nft_setup_ipv4/6`).
    fn setup_table(&mut self, out: &mut Vec<Request>, b: &mut Batch, family: u8) {
        let mut del = self.begin();
        let m = self.table_msg(NFT_MSG_DELTABLE, NLM_F_ACK, family);
        Self::push(&mut del, m);
        out.push(self.end(del, true));
        let m = self.table_msg(NFT_MSG_NEWTABLE, NLM_F_CREATE | NLM_F_ACK, family);
        Self::push(b, m);
        self.chain(b, family, "out", Some(NF_INET_LOCAL_OUT));
        if family == NFPROTO_IPV4 {
            self.table_v4 = true;
        } else {
            self.table_v6 = true;
        }
    }

    fn setup_vips_v4(&mut self, out: &mut Vec<Request>, b: &mut Batch) {
        let f = NFPROTO_IPV4;
        if !self.table_v4 {
            self.setup_table(out, b, f);
        }
        self.chain(b, f, "in", Some(NF_INET_LOCAL_IN));
        self.set(b, f, "vips", TYPE_IPADDR, 4);
        self.drop_rule(b, f, "in", "vips", false);
        self.drop_rule(b, f, "out", "vips", true);
        self.vips_v4 = true;
    }

    fn setup_vips_v6(&mut self, out: &mut Vec<Request>, b: &mut Batch) {
        let f = NFPROTO_IPV6;
        if !self.table_v6 {
            self.setup_table(out, b, f);
        }
        self.chain(b, f, "in", Some(NF_INET_LOCAL_IN));
        self.chain(b, f, "in_link_local", None);
        self.chain(b, f, "out_link_local", None);
        self.set(b, f, "vips", TYPE_IP6ADDR, 16);
        self.set(b, f, "neighbor-discovery", TYPE_ICMPV6_TYPE, 1);
        let seq = self.next();
        let mut m = Msg::nft(NFT_MSG_NEWSETELEM, NLM_F_CREATE | NLM_F_ACK, seq, f);
        m.str(2, "neighbor-discovery")
            .str(1, &self.table.name)
            .nest(3);
        for t in [ND_NEIGHBOR_SOLICIT, ND_NEIGHBOR_ADVERT] {
            m.nest(1).nest(1).attr(1, &[t]).end().end();
        }
        m.end();
        Self::push(b, m);
        let counters = self.table.counters;
        let nd = |m: &mut Msg| {
            m.payload(NFT_PAYLOAD_NETWORK_HEADER, 6, 1)
                .cmp(NFT_CMP_EQ, &[IPPROTO_ICMPV6])
                .payload(NFT_PAYLOAD_TRANSPORT_HEADER, 0, 1)
                .lookup("neighbor-discovery")
                .counter(counters)
                .verdict(NF_ACCEPT, None);
        };
        // fe80::/10, link-local: checked against the interface in the
        // chains below. keepalived 2.2.7 masks and compares (`nft` shows
        // the prefix); later versions compare a range.
        let mask = Ipv6Addr::new(0xffc0, 0, 0, 0, 0, 0, 0, 0).octets();
        let net = Ipv6Addr::new(0xfe80, 0, 0, 0, 0, 0, 0, 0).octets();
        let range = move |m: &mut Msg, off: u32, to: &str| {
            m.payload(NFT_PAYLOAD_NETWORK_HEADER, off, 16)
                .bitwise(&mask)
                .cmp(NFT_CMP_EQ, &net)
                .counter(counters)
                .verdict(NFT_GOTO, Some(to));
        };
        self.rule(b, f, "in", nd);
        self.rule(b, f, "in", |m| range(m, 24, "in_link_local"));
        self.rule(b, f, "out", nd);
        self.rule(b, f, "out", |m| range(m, 8, "out_link_local"));
        self.drop_rule(b, f, "in", "vips", false);
        self.drop_rule(b, f, "out", "vips", true);
        self.vips_v6 = true;
    }

    fn setup_link_local(&mut self, b: &mut Batch, by_name: bool) {
        let f = NFPROTO_IPV6;
        let (name, key_type, key_len) = if by_name {
            ("vips_link_local_name", TYPE_IFNAME, 16 + IFNAMSIZ as u32)
        } else {
            ("vips_link_local", TYPE_IFINDEX, 16 + 4)
        };
        self.set(b, f, name, (TYPE_IP6ADDR << TYPE_BITS) | key_type, key_len);
        self.drop_rule(b, f, "in_link_local", name, false);
        self.drop_rule(b, f, "out_link_local", name, true);
        if by_name {
            self.ll_name = true;
        } else {
            self.ll_index = true;
        }
    }

    /// keepalived's rules for a VMAC (`nft_add_vmac`): IGMP reports
    /// (IPv4) or MLD reports (IPv6) a VMAC would send are sent from its
    /// interface instead (`dup to … device oif map @vmac_map drop`), and
    /// an IPv6 VMAC sends no router solicitation. `add`: VMAC `vmac` on
    /// interface `parent` comes (at start), else goes.
    pub fn vmac(&mut self, ipv6: bool, vmac: u32, parent: u32, add: bool) -> Vec<Request> {
        let f = if ipv6 { NFPROTO_IPV6 } else { NFPROTO_IPV4 };
        let mut out = Vec::new();
        let mut b = self.begin();
        let have = if ipv6 { self.vmac_v6 } else { self.vmac_v4 };
        if !add && !have {
            return out;
        }
        if add && !have {
            let table_up = if ipv6 { self.table_v6 } else { self.table_v4 };
            if !table_up {
                self.setup_table(&mut out, &mut b, f);
            }
            let seq = self.next();
            let mut m = Msg::nft(NFT_MSG_NEWSET, NLM_F_CREATE | NLM_F_ACK, seq, f);
            m.str(1, &self.table.name)
                .str(2, "vmac_map")
                .u32(3, NFT_SET_MAP)
                .u32(4, TYPE_IFINDEX)
                .u32(5, 4)
                .u32(6, TYPE_IFINDEX)
                .u32(7, 4)
                .u32(10, seq)
                .attr(NFTA_SET_USERDATA, &host_order_udata(true));
            Self::push(&mut b, m);
            if ipv6 {
                self.set(&mut b, f, "vmac_set", TYPE_IFINDEX, 4);
                self.rule(&mut b, f, "out", |m| {
                    m.meta_to(NFT_REG_1, NFT_META_L4PROTO)
                        .cmp_reg(NFT_REG_1, &[IPPROTO_ICMPV6])
                        .payload_to(NFT_REG_1, NFT_PAYLOAD_TRANSPORT_HEADER, 0, 1)
                        .cmp_reg(NFT_REG_1, &[MLD2_LISTENER_REPORT])
                        .payload_to(NFT_REG_1, NFT_PAYLOAD_NETWORK_HEADER, 24, 16)
                        .oif_macvlan()
                        .meta_to(NFT_REG_2, NFT_META_OIF)
                        .lookup_reg(NFT_REG_2, "vmac_map", Some(NFT_REG_2))
                        .dup(NFT_REG_1, NFT_REG_2)
                        .verdict(NF_DROP, None);
                });
                self.rule(&mut b, f, "out", |m| {
                    m.meta_to(NFT_REG_1, NFT_META_L4PROTO)
                        .cmp_reg(NFT_REG_1, &[IPPROTO_ICMPV6])
                        .payload_to(NFT_REG_1, NFT_PAYLOAD_TRANSPORT_HEADER, 0, 1)
                        .cmp_reg(NFT_REG_1, &[ND_ROUTER_SOLICIT])
                        .oif_macvlan()
                        .meta_to(NFT_REG_2, NFT_META_OIF)
                        .lookup_reg(NFT_REG_2, "vmac_set", None)
                        .verdict(NF_DROP, None);
                });
                self.vmac_v6 = true;
            } else {
                self.rule(&mut b, f, "out", |m| {
                    m.payload_to(NFT_REG_1, NFT_PAYLOAD_NETWORK_HEADER, 9, 1)
                        .cmp_reg(NFT_REG_1, &[IPPROTO_IGMP])
                        .payload_to(NFT_REG_1, NFT_PAYLOAD_NETWORK_HEADER, 16, 4)
                        .oif_macvlan()
                        .meta_to(NFT_REG_2, NFT_META_OIF)
                        .lookup_reg(NFT_REG_2, "vmac_map", Some(NFT_REG_2))
                        .dup(NFT_REG_1, NFT_REG_2)
                        .verdict(NF_DROP, None);
                });
                self.vmac_v4 = true;
            }
        }
        let kind = if add {
            NFT_MSG_NEWSETELEM
        } else {
            NFT_MSG_DELSETELEM
        };
        let seq = self.next();
        let mut m = Msg::nft(kind, NLM_F_CREATE | NLM_F_ACK, seq, f);
        m.str(2, "vmac_map").str(1, &self.table.name).nest(3);
        m.nest(1)
            .nest(1)
            .attr(1, &vmac.to_ne_bytes())
            .end()
            .nest(2)
            .attr(1, &parent.to_ne_bytes())
            .end()
            .end();
        m.end();
        Self::push(&mut b, m);
        if ipv6 {
            let seq = self.next();
            let mut m = Msg::nft(kind, NLM_F_CREATE | NLM_F_ACK, seq, f);
            m.str(2, "vmac_set").str(1, &self.table.name).nest(3);
            m.nest(1).nest(1).attr(1, &vmac.to_ne_bytes()).end().end();
            m.end();
            Self::push(&mut b, m);
        }
        out.push(self.end(b, !add));
        out
    }

    /// Sets the drop rules for `elems` (an instance became MASTER): the
    /// batches to send, in order — none when every element is already
    /// held (by another instance).
    pub fn add(&mut self, elems: &[Element]) -> Vec<Request> {
        let mut fresh: Vec<&Element> = Vec::new();
        for e in elems {
            let n = self.held.entry(e.clone()).or_insert(0);
            *n += 1;
            if *n == 1 && !fresh.contains(&e) {
                fresh.push(e);
            }
        }
        if fresh.is_empty() {
            return Vec::new();
        }
        let mut out = Vec::new();
        let mut b = self.begin();
        for e in &fresh {
            match e {
                Element::V4(_) if !self.vips_v4 => self.setup_vips_v4(&mut out, &mut b),
                Element::V4(_) => {}
                _ if !self.vips_v6 => self.setup_vips_v6(&mut out, &mut b),
                _ => {}
            }
            match e {
                Element::LinkLocal(..) if !self.ll_index => self.setup_link_local(&mut b, false),
                Element::LinkLocalName(..) if !self.ll_name => self.setup_link_local(&mut b, true),
                _ => {}
            }
        }
        self.elements(&mut b, NFT_MSG_NEWSETELEM, &fresh);
        out.push(self.end(b, false));
        out
    }

    /// Removes the drop rules for `elems` (the instance left MASTER); an
    /// element another instance still holds stays.
    pub fn remove(&mut self, elems: &[Element]) -> Vec<Request> {
        let mut gone: Vec<&Element> = Vec::new();
        for e in elems {
            if let Some(n) = self.held.get_mut(e) {
                *n -= 1;
                if *n == 0 {
                    self.held.remove(e);
                    gone.push(e);
                }
            }
        }
        if gone.is_empty() {
            return Vec::new();
        }
        let mut b = self.begin();
        self.elements(&mut b, NFT_MSG_DELSETELEM, &gone);
        vec![self.end(b, false)]
    }

    /// One message per (family, set) listing its elements.
    fn elements(&mut self, b: &mut Batch, kind: u16, elems: &[&Element]) {
        let mut groups: Vec<(u8, &'static str, Vec<Vec<u8>>)> = Vec::new();
        for e in elems {
            let (f, s) = (e.family(), e.set());
            match groups.iter_mut().find(|g| g.0 == f && g.1 == s) {
                Some(g) => g.2.push(e.key()),
                None => groups.push((f, s, vec![e.key()])),
            }
        }
        for (f, s, keys) in groups {
            let seq = self.next();
            let flags = NLM_F_CREATE | NLM_F_EXCL | NLM_F_ACK;
            let mut m = Msg::nft(kind, flags, seq, f);
            m.str(2, s).str(1, &self.table.name).nest(3);
            for k in keys {
                m.nest(1).nest(1).attr(1, &k).end().end();
            }
            m.end();
            Self::push(b, m);
        }
    }

    /// Deletes the tables (stop): keepalived's `nft_cleanup()`.
    pub fn cleanup(&mut self) -> Option<Request> {
        if !self.is_set_up() {
            return None;
        }
        let mut b = self.begin();
        for (on, f) in [(self.table_v4, NFPROTO_IPV4), (self.table_v6, NFPROTO_IPV6)] {
            if on {
                let m = self.table_msg(NFT_MSG_DELTABLE, NLM_F_ACK, f);
                Self::push(&mut b, m);
            }
        }
        let r = self.end(b, false);
        *self = Firewall::new(self.table.clone(), self.seq);
        Some(r)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table() -> NftTable {
        NftTable {
            name: "keepalived".into(),
            priority: -1,
            counters: false,
            ifindex: false,
        }
    }

    /// The messages of a batch: (type, flags, family, payload after
    /// nfgenmsg).
    fn messages(b: &[u8]) -> Vec<(u16, u16, u8, Vec<u8>)> {
        let mut out = Vec::new();
        let mut at = 0;
        while at < b.len() {
            let len = u32::from_ne_bytes(b[at..at + 4].try_into().unwrap()) as usize;
            let kind = u16::from_ne_bytes(b[at + 4..at + 6].try_into().unwrap());
            let flags = u16::from_ne_bytes(b[at + 6..at + 8].try_into().unwrap());
            out.push((kind, flags, b[at + 16], b[at + 20..at + len].to_vec()));
            at += len;
        }
        out
    }

    #[test]
    fn a_batch_is_framed_as_nfnetlink_wants() {
        let mut f = Firewall::new(table(), 100);
        let reqs = f.add(&[Element::V4("192.0.2.100".parse().unwrap())]);
        // A separate batch first deletes a previous run's table.
        assert_eq!(reqs.len(), 2);
        assert!(reqs[0].may_fail);
        let m = messages(&reqs[0].bytes);
        assert_eq!(m[0].0, NFNL_MSG_BATCH_BEGIN);
        assert_eq!(m[1].0, (10 << 8) | NFT_MSG_DELTABLE);
        assert_eq!(m[1].2, NFPROTO_IPV4);
        assert_eq!(m[2].0, NFNL_MSG_BATCH_END);
        // Begin's nfgenmsg names the subsystem in network order.
        assert_eq!(&reqs[0].bytes[16..20], &[0, 0, 0, 10]);
        let kinds: Vec<u16> = messages(&reqs[1].bytes)
            .iter()
            .map(|m| m.0 & 0xff)
            .collect();
        // begin, table, out, in, vips, 2 rules, the element, end.
        assert_eq!(kinds, [16, 0, 3, 3, 9, 6, 6, 12, 17]);
        assert_eq!(reqs[1].acks, 7);
        // The table message carries its name, NUL-terminated and padded.
        let t = &messages(&reqs[1].bytes)[1].3;
        assert_eq!(
            t,
            &[15, 0, 1, 0, b'k', b'e', b'e', b'p', b'a', b'l', b'i', b'v', b'e', b'd', 0, 0]
        );
    }

    #[test]
    fn the_element_carries_the_address_and_an_instance_holding_it_keeps_it() {
        let mut f = Firewall::new(table(), 1);
        let a = Element::V4("192.0.2.100".parse().unwrap());
        f.add(std::slice::from_ref(&a));
        // A second instance with the same address adds nothing more.
        assert!(f.add(std::slice::from_ref(&a)).is_empty());
        assert!(f.remove(std::slice::from_ref(&a)).is_empty());
        let r = f.remove(std::slice::from_ref(&a));
        let m = messages(&r[0].bytes);
        assert_eq!(m[1].0 & 0xff, NFT_MSG_DELSETELEM);
        assert!(m[1].3.windows(4).any(|w| w == [192, 0, 2, 100]));
        // Nothing held: removing again sends nothing.
        assert!(f.remove(std::slice::from_ref(&a)).is_empty());
    }

    #[test]
    fn ipv6_sets_up_neighbour_discovery_and_link_local_sets_once() {
        let mut f = Firewall::new(table(), 1);
        let ll = Element::of("fe80::100".parse().unwrap(), 7, "eth0", false);
        assert_eq!(ll, Element::LinkLocal("fe80::100".parse().unwrap(), 7));
        let g = Element::of("2001:db8::1".parse().unwrap(), 7, "eth0", false);
        let r = f.add(&[g.clone(), ll.clone()]);
        let kinds: Vec<u16> = messages(&r[1].bytes).iter().map(|m| m.0 & 0xff).collect();
        // table, out, in, in_link_local, out_link_local, vips, nd set + its
        // elements, 6 rules, the link-local set + 2 rules, one element
        // message per set.
        assert_eq!(
            kinds,
            [16, 0, 3, 3, 3, 3, 9, 9, 12, 6, 6, 6, 6, 6, 6, 9, 6, 6, 12, 12, 17]
        );
        // The link-local key: address then the index in host order.
        let last = &messages(&r[1].bytes)[19].3;
        let mut key = "fe80::100".parse::<Ipv6Addr>().unwrap().octets().to_vec();
        key.extend_from_slice(&7u32.to_ne_bytes());
        assert!(last.windows(20).any(|w| w == key.as_slice()));
        let more = f.add(&[Element::of("fe80::200".parse().unwrap(), 7, "eth0", false)]);
        assert_eq!(more.len(), 1, "no setup the second time");
        let r = f.cleanup().unwrap();
        let kinds: Vec<u16> = messages(&r.bytes).iter().map(|m| m.0 & 0xff).collect();
        assert_eq!(kinds, [16, 2, 17]);
        assert!(f.cleanup().is_none());
    }

    #[test]
    fn chain_priority_and_counters_follow_the_table() {
        let mut f = Firewall::new(
            NftTable {
                priority: -5,
                counters: true,
                ..table()
            },
            1,
        );
        let r = f.add(&[Element::V4("192.0.2.1".parse().unwrap())]);
        let m = messages(&r[1].bytes);
        // The hook's priority, big-endian.
        assert!(m[2].3.windows(4).any(|w| w == (-5i32).to_be_bytes()));
        assert!(m[5].3.windows(8).any(|w| w == b"counter\0"));
    }
}
