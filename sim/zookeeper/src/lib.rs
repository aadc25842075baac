//! A simulated ZooKeeper 3.8 server that speaks ZooKeeper's own client
//! protocol, so that `zkCli.sh`, Curator and any ZooKeeper client work
//! against it unchanged, on a real TCP port or on turmoil's simulated
//! network: standalone ([`Server::new`]), or a member of an ensemble on
//! turmoil ([`Server::member`], see [`member`]) whose writes go through
//! ZAB ([`zab`]).
//!
//! # What it serves
//!
//! - the handshake: new sessions, a session resumed with its id and
//!   password (a wrong password or a gone session gets ZooKeeper's
//!   timeout-0 answer), the timeout clamped to the server's bounds;
//! - `create` (persistent, ephemeral, sequential, container; TTL is
//!   refused as a default server refuses it), `create2`, `delete`,
//!   `exists`, `getData`, `setData`, `getChildren`, `getChildren2`,
//!   `getACL`, `setACL`, `sync`, `getAllChildrenNumber`, `getEphemerals`,
//!   pings, `closeSession`;
//! - one-shot data and child watches, persistent (and recursive) ones from
//!   `addWatch`, set again after a reconnect with `setWatches(2)`;
//! - `multi` (with `check`), all or nothing; containers swept every minute;
//! - sessions that expire on the server's tick when their client falls
//!   silent, taking their ephemeral nodes with them.
//!
//! # The model
//!
//! A write is prepared into a transaction ([`prep`], ZooKeeper's
//! `PrepRequestProcessor`: every check, in its order) and applied to the
//! tree ([`apply`], `DataTree.processTxn`): both are pure functions of
//! the tree, so an ensemble's members, applying the same writes in zxid
//! order, derive the same transactions. A failed write is a transaction too and takes a zxid, as in
//! ZooKeeper. [`tree`] keeps each node's stat as ZooKeeper stores it and
//! shows it as ZooKeeper shows it; [`session`] tracks deadlines in
//! tick-rounded buckets; [`watch`] keeps the watches per connection;
//! [`core`] runs it all under one lock, one message at a time; [`conn`]
//! moves frames and [`server`] accepts connections. [`zab`] is the
//! ensemble's atomic broadcast, a pure core; [`member`] drives it for a
//! server of an ensemble: the leader orders every write, each member
//! applies them in zxid order and answers its own clients.
//!
//! # Fidelity
//!
//! `zkCli.sh` prints the same lines against this server as against
//! ZooKeeper 3.8.0, but for times and session ids; the crate's README.md
//! lists what it leaves out.
//!
//! # Determinism
//!
//! Time comes from `tokio::time` (turmoil's inside turmoil) and the wall
//! clock from [`Config::wall_clock_ms`]; session ids count up from a fixed
//! base and their passwords are ZooKeeper's function of the id. The
//! [`Server`] outlives its host: a restart keeps the tree and sessions,
//! loses the connections, and gives every session its full timeout again.

pub mod apply;
pub mod auth;
pub mod conn;
pub mod core;
pub mod member;
pub mod prep;
pub mod server;
pub mod session;
pub mod tree;
pub mod txn;
pub mod watch;
pub mod zab;

pub use apply::{Change, ChangeKind};
pub use core::{Config, Server};
pub use member::{PEER_PORT, Place};
pub use server::{CLIENT_PORT, serve_sim, serve_tcp};
