//! Real-mode clients: each client process is its own OS thread running
//! its own current-thread tokio runtime, and a stop-the-world pause blocks
//! that whole thread.
//!
//! Why threads and not a hidden worker subprocess stopped with `SIGSTOP`:
//! every client must share the run's one monotonic clock and one history
//! sink, and its fault hook must reach the driver within a millisecond;
//! in one process these are plain shared memory, where subprocesses would
//! need a wire protocol for the history, the hook's requests and the clock
//! faults. What a pause must stop (the lock code, the watchdog's renewal
//! task, every timer and socket of the client) all runs as tasks of the
//! client's runtime, and the runtime calls a hook before it polls any task
//! (`on_before_task_poll`, a `tokio_unstable` API this workspace builds
//! with): while the client's [`ThreadFreeze`] is shut, that hook blocks
//! the thread, so nothing of the client runs; timers that fall due fire
//! late, replies wait in the kernel's buffers, as in a real GC pause. A
//! pause aimed at a fault point blocks the thread right inside the lock
//! code. What it cannot stop is a task already in the middle of one poll:
//! it runs on to its next `.await` (microseconds of work, no I/O wait).
//!
//! A crash is a process's death: every socket of the client fails at once
//! ([`KillSwitch`]), so nothing more leaves it, and its runtime is dropped,
//! which closes the sockets as the kernel does for a killed process.

use crate::clock::RealClock;
use crate::links::LinkTable;
use locks::{BoxFuture, Dialer};
use model::host::Host;
use sim::client_state::ClientState;
use sim::directory::Directory;
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// A client thread's stop-the-world gate.
#[derive(Debug, Default)]
pub struct ThreadFreeze {
    state: Mutex<FreezeState>,
    changed: Condvar,
}

#[derive(Debug, Default)]
struct FreezeState {
    until: Option<Instant>,
    stopped: bool,
}

impl ThreadFreeze {
    /// An open gate.
    pub fn new() -> Self {
        ThreadFreeze::default()
    }

    /// Shuts the gate until `until`; a longer pause already in force wins.
    pub fn freeze_until(&self, until: Instant) {
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        state.until = Some(state.until.map_or(until, |u| u.max(until)));
        self.changed.notify_all();
    }

    /// Opens the gate for good: the process is ending (a crash, or the end
    /// of the run), and its thread must be free to wind down.
    pub fn stop(&self) {
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        state.stopped = true;
        self.changed.notify_all();
    }

    /// Blocks the calling thread while the gate is shut.
    pub fn block(&self) {
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        loop {
            if state.stopped {
                return;
            }
            let now = Instant::now();
            match state.until {
                Some(until) if until > now => {
                    state = self
                        .changed
                        .wait_timeout(state, until - now)
                        .unwrap_or_else(|p| p.into_inner())
                        .0;
                }
                _ => return,
            }
        }
    }
}

/// A socket of a client process that fails every read and write once the
/// process is dead, so that nothing more leaves it.
pub struct KillSwitch<S> {
    inner: S,
    dead: Arc<AtomicBool>,
}

impl<S> KillSwitch<S> {
    fn check(&self) -> io::Result<()> {
        if self.dead.load(Ordering::SeqCst) {
            Err(io::Error::new(
                io::ErrorKind::BrokenPipe,
                "the client process is dead",
            ))
        } else {
            Ok(())
        }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for KillSwitch<S> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        this.check()?;
        Pin::new(&mut this.inner).poll_read(cx, buf)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for KillSwitch<S> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        this.check()?;
        Pin::new(&mut this.inner).poll_write(cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        this.check()?;
        Pin::new(&mut this.inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}

/// Dials a node by name through the client's proxy link to it; `master`
/// is resolved at every dial, so a reconnect after failover reaches the
/// promoted node.
pub struct RealDialer {
    client: Host,
    host: Host,
    directory: Arc<Directory>,
    links: Arc<LinkTable>,
    dead: Arc<AtomicBool>,
}

impl RealDialer {
    /// A dialer from `client` to `host`.
    pub fn new(
        client: Host,
        host: Host,
        directory: Arc<Directory>,
        links: Arc<LinkTable>,
        dead: Arc<AtomicBool>,
    ) -> Self {
        RealDialer {
            client,
            host,
            directory,
            links,
            dead,
        }
    }
}

impl Dialer for RealDialer {
    type Stream = KillSwitch<tokio::net::TcpStream>;

    fn dial(&self) -> BoxFuture<'static, io::Result<Self::Stream>> {
        let target = self.directory.resolve(self.host);
        let addr = self.links.addr(self.client, target);
        let dead = self.dead.clone();
        Box::pin(async move {
            let addr = addr.ok_or_else(|| {
                io::Error::new(io::ErrorKind::NotFound, format!("no link to {target}"))
            })?;
            let stream = tokio::net::TcpStream::connect(addr).await?;
            stream.set_nodelay(true)?;
            let stream = KillSwitch {
                inner: stream,
                dead,
            };
            stream.check()?;
            Ok(stream)
        })
    }
}

/// A real client's state: the one [`ClientState`] on a real machine's
/// clock (its process's switches are in [`ProcessHandle`]).
pub type RealClientState = ClientState<RealClock>;

/// One running incarnation of a client's process: its thread and the
/// switches the driver and its hook hold.
#[derive(Debug, Clone)]
pub struct ProcessHandle {
    /// Its stop-the-world gate.
    pub freeze: Arc<ThreadFreeze>,
    /// Set when the process dies: every socket fails.
    pub dead: Arc<AtomicBool>,
    /// Wakes the thread so that it drops its runtime.
    pub stop: Arc<tokio::sync::Notify>,
    /// Set when its workload ran to the end.
    pub finished: Arc<AtomicBool>,
    /// Set when its thread has ended.
    pub ended: Arc<AtomicBool>,
    /// Set when the driver killed it (a crash fault, or the run's end).
    pub killed: Arc<AtomicBool>,
}

impl ProcessHandle {
    /// A process about to start.
    pub fn new() -> Self {
        ProcessHandle {
            freeze: Arc::new(ThreadFreeze::new()),
            dead: Arc::new(AtomicBool::new(false)),
            stop: Arc::new(tokio::sync::Notify::new()),
            finished: Arc::new(AtomicBool::new(false)),
            ended: Arc::new(AtomicBool::new(false)),
            killed: Arc::new(AtomicBool::new(false)),
        }
    }

    /// Kills the process: nothing more leaves it, its thread winds down.
    pub fn kill(&self) {
        self.killed.store(true, Ordering::SeqCst);
        self.dead.store(true, Ordering::SeqCst);
        self.freeze.stop();
        self.stop.notify_one();
    }

    /// Pauses the whole process for `duration` from now.
    pub fn pause(&self, duration: Duration) {
        self.freeze.freeze_until(Instant::now() + duration);
    }

    /// Whether it is still running: not finished, not killed by the
    /// driver (a client that reached its own crash point is dead but
    /// waits for the driver to crash it).
    pub fn running(&self) -> bool {
        !self.finished.load(Ordering::SeqCst) && !self.killed.load(Ordering::SeqCst)
    }
}

impl Default for ProcessHandle {
    fn default() -> Self {
        Self::new()
    }
}
