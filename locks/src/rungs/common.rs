//! What the rungs share: the [`Lock`] that every rung but `no-lock` gets
//! from its [`RungSteps`], and the commands and steps that several rungs
//! take the same way.

use crate::clock::BoxFuture;
use crate::error::LockError;
use crate::fault::FaultPoint;
use crate::ladder::Rung;
use crate::lease::{Lease, Owner};
use crate::lock::{Lock, LockConfig, LockContext, Unsettled, retry_acquire};
use crate::scripts;
use redis::aio::ConnectionLike;
use std::time::Duration;

/// A connection to one Redis node as the rungs use it: cloned for each
/// exchange (clones share one connection) and moved across tasks.
pub trait NodeConn: ConnectionLike + Clone + Send + Sync + 'static {}

impl<C: ConnectionLike + Clone + Send + Sync + 'static> NodeConn for C {}

/// What a rung is built with, besides its connections.
pub trait Configured {
    /// The client's clocks, fault hook and tokens.
    fn ctx(&self) -> &LockContext;

    /// The rung's TTL, wait strategy and timeouts.
    fn config(&self) -> &LockConfig;
}

/// A rung on one node: its connection, the client's context and the rung's
/// configuration, the same parts for every single-node rung, so they share
/// this one struct. `NUMBER`, the rung's number on the ladder, tells the
/// rungs apart: each implements [`RungSteps`] for its own number (its type
/// is an alias, e.g. [`Setnx`](crate::rungs::setnx::Setnx)).
pub struct OneNode<C, const NUMBER: u8> {
    pub(crate) conn: C,
    pub(crate) ctx: LockContext,
    pub(crate) config: LockConfig,
}

impl<C, const NUMBER: u8> OneNode<C, NUMBER> {
    /// Rung `NUMBER` over one node.
    pub fn new(conn: C, ctx: LockContext, config: LockConfig) -> Self {
        OneNode { conn, ctx, config }
    }
}

impl<C, const NUMBER: u8> Configured for OneNode<C, NUMBER> {
    fn ctx(&self) -> &LockContext {
        &self.ctx
    }

    fn config(&self) -> &LockConfig {
        &self.config
    }
}

/// What one attempt of an acquire is for, handed to
/// [`RungSteps::attempt`] as one value so that each rung's `attempt` says
/// only what it does differently.
pub struct Attempt<'a> {
    /// The lock's key.
    pub resource: &'a str,
    /// Who acquires.
    pub owner: &'a Owner,
    /// What the acquire's earlier attempts left unknown.
    pub unsettled: &'a Unsettled,
}

impl Attempt<'_> {
    /// The lease this attempt was granted: `token` in the key, taken by the
    /// client's monotonic clock at `started` (read by the rung, where its
    /// attempt begins).
    pub fn lease(&self, token: String, started: Duration) -> Lease {
        Lease::new(self.resource, token, self.owner, started)
    }
}

/// What a rung does its own way. The rest of its [`Lock`] is the same on
/// every rung that retries, and follows from these steps:
///
/// - `acquire` retries [`attempt`](Self::attempt) by the wait strategy
///   ([`retry_acquire`]), through transient errors too, hands the lease to
///   [`start_holding`](Self::start_holding), then passes `after-acquire`;
/// - `release` and `extend` are [`release`](Self::release) and
///   [`extend`](Self::extend);
/// - `before_write` makes the rung's [`check_validity`](Self::check_validity),
///   then passes `before-write`.
pub trait RungSteps: Configured + Send + Sync {
    /// The rung's ladder metadata.
    const RUNG: &'static Rung;

    /// One try at the lock: `Some(lease)` when granted, `None` when it is
    /// taken (the retry loop tries again), `Err` when Redis did not answer
    /// (the retry loop tries again while the error is
    /// [transient](LockError::transient)). `at.unsettled` is what the
    /// acquire's earlier attempts left unknown: a rung that can recognise
    /// its own key sends the same token again (see [`Unsettled`]). An
    /// attempt of one command or script has no `acquire-mid` point: a fault
    /// aimed there lands at `after-acquire`.
    fn attempt(
        &self,
        at: &Attempt<'_>,
    ) -> impl Future<Output = Result<Option<Lease>, LockError>> + Send;

    /// One try at the lock shared, for a reader: by default the same as an
    /// exclusive [`attempt`](Self::attempt), the only kind of grant most
    /// rungs have. A rung with a read mode grants a lease marked `shared`.
    fn attempt_shared(
        &self,
        at: &Attempt<'_>,
    ) -> impl Future<Output = Result<Option<Lease>, LockError>> + Send {
        self.attempt(at)
    }

    /// What the rung does as soon as an acquire is granted, before
    /// `after-acquire`: nothing, but for the watchdog's renewal.
    fn start_holding(&self, _lease: &mut Lease) {}

    /// Releases a lease, passing `release-start` and `release-mid` (see
    /// [`between_release_points`]).
    fn release(&self, lease: &Lease) -> impl Future<Output = Result<(), LockError>> + Send;

    /// Extends a lease by another TTL; by default the rung has no way to,
    /// and answers [`LockError::Unsupported`].
    fn extend(&self, _lease: &mut Lease) -> impl Future<Output = Result<(), LockError>> + Send {
        async { Err(unsupported(Self::RUNG.id, "extend")) }
    }

    /// The rung's own check that a lease may still be trusted, made before
    /// each write; by default none.
    fn check_validity(&self, _lease: &Lease) -> Result<(), LockError> {
        Ok(())
    }
}

impl<R: RungSteps> Lock for R {
    fn rung(&self) -> &'static Rung {
        R::RUNG
    }

    fn acquire<'a>(
        &'a self,
        resource: &'a str,
        owner: &'a Owner,
    ) -> BoxFuture<'a, Result<Lease, LockError>> {
        Box::pin(acquire_by_steps(self, resource, owner, false))
    }

    fn acquire_shared<'a>(
        &'a self,
        resource: &'a str,
        owner: &'a Owner,
    ) -> BoxFuture<'a, Result<Lease, LockError>> {
        Box::pin(acquire_by_steps(self, resource, owner, true))
    }

    fn release<'a>(&'a self, lease: &'a Lease) -> BoxFuture<'a, Result<(), LockError>> {
        Box::pin(RungSteps::release(self, lease))
    }

    fn extend<'a>(&'a self, lease: &'a mut Lease) -> BoxFuture<'a, Result<(), LockError>> {
        Box::pin(RungSteps::extend(self, lease))
    }

    fn before_write<'a>(&'a self, lease: &'a Lease) -> BoxFuture<'a, Result<(), LockError>> {
        Box::pin(async move {
            self.check_validity(lease)?;
            pass_before_write(self.ctx(), lease).await
        })
    }
}

/// A rung's acquire from its steps: [`RungSteps::attempt`] (or
/// [`RungSteps::attempt_shared`] when `shared`) retried by the wait
/// strategy, then [`RungSteps::start_holding`] and `after-acquire`.
async fn acquire_by_steps<R: RungSteps>(
    rung: &R,
    resource: &str,
    owner: &Owner,
    shared: bool,
) -> Result<Lease, LockError> {
    let unsettled = Unsettled::default();
    let at = Attempt {
        resource,
        owner,
        unsettled: &unsettled,
    };
    let mut lease = retry_acquire(rung.ctx(), rung.config(), R::RUNG, resource, || async {
        if shared {
            rung.attempt_shared(&at).await
        } else {
            rung.attempt(&at).await
        }
    })
    .await?;
    rung.start_holding(&mut lease);
    rung.ctx().point(FaultPoint::AfterAcquire, resource).await;
    Ok(lease)
}

/// The `before-write` fault point, the whole `before_write` of a rung that
/// tracks no validity of its own.
pub async fn pass_before_write(ctx: &LockContext, lease: &Lease) -> Result<(), LockError> {
    ctx.point(FaultPoint::BeforeWrite, &lease.resource).await;
    Ok(())
}

/// A release's first step between its fault points: `release-start`, the
/// step, `release-mid`. In a two-step release `release-mid` is the gap
/// between the steps; in a one-step release it lands just after the only
/// step, the next point such a release has.
///
/// A step that fails (`Err`) ends the release before `release-mid`; a
/// step that must pass `release-mid` whatever happens returns its outcome
/// inside `Ok`.
pub async fn between_release_points<T>(
    ctx: &LockContext,
    lease: &Lease,
    step: impl Future<Output = Result<T, LockError>>,
) -> Result<T, LockError> {
    ctx.point(FaultPoint::ReleaseStart, &lease.resource).await;
    let outcome = step.await?;
    ctx.point(FaultPoint::ReleaseMid, &lease.resource).await;
    Ok(outcome)
}

/// One attempt of the lease that `set-nx-px`, `get-check-del` and
/// `lua-release` share: `SET key token NX PX ttl` with a fresh random token.
///
/// After an attempt of this acquire got no answer, the same token is sent
/// again, and if the key is taken, the owner-checked extend script asks
/// whether it holds that token: if so, the lost `SET` landed, and the key,
/// re-armed for a whole TTL from now, is this acquire's grant. Re-arming
/// matters: the key's first TTL began when the lost `SET` landed, and a
/// holder that trusted what is left of it would start with less lease than
/// any other. Without this, the acquire would wait for its own key to
/// expire, and take a lease it does not know it has for a stranger's.
pub async fn attempt_set_nx_px<C: NodeConn, const NUMBER: u8>(
    node: &OneNode<C, NUMBER>,
    at: &Attempt<'_>,
) -> Result<Option<Lease>, LockError> {
    let (token, resent) = at.unsettled.token(&node.ctx);
    let started = node.ctx.clock.monotonic();
    let mut conn = node.conn.clone();
    let (resource, ttl) = (at.resource, node.config.ttl);
    let granted = async {
        if set_nx_px(&mut conn, resource, &token, ttl).await? {
            return Ok(true);
        }
        // The re-check after a lost reply is rare: boxed, so that it does
        // not grow every attempt's future.
        Ok(resent && Box::pin(extend_script(&mut conn, resource, &token, ttl)).await? == 1)
    }
    .await;
    at.unsettled.note(&token, &granted);
    Ok(granted?.then(|| at.lease(token, started)))
}

/// The blind release of the rungs that do not look at the owner: one plain
/// `DEL` of whatever lock is there. It never answers `NotHeld`.
pub async fn release_by_del<C: NodeConn>(
    conn: &C,
    ctx: &LockContext,
    lease: &Lease,
) -> Result<(), LockError> {
    let mut conn = conn.clone();
    between_release_points(ctx, lease, del(&mut conn, &lease.resource)).await?;
    Ok(())
}

/// The release that `lua-release` and `fenced` share: one owner-checked
/// script (which also publishes when waiters are notified); `NotHeld` when
/// the lock was no longer this lease's.
pub async fn release_owner_checked<C: NodeConn>(
    conn: &C,
    ctx: &LockContext,
    config: &LockConfig,
    lease: &Lease,
) -> Result<(), LockError> {
    let mut conn = conn.clone();
    let notify = config.wait.notifies();
    let script = release_checked(&mut conn, &lease.resource, &lease.token, notify);
    let deleted = between_release_points(ctx, lease, script).await?;
    one_or_not_held(deleted, &lease.resource)
}

/// The check half of a GET-then-act release: `NotHeld` unless the value
/// read is this lease's token.
pub fn check_token(current: Option<String>, lease: &Lease) -> Result<(), LockError> {
    if current.as_deref() == Some(lease.token.as_str()) {
        Ok(())
    } else {
        Err(not_held(&lease.resource))
    }
}

/// Reads the reply of a hash lock's acquire script, `{1, hold count}`
/// when this owner holds it now or `{0, anything}` (the time left, the
/// wait) when another does: the hold count when granted.
pub fn hold_count(reply: &[i64], script: &'static str) -> Result<Option<u32>, LockError> {
    match reply {
        [1, count] if *count >= 1 => Ok(Some(u32::try_from(*count).unwrap_or(u32::MAX))),
        [0, _] => Ok(None),
        _ => Err(LockError::Protocol {
            command: script,
            reply: format!("{reply:?}"),
        }),
    }
}

/// The error of releasing or extending a lock one no longer holds.
pub fn not_held(resource: &str) -> LockError {
    LockError::NotHeld {
        resource: resource.to_string(),
    }
}

/// Turns a command's "how many keys I deleted (or re-armed)" into the
/// operation's result.
pub fn one_or_not_held(count: i64, resource: &str) -> Result<(), LockError> {
    if count >= 1 {
        Ok(())
    } else {
        Err(not_held(resource))
    }
}

/// The answer of rungs that have no such operation.
pub fn unsupported(rung: &'static str, operation: &'static str) -> LockError {
    LockError::Unsupported { rung, operation }
}

/// A TTL in whole milliseconds, at least 1 (Redis refuses 0).
pub fn ttl_ms(ttl: Duration) -> u64 {
    (ttl.as_millis() as u64).max(1)
}

/// `SET key value NX PX ttl`: true when the key was set.
pub async fn set_nx_px<C: ConnectionLike>(
    conn: &mut C,
    key: &str,
    value: &str,
    ttl: Duration,
) -> Result<bool, LockError> {
    let reply: Option<String> = redis::cmd("SET")
        .arg(key)
        .arg(value)
        .arg("NX")
        .arg("PX")
        .arg(ttl_ms(ttl))
        .query_async(conn)
        .await?;
    Ok(reply.is_some())
}

/// `SETNX key value`: true when the key was created.
pub async fn setnx<C: ConnectionLike>(
    conn: &mut C,
    key: &str,
    value: &str,
) -> Result<bool, LockError> {
    let created: i64 = redis::cmd("SETNX")
        .arg(key)
        .arg(value)
        .query_async(conn)
        .await?;
    Ok(created == 1)
}

/// `GET key`: the value, or `None` when the key is absent.
pub async fn get<C: ConnectionLike>(conn: &mut C, key: &str) -> Result<Option<String>, LockError> {
    Ok(redis::cmd("GET").arg(key).query_async(conn).await?)
}

/// Plain `DEL key`: how many keys it deleted (0 or 1).
pub async fn del<C: ConnectionLike>(conn: &mut C, key: &str) -> Result<i64, LockError> {
    Ok(redis::cmd("DEL").arg(key).query_async(conn).await?)
}

/// Unchecked `PEXPIRE key ttl`: re-arms whatever lock is there.
/// [`LockError::NotHeld`] only when the key is gone altogether.
pub async fn pexpire_unchecked<C: ConnectionLike>(
    conn: &mut C,
    key: &str,
    ttl: Duration,
) -> Result<(), LockError> {
    let set: i64 = redis::cmd("PEXPIRE")
        .arg(key)
        .arg(ttl_ms(ttl))
        .query_async(conn)
        .await?;
    one_or_not_held(set, key)
}

/// The owner-checked extend script: 1 when it re-armed my lock, 0 when the
/// lock is not mine (or gone).
pub async fn extend_script<C: ConnectionLike>(
    conn: &mut C,
    resource: &str,
    token: &str,
    ttl: Duration,
) -> Result<i64, LockError> {
    Ok(scripts::EXTEND
        .key(resource)
        .arg(token)
        .arg(ttl_ms(ttl))
        .invoke_async(conn)
        .await?)
}

/// Owner-checked `PEXPIRE` of a lease through the extend script.
pub async fn extend_checked<C: NodeConn>(
    conn: &C,
    lease: &Lease,
    ttl: Duration,
) -> Result<(), LockError> {
    let mut conn = conn.clone();
    let extended = extend_script(&mut conn, &lease.resource, &lease.token, ttl).await?;
    one_or_not_held(extended, &lease.resource)
}

/// The owner-checked release script; with `notify`, the one that also
/// publishes on the lock's release channel. How many keys it deleted.
pub async fn release_checked<C: ConnectionLike>(
    conn: &mut C,
    resource: &str,
    token: &str,
    notify: bool,
) -> Result<i64, LockError> {
    let mut invocation = if notify {
        scripts::RELEASE_NOTIFY.key(resource)
    } else {
        scripts::RELEASE.key(resource)
    };
    invocation.arg(token);
    if notify {
        invocation.arg(crate::notify::channel(resource));
    }
    // Boxed: a script call's future (with its NOSCRIPT fallback) is large,
    // and every release's future would otherwise carry it.
    let deleted: i64 = Box::pin(invocation.invoke_async(conn)).await?;
    Ok(deleted)
}
