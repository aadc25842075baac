//! Which server a node is: Redis 7.0 by default, or a later Redis or
//! Valkey that knows commands 7.0 does not.
//!
//! A node answers only what its version has. The commands and options
//! newer than Redis 7.0 that the node simulates are the compare-and-set
//! family a lock can be built on: a 7.0 node refuses `DELEX` and
//! `DELIFEQ` as unknown commands and `SET ... IFEQ` as a syntax error,
//! exactly as redis-server 7.0.15 does, so a rung using them fails on the
//! simulated 7.0 as it fails on the real one.
//!
//! | version      | `SET ... IFEQ` | `SET ... IFNE` | `DELEX` | `DELIFEQ` |
//! |--------------|----------------|----------------|---------|-----------|
//! | `redis-7.0`  |                |                |         |           |
//! | `redis-8.4`  | yes            | yes            | yes     |           |
//! | `valkey-8.1` | yes            |                |         |           |
//! | `valkey-9.0` | yes            |                |         | yes       |

use std::fmt;

/// A server version the node can be.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub enum ServerVersion {
    /// Redis 7.0.15, what real mode runs: the default.
    #[default]
    Redis7_0,
    /// Redis 8.4: `SET ... IFEQ|IFNE` and `DELEX`.
    Redis8_4,
    /// Valkey 8.1: `SET ... IFEQ`.
    Valkey8_1,
    /// Valkey 9.0: `SET ... IFEQ` and `DELIFEQ`.
    Valkey9_0,
}

/// A command or option newer than Redis 7.0.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Feature {
    /// `SET ... IFEQ value`.
    SetIfeq,
    /// `SET ... IFNE value`.
    SetIfne,
    /// `DELEX key [IFEQ value | IFNE value]`.
    Delex,
    /// `DELIFEQ key value`.
    Delifeq,
}

impl ServerVersion {
    /// Every version, oldest Redis first.
    pub const ALL: [ServerVersion; 4] = [
        ServerVersion::Redis7_0,
        ServerVersion::Redis8_4,
        ServerVersion::Valkey8_1,
        ServerVersion::Valkey9_0,
    ];

    /// Its name in scenario files and on the command line (`redis-7.0`).
    pub fn name(self) -> &'static str {
        match self {
            ServerVersion::Redis7_0 => "redis-7.0",
            ServerVersion::Redis8_4 => "redis-8.4",
            ServerVersion::Valkey8_1 => "valkey-8.1",
            ServerVersion::Valkey9_0 => "valkey-9.0",
        }
    }

    /// The version a name means, if any.
    pub fn named(name: &str) -> Option<ServerVersion> {
        ServerVersion::ALL.into_iter().find(|v| v.name() == name)
    }

    /// Whether this version has `feature`.
    pub fn has(self, feature: Feature) -> bool {
        use Feature::*;
        use ServerVersion::*;
        matches!(
            (self, feature),
            (Redis8_4, SetIfeq | SetIfne | Delex)
                | (Valkey8_1, SetIfeq)
                | (Valkey9_0, SetIfeq | Delifeq)
        )
    }

    /// The `INFO server` lines that name the server: Valkey reports the
    /// Redis version it is compatible with besides its own.
    pub(crate) fn info_lines(self) -> &'static str {
        match self {
            ServerVersion::Redis7_0 => "redis_version:7.0.15\r\n",
            ServerVersion::Redis8_4 => "redis_version:8.4.0\r\n",
            ServerVersion::Valkey8_1 => {
                "redis_version:7.2.4\r\nserver_name:valkey\r\nvalkey_version:8.1.8\r\n"
            }
            ServerVersion::Valkey9_0 => {
                "redis_version:7.2.4\r\nserver_name:valkey\r\nvalkey_version:9.0.0\r\n"
            }
        }
    }
}

impl fmt::Display for ServerVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_means_its_version() {
        for v in ServerVersion::ALL {
            assert_eq!(ServerVersion::named(v.name()), Some(v));
        }
        assert_eq!(ServerVersion::named("redis-6.2"), None);
    }

    #[test]
    fn redis_7_0_has_none_of_the_newer_commands() {
        use Feature::*;
        for f in [SetIfeq, SetIfne, Delex, Delifeq] {
            assert!(!ServerVersion::Redis7_0.has(f));
        }
        assert!(ServerVersion::Redis8_4.has(Delex) && !ServerVersion::Redis8_4.has(Delifeq));
        assert!(ServerVersion::Valkey9_0.has(Delifeq) && !ServerVersion::Valkey9_0.has(SetIfne));
    }
}
