//! What the multi-node library rungs share: their nodes and configuration,
//! one concurrent round of a command on every node, and the automatic
//! extension that node-redlock's and rslock's `using()` run beside the
//! caller's routine.

use crate::clock::Clock;
use crate::error::LockError;
use crate::fault::FaultPoint;
use crate::lease::LostFlag;
use crate::lock::{LockConfig, LockContext};
use crate::rungs::common::{Configured, NodeConn};
use crate::rungs::watchdog::MAX_RENEWALS;
use std::sync::Arc;
use std::time::Duration;

/// N independent masters, the client's context and the rung's
/// configuration: what every multi-node library rung is built on.
#[derive(Clone)]
pub struct Masters<C> {
    pub(crate) nodes: Vec<C>,
    pub(crate) ctx: LockContext,
    pub(crate) config: LockConfig,
}

impl<C: NodeConn> Masters<C> {
    /// The masters `nodes` (at least one).
    pub fn new(nodes: Vec<C>, ctx: LockContext, config: LockConfig) -> Self {
        assert!(!nodes.is_empty(), "a quorum lock needs at least one master");
        Masters { nodes, ctx, config }
    }

    /// How many masters must agree: N/2+1, in every library modelled here.
    pub fn quorum(&self) -> usize {
        self.nodes.len() / 2 + 1
    }

    /// Runs `op` on every master at once, each bounded by `timeout` when
    /// one is given (else by the connection's own reply timeout); the
    /// replies come back in node order. With `reporting`, the
    /// `acquire-reply` fault point is passed as each reply comes in, as in
    /// the ladder's `redlock`, so a scenario can aim a fault between them.
    pub(crate) async fn round<T, F, Fut>(
        &self,
        timeout: Option<Duration>,
        reporting: Option<&str>,
        op: F,
    ) -> Vec<Result<T, LockError>>
    where
        F: Fn(C) -> Fut,
        Fut: Future<Output = Result<T, LockError>>,
    {
        let requests = self.nodes.iter().map(|conn| {
            let request = op(conn.clone());
            async move {
                let reply = match timeout {
                    Some(t) => tokio::time::timeout(t, request)
                        .await
                        .unwrap_or_else(|_| Err(timed_out())),
                    None => request.await,
                };
                if let Some(resource) = reporting {
                    self.ctx.point(FaultPoint::AcquireReply, resource).await;
                }
                reply
            }
        });
        futures::future::join_all(requests).await
    }
}

/// How many replies of a round are `Ok(true)`.
pub(crate) fn votes(replies: &[Result<bool, LockError>]) -> usize {
    replies.iter().filter(|r| matches!(r, Ok(true))).count()
}

/// The error of a master that did not answer within its time.
fn timed_out() -> LockError {
    LockError::Redis(redis::RedisError::from(std::io::Error::new(
        std::io::ErrorKind::TimedOut,
        "the master did not answer within the library's per-node timeout",
    )))
}

impl<C> Configured for Masters<C> {
    fn ctx(&self) -> &LockContext {
        &self.ctx
    }

    fn config(&self) -> &LockConfig {
        &self.config
    }
}

/// One automatic extension of a held lock, as a library's `using()` runs
/// it beside the caller's routine.
pub(crate) trait Extension: Send + 'static {
    /// How long after `now` (the holder's monotonic clock) the next
    /// extension is due.
    fn due_in(&self, now: Duration) -> Duration;

    /// Extends the lock once; `Err` when the library gives the lock up.
    fn extend(&mut self) -> impl Future<Output = Result<(), LockError>> + Send;

    /// What the library does once an extension failed, before the routine
    /// is told (rslock releases the lock everywhere); nothing by default.
    fn after_failure(&mut self) -> impl Future<Output = ()> + Send {
        async {}
    }
}

/// Runs `extension` until the lease's flag says stop (the release) or an
/// extension fails; then it raises the lost flag, which the holder's check
/// before each write reads (node-redlock's aborted signal, rslock's
/// cancelled routine). The task sleeps on the client's clock, so a paused
/// client's extensions pause with it.
pub(crate) fn spawn_extension<E: Extension>(
    mut extension: E,
    clock: Arc<dyn Clock>,
    flag: Arc<LostFlag>,
) {
    tokio::spawn(async move {
        for _ in 0..MAX_RENEWALS {
            let pause = extension.due_in(clock.monotonic());
            clock.sleep(pause).await;
            if flag.stopped() {
                return;
            }
            if extension.extend().await.is_err() {
                if !flag.stopped() {
                    extension.after_failure().await;
                    flag.set();
                }
                return;
            }
        }
        flag.set();
    });
}

/// Stops a lease's automatic extension (its release is under way).
pub(crate) fn stop_extension(lease: &crate::Lease) {
    if let Some(flag) = &lease.lost {
        flag.stop();
    }
}
