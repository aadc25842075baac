//! The guarded resource: the sources' inventory, kept on its own simulated
//! node (`store`), so that partitions and delays reach it like any service.
//!
//! A sale is a read, a decrement in the client and a write: without mutual
//! exclusion two buyers read the same stock and one sale is lost. In a
//! *fenced* store every read and write carries the lease's fencing token
//! and the store refuses a token lower than the highest it has seen;
//! checking reads too is what makes a read-modify-write safe: a stale
//! holder that read before a newer holder cannot write afterwards.

use locks::{Dialer, ReconnectingConnection};
use model::history::Outcome;
use model::resource::{FENCE_KEY, STOCK_KEY};
use redis::Script;
use std::sync::LazyLock;

static FENCED_READ: LazyLock<Script> =
    LazyLock::new(|| Script::new(include_str!("lua/fenced_read.lua")));
static FENCED_WRITE: LazyLock<Script> =
    LazyLock::new(|| Script::new(include_str!("lua/fenced_write.lua")));

/// Why a resource operation failed.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The fenced store refused a stale token.
    #[error("rejected: {0}")]
    Rejected(String),
    /// The store could not be reached, or answered oddly.
    #[error("store: {0}")]
    Redis(redis::RedisError),
}

impl StoreError {
    /// How the history records it.
    pub fn outcome(&self) -> Outcome {
        match self {
            StoreError::Rejected(_) => Outcome::Fail,
            StoreError::Redis(_) => Outcome::Unknown,
        }
    }
}

impl From<redis::RedisError> for StoreError {
    fn from(e: redis::RedisError) -> Self {
        if e.code() == Some("STALE") {
            StoreError::Rejected(e.to_string())
        } else {
            StoreError::Redis(e)
        }
    }
}

/// A client's handle on the guarded stock.
pub struct Store<D: Dialer = crate::dial::SimDialer> {
    conn: ReconnectingConnection<D>,
    fenced: bool,
}

impl<D: Dialer> Store<D> {
    /// A handle; `fenced` when the store checks tokens.
    pub fn new(conn: ReconnectingConnection<D>, fenced: bool) -> Self {
        Store { conn, fenced }
    }

    /// Reads the stock (with the lease's token when fenced).
    pub async fn read(&self, token: Option<u64>) -> Result<i64, StoreError> {
        let mut conn = self.conn.clone();
        match (self.fenced, token) {
            (true, Some(token)) => Ok(FENCED_READ
                .key(STOCK_KEY)
                .key(FENCE_KEY)
                .arg(token)
                .invoke_async(&mut conn)
                .await?),
            _ => {
                let value: Option<i64> = redis::cmd("GET")
                    .arg(STOCK_KEY)
                    .query_async(&mut conn)
                    .await?;
                Ok(value.unwrap_or(0))
            }
        }
    }

    /// Writes the stock (with the lease's token when fenced: a store that
    /// checks tokens cannot check a write that carries none).
    pub async fn write(&self, value: i64, token: Option<u64>) -> Result<(), StoreError> {
        let mut conn = self.conn.clone();
        match (self.fenced, token) {
            (true, Some(token)) => {
                let _: i64 = FENCED_WRITE
                    .key(STOCK_KEY)
                    .key(FENCE_KEY)
                    .arg(token)
                    .arg(value)
                    .invoke_async(&mut conn)
                    .await?;
                Ok(())
            }
            _ => {
                let _: () = redis::cmd("SET")
                    .arg(STOCK_KEY)
                    .arg(value)
                    .query_async(&mut conn)
                    .await?;
                Ok(())
            }
        }
    }
}
