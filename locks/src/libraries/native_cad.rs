//! Library rung `native-cad`: a lock with no Lua at all, released and
//! extended by the servers' own compare-and-set commands.
//!
//! Acquire: `SET key token NX PX ttl`; after an attempt that got no answer,
//! the same token is sent again, and when the key is taken,
//! `SET key token IFEQ token PX ttl` (Valkey 8.1, Redis 8.4) recognises
//! the lost grant as this acquire's own and re-arms it. Release:
//! `DELEX key IFEQ token` (Redis 8.4), or `DELIFEQ key token` (Valkey 9.0)
//! when the server does not know `DELEX`. Extend:
//! `SET key token IFEQ token PX ttl`. The simulated node answers these
//! commands as those versions document (`sim/redis`); Redis 7.0 knows
//! none of them, so on the benchmark's Redis 7.0 this rung cannot release.
//!
//! # Fixes
//! The same atomic owner-checked release as `lua-release`, without a
//! script: no script cache, no `EVALSHA` round trip after a restart.
//!
//! # Flaw
//! As `lua-release`: the lease can expire while the holder still works,
//! and it is not reentrant. No release channel is published, so waiters
//! poll.
//!
//! # Shown by
//! `scenarios/long-critical-section.toml` (its full grid row).

use crate::error::LockError;
use crate::ladder::Rung;
use crate::lease::Lease;
use crate::redis_server::RedisServer;
use crate::rungs::common::{self, Attempt, NodeConn, OneNode, RungSteps};
use redis::aio::ConnectionLike;
use std::time::Duration;

/// Library metadata of `native-cad`.
pub const RUNG: Rung = Rung {
    id: "native-cad",
    number: 15,
    acquire: "SET key token NX PX ttl (a lost grant re-armed with SET ... IFEQ token)",
    release: "DELEX key IFEQ token (Redis 8.4), else DELIFEQ key token (Valkey 9.0)",
    fixes: "atomic owner-checked release and extend without Lua",
    flaw: "as lua-release: the lease can expire while the holder still works; not reentrant",
    shown_by: "long-critical-section",
    // The oldest server with both a compare-and-delete and `SET ... IFEQ`.
    server: RedisServer::Redis8_4,
    ..Rung::PLAIN
};

/// The `native-cad` lock: its steps below on one node.
pub type NativeCad<C> = OneNode<C, { RUNG.number }>;

/// `SET key token IFEQ token PX ttl`: true when the key held my token and
/// was re-armed.
pub async fn set_ifeq<C: ConnectionLike>(
    conn: &mut C,
    key: &str,
    token: &str,
    ttl: Duration,
) -> Result<bool, LockError> {
    let reply: Option<String> = redis::cmd("SET")
        .arg(key)
        .arg(token)
        .arg("IFEQ")
        .arg(token)
        .arg("PX")
        .arg(common::ttl_ms(ttl))
        .query_async(conn)
        .await?;
    Ok(reply.is_some())
}

/// Deletes `key` if it holds `token`: `DELEX ... IFEQ`, or `DELIFEQ` on a
/// server that does not know `DELEX`. How many keys it deleted.
pub async fn delete_if_equal<C: ConnectionLike>(
    conn: &mut C,
    key: &str,
    token: &str,
) -> Result<i64, LockError> {
    let delex: redis::RedisResult<i64> = redis::cmd("DELEX")
        .arg(key)
        .arg("IFEQ")
        .arg(token)
        .query_async(conn)
        .await;
    match delex {
        Err(e) if is_unknown_command(&e) => Ok(redis::cmd("DELIFEQ")
            .arg(key)
            .arg(token)
            .query_async(conn)
            .await?),
        other => Ok(other?),
    }
}

/// Whether a server answered "unknown command".
fn is_unknown_command(e: &redis::RedisError) -> bool {
    e.to_string()
        .to_ascii_lowercase()
        .contains("unknown command")
}

impl<C: NodeConn> RungSteps for NativeCad<C> {
    const RUNG: &'static Rung = &RUNG;

    async fn attempt(&self, at: &Attempt<'_>) -> Result<Option<Lease>, LockError> {
        let (token, resent) = at.unsettled.token(&self.ctx);
        let started = self.ctx.clock.monotonic();
        let mut conn = self.conn.clone();
        let (resource, ttl) = (at.resource, self.config.ttl);
        let granted = async {
            if common::set_nx_px(&mut conn, resource, &token, ttl).await? {
                return Ok(true);
            }
            Ok(resent && set_ifeq(&mut conn, resource, &token, ttl).await?)
        }
        .await;
        at.unsettled.note(&token, &granted);
        Ok(granted?.then(|| at.lease(token, started)))
    }

    async fn release(&self, lease: &Lease) -> Result<(), LockError> {
        let mut conn = self.conn.clone();
        let delete = delete_if_equal(&mut conn, &lease.resource, &lease.token);
        let deleted = common::between_release_points(&self.ctx, lease, delete).await?;
        common::one_or_not_held(deleted, &lease.resource)
    }

    async fn extend(&self, lease: &mut Lease) -> Result<(), LockError> {
        let mut conn = self.conn.clone();
        if set_ifeq(&mut conn, &lease.resource, &lease.token, self.config.ttl).await? {
            Ok(())
        } else {
            Err(common::not_held(&lease.resource))
        }
    }
}
