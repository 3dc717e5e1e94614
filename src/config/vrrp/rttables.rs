//! Names of routing tables, scopes, protocols, DS fields and realms, as
//! keepalived 2.2.7's `lib/rttables.c` finds them: a number (`strtoul`
//! base 0) up to the kind's maximum, else a name from
//! `/etc/iproute2/<file>` (lines of `NUMBER NAME`), else keepalived's
//! built-in names. Part of the VRRP model's route and rule readers.

/// Which name space a word is looked up in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `rt_tables`: up to `RT_TABLE_MAX`.
    Table,
    /// `rt_scopes`.
    Scope,
    /// `rt_protos`.
    Proto,
    /// `rt_dsfield`.
    DsField,
    /// `rt_realms`.
    Realm,
    /// `group` (interface groups).
    Group,
}

impl Kind {
    fn file(self) -> &'static str {
        match self {
            Kind::Table => "rt_tables",
            Kind::Scope => "rt_scopes",
            Kind::Proto => "rt_protos",
            Kind::DsField => "rt_dsfield",
            Kind::Realm => "rt_realms",
            Kind::Group => "group",
        }
    }

    fn max(self) -> u64 {
        match self {
            Kind::Table => u64::from(u32::MAX),
            Kind::Group => i32::MAX as u64,
            _ => 255,
        }
    }

    fn defaults(self) -> &'static [(u32, &'static str)] {
        match self {
            Kind::Table => &[(253, "default"), (254, "main"), (255, "local")],
            Kind::Scope => &[
                (0, "global"),
                (255, "nowhere"),
                (254, "host"),
                (253, "link"),
                (200, "site"),
            ],
            Kind::Proto => &[
                (0, "none"),
                (1, "redirect"),
                (2, "kernel"),
                (3, "boot"),
                (4, "static"),
                (8, "gated"),
                (9, "ra"),
                (10, "mrt"),
                (11, "zebra"),
                (12, "bird"),
                (42, "babel"),
                (13, "dnrouted"),
                (14, "xorp"),
                (15, "ntk"),
                (16, "dhcp"),
            ],
            _ => &[],
        }
    }
}

/// C's `strtoul(s, &end, 0)` over the whole word: `None` unless every
/// character is consumed (a leading `-` wraps, as in C, and is refused by
/// the callers' range checks).
pub fn strtoul_whole(s: &str) -> Option<u64> {
    let t = s.trim_start_matches([' ', '\t']);
    let (neg, t) = match t.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, t.strip_prefix('+').unwrap_or(t)),
    };
    let (radix, digits) = if let Some(h) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        (16, h)
    } else if t.len() > 1 && t.starts_with('0') {
        (8, &t[1..])
    } else {
        (10, t)
    };
    if digits.is_empty() {
        return None;
    }
    let v = u64::from_str_radix(digits, radix).ok()?;
    Some(if neg { v.wrapping_neg() } else { v })
}

/// `find_entry()`: the id of `name` in `kind`'s name space.
pub fn find(kind: Kind, name: &str) -> Option<u32> {
    if let Some(v) = strtoul_whole(name) {
        return (v <= kind.max()).then_some(v as u32);
    }
    with_entries(kind, |e| {
        e.iter().find(|(_, n)| n == name).map(|(id, _)| *id)
    })
}

/// The name of `id` in `kind`'s name space as keepalived's
/// `get_rttables_*()` print it: its file's, else the built-in one, else
/// the number.
pub fn name(kind: Kind, id: u32) -> String {
    with_entries(kind, |e| {
        e.iter().find(|(i, _)| *i == id).map(|(_, n)| n.clone())
    })
    .unwrap_or_else(|| id.to_string())
}

/// `f` over `kind`'s names. Each file is read once, as keepalived's
/// initialise_list() reads it, and again only when it changed (a reload
/// after an edit sees it, as keepalived's reload, which clears its lists,
/// does).
fn with_entries<R>(kind: Kind, f: impl FnOnce(&[(u32, String)]) -> R) -> R {
    type Cached = Option<(Option<std::time::SystemTime>, Vec<(u32, String)>)>;
    static LISTS: std::sync::Mutex<[Cached; 6]> = std::sync::Mutex::new([const { None }; 6]);
    let path = format!("/etc/iproute2/{}", kind.file());
    let mtime = std::fs::metadata(&path).and_then(|m| m.modified()).ok();
    let mut lists = LISTS.lock().unwrap_or_else(|e| e.into_inner());
    let slot = &mut lists[kind as usize];
    if slot.as_ref().is_none_or(|(t, _)| *t != mtime) {
        *slot = Some((mtime, read_entries(kind, &path)));
    }
    f(slot.as_ref().map_or(&[][..], |(_, e)| e.as_slice()))
}

/// `kind`'s names: its file's, then keepalived's built-in ones for ids the
/// file does not name.
fn read_entries(kind: Kind, path: &str) -> Vec<(u32, String)> {
    let mut entries: Vec<(u32, String)> = Vec::new();
    if let Ok(text) = std::fs::read_to_string(path) {
        for line in text.lines() {
            // keepalived's alloc_strvec ends a line at `#` or `!`.
            let line = line.split(['#', '!']).next().unwrap_or("");
            let w: Vec<&str> = line.split_whitespace().collect();
            if w.len() != 2 || w[0].starts_with('-') {
                continue;
            }
            match strtoul_whole(w[0]) {
                Some(id) if id <= kind.max() => entries.push((id as u32, w[1].to_string())),
                _ => {}
            }
        }
    }
    for (id, n) in kind.defaults() {
        if !entries.iter().any(|(e, _)| e == id) {
            entries.push((*id, n.to_string()));
        }
    }
    entries
}

/// keepalived's route type names (`rtntype_tbl`), "brd" an alias.
const RTN_NAMES: &[(&str, u8)] = &[
    ("unicast", 1),
    ("local", 2),
    ("broadcast", 3),
    ("brd", 3),
    ("anycast", 4),
    ("multicast", 5),
    ("blackhole", 6),
    ("unreachable", 7),
    ("prohibit", 8),
    ("throw", 9),
    ("nat", 10),
    ("xresolve", 11),
];

/// `find_rttables_rtntype()`: a route type's name or number.
pub fn rtntype(s: &str) -> Option<u8> {
    if let Some((_, v)) = RTN_NAMES.iter().find(|(n, _)| *n == s) {
        return Some(*v);
    }
    if s.starts_with('-') {
        return None;
    }
    strtoul_whole(s).filter(|v| *v <= 255).map(|v| v as u8)
}

/// `get_rttables_rtntype()`: a route type's name, else its number.
pub fn rtntype_name(t: u8) -> String {
    RTN_NAMES
        .iter()
        .find(|(_, v)| *v == t)
        .map_or_else(|| t.to_string(), |(n, _)| n.to_string())
}

/// `get_realms()`: `[FROM/]TO`, each a realm name or number.
pub fn realms(s: &str) -> Option<u32> {
    let (from, to) = match s.split_once('/') {
        Some((f, t)) => (Some(f), t),
        None => (None, s),
    };
    let to = find(Kind::Realm, to)?;
    let from = match from {
        Some(f) => find(Kind::Realm, f)?,
        None => 0,
    };
    Some(from << 16 | to)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_numbers_resolve_as_keepalived_resolves_them() {
        assert_eq!(find(Kind::Table, "main"), Some(254));
        assert_eq!(find(Kind::Table, "0x10"), Some(16));
        assert_eq!(find(Kind::Table, "nosuch"), None);
        assert_eq!(find(Kind::Scope, "link"), Some(253));
        assert_eq!(find(Kind::Scope, "256"), None);
        assert_eq!(find(Kind::Proto, "static"), Some(4));
        assert_eq!(rtntype("blackhole"), Some(6));
        assert_eq!(rtntype("10"), Some(10));
        assert_eq!(rtntype("198.51.100.0/24"), None);
        assert_eq!(realms("3/4"), Some(3 << 16 | 4));
        assert_eq!(strtoul_whole("010"), Some(8));
        assert_eq!(strtoul_whole("12x"), None);
    }
}
