//! Configuration diagnostics: the problems the lexer, the block parser and
//! validation find, each with its file, line, keepalived error class and a hint.
//!
//! Sits beside every stage of the config pipeline: all of them push into one
//! [`Diagnostics`] collector so that every problem is reported, not only the first.
//! The error classes mirror keepalived 2.2.7's `config_err_t` because
//! `keepalived -t` derives its exit code from the numerically highest class seen.

use serde::Serialize;
use std::fmt;
use std::sync::Arc;

/// keepalived's `config_err_t`, in its numeric order (the order matters: the
/// highest class seen decides the `-t` exit code).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrClass {
    /// Informational; does not change the exit code.
    Ok = 0,
    /// A configuration file could not be found.
    FileNotFound = 1,
    /// An interface named in the configuration does not exist.
    BadIf = 2,
    /// A fatal problem.
    Fatal = 3,
    /// More than one file matched the main configuration path.
    MultipleFiles = 4,
    /// A keyword unknown in its block.
    UnknownKeyword = 5,
    /// A `{` where none was expected.
    UnexpectedBob = 6,
    /// A block keyword not followed by `{`.
    MissingBob = 7,
    /// A `}` with no open block.
    UnexpectedEob = 8,
    /// End of input with blocks still open.
    MissingEob = 9,
    /// A `"` without its closing partner.
    UnmatchedQuote = 10,
    /// A keyword missing a mandatory argument (keepalived exits with 2).
    MissingParameter = 11,
    /// A value that is not a valid number or is out of range.
    InvalidNumber = 12,
    /// Any other error.
    GeneralError = 13,
    /// A warning; keepalived carries on.
    Warning = 14,
    /// A deprecated keyword or form.
    Deprecated = 15,
    /// Scripts configured without `enable_script_security`.
    SecurityError = 16,
}

/// How serious a problem is for the operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    /// keepalived ignored or altered something; the config is not what it says.
    Error,
    /// keepalived carries on, but the operator should look.
    Warning,
    /// Information only.
    Note,
}

impl ErrClass {
    /// The severity shown to operators for this class.
    pub fn severity(self) -> Severity {
        match self {
            ErrClass::Ok => Severity::Note,
            ErrClass::Warning | ErrClass::Deprecated | ErrClass::MultipleFiles => Severity::Warning,
            _ => Severity::Error,
        }
    }
}

/// A position in the configuration: file name as keepalived names it, and line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Pos {
    /// The file, as the glob that opened it spelled it.
    pub file: Arc<str>,
    /// 1-based line number of the physical line (0 when not known).
    pub line: usize,
}

impl Pos {
    /// Becomes line `line` of `file`, sharing the name (not copying the
    /// pointer, whose count is atomic) when it is the file already held.
    pub fn follow(&mut self, file: &Arc<str>, line: usize) {
        if !Arc::ptr_eq(&self.file, file) {
            self.file = file.clone();
        }
        self.line = line;
    }

    /// A position that refers to no file (problems found after parsing).
    pub fn none() -> Pos {
        Pos {
            file: Arc::from(""),
            line: 0,
        }
    }
}

/// One configuration problem.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
pub struct Diagnostic {
    /// Where it was found; `line` 0 for problems found after parsing.
    pub file: Arc<str>,
    /// 1-based line, 0 when unknown.
    pub line: usize,
    /// 1-based column where meaningful.
    pub column: Option<usize>,
    /// keepalived's class for it.
    pub class: ErrClass,
    /// Error, warning or note.
    pub severity: Severity,
    /// The message, worded as keepalived words it where keepalived reports it.
    pub message: String,
    /// What to do about it.
    pub hint: Option<String>,
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let sev = match self.severity {
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::Note => "note",
        };
        if self.line > 0 {
            write!(f, "{}:{}:", self.file, self.line)?;
            if let Some(c) = self.column {
                write!(f, "{c}:")?;
            }
            write!(f, " ")?;
        } else if !self.file.is_empty() {
            write!(f, "{}: ", self.file)?;
        }
        write!(f, "{sev}: {}", self.message)?;
        if let Some(h) = &self.hint {
            write!(f, "\n  = hint: {h}")?;
        }
        Ok(())
    }
}

/// How many problems are kept to be listed; past that they are counted
/// (their class still decides `-t`'s exit code) and summed up in one
/// note, so that a file of a million bad lines costs megabytes, not a
/// gigabyte.
pub const MAX_LISTED: usize = 10_000;

/// Collects every problem found while loading one configuration.
#[derive(Debug, Default, Clone)]
pub struct Diagnostics {
    items: Vec<Diagnostic>,
    /// Hashes of every problem seen, so that de-duplication stays O(1) per
    /// report and costs 8 bytes a problem.
    seen: std::collections::HashSet<u64>,
    /// Problems past [`MAX_LISTED`]: how many, and their highest class.
    unlisted: usize,
    unlisted_highest: Option<ErrClass>,
    /// Set when keepalived would have exited with 2 (missing parameter).
    pub missing_parameter: bool,
    /// Set when an include error is fatal (keepalived exits 6).
    pub fatal_include: bool,
}

impl Diagnostics {
    /// Records a problem at `pos`.
    /// keepalived's missing-parameter error for a line starting with
    /// `first`, whose word `position` (1-based, after `after`) is missing:
    /// `-t` then exits with 2.
    pub fn missing_parameter(
        &mut self,
        pos: &Pos,
        first: &str,
        after: Option<&str>,
        position: usize,
    ) {
        let msg = match after {
            Some(kw) => format!(
                "*** Configuration line starting `{first}` is missing a parameter after keyword `{kw}` at word position {position}"
            ),
            None => format!(
                "*** Configuration line starting `{first}` is missing a parameter at word position {position}"
            ),
        };
        self.push(
            pos,
            ErrClass::MissingParameter,
            msg,
            None,
            Some(format!(
                "`{first}` needs a value here; keepalived stops loading at this line (exit 2)"
            )),
        );
        self.missing_parameter = true;
    }

    pub fn report(&mut self, pos: &Pos, class: ErrClass, message: impl Into<String>) {
        self.push(pos, class, message.into(), None, None);
    }

    /// Records a problem at `pos` with a hint.
    pub fn report_hint(
        &mut self,
        pos: &Pos,
        class: ErrClass,
        message: impl Into<String>,
        hint: impl Into<String>,
    ) {
        self.push(pos, class, message.into(), None, Some(hint.into()));
    }

    /// Records a problem with every detail.
    pub fn push(
        &mut self,
        pos: &Pos,
        class: ErrClass,
        message: String,
        column: Option<usize>,
        hint: Option<String>,
    ) {
        let d = Diagnostic {
            file: pos.file.clone(),
            line: pos.line,
            column,
            class,
            severity: class.severity(),
            message,
            hint,
        };
        // keepalived validates in several processes and so repeats itself; we don't.
        let key = {
            use std::hash::{Hash, Hasher};
            let mut h = std::collections::hash_map::DefaultHasher::new();
            d.hash(&mut h);
            h.finish()
        };
        if !self.seen.insert(key) {
            return;
        }
        if self.items.len() < MAX_LISTED {
            self.items.push(d);
        } else {
            self.unlisted += 1;
            self.unlisted_highest = self.unlisted_highest.max(Some(class));
        }
    }

    /// Whether new problems are only counted now (a caller may skip work
    /// that only serves the listing, such as a hint).
    pub fn listing_full(&self) -> bool {
        self.items.len() >= MAX_LISTED
    }

    /// Ends the load: the problems past [`MAX_LISTED`] are summed up in a
    /// note.
    pub fn finish(&mut self) {
        if self.unlisted > 0 {
            let n = self.unlisted;
            let d = Diagnostic {
                file: std::sync::Arc::from(""),
                line: 0,
                column: None,
                class: ErrClass::Ok,
                severity: Severity::Note,
                message: format!(
                    "{n} more problem(s) not listed (only the first {MAX_LISTED} are)"
                ),
                hint: None,
            };
            self.items.push(d);
        }
    }

    /// Every problem, in the order found.
    pub fn items(&self) -> &[Diagnostic] {
        &self.items
    }

    /// Each problem's line and message, in the order found.
    pub fn lines_and_messages(&self) -> Vec<(usize, &str)> {
        self.items
            .iter()
            .map(|d| (d.line, d.message.as_str()))
            .collect()
    }

    /// The numerically highest class recorded (keepalived's `get_config_status()`).
    pub fn highest(&self) -> ErrClass {
        self.items
            .iter()
            .map(|d| d.class)
            .chain(self.unlisted_highest)
            .max()
            .unwrap_or(ErrClass::Ok)
    }

    /// The exit code `keepalived -t` gives for this set of problems.
    pub fn config_test_exit_code(&self) -> i32 {
        if self.missing_parameter {
            return 2;
        }
        if self.fatal_include {
            return 6;
        }
        match self.highest() {
            ErrClass::Ok => 0,
            ErrClass::FileNotFound | ErrClass::BadIf | ErrClass::Fatal => 4,
            ErrClass::SecurityError => 6,
            _ => 5,
        }
    }
}
