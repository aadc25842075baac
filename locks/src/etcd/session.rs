//! A session: one lease, kept alive in the background every TTL/3, as
//! clientv3's `concurrency.Session` does.
//!
//! The lease is what a lock key lives on: while the session's keep-alives
//! get through, the key stays; once they stop (the process paused, the
//! network cut) for a whole TTL, the member revokes the lease and deletes
//! the key, whoever believes it still holds the lock.

use crate::error::LockError;
use crate::etcd::status_error;
use etcdproto::etcdserverpb::lease_client::LeaseClient;
use etcdproto::etcdserverpb::{LeaseGrantRequest, LeaseKeepAliveRequest, LeaseRevokeRequest};
use futures::StreamExt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use tokio::task::JoinHandle;
use tonic::transport::Channel;

/// One lease and its keep-alive task; revoked and stopped when closed.
#[derive(Debug)]
pub struct Session {
    lease: i64,
    ttl_s: i64,
    channel: Channel,
    expired: Arc<AtomicBool>,
    keep_alive: JoinHandle<()>,
}

impl Session {
    /// Grants a lease of `ttl_s` seconds and starts keeping it alive.
    pub async fn new(
        channel: Channel,
        ttl_s: i64,
        timeout: Duration,
    ) -> Result<Session, LockError> {
        let mut client = LeaseClient::new(channel.clone());
        let grant = client.lease_grant(LeaseGrantRequest { ttl: ttl_s, id: 0 });
        let granted = tokio::time::timeout(timeout, grant)
            .await
            .map_err(|_| timed_out("LeaseGrant"))?
            .map_err(status_error)?
            .into_inner();
        let expired = Arc::new(AtomicBool::new(false));
        let keep_alive = tokio::spawn(keep_alive(
            channel.clone(),
            granted.id,
            granted.ttl,
            expired.clone(),
        ));
        Ok(Session {
            lease: granted.id,
            ttl_s: granted.ttl,
            channel,
            expired,
            keep_alive,
        })
    }

    /// The lease's ID.
    pub fn lease(&self) -> i64 {
        self.lease
    }

    /// The TTL the member granted, in seconds.
    pub fn ttl_s(&self) -> i64 {
        self.ttl_s
    }

    /// Whether a keep-alive was answered "no such lease": the member
    /// revoked it, and every key on it is gone.
    pub fn expired(&self) -> bool {
        self.expired.load(Ordering::SeqCst)
    }

    /// Stops keeping the lease alive and revokes it (its keys go with it).
    pub async fn close(self, timeout: Duration) -> Result<(), LockError> {
        self.keep_alive.abort();
        let mut client = LeaseClient::new(self.channel.clone());
        let revoke = client.lease_revoke(LeaseRevokeRequest { id: self.lease });
        match tokio::time::timeout(timeout, revoke).await {
            Err(_) => Err(timed_out("LeaseRevoke")),
            Ok(Err(s)) if s.code() == tonic::Code::NotFound => Ok(()),
            Ok(r) => r.map(|_| ()).map_err(status_error),
        }
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        self.keep_alive.abort();
    }
}

fn timed_out(what: &str) -> LockError {
    LockError::Etcd {
        message: format!("{what} timed out"),
        transient: true,
    }
}

/// Sends a keep-alive every TTL/3 on one stream, opened again after it
/// breaks, until the member says the lease is gone.
async fn keep_alive(channel: Channel, lease: i64, ttl_s: i64, expired: Arc<AtomicBool>) {
    let period = Duration::from_millis((ttl_s.max(1) as u64 * 1000) / 3);
    let ask = LeaseKeepAliveRequest { id: lease };
    loop {
        let (tx, rx) = futures::channel::mpsc::unbounded();
        // The first keep-alive goes out with the call: etcd sends the
        // call's response headers only with its first answer, so a
        // client that waited for them before asking would wait forever.
        if tx.unbounded_send(ask).is_err() {
            return;
        }
        let opened = LeaseClient::new(channel.clone()).lease_keep_alive(rx).await;
        let Ok(response) = opened else {
            tokio::time::sleep(period).await;
            continue;
        };
        let mut answers = response.into_inner();
        loop {
            match answers.next().await {
                Some(Ok(a)) if a.ttl <= 0 => {
                    expired.store(true, Ordering::SeqCst);
                    return;
                }
                Some(Ok(_)) => {
                    tokio::time::sleep(period).await;
                    if tx.unbounded_send(ask).is_err() {
                        break;
                    }
                }
                // The stream broke: open another after a period.
                _ => {
                    tokio::time::sleep(period).await;
                    break;
                }
            }
        }
    }
}
