//! keepalived's number readers (`read_int`, `read_unsigned`, `read_timer`
//! of `lib/parser.c`): their ranges, their messages and their `-t`
//! strictness, for whoever reads a config value — the block parser and
//! the VRRP model's builder — and the C conversions under them (`strtoul`,
//! `strtol`, `strtod`). Pure: problems go to a [`Report`].

use super::diag::ErrClass;
use super::model::TIMER_HZ;
use super::parser::TIMER_MAXIMUM;

/// Where a reader's complaints go, and whether it reads as `-t` does.
pub trait Report {
    /// Records a problem at the current line.
    fn report(&mut self, class: ErrClass, msg: String);
    /// `-t` mode: values with trailing garbage are refused.
    fn config_test(&self) -> bool;
}

/// A reader for values already checked (and reported) where they were
/// read: says nothing, reads as the daemon does.
pub struct Quiet;

impl Report for Quiet {
    fn report(&mut self, _class: ErrClass, _msg: String) {}
    fn config_test(&self) -> bool {
        false
    }
}

fn warn_prefix(r: &impl Report, ignore_error: bool) -> &'static str {
    if ignore_error && !r.config_test() {
        "WARNING - "
    } else {
        ""
    }
}

/// `read_unsigned_func()`: Some(value) when accepted.
pub fn read_unsigned(
    r: &mut impl Report,
    s: &str,
    min: u64,
    max: u64,
    ignore_error: bool,
) -> Option<u64> {
    let warn = warn_prefix(r, ignore_error);
    let t = match s.as_bytes().first() {
        Some(b) if b.is_ascii_digit() => s,
        _ => s.trim_start_matches(super::lexer::WHITE_SPACE),
    };
    let (val, rest, overflow) = strtoul(t);
    let ok_range = val >= min && val <= max;
    if t.starts_with('-') {
        r.report(
            ErrClass::InvalidNumber,
            format!("{warn}negative number '{s}'"),
        );
    } else if !rest.is_empty() {
        r.report(
            ErrClass::InvalidNumber,
            format!("{warn}invalid number '{s}'"),
        );
    } else if overflow || val > u32::MAX as u64 {
        r.report(
            ErrClass::InvalidNumber,
            format!("{warn}number '{s}' outside unsigned integer range"),
        );
    } else if !ok_range {
        r.report(
            ErrClass::InvalidNumber,
            format!("{warn}number '{s}' outside range [{min}, {max}]"),
        );
    } else {
        return Some(val);
    }
    (ignore_error && ok_range && !r.config_test() && !t.starts_with('-')).then_some(val)
}

/// `read_int_func()`.
pub fn read_int(
    r: &mut impl Report,
    s: &str,
    min: i64,
    max: i64,
    ignore_error: bool,
) -> Option<i64> {
    let warn = warn_prefix(r, ignore_error);
    let (val, rest, overflow) = strtol(s);
    let ok_range = val >= min && val <= max;
    if !rest.is_empty() {
        r.report(
            ErrClass::InvalidNumber,
            format!("{warn}invalid number '{s}'"),
        );
    } else if overflow || val < i32::MIN as i64 || val > i32::MAX as i64 {
        r.report(
            ErrClass::InvalidNumber,
            format!("{warn}number '{s}' outside integer range"),
        );
    } else if !ok_range {
        r.report(
            ErrClass::InvalidNumber,
            format!("number '{s}' outside range [{min}, {max}]"),
        );
    } else {
        return Some(val);
    }
    (ignore_error && ok_range && !r.config_test()).then_some(val)
}

/// `read_timer()`: seconds with up to 6 decimals, returned in µs.
pub fn read_timer(
    r: &mut impl Report,
    s: &str,
    min_us: u64,
    max_us: u64,
    ignore_error: bool,
) -> Option<u64> {
    let warn = warn_prefix(r, ignore_error);
    let max_us = if max_us == 0 { TIMER_MAXIMUM } else { max_us };
    let fmin = min_us as f64 / TIMER_HZ as f64;
    let fmax = max_us as f64 / TIMER_HZ as f64;
    let (val, rest) = strtod(s);
    let ok_range = val >= fmin && val <= fmax;
    // read_decimal_unsigned_strvec(): a sign is refused first, "-0" too.
    if s.trim_start_matches(super::lexer::WHITE_SPACE)
        .starts_with('-')
    {
        r.report(
            ErrClass::InvalidNumber,
            format!("{warn}negative number '{s}'"),
        );
        return None;
    }
    let us = if val * TIMER_HZ as f64 > max_us as f64 {
        max_us
    } else {
        (val * TIMER_HZ as f64).max(0.0) as u64
    };
    if !rest.is_empty() {
        r.report(
            ErrClass::InvalidNumber,
            format!("{warn}invalid number '{s}'"),
        );
    } else if val.is_infinite() {
        r.report(ErrClass::InvalidNumber, format!("infinite number '{s}'"));
    } else if val.is_nan() {
        r.report(ErrClass::InvalidNumber, format!("not a number '{s}'"));
    } else if !ok_range {
        r.report(
            ErrClass::InvalidNumber,
            // keepalived prints the range with %f.
            format!("number '{s}' outside range [{fmin:.6}, {fmax:.6}]"),
        );
    } else {
        return Some(us);
    }
    (ignore_error && ok_range && !r.config_test()).then_some(us)
}

/// Why [`read_decimal`] refused a value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decimal {
    /// A sign (`-0` too).
    Negative,
    /// Not digits with one point.
    Invalid,
    /// More decimals than the keyword takes.
    TooManyPlaces,
    /// Outside the keyword's range.
    OutOfRange,
}

/// keepalived's `read_decimal_unsigned_strvec()`: digits with at most
/// `places` decimals (no sign, no exponent), returned in units of
/// 10^-places; a refusal is reported with keepalived's line.
pub fn read_decimal(
    r: &mut impl Report,
    s: &str,
    min: u64,
    max: u64,
    places: usize,
) -> Result<u64, Decimal> {
    let checked = decimal(s, min, max, places);
    if let Err((_, msg)) = &checked {
        r.report(ErrClass::InvalidNumber, msg.clone());
    }
    checked.map_err(|(e, _)| e)
}

fn decimal(s: &str, min: u64, max: u64, places: usize) -> Result<u64, (Decimal, String)> {
    let t = s.trim_start_matches(super::lexer::WHITE_SPACE);
    if t.starts_with('-') {
        return Err((Decimal::Negative, format!("negative number '{s}'")));
    }
    let (int, frac) = t.split_once('.').unwrap_or((t, ""));
    let digits = |x: &str| x.bytes().all(|c| c.is_ascii_digit());
    if int.is_empty() || !digits(int) || !digits(frac) {
        return Err((Decimal::Invalid, format!("invalid number '{s}'")));
    }
    if frac.len() > places {
        return Err((
            Decimal::TooManyPlaces,
            format!("number '{s}' has too many decimal places"),
        ));
    }
    let scale = 10u64.pow(places as u32);
    let frac_v = format!("{frac:0<places$}").parse::<u64>().unwrap_or(0);
    let v = int
        .parse::<u64>()
        .ok()
        .and_then(|i| i.checked_mul(scale))
        .and_then(|i| i.checked_add(frac_v));
    match v {
        Some(v) if (min..=max).contains(&v) => Ok(v),
        _ => {
            let f = |x: u64| format!("{}.{:0places$}", x / scale, x % scale);
            Err((
                Decimal::OutOfRange,
                format!("number '{s}' outside range [{}, {}]", f(min), f(max)),
            ))
        }
    }
}

/// C `strtoul(s, &end, 10)` on an already left-trimmed string.
pub fn strtoul(s: &str) -> (u64, &str, bool) {
    let t = s.strip_prefix('+').unwrap_or(s);
    let t = if let Some(n) = t.strip_prefix('-') {
        n
    } else {
        t
    };
    let (v, end) = leading_digits(t);
    if end == 0 {
        return (0, s, false);
    }
    match v {
        Some(v) => (v, &t[end..], false),
        None => (u64::MAX, &t[end..], true),
    }
}

/// The decimal digits `t` starts with: their value (`None` past `u64`)
/// and how many there are. A byte loop: the loader reads a number on most
/// of a large configuration's lines.
fn leading_digits(t: &str) -> (Option<u64>, usize) {
    let b = t.as_bytes();
    let mut v = Some(0u64);
    let mut end = 0;
    while let Some(d) = b.get(end).filter(|d| d.is_ascii_digit()) {
        v = v
            .and_then(|v| v.checked_mul(10))
            .and_then(|v| v.checked_add(u64::from(d - b'0')));
        end += 1;
    }
    (v, end)
}

/// C `strtol(s, &end, 10)`.
pub fn strtol(s: &str) -> (i64, &str, bool) {
    let t = s.trim_start_matches(super::lexer::WHITE_SPACE);
    let (neg, u) = match t.as_bytes().first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    let (v, end) = leading_digits(u);
    if end == 0 {
        return (0, s, false);
    }
    match v.and_then(|v| i64::try_from(v).ok()).ok_or(()) {
        Ok(v) => (if neg { -v } else { v }, &u[end..], false),
        Err(_) => (if neg { i64::MIN } else { i64::MAX }, &u[end..], true),
    }
}

/// C `strtod`, decimal forms only (what keepalived configs use).
pub fn strtod(s: &str) -> (f64, &str) {
    let t = s.trim_start_matches(super::lexer::WHITE_SPACE);
    let b = t.as_bytes();
    let mut i = 0;
    if i < b.len() && (b[i] == b'+' || b[i] == b'-') {
        i += 1;
    }
    let starts = |word: &str| {
        b.len() >= i + word.len() && b[i..i + word.len()].eq_ignore_ascii_case(word.as_bytes())
    };
    if starts("inf") {
        let n = if starts("infinity") { 8 } else { 3 };
        let v = if b.first() == Some(&b'-') {
            f64::NEG_INFINITY
        } else {
            f64::INFINITY
        };
        return (v, &t[i + n..]);
    }
    if starts("nan") {
        return (f64::NAN, &t[i + 3..]);
    }
    let ds = i;
    while i < b.len() && b[i].is_ascii_digit() {
        i += 1;
    }
    let mut digits = i - ds;
    if i < b.len() && b[i] == b'.' {
        i += 1;
        let fs = i;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        digits += i - fs;
    }
    if digits == 0 {
        return (0.0, s);
    }
    if i < b.len() && (b[i] == b'e' || b[i] == b'E') {
        let mut j = i + 1;
        if j < b.len() && (b[j] == b'+' || b[j] == b'-') {
            j += 1;
        }
        let es = j;
        while j < b.len() && b[j].is_ascii_digit() {
            j += 1;
        }
        if j > es {
            i = j;
        }
    }
    // Plain digits (a timer's usual form), up to 15: exact as an f64
    // without the float parser.
    if ds == 0 && i == digits && i <= 15 {
        if let (Some(v), _) = leading_digits(&t[..i]) {
            return (v as f64, &t[i..]);
        }
    }
    (t[..i].parse().unwrap_or(0.0), &t[i..])
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_fast_number_readers_agree_with_the_standard_ones() {
        use super::{strtod, strtol, strtoul};
        for n in [
            "0",
            "7",
            "42x",
            "18446744073709551615",
            "18446744073709551616",
            "99999999999999999999",
            "",
            "x",
            "+5",
            "-5",
            "007",
        ] {
            let (v, rest, over) = strtoul(n);
            let t = n.strip_prefix('+').or(n.strip_prefix('-')).unwrap_or(n);
            let end = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
            if end > 0 {
                match t[..end].parse::<u64>() {
                    Ok(x) => assert_eq!((v, rest, over), (x, &t[end..], false), "{n}"),
                    Err(_) => assert_eq!((v, over), (u64::MAX, true), "{n}"),
                }
            } else {
                assert_eq!((v, rest, over), (0, n, false), "{n}");
            }
            let (l, _, lover) = strtol(n);
            if let Ok(x) = n.parse::<i64>() {
                assert_eq!((l, lover), (x, false), "{n}");
            }
        }
        assert!(strtol("9223372036854775808").2);
        assert_eq!(strtol("-9223372036854775807").0, -9223372036854775807);
        for d in [
            "1",
            "5",
            "0",
            "120",
            "1.5",
            "2e3",
            "1.",
            "999999999999999",
            "9999999999999999",
            "+3",
            "3s",
        ] {
            let (v, rest) = strtod(d);
            let t = d.trim_end_matches('s');
            assert_eq!(v, t.parse::<f64>().unwrap_or(0.0), "{d}");
            assert_eq!(rest, &d[t.len()..], "{d}");
        }
    }
}
