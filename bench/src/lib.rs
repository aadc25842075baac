//! # bench: the ladder against real Redis, beside the floor and rslock
//!
//! `locklab bench` is [`run`] with [`BenchOptions`]; it returns the
//! [`Report`](report::Report) or a [`BenchError`], and leaves exit codes to
//! the command line. It starts its own `redis-server` processes (five, for
//! Redlock) on loopback unless URLs are given, pins the client and the
//! servers to CPUs (see [`placement`]), and measures, side by side in one
//! run:
//!
//! - the **floor**: a hand-written `SET NX PX` + `EVALSHA` release cycle on
//!   one connection per node (all nodes at once when N > 1), and the raw
//!   `PING` round trip of the same server;
//! - **rslock** 0.10, the crate a Rust user would pick instead;
//! - every rung of the ladder where the workload makes sense, and the
//!   library rungs ([`physics::LIBRARY_ROWS`]; the `rslock` rung as
//!   `rslock-model`, beside the crate it models);
//! - `native-cad`, whose release no server here answers, on locklab's
//!   simulated node served over TCP by this process ([`sim_node`]), beside
//!   the floor and `lua-release` on that node, reported apart;
//! - the **etcd rungs** on a real etcd member the run starts
//!   ([`report::BesideRedis`]; skipped, saying why, when etcd is not
//!   installed): uncontended beside
//!   the floor and `lua-release` on redis-server in the same rounds, with
//!   the member's own count of its log fsyncs per cycle
//!   ([`etcd_member`]), and a 16-client hand-off beside a polling and a
//!   pub/sub Redis rung, with the waiters' wake-ups per hand-off as the
//!   lock code counts them;
//! - the **ZooKeeper rungs** the same way, on a real ZooKeeper standalone
//!   server the run starts, its JVM with the full JIT (the same
//!   [`report::BesideRedis`] section; skipped, saying why, when ZooKeeper
//!   is not installed);
//! - the **database rungs** the same way, on a real PostgreSQL server and
//!   a real MariaDB server the run starts (sections of their own; each
//!   skipped, saying why, when its server is not installed), each rung's
//!   log fsyncs per cycle counted by the database itself in a pass after
//!   the timed rounds.
//!
//! The targets ([`targets`]) compare implementations named in advance,
//! in pairs measured in a seeded random order, in batches that each take
//! their share of the stage in a fresh client process (locklab started
//! again with [`BATCH_ENV`] set), one pair of every comparison per round
//! so that each comparison's pairs span the whole stage; each figure is
//! the median of its pairs' values with a distribution-free 95% interval
//! (order statistics, widened to the batch medians' own interval when
//! the machine drifted or the client processes differed, [`interval`]),
//! batches go on until the time budget is spent or every interval is as
//! narrow as the stop rule's finest. Beside it, each figure says where a
//! repeat run's median should land ([`interval::Repeat`], from the spread
//! of the batches' medians), and a verdict is given only when that whole
//! interval lies on one side of the goal, so that it holds from run to
//! run. The descriptive tables
//! interleave their implementations round by round in a shuffled order,
//! with intervals over rounds. Each uncontended row carries its round
//! trips per cycle ([`physics`]), the rate they allow at the measured
//! round trip, and an anomaly flag when it beats the floor as it cannot;
//! a reference `PING` loop, the CPU steal time and the round trip's modes
//! ([`noise`]) say what the machine was doing. In the contention figures,
//! a wait still open when a slice ends counts in the wait percentiles at
//! its open time (right-censored, see [`stats::Waits`]), so a worker that
//! never got the lock is not left out; each row says which wait figures
//! are thereby only lower bounds (`wait_lower_bounds`), how many waits
//! were open (`waits_open`) and how many workers starved in the worst
//! round (`starved_workers`). The report goes to `--out` (`bench.md`,
//! `bench.json`, SVG plots, and [`page`]'s `bench.html`, made from
//! `bench.json` alone), each file written whole; a run stopped by
//! Ctrl-C or `SIGTERM` keeps what it measured in `bench-partial.md` and
//! `bench-partial.json`.
//!
//! Failures come early and named: the `--out` folder is probed before any
//! server starts, and every `--redis` URL must parse and its server answer
//! `PING` within [`client::ANSWER_WITHIN`] before anything is measured. A
//! write that still fails at the end keeps `bench.json` in a temporary file
//! (or on standard output) and says where.
//!
//! Against a server it did not start, the run touches only keys and
//! channels under one unique prefix, deletes exactly those at the end
//! (also after Ctrl-C), never flushes, and says what it touched.

mod assemble;
pub mod cleanup;
pub mod client;
pub mod env;
pub mod error;
pub mod etcd_member;
pub mod interval;
pub mod markdown;
mod measure;
pub mod noise;
pub mod options;
pub mod page;
pub mod physics;
pub mod placement;
pub mod plot;
pub mod progress;
pub mod report;
pub mod rng;
mod run;
pub mod servers;
pub mod sim_node;
pub mod stats;
pub mod targets;
pub mod workload;
pub mod write;

pub use error::BenchError;
pub use measure::{BATCH_ENV, child_main as batch_child_main};
pub use options::BenchOptions;
pub use run::{etcd_rows, mysql_rows, postgres_rows, run, run_keeping, zookeeper_rows};
