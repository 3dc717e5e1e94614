//! The checker side: health checks and keepalived's decisions on their
//! results. Today the pure decision core: checkers ([`state`]), real and
//! virtual servers ([`health`]); the checkers and the
//! engine that runs them arrive with issue 4.

pub mod health;
pub mod state;
