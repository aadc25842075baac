//! The real-TCP server ([`serve_tcp`], used by `locklab sim-server`): one
//! node served on a real socket, in real time, that keeps answering while
//! a script runs long, as Redis 7.0 does (see [`crate::busy`]).
//!
//! The node is single-threaded (`Rc`, one `LocalSet`), and a running script
//! blocks its thread inside Lua: the mlua VM cannot yield from its hook.
//! So the sockets live on a thread of their own, the *front*, with its own
//! tokio runtime:
//!
//! * the front accepts connections and, for each, hands the node's thread
//!   an [`Inbox`] for the client's requests and an in-memory stream
//!   (`tokio::io::duplex`) for its replies, where the very connection loop
//!   the simulator uses serves it;
//! * while no script runs, the front copies bytes both ways;
//! * while a script runs, a connection with nothing in flight at the node
//!   (the node executed every byte forwarded to it: its [`ConnProbe`] says
//!   so) is not forwarded: its requests wait, and past the busy threshold
//!   the front answers them itself ([`answer_while_busy`]), after the
//!   replies the node already wrote, so each connection's replies stay in
//!   request order;
//! * requests handed to the node just before a script started, which the
//!   node has not read, are taken back from the inbox and treated the
//!   same way: Redis would read them during the script;
//! * a connection with a request still in flight (the script's own caller,
//!   a client blocked in `WAIT`) keeps its order: what follows is
//!   forwarded and runs after the script, as Redis would run it after the
//!   blocked command.
//!
//! The node's own outgoing connections (a replica's link to its master)
//! stay on the node's thread. The front also stops the server: on
//! `SHUTDOWN NOSAVE` during a script, on the caller's stop future (a
//! signal), or when the serve future is dropped; a running script is then
//! ended by the engine's hook.
//!
//! What reaches a client before its connection closes follows redis-server:
//! once the server is stopping, nothing more is written to anyone (Redis
//! exits; the caller of a script the stop ended reads no reply); after
//! `QUIT` or a protocol error the node's last replies always go out, even
//! when the client keeps writing and the node has stopped reading.
//! `tests/real_tcp.rs` compares each case with a real redis-server.

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Instant;

use futures::FutureExt;
use tokio::io::{AsyncReadExt, AsyncWriteExt, DuplexStream};
use tokio::net::TcpStream;
use tokio::sync::{mpsc, oneshot, watch};
use tokio::task::{LocalSet, spawn_local};

use crate::busy::{
    BusyAnswer, ConnProbe, FrontMulti, ScriptState, ScriptWatch, answer_while_busy_in_multi,
    protocol_error,
};
use crate::handle::{NodeConfig, NodeHandle};
use crate::inbox::{Handed, Inbox, NodeStream};
use crate::replication::Net;
use crate::resp::{Parse, parse_request};
use crate::server::{connection, start};

/// Bytes the in-memory stream of the node's replies to the front buffers.
const DUPLEX_BYTES: usize = 64 * 1024;

/// How much a connection's front reads ahead of the node, and how much of
/// the node's replies it buffers for a slow client, before it stops
/// reading (back-pressure, as the kernel's buffers give Redis).
const BUFFER_LIMIT: usize = 4 * 1024 * 1024;

/// Serves a node on a real TCP address (real time), e.g. for
/// `locklab sim-server`, until a client sends `SHUTDOWN`. The clock's
/// epoch is set to the real time now. The future is not `Send`: run it
/// with `block_on` on a current-thread runtime.
pub async fn serve_tcp(addr: SocketAddr, config: NodeConfig) -> io::Result<()> {
    serve_tcp_until(addr, config, std::future::pending()).await
}

/// As [`serve_tcp`], and also stops when `stop` completes (e.g. on a
/// signal), even while a script runs: `stop` is polled on the server's
/// socket thread, not on the caller's, which a running script blocks.
pub async fn serve_tcp_until<F>(addr: SocketAddr, config: NodeConfig, stop: F) -> io::Result<()>
where
    F: Future<Output = ()> + Send + 'static,
{
    serve_bound_until(std::net::TcpListener::bind(addr)?, config, stop).await
}

/// As [`serve_tcp_until`], on a listener the caller bound: so that it can
/// say the address before serving (the port the system chose for port 0).
pub async fn serve_bound_until<F>(
    listener: std::net::TcpListener,
    config: NodeConfig,
    stop: F,
) -> io::Result<()>
where
    F: Future<Output = ()> + Send + 'static,
{
    serve_on(listener, NodeHandle::new(real_time(config)), stop).await
}

/// Serves a node on an already bound real TCP listener (real time), until
/// a client sends `SHUTDOWN`.
pub async fn serve_tcp_listener(
    listener: tokio::net::TcpListener,
    handle: NodeHandle,
) -> io::Result<()> {
    serve_on(listener.into_std()?, handle, std::future::pending()).await
}

/// Sets `config`'s clock epoch to the real wall time now (for real-time
/// serving only: the simulator never reads the real clock).
pub fn real_time(mut config: NodeConfig) -> NodeConfig {
    // The node clock counts from the first moment it is read, which comes
    // first; the wall time read after it is rounded up. So the node's
    // time is never behind the real clock (a client's `PXAT now+10000`
    // then reads a PTTL of at most 10000, as from Redis), and at most a
    // millisecond ahead.
    crate::clock::true_elapsed();
    let now_us = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_micros());
    config.clock.epoch_ms = i64::try_from(now_us.div_ceil(1000)).unwrap_or(i64::MAX);
    config
}

/// The node's end of one client connection, handed over by the front.
struct NodeSide {
    stream: NodeStream,
    probe: Arc<ConnProbe>,
}

/// The front's end of one client connection's way to the node.
struct Conn {
    /// Where the client's requests go to the node.
    inbox: Arc<Inbox>,
    /// How far the node has executed them.
    probe: Arc<ConnProbe>,
}

/// Tells the front to stop when the serve future ends or is dropped.
struct StopFrontOnDrop(Arc<ScriptWatch>);

impl Drop for StopFrontOnDrop {
    fn drop(&mut self) {
        self.0.shut_down();
    }
}

async fn serve_on<F>(listener: std::net::TcpListener, handle: NodeHandle, stop: F) -> io::Result<()>
where
    F: Future<Output = ()> + Send + 'static,
{
    listener.set_nonblocking(true)?;
    let watch = ScriptWatch::new(handle.config().busy_reply_threshold);
    let (to_node, mut connections) = mpsc::unbounded_channel::<NodeSide>();
    let (done_tx, mut done) = oneshot::channel::<io::Result<()>>();
    let front = Arc::new(Front {
        watch: watch.clone(),
        handle: handle.clone(),
    });
    std::thread::Builder::new()
        .name("simredis-front".into())
        .spawn(move || {
            let _ = done_tx.send(front.run(listener, to_node, stop));
        })?;
    let _stop_front = StopFrontOnDrop(watch.clone());
    let local = LocalSet::new();
    local
        .run_until(async move {
            let node = start(handle, Net::Tokio, Some(watch.clone()));
            loop {
                tokio::select! {
                    biased;
                    result = &mut done => return result.unwrap_or_else(|_| Err(front_died())),
                    // SHUTDOWN run by the node itself (no script running).
                    () = node.stop.notified() => watch.shut_down(),
                    side = connections.recv() => match side {
                        Some(NodeSide { stream, probe }) => {
                            spawn_local(connection(node.clone(), stream, Some(probe)));
                        }
                        // The front is ending: wait for its result.
                        None => return (&mut done).await.unwrap_or_else(|_| Err(front_died())),
                    },
                }
            }
        })
        .await
}

/// The error when the front's thread ended without a result (it panicked).
fn front_died() -> io::Error {
    io::Error::other("the server's socket thread stopped unexpectedly")
}

/// The socket side of the server (see the module docs).
struct Front {
    watch: Arc<ScriptWatch>,
    handle: NodeHandle,
}

/// What the front does next with a connection's unforwarded requests.
enum Dispatch {
    /// Nothing more to do until new bytes arrive.
    Done,
    /// They wait: for the script state to change and, if given, until the
    /// script crosses the busy threshold.
    Hold(watch::Receiver<u64>, Option<Instant>),
    /// Close the connection once the replies are out (`QUIT`, a protocol
    /// error).
    Close,
    /// The server stops (`SHUTDOWN NOSAVE`).
    ShutDown,
}

impl Front {
    /// The front's thread: accepts and serves connections until the server
    /// stops, then drops every connection.
    fn run<F>(
        self: Arc<Self>,
        listener: std::net::TcpListener,
        to_node: mpsc::UnboundedSender<NodeSide>,
        stop: F,
    ) -> io::Result<()>
    where
        F: Future<Output = ()> + Send + 'static,
    {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let result = runtime.block_on(async move {
            let listener = tokio::net::TcpListener::from_std(listener)?;
            tokio::pin!(stop);
            let watch = self.watch.clone();
            let stopped = watch.stopped();
            tokio::pin!(stopped);
            loop {
                tokio::select! {
                    biased;
                    () = &mut stopped => return Ok(()),
                    () = &mut stop => self.watch.shut_down(),
                    accepted = listener.accept() => {
                        let (socket, _) = accepted?;
                        let _ = socket.set_nodelay(true);
                        let (replies, node_replies) = tokio::io::duplex(DUPLEX_BYTES);
                        let inbox = Arc::new(Inbox::default());
                        let probe = Arc::new(ConnProbe::default());
                        let side = NodeSide {
                            stream: NodeStream::new(inbox.clone(), node_replies),
                            probe: probe.clone(),
                        };
                        if to_node.send(side).is_err() {
                            return Ok(());
                        }
                        let conn = Conn { inbox, probe };
                        tokio::spawn(self.clone().serve_client(socket, replies, conn));
                    }
                }
            }
        });
        // Dropping the runtime drops every connection's task, which closes
        // its socket and its stream to the node.
        drop(runtime);
        result
    }

    /// Copies one client's bytes to and from the node, holding or answering
    /// its requests itself while a script is busy.
    async fn serve_client(
        self: Arc<Self>,
        socket: TcpStream,
        mut node_rd: DuplexStream,
        conn: Conn,
    ) {
        let Conn { inbox, probe } = conn;
        let (mut sock_rd, mut sock_wr) = socket.into_split();
        let mut from_client: Vec<u8> = Vec::with_capacity(4096);
        let mut to_node: Vec<u8> = Vec::new();
        let mut to_client: Vec<u8> = Vec::with_capacity(4096);
        // What the node sent last, on its way to `to_client`.
        let mut from_node: Vec<u8> = Vec::with_capacity(4096);
        // Bytes handed to the node so far; the probe counts those it ran.
        let mut forwarded: u64 = 0;
        // The client sent EOF: forward what is left, then close the node's
        // side, whose replies still come back.
        let mut client_done = false;
        let mut node_told = false;
        // The connection closes once `to_client` is written.
        let mut closing = false;
        // The node closed its side (QUIT, a protocol error) before taking
        // all the client sent: the rest is dropped, as Redis drops what it
        // had not read, but the node's last replies still go out.
        let mut node_gone = false;
        loop {
            // A stopping server writes nothing more (see
            // `ScriptWatch::is_stopping`): the socket just closes.
            if self.watch.is_stopping() {
                return;
            }
            if node_gone {
                from_client.clear();
                to_node.clear();
            }
            let mut hold = None;
            if !closing && !node_gone && !from_client.is_empty() {
                let step = self.dispatch(
                    &mut from_client,
                    &mut to_node,
                    &mut to_client,
                    &mut forwarded,
                    &probe,
                    &mut node_rd,
                );
                match step {
                    Dispatch::Done => {}
                    Dispatch::Hold(changes, until) => hold = Some((changes, until)),
                    Dispatch::Close => closing = true,
                    Dispatch::ShutDown => {
                        self.watch.shut_down();
                        return;
                    }
                }
            }
            if closing && to_client.is_empty() {
                let _ = sock_wr.shutdown().await;
                return;
            }
            if client_done
                && !node_told
                && !node_gone
                && from_client.is_empty()
                && to_node.is_empty()
            {
                inbox.close();
                node_told = true;
            }
            if !to_node.is_empty() && inbox.hand_over(&mut to_node) == Handed::ReaderGone {
                // Its replies are still to be read: not a reason to drop
                // them.
                node_gone = true;
                to_node.clear();
            }
            // Requests handed to the node and not read yet wait on the
            // script state: a script that starts meanwhile blocks the node,
            // and they are then taken back (subscribed first, so no change
            // is missed).
            let mut unread = None;
            if !closing && !node_gone && !node_told && (inbox.has_unread() || !to_node.is_empty()) {
                unread = Some(self.watch.subscribe());
                if self.take_back(
                    &inbox,
                    &probe,
                    &mut to_node,
                    &mut from_client,
                    &mut forwarded,
                ) {
                    continue;
                }
            }
            let (mut changes, until) = match hold {
                Some((c, u)) => (Some(c), u),
                None => (unread, None),
            };
            let holding = changes.is_some();
            let reading =
                !closing && !client_done && from_client.len() + to_node.len() < BUFFER_LIMIT;
            tokio::select! {
                n = sock_rd.read_buf(&mut from_client), if reading => match n {
                    Ok(0) | Err(_) => client_done = true,
                    Ok(_) => {}
                },
                () = inbox.drained(), if !to_node.is_empty() => {},
                n = node_rd.read_buf(&mut from_node), if !closing && to_client.len() < BUFFER_LIMIT => match n {
                    // The node closed the connection (QUIT, a protocol
                    // error): the client gets the last replies, then EOF.
                    Ok(0) | Err(_) => closing = true,
                    Ok(_) => to_client.append(&mut from_node),
                },
                n = sock_wr.write(&to_client), if !to_client.is_empty() => match n {
                    Ok(n) if n > 0 => { to_client.drain(..n); }
                    _ => return,
                },
                _ = async {
                    match changes.as_mut() {
                        Some(c) => { let _ = c.changed().await; }
                        None => std::future::pending().await,
                    }
                }, if holding => {}
                () = tokio::time::sleep_until(until.map_or_else(tokio::time::Instant::now, tokio::time::Instant::from_std)), if until.is_some() => {}
            }
        }
    }

    /// While a script runs (or a killed one ends), takes back the requests
    /// handed to the node that it has not read, if none of the client's
    /// requests is in flight there: they go back in front of what the
    /// client sent since, to be held or answered as any request that
    /// arrives during the script. Says whether it took any back.
    fn take_back(
        &self,
        inbox: &Inbox,
        probe: &ConnProbe,
        to_node: &mut Vec<u8>,
        from_client: &mut Vec<u8>,
        forwarded: &mut u64,
    ) -> bool {
        if self.watch.state() == ScriptState::Idle {
            return false;
        }
        let Some(mut unread) = inbox.take_back_unread(|| probe.executed()) else {
            return false;
        };
        *forwarded -= (unread.len() + to_node.len()) as u64;
        unread.append(to_node);
        unread.append(from_client);
        *from_client = unread;
        true
    }

    /// Moves a connection's requests on: to the node, into a hold, or
    /// answered here while a script is busy (see the module docs).
    fn dispatch(
        &self,
        from_client: &mut Vec<u8>,
        to_node: &mut Vec<u8>,
        to_client: &mut Vec<u8>,
        forwarded: &mut u64,
        probe: &ConnProbe,
        node_rd: &mut DuplexStream,
    ) -> Dispatch {
        // Subscribed before the state is read, so no change is missed.
        let changes = self.watch.subscribe();
        let in_flight = probe.executed() != *forwarded;
        let state = if in_flight {
            // Whatever follows a request the node has not run yet runs
            // after it: forward it.
            ScriptState::Idle
        } else {
            self.watch.state()
        };
        let busy_at = match state {
            ScriptState::Idle => {
                *forwarded += from_client.len() as u64;
                to_node.append(from_client);
                return Dispatch::Done;
            }
            ScriptState::Ending => return Dispatch::Hold(changes, None),
            ScriptState::Running { busy_at } => busy_at,
        };
        if Instant::now() < busy_at {
            return Dispatch::Hold(changes, Some(busy_at));
        }
        // Past the threshold: the node has written every reply owed before
        // these requests (the probe said so); they go first.
        while let Some(Ok(n)) = node_rd.read_buf(to_client).now_or_never() {
            if n == 0 {
                break;
            }
        }
        let subscribed = probe.subscribed();
        // The client's transaction as the node left it, or as an earlier
        // busy answer did (not yet applied by the node).
        let mut multi = match probe.take_front_multi() {
            FrontMulti::Unchanged => probe.in_multi().then_some(false),
            FrontMulti::Closed => None,
            FrontMulti::Open => Some(false),
            FrontMulti::Refused => Some(true),
        };
        let mut used = 0;
        let step = loop {
            match parse_request(&from_client[used..]) {
                Parse::Incomplete => break Dispatch::Done,
                Parse::Error(msg, byte) => {
                    protocol_error(msg, byte).encode(to_client);
                    used = from_client.len();
                    break Dispatch::Close;
                }
                Parse::Request(args, n) => {
                    used += n;
                    if args.is_empty() {
                        continue;
                    }
                    match answer_while_busy_in_multi(
                        &args,
                        subscribed,
                        &self.handle,
                        &self.watch,
                        &mut multi,
                    ) {
                        BusyAnswer::Reply(r) => r.encode(to_client),
                        BusyAnswer::ReplyAndClose(r) => {
                            r.encode(to_client);
                            break Dispatch::Close;
                        }
                        BusyAnswer::ShutDown => break Dispatch::ShutDown,
                    }
                }
            }
        };
        from_client.drain(..used);
        probe.set_front_multi(match multi {
            None if probe.in_multi() => FrontMulti::Closed,
            None => FrontMulti::Unchanged,
            Some(false) => FrontMulti::Open,
            Some(true) => FrontMulti::Refused,
        });
        step
    }
}
