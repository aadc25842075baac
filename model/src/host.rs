//! The hosts of a simulated run, by name: the one place where a host's name
//! is built and parsed.
//!
//! | name | host |
//! |---|---|
//! | `client-N` | the N-th client (from 0), a process running a rung |
//! | `redis-N` | the N-th Redis node (masters first, then replicas) |
//! | `store` | the node that holds the guarded resource |
//! | `master` | in a replicated deployment, whichever node is the master now (failover re-points it) |
//!
//! Parsing is strict: `client-01`, `client-+1` or `redis-` are not hosts,
//! so a name either means exactly one host or is rejected with the
//! spellings that are expected.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// A host of a simulated run; written as its name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(into = "String", try_from = "String")]
pub enum Host {
    /// A client process: `client-N`.
    Client(usize),
    /// A Redis node: `redis-N`.
    Node(usize),
    /// The store holding the guarded resource: `store`.
    Store,
    /// The current master of a replicated deployment: `master`.
    Master,
}

impl Host {
    /// The client index, when this is a client.
    pub fn client(self) -> Option<usize> {
        match self {
            Host::Client(i) => Some(i),
            _ => None,
        }
    }

    /// The node index, when this is a Redis node (not the `master` alias).
    pub fn node(self) -> Option<usize> {
        match self {
            Host::Node(i) => Some(i),
            _ => None,
        }
    }

    /// Whether it names a Redis node, directly or as `master`.
    pub fn is_node(self) -> bool {
        matches!(self, Host::Node(_) | Host::Master)
    }
}

impl fmt::Display for Host {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Host::Client(i) => write!(f, "client-{i}"),
            Host::Node(i) => write!(f, "redis-{i}"),
            Host::Store => f.write_str("store"),
            Host::Master => f.write_str("master"),
        }
    }
}

/// A name that is not a host.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown host {0:?}; expected client-N, redis-N, store or master")]
pub struct BadHost(pub String);

impl FromStr for Host {
    type Err = BadHost;

    fn from_str(name: &str) -> Result<Host, BadHost> {
        let bad = || BadHost(name.to_string());
        match name {
            "store" => return Ok(Host::Store),
            "master" => return Ok(Host::Master),
            _ => {}
        }
        let (make, digits): (fn(usize) -> Host, &str) =
            if let Some(digits) = name.strip_prefix("client-") {
                (Host::Client, digits)
            } else if let Some(digits) = name.strip_prefix("redis-") {
                (Host::Node, digits)
            } else {
                return Err(bad());
            };
        // Only the canonical spelling: one name, one host.
        let canonical = !digits.is_empty()
            && digits.bytes().all(|b| b.is_ascii_digit())
            && (digits == "0" || !digits.starts_with('0'));
        if !canonical {
            return Err(bad());
        }
        digits.parse().map(make).map_err(|_| bad())
    }
}

impl From<Host> for String {
    fn from(host: Host) -> String {
        host.to_string()
    }
}

impl TryFrom<String> for Host {
    type Error = BadHost;

    fn try_from(name: String) -> Result<Host, BadHost> {
        name.parse()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_host_reads_back_from_its_name() {
        for host in [
            Host::Client(0),
            Host::Client(12),
            Host::Node(3),
            Host::Store,
            Host::Master,
        ] {
            assert_eq!(host.to_string().parse::<Host>(), Ok(host));
        }
    }

    #[test]
    fn only_canonical_names_are_hosts() {
        for name in [
            "client-01",
            "client-+1",
            "client-",
            "redis-",
            "redis-00",
            "client-1 ",
            "Store",
            "node-1",
        ] {
            assert!(name.parse::<Host>().is_err(), "{name}");
        }
    }
}
