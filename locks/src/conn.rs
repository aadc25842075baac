//! A Redis connection that dials through any stream and reconnects.
//!
//! The `redis` crate's own dialer cannot run inside turmoil (it dials through
//! its own runtime), and a turmoil connection that lived through a partition
//! stays wedged forever. So locklab dials for itself: a [`Dialer`] makes a
//! stream (a turmoil `TcpStream` in the simulator, a tokio one for real
//! Redis), the crate's `MultiplexedConnection` speaks RESP over it, and
//! [`ReconnectingConnection`] throws the connection away after a timeout or
//! an I/O error so that the next command dials again.

use crate::clock::BoxFuture;
use redis::aio::{ConnectionLike, MultiplexedConnection};
use redis::{
    AsyncConnectionConfig, Cmd, Pipeline, RedisConnectionInfo, RedisError, RedisFuture, Value,
};
use std::io;
use std::sync::Arc;
use std::sync::Mutex;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite};

/// Makes a fresh byte stream to one Redis node.
pub trait Dialer: Send + Sync + 'static {
    /// The stream type.
    type Stream: AsyncRead + AsyncWrite + Unpin + Send + 'static;
    /// Opens a stream (the caller bounds it with a timeout).
    fn dial(&self) -> BoxFuture<'static, io::Result<Self::Stream>>;
}

/// Dials a real TCP address with tokio.
#[derive(Debug, Clone)]
pub struct TcpDialer {
    addr: String,
}

impl TcpDialer {
    /// A dialer for `host:port`.
    pub fn new(addr: impl Into<String>) -> Self {
        TcpDialer { addr: addr.into() }
    }
}

impl Dialer for TcpDialer {
    type Stream = tokio::net::TcpStream;

    fn dial(&self) -> BoxFuture<'static, io::Result<Self::Stream>> {
        let addr = self.addr.clone();
        Box::pin(async move {
            let stream = tokio::net::TcpStream::connect(addr).await?;
            stream.set_nodelay(true)?;
            Ok(stream)
        })
    }
}

/// Timeouts of a [`ReconnectingConnection`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnConfig {
    /// Bound on dialing plus the handshake (a crashed host never answers).
    pub connect_timeout: Duration,
    /// Bound on each reply.
    pub response_timeout: Duration,
}

impl Default for ConnConfig {
    fn default() -> Self {
        ConnConfig {
            connect_timeout: Duration::from_millis(1_000),
            response_timeout: Duration::from_millis(1_000),
        }
    }
}

/// A cloneable connection to one node that redials after failures.
///
/// Clones share one underlying connection (commands are multiplexed).
pub struct ReconnectingConnection<D: Dialer> {
    dialer: Arc<D>,
    config: ConnConfig,
    /// The live connection; a plain mutex, held only to clone or clear it,
    /// so the per-command fast path never waits.
    current: Arc<Mutex<Option<MultiplexedConnection>>>,
    /// Serialises dialing, so concurrent commands share one new connection.
    dialing: Arc<tokio::sync::Mutex<()>>,
}

impl<D: Dialer> Clone for ReconnectingConnection<D> {
    fn clone(&self) -> Self {
        ReconnectingConnection {
            dialer: self.dialer.clone(),
            config: self.config,
            current: self.current.clone(),
            dialing: self.dialing.clone(),
        }
    }
}

impl<D: Dialer> std::fmt::Debug for ReconnectingConnection<D> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReconnectingConnection")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl<D: Dialer> ReconnectingConnection<D> {
    /// A connection that dials lazily, on its first command.
    pub fn new(dialer: D, config: ConnConfig) -> Self {
        ReconnectingConnection {
            dialer: Arc::new(dialer),
            config,
            current: Arc::new(Mutex::new(None)),
            dialing: Arc::new(tokio::sync::Mutex::new(())),
        }
    }

    /// Dials now, so that the first command does not pay for it.
    pub async fn connect(&self) -> Result<(), RedisError> {
        self.get().await.map(|_| ())
    }

    fn live(&self) -> Option<MultiplexedConnection> {
        lock(&self.current).clone()
    }

    async fn get(&self) -> Result<MultiplexedConnection, RedisError> {
        if let Some(conn) = self.live() {
            return Ok(conn);
        }
        let _dialing = self.dialing.lock().await;
        // Another command may have dialed while this one waited.
        if let Some(conn) = self.live() {
            return Ok(conn);
        }
        let conn = tokio::time::timeout(self.config.connect_timeout, self.dial())
            .await
            .map_err(|_| timeout_error("connect timed out"))??;
        *lock(&self.current) = Some(conn.clone());
        Ok(conn)
    }

    /// The live connection, or one dialled now. Every request starts here:
    /// the dial is boxed apart so that a request's own future stays small
    /// (it is allocated on every command, and a dial's state is large).
    async fn live_or_dial(&self) -> Result<MultiplexedConnection, RedisError> {
        match self.live() {
            Some(conn) => Ok(conn),
            None => Box::pin(self.get()).await,
        }
    }

    async fn dial(&self) -> Result<MultiplexedConnection, RedisError> {
        let stream = self.dialer.dial().await?;
        let config =
            AsyncConnectionConfig::new().set_response_timeout(Some(self.config.response_timeout));
        let (conn, driver) =
            MultiplexedConnection::new_with_config(&RedisConnectionInfo::default(), stream, config)
                .await?;
        tokio::spawn(driver);
        Ok(conn)
    }

    /// Drops the shared connection after a failure that may have left it
    /// wedged, so that the next command redials.
    fn forget_on(&self, err: &RedisError) {
        if err.is_timeout()
            || err.is_io_error()
            || err.is_connection_dropped()
            || err.is_unrecoverable_error()
        {
            *lock(&self.current) = None;
        }
    }
}

/// Locks a mutex, also after a panic elsewhere poisoned it (the slot holds
/// no invariant a panic could break).
fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|p| p.into_inner())
}

fn timeout_error(what: &'static str) -> RedisError {
    RedisError::from(io::Error::new(io::ErrorKind::TimedOut, what))
}

/// Forgets the shared connection if a request is dropped before its reply
/// came (a caller's own timeout, such as Redlock's per-node timeout, fired
/// first): the connection may be wedged, e.g. by a partition that healed,
/// and only a fresh dial is sure to work.
struct CancelGuard<'a> {
    current: &'a Mutex<Option<MultiplexedConnection>>,
    armed: bool,
}

impl Drop for CancelGuard<'_> {
    fn drop(&mut self) {
        if self.armed {
            *lock(self.current) = None;
        }
    }
}

impl<D: Dialer> ConnectionLike for ReconnectingConnection<D> {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        Box::pin(async move {
            let mut conn = self.live_or_dial().await?;
            let mut guard = CancelGuard {
                current: &self.current,
                armed: true,
            };
            let reply = conn.req_packed_command(cmd).await;
            guard.armed = false;
            if let Err(err) = &reply {
                self.forget_on(err);
            }
            reply
        })
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        Box::pin(async move {
            let mut conn = self.live_or_dial().await?;
            let reply = conn.req_packed_commands(pipeline, offset, count).await;
            if let Err(err) = &reply {
                self.forget_on(err);
            }
            reply
        })
    }

    fn get_db(&self) -> i64 {
        0
    }
}
