//! The block parser: dispatches each logical line to the handler of its
//! keyword in the current block, exactly as keepalived 2.2.7's
//! `process_stream()`, and fills the typed [`Config`].
//!
//! Third stage of the config pipeline: [`super::reader`] feeds it logical
//! lines, [`super::keywords`] gives the keyword tables, and
//! [`super::validate`] finishes the model. Block structure quirks are kept
//! (a block keyword without `{` swallows the next `}`, an invalid
//! `real_server` skips its whole block) because they decide what a given
//! file means; every problem is reported with its line and a hint.

use super::diag::{ErrClass, Pos};
use super::keywords::{self, Kw, Table};
use super::lexer::{split_quoted, split_quoted_escaped, tokenize, tokenize_into, words_into, Word};
use super::model::*;
use super::reader::LogicalLine;
use super::reader::Reader;

/// Raised by a handler that reads a missing mandatory argument; keepalived
/// exits with 2 there. We record it and carry on to report the rest.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MissingParameter;

/// What a keyword handler returns.
pub type HandlerResult = Result<(), MissingParameter>;

/// Largest timer keepalived accepts (µs).
pub const TIMER_MAXIMUM: u64 = u64::MAX / 2;

/// The parser state (keepalived's current-object globals, made explicit).
pub struct Parser<'r, 'l> {
    pub(crate) r: &'r mut Reader<'l>,
    /// The model being built.
    pub cfg: Config,
    /// `-t` mode: numbers with trailing garbage are rejected, as keepalived.
    pub config_test: bool,
    kw_level: usize,
    skip_sublevel: i32,
    pub(crate) pos: Pos,
    pub(crate) raw_line: String,
    pub(crate) vs: Option<VirtualServer>,
    pub(crate) rs: Option<RealServer>,
    /// How many real servers the virtual server before had: the next one
    /// starts with room for as many (tens of thousands of 200-byte records
    /// copied once, not at every doubling and again at the trim).
    pub(crate) rs_room: usize,
    pub(crate) checker: Option<Checker>,
    pub(crate) url: Option<Url>,
    /// The urls' settings read so far, each once ([`Url::share`]).
    pub(crate) url_bodies: std::collections::HashSet<std::sync::Arc<crate::config::model::UrlBody>>,
    pub(crate) track_file: Option<TrackFile>,
    pub(crate) bfd: Option<BfdInstance>,
    pub(crate) generic: Vec<Block>,
    /// The SMTP_CHECK whose deprecated `host { }` block is being read.
    pub(crate) smtp_outer: Option<Checker>,
    /// The `host { }` blocks of the current SMTP_CHECK, each a checker.
    pub(crate) smtp_hosts: Vec<Checker>,
    /// The default script user as keepalived resolves it while it parses
    /// (`get_default_script_user()`): once, at `script_user` or at the
    /// first script that needs it.
    pub(crate) default_user: DefaultUser,
    /// Lines to read again before the reader's (see [`Parser::global_defs`]).
    replay: std::collections::VecDeque<LogicalLine>,
    /// Only the replayed lines are read (the rest of the input waits).
    replay_only: bool,
    /// The lines read while `global_defs` is being parsed, or a top-level
    /// block that lacks its `{` (see [`Parser::unopened_view`]).
    record: Option<Vec<LogicalLine>>,
    /// `record` holds an unopened top-level block's lines.
    unopened: bool,
    /// The top-level block being read began where the file's braces
    /// balance: keepalived's processes that skip it were at their top
    /// level too (not inside a skip of their own).
    at_balance: bool,
    /// `{`s read at the top level and ignored there (no block opens), by
    /// the file's brace balance counted as open.
    top_ignored: i64,
    /// Lines' words handed back for their buffers.
    spare_words: Vec<Vec<Word>>,
}

/// What [`Parser::step`] found on a line.
enum Step<'t> {
    /// On to the next line.
    Next,
    /// The block ends here; true when it was skipped.
    End(bool),
    /// A keyword was read; its block (if any) is next, `{` still needed
    /// when true.
    Enter(&'t Kw, bool),
}

/// Where the default script user stands while parsing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum DefaultUser {
    /// Not needed yet.
    Unresolved,
    /// `script_user`, `keepalived_script`, or (without script security)
    /// ourselves.
    Resolved,
    /// It could not be set: scripts that need it are dropped.
    Failed,
}

/// Whether the user (and group) a script is to run as exist.
pub(crate) fn user_exists(user: &str, group: Option<&str>) -> bool {
    matches!(nix::unistd::User::from_name(user), Ok(Some(_)))
        && group.is_none_or(|g| matches!(nix::unistd::Group::from_name(g), Ok(Some(_))))
}

impl<'r, 'l> Parser<'r, 'l> {
    /// A parser reading from `r`.
    pub fn new(r: &'r mut Reader<'l>, config_test: bool) -> Self {
        Parser {
            r,
            cfg: Config::default(),
            config_test,
            kw_level: 0,
            skip_sublevel: 0,
            pos: Pos::none(),
            raw_line: String::new(),
            vs: None,
            rs: None,
            rs_room: 0,
            checker: None,
            url: None,
            url_bodies: Default::default(),
            track_file: None,
            bfd: None,
            generic: Vec::new(),
            smtp_outer: None,
            smtp_hosts: Vec::new(),
            default_user: DefaultUser::Unresolved,
            replay: Default::default(),
            replay_only: false,
            record: None,
            unopened: false,
            at_balance: false,
            top_ignored: 0,
            spare_words: Vec::new(),
        }
    }

    /// The default script user, resolved at first need: `keepalived_script`
    /// if it exists, else (with `enable_script_security`) keepalived's
    /// error, reported once, else ourselves. False when scripts that need
    /// it must be dropped.
    pub(crate) fn default_script_user_ok(&mut self) -> bool {
        match self.default_user {
            DefaultUser::Resolved => true,
            DefaultUser::Failed => false,
            DefaultUser::Unresolved => {
                if user_exists("keepalived_script", None)
                    || !self.cfg.global_defs.enable_script_security
                {
                    self.default_user = DefaultUser::Resolved;
                    true
                } else {
                    self.err(
                        ErrClass::GeneralError,
                        "Unable to set default user keepalived_script for script",
                    );
                    self.default_user = DefaultUser::Failed;
                    false
                }
            }
        }
    }

    /// A notify script (`notify_up`, `quorum_up`, FIFO scripts...): a
    /// script without its own user needs the default one, and is dropped
    /// when that cannot be set (`notify_script_init()`).
    pub(crate) fn notify_script(
        &mut self,
        words: &[Word],
    ) -> Result<Option<Script>, MissingParameter> {
        let s = self.script(words)?;
        if s.as_ref().is_some_and(|s| s.user.is_none()) && !self.default_script_user_ok() {
            return Ok(None);
        }
        Ok(s)
    }

    /// Parses everything the reader yields.
    pub fn run(&mut self) {
        let root = Table::from(keywords::root());
        self.process_stream(&root, false);
        if self.r.block_depth() > 0 && !self.r.aborted() {
            let n = self.r.block_depth();
            self.r.diags.report(
                &Pos::none(),
                ErrClass::MissingEob,
                format!("There are {n} missing '}}'s or extra '{{'s"),
            );
        }
    }

    /// Reports a problem at the current line.
    pub(crate) fn err(&mut self, class: ErrClass, msg: impl Into<String>) {
        let pos = self.pos.clone();
        self.r.diags.report(&pos, class, msg);
    }

    /// Reports a problem at a word's column.
    pub(crate) fn err_at(&mut self, w: &Word, class: ErrClass, msg: impl Into<String>) {
        let pos = self.pos.clone();
        self.r
            .diags
            .push(&pos, class, msg.into(), Some(w.column), None);
    }

    pub(crate) fn err_hint(
        &mut self,
        class: ErrClass,
        msg: impl Into<String>,
        hint: impl Into<String>,
    ) {
        let pos = self.pos.clone();
        self.r.diags.report_hint(&pos, class, msg, hint);
    }

    /// keepalived's `skip_block(true)`: ignore the block that follows.
    pub(crate) fn skip_block(&mut self) {
        self.skip_sublevel = -1;
    }

    /// The lines come from the reader, in order (no replay of any).
    fn main_reading(&self) -> bool {
        self.replay.is_empty() && !self.replay_only && self.record.is_none()
    }

    /// A skip whose `{` was on the keyword's own line.
    pub(crate) fn skip_open_block(&mut self) {
        self.skip_sublevel = 1;
    }

    /// The word at `i`, or keepalived's own message for a keyword whose
    /// handler checks its value count itself (a general error, not the
    /// missing-parameter exit 2).
    pub(crate) fn value_or(&mut self, words: &[Word], i: usize, msg: &str) -> Option<String> {
        let v = words.get(i).map(|w| w.text.clone());
        if v.is_none() {
            self.err(ErrClass::GeneralError, msg.to_string());
        }
        v
    }

    /// The word at `i` or the missing-parameter error keepalived exits on.
    pub(crate) fn arg<'w>(
        &mut self,
        words: &'w [Word],
        i: usize,
    ) -> Result<&'w str, MissingParameter> {
        match words.get(i) {
            Some(w) => Ok(&w.text),
            None => {
                let first = words
                    .first()
                    .map(|w| w.text.as_str())
                    .unwrap_or("***MISSING ***");
                let after = (i > 0 && i - 1 < words.len()).then(|| words[i - 1].text.as_str());
                let pos = self.pos.clone();
                self.r.diags.missing_parameter(&pos, first, after, i + 1);
                Err(MissingParameter)
            }
        }
    }

    /// Reads the next logical line and splits it into words, remembering
    /// its position and raw text; `None` at the end of input.
    fn next_words(&mut self) -> Option<Vec<Word>> {
        let (mut words, n) = self.next_words_lent()?;
        words.truncate(n);
        Some(words)
    }

    /// [`Parser::next_words`] in a buffer from the pool: the words are
    /// the first `n`, the rest spare buffers.
    fn next_words_lent(&mut self) -> Option<(Vec<Word>, usize)> {
        let mut from_reader = false;
        let text = match self.replay.pop_front() {
            Some(l) => {
                self.pos = l.pos;
                Some(l.text)
            }
            None if self.replay_only => None,
            None => {
                let t = self.r.next_text();
                let at = self.r.pos_ref();
                self.pos.follow(&at.file, at.line);
                from_reader = true;
                t
            }
        };
        let Some(text) = text else {
            // Blocks left open at the end are closed with no line current:
            // keepalived reports what their end handlers find without one.
            self.pos = Pos::none();
            return None;
        };
        if let Some(rec) = self.record.as_mut() {
            rec.push(LogicalLine {
                text: text.clone(),
                pos: self.pos.clone(),
            });
        }
        // The words of the line before (handed back by `process_stream`)
        // lend their buffers: no allocation per word once warm.
        let mut words = self.spare_words.pop().unwrap_or_default();
        let scanned = from_reader.then(|| self.r.lexed_words()).flatten();
        let (n, unmatched) = match scanned {
            Some(ws) => (words_into(&text, ws, &mut words), false),
            None => tokenize_into(&text, &mut words),
        };
        // The scan ahead is the tokenizer's, word for word (every config
        // test checks it in a debug build).
        #[cfg(debug_assertions)]
        if scanned.is_some() {
            let t = tokenize(&text);
            assert!(!t.unmatched_quote);
            assert_eq!(&t.words[..], &words[..n], "{text:?}");
        }
        if unmatched {
            self.err_hint(
                ErrClass::UnmatchedQuote,
                format!("Unmatched quote: '{text}'"),
                "close the double quote; the rest of the line was ignored",
            );
        }
        let old = std::mem::replace(&mut self.raw_line, text);
        self.r.recycle(old);
        Some((words, n))
    }

    fn process_stream(&mut self, table: &Table, mut need_bob: bool) -> bool {
        while let Some((words, n)) = self.next_words_lent() {
            let flow = self.step(table, &words[..n], &mut need_bob);
            // The words lend their buffers to the lines after.
            if self.spare_words.len() < 8 {
                self.spare_words.push(words);
            }
            match flow {
                Step::Next => {}
                Step::End(skipped) => return skipped,
                Step::Enter(kw, bob_needed) => {
                    if kw.name == "global_defs"
                        && self.kw_level == 0
                        && self.record.is_none()
                        && !self.replay_only
                    {
                        self.global_defs(kw, bob_needed);
                    } else if let Some(sub) = &kw.sub {
                        // The `{` of `keyword ... {`, as its own line would
                        // be read at the block's start (see `step`), unless
                        // a skip or a recording of the lines is going on.
                        let bob_needed = bob_needed
                            && !(self.skip_sublevel == 0
                                && self.record.is_none()
                                && self.replay.is_empty()
                                && !self.replay_only
                                && self.r.take_open_brace());
                        if self.kw_level == 0 {
                            self.at_balance = self.r.block_depth() - self.top_ignored <= 0;
                        }
                        self.kw_level += 1;
                        let skipped = self.process_stream(sub, bob_needed);
                        self.kw_level -= 1;
                        if !skipped {
                            if let Some(close) = kw.close {
                                close(self);
                            }
                        } else if let Some(abandon) = kw.abandon {
                            abandon(self);
                        }
                        if self.kw_level == 0 && self.unopened {
                            self.unopened_view();
                        }
                    }
                }
            }
        }
        false
    }

    /// One logical line of [`Parser::process_stream`]: skipping, braces,
    /// and the keyword's handler; a block it opens is entered by the caller.
    fn step<'t>(&mut self, table: &'t Table, words: &[Word], need_bob: &mut bool) -> Step<'t> {
        if words.is_empty() {
            return Step::Next;
        }
        let first: &str = &words[0].text;

        if self.skip_sublevel == -1 {
            if first == "{" {
                self.skip_sublevel = 1;
                *need_bob = false;
                return Step::Next;
            }
            self.skip_sublevel = 0;
        }
        if self.skip_sublevel > 0 {
            let mut last = first;
            for w in words {
                last = &w.text;
                if w.text == "{" {
                    self.skip_sublevel += 1;
                } else if w.text == "}" {
                    self.skip_sublevel -= 1;
                    if self.skip_sublevel == 0 {
                        break;
                    }
                }
            }
            if last == "}" && self.skip_sublevel == 0 && self.kw_level > 0 {
                return Step::End(true);
            }
            return Step::Next;
        }

        if *need_bob {
            *need_bob = false;
            if first == "{" && self.kw_level > 0 {
                return Step::Next;
            }
            self.err_hint(
                ErrClass::MissingBob,
                "Missing '{' at beginning of configuration block",
                "a block keyword must be followed by '{'; the line was read as if inside the block",
            );
            if self.kw_level == 1
                && self.at_balance
                && self.record.is_none()
                && self.replay.is_empty()
                && !self.replay_only
            {
                self.record = Some(vec![LogicalLine {
                    text: self.raw_line.clone(),
                    pos: self.pos.clone(),
                }]);
                self.unopened = true;
            }
        } else if first == "{" {
            self.err(ErrClass::UnexpectedBob, "Unexpected '{' - ignoring");
            if self.kw_level == 0 && self.main_reading() {
                self.top_ignored += 1;
            }
            return Step::Next;
        }

        if first == "}" && self.kw_level > 0 {
            return Step::End(false);
        }

        match table.find(first) {
            Some(kw) => {
                let mut n = words.len();
                let mut bob_needed = false;
                if kw.sub.is_some() {
                    if words.last().is_some_and(|w| w.text == "{") {
                        n -= 1;
                    } else {
                        bob_needed = true;
                    }
                }
                if let Some(h) = kw.handler {
                    // A missing parameter is recorded inside `arg`.
                    let _ = h(self, &words[..n]);
                }
                Step::Enter(kw, bob_needed)
            }
            None => {
                if first == "}" && self.kw_level == 0 && self.main_reading() {
                    self.top_ignored = (self.top_ignored - 1).max(0);
                }
                let hint = (!self.r.diags.listing_full())
                    .then(|| keywords::did_you_mean(first, table))
                    .flatten()
                    .map(|s| format!("did you mean '{s}'?"))
                    .unwrap_or_else(|| {
                        if first == "}" {
                            "this '}' closes no block; remove it".to_string()
                        } else {
                            "the line is ignored".to_string()
                        }
                    });
                let pos = self.pos.clone();
                self.r.diags.push(
                    &pos,
                    ErrClass::UnknownKeyword,
                    format!("Unknown keyword '{first}'"),
                    Some(words[0].column),
                    Some(hint),
                );
                Step::Next
            }
        }
    }

    /// `global_defs` as keepalived's processes read it: the parent parses it
    /// with the global keywords (what `-t` reports), the checker and VRRP
    /// processes skip it by counting braces. Where the two disagree about
    /// its end (a `notification_email` without `{` reads on through the
    /// block's `}`; an unknown keyword's `{` makes a `}` close it early),
    /// the rest of the file is read as the processes that run it read it:
    /// lines the parent took into the block are read again at the top
    /// level, and lines the parent reads at the top level but the others
    /// skip are only checked as the parent checks them.
    fn global_defs(&mut self, kw: &keywords::Kw, bob_needed: bool) {
        self.record = Some(Vec::new());
        self.kw_level += 1;
        let none = Table::from(Vec::new());
        let sub = kw.sub.as_ref().unwrap_or(&none);
        let skipped = self.process_stream(sub, bob_needed);
        self.kw_level -= 1;
        if !skipped {
            if let Some(close) = kw.close {
                close(self);
            }
        }
        let rec = self.record.take().unwrap_or_default();
        let mut depth: i32 = if bob_needed { -1 } else { 1 };
        let end = rec.iter().enumerate().find_map(|(i, l)| {
            skip_step(&mut depth, &tokenize(&l.text).words)
                .map(|closes| if closes { i + 1 } else { i })
        });
        match end {
            Some(e) if e < rec.len() => {
                // The parent read on past the block's end: it goes on at
                // the top level from where its own view of the block
                // ended, the others from `e`. The parent's view of the
                // rest is checked first, then everyone's is read.
                let mut rest: Vec<_> = std::iter::from_fn(|| self.r.next_line()).collect();
                self.replay = rest.clone().into();
                self.parent_view();
                let mut again = rec[e..].to_vec();
                again.append(&mut rest);
                self.replay = again.into();
            }
            Some(_) => {}
            None => {
                let mut parent_only = Vec::new();
                let mut after = None;
                while let Some(l) = self.r.next_line() {
                    match skip_step(&mut depth, &tokenize(&l.text).words) {
                        None => parent_only.push(l),
                        Some(true) => {
                            parent_only.push(l);
                            break;
                        }
                        Some(false) => {
                            after = Some(l);
                            break;
                        }
                    }
                }
                if !parent_only.is_empty() {
                    self.replay = parent_only.into();
                    self.parent_view();
                    self.replay.clear();
                }
                if let Some(l) = after {
                    self.replay.push_back(l);
                }
            }
        }
    }

    /// A top-level block without its `{`, as keepalived's processes that
    /// skip it read it: their skip by brace count ends at once, and the
    /// block's lines are read at the top level (each an unknown keyword).
    /// This reading took them into the block, as keepalived's process
    /// that parses the block does; the others' messages are added here.
    fn unopened_view(&mut self) {
        self.unopened = false;
        let rec = self.record.take().unwrap_or_default();
        if rec.is_empty() {
            return;
        }
        self.replay = rec.into();
        self.parent_view();
        self.replay.clear();
    }

    /// Reads the replayed lines (only those) as keepalived's parent reads
    /// them at the top level, for its messages. A block it leaves open (or
    /// a skip) ends with them: the other processes' view starts afresh.
    fn parent_view(&mut self) {
        self.replay_only = true;
        let table = Table::from(keywords::parent_root());
        self.process_stream(&table, false);
        self.replay_only = false;
        self.skip_sublevel = 0;
    }

    /// keepalived's `alloc_value_block()`: the lines of a `{ ... }` value block.
    pub(crate) fn read_value_block(&mut self, words: &[Word]) -> Vec<(Vec<Word>, usize)> {
        let block = words.first().map(|w| w.text.clone()).unwrap_or_default();
        if let Some(extra) = words.get(1).filter(|w| w.text != "{") {
            self.err(
                ErrClass::GeneralError,
                format!("Block {block} has extra parameters {} ...", extra.text),
            );
        }
        let mut out = Vec::new();
        let mut need_bob = true;
        while let Some(mut vec) = self.next_words() {
            if vec.is_empty() {
                continue;
            }
            if need_bob {
                need_bob = false;
                if vec[0].text == "{" {
                    if vec.len() == 1 {
                        continue;
                    }
                    vec.remove(0);
                } else if !self.config_test {
                    // keepalived only logs this (not under -t); it does not
                    // count as a config error.
                    let pos = self.pos.clone();
                    self.r.diags.push(
                        &pos,
                        ErrClass::Ok,
                        format!("'{{' missing from beginning of block {block}"),
                        None,
                        None,
                    );
                }
            }
            let mut had_eob = false;
            if vec.last().is_some_and(|w| w.text == "}") {
                if vec.len() == 1 {
                    break;
                }
                had_eob = true;
                vec.pop();
            }
            if !vec.is_empty() {
                out.push((vec, self.pos.line));
            }
            if had_eob {
                break;
            }
        }
        out
    }

    // ---- number readers: see `super::numbers` ----

    /// `read_unsigned_func()`: Some(value) when accepted.
    pub(crate) fn read_unsigned(
        &mut self,
        s: &str,
        min: u64,
        max: u64,
        ignore_error: bool,
    ) -> Option<u64> {
        super::numbers::read_unsigned(self, s, min, max, ignore_error)
    }

    /// `read_int_func()`.
    pub(crate) fn read_int(
        &mut self,
        s: &str,
        min: i64,
        max: i64,
        ignore_error: bool,
    ) -> Option<i64> {
        super::numbers::read_int(self, s, min, max, ignore_error)
    }

    /// `read_timer()`: seconds with up to 6 decimals, returned in µs.
    pub(crate) fn read_timer(
        &mut self,
        s: &str,
        min_us: u64,
        max_us: u64,
        ignore_error: bool,
    ) -> Option<u64> {
        super::numbers::read_timer(self, s, min_us, max_us, ignore_error)
    }

    /// keepalived's `check_true_false()` for an optional BOOL argument.
    pub(crate) fn opt_bool(&mut self, words: &[Word], keyword: &str) -> Option<bool> {
        match words.get(1) {
            None => Some(true),
            Some(w) => match w.text.as_str() {
                "true" | "on" | "yes" => Some(true),
                "false" | "off" | "no" => Some(false),
                other => {
                    self.err_hint(
                        ErrClass::GeneralError,
                        format!("Invalid value '{other}' for {keyword}"),
                        "use one of true/on/yes or false/off/no",
                    );
                    None
                }
            },
        }
    }

    /// Parses a script keyword's raw line (`KW "CMD ARGS" [USER [[:]GROUP]]`).
    pub(crate) fn script(&mut self, words: &[Word]) -> Result<Option<Script>, MissingParameter> {
        self.arg(words, 1)?;
        let raw = self.raw_line.clone();
        let Some(parts) = split_quoted(&raw) else {
            self.err(
                ErrClass::UnmatchedQuote,
                format!("Unmatched quote: '{raw}'"),
            );
            return Ok(None);
        };
        let Some(cmd) = parts.get(1) else {
            return Ok(None);
        };
        let Some(args) = split_quoted_escaped(cmd) else {
            self.err(
                ErrClass::UnmatchedQuote,
                format!("String '{cmd}': missing terminating quote"),
            );
            return Ok(None);
        };
        if args.is_empty() {
            return Ok(None);
        }
        let user = parts.get(2).cloned();
        let group = parts.get(3).map(|g| g.trim_start_matches(':').to_string());
        Ok(Some(Script { args, user, group }))
    }

    /// The generic block being filled (VRRP, BFD, static sections).
    pub(crate) fn generic_top(&mut self) -> Option<&mut Block> {
        self.generic.last_mut()
    }
}

/// One line of a block skipped by counting braces, as keepalived's
/// `skip_block()` (and [`Parser::process_stream`]) count them: `depth` -1
/// waits for the `{` line. `Some(true)` when the line closes the block,
/// `Some(false)` when the block never opened (the line is not part of it).
fn skip_step(depth: &mut i32, words: &[Word]) -> Option<bool> {
    let first = words.first()?;
    if *depth == -1 {
        if first.text == "{" {
            *depth = 1;
            return None;
        }
        *depth = 0;
        return Some(false);
    }
    for w in words {
        if w.text == "{" {
            *depth += 1;
        } else if w.text == "}" {
            *depth -= 1;
            if *depth == 0 {
                return Some(true);
            }
        }
    }
    None
}

/// Formats like C's `%g`.
pub fn fmt_g(v: f64) -> String {
    if v == v.trunc() && v.abs() < 1e15 {
        format!("{}", v as i64)
    } else if v.abs() >= 1e6 {
        format!("{v:e}")
    } else {
        format!("{v}")
    }
}

pub(crate) use super::numbers::strtoul;

pub use super::address::{parse_ip, parse_port};

impl super::numbers::Report for Parser<'_, '_> {
    fn report(&mut self, class: ErrClass, msg: String) {
        self.err(class, msg);
    }
    fn config_test(&self) -> bool {
        self.config_test
    }
}

#[cfg(test)]
mod tests {
    use crate::config::load_str;

    const SECURE: &str = "global_defs {\n enable_script_security\n}\n\
        virtual_server 192.0.2.1 80 {\n lvs_sched rr\n lvs_method NAT\n protocol TCP\n \
        real_server 192.0.2.2 80 {\n notify_up /bin/true\n notify_down /bin/true\n \
        MISC_CHECK {\n misc_path /bin/true\n }\n }\n}\n";

    #[test]
    fn the_default_script_user_is_resolved_once_as_keepalived_does() {
        let l = load_str(SECURE);
        let msgs = l.diagnostics.lines_and_messages();
        let rs = &l.config.virtual_servers[0].real_servers[0];
        if super::user_exists("keepalived_script", None) {
            // The default exists: nothing to say, everything kept.
            assert!(msgs.is_empty(), "{msgs:?}");
            assert!(rs.seldom.notify_up.is_some() && rs.checkers.len() == 1);
        } else {
            // Reported once, at the first script that needs it; every
            // script that needs it is dropped.
            assert_eq!(
                msgs,
                vec![
                    (9, "Unable to set default user keepalived_script for script"),
                    (
                        13,
                        "Unable to set default user for misc script '/bin/true' - removing"
                    ),
                ]
            );
            assert!(rs.seldom.notify_up.is_none() && rs.seldom.notify_down.is_none());
            assert!(rs.checkers.is_empty());
        }
        // A script with a user of its own does not need the default.
        let own = SECURE.replace(" notify_up /bin/true\n", " notify_up /bin/true root\n");
        let l = load_str(&own);
        assert!(l.config.virtual_servers[0].real_servers[0]
            .seldom
            .notify_up
            .is_some());
    }

    #[test]
    fn urls_written_alike_share_their_settings_and_keep_their_lines() {
        let l = load_str(
            "virtual_server 192.0.2.1 80 {\n lvs_sched rr\n lvs_method NAT\n protocol TCP\n\
             real_server 192.0.2.2 80 {\n HTTP_GET {\n url {\n path /\n }\n }\n }\n\
             real_server 192.0.2.3 80 {\n HTTP_GET {\n url {\n path /\n }\n url {\n path /x\n }\n }\n }\n\
             real_server 192.0.2.4 80 {\n HTTP_GET {\n url {\n path /\n status_code 204\n }\n }\n }\n}\n",
        );
        let urls: Vec<&crate::config::model::Url> = l.config.virtual_servers[0]
            .real_servers
            .iter()
            .flat_map(|r| r.checkers.iter())
            .flat_map(|c| match c {
                crate::config::model::Checker::Http(h) => h.urls.iter(),
                _ => panic!("an HTTP_GET"),
            })
            .collect();
        assert_eq!(urls.len(), 4);
        let same = |a: usize, b: usize| std::ptr::eq(&**urls[a], &**urls[b]);
        assert!(same(0, 1), "the two `path /` urls share one copy");
        assert!(!same(0, 2) && !same(0, 3) && !same(2, 3));
        assert_eq!(urls[3].status_code, vec![(204, 204)]);
        assert_eq!(urls[0].path.as_deref(), Some("/"));
        assert_eq!(urls[2].path.as_deref(), Some("/x"));
        let lines: Vec<usize> = urls.iter().map(|u| u.line).collect();
        assert_eq!(lines, vec![7, 14, 17, 24]);
        // A write to one copies it first: the other keeps its settings.
        let mut a = urls[0].clone();
        a.path = Some("/changed".into());
        assert_eq!(urls[1].path.as_deref(), Some("/"));
    }
}
