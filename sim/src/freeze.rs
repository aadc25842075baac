//! Stop-the-world pauses of a simulated client.
//!
//! turmoil cannot suspend a host, so a paused client is built from two
//! parts: a [`Freeze`] gate that the client's clock, its workload and its
//! watchdog wait on, and a [`FrozenStream`] around each of its sockets that
//! neither reads nor writes while the gate is shut. Together they make a
//! paused client do nothing and send nothing, and resume where it stopped,
//! still believing what it believed, like a process in a long GC pause.

use model::host::Host;
use std::collections::BTreeMap;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, ready};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// True simulated time since the run began.
pub fn sim_now() -> Duration {
    turmoil::sim_elapsed().unwrap_or_default()
}

/// A client's pause gate: shut until a simulated instant.
#[derive(Debug, Default)]
pub struct Freeze {
    until_us: AtomicU64,
}

impl Freeze {
    /// A gate that is open.
    pub fn new() -> Self {
        Freeze::default()
    }

    /// Shuts the gate until `until` (true simulated time); a longer pause
    /// already in force wins.
    pub fn freeze_until(&self, until: Duration) {
        self.until_us
            .fetch_max(until.as_micros() as u64, Ordering::SeqCst);
    }

    /// Shuts the gate for good (the client is about to be crashed).
    pub fn freeze_forever(&self) {
        self.until_us.store(u64::MAX, Ordering::SeqCst);
    }

    /// Opens the gate (a restarted process is not paused).
    pub fn thaw(&self) {
        self.until_us.store(0, Ordering::SeqCst);
    }

    /// How much longer the gate stays shut, if it is shut now.
    pub fn remaining(&self) -> Option<Duration> {
        let until = self.until_us.load(Ordering::SeqCst);
        if until == 0 {
            // Never shut, or opened since: no need to read the clock, which
            // every read and write of every socket would otherwise do.
            return None;
        }
        let now = sim_now().as_micros() as u64;
        (until > now).then(|| Duration::from_micros(until - now))
    }

    /// Waits until the gate is open.
    pub async fn wait(&self) {
        // Bounded: each round sleeps until the gate's current deadline; only
        // a pause extended again and again could need more than one round.
        for _round in 0..10_000 {
            match self.remaining() {
                Some(left) => tokio::time::sleep(left.min(Duration::from_secs(3_600))).await,
                None => return,
            }
        }
    }
}

/// Which way a one-way hold stops messages on a client's link.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// What the client sends (its requests).
    Requests,
    /// What the client receives (the replies).
    Replies,
}

/// The two gates of one link of a client, one per direction.
#[derive(Debug, Clone, Default)]
pub struct LinkGates {
    /// Shut while the client's requests on this link are held.
    pub requests: Arc<Freeze>,
    /// Shut while the replies on this link are held.
    pub replies: Arc<Freeze>,
}

/// One-way holds on a client's links, by the remote host. turmoil can hold
/// a link only in both directions; a client's own socket can hold one.
#[derive(Debug, Default)]
pub struct LinkHolds {
    links: Mutex<BTreeMap<Host, LinkGates>>,
}

impl LinkHolds {
    /// The gates of the link to `host` (open until a hold shuts them).
    pub fn gates(&self, host: Host) -> LinkGates {
        self.links
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .entry(host)
            .or_default()
            .clone()
    }

    /// Holds one direction of the link to `host` until `until` (true
    /// simulated time); what is held then moves on at once.
    pub fn hold(&self, host: Host, direction: Direction, until: Duration) {
        let gates = self.gates(host);
        match direction {
            Direction::Requests => gates.requests.freeze_until(until),
            Direction::Replies => gates.replies.freeze_until(until),
        }
    }
}

/// A socket that stands still while its client is paused, and holds one
/// direction while a one-way delay holds its link.
pub struct FrozenStream<S> {
    inner: S,
    freeze: Arc<Freeze>,
    link: LinkGates,
    /// The timer of the client's pause gate.
    sleep: Option<Pin<Box<tokio::time::Sleep>>>,
    /// One timer per held direction: a read held until one instant must not
    /// lose its wake-up when a write passes.
    link_sleeps: [Option<Pin<Box<tokio::time::Sleep>>>; 2],
}

impl<S> FrozenStream<S> {
    /// Wraps a stream of the client whose gate is `freeze`, on a link
    /// whose one-way holds are `link`.
    pub fn new(inner: S, freeze: Arc<Freeze>, link: LinkGates) -> Self {
        FrozenStream {
            inner,
            freeze,
            link,
            sleep: None,
            link_sleeps: [None, None],
        }
    }

    /// Ready when the client's gate and the link's gate for `direction`
    /// are open; otherwise arms a timer for when they open and returns
    /// pending.
    fn poll_open(&mut self, cx: &mut Context<'_>, direction: Direction) -> Poll<()> {
        ready!(poll_gate(&self.freeze, &mut self.sleep, cx));
        let (gate, sleep) = match direction {
            Direction::Requests => (&self.link.requests, &mut self.link_sleeps[0]),
            Direction::Replies => (&self.link.replies, &mut self.link_sleeps[1]),
        };
        poll_gate(gate, sleep, cx)
    }
}

/// Ready when `gate` is open; otherwise arms `sleep` for when it opens
/// (keeping it when the deadline is the same) and returns pending.
fn poll_gate(
    gate: &Freeze,
    sleep: &mut Option<Pin<Box<tokio::time::Sleep>>>,
    cx: &mut Context<'_>,
) -> Poll<()> {
    loop {
        match gate.remaining() {
            None => {
                *sleep = None;
                return Poll::Ready(());
            }
            Some(left) => {
                let deadline = tokio::time::Instant::now() + left;
                match sleep.as_mut() {
                    Some(armed) if armed.deadline() == deadline => {}
                    _ => *sleep = Some(Box::pin(tokio::time::sleep_until(deadline))),
                }
                if let Some(armed) = sleep.as_mut() {
                    ready!(armed.as_mut().poll(cx));
                }
            }
        }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for FrozenStream<S> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let this = self.get_mut();
        ready!(this.poll_open(cx, Direction::Replies));
        Pin::new(&mut this.inner).poll_read(cx, buf)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for FrozenStream<S> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let this = self.get_mut();
        ready!(this.poll_open(cx, Direction::Requests));
        Pin::new(&mut this.inner).poll_write(cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        let this = self.get_mut();
        ready!(this.poll_open(cx, Direction::Requests));
        Pin::new(&mut this.inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}

use std::future::Future;
