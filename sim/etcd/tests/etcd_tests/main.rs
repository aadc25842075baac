//! The simulated etcd's integration tests.
//! Built as one test binary, one module per subject (one link instead of
//! one per file).

mod common;

mod cluster;
mod conformance;
mod etcd_locks;
mod etcd_locks_real;
mod lock_rpc_conformance;
mod raft_core;
