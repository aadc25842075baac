//! Serving a node: the turmoil host body ([`serve`]), and what it shares
//! with the real-TCP server ([`crate::tcp`]): the node's background tasks
//! and the connection loop.
//!
//! Each connection reads requests, executes every complete one in order
//! (commands run synchronously, so each command and each script is atomic),
//! and writes the replies in one go. On a protocol error it sends Redis's
//! error and closes the connection.

use std::io;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;
use tokio::task::spawn_local;

use crate::busy::{ConnProbe, ScriptWatch};
use crate::client::KillSwitch;
use crate::commands::Out;
use crate::handle::{NodeHandle, Role};
use crate::node::Node;
use crate::replication::{self, Net};
use crate::resp::{Parse, Reply, parse_request};

const HZ_PERIOD: Duration = Duration::from_millis(100);

/// Starts the node's background tasks: the active expiry cycle (10 Hz), the
/// once-a-second fsync, control requests from the handle, and the
/// replication link if the node is a replica. On the real-TCP server,
/// `watch` lets its front see (and kill) long scripts.
pub(crate) fn start(handle: NodeHandle, net: Net, watch: Option<Arc<ScriptWatch>>) -> Rc<Node> {
    let node = Node::new(handle);
    if let Some(w) = watch {
        node.lua.watch(w);
    }
    let n = node.clone();
    spawn_local(async move {
        let mut tick = tokio::time::interval(HZ_PERIOD);
        let mut count = 0u64;
        loop {
            tick.tick().await;
            n.cron();
            count += 1;
            if count.is_multiple_of(10) {
                n.handle
                    .shared
                    .disk
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .fsync();
            }
        }
    });
    let n = node.clone();
    spawn_local(async move {
        loop {
            n.handle.shared.control_notify.notified().await;
            if let Some((master, generation)) = n.apply_controls() {
                spawn_local(replication::follow(n.clone(), master, generation, net));
            }
        }
    });
    if let Role::Replica(m) = node.handle.role() {
        let generation = node.state.borrow().link_generation;
        spawn_local(replication::follow(node.clone(), m, generation, net));
    }
    node
}

/// Runs a node as a turmoil host: binds `0.0.0.0:<port>` (6379 by default)
/// on the simulated network and serves clients until the host is crashed
/// or a client sends `SHUTDOWN` (then it returns `Ok`).
///
/// ```no_run
/// # use simredis::{NodeConfig, NodeHandle, serve};
/// let mut sim = turmoil::Builder::new().build();
/// let redis = NodeHandle::new(NodeConfig::new("redis"));
/// let h = redis.clone();
/// sim.host("redis", move || serve(h.clone()));
/// ```
pub async fn serve(handle: NodeHandle) -> turmoil::Result {
    let port = handle.config().port;
    let listener = turmoil::net::TcpListener::bind(("0.0.0.0", port)).await?;
    let node = start(handle, Net::Turmoil, None);
    loop {
        // Biased: polling in a fixed order draws nothing from tokio's RNG,
        // so the simulation stays as it was.
        tokio::select! {
            biased;
            () = node.stop.notified() => return Ok(()),
            accepted = listener.accept() => {
                let (stream, _) = accepted?;
                spawn_local(connection(node.clone(), stream, None));
            }
        }
    }
}

/// Serves one client connection. On the real-TCP server, `probe` tells
/// the front how far the node has executed this connection's requests
/// each time it waits for more.
pub(crate) async fn connection<S>(node: Rc<Node>, stream: S, probe: Option<Arc<ConnProbe>>)
where
    S: AsyncRead + AsyncWrite + Unpin + 'static,
{
    let (mut rd, mut wr) = tokio::io::split(stream);
    let (push_tx, mut push_rx) = mpsc::unbounded_channel::<Reply>();
    let mut client = node.new_client(push_tx);
    let mut buf: Vec<u8> = Vec::with_capacity(4096);
    let mut out: Vec<u8> = Vec::with_capacity(4096);
    // Bytes of requests executed so far (what `probe` reports).
    let mut executed: u64 = 0;
    'conn: loop {
        if let Some(p) = &probe {
            crate::commands::transactions::apply_front(&node, &mut client, p.take_front_multi());
        }
        let mut used = 0;
        let mut close = false;
        loop {
            match parse_request(&buf[used..]) {
                Parse::Incomplete => break,
                Parse::Error(msg, b) => {
                    Parse::encode_error(msg, b, &mut out);
                    close = true;
                    break;
                }
                Parse::Request(args, n) => {
                    used += n;
                    if args.is_empty() {
                        continue;
                    }
                    node.after_reply.set(0);
                    let done = node.execute(&mut client, &args);
                    // Messages the command published to this very client
                    // (a RESP3 client's keyspace events, a PUBLISH to a
                    // channel it follows) go where Redis writes them:
                    // during the command, so before its reply, unless the
                    // command replies first.
                    let mut own = Vec::new();
                    while let Ok(msg) = push_rx.try_recv() {
                        own.push(msg);
                    }
                    let after = own.split_off(own.len() - node.after_reply.get().min(own.len()));
                    own.iter()
                        .for_each(|m| m.encode_for(client.proto, &mut out));
                    // `CLIENT REPLY OFF|SKIP` drops replies, never pushes.
                    let dropped = client.reply_dropped();
                    client.after_command();
                    let sent = |r: &Reply| !dropped || matches!(r, Reply::Push(_));
                    match done {
                        Out::Reply(r) => {
                            if sent(&r) {
                                r.encode_for(client.proto, &mut out);
                            }
                            after
                                .iter()
                                .for_each(|m| m.encode_for(client.proto, &mut out));
                        }
                        Out::Replies(rs) => rs
                            .iter()
                            .filter(|r| sent(r))
                            .for_each(|r| r.encode_for(client.proto, &mut out)),
                        Out::Quit(r) => {
                            r.encode_for(client.proto, &mut out);
                            close = true;
                            break;
                        }
                        Out::Wait {
                            numreplicas,
                            timeout_ms,
                        } => {
                            if !out.is_empty() {
                                if !write_unless_killed(&mut wr, &out, &client.kill).await {
                                    break 'conn;
                                }
                                out.clear();
                            }
                            // Redis goes on reading a blocked client: the
                            // end of its input frees it.
                            let waiting = wait(&node, client.woff, numreplicas, timeout_ms);
                            tokio::pin!(waiting);
                            let n = loop {
                                tokio::select! {
                                    n = &mut waiting => break n,
                                    r = read_unless_killed(&mut rd, &mut buf, &client.kill) => if matches!(r, Ok(0) | Err(_)) {
                                        break 'conn;
                                    },
                                }
                            };
                            Reply::Int(n).encode(&mut out);
                        }
                        Out::Block(ticket) => {
                            if !out.is_empty() {
                                if !write_unless_killed(&mut wr, &out, &client.kill).await {
                                    break 'conn;
                                }
                                out.clear();
                            }
                            // As for WAIT: reading on sees the client go.
                            let woken = ticket.woken(&node);
                            tokio::pin!(woken);
                            let (reply, offset) = loop {
                                tokio::select! {
                                    biased;
                                    r = &mut woken => break r,
                                    r = read_unless_killed(&mut rd, &mut buf, &client.kill) => if matches!(r, Ok(0) | Err(_)) {
                                        break 'conn;
                                    },
                                }
                            };
                            if let Some(offset) = offset {
                                client.woff = offset;
                            }
                            reply.encode_for(client.proto, &mut out);
                        }
                        Out::Psync { lag } => {
                            if !out.is_empty()
                                && !write_unless_killed(&mut wr, &out, &client.kill).await
                            {
                                break 'conn;
                            }
                            buf.drain(..used);
                            node.drop_client(&client);
                            replication::serve_replica(node.clone(), rd, wr, buf, lag).await;
                            return;
                        }
                        // The server stops: no reply, as from a Redis that
                        // exited.
                        Out::Shutdown => break 'conn,
                    }
                }
            }
        }
        buf.drain(..used);
        executed += used as u64;
        if !out.is_empty() {
            if !write_unless_killed(&mut wr, &out, &client.kill).await {
                break;
            }
            out.clear();
        }
        if close {
            let _ = wr.shutdown().await;
            break;
        }
        if let Some(p) = &probe {
            p.set_in_multi(client.multi.is_some());
            p.settle(executed, client.is_subscribed());
        }
        tokio::select! {
            n = read_unless_killed(&mut rd, &mut buf, &client.kill) => match n {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            },
            Some(msg) = push_rx.recv() => msg.encode_for(client.proto, &mut out),
        }
    }
    node.drop_client(&client);
}

/// Reads more of the client's requests into `buf`, or fails if `CLIENT
/// KILL` ends the connection first. (The kill is part of the read rather
/// than a branch of the connection's `select!` of its own: a branch more
/// would change which ready branch the seeded runtime polls first, and
/// with it the simulator's runs.)
async fn read_unless_killed<R>(
    rd: &mut R,
    buf: &mut Vec<u8>,
    kill: &KillSwitch,
) -> io::Result<usize>
where
    R: AsyncRead + Unpin,
{
    tokio::select! {
        biased;
        () = kill.thrown() => Err(io::Error::other("killed by CLIENT KILL")),
        n = rd.read_buf(buf) => n,
    }
}

/// Writes `out` unless `CLIENT KILL` ends the connection first (before or
/// while the write waits on a slow reader): `false` if the connection
/// must end, as Redis's `freeClient` drops the replies not yet written.
async fn write_unless_killed<W>(wr: &mut W, out: &[u8], kill: &KillSwitch) -> bool
where
    W: AsyncWrite + Unpin,
{
    if kill.is_thrown() {
        return false;
    }
    tokio::select! {
        biased;
        () = kill.thrown() => false,
        written = wr.write_all(out) => written.is_ok(),
    }
}

async fn wait(node: &Rc<Node>, woff: u64, n: i64, timeout_ms: i64) -> i64 {
    let deadline = (timeout_ms > 0)
        .then(|| tokio::time::Instant::now() + Duration::from_millis(timeout_ms as u64));
    loop {
        let notified = node.acks.notified();
        let acked = node.acked(woff);
        if acked >= n {
            return acked;
        }
        match deadline {
            Some(d) => {
                if tokio::time::timeout_at(d, notified).await.is_err() {
                    return node.acked(woff);
                }
            }
            None => notified.await,
        }
    }
}
