//! The simulated Redis node's integration tests.
//! Built as one test binary, one module per subject (one link instead of
//! one per file).

mod common;

mod blocking;
mod compare_and_delete;
mod conformance;
mod databases;
mod functions;
mod lua_differences;
mod real_clients;
mod real_tcp;
mod replicaof;
mod replication;
mod resp_fuzz;
mod sim;
