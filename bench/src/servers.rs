//! The Redis servers a run talks to: five of our own on loopback, or the
//! ones given by URL.

use crate::client::Node;
use crate::error::BenchError;
use harness::RedisServer;

/// How many servers a run starts: enough for Redlock over five masters.
const OWN_SERVERS: usize = 5;

/// The servers of one run. Our own are killed when this is dropped: at
/// return, on error, and while unwinding from a panic.
pub struct Servers {
    /// Processes this run started (empty when URLs were given).
    own: Vec<RedisServer>,
    /// Every node to talk to, ours or given.
    nodes: Vec<Node>,
}

impl Servers {
    /// Starts our own servers, or parses `urls` when there are any.
    pub fn start_or_use(urls: &[String]) -> Result<Servers, BenchError> {
        if !urls.is_empty() {
            let nodes = urls
                .iter()
                .map(|u| Node::from_url(u))
                .collect::<anyhow::Result<_>>()
                .map_err(BenchError::BadUrl)?;
            return Ok(Servers {
                own: Vec::new(),
                nodes,
            });
        }
        eprintln!("bench: starting {OWN_SERVERS} redis-server processes on loopback");
        let own = RedisServer::start_many(OWN_SERVERS)?;
        let pids: Vec<String> = own.iter().map(|s| s.pid().to_string()).collect();
        let watchers: Vec<String> = own.iter().map(|s| s.watcher_pid().to_string()).collect();
        eprintln!(
            "bench: redis-server pids {} (their watchers {}: each kills its server when this process ends)",
            pids.join(" "),
            watchers.join(" ")
        );
        let nodes = own.iter().map(Node::of).collect();
        Ok(Servers { own, nodes })
    }

    /// `n` more servers of our own, started without a word: a batch's
    /// fresh set (see [`crate::measure`]'s paired stage).
    pub fn start_fresh(n: usize) -> Result<Servers, BenchError> {
        let own = RedisServer::start_many(n)?;
        let nodes = own.iter().map(Node::of).collect();
        Ok(Servers { own, nodes })
    }

    /// Whether this run started the servers (and may pin them).
    pub fn are_own(&self) -> bool {
        !self.own.is_empty()
    }

    /// The nodes, node 0 first.
    pub fn nodes(&self) -> &[Node] {
        &self.nodes
    }

    /// The pids of our own servers, node 0 first.
    pub fn pids(&self) -> Vec<u32> {
        self.own.iter().map(RedisServer::pid).collect()
    }
}
