//! Holds the table of round trips (`bench::physics::CYCLES`) to what a
//! real server sees: each implementation runs a few uncontended cycles on
//! one node while a `MONITOR` connection lists the commands, and the
//! commands each cycle sent (those run inside scripts left out) must be
//! the ones the table names, in order. About a second with redis-server.

use bench::client::{Client, Common, Impl, Node, Wait};
use bench::physics::{self, CYCLES};
use locks::Owner;
use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::time::Duration;

/// Cycles measured per implementation, after the warm-up.
const CYCLES_SEEN: usize = 5;
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
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let common = Common {
        ttl: Duration::from_secs(10),
        max_wait: Duration::from_secs(5),
    };
    let mut watch = monitor(&node.addr);
    for cycle in &CYCLES {
        let which = match cycle.name {
            "floor" => Impl::Floor,
            "rslock" => Impl::Rslock,
            rung => Impl::Rung(locks::rung(rung).expect("a rung").id, Wait::Fixed),
        };
        let commands = rt.block_on(async {
            let client = Client::connect(which, std::slice::from_ref(&node), common, 1)
                .await
                .expect("connect");
            let owner = Owner::new("round-trips", 0);
            let key = format!("round-trips:{}", cycle.name);
            let one = || async {
                let held = client
                    .try_acquire(&key, &owner, common.ttl)
                    .await
                    .expect("acquire")
                    .expect("uncontended");
                client.release(&key, held).await.expect("release");
            };
            // Warm-up: scripts loaded, connections made.
            for _ in 0..3 {
                one().await;
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
                one().await;
            }
            mark(&mut conn).await;
            commands_until_mark(&mut watch)
        });
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
}
