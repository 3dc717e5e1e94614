//! Where the VRRP model's builder reports and what it asks: the line
//! being read, keepalived's number readers over it, the host's
//! interfaces. Part of [`super::build`].

use crate::config::diag::{Diagnostics, ErrClass, Pos};
use crate::config::model::Setting;
use crate::config::numbers::{self, Report};
use crate::config::validate::Host;
use std::sync::Arc;

/// Where the builder reports: the line being read, the host it asks.
pub struct Ctx<'a> {
    diags: &'a mut Diagnostics,
    file: Arc<str>,
    /// The line problems are reported at.
    pub line: usize,
    /// The machine's interfaces.
    pub host: &'a dyn Host,
    config_test: bool,
    /// An interface named in the config does not exist (keepalived's VRRP
    /// process stops on that).
    pub bad_if: bool,
    /// The numbers rules without a preference get next.
    pub rule_priority: super::iprule::NextPriority,
    /// Global `dynamic_interfaces`: an interface that does not exist yet
    /// is no problem (keepalived waits for it, says nothing).
    pub dynamic_interfaces: bool,
}

impl<'a> Ctx<'a> {
    /// A context reporting into `diags` for `file`.
    pub fn new(
        diags: &'a mut Diagnostics,
        file: Arc<str>,
        host: &'a dyn Host,
        config_test: bool,
    ) -> Self {
        Ctx {
            diags,
            file,
            line: 0,
            host,
            config_test,
            bad_if: false,
            rule_priority: Default::default(),
            dynamic_interfaces: false,
        }
    }

    fn pos(&self) -> Pos {
        if self.line == 0 {
            Pos::none()
        } else {
            Pos {
                file: self.file.clone(),
                line: self.line,
            }
        }
    }

    /// A general error at the current line.
    pub fn err(&mut self, msg: impl Into<String>) {
        let pos = self.pos();
        self.diags.report(&pos, ErrClass::GeneralError, msg);
    }

    /// A problem keepalived reports without a line (end-of-block checks).
    pub(super) fn err_nolines(&mut self, msg: impl Into<String>) {
        self.diags.report(&Pos::none(), ErrClass::GeneralError, msg);
    }

    /// Whether interface `name` is one the config may name: it exists, or
    /// `dynamic_interfaces` lets it come later.
    pub fn interface_known(&self, name: &str) -> bool {
        self.dynamic_interfaces || self.host.interface_exists(name)
    }

    /// An interface that does not exist.
    pub fn bad_interface(&mut self, msg: String) {
        let pos = self.pos();
        self.diags.report(&pos, ErrClass::Warning, msg);
        self.bad_if = true;
    }

    /// keepalived's missing-parameter error (exit 2).
    pub(super) fn missing(&mut self, s: &Setting) {
        self.line = s.line;
        let pos = self.pos();
        self.diags
            .missing_parameter(&pos, &s.keyword, Some(&s.keyword), 2);
    }

    /// keepalived's `strvec_slot()` past the end of a value line: the
    /// missing-parameter stop (exit 2).
    pub fn missing_word(&mut self, words: &[String], i: usize) {
        let pos = self.pos();
        let first = words.first().map_or("", String::as_str);
        let after = i
            .checked_sub(1)
            .and_then(|k| words.get(k))
            .map(String::as_str);
        self.diags.missing_parameter(&pos, first, after, i + 1);
    }

    /// `read_unsigned()` as `-t` reads it.
    pub fn read_unsigned(&mut self, s: &str, min: u64, max: u64) -> Option<u64> {
        numbers::read_unsigned(self, s, min, max, false)
    }

    pub(super) fn read_int(&mut self, s: &str, min: i64, max: i64) -> Option<i64> {
        numbers::read_int(self, s, min, max, false)
    }

    pub(super) fn read_timer(&mut self, s: &str, min_us: u64, max_us: u64) -> Option<u64> {
        numbers::read_timer(self, s, min_us, max_us, false)
    }
}

impl Report for Ctx<'_> {
    fn report(&mut self, class: ErrClass, msg: String) {
        let pos = self.pos();
        self.diags.report(&pos, class, msg);
    }
    fn config_test(&self) -> bool {
        self.config_test
    }
}

/// keepalived's `check_true_false()`.
pub(super) fn bool_word(v: &str) -> Option<bool> {
    match v {
        "true" | "on" | "yes" => Some(true),
        "false" | "off" | "no" => Some(false),
        _ => None,
    }
}

/// What the VRRP readers' tests share: a host with one interface, `eth0`,
/// and a line split in words.
#[cfg(test)]
pub mod testing {
    /// A host whose only interface is `eth0`.
    pub struct Eth0;
    impl crate::config::validate::Host for Eth0 {
        fn interface_exists(&self, n: &str) -> bool {
            n == "eth0"
        }
    }

    /// `s` split on whitespace.
    pub fn w(s: &str) -> Vec<String> {
        s.split_whitespace().map(str::to_string).collect()
    }

    /// Each (line, message) was reported.
    pub fn assert_reported(diags: &crate::config::diag::Diagnostics, want: &[(usize, &str)]) {
        let lines: Vec<(usize, String)> = diags
            .items()
            .iter()
            .map(|d| (d.line, d.message.clone()))
            .collect();
        for (line, msg) in want {
            assert!(
                lines.iter().any(|(l, m)| l == line && m == msg),
                "{line}: {msg:?} in {lines:?}"
            );
        }
    }
}
