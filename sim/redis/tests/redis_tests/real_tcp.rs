//! The real-TCP server (`simredis::serve_tcp`): a script that runs long
//! behaves as in Redis 7.0 (other clients wait, then get `BUSY`; `SCRIPT
//! KILL`, `UNKILLABLE`, `NOTBUSY`, `SHUTDOWN NOSAVE`), compared byte for
//! byte with a real `redis-server` started by `harness` with the same busy
//! threshold; and replication still runs through the server's front.
//!
//! A running script blocks the node's thread, so each simulated node here
//! is served on a thread of its own and the clients are plain blocking
//! sockets with read timeouts: nothing can hang the test.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::thread::{JoinHandle, sleep};
use std::time::{Duration, Instant};

use simredis::resp::{encode_request, parse_reply};
use simredis::{NodeConfig, NodeHandle};

/// The busy threshold both servers get (Redis's `busy-reply-threshold`).
const THRESHOLD_MS: u64 = 200;

/// How long any read may wait before the test calls it a timeout.
const READ_TIMEOUT: Duration = Duration::from_secs(3);

/// A simulated node served on real TCP on its own thread.
struct SimNode {
    addr: SocketAddr,
    thread: Option<JoinHandle<std::io::Result<()>>>,
}

impl SimNode {
    fn start(config: NodeConfig) -> SimNode {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = listener.local_addr().expect("addr");
        listener.set_nonblocking(true).expect("nonblocking");
        let thread = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()?;
            runtime.block_on(async move {
                let listener = tokio::net::TcpListener::from_std(listener)?;
                let handle = NodeHandle::new(simredis::real_time(config));
                simredis::serve_tcp_listener(listener, handle).await
            })
        });
        SimNode {
            addr,
            thread: Some(thread),
        }
    }

    fn with_threshold(ms: u64) -> SimNode {
        let mut config = NodeConfig::new("tcp");
        config.busy_reply_threshold = Duration::from_millis(ms);
        SimNode::start(config)
    }

    /// Whether the serve future returned `Ok` within `limit`.
    fn ended_within(&mut self, limit: Duration) -> bool {
        let deadline = Instant::now() + limit;
        while Instant::now() < deadline {
            if self.thread.as_ref().is_some_and(|t| t.is_finished()) {
                let ended = self.thread.take().expect("thread").join();
                return matches!(ended, Ok(Ok(())));
            }
            sleep(Duration::from_millis(5));
        }
        false
    }
}

impl Drop for SimNode {
    /// Stops a node a failed test left running (its thread is detached if
    /// it does not stop; the test process ends anyway).
    fn drop(&mut self) {
        if self.thread.is_some() {
            if let Ok(mut c) = TcpStream::connect(self.addr) {
                let _ = c.write_all(b"SHUTDOWN NOSAVE\r\n");
            }
            self.ended_within(Duration::from_secs(2));
        }
    }
}

/// A real redis-server started with `args`, or `None` (the real arm is
/// skipped, saying so) when none is installed.
fn real_redis(args: &[&str]) -> Option<harness::RedisServer> {
    match harness::RedisServer::start_with_args(args) {
        Ok(server) => Some(server),
        Err(harness::Error::NotInstalled) => {
            eprintln!("redis-server not installed: the real arm is skipped");
            None
        }
        Err(e) => panic!("{e}"),
    }
}

/// A raw RESP connection: requests out, replies back as their exact bytes.
struct Conn {
    stream: TcpStream,
    buf: Vec<u8>,
}

impl Conn {
    fn open(addr: SocketAddr) -> Conn {
        let stream = TcpStream::connect_timeout(&addr, READ_TIMEOUT).expect("connect");
        stream
            .set_read_timeout(Some(READ_TIMEOUT))
            .expect("timeout");
        stream.set_nodelay(true).expect("nodelay");
        Conn {
            stream,
            buf: Vec::new(),
        }
    }

    /// Sends these requests in one write (a pipeline).
    fn send(&mut self, requests: &[&[&str]]) {
        let mut out = Vec::new();
        for args in requests {
            let args: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
            encode_request(&args, &mut out);
        }
        self.stream.write_all(&out).expect("write");
    }

    /// The next reply's bytes, `(closed)` if the server closed the
    /// connection, `(timeout)` if nothing came.
    fn reply(&mut self) -> String {
        loop {
            if let Ok(Some((_, n))) = parse_reply(&self.buf) {
                let raw: Vec<u8> = self.buf.drain(..n).collect();
                return String::from_utf8_lossy(&raw).into_owned();
            }
            let mut chunk = [0u8; 4096];
            match self.stream.read(&mut chunk) {
                Ok(0) => return "(closed)".into(),
                Ok(n) => self.buf.extend_from_slice(&chunk[..n]),
                Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => {
                    return "(closed)".into();
                }
                Err(_) => return "(timeout)".into(),
            }
        }
    }

    fn call(&mut self, args: &[&str]) -> String {
        self.send(&[args]);
        self.reply()
    }
}

/// A script that never writes and never ends.
const ENDLESS: &str = "local i = 0 while true do i = i + 1 end";
/// A script that writes, then never ends.
const WRITES_THEN_ENDLESS: &str = "redis.call('set', KEYS[1], 'v') while true do end";
/// A script that ends after `ARGV[1]` ms of real time.
const RUNS_FOR_MS: &str = "local function now() local t = redis.call('time') return t[1] * 1000000 + t[2] end \
     local t0 = now() while now() - t0 < tonumber(ARGV[1]) * 1000 do end return 1";

/// Sends `args` on `conn` and records the reply under `label`.
fn record(t: &mut Vec<String>, label: &str, conn: &mut Conn, args: &[&str]) {
    let r = conn.call(args);
    t.push(format!("{label} {args:?} -> {r}"));
}

/// The sequence both servers get; returns its transcript. Asserts, on
/// both, that a client which asks before the threshold waits for it.
/// The short sleeps let each script start before the next client asks.
fn busy_transcript(addr: SocketAddr) -> Vec<String> {
    let mut t = Vec::new();
    let mut caller = Conn::open(addr);
    let mut other = Conn::open(addr);
    let mut subscriber = Conn::open(addr);
    record(&mut t, "subscriber", &mut subscriber, &["SUBSCRIBE", "ch"]);

    // A script shorter than the threshold: the other client just waits.
    caller.send(&[&["EVAL", RUNS_FOR_MS, "0", "100"]]);
    sleep(Duration::from_millis(20));
    record(&mut t, "other", &mut other, &["PING"]);
    t.push(format!("caller -> {}", caller.reply()));

    // A script that never ends, with a PING pipelined behind it.
    caller.send(&[&["EVAL", ENDLESS, "0"], &["PING"]]);
    let sent = Instant::now();
    sleep(Duration::from_millis(50));
    record(&mut t, "other", &mut other, &["PING"]);
    // The script started after it was sent: whatever the machine's load,
    // an answer well before the threshold from then would be too early.
    // Redis reads a cached clock (updated in its event loop), so it may
    // answer a few ms early: allow a tenth of the threshold.
    let waited = sent.elapsed();
    assert!(
        waited >= Duration::from_millis(THRESHOLD_MS * 9 / 10),
        "the other client was answered {waited:?} after the script was sent, before the threshold"
    );
    for args in [
        &["GET", "k"][..],
        &["NOSUCH", "x"],
        &["GET"],
        &["SCRIPT", "NOPE"],
        &["SCRIPT", "KILL", "extra"],
        &["CLIENT", "SETNAME"],
        &["SCRIPT", "LOAD", "return 1"],
        &["SHUTDOWN"],
        &["SHUTDOWN", "NOSAVE", "SAVE"],
        &["SHUTDOWN", "ABORT"],
    ] {
        record(&mut t, "other", &mut other, args);
    }
    record(&mut t, "subscriber", &mut subscriber, &["PING"]);
    record(&mut t, "subscriber", &mut subscriber, &["GET", "k"]);
    other.send(&[&["PING"], &["ECHO", "x"]]);
    t.push(format!("other pipelined -> {}", other.reply()));
    t.push(format!("other pipelined -> {}", other.reply()));
    let mut quitter = Conn::open(addr);
    record(&mut t, "quitter", &mut quitter, &["QUIT"]);
    t.push(format!("quitter -> {}", quitter.reply()));
    record(&mut t, "other", &mut other, &["SCRIPT", "KILL"]);
    t.push(format!("caller -> {}", caller.reply()));
    t.push(format!("caller -> {}", caller.reply()));
    record(&mut t, "other", &mut other, &["SCRIPT", "KILL"]);
    record(&mut t, "other", &mut other, &["PING"]);

    // A script that wrote cannot be killed; SHUTDOWN NOSAVE stops all.
    caller.send(&[&["EVAL", WRITES_THEN_ENDLESS, "1", "k"]]);
    sleep(Duration::from_millis(50));
    record(&mut t, "other", &mut other, &["SCRIPT", "KILL"]);
    record(&mut t, "other", &mut other, &["GET", "k"]);
    record(&mut t, "other", &mut other, &["SHUTDOWN", "NOSAVE"]);
    t.push(format!("caller -> {}", caller.reply()));
    t.push(format!("subscriber -> {}", subscriber.reply()));
    let deadline = Instant::now() + Duration::from_secs(2);
    while TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok() {
        assert!(
            Instant::now() < deadline,
            "{addr} still accepts connections"
        );
        sleep(Duration::from_millis(10));
    }
    t.push("no server listens any more".into());
    t
}

#[test]
fn a_long_script_on_the_real_tcp_server_gets_the_replies_redis_7_0_gives() {
    let mut node = SimNode::with_threshold(THRESHOLD_MS);
    let simulated = busy_transcript(node.addr);
    assert!(
        node.ended_within(Duration::from_secs(2)),
        "SHUTDOWN NOSAVE did not end the serve future"
    );
    // What the transcript must say whether or not redis-server is here.
    let has = |needle: &str| simulated.iter().any(|line| line.contains(needle));
    assert!(has(
        "-BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE."
    ));
    assert!(has(
        "-ERR Script killed by user with SCRIPT KILL... script: "
    ));
    assert!(has("-NOTBUSY No scripts in execution right now."));
    assert!(has(
        "-UNKILLABLE Sorry the script already executed write commands"
    ));
    let Some(server) = real_redis(&["--busy-reply-threshold", &THRESHOLD_MS.to_string()]) else {
        return;
    };
    // The server shuts itself down; dropping its handle reaps it.
    let real = busy_transcript(server.addr());
    drop(server);
    assert_eq!(
        simulated,
        real,
        "simulated (left) and redis-server 7.0 (right) differ:\n{}",
        simulated
            .iter()
            .zip(&real)
            .filter(|(s, r)| s != r)
            .map(|(s, r)| format!("  sim:  {s:?}\n  real: {r:?}"))
            .collect::<Vec<_>>()
            .join("\n")
    );
}

/// What Redis 7.0 answers a request while an `EVAL` script is busy.
const BUSY_ANSWER: &str =
    "-BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.\r\n";

#[test]
fn a_request_sent_as_another_clients_script_starts_is_answered_busy_not_left_unread() {
    // The request reaches the server a moment before the script's, so
    // the server may hand it to the node just before the script starts;
    // Redis reads it during the script all the same. Each round is a
    // fresh chance at that order.
    let node = SimNode::with_threshold(10);
    for round in 0..20 {
        let mut caller = Conn::open(node.addr);
        let mut other = Conn::open(node.addr);
        caller.send(&[&["EVAL", ENDLESS, "0"]]);
        other.send(&[&["PING"]]);
        // A PING the node ran before the script answers PONG (on a busy
        // machine the script may come late); one finds it running.
        let mut reply = other.reply();
        let deadline = Instant::now() + READ_TIMEOUT;
        while reply == "+PONG\r\n" && Instant::now() < deadline {
            reply = other.call(&["PING"]);
        }
        assert_eq!(reply, BUSY_ANSWER, "round {round}");
        assert_eq!(other.call(&["SCRIPT", "KILL"]), "+OK\r\n", "round {round}");
        assert!(
            caller.reply().starts_with("-ERR Script killed by user"),
            "round {round}"
        );
    }
}

#[test]
fn shutdown_with_no_script_running_ends_the_serve_future_without_a_reply() {
    let mut node = SimNode::with_threshold(THRESHOLD_MS);
    let mut c = Conn::open(node.addr);
    assert_eq!(c.call(&["SET", "k", "v"]), "+OK\r\n");
    assert_eq!(c.call(&["SHUTDOWN", "NOW"]), "(closed)");
    assert!(node.ended_within(Duration::from_secs(2)));
}

#[test]
fn a_replica_follows_a_master_through_the_real_tcp_servers_front() {
    let master = SimNode::with_threshold(THRESHOLD_MS);
    // A replica dials its master's host and port.
    let config = NodeConfig::new("replica")
        .replica_of(simredis::MasterAddr::new("127.0.0.1", master.addr.port()));
    let replica = SimNode::start(config);
    let mut m = Conn::open(master.addr);
    let mut r = Conn::open(replica.addr);
    assert_eq!(m.call(&["SET", "k", "v"]), "+OK\r\n");
    let deadline = Instant::now() + Duration::from_secs(3);
    loop {
        let got = r.call(&["GET", "k"]);
        if got == "$1\r\nv\r\n" {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the replica never got the write: {got:?}"
        );
        sleep(Duration::from_millis(20));
    }
    assert_eq!(m.call(&["WAIT", "1", "1000"]), ":1\r\n");
}

/// How many times each protocol-error sequence is tried on each server.
const PROTOCOL_ERROR_TRIES: usize = 200;

/// Redis's own `unit/protocol` desync test, once: sends `start`, then keeps
/// writing `payload` (Redis's test writes that very word, never a line
/// end) until the server closes the connection, then reads one line.
/// Returns that line, `(closed)` if none came before the end, or
/// `(never closed)` if the server took 64 MiB without closing.
fn desync_once(addr: SocketAddr, start: &[u8]) -> String {
    let mut conn = Conn::open(addr);
    let chunk = b"payload".repeat(146);
    let mut out = start.to_vec();
    let mut sent = 0usize;
    while conn.stream.write_all(&out).is_ok() {
        sent += out.len();
        if sent > 64 << 20 {
            return "(never closed)".into();
        }
        out.clone_from(&chunk);
    }
    let mut line = Vec::new();
    let mut byte = [0u8; 1];
    while line.last() != Some(&b'\n') {
        match conn.stream.read(&mut byte) {
            Ok(1) => line.push(byte[0]),
            _ => break,
        }
    }
    if line.is_empty() {
        "(closed)".into()
    } else {
        String::from_utf8_lossy(&line).trim_end().to_string()
    }
}

/// Each of Redis's three desync sequences `tries` times: a count of each
/// line the client read, in order of first appearance.
fn desync_counts(addr: SocketAddr, tries: usize) -> Vec<(String, usize)> {
    let mut counts: Vec<(String, usize)> = Vec::new();
    for start in [&b"\x00"[..], b"*\x00", b"$\x00"] {
        for _ in 0..tries {
            let line = format!("{:?} -> {}", start, desync_once(addr, start));
            match counts.iter_mut().find(|(l, _)| *l == line) {
                Some((_, n)) => *n += 1,
                None => counts.push((line, 1)),
            }
        }
    }
    counts
}

#[test]
fn a_client_that_keeps_writing_after_a_protocol_error_always_reads_the_error_as_from_redis() {
    let node = SimNode::with_threshold(THRESHOLD_MS);
    let simulated = desync_counts(node.addr, PROTOCOL_ERROR_TRIES);
    let expected = vec![
        (
            "[0] -> -ERR Protocol error: too big inline request".to_string(),
            PROTOCOL_ERROR_TRIES,
        ),
        (
            "[42, 0] -> -ERR Protocol error: too big mbulk count string".to_string(),
            PROTOCOL_ERROR_TRIES,
        ),
        (
            "[36, 0] -> -ERR Protocol error: too big inline request".to_string(),
            PROTOCOL_ERROR_TRIES,
        ),
    ];
    assert_eq!(simulated, expected, "the simulated node's replies");
    let Some(server) = real_redis(&[]) else {
        return;
    };
    let real = desync_counts(server.addr(), PROTOCOL_ERROR_TRIES);
    assert_eq!(real, expected, "redis-server's replies");
}

/// The client id in a `CLIENT ID` reply.
fn client_id(conn: &mut Conn) -> String {
    let reply = conn.call(&["CLIENT", "ID"]);
    reply
        .strip_prefix(':')
        .and_then(|r| r.strip_suffix("\r\n"))
        .unwrap_or_else(|| panic!("CLIENT ID replied {reply:?}"))
        .to_string()
}

/// How both servers end connections: `QUIT` with requests pipelined
/// behind it, `CLIENT KILL` of another client (idle, blocked in `WAIT`,
/// subscribed) and of the caller itself, and `CLIENT KILL`'s errors. Ids
/// differ between the servers, so the transcript names them `<id>`.
fn close_transcript(addr: SocketAddr) -> Vec<String> {
    let mut t = Vec::new();
    let mut killer = Conn::open(addr);

    // QUIT answers, then closes: what was pipelined behind it never runs.
    let mut quitter = Conn::open(addr);
    quitter.send(&[&["SET", "quit-k", "1"], &["QUIT"], &["SET", "quit-k", "2"]]);
    for _ in 0..3 {
        t.push(format!("quitter -> {}", quitter.reply()));
    }
    record(&mut t, "killer", &mut killer, &["GET", "quit-k"]);

    // Another client, idle: it reads the end of the connection.
    let mut idle = Conn::open(addr);
    let id = client_id(&mut idle);
    let kill = |conn: &mut Conn, id: &str, extra: &[&str]| {
        let mut args = vec!["CLIENT", "KILL", "ID", id];
        args.extend_from_slice(extra);
        let reply = conn.call(&args);
        format!("CLIENT KILL ID <id> {extra:?} -> {reply}")
    };
    t.push(format!("killer {}", kill(&mut killer, &id, &[])));
    t.push(format!("idle -> {}", idle.reply()));
    t.push(format!("killer {}", kill(&mut killer, &id, &[])));

    // A client blocked in WAIT (no replica will ever acknowledge): its
    // reply never comes, the connection ends.
    let mut waiter = Conn::open(addr);
    let id = client_id(&mut waiter);
    waiter.send(&[&["SET", "wait-k", "1"], &["WAIT", "1", "0"]]);
    t.push(format!("waiter -> {}", waiter.reply()));
    sleep(Duration::from_millis(50));
    t.push(format!("killer {}", kill(&mut killer, &id, &[])));
    t.push(format!("waiter -> {}", waiter.reply()));

    // A subscriber, by type.
    let mut subscriber = Conn::open(addr);
    record(&mut t, "subscriber", &mut subscriber, &["SUBSCRIBE", "ch"]);
    record(
        &mut t,
        "killer",
        &mut killer,
        &["CLIENT", "KILL", "TYPE", "pubsub"],
    );
    t.push(format!("subscriber -> {}", subscriber.reply()));
    record(&mut t, "killer", &mut killer, &["PUBLISH", "ch", "m"]);

    // The caller itself: spared by default; with SKIPME no it gets the
    // count, then the connection closes.
    let own = client_id(&mut killer);
    t.push(format!("killer {}", kill(&mut killer, &own, &[])));
    for args in [
        &["CLIENT", "KILL"][..],
        &["CLIENT", "KILL", "ID", "0"],
        &["CLIENT", "KILL", "ID", "x"],
        &["CLIENT", "KILL", "TYPE", "x"],
        &["CLIENT", "KILL", "USER", "nobody"],
        &["CLIENT", "KILL", "ID", "1", "SKIPME"],
        &["CLIENT", "KILL", "ID", "1", "SKIPME", "maybe"],
        &["CLIENT", "KILL", "NOPE", "1"],
        &["CLIENT", "KILL", "USER", "default", "TYPE", "master"],
    ] {
        record(&mut t, "killer", &mut killer, args);
    }
    t.push(format!(
        "killer {}",
        kill(&mut killer, &own, &["SKIPME", "no"])
    ));
    t.push(format!("killer -> {}", killer.reply()));
    t
}

#[test]
fn quit_and_client_kill_end_connections_as_redis_7_0_does() {
    let node = SimNode::with_threshold(THRESHOLD_MS);
    let simulated = close_transcript(node.addr);
    let expected_here = [
        "quitter -> +OK\r\n",
        "quitter -> (closed)",
        "idle -> (closed)",
        "waiter -> (closed)",
        "subscriber -> (closed)",
        "killer -> (closed)",
    ];
    for line in expected_here {
        assert!(
            simulated.iter().any(|l| l == line),
            "no {line:?} in {simulated:#?}"
        );
    }
    let Some(server) = real_redis(&[]) else {
        return;
    };
    let real = close_transcript(server.addr());
    assert_eq!(
        simulated, real,
        "simulated (left) and redis-server 7.0 (right)"
    );
}

/// Each connected client's `CLIENT LIST` fields that do not depend on the
/// server's sockets or clock (name, flags, database, subscriptions,
/// transaction, command, protocol), sorted by name.
fn client_list_transcript(addr: SocketAddr) -> Vec<String> {
    let mut named = Conn::open(addr);
    assert_eq!(named.call(&["CLIENT", "SETNAME", "named"]), "+OK\r\n");
    named.call(&["SELECT", "3"]);
    let mut subscriber = Conn::open(addr);
    subscriber.call(&["CLIENT", "SETNAME", "subscriber"]);
    subscriber.call(&["SUBSCRIBE", "a", "b"]);
    subscriber.reply();
    subscriber.call(&["PSUBSCRIBE", "p*"]);
    let mut queuer = Conn::open(addr);
    queuer.call(&["CLIENT", "SETNAME", "queuer"]);
    queuer.call(&["MULTI"]);
    queuer.call(&["SET", "k", "v"]);
    queuer.call(&["GET", "k"]);
    let mut blocked = Conn::open(addr);
    blocked.call(&["CLIENT", "SETNAME", "blocked"]);
    blocked.call(&["HELLO", "3"]);
    blocked.send(&[&["BLPOP", "nothing", "0"]]);
    let mut lister = Conn::open(addr);
    lister.call(&["CLIENT", "SETNAME", "lister"]);
    // The blocked client's BLPOP reaches the server before this list.
    sleep(Duration::from_millis(100));
    let kept = ["name", "flags", "db", "sub", "psub", "multi", "cmd", "resp"];
    let keep = |line: &str| {
        line.split(' ')
            .filter(|field| kept.iter().any(|k| field.starts_with(&format!("{k}="))))
            .collect::<Vec<_>>()
            .join(" ")
    };
    let reply = lister.call(&["CLIENT", "LIST"]);
    let mut lines: Vec<String> = reply
        .split('\n')
        .filter(|l| l.starts_with("id="))
        .map(keep)
        .collect();
    lines.sort();
    let pubsub = lister.call(&["CLIENT", "LIST", "TYPE", "pubsub"]);
    lines.push(format!("pubsub: {}", pubsub.matches("id=").count()));
    lines
}

#[test]
fn client_list_shows_every_client_as_redis_7_0_does() {
    let node = SimNode::with_threshold(THRESHOLD_MS);
    let simulated = client_list_transcript(node.addr);
    assert_eq!(simulated.len(), 6, "{simulated:#?}");
    assert!(
        simulated
            .contains(&"name=queuer flags=x db=0 sub=0 psub=0 multi=2 cmd=get resp=2".to_string()),
        "{simulated:#?}"
    );
    let Some(server) = real_redis(&[]) else {
        return;
    };
    let real = client_list_transcript(server.addr());
    assert_eq!(simulated, real);
}
