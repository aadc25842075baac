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
