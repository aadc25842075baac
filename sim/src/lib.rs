//! # sim: the lock ladder on simulated Redis nodes
//!
//! A *scenario* (a TOML file, see `scenarios/README.md`) describes a Redis
//! deployment, clients that sell stock under a lock, and faults. [`run::run`]
//! builds that world on turmoil's deterministic network with `simredis`
//! nodes, runs the real lock code of the `locks` crate in it, fires the
//! faults, and returns the `History` (the `model` crate's): every invoke
//! and completion, every fault, and the nodes' own record of the lock key.
//! The checkers then judge the history.
//!
//! The words used here (rung, cycle, host, holding, fault point, verdict)
//! are defined in `docs/ladder.md`; `docs/architecture.md` follows one
//! run's data through these modules. The pieces, one concept per module:
//!
//! - the scenario format, its faults, hosts, the history and the verdict
//!   words are the `model` crate's, shared with real mode and the reports;
//! - [`run`], [`world`], [`machines`], [`agenda`], [`nemesis`], [`links`],
//!   [`killed_servers`]: running one cell: the world, which machine each
//!   client runs on, the driver's timed actions, what every fault means
//!   (for both engines, over their stages), the link faults in force, and
//!   the machines of killed servers, which refuse connections;
//! - [`client_state`], [`client_host`], [`freeze`], [`client_clock`],
//!   [`dial`], [`hook`]: a client: its state across restarts (both
//!   engines), how a simulated one is paused, skewed, connected and hit
//!   at fault points;
//! - [`workload`], [`resource`]: what a client does, and what it guards;
//! - [`service`]: lock services, the servers locks run on (Redis's
//!   simulated nodes the first), behind one trait; the store that holds
//!   the resource is a Redis node whatever the service (`store_host`);
//! - [`recorder`], [`mailbox`], [`directory`]: what the hosts share with
//!   the driver: the history sink, fault requests, and where `master`
//!   points;
//! - [`cell`]: one cell run and judged (the checkers and the verdict are
//!   the `judge` crate's);
//! - [`suite`], [`tour`], [`explore`], [`estimate`], [`exit`]: the long
//!   commands' engines (they return typed results: the command line hands
//!   them to the `report` crate, which renders the pages, matrices,
//!   timelines and run folders) and the exit code every command returns;
//!   [`interrupt`]: how a long command learns it was asked to stop;
//! - [`rung_file`]: rungs from outside the ladder (rung files, or a
//!   user's own registered lock) and their part in a scenario.

pub mod agenda;
pub mod cell;
pub mod client_clock;
pub mod client_host;
pub mod client_state;
pub mod dial;
pub mod directory;
pub mod estimate;
pub mod exit;
pub mod explore;
pub mod freeze;
pub mod hook;
pub mod interrupt;
pub mod killed_servers;
pub mod links;
pub mod machines;
pub mod mailbox;
pub mod nemesis;
pub mod recorder;
pub mod resource;
pub mod run;
pub mod rung_file;
pub mod service;
mod store_host;
pub mod suite;
pub mod tour;
pub mod workload;
pub mod world;
mod world_stage;
