//! # real: scenarios on real `redis-server`, with real faults
//!
//! `locklab run SCENARIO --real` and `locklab suite --real` run the same
//! scenario files, the same rung code (the `locks` crate) and the same
//! workload (`sim::workload`) as the simulator, against real
//! `redis-server` processes on 127.0.0.1, and judge the histories with the
//! same checkers (`sim::check`). The pieces:
//!
//! - [`proxy`]: locklab's fault-injecting TCP proxy (partitions, one-way
//!   partitions, holds, slow links), one link per (client, node) and per
//!   (replica, master) pair; [`links`] maps the simulator's link faults
//!   onto it;
//! - [`service`]: the real half of each lock service (Redis the first):
//!   its deployment's servers, started, killed, restarted, promoted, and
//!   a node's clock moved by the service's own means (for Redis, the
//!   deadlines of its keys shifted);
//! - [`nodes`]: `redis-server` processes (started, killed with `SIGKILL`,
//!   restarted on the same port and data directory) through `harness`:
//!   the store's and the Redis service's;
//! - [`node_clock`]: a node's clock jump or drift as an offset that the
//!   service stages, drift a little at a time;
//! - [`client`], [`clock`], [`hook`]: a client process as its own thread
//!   and runtime, frozen whole by a stop-the-world pause; its clock; its
//!   fault points;
//! - [`run`]: the driver of one real run; [`stage`]: what can be staged
//!   and what is refused as "not stageable";
//! - [`cell`]: a cell run R times, its verdict counts and its run folders;
//!   [`agreement`]: the simulator's verdicts beside the real ones
//!   (`reports/reality.{md,json}`).
//!
//! Real runs are not deterministic: each cell runs R times and reports how
//! many runs gave each verdict. Time in a real history is the machine's
//! monotonic clock since the workload started, shared by every client.

pub mod agreement;
pub mod cell;
pub mod client;
pub mod clock;
pub mod hook;
pub mod links;
pub mod node_clock;
pub mod nodes;
pub mod proxy;
mod real_stage;
pub mod run;
pub mod server_features;
pub mod service;
pub mod stage;
