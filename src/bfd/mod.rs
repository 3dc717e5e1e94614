//! BFD (RFC 5880/5881) as keepalived 2.2.7 runs it, for `bfd_instance`,
//! `track_bfd` and `BFD_CHECK`, beside `vrrp` and `check` (which consume
//! its sessions' states). Pure but for the seed of [`random`]: the control
//! packet ([`packet`]), one session's state machine and timers
//! ([`session`]), the session a packet is for ([`dispatch`]), all the
//! sessions with their events and log lines ([`scheduler`]), the SIGUSR1
//! file ([`dump`]). The subsystem that runs them on sockets is
//! `daemon::bfd`.

pub mod dispatch;
pub mod dump;
pub mod packet;
pub mod random;
pub mod scheduler;
pub mod session;
pub mod status;
