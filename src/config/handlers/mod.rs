//! Keyword handlers for the sections this daemon runs, one file per
//! section: `global_defs`, the root settings, `SSL`, `track_file`,
//! `virtual_server_group`, `virtual_server`, `real_server`, and each
//! checker family; the numeric keywords they share in [`numbers`].
//!
//! Called by [`super::parser`] through the tables of [`super::keywords`];
//! each reads one keyword's words into the model with keepalived 2.2.7's
//! ranges, defaults and messages (a bad value is reported and ignored, as
//! keepalived does, unless keepalived substitutes a value).

use super::diag::ErrClass;
use super::lexer::Word;
use super::model::*;
use super::parser::{parse_ip, parse_port, HandlerResult, Parser};
use super::reader::IncludeCheck;

type P<'a, 'r, 'l> = &'a mut Parser<'r, 'l>;

const U32MAX: u64 = u32::MAX as u64;

/// How a numeric keyword's value is read.
enum Num {
    /// Seconds with up to 6 decimals, stored in µs (`read_timer()`).
    Timer,
    /// An unsigned integer (`read_unsigned()`).
    Unsigned,
}

/// Reads word 1 as a number in `[min, max]`. The reader reports a rejected
/// value; `bad` is the handler's own second line that keepalived adds
/// (`{}` = the value as written).
fn num_arg(
    p: P,
    w: &[Word],
    kind: Num,
    min: u64,
    max: u64,
    bad: Option<&str>,
) -> Result<Option<u64>, crate::config::parser::MissingParameter> {
    let s = p.arg(w, 1)?;
    let v = match kind {
        Num::Timer => p.read_timer(s, min, max, true),
        Num::Unsigned => p.read_unsigned(s, min, max, true),
    };
    if let (None, Some(b)) = (v, bad) {
        p.err(ErrClass::GeneralError, b.replace("{}", s));
    }
    Ok(v)
}

/// A handler that reads one number into a field of the current VS, RS or checker.
macro_rules! num_kw {
    ($name:ident, $target:ident . $field:ident, $kind:ident, $min:expr, $max:expr, $bad:expr, $conv:expr) => {
        pub fn $name(p: P, w: &[Word]) -> HandlerResult {
            if let Some(v) = num_arg(p, w, Num::$kind, $min, $max, $bad)? {
                if let Some(t) = $target(p) {
                    t.$field = ($conv)(v);
                }
            }
            Ok(())
        }
    };
}

fn some_u32(v: u64) -> Option<u32> {
    Some(v as u32)
}

fn some_u16(v: u64) -> Option<u16> {
    Some(v as u16)
}

/// A keyword that may be given once: the first value stays, a second is
/// keepalived's "`what` already specified - ignoring". `slot` finds the
/// field in the block being read (none outside one).
fn set_once<'r, 'l, T>(
    p: &mut Parser<'r, 'l>,
    what: &str,
    value: Option<T>,
    slot: impl for<'a> FnOnce(&'a mut Parser<'r, 'l>) -> Option<&'a mut Option<T>>,
) -> HandlerResult {
    let taken = match slot(p) {
        Some(s) if s.is_some() => true,
        Some(s) => {
            *s = value;
            false
        }
        None => false,
    };
    if taken {
        p.err(
            ErrClass::GeneralError,
            format!("{what} already specified - ignoring"),
        );
    }
    Ok(())
}

mod bfd_check;
mod bfd_instance;
mod checkers;
mod dns_check;
mod extensions;
mod file_check;
mod global_defs;
mod global_values;
mod http_get;
mod misc_check;
mod numbers;
pub(in crate::config) mod real_server;
mod root;
mod smtp_check;
mod ssl;
mod track_file;
mod udp_check;
mod virtual_server;
mod virtual_server_group;

pub(super) use bfd_check::*;
pub(super) use bfd_instance::*;
pub(super) use checkers::*;
pub(super) use dns_check::*;
pub(super) use extensions::*;
pub(super) use file_check::*;
pub(super) use global_defs::*;
pub(super) use http_get::*;
pub(super) use misc_check::*;
pub(super) use numbers::*;
pub(super) use real_server::*;
pub(super) use root::*;
pub(super) use smtp_check::*;
pub(super) use ssl::*;
pub(super) use track_file::*;
pub(super) use udp_check::*;
pub(super) use virtual_server::*;
pub(super) use virtual_server_group::*;
