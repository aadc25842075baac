//! Asynchronous replication over the (simulated) network.
//!
//! A replica dials its master and sends `PSYNC ? -1 LAG-MS <ms>`, naming its
//! configured `replication_delay`. The master answers with a full snapshot,
//! then streams one batch per write command (or per script: its effects),
//! each carrying the new state of every key it touched with absolute
//! deadlines, the way Redis 7 propagates `PEXPIREAT`-style times, and the
//! master's deletions of expired keys. The replica applies each batch as it
//! reads it and acknowledges the offset (`REPLCONF ACK`), which is what
//! `WAIT` counts.
//!
//! # Where the lag is spent
//!
//! In Redis a write enters the master's replication buffer when the command
//! runs (the client's reply goes out at the same moment) and leaves as the
//! replica's link drains it; whatever is still in the master's buffers dies
//! with the master process, while bytes already on the wire arrive. So the
//! lag is modelled on the master's side: each batch is stamped when it is
//! committed and held in this replica's link on the master for exactly the
//! configured delay, then written to the connection. The replica therefore
//! applies a write the delay plus the link's latency after the master
//! acknowledged it, and a master that crashes (kill or power loss) within the
//! delay takes the held batches with it: a replica promoted afterwards never
//! sees them. Batches already written are in the network and arrive even if
//! the master is gone. The snapshot that starts a link is not held (Redis
//! sends the RDB as soon as it is ready), nor are the master's pings.
//!
//! The link runs over the network, so a partition cuts it. A turmoil TCP
//! connection stays wedged after a partition heals, so both ends time out:
//! the master pings every 100 ms and the replica reconnects (and resyncs in
//! full) after a second of silence; the master drops a replica that has not
//! acknowledged anything for two seconds.

use std::collections::VecDeque;
use std::rc::Rc;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;
use tokio::time::{Instant, sleep, sleep_until, timeout};

use crate::databases::DATABASES;
use crate::handle::MasterAddr;
use crate::keyspace::{Entry, Value};
use crate::node::{Batch, Node, Queued};
use crate::persistence::{DbKeyState, KeyState};
use crate::resp::{Parse, Reply, encode_request, parse_reply, parse_request, string2ll};

/// Which network a node's outgoing connections use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Net {
    /// turmoil's simulated network.
    Turmoil,
    /// The host's real network (tokio).
    Tokio,
}

const PING_EVERY: Duration = Duration::from_millis(100);
const REPLICA_TIMEOUT: Duration = Duration::from_secs(1);
const MASTER_TIMEOUT: Duration = Duration::from_secs(2);

/// A batch on the link: `batch`, offset, full, database 0's states, then,
/// only if other databases changed, their states each tagged with its
/// database (so a batch of database 0 alone is encoded as before
/// databases existed), then, only if the libraries changed (or in a
/// snapshot), their `FUNCTION DUMP` payload.
fn encode_batch(b: &Batch, out: &mut Vec<u8>) {
    let mut parts = vec![
        Reply::Bulk(b"batch".to_vec()),
        Reply::Int(b.offset as i64),
        Reply::Int(i64::from(b.full)),
        Reply::Array(b.states.iter().map(encode_state).collect()),
    ];
    if !b.other_dbs.is_empty() || b.functions.is_some() {
        let tagged = b
            .other_dbs
            .iter()
            .map(|(db, s)| Reply::Array(vec![Reply::Int(*db as i64), encode_state(s)]))
            .collect();
        parts.push(Reply::Array(tagged));
    }
    if let Some(payload) = &b.functions {
        parts.push(Reply::Bulk(payload.clone()));
    }
    Reply::Array(parts).encode(out);
}

/// One key's new state: `[key]` if deleted, else `[key, has deadline,
/// deadline, value]`.
fn encode_state((k, e): &KeyState) -> Reply {
    match e {
        None => Reply::Array(vec![Reply::Bulk(k.clone())]),
        Some(e) => {
            let d = Reply::Int(e.deadline.unwrap_or(-1));
            let has = Reply::Int(i64::from(e.deadline.is_some()));
            Reply::Array(vec![Reply::Bulk(k.clone()), has, d, encode_value(&e.value)])
        }
    }
}

/// A value on the replication link: a string as a bulk string, any other
/// type as its `TYPE` name followed by its items in order (a hash's
/// fields and values, a sorted set's members and scores alternating).
fn encode_value(value: &Value) -> Reply {
    let bulk = |b: &[u8]| Reply::Bulk(b.to_vec());
    let items: Vec<Reply> = match value {
        Value::Str(s) => return bulk(s),
        Value::Hash(h) => h.iter().flat_map(|(f, v)| [bulk(f), bulk(v)]).collect(),
        Value::List(l) => l.iter().map(|i| bulk(i)).collect(),
        Value::Set(m) => m.iter().map(|i| bulk(i)).collect(),
        Value::ZSet(z) => z
            .iter()
            // Scores travel as their bit patterns: exact, infinities included.
            .flat_map(|(m, s)| [bulk(m), Reply::Int(s.to_bits() as i64)])
            .collect(),
    };
    Reply::Array(vec![
        bulk(value.type_name().as_bytes()),
        Reply::Array(items),
    ])
}

/// The inverse of [`encode_value`]; `None` for anything malformed.
fn decode_value(r: Reply) -> Option<Value> {
    let Reply::Array(parts) = r else {
        let Reply::Bulk(s) = r else { return None };
        return Some(Value::Str(s));
    };
    let [Reply::Bulk(kind), Reply::Array(items)] = <[Reply; 2]>::try_from(parts).ok()? else {
        return None;
    };
    let bulk = |r: Reply| match r {
        Reply::Bulk(b) => Some(b),
        _ => None,
    };
    let mut it = items.into_iter();
    Some(match kind.as_slice() {
        b"hash" => {
            let mut h = indexmap::IndexMap::new();
            while let Some(f) = it.next() {
                h.insert(bulk(f)?, bulk(it.next()?)?);
            }
            Value::Hash(h)
        }
        b"list" => Value::List(it.map(bulk).collect::<Option<_>>()?),
        b"set" => Value::Set(it.map(bulk).collect::<Option<_>>()?),
        b"zset" => {
            let mut z = crate::sorted_set::SortedSet::new();
            while let Some(m) = it.next() {
                let Reply::Int(bits) = it.next()? else {
                    return None;
                };
                z.insert(bulk(m)?, f64::from_bits(bits as u64));
            }
            Value::ZSet(z)
        }
        _ => return None,
    })
}

fn decode_batch(r: Reply) -> Option<Batch> {
    let Reply::Array(mut items) = r else {
        return None;
    };
    let functions = match items.len() {
        6 => match items.pop()? {
            Reply::Bulk(payload) => Some(payload),
            _ => return None,
        },
        _ => None,
    };
    let other_dbs = match items.len() {
        4 => Vec::new(),
        5 => {
            let Reply::Array(tagged) = items.pop()? else {
                return None;
            };
            tagged
                .into_iter()
                .map(decode_tagged_state)
                .collect::<Option<_>>()?
        }
        _ => return None,
    };
    let states = match items.pop()? {
        Reply::Array(s) => s,
        _ => return None,
    };
    let full = matches!(items.pop()?, Reply::Int(1));
    let offset = match items.pop()? {
        Reply::Int(n) => n as u64,
        _ => return None,
    };
    Some(Batch {
        offset,
        full,
        states: states
            .into_iter()
            .map(decode_state)
            .collect::<Option<_>>()?,
        other_dbs,
        functions,
    })
}

/// `[db, state]`: a state of a database other than 0.
fn decode_tagged_state(r: Reply) -> Option<DbKeyState> {
    let Reply::Array(parts) = r else {
        return None;
    };
    let [Reply::Int(db), state] = <[Reply; 2]>::try_from(parts).ok()? else {
        return None;
    };
    let db = usize::try_from(db).ok().filter(|d| *d < DATABASES)?;
    Some((db, decode_state(state)?))
}

/// The inverse of [`encode_state`]; `None` for anything malformed.
fn decode_state(s: Reply) -> Option<KeyState> {
    let Reply::Array(mut parts) = s else {
        return None;
    };
    if parts.len() == 1 {
        let Reply::Bulk(k) = parts.pop()? else {
            return None;
        };
        return Some((k, None));
    }
    if parts.len() != 4 {
        return None;
    }
    let value = decode_value(parts.pop()?)?;
    let d = match parts.pop()? {
        Reply::Int(d) => d,
        _ => return None,
    };
    let has = matches!(parts.pop()?, Reply::Int(1));
    let Reply::Bulk(k) = parts.pop()? else {
        return None;
    };
    Some((
        k,
        Some(Entry {
            value,
            deadline: has.then_some(d),
        }),
    ))
}

/// Master side: serves one replica on a connection that sent `PSYNC`,
/// holding each batch for `lag` after it was committed before sending it.
pub(crate) async fn serve_replica<R, W>(
    node: Rc<Node>,
    mut rd: R,
    mut wr: W,
    mut buf: Vec<u8>,
    lag: Duration,
) where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let (tx, mut rx) = mpsc::unbounded_channel::<Queued>();
    let snap = node.snapshot();
    let id = node.add_replica(tx, format!("replica-{}", node.state.borrow().offset));
    let mut out = Vec::new();
    encode_batch(&snap, &mut out);
    if wr.write_all(&out).await.is_err() {
        node.remove_replica(id);
        return;
    }
    // The master's replication buffer for this replica: batches committed
    // but not yet sent, oldest first. It lives in this task, so it dies with
    // the master's process.
    let mut held: VecDeque<Queued> = VecDeque::new();
    let mut tick = tokio::time::interval(PING_EVERY);
    let mut last_ack = Instant::now();
    loop {
        out.clear();
        let due = held.front().map(|(at, _)| *at + lag);
        tokio::select! {
            b = rx.recv() => match b {
                Some(b) => held.push_back(b),
                None => break,
            },
            _ = sleep_until(due.unwrap_or_else(Instant::now)), if due.is_some() => {}
            n = rd.read_buf(&mut buf) => {
                match n {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {}
                }
                let mut used = 0;
                while let Parse::Request(args, n) = parse_request(&buf[used..]) {
                    used += n;
                    if args.len() == 3
                        && args[0].eq_ignore_ascii_case(b"replconf")
                        && let Some(off) = string2ll(&args[2])
                    {
                        last_ack = Instant::now();
                        node.replica_ack(id, off.max(0) as u64);
                    }
                }
                buf.drain(..used);
            }
            _ = tick.tick() => {
                if last_ack.elapsed() > MASTER_TIMEOUT {
                    break;
                }
                let off = node.state.borrow().offset;
                Reply::Array(vec![Reply::Bulk(b"ping".to_vec()), Reply::Int(off as i64)]).encode(&mut out);
            }
        }
        // Whatever branch woke us, send every batch that has waited its
        // lag (with no lag, the one just committed), in commit order.
        let now = Instant::now();
        while let Some((at, _)) = held.front()
            && *at + lag <= now
        {
            if let Some((_, b)) = held.pop_front() {
                encode_batch(&b, &mut out);
            }
        }
        if !out.is_empty() && wr.write_all(&out).await.is_err() {
            break;
        }
    }
    node.remove_replica(id);
}

/// Replica side: follows `master` while the node's link generation is
/// `generation` (a promotion or a new REPLICAOF ends it). A master that
/// cannot be reached (an unknown host, a closed port, port 0) is dialled
/// again every 100 ms, as Redis retries its master for ever.
pub(crate) async fn follow(node: Rc<Node>, master: MasterAddr, generation: u64, net: Net) {
    loop {
        if node.state.borrow().link_generation != generation {
            return;
        }
        let addr = (master.host.as_str(), master.port);
        match net {
            Net::Turmoil => {
                dial(&node, turmoil::net::TcpStream::connect(addr), generation).await;
            }
            Net::Tokio => dial(&node, tokio::net::TcpStream::connect(addr), generation).await,
        }
        {
            let mut st = node.state.borrow_mut();
            if st.link_generation == generation {
                st.link_up = false;
            }
        }
        sleep(PING_EVERY).await;
    }
}

/// Runs one link over the connection `connect` opens, if it opens within
/// the replica timeout.
async fn dial<S>(
    node: &Rc<Node>,
    connect: impl Future<Output = std::io::Result<S>>,
    generation: u64,
) where
    S: AsyncRead + AsyncWrite + Unpin,
{
    if let Ok(Ok(stream)) = timeout(REPLICA_TIMEOUT, connect).await {
        run_link(node, stream, generation).await;
    }
}

async fn run_link<S>(node: &Rc<Node>, stream: S, generation: u64)
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    // The master spends the lag (see the module docs); the replica only
    // names it.
    let lag_ms = node
        .handle
        .config()
        .replication_delay
        .as_millis()
        .to_string();
    let (mut rd, mut wr) = tokio::io::split(stream);
    let mut out = Vec::new();
    encode_request(
        &[b"PSYNC", b"?", b"-1", b"LAG-MS", lag_ms.as_bytes()],
        &mut out,
    );
    if wr.write_all(&out).await.is_err() {
        return;
    }
    let mut buf = Vec::with_capacity(4096);
    loop {
        match timeout(REPLICA_TIMEOUT, rd.read_buf(&mut buf)).await {
            Ok(Ok(n)) if n > 0 => {}
            _ => return,
        }
        let mut used = 0;
        let mut frames = Vec::new();
        loop {
            match parse_reply(&buf[used..]) {
                Ok(Some((r, n))) => {
                    used += n;
                    frames.push(r);
                }
                Ok(None) => break,
                Err(_) => return,
            }
        }
        buf.drain(..used);
        for f in frames {
            let is_ping = matches!(&f, Reply::Array(v) if v.len() == 2);
            if !is_ping {
                let Some(batch) = decode_batch(f) else {
                    return;
                };
                if node.state.borrow().link_generation != generation {
                    return;
                }
                node.apply_batch(batch);
            }
            let off = {
                let mut st = node.state.borrow_mut();
                if st.link_generation != generation {
                    return;
                }
                st.link_up = true;
                st.offset
            };
            out.clear();
            let off = off.to_string();
            encode_request(&[b"REPLCONF", b"ACK", off.as_bytes()], &mut out);
            if wr.write_all(&out).await.is_err() {
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_batch_survives_encoding() {
        let mut h = indexmap::IndexMap::new();
        h.insert(b"f".to_vec(), b"1".to_vec());
        let mut zset = crate::sorted_set::SortedSet::new();
        zset.insert(b"a".to_vec(), f64::INFINITY);
        zset.insert(b"b".to_vec(), -1.5);
        let b = Batch {
            offset: 7,
            full: true,
            states: vec![
                (b"gone".to_vec(), None),
                (
                    b"s".to_vec(),
                    Some(Entry {
                        value: Value::Str(b"v".to_vec()),
                        deadline: Some(123),
                    }),
                ),
                (
                    b"h".to_vec(),
                    Some(Entry {
                        value: Value::Hash(h),
                        deadline: None,
                    }),
                ),
                (
                    b"l".to_vec(),
                    Some(Entry {
                        value: Value::List([b"x".to_vec(), b"y".to_vec()].into()),
                        deadline: None,
                    }),
                ),
                (
                    b"m".to_vec(),
                    Some(Entry {
                        value: Value::Set([b"2".to_vec(), b"1".to_vec()].into_iter().collect()),
                        deadline: None,
                    }),
                ),
                (
                    b"z".to_vec(),
                    Some(Entry {
                        value: Value::ZSet(zset),
                        deadline: Some(5),
                    }),
                ),
            ],
            other_dbs: Vec::new(),
            functions: None,
        };
        let mut out = Vec::new();
        encode_batch(&b, &mut out);
        let (r, _) = parse_reply(&out).unwrap().unwrap();
        let d = decode_batch(r).unwrap();
        assert_eq!(d.offset, 7);
        assert!(d.full);
        assert_eq!(d.states, b.states);
    }

    #[test]
    fn a_batch_carries_other_databases_tagged_and_database_0_as_before() {
        let entry = Entry {
            value: Value::Str(b"v".to_vec()),
            deadline: None,
        };
        let db0_only = Batch {
            offset: 1,
            full: false,
            states: vec![(b"k".to_vec(), Some(entry.clone()))],
            other_dbs: Vec::new(),
            functions: None,
        };
        let mut out = Vec::new();
        encode_batch(&db0_only, &mut out);
        let (r, _) = parse_reply(&out).unwrap().unwrap();
        assert!(matches!(&r, Reply::Array(parts) if parts.len() == 4));
        let both = Batch {
            other_dbs: vec![
                (3, (b"k".to_vec(), Some(entry))),
                (15, (b"g".to_vec(), None)),
            ],
            ..db0_only
        };
        out.clear();
        encode_batch(&both, &mut out);
        let (r, _) = parse_reply(&out).unwrap().unwrap();
        let d = decode_batch(r).unwrap();
        assert_eq!(d.states, both.states);
        assert_eq!(d.other_dbs, both.other_dbs);
    }
}
