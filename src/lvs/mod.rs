//! The LVS side between health and the kernel: what table the configuration
//! and health call for ([`desired`]) and keeping the backend equal to it
//! ([`reconcile`]).
//!
//! Middle of the pipeline: config model (+ health state) → [`desired::desired`]
//! → [`reconcile::Reconciler`] → [`crate::ipvs::Backend`].

pub mod desired;
pub mod graceful;
pub mod reconcile;
pub mod syncd;

pub use desired::desired;
pub use reconcile::{Reconciler, Report};
