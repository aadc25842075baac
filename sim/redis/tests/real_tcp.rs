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
    let server = match harness::RedisServer::start_with_args(&[
        "--busy-reply-threshold",
        &THRESHOLD_MS.to_string(),
    ]) {
        Ok(s) => s,
        Err(harness::Error::NotInstalled) => {
            eprintln!("redis-server not installed: the real arm is skipped");
            return;
        }
        Err(e) => panic!("{e}"),
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
