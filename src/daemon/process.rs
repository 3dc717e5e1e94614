//! The process around the daemon, as keepalived 2.2.7 presents it to an
//! operator: pid files at its paths with its lock ("already running"),
//! daemonising unless `-n`, systemd's notify protocol for `Type=notify`
//! units, and where logs go (syslog with keepalived's idents and facility,
//! the console with `-l`, a file with `-g`).
//!
//! Outermost I/O shell, used by the binary before and around
//! [`crate::daemon::run`].

use crate::cli::Options;
use crate::config::model::Config;
use crate::config::Loaded;
use std::fs::File;
use std::io::Write;
use std::os::unix::net::UnixDatagram;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Mutex;

/// keepalived's run directory.
pub const RUN_DIR: &str = "/run";

/// The network namespace the daemon runs in: `-s`, else the file's
/// `net_namespace`.
pub fn namespace(opts: &Options, cfg: Option<&Config>) -> Option<String> {
    opts.namespace
        .clone()
        .or_else(|| cfg.and_then(|c| c.root.net_namespace.clone()))
}

/// Where the pid files go: `/run`, or `/run/keepalived/` with
/// `use_pid_dir` or an `instance`, or `/run/keepalived/NAMESPACE/` in a
/// namespace (keepalived bind-mounts that directory over
/// `/run/keepalived/` in a mount namespace of its own: seen from the
/// host, its files are there).
fn pid_dir(opts: &Options, cfg: Option<&Config>) -> PathBuf {
    let root = cfg.map(|c| &c.root);
    if let Some(ns) = namespace(opts, cfg) {
        Path::new(RUN_DIR).join("keepalived").join(ns)
    } else if root.is_some_and(|r| r.use_pid_dir || r.instance.is_some()) {
        Path::new(RUN_DIR).join("keepalived")
    } else {
        PathBuf::from(RUN_DIR)
    }
}

/// The pid files keepalived would write: the parent's and the checker's
/// (`-p`, `-c`; under `/run/keepalived/` with `use_pid_dir` or an
/// `instance`, whose name is appended; see [`pid_dir`]).
pub fn pid_paths(opts: &Options, cfg: Option<&Config>) -> (PathBuf, PathBuf) {
    let root = cfg.map(|c| &c.root);
    let instance = root.and_then(|r| r.instance.clone());
    let dir = pid_dir(opts, cfg);
    let name = |base: &str| match &instance {
        Some(i) => dir.join(format!("{base}_{i}.pid")),
        None => dir.join(format!("{base}.pid")),
    };
    (
        opts.pid
            .clone()
            .map_or_else(|| name("keepalived"), PathBuf::from),
        opts.checkers_pid
            .clone()
            .map_or_else(|| name("checkers"), PathBuf::from),
    )
}

/// The VRRP side's pid file (`-r`, default `/run/vrrp.pid`, placed and
/// named as the others).
pub fn vrrp_pid_path(opts: &Options, cfg: &Config) -> PathBuf {
    if let Some(p) = &opts.vrrp_pid {
        return PathBuf::from(p);
    }
    let r = &cfg.root;
    let dir = pid_dir(opts, Some(cfg));
    match &r.instance {
        Some(i) => dir.join(format!("vrrp_{i}.pid")),
        None => dir.join("vrrp.pid"),
    }
}

/// The BFD side's pid file (`-b`, default `/run/bfd.pid`, placed and
/// named as the others).
pub fn bfd_pid_path(opts: &Options, cfg: &Config) -> PathBuf {
    if let Some(p) = &opts.bfd_pid {
        return PathBuf::from(p);
    }
    let dir = pid_dir(opts, Some(cfg));
    match &cfg.root.instance {
        Some(i) => dir.join(format!("bfd_{i}.pid")),
        None => dir.join("bfd.pid"),
    }
}

/// Why a pid file could not be taken.
#[derive(Debug, thiserror::Error)]
pub enum PidFileError {
    /// Another process holds the lock.
    #[error("daemon is already running (pid file {0} is locked)")]
    Running(PathBuf),
    /// The file could not be made or written.
    #[error("cannot write pid file {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
}

/// A pid file held under an open-file-description write lock, removed
/// when dropped. The lock is inherited across the daemonising fork.
#[derive(Debug)]
pub struct PidFile {
    path: PathBuf,
    file: File,
}

impl PidFile {
    /// Creates and locks `path` (mode 0644), as `create_pidfile()` does.
    pub fn lock(path: &Path) -> Result<PidFile, PidFileError> {
        use nix::fcntl::{fcntl, FcntlArg};
        use std::os::unix::fs::OpenOptionsExt;
        let io = |source| PidFileError::Io {
            path: path.to_path_buf(),
            source,
        };
        if let Some(d) = path.parent() {
            std::fs::create_dir_all(d).map_err(io)?;
        }
        // A symlink or anything but a regular file at the path was planted
        // (pid files are ours): it is removed, never written through.
        if let Ok(m) = path.symlink_metadata() {
            if !m.file_type().is_file() {
                std::fs::remove_file(path).map_err(io)?;
            }
        }
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o644)
            .custom_flags(nix::libc::O_NOFOLLOW | nix::libc::O_NONBLOCK)
            .open(path)
            .map_err(io)?;
        // rw-r--r--, as keepalived's are, whatever the umask.
        use std::os::unix::fs::PermissionsExt;
        file.set_permissions(std::fs::Permissions::from_mode(0o644))
            .map_err(io)?;
        let lock = nix::libc::flock {
            l_type: nix::libc::F_WRLCK as i16,
            l_whence: nix::libc::SEEK_SET as i16,
            l_start: 0,
            l_len: 0,
            l_pid: 0,
        };
        match fcntl(&file, FcntlArg::F_OFD_SETLK(&lock)) {
            Ok(_) => Ok(PidFile {
                path: path.to_path_buf(),
                file,
            }),
            Err(nix::errno::Errno::EAGAIN | nix::errno::Errno::EACCES) => {
                Err(PidFileError::Running(path.to_path_buf()))
            }
            Err(e) => Err(io(e.into())),
        }
    }

    /// Writes our (current) pid.
    pub fn write_pid(&mut self) -> Result<(), PidFileError> {
        let pid = std::process::id();
        let io = |source| PidFileError::Io {
            path: self.path.clone(),
            source,
        };
        self.file.set_len(0).map_err(io)?;
        use std::io::Seek;
        self.file.rewind().map_err(io)?;
        writeln!(self.file, "{pid}").map_err(io)?;
        Ok(())
    }
}

impl Drop for PidFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// systemd's notify socket (`NOTIFY_SOCKET`), if we were started with one.
#[derive(Debug)]
pub struct Notify {
    target: Option<(UnixDatagram, std::os::unix::net::SocketAddr)>,
}

impl Notify {
    /// From the environment; a no-op without `NOTIFY_SOCKET`.
    pub fn from_env() -> Notify {
        use std::os::linux::net::SocketAddrExt;
        let target = std::env::var("NOTIFY_SOCKET").ok().and_then(|p| {
            let addr = match p.strip_prefix('@') {
                Some(abs) => std::os::unix::net::SocketAddr::from_abstract_name(abs.as_bytes()),
                None => std::os::unix::net::SocketAddr::from_pathname(&p),
            }
            .ok()?;
            Some((UnixDatagram::unbound().ok()?, addr))
        });
        Notify { target }
    }

    /// Tells nobody (tests, and where systemd is not asked).
    pub fn none() -> Notify {
        Notify { target: None }
    }

    fn send(&self, msg: &str) {
        if let Some((s, addr)) = &self.target {
            if let Err(e) = s.send_to_addr(msg.as_bytes(), addr) {
                log::warn!("sd_notify: {e}");
            }
        }
    }

    /// Startup complete.
    pub fn ready(&self) {
        self.send("READY=1\nSTATUS=Running");
    }

    /// A reload starts (with the monotonic time systemd 253+ asks for).
    pub fn reloading(&self) {
        let us = nix::time::clock_gettime(nix::time::ClockId::CLOCK_MONOTONIC)
            .map(|t| t.tv_sec() as u64 * 1_000_000 + t.tv_nsec() as u64 / 1000)
            .unwrap_or(0);
        self.send(&format!("RELOADING=1\nMONOTONIC_USEC={us}"));
    }

    /// Stopping.
    pub fn stopping(&self) {
        self.send("STOPPING=1");
    }
}

/// keepalived's syslog facility names for `-S` (0-7 = local0-7).
pub fn facility(s: &str) -> Option<syslog::Facility> {
    use syslog::Facility::*;
    Some(match s {
        "0" | "local0" => LOG_LOCAL0,
        "1" | "local1" => LOG_LOCAL1,
        "2" | "local2" => LOG_LOCAL2,
        "3" | "local3" => LOG_LOCAL3,
        "4" | "local4" => LOG_LOCAL4,
        "5" | "local5" => LOG_LOCAL5,
        "6" | "local6" => LOG_LOCAL6,
        "7" | "local7" => LOG_LOCAL7,
        "user" => LOG_USER,
        "daemon" => LOG_DAEMON,
        _ => return None,
    })
}

type Syslog = syslog::Logger<syslog::LoggerBackend, syslog::Formatter3164>;

/// Sends log records to the console, syslog and a file, as the options ask.
pub struct Logger {
    console: Option<env_logger::Logger>,
    syslog: Option<Mutex<Syslog>>,
    /// The VRRP side's lines go under keepalived's `Keepalived_vrrp` ident.
    vrrp_syslog: Option<Mutex<Syslog>>,
    /// The BFD side's go under `Keepalived_bfd`.
    bfd_syslog: Option<Mutex<Syslog>>,
    file: Option<Mutex<File>>,
    level: log::LevelFilter,
}

impl log::Log for Logger {
    fn enabled(&self, m: &log::Metadata) -> bool {
        m.level() <= self.level
    }

    fn log(&self, r: &log::Record) {
        if !self.enabled(r.metadata()) {
            return;
        }
        if let Some(c) = &self.console {
            if c.matches(r) {
                c.log(r);
            }
        }
        let msg = r.args().to_string();
        let syslog = if is_vrrp(r.target()) {
            self.vrrp_syslog.as_ref().or(self.syslog.as_ref())
        } else if is_bfd(r.target()) {
            self.bfd_syslog.as_ref().or(self.syslog.as_ref())
        } else {
            self.syslog.as_ref()
        };
        if let Some(s) = syslog {
            if let Ok(mut s) = s.lock() {
                let _ = match r.level() {
                    log::Level::Error => s.err(&msg),
                    log::Level::Warn => s.warning(&msg),
                    log::Level::Info => s.info(&msg),
                    _ => s.debug(&msg),
                };
            }
        }
        if let Some(f) = &self.file {
            if let Ok(mut f) = f.lock() {
                let _ = writeln!(f, "{msg}");
            }
        }
    }

    fn flush(&self) {}
}

/// Whether a log record comes from the VRRP side (its modules).
pub fn is_vrrp(target: &str) -> bool {
    target.starts_with("keepalived::vrrp") || target.starts_with("keepalived::daemon::vrrp")
}

/// Whether a log record comes from the BFD side (its modules).
pub fn is_bfd(target: &str) -> bool {
    target.starts_with("keepalived::bfd") || target.starts_with("keepalived::daemon::bfd")
}

/// keepalived's `make_syslog_ident()`: `NAME`, then `_NAMESPACE` and
/// `_INSTANCE` when they are set.
pub fn make_ident(name: &str, namespace: Option<&str>, instance: Option<&str>) -> String {
    let mut s = name.to_string();
    for part in [namespace, instance].into_iter().flatten() {
        s.push('_');
        s.push_str(part);
    }
    s
}

/// The syslog ident for the VRRP side.
pub fn vrrp_ident(namespace: Option<&str>, cfg_instance: Option<&str>) -> String {
    make_ident("Keepalived_vrrp", namespace, cfg_instance)
}

/// The syslog ident for the checker side.
pub fn ident(namespace: Option<&str>, cfg_instance: Option<&str>) -> String {
    make_ident("Keepalived_healthcheckers", namespace, cfg_instance)
}

/// keepalived's `set_namespaces()`: this thread, and every thread and
/// process it starts from now on, into `/run/netns/NAME`. Called before
/// any socket, netlink handle or IPVS family is opened and before any
/// other thread exists.
pub fn enter_namespace(name: &str) -> Result<(), String> {
    let path = Path::new("/run/netns").join(name);
    let f = File::open(&path).map_err(|e| format!("Failed to open {}: {e}", path.display()))?;
    nix::sched::setns(f, nix::sched::CloneFlags::CLONE_NEWNET)
        .map_err(|e| format!("setns() failed with error {e}"))?;
    let _ = ENTERED.set(name.to_string());
    Ok(())
}

/// The namespace [`enter_namespace`] entered: it cannot change while the
/// daemon runs.
static ENTERED: std::sync::OnceLock<String> = std::sync::OnceLock::new();

/// The namespace the daemon runs in, if it entered one.
pub fn running_namespace() -> Option<&'static str> {
    ENTERED.get().map(String::as_str)
}

/// Installs the logger for the daemon: syslog unless `-G`, the console
/// with `-l`, a file with `-g` (under /tmp when relative, with `_check`
/// before the extension, as keepalived's checker names it).
pub fn init_logging(opts: &Options, ident: &str) {
    init_logging_with(opts, ident, None, None)
}

/// [`init_logging`] with the VRRP and BFD sides' idents for their own
/// lines.
pub fn init_logging_with(
    opts: &Options,
    ident: &str,
    vrrp_ident: Option<&str>,
    bfd_ident: Option<&str>,
) {
    let logger = build_logger(opts, ident, [vrrp_ident, bfd_ident], None);
    let level = logger.level;
    if log::set_boxed_logger(Box::new(logger)).is_ok() {
        log::set_max_level(level);
    }
}

/// The logger [`init_logging_with`] installs; syslog through `syslog_at`
/// instead of the system's socket when given (tests).
pub fn build_logger(
    opts: &Options,
    ident: &str,
    [vrrp_ident, bfd_ident]: [Option<&str>; 2],
    syslog_at: Option<&Path>,
) -> Logger {
    let level = if opts.log_detail > 0 {
        log::LevelFilter::Debug
    } else {
        log::LevelFilter::Info
    };
    let console = opts.log_console.then(|| {
        env_logger::Builder::from_env(
            env_logger::Env::default().default_filter_or(level.as_str().to_lowercase()),
        )
        .format_timestamp(None)
        .format_target(false)
        .build()
    });
    let open_syslog = |ident: &str| {
        if opts.no_syslog {
            return None;
        }
        let facility = opts
            .log_facility
            .as_deref()
            .and_then(facility)
            .unwrap_or(syslog::Facility::LOG_DAEMON);
        let f = syslog::Formatter3164 {
            facility,
            hostname: None,
            process: ident.to_string(),
            pid: std::process::id(),
        };
        match syslog_at {
            Some(p) => syslog::unix_custom(f, p),
            None => syslog::unix(f),
        }
        .ok()
        .map(Mutex::new)
    };
    let syslog = open_syslog(ident);
    let vrrp_syslog = vrrp_ident.and_then(open_syslog);
    let bfd_syslog = bfd_ident.and_then(open_syslog);
    let file = opts.log_file.as_ref().and_then(|f| {
        let name = if f.is_empty() {
            "keepalived.log"
        } else {
            f.as_str()
        };
        let p = Path::new(name);
        let p = if p.is_absolute() {
            p.to_path_buf()
        } else {
            std::env::temp_dir().join(p)
        };
        let stem = p
            .file_stem()
            .map(|s| s.to_string_lossy().to_string())
            .unwrap_or_default();
        let p = match p.extension() {
            Some(e) => p.with_file_name(format!("{stem}_check.{}", e.to_string_lossy())),
            None => p.with_file_name(format!("{stem}_check")),
        };
        // keepalived's fopen_safe(path, "a"): never through a symlink.
        use std::os::unix::fs::OpenOptionsExt;
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .custom_flags(nix::libc::O_NOFOLLOW | nix::libc::O_NONBLOCK)
            .open(p)
            .ok()
            .map(Mutex::new)
    });
    Logger {
        console,
        syslog,
        vrrp_syslog,
        bfd_syslog,
        file,
        level,
    }
}

/// The daemon: pid files locked (keepalived's "already running"), then
/// into the background unless `-n`, then logs, then the loop.
pub fn start(opts: &Options, loaded: Loaded) -> ExitCode {
    apply_umask(opts, &loaded.config);
    // Before anything else: every socket, netlink handle and IPVS family
    // the daemon opens is the namespace's.
    if let Some(ns) = namespace(opts, Some(&loaded.config)) {
        if let Err(e) = enter_namespace(&ns) {
            eprintln!("{e}");
            eprintln!("Unable to set network namespace {ns} - exiting");
            return ExitCode::from(1);
        }
    }
    // A dry run takes no pid files unless asked to, so that it can run
    // beside a real keepalived.
    let mut pidfiles = Vec::new();
    let wanted = super::shell::subsystems(opts, &loaded.config);
    if !opts.dry_run
        || opts.pid.is_some()
        || opts.checkers_pid.is_some()
        || opts.vrrp_pid.is_some()
        || opts.bfd_pid.is_some()
    {
        let (main, checker) = pid_paths(opts, Some(&loaded.config));
        let mut paths = vec![main];
        if wanted.checker {
            paths.push(checker);
        }
        if wanted.vrrp {
            paths.push(vrrp_pid_path(opts, &loaded.config));
        }
        if wanted.bfd {
            paths.push(bfd_pid_path(opts, &loaded.config));
        }
        for p in paths {
            match PidFile::lock(&p) {
                Ok(f) => pidfiles.push(f),
                Err(e) => {
                    eprintln!("{e}");
                    return ExitCode::from(1);
                }
            }
        }
    }
    if !opts.dont_fork {
        if let Err(e) = nix::unistd::daemon(false, false) {
            eprintln!("cannot daemonise: {e}");
            return ExitCode::from(1);
        }
    }
    // From the moment the pid file names us, a SIGTERM or SIGHUP must be
    // acted on, not kill us with the pid file left: they wait, blocked,
    // until the shell has its handlers (super::signals::unblock).
    if let Err(e) = super::signals::block() {
        eprintln!("cannot block signals: {e}");
        return ExitCode::from(1);
    }
    for f in &mut pidfiles {
        if let Err(e) = f.write_pid() {
            eprintln!("{e}");
            return ExitCode::from(1);
        }
    }
    let inst = loaded.config.root.instance.as_deref();
    let ns = namespace(opts, Some(&loaded.config));
    init_logging_with(
        opts,
        &ident(ns.as_deref(), inst),
        wanted
            .vrrp
            .then(|| vrrp_ident(ns.as_deref(), inst))
            .as_deref(),
        wanted
            .bfd
            .then(|| make_ident("Keepalived_bfd", ns.as_deref(), inst))
            .as_deref(),
    );
    log::info!(
        "Starting Keepalived v2.2.7 compatible (keepalived-rs {})",
        env!("CARGO_PKG_VERSION")
    );
    if ns.is_some() || inst.is_some() {
        log::info!(
            "Changing syslog ident to {}",
            make_ident("Keepalived", ns.as_deref(), inst)
        );
    }
    let code = super::run(opts, loaded);
    drop(pidfiles);
    code
}

/// Descriptors kept for everything but the checks (listeners, netlink,
/// scripts' pipes, logs).
pub const NOFILE_SPARE: u64 = 128;

/// keepalived's `set_max_file_limit()`: raises `RLIMIT_NOFILE` so that
/// `checks` checks, each with a socket of its own at once, fit with
/// [`NOFILE_SPARE`] to spare. Root raises the hard limit too; otherwise the
/// soft limit goes as far as the hard one allows. Never lowers it.
pub fn raise_nofile(checks: usize) {
    use nix::sys::resource::{getrlimit, setrlimit, Resource};
    let want = checks as u64 + NOFILE_SPARE;
    let Ok((soft, hard)) = getrlimit(Resource::RLIMIT_NOFILE) else {
        return;
    };
    if soft >= want {
        return;
    }
    let root = nix::unistd::geteuid().is_root();
    let new_hard = if root { hard.max(want) } else { hard };
    let new_soft = want.min(new_hard);
    match setrlimit(Resource::RLIMIT_NOFILE, new_soft, new_hard) {
        Ok(()) => {
            log::info!("open file limit raised from {soft} to {new_soft} for {checks} check(s)")
        }
        Err(e) => log::warn!("cannot raise the open file limit to {want}: {e}"),
    }
    if new_soft < want {
        log::warn!(
            "open file limit {new_soft} is below the {want} that {checks} check(s) may need"
        );
    }
}

/// keepalived's file creation mask unless `-u` or `umask` says otherwise:
/// nothing created is readable by others, or executable.
pub const DEFAULT_UMASK: u32 = 0o177;

/// A mask as keepalived reads one: a number (C's base 0: `0` octal, `0x`
/// hex) or `|`-joined names (`IWGRP|IWOTH`).
pub fn parse_umask(s: &str) -> Option<u32> {
    let s = s.trim();
    if s.starts_with(|c: char| c.is_ascii_digit()) {
        let (digits, radix) = if let Some(h) = s.strip_prefix("0x").or(s.strip_prefix("0X")) {
            (h, 16)
        } else if s.len() > 1 && s.starts_with('0') {
            (&s[1..], 8)
        } else {
            (s, 10)
        };
        return u32::from_str_radix(digits, radix)
            .ok()
            .filter(|m| *m <= 0o777);
    }
    let mut m = 0;
    for name in s.split('|').map(str::trim) {
        m |= match name {
            "IRUSR" => 0o400,
            "IWUSR" => 0o200,
            "IXUSR" => 0o100,
            "IRGRP" => 0o040,
            "IWGRP" => 0o020,
            "IXGRP" => 0o010,
            "IROTH" => 0o004,
            "IWOTH" => 0o002,
            "IXOTH" => 0o001,
            _ => return None,
        };
    }
    Some(m)
}

/// Sets the process's file creation mask: `-u`, else the configuration's
/// `umask`, else keepalived's default.
pub fn apply_umask(opts: &Options, cfg: &Config) {
    let configured = cfg.global_defs.umask.clone();
    let mask = match opts.umask.as_deref().or(configured.as_deref()) {
        Some(s) => parse_umask(s).unwrap_or_else(|| {
            log::warn!("invalid umask {s:?}; using {DEFAULT_UMASK:04o}");
            DEFAULT_UMASK
        }),
        None => DEFAULT_UMASK,
    };
    nix::sys::stat::umask(nix::sys::stat::Mode::from_bits_truncate(mask));
}

#[cfg(test)]
mod umask_tests {
    use super::parse_umask;

    #[test]
    fn umask_forms_as_keepalived_reads_them() {
        assert_eq!(parse_umask("0027"), Some(0o027));
        assert_eq!(parse_umask("0x12"), Some(0o022));
        assert_eq!(parse_umask("18"), Some(0o022));
        assert_eq!(parse_umask("IWGRP|IWOTH"), Some(0o022));
        assert_eq!(parse_umask("IWGRP|bad"), None);
        assert_eq!(parse_umask("01000"), None);
    }
}

#[cfg(test)]
mod ident_tests {
    use super::*;
    use log::Log;

    /// Over a real datagram socket: the VRRP side's lines (its modules'
    /// targets) go out as `Keepalived_vrrp`, the checker's as
    /// `Keepalived_healthcheckers`, as keepalived's two children log.
    #[test]
    fn vrrp_and_bfd_lines_go_to_syslog_under_their_idents() {
        let dir = std::env::temp_dir().join(format!("kr-ident-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("log.sock");
        let sink = std::os::unix::net::UnixDatagram::bind(&path).unwrap();
        sink.set_read_timeout(Some(std::time::Duration::from_secs(2)))
            .unwrap();
        let opts = Options::default();
        let logger = build_logger(
            &opts,
            &ident(None, None),
            [
                Some(&vrrp_ident(None, None)),
                Some(&make_ident("Keepalived_bfd", None, None)),
            ],
            Some(&path),
        );
        let line = |target: &str, msg: &str| {
            logger.log(
                &log::Record::builder()
                    .args(format_args!("{msg}"))
                    .level(log::Level::Info)
                    .target(target)
                    .build(),
            );
            let mut b = [0u8; 512];
            let n = sink.recv(&mut b).unwrap();
            String::from_utf8_lossy(&b[..n]).to_string()
        };
        let pid = std::process::id();
        // The targets are module paths: this crate's are `keepalived::…`.
        assert_eq!(module_path!(), "keepalived::daemon::process::ident_tests");
        let v = line("keepalived::vrrp::run", "(VI_1) Entering MASTER STATE");
        assert!(
            v.contains(&format!(
                "Keepalived_vrrp[{pid}]: (VI_1) Entering MASTER STATE"
            )),
            "{v}"
        );
        let d = line("keepalived::daemon::vrrp::worker", "x");
        assert!(d.contains(&format!("Keepalived_vrrp[{pid}]: x")), "{d}");
        let c = line("keepalived::check::engine", "Activating healthchecker");
        assert!(
            c.contains(&format!("Keepalived_healthcheckers[{pid}]: Activating")),
            "{c}"
        );
        let b = line("keepalived::bfd::scheduler", "(to_b) Entering Up state");
        assert!(
            b.contains(&format!("Keepalived_bfd[{pid}]: (to_b) Entering Up state")),
            "{b}"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
