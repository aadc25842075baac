//! The inventory sale: buyers decrement a shared stock under the lock,
//! and the stock left says whether any sale was lost.

use super::{MAX_OPS, for_slice, per_second};
use crate::client::Client;
use locks::Owner;
use redis::aio::MultiplexedConnection;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What one buyer counted.
struct Buyer {
    sales: u64,
    errors: u64,
}

/// What one inventory slice measured.
#[derive(Debug)]
pub struct SaleSample {
    /// Sales the buyers counted.
    pub sales: u64,
    /// Sales beyond what the stock lost: lost updates.
    pub oversold: i64,
    /// Failed purchases (lock errors).
    pub errors: u64,
    /// Time measured.
    pub elapsed: Duration,
}

impl SaleSample {
    /// Sales per second.
    pub fn rate(&self) -> f64 {
        per_second(self.sales, self.elapsed)
    }
}

/// The stock a sale starts from: large enough never to run out.
pub const INITIAL_STOCK: i64 = 1_000_000_000;

/// The sources' inventory sale: `buyers` tasks each lock, `GET` the stock,
/// `SET` it one lower and unlock, for `slice`. Oversold = sales counted −
/// (initial − final stock), measured on the real server.
pub async fn inventory(
    client: Arc<Client>,
    stock_conn: &MultiplexedConnection,
    prefix: &str,
    buyers: usize,
    ttl: Duration,
    slice: Duration,
) -> anyhow::Result<SaleSample> {
    let stock_key = format!("{prefix}stock");
    let lock_key = format!("{prefix}stock-lock");
    let mut c = stock_conn.clone();
    let () = redis::cmd("SET")
        .arg(&stock_key)
        .arg(INITIAL_STOCK)
        .query_async(&mut c)
        .await?;
    let run = for_slice(buyers, slice, |b, deadline| {
        let (client, mut conn) = (client.clone(), stock_conn.clone());
        let (stock_key, lock_key) = (stock_key.clone(), lock_key.clone());
        async move {
            let owner = Owner::new(format!("buyer-{}", std::process::id()), b as u64);
            let (mut sales, mut errors) = (0u64, 0u64);
            for _ in 0..MAX_OPS {
                let now = Instant::now();
                if now >= deadline {
                    break;
                }
                let held = match tokio::time::timeout(
                    deadline - now,
                    client.acquire(&lock_key, &owner, ttl),
                )
                .await
                {
                    Ok(Ok(h)) => h,
                    Ok(Err(_)) => {
                        errors += 1;
                        continue;
                    }
                    Err(_) => break,
                };
                let sold = async {
                    client.before_write(&held).await?;
                    let stock: i64 = redis::cmd("GET")
                        .arg(&stock_key)
                        .query_async(&mut conn)
                        .await?;
                    if stock > 0 {
                        let () = redis::cmd("SET")
                            .arg(&stock_key)
                            .arg(stock - 1)
                            .query_async(&mut conn)
                            .await?;
                    }
                    anyhow::Ok(stock > 0)
                }
                .await;
                match sold {
                    Ok(true) => sales += 1,
                    Ok(false) => {}
                    Err(_) => errors += 1,
                }
                if client.release(&lock_key, held).await.is_err() {
                    errors += 1;
                }
            }
            Buyer { sales, errors }
        }
    })
    .await;
    let sales = run.results.iter().map(|b| b.sales).sum();
    let errors = run.results.iter().map(|b| b.errors).sum();
    let left: i64 = redis::cmd("GET")
        .arg(&stock_key)
        .query_async(&mut c)
        .await?;
    Ok(SaleSample {
        sales,
        oversold: sales as i64 - (INITIAL_STOCK - left),
        errors,
        elapsed: run.elapsed,
    })
}
