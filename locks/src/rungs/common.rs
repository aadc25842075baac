//! Commands several rungs send the same way.

use crate::error::LockError;
use crate::lease::Lease;
use crate::scripts;
use redis::aio::ConnectionLike;
use std::time::Duration;

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

/// A TTL in whole milliseconds, at least 1 (Redis refuses 0).
pub fn ttl_ms(ttl: Duration) -> u64 {
    (ttl.as_millis() as u64).max(1)
}

/// Turns a script's "how many keys I deleted" into the release's result.
pub fn one_or_not_held(deleted: i64, resource: &str) -> Result<(), LockError> {
    if deleted >= 1 {
        Ok(())
    } else {
        Err(LockError::NotHeld {
            resource: resource.to_string(),
        })
    }
}

/// Owner-checked `PEXPIRE` through the extend script.
pub async fn extend_checked<C: ConnectionLike>(
    conn: &mut C,
    lease: &Lease,
    ttl: Duration,
) -> Result<(), LockError> {
    let extended: i64 = scripts::EXTEND
        .key(&lease.resource)
        .arg(&lease.token)
        .arg(ttl_ms(ttl))
        .invoke_async(conn)
        .await?;
    one_or_not_held(extended, &lease.resource)
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

/// The answer of rungs that have no such operation.
pub fn unsupported(rung: &'static str, operation: &'static str) -> LockError {
    LockError::Unsupported { rung, operation }
}

/// The owner-checked release script; with `notify`, the variant that also
/// publishes on the lock's release channel. How many keys it deleted.
pub async fn release_checked<C: ConnectionLike>(
    conn: &mut C,
    resource: &str,
    token: &str,
    notify: bool,
) -> Result<i64, LockError> {
    let deleted: i64 = if notify {
        scripts::RELEASE_NOTIFY
            .key(resource)
            .arg(token)
            .arg(crate::notify::channel(resource))
            .invoke_async(conn)
            .await?
    } else {
        scripts::RELEASE
            .key(resource)
            .arg(token)
            .invoke_async(conn)
            .await?
    };
    Ok(deleted)
}

/// The acquire that `set-nx-px`, `get-check-del` and `lua-release` share:
/// one `SET key token NX PX ttl` per attempt with a fresh random token,
/// retried by the wait strategy; then the `after-acquire` point (a fault
/// aimed at `acquire-mid` lands there: this acquire is a single command).
pub async fn acquire_set_nx_px<C>(
    conn: &C,
    ctx: &crate::lock::LockContext,
    config: &crate::lock::LockConfig,
    resource: &str,
    owner: &crate::lease::Owner,
) -> Result<Lease, LockError>
where
    C: ConnectionLike + Clone + Send + Sync + 'static,
{
    let lease = crate::lock::retry_acquire(ctx, config, resource, || async {
        let token = ctx.tokens.token();
        let started = ctx.clock.monotonic();
        let mut conn = conn.clone();
        let granted = set_nx_px(&mut conn, resource, &token, config.ttl).await?;
        Ok(granted.then(|| Lease::new(resource, token, owner, started)))
    })
    .await?;
    ctx.point(crate::fault::FaultPoint::AfterAcquire, resource)
        .await;
    Ok(lease)
}

/// The `before_write` of a rung that tracks no validity of its own: only
/// the `before-write` fault point.
pub async fn pass_before_write(
    ctx: &crate::lock::LockContext,
    lease: &Lease,
) -> Result<(), LockError> {
    ctx.point(crate::fault::FaultPoint::BeforeWrite, &lease.resource)
        .await;
    Ok(())
}

/// The release that `lua-release` and `fenced` share: `release-start`, one
/// owner-checked script (which also publishes when waiters are notified),
/// then `release-mid` just after it, the next point a one-script release
/// has; `NotHeld` when the lock was no longer this lease's.
pub async fn release_owner_checked<C: ConnectionLike + Clone>(
    conn: &C,
    ctx: &crate::lock::LockContext,
    config: &crate::lock::LockConfig,
    lease: &Lease,
) -> Result<(), LockError> {
    use crate::fault::FaultPoint;
    ctx.point(FaultPoint::ReleaseStart, &lease.resource).await;
    let mut conn = conn.clone();
    let deleted = release_checked(
        &mut conn,
        &lease.resource,
        &lease.token,
        config.wait.notifies(),
    )
    .await?;
    ctx.point(FaultPoint::ReleaseMid, &lease.resource).await;
    one_or_not_held(deleted, &lease.resource)
}
