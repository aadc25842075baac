//! Holds the table of round trips (`bench::physics::CYCLES`) to what a
//! real server sees: each implementation runs a few uncontended cycles on
//! one node while a `MONITOR` connection lists the commands, and the
//! commands each cycle sent (those run inside scripts left out) must be
//! the ones the table names, in order. About a second with redis-server.
//! The rows measured on locklab's simulated node, which has no `MONITOR`,
//! are listed by a proxy in front of it instead; the etcd rows are held
//! to it by the member's own counters, in `etcd_rows.rs`, and the
//! ZooKeeper rows by the server's, in `zookeeper_rows.rs`.

use bench::client::{Client, Common, Impl, Node};
use bench::physics::{self, CYCLES};
use locks::Owner;
use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::time::Duration;

/// Cycles measured per implementation, after the warm-up.
const CYCLES_SEEN: usize = 5;
/// The settings of every client here.
const COMMON: Common = Common {
    ttl: Duration::from_secs(10),
    max_wait: Duration::from_secs(5),
};
/// The command that marks the end of an implementation's cycles.
const MARK: &str = "locklab-round-trips-end";

/// A `MONITOR` connection to `addr`.
fn monitor(addr: &str) -> BufReader<TcpStream> {
    let mut stream = TcpStream::connect(addr).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(5)))
        .expect("timeout");
    stream
        .write_all(b"*1\r\n$7\r\nMONITOR\r\n")
        .expect("monitor");
    let mut reader = BufReader::new(stream);
    let mut ok = String::new();
    reader.read_line(&mut ok).expect("+OK");
    assert!(ok.starts_with("+OK"), "{ok}");
    reader
}

/// The commands a client sent (upper case), up to the line of [`MARK`];
/// commands run by scripts (`[0 lua]`) and the mark's `ECHO` left out.
fn commands_until_mark(reader: &mut BufReader<TcpStream>) -> Vec<String> {
    let mut seen = Vec::new();
    loop {
        let mut line = String::new();
        reader.read_line(&mut line).expect("a MONITOR line");
        if line.contains(MARK) {
            return seen;
        }
        // `+1700000000.000000 [0 127.0.0.1:5555] "SET" "key" ...`
        if line.contains(" lua]") {
            continue;
        }
        if let Some(name) = line.split('"').nth(1) {
            seen.push(name.to_ascii_uppercase());
        }
    }
}

#[test]
fn each_cycle_sends_the_commands_the_round_trip_table_names() {
    if !harness::installed() {
        eprintln!("redis-server not installed; skipped");
        return;
    }
    let server = harness::RedisServer::start().expect("redis-server");
    let node = Node::of(&server);
    let rt = bench::client::runtime().expect("runtime");
    let mut watch = monitor(&node.addr);
    // The rows measured on the simulated node are held to the table by
    // the test below (redis-server 7.0 cannot release them); those of the
    // other services by their own tests (etcd_rows, zookeeper_rows,
    // database_rows).
    for cycle in CYCLES.iter().filter(|c| physics::on_redis_server(c.name)) {
        let which = Impl::named(cycle.name).expect("a name the bench knows");
        let commands = rt.block_on(async {
            let client = Client::connect(which, std::slice::from_ref(&node), COMMON, 1)
                .await
                .expect("connect");
            let key = format!("round-trips:{}", cycle.name);
            // Warm-up: scripts loaded, connections made.
            for _ in 0..3 {
                one_cycle(&client, &key).await;
            }
            let mut conn = bench::client::raw_connection(&node.addr).await.unwrap();
            let mark = |conn: &mut redis::aio::MultiplexedConnection| {
                let mut conn = conn.clone();
                async move {
                    let _: String = redis::cmd("ECHO")
                        .arg(MARK)
                        .query_async(&mut conn)
                        .await
                        .unwrap();
                }
            };
            mark(&mut conn).await;
            let _ = commands_until_mark(&mut watch);
            for _ in 0..CYCLES_SEEN {
                one_cycle(&client, &key).await;
            }
            mark(&mut conn).await;
            commands_until_mark(&mut watch)
        });
        holds_to_the_table(cycle, which, &commands);
    }
}

/// One uncontended acquire + release of `key`.
async fn one_cycle(client: &Client, key: &str) {
    let owner = Owner::new("round-trips", 0);
    let held = client
        .try_acquire(key, &owner, COMMON.ttl)
        .await
        .expect("acquire")
        .expect("uncontended");
    client.release(key, held).await.expect("release");
}

/// Asserts that `commands`, seen over [`CYCLES_SEEN`] cycles of `which`,
/// are `cycle`'s commands cycle after cycle, one round trip each.
fn holds_to_the_table(cycle: &physics::Cycle, which: Impl, commands: &[String]) {
    let expected: Vec<String> = cycle
        .commands
        .iter()
        .map(|c| c.split_whitespace().next().unwrap().to_string())
        .collect();
    assert_eq!(
        commands,
        expected
            .iter()
            .cycle()
            .take(expected.len() * CYCLES_SEEN)
            .cloned()
            .collect::<Vec<_>>(),
        "{}: the server saw other commands than the table's",
        cycle.name
    );
    // One node, one command at a time: a round trip per command.
    assert_eq!(
        physics::round_trips(which),
        Some(expected.len() as u32),
        "{}",
        cycle.name
    );
}

/// The name of each complete command in `buf` (RESP arrays of bulk
/// strings, as clients send them), upper case; the bytes of complete
/// commands are drained, a partial one is left for more bytes.
fn drain_commands(buf: &mut Vec<u8>) -> Vec<String> {
    let mut names = Vec::new();
    loop {
        let mut at = 0;
        let line = |at: &mut usize| -> Option<String> {
            let end = buf[*at..].windows(2).position(|w| w == b"\r\n")? + *at;
            let text = String::from_utf8_lossy(&buf[*at..end]).into_owned();
            *at = end + 2;
            Some(text)
        };
        let Some(header) = line(&mut at) else {
            return names;
        };
        let count: usize = header.trim_start_matches('*').parse().expect("an array");
        let mut parts = Vec::new();
        for _ in 0..count {
            let Some(len) = line(&mut at) else {
                return names;
            };
            let len: usize = len.trim_start_matches('$').parse().expect("a bulk string");
            if buf.len() < at + len + 2 {
                return names;
            }
            parts.push(String::from_utf8_lossy(&buf[at..at + len]).to_ascii_uppercase());
            at += len + 2;
        }
        names.push(parts.swap_remove(0));
        buf.drain(..at);
    }
}

/// A proxy on loopback in front of `upstream` that lists the commands
/// its clients send (the simulated node has no `MONITOR`).
async fn listing_proxy(
    upstream: String,
) -> (String, std::sync::Arc<std::sync::Mutex<Vec<String>>>) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let listed = seen.clone();
    tokio::spawn(async move {
        while let Ok((client, _)) = listener.accept().await {
            let server = tokio::net::TcpStream::connect(&upstream).await.unwrap();
            let (mut from_client, mut to_server) = (client, server);
            let seen = listed.clone();
            tokio::spawn(async move {
                let (mut client_read, mut client_write) = from_client.split();
                let (mut server_read, mut server_write) = to_server.split();
                let requests = async {
                    let (mut chunk, mut pending) = ([0u8; 4096], Vec::new());
                    while let Ok(n @ 1..) = client_read.read(&mut chunk).await {
                        pending.extend_from_slice(&chunk[..n]);
                        seen.lock().unwrap().extend(drain_commands(&mut pending));
                        if server_write.write_all(&chunk[..n]).await.is_err() {
                            break;
                        }
                    }
                };
                let replies = tokio::io::copy(&mut server_read, &mut client_write);
                tokio::select! {
                    _ = requests => {}
                    _ = replies => {}
                }
            });
        }
    });
    (addr, seen)
}

#[test]
fn the_simulated_node_rows_send_the_commands_the_round_trip_table_names() {
    let sim = bench::sim_node::SimNode::start(None).expect("the simulated node");
    let rt = bench::client::runtime().expect("runtime");
    for name in physics::SIMULATED_NODE_ROWS {
        let cycle = physics::cycle(name).expect("a cycle");
        let which = Impl::named(name).expect("a rung");
        let commands = rt.block_on(async {
            let (addr, seen) = listing_proxy(sim.node().addr.clone()).await;
            let node = Node::from_url(&format!("redis://{addr}")).unwrap();
            let client = Client::connect(which, &[node], COMMON, 1)
                .await
                .expect("connect");
            let key = format!("round-trips:{name}");
            for _ in 0..3 {
                one_cycle(&client, &key).await;
            }
            seen.lock().unwrap().clear();
            for _ in 0..CYCLES_SEEN {
                one_cycle(&client, &key).await;
            }
            std::mem::take(&mut *seen.lock().unwrap())
        });
        holds_to_the_table(cycle, which, &commands);
    }
}
