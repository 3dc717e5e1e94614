//! The preprocessor: turns the configuration files into the stream of logical
//! lines the block parser consumes, exactly as keepalived 2.2.7's `read_line()`.
//!
//! Second stage of the config pipeline (after the file system, before
//! [`super::parser`]). It reads physical lines (1023-byte `fgets` chunks, CR/LF
//! stripped, NUL lines dropped), removes comments, evaluates `@id`/`@^id`
//! conditionals, `$NAME=` definitions (multi-line with `\`), `$NAME`/`${NAME}`
//! substitution with 2.2.7's re-evaluation, `~SEQ`/`~SEQx`/`~LST` repetition,
//! `include*` with globs and brace alternatives, and finally splits lines at
//! braces. File access goes through [`SourceLoader`] so tests can feed text.

use super::diag::{Diagnostics, ErrClass, Pos};
use super::lexer::{decomment, decomment_owned, split_brace_owned, tokenize};
use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// keepalived's `MAXBUF`: a physical line is read in chunks of `MAXBUF - 1`.
pub const MAXBUF: usize = 1024;

/// Where configuration text comes from: the file system, or memory in tests.
pub trait SourceLoader {
    /// Expands a glob pattern (already brace-free) into matching paths, sorted.
    fn glob(&self, pattern: &Path) -> Vec<PathBuf>;
    /// Reads a whole file; `Err` carries the OS reason.
    fn read(&self, path: &Path) -> Result<Vec<u8>, String>;
    /// True for a regular, non-executable file (keepalived skips anything else).
    fn is_regular_non_exec(&self, path: &Path) -> bool;
    /// The process's working directory.
    fn cwd(&self) -> PathBuf;
}

/// Reads configuration from the real file system.
#[derive(Debug, Default, Clone, Copy)]
pub struct FsLoader;

impl SourceLoader for FsLoader {
    fn glob(&self, pattern: &Path) -> Vec<PathBuf> {
        let Some(p) = pattern.to_str() else {
            return Vec::new();
        };
        if !has_wildcard(p) {
            return if pattern.symlink_metadata().is_ok() && !pattern.is_dir() {
                vec![pattern.to_path_buf()]
            } else {
                Vec::new()
            };
        }
        // GLOB_MARK: keepalived skips directories silently.
        match glob::glob(p) {
            Ok(paths) => paths
                .filter_map(Result::ok)
                .filter(|p| !p.is_dir())
                .collect(),
            Err(_) => Vec::new(),
        }
    }

    fn read(&self, path: &Path) -> Result<Vec<u8>, String> {
        std::fs::read(path).map_err(|e| e.to_string())
    }

    fn is_regular_non_exec(&self, path: &Path) -> bool {
        use std::os::unix::fs::PermissionsExt;
        match std::fs::metadata(path) {
            Ok(m) => m.is_file() && m.permissions().mode() & 0o111 == 0,
            Err(_) => false,
        }
    }

    fn cwd(&self) -> PathBuf {
        std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/"))
    }
}

fn has_wildcard(p: &str) -> bool {
    p.contains(['*', '?', '['])
}

/// Expands csh-style brace alternatives (`{a,b}c` → `ac`, `bc`), nested.
pub fn expand_braces(s: &str) -> Vec<String> {
    let bytes = s.as_bytes();
    let Some(open) = s.find('{') else {
        return vec![s.to_string()];
    };
    let mut depth = 0;
    let mut commas = Vec::new();
    let mut close = None;
    for (i, &b) in bytes.iter().enumerate().skip(open) {
        match b {
            b'{' => depth += 1,
            b'}' => {
                depth -= 1;
                if depth == 0 {
                    close = Some(i);
                    break;
                }
            }
            b',' if depth == 1 => commas.push(i),
            _ => {}
        }
    }
    let Some(close) = close else {
        return vec![s.to_string()];
    };
    if commas.is_empty() {
        // `{x}` is not an alternative list; keep it literally, expand the rest.
        let tail = expand_braces(&s[close + 1..]);
        return tail
            .into_iter()
            .map(|t| format!("{}{}", &s[..close + 1], t))
            .collect();
    }
    let mut parts = Vec::new();
    let mut start = open + 1;
    for &c in commas.iter().chain(std::iter::once(&close)) {
        parts.push(&s[start..c]);
        start = c + 1;
    }
    let mut out = Vec::new();
    for p in parts {
        out.extend(expand_braces(&format!(
            "{}{}{}",
            &s[..open],
            p,
            &s[close + 1..]
        )));
    }
    out
}

/// The `include_check` strictness flags (keepalived's `include_t`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct IncludeCheck {
    /// Each file must be readable and regular.
    pub readable: bool,
    /// A pattern without wildcards must match.
    pub matched: bool,
    /// A pattern with wildcards must match something.
    pub wildcard_match: bool,
    /// Each brace alternative must match.
    pub brace_match: bool,
}

impl IncludeCheck {
    /// Every check on (`include_check` without arguments, `-e`, `includea`).
    pub const ALL: IncludeCheck = IncludeCheck {
        readable: true,
        matched: true,
        wildcard_match: true,
        brace_match: true,
    };

    fn for_keyword(word: &str, default: IncludeCheck) -> Option<IncludeCheck> {
        let none = IncludeCheck::default();
        Some(match word {
            "include" => default,
            "includer" => IncludeCheck {
                readable: true,
                ..none
            },
            "includem" => IncludeCheck {
                readable: true,
                matched: true,
                ..none
            },
            "includew" => IncludeCheck {
                readable: true,
                matched: true,
                wildcard_match: true,
                ..none
            },
            "includeb" => IncludeCheck {
                readable: true,
                brace_match: true,
                ..none
            },
            "includea" => IncludeCheck::ALL,
            _ => return None,
        })
    }
}

/// A logical line handed to the block parser.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogicalLine {
    /// The text, decommented, substituted and brace-split.
    pub text: String,
    /// Where it came from.
    pub pos: Pos,
}

struct Source {
    name: Arc<str>,
    dir: PathBuf,
    data: Vec<u8>,
    offset: usize,
    line_no: usize,
    saved_include_check: IncludeCheck,
}

#[derive(Debug, Clone)]
struct Def {
    name: String,
    value: String,
    multiline: bool,
    std: Option<StdDef>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum StdDef {
    Pwd,
    Instance,
    Random,
    Hash,
    Bang,
}

/// One active `~SEQ` or `~LST`.
#[derive(Debug, Clone)]
enum Repeat {
    Seq {
        var: String,
        next: i64,
        last: i64,
        step: i64,
        hex: bool,
        text: String,
    },
    Lst {
        vars: Vec<String>,
        values: VecDeque<Vec<String>>,
        text: String,
    },
}

/// The preprocessor state (keepalived's file-static variables of `parser.c`).
pub struct Reader<'l> {
    loader: &'l dyn SourceLoader,
    files: Vec<Source>,
    residue: Option<String>,
    repeats: Vec<Repeat>,
    multiline: Option<VecDeque<String>>,
    multiline_stack: Vec<(VecDeque<String>, usize)>,
    multiline_seq_depth: usize,
    defs: Vec<Def>,
    defining: Option<usize>,
    block_depth: i64,
    config_id: String,
    include_check: IncludeCheck,
    aborted: bool,
    random_state: u64,
    last_pos: Pos,
    /// Every problem found so far (the block parser adds its own here too).
    pub diags: Diagnostics,
    /// The files actually read, in order (for `-d` and reload bookkeeping).
    pub files_read: Vec<PathBuf>,
}

impl<'l> Reader<'l> {
    /// Opens the main configuration file (`-f`) with the given config-id for
    /// `@` lines and the default include checks (`-e` sets all).
    pub fn new(
        loader: &'l dyn SourceLoader,
        main: &Path,
        config_id: &str,
        include_check: IncludeCheck,
    ) -> Reader<'l> {
        let mut r = Reader {
            loader,
            files: Vec::new(),
            residue: None,
            repeats: Vec::new(),
            multiline: None,
            multiline_stack: Vec::new(),
            multiline_seq_depth: 0,
            defs: Vec::new(),
            defining: None,
            block_depth: 0,
            config_id: config_id.to_string(),
            include_check,
            aborted: false,
            random_state: 0x2545_f491_4f6c_dd1d,
            last_pos: Pos::none(),
            diags: Diagnostics::default(),
            files_read: Vec::new(),
        };
        for (name, std) in [
            ("_PWD", StdDef::Pwd),
            ("_INSTANCE", StdDef::Instance),
            ("_RANDOM", StdDef::Random),
            ("_HASH", StdDef::Hash),
            ("_BANG", StdDef::Bang),
        ] {
            r.defs.push(Def {
                name: name.to_string(),
                value: String::new(),
                multiline: false,
                std: Some(std),
            });
        }
        let cwd = loader.cwd();
        let main_str = main.to_string_lossy().to_string();
        r.open_pattern(&main_str, &cwd, include_check);
        r
    }

    /// Seeds `${_RANDOM}` (from `random_seed`).
    pub fn set_random_seed(&mut self, seed: u64) {
        self.random_state = seed | 1;
    }

    /// Sets the include checks for files opened from now on (`include_check`).
    pub fn set_include_check(&mut self, c: IncludeCheck) {
        self.include_check = c;
    }

    /// The position of the line read last (what keepalived reports errors at).
    pub fn pos(&self) -> Pos {
        self.last_pos.clone()
    }

    /// True when a fatal include error stopped reading.
    pub fn aborted(&self) -> bool {
        self.aborted
    }

    /// Open-brace balance at the end (for "missing '}'").
    pub fn block_depth(&self) -> i64 {
        self.block_depth
    }

    fn report(&mut self, class: ErrClass, msg: String) {
        let pos = self.current_pos();
        self.diags.report(&pos, class, msg);
    }

    fn current_pos(&self) -> Pos {
        match self.files.last() {
            Some(f) => Pos {
                file: f.name.clone(),
                line: f.line_no,
            },
            None => self.last_pos.clone(),
        }
    }

    /// Opens every file a pattern names, pushing them so that the first match
    /// is read first. A fatal include problem stops all reading.
    fn open_pattern(&mut self, pattern: &str, base: &Path, check: IncludeCheck) {
        let alternatives = expand_braces(pattern);
        let mut all: Vec<(PathBuf, String)> = Vec::new();
        let mut missing_alt = false;
        for alt in &alternatives {
            let path = base.join(alt);
            let matches = self.loader.glob(&path);
            if matches.is_empty() {
                missing_alt = true;
            }
            for m in matches {
                // keepalived shows the name as glob returned it: relative
                // patterns give relative names.
                let shown = if Path::new(alt).is_absolute() {
                    m.to_string_lossy().to_string()
                } else {
                    m.strip_prefix(base)
                        .map(|p| p.to_string_lossy().to_string())
                        .unwrap_or_else(|_| m.to_string_lossy().to_string())
                };
                all.push((m, shown));
            }
        }
        let wildcard = has_wildcard(pattern);
        if all.is_empty() {
            let (fatal, msg) = if wildcard {
                (
                    check.wildcard_match,
                    format!("No config files matched '{pattern}'."),
                )
            } else {
                (check.matched, format!("Config files missing '{pattern}'."))
            };
            self.include_problem(fatal, msg);
            return;
        }
        if missing_alt && alternatives.len() > 1 {
            let msg = format!("Some config files missing: \"{pattern}\".");
            if !self.include_problem(check.brace_match, msg) {
                return;
            }
        }
        let mut to_open = Vec::new();
        for (path, shown) in all {
            if !self.loader.is_regular_non_exec(&path) {
                let msg = format!(
                    "Configuration file '{shown}' is not a regular non-executable file - skipping"
                );
                if !self.include_problem(check.readable, msg) {
                    return;
                }
                continue;
            }
            match self.loader.read(&path) {
                Ok(data) => to_open.push((path, shown, data)),
                Err(e) => {
                    let msg = format!("Configuration file '{shown}' open problem ({e}) - skipping");
                    if !self.include_problem(check.readable, msg) {
                        return;
                    }
                }
            }
        }
        let saved = self.include_check;
        for (path, _, _) in &to_open {
            self.files_read.push(path.clone());
        }
        for (path, shown, data) in to_open.into_iter().rev() {
            let dir = path
                .parent()
                .map(Path::to_path_buf)
                .unwrap_or_else(|| base.to_path_buf());
            self.files.push(Source {
                name: Arc::from(shown.as_str()),
                dir,
                data,
                offset: 0,
                line_no: 0,
                saved_include_check: saved,
            });
        }
    }

    /// Reports an include problem; false when it is fatal and reading stopped.
    fn include_problem(&mut self, fatal: bool, msg: String) -> bool {
        if fatal {
            self.report(ErrClass::FileNotFound, msg);
            self.diags.fatal_include = true;
            self.aborted = true;
            self.files.clear();
            false
        } else {
            let pos = self.current_pos();
            self.diags.push(&pos, ErrClass::Ok, msg, None, None);
            true
        }
    }

    /// Reads one physical line (an `fgets` chunk) from the innermost file,
    /// popping finished files. `None` at the end of all input.
    fn physical_line(&mut self) -> Option<String> {
        loop {
            let f = self.files.last_mut()?;
            if f.offset >= f.data.len() {
                let done = self.files.pop().expect("a file is open");
                self.include_check = done.saved_include_check;
                continue;
            }
            let rest = &f.data[f.offset..];
            let limit = rest.len().min(MAXBUF - 1);
            let (chunk_len, has_nl) = match rest[..limit].iter().position(|&b| b == b'\n') {
                Some(p) => (p + 1, true),
                None => (limit, false),
            };
            let chunk = &rest[..chunk_len];
            f.offset += chunk_len;
            if has_nl || f.offset >= f.data.len() {
                f.line_no += 1;
            }
            if !has_nl && chunk_len == MAXBUF - 1 && f.offset < f.data.len() {
                // keepalived drops the chunk; the rest of the physical line
                // is then read as if it were a line of its own.
                let pos = Pos {
                    file: f.name.clone(),
                    line: f.line_no + 1,
                };
                self.diags
                    .report(&pos, ErrClass::GeneralError, "line too long - ignoring");
                continue;
            }
            if chunk.contains(&0) {
                self.report(
                    ErrClass::GeneralError,
                    "configuration appears to have embedded NULs - ignoring line".to_string(),
                );
                return Some(String::new());
            }
            let text = match std::str::from_utf8(chunk) {
                Ok(t) => t,
                Err(_) => {
                    return Some(
                        String::from_utf8_lossy(chunk)
                            .trim_end_matches(['\n', '\r'])
                            .to_string(),
                    )
                }
            };
            return Some(text.trim_end_matches(['\n', '\r']).to_string());
        }
    }

    /// The next logical line for the block parser, or `None` at the end.
    pub fn next_line(&mut self) -> Option<LogicalLine> {
        if self.aborted {
            return None;
        }
        let mut buf;
        'outer: loop {
            if let Some(r) = self.residue.take() {
                buf = r;
            } else if self.repeats.len() > self.multiline_seq_depth {
                buf = self.next_repeat();
            } else if let Some(ml) = self.multiline.as_mut() {
                buf = ml.pop_front().unwrap_or_default();
                if ml.is_empty() {
                    match self.multiline_stack.pop() {
                        Some((next, depth)) => {
                            self.multiline = Some(next);
                            self.multiline_seq_depth = depth;
                        }
                        None => {
                            self.multiline = None;
                            self.multiline_seq_depth = 0;
                        }
                    }
                }
            } else {
                let raw = match self.physical_line() {
                    Some(l) => l,
                    None => {
                        if let Some(d) = self.defining.take() {
                            if self.defs[d].value.is_empty() {
                                self.defs[d].multiline = false;
                            }
                        }
                        return None;
                    }
                };
                // keepalived's parent writes decommented lines to the copy
                // its children parse again, so a `\#` that survived the first
                // pass is a comment in the second: decomment twice.
                let first = decomment_owned(raw);
                if first.unterminated_quote {
                    self.report(
                        ErrClass::GeneralError,
                        format!("Unterminated quote '{}'", first.text),
                    );
                }
                buf = decomment_owned(first.text).text;
                self.last_pos = self.current_pos();
                if buf.is_empty() {
                    if let Some(d) = self.defining.take() {
                        if self.defs[d].value.is_empty() {
                            self.defs[d].multiline = false;
                        }
                    }
                    continue;
                }
            }

            if let Some(d) = self.defining {
                let mut line = buf.clone();
                let cont = line.ends_with('\\');
                if cont {
                    line.pop();
                    let l = line.trim_end_matches([' ', '\t']).len();
                    line.truncate(l);
                    line.push('\n');
                } else {
                    self.defining = None;
                    if self.defs[d].value.is_empty() {
                        self.defs[d].multiline = false;
                    }
                }
                if line.len() >= 2 || (!line.is_empty() && !cont) {
                    self.defs[d].value.push_str(&line);
                }
                continue;
            }
            if buf.is_empty() {
                continue;
            }

            let mut rechecks = 0;
            loop {
                rechecks += 1;
                if rechecks > 64 {
                    break;
                }
                if buf.starts_with('@') {
                    let (rev, ofs) = if buf[1..].starts_with('^') {
                        (true, 2)
                    } else {
                        (false, 1)
                    };
                    let Some(sp) = buf[ofs..].find([' ', '\t']) else {
                        continue 'outer;
                    };
                    let id = &buf[ofs..ofs + sp];
                    if (id == self.config_id) == rev {
                        continue 'outer;
                    }
                    buf = buf[ofs + sp..].trim_start_matches([' ', '\t']).to_string();
                }
                if buf.starts_with('$') && self.check_definition(&buf) {
                    continue 'outer;
                }
                if buf.starts_with("~SEQ") {
                    if !self.add_seq(&buf) {
                        self.report(
                            ErrClass::GeneralError,
                            format!("Invalid ~SEQ specification '{buf}'"),
                        );
                    }
                    continue 'outer;
                }
                if buf.starts_with("~LST") {
                    if !self.add_lst(&buf) {
                        self.report(
                            ErrClass::GeneralError,
                            format!("Invalid ~LST specification '{buf}'"),
                        );
                    }
                    continue 'outer;
                }
                if buf.starts_with('~') {
                    break;
                }
                if !buf.contains('$') {
                    break;
                }
                match self.replace_param(&buf) {
                    None => break,
                    Some(new) => {
                        buf = decomment(&new).text;
                        if buf.is_empty() {
                            continue 'outer;
                        }
                        if !(buf.starts_with('@') || buf.contains('$')) {
                            break;
                        }
                    }
                }
            }

            if self.check_include(&buf) {
                if self.aborted {
                    return None;
                }
                continue;
            }
            break;
        }

        let (head, residue) = split_brace_owned(buf);
        self.residue = residue;
        if head == "{" {
            self.block_depth += 1;
        } else if head == "}" {
            self.block_depth -= 1;
            if self.block_depth < 0 {
                self.report(ErrClass::UnexpectedEob, "Extra '}' found".to_string());
                self.block_depth = 0;
            }
        }
        Some(LogicalLine {
            text: head,
            pos: self.last_pos.clone(),
        })
    }

    fn check_include(&mut self, buf: &str) -> bool {
        let word_end = buf.find([' ', '\t']).unwrap_or(buf.len());
        let word = &buf[..word_end];
        let Some(check) = IncludeCheck::for_keyword(word, self.include_check) else {
            return false;
        };
        if word_end == buf.len() {
            return false;
        }
        let mut pattern = buf[word_end..].trim_start_matches([' ', '\t']);
        // A quoted file name loses its quotes.
        let unquoted;
        if pattern.starts_with('"') {
            let t = tokenize(pattern);
            unquoted = t.words.first().map(|w| w.text.clone()).unwrap_or_default();
            pattern = &unquoted;
        }
        let pattern = pattern.to_string();
        let base = self
            .files
            .last()
            .map(|f| f.dir.clone())
            .unwrap_or_else(|| self.loader.cwd());
        self.open_pattern(&pattern, &base, check);
        true
    }

    fn find_def(&self, name: &str) -> Option<usize> {
        self.defs.iter().position(|d| d.name == name)
    }

    /// `$NAME=VALUE`; returns true when the line was a definition.
    fn check_definition(&mut self, buf: &str) -> bool {
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

    fn std_value(&mut self, std: StdDef, params: Option<&str>) -> String {
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
    fn replace_param(&mut self, input: &str) -> Option<String> {
        let mut buf: Vec<u8> = input.as_bytes().to_vec();
        let mut cur = 0usize;
        let mut found = false;
        let mut new_multiline: Option<VecDeque<String>> = None;
        while let Some(off) = buf[cur..].iter().position(|&c| c == b'$') {
            cur += off;
            if cur + 1 >= buf.len() {
                break;
            }
            let Some((def_idx, consumed, params)) = self.match_reference(&buf[cur + 1..]) else {
                cur += 1;
                continue;
            };
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
                    self.multiline_stack
                        .push((cur_ml, self.multiline_seq_depth));
                }
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
            } else if let Some((next, depth)) = self.multiline_stack.pop() {
                self.multiline = Some(next);
                self.multiline_seq_depth = depth;
            } else {
                self.multiline_seq_depth = 0;
            }
        }
        found.then(|| String::from_utf8_lossy(&buf).to_string())
    }

    /// Matches `NAME`, `{NAME}` or `{NAME params}` after a `$`; returns the
    /// definition, the bytes consumed after the `$`, and the parameters.
    fn match_reference(&self, s: &[u8]) -> Option<(usize, usize, Option<String>)> {
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

    fn next_repeat(&mut self) -> String {
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
            } => {
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
            Repeat::Lst { vars, values, text } => {
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

    fn set_definition(&mut self, name: &str, value: &str) {
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
    fn substitute_params(&mut self, s: &str) -> Option<String> {
        let saved_ml = self.multiline.clone();
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
        self.multiline_stack.truncate(saved_stack);
        self.multiline_seq_depth = saved_depth;
        if was_multiline {
            None
        } else {
            Some(cur)
        }
    }

    fn add_seq(&mut self, buf: &str) -> bool {
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
        let after = &after[1..];
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
        self.repeats.push(Repeat::Seq {
            var: var.to_string(),
            next: start,
            last: end,
            step,
            hex,
            text,
        });
        true
    }

    fn add_lst(&mut self, buf: &str) -> bool {
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
        self.repeats.push(Repeat::Lst { vars, values, text });
        true
    }
}

fn split_top_level(s: &str) -> Vec<String> {
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

fn brace_group(s: &str) -> Option<Vec<String>> {
    let t = s.trim();
    let inner = t.strip_prefix('{')?.strip_suffix('}')?;
    Some(inner.split(',').map(|x| x.trim().to_string()).collect())
}

/// C's `strtol(s, _, 0)`: leading blanks, sign, `0x` hex, leading-0 octal;
/// stops at the first non-digit; 0 when there are none.
pub fn strtol0(s: &str) -> i64 {
    let t = s.trim_start();
    let (neg, t) = match t.as_bytes().first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    let (radix, digits) = if let Some(h) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        (16, h)
    } else if t.starts_with('0') && t.len() > 1 {
        (8, &t[1..])
    } else {
        (10, t)
    };
    let end = digits
        .find(|c: char| !c.is_digit(radix))
        .unwrap_or(digits.len());
    let v =
        i64::from_str_radix(&digits[..end], radix).unwrap_or(if end == 0 { 0 } else { i64::MAX });
    if neg {
        -v
    } else {
        v
    }
}

/// Configuration held in memory (tests, fuzzing, `--config-fd` later).
#[derive(Debug, Default, Clone)]
pub struct MemLoader {
    /// Path → content.
    pub files: std::collections::BTreeMap<PathBuf, Vec<u8>>,
    /// The working directory reported.
    pub cwd: PathBuf,
}

impl SourceLoader for MemLoader {
    fn glob(&self, pattern: &Path) -> Vec<PathBuf> {
        let Some(p) = pattern.to_str() else {
            return Vec::new();
        };
        let Ok(pat) = glob::Pattern::new(p) else {
            return Vec::new();
        };
        self.files
            .keys()
            .filter(|k| k.to_str().is_some_and(|k| pat.matches(k)))
            .cloned()
            .collect()
    }

    fn read(&self, path: &Path) -> Result<Vec<u8>, String> {
        self.files
            .get(path)
            .cloned()
            .ok_or_else(|| "No such file or directory".to_string())
    }

    fn is_regular_non_exec(&self, path: &Path) -> bool {
        self.files.contains_key(path)
    }

    fn cwd(&self) -> PathBuf {
        self.cwd.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(text: &[u8]) -> (Vec<(String, usize)>, Diagnostics) {
        let mut l = MemLoader {
            cwd: PathBuf::from("/c"),
            ..MemLoader::default()
        };
        l.files.insert(PathBuf::from("/c/k.conf"), text.to_vec());
        let mut r = Reader::new(&l, Path::new("/c/k.conf"), "host", IncludeCheck::default());
        let mut out = Vec::new();
        while let Some(x) = r.next_line() {
            out.push((x.text, x.pos.line));
        }
        (out, r.diags)
    }

    #[test]
    fn last_line_without_newline_has_its_own_number() {
        // keepalived would say line 1 here (fgets counting); see docs/compat.md.
        let (l, _) = lines(b"a 1\nb 2");
        assert_eq!(l, vec![("a 1".into(), 1), ("b 2".into(), 2)]);
    }

    #[test]
    fn too_long_line_is_dropped_and_its_rest_read() {
        let mut text = vec![b'x'; MAXBUF - 1];
        text.extend_from_slice(b"tail\nnext\n");
        let (l, d) = lines(&text);
        assert_eq!(l, vec![("tail".into(), 1), ("next".into(), 2)]);
        assert!(d
            .items()
            .iter()
            .any(|d| d.line == 1 && d.message == "line too long - ignoring"));
    }

    #[test]
    fn definitions_conditionals_and_sequences() {
        let (l, _) = lines(b"$A=${B}\n$B=v\n@host x $A\n@^host y\n~SEQ(i,1,2) s$i {\n");
        let texts: Vec<_> = l.into_iter().map(|x| x.0).collect();
        assert_eq!(texts, vec!["x v", "s1", "{", "s2", "{"]);
    }

    #[test]
    fn random_stays_in_range_and_repeats_for_a_seed() {
        // Values differ from keepalived's random(); see docs/compat.md.
        let (l, _) = lines(b"a ${_RANDOM 5 5}\nb ${_RANDOM 1 3}\n");
        assert_eq!(l[0].0, "a 5");
        let v: u32 = l[1].0[2..].parse().unwrap();
        assert!((1..=3).contains(&v));
        assert_eq!(lines(b"b ${_RANDOM}\n").0, lines(b"b ${_RANDOM}\n").0);
    }
}
