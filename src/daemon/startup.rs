//! How a configuration starts: what it carries from the kernel's table,
//! the one startup rule that plans its checks and the health they begin
//! with, and the first programming that follows. A real start, a reload
//! and an offline `--plan` all go through here, so `--plan` predicts what
//! a start does.

use crate::check::engine::{self, Carry, Plan, PlanOptions};
use crate::cli::Options;
use crate::config::model::{Config, LvsTimeouts};
use crate::health::{FxSet, Health, RsKey, Tracker};
use crate::ipvs::dryrun::DryRun;
use crate::ipvs::{Backend, IpvsError, Op, Table, Timeouts};
use crate::lvs::{desired, Reconciler};
use std::collections::HashMap;
use std::path::PathBuf;

/// `lvs_timeouts` as the backend takes them (0: left as it is).
pub fn timeouts(t: Option<LvsTimeouts>) -> Option<Timeouts> {
    t.map(|t| Timeouts {
        tcp: t.tcp.unwrap_or(0),
        tcp_fin: t.tcpfin.unwrap_or(0),
        udp: t.udp.unwrap_or(0),
    })
}

/// The real servers of `cfg` that `table` (the kernel's at start) has live.
pub fn live_in_kernel(cfg: &Config, table: &Table) -> FxSet<RsKey> {
    let mut out = FxSet::default();
    if table.services.is_empty() {
        return out;
    }
    for (vi, vs) in cfg.virtual_servers.iter().enumerate() {
        let name: std::sync::Arc<str> = crate::config::validate::format_vs(vs).into();
        for (ri, rs) in vs.real_servers.iter().enumerate() {
            if desired::rs_live_in(cfg, vi, ri, table) {
                out.insert(RsKey::of(&name, rs));
            }
        }
    }
    out
}

/// The operations a start on `cfg` sends to a kernel holding `current`:
/// the carry from the live table, the one startup rule, the first
/// programming (`lvs_flush`, adoption, timeouts), with `init_file`'s
/// values predicted instead of written.
pub async fn first_programming(
    opts: &Options,
    cfg: &Config,
    current: Table,
) -> Result<Vec<Op>, IpvsError> {
    let mut rec = Reconciler::new(DryRun::recording(current));
    let carry = start_carry(cfg, &mut rec).await?;
    let preset = cfg
        .track_files
        .iter()
        .filter_map(crate::services::track_file::init_value)
        .map(|(p, v)| (PathBuf::from(p), crate::config::reader::strtol0(&v)))
        .collect();
    let (_, _, health) = plan_start(cfg, opts, &carry, preset);
    rec.start(
        desired(cfg, &health),
        cfg.global_defs.lvs_flush,
        timeouts(cfg.global_defs.lvs_timeouts),
    )
    .await?;
    Ok(rec.backend_mut().take_recorded())
}

/// What a start carries from the kernel's table: a restart over a table a
/// previous run left (kill -9, -I) keeps the servers live there in until
/// their first check says otherwise. `lvs_flush` clears it, so nothing.
pub async fn start_carry<B: Backend>(
    cfg: &Config,
    rec: &mut Reconciler<B>,
) -> Result<Carry, IpvsError> {
    let mut carry = Carry::new();
    if !cfg.global_defs.lvs_flush {
        let t = rec.read_kernel().await?;
        carry.live_in_kernel = live_in_kernel(cfg, t);
    }
    Ok(carry)
}

/// The one startup rule, for a start, a reload and an offline `--plan`:
/// the checks planned with what `carry` holds, and the tracker and health
/// they start with. Checkers that cannot run are logged.
pub fn plan_start(
    cfg: &Config,
    opts: &Options,
    carry: &Carry,
    preset_files: HashMap<PathBuf, i64>,
) -> (Plan, Tracker, Health) {
    let (plan, errors) = engine::plan_carrying(
        cfg,
        &PlanOptions {
            share: !opts.no_shared_checks,
            preset_files,
        },
        carry,
    );
    for e in errors {
        log::error!("{e}");
    }
    let (tracker, health) = Tracker::start(cfg, &plan);
    (plan, tracker, health)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::load_str;
    use crate::daemon::commands::small_runtime;

    const ALPHA: &str = "virtual_server 192.0.2.1 80 {\n lvs_sched rr\n lvs_method NAT\n \
        protocol TCP\n real_server 127.0.0.1 8081 {\n TCP_CHECK {\n alpha\n }\n }\n \
        real_server 127.0.0.1 8082 {\n TCP_CHECK {\n }\n }\n}\n";

    fn ops(text: &str, kernel: Table) -> Vec<String> {
        let cfg = load_str(text).config;
        let rt = small_runtime().unwrap();
        rt.block_on(first_programming(&Options::default(), &cfg, kernel))
            .unwrap()
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    #[test]
    fn a_start_over_a_live_table_keeps_its_alpha_servers() {
        let cfg = load_str(ALPHA).config;
        let live = desired(&cfg, &Health::all_alive(&cfg));
        // Empty kernel: the alpha server waits for its first check.
        let fresh = ops(ALPHA, Table::default());
        assert_eq!(fresh.len(), 2, "{fresh:?}");
        assert!(
            fresh.iter().all(|o| !o.contains("127.0.0.1:8081")),
            "{fresh:?}"
        );
        // Both live in the kernel (a restart after kill -9): nothing to do.
        assert_eq!(ops(ALPHA, live.clone()), Vec::<String>::new());
        // lvs_flush clears the table first, so the alpha server is out.
        let flushed = ops(&format!("global_defs {{\n lvs_flush\n}}\n{ALPHA}"), live);
        assert_eq!(
            flushed.first().map(String::as_str),
            Some("-C"),
            "{flushed:?}"
        );
        assert!(
            flushed.iter().all(|o| !o.contains("127.0.0.1:8081")),
            "{flushed:?}"
        );
    }
}
