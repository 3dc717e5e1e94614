//! `~SEQ`/`~SEQx` and `~LST`: a line repeated with its variables bound to
//! each value in turn (keepalived's `add_seq()`, `add_lst()`).

use super::*;

/// The most lines one `~SEQ` may repeat (a million real servers).
const MAX_SEQ_LINES: i128 = 1_000_000;

/// One active `~SEQ` or `~LST`.
#[derive(Debug, Clone)]
pub(super) enum Repeat {
    Seq {
        var: String,
        next: i64,
        last: i64,
        step: i64,
        hex: bool,
        text: String,
        /// The multi-line definitions the `~SEQ` line came from.
        chain: Vec<usize>,
    },
    Lst {
        vars: Vec<String>,
        values: VecDeque<Vec<String>>,
        text: String,
        chain: Vec<usize>,
    },
}

impl<'l> Reader<'l> {
    pub(super) fn next_repeat(&mut self) -> String {
        let Some(rep) = self.repeats.last_mut() else {
            return String::new();
        };
        let (assign, text, done) = match rep {
            Repeat::Seq {
                var,
                next,
                last,
                step,
                hex,
                text,
                chain,
            } => {
                self.line_chain.clone_from(chain);
                let val = if *hex {
                    format!("{:x}", *next)
                } else {
                    next.to_string()
                };
                let assign = vec![(var.clone(), val)];
                *next = next.saturating_add(*step);
                let done = (*step > 0 && *next > *last) || (*step < 0 && *next < *last);
                (assign, text.clone(), done)
            }
            Repeat::Lst {
                vars,
                values,
                text,
                chain,
            } => {
                self.line_chain.clone_from(chain);
                let vals = values.pop_front().unwrap_or_default();
                let assign = vars
                    .iter()
                    .enumerate()
                    .map(|(i, v)| (v.clone(), vals.get(i).cloned().unwrap_or_default()))
                    .collect();
                (assign, text.clone(), values.is_empty())
            }
        };
        if done {
            self.repeats.pop();
        }
        for (name, value) in assign {
            self.set_definition(&name, &value);
        }
        text
    }

    pub(super) fn add_seq(&mut self, buf: &str) -> bool {
        let mut p = &buf[4..];
        let hex = p.starts_with('x');
        if hex {
            p = &p[1..];
        }
        p = p.trim_start_matches([' ', '\t']);
        let Some(rest) = p.strip_prefix('(') else {
            return false;
        };
        let rest = rest.trim_start_matches([' ', '\t']);
        let var_end = rest.find([' ', '\t', ',', ')']).unwrap_or(rest.len());
        let var = &rest[..var_end];
        let after = rest[var_end..].trim_start_matches([' ', '\t']);
        if after.is_empty() || after.starts_with(')') || var.is_empty() {
            self.report(
                ErrClass::GeneralError,
                format!("Invalid ~SEQ definition '{buf}'"),
            );
            return false;
        }
        // The separator after the variable (a ',' when well formed),
        // whatever its width.
        let after = &after[after.chars().next().map_or(0, char::len_utf8)..];
        let Some(close) = after.find(')') else {
            self.report(
                ErrClass::GeneralError,
                format!("Invalid ~SEQ definition '{buf}'"),
            );
            return false;
        };
        let Some(params) = self.substitute_params(&after[..close]) else {
            self.report(
                ErrClass::GeneralError,
                format!("~SEQ parameter is multiline definition '{buf}'"),
            );
            return false;
        };
        let nums: Vec<&str> = params
            .split(',')
            .map(|s| s.trim_matches([' ', '\t']))
            .collect();
        let mut vals = Vec::new();
        for n in &nums {
            vals.push(strtol0(n));
        }
        let (start, step, end) = match vals.as_slice() {
            [e] => {
                let e = *e;
                (if e < 0 { -1 } else { 1 }, if e < 1 { -1 } else { 1 }, e)
            }
            [s, e] => (*s, if s <= e { 1 } else { -1 }, *e),
            [s, st, e] => {
                if *st == 0 || (s < e && *st < 0) || (s > e && *st > 0) {
                    self.report(
                        ErrClass::GeneralError,
                        format!("Invalid ~SEQ values '{buf}'"),
                    );
                    return false;
                }
                (*s, *st, *e)
            }
            _ => {
                self.report(
                    ErrClass::GeneralError,
                    format!("Invalid ~SEQ definition '{buf}'"),
                );
                return false;
            }
        };
        if hex && (start < 0 || end < 0) {
            self.report(
                ErrClass::GeneralError,
                format!("~SEQx is only valid for positive numbers '{buf}'"),
            );
            return false;
        }
        let text = after[close + 1..]
            .trim_start_matches([' ', '\t'])
            .to_string();
        if (step > 0 && start > end) || (step < 0 && start < end) {
            return true;
        }
        // keepalived would spin (or run out of memory) on a range of 10^18
        // values; refuse one of more than MAX_SEQ_LINES (docs/compat.md).
        let lines = (end as i128 - start as i128) / step as i128 + 1;
        if lines > MAX_SEQ_LINES {
            self.report(
                ErrClass::GeneralError,
                format!("~SEQ would repeat {lines} times (more than {MAX_SEQ_LINES}) - ignoring '{buf}'"),
            );
            return false;
        }
        self.repeats.push(Repeat::Seq {
            var: var.to_string(),
            next: start,
            last: end,
            step,
            hex,
            text,
            chain: self.line_chain.clone(),
        });
        true
    }

    pub(super) fn add_lst(&mut self, buf: &str) -> bool {
        let p = buf[4..].trim_start_matches([' ', '\t']);
        let Some(rest) = p.strip_prefix('(') else {
            return false;
        };
        // Find the closing parenthesis outside braces.
        let mut depth = 0;
        let mut close = None;
        for (i, c) in rest.char_indices() {
            match c {
                '{' => depth += 1,
                '}' => depth -= 1,
                ')' if depth == 0 => {
                    close = Some(i);
                    break;
                }
                _ => {}
            }
        }
        let Some(close) = close else {
            return false;
        };
        let Some(inner) = self.substitute_params(&rest[..close]) else {
            return false;
        };
        let text = rest[close + 1..]
            .trim_start_matches([' ', '\t'])
            .to_string();
        let items = split_top_level(&inner);
        let Some((vars_item, value_items)) = items.split_first() else {
            return false;
        };
        let vars: Vec<String> = if let Some(v) = brace_group(vars_item) {
            v
        } else {
            vec![vars_item.trim().to_string()]
        };
        if vars.is_empty() || vars.iter().any(|v| v.is_empty()) {
            return false;
        }
        let mut values = VecDeque::new();
        for it in value_items {
            let group = if vars.len() > 1 || it.trim_start().starts_with('{') {
                match brace_group(it) {
                    Some(g) => g,
                    None => vec![it.trim().to_string()],
                }
            } else {
                vec![it.trim().to_string()]
            };
            if group.len() > vars.len() {
                self.report(
                    ErrClass::GeneralError,
                    format!("~LST specification has too many values '{buf}'"),
                );
                return false;
            }
            values.push_back(group);
        }
        if values.is_empty() {
            return true;
        }
        self.repeats.push(Repeat::Lst {
            vars,
            values,
            text,
            chain: self.line_chain.clone(),
        });
        true
    }
}

pub(super) fn split_top_level(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut depth = 0;
    let mut cur = String::new();
    for c in s.chars() {
        match c {
            '{' => {
                depth += 1;
                cur.push(c);
            }
            '}' => {
                depth -= 1;
                cur.push(c);
            }
            ',' if depth == 0 => out.push(std::mem::take(&mut cur).trim().to_string()),
            _ => cur.push(c),
        }
    }
    out.push(cur.trim().to_string());
    out
}

pub(super) fn brace_group(s: &str) -> Option<Vec<String>> {
    let t = s.trim();
    let inner = t.strip_prefix('{')?.strip_suffix('}')?;
    Some(inner.split(',').map(|x| x.trim().to_string()).collect())
}
