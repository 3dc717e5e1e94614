//! keepalived's VRRP dump files, rendered from the runner: `keepalived.data`
//! (SIGUSR1, `vrrp_print.c` / `dump_vrrp()`), `keepalived.stats` (SIGUSR2,
//! `vrrp_print_stats()`) and `keepalived.json` (the JSON signal,
//! `vrrp_json.c`), with keepalived 2.2.7's labels, order and indentation so
//! that scripts and exporters reading them keep working. Pure: the shell
//! writes the text where keepalived writes it ([`path`]).

use super::fsm::State;
use super::run::{state_word, Node, Runner};
use crate::config::model::Config;
use crate::config::vrrp::{Auth, Instance, NotifyScript};
use crate::vrrp::format::format_ipaddress;
use serde_json::{json, Value};
use std::fmt::Write as _;
use std::path::PathBuf;

/// Which file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dump {
    /// `keepalived.data` (SIGUSR1).
    Data,
    /// `keepalived.stats` (SIGUSR2).
    Stats,
    /// `keepalived.stats`, then every counter zeroed (STATS_CLEAR).
    StatsClear,
    /// `keepalived.json` (the JSON signal).
    Json,
}

impl Dump {
    /// The file's name under `$TMPDIR`.
    pub fn file(self) -> &'static str {
        match self {
            Dump::Data => "keepalived.data",
            Dump::Stats | Dump::StatsClear => "keepalived.stats",
            Dump::Json => "keepalived.json",
        }
    }
}

/// Where keepalived writes `name`: `$TMPDIR` if it is a directory, else
/// `/tmp` (`lib/utils.c:make_tmp_filename`).
pub fn path(name: &str) -> PathBuf {
    let dir = std::env::var_os("TMPDIR")
        .map(PathBuf::from)
        .filter(|d| d.is_dir())
        .unwrap_or_else(|| PathBuf::from("/tmp"));
    dir.join(name)
}

/// The runner's clock against the wall's, to print its timers as
/// keepalived prints its `timeval`s.
#[derive(Debug, Clone, Copy)]
pub struct Clock {
    /// The runner's µs now.
    pub now_us: u64,
    /// Unix seconds now.
    pub now_unix: f64,
}

impl Clock {
    fn unix_of(&self, us: u64) -> f64 {
        self.now_unix + (us as f64 - self.now_us as f64) / 1e6
    }
}

/// keepalived's `%ld.%6.6ld (ctime)` of a Unix time (UTC).
fn timeval(t: f64) -> String {
    let secs = t.max(0.0).floor() as u64;
    let usecs = ((t - secs as f64) * 1e6).round().min(999_999.0) as u64;
    let c = crate::civil::Civil::of(secs);
    format!("{secs}.{usecs:06} ({})", c.ctime_usecs(usecs))
}

/// keepalived's numbers for the states (`vrrp.h`).
fn state_number(s: State) -> u8 {
    match s {
        State::Init => 0,
        State::Backup => 1,
        State::Master => 2,
        State::Fault => 3,
    }
}

fn bool_word(b: bool) -> &'static str {
    if b {
        "true"
    } else {
        "false"
    }
}

fn enabled(b: bool) -> &'static str {
    if b {
        "enabled"
    } else {
        "disabled"
    }
}

/// `'arg' 'arg'`, as keepalived quotes a command line.
fn quoted(args: &[String]) -> String {
    args.iter()
        .map(|a| format!("'{a}'"))
        .collect::<Vec<_>>()
        .join(" ")
}

fn script_line(cfg: &Config, s: &NotifyScript) -> String {
    use crate::config::script_security::{identity, RunAs};
    let user = s.user.clone().map(|u| (u, s.group.clone()));
    let who = identity(cfg, user.as_ref())
        .ok()
        .flatten()
        .unwrap_or_else(RunAs::ours);
    format!("{}, uid:gid {}:{}", quoted(&args_of(s)), who.uid, who.gid)
}

/// A notify script's command as keepalived keeps it: its path resolved
/// (keepalived's check_script_secure() keeps the real path).
fn args_of(s: &NotifyScript) -> Vec<String> {
    resolved(&s.args)
}

fn resolved(args: &[String]) -> Vec<String> {
    let mut a = args.to_vec();
    if let Some(first) = a.first_mut() {
        if first.starts_with('/') {
            if let Ok(p) = std::fs::canonicalize(&*first) {
                *first = p.display().to_string();
            }
        }
    }
    a
}

/// A seconds figure as keepalived's JSON prints it: whole seconds as an
/// integer.
fn secs_value(us: u64) -> Value {
    if us.is_multiple_of(1_000_000) {
        json!(us / 1_000_000)
    } else {
        json!(us as f64 / 1e6)
    }
}

/// Seconds of a µs figure as keepalived prints `garp_delay / TIMER_HZ`.
fn whole_secs(us: u64) -> u64 {
    us / 1_000_000
}

/// `keepalived.data`: the global definitions keepalived's VRRP process
/// prints, then every instance, the sync groups and the scripts.
pub fn data(cfg: &Config, r: &Runner, clock: Clock) -> String {
    let mut o = String::new();
    global_definitions(&mut o, cfg);
    let _ = writeln!(o, "------< VRRP Topology >------");
    for (k, n) in r.nodes.iter().enumerate() {
        instance(&mut o, cfg, r, k, n, clock);
    }
    if !r.groups.is_empty() {
        let _ = writeln!(o, "------< VRRP Sync groups >------");
        for g in &r.groups {
            let _ = writeln!(
                o,
                " VRRP Sync Group = {}, {}",
                g.cfg.name,
                state_word(g.state)
            );
            let members: Vec<&Node> = g
                .cfg
                .members
                .iter()
                .filter_map(|m| r.nodes.iter().find(|n| &n.cfg.name == m))
                .collect();
            let faults = members
                .iter()
                .filter(|n| n.fsm.state == State::Fault)
                .count();
            let _ = writeln!(
                o,
                "   Num member fault {}, num member init {}",
                u8::from(faults > 0),
                u8::from(g.state == State::Init)
            );
            let _ = writeln!(o, "   VRRP member instances :");
            for m in &members {
                let _ = writeln!(o, "     {}", m.cfg.name);
            }
            let _ = writeln!(
                o,
                "   Using smtp notification = {}",
                if g.cfg.smtp_alert == Some(true) {
                    "yes"
                } else {
                    "no"
                }
            );
            notify_lines(&mut o, cfg, &g.cfg.notify, false);
        }
    }
    if !r.scripts.is_empty() {
        let _ = writeln!(o, "------< VRRP Scripts >------");
        for (s, st, _) in &r.scripts {
            let _ = writeln!(o, " VRRP Script = {}", s.name);
            let _ = writeln!(o, "   Command = {}", quoted(&resolved(&s.args)));
            let _ = writeln!(o, "   Interval = {} sec", whole_secs(s.interval_us));
            let _ = writeln!(o, "   Timeout = {} sec", whole_secs(s.timeout_us));
            let _ = writeln!(
                o,
                "   Weight = {}{}",
                s.weight,
                if s.reverse { " reverse" } else { "" }
            );
            let _ = writeln!(o, "   Rise = {}", s.rise);
            let _ = writeln!(o, "   Fall = {}", s.fall);
            let _ = writeln!(o, "   Result = {}", st.result());
            let _ = writeln!(o, "   Insecure = no");
            let _ = writeln!(
                o,
                "   Init state = {}",
                if s.init_fail { "failed" } else { "unknown" }
            );
            let _ = writeln!(
                o,
                "   Status = {}",
                if st.pending {
                    "INIT"
                } else if st.up() {
                    "GOOD"
                } else {
                    "BAD"
                }
            );
            let user = s.user.clone();
            let who = crate::config::script_security::identity(cfg, user.as_ref())
                .ok()
                .flatten()
                .unwrap_or_else(crate::config::script_security::RunAs::ours);
            let _ = writeln!(o, "   Script uid:gid = {}:{}", who.uid, who.gid);
            let _ = writeln!(o, "   VRRP instances :");
            let _ = writeln!(o, "   Tracking instances :");
            for n in &r.nodes {
                if let Some(t) = n.trackers.scripts.iter().find(|t| t.0 == s.name) {
                    let _ = writeln!(o, "     {}, weight {}", n.cfg.name, t.1);
                }
            }
            let _ = writeln!(o, "   State = idle");
        }
    }
    if !r.bfds.is_empty() {
        let _ = writeln!(o, "------< VRRP Track BFDs >------");
        for (b, up) in &r.bfds {
            let _ = writeln!(o, " VRRP Track BFD = {}", b.name);
            let _ = writeln!(o, "   Weight = {}", b.weight);
            let _ = writeln!(o, "   Bfd is {}", if *up { "up" } else { "down" });
            let _ = writeln!(o, "   Tracking VRRP instances :");
            let tracking: Vec<_> = r
                .nodes
                .iter()
                .filter_map(|n| Some((n, n.trackers.bfds.iter().find(|t| t.0 == b.name)?)))
                .collect();
            if !tracking.is_empty() {
                let _ = writeln!(o, "   Tracking instances :");
                for (n, t) in tracking {
                    let _ = writeln!(o, "     {}, weight {}", n.cfg.name, t.1);
                }
            }
        }
    }
    o
}

fn global_definitions(o: &mut String, cfg: &Config) {
    let g = &cfg.global_defs;
    let vg = &cfg.vrrp.globals;
    let unset = |v: Option<bool>| v.map_or("unset", bool_word);
    let garp = crate::config::vrrp::global_garp(g);
    let v = &cfg.vrrp;
    let _ = writeln!(o, "------< Global definitions >------");
    let _ = writeln!(o, " Network namespace = (default)");
    let _ = writeln!(o, " Network namespace ipvs = (main namespace)");
    let _ = writeln!(
        o,
        " Router ID = {}",
        g.router_id.as_deref().unwrap_or("[unknown]")
    );
    let _ = writeln!(o, " Default smtp_alert = {}", unset(g.smtp_alert));
    let _ = writeln!(
        o,
        " Default smtp_alert_vrrp = {}",
        unset(vg.smtp_alert_vrrp)
    );
    let _ = writeln!(
        o,
        " Default smtp_alert_checker = {}",
        unset(g.smtp_alert_checker)
    );
    let _ = writeln!(
        o,
        " Dynamic interfaces = {}",
        bool_word(vg.dynamic_interfaces)
    );
    let default_if = g.default_interface.as_deref().unwrap_or("eth0");
    let _ = writeln!(o, " Default interface = {default_if}");
    let _ = writeln!(o, " LVS flush = {}", bool_word(g.lvs_flush));
    let _ = writeln!(
        o,
        " FIFO write vrrp states on reload = {}",
        bool_word(vg.fifo_write_states_on_reload)
    );
    let _ = writeln!(
        o,
        " VRRP notify priority changes = {}",
        bool_word(vg.notify_priority_changes)
    );
    let _ = writeln!(
        o,
        " VRRP IPv4 mcast group = {}",
        vg.mcast_group4.as_deref().unwrap_or("224.0.0.18")
    );
    let _ = writeln!(
        o,
        " VRRP IPv6 mcast group = {}",
        vg.mcast_group6.as_deref().unwrap_or("ff02::12")
    );
    garp_lines(o, " ", "refresh timer", &garp);
    let _ = writeln!(
        o,
        " Num adverts before down = {}",
        vg.down_timer_adverts.as_deref().unwrap_or("3")
    );
    let _ = writeln!(
        o,
        " Send advert after receive lower priority advert = {}",
        bool_word(!vg.lower_prio_no_advert)
    );
    let _ = writeln!(
        o,
        " Send advert after receive higher priority advert = {}",
        bool_word(vg.higher_prio_send_advert)
    );
    let _ = writeln!(
        o,
        " Gratuitous ARP interval = {:.6}",
        v.garp_interval_us as f64 / 1e6
    );
    let _ = writeln!(
        o,
        " Gratuitous NA interval = {:.6}",
        v.gna_interval_us as f64 / 1e6
    );
    let _ = writeln!(
        o,
        " VRRP default protocol version = {}",
        vg.version.as_deref().unwrap_or("2")
    );
    let _ = writeln!(
        o,
        " VRRP check unicast_src = {}",
        bool_word(vg.check_unicast_src)
    );
    let _ = writeln!(
        o,
        " VRRP skip check advert addresses = {}",
        bool_word(vg.skip_check_adv_addr)
    );
    let _ = writeln!(o, " VRRP strict mode = {}", bool_word(vg.strict));
    let _ = writeln!(o, " Script security {}", enabled(g.enable_script_security));
    let who = crate::config::script_security::identity(cfg, None)
        .ok()
        .flatten()
        .unwrap_or_else(crate::config::script_security::RunAs::ours);
    let _ = writeln!(o, " Default script uid:gid {}:{}", who.uid, who.gid);
    let _ = writeln!(o, " rs_init_notifies = {}", u8::from(g.rs_init_notifies));
}

/// The gratuitous ARP settings, as the global section (`refresh timer`)
/// and an instance (`refresh`) word them.
fn garp_lines(o: &mut String, indent: &str, refresh: &str, g: &crate::config::vrrp::Garp) {
    let d = whole_secs;
    for (label, v) in [
        ("delay", d(g.master_delay_us)),
        ("repeat", u64::from(g.master_repeat)),
        (refresh, d(g.master_refresh_us)),
        ("refresh repeat", u64::from(g.master_refresh_repeat)),
        ("lower priority delay", d(g.lower_prio_delay_us)),
        ("lower priority repeat", u64::from(g.lower_prio_repeat)),
    ] {
        let _ = writeln!(o, "{indent}Gratuitous ARP {label} = {v}");
    }
}

fn notify_lines(o: &mut String, cfg: &Config, n: &crate::config::vrrp::Notify, instance: bool) {
    for (label, s) in [
        ("Backup state transition script", &n.backup),
        ("Master state transition script", &n.master),
        ("Fault state transition script", &n.fault),
        ("Stop state transition script", &n.stop),
    ] {
        if let Some(s) = s {
            let _ = writeln!(o, "   {label} = {}", script_line(cfg, s));
        }
    }
    if instance {
        if let Some(Some(s)) = &n.deleted {
            let _ = writeln!(
                o,
                "   Deleted state transition script = {}",
                script_line(cfg, s)
            );
        }
        let _ = writeln!(
            o,
            "   Notify deleted = {}",
            if n.deleted.is_some() {
                "Deleted"
            } else {
                "Fault"
            }
        );
    }
    if let Some(s) = &n.any {
        let _ = writeln!(
            o,
            "   Generic state transition script = {}",
            script_line(cfg, s)
        );
    }
    if let Some(s) = &n.master_rx_lower_pri {
        let _ = writeln!(
            o,
            "   Master receive lower priority script = {}",
            script_line(cfg, s)
        );
    }
}

fn instance(o: &mut String, cfg: &Config, r: &Runner, k: usize, n: &Node, clock: Clock) {
    let i: &Instance = &n.cfg;
    let f = &n.fsm;
    let _ = writeln!(o, " VRRP Instance = {}", i.name);
    let _ = writeln!(o, "   VRRP Version = {}", i.version);
    if let Some(g) = &i.sync_group {
        let _ = writeln!(o, "   Sync group = {g}");
    }
    let _ = writeln!(o, "   State = {}", state_word(f.state));
    if i.unicast_peers.is_empty() {
        let _ = writeln!(o, "   Flags: none");
    } else {
        let _ = writeln!(o, "   Flags:\n     Using unicast");
    }
    let _ = writeln!(o, "   Wantstate = {}", state_word(f.wantstate));
    let _ = writeln!(o, "   Number of config faults = 0");
    let _ = writeln!(
        o,
        "   Number of interface and track script faults = {}",
        u8::from(r.effective(k).fault)
    );
    let _ = writeln!(
        o,
        "   Number of track scripts init = {}",
        u8::from(r.script_pending(k))
    );
    if let Some(t) = &n.last {
        let _ = writeln!(o, "   Last transition = {}", timeval(t.unix));
    }
    if let Some(d) = f.deadline {
        let _ = writeln!(o, "   Read timeout = {}", timeval(clock.unix_of(d)));
    }
    let _ = writeln!(o, "   Master down timer = {} usecs", f.down_interval());
    let _ = writeln!(o, "   Interface = {}", n.ifname);
    let from_cfg = if i.src_ip.is_some() {
        " (from configuration)"
    } else {
        ""
    };
    let _ = writeln!(o, "   Using src_ip = {}{from_cfg}", n.src);
    if i.unicast_peers.is_empty() {
        let _ = writeln!(o, "   Multicast address {}", n.dsts[0]);
    }
    garp_lines(o, "   ", "refresh", &i.garp);
    let _ = writeln!(o, "   Down timer adverts = {}", i.down_timer_adverts);
    let _ = writeln!(
        o,
        "   Send advert after receive lower priority advert = {}",
        bool_word(!i.lower_prio_no_advert)
    );
    let _ = writeln!(
        o,
        "   Send advert after receive higher priority advert = {}",
        bool_word(i.higher_prio_send_advert)
    );
    let _ = writeln!(o, "   Virtual Router ID = {}", i.vrid);
    let _ = writeln!(o, "   Priority = {}", n.base_priority);
    let _ = writeln!(o, "   Effective priority = {}", f.params.priority);
    let _ = writeln!(o, "   Total priority = {}", r.effective(k).total);
    if i.version == 2 {
        let _ = writeln!(
            o,
            "   Advert interval = {} sec",
            whole_secs(i.advert_int_us)
        );
    } else {
        let _ = writeln!(
            o,
            "   Advert interval = {} milli-sec",
            i.advert_int_us / 1000
        );
    }
    let _ = writeln!(o, "   Accept = {}", enabled(i.accept));
    let _ = writeln!(o, "   Preempt = {}", enabled(!i.nopreempt));
    if i.preempt_delay_us > 0 {
        let _ = writeln!(
            o,
            "   Preempt delay = {} secs",
            whole_secs(i.preempt_delay_us)
        );
    }
    let _ = writeln!(
        o,
        "   Promote_secondaries = {}",
        enabled(i.promote_secondaries)
    );
    match &i.auth {
        None => {
            let _ = writeln!(o, "   Authentication type = none");
        }
        Some(Auth::Pass(p)) => {
            let _ = writeln!(o, "   Authentication type = SIMPLE_PASSWORD");
            let _ = writeln!(o, "   Password = {}", String::from_utf8_lossy(p));
        }
        Some(Auth::Ah(p)) => {
            let _ = writeln!(o, "   Authentication type = IPSEC_AH");
            let _ = writeln!(o, "   Password = {}", String::from_utf8_lossy(p));
        }
    }
    let set = f.state == State::Master;
    let vip = |v: &crate::config::vrrp::Vip| {
        format_ipaddress(v, v.dev.as_deref().unwrap_or(n.vip_ifname()), set)
    };
    if !i.vips.is_empty() {
        let _ = writeln!(o, "   Virtual IP ({}):", i.vips.len());
        for v in &i.vips {
            let _ = writeln!(o, "     {}", vip(v));
        }
    }
    if !i.evips.is_empty() {
        let _ = writeln!(o, "   Virtual IP Excluded :");
        for v in &i.evips {
            let _ = writeln!(o, "     {}", vip(v));
        }
    }
    if !i.unicast_peers.is_empty() {
        let _ = writeln!(o, "   Unicast TTL = {}", i.unicast_ttl);
        let _ = writeln!(
            o,
            "   Check unicast src : {}",
            if i.check_unicast_src { "yes" } else { "no" }
        );
        let _ = writeln!(o, "   Unicast Peer :");
        for p in &i.unicast_peers {
            let _ = writeln!(
                o,
                "     {} min_ttl {} max_ttl {}",
                p.addr, p.min_ttl, p.max_ttl
            );
        }
        let _ = writeln!(
            o,
            "   Unicast checksum compatibility = {}",
            if n.old_checksum { "yes" } else { "no" }
        );
    }
    if !n.trackers.scripts.is_empty() {
        let _ = writeln!(o, "   Tracked scripts :");
        for (name, w, rev) in &n.trackers.scripts {
            let _ = writeln!(
                o,
                "     {name} weight {w}{}",
                if *rev { " reverse" } else { "" }
            );
        }
    }
    if !n.trackers.bfds.is_empty() {
        let _ = writeln!(o, "   Tracked BFDs :");
        for (name, w, rev) in &n.trackers.bfds {
            let _ = writeln!(
                o,
                "     {name}: weight {w}{}",
                if *rev { " reverse" } else { "" }
            );
        }
    }
    let _ = writeln!(
        o,
        "   Using smtp notification = {}",
        if i.smtp_alert == Some(true) {
            "yes"
        } else {
            "no"
        }
    );
    notify_lines(o, cfg, &i.notify, true);
    let _ = writeln!(
        o,
        "   Notify priority changes = {}",
        bool_word(i.notify_priority_changes == Some(true))
    );
}

/// `keepalived.stats`: every instance's counters.
pub fn stats(r: &Runner) -> String {
    let mut o = String::new();
    for n in &r.nodes {
        let s = &n.stats;
        let _ = writeln!(o, "VRRP Instance: {}", n.cfg.name);
        let _ = writeln!(o, "  Advertisements:");
        let _ = writeln!(o, "    Received: {}", s.advert_rcvd);
        let _ = writeln!(o, "    Sent: {}", s.advert_sent);
        let _ = writeln!(o, "  Became master: {}", s.become_master);
        let _ = writeln!(o, "  Released master: {}", s.release_master);
        let _ = writeln!(o, "  Packet Errors:");
        let _ = writeln!(o, "    Length: {}", s.packet_len_err);
        let _ = writeln!(o, "    TTL: {}", s.ip_ttl_err);
        let _ = writeln!(o, "    Invalid Type: {}", s.invalid_type_rcvd);
        let _ = writeln!(o, "    Advertisement Interval: {}", s.advert_interval_err);
        let _ = writeln!(o, "    Address List: {}", s.addr_list_err);
        let _ = writeln!(o, "  Authentication Errors:");
        let _ = writeln!(o, "    Invalid Type: 0");
        let _ = writeln!(o, "    Type Mismatch: 0");
        let _ = writeln!(o, "    Failure: {}", s.auth_failure);
        let _ = writeln!(o, "  Priority Zero:");
        let _ = writeln!(o, "    Received: {}", s.pri_zero_rcvd);
        let _ = writeln!(o, "    Sent: {}", s.pri_zero_sent);
    }
    o
}

/// `keepalived.json`: one `{"data": …, "stats": …}` per instance, with
/// keepalived's keys.
pub fn json(r: &Runner) -> String {
    let all: Vec<Value> = r
        .nodes
        .iter()
        .map(|n| {
            let i = &n.cfg;
            let f = &n.fsm;
            let set = f.state == State::Master;
            let fmt = |v: &crate::config::vrrp::Vip| {
                format_ipaddress(v, v.dev.as_deref().unwrap_or(n.vip_ifname()), set)
            };
            let mut d = json!({
                "iname": i.name,
                "dont_track_primary": u8::from(i.dont_track_primary),
                "skip_check_adv_addr": u8::from(i.skip_check_adv_addr),
                "strict_mode": u8::from(i.strict),
                "vmac_ifname": i.vmac.clone().unwrap_or_default(),
                "ifp_ifname": n.ifname,
                "master_priority": 0,
                "last_transition": n.last.as_ref().map_or(0.0, |t| (t.unix * 1e6).round() / 1e6),
                "garp_delay": whole_secs(i.garp.master_delay_us),
                "garp_refresh": whole_secs(i.garp.master_refresh_us),
                "garp_rep": i.garp.master_repeat,
                "garp_refresh_rep": i.garp.master_refresh_repeat,
                "garp_lower_prio_delay": whole_secs(i.garp.lower_prio_delay_us),
                "garp_lower_prio_rep": i.garp.lower_prio_repeat,
                "lower_prio_no_advert": u8::from(i.lower_prio_no_advert),
                "higher_prio_send_advert": u8::from(i.higher_prio_send_advert),
                "vrid": i.vrid,
                "base_priority": n.base_priority,
                "effective_priority": f.params.priority,
                "vipset": set,
                "promote_secondaries": i.promote_secondaries,
                "adver_int": secs_value(i.advert_int_us),
                "master_adver_int": secs_value(f.master_adver_int_us),
                "accept": u8::from(i.accept),
                "nopreempt": i.nopreempt,
                "preempt_delay": whole_secs(i.preempt_delay_us),
                "state": state_number(f.state),
                "wantstate": state_number(f.wantstate),
                "version": i.version,
                "smtp_alert": i.smtp_alert == Some(true),
                "notify_deleted": i.notify.deleted.is_some(),
            });
            let m = d.as_object_mut().expect("an object");
            if let Some(s) = i.notify.any.as_ref() {
                m.insert("script".into(), json!(quoted(&args_of(s))));
            }
            for (key, s) in [
                ("script_backup", &i.notify.backup),
                ("script_master", &i.notify.master),
                ("script_fault", &i.notify.fault),
                ("script_stop", &i.notify.stop),
            ] {
                if let Some(s) = s {
                    m.insert(key.into(), json!(quoted(&args_of(s))));
                }
            }
            m.insert(
                "vips".into(),
                json!(i.vips.iter().map(fmt).collect::<Vec<_>>()),
            );
            if !i.evips.is_empty() {
                m.insert(
                    "evips".into(),
                    json!(i.evips.iter().map(fmt).collect::<Vec<_>>()),
                );
            }
            let scripts: Vec<String> = n
                .trackers
                .scripts
                .iter()
                .filter_map(|(name, ..)| r.scripts.iter().find(|(s, ..)| &s.name == name))
                .map(|(s, ..)| quoted(&resolved(&s.args)))
                .collect();
            if !scripts.is_empty() {
                m.insert("track_script".into(), json!(scripts));
            }
            let (auth_type, data) = match &i.auth {
                None => (0, None),
                Some(Auth::Pass(p)) => (1, Some(p)),
                Some(Auth::Ah(p)) => (2, Some(p)),
            };
            m.insert("auth_type".into(), json!(auth_type));
            if let Some(p) = data {
                m.insert("auth_data".into(), json!(String::from_utf8_lossy(p)));
            }
            let s = &n.stats;
            json!({
                "data": d,
                "stats": {
                    "advert_rcvd": s.advert_rcvd,
                    "advert_sent": s.advert_sent,
                    "become_master": s.become_master,
                    "release_master": s.release_master,
                    "packet_len_err": s.packet_len_err,
                    "advert_interval_err": s.advert_interval_err,
                    "ip_ttl_err": s.ip_ttl_err,
                    "invalid_type_rcvd": s.invalid_type_rcvd,
                    "addr_list_err": s.addr_list_err,
                    "invalid_authtype": 0,
                    "authtype_mismatch": 0,
                    "auth_failure": s.auth_failure,
                    "pri_zero_rcvd": s.pri_zero_rcvd,
                    "pri_zero_sent": s.pri_zero_sent,
                }
            })
        })
        .collect();
    Value::Array(all).to_string()
}
