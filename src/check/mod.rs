//! The checker side: health checks and keepalived's decisions on their
//! results. Today the pure decision core ([`state`]); the checkers and the
//! engine that runs them arrive with issue 4.

pub mod state;
