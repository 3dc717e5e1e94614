//! What the VRRP side sets whatever the instances' states
//! (`static_ipaddress`, `static_routes`, `static_rules`), and how a reload
//! tells the old set from the new one (the same entry on another line is
//! the same entry). Part of [`super`].

use crate::config::vrrp::{Route, Rule, Vip, VrrpConfig};

/// What is set whatever the instances' states.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Statics {
    /// `static_ipaddress`.
    pub addresses: Vec<Vip>,
    /// `static_routes`.
    pub routes: Vec<Route>,
    /// `static_rules`.
    pub rules: Vec<Rule>,
}

impl Statics {
    pub(super) fn of(cfg: &VrrpConfig) -> Statics {
        Statics {
            addresses: cfg.static_addresses.clone(),
            routes: cfg.static_routes.clone(),
            rules: cfg.static_rules.clone(),
        }
    }

    pub(super) fn is_empty(&self) -> bool {
        self.addresses.is_empty() && self.routes.is_empty() && self.rules.is_empty()
    }

    /// What `self` has that `other` has not.
    pub(super) fn minus(&self, other: &Statics) -> Statics {
        Statics {
            addresses: self
                .addresses
                .iter()
                .filter(|a| !other.addresses.iter().any(|o| same_vip(a, o)))
                .cloned()
                .collect(),
            routes: self
                .routes
                .iter()
                .filter(|r| !other.routes.iter().any(|o| same_route(r, o)))
                .cloned()
                .collect(),
            rules: self
                .rules
                .iter()
                .filter(|r| !other.rules.iter().any(|o| same_rule(r, o)))
                .cloned()
                .collect(),
        }
    }
}

/// The same address on the same device, whatever line it is on.
pub(super) fn same_vip(a: &Vip, b: &Vip) -> bool {
    Vip {
        line: 0,
        ..a.clone()
    } == Vip {
        line: 0,
        ..b.clone()
    }
}

fn same_route(a: &Route, b: &Route) -> bool {
    Route {
        line: 0,
        ..a.clone()
    } == Route {
        line: 0,
        ..b.clone()
    }
}

fn same_rule(a: &Rule, b: &Rule) -> bool {
    Rule {
        line: 0,
        ..a.clone()
    } == Rule {
        line: 0,
        ..b.clone()
    }
}
