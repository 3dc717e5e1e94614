//! The probes, behind one trait: [`NetProber`] talks to the real servers
//! (one module per checker type), tests script the results.
//!
//! I/O shell of the checker, called by the [`super::engine`]'s tasks.

use super::conn::Failure;
use super::misc::{self, Scripts};
use super::plan::{Planned, ProbeKind};
use std::future::Future;
use std::pin::Pin;

/// The outcome of one probe run: `Ok(Some(status))` carries a MISC
/// dynamic status.
pub type Outcome = Result<Option<u8>, Failure>;

/// Runs one probe. The real one does I/O; tests script results.
pub trait Prober: Send + Sync + 'static {
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
#[derive(Debug, Clone)]
pub struct NetProber {
    scripts: Scripts,
}

impl NetProber {
    /// MISC_CHECK scripts run under `scripts`' cap, shared with the notify
    /// scripts.
    pub fn new(scripts: Scripts) -> NetProber {
        NetProber { scripts }
    }
}

impl Prober for NetProber {
    fn probe<'a>(
        &'a self,
        check: &'a Planned,
        url: usize,
        seq: u16,
    ) -> Pin<Box<dyn Future<Output = Outcome> + Send + 'a>> {
        Box::pin(async move {
            match &check.kind {
                ProbeKind::Tcp(c) => super::tcp::check(c).await.map(|()| None),
                ProbeKind::Http(h) => h.check(url).await.map(|()| None),
                ProbeKind::Smtp(c, helo) => super::smtp::check(c, helo).await.map(|()| None),
                ProbeKind::Udp(u) => u.check().await.map(|()| None),
                ProbeKind::Dns(d) => d.check(seq).await.map(|()| None),
                ProbeKind::Ping(c) => super::ping::check(c, seq).await.map(|()| None),
                ProbeKind::Misc {
                    script,
                    timeout,
                    dynamic,
                } => {
                    let end = self.scripts.run(script, *timeout).await?;
                    misc::verdict(end, *dynamic)
                }
                ProbeKind::File { .. } => Ok(None),
            }
        })
    }
}
