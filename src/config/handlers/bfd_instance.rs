//! `bfd_instance NAME { ... }`: the BFD sessions BFD_CHECK and `track_bfd`
//! follow, read with keepalived 2.2.7's checks although BFD itself does
//! not run yet. keepalived reads the block three times (the checker and
//! VRRP processes keep the name and, for VRRP, the weight; the BFD
//! process the session), and `-t` shows each parse's messages; they are
//! reproduced once each here.

use super::*;
use crate::config::numbers;
use crate::config::parser::MissingParameter;

/// keepalived's `BFD_INAME_MAX`: names are shorter than this.
const NAME_MAX: usize = 32;

pub fn bfd_instance_open(p: P, w: &[Word]) -> HandlerResult {
    let name = p.arg(w, 1)?.to_string();
    let line = p.pos.line;
    if name.len() >= NAME_MAX {
        p.err(ErrClass::GeneralError, format!("BFD name {name} too long"));
        p.err(
            ErrClass::GeneralError,
            format!(
                "Configuration error: BFD instance {name} name too long (maximum length is {} characters) - ignoring",
                NAME_MAX - 1
            ),
        );
        // Only the BFD process skips the block; the others keep the name
        // (a second block of it is skipped there too) and read the block.
        if p.cfg
            .bfd_instances
            .iter()
            .any(|b| b.listed && b.name == name)
        {
            p.err(
                ErrClass::GeneralError,
                format!("BFD {name} already specified"),
            );
            p.skip_block();
            return Ok(());
        }
        p.bfd = Some(BfdInstance::unnamed(name, line));
        return Ok(());
    }
    // The checker's and VRRP's lists hold every name read; the BFD
    // process's only the sessions it kept, so a second block of a name
    // whose first session was dropped is still read there.
    let listed = !p
        .cfg
        .bfd_instances
        .iter()
        .any(|b| b.name == name && b.listed);
    let valid = !p
        .cfg
        .bfd_instances
        .iter()
        .any(|b| b.name == name && b.valid);
    if !listed {
        p.err(
            ErrClass::GeneralError,
            format!("BFD {name} already specified"),
        );
    }
    if !valid {
        p.err(
            ErrClass::GeneralError,
            format!("Configuration error: BFD instance {name} already configured - ignoring"),
        );
    }
    if !listed && !valid {
        p.skip_block();
        return Ok(());
    }
    p.bfd = Some(BfdInstance {
        valid,
        listed,
        ..BfdInstance::new(name, line)
    });
    Ok(())
}

/// The session being read, unless the BFD process dropped it (a bad
/// neighbour address skips the rest of its block there).
fn session<'a>(p: &'a mut Parser<'_, '_>) -> Option<&'a mut BfdInstance> {
    p.bfd.as_mut().filter(|b| b.valid)
}

fn name(p: &P) -> String {
    p.bfd.as_ref().map(|b| b.name.clone()).unwrap_or_default()
}

/// The value of a keyword only the BFD process reads (the checker and
/// VRRP ignore the line whole): `None` when that process dropped the
/// session, so nothing is read or said.
fn session_value(p: P, w: &[Word]) -> Result<Option<String>, MissingParameter> {
    if session(p).is_none() {
        return Ok(None);
    }
    Ok(Some(p.arg(w, 1)?.to_string()))
}

/// Stores into the session being read.
fn set(p: P, f: impl FnOnce(&mut BfdInstance)) {
    if let Some(b) = session(p) {
        f(b);
    }
}

/// keepalived's refusal of a session's value: "Configuration error: BFD
/// instance NAME DETAIL".
fn refuse(p: P, detail: String) {
    let n = name(&p);
    p.err(
        ErrClass::GeneralError,
        format!("Configuration error: BFD instance {n} {detail}"),
    );
}

pub fn bfd_neighbor(p: P, w: &[Word]) -> HandlerResult {
    let Some(s) = session_value(p, w)? else {
        return Ok(());
    };
    match parse_ip(&s) {
        Some(ip) => set(p, |b| b.neighbor = Some(ip)),
        None => {
            refuse(
                p,
                format!("has malformed neighbor address {s}, ignoring instance"),
            );
            if let Some(b) = p.bfd.as_mut() {
                // keepalived skips the rest of the block.
                b.valid = false;
            }
        }
    }
    Ok(())
}

pub fn bfd_source(p: P, w: &[Word]) -> HandlerResult {
    let Some(s) = session_value(p, w)? else {
        return Ok(());
    };
    match parse_ip(&s) {
        Some(ip) => set(p, |b| b.source = Some(ip)),
        None => refuse(p, format!("has malformed source address {s}, ignoring")),
    }
    Ok(())
}

/// `min_rx`, `min_tx`, `idle_tx`: milliseconds with up to three decimals.
pub fn bfd_interval(p: P, w: &[Word]) -> HandlerResult {
    let Some(s) = session_value(p, w)? else {
        return Ok(());
    };
    let kw = w[0].text.clone();
    let min_ms = if kw == "idle_tx" { 1000 } else { 1 };
    let max_ms = u32::MAX as u64 / 1000;
    match numbers::read_decimal(p, &s, min_ms * 1000, max_ms * 1000, 3) {
        Ok(us) => set(p, |b| match kw.as_str() {
            "min_rx" => b.min_rx_us = us,
            "min_tx" => b.min_tx_us = us,
            _ => b.idle_tx_us = us,
        }),
        // keepalived says only the reader's line then.
        Err(numbers::Decimal::TooManyPlaces) => {}
        Err(_) => refuse(
            p,
            format!("{kw} value {s} is not valid (must be in range [{min_ms}-{max_ms}]), ignoring"),
        ),
    }
    Ok(())
}

pub fn bfd_multiplier(p: P, w: &[Word]) -> HandlerResult {
    let Some(s) = session_value(p, w)? else {
        return Ok(());
    };
    match p.read_unsigned(&s, 1, 255, false) {
        Some(v) => set(p, |b| b.multiplier = v as u8),
        None => refuse(
            p,
            format!("multiplier value {s} not valid (must be in range [1-255]), ignoring"),
        ),
    }
    Ok(())
}

pub fn bfd_passive(p: P, _w: &[Word]) -> HandlerResult {
    set(p, |b| b.passive = true);
    Ok(())
}

/// `ttl` / `hoplimit`.
pub fn bfd_ttl(p: P, w: &[Word]) -> HandlerResult {
    let Some(s) = session_value(p, w)? else {
        return Ok(());
    };
    match p.read_unsigned(&s, 1, 255, false) {
        Some(v) => set(p, |b| b.ttl = Some(v as u8)),
        None => refuse(
            p,
            format!("ttl/hoplimit value {s} not valid (must be in range [1-255]), ignoring"),
        ),
    }
    Ok(())
}

pub fn bfd_max_hops(p: P, w: &[Word]) -> HandlerResult {
    let Some(s) = session_value(p, w)? else {
        return Ok(());
    };
    match p.read_int(&s, -1, 255, false) {
        Some(v) => set(p, |b| b.max_hops = v as i16),
        None => refuse(
            p,
            format!("max_hops value {s} not valid (must be in range [-1-255]), ignoring"),
        ),
    }
    Ok(())
}

/// `weight`: read by keepalived's VRRP process, so also for a session the
/// BFD process dropped.
pub fn bfd_weight(p: P, w: &[Word]) -> HandlerResult {
    // VRRP skips a block whose name it already has.
    // (nor of a name too long for it, whose block it still reads).
    if !p
        .bfd
        .as_ref()
        .is_some_and(|b| b.listed && b.name.len() < NAME_MAX)
    {
        return Ok(());
    }
    let s = p.arg(w, 1)?.to_string();
    match p.read_int(&s, -253, 253, true) {
        Some(v) => {
            if let Some(b) = p.bfd.as_mut() {
                b.weight = v as i32;
            }
        }
        None => refuse(
            p,
            format!("weight value {s} not valid (must be in range [-253-253]), ignoring"),
        ),
    }
    if let Some(opt) = w.get(2) {
        if opt.text == "reverse" {
            if let Some(b) = p.bfd.as_mut() {
                b.weight_reverse = true;
            }
        } else {
            refuse(p, format!("unknown weight option {}", opt.text));
        }
    }
    Ok(())
}

/// `vrrp` / `checker`: which processes get the session's events.
pub fn bfd_event(p: P, w: &[Word]) -> HandlerResult {
    if let Some(b) = p.bfd.as_mut() {
        if w[0].text == "vrrp" {
            b.vrrp = true;
        } else {
            b.checker = true;
        }
    }
    Ok(())
}

/// keepalived's `bfd_end_handler()`: a neighbour is required, one no
/// other session has, of the source's family; `max_hops` at most the TTL.
pub fn bfd_instance_close(p: P) {
    let Some(mut b) = p.bfd.take() else { return };
    b.blocks_before = p.cfg.other_blocks.len();
    if b.valid {
        match (b.neighbor, b.source) {
            (None, _) => {
                p.err(
                    ErrClass::GeneralError,
                    format!(
                        "Configuration error: BFD instance {} has no neighbor address set, disabling instance",
                        b.name
                    ),
                );
                b.valid = false;
            }
            (Some(n), _)
                if p.cfg
                    .bfd_instances
                    .iter()
                    .any(|o| o.valid && o.neighbor == Some(n)) =>
            {
                p.err(
                    ErrClass::GeneralError,
                    format!(
                        "Configuration error: BFD instance {} has duplicate neighbor address {n}, ignoring instance",
                        b.name
                    ),
                );
                b.valid = false;
            }
            (Some(n), Some(s)) if n.is_ipv4() != s.is_ipv4() => {
                p.err(
                    ErrClass::GeneralError,
                    format!(
                        "Configuration error: BFD instance {} source address {s} and neighbor address {n} are not of the same family, disabling instance",
                        b.name
                    ),
                );
                b.valid = false;
            }
            (Some(n), _) => {
                // RFC 5881: 255 for IPv4; keepalived's IPv6 default hop limit is 64.
                let ttl = *b.ttl.get_or_insert(if n.is_ipv4() { 255 } else { 64 });
                // keepalived keeps max_hops in a byte: -1 is 255 here.
                if (b.max_hops as u8) > ttl {
                    p.err(
                        ErrClass::GeneralError,
                        format!(
                            "BFD instance {}: max_hops exceeds ttl/hoplimit - setting to ttl/hoplimit",
                            b.name
                        ),
                    );
                    b.max_hops = i16::from(ttl);
                }
            }
        }
    }
    p.cfg.bfd_instances.push(b);
}

/// A block skipped at its name still counts for the checker and VRRP
/// lists, as keepalived's do.
pub fn bfd_instance_abandon(p: P) {
    if let Some(mut b) = p.bfd.take() {
        b.valid = false;
        p.cfg.bfd_instances.push(b);
    }
}

/// Whether BFD_CHECK may name `name` now: a `bfd_instance` read before,
/// whose events go to the checker (no `vrrp`/`checker` keyword, or `checker`).
pub(super) fn for_checker(p: &P, name: &str) -> bool {
    p.cfg
        .bfd_instances
        .iter()
        .any(|b| b.listed && b.name == name && (b.checker || !b.vrrp))
}
