//! Reading keepalived.conf: the first part of the pipeline (files → typed
//! [`model::Config`]), with every problem collected in [`diag::Diagnostics`].
//!
//! Stages, each its own module: [`lexer`] (comments, words, braces) →
//! [`reader`] (includes, `@`, `$`, `~SEQ`) → [`parser`] with the tables of
//! [`keywords`] and the handlers (`handlers/`) → [`validate`] (keepalived's fix-ups).
//! Pure apart from the file system and host look-ups, which are injected.

pub mod address;
pub mod diag;
pub mod fx;
mod handlers;
mod keyword_table;
pub mod keywords;
pub mod lexer;
pub mod micros;
pub mod model;
pub mod numbers;
pub mod overlay;
pub mod parser;
pub mod rare;
pub mod reader;
pub mod script_security;
pub mod validate;
mod violation;
pub mod vrrp;

use diag::Diagnostics;
use model::Config;
use reader::{IncludeCheck, Reader, SourceLoader};
use std::path::Path;
use std::sync::Arc;

/// How to load a configuration.
#[derive(Debug, Clone)]
pub struct LoadOptions {
    /// The config-id for `@id` lines (`-i`, default: host name up to the first dot).
    pub config_id: String,
    /// `-e/--all-config`: every include must resolve.
    pub all_config: bool,
    /// `-t`: numbers with trailing garbage are errors, as in keepalived's config test.
    pub config_test: bool,
}

impl Default for LoadOptions {
    fn default() -> Self {
        LoadOptions {
            config_id: default_config_id(),
            all_config: false,
            config_test: false,
        }
    }
}

/// keepalived's default config-id: the host name up to the first dot.
pub fn default_config_id() -> String {
    nix::unistd::gethostname()
        .ok()
        .and_then(|h| h.into_string().ok())
        .map(|h| h.split('.').next().unwrap_or("").to_string())
        .unwrap_or_default()
}

/// A loaded configuration and everything wrong with it.
#[derive(Debug, Clone)]
pub struct Loaded {
    /// The resolved model (what keepalived would run with).
    pub config: Config,
    /// Every problem found.
    pub diagnostics: Diagnostics,
    /// Files read, in order.
    pub files: Vec<std::path::PathBuf>,
}

impl Loaded {
    /// The exit code `keepalived -t` gives for this load.
    pub fn config_test_exit_code(&self) -> i32 {
        self.diagnostics.config_test_exit_code()
    }
}

/// Loads `path` through `loader`, checking the host with `host`.
pub fn load_with(
    loader: &dyn SourceLoader,
    host: &dyn validate::Host,
    path: &Path,
    opts: &LoadOptions,
) -> Loaded {
    let check = if opts.all_config {
        IncludeCheck::ALL
    } else {
        IncludeCheck::default()
    };
    let mut reader = Reader::new(loader, path, &opts.config_id, check);
    let mut p = parser::Parser::new(&mut reader, opts.config_test);
    p.run();
    let mut config = std::mem::take(&mut p.cfg);
    config.default_user_ok = match p.default_user {
        parser::DefaultUser::Unresolved => None,
        parser::DefaultUser::Resolved => Some(true),
        parser::DefaultUser::Failed => Some(false),
    };
    let mut diagnostics = std::mem::take(&mut reader.diags);
    if !diagnostics.fatal_include {
        let file: Arc<str> = Arc::from(path.to_string_lossy().as_ref());
        validate::validate(&mut config, &mut diagnostics, &file, host);
    } else {
        validate::resolve(&mut config);
    }
    diagnostics.finish();
    Loaded {
        config,
        diagnostics,
        files: reader.files_read.clone(),
    }
}

/// Loads a configuration held in a string (as file `/keepalived.conf`, with
/// config-id `test`): for tests and tools that build configs in memory.
pub fn load_str(text: &str) -> Loaded {
    let path = Path::new("/keepalived.conf");
    let mut loader = reader::MemLoader::default();
    loader.files.insert(path.into(), text.as_bytes().to_vec());
    let opts = LoadOptions {
        config_id: "test".into(),
        all_config: false,
        config_test: false,
    };
    load_with(&loader, &validate::RealHost, path, &opts)
}

/// Loads `path` from the file system for this host.
pub fn load(path: &Path, opts: &LoadOptions) -> Loaded {
    load_with(&reader::FsLoader, &validate::RealHost, path, opts)
}
