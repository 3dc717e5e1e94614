//! `keepalived_bfd.data`, written on SIGUSR1 (keepalived 2.2.7's
//! `bfd_data.c:dump_bfd_data`, `../shared/reference/bfd.md` §7): the BFD
//! topology with each session's configuration and state, under keepalived's
//! labels, so that what operators grep in the file keeps working. Pure:
//! the scheduler's sessions in, text out.

use super::packet::State;
use super::scheduler::Entry;
use std::fmt::Write as _;
use std::net::SocketAddr;

/// The file's text. `now_us` is the scheduler's clock and `unix_now` the
/// wall clock at the same moment (for "last seen"); `local` gives each
/// session's sending address.
pub fn render(
    router_id: Option<&str>,
    entries: &[Entry],
    now_us: u64,
    unix_now: f64,
    local: impl Fn(usize) -> Option<SocketAddr>,
) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "------< Global definitions >------");
    let _ = writeln!(o, " Router ID = {}", router_id.unwrap_or("[unknown]"));
    let _ = writeln!(o, "------< BFD Topology >------");
    for (id, e) in entries.iter().enumerate() {
        let s = &e.session;
        let p = s.params();
        let yes = |b: bool| if b { "Yes" } else { "No" };
        let _ = writeln!(o, " BFD Instance = {}", e.spec.name);
        let _ = writeln!(o, "   Neighbor IP = {}", e.spec.neighbor);
        if let Some(src) = e.spec.source {
            let _ = writeln!(o, "   Source IP = {src}");
        }
        if let Some(l) = local(id) {
            let _ = writeln!(o, "   Source port = {}", l.port());
        }
        let _ = writeln!(o, "   Required min RX interval = {} us", p.min_rx);
        let _ = writeln!(o, "   Desired min TX interval = {} us", p.min_tx);
        let _ = writeln!(o, "   Desired idle TX interval = {} us", p.idle_tx);
        let _ = writeln!(o, "   Detection multiplier = {}", p.mult);
        let ttl = if e.spec.neighbor.is_ipv6() {
            "hoplimit"
        } else {
            "TTL"
        };
        let _ = writeln!(o, "   {ttl} = {}", e.spec.ttl);
        let _ = writeln!(o, "   max_hops = {}", e.spec.max_hops);
        let _ = writeln!(o, "   passive = {}", p.passive);
        let _ = writeln!(o, "   send event to VRRP process = {}", yes(e.spec.vrrp));
        let _ = writeln!(
            o,
            "   send event to checker process = {}",
            yes(e.spec.checker)
        );
        let (rstate, rdiag) = s.remote();
        let (rtx, rrx, rmult) = s.remote_timers();
        let _ = writeln!(o, "   local state = {}", s.state());
        let _ = writeln!(o, "   remote state = {rstate}");
        let _ = writeln!(o, "   local discriminator = {:#x}", s.local_disc());
        let _ = writeln!(o, "   remote discriminator = {:#x}", s.remote_disc());
        let _ = writeln!(o, "   local diag = {}", s.diag());
        let _ = writeln!(o, "   remote diag = {rdiag}");
        let _ = writeln!(o, "   remote min tx intv = {rtx} us");
        let _ = writeln!(o, "   remote min rx intv = {rrx} us");
        let _ = writeln!(o, "   local demand = 0");
        let _ = writeln!(o, "   remote demand = 0");
        let _ = writeln!(o, "   remote detect multiplier = {rmult}");
        let _ = writeln!(o, "   {}poll, !final", if s.polling() { "" } else { "!" });
        let _ = writeln!(o, "   local tx intv = {} us", s.tx_interval());
        let _ = writeln!(o, "   remote tx intv = {} us", u64::from(rtx.max(p.min_rx)));
        let _ = writeln!(o, "   local detection time = {} us", s.detection_time());
        let remote_detect = u64::from(p.mult)
            * u64::from(rrx.max(if s.state() == State::Up {
                p.min_tx
            } else {
                p.idle_tx
            }));
        let _ = writeln!(o, "   remote detection time = {remote_detect} us");
        match e.last_seen {
            Some(t) => {
                let at = unix_now - now_us.saturating_sub(t) as f64 / 1e6;
                let _ = writeln!(o, "   last seen = {at:.6}");
            }
            None => {
                let _ = writeln!(o, "   last seen = [never]");
            }
        }
        let _ = writeln!(o, "   packets received = {}, sent = {}", e.rx, e.tx);
    }
    o
}
