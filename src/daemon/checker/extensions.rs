//! The event loop's share of the extensions: a second of slow starts and
//! drains (the kernel's connection counts read), the state file written
//! and read, and the model an operator's edit switches to.

use super::checking::Checking;
use super::show_table;
use crate::check::engine::{self, Carry};
use crate::cli::Options;
use crate::config::model::Config;
use crate::config::overlay::Overlay;
use crate::config::Loaded;
use crate::ipvs::Backend;
use crate::lvs::graceful::DrainEnd;
use crate::lvs::{desired, Reconciler};
use crate::status::{self, Counters};
use std::collections::BTreeSet;
use std::path::Path;
use std::sync::Arc;

/// A second of slow starts and drains (extensions): the ramps move on, the
/// drains read the kernel's connection counts and those that are over
/// end; the virtual servers that changed are programmed again.
pub(super) async fn ease<B: Backend>(
    cfg: &Config,
    checking: &mut Checking,
    rec: &mut Reconciler<B>,
    counters: &mut Counters,
    dry_run: bool,
) {
    let mut conns = std::collections::BTreeMap::new();
    for svc in checking.graceful.services_to_count(cfg) {
        match rec.backend_mut().active_conns(&svc).await {
            Ok(v) => conns.extend(v.into_iter().map(|(d, n)| ((svc, d), n))),
            // Unknown counts: the drain waits for its timeout.
            Err(e) => log::warn!("drain: connections of {svc}: {e}"),
        }
    }
    let (touched, ended) = checking
        .graceful
        .tick(cfg, &mut checking.health, now(), &conns);
    for (rs, end) in ended {
        let name = format!("[{}]:{}", rs.ip, rs.port);
        match end {
            DrainEnd::Drained => log::info!(
                "drain of {name} in VS {}: no active connection left - taking it out",
                rs.vs
            ),
            DrainEnd::TimedOut(n) => log::warn!(
                "drain of {name} in VS {}: drain_timeout passed with {n} active connection(s) - taking it out",
                rs.vs
            ),
        }
    }
    if touched.is_empty() {
        return;
    }
    let touched: BTreeSet<usize> = touched
        .iter()
        .flat_map(|vs| checking.sharing[*vs].iter().copied())
        .collect();
    let mut partial = desired::desired_for(cfg, &checking.health, &touched);
    checking.graceful.add_leftovers(&mut partial);
    let r = rec.set_services(partial).await;
    counters.ipvs(&r);
    show_table(rec, dry_run);
}

/// The clock of slow starts and drains: tokio's, so that tests run them on
/// paused time.
pub(super) fn now() -> std::time::Instant {
    tokio::time::Instant::now().into_std()
}

/// How often the state file is written unless `state_file_interval` says.
pub const STATE_FILE_INTERVAL: u64 = 30;

/// How long the stop waits for the state file's last version.
pub const STATE_FILE_STOP_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

/// Writes the state file (extension) whole: a temporary file beside it,
/// renamed over it, so a reader or a crash never sees half of one.
pub(super) fn write_state(file: &Path, doc: &crate::check::state::Document) {
    let r = serde_json::to_vec(doc)
        .map_err(std::io::Error::other)
        .and_then(|bytes| super::state_file::write(file, &bytes));
    if let Err(e) = r {
        log::warn!("state file {}: cannot write: {e}", file.display());
    }
}

/// A start with a state file (extension): the states it kept, over what
/// the kernel's table gave. A missing file is a first start; an unreadable
/// one is ignored with a warning (keepalived's startup rules then).
pub(super) fn restore_state(cfg: &Config, opts: &Options, file: &Path, carry: &mut Carry) {
    let text = match super::state_file::read(file) {
        Ok(Some(t)) => t,
        Ok(None) => {
            log::info!(
                "state file {}: none yet - keepalived's startup rules",
                file.display()
            );
            return;
        }
        Err(e) => {
            log::warn!(
                "state file {}: {e} - keepalived's startup rules",
                file.display()
            );
            return;
        }
    };
    let doc: crate::check::state::Document = match serde_json::from_slice(&text) {
        Ok(d) => d,
        Err(e) => {
            log::warn!(
                "state file {}: not a state file ({e}) - keepalived's startup rules",
                file.display()
            );
            return;
        }
    };
    if doc.version != crate::check::state::VERSION {
        log::warn!(
            "state file {}: version {} (this daemon reads {}) - keepalived's startup rules",
            file.display(),
            doc.version,
            crate::check::state::VERSION
        );
        return;
    }
    // The checks as they would start without the file, to find each
    // saved checker's place.
    let (plan, _) = engine::plan_carrying(
        cfg,
        &engine::PlanOptions {
            share: !opts.no_shared_checks,
            ..engine::PlanOptions::default()
        },
        carry,
    );
    let found = crate::check::state::restore(cfg, &plan, &doc, carry);
    let total: usize = cfg
        .virtual_servers
        .iter()
        .map(|v| v.real_servers.len())
        .sum();
    log::info!(
        "state file {}: the states of {found} of {total} real server(s) restored (written {:.0} s ago)",
        file.display(),
        (status::unix_now() - doc.written).max(0.0)
    );
}

/// What the event loop switches to: a reloaded file or an operator's edit
/// (with what it did and where its answer goes), as the model to run.
pub(super) struct Switch {
    pub(super) loaded: Arc<Loaded>,
    pub(super) edit: Option<(
        crate::config::overlay::Done,
        tokio::sync::oneshot::Sender<String>,
    )>,
}

/// `base` with the operator's edits (extension, over the status socket)
/// applied; each edit the file no longer allows is dropped with a line.
pub(super) fn with_overlay(base: &Arc<Loaded>, overlay: &mut Overlay) -> Arc<Loaded> {
    match overlay.apply(&base.config) {
        None => base.clone(),
        Some((config, notes)) => {
            for n in notes {
                log::warn!("control: {n}");
            }
            Arc::new(Loaded {
                config,
                diagnostics: base.diagnostics.clone(),
                files: base.files.clone(),
            })
        }
    }
}
