//! BFD (RFC 5880/5881) as keepalived 2.2.7 runs it, for `bfd_instance`,
//! `track_bfd` and `BFD_CHECK`, beside `vrrp` and `check` (which will
//! consume its sessions' states). Pure but for the seed of [`random`]: the
//! control packet ([`packet`]), one session's state machine and timers
//! ([`session`]), the session a packet is for ([`dispatch`]). The subsystem
//! that runs sessions on sockets, and what VRRP and the checker make of
//! their states, come next (issue 44).

pub mod dispatch;
pub mod packet;
pub mod random;
pub mod session;
