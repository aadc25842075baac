//! Deleting this run's keys from servers it did not start.

use crate::client::{Node, raw_connection};
use std::time::Duration;

/// Deletes every key under `prefix` (SCAN + UNLINK, bounded), never more;
/// returns how many were deleted. Unreachable nodes are skipped.
pub async fn delete_own_keys(nodes: &[Node], prefix: &str) -> u64 {
    let mut deleted = 0u64;
    for node in nodes {
        deleted += delete_on_node(node, prefix).await;
    }
    deleted
}

async fn delete_on_node(node: &Node, prefix: &str) -> u64 {
    let Ok(Ok(mut c)) =
        tokio::time::timeout(Duration::from_secs(2), raw_connection(&node.addr)).await
    else {
        return 0;
    };
    let mut deleted = 0u64;
    let mut cursor: u64 = 0;
    // A bounded walk: 100k SCAN pages is far beyond any run's keys.
    for _ in 0..100_000 {
        let reply: redis::RedisResult<(u64, Vec<String>)> = redis::cmd("SCAN")
            .arg(cursor)
            .arg("MATCH")
            .arg(format!("{prefix}*"))
            .arg("COUNT")
            .arg(1000)
            .query_async(&mut c)
            .await;
        let Ok((next, keys)) = reply else { break };
        // Only keys that really carry our prefix (MATCH treats glob
        // characters in the prefix as patterns).
        let ours: Vec<&String> = keys.iter().filter(|k| k.starts_with(prefix)).collect();
        if !ours.is_empty() {
            let unlinked: u64 = redis::cmd("UNLINK")
                .arg(&ours)
                .query_async(&mut c)
                .await
                .unwrap_or(0);
            deleted += unlinked;
        }
        cursor = next;
        if cursor == 0 {
            break;
        }
    }
    deleted
}
