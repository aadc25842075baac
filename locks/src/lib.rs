//! # locks: the Redis lock ladder, written once
//!
//! Every lock design from "no lock at all" to Redlock and fencing tokens is a
//! *rung* of a ladder: each rung fixes the flaw the rung below it shows, and
//! has a flaw of its own that a scenario demonstrates (the whole ladder, with
//! each rung's assumptions, is told in `docs/ladder.md`). Each rung is a real
//! implementation, flaws included: a rung that is broken by design stays
//! broken in exactly the way its documentation says, because locklab's
//! simulator exists to find that flaw.
//!
//! The same code runs against real Redis and inside the simulator, because
//! a rung touches the world only through three things it is given:
//!
//! - connections that implement [`redis::aio::ConnectionLike`]
//!   (a [`ReconnectingConnection`] over a tokio or turmoil stream);
//! - a [`Clock`] for wall time, monotonic time and sleeping;
//! - a [`FaultHook`] that is told each named [`FaultPoint`] the code passes.
//!
//! ## A lock cycle
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use locks::{ConnConfig, LockConfig, LockContext, Owner, ReconnectingConnection, SystemClock, TcpDialer};
//! use std::sync::Arc;
//!
//! let conn = ReconnectingConnection::new(TcpDialer::new("127.0.0.1:6379"), ConnConfig::default());
//! let ctx = LockContext::new(Arc::new(SystemClock::new()), 42);
//! let lock = locks::build("lua-release", vec![conn], ctx, LockConfig::default())?;
//!
//! let me = Owner::new("client-a", 1);
//! let lease = lock.acquire("locklab:stock", &me).await?;
//! lock.before_write(&lease).await?; // validity check + `before-write` point
//! // ... read, decrement and write the stock ...
//! lock.release(&lease).await?;
//! # Ok(()) }
//! ```
//!
//! ## The rungs
//!
//! Each rung lives in its own module under [`rungs`], with a doc comment in
//! three parts: **Fixes**, **Flaw**, **Shown by**, and holds only what it
//! does its own way ([`rungs::common::RungSteps`]); the retry loop and the
//! fault points around each step are shared. [`LADDER`] lists their
//! metadata in order, with the properties tests and tools select rungs by
//! ([`Rung::excludes`], [`Rung::publishes`], ...); [`build`] makes any of
//! them from its id.
//!
//! ## Your own lock
//!
//! A lock written elsewhere joins by [`register`]: its [`Rung`] metadata and
//! a factory from [`RungParts`] (connections, context, configuration), the
//! same entry point [`build`] uses for the ladder's rungs. A lock with no
//! Rust at all is a rung file ([`rungfile`]): its scripts and what their
//! replies mean, run by one generic lock.
//!
//! ## The libraries
//!
//! Beside the ladder, [`libraries`] models the lock algorithms of the
//! libraries people deploy (Redisson's lock, fair lock, read-write lock
//! and permit-expirable semaphore, go-redsync, node-redlock, rslock,
//! python-redis-lock, and a lock on native compare-and-delete commands),
//! each naming the version and file it mirrors. [`LIBRARIES`] lists them;
//! [`rung`] and [`build`] know them too.

pub mod clock;
pub mod conn;
pub mod database;
pub mod error;
pub mod etcd;
pub mod fault;
pub mod ladder;
pub mod lease;
pub mod libraries;
pub mod lock;
pub mod notify;
pub mod redis_server;
pub mod registry;
mod renewal;
pub mod rungfile;
pub mod rungs;
pub mod scripts;
pub mod token;
pub mod zookeeper;

pub use clock::{BoxFuture, Clock, SystemClock};
pub use conn::{ConnConfig, Dialer, ReconnectingConnection, TcpDialer};
pub use error::LockError;
pub use fault::{FaultHook, FaultPoint, NoFaults};
pub use ladder::{LADDER, Rung, UnknownRung, all_ids, build, excluding, ids, rung};
pub use lease::{Lease, Owner};
pub use libraries::LIBRARIES;
pub use lock::{Lock, LockConfig, LockContext, Unsettled, WaitStrategy, Wakeups, retry_acquire};
pub use notify::ReleaseNotifier;
pub use registry::{
    NodeConnection, RegisterError, Registration, RungFactory, RungParts, register, registered,
    registration,
};
pub use rungfile::{RungFile, RungFileError};
pub use token::TokenSource;
