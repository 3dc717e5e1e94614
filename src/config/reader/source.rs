//! Where the configuration's text comes from: the file system or memory
//! ([`SourceLoader`]), and `include` with its globs, brace alternatives and
//! checks (keepalived's `check_include()`, `open_and_check_glob()`).

use super::*;

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
        use std::io::Read;
        use std::os::unix::fs::OpenOptionsExt;
        // Non-blocking, and regular files only: a FIFO or a device put in
        // place of a configuration file must not hang the loader.
        let mut f = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(nix::libc::O_NONBLOCK)
            .open(path)
            .map_err(|e| e.to_string())?;
        let meta = f.metadata().map_err(|e| e.to_string())?;
        if !meta.is_file() {
            return Err("not a regular file".into());
        }
        let mut data = Vec::with_capacity(meta.len() as usize);
        f.read_to_end(&mut data).map_err(|e| e.to_string())?;
        Ok(data)
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

/// A file being read: where it stands, and the files that included it.
pub(super) struct Source {
    pub(super) name: Arc<str>,
    pub(super) dir: PathBuf,
    /// The file's text, or its bytes when it is not UTF-8 (read lossily);
    /// the text shared with its scan ahead, not copied.
    pub(super) data: Result<Arc<String>, Vec<u8>>,
    /// A large file's lines, scanned ahead.
    pub(super) prelex: Option<super::prelex::Prelex>,
    pub(super) offset: usize,
    pub(super) line_no: usize,
    pub(super) saved_include_check: IncludeCheck,
    /// The file and those that included it, outermost first: an include
    /// of one of them is a loop.
    pub(super) chain: Arc<[PathBuf]>,
}

impl<'l> Reader<'l> {
    /// Opens every file a pattern names, pushing them so that the first match
    /// is read first. A fatal include problem stops all reading.
    pub(super) fn open_pattern(&mut self, pattern: &str, base: &Path, check: IncludeCheck) {
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
        let chain: Vec<PathBuf> = self
            .files
            .last()
            .map(|s| s.chain.to_vec())
            .unwrap_or_default();
        for (path, shown) in all {
            // keepalived opens an including file's includes while it holds
            // it open, so a loop ends when it runs out of descriptors, with
            // this line; it is reported at once instead (and a glob that
            // matches its own file no longer multiplies without end).
            if chain.contains(&path) {
                let msg = format!(
                    "Configuration file '{shown}' open problem (Too many open files) - skipping"
                );
                let pos = self.current_pos();
                self.diags.push(
                    &pos,
                    ErrClass::Ok,
                    msg,
                    None,
                    Some(format!("include loop: '{shown}' is already being read")),
                );
                continue;
            }
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
            let mut c = chain.clone();
            c.push(path.clone());
            let data = match String::from_utf8(data) {
                Ok(t) => Ok(Arc::new(t)),
                Err(e) => Err(e.into_bytes()),
            };
            let prelex = match &data {
                Ok(t) if t.len() >= super::prelex::MIN_BYTES => {
                    super::prelex::Prelex::start(t.clone())
                }
                _ => None,
            };
            self.files.push(Source {
                name: Arc::from(shown.as_str()),
                dir,
                data,
                prelex,
                offset: 0,
                line_no: 0,
                saved_include_check: saved,
                chain: c.into(),
            });
        }
    }

    /// Reports an include problem; false when it is fatal and reading stopped.
    pub(super) fn include_problem(&mut self, fatal: bool, msg: String) -> bool {
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

    pub(super) fn check_include(&mut self, buf: &str) -> bool {
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
