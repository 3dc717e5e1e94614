//! The checker's data file, `keepalived_check.data`, written on SIGUSR1
//! (keepalived's `check_print.c`, `global_data.c:open_dump_file()`).
//!
//! Beside the daemon's event loop: it reads the configuration, the live
//! health and each check's status and renders them with keepalived's
//! section headers and labels, so that what operators grep in the file
//! keeps working. Rendering is pure; [`write`] puts it on disk.

use crate::check::engine::{Board, Plan, ProbeKind};
use crate::config::model::{Config, Forwarding, VirtualServer, VsAddress};
use crate::config::validate::format_vs;
use crate::health::Health;
use crate::health::Tracker;
use crate::lvs::desired::kernel_weights;
use std::fmt::Write as _;
use std::path::PathBuf;

/// Where keepalived's checker writes its data file: `$TMPDIR` if it is a
/// directory, else `/tmp`.
pub fn data_path() -> PathBuf {
    let dir = std::env::var_os("TMPDIR")
        .map(PathBuf::from)
        .filter(|d| d.is_dir())
        .unwrap_or_else(|| PathBuf::from("/tmp"));
    dir.join("keepalived_check.data")
}

fn on_off(b: bool) -> &'static str {
    if b {
        "ON"
    } else {
        "OFF"
    }
}

fn yes_no(b: bool) -> &'static str {
    if b {
        "yes"
    } else {
        "no"
    }
}

fn method(f: Forwarding) -> &'static str {
    match f {
        Forwarding::Nat => "NAT",
        Forwarding::Dr => "DR",
        Forwarding::Tun { .. } => "TUN",
    }
}

/// What the file shows besides the configuration.
pub struct Live<'a> {
    /// The checks.
    pub plan: &'a Plan,
    /// Real-server bookkeeping (failed checkers).
    pub tracker: &'a Tracker,
    /// Alive and quorum states.
    pub health: &'a Health,
    /// Each check's status.
    pub board: &'a Board,
    /// The table the kernel holds (as last programmed and checked).
    pub kernel: &'a crate::ipvs::Table,
}

fn vs_header(out: &mut String, vs: &VirtualServer) {
    let _ = match &vs.address {
        VsAddress::Addr { ip, port } => writeln!(out, " VS VIP = {ip}, VPORT = {port}"),
        VsAddress::Fwmark { fwmark } => writeln!(out, " VS FWMARK = {fwmark}"),
        VsAddress::Group { name } => writeln!(out, " VS GROUP = {name}"),
    };
}

/// The file's text.
pub fn render(cfg: &Config, live: &Live) -> String {
    let mut o = String::new();
    let g = &cfg.global_defs;
    let _ = writeln!(o, "------< Global definitions >------");
    let _ = writeln!(
        o,
        " Router ID = {}",
        g.router_id.as_deref().unwrap_or("[unknown]")
    );
    let _ = writeln!(o, " LVS flush = {}", g.lvs_flush);
    let _ = writeln!(o, " rs_init_notifies = {}", u8::from(g.rs_init_notifies));
    let _ = writeln!(o, "------< LVS Topology >------");
    for (vi, vs) in cfg.virtual_servers.iter().enumerate() {
        let Some(h) = live.health.vs.get(vi) else {
            continue;
        };
        let _ = writeln!(o, " ------< Virtual server >------");
        vs_header(&mut o, vs);
        let _ = writeln!(o, "   delay_loop = {:.6}", vs.delay().as_secs_f64());
        let _ = writeln!(o, "   lvs_sched = {}", vs.sched());
        if vs.persistence_timeout > 0 {
            let _ = writeln!(o, "   persistence timeout = {}", vs.persistence_timeout);
        }
        if let Some(p) = vs.protocol {
            let _ = writeln!(o, "   protocol = {}", format!("{p:?}").to_uppercase());
        }
        let _ = writeln!(o, "   alpha is {}", on_off(vs.alpha));
        let _ = writeln!(o, "   omega is {}", on_off(vs.omega));
        let _ = writeln!(
            o,
            "   Inhibit on failure is {}",
            on_off(vs.inhibit_on_failure)
        );
        let _ = writeln!(
            o,
            "   quorum = {}, hysteresis = {}",
            vs.quorum, vs.hysteresis
        );
        let _ = writeln!(o, "   default forwarding method = {}", method(vs.method()));
        if let Some(s) = &vs.sorry_server {
            let _ = writeln!(o, "   sorry server = [{}]:{}", s.ip, s.port);
        }
        let alive_rs = h.rs.iter().filter(|r| r.alive).count();
        let _ = writeln!(o, "   alive = {}", u8::from(alive_rs > 0));
        let _ = writeln!(o, "   quorum_state_up = {}", u8::from(h.quorum_up));
        let in_kernel = kernel_weights(cfg, vi, live.kernel);
        for (ri, rs) in vs.real_servers.iter().enumerate() {
            let Some(r) = h.rs.get(ri) else { continue };
            let iweight = rs.iweight();
            let inhibit = rs.inhibit();
            let _ = writeln!(o, "   ------< Real server >------");
            let _ = writeln!(
                o,
                "   RIP = {}, RPORT = {}, WEIGHT = {} EFF WEIGHT = {}",
                rs.ip, rs.port, iweight, r.effective_weight
            );
            let _ = writeln!(o, "   forwarding method = {}", method(rs.method()));
            let _ = writeln!(o, "   Inhibit on failure is {}", on_off(inhibit));
            let _ = writeln!(o, "   initial weight = {iweight}");
            let _ = writeln!(o, "   effective weight = {}", r.effective_weight);
            let _ = writeln!(o, "   alive = {}", u8::from(r.alive));
            let _ = writeln!(
                o,
                "   num failed checkers = {}",
                live.tracker.failed(vi, ri)
            );
            // `rs->set`: the destination is in the kernel's table.
            let set = in_kernel.get(ri).is_some_and(Option::is_some);
            let _ = writeln!(o, "   RS set = {}", u8::from(set));
        }
    }
    let _ = writeln!(o, "------< Health checkers >------");
    for (id, c) in live.plan.checks.iter().enumerate() {
        let Some(st) = live.board.get(id) else {
            continue;
        };
        for s in &c.subscribers {
            let Some(vs) = cfg.virtual_servers.get(s.vs) else {
                continue;
            };
            let _ = writeln!(o, " {} -> {}", format_vs(vs), c.name);
            let _ = writeln!(o, "   Enabled = yes");
            let _ = writeln!(o, "   Up = {}", yes_no(live.tracker.checker_up(s)));
            let _ = writeln!(o, "   Has run = {}", yes_no(st.now.state.has_run));
            let _ = writeln!(o, "   Current weight = {}", live.tracker.checker_weight(s));
            let _ = writeln!(o, "   Alpha = {}", yes_no(c.timing.alpha));
            let _ = writeln!(o, "   Delay loop = {} us", c.timing.delay_loop.as_micros());
            let _ = writeln!(o, "   Warmup = {} us", c.timing.warmup.as_micros());
            let _ = writeln!(o, "   Retries = {}", c.timing.retry);
            let _ = writeln!(
                o,
                "   Delay before retry = {} us",
                c.timing.delay_before_retry.as_micros()
            );
            let _ = writeln!(o, "   Retries iterations = {}", st.now.state.retry_it);
            let _ = writeln!(
                o,
                "   Log all failures = {}",
                yes_no(c.timing.log_all_failures)
            );
            let conn = match &c.kind {
                ProbeKind::Tcp(c) | ProbeKind::Ping(c) => Some(c),
                ProbeKind::Smtp(s) => Some(&s.0),
                ProbeKind::Http(h) => Some(&h.conn),
                ProbeKind::Udp(u) => Some(&u.conn),
                ProbeKind::Dns(d) => Some(&d.conn),
                ProbeKind::Misc { .. } | ProbeKind::File { .. } | ProbeKind::Bfd { .. } => None,
            };
            if let Some(conn) = conn {
                let _ = writeln!(o, "   Connection");
                let _ = writeln!(o, "     Dest = [{}]:{}", conn.dst.ip(), conn.dst.port());
                let _ = writeln!(o, "     Timeout = {:.6}", conn.timeout().as_secs_f64());
            }
            let _ = writeln!(o, "   Keepalive method = {}", c.kind.type_name());
            match &c.kind {
                ProbeKind::Http(h) => {
                    for u in &h.spec.urls {
                        let _ = writeln!(o, "   Checked url = {}", u.path);
                    }
                    if let Some(f) = st.now.url.failed().and_then(|i| h.spec.urls.get(i)) {
                        let _ = writeln!(o, "   Failed URL = {}", f.path);
                    }
                }
                ProbeKind::Misc { script, .. } => {
                    let _ = writeln!(o, "   script = {}", script.argv.join(" "));
                }
                ProbeKind::File { path, .. } => {
                    let _ = writeln!(o, "   file = {}", path.display());
                }
                ProbeKind::Bfd { name } => {
                    let _ = writeln!(o, "   BFD = {name}");
                }
                _ => {}
            }
            if let Some(l) = &st.last {
                let _ = writeln!(
                    o,
                    "   Last result = {}{}{} ({} us)",
                    if l.ok { "success" } else { "failure" },
                    if l.error.is_empty() { "" } else { ": " },
                    l.error,
                    l.latency.as_micros()
                );
            }
        }
    }
    o
}

/// Writes the data file, readable by root only as keepalived makes it.
pub fn write(cfg: &Config, live: &Live) -> std::io::Result<PathBuf> {
    let path = data_path();
    write_private(&path, &render(cfg, live))?;
    Ok(path)
}

/// Writes `text` to a new file at `path`, readable by root only, as
/// keepalived makes its dump files; a file an unprivileged user planted
/// there (a symbolic link too) is not written through.
pub fn write_private(path: &std::path::Path, text: &str) -> std::io::Result<()> {
    use std::io::Write as _;
    use std::os::unix::fs::OpenOptionsExt;
    let _ = std::fs::remove_file(path);
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(nix::libc::O_NOFOLLOW)
        .open(path)?;
    f.write_all(text.as_bytes())
}
