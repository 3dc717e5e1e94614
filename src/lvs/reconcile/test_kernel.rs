use super::*;
use crate::ipvs::dryrun::DryRun;
use crate::ipvs::{Dest, Service, SyncDaemon};

pub struct Kernel {
    pub dry: DryRun,
    pub dumps: usize,
    pub refuse: Option<&'static str>,
}

impl Kernel {
    pub fn refusing(sched: Option<&'static str>) -> Kernel {
        Kernel {
            dry: DryRun::new(),
            dumps: 0,
            refuse: sched,
        }
    }
}

impl Backend for Kernel {
    fn name(&self) -> &'static str {
        "test"
    }
    async fn dump(&mut self) -> Result<Table, IpvsError> {
        self.dumps += 1;
        self.dry.dump().await
    }
    async fn services(&mut self) -> Result<Vec<Service>, IpvsError> {
        self.dry.services().await
    }
    async fn dests_of(&mut self, svc: &ServiceKey) -> Result<Option<Vec<Dest>>, IpvsError> {
        self.dry.dests_of(svc).await
    }
    async fn apply(&mut self, ops: &[Op]) -> Vec<Result<(), IpvsError>> {
        let mut out = Vec::new();
        for op in ops {
            if matches!(op, Op::AddService(s) if Some(s.sched_name.as_str()) == self.refuse) {
                out.push(Err(IpvsError::Kernel {
                    op: op.to_string(),
                    errno: ENOENT,
                }));
            } else {
                out.extend(self.dry.apply(std::slice::from_ref(op)).await);
            }
        }
        out
    }
    async fn timeouts(&mut self) -> Result<Timeouts, IpvsError> {
        self.dry.timeouts().await
    }
    async fn set_timeouts(&mut self, t: Timeouts) -> Result<(), IpvsError> {
        self.dry.set_timeouts(t).await
    }
    async fn start_daemon(&mut self, d: &SyncDaemon) -> Result<(), IpvsError> {
        self.dry.start_daemon(d).await
    }
    async fn stop_daemon(&mut self, state: u32, syncid: u32) -> Result<(), IpvsError> {
        self.dry.stop_daemon(state, syncid).await
    }
}
