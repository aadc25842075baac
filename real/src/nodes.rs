//! Real `redis-server` processes: the Redis service's nodes of one run
//! (`crate::service::redis`), or its store, each set started through
//! `harness` (loopback only, stopped by pid when dropped, and by a watcher
//! when locklab dies however it dies).
//!
//! Each node gets its own data directory (removed with the [`Nodes`]) and
//! the persistence the scenario asks for; a kill is `SIGKILL` (the
//! harness's watcher kills its server that way) and a restart starts the
//! same binary on the same port with the same directory and arguments, so
//! an AOF written before the kill is loaded again.

use harness::RedisServer;
use model::host::Host;
use model::scenario::Persistence;
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// How long a replica may take to finish its first sync.
const SYNC_TIMEOUT_MS: u64 = 10_000;

/// The server binary a run starts for every node and the store:
/// `redis-server` unless `--server-bin` names another (Valkey).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerBin {
    /// A path, or a name on `PATH`.
    pub path: String,
    /// What it says it is: `redis-server 7.0.15`, `valkey-server 8.1.8`.
    pub description: String,
}

impl ServerBin {
    /// `redis-server` on `PATH`, if it runs.
    pub fn redis_server() -> Result<ServerBin, String> {
        ServerBin::probe(harness::DEFAULT_BIN)
    }

    /// Checks that `path` runs and names itself a Redis-compatible server
    /// (`<Name> server v=<version> ...` on `--version`).
    pub fn probe(path: &str) -> Result<ServerBin, String> {
        let out = std::process::Command::new(path)
            .arg("--version")
            .output()
            .map_err(|e| format!("server binary {path:?} could not be run: {e}"))?;
        let text = String::from_utf8_lossy(&out.stdout);
        let mut words = text.split_whitespace();
        let (name, kind) = (words.next(), words.next());
        let version = text.split_whitespace().find_map(|w| w.strip_prefix("v="));
        match (name, kind, version) {
            (Some(name), Some("server"), Some(version)) if out.status.success() => Ok(ServerBin {
                path: path.to_string(),
                description: format!("{}-server {version}", name.to_lowercase()),
            }),
            _ => Err(format!(
                "server binary {path:?} is not a Redis-compatible server: `{path} --version` \
                 printed {:?}, expected \"<Name> server v=<version> ...\"",
                text.lines().next().unwrap_or_default().trim()
            )),
        }
    }
}

/// One node: its arguments and, while it runs, its process.
#[derive(Debug)]
struct Node {
    port: u16,
    args: Vec<String>,
    server: Option<RedisServer>,
}

/// A run's servers (its nodes, or its store), by host.
#[derive(Debug)]
pub struct Nodes {
    nodes: BTreeMap<Host, Node>,
    dir: PathBuf,
    bin: ServerBin,
}

/// The `redis-server` arguments for a persistence mode.
pub fn persistence_args(mode: Persistence) -> Vec<String> {
    let args: &[&str] = match mode {
        Persistence::None => &["--appendonly", "no"],
        Persistence::AofAlways => &["--appendonly", "yes", "--appendfsync", "always"],
        Persistence::AofEverysec => &["--appendonly", "yes", "--appendfsync", "everysec"],
    };
    args.iter().map(|s| s.to_string()).collect()
}

impl Nodes {
    /// No server yet; `bin` will run them; data directories will go under
    /// a fresh folder in the system's temporary folder.
    pub fn new(run_id: &str, bin: ServerBin) -> std::io::Result<Nodes> {
        let dir =
            std::env::temp_dir().join(format!("locklab-real-{}-{run_id}", std::process::id()));
        std::fs::create_dir_all(&dir)?;
        Ok(Nodes {
            nodes: BTreeMap::new(),
            dir,
            bin,
        })
    }

    /// Starts `host` with `persistence` and `extra` arguments (a replica's
    /// `--replicaof`).
    pub fn start(
        &mut self,
        host: Host,
        persistence: Persistence,
        extra: &[String],
    ) -> Result<SocketAddr, String> {
        let data = self.dir.join(host.to_string());
        std::fs::create_dir_all(&data).map_err(|e| format!("{}: {e}", data.display()))?;
        let mut args = persistence_args(persistence);
        args.extend(["--dir".to_string(), path_arg(&data)]);
        // A master waits 5 s by default before a diskless first sync, for
        // more replicas to come; the run waits for that sync.
        args.extend(["--repl-diskless-sync-delay".to_string(), "0".to_string()]);
        // Keyspace events stay off: the history's server events are not
        // recorded in real mode yet.
        args.extend(extra.iter().cloned());
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        let server =
            RedisServer::start_bin(&self.bin.path, &refs).map_err(|e| format!("{host}: {e}"))?;
        let addr = server.addr();
        self.nodes.insert(
            host,
            Node {
                port: server.port(),
                args,
                server: Some(server),
            },
        );
        Ok(addr)
    }

    /// The address of `host` (running or not).
    pub fn addr(&self, host: Host) -> Option<SocketAddr> {
        self.nodes
            .get(&host)
            .map(|n| SocketAddr::from(([127, 0, 0, 1], n.port)))
    }

    /// Whether the run has this node.
    pub fn has(&self, host: Host) -> bool {
        self.nodes.contains_key(&host)
    }

    /// Whether `host` is running.
    pub fn running(&self, host: Host) -> bool {
        self.nodes.get(&host).is_some_and(|n| n.server.is_some())
    }

    /// Every node but the store, in order.
    pub fn hosts(&self) -> Vec<Host> {
        self.nodes.keys().copied().filter(|h| h.is_node()).collect()
    }

    /// The pids of the running servers (to check none is left behind).
    pub fn pids(&self) -> Vec<u32> {
        self.nodes
            .values()
            .filter_map(|n| n.server.as_ref().map(RedisServer::pid))
            .collect()
    }

    /// Kills `host` with `SIGKILL` (through its watcher) and waits until
    /// it is reaped. False when it was not running.
    pub fn kill(&mut self, host: Host) -> bool {
        match self.nodes.get_mut(&host).and_then(|n| n.server.take()) {
            Some(server) => {
                server.stop();
                true
            }
            None => false,
        }
    }

    /// Starts a killed node again: same port, directory and arguments.
    pub fn restart(&mut self, host: Host) -> Result<(), String> {
        let Some(node) = self.nodes.get_mut(&host) else {
            return Err(format!("{host} is not a node of this run"));
        };
        if node.server.is_some() {
            return Ok(());
        }
        let refs: Vec<&str> = node.args.iter().map(String::as_str).collect();
        let server = RedisServer::start_bin_on(&self.bin.path, node.port, &refs)
            .map_err(|e| format!("{host}: {e}"))?;
        node.server = Some(server);
        Ok(())
    }

    /// Waits until replica `host` has finished its first sync.
    pub fn wait_synced(&self, host: Host) -> Result<(), String> {
        let addr = self
            .addr(host)
            .ok_or_else(|| format!("{host} is not a node of this run"))?;
        let deadline = Instant::now() + Duration::from_millis(SYNC_TIMEOUT_MS);
        while Instant::now() < deadline {
            let info = command(addr, &["INFO", "replication"]).unwrap_or_default();
            if info.contains("master_link_status:up") {
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Err(format!(
            "replica {host} did not sync with its master within {SYNC_TIMEOUT_MS} ms"
        ))
    }
}

impl Drop for Nodes {
    fn drop(&mut self) {
        for node in self.nodes.values_mut() {
            if let Some(server) = node.server.take() {
                server.stop();
            }
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Whether `redis-server` can be run here.
pub fn installed() -> bool {
    harness::installed()
}

fn path_arg(path: &Path) -> String {
    path.to_string_lossy().into_owned()
}

/// Sends one command over a fresh blocking connection and returns the
/// reply's text (driver-side control: promotion, stocking, the audit).
pub fn command(addr: SocketAddr, args: &[&str]) -> Result<String, String> {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect_timeout(&addr, Duration::from_millis(1_000))
        .map_err(|e| format!("{addr}: {e}"))?;
    stream
        .set_read_timeout(Some(Duration::from_millis(2_000)))
        .map_err(|e| e.to_string())?;
    let mut request = format!("*{}\r\n", args.len());
    for arg in args {
        request.push_str(&format!("${}\r\n{arg}\r\n", arg.len()));
    }
    stream
        .write_all(request.as_bytes())
        .map_err(|e| format!("{addr}: {e}"))?;
    let mut reply = Vec::new();
    let mut buf = [0u8; 8192];
    // One reply: a simple line, or a bulk string read to its length.
    loop {
        let n = stream.read(&mut buf).map_err(|e| format!("{addr}: {e}"))?;
        if n == 0 {
            break;
        }
        reply.extend_from_slice(&buf[..n]);
        if reply_complete(&reply) {
            break;
        }
    }
    let text = String::from_utf8_lossy(&reply).into_owned();
    if text.starts_with('-') {
        return Err(format!("{addr}: {}", text.trim_end()));
    }
    Ok(text)
}

/// Whether `reply` holds one whole RESP reply of the kinds the driver
/// asks for (simple string, error, integer, bulk string or nil).
fn reply_complete(reply: &[u8]) -> bool {
    let Some(line_end) = reply.windows(2).position(|w| w == b"\r\n") else {
        return false;
    };
    if reply.first() != Some(&b'$') {
        return true;
    }
    let len: i64 = String::from_utf8_lossy(&reply[1..line_end])
        .parse()
        .unwrap_or(-1);
    len < 0 || reply.len() >= line_end + 2 + len as usize + 2
}

/// The integer value of a bulk or integer reply (`GET` of the stock).
pub fn parse_int_reply(reply: &str) -> Option<i64> {
    let mut lines = reply.split("\r\n");
    let first = lines.next()?;
    match first.as_bytes().first()? {
        b':' => first[1..].parse().ok(),
        b'$' if first == "$-1" => None,
        b'$' => lines.next()?.parse().ok(),
        _ => None,
    }
}
