//! Simulated Redis nodes for [turmoil]: a RESP2 server that answers like
//! Redis 7.0.15, runs Lua scripts like Redis, expires keys by its own
//! (skewable) clock, replicates asynchronously, persists (or not) across
//! crashes, and reports what it did to its keys as ground truth.
//!
//! # A node in a simulation
//!
//! A node is described by a [`NodeConfig`] and controlled through a
//! [`NodeHandle`], which lives outside the simulated host (so the node's
//! clock, disk and event sink survive a crash of the host). [`serve`] is the
//! host's body; the unmodified `redis` crate client talks to it over
//! `turmoil::net::TcpStream`:
//!
//! ```no_run
//! use std::time::Duration;
//! use simredis::{NodeConfig, NodeHandle, serve};
//!
//! let mut sim = turmoil::Builder::new().build();
//! let node = NodeHandle::new(NodeConfig::new("redis"));
//! let h = node.clone();
//! sim.host("redis", move || serve(h.clone()));
//! sim.client("app", async {
//!     let stream = turmoil::net::TcpStream::connect(("redis", 6379)).await?;
//!     let (mut con, driver) = redis::aio::MultiplexedConnection::new_with_config(
//!         &redis::RedisConnectionInfo::default(),
//!         stream,
//!         redis::AsyncConnectionConfig::new().set_response_timeout(Some(Duration::from_secs(1))),
//!     )
//!     .await?;
//!     tokio::spawn(driver);
//!     let ok: Option<String> = redis::cmd("SET")
//!         .arg("lock").arg("token").arg("NX").arg("PX").arg(30_000)
//!         .query_async(&mut con).await?;
//!     assert_eq!(ok.as_deref(), Some("OK"));
//!     Ok(())
//! });
//! sim.run().unwrap();
//! ```
//!
//! # Clocks
//!
//! Each node reads its own wall clock ([`clock`]): a fixed epoch plus true
//! simulated time, scaled by a drift and moved by jumps. Deadlines are
//! absolute times of that clock, as in Redis 7, so
//! [`NodeHandle::jump_clock`] forward expires keys early.
//!
//! # Ground truth
//!
//! [`NodeHandle::set_sink`] attaches an [`EventSink`] that receives a
//! [`NodeEvent`] each time a key is written, expires or is deleted, stamped
//! with true simulated time.
//!
//! # Replication, failover, persistence
//!
//! [`NodeConfig::replica_of`] makes a node follow a master ([`replication`]);
//! [`NodeHandle::promote`] fails over. A replica's
//! [`NodeConfig::replication_delay`] is time its writes wait in the master's
//! buffer, so a master that crashes within it loses writes it has already
//! acknowledged. [`Persistence`] chooses what survives
//! a crash; declare the kind of crash with [`NodeHandle::set_crash_kind`]
//! before `Sim::crash`, and restart with `Sim::bounce`.
//!
//! # Fidelity
//!
//! The conformance suite (`tests/conformance.rs`) replays one list of
//! command sequences against a real `redis-server` and against this node
//! and requires identical replies. Deliberate differences are listed in the
//! crate's README.md, which also maps the source files.

mod blocking;
mod busy;
mod cjson;
mod client;
pub mod clock;
mod cmsgpack;
mod commands;
mod databases;
pub mod draws;
pub mod events;
mod glob;
pub mod handle;
mod inbox;
pub mod keyspace;
pub mod lua;
pub mod node;
mod notifications;
pub mod persistence;
pub mod replication;
pub mod resp;
mod sandbox;
pub mod server;
pub mod sorted_set;
pub mod tcp;
pub mod version;

pub use clock::{ClockSpec, NodeClock};
pub use events::{EventKind, EventSink, NodeEvent, Origin, Value};
pub use handle::{MasterAddr, NodeConfig, NodeHandle, Role};
pub use persistence::{CrashKind, Persistence};
pub use server::serve;
pub use tcp::{real_time, serve_bound_until, serve_tcp, serve_tcp_listener, serve_tcp_until};
pub use version::{Feature, ServerVersion};
