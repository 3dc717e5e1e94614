//! The keyword tables: for every block, which keywords keepalived 2.2.7
//! accepts there, which open a sub-block, and the handler that reads each.
//!
//! Used by [`super::parser`] to dispatch lines and by the grammar reference
//! test (`tests/grammar_reference.rs`), which fails when these tables and
//! `grammar/keywords.md` disagree. Sections whose runtime is not built yet
//! (VRRP, BFD, static addresses) use generic handlers that keep what was
//! written in [`Block`]s.

use super::handlers as h;
use super::lexer::Word;
use super::model::{Block, Setting, ValueLine};
use super::parser::{HandlerResult, Parser};

/// A keyword handler.
pub type Handler = fn(&mut Parser<'_, '_>, &[Word]) -> HandlerResult;

/// One keyword of a block.
pub struct Kw {
    /// The keyword, case-sensitive.
    pub name: &'static str,
    /// Reads the keyword's line.
    pub handler: Option<Handler>,
    /// Keywords of its `{ }` block, if it opens one.
    pub sub: Option<Table>,
    /// Runs at the block's `}` (not when the block was skipped).
    pub close: Option<fn(&mut Parser<'_, '_>)>,
    /// Runs instead of `close` when the block was skipped.
    pub abandon: Option<fn(&mut Parser<'_, '_>)>,
}

pub use super::keyword_table::Table;

fn kw(name: &'static str, handler: Handler) -> Kw {
    Kw {
        name,
        handler: Some(handler),
        sub: None,
        close: None,
        abandon: None,
    }
}

fn block(name: &'static str, handler: Handler, sub: Vec<Kw>, close: fn(&mut Parser<'_, '_>)) -> Kw {
    Kw {
        name,
        handler: Some(handler),
        sub: Some(sub.into()),
        close: Some(close),
        abandon: None,
    }
}

// ---- generic sections (VRRP, BFD, static) ----

fn generic_setting(p: &mut Parser<'_, '_>, w: &[Word]) -> HandlerResult {
    let line = p.pos.line;
    if let Some(b) = p.generic_top() {
        b.settings.push(Setting {
            keyword: w[0].text.clone(),
            args: w[1..].iter().map(|x| x.text.clone()).collect(),
            line,
        });
    }
    Ok(())
}

fn generic_open(p: &mut Parser<'_, '_>, w: &[Word]) -> HandlerResult {
    p.generic.push(Block {
        keyword: w[0].text.clone(),
        args: w[1..].iter().map(|x| x.text.clone()).collect(),
        line: p.pos.line,
        end_line: p.pos.line,
        settings: Vec::new(),
        values: Vec::new(),
        children: Vec::new(),
    });
    Ok(())
}

fn generic_open_named(p: &mut Parser<'_, '_>, w: &[Word]) -> HandlerResult {
    if w.len() < 2 {
        // keepalived's own words for some blocks; a missing parameter for
        // the others. A nameless block is skipped (and kept, nameless, so
        // that the block stack stays right).
        let msg = match w[0].text.as_str() {
            "vrrp_instance" => "vrrp_instance must have a name",
            "vrrp_sync_group" => "vrrp_sync_group must have a name - skipping",
            "track_group" => "track_group must have a name - skipping",
            "garp_group" => return generic_open(p, w),
            // The missing-parameter error (exit 2).
            _ => return p.arg(w, 1).map(drop),
        };
        p.err(crate::config::diag::ErrClass::GeneralError, msg);
        generic_open(p, w)?;
        p.skip_block();
        return Ok(());
    }
    generic_open(p, w)
}

/// Files a finished generic block under the enclosing one, or at the root.
fn attach(p: &mut Parser<'_, '_>, b: Block) {
    match p.generic.last_mut() {
        Some(parent) => parent.children.push(b),
        None => p.cfg.other_blocks.push(b),
    }
}

fn generic_close(p: &mut Parser<'_, '_>) {
    if let Some(mut b) = p.generic.pop() {
        b.end_line = p.pos.line;
        attach(p, b);
    }
}

/// A value block (`virtual_ipaddress { ... }`): every line is an item.
fn generic_value_block(p: &mut Parser<'_, '_>, w: &[Word]) -> HandlerResult {
    // The keyword's line, before reading the block moves the position on.
    let line = p.pos.line;
    let values = p
        .read_value_block(w)
        .into_iter()
        .map(|(v, line)| ValueLine {
            words: v.into_iter().map(|x| x.text).collect(),
            line,
        })
        .collect();
    let b = Block {
        keyword: w[0].text.clone(),
        args: w[1..].iter().map(|x| x.text.clone()).collect(),
        line,
        // Where the value block ended (its `}`).
        end_line: p.pos.line,
        settings: Vec::new(),
        values,
        children: Vec::new(),
    };
    attach(p, b);
    Ok(())
}

fn generic_block(name: &'static str, sub: Vec<Kw>) -> Kw {
    Kw {
        name,
        handler: Some(generic_open),
        sub: Some(sub.into()),
        close: Some(generic_close),
        abandon: Some(generic_close),
    }
}

fn generic_named_block(name: &'static str, sub: Vec<Kw>) -> Kw {
    Kw {
        name,
        handler: Some(generic_open_named),
        sub: Some(sub.into()),
        close: Some(generic_close),
        abandon: Some(generic_close),
    }
}

fn settings(names: &[&'static str]) -> Vec<Kw> {
    names.iter().map(|n| kw(n, generic_setting)).collect()
}

fn with_values(mut v: Vec<Kw>, value_blocks: &[&'static str]) -> Vec<Kw> {
    v.extend(value_blocks.iter().map(|n| kw(n, generic_value_block)));
    v
}

/// `vrrp_instance` keywords (keepalived 2.2.7, checked against `keepalived -t`).
pub const VRRP_INSTANCE: &[&str] = &[
    "use_vmac",
    "vmac_xmit_base",
    "use_vmac_addr",
    "use_ipvlan",
    "native_ipv6",
    "state",
    "interface",
    "dont_track_primary",
    "track_src_ip",
    "mcast_src_ip",
    "unicast_src_ip",
    "unicast_ttl",
    "unicast_fault_no_peer",
    "check_unicast_src",
    "old_unicast_checksum",
    "mcast_dst_ip",
    "virtual_router_id",
    "priority",
    "advert_int",
    "linkbeat_use_polling",
    "accept",
    "no_accept",
    "skip_check_adv_addr",
    "strict_mode",
    "preempt",
    "nopreempt",
    "preempt_delay",
    "debug",
    "notify_backup",
    "notify_master",
    "notify_fault",
    "notify_stop",
    "notify_deleted",
    "notify",
    "notify_master_rx_lower_pri",
    "notify_priority_changes",
    "smtp_alert",
    "lvs_sync_daemon_interface",
    "garp_master_delay",
    "garp_master_refresh",
    "garp_master_repeat",
    "garp_master_refresh_repeat",
    "garp_lower_prio_delay",
    "garp_lower_prio_repeat",
    "down_timer_adverts",
    "lower_prio_no_advert",
    "higher_prio_send_advert",
    "kernel_rx_buf_size",
    "version",
    "vrf",
    "promote_secondaries",
    "garp_extra_if",
    // keepalived-rs extension (grammar/keywords.md).
    "bfd_takeover",
];

/// `vrrp_instance` value blocks.
pub const VRRP_INSTANCE_VALUES: &[&str] = &[
    "virtual_ipaddress",
    "virtual_ipaddress_excluded",
    "virtual_routes",
    "virtual_rules",
    "track_interface",
    "track_script",
    "track_file",
    "track_process",
    "track_bfd",
    "unicast_peer",
];

/// `vrrp_sync_group` keywords.
pub const VRRP_SYNC_GROUP: &[&str] = &[
    "notify_backup",
    "notify_master",
    "notify_fault",
    "notify_stop",
    "notify",
    "smtp_alert",
    "global_tracking",
    "sync_group_tracking_weight",
    "notify_priority_changes",
];

/// `vrrp_sync_group` value blocks.
pub const VRRP_SYNC_GROUP_VALUES: &[&str] = &[
    "group",
    "track_interface",
    "track_script",
    "track_file",
    "track_process",
    "track_bfd",
];

/// `vrrp_script` keywords.
pub const VRRP_SCRIPT: &[&str] = &[
    "script",
    "interval",
    "timeout",
    "weight",
    "rise",
    "fall",
    "user",
    "init_fail",
];

/// `vrrp_track_process` keywords.
pub const VRRP_TRACK_PROCESS: &[&str] = &[
    "process",
    "param_match",
    "full_command",
    "weight",
    "quorum",
    "quorum_max",
    "delay",
    "terminate_delay",
    "fork_delay",
];

/// `global_defs` keywords kept as written (the typed ones are in `handlers`).
pub const GLOBAL_DEFS_OTHER: &[&str] = &[
    "bfd_cpu_affinity",
    "bfd_no_swap",
    "bfd_priority",
    "bfd_process_name",
    "bfd_rlimit_rtime",
    "bfd_rlimit_rttime",
    "bfd_rt_priority",
    "checker_cpu_affinity",
    "checker_no_swap",
    "checker_priority",
    "checker_rlimit_rtime",
    "checker_rlimit_rttime",
    "checker_rt_priority",
    "config_save_dir",
    "data_use_instance",
    "dbus_service_name",
    "default_interface",
    "disable_local_igmp",
    "dynamic_interfaces",
    "enable_dbus",
    "enable_snmp_checker",
    "enable_snmp_keepalived",
    "enable_snmp_rfc",
    "enable_snmp_rfcv2",
    "enable_snmp_rfcv3",
    "enable_snmp_vrrp",
    "enable_traps",
    "fifo_write_vrrp_states_on_reload",
    "log_unknown_vrids",
    "lvs_netlink_cmd_rcv_bufs",
    "lvs_netlink_cmd_rcv_bufs_force",
    "lvs_netlink_monitor_rcv_bufs",
    "lvs_netlink_monitor_rcv_bufs_force",
    "max_auto_priority",
    "min_auto_priority_delay",
    "nftables",
    "nftables_counters",
    "nftables_ifindex",
    "nftables_ipvs",
    "nftables_ipvs_priority",
    "nftables_ipvs_start_fwmark",
    "nftables_priority",
    "no_email_faults",
    "process_monitor_rcv_bufs",
    "process_monitor_rcv_bufs_force",
    "process_name",
    "process_names",
    "reload_file",
    "reload_repeat",
    "reload_time_file",
    "shutdown_script_timeout",
    "smtp_alert_vrrp",
    "snmp_socket",
    "startup_script_timeout",
    "tmp_config_directory",
    "umask",
    "vmac_addr_prefix",
    "vmac_prefix",
    "vrrp_check_unicast_src",
    "vrrp_cpu_affinity",
    "vrrp_down_timer_adverts",
    "vrrp_garp_extra_if",
    "vrrp_garp_interval",
    "vrrp_garp_lower_prio_delay",
    "vrrp_garp_lower_prio_repeat",
    "vrrp_garp_master_delay",
    "vrrp_garp_master_refresh",
    "vrrp_garp_master_refresh_repeat",
    "vrrp_garp_master_repeat",
    "vrrp_gna_interval",
    "vrrp_higher_prio_send_advert",
    "vrrp_iptables",
    "vrrp_lower_prio_no_advert",
    "vrrp_mcast_group4",
    "vrrp_mcast_group6",
    "vrrp_min_garp",
    "vrrp_netlink_cmd_rcv_bufs",
    "vrrp_netlink_cmd_rcv_bufs_force",
    "vrrp_netlink_monitor_rcv_bufs",
    "vrrp_netlink_monitor_rcv_bufs_force",
    "vrrp_no_swap",
    "vrrp_notify_fifo",
    "vrrp_notify_fifo_script",
    "vrrp_notify_priority_changes",
    "vrrp_priority",
    "vrrp_process_name",
    "vrrp_rlimit_rtime",
    "vrrp_rlimit_rttime",
    "vrrp_rt_priority",
    "vrrp_rx_bufs_multiplier",
    "vrrp_rx_bufs_policy",
    "vrrp_skip_check_adv_addr",
    "vrrp_startup_delay",
    "vrrp_strict",
    "vrrp_version",
    "vrrp_vmac_garp_intvl",
    "lvs_process_name",
];

fn noop_close(_: &mut Parser<'_, '_>) {}

fn noop(_: &mut Parser<'_, '_>, _: &[Word]) -> HandlerResult {
    Ok(())
}

fn global_defs() -> Vec<Kw> {
    let mut v = vec![
        kw("router_id", h::router_id),
        kw("lvs_flush", h::lvs_flush),
        kw("lvs_flush_on_stop", h::lvs_flush_on_stop),
        kw("lvs_flush_onstop", h::lvs_flush_on_stop),
        kw("lvs_timeouts", h::lvs_timeouts),
        kw("lvs_sync_daemon", h::lvs_sync_daemon),
        kw("script_user", h::script_user),
        kw("enable_script_security", h::enable_script_security),
        kw("checker_log_all_failures", h::checker_log_all_failures),
        kw("rs_init_notifies", h::rs_init_notifies),
        kw("no_checker_emails", h::no_checker_emails),
        kw("smtp_alert", h::global_smtp_alert),
        kw("smtp_alert_checker", h::global_smtp_alert_checker),
        kw("notify_fifo", h::notify_fifo),
        kw("notify_fifo_script", h::notify_fifo_script),
        kw("lvs_notify_fifo", h::lvs_notify_fifo),
        kw("lvs_notify_fifo_script", h::lvs_notify_fifo_script),
        kw("notification_email", h::notification_email),
        kw("notification_email_from", h::notification_email_from),
        kw("smtp_server", h::smtp_server),
        kw("smtp_helo_name", h::smtp_helo_name),
        kw("smtp_connect_timeout", h::smtp_connect_timeout),
        kw("checker_process_name", h::checker_process_name),
        kw("random_seed", h::random_seed),
        kw("reload_check_config", h::reload_check_config),
        kw("startup_script", h::start_stop_script),
        kw("shutdown_script", h::start_stop_script),
        // keepalived-rs extensions (grammar/keywords.md).
        kw("status_socket", h::status_socket),
        kw("metrics_listen", h::metrics_listen),
        kw("state_file", h::state_file),
        kw("state_file_interval", h::state_file_interval),
        kw("include_check", h::include_check),
    ];
    v.extend(GLOBAL_DEFS_OTHER.iter().map(|n| kw(n, h::global_other)));
    v
}

fn checker_common_conn() -> Vec<Kw> {
    vec![
        kw("connect_ip", h::ck_connect_ip),
        kw("connect_port", h::ck_connect_port),
        kw("bindto", h::ck_bindto),
        kw("bind_port", h::ck_bind_port),
        kw("bind_if", h::ck_bind_if),
        kw("fwmark", h::ck_fwmark),
        kw("connect_timeout", h::ck_connect_timeout),
    ]
}

fn checker_common_timing() -> Vec<Kw> {
    vec![
        kw("retry", h::ck_retry),
        kw("delay_before_retry", h::ck_delay_before_retry),
        kw("delay_loop", h::ck_delay_loop),
        kw("warmup", h::ck_warmup),
        kw("alpha", h::ck_alpha),
        kw("log_all_failures", h::ck_log_all_failures),
        // Extensions of keepalived-rs (grammar/keywords.md).
        kw("healthy_threshold", h::ck_healthy_threshold),
        kw("unhealthy_threshold", h::ck_unhealthy_threshold),
        kw("fast_interval", h::ck_fast_interval),
        kw("down_interval", h::ck_down_interval),
    ]
}

fn checker_common() -> Vec<Kw> {
    let mut v = checker_common_conn();
    v.extend(checker_common_timing());
    v
}

fn url_block() -> Vec<Kw> {
    vec![
        kw("path", h::url_path),
        kw("digest", h::url_digest),
        kw("status_code", h::url_status_code),
        kw("virtualhost", h::url_virtualhost),
        kw("regex", h::url_regex),
        kw("regex_no_match", h::url_regex_no_match),
        kw("regex_options", h::url_regex_options),
        kw("regex_min_offset", h::url_regex_min_offset),
        kw("regex_max_offset", h::url_regex_max_offset),
        kw("regex_stack", h::url_regex_stack),
        // Extensions of keepalived-rs (grammar/keywords.md).
        kw("expect_body", h::url_expect_body),
        kw("expect_header", h::url_expect_header),
    ]
}

/// HTTP_GET and SSL_GET take the same keywords in 2.2.7 (`tls_compliant`
/// and `sni_name` came later).
fn http_block() -> Vec<Kw> {
    let mut v = checker_common();
    v.extend([
        kw("http_protocol", h::http_protocol),
        kw("virtualhost", h::http_virtualhost),
        kw("fast_recovery", h::http_fast_recovery),
        kw("enable_sni", h::http_enable_sni),
        kw("nb_get_retry", h::http_nb_get_retry),
        // Extensions of keepalived-rs (grammar/keywords.md).
        kw("method", h::http_method),
        kw("user_agent", h::http_user_agent),
    ]);
    v.push(block("url", h::url_open, url_block(), h::url_close));
    v
}

/// SSL_GET: HTTP_GET's keywords and the certificate checks (extensions).
fn ssl_block() -> Vec<Kw> {
    let mut v = http_block();
    v.extend([
        kw("ca_file", h::ssl_ca_file),
        kw("verify_hostname", h::ssl_verify_hostname),
    ]);
    v
}

fn checkers() -> Vec<Kw> {
    let mut misc = checker_common_timing();
    misc.extend([
        kw("misc_path", h::misc_path),
        kw("misc_timeout", h::misc_timeout),
        kw("misc_dynamic", h::misc_dynamic),
        kw("user", h::misc_user),
    ]);
    let mut smtp = checker_common();
    smtp.push(kw("helo_name", h::smtp_helo));
    smtp.push(block(
        "host",
        h::smtp_host_open,
        checker_common(),
        h::smtp_host_close,
    ));
    let mut dns = checker_common();
    dns.push(kw("type", h::dns_type));
    dns.push(kw("name", h::dns_name));
    let mut udp = checker_common();
    udp.extend([
        kw("payload", h::udp_payload),
        kw("require_reply", h::udp_require_reply),
        kw("min_reply_length", h::udp_min_reply_length),
        kw("max_reply_length", h::udp_max_reply_length),
    ]);
    let mut tcp = checker_common();
    // Extension of keepalived-rs (grammar/keywords.md).
    tcp.push(kw("half_open", h::ck_half_open));
    vec![
        block("TCP_CHECK", h::tcp_open, tcp, h::checker_close),
        block("HTTP_GET", h::http_open, http_block(), h::http_close),
        block("SSL_GET", h::ssl_open, ssl_block(), h::http_close),
        block("MISC_CHECK", h::misc_open, misc, h::misc_close),
        block("SMTP_CHECK", h::smtp_open, smtp, h::smtp_close),
        block("DNS_CHECK", h::dns_open, dns, h::checker_close),
        block("UDP_CHECK", h::udp_open, udp, h::checker_close),
        block(
            "PING_CHECK",
            h::ping_open,
            checker_common(),
            h::checker_close,
        ),
        block(
            "FILE_CHECK",
            h::file_open,
            vec![
                kw("track_file", h::file_track_file),
                kw("weight", h::file_weight),
            ],
            h::file_close,
        ),
        block(
            "BFD_CHECK",
            h::bfd_open,
            vec![kw("name", h::bfd_name), kw("alpha", h::ck_alpha)],
            h::bfd_close,
        ),
    ]
}

fn real_server() -> Vec<Kw> {
    let mut v = vec![
        kw("weight", h::rs_weight),
        kw("lvs_method", h::rs_lvs_method),
        kw("inhibit_on_failure", h::rs_inhibit),
        kw("notify_up", h::rs_notify_up),
        kw("notify_down", h::rs_notify_down),
        kw("uthreshold", h::rs_uthreshold),
        kw("lthreshold", h::rs_lthreshold),
        kw("alpha", h::rs_alpha),
        kw("retry", h::rs_retry),
        kw("delay_before_retry", h::rs_delay_before_retry),
        kw("warmup", h::rs_warmup),
        kw("connect_timeout", h::rs_connect_timeout),
        kw("delay_loop", h::rs_delay_loop),
        kw("smtp_alert", h::rs_smtp_alert),
        kw("virtualhost", h::rs_virtualhost),
        kw("snmp_name", h::rs_snmp_name),
    ];
    v.extend(checkers());
    v
}

fn virtual_server() -> Vec<Kw> {
    vec![
        kw("lvs_sched", h::vs_sched),
        kw("lb_algo", h::vs_sched),
        kw("lvs_method", h::vs_method),
        kw("lb_kind", h::vs_method),
        kw("protocol", h::vs_protocol),
        kw("persistence_timeout", h::vs_persistence_timeout),
        kw("persistence_granularity", h::vs_persistence_granularity),
        kw("persistence_engine", h::vs_persistence_engine),
        kw("ops", h::vs_ops),
        kw("flag-1", h::vs_flag),
        kw("flag-2", h::vs_flag),
        kw("flag-3", h::vs_flag),
        kw("sh-port", h::vs_flag),
        kw("sh-fallback", h::vs_flag),
        kw("mh-port", h::vs_flag),
        kw("mh-fallback", h::vs_flag),
        kw("hashed", noop),
        kw("ha_suspend", h::vs_ha_suspend),
        kw("alpha", h::vs_alpha),
        kw("omega", h::vs_omega),
        // Extension of keepalived-rs (grammar/keywords.md).
        kw("half_open", h::vs_half_open),
        kw("healthy_threshold", h::vs_healthy_threshold),
        kw("unhealthy_threshold", h::vs_unhealthy_threshold),
        kw("fast_interval", h::vs_fast_interval),
        kw("down_interval", h::vs_down_interval),
        kw("fail_open", h::vs_fail_open),
        kw("slow_start", h::vs_slow_start),
        kw("drain_timeout", h::vs_drain_timeout),
        kw("quorum", h::vs_quorum),
        kw("hysteresis", h::vs_hysteresis),
        kw("quorum_up", h::vs_quorum_up),
        kw("quorum_down", h::vs_quorum_down),
        kw("sorry_server", h::vs_sorry_server),
        kw("sorry_server_inhibit", h::vs_sorry_server_inhibit),
        kw("sorry_server_lvs_method", h::vs_sorry_server_lvs_method),
        kw("ip_family", h::vs_ip_family),
        kw("virtualhost", h::vs_virtualhost),
        kw("smtp_alert", h::vs_smtp_alert),
        kw("snmp_name", h::vs_snmp_name),
        kw("weight", h::vs_weight),
        kw("delay_loop", h::vs_delay_loop),
        kw("connect_timeout", h::vs_connect_timeout),
        kw("retry", h::vs_retry),
        kw("delay_before_retry", h::vs_delay_before_retry),
        kw("warmup", h::vs_warmup),
        kw("inhibit_on_failure", h::vs_inhibit),
        Kw {
            name: "real_server",
            handler: Some(h::rs_open),
            sub: Some(real_server().into()),
            close: Some(h::rs_close),
            abandon: None,
        },
    ]
}

/// The root keyword table.
pub fn root() -> Vec<Kw> {
    let vrrp_instance = {
        let mut v = settings(VRRP_INSTANCE);
        v = with_values(v, VRRP_INSTANCE_VALUES);
        v.push(generic_block(
            "authentication",
            settings(&["auth_type", "auth_pass"]),
        ));
        v
    };
    let sync_group = with_values(settings(VRRP_SYNC_GROUP), VRRP_SYNC_GROUP_VALUES);
    let garp_group = with_values(
        settings(&["garp_interval", "gna_interval", "interface"]),
        &["interfaces"],
    );
    let track_file = || {
        vec![
            kw("file", h::tf_file),
            kw("weight", h::tf_weight),
            kw("init_file", h::tf_init_file),
        ]
    };
    vec![
        block("global_defs", noop, global_defs(), noop_close),
        kw("net_namespace", h::net_namespace),
        kw("net_namespace_ipvs", h::net_namespace_ipvs),
        kw("namespace_with_ipsets", h::namespace_with_ipsets),
        kw("use_pid_dir", h::use_pid_dir),
        kw("instance", h::instance),
        kw("child_wait_time", h::child_wait_time),
        kw("linkbeat_use_polling", h::linkbeat_use_polling),
        kw("linkbeat_interfaces", generic_value_block),
        kw("interface_up_down_delays", generic_value_block),
        kw("static_ipaddress", generic_value_block),
        kw("static_routes", generic_value_block),
        kw("static_rules", generic_value_block),
        generic_named_block("track_group", with_values(Vec::new(), &["group"])),
        generic_named_block("garp_group", garp_group),
        generic_named_block("vrrp_sync_group", sync_group),
        generic_named_block("vrrp_instance", vrrp_instance),
        generic_named_block("vrrp_script", settings(VRRP_SCRIPT)),
        generic_named_block("vrrp_track_process", settings(VRRP_TRACK_PROCESS)),
        Kw {
            name: "bfd_instance",
            handler: Some(h::bfd_instance_open),
            sub: Some(Table::from(vec![
                kw("source_ip", h::bfd_source),
                kw("neighbor_ip", h::bfd_neighbor),
                kw("neighbour_ip", h::bfd_neighbor),
                kw("min_rx", h::bfd_interval),
                kw("min_tx", h::bfd_interval),
                kw("idle_tx", h::bfd_interval),
                kw("multiplier", h::bfd_multiplier),
                kw("passive", h::bfd_passive),
                kw("ttl", h::bfd_ttl),
                kw("hoplimit", h::bfd_ttl),
                kw("max_hops", h::bfd_max_hops),
                kw("weight", h::bfd_weight),
                kw("vrrp", h::bfd_event),
                kw("checker", h::bfd_event),
            ])),
            close: Some(h::bfd_instance_close),
            abandon: Some(h::bfd_instance_abandon),
        },
        block("track_file", h::tf_open, track_file(), h::tf_close),
        block("vrrp_track_file", h::tf_open, track_file(), h::tf_close),
        block(
            "SSL",
            h::ssl_block_open,
            vec![
                kw("password", h::ssl_password),
                kw("ca", h::ssl_ca),
                kw("certificate", h::ssl_certificate),
                kw("key", h::ssl_key),
            ],
            noop_close,
        ),
        kw("virtual_server_group", h::vsg),
        Kw {
            name: "virtual_server",
            handler: Some(h::vs_open),
            sub: Some(virtual_server().into()),
            close: Some(h::vs_close),
            abandon: None,
        },
    ]
}

/// The root keywords keepalived's parent process reads: `global_defs` and
/// the root settings; every other block is skipped there (the checker,
/// VRRP and BFD processes read those). For the lines only the parent
/// reads at the top level (see `Parser::global_defs`).
pub fn parent_root() -> Vec<Kw> {
    const PARENT: &[&str] = &[
        "global_defs",
        "net_namespace",
        "net_namespace_ipvs",
        "namespace_with_ipsets",
        "use_pid_dir",
        "instance",
        "child_wait_time",
        "linkbeat_use_polling",
    ];
    // keepalived's parent skips the other processes' blocks from the top
    // level, by counting braces; a block without its `{` is no block to
    // it, and the lines after it are read at the top level.
    fn skip(p: &mut Parser<'_, '_>, words: &[Word]) -> HandlerResult {
        if words.last().is_some_and(|w| w.text == "{") {
            p.skip_open_block();
        } else {
            p.skip_block();
        }
        Ok(())
    }
    root()
        .into_iter()
        .map(|k| {
            if PARENT.contains(&k.name) {
                k
            } else {
                Kw {
                    name: k.name,
                    handler: Some(skip),
                    sub: None,
                    close: None,
                    abandon: None,
                }
            }
        })
        .collect()
}

/// The closest keyword of `table` to `word`, for "did you mean".
pub fn did_you_mean(word: &str, table: &[Kw]) -> Option<&'static str> {
    let mut best: Option<(usize, &'static str)> = None;
    for k in table {
        let d = levenshtein(&word.to_ascii_lowercase(), &k.name.to_ascii_lowercase());
        let limit = (word.len().max(k.name.len()) / 3).max(1);
        if d <= limit && best.is_none_or(|(bd, _)| d < bd) {
            best = Some((d, k.name));
        }
    }
    best.map(|(_, n)| n)
}

fn levenshtein(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for i in 1..=a.len() {
        let mut cur = vec![i; b.len() + 1];
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            cur[j] = (prev[j] + 1).min(cur[j - 1] + 1).min(prev[j - 1] + cost);
        }
        prev = cur;
    }
    prev[b.len()]
}

/// Every keyword path of the tables, `section/keyword`, for the grammar test.
pub fn keyword_paths() -> Vec<(String, String, bool)> {
    fn walk(prefix: &str, t: &[Kw], out: &mut Vec<(String, String, bool)>) {
        for k in t {
            out.push((prefix.to_string(), k.name.to_string(), k.sub.is_some()));
            if let Some(s) = &k.sub {
                let p = if prefix.is_empty() {
                    k.name.to_string()
                } else {
                    format!("{prefix}/{}", k.name)
                };
                walk(&p, s, out);
            }
        }
    }
    let mut out = Vec::new();
    walk("", &root(), &mut out);
    out
}
