//! keepalived 2.2.7's command line, parsed as its `getopt_long()` does:
//! short options may be clustered, `-t`/`-g`/`-M` take an optional attached
//! argument, long options take `=VALUE` or the next word.
//!
//! The shell of the pipeline: `src/bin/keepalived.rs` acts on [`Options`].
//! Parsing is pure so the option table is tested without running anything.

use std::fmt;

/// Whether an option takes an argument.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Arg {
    None,
    Required,
    Optional,
}

/// (short, long, argument kind).
const OPTIONS: &[(Option<char>, &str, Arg)] = &[
    (Some('f'), "use-file", Arg::Required),
    (Some('P'), "vrrp", Arg::None),
    (Some('C'), "check", Arg::None),
    (Some('B'), "no_bfd", Arg::None),
    (None, "all", Arg::None),
    (Some('l'), "log-console", Arg::None),
    (Some('D'), "log-detail", Arg::None),
    (Some('S'), "log-facility", Arg::Required),
    (Some('g'), "log-file", Arg::Optional),
    (None, "flush-log-file", Arg::None),
    (Some('G'), "no-syslog", Arg::None),
    (Some('u'), "umask", Arg::Required),
    (Some('X'), "release-vips", Arg::None),
    (Some('V'), "dont-release-vrrp", Arg::None),
    (Some('I'), "dont-release-ipvs", Arg::None),
    (Some('R'), "dont-respawn", Arg::None),
    (Some('n'), "dont-fork", Arg::None),
    (Some('d'), "dump-conf", Arg::None),
    (Some('p'), "pid", Arg::Required),
    (Some('r'), "vrrp_pid", Arg::Required),
    (Some('c'), "checkers_pid", Arg::Required),
    (Some('b'), "bfd_pid", Arg::Required),
    (Some('T'), "genhash", Arg::None),
    (Some('a'), "address-monitoring", Arg::None),
    (Some('x'), "snmp", Arg::None),
    (Some('A'), "snmp-agent-socket", Arg::Required),
    (Some('s'), "namespace", Arg::Required),
    (Some('m'), "core-dump", Arg::None),
    (Some('M'), "core-dump-pattern", Arg::Optional),
    (Some('e'), "all-config", Arg::None),
    (Some('i'), "config-id", Arg::Required),
    (None, "signum", Arg::Required),
    (Some('t'), "config-test", Arg::Optional),
    (None, "config-fd", Arg::Required),
    (Some('v'), "version", Arg::None),
    (Some('h'), "help", Arg::None),
    (None, "dump-json", Arg::None),
    (None, "dry-run", Arg::None),
    (None, "no-shared-checks", Arg::None),
    (None, "checker-threads", Arg::Required),
    (None, "ipvs-save", Arg::None),
    (None, "status", Arg::None),
    (None, "json", Arg::None),
    (None, "plan", Arg::None),
    (None, "status-socket", Arg::Required),
    (None, "control", Arg::Required),
];

/// The parsed command line. Field names follow keepalived's long options.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Options {
    /// `-f`.
    pub use_file: Option<String>,
    /// `-P`.
    pub vrrp: bool,
    /// `-C`.
    pub check: bool,
    /// `-B`.
    pub no_bfd: bool,
    /// `--all`.
    pub all: bool,
    /// `-l`.
    pub log_console: bool,
    /// `-D` (count).
    pub log_detail: u32,
    /// `-S`.
    pub log_facility: Option<String>,
    /// `-g[FILE]` (`Some("")` = default name).
    pub log_file: Option<String>,
    /// `--flush-log-file`.
    pub flush_log_file: bool,
    /// `-G`.
    pub no_syslog: bool,
    /// `-u`.
    pub umask: Option<String>,
    /// `-X`.
    pub release_vips: bool,
    /// `-V`.
    pub dont_release_vrrp: bool,
    /// `-I`.
    pub dont_release_ipvs: bool,
    /// `-R`.
    pub dont_respawn: bool,
    /// `-n`.
    pub dont_fork: bool,
    /// `-d`.
    pub dump_conf: bool,
    /// `-p`.
    pub pid: Option<String>,
    /// `-r`.
    pub vrrp_pid: Option<String>,
    /// `-c`.
    pub checkers_pid: Option<String>,
    /// `-b`.
    pub bfd_pid: Option<String>,
    /// `-T`.
    pub genhash: bool,
    /// `-a`.
    pub address_monitoring: bool,
    /// `-x`.
    pub snmp: bool,
    /// `-A`.
    pub snmp_agent_socket: Option<String>,
    /// `-s`.
    pub namespace: Option<String>,
    /// `-m`.
    pub core_dump: bool,
    /// `-M[PAT]`.
    pub core_dump_pattern: Option<String>,
    /// `-e`.
    pub all_config: bool,
    /// `-i`.
    pub config_id: Option<String>,
    /// `--signum`.
    pub signum: Option<String>,
    /// `-t[FILE]` (`Some("")` = stderr).
    pub config_test: Option<String>,
    /// `--config-fd`.
    pub config_fd: Option<String>,
    /// `-v`.
    pub version: bool,
    /// `-h`.
    pub help: bool,
    /// `--dump-json` (extension): print the resolved model as JSON.
    pub dump_json: bool,
    /// `--dry-run` (extension): compute IPVS changes without the kernel.
    pub dry_run: bool,
    /// `--no-shared-checks` (extension): probe identical checks of several
    /// virtual servers once each, as keepalived does.
    pub no_shared_checks: bool,
    /// `--checker-threads N` (extension): threads running checks; 0 (or
    /// absent) chooses by the configured check rate.
    pub checker_threads: Option<String>,
    /// `--ipvs-save` (extension): print the kernel's IPVS table as
    /// `ipvsadm -S -n` does, read through our own netlink code.
    pub ipvs_save: bool,
    /// `--status` (extension): print the running daemon's status.
    pub status: bool,
    /// `--json` (extension): `--status`/`--plan` print JSON.
    pub json: bool,
    /// `--plan` (extension): print the IPVS changes a reload of `-f FILE`
    /// would make.
    pub plan: bool,
    /// `--status-socket PATH` (extension): the status socket, over the
    /// configuration's `status_socket`.
    pub status_socket: Option<String>,
    /// `--control "VERB ARGS"` (extension): a membership edit for the
    /// running daemon (`disable`, `enable`, `weight`, `add`, `remove`).
    pub control: Option<String>,
    /// Positional arguments (keepalived prints and ignores them).
    pub extra: Vec<String>,
}

/// A command line keepalived would refuse.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CliError {
    /// Unknown option.
    Unknown(String),
    /// An option needing an argument had none.
    MissingArgument(String),
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CliError::Unknown(o) => write!(f, "Unrecognized option: {o}"),
            CliError::MissingArgument(o) => write!(f, "option '{o}' requires an argument"),
        }
    }
}

impl std::error::Error for CliError {}

fn set(o: &mut Options, long: &str, val: Option<String>) {
    let v = || val.clone().unwrap_or_default();
    match long {
        "use-file" => o.use_file = Some(v()),
        "vrrp" => o.vrrp = true,
        "check" => o.check = true,
        "no_bfd" => o.no_bfd = true,
        "all" => o.all = true,
        "log-console" => o.log_console = true,
        "log-detail" => o.log_detail += 1,
        "log-facility" => o.log_facility = Some(v()),
        "log-file" => o.log_file = Some(v()),
        "flush-log-file" => o.flush_log_file = true,
        "no-syslog" => o.no_syslog = true,
        "umask" => o.umask = Some(v()),
        "release-vips" => o.release_vips = true,
        "dont-release-vrrp" => o.dont_release_vrrp = true,
        "dont-release-ipvs" => o.dont_release_ipvs = true,
        "dont-respawn" => o.dont_respawn = true,
        "dont-fork" => o.dont_fork = true,
        "dump-conf" => o.dump_conf = true,
        "pid" => o.pid = Some(v()),
        "vrrp_pid" => o.vrrp_pid = Some(v()),
        "checkers_pid" => o.checkers_pid = Some(v()),
        "bfd_pid" => o.bfd_pid = Some(v()),
        "genhash" => o.genhash = true,
        "address-monitoring" => o.address_monitoring = true,
        "snmp" => o.snmp = true,
        "snmp-agent-socket" => o.snmp_agent_socket = Some(v()),
        "namespace" => o.namespace = Some(v()),
        "core-dump" => o.core_dump = true,
        "core-dump-pattern" => o.core_dump_pattern = Some(v()),
        "all-config" => o.all_config = true,
        "config-id" => o.config_id = Some(v()),
        "signum" => o.signum = Some(v()),
        "config-test" => o.config_test = Some(v()),
        "config-fd" => o.config_fd = Some(v()),
        "version" => o.version = true,
        "help" => o.help = true,
        "dump-json" => o.dump_json = true,
        "dry-run" => o.dry_run = true,
        "no-shared-checks" => o.no_shared_checks = true,
        "checker-threads" => o.checker_threads = Some(v()),
        "ipvs-save" => o.ipvs_save = true,
        "status" => o.status = true,
        "json" => o.json = true,
        "plan" => o.plan = true,
        "status-socket" => o.status_socket = Some(v()),
        "control" => o.control = Some(v()),
        _ => {}
    }
}

/// Parses `args` (without the program name).
pub fn parse(args: &[String]) -> Result<Options, CliError> {
    let mut o = Options::default();
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        i += 1;
        if a == "--" {
            o.extra.extend(args[i..].iter().cloned());
            break;
        }
        if let Some(long) = a.strip_prefix("--") {
            let (name, inline) = match long.split_once('=') {
                Some((n, v)) => (n, Some(v.to_string())),
                None => (long, None),
            };
            // getopt_long accepts unambiguous prefixes.
            let exact = OPTIONS.iter().find(|(_, l, _)| *l == name);
            let cands: Vec<_> = OPTIONS
                .iter()
                .filter(|(_, l, _)| l.starts_with(name))
                .collect();
            let opt = match (exact, cands.as_slice()) {
                (Some(e), _) => e,
                (None, [one]) => *one,
                _ => return Err(CliError::Unknown(a.clone())),
            };
            let val = match opt.2 {
                Arg::None => None,
                Arg::Optional => inline,
                Arg::Required => match inline {
                    Some(v) => Some(v),
                    None => {
                        let Some(v) = args.get(i) else {
                            return Err(CliError::MissingArgument(format!("--{}", opt.1)));
                        };
                        i += 1;
                        Some(v.clone())
                    }
                },
            };
            set(&mut o, opt.1, val);
            continue;
        }
        if let Some(shorts) = a.strip_prefix('-').filter(|s| !s.is_empty()) {
            let chars: Vec<char> = shorts.chars().collect();
            let mut j = 0;
            while j < chars.len() {
                let c = chars[j];
                j += 1;
                let Some(opt) = OPTIONS.iter().find(|(s, _, _)| *s == Some(c)) else {
                    return Err(CliError::Unknown(format!("-{c}")));
                };
                let rest: String = chars[j..].iter().collect();
                let val = match opt.2 {
                    Arg::None => None,
                    Arg::Optional => {
                        j = chars.len();
                        (!rest.is_empty()).then_some(rest)
                    }
                    Arg::Required => {
                        j = chars.len();
                        if !rest.is_empty() {
                            Some(rest)
                        } else {
                            let Some(v) = args.get(i) else {
                                return Err(CliError::MissingArgument(format!("-{c}")));
                            };
                            i += 1;
                            Some(v.clone())
                        }
                    }
                };
                set(&mut o, opt.1, val);
            }
            continue;
        }
        o.extra.push(a.clone());
    }
    Ok(o)
}

/// `--signum=NAME`: the signal number keepalived uses for NAME.
pub fn signum(name: &str) -> Option<i32> {
    // glibc: SIGRTMIN 34, SIGRTMAX 64.
    Some(match name {
        "STOP" => 15,
        "RELOAD" => 1,
        "DATA" => 10,
        "STATS" => 12,
        "STATS_CLEAR" => 63,
        "JSON" => 36,
        _ => return None,
    })
}

/// keepalived's usage text, our extensions marked.
pub fn usage(prog: &str) -> String {
    format!(
        "Usage: {prog} [OPTION...]\n\
  -f, --use-file=FILE          Use the specified configuration file\n\
  -P, --vrrp                   Only run with VRRP subsystem\n\
  -C, --check                  Only run with Health-checker subsystem\n\
  -B, --no_bfd                 Don't run BFD subsystem\n\
      --all                    Force all child processes to run, even if have no configuration\n\
  -l, --log-console            Log messages to local console\n\
  -D, --log-detail             Detailed log messages\n\
  -S, --log-facility=[0-7]     Set syslog facility to LOG_LOCAL[0-7]\n\
  -g, --log-file=FILE          Also log to FILE (default /tmp/keepalived.log)\n\
      --flush-log-file         Flush log file on write\n\
  -G, --no-syslog              Don't log via syslog\n\
  -u, --umask=MASK             umask for file creation (in numeric form)\n\
  -X, --release-vips           Drop VIP on transition from signal.\n\
  -V, --dont-release-vrrp      Don't remove VRRP VIPs and VROUTEs on daemon stop\n\
  -I, --dont-release-ipvs      Don't remove IPVS topology on daemon stop\n\
  -R, --dont-respawn           Don't respawn child processes\n\
  -n, --dont-fork              Don't fork the daemon process\n\
  -d, --dump-conf              Dump the configuration data\n\
  -p, --pid=FILE               Use specified pidfile for parent process\n\
  -r, --vrrp_pid=FILE          Use specified pidfile for VRRP child process\n\
  -c, --checkers_pid=FILE      Use specified pidfile for checkers child process\n\
  -b, --bfd_pid=FILE           Use specified pidfile for BFD child process\n\
  -a, --address-monitoring     Report all address additions/deletions notified\n\
  -x, --snmp                   Enable SNMP subsystem (VRRP side so far)\n\
  -A, --snmp-agent-socket=FILE Use the specified socket for master agent\n\
  -s, --namespace=NAME         Run in network namespace NAME (overrides config)\n\
  -m, --core-dump              Produce core dump if terminate abnormally\n\
  -M, --core-dump-pattern=PATN Also set /proc/sys/kernel/core_pattern to PATN\n\
  -e, --all-config             Error if any configuration file missing\n\
  -i, --config-id id           Skip any configuration lines beginning '@' that don't match id\n\
      --signum=SIGFUNC         Return signal number for STOP, RELOAD, DATA, STATS, STATS_CLEAR, JSON\n\
  -t, --config-test[=LOG_FILE] Check the configuration for obvious errors, output to\n\
                                 stderr by default\n\
  -T, --genhash                Enter genhash utility mode\n\
      --dump-json              Print the resolved configuration as JSON (keepalived-rs extension)\n\
      --dry-run                Compute IPVS changes without touching the kernel (keepalived-rs extension)\n\
      --no-shared-checks       Run identical checks of several virtual servers separately (keepalived-rs extension)\n\
      --checker-threads=N      Threads for checks; 0 = one below 5,000 checks/s, else one per core (keepalived-rs extension)\n\
      --ipvs-save              Print the kernel's IPVS table as ipvsadm -S -n does (keepalived-rs extension)\n\
      --status                 Print the running daemon's status; --json for JSON (keepalived-rs extension)\n\
      --plan                   Print the IPVS changes a reload of -f FILE would make (keepalived-rs extension)\n\
      --status-socket=PATH     The status socket (default: status_socket, else /run/keepalived/status.sock) (keepalived-rs extension)\n\
      --control=\"VERB ARGS\"    Change the running daemon's real servers: disable|enable VS RS, weight VS RS N, add VS IP PORT [WEIGHT], remove VS RS (keepalived-rs extension)\n\
  -v, --version                Display the version number\n\
  -h, --help                   Display this help message\n"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(a: &[&str]) -> Options {
        parse(&a.iter().map(|s| s.to_string()).collect::<Vec<_>>()).unwrap()
    }

    #[test]
    fn forms() {
        assert_eq!(p(&["-f", "x.conf"]).use_file.as_deref(), Some("x.conf"));
        assert_eq!(p(&["-fx.conf"]).use_file.as_deref(), Some("x.conf"));
        assert_eq!(p(&["--use-file=x"]).use_file.as_deref(), Some("x"));
        assert_eq!(p(&["--use-file", "x"]).use_file.as_deref(), Some("x"));
        assert_eq!(p(&["-t"]).config_test.as_deref(), Some(""));
        assert_eq!(p(&["-t/tmp/l"]).config_test.as_deref(), Some("/tmp/l"));
        assert_eq!(
            p(&["--config-test=/tmp/l"]).config_test.as_deref(),
            Some("/tmp/l")
        );
        let o = p(&["-nlDD", "-C"]);
        assert!(o.dont_fork && o.log_console && o.check);
        assert_eq!(o.log_detail, 2);
        assert_eq!(p(&["--use", "y"]).use_file.as_deref(), Some("y"));
        assert!(parse(&["-Z".to_string()]).is_err());
        assert!(parse(&["-f".to_string()]).is_err());
        assert_eq!(signum("RELOAD"), Some(1));
    }
}
