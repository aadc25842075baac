//! A simulated etcd member that speaks etcd's own v3 gRPC API, so that
//! `etcdctl` and any etcd client work against it unchanged.
//!
//! # What it serves
//!
//! - KV: `Range` (prefixes, sorting, limits, revision filters, reads at a
//!   past revision), `Put` (leases, `prev_kv`, `ignore_value`,
//!   `ignore_lease`), `DeleteRange`, `Txn` (compares on version, create
//!   and mod revision, value and lease; nested transactions), `Compact`;
//! - Lease: `LeaseGrant` (with etcd's minimum TTL), `LeaseRevoke`,
//!   `LeaseKeepAlive`, `LeaseTimeToLive`, `LeaseLeases`;
//! - Watch: from a past revision, PUT and DELETE events, `prev_kv`,
//!   filters, cancel;
//! - Lock and Unlock, as etcd 3.4 implements them ([`lock`]), with its
//!   bug, or with 3.5's fix;
//! - `Status` and `MemberList`, which `etcdctl endpoint status` and
//!   `member list` ask.
//!
//! # The model
//!
//! [`mvcc`] keeps one revision for the whole keyspace and every version
//! of every key; [`lease`] expires leases on the member's monotonic clock;
//! [`member`] applies each request under one lock, as a single member
//! applies its log, and feeds the watchers ([`watch`]).
//!
//! # Fidelity
//!
//! The conformance suite (`tests/etcd_tests/conformance.rs`) runs one list of
//! `etcdctl` commands against Debian's etcd 3.4.23 and against this member
//! and requires the same output. The crate's README.md lists what it
//! leaves out.

pub mod command;
pub mod errors;
pub mod keys;
pub mod lease;
pub mod lock;
pub mod member;
pub mod mvcc;
pub mod node;
pub mod raft;
pub mod server;
pub mod service;
pub mod watch;

pub use lock::Recheck;
pub use member::{Identity, Member};
pub use node::{Node, Place};
pub use server::{CLIENT_PORT, serve_sim, serve_tcp};
