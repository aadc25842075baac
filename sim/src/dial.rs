//! How a simulated client reaches a node: by name, at the machine and port
//! the directory gives, through turmoil's network, with a socket that
//! stands still while the client is paused. A dial is refused by a killed
//! server's machine ([`crate::killed_servers`]) and hangs across a cut
//! link, its SYN sent again as Linux's TCP does, where turmoil alone would
//! refuse both at once.

use crate::directory::Directory;
use crate::freeze::{Freeze, FrozenStream, LinkHolds};
use locks::{BoxFuture, Dialer};
use model::host::Host;
use std::io::{Error, ErrorKind};
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

/// A simulated machine's ephemeral ports, as turmoil hands them out:
/// 49152 to 65535, one per connection. turmoil frees a port only when a
/// connected stream closes; a dial that fails or is given up (its timeout
/// ran out first) keeps its port for the rest of the run, and a host that
/// runs out of ports panics. A client that keeps redialing a node it cannot
/// reach in time (a reply timeout shorter than the round trip, a long
/// outage) would get there after some 16,000 dials. So each client counts
/// the ports it lost this way, and once only a few are left its dials fail
/// at once with `AddrNotAvailable`, as on a real machine out of ports: its
/// requests then fail, and the run goes on to a verdict.
#[derive(Debug)]
pub struct PortBudget {
    lost: AtomicU32,
    /// Ports kept for the connections of the machine's clients.
    reserve: u32,
}

impl Default for PortBudget {
    /// The ports of a machine with one client.
    fn default() -> Self {
        PortBudget::for_clients(1)
    }
}

impl PortBudget {
    /// Ports in turmoil's ephemeral range.
    pub const PORTS: u32 = 65_535 - 49_152 + 1;
    /// Ports kept for one client's open connections (one per node and the
    /// store, a few redials in flight).
    pub const RESERVE: u32 = 64;
    /// Ports kept for each further client on a shared machine
    /// ([`crate::machines`]): one connection per node
    /// ([`model::scenario::MAX_NODES`]) and the store, and room for
    /// redials in flight.
    pub const RESERVE_PER_MORE_CLIENT: u32 = 16;

    /// The ports of a machine that `clients` clients share.
    pub fn for_clients(clients: u32) -> Self {
        let more = clients.saturating_sub(1);
        PortBudget {
            lost: AtomicU32::new(0),
            reserve: Self::RESERVE + Self::RESERVE_PER_MORE_CLIENT * more,
        }
    }

    /// Whether no port can be spared for another dial.
    pub fn exhausted(&self) -> bool {
        self.lost.load(Ordering::SeqCst) >= Self::PORTS - self.reserve
    }

    /// Ports lost so far to dials that failed or were given up.
    pub fn lost(&self) -> u32 {
        self.lost.load(Ordering::SeqCst)
    }
}

/// A dial in progress: unless it connects, its port counts as lost when it
/// ends (fails, or is dropped by a timeout).
struct Dialing(Option<Arc<PortBudget>>);

impl Dialing {
    fn connected(mut self) {
        self.0 = None;
    }
}

impl Drop for Dialing {
    fn drop(&mut self) {
        if let Some(budget) = &self.0 {
            budget.lost.fetch_add(1, Ordering::SeqCst);
        }
    }
}

/// Dials a node by name (`redis-0`, `store`, or `master`, which failover
/// re-points), as a client process paused by `freeze`.
pub struct SimDialer {
    host: Host,
    directory: Arc<Directory>,
    freeze: Arc<Freeze>,
    links: Option<Arc<LinkHolds>>,
    ports: Option<Arc<PortBudget>>,
}

impl SimDialer {
    /// A dialer for `host`, resolving aliases such as `master` through
    /// `directory` at every dial.
    pub fn new(host: Host, directory: Arc<Directory>, freeze: Arc<Freeze>) -> Self {
        SimDialer {
            host,
            directory,
            freeze,
            links: None,
            ports: None,
        }
    }

    /// The same, counting the ports its failed dials lose in `ports` (a
    /// client's machine: shared by all its connections, across restarts).
    pub fn with_ports(mut self, ports: Arc<PortBudget>) -> Self {
        self.ports = Some(ports);
        self
    }

    /// The same, with the one-way holds of the client's links applied.
    pub fn with_links(mut self, links: Arc<LinkHolds>) -> Self {
        self.links = Some(links);
        self
    }
}

impl Dialer for SimDialer {
    type Stream = FrozenStream<turmoil::net::TcpStream>;

    fn dial(&self) -> BoxFuture<'static, std::io::Result<Self::Stream>> {
        let resolved = self.directory.resolve(self.host);
        let link = self
            .links
            .as_ref()
            .map(|l| l.gates(resolved))
            .unwrap_or_default();
        let (machine, port) = self.directory.address(resolved);
        let directory = self.directory.clone();
        let freeze = self.freeze.clone();
        let ports = self.ports.clone();
        Box::pin(async move {
            freeze.wait().await;
            for wait_ms in SYN_RETRANSMIT_MS {
                match connect(&machine, port, ports.clone()).await {
                    Ok(stream) => return Ok(FrozenStream::new(stream, freeze, link)),
                    // turmoil refuses a dial whose SYN a cut link dropped;
                    // only a killed server's machine truly refuses.
                    Err(e) if e.kind() == ErrorKind::ConnectionRefused => {
                        if directory.killed().is_killed(resolved) {
                            return Err(Error::new(
                                ErrorKind::ConnectionRefused,
                                format!("connection refused by {machine}:{port}"),
                            ));
                        }
                        tokio::time::sleep(Duration::from_millis(wait_ms)).await;
                    }
                    Err(e) => return Err(e),
                }
            }
            Err(Error::new(
                ErrorKind::TimedOut,
                format!("connection to {machine}:{port} timed out: no answer to any SYN"),
            ))
        })
    }
}

/// A lost SYN is sent again after Linux's initial retransmission timeout
/// (1 s), doubled at each of its `tcp_syn_retries` (6) tries; after the
/// last wait the dial fails, 127 s after it began. A dial across a
/// partition thus hangs as on a real network (a caller's own connect
/// timeout usually ends it first), and connects at the first SYN sent
/// after the partition healed.
const SYN_RETRANSMIT_MS: [u64; 7] = [1_000, 2_000, 4_000, 8_000, 16_000, 32_000, 64_000];

/// One SYN: connected, refused, or lost to a cut link (turmoil reports
/// both as refused); a port spent unless it connected.
async fn connect(
    machine: &str,
    port: u16,
    ports: Option<Arc<PortBudget>>,
) -> std::io::Result<turmoil::net::TcpStream> {
    if ports.as_ref().is_some_and(|p| p.exhausted()) {
        return Err(Error::new(
            ErrorKind::AddrNotAvailable,
            "no ephemeral port left: every one was lost to a dial that failed or timed out",
        ));
    }
    let dialing = Dialing(ports);
    let stream = turmoil::net::TcpStream::connect((machine, port)).await?;
    dialing.connected();
    Ok(stream)
}
