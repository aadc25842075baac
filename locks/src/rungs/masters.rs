//! N independent masters: what `redlock` and the multi-node library rungs
//! are built on. A round sends one command to every master at once and
//! collects the replies in node order; a master that does not answer in
//! time is a missing vote, not a failed round.

use crate::error::LockError;
use crate::fault::FaultPoint;
use crate::lock::{LockConfig, LockContext};
use crate::rungs::common::{Configured, NodeConn};
use std::time::Duration;

/// N independent masters, the client's context and the rung's
/// configuration.
#[derive(Clone)]
pub struct Masters<C> {
    pub(crate) nodes: Vec<C>,
    pub(crate) ctx: LockContext,
    pub(crate) config: LockConfig,
    /// The error of a master that did not answer within its time: each
    /// lock words it as the code it models does, and histories record it.
    pub(crate) late: fn() -> LockError,
}

impl<C: NodeConn> Masters<C> {
    /// The masters `nodes` (at least one), as the libraries hold them.
    pub fn new(nodes: Vec<C>, ctx: LockContext, config: LockConfig) -> Self {
        assert!(!nodes.is_empty(), "a quorum lock needs at least one master");
        Masters {
            nodes,
            ctx,
            config,
            late: library_timed_out,
        }
    }

    /// How many masters must agree: N/2+1, in every lock modelled here.
    pub fn quorum(&self) -> usize {
        self.nodes.len() / 2 + 1
    }

    /// Runs `op` on every master at once (see [`on_every_node`]), each
    /// bounded by `timeout` when one is given, else by the connection's own
    /// reply timeout.
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
        let deadline = timeout.map(|after| (after, self.late));
        on_every_node(&self.ctx, &self.nodes, deadline, reporting, op).await
    }
}

impl<C> Configured for Masters<C> {
    fn ctx(&self) -> &LockContext {
        &self.ctx
    }

    fn config(&self) -> &LockConfig {
        &self.config
    }
}

/// Runs `op` on every node concurrently and returns the replies in node
/// order. With a `deadline` (how long, and the error of a late node), a
/// node that does not answer in time gives that error; without one, the
/// connection's own reply timeout bounds it. With `reporting`, the
/// `acquire-reply` fault point is passed as each reply comes in, so a
/// scenario can aim a fault between them.
pub async fn on_every_node<C, T, F, Fut>(
    ctx: &LockContext,
    nodes: &[C],
    deadline: Option<(Duration, fn() -> LockError)>,
    reporting: Option<&str>,
    op: F,
) -> Vec<Result<T, LockError>>
where
    C: Clone,
    F: Fn(C) -> Fut,
    Fut: Future<Output = Result<T, LockError>>,
{
    let requests = nodes.iter().map(|conn| {
        let request = op(conn.clone());
        async move {
            let reply = match deadline {
                Some((after, late)) => tokio::time::timeout(after, request)
                    .await
                    .unwrap_or_else(|_| Err(late())),
                None => request.await,
            };
            if let Some(resource) = reporting {
                ctx.point(FaultPoint::AcquireReply, resource).await;
            }
            reply
        }
    });
    futures::future::join_all(requests).await
}

/// A late master, in the words of the ladder's `redlock` (and of rung
/// files, which are built like it).
pub(crate) fn redlock_timed_out() -> LockError {
    timed_out("redlock master did not answer within the node timeout")
}

/// A late master, in the words of the libraries.
fn library_timed_out() -> LockError {
    timed_out("the master did not answer within the library's per-node timeout")
}

fn timed_out(why: &'static str) -> LockError {
    LockError::Redis(redis::RedisError::from(std::io::Error::new(
        std::io::ErrorKind::TimedOut,
        why,
    )))
}
