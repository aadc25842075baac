//! The lock algorithms of the libraries people deploy, as rungs beside the
//! ladder: the "libraries" group of `locklab ladder`, the safety matrix and
//! the tour.
//!
//! Each module is this project's own code, written from the library's
//! documented behaviour with its public source as the reference, and names
//! in its doc the library version and file it mirrors, what it models and
//! what it leaves out. Where a library's default is a time that the user
//! configures and that belongs with the lease (Redisson's watchdog timeout,
//! redsync's expiry), the model takes the scenario's TTL and scales the
//! library's other defaults with it, and says so; defaults the libraries
//! fix in milliseconds whatever the lease (retry delays, node-redlock's
//! extension threshold) are kept as they are. Randomness (tokens, retry
//! jitter) comes from the rung's seeded [`TokenSource`](crate::TokenSource),
//! so a simulated run replays byte for byte.

pub mod native_cad;
pub mod node_redlock;
pub mod python_redis_lock;
pub mod quorum;
pub mod redisson;
pub mod redisson_fair;
pub mod redisson_rw;
pub mod redisson_semaphore;
pub mod redsync;
pub mod rslock;

use crate::ladder::Rung;
use crate::lock::{Lock, LockConfig, LockContext};
use crate::rungs::common::NodeConn;

/// The library rungs, after the ladder, numbered on from it (11 on).
pub const LIBRARIES: [&Rung; 9] = [
    &redisson::RUNG,
    &redsync::RUNG,
    &node_redlock::RUNG,
    &rslock::RUNG,
    &native_cad::RUNG,
    &redisson_fair::RUNG,
    &python_redis_lock::RUNG,
    &redisson_semaphore::RUNG,
    &redisson_rw::RUNG,
];

/// Builds the library rung `id` over `nodes`; `None` when no library rung
/// has that id.
pub(crate) fn build<C: NodeConn>(
    id: &str,
    nodes: Vec<C>,
    ctx: LockContext,
    config: LockConfig,
) -> Option<Box<dyn Lock>> {
    let first = || nodes[0].clone();
    let lock: Box<dyn Lock> = match id {
        "redisson" => Box::new(redisson::Redisson::new(first(), ctx, config)),
        "redsync" => Box::new(redsync::Redsync::new(nodes, ctx, config)),
        "node-redlock" => Box::new(node_redlock::NodeRedlock::new(nodes, ctx, config)),
        "rslock" => Box::new(rslock::Rslock::new(nodes, ctx, config)),
        "native-cad" => Box::new(native_cad::NativeCad::new(first(), ctx, config)),
        "redisson-fair" => Box::new(redisson_fair::RedissonFair::new(first(), ctx, config)),
        "python-redis-lock" => Box::new(python_redis_lock::PythonRedisLock::new(
            first(),
            ctx,
            config,
        )),
        "redisson-rw" => Box::new(redisson_rw::RedissonRw::new(first(), ctx, config)),
        "redisson-semaphore" => Box::new(redisson_semaphore::RedissonSemaphore::new(
            first(),
            ctx,
            config,
        )),
        _ => return None,
    };
    Some(lock)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_library_rungs_follow_the_ladder_with_their_own_texts() {
        let mut last = crate::LADDER.len() - 1;
        for rung in LIBRARIES {
            // In order after the ladder; a number may be left free for a
            // rung added elsewhere.
            assert!(rung.number as usize > last, "{}", rung.id);
            last = rung.number as usize;
            for text in [
                rung.acquire,
                rung.release,
                rung.fixes,
                rung.flaw,
                rung.shown_by,
            ] {
                assert!(!text.is_empty(), "{}", rung.id);
            }
            assert!(crate::ladder::rung(rung.id).is_some(), "{}", rung.id);
        }
    }
}
