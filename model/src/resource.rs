//! The guarded resource as a scenario sets it up: plain inventory, or the
//! same behind a store that refuses stale fencing tokens. How a client
//! reaches it is the engines'; what it is, and the keys it lives under,
//! are here.

use serde::{Deserialize, Serialize};

/// What kind of resource the lock guards.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ResourceKind {
    /// Plain inventory: read, decrement, write; accepts every write.
    #[default]
    Inventory,
    /// The same through a store that rejects tokens lower than one it has
    /// seen.
    Fenced,
}

/// The guarded resource, as a scenario sets it up and the checkers judge it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ResourceSpec {
    /// `inventory` or `fenced`.
    #[serde(default)]
    pub kind: ResourceKind,
    /// Initial stock.
    #[serde(default = "default_stock")]
    pub stock: i64,
}

fn default_stock() -> i64 {
    200
}

impl Default for ResourceSpec {
    fn default() -> Self {
        ResourceSpec {
            kind: ResourceKind::Inventory,
            stock: default_stock(),
        }
    }
}

/// The stock's key on the store.
pub const STOCK_KEY: &str = "stock";
/// The fenced store's highest token seen.
pub const FENCE_KEY: &str = "stock:max-token";
