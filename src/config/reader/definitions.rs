//! `$NAME=` definitions (one line or continued with `\\`), the standard ones
//! (`${_PWD}`, `${_INSTANCE}`, `${_RANDOM}`, ...) and `$NAME`/`${NAME}`
//! substitution with keepalived 2.2.7's re-evaluation (`replace_param()`).

use super::*;

/// The most multi-line definitions open inside one another.
const MAX_NESTING: usize = 64;

#[derive(Debug, Clone)]
pub(super) struct Def {
    pub(super) name: String,
    pub(super) value: String,
    pub(super) multiline: bool,
    pub(super) std: Option<StdDef>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum StdDef {
    Pwd,
    Instance,
    Random,
    Hash,
    Bang,
}

impl<'l> Reader<'l> {
    pub(super) fn find_def(&self, name: &str) -> Option<usize> {
        self.defs.iter().position(|d| d.name == name)
    }

    /// `$NAME=VALUE`; returns true when the line was a definition.
    pub(super) fn check_definition(&mut self, buf: &str) -> bool {
        let b = buf.as_bytes();
        if b.len() < 2 || !(b[1].is_ascii_alphabetic() || b[1] == b'_') {
            return false;
        }
        let mut p = 2;
        while p < b.len() && b[p] != b'=' {
            if !(b[p].is_ascii_alphanumeric() || b[p] == b'_') {
                return false;
            }
            p += 1;
        }
        if p >= b.len() {
            return false;
        }
        let name = buf[1..p].to_string();
        let mut value = buf[p + 1..].trim_start_matches([' ', '\t']).to_string();
        let multiline = value.ends_with('\\');
        if multiline {
            value.pop();
            let l = value.trim_end_matches([' ', '\t']).len();
            value.truncate(l);
            if !value.is_empty() {
                value.push('\n');
            }
        }
        let idx = match self.find_def(&name) {
            Some(i) => {
                self.defs[i].std = None;
                i
            }
            None => {
                self.defs.push(Def {
                    name,
                    value: String::new(),
                    multiline: false,
                    std: None,
                });
                self.defs.len() - 1
            }
        };
        self.defs[idx].value = value;
        self.defs[idx].multiline = multiline;
        if multiline {
            self.defining = Some(idx);
        }
        true
    }

    pub(super) fn std_value(&mut self, std: StdDef, params: Option<&str>) -> String {
        match std {
            StdDef::Pwd => self
                .files
                .last()
                .map(|f| f.dir.clone())
                .unwrap_or_else(|| self.loader.cwd())
                .to_string_lossy()
                .to_string(),
            StdDef::Instance => self.config_id.clone(),
            StdDef::Hash => "#".to_string(),
            StdDef::Bang => "!".to_string(),
            StdDef::Random => {
                let mut min: u64 = 0;
                let mut max: u64 = 32767;
                if let Some(p) = params {
                    let mut it = p.split_whitespace();
                    if let Some(a) = it.next() {
                        min = a.parse().unwrap_or(0);
                    }
                    if let Some(b) = it.next() {
                        max = b.parse().unwrap_or(32767);
                    }
                }
                // xorshift: the values only need to be unpredictable-ish.
                let mut x = self.random_state;
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                self.random_state = x;
                let span = max.saturating_sub(min).saturating_add(1).max(1);
                ((x % span) + min).to_string()
            }
        }
    }

    /// One pass of keepalived's `replace_param()`; `None` when nothing changed.
    pub(super) fn replace_param(&mut self, input: &str) -> Option<String> {
        let mut buf: Vec<u8> = input.as_bytes().to_vec();
        let mut cur = 0usize;
        let mut found = false;
        let mut new_multiline: Option<VecDeque<String>> = None;
        // A definition that refers to itself (`$A=${A}`, or a cycle of
        // same-length values) is replaced in place for ever: keepalived
        // spins on it. A line cannot hold more references than bytes, so
        // more substitutions than that is such a cycle.
        let mut substitutions = 0usize;
        while let Some(off) = buf[cur..].iter().position(|&c| c == b'$') {
            cur += off;
            if cur + 1 >= buf.len() {
                break;
            }
            let Some((def_idx, consumed, params)) = self.match_reference(&buf[cur + 1..]) else {
                cur += 1;
                continue;
            };
            substitutions += 1;
            if substitutions > MAXBUF {
                self.report(
                    ErrClass::GeneralError,
                    format!(
                        "Parameter substitution on line '{}' does not end (a definition refers to itself) - ignoring the line's parameters",
                        String::from_utf8_lossy(input.as_bytes())
                    ),
                );
                return None;
            }
            if self.defs[def_idx].multiline
                && (self.line_chain.contains(&def_idx) || self.multiline_stack.len() >= MAX_NESTING)
            {
                // A multi-line definition whose lines use it again (itself
                // or through others) is expanded for ever: keepalived spins
                // or grows until it runs out of memory.
                self.report(
                    ErrClass::GeneralError,
                    format!(
                        "Definition ${} is used inside its own lines - ignoring the line's parameters",
                        self.defs[def_idx].name
                    ),
                );
                return None;
            }
            found = true;
            let def = self.defs[def_idx].clone();
            let value = match def.std {
                Some(std) => self.std_value(std, params.as_deref()),
                None => def.value.clone(),
            };
            let replacement = if def.multiline {
                let mut lines: VecDeque<String> = value.split('\n').map(str::to_string).collect();
                let first = lines.pop_front().unwrap_or_default();
                if let Some(cur_ml) = self.multiline.take() {
                    let chain = std::mem::take(&mut self.ml_chain);
                    self.multiline_stack
                        .push((cur_ml, self.multiline_seq_depth, chain));
                }
                self.ml_chain.clone_from(&self.line_chain);
                self.ml_chain.push(def_idx);
                self.multiline_seq_depth = self.repeats.len();
                if lines.back().is_some_and(|l| l.is_empty()) {
                    lines.pop_back();
                }
                new_multiline = Some(lines);
                first
            } else {
                value
            };
            let end = cur + 1 + consumed;
            let new_len = buf.len() - (end - cur) + replacement.len();
            if new_len >= MAXBUF {
                self.report(
                    ErrClass::GeneralError,
                    format!(
                        "Parameter substitution on line '{}' would exceed maximum line length",
                        String::from_utf8_lossy(&buf)
                    ),
                );
                return None;
            }
            buf.splice(cur..end, replacement.bytes());
            if replacement.trim_start_matches([' ', '\t']).starts_with('~') {
                break;
            }
        }
        if let Some(ml) = new_multiline {
            if !ml.is_empty() {
                self.multiline = Some(ml);
            } else if let Some((next, depth, chain)) = self.multiline_stack.pop() {
                self.multiline = Some(next);
                self.multiline_seq_depth = depth;
                self.ml_chain = chain;
            } else {
                self.multiline_seq_depth = 0;
                self.ml_chain.clear();
            }
        }
        found.then(|| String::from_utf8_lossy(&buf).to_string())
    }

    /// Matches `NAME`, `{NAME}` or `{NAME params}` after a `$`; returns the
    /// definition, the bytes consumed after the `$`, and the parameters.
    pub(super) fn match_reference(&self, s: &[u8]) -> Option<(usize, usize, Option<String>)> {
        let braces = s.first() == Some(&b'{');
        let start = usize::from(braces);
        let first = *s.get(start)?;
        if !(first.is_ascii_alphabetic() || first == b'_') {
            return None;
        }
        let mut p = start + 1;
        while p < s.len() && (s[p].is_ascii_alphanumeric() || s[p] == b'_') {
            p += 1;
        }
        let name = std::str::from_utf8(&s[start..p]).ok()?;
        let mut params = None;
        let consumed;
        if braces {
            let pstart = p;
            let mut last_digit = None;
            while p < s.len() && (s[p] == b' ' || s[p].is_ascii_digit()) {
                if s[p] != b' ' {
                    last_digit = Some(p);
                }
                p += 1;
            }
            if let Some(ld) = last_digit {
                if ld + 1 != p {
                    return None;
                }
                params = Some(String::from_utf8_lossy(&s[pstart..p]).trim().to_string());
            }
            if s.get(p) != Some(&b'}') {
                return None;
            }
            consumed = p + 1;
        } else {
            match s.get(p) {
                None | Some(b' ') | Some(b'\t') | Some(b',') | Some(b')') => {}
                _ => return None,
            }
            consumed = p;
        }
        let at_end = consumed == s.len();
        let idx = self
            .defs
            .iter()
            .position(|d| d.name == name && (at_end || !d.multiline))?;
        if params.is_some() && self.defs[idx].std != Some(StdDef::Random) {
            return None;
        }
        Some((idx, consumed, params))
    }

    pub(super) fn set_definition(&mut self, name: &str, value: &str) {
        match self.find_def(name) {
            Some(i) => {
                self.defs[i].value = value.to_string();
                self.defs[i].std = None;
                self.defs[i].multiline = false;
            }
            None => self.defs.push(Def {
                name: name.to_string(),
                value: value.to_string(),
                multiline: false,
                std: None,
            }),
        }
    }

    /// Substitutes plain (non multi-line) definitions in a parameter string.
    pub(super) fn substitute_params(&mut self, s: &str) -> Option<String> {
        let saved_ml = self.multiline.clone();
        let saved_chain = self.ml_chain.clone();
        let saved_stack = self.multiline_stack.len();
        let saved_depth = self.multiline_seq_depth;
        let mut cur = s.to_string();
        for _ in 0..16 {
            match self.replace_param(&cur) {
                Some(n) if n != cur => cur = n,
                _ => break,
            }
        }
        let was_multiline = self.multiline != saved_ml || self.multiline_stack.len() != saved_stack;
        self.multiline = saved_ml;
        self.ml_chain = saved_chain;
        self.multiline_stack.truncate(saved_stack);
        self.multiline_seq_depth = saved_depth;
        if was_multiline {
            None
        } else {
            Some(cur)
        }
    }
}
