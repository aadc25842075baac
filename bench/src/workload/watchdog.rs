//! Long critical sections: holders keep the lock past its TTL, so the
//! watchdog must renew it, and count how often a lease was lost.

use super::{MAX_OPS, for_slice, per_second};
use crate::client::{Client, info_field};
use locks::Owner;
use redis::aio::MultiplexedConnection;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What one holder counted.
struct Holder {
    cycles: u64,
    lost: u64,
}

/// What one watchdog slice measured.
#[derive(Debug)]
pub struct HoldSample {
    /// Completed cycles.
    pub cycles: u64,
    /// Holds that found their lease lost before the end of the section.
    pub lost: u64,
    /// Time measured.
    pub elapsed: Duration,
}

impl HoldSample {
    /// Cycles per second.
    pub fn rate(&self) -> f64 {
        per_second(self.cycles, self.elapsed)
    }
}

/// `holders` tasks, each on its own key, acquire, hold for `cs` (checking
/// the lease at the end, as a write would) and release, for `slice`.
pub async fn long_sections(
    client: Arc<Client>,
    prefix: &str,
    holders: usize,
    ttl: Duration,
    cs: Duration,
    slice: Duration,
) -> HoldSample {
    let run = for_slice(holders, slice, |h, deadline| {
        let client = client.clone();
        let key = format!("{prefix}hold-{h}");
        async move {
            let owner = Owner::new(format!("holder-{}", std::process::id()), h as u64);
            let (mut cycles, mut lost) = (0u64, 0u64);
            for _ in 0..MAX_OPS {
                if Instant::now() >= deadline {
                    break;
                }
                let Ok(held) = client.acquire(&key, &owner, ttl).await else {
                    lost += 1;
                    continue;
                };
                tokio::time::sleep(cs).await;
                if client.before_write(&held).await.is_err() {
                    lost += 1;
                }
                if client.release(&key, held).await.is_err() {
                    lost += 1;
                }
                cycles += 1;
            }
            Holder { cycles, lost }
        }
    })
    .await;
    HoldSample {
        cycles: run.results.iter().map(|h| h.cycles).sum(),
        lost: run.results.iter().map(|h| h.lost).sum(),
        elapsed: run.elapsed,
    }
}

/// `calls` of `EVALSHA` the server has served (INFO commandstats), to
/// count the watchdog's renewals from the server's side.
pub async fn evalsha_calls(conn: &MultiplexedConnection) -> u64 {
    info_field(conn, "commandstats", "cmdstat_evalsha:calls=")
        .await
        .as_deref()
        .and_then(|rest| rest.split(',').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}
