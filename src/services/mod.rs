//! Services the subsystems share, below them and above `config`: scripts
//! run as keepalived runs them (run-as users, process groups, a pool per
//! use), the notify FIFOs and their scripts, SMTP alerts, and track files.
//! The checker's MISC_CHECK and FILE_CHECK, its notifies, and VRRP's
//! `vrrp_script`, `track_file` and notifies all stand on these; none of
//! them names a subsystem.

pub mod fifo;
pub mod scripts;
pub mod smtp_alert;
pub mod track_file;
