//! Real lock clients against redis-server 7.0.15 and against the simulated
//! node, their transcripts compared: redis-py 8's `redis.lock.Lock` (over
//! RESP3, as redis-py 8 speaks by default, and over RESP2) and
//! node-redlock 5.0.0-beta.2 over ioredis, on one instance and on three.
//!
//! Each client is a small script in `tests/clients/` that prints what it
//! observed (return values, exceptions). Between the script and each server
//! sits a recording proxy written here, which keeps both byte streams of
//! every connection. A transcript is the script's output followed by those
//! streams, cut into RESP frames, with the values that change from run to
//! run masked; the real and the simulated transcripts must be identical.
//!
//! The simulated node serves real TCP in this process, so real time passes
//! as it does for redis-server. How many times a client polls (a blocking
//! acquire, `using`'s automatic extensions) depends on timing, so a run of
//! identical frames in one direction of a connection counts as one: the
//! comparison is of outcomes and of the bytes of each kind of exchange,
//! not of how often it repeated. The other differences timing makes are
//! kept out of the scripts: an exact TTL (the scripts ask the server
//! whether it lies in a range) and node-redlock's release after a failed
//! acquire, which may still be in flight when the call returns (the
//! script waits for it before its next command).
//!
//! The clients are installed by `scripts/setup` under `target/clients/`
//! (redis-py with `pip --target`, the npm packages with `npm --prefix`).
//! Without them, or without redis-server, python3 or node, a test prints
//! why and passes without comparing, as the Valkey tests do.

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How long a client script may run before the test kills it and fails.
const SCRIPT_LIMIT: Duration = Duration::from_secs(60);

/// The workspace's root (this package is `sim/redis`).
fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Where `scripts/setup` installs the clients.
fn clients_dir() -> PathBuf {
    workspace_root().join("target/clients")
}

/// The folder of the client scripts.
fn scripts_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/redis_tests/clients")
}

/// Whether `program --version` runs.
fn runs(program: &str) -> bool {
    Command::new(program)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Why the test cannot run here, if it cannot.
fn missing(program: &str, installed: &Path) -> Option<String> {
    if !harness::installed() {
        return Some("redis-server is not installed (scripts/setup installs it)".into());
    }
    if !runs(program) {
        return Some(format!("{program} is not installed"));
    }
    if !installed.exists() {
        return Some(format!(
            "{} is missing: run scripts/setup, which installs the clients",
            installed.display()
        ));
    }
    None
}

/// A simulated node served on real TCP on a thread of its own; stopped
/// (and its thread joined) when dropped.
struct SimNode {
    addr: SocketAddr,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<JoinHandle<std::io::Result<()>>>,
}

impl SimNode {
    fn start(name: &str) -> SimNode {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind a port for the node");
        let addr = listener.local_addr().expect("the node's address");
        let mut config = simredis::NodeConfig::new(name);
        config.port = addr.port();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()?;
            runtime.block_on(simredis::serve_bound_until(listener, config, async move {
                let _ = stopped.await;
            }))
        });
        SimNode {
            addr,
            stop: Some(stop),
            thread: Some(thread),
        }
    }
}

impl Drop for SimNode {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// One proxied connection's bytes, each direction in arrival order.
#[derive(Default)]
struct Recording {
    to_server: Vec<u8>,
    to_client: Vec<u8>,
}

/// A recording TCP proxy on 127.0.0.1 in front of one server: every
/// accepted connection is relayed to the server and both directions are
/// kept, in the order the connections were accepted.
struct Proxy {
    addr: SocketAddr,
    done: Arc<AtomicBool>,
    recordings: Arc<Mutex<Vec<Arc<Mutex<Recording>>>>>,
    relays: Arc<Mutex<Vec<JoinHandle<()>>>>,
    acceptor: Option<JoinHandle<()>>,
}

impl Proxy {
    fn start(server: SocketAddr) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind a port for the proxy");
        let addr = listener.local_addr().expect("the proxy's address");
        let done = Arc::new(AtomicBool::new(false));
        let recordings: Arc<Mutex<Vec<Arc<Mutex<Recording>>>>> = Arc::default();
        let relays: Arc<Mutex<Vec<JoinHandle<()>>>> = Arc::default();
        let acceptor = {
            let (done, recordings, relays) = (done.clone(), recordings.clone(), relays.clone());
            std::thread::spawn(move || {
                for client in listener.incoming() {
                    // The proxy is stopped by a connection of its own
                    // after `done` is set.
                    if done.load(Ordering::SeqCst) {
                        return;
                    }
                    let Ok(client) = client else { continue };
                    let Ok(upstream) = TcpStream::connect(server) else {
                        continue;
                    };
                    let recording = Arc::new(Mutex::new(Recording::default()));
                    recordings.lock().unwrap().push(recording.clone());
                    let mut relays = relays.lock().unwrap();
                    relays.push(relay(&client, &upstream, recording.clone(), true));
                    relays.push(relay(&upstream, &client, recording, false));
                }
            })
        };
        Proxy {
            addr,
            done,
            recordings,
            relays,
            acceptor: Some(acceptor),
        }
    }

    /// Waits until every connection has ended (the client closed it and
    /// the server followed), then returns the recordings.
    fn finish(&mut self) -> Vec<Recording> {
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline
            && !self.relays.lock().unwrap().iter().all(|r| r.is_finished())
        {
            std::thread::sleep(Duration::from_millis(10));
        }
        self.stop();
        self.recordings
            .lock()
            .unwrap()
            .drain(..)
            .map(|r| std::mem::take(&mut *r.lock().unwrap()))
            .collect()
    }

    fn stop(&mut self) {
        if let Some(acceptor) = self.acceptor.take() {
            self.done.store(true, Ordering::SeqCst);
            let _ = TcpStream::connect(self.addr);
            let _ = acceptor.join();
        }
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Copies `from` to `to`, keeping the bytes, until `from` ends; then ends
/// the writing side of `to` so that the other end sees the close.
fn relay(
    from: &TcpStream,
    to: &TcpStream,
    recording: Arc<Mutex<Recording>>,
    to_server: bool,
) -> JoinHandle<()> {
    let (mut from, mut to) = (
        from.try_clone().expect("clone"),
        to.try_clone().expect("clone"),
    );
    std::thread::spawn(move || {
        let mut buf = [0u8; 16 * 1024];
        loop {
            match from.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    {
                        let mut r = recording.lock().unwrap();
                        let kept = if to_server {
                            &mut r.to_server
                        } else {
                            &mut r.to_client
                        };
                        kept.extend_from_slice(&buf[..n]);
                    }
                    if to.write_all(&buf[..n]).is_err() {
                        break;
                    }
                }
            }
        }
        let _ = to.shutdown(Shutdown::Write);
    })
}

/// A client script's process, killed by pid if still running when dropped.
struct Script {
    child: Child,
}

impl Drop for Script {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Runs a script to its end (at most [`SCRIPT_LIMIT`]) and returns its
/// standard output; panics with its error output if it failed.
fn run_script(mut command: Command) -> String {
    command.stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut script = Script {
        child: command.spawn().expect("start the client script"),
    };
    let mut stdout = script.child.stdout.take().expect("stdout");
    let mut stderr = script.child.stderr.take().expect("stderr");
    let out = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stdout.read_to_string(&mut s);
        s
    });
    let err = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stderr.read_to_string(&mut s);
        s
    });
    let deadline = Instant::now() + SCRIPT_LIMIT;
    let status = loop {
        if let Some(status) = script.child.try_wait().expect("wait for the script") {
            break status;
        }
        assert!(
            Instant::now() < deadline,
            "the client script ran past {SCRIPT_LIMIT:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    let (out, err) = (out.join().unwrap(), err.join().unwrap());
    assert!(
        status.success(),
        "the client script failed ({status}):\n{out}\n{err}"
    );
    out
}

/// The length of the RESP2 or RESP3 frame at the start of `bytes`, if it
/// is complete.
fn frame_len(bytes: &[u8]) -> Option<usize> {
    let line_end = bytes.windows(2).position(|w| w == b"\r\n")?;
    let header = bytes
        .get(1..line_end)
        .and_then(|h| std::str::from_utf8(h).ok());
    let count = || header.and_then(|h| h.parse::<i64>().ok());
    let after = line_end + 2;
    match bytes.first()? {
        // Blob types: a length, then that many bytes and a CRLF.
        b'$' | b'!' | b'=' => match count()? {
            n if n < 0 => Some(after),
            n => {
                let end = after + n as usize + 2;
                (bytes.len() >= end).then_some(end)
            }
        },
        // Aggregates: a count of frames (twice as many for maps and
        // attributes).
        b'*' | b'~' | b'>' | b'%' | b'|' => {
            let n = count()?;
            let frames = if matches!(bytes[0], b'%' | b'|') {
                n * 2
            } else {
                n
            };
            let mut at = after;
            for _ in 0..frames.max(0) {
                at += frame_len(&bytes[at..])?;
            }
            Some(at)
        }
        // Simple types and inline requests: one line.
        _ => Some(after),
    }
}

/// `bytes` cut into frames, each masked (see [`mask`]) and printed with
/// its bytes escaped, runs of identical frames counted once (see the
/// module's docs). Frames are cut before masking: a placeholder's length
/// is not the value's.
fn frames(mut bytes: &[u8], values: &[(String, String)]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    while !bytes.is_empty() {
        let n = frame_len(bytes).unwrap_or(bytes.len());
        let frame = mask(&bytes[..n], values).escape_ascii().to_string();
        if out.last() != Some(&frame) {
            out.push(frame);
        }
        bytes = &bytes[n..];
    }
    out
}

/// Replaces every occurrence of `from` in `bytes` by `to`.
fn replace(bytes: &[u8], from: &[u8], to: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if !from.is_empty() && bytes[i..].starts_with(from) {
            out.extend_from_slice(to);
            i += from.len();
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    out
}

/// Masks what differs between runs (and servers) for reasons other than
/// the server's behaviour: the values the script listed, any other
/// node-redlock value (32 lowercase hex digits in a bulk string: a failed
/// acquire's, which the script never sees), and the connection id in
/// `HELLO`'s reply (redis-server counts its own connections, among them
/// the harness's readiness checks).
fn mask(bytes: &[u8], values: &[(String, String)]) -> Vec<u8> {
    let mut bytes = bytes.to_vec();
    for (value, placeholder) in values {
        bytes = replace(&bytes, value.as_bytes(), placeholder.as_bytes());
    }
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let rest = &bytes[i..];
        if rest.starts_with(b"$32\r\n")
            && rest.len() >= 39
            && rest[5..37]
                .iter()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(b))
            && &rest[37..39] == b"\r\n"
        {
            out.extend_from_slice(b"$32\r\n<random>\r\n");
            i += 39;
        } else if rest.starts_with(b"$2\r\nid\r\n:") {
            out.extend_from_slice(b"$2\r\nid\r\n:<id>");
            i += 9;
            while i < bytes.len() && bytes[i].is_ascii_digit() {
                i += 1;
            }
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    out
}

/// The transcript of one run: the script's lines (its `value` lines turned
/// into placeholders), then each server's connections, both directions.
fn transcript(output: &str, servers: Vec<Vec<Recording>>) -> Vec<String> {
    let mut values = Vec::new();
    let mut lines = Vec::new();
    for line in output.lines() {
        match line.strip_prefix("value ") {
            Some(v) => {
                let placeholder = format!("<value {}>", values.len() + 1);
                values.push((v.to_string(), placeholder));
            }
            None => lines.push(line.to_string()),
        }
    }
    let mut out: Vec<String> = lines
        .iter()
        .map(|l| String::from_utf8_lossy(&mask(l.as_bytes(), &values)).into_owned())
        .collect();
    for (s, connections) in servers.iter().enumerate() {
        for (c, r) in connections.iter().enumerate() {
            for f in frames(&r.to_server, &values) {
                out.push(format!("server {s} connection {c} -> {f}"));
            }
            for f in frames(&r.to_client, &values) {
                out.push(format!("server {s} connection {c} <- {f}"));
            }
        }
    }
    out
}

/// Runs a client script against `servers`, each behind a proxy, and
/// returns its transcript. `command` builds the script's command from the
/// proxies' ports.
fn run_through_proxies(servers: &[SocketAddr], command: &dyn Fn(&[u16]) -> Command) -> Vec<String> {
    let mut proxies: Vec<Proxy> = servers.iter().map(|s| Proxy::start(*s)).collect();
    let ports: Vec<u16> = proxies.iter().map(|p| p.addr.port()).collect();
    let output = run_script(command(&ports));
    let recordings = proxies.iter_mut().map(Proxy::finish).collect();
    transcript(&output, recordings)
}

/// Runs the script against `n` redis-servers and against `n` simulated
/// nodes side by side, and asserts the transcripts are identical.
fn compare(n: usize, command: &(dyn Fn(&[u16]) -> Command + Sync)) {
    let real_servers = harness::RedisServer::start_many(n).expect("start redis-server");
    let real_addrs: Vec<SocketAddr> = real_servers.iter().map(|s| s.addr()).collect();
    let sim_nodes: Vec<SimNode> = (0..n)
        .map(|i| SimNode::start(&format!("client-node-{i}")))
        .collect();
    let sim_addrs: Vec<SocketAddr> = sim_nodes.iter().map(|s| s.addr).collect();
    let (real, sim) = std::thread::scope(|scope| {
        let real = scope.spawn(|| run_through_proxies(&real_addrs, command));
        let sim = scope.spawn(|| run_through_proxies(&sim_addrs, command));
        (real.join().unwrap(), sim.join().unwrap())
    });
    if std::env::var_os("REAL_CLIENTS_DUMP").is_some() {
        println!("{}", real.join("\n"));
    }
    let first_difference = real
        .iter()
        .zip(&sim)
        .position(|(r, s)| r != s)
        .unwrap_or(real.len().min(sim.len()));
    // A few lines around the first difference, long frames shortened.
    let around = |lines: &[String]| {
        let from = first_difference.saturating_sub(3);
        let to = (first_difference + 8).min(lines.len());
        lines[from.min(to)..to]
            .iter()
            .map(|l| l.chars().take(300).collect::<String>())
            .collect::<Vec<_>>()
            .join("\n  ")
    };
    assert!(
        real == sim,
        "the transcripts differ from line {} (REAL_CLIENTS_DUMP=1 prints the real one):\nredis-server:\n  {}\nsimulated node:\n  {}",
        first_difference + 1,
        around(&real),
        around(&sim),
    );
}

/// The command that runs the redis-py script against a port, in
/// redis-py's default protocol (RESP3) or in `protocol`.
fn redis_py(ports: &[u16], protocol: Option<u8>) -> Command {
    let mut command = Command::new("python3");
    command
        .arg(scripts_dir().join("redis_py_lock.py"))
        .arg(ports[0].to_string())
        .args(protocol.map(|p| p.to_string()))
        .env("PYTHONPATH", clients_dir().join("python"))
        .env("PYTHONDONTWRITEBYTECODE", "1");
    command
}

/// The command that runs the node-redlock script against ports.
fn redlock(ports: &[u16]) -> Command {
    let mut command = Command::new("node");
    command
        .arg(scripts_dir().join("redlock.js"))
        .args(ports.iter().map(u16::to_string))
        .env("NODE_PATH", clients_dir().join("node/node_modules"));
    command
}

#[test]
fn redis_py_locks_see_the_same_replies_and_bytes_from_the_node_as_from_redis_server() {
    let installed = clients_dir().join("python/redis/lock.py");
    if let Some(why) = missing("python3", &installed) {
        eprintln!("skipping the redis-py comparison: {why}");
        return;
    }
    compare(1, &|ports| redis_py(ports, None));
}

#[test]
fn redis_py_locks_over_resp2_see_the_same_replies_and_bytes_from_the_node_as_from_redis_server() {
    let installed = clients_dir().join("python/redis/lock.py");
    if let Some(why) = missing("python3", &installed) {
        eprintln!("skipping the redis-py comparison: {why}");
        return;
    }
    compare(1, &|ports| redis_py(ports, Some(2)));
}

#[test]
fn node_redlock_on_one_instance_sees_the_same_replies_and_bytes_from_the_node_as_from_redis_server()
{
    let installed = clients_dir().join("node/node_modules/redlock/package.json");
    if let Some(why) = missing("node", &installed) {
        eprintln!("skipping the node-redlock comparison: {why}");
        return;
    }
    compare(1, &redlock);
}

#[test]
fn node_redlock_on_three_instances_sees_the_same_replies_and_bytes_from_the_nodes_as_from_redis_servers()
 {
    let installed = clients_dir().join("node/node_modules/redlock/package.json");
    if let Some(why) = missing("node", &installed) {
        eprintln!("skipping the node-redlock comparison: {why}");
        return;
    }
    compare(3, &redlock);
}
