//! locklab's fault-injecting TCP proxy on loopback.
//!
//! This kernel has no netem and Toxiproxy is not packaged, so real mode
//! puts its own proxy between every pair of hosts that talk: one [`Link`]
//! per (client, node) pair and per (replica, master) pair. A link is a
//! listener on `127.0.0.1` that forwards each connection it accepts to its
//! target; the dialing side uses the link's address instead of the
//! target's. Each of its two directions ([`Way`]) can be, independently:
//!
//! - **cut** (a partition): bytes that arrive while the direction is cut
//!   are dropped, and the connection they belong to is then *wedged* for
//!   good (nothing more crosses it either way, and a close of the far side
//!   is not passed on), as a TCP connection whose segments were lost looks
//!   to its ends: the client gives up after its reply timeout and dials
//!   again. A connection dialed while the forward direction is cut never
//!   reaches its target (a lost SYN);
//! - **held** (a delay): bytes wait in the proxy, in order, and all move on
//!   when the hold ends;
//! - **slowed**: each chunk is delivered `latency` after it arrived (the
//!   latency in force when it arrived), in order.
//!
//! A direction that is healed, released or given back its latency behaves
//! as before at once; faults overlap as the caller counts them (real mode
//! drives links through `sim::links::Links`, as the simulator does).
//!
//! The proxy runs on its own tokio runtime (one worker thread), so that
//! pausing a client's thread never pauses the network. Dropping the
//! [`Proxy`] shuts that runtime down: every listener and connection is
//! closed, and no port is left behind.

use std::collections::BTreeMap;
use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;

/// How long the proxy waits for its target to accept a connection.
const CONNECT_TIMEOUT_MS: u64 = 1_000;

/// One direction of a link.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Way {
    /// From the side that dials to the target (a client's requests, a
    /// replica's acknowledgements).
    Forward,
    /// From the target back to the side that dials (replies, the
    /// replication stream).
    Back,
}

impl Way {
    fn index(self) -> usize {
        match self {
            Way::Forward => 0,
            Way::Back => 1,
        }
    }
}

/// The faults in force on one direction.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct WayState {
    cut: bool,
    held: bool,
    latency: Duration,
}

/// What a link's connections share with its controller.
#[derive(Debug)]
struct LinkShared {
    target: Mutex<SocketAddr>,
    state: watch::Sender<[WayState; 2]>,
    /// Whether a wedged connection is closed when the cut heals.
    close_wedged_on_heal: AtomicBool,
}

impl LinkShared {
    fn way(&self, way: Way) -> WayState {
        self.state.borrow()[way.index()]
    }

    fn target(&self) -> SocketAddr {
        *self.target.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// The proxy: its runtime and its links by name.
pub struct Proxy {
    runtime: Option<tokio::runtime::Runtime>,
    links: Mutex<BTreeMap<String, Link>>,
}

impl std::fmt::Debug for Proxy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Proxy")
            .field("links", &self.links.lock().map(|l| l.len()).unwrap_or(0))
            .finish()
    }
}

/// The controller of one link; cheap to clone.
#[derive(Debug, Clone)]
pub struct Link {
    shared: Arc<LinkShared>,
    addr: SocketAddr,
}

impl Proxy {
    /// A proxy with no link yet, its runtime started.
    pub fn start() -> io::Result<Proxy> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("locklab-proxy")
            .enable_all()
            .build()?;
        Ok(Proxy {
            runtime: Some(runtime),
            links: Mutex::new(BTreeMap::new()),
        })
    }

    fn runtime(&self) -> &tokio::runtime::Runtime {
        self.runtime
            .as_ref()
            .expect("the runtime lives until the proxy is dropped")
    }

    /// Opens link `name` to `target` on a free loopback port; every
    /// direction healthy.
    pub fn open(&self, name: &str, target: SocketAddr) -> io::Result<Link> {
        let listener = self
            .runtime()
            .block_on(TcpListener::bind(("127.0.0.1", 0)))?;
        let addr = listener.local_addr()?;
        let (state, _) = watch::channel([WayState::default(); 2]);
        let shared = Arc::new(LinkShared {
            target: Mutex::new(target),
            state,
            close_wedged_on_heal: AtomicBool::new(false),
        });
        let accepting = shared.clone();
        self.runtime().spawn(async move {
            while let Ok((conn, _)) = listener.accept().await {
                tokio::spawn(serve(conn, accepting.clone()));
            }
        });
        let link = Link { shared, addr };
        self.links
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(name.to_string(), link.clone());
        Ok(link)
    }

    /// The link called `name`.
    pub fn link(&self, name: &str) -> Option<Link> {
        self.links
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(name)
            .cloned()
    }

    /// The loopback addresses the proxy listens on (for checks that
    /// nothing is left behind).
    pub fn addrs(&self) -> Vec<SocketAddr> {
        self.links
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .values()
            .map(|l| l.addr)
            .collect()
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        if let Some(runtime) = self.runtime.take() {
            // Drops every task: listeners and connections close.
            runtime.shutdown_timeout(Duration::from_secs(1));
        }
    }
}

impl Link {
    /// The address the dialing side connects to.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    fn modify(&self, way: Way, change: impl FnOnce(&mut WayState)) {
        self.shared
            .state
            .send_modify(|states| change(&mut states[way.index()]));
    }

    /// Cuts (`true`) or heals (`false`) one direction.
    pub fn set_cut(&self, way: Way, cut: bool) {
        self.modify(way, |s| s.cut = cut);
    }

    /// Holds (`true`) one direction, or lets what it held move on.
    pub fn set_held(&self, way: Way, held: bool) {
        self.modify(way, |s| s.held = held);
    }

    /// Sets one direction's added latency (zero: none).
    pub fn set_latency(&self, way: Way, latency: Duration) {
        self.modify(way, |s| s.latency = latency);
    }

    /// New connections go to `target` from now on (failover re-points a
    /// client's link to the promoted replica).
    pub fn retarget(&self, target: SocketAddr) {
        *self.shared.target.lock().unwrap_or_else(|p| p.into_inner()) = target;
    }

    /// Whether a direction is cut now.
    pub fn is_cut(&self, way: Way) -> bool {
        self.shared.way(way).cut
    }

    /// From now on, a connection wedged by a cut is closed at both ends
    /// once neither direction is cut: for the links between two servers,
    /// which keep a connection open for good and would otherwise wait on
    /// a dead one for ever. On a real network the segments sent during
    /// the cut are retransmitted after it, and the end that gave up on
    /// the connection meanwhile answers them with a reset, so each end
    /// learns the connection is gone and dials again. (A client's link
    /// keeps the plain wedge: its client gives up and redials by itself.)
    pub fn close_wedged_on_heal(&self) {
        self.shared
            .close_wedged_on_heal
            .store(true, Ordering::SeqCst);
    }
}

/// One accepted connection, forwarded until the dialing side closes it.
async fn serve(client: TcpStream, link: Arc<LinkShared>) {
    let _ = client.set_nodelay(true);
    let wedged = Arc::new(AtomicBool::new(false));
    if link.way(Way::Forward).cut {
        // The SYN is lost: the target never hears of this connection.
        drain(client).await;
        return;
    }
    let connect = TcpStream::connect(link.target());
    let upstream =
        match tokio::time::timeout(Duration::from_millis(CONNECT_TIMEOUT_MS), connect).await {
            Ok(Ok(upstream)) => upstream,
            // The target is down: the dialing side sees its connection close,
            // as it would see a refused one.
            _ => return,
        };
    let _ = upstream.set_nodelay(true);
    let (client_read, client_write) = client.into_split();
    let (upstream_read, upstream_write) = upstream.into_split();
    let forward = pump(client_read, upstream_write, Way::Forward, &link, &wedged);
    let back = pump(upstream_read, client_write, Way::Back, &link, &wedged);
    // The connection lives as long as the dialing side keeps it: the far
    // side closing only ends the back direction (and, unless wedged, is
    // passed on as a close).
    tokio::select! {
        biased;
        _ = forward => {}
        _ = async { back.await; std::future::pending::<()>().await } => {}
        _ = healed_after_wedge(&link, &wedged) => {}
    }
}

/// Ends when the connection is wedged and no direction is cut any more,
/// on a link that closes wedged connections on heal; never otherwise.
async fn healed_after_wedge(link: &LinkShared, wedged: &AtomicBool) {
    let mut state = link.state.subscribe();
    loop {
        if link.close_wedged_on_heal.load(Ordering::SeqCst)
            && wedged.load(Ordering::SeqCst)
            && !state.borrow_and_update().iter().any(|w| w.cut)
        {
            return;
        }
        if state.changed().await.is_err() {
            std::future::pending::<()>().await;
        }
    }
}

/// Reads and drops everything until the peer closes.
async fn drain(mut stream: TcpStream) {
    let mut buf = vec![0u8; 4096];
    while matches!(stream.read(&mut buf).await, Ok(n) if n > 0) {}
}

/// What the reading half hands the writing half.
enum Chunk {
    /// Bytes, to be delivered at `due`.
    Data(Instant, Vec<u8>),
    /// The source closed, at `due`.
    End(Instant),
}

/// Moves one direction: a reader that stamps each chunk as it arrives
/// (dropping it, and wedging the connection, when the direction is cut),
/// and a writer that delivers the chunks in order once the direction is
/// not held and their latency has passed.
async fn pump(
    mut src: tokio::net::tcp::OwnedReadHalf,
    mut dst: tokio::net::tcp::OwnedWriteHalf,
    way: Way,
    link: &LinkShared,
    wedged: &AtomicBool,
) {
    let (tx, mut rx) = mpsc::unbounded_channel::<Chunk>();
    let reader = async move {
        let mut buf = vec![0u8; 16 * 1024];
        loop {
            let n = src.read(&mut buf).await.unwrap_or(0);
            let now = Instant::now();
            let state = link.way(way);
            if n == 0 {
                let _ = tx.send(Chunk::End(now + state.latency));
                return;
            }
            if wedged.load(Ordering::SeqCst) {
                continue;
            }
            if state.cut {
                wedged.store(true, Ordering::SeqCst);
                continue;
            }
            let _ = tx.send(Chunk::Data(now + state.latency, buf[..n].to_vec()));
        }
    };
    let writer = async move {
        let mut state = link.state.subscribe();
        while let Some(chunk) = rx.recv().await {
            // Held: everything waits behind the first chunk, in order.
            let _ = state.wait_for(|s| !s[way.index()].held).await;
            let due = match &chunk {
                Chunk::Data(due, _) | Chunk::End(due) => *due,
            };
            tokio::time::sleep_until(due).await;
            if link.way(way).cut {
                // Lost in flight.
                wedged.store(true, Ordering::SeqCst);
            }
            if wedged.load(Ordering::SeqCst) {
                if matches!(chunk, Chunk::End(_)) {
                    return;
                }
                continue;
            }
            match chunk {
                Chunk::Data(_, bytes) => {
                    if dst.write_all(&bytes).await.is_err() {
                        return;
                    }
                }
                Chunk::End(_) => {
                    let _ = dst.shutdown().await;
                    return;
                }
            }
        }
    };
    tokio::join!(reader, writer);
}
