//! The simulated ZooKeeper's integration tests.
//! Built as one test binary, one module per subject (one link instead of
//! one per file).

mod common;

mod conformance;
mod curator;
mod ensemble;
mod server;
mod simulated;
mod zab_core;
mod zk_locks;
