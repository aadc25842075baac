//! A Redis connection that dials through any stream and reconnects.
//!
//! The `redis` crate's own dialer cannot run inside turmoil (it dials through
//! its own runtime), and a turmoil connection that lived through a partition
//! stays wedged forever. So locklab dials for itself: a [`Dialer`] makes a
//! stream (a turmoil `TcpStream` in the simulator, a tokio one for real
//! Redis), the crate's `MultiplexedConnection` speaks RESP over it, and
//! [`ReconnectingConnection`] throws the connection away after a timeout or
//! an I/O error so that the next command dials again.
//!
//! A blocking command (`BLPOP`, `WAIT`, `XREAD ... BLOCK`...) keeps the
//! server from answering on purpose, for as long as its own timeout says:
//! its reply is awaited for that long plus the response timeout, so a
//! long `BLPOP` is not mistaken for a dead server (see [`blocking_wait`]).
//! A command that blocks waiting for keys also goes over a connection of
//! its own, as a client library's connection pool gives it one: on the
//! shared connection it would hold up every other command of the client
//! (Redis answers a connection's commands in order), and when it is given
//! up its connection is closed, so the server forgets the blocked client
//! rather than hand it an element nobody will read.

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
    /// An idle connection of its own for the next command that blocks on
    /// keys (kept after one answered, as a pool keeps a connection).
    spare: Arc<Mutex<Option<OwnConnection>>>,
}

/// A connection that one blocking command uses alone. Dropping it stops
/// its driver, which closes the socket: the server then unblocks the
/// client, instead of serving it an element that nobody would read.
struct OwnConnection {
    conn: MultiplexedConnection,
    driver: tokio::task::AbortHandle,
}

impl Drop for OwnConnection {
    fn drop(&mut self) {
        self.driver.abort();
    }
}

/// How long a command keeps the server from answering on purpose, by its
/// own timeout argument: `None` for a command that answers at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlockingWait {
    /// Its timeout; `None` when it may wait for ever (a timeout of 0).
    pub timeout: Option<Duration>,
    /// Whether it waits for keys (`BLPOP`, `XREAD ... BLOCK`), and so
    /// goes over a connection of its own; `WAIT` and `WAITAOF` wait for
    /// the writes of their own connection and stay on it.
    pub on_keys: bool,
}

/// The blocking wait of `cmd`, if it is a blocking command: the list and
/// sorted-set pops (`BLPOP`, `BRPOP`, `BRPOPLPUSH`, `BLMOVE`, `BZPOPMIN`,
/// `BZPOPMAX` with the timeout last, in seconds; `BLMPOP`, `BZMPOP` with it
/// first), `XREAD`/`XREADGROUP` with `BLOCK ms`, and `WAIT`/`WAITAOF`
/// (the timeout last, in ms). A timeout that does not parse or is negative
/// is refused by the server at once: no wait.
pub fn blocking_wait(cmd: &Cmd) -> Option<BlockingWait> {
    let args: Vec<&[u8]> = cmd
        .args_iter()
        .filter_map(|a| match a {
            redis::Arg::Simple(bytes) => Some(bytes),
            _ => None,
        })
        .collect();
    let name = String::from_utf8_lossy(args.first()?).to_ascii_uppercase();
    let on_keys = |timeout| {
        Some(BlockingWait {
            timeout,
            on_keys: true,
        })
    };
    match name.as_str() {
        "BLPOP" | "BRPOP" | "BRPOPLPUSH" | "BLMOVE" | "BZPOPMIN" | "BZPOPMAX" if args.len() > 2 => {
            on_keys(seconds(args.last()?)?)
        }
        "BLMPOP" | "BZMPOP" => on_keys(seconds(args.get(1)?)?),
        "XREAD" | "XREADGROUP" => {
            let block = args.iter().position(|a| a.eq_ignore_ascii_case(b"BLOCK"))?;
            on_keys(millis(args.get(block + 1)?)?)
        }
        "WAIT" | "WAITAOF" if args.len() > 2 => Some(BlockingWait {
            timeout: millis(args.last()?)?,
            on_keys: false,
        }),
        _ => None,
    }
}

/// A timeout argument in seconds (a decimal since Redis 6.0): `Some(None)`
/// for 0 (for ever), `None` when the server would refuse it.
fn seconds(arg: &[u8]) -> Option<Option<Duration>> {
    let secs: f64 = std::str::from_utf8(arg).ok()?.trim().parse().ok()?;
    if !secs.is_finite() || secs < 0.0 {
        return None;
    }
    Some((secs > 0.0).then(|| Duration::from_secs_f64(secs)))
}

/// A timeout argument in milliseconds: `Some(None)` for 0 (for ever),
/// `None` when the server would refuse it.
fn millis(arg: &[u8]) -> Option<Option<Duration>> {
    let ms: u64 = std::str::from_utf8(arg).ok()?.trim().parse().ok()?;
    Some((ms > 0).then(|| Duration::from_millis(ms)))
}

impl<D: Dialer> Clone for ReconnectingConnection<D> {
    fn clone(&self) -> Self {
        ReconnectingConnection {
            dialer: self.dialer.clone(),
            config: self.config,
            current: self.current.clone(),
            dialing: self.dialing.clone(),
            spare: self.spare.clone(),
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
            spare: Arc::new(Mutex::new(None)),
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
        Ok(self.dial_own().await?.0)
    }

    /// Dials a connection and spawns its driver. Replies are awaited by
    /// [`reply_within`] here, not by the `redis` crate, so that a
    /// blocking command's reply may take as long as its own timeout.
    async fn dial_own(
        &self,
    ) -> Result<(MultiplexedConnection, tokio::task::AbortHandle), RedisError> {
        let stream = self.dialer.dial().await?;
        let config = AsyncConnectionConfig::new().set_response_timeout(None);
        let (conn, driver) =
            MultiplexedConnection::new_with_config(&RedisConnectionInfo::default(), stream, config)
                .await?;
        Ok((conn, tokio::spawn(driver).abort_handle()))
    }

    /// How long the reply of a command that waits `wait` may take: the
    /// response timeout beyond its wait; `None` (no bound) for one that
    /// may wait for ever.
    fn reply_deadline(&self, wait: Option<BlockingWait>) -> Option<Duration> {
        match wait {
            None => Some(self.config.response_timeout),
            Some(w) => w.timeout.map(|t| t + self.config.response_timeout),
        }
    }

    /// Runs a command that blocks on keys over a connection of its own
    /// (the spare one, or one dialled now); the connection is kept as the
    /// spare only after a reply, and closed otherwise.
    async fn on_own_connection(&self, cmd: &Cmd, wait: BlockingWait) -> Result<Value, RedisError> {
        let spare = lock(&self.spare).take();
        let mut own = match spare {
            Some(own) => own,
            None => {
                let (conn, driver) =
                    tokio::time::timeout(self.config.connect_timeout, self.dial_own())
                        .await
                        .map_err(|_| timeout_error("connect timed out"))??;
                OwnConnection { conn, driver }
            }
        };
        let reply = reply_within(
            self.reply_deadline(Some(wait)),
            own.conn.req_packed_command(cmd),
        )
        .await;
        if reply.is_ok() {
            let mut spare = lock(&self.spare);
            if spare.is_none() {
                *spare = Some(own);
            }
        }
        reply
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

/// Awaits a reply for at most `deadline` (`None`: for ever); past it, the
/// same timed-out error the `redis` crate's own response timeout gives.
async fn reply_within<T>(
    deadline: Option<Duration>,
    reply: impl Future<Output = Result<T, RedisError>>,
) -> Result<T, RedisError> {
    match deadline {
        Some(deadline) => tokio::time::timeout(deadline, reply)
            .await
            .map_err(|_| timeout_error("no reply within the response timeout"))?,
        None => reply.await,
    }
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
            let wait = blocking_wait(cmd);
            if let Some(wait) = wait.filter(|w| w.on_keys) {
                // Boxed apart: rare, and its state would grow every request.
                return Box::pin(self.on_own_connection(cmd, wait)).await;
            }
            let mut conn = self.live_or_dial().await?;
            let mut guard = CancelGuard {
                current: &self.current,
                armed: true,
            };
            let reply = reply_within(self.reply_deadline(wait), conn.req_packed_command(cmd)).await;
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
            let deadline = self.reply_deadline(None);
            let reply =
                reply_within(deadline, conn.req_packed_commands(pipeline, offset, count)).await;
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

#[cfg(test)]
mod tests {
    use super::*;

    fn wait_of(args: &[&str]) -> Option<BlockingWait> {
        let mut cmd = redis::cmd(args[0]);
        for a in &args[1..] {
            cmd.arg(*a);
        }
        blocking_wait(&cmd)
    }

    #[test]
    fn a_blocking_pop_waits_its_timeout_in_seconds_on_a_connection_of_its_own() {
        let blpop = wait_of(&["BLPOP", "signal", "1.5"]).expect("blocks");
        assert_eq!(blpop.timeout, Some(Duration::from_millis(1_500)));
        assert!(blpop.on_keys);
        let bzmpop = wait_of(&["BZMPOP", "2", "1", "z", "MIN"]).expect("blocks");
        assert_eq!(bzmpop.timeout, Some(Duration::from_secs(2)));
    }

    #[test]
    fn a_zero_timeout_waits_for_ever_and_a_bad_one_does_not_wait() {
        assert_eq!(wait_of(&["BLPOP", "k", "0"]).map(|w| w.timeout), Some(None));
        assert_eq!(wait_of(&["BLPOP", "k", "soon"]), None);
        assert_eq!(wait_of(&["BLPOP", "k", "-1"]), None);
    }

    #[test]
    fn wait_stays_on_its_connection_and_plain_commands_do_not_block() {
        let wait = wait_of(&["WAIT", "1", "250"]).expect("blocks");
        assert_eq!(wait.timeout, Some(Duration::from_millis(250)));
        assert!(!wait.on_keys);
        let xread = wait_of(&["XREAD", "BLOCK", "100", "STREAMS", "s", "$"]).expect("blocks");
        assert_eq!(xread.timeout, Some(Duration::from_millis(100)));
        assert_eq!(wait_of(&["XREAD", "STREAMS", "s", "0"]), None);
        assert_eq!(wait_of(&["SET", "k", "v"]), None);
        assert_eq!(wait_of(&["LPOP", "k"]), None);
    }
}
