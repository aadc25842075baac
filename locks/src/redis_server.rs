//! Which Redis-protocol server a rung's nodes are: Redis 7.0 unless the
//! rung needs commands only later servers have.
//!
//! A scenario's deployment may name the server (`server = "redis-8.4"`);
//! where it does not, each rung runs on the oldest server it works on,
//! which its metadata names ([`crate::ladder::Rung::server`]). The
//! simulated node answers only what the named server has.

use serde::{Deserialize, Serialize};
use std::fmt;

/// A Redis-protocol server version.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize, Deserialize,
)]
pub enum RedisServer {
    /// Redis 7.0 (what real mode runs): no compare-and-set commands.
    #[default]
    #[serde(rename = "redis-7.0")]
    Redis7_0,
    /// Redis 8.4: `SET ... IFEQ|IFNE`, `DELEX`.
    #[serde(rename = "redis-8.4")]
    Redis8_4,
    /// Valkey 8.1: `SET ... IFEQ`.
    #[serde(rename = "valkey-8.1")]
    Valkey8_1,
    /// Valkey 9.0: `SET ... IFEQ`, `DELIFEQ`.
    #[serde(rename = "valkey-9.0")]
    Valkey9_0,
}

impl RedisServer {
    /// Every server, in the order above.
    pub const ALL: [RedisServer; 4] = [
        RedisServer::Redis7_0,
        RedisServer::Redis8_4,
        RedisServer::Valkey8_1,
        RedisServer::Valkey9_0,
    ];

    /// Its name in scenario files and reports (`redis-8.4`).
    pub fn name(self) -> &'static str {
        match self {
            RedisServer::Redis7_0 => "redis-7.0",
            RedisServer::Redis8_4 => "redis-8.4",
            RedisServer::Valkey8_1 => "valkey-8.1",
            RedisServer::Valkey9_0 => "valkey-9.0",
        }
    }
}

impl fmt::Display for RedisServer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_server_is_written_by_its_name_in_a_scenario() {
        for server in RedisServer::ALL {
            let text =
                toml::to_string(&std::collections::BTreeMap::from([("server", server)])).unwrap();
            assert_eq!(text.trim(), format!("server = \"{}\"", server.name()));
        }
    }
}
