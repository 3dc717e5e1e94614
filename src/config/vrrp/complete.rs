//! keepalived 2.2.7's `vrrp_complete_instance()`: the checks and defaults
//! applied once a `vrrp_instance` block has been read (the VRID required,
//! the family from the addresses, accept mode, strict mode's resets, the
//! advert interval's rounding, the tracked interfaces an owner ignores...),
//! with keepalived's messages. Pure but for the host's interfaces. Part of
//! the model's builder ([`super::build`]).

use super::build::global_flag;
use super::ctx::Ctx;
use super::*;
use crate::config::model::{Config, TIMER_HZ};

/// What the block said that is settled only once it is all read.
#[derive(Default)]
pub(super) struct Written {
    pub priority: Option<u8>,
    pub vrid: Option<u8>,
    pub state_master: bool,
    /// `advert_int` as written, seconds.
    pub advert_text: Option<f64>,
    /// Some unicast keyword (`unicast_src_ip`, `unicast_peer`...).
    pub unicast_keyword: bool,
    pub ipvlan: bool,
    pub native_ipv6: bool,
    /// The line of the accepted `native_ipv6` (0: none).
    pub native_ipv6_line: usize,
    /// `accept` / `no_accept` as given.
    pub accept: Option<bool>,
    pub lower_delay_set: bool,
    pub lower_rep_set: bool,
    /// The line of the block's `}`.
    pub end_line: usize,
}

/// Completes instance `i`, or `None` when keepalived drops it.
pub(super) fn complete(
    cfg: &Config,
    cx: &mut Ctx,
    mut i: Instance,
    w: Written,
) -> Option<Instance> {
    let Written {
        priority,
        vrid,
        state_master,
        advert_text,
        unicast_keyword,
        ipvlan,
        native_ipv6,
        native_ipv6_line: _,
        accept: accept_given,
        lower_delay_set,
        lower_rep_set,
        end_line,
    } = w;
    let name = i.name.clone();
    cx.line = 0;
    // The alerts and the FIFO's priority events: the instance's own word,
    // else the global one (smtp_alert_vrrp, then smtp_alert).
    i.smtp_alert = Some(
        i.smtp_alert
            .or_else(|| global_flag(cfg, "smtp_alert_vrrp"))
            .or(cfg.global_defs.smtp_alert)
            .unwrap_or(false),
    );
    i.notify_priority_changes = Some(
        i.notify_priority_changes
            .or_else(|| global_flag(cfg, "vrrp_notify_priority_changes"))
            .unwrap_or(false),
    );
    let Some(vrid) = vrid else {
        cx.err_nolines(format!("({name}) the virtual router id must be set"));
        return None;
    };
    i.vrid = vrid;
    // The family is the first address read's: a VIP or a unicast peer,
    // whichever comes first in the file.
    let first_vip = i.vips.first().map(|v| (v.line, v.addr.is_ipv6()));
    let first_peer = i.unicast_peers.first().map(|p| (p.line, p.addr.is_ipv6()));
    let first = match (first_vip, first_peer) {
        (Some(v), Some(p)) => Some(if p.0 < v.0 { p.1 } else { v.1 }),
        (v, p) => v.or(p).map(|x| x.1),
    };
    i.ipv6 = native_ipv6
        || if i.vips.is_empty() && i.src_ip.is_some() {
            i.src_ip.is_some_and(|a| a.is_ipv6())
        } else {
            first == Some(true)
        };
    if i.ipv6 {
        i.version = 3;
    }
    let family_v6 = i.ipv6;
    let mut kept = Vec::new();
    for v in std::mem::take(&mut i.vips) {
        if v.addr.is_ipv6() != family_v6 {
            cx.line = v.line;
            cx.err(format!(
                "({name}): address family must match VRRP instance [{}] - ignoring",
                v.addr
            ));
            cx.line = 0;
        } else {
            kept.push(v);
        }
    }
    i.vips = kept;
    match &i.interface {
        None => cx.err_nolines(format!("({name}) Unknown interface!")),
        Some(ifn)
            if i.unicast_peers.is_empty()
                && cx.host.interface_exists(ifn)
                && !cx.host.interface_multicast(ifn) =>
        {
            cx.err_nolines(format!(
                "({name}) interface {ifn} does not support multicast, specify unicast peers - disabling"
            ));
            return None;
        }
        Some(_) => {}
    }
    if i.vips.is_empty() {
        let need = if i.version == 3 || i.strict {
            "required"
        } else {
            "sensible"
        };
        cx.err_nolines(format!("({name}) No VIP specified; at least one is {need}"));
    }
    i.priority = priority.unwrap_or(if state_master { 255 } else { 100 });
    if i.priority == 255 && i.nopreempt {
        cx.err_nolines(format!(
            "({name}) nopreempt is incompatible with priority 255. resetting nopreempt"
        ));
        i.nopreempt = false;
    }
    if !i.unicast_peers.is_empty() {
        if i.mcast_dst.take().is_some() {
            cx.err_nolines(format!(
                "({name}) multicast destination specified with unicast - ignoring"
            ));
        }
    } else if unicast_keyword && !i.unicast_fault_no_peer {
        cx.err_nolines(format!(
            "({name}) A unicast keyword has been specified without any unicast peers. Defaulting to multicast. This usage is deprecated - please update your configuration."
        ));
    }
    if i.auth.is_some() {
        if i.version == 3 {
            cx.err_nolines(format!(
                "({name}) VRRP version 3 does not support authentication. Ignoring."
            ));
            i.auth = None;
        } else if i.strict {
            cx.err_nolines(format!(
                "({name}) Strict mode does not support authentication. Ignoring."
            ));
            i.auth = None;
        }
    }
    if i.strict && i.preempt_delay_us > 0 {
        cx.err_nolines(format!(
            "({name}) preempt_delay is incompatible with strict mode - resetting"
        ));
        i.preempt_delay_us = 0;
    }
    // vrrp_complete_instance(): accept unless given, except a non-owner in
    // strict mode; VRRPv2 has no accept mode in strict mode.
    i.accept = accept_given.unwrap_or(i.priority == 255 || !i.strict);
    if i.accept && i.priority != 255 && i.strict && i.version == 2 {
        cx.err_nolines(format!(
            "({name}) warning - accept mode for VRRP version 2 does not comply with RFC3768 - resetting"
        ));
        i.accept = false;
    }
    if let Some(secs) = advert_text {
        if i.version == 2 && secs.fract() != 0.0 {
            cx.err_nolines(format!(
                "({name}) VRRPv2 advertisement interval {secs:.6}s must be an integer. rounding"
            ));
            i.advert_int_us = (secs.round().max(1.0) as u64) * TIMER_HZ;
        } else if i.version == 3 && secs >= 40.96 {
            cx.err_nolines(format!(
                "({name}) VRRPv3 advertisement interval {secs:.2}s is out of range. Must be less than 40.96s. Setting to 40.95s"
            ));
            i.advert_int_us = 40_950_000;
        } else if i.version == 3 {
            // v3 carries centiseconds.
            i.advert_int_us = i.advert_int_us / 10_000 * 10_000;
        }
    }
    let unicast = unicast_keyword || !i.unicast_peers.is_empty();
    if (i.vmac.is_some() || ipvlan) && unicast && i.interface.is_none() {
        cx.line = end_line;
        cx.err(format!(
            "({name}): Cannot use VMAC/ipvlan with unicast and no interface - clearing use_vmac"
        ));
        cx.line = 0;
        i.vmac = None;
    }
    if i.vmac.is_some() && unicast && !i.vmac_xmit_base {
        // Reported at the instance's `}` (its end handler).
        cx.line = end_line;
        cx.err(format!(
            "({name}) unicast with use_vmac requires vmac_xmit_base - setting"
        ));
        cx.line = 0;
        i.vmac_xmit_base = true;
    }
    // use_vmac without a name: keepalived's vrrp.VRID.
    if let Some(v) = i.vmac.as_mut().filter(|v| v.is_empty()) {
        *v = format!("vrrp.{}", i.vrid);
    }
    if i.vmac_xmit_base && i.vmac.is_none() {
        cx.err_nolines(format!("({name}) vmac_xmit_base is only valid with a vmac"));
        i.vmac_xmit_base = false;
    }
    if ipvlan && i.src_ip.is_none() && !i.ipv6 {
        cx.err_nolines(format!(
            "({name}) IPv4 ipvlan requires a source ip address to be configured. setting instance to fault state"
        ));
    }
    // vrrp_complete_instance(): the lower-priority GARPs follow the master's
    // unless given (none at all in strict mode).
    if !lower_rep_set {
        i.garp.lower_prio_repeat = if i.strict { 0 } else { i.garp.master_repeat };
    }
    if !lower_delay_set {
        i.garp.lower_prio_delay_us = if i.strict { 0 } else { i.garp.master_delay_us };
    }
    let own = i.interface.clone();
    let owner = i.priority == 255;
    i.track_interfaces.retain(|t| {
        if own.as_deref() == Some(t.name.as_str()) {
            cx.err_nolines(format!(
                "({name}) Ignoring track_interface {} since own interface",
                t.name
            ));
            return false;
        }
        if owner && t.weight.is_some_and(|w| w != 0) {
            cx.err_nolines(format!(
                "({name}) ignoring {} tracked interface due to address owner",
                t.name
            ));
            return false;
        }
        true
    });
    Some(i)
}
