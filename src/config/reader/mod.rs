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
use super::lexer::{decomment, decomment_owned, is_plain, split_brace_owned, tokenize};
use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// keepalived's `MAXBUF`: a physical line is read in chunks of `MAXBUF - 1`.
pub const MAXBUF: usize = 1024;

mod definitions;
mod plain;
mod prelex;
mod repeat;
mod source;

use definitions::{Def, StdDef};
use repeat::Repeat;
use source::Source;
pub use source::{expand_braces, FsLoader, IncludeCheck, MemLoader, SourceLoader};

/// What a byte means to [`Reader::physical_line`]'s one pass: a NUL ends the
/// C string keepalived reads; a quote, escape or comment character needs
/// [`decomment`].
const NUL: u8 = 1;
const DECOMMENT: u8 = 2;
/// Trimmed around a line (`' '`, `'\t'`).
const BLANK: u8 = 4;
/// A CR is trimmed at the line's end only, before its blanks.
const CR: u8 = 8;
/// A `$` may define or substitute: the general path of
/// [`Reader::next_text`].
const DOLLAR: u8 = 16;
/// A brace splits the line.
const BRACE: u8 = 32;
const BYTE_CLASS: [u8; 256] = {
    let mut t = [0u8; 256];
    t[0] = NUL;
    t[b' ' as usize] = BLANK;
    t[b'\t' as usize] = BLANK;
    t[b'\r' as usize] = CR;
    t[b'"' as usize] = DECOMMENT;
    t[b'\\' as usize] = DECOMMENT;
    t[b'#' as usize] = DECOMMENT;
    t[b'!' as usize] = DECOMMENT;
    t[b'$' as usize] = DOLLAR;
    t[b'{' as usize] = BRACE;
    t[b'}' as usize] = BRACE;
    t
};
/// The classes that send a line through the general path.
const GENERAL: u8 = NUL | DECOMMENT | CR | DOLLAR;
/// A line whose bytes were not classed: the general path reads it.
const UNKNOWN: u8 = u8::MAX;

/// What a line split at a brace leaves for the next logical line.
enum Residue {
    None,
    /// A lone `{` or `}` (the usual `keyword args {`): kept as its byte,
    /// written into the recycled buffer when its turn comes.
    Brace(u8),
    Text(String),
}

impl Residue {
    fn of(rest: &str) -> Residue {
        match rest.as_bytes() {
            [b @ (b'{' | b'}')] => Residue::Brace(*b),
            _ => Residue::Text(rest.to_string()),
        }
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

/// The preprocessor state (keepalived's file-static variables of `parser.c`).
pub struct Reader<'l> {
    loader: &'l dyn SourceLoader,
    files: Vec<Source>,
    residue: Residue,
    repeats: Vec<Repeat>,
    multiline: Option<VecDeque<String>>,
    /// The multi-line definitions whose expansion made `multiline`, outer
    /// first (a definition used again inside its own expansion is a loop).
    ml_chain: Vec<usize>,
    multiline_stack: Vec<(VecDeque<String>, usize, Vec<usize>)>,
    /// The multi-line definitions the line being read came from.
    line_chain: Vec<usize>,
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
    /// A line's buffer handed back by the parser, for the next line.
    spare: String,
    /// The physical line read last as its file was scanned ahead
    /// ([`prelex`]): its first brace ([`prelex::NONE`]: none) and where its
    /// words are in the scan's batch.
    lexed: Option<(u32, Option<(u32, u16)>)>,
    /// The words of the logical line returned last, in the innermost
    /// file's scan, when they were scanned.
    words: Option<(u32, u16)>,
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
            residue: Residue::None,
            repeats: Vec::new(),
            multiline: None,
            ml_chain: Vec::new(),
            multiline_stack: Vec::new(),
            line_chain: Vec::new(),
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
            spare: String::new(),
            lexed: None,
            words: None,
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

    /// Takes back a line's buffer once its reader is done with it, so
    /// that the next physical line is read without an allocation.
    pub fn recycle(&mut self, mut s: String) {
        if s.capacity() > self.spare.capacity() {
            s.clear();
            self.spare = s;
        }
    }

    /// The position of the line read last (what keepalived reports errors at).
    pub fn pos(&self) -> Pos {
        self.last_pos.clone()
    }

    /// [`Reader::pos`] without a copy.
    pub fn pos_ref(&self) -> &Pos {
        &self.last_pos
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

    /// Reads one physical line (an `fgets` chunk) from the innermost file,
    /// popping finished files. `None` at the end of all input. With it, the
    /// byte classes the line holds: one without [`DECOMMENT`], [`NUL`] or
    /// [`CR`] was trimmed already and decommenting it would change nothing
    /// (most lines of a config: they are read without a second pass).
    fn physical_line(&mut self) -> Option<(String, u8)> {
        loop {
            let f = self.files.last_mut()?;
            // Field by field: `data` is read while the position moves.
            let data: &[u8] = match &f.data {
                Ok(s) => s.as_bytes(),
                Err(b) => b,
            };
            if f.offset >= data.len() {
                let done = self.files.pop().expect("a file is open");
                self.include_check = done.saved_include_check;
                continue;
            }
            let rest = &data[f.offset..];
            // The chunk as scanned ahead, else scanned here.
            let mut lexed = None;
            if let Some(p) = f.prelex.as_mut() {
                match p.next() {
                    Some(l) => lexed = Some((l, prelex::Prelex::word_range(&l))),
                    None => f.prelex = None,
                }
            }
            let c = match &lexed {
                Some((l, _)) => l.chunk,
                None => prelex::scan(rest),
            };
            let (chunk_len, has_nl) = (c.len as usize, c.has_nl);
            let start = f.offset;
            let data_len = data.len();
            f.offset += chunk_len;
            if has_nl || f.offset >= data_len {
                f.line_no += 1;
            }
            if !has_nl && chunk_len == MAXBUF - 1 && f.offset < data_len {
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
            let class = c.class & !prelex::HIGH;
            self.lexed = lexed.map(|(l, words)| (l.brace, words));
            let mut line = std::mem::take(&mut self.spare);
            line.clear();
            // Nothing to decomment, no NUL, no CR: the line is its text
            // without the blanks around it, sliced from the file's.
            if class & (DECOMMENT | NUL | CR) == 0 {
                if c.first == prelex::NONE {
                    return Some((line, class));
                }
                let (a, b) = (start + c.first as usize, start + c.last as usize);
                if let Ok(text) = &f.data {
                    if text.is_char_boundary(a) && text.is_char_boundary(b) {
                        line.push_str(&text[a..b]);
                        return Some((line, class));
                    }
                }
            }
            let chunk = &data[start..start + chunk_len];
            // keepalived reads the line as a C string: it ends at a NUL,
            // silently (a NUL-only line is an empty one).
            let chunk = match class & NUL != 0 {
                true => &chunk[..chunk.iter().position(|&b| b == 0).unwrap_or(chunk.len())],
                false => chunk,
            };
            let text = String::from_utf8_lossy(chunk);
            let text = text.trim_end_matches(['\n', '\r']);
            if is_plain(text) {
                line.push_str(text.trim_matches([' ', '\t']));
                return Some((line, UNKNOWN & !DECOMMENT));
            }
            line.push_str(text);
            return Some((line, UNKNOWN));
        }
    }

    /// The next logical line for the block parser, or `None` at the end.
    pub fn next_line(&mut self) -> Option<LogicalLine> {
        let text = self.next_text()?;
        Some(LogicalLine {
            text,
            pos: self.last_pos.clone(),
        })
    }

    /// [`Reader::next_line`]'s text; its position is [`Reader::pos`], and
    /// [`Pos::follow`] keeps a copy of it without touching the file name's
    /// count while the file is the same (an atomic operation per line).
    pub fn next_text(&mut self) -> Option<String> {
        self.words = None;
        if self.aborted {
            return None;
        }
        if let Some(line) = self.plain_line() {
            return Some(line);
        }
        let mut buf;
        'outer: loop {
            let residue = std::mem::replace(&mut self.residue, Residue::None);
            if let Residue::Brace(b) = residue {
                // What the general path makes of a lone brace, without it.
                let mut line = std::mem::take(&mut self.spare);
                line.clear();
                line.push(char::from(b));
                self.count_brace(&line);
                return Some(line);
            } else if let Residue::Text(r) = residue {
                buf = r;
            } else if self.repeats.len() > self.multiline_seq_depth {
                buf = self.next_repeat();
            } else if let Some(ml) = self.multiline.as_mut() {
                buf = ml.pop_front().unwrap_or_default();
                self.line_chain.clone_from(&self.ml_chain);
                if ml.is_empty() {
                    match self.multiline_stack.pop() {
                        Some((next, depth, chain)) => {
                            self.multiline = Some(next);
                            self.multiline_seq_depth = depth;
                            self.ml_chain = chain;
                        }
                        None => {
                            self.multiline = None;
                            self.multiline_seq_depth = 0;
                            self.ml_chain.clear();
                        }
                    }
                }
            } else {
                self.line_chain.clear();
                let (raw, class) = match self.physical_line() {
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
                buf = if class & DECOMMENT == 0 {
                    raw
                } else {
                    let first = decomment_owned(raw);
                    if first.unterminated_quote {
                        self.report(
                            ErrClass::GeneralError,
                            format!("Unterminated quote '{}'", first.text),
                        );
                    }
                    decomment_owned(first.text).text
                };
                if let Some(f) = self.files.last() {
                    self.last_pos.follow(&f.name, f.line_no);
                }
                if buf.is_empty() {
                    if let Some(d) = self.defining.take() {
                        if self.defs[d].value.is_empty() {
                            self.defs[d].multiline = false;
                        }
                    }
                    continue;
                }
                // Most lines: no `$`, no `@`/`~` line, no include, no
                // definition going on; the general path would only split
                // the line at its brace.
                if class & GENERAL == 0
                    && self.defining.is_none()
                    && !matches!(buf.as_bytes()[0], b'@' | b'~')
                    && !buf.starts_with("include")
                {
                    let (at, words) = self.lexed.take().unwrap_or((prelex::NONE, None));
                    let brace = match (class & BRACE != 0, at) {
                        (false, _) => None,
                        (true, prelex::NONE) => memchr::memchr2(b'{', b'}', buf.as_bytes()),
                        (true, at) => Some(at as usize),
                    };
                    // Scanned words count only where the scan agrees.
                    self.words = words.filter(|_| (class & BRACE != 0) == (at != prelex::NONE));
                    return Some(self.split_plain(buf, brace));
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
        self.residue = match residue {
            Some(r) => Residue::of(&r),
            None => Residue::None,
        };
        self.count_brace(&head);
        Some(head)
    }

    /// The words of the logical line [`Reader::next_text`] returned last,
    /// as `start, len` in it, when its file was scanned ahead: what
    /// [`super::lexer::tokenize_into`] finds in it.
    pub fn lexed_words(&self) -> Option<&[(u16, u16)]> {
        let range = self.words?;
        Some(self.files.last()?.prelex.as_ref()?.words_at(range))
    }

    /// [`split_brace_owned`] for a trimmed line without quotes (so none
    /// hides a brace), at its first brace `at`.
    fn split_plain(&mut self, mut buf: String, at: Option<usize>) -> String {
        match at {
            None => {}
            Some(0) => {
                let rest = buf[1..].trim_start_matches([' ', '\t']);
                if !rest.is_empty() {
                    self.residue = Residue::of(rest);
                }
                buf.truncate(1);
            }
            Some(p) => {
                self.residue = Residue::of(&buf[p..]);
                let head = buf[..p].trim_end_matches([' ', '\t']).len();
                buf.truncate(head);
            }
        }
        self.count_brace(&buf);
        buf
    }

    /// Takes the `{` the line read last left to come next, if that is all
    /// it left: the parser entering the block it opens reads it so, not as
    /// a line of its own (a second logical line per `keyword ... {`).
    pub fn take_open_brace(&mut self) -> bool {
        if !matches!(self.residue, Residue::Brace(b'{')) {
            return false;
        }
        self.residue = Residue::None;
        self.count_brace("{");
        true
    }

    /// The open-brace balance after a logical line.
    fn count_brace(&mut self, head: &str) {
        if head == "{" {
            self.block_depth += 1;
        } else if head == "}" {
            self.block_depth -= 1;
            if self.block_depth < 0 {
                self.report(ErrClass::UnexpectedEob, "Extra '}' found".to_string());
                self.block_depth = 0;
            }
        }
    }
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

#[cfg(test)]
mod tests;
