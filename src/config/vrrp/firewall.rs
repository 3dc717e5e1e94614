//! keepalived's firewall settings as `global_defs` gives them: the
//! nftables table of the `no_accept` drop rules (`nftables [NAME]`,
//! `nftables_priority`, `nftables_counters`, `nftables_ifindex`, and the
//! legacy `vrrp_iptables`, which means nftables here as in Debian's build).
//! Pure. Part of the model's builder ([`super::build`]).

use super::NftTable;
use crate::config::model::Setting;
use crate::config::numbers::Quiet;

/// keepalived's table name when none is configured.
pub const DEFAULT_NFTABLES_TABLE: &str = "keepalived";

/// The longest table name keepalived takes is one less than this.
pub const NFT_TABLE_MAXNAMELEN: usize = 256;

/// The nftables settings of `global_defs`, read in file order as
/// keepalived's handlers read them, and whether a table was configured:
/// the first `nftables` names it (a later one is "already specified"), a
/// name too long is ignored, `vrrp_iptables` means the default table;
/// each of those resets the chain priority, which `nftables_priority` sets
/// whether or not a table is configured (keepalived keeps it in its
/// globals, and a table taken by default uses it too).
pub fn nftables_settings(settings: &[Setting]) -> (NftTable, bool) {
    let has = |k: &str| settings.iter().any(|s| s.keyword == k);
    let mut t = NftTable {
        name: DEFAULT_NFTABLES_TABLE.to_string(),
        priority: -1,
        counters: has("nftables_counters"),
        ifindex: has("nftables_ifindex"),
    };
    let mut configured = false;
    for s in settings {
        let first = s.args.first().map(String::as_str);
        match s.keyword.as_str() {
            "vrrp_iptables" => {
                (t.name, t.priority) = (DEFAULT_NFTABLES_TABLE.to_string(), -1);
                configured = true;
            }
            "nftables" if !configured => {
                let name = first.unwrap_or(DEFAULT_NFTABLES_TABLE);
                if name.len() < NFT_TABLE_MAXNAMELEN {
                    (t.name, t.priority) = (name.to_string(), -1);
                    configured = true;
                }
            }
            "nftables_priority" => {
                let range = (i32::MIN.into(), i32::MAX.into());
                let v = first.unwrap_or("");
                if let Some(p) =
                    crate::config::numbers::read_int(&mut Quiet, v, range.0, range.1, false)
                {
                    t.priority = p as i32;
                }
            }
            _ => {}
        }
    }
    (t, configured)
}

/// The table the settings configure, if they configure one.
pub fn nftables(settings: &[Setting]) -> Option<NftTable> {
    let (t, configured) = nftables_settings(settings);
    configured.then_some(t)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table_of(globals: &str) -> Option<NftTable> {
        let l = crate::config::load_str(&format!("global_defs {{\n{globals}\n}}\n"));
        nftables(&l.config.global_defs.other)
    }

    #[test]
    fn the_nftables_table_is_read_as_keepalived_reads_it() {
        assert_eq!(table_of("router_id x"), None);
        let t = table_of("nftables").unwrap();
        assert_eq!(
            (t.name.as_str(), t.priority, t.counters),
            ("keepalived", -1, false)
        );
        // The first wins; each nftables resets the priority set before it.
        let t = table_of("nftables_priority -5\nnftables kad\nnftables other\nnftables_counters")
            .unwrap();
        assert_eq!((t.name.as_str(), t.priority, t.counters), ("kad", -1, true));
        let t = table_of("nftables kad\nnftables_priority -5").unwrap();
        assert_eq!(t.priority, -5);
        // A name too long is ignored; vrrp_iptables means the default table.
        let long = "a".repeat(NFT_TABLE_MAXNAMELEN);
        assert_eq!(table_of(&format!("nftables {long}")), None);
        assert_eq!(table_of("vrrp_iptables").unwrap().name, "keepalived");
        // No table configured: the priority is kept for a default one.
        let l = crate::config::load_str("global_defs {\nnftables_priority -7\n}\n");
        let (t, configured) = nftables_settings(&l.config.global_defs.other);
        assert_eq!(
            (t.name.as_str(), t.priority, configured),
            ("keepalived", -7, false)
        );
    }

    #[test]
    fn accept_mode_defaults_as_keepalived_resolves_it() {
        let inst = |globals: &str, extra: &str| {
            let l = crate::config::load_str(&format!(
                "global_defs {{\n{globals}\n}}\nvrrp_instance VI_1 {{\n interface lo\n \
                 virtual_router_id 5\n priority 100\n{extra}\n virtual_ipaddress {{\n  192.0.2.1\n }}\n}}\n"
            ));
            let v = l.config.vrrp;
            (
                v.instances[0].accept,
                v.nftables.map(|t| t.name),
                v.nftables_defaulted,
            )
        };
        assert_eq!(inst("", ""), (true, None, false));
        assert_eq!(
            inst("", "no_accept"),
            (false, Some("keepalived".into()), true)
        );
        // Strict mode: no accept unless given, and never for VRRPv2.
        assert_eq!(
            inst("vrrp_strict", " version 3"),
            (false, Some("keepalived".into()), true)
        );
        assert_eq!(
            inst("vrrp_strict", " version 3\n accept"),
            (true, None, false)
        );
        assert_eq!(
            inst("vrrp_strict", " accept"),
            (false, Some("keepalived".into()), true)
        );
        assert_eq!(
            inst("nftables kad", "no_accept"),
            (false, Some("kad".into()), false)
        );
        // A default table takes nftables_priority (keepalived: "filter - 7").
        let l = crate::config::load_str(
            "global_defs {\nnftables_priority -7\n}\nvrrp_instance VI_1 {\n interface lo\n \
             virtual_router_id 5\n no_accept\n virtual_ipaddress {\n  192.0.2.1\n }\n}\n",
        );
        assert_eq!(l.config.vrrp.nftables.map(|t| t.priority), Some(-7));
    }
}
