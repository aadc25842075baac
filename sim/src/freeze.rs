//! Stop-the-world pauses of a simulated client.
//!
//! turmoil cannot suspend a host, so a paused client is built from two
//! parts: a [`Freeze`] gate that the client's clock, its workload and its
//! watchdog wait on, and a [`FrozenStream`] around each of its sockets that
//! neither reads nor writes while the gate is shut. Together they make a
//! paused client do nothing and send nothing, and resume where it stopped,
//! still believing what it believed, like a process in a long GC pause.

use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
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

/// A socket that stands still while its client is paused.
pub struct FrozenStream<S> {
    inner: S,
    freeze: std::sync::Arc<Freeze>,
    sleep: Option<Pin<Box<tokio::time::Sleep>>>,
}

impl<S> FrozenStream<S> {
    /// Wraps a stream of the client whose gate is `freeze`.
    pub fn new(inner: S, freeze: std::sync::Arc<Freeze>) -> Self {
        FrozenStream {
            inner,
            freeze,
            sleep: None,
        }
    }

    /// Ready when the gate is open; otherwise arms a timer for when it
    /// opens and returns pending.
    fn poll_thawed(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        loop {
            match self.freeze.remaining() {
                None => {
                    self.sleep = None;
                    return Poll::Ready(());
                }
                Some(left) => {
                    let deadline = tokio::time::Instant::now() + left;
                    match self.sleep.as_mut() {
                        Some(sleep) if sleep.deadline() == deadline => {}
                        _ => self.sleep = Some(Box::pin(tokio::time::sleep_until(deadline))),
                    }
                    if let Some(sleep) = self.sleep.as_mut() {
                        ready!(sleep.as_mut().poll(cx));
                    }
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
        ready!(this.poll_thawed(cx));
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
        ready!(this.poll_thawed(cx));
        Pin::new(&mut this.inner).poll_write(cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        let this = self.get_mut();
        ready!(this.poll_thawed(cx));
        Pin::new(&mut this.inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}

use std::future::Future;
