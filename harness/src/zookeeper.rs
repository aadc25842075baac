//! Real ZooKeeper servers for tests and real mode: a standalone
//! [`ZkServer`] or a three-server [`ZkEnsemble`] on loopback, Debian's
//! ZooKeeper 3.8 (`/usr/share/java/zookeeper.jar`), their data in a fresh
//! temporary folder, each server stopped (by pid, under the same watcher
//! as every server this crate starts) and the folder removed when dropped.
//!
//! Every server runs with a tick of [`TICK_MS`], so that sessions may last
//! from 2 to 20 ticks (1 s to 10 s), as on the simulated server. Its JVM is
//! started directly (`java -cp ... ZooKeeperServerMain zoo.cfg`), not
//! through `zkServer.sh`, so that the pid the watcher reports is the JVM's
//! own and `SIGKILL` to it is a crash. The admin server (an HTTP server on
//! port 8080, which would collide between servers) is off; the four-letter
//! words `srvr`, `ruok` and `stat` are allowed, and readiness and
//! leadership are read from `srvr`. `forceSync=yes` (the default, written
//! out) makes a server fsync its log before it answers a write, so a
//! killed and restarted server keeps every write it acknowledged.
//!
//! Every port (client; in an ensemble also quorum and election) is held by
//! a [`ReservedPort`] for the server's whole life: ZooKeeper sets
//! `SO_REUSEADDR` on its server sockets and binds them all the same, while
//! no other test is handed them, before the first start or while the
//! server is down.

use crate::{ReservedPort, Watched, has_exited};
use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::thread;
use std::time::{Duration, Instant};

/// The tick of every ZooKeeper locklab runs, simulated and real: session
/// timeouts are bounded to 2 to 20 ticks (1 s to 10 s).
pub const TICK_MS: u64 = 500;

/// ZooKeeper's jar, as Debian's `libzookeeper-java` installs it; its
/// manifest names the jars it needs.
pub const ZOOKEEPER_JAR: &str = "/usr/share/java/zookeeper.jar";

/// The environment file `zkServer.sh` and `zkCli.sh` read; its
/// `CLASSPATH=` line is the class path they run with.
pub const ZKENV: &str = "/usr/share/zookeeper/bin/zkEnv.sh";

/// ZooKeeper's command-line client.
pub const ZKCLI: &str = "/usr/share/zookeeper/bin/zkCli.sh";

/// An SLF4J binding that writes to standard error (Debian's
/// `libslf4j-java`, which Curator depends on): without one ZooKeeper logs
/// nothing, and a server that fails to start would not say why.
const SLF4J_SIMPLE_JAR: &str = "/usr/share/java/slf4j-simple.jar";

/// An SLF4J binding that drops everything, for quiet clients (without any
/// binding SLF4J prints a three-line warning on every start).
pub const SLF4J_NOP_JAR: &str = "/usr/share/java/slf4j-nop.jar";

/// The Java launcher.
pub const JAVA_BIN: &str = "java";

/// How long a fresh server or ensemble (or a restarted server) may take
/// to serve.
const STARTUP_TIMEOUT_MS: u64 = 30_000;

/// How many times a server or ensemble is started on fresh ports before
/// giving up.
const START_ATTEMPTS: usize = 3;

/// How many lines of a server's log an error shows.
const LOG_TAIL_LINES: usize = 40;

/// Tells apart the folders one process creates.
static FOLDERS: AtomicU64 = AtomicU64::new(0);

/// Whether ZooKeeper can be run here: `java` runs and ZooKeeper's jar and
/// `zkCli.sh` are where Debian puts them.
pub fn installed() -> bool {
    Path::new(ZOOKEEPER_JAR).is_file()
        && Path::new(ZKCLI).is_file()
        && Command::new(JAVA_BIN)
            .arg("-version")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
}

/// The installed ZooKeeper's version as reports name servers
/// (`zookeeper 3.8.0`), read from the versioned jar Debian puts beside
/// [`ZOOKEEPER_JAR`]; `None` when ZooKeeper is not installed.
pub fn version() -> Option<String> {
    let dir = Path::new(ZOOKEEPER_JAR).parent()?;
    let mut versions: Vec<String> = std::fs::read_dir(dir)
        .ok()?
        .filter_map(|entry| {
            let name = entry.ok()?.file_name().into_string().ok()?;
            let version = name.strip_prefix("zookeeper-")?.strip_suffix(".jar")?;
            version
                .starts_with(|c: char| c.is_ascii_digit())
                .then(|| version.to_string())
        })
        .collect();
    versions.sort();
    versions.pop().map(|v| format!("zookeeper {v}"))
}

/// The class path `zkEnv.sh` builds (its `CLASSPATH=` line: Debian's
/// config folder and `zookeeper.jar`), or `zookeeper.jar` alone when the
/// file is missing or says nothing.
pub fn classpath() -> String {
    std::fs::read_to_string(ZKENV)
        .ok()
        .and_then(|env| {
            env.lines().find_map(|line| {
                let value = line.trim().strip_prefix("CLASSPATH=")?;
                let value = value.trim_matches(|c| c == '"' || c == '\'');
                (!value.is_empty() && !value.contains('$')).then(|| value.to_string())
            })
        })
        .unwrap_or_else(|| ZOOKEEPER_JAR.to_string())
}

/// [`classpath`] with an SLF4J binding appended when Debian has one:
/// `log` true gives logs on standard error, false silence.
pub fn classpath_with_logging(log: bool) -> String {
    let binding = if log { SLF4J_SIMPLE_JAR } else { SLF4J_NOP_JAR };
    let mut cp = classpath();
    if Path::new(binding).is_file() {
        cp.push(':');
        cp.push_str(binding);
    }
    cp
}

/// Sends a four-letter word (`srvr`, `ruok`, `stat`) to the server at
/// `addr` and returns its whole answer (the server closes the connection
/// after it).
pub fn four_letter(addr: SocketAddr, word: &str) -> io::Result<String> {
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_millis(500))?;
    s.set_read_timeout(Some(Duration::from_millis(2_000)))?;
    s.set_write_timeout(Some(Duration::from_millis(2_000)))?;
    s.write_all(word.as_bytes())?;
    let mut answer = String::new();
    s.read_to_string(&mut answer)?;
    Ok(answer)
}

/// The `Mode:` a server at `addr` reports in `srvr` (`standalone`,
/// `leader`, `follower`); `None` while it does not serve (no quorum yet,
/// an election) or does not answer.
pub fn mode(addr: SocketAddr) -> Option<String> {
    let answer = four_letter(addr, "srvr").ok()?;
    answer
        .lines()
        .find_map(|l| l.strip_prefix("Mode:"))
        .map(|m| m.trim().to_string())
}

/// One ZooKeeper server process: its ports, folder and config, and the
/// running JVM if any.
#[derive(Debug)]
struct ZkNode {
    /// Held for the node's life (see the module's documentation).
    client: ReservedPort,
    /// The quorum and election ports, in an ensemble.
    peer: Option<(ReservedPort, ReservedPort)>,
    /// Its folder: `zoo.cfg`, `zookeeper.log` and the data (`data/`).
    dir: PathBuf,
    /// `ZooKeeperServerMain` (standalone) or `QuorumPeerMain`.
    main_class: &'static str,
    /// Whether the JVM stops at the quick JIT (see [`ZkNode::launch`]).
    quick_jit: bool,
    process: Option<Watched>,
}

impl ZkNode {
    fn new(main_class: &'static str, dir: PathBuf, with_peer: bool) -> io::Result<ZkNode> {
        std::fs::create_dir_all(dir.join("data"))?;
        let peer = if with_peer {
            Some((ReservedPort::new()?, ReservedPort::new()?))
        } else {
            None
        };
        Ok(ZkNode {
            client: ReservedPort::new()?,
            peer,
            dir,
            main_class,
            quick_jit: true,
            process: None,
        })
    }

    fn addr(&self) -> SocketAddr {
        self.client.addr()
    }

    fn log_path(&self) -> PathBuf {
        self.dir.join("zookeeper.log")
    }

    /// Writes `zoo.cfg`; `servers` lists the ensemble (`server.N=` lines),
    /// empty for a standalone server.
    fn write_config(&self, servers: &str) -> io::Result<()> {
        let data = self.dir.join("data");
        let config = format!(
            "tickTime={TICK_MS}\n\
             initLimit=10\n\
             syncLimit=5\n\
             dataDir={}\n\
             clientPort={}\n\
             clientPortAddress=127.0.0.1\n\
             admin.enableServer=false\n\
             4lw.commands.whitelist=srvr,ruok,stat\n\
             forceSync=yes\n\
             {servers}",
            data.display(),
            self.client.port()
        );
        std::fs::write(self.dir.join("zoo.cfg"), config)
    }

    /// Starts the JVM under a watcher, its output appended to its log.
    fn launch(&mut self) -> io::Result<()> {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.log_path())?;
        let cp = classpath_with_logging(true);
        let config = self.dir.join("zoo.cfg").to_string_lossy().into_owned();
        // A small heap, the serial collector and the quick JIT only: a
        // test server holds a few hundred nodes, and on a machine of few
        // cores three JVMs start in about half the time (the optimising
        // JIT competes for the cores at start). Its steady-state speed is
        // lower, which no test or safety run measures; a benchmark's
        // server keeps the full JIT ([`ZkServer::start_for_speed`]).
        let jit: &[&str] = if self.quick_jit {
            &["-XX:TieredStopAtLevel=1"]
        } else {
            &[]
        };
        let args = ["-Xmx256m", "-XX:+UseSerialGC"]
            .iter()
            .chain(jit)
            .copied()
            .chain([
                "-Dzookeeper.jmx.log4j.disable=true",
                // Times in the log, to read what took long.
                "-Dorg.slf4j.simpleLogger.showDateTime=true",
                "-Dorg.slf4j.simpleLogger.dateTimeFormat=HH:mm:ss.SSS",
                "-cp",
                &cp,
                self.main_class,
                &config,
            ])
            .collect::<Vec<&str>>();
        self.process = Some(Watched::spawn(JAVA_BIN, &args, log)?);
        Ok(())
    }

    fn kill(&mut self) {
        if let Some(mut process) = self.process.take() {
            process.stop();
        }
    }

    fn pid(&self) -> u32 {
        self.process.as_ref().map_or(0, Watched::pid)
    }

    fn running(&self) -> bool {
        self.process.as_ref().is_some_and(|p| !has_exited(p.pid()))
    }

    /// Whether the JVM was started and has ended on its own.
    fn died(&self) -> bool {
        self.process
            .as_ref()
            .is_some_and(|p| p.pid() == 0 || has_exited(p.pid()))
    }

    /// The last lines of its log.
    fn log_tail(&self) -> String {
        let log = std::fs::read_to_string(self.log_path()).unwrap_or_default();
        let lines: Vec<&str> = log.lines().collect();
        lines[lines.len().saturating_sub(LOG_TAIL_LINES)..].join("\n")
    }
}

impl Drop for ZkNode {
    fn drop(&mut self) {
        self.kill();
    }
}

/// A fresh folder for one server or ensemble.
fn fresh_dir(kind: &str) -> io::Result<PathBuf> {
    let serial = FOLDERS.fetch_add(1, Ordering::Relaxed);
    let dir =
        std::env::temp_dir().join(format!("locklab-zk-{kind}-{}-{serial}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir)?;
    Ok(dir)
}

fn not_installed() -> io::Error {
    io::Error::new(
        io::ErrorKind::NotFound,
        format!(
            "ZooKeeper is not installed ({ZOOKEEPER_JAR} and {ZKCLI}, and java); install it with \
             `sudo apt-get install -y zookeeper` (Debian/Ubuntu) or run scripts/setup"
        ),
    )
}

/// Retries `start` on fresh ports, as a port reserved a moment too late or
/// a loaded machine can fail one attempt.
fn with_attempts<T>(mut start: impl FnMut() -> io::Result<T>) -> io::Result<T> {
    if !installed() {
        return Err(not_installed());
    }
    let mut last = None;
    for _attempt in 0..START_ATTEMPTS {
        match start() {
            Ok(started) => return Ok(started),
            Err(e) => last = Some(e),
        }
    }
    Err(last.unwrap_or_else(|| io::Error::other("ZooKeeper did not start")))
}

/// One standalone ZooKeeper server this crate started, on its own loopback
/// port and data folder; stopped and its folder removed when dropped.
///
/// Starting one takes about 0.5 to 1 s (a JVM start; the empty database
/// is snapshotted at once).
#[derive(Debug)]
pub struct ZkServer {
    node: ZkNode,
}

impl ZkServer {
    /// Starts a server with an empty data folder on a free loopback port,
    /// and waits until it serves (`srvr` says `Mode: standalone`).
    pub fn start() -> io::Result<ZkServer> {
        ZkServer::start_with(true)
    }

    /// As [`start`](Self::start), for a benchmark: its JVM with the full
    /// JIT, so that it starts slower but runs at its steady-state speed,
    /// as a deployed server does; and no cap on the connections from one
    /// address (ZooKeeper's default is 60), as a benchmark's many clients
    /// all come from 127.0.0.1.
    pub fn start_for_speed() -> io::Result<ZkServer> {
        ZkServer::start_with(false)
    }

    fn start_with(quick: bool) -> io::Result<ZkServer> {
        with_attempts(|| {
            let dir = fresh_dir("server")?;
            let mut node = ZkNode::new(
                "org.apache.zookeeper.server.ZooKeeperServerMain",
                dir,
                false,
            )?;
            node.quick_jit = quick;
            node.write_config(if quick { "" } else { "maxClientCnxns=0\n" })?;
            let mut server = ZkServer { node };
            server.node.launch()?;
            server.wait_serving()?;
            Ok(server)
        })
    }

    fn wait_serving(&self) -> io::Result<()> {
        let deadline = Instant::now() + Duration::from_millis(STARTUP_TIMEOUT_MS);
        loop {
            if self.node.died() {
                return Err(self.failed("exited while starting"));
            }
            if mode(self.addr()).is_some() {
                return Ok(());
            }
            if Instant::now() >= deadline {
                return Err(self.failed(&format!("did not serve within {STARTUP_TIMEOUT_MS} ms")));
            }
            thread::sleep(Duration::from_millis(10));
        }
    }

    fn failed(&self, what: &str) -> io::Error {
        io::Error::other(format!(
            "ZooKeeper on {} {what}; the end of its log:\n{}",
            self.addr(),
            self.node.log_tail()
        ))
    }

    /// The loopback port it listens on for clients.
    pub fn port(&self) -> u16 {
        self.node.client.port()
    }

    /// `127.0.0.1:port`.
    pub fn addr(&self) -> SocketAddr {
        self.node.addr()
    }

    /// The JVM's pid (0 while killed).
    pub fn pid(&self) -> u32 {
        self.node.pid()
    }

    /// Whether its JVM is running.
    pub fn running(&self) -> bool {
        self.node.running()
    }

    /// Its folder (`zoo.cfg`, `zookeeper.log`, `data/`).
    pub fn dir(&self) -> &Path {
        &self.node.dir
    }

    /// What it has logged (every start's, appended).
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.node.log_path()).unwrap_or_default()
    }

    /// Kills the JVM (`SIGKILL`) and waits until it is gone; its port and
    /// data stay for [`restart`](Self::restart).
    pub fn kill(&mut self) {
        self.node.kill();
    }

    /// Starts a killed server again on the same port and data folder and
    /// waits until it serves; a running server is left alone.
    pub fn restart(&mut self) -> io::Result<()> {
        if self.node.process.is_some() {
            return Ok(());
        }
        self.node.launch()?;
        self.wait_serving()
    }
}

impl Drop for ZkServer {
    fn drop(&mut self) {
        self.node.kill();
        let _ = std::fs::remove_dir_all(&self.node.dir);
    }
}

/// Three ZooKeeper servers started together as one ensemble on loopback,
/// each with its own client, quorum and election ports (`server.N=`
/// lines, a `myid` file each) and data folder; stopped and the folders
/// removed when dropped.
///
/// Starting one takes about 2 s (1.9 to 2.8 s measured on a 2-core machine
/// under a load of 6; 3 to 6 s with the JVM's optimising JIT on): three
/// JVMs start at once, elect a leader within about 0.3 s of seeing each
/// other, and the followers sync with it.
#[derive(Debug)]
pub struct ZkEnsemble {
    /// By index; server `i` has `myid` `i + 1`.
    nodes: Vec<ZkNode>,
    /// Holds every server's folder.
    dir: PathBuf,
}

/// Where member `from` dials member `to`, given `to`'s own quorum and
/// election addresses: `(from, to, quorum, election)` to the addresses to
/// dial ([`ZkEnsemble::start_routed`]).
pub type PeerRoute<'a> =
    dyn FnMut(usize, usize, SocketAddr, SocketAddr) -> io::Result<(SocketAddr, SocketAddr)> + 'a;

/// How many servers a [`ZkEnsemble`] has.
pub const ENSEMBLE_SIZE: usize = 3;

impl ZkEnsemble {
    /// Starts three servers with empty data as one new ensemble and waits
    /// until every one serves and exactly one leads; the members dial each
    /// other directly.
    pub fn start() -> io::Result<ZkEnsemble> {
        ZkEnsemble::start_routed(&mut |_, _, quorum, election| Ok((quorum, election)))
    }

    /// As [`start`](Self::start), but member `from` dials member `to` at
    /// the addresses `route(from, to, quorum, election)` gives for `to`'s
    /// own quorum and election ports (a proxy's, say), so that each
    /// member's `zoo.cfg` names its peers where `route` says. A member
    /// knows its peer by the id it sends, not by its address, so each can
    /// be told different addresses. `route` is called again for each
    /// attempt on fresh ports.
    pub fn start_routed(route: &mut PeerRoute<'_>) -> io::Result<ZkEnsemble> {
        with_attempts(|| {
            let dir = fresh_dir("ensemble")?;
            let mut ensemble = ZkEnsemble {
                nodes: Vec::new(),
                dir: dir.clone(),
            };
            for i in 0..ENSEMBLE_SIZE {
                let node_dir = dir.join(format!("server-{}", i + 1));
                let node = ZkNode::new(
                    "org.apache.zookeeper.server.quorum.QuorumPeerMain",
                    node_dir,
                    true,
                )?;
                std::fs::write(node.dir.join("data").join("myid"), format!("{}\n", i + 1))?;
                ensemble.nodes.push(node);
            }
            let own: Vec<(SocketAddr, SocketAddr)> = (ensemble.nodes.iter())
                .map(|n| {
                    let (quorum, election) = n.peer.as_ref().expect("ensemble nodes have peers");
                    (quorum.addr(), election.addr())
                })
                .collect();
            for (from, node) in ensemble.nodes.iter().enumerate() {
                let mut servers = String::new();
                for (to, &(quorum, election)) in own.iter().enumerate() {
                    let (quorum, election) = if to == from {
                        (quorum, election)
                    } else {
                        route(from, to, quorum, election)?
                    };
                    servers.push_str(&format!("server.{}={quorum}:{}\n", to + 1, election.port()));
                }
                node.write_config(&servers)?;
            }
            // All at once: none serves before a majority runs.
            for node in &mut ensemble.nodes {
                node.launch()?;
            }
            ensemble.wait_serving()?;
            Ok(ensemble)
        })
    }

    /// Waits until every running server serves and exactly one leads.
    pub fn wait_serving(&self) -> io::Result<()> {
        let deadline = Instant::now() + Duration::from_millis(STARTUP_TIMEOUT_MS);
        loop {
            if let Some(i) = self.nodes.iter().position(ZkNode::died) {
                return Err(self.failed(&format!("server {i} exited")));
            }
            let modes: Vec<Option<String>> = (self.nodes.iter())
                .filter(|n| n.running())
                .map(|n| mode(n.addr()))
                .collect();
            let leaders = modes
                .iter()
                .filter(|m| m.as_deref() == Some("leader"))
                .count();
            if modes.iter().all(Option::is_some) && leaders == 1 {
                return Ok(());
            }
            if Instant::now() >= deadline {
                return Err(self.failed(&format!(
                    "did not serve with one leader within {STARTUP_TIMEOUT_MS} ms (modes {modes:?})"
                )));
            }
            thread::sleep(Duration::from_millis(20));
        }
    }

    fn failed(&self, what: &str) -> io::Error {
        let logs: Vec<String> = (self.nodes.iter().enumerate())
            .map(|(i, n)| format!("server {i} on {} logged:\n{}", n.addr(), n.log_tail()))
            .collect();
        io::Error::other(format!(
            "the ZooKeeper ensemble {what}; {}",
            logs.join("\n")
        ))
    }

    fn node_mut(&mut self, i: usize) -> io::Result<&mut ZkNode> {
        let n = self.nodes.len();
        self.nodes.get_mut(i).ok_or_else(|| no_server(i, n))
    }

    /// Every server's client port, by index.
    pub fn ports(&self) -> Vec<u16> {
        self.nodes.iter().map(|n| n.client.port()).collect()
    }

    /// Every server's client address, by index.
    pub fn addrs(&self) -> Vec<SocketAddr> {
        self.nodes.iter().map(ZkNode::addr).collect()
    }

    /// The connection string clients take: `127.0.0.1:p1,127.0.0.1:p2,...`.
    pub fn connect_string(&self) -> String {
        (self.addrs().iter())
            .map(SocketAddr::to_string)
            .collect::<Vec<_>>()
            .join(",")
    }

    /// Server `i`'s JVM pid (0 while killed or out of range).
    pub fn pid(&self, i: usize) -> u32 {
        self.nodes.get(i).map_or(0, ZkNode::pid)
    }

    /// Whether server `i`'s JVM is running.
    pub fn running(&self, i: usize) -> bool {
        self.nodes.get(i).is_some_and(ZkNode::running)
    }

    /// Kills server `i` (`SIGKILL`) and waits until it is gone; its ports
    /// and data stay for [`restart`](Self::restart).
    pub fn kill(&mut self, i: usize) -> io::Result<()> {
        self.node_mut(i)?.kill();
        Ok(())
    }

    /// Starts a killed server `i` again on its own ports and data; when a
    /// majority then runs, waits until every running server serves with
    /// one leader (with fewer, none can serve).
    pub fn restart(&mut self, i: usize) -> io::Result<()> {
        let node = self.node_mut(i)?;
        if node.process.is_some() {
            return Ok(());
        }
        node.launch()?;
        let running = self.nodes.iter().filter(|n| n.running()).count();
        if running > self.nodes.len() / 2 {
            self.wait_serving()?;
        }
        Ok(())
    }

    /// Which server leads: the only running one whose `srvr` says
    /// `Mode: leader`. `None` during an election, without a quorum, or
    /// should two say so (an old leader that has not noticed yet).
    pub fn leader(&self) -> Option<usize> {
        let leaders: Vec<usize> = (self.nodes.iter().enumerate())
            .filter(|(_, n)| n.running() && mode(n.addr()).as_deref() == Some("leader"))
            .map(|(i, _)| i)
            .collect();
        match leaders[..] {
            [one] => Some(one),
            _ => None,
        }
    }
}

impl Drop for ZkEnsemble {
    fn drop(&mut self) {
        for node in &mut self.nodes {
            node.kill();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn no_server(i: usize, n: usize) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidInput,
        format!("the ZooKeeper ensemble has no server {i} (it has {n}, numbered from 0)"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whether to skip: ZooKeeper is not installed (scripts/setup
    /// installs it).
    fn skip() -> bool {
        let skip = !installed();
        if skip {
            eprintln!("ZooKeeper is not installed; skipping (scripts/setup installs it)");
        }
        skip
    }

    /// A minimal client, so that the harness needs no ZooKeeper library:
    /// a connection with a new session (a ConnectRequest: protocol 0, 4 s).
    fn session(addr: SocketAddr) -> TcpStream {
        let mut s = TcpStream::connect(addr).expect("connect");
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let mut body = Vec::new();
        body.extend_from_slice(&0i32.to_be_bytes()); // protocolVersion
        body.extend_from_slice(&0i64.to_be_bytes()); // lastZxidSeen
        body.extend_from_slice(&4_000i32.to_be_bytes()); // timeOut
        body.extend_from_slice(&0i64.to_be_bytes()); // sessionId
        body.extend_from_slice(&16i32.to_be_bytes()); // passwd
        body.extend_from_slice(&[0u8; 16]);
        body.push(0); // readOnly
        send(&mut s, &body);
        let reply = receive(&mut s);
        assert!(reply.len() >= 20, "a ConnectResponse: {reply:?}");
        s
    }

    fn send(s: &mut TcpStream, body: &[u8]) {
        let mut frame = (body.len() as i32).to_be_bytes().to_vec();
        frame.extend_from_slice(body);
        s.write_all(&frame).expect("send");
    }

    fn receive(s: &mut TcpStream) -> Vec<u8> {
        let mut len = [0u8; 4];
        s.read_exact(&mut len).expect("a frame length");
        let mut body = vec![0u8; i32::from_be_bytes(len) as usize];
        s.read_exact(&mut body).expect("a frame");
        body
    }

    fn string(out: &mut Vec<u8>, s: &[u8]) {
        out.extend_from_slice(&(s.len() as i32).to_be_bytes());
        out.extend_from_slice(s);
    }

    /// `create path data` (persistent, world:anyone all): the error code.
    fn create(s: &mut TcpStream, path: &str, data: &str) -> i32 {
        let mut body = Vec::new();
        body.extend_from_slice(&1i32.to_be_bytes()); // xid
        body.extend_from_slice(&1i32.to_be_bytes()); // OpCode.create
        string(&mut body, path.as_bytes());
        string(&mut body, data.as_bytes());
        body.extend_from_slice(&1i32.to_be_bytes()); // one ACL
        body.extend_from_slice(&31i32.to_be_bytes()); // Perms.ALL
        string(&mut body, b"world");
        string(&mut body, b"anyone");
        body.extend_from_slice(&0i32.to_be_bytes()); // flags: persistent
        send(s, &body);
        let reply = receive(s);
        i32::from_be_bytes(reply[12..16].try_into().unwrap())
    }

    /// `getData path` without a watch: the data, `None` on an error.
    fn get(s: &mut TcpStream, path: &str) -> Option<String> {
        let mut body = Vec::new();
        body.extend_from_slice(&2i32.to_be_bytes()); // xid
        body.extend_from_slice(&4i32.to_be_bytes()); // OpCode.getData
        string(&mut body, path.as_bytes());
        body.push(0); // no watch
        send(s, &body);
        let reply = receive(s);
        let err = i32::from_be_bytes(reply[12..16].try_into().unwrap());
        if err != 0 {
            return None;
        }
        let len = i32::from_be_bytes(reply[16..20].try_into().unwrap()) as usize;
        Some(String::from_utf8_lossy(&reply[20..20 + len]).into_owned())
    }

    #[test]
    fn the_version_is_read_from_the_versioned_jar() {
        if !installed() {
            eprintln!("skipped: ZooKeeper is not installed (scripts/setup installs it)");
            return;
        }
        let version = version().expect("a versioned zookeeper jar beside zookeeper.jar");
        assert!(version.starts_with("zookeeper 3."), "{version}");
    }

    #[test]
    fn a_server_starts_answers_and_restarts_on_the_same_port_with_its_data() {
        if skip() {
            return;
        }
        let mut server = ZkServer::start().expect("ZooKeeper starts");
        let addr = server.addr();
        assert_eq!(four_letter(addr, "ruok").expect("ruok"), "imok");
        let srvr = four_letter(addr, "srvr").expect("srvr");
        assert!(srvr.contains("Mode: standalone"), "{srvr}");
        let cmdline = std::fs::read(format!("/proc/{}/cmdline", server.pid())).unwrap();
        assert!(
            String::from_utf8_lossy(&cmdline).contains("ZooKeeperServerMain"),
            "the pid is the JVM's own"
        );
        let mut s = session(addr);
        assert_eq!(create(&mut s, "/kept", "value"), 0, "created");
        drop(s);
        let pid = server.pid();
        server.kill();
        assert!(has_exited(pid) && !server.running(), "the JVM still runs");
        assert!(TcpStream::connect(addr).is_err(), "a killed server answers");
        server.restart().expect("restarted");
        assert_eq!(server.addr(), addr, "the same port");
        let mut s = session(addr);
        assert_eq!(
            get(&mut s, "/kept").as_deref(),
            Some("value"),
            "the write was lost"
        );
    }

    #[test]
    fn a_server_for_speed_keeps_the_full_jit() {
        if skip() {
            return;
        }
        let cmdline = |server: &ZkServer| {
            String::from_utf8_lossy(
                &std::fs::read(format!("/proc/{}/cmdline", server.pid())).unwrap(),
            )
            .into_owned()
        };
        let quick = ZkServer::start().expect("ZooKeeper starts");
        assert!(cmdline(&quick).contains("TieredStopAtLevel=1"));
        drop(quick);
        let fast = ZkServer::start_for_speed().expect("ZooKeeper starts");
        assert!(!cmdline(&fast).contains("TieredStopAtLevel"));
        let config = std::fs::read_to_string(fast.dir().join("zoo.cfg")).unwrap();
        assert!(config.contains("maxClientCnxns=0"), "{config}");
        assert_eq!(four_letter(fast.addr(), "ruok").expect("ruok"), "imok");
    }

    #[test]
    fn a_dropped_server_is_gone_with_its_folder() {
        if skip() {
            return;
        }
        let server = ZkServer::start().expect("ZooKeeper starts");
        let (pid, dir, addr) = (server.pid(), server.dir().to_path_buf(), server.addr());
        drop(server);
        assert!(has_exited(pid));
        assert!(!dir.exists(), "{} is left", dir.display());
        assert!(four_letter(addr, "ruok").is_err());
    }

    #[test]
    fn a_server_runs_with_the_locklab_tick() {
        if skip() {
            return;
        }
        let server = ZkServer::start().expect("ZooKeeper starts");
        let log = server.log();
        assert!(
            log.contains(&format!("tickTime {TICK_MS} ms")),
            "no tickTime {TICK_MS} in the log"
        );
        assert!(
            log.contains("maxSessionTimeout 10000 ms"),
            "sessions up to 10 s"
        );
    }

    #[test]
    fn an_ensemble_elects_exactly_one_leader_and_elects_another_when_it_dies() {
        if skip() {
            return;
        }
        let started = Instant::now();
        let mut ensemble = ZkEnsemble::start().expect("the ensemble starts");
        eprintln!("the ensemble started in {:?}", started.elapsed());
        let leader = ensemble.leader().expect("a leader");
        let modes: Vec<Option<String>> = ensemble.addrs().into_iter().map(mode).collect();
        let leaders = modes
            .iter()
            .filter(|m| m.as_deref() == Some("leader"))
            .count();
        let followers = modes
            .iter()
            .filter(|m| m.as_deref() == Some("follower"))
            .count();
        assert_eq!((leaders, followers), (1, 2), "{modes:?}");
        assert_eq!(ensemble.ports().len(), ENSEMBLE_SIZE);
        let err = ensemble.kill(ENSEMBLE_SIZE).expect_err("no fourth server");
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
        let mut s = session(ensemble.addrs()[(leader + 1) % ENSEMBLE_SIZE]);
        assert_eq!(create(&mut s, "/replicated", "yes"), 0);
        drop(s);
        ensemble.kill(leader).expect("killed");
        ensemble
            .wait_serving()
            .expect("the other two elect a leader");
        let next = ensemble.leader().expect("a new leader");
        assert_ne!(next, leader);
        ensemble.restart(leader).expect("restarted");
        assert_eq!(
            ensemble.leader(),
            Some(next),
            "the returning server follows"
        );
        let mut s = session(ensemble.addrs()[leader]);
        assert_eq!(get(&mut s, "/replicated").as_deref(), Some("yes"));
    }

    #[test]
    fn the_classpath_is_the_one_zkenv_builds() {
        if skip() {
            return;
        }
        assert!(classpath().contains(ZOOKEEPER_JAR), "{}", classpath());
    }
}
