//! The running checkers of one configuration: the plan, the tracker and
//! health they feed, the engine, the notifier, and the slow starts and
//! drains handed from one configuration to the next. The event loop
//! ([`super::serve`]) applies their reports, answers queries from them and
//! hands them over at a reload.

use super::{now, Running};
use crate::check::engine::ProbeKind;
use crate::check::engine::{self, Carry, Engine, Jitter, Plan, Prober};
use crate::check::notify::{self, Notifier};
use crate::check::ping::PingGroupRange;
use crate::cli::Options;
use crate::config::model::Config;
use crate::config::{self};
use crate::control::Query;
use crate::daemon::reload::{load_options, reload_refusal};
use crate::daemon::startup::plan_start;
use crate::health::{Change, Effect, Event, Health, Tracker, Transition};
use crate::ipvs::Backend;
use crate::lvs::graceful::Graceful;
use crate::lvs::{desired, Reconciler};
use crate::metrics;
use crate::print;
use crate::services::scripts::{Scripts, DEFAULT_MAX_SCRIPTS};
use crate::status::{self, Counters, TransitionRecord};
use std::collections::{BTreeSet, HashMap};
use std::path::Path;
use std::sync::Arc;
use tokio::sync::mpsc;

/// The running checkers of one configuration.
pub(super) struct Checking {
    pub(super) plan: Plan,
    pub(super) tracker: Tracker,
    pub(super) health: Health,
    pub(super) engine: Engine,
    pub(super) notifier: Notifier,
    /// Per virtual server, those sharing an IPVS service with it.
    pub(super) sharing: Vec<BTreeSet<usize>>,
    /// Per virtual server, `fail_open` is in force (as last logged).
    pub(super) fail_open: Vec<bool>,
    /// Who ramps up and who drains (extensions), handed from one
    /// configuration to the next.
    pub(super) graceful: Graceful,
    pub(super) _ping: Option<PingGroupRange>,
    /// The notify scripts' pool, ended at stop.
    pub(super) notify_scripts: Scripts,
}

/// How long notify scripts under way at stop have to end by themselves.
pub(super) const NOTIFY_END_WAIT: std::time::Duration = std::time::Duration::from_millis(1100);

impl Checking {
    pub(super) fn start(
        cfg: &Config,
        opts: &Options,
        // Where the checks' events go, and the BFD sessions' states the
        // BFD_CHECKs follow.
        (tx, bfd): (
            &mpsc::UnboundedSender<Event>,
            Option<&tokio::sync::watch::Receiver<crate::check::engine::BfdStates>>,
        ),
        carry: &Carry,
        (prober, notify_scripts): (&dyn Fn(Scripts) -> Arc<dyn Prober>, &Scripts),
        jitter: Jitter,
        mut graceful: Graceful,
    ) -> Checking {
        let (plan, tracker, mut health) = plan_start(cfg, opts, carry, HashMap::new());
        graceful.reapply(cfg, &mut health, now());
        let ping = plan
            .checks
            .iter()
            .any(|c| matches!(c.kind, ProbeKind::Ping(_)))
            .then(PingGroupRange::ensure);
        notify::log_startup(
            cfg,
            |vs, rs| !plan.checks_of(vs, rs).is_empty(),
            &health,
            |vs| {
                carry
                    .quorum
                    .contains_key(&crate::config::validate::format_vs(vs))
            },
        );
        // MISC_CHECKs have a pool of their own, apart from the notify
        // scripts' (kept across reloads): hung notify scripts never hold
        // a check back.
        let scripts = Scripts::new(DEFAULT_MAX_SCRIPTS);
        let mut notifier = Notifier::new(cfg, notify_scripts.clone());
        if cfg.global_defs.rs_init_notifies {
            notifier.init_notifies(cfg, &health);
        }
        // Each check may hold a socket at once.
        crate::daemon::process::raise_nofile(plan.checks.len());
        let mut engine = Engine::start(&plan, prober(scripts), tx.clone(), jitter);
        if let Some(states) = bfd {
            engine.follow_bfd(&plan, states.clone(), tx.clone());
        }
        // The board holds each check's state from now on.
        let mut plan = plan;
        plan.release_starts();
        log::info!(
            "checkers: {} check(s) for {} configured checker(s)",
            plan.checks.len(),
            plan.checker_count()
        );
        let mut c = Checking {
            plan,
            tracker,
            health,
            engine,
            notifier,
            sharing: desired::service_sharing(cfg),
            fail_open: vec![false; cfg.virtual_servers.len()],
            graceful,
            notify_scripts: notify_scripts.clone(),
            _ping: ping,
        };
        c.follow_fail_open(cfg, 0..cfg.virtual_servers.len());
        c
    }

    /// Logs each virtual server of `vss` whose `fail_open` (extension)
    /// comes into force or ends.
    fn follow_fail_open(&mut self, cfg: &Config, vss: impl IntoIterator<Item = usize>) {
        for vi in vss {
            let (Some(vs), Some(h)) = (cfg.virtual_servers.get(vi), self.health.vs.get(vi)) else {
                continue;
            };
            let now = desired::fail_open(vs, h);
            if now == self.fail_open[vi] {
                continue;
            }
            self.fail_open[vi] = now;
            let name = crate::config::validate::format_vs(vs);
            if now {
                log::warn!(
                    "VS {name}: every real server has failed - keeping all {} in at their configured weights (fail_open) until one comes back",
                    vs.real_servers.len()
                );
            } else {
                log::info!(
                    "VS {name}: a real server is back - fail_open ends, the failed ones go out"
                );
            }
        }
    }

    /// Applies a checker report: state, logs and notifications. Returns the
    /// virtual servers whose IPVS services may have to change.
    pub(super) fn apply(
        &mut self,
        cfg: &Config,
        ev: &Event,
        counters: &mut Counters,
    ) -> BTreeSet<usize> {
        let effects = self.tracker.apply(cfg, &self.plan, &mut self.health, ev);
        self.notifier.effects(cfg, &self.health, &effects);
        self.record(cfg, ev, &effects, counters);
        let eased = self
            .graceful
            .transitions(cfg, &effects, &mut self.health, now());
        let touched: BTreeSet<usize> = effects
            .iter()
            .filter_map(Effect::table_vs)
            .chain(eased)
            .flat_map(|vs| self.sharing[vs].iter().copied())
            .collect();
        self.follow_fail_open(cfg, touched.iter().copied());
        touched
    }

    /// The structured transition lines and counters for a report.
    fn record(&self, cfg: &Config, ev: &Event, effects: &[Effect], counters: &mut Counters) {
        for e in effects {
            match e {
                Effect::Transition(Transition::RsUp { .. }) => counters.rs_up += 1,
                Effect::Transition(Transition::RsDown { .. }) => counters.rs_down += 1,
                _ => {}
            }
        }
        let Some(c) = self.plan.checks.get(ev.check) else {
            return;
        };
        let st = self.engine.board().get(ev.check);
        // FILE_CHECK and BFD_CHECK run no probes: what they follow moved
        // them from the other state.
        let watched = matches!(c.kind, ProbeKind::File { .. } | ProbeKind::Bfd { .. });
        let (from, to) = match ev.change {
            Change::Up if watched => ("unhealthy", "healthy"),
            Change::Down if watched => ("healthy", "unhealthy"),
            Change::Up => (
                match st.as_ref() {
                    Some(s) if s.runs <= 1 => "initialising",
                    Some(s) if s.successes > 1 => "recovering",
                    _ => "unhealthy",
                },
                "healthy",
            ),
            Change::Down => (
                match st.as_ref() {
                    Some(s) if s.runs <= 1 => "initialising",
                    Some(s) if s.failures > 1 => "retrying",
                    _ => "healthy",
                },
                "unhealthy",
            ),
            Change::FirstDown => ("initialising", "unhealthy"),
            Change::MiscStatus(_) | Change::FileWeight(_) => return,
        };
        let at = status::unix_now();
        for sub in &c.subscribers {
            let Some(vs) = cfg.virtual_servers.get(sub.vs) else {
                continue;
            };
            counters.transition(TransitionRecord {
                at,
                vs: crate::config::validate::format_vs(vs),
                rs: c.name.to_string(),
                checker: c.kind.type_name(),
                from,
                to,
                reason: ev.reason.clone(),
            });
        }
    }

    /// Answers a status-socket or metrics query.
    pub(super) fn answer<B: Backend>(
        &self,
        q: &Query,
        run: &Running,
        rec: &Reconciler<B>,
        counters: &Counters,
    ) -> String {
        let Running {
            cfg,
            opts,
            path,
            vrrp,
            bfd,
            ..
        } = *run;
        let board = self.engine.board();
        let file = path.display().to_string();
        let view = status::View {
            cfg,
            plan: &self.plan,
            tracker: &self.tracker,
            health: &self.health,
            board: &board,
            kernel: rec.expected(),
            counters,
            now: tokio::time::Instant::now(),
            config_file: &file,
            dry_run: opts.dry_run,
        };
        let boards = crate::status::Boards {
            vrrp: vrrp.cloned(),
            bfd: bfd.cloned(),
        };
        match q {
            Query::Status => {
                let mut doc = status::document(&view);
                crate::status::add_boards(&mut doc, &boards);
                doc.to_string() + "\n"
            }
            Query::Metrics => {
                let more = crate::status::board_metrics(&boards);
                metrics::render_with(&view, &more)
            }
            Query::Plan(p) => self.preview_reload(run, rec, p, &board),
            // Made by the event loop, which changes the running model.
            Query::Member(_) => "error: not here\n".to_string(),
        }
    }

    /// `--plan`: what a reload of `file` would send to the kernel now,
    /// computed as the reload computes it (carried states, startup rules
    /// for new servers), and sent nowhere.
    fn preview_reload<B: Backend>(
        &self,
        run: &Running,
        rec: &Reconciler<B>,
        file: &Path,
        board: &engine::Board,
    ) -> String {
        let Running {
            cfg,
            opts,
            accepted,
            overlay,
            ..
        } = *run;
        if let Some(why) = crate::daemon::reload::source_problem(file) {
            return format!(
                "error: a reload of {} would be refused, the running configuration kept: {why}\n",
                file.display()
            );
        }
        let loaded = config::load(file, &load_options(opts));
        // The reload's own rule: a file it would refuse is reported so.
        if let Some(why) = reload_refusal(&loaded, accepted) {
            return format!(
                "error: a reload of {} would be refused, the running configuration kept: {why}\n",
                file.display()
            );
        }
        let carry = self
            .tracker
            .carry(cfg, &self.plan, |id| board.now(id), &self.health);
        // The operator's edits apply to the new file as a reload applies
        // them.
        let edited = overlay.clone().apply(&loaded.config).map(|(c, _)| c);
        let new_cfg = edited.as_ref().unwrap_or(&loaded.config);
        let (_, _, mut health) = plan_start(new_cfg, opts, &carry, HashMap::new());
        // Drains (extension) as the reload would keep them.
        let mut graceful = self.graceful.clone();
        graceful.removed(cfg, new_cfg, rec.expected(), now());
        graceful.reapply(new_cfg, &mut health, now());
        let mut table = desired(new_cfg, &health);
        graceful.add_leftovers(&mut table);
        let ops = rec.preview(&table);
        let mut out = format!(
            "# a reload of {} would make {} IPVS operation(s)\n",
            file.display(),
            ops.len()
        );
        for op in ops {
            out.push_str(&format!("ipvsadm {op}\n"));
        }
        out
    }

    /// Hands over to a reload (§6.8): stops the checks, applies what they
    /// reported meanwhile, notifies what `new` removes, and returns the
    /// state to carry. Nothing of the shutdown path runs.
    pub(super) async fn hand_over(
        mut self,
        cfg: &Config,
        new: &Config,
        kernel: &crate::ipvs::Table,
        rx: &mut mpsc::UnboundedReceiver<Event>,
        counters: &mut Counters,
    ) -> (Carry, Graceful) {
        let board = self.engine.board();
        self.engine.halt().await;
        // A task writes its board entry before it sends, so with the tasks
        // stopped and their events applied the two agree.
        while let Ok(ev) = rx.try_recv() {
            self.apply(cfg, &ev, counters);
        }
        let Checking {
            plan,
            tracker,
            health,
            mut notifier,
            mut graceful,
            ..
        } = self;
        let carry = tracker.carry(cfg, &plan, |id| board.now(id), &health);
        notifier.removed_by_reload(cfg, &health, new);
        notifier.close().await;
        graceful.removed(cfg, new, kernel, now());
        (carry, graceful)
    }

    /// A virtual server kept by a reload whose quorum the new file changed
    /// (weights, quorum, servers) gets its quorum notifications.
    pub(super) fn quorum_after_reload(&mut self, carry: &Carry, new: &Config) {
        let mut effects = Vec::new();
        for (vi, v) in new.virtual_servers.iter().enumerate() {
            let Some(&was) = carry.quorum.get(&crate::config::validate::format_vs(v)) else {
                continue;
            };
            let h = &self.health.vs[vi];
            let weight_sum = h.live_weight();
            match (was, h.quorum_up) {
                (false, true) => effects.push(Effect::Transition(Transition::QuorumGained {
                    vs: vi,
                    weight_sum,
                })),
                (true, false) => effects.push(Effect::Transition(Transition::QuorumLost {
                    vs: vi,
                    weight_sum,
                })),
                _ => {}
            }
        }
        self.notifier.effects(new, &self.health, &effects);
    }

    /// Every checker's state now, for the state file (extension).
    pub(super) fn state_document(&self, cfg: &Config) -> crate::check::state::Document {
        crate::check::state::document(
            cfg,
            &self.plan,
            &self.engine.board(),
            &self.health,
            status::unix_now(),
        )
    }

    /// SIGUSR1: keepalived's `keepalived_check.data`.
    pub(super) fn print_data(&self, cfg: &Config, kernel: &crate::ipvs::Table) {
        let board = self.engine.board();
        let live = print::Live {
            plan: &self.plan,
            tracker: &self.tracker,
            health: &self.health,
            board: &board,
            kernel,
        };
        match print::write(cfg, &live) {
            Ok(p) => log::info!("Printing checker data to {}", p.display()),
            Err(e) => log::error!("cannot write {}: {e}", print::data_path().display()),
        }
    }

    pub(super) async fn stop(self, cfg: &Config) {
        self.engine.stop().await;
        let mut n = self.notifier;
        n.shutdown(cfg, &self.health);
        n.close().await;
        // The shutdown notifies have their second (their own limit), then
        // nothing of ours outlives the daemon.
        let ended = self.notify_scripts.end(NOTIFY_END_WAIT).await;
        if ended > 0 {
            log::warn!(
                "{ended} notify script(s) still running at stop: ended with their process groups"
            );
        }
    }
}
