//! The probes, behind one trait: [`NetProber`] talks to the real servers
//! (one module per checker type), tests script the results.
//!
//! I/O shell of the checker, called by the [`super::engine`]'s tasks.

use super::beat::{Beat, SharedBeat};
pub use super::conn::Done;
use super::conn::Failure;
use super::connects::Connects;
use super::halfopen::HalfOpen;
use super::misc;
use super::plan::{Plan, Planned, ProbeKind};
use crate::services::scripts::Scripts;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

/// The outcome of one probe run: `Ok(Some(status))` carries a MISC
/// dynamic status.
pub type Outcome = Result<Option<u8>, Failure>;

/// Runs one probe. The real one does I/O; tests script results.
pub trait Prober: Send + Sync + 'static {
    /// Makes ready what the plan's probes need before they start (the
    /// half-open probes' raw sockets), reporting what is missing then; the
    /// prober's own timers keep `beat`, the engine's.
    fn prepare(&self, _plan: &Plan, _beat: Beat) {}

    /// Starts check `id` (`check`) without a task of its own, when its
    /// probe can (a half-open SYN): its end is sent to `done`. False: run
    /// it with [`Self::probe`].
    fn launch(
        &self,
        _check: &Planned,
        _id: usize,
        _done: &tokio::sync::mpsc::UnboundedSender<Done>,
    ) -> bool {
        false
    }

    /// Runs check `check` of the plan against url `url` (HTTP) with
    /// sequence number `seq` (PING/DNS).
    fn probe<'a>(
        &'a self,
        check: &'a Planned,
        url: usize,
        seq: u16,
    ) -> Pin<Box<dyn Future<Output = Outcome> + Send + 'a>>;
}

/// The prober that talks to the real servers.
pub struct NetProber {
    scripts: Scripts,
    half_open: HalfOpen,
    connects: Connects,
    /// The engine's beat, kept by the half-open sources' and the connect
    /// drivers' timers.
    beat: Arc<SharedBeat>,
}

impl NetProber {
    /// MISC_CHECK scripts run under `scripts`' cap, shared with the notify
    /// scripts.
    pub fn new(scripts: Scripts) -> NetProber {
        let beat = Arc::<SharedBeat>::default();
        NetProber {
            scripts,
            half_open: HalfOpen::new(beat.clone()),
            connects: Connects::new(beat.clone()),
            beat,
        }
    }
}

impl Prober for NetProber {
    fn prepare(&self, plan: &Plan, beat: Beat) {
        self.beat.set(beat);
        for c in plan.checks.iter() {
            if let ProbeKind::Tcp(c) = &c.kind {
                if c.half_open {
                    self.half_open.prepare(c);
                }
            }
        }
    }

    fn launch(
        &self,
        check: &Planned,
        id: usize,
        done: &tokio::sync::mpsc::UnboundedSender<Done>,
    ) -> bool {
        match &check.kind {
            // No raw socket for a half-open probe: it connects in full.
            ProbeKind::Tcp(c) if c.half_open => {
                self.half_open.launch(c, id, done) || self.connects.launch(c, id, done)
            }
            ProbeKind::Tcp(c) => self.connects.launch(c, id, done),
            _ => false,
        }
    }

    fn probe<'a>(
        &'a self,
        check: &'a Planned,
        url: usize,
        seq: u16,
    ) -> Pin<Box<dyn Future<Output = Outcome> + Send + 'a>> {
        // One box per kind, each the size of its own probe: a future over
        // all kinds would be the size of the largest (HTTP's) for every
        // TCP probe out, and tens of thousands can be out at once.
        match &check.kind {
            ProbeKind::Tcp(c) if c.half_open => Box::pin(async move {
                match self.half_open.probe(c).await {
                    Some(r) => r.map(|()| None),
                    // No raw socket there (logged when the checks started).
                    None => super::tcp::check(c).await.map(|()| None),
                }
            }),
            ProbeKind::Tcp(c) => Box::pin(async move { super::tcp::check(c).await.map(|()| None) }),
            ProbeKind::Http(h) => Box::pin(async move { h.check(url).await.map(|()| None) }),
            ProbeKind::Smtp(s) => {
                let (c, helo) = &**s;
                Box::pin(async move { super::smtp::check(c, helo).await.map(|()| None) })
            }
            ProbeKind::Udp(u) => Box::pin(async move { u.check().await.map(|()| None) }),
            ProbeKind::Dns(d) => Box::pin(async move { d.check(seq).await.map(|()| None) }),
            ProbeKind::Ping(c) => {
                Box::pin(async move { super::ping::check(c, seq).await.map(|()| None) })
            }
            ProbeKind::Misc {
                script,
                timeout,
                dynamic,
                ..
            } => Box::pin(async move {
                let end = self.scripts.run(script, *timeout).await?;
                misc::verdict(end, *dynamic)
            }),
            ProbeKind::File { .. } | ProbeKind::Bfd { .. } => {
                Box::pin(std::future::ready(Ok(None)))
            }
        }
    }
}
