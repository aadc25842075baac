//! The etcd rungs, as [`Lock`]s: each acquire opens a session (a lease
//! kept alive every TTL/3) and takes the lock on it; each release deletes
//! the lock's key and revokes the lease.
//!
//! # `etcd-mutex-3.4`: clientv3's `concurrency.Mutex` as etcd 3.4 ships it
//! Fixes: no TTL to guess (a live holder keeps its lease alive), no
//! polling (a waiter watches its predecessor, so a release wakes one
//! waiter), and a holder that dies frees the lock one TTL later.
//! Flaw: a waiter whose lease expired while it waited (paused, or cut off)
//! is still told it holds the lock once its predecessors are gone, while
//! a later waiter holds it too (the expired-waiter bug, docs/ladder.md
//! section 14); and, like every lease,
//! a holder paused past its TTL goes on writing after its key is gone.
//! Shown by: `etcd-waiter-lease-expires`.
//!
//! # `etcd-mutex`: the same Mutex as etcd 3.5 ships it
//! Fixes: after the wait, the waiter reads its own key again and fails
//! with "session expired" if its lease is gone.
//! Flaw: the lease problem stays: a holder paused past its TTL still
//! believes it holds the lock. Shown by: `etcd-holder-paused`.
//!
//! # `etcd-lock-rpc`: the server's Lock API
//! The member runs 3.4's Mutex on the caller's lease, so it has 3.4's
//! flaw, on the server. Shown by: `etcd-waiter-lease-expires`.
//!
//! # `etcd-fenced`: the 3.5 Mutex plus a fencing token
//! The token is the create revision of the holder's own key: revisions
//! only grow, across leader changes too, so the resource can refuse a
//! write from a holder that lost its key. Flaw: it needs a resource that
//! checks tokens. Shown by: nothing breaks it within its assumptions.

use crate::clock::BoxFuture;
use crate::error::LockError;
use crate::etcd::mutex::{self, Recheck};
use crate::etcd::session::Session;
use crate::etcd::status_error;
use crate::fault::FaultPoint;
use crate::ladder::Rung;
use crate::lease::{Lease, Owner};
use crate::lock::{Lock, LockConfig, LockContext};
use etcdproto::v3lockpb::lock_client::LockClient;
use etcdproto::v3lockpb::{LockRequest, UnlockRequest};
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;
use tonic::transport::Channel;

/// How long one request may take before it counts as lost.
pub const RPC_TIMEOUT: Duration = Duration::from_millis(1_000);

/// `etcd-mutex-3.4`.
pub const MUTEX_3_4: Rung = Rung {
    id: "etcd-mutex-3.4",
    acquire: "session lease + put <name>/<lease> if absent; the lowest create revision holds; a waiter watches the key just before its own",
    release: "delete the key, revoke the lease",
    fixes: "no TTL to guess; a release wakes one waiter, not all",
    flaw: "a waiter whose lease expired while it waited is still told it holds the lock (the expired-waiter bug)",
    shown_by: "etcd-waiter-lease-expires",
    service: "etcd",
    ..Rung::OFF_LADDER
};

/// `etcd-mutex`.
pub const MUTEX: Rung = Rung {
    id: "etcd-mutex",
    acquire: "as etcd-mutex-3.4, then read its own key again after the wait",
    release: "as etcd-mutex-3.4",
    fixes: "a waiter whose lease expired gets \"session expired\"",
    flaw: "a holder paused past its lease TTL still believes it holds the lock: the lease problem is not Redis's alone",
    shown_by: "etcd-holder-paused",
    service: "etcd",
    ..Rung::OFF_LADDER
};

/// `etcd-lock-rpc`.
pub const LOCK_RPC: Rung = Rung {
    id: "etcd-lock-rpc",
    acquire: "session lease + the server's Lock RPC (which runs 3.4's Mutex on the server)",
    release: "the Unlock RPC (delete the key), revoke the lease",
    fixes: "one request instead of a client-side recipe",
    flaw: "the server runs 3.4's Mutex: a waiter whose lease expired while it waited is told it holds the lock",
    shown_by: "etcd-waiter-lease-expires",
    service: "etcd",
    ..Rung::OFF_LADDER
};

/// `etcd-fenced`.
pub const FENCED: Rung = Rung {
    id: "etcd-fenced",
    acquire: "as etcd-mutex; the fencing token is the create revision of its own key",
    release: "as etcd-mutex",
    fixes: "the resource refuses a holder that lost its lease",
    flaw: "needs a resource that checks tokens",
    shown_by: "etcd-holder-paused",
    fencing: true,
    service: "etcd",
    ..Rung::OFF_LADDER
};

/// The etcd rungs, in the order they are taught.
pub const RUNGS: [&Rung; 4] = [&MUTEX_3_4, &MUTEX, &LOCK_RPC, &FENCED];

/// How a rung takes the lock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum How {
    Mutex(Recheck),
    LockRpc,
}

/// One of the etcd rungs over one member's channel.
pub struct EtcdLock {
    rung: &'static Rung,
    how: How,
    channel: Channel,
    ctx: LockContext,
    config: LockConfig,
    /// The session of each lease held, by token (the lock key).
    sessions: Mutex<HashMap<String, Session>>,
}

impl std::fmt::Debug for EtcdLock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EtcdLock")
            .field("rung", &self.rung.id)
            .finish_non_exhaustive()
    }
}

impl EtcdLock {
    /// The rung `id` (one of [`RUNGS`]) over `channel`.
    pub fn new(
        id: &str,
        channel: Channel,
        ctx: LockContext,
        config: LockConfig,
    ) -> Option<EtcdLock> {
        let (rung, how) = match id {
            "etcd-mutex-3.4" => (&MUTEX_3_4, How::Mutex(Recheck::No)),
            "etcd-mutex" => (&MUTEX, How::Mutex(Recheck::OwnKey)),
            "etcd-lock-rpc" => (&LOCK_RPC, How::LockRpc),
            "etcd-fenced" => (&FENCED, How::Mutex(Recheck::OwnKey)),
            _ => return None,
        };
        Some(EtcdLock {
            rung,
            how,
            channel,
            ctx,
            config,
            sessions: Mutex::new(HashMap::new()),
        })
    }

    fn ttl_s(&self) -> i64 {
        // etcd leases are whole seconds; round up so no lease is shorter
        // than the TTL asked for.
        self.config.ttl.as_millis().div_ceil(1000).max(1) as i64
    }

    fn sessions(&self) -> std::sync::MutexGuard<'_, HashMap<String, Session>> {
        self.sessions.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Takes the lock on `session`: the lock key and its create revision
    /// (0 when the way of taking it does not say).
    async fn take(&self, resource: &str, session: &Session) -> Result<(String, i64), LockError> {
        match self.how {
            How::Mutex(recheck) => {
                let prefix = format!("{resource}/");
                let held = mutex::lock(
                    &self.channel,
                    &prefix,
                    session.lease(),
                    recheck,
                    RPC_TIMEOUT,
                    &self.ctx.wakeups,
                )
                .await?;
                Ok((held.key, held.create_revision))
            }
            How::LockRpc => {
                let mut client = LockClient::new(self.channel.clone());
                let resp = client
                    .lock(LockRequest {
                        name: resource.as_bytes().to_vec(),
                        lease: session.lease(),
                    })
                    .await
                    .map_err(status_error)?
                    .into_inner();
                Ok((String::from_utf8_lossy(&resp.key).into_owned(), 0))
            }
        }
    }

    async fn acquire_inner(&self, resource: &str, owner: &Owner) -> Result<Lease, LockError> {
        let started = self.ctx.clock.monotonic();
        let session = Session::new(self.channel.clone(), self.ttl_s(), RPC_TIMEOUT).await?;
        let taken = tokio::time::timeout(self.config.max_wait, self.take(resource, &session)).await;
        let (key, create_revision) = match taken {
            Ok(Ok(t)) => t,
            Ok(Err(e)) => {
                // As clientv3 does on a failed wait: give the key up (the
                // lease goes, and the key with it).
                let _ = session.close(RPC_TIMEOUT).await;
                return Err(e);
            }
            Err(_) => {
                let _ = session.close(RPC_TIMEOUT).await;
                return Err(LockError::NotAcquired {
                    resource: resource.to_string(),
                    waited: self.ctx.clock.monotonic().saturating_sub(started),
                    attempts: 1,
                });
            }
        };
        let mut lease = Lease::new(resource, key.clone(), owner, self.ctx.clock.monotonic());
        if self.rung.fencing {
            lease.fence = Some(create_revision as u64);
        }
        self.sessions().insert(key, session);
        Ok(lease)
    }

    async fn release_inner(&self, lease: &Lease) -> Result<(), LockError> {
        self.ctx
            .point(FaultPoint::ReleaseStart, &lease.resource)
            .await;
        let deleted = match self.how {
            How::Mutex(_) => mutex::unlock(&self.channel, &lease.token, RPC_TIMEOUT).await,
            How::LockRpc => {
                let mut client = LockClient::new(self.channel.clone());
                let unlock = client.unlock(UnlockRequest {
                    key: lease.token.as_bytes().to_vec(),
                });
                match tokio::time::timeout(RPC_TIMEOUT, unlock).await {
                    Err(_) => Err(LockError::Etcd {
                        message: "Unlock timed out".into(),
                        transient: true,
                    }),
                    Ok(r) => r.map(|_| ()).map_err(status_error),
                }
            }
        };
        self.ctx
            .point(FaultPoint::ReleaseMid, &lease.resource)
            .await;
        let session = self.sessions().remove(&lease.token);
        let lost = session.as_ref().is_some_and(Session::expired);
        if let Some(s) = session {
            s.close(RPC_TIMEOUT).await?;
        }
        deleted?;
        if lost {
            return Err(LockError::NotHeld {
                resource: lease.resource.clone(),
            });
        }
        Ok(())
    }
}

impl Lock for EtcdLock {
    fn rung(&self) -> &'static Rung {
        self.rung
    }

    fn acquire<'a>(
        &'a self,
        resource: &'a str,
        owner: &'a Owner,
    ) -> BoxFuture<'a, Result<Lease, LockError>> {
        Box::pin(async move {
            let lease = self.acquire_inner(resource, owner).await?;
            self.ctx.point(FaultPoint::AfterAcquire, resource).await;
            Ok(lease)
        })
    }

    fn release<'a>(&'a self, lease: &'a Lease) -> BoxFuture<'a, Result<(), LockError>> {
        Box::pin(self.release_inner(lease))
    }

    fn extend<'a>(&'a self, _lease: &'a mut Lease) -> BoxFuture<'a, Result<(), LockError>> {
        // The session renews the lease by itself.
        Box::pin(async move {
            Err(LockError::Unsupported {
                rung: self.rung.id,
                operation: "extend (the session keeps the lease alive)",
            })
        })
    }

    fn before_write<'a>(&'a self, lease: &'a Lease) -> BoxFuture<'a, Result<(), LockError>> {
        // A session tracks no validity the holder could check.
        Box::pin(crate::rungs::common::pass_before_write(&self.ctx, lease))
    }
}

/// The etcd rung `id` over a channel to the member `dialer` reaches; `None`
/// if `id` is not an etcd rung.
pub fn build<D: crate::conn::Dialer>(
    id: &str,
    dialer: D,
    ctx: LockContext,
    config: LockConfig,
) -> Option<Box<dyn Lock>> {
    let channel = crate::etcd::channel::channel(std::sync::Arc::new(dialer));
    EtcdLock::new(id, channel, ctx, config).map(|l| Box::new(l) as Box<dyn Lock>)
}
