//! Real `etcd` members for tests, real mode and benchmarks: an
//! [`EtcdCluster`] of one or more members on loopback (an [`EtcdServer`]
//! is a cluster of one), their data in a fresh temporary folder, each
//! member stopped (by pid, under the same watcher as every server this
//! crate starts) and the folder removed when dropped.
//!
//! A member can be killed (`SIGKILL`, by its watcher) and started again on
//! the same ports and data, as a crashed member restarts: etcd syncs every
//! write to its log before it answers, so the restarted member has every
//! write it acknowledged. Each member's two ports (client and peer) are
//! held by a [`ReservedPort`] for the cluster's whole life: etcd, a Go
//! program, sets `SO_REUSEADDR` and binds them all the same, while no
//! other test is handed them, before the first start or while the member
//! is down.
//!
//! Members keep etcd's default timings (heartbeat 100 ms, election
//! 1000 ms). Which member leads, and moving leadership, go through each
//! member's JSON gateway (`/v3/maintenance/status` and
//! `/v3/maintenance/transfer-leadership`), which etcd 3.4 serves on the
//! client port: no gRPC client and no `etcdctl` process per question.

use crate::{ReservedPort, Watched, has_exited};
use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::thread;
use std::time::{Duration, Instant};

/// How long a fresh cluster (or a restarted member) may take to report
/// itself healthy.
const STARTUP_TIMEOUT_MS: u64 = 20_000;

/// How long leadership may take to settle: an election after the leader
/// died (etcd's election timeout is 1 s, randomised up to 2 s), or a
/// transfer (etcd waits for the target to catch up before it hands over).
const LEADER_TIMEOUT_MS: u64 = 20_000;

/// How many times a cluster is started on fresh ports before giving up.
const START_ATTEMPTS: usize = 5;

/// The etcd binary.
pub const ETCD_BIN: &str = "etcd";

/// The etcd client.
pub const ETCDCTL_BIN: &str = "etcdctl";

/// Tells apart the clusters one process starts (their tokens and folders).
static CLUSTERS: AtomicU64 = AtomicU64::new(0);

/// One member of an [`EtcdCluster`].
#[derive(Debug)]
pub struct EtcdMember {
    name: String,
    /// Its member ID, as etcd derived it (from the peer URLs and the
    /// cluster token); learned once the cluster first became healthy.
    id: u64,
    client: ReservedPort,
    peer: ReservedPort,
    /// The arguments it is started with, the same on every restart (etcd
    /// ignores the `--initial-*` ones once its data folder has a log).
    args: Vec<String>,
    log: PathBuf,
    /// The running process; `None` while killed.
    process: Option<Watched>,
}

impl EtcdMember {
    /// Its name in the cluster (`default` in a cluster of one, as etcd
    /// names a member started without `--name`; else `member-N`).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Its member ID, as etcd reports it.
    pub fn id(&self) -> u64 {
        self.id
    }

    /// The client address, `127.0.0.1:port`.
    pub fn addr(&self) -> SocketAddr {
        self.client.addr()
    }

    /// The peer address the other members dial, `127.0.0.1:port`.
    pub fn peer_addr(&self) -> SocketAddr {
        self.peer.addr()
    }

    /// The member's pid (0 while killed).
    pub fn pid(&self) -> u32 {
        self.process.as_ref().map_or(0, Watched::pid)
    }

    /// Whether the member's process is running.
    pub fn running(&self) -> bool {
        self.process.as_ref().is_some_and(|p| !has_exited(p.pid()))
    }

    /// Starts the process under a watcher, its output appended to its log.
    fn launch(&mut self) -> io::Result<()> {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log)?;
        let args: Vec<&str> = self.args.iter().map(String::as_str).collect();
        self.process = Some(Watched::spawn(ETCD_BIN, &args, log)?);
        Ok(())
    }

    /// Kills the process (`SIGKILL`, by its watcher) and waits until it is
    /// gone.
    fn kill(&mut self) {
        if let Some(mut process) = self.process.take() {
            process.stop();
        }
    }

    /// Whether the process was started and has ended on its own (it could
    /// not bind a port, or gave up).
    fn died(&self) -> bool {
        self.process
            .as_ref()
            .is_some_and(|p| p.pid() == 0 || has_exited(p.pid()))
    }

    fn printed(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

/// Several etcd members started together as one cluster on loopback (or
/// a single member: a cluster of one).
#[derive(Debug)]
pub struct EtcdCluster {
    /// By index; a member's name and ports never change.
    members: Vec<EtcdMember>,
    /// Holds every member's data folder and log.
    dir: PathBuf,
}

impl EtcdCluster {
    /// Starts `members` members as one new cluster (distinct names, free
    /// client and peer ports, a token of its own, fresh data folders) and
    /// waits until it has a leader and every member is healthy.
    pub fn start(members: usize) -> io::Result<EtcdCluster> {
        if members == 0 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "an etcd cluster needs at least one member",
            ));
        }
        if !installed() {
            return Err(io::Error::new(
                io::ErrorKind::NotFound,
                "etcd is not on PATH; install it with `sudo apt-get install -y etcd-server etcd-client` \
                 (Debian/Ubuntu) or run scripts/setup",
            ));
        }
        let mut last = None;
        // The ports are held, but a member can still fail to come up (a
        // port taken before this process reserved it, a loaded machine):
        // start the whole cluster again, on new ports.
        for _attempt in 0..START_ATTEMPTS {
            match Self::spawn(members) {
                Ok(cluster) => return Ok(cluster),
                Err(e) => last = Some(e),
            }
        }
        Err(last.unwrap_or_else(|| io::Error::other("etcd did not start")))
    }

    fn spawn(n: usize) -> io::Result<EtcdCluster> {
        let serial = CLUSTERS.fetch_add(1, Ordering::Relaxed);
        let token = format!("locklab-{}-{serial}", std::process::id());
        let dir =
            std::env::temp_dir().join(format!("locklab-etcd-{}-{serial}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir)?;
        let mut ports = Vec::with_capacity(n);
        for _ in 0..n {
            ports.push((ReservedPort::new()?, ReservedPort::new()?));
        }
        let name = |i: usize| {
            if n == 1 {
                "default".to_string()
            } else {
                format!("member-{i}")
            }
        };
        let initial_cluster = (ports.iter().enumerate())
            .map(|(i, (_, peer))| format!("{}=http://{}", name(i), peer.addr()))
            .collect::<Vec<_>>()
            .join(",");
        let members = (ports.into_iter().enumerate())
            .map(|(i, (client, peer))| {
                let name = name(i);
                let args = member_args(&name, &dir, &client, &peer, &initial_cluster, &token);
                EtcdMember {
                    log: dir.join(format!("{name}.log")),
                    name,
                    id: 0,
                    client,
                    peer,
                    args,
                    process: None,
                }
            })
            .collect();
        // Built before any process starts, so that a failure below drops
        // it: every member started so far is stopped, the folder removed.
        let mut cluster = EtcdCluster { members, dir };
        // All at once: none is healthy before a majority runs.
        for member in &mut cluster.members {
            member.launch()?;
        }
        cluster.wait_healthy()?;
        for member in &mut cluster.members {
            member.id = status(member.addr())?.member;
        }
        Ok(cluster)
    }

    /// Its members, by index.
    pub fn members(&self) -> &[EtcdMember] {
        &self.members
    }

    /// Member `i`, if the cluster has it.
    pub fn member(&self, i: usize) -> Option<&EtcdMember> {
        self.members.get(i)
    }

    fn member_mut(&mut self, i: usize) -> io::Result<&mut EtcdMember> {
        let n = self.members.len();
        self.members.get_mut(i).ok_or_else(|| no_member(i, n))
    }

    /// Kills member `i` (`SIGKILL`) and waits until it is gone; its data
    /// and ports stay for [`restart`](Self::restart).
    pub fn kill(&mut self, i: usize) -> io::Result<()> {
        self.member_mut(i)?.kill();
        Ok(())
    }

    /// Starts a killed member `i` again on its own ports and data, and
    /// waits until it serves; when a majority of the members is running,
    /// also until the cluster is healthy again (with fewer, no member can
    /// be: the cluster has no leader until more come back).
    pub fn restart(&mut self, i: usize) -> io::Result<()> {
        let member = self.member_mut(i)?;
        if member.process.is_some() {
            return Ok(());
        }
        member.launch()?;
        let deadline = Instant::now() + Duration::from_millis(STARTUP_TIMEOUT_MS);
        let member = &self.members[i];
        while !serving(member.addr()) {
            if member.died() || Instant::now() >= deadline {
                return Err(self.not_healthy(&format!(
                    "etcd member {} on {} did not come back within {STARTUP_TIMEOUT_MS} ms",
                    member.name,
                    member.addr()
                )));
            }
            thread::sleep(Duration::from_millis(20));
        }
        if self.quorum_running() {
            self.wait_healthy()?;
        }
        Ok(())
    }

    /// Whether a majority of the members is running.
    fn quorum_running(&self) -> bool {
        let running = self.members.iter().filter(|m| m.running()).count();
        running > self.members.len() / 2
    }

    /// Waits until the cluster has a leader and every running member
    /// reports itself healthy (etcd's `/health`: it knows a leader and can
    /// read through it).
    pub fn wait_healthy(&self) -> io::Result<()> {
        let deadline = Instant::now() + Duration::from_millis(STARTUP_TIMEOUT_MS);
        loop {
            if let Some(dead) = self.members.iter().find(|m| m.died()) {
                return Err(self.not_healthy(&format!(
                    "etcd member {} on {} exited",
                    dead.name,
                    dead.addr()
                )));
            }
            let running: Vec<&EtcdMember> = self.members.iter().filter(|m| m.running()).collect();
            if !running.is_empty() && running.iter().all(|m| healthy(m.addr())) {
                return Ok(());
            }
            if Instant::now() >= deadline {
                return Err(self.not_healthy(&format!(
                    "the etcd cluster was not healthy within {STARTUP_TIMEOUT_MS} ms"
                )));
            }
            thread::sleep(Duration::from_millis(20));
        }
    }

    /// An error saying `what`, with what each member printed.
    fn not_healthy(&self, what: &str) -> io::Error {
        let logs: Vec<String> = (self.members.iter())
            .map(|m| format!("{} printed: {}", m.name, m.printed().trim_end()))
            .collect();
        io::Error::other(format!("{what}; {}", logs.join("; ")))
    }

    /// Which member leads: the one every running member names as its
    /// leader, when that member is running. `None` during an election, or
    /// while the running members do not agree yet (one that has not heard
    /// of a new leader), or none answers.
    pub fn leader(&self) -> Option<usize> {
        let mut agreed = None;
        for member in self.members.iter().filter(|m| m.running()) {
            let seen = status(member.addr()).ok()?.leader;
            if seen == 0 || agreed.is_some_and(|a| a != seen) {
                return None;
            }
            agreed = Some(seen);
        }
        let leader = self.members.iter().position(|m| Some(m.id) == agreed)?;
        self.members[leader].running().then_some(leader)
    }

    /// Waits until [`leader`](Self::leader) names a member, at most
    /// `timeout`.
    pub fn wait_leader(&self, timeout: Duration) -> io::Result<usize> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(leader) = self.leader() {
                return Ok(leader);
            }
            if Instant::now() >= deadline {
                return Err(self.not_healthy(&format!(
                    "the etcd cluster had no leader all its running members agree on within {} ms",
                    timeout.as_millis()
                )));
            }
            thread::sleep(Duration::from_millis(20));
        }
    }

    /// Makes member `to` the leader, and waits until every running member
    /// says so. With no leader (it died), waits for etcd to elect one
    /// first; then, if that is not `to`, moves leadership on. etcd takes a
    /// transfer only from the leader, and only to a running member that
    /// has caught up with its log (it waits for that itself).
    pub fn move_leader(&self, to: usize) -> io::Result<()> {
        let n = self.members.len();
        let target = self.members.get(to).ok_or_else(|| no_member(to, n))?;
        let deadline = Instant::now() + Duration::from_millis(LEADER_TIMEOUT_MS);
        let mut last_refusal = String::new();
        loop {
            if !target.running() {
                return Err(io::Error::other(format!(
                    "cannot move etcd leadership to {}: it is not running",
                    target.name
                )));
            }
            let remaining = deadline.saturating_duration_since(Instant::now());
            let leader = self.wait_leader(remaining)?;
            if leader == to {
                return Ok(());
            }
            let body = format!("{{\"targetID\":\"{}\"}}", target.id);
            let answer = post(
                self.members[leader].addr(),
                "/v3/maintenance/transfer-leadership",
                &body,
            );
            match answer {
                Ok(text) if !text.contains("\"error\"") => {
                    // The old leader has handed over; wait until the
                    // others have heard of it.
                    let settle = Instant::now() + Duration::from_millis(3_000).min(remaining);
                    while self.leader() != Some(to) && Instant::now() < settle {
                        thread::sleep(Duration::from_millis(20));
                    }
                }
                // Leadership changed under the request, or the target had
                // not caught up yet: look again.
                Ok(text) => last_refusal = text,
                Err(e) => last_refusal = e.to_string(),
            }
            if Instant::now() >= deadline {
                return Err(self.not_healthy(&format!(
                    "etcd leadership did not move to {} within {LEADER_TIMEOUT_MS} ms (last answer: {})",
                    target.name,
                    last_refusal.trim()
                )));
            }
            thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for EtcdCluster {
    fn drop(&mut self) {
        for member in &mut self.members {
            member.kill();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The arguments that start member `name` of the cluster `initial_cluster`
/// lists, with its data under `dir`.
fn member_args(
    name: &str,
    dir: &Path,
    client: &ReservedPort,
    peer: &ReservedPort,
    initial_cluster: &str,
    token: &str,
) -> Vec<String> {
    let client = format!("http://{}", client.addr());
    let peer = format!("http://{}", peer.addr());
    let data = dir.join(name).to_string_lossy().into_owned();
    [
        "--name",
        name,
        "--data-dir",
        &data,
        "--listen-client-urls",
        &client,
        "--advertise-client-urls",
        &client,
        "--listen-peer-urls",
        &peer,
        "--initial-advertise-peer-urls",
        &peer,
        "--initial-cluster",
        initial_cluster,
        "--initial-cluster-state",
        "new",
        "--initial-cluster-token",
        token,
        "--log-level",
        "warn",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}

fn no_member(i: usize, n: usize) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidInput,
        format!("the etcd cluster has no member {i} (it has {n}, numbered from 0)"),
    )
}

/// A single-member etcd cluster this crate started.
#[derive(Debug)]
pub struct EtcdServer {
    /// Always exactly one member.
    cluster: EtcdCluster,
}

impl EtcdServer {
    /// Starts a member named `default` on two free loopback ports (client
    /// and peer), with a fresh data folder.
    pub fn start() -> io::Result<EtcdServer> {
        Ok(EtcdServer {
            cluster: EtcdCluster::start(1)?,
        })
    }

    fn member(&self) -> &EtcdMember {
        &self.cluster.members[0]
    }

    /// Kills the member (`SIGKILL`) and waits until it is gone; its data
    /// stays for [`restart`](Self::restart).
    pub fn kill(&mut self) {
        let _ = self.cluster.kill(0);
    }

    /// Starts a killed member again on its own ports and data, and waits
    /// until it is healthy.
    pub fn restart(&mut self) -> io::Result<()> {
        self.cluster.restart(0)
    }

    /// Whether the member's process is running.
    pub fn running(&self) -> bool {
        self.member().running()
    }

    /// The client address, `127.0.0.1:port`.
    pub fn addr(&self) -> SocketAddr {
        self.member().addr()
    }

    /// The member's pid (0 while killed).
    pub fn pid(&self) -> u32 {
        self.member().pid()
    }
}

/// What `etcd --version` says it is, as `etcd 3.4.23`; `None` when etcd
/// cannot be run.
pub fn version() -> Option<String> {
    let out = Command::new(ETCD_BIN).arg("--version").output().ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    let version = text
        .lines()
        .find_map(|line| line.strip_prefix("etcd Version:"))?
        .trim();
    Some(format!("etcd {version}"))
}

/// Whether `etcd` and `etcdctl` can be run.
pub fn installed() -> bool {
    // etcd answers `--version`, etcdctl 3.4 only `version`.
    [(ETCD_BIN, "--version"), (ETCDCTL_BIN, "version")]
        .iter()
        .all(|(bin, arg)| {
            Command::new(bin)
                .arg(arg)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|s| s.success())
        })
}

/// One HTTP/1.0 request (so that the answer is never chunked) to a
/// member's client port: the body of its answer, whatever the status.
fn request(addr: SocketAddr, head: &str, body: &str) -> io::Result<String> {
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_millis(200))?;
    s.set_read_timeout(Some(Duration::from_millis(2_000)))?;
    s.set_write_timeout(Some(Duration::from_millis(2_000)))?;
    let req = format!(
        "{head} HTTP/1.0\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\n\r\n{body}",
        body.len()
    );
    s.write_all(req.as_bytes())?;
    let mut answer = String::new();
    s.read_to_string(&mut answer)?;
    match answer.split_once("\r\n\r\n") {
        Some((_, body)) => Ok(body.to_string()),
        None => Err(io::Error::other(format!(
            "etcd on {addr} answered no HTTP: {answer:?}"
        ))),
    }
}

fn post(addr: SocketAddr, path: &str, body: &str) -> io::Result<String> {
    request(addr, &format!("POST {path}"), body)
}

/// Whether the member at `addr` answers `GET /health` with health true.
fn healthy(addr: SocketAddr) -> bool {
    request(addr, "GET /health", "").is_ok_and(|body| body.contains("\"health\":\"true\""))
}

/// Whether the member at `addr` serves its client port (healthy or not:
/// `/version` needs no leader).
fn serving(addr: SocketAddr) -> bool {
    request(addr, "GET /version", "").is_ok_and(|body| body.contains("etcdserver"))
}

/// What a member says of itself.
struct Status {
    /// Its own member ID.
    member: u64,
    /// The leader it knows (0: none).
    leader: u64,
}

/// `Maintenance.Status` of the member at `addr`, through its JSON gateway
/// (which writes 64-bit numbers as strings, and leaves out a zero).
fn status(addr: SocketAddr) -> io::Result<Status> {
    let body = post(addr, "/v3/maintenance/status", "{}")?;
    let member = json_u64(&body, "member_id").ok_or_else(|| {
        io::Error::other(format!(
            "etcd on {addr} answered a status without its member ID: {body}"
        ))
    })?;
    Ok(Status {
        member,
        leader: json_u64(&body, "leader").unwrap_or(0),
    })
}

/// The first `"field":"digits"` (or `"field":digits`) of a JSON text.
/// The status answer names each field once, and pulling in a JSON parser
/// for two numbers would give this crate its first dependency beyond
/// sockets.
fn json_u64(json: &str, field: &str) -> Option<u64> {
    let key = format!("\"{field}\":");
    let rest = json[json.find(&key)? + key.len()..].trim_start();
    let rest = rest.strip_prefix('"').unwrap_or(rest);
    let end = rest
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(rest.len());
    rest[..end].parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One request to the member's JSON gateway (`/v3/kv/...`), the body
    /// of its answer.
    fn gateway(addr: SocketAddr, path: &str, body: &str) -> String {
        post(addr, path, body).expect("the gateway answers")
    }

    #[test]
    fn json_u64_reads_strings_and_numbers() {
        let status =
            r#"{"header":{"member_id":"4685415659717997786"},"leader":"11476816422752802555"}"#;
        assert_eq!(json_u64(status, "member_id"), Some(4685415659717997786));
        assert_eq!(json_u64(status, "leader"), Some(11476816422752802555));
        assert_eq!(json_u64(r#"{"leader":12}"#, "leader"), Some(12));
        assert_eq!(json_u64(r#"{"version":"3.4.23"}"#, "leader"), None);
    }

    #[test]
    fn a_cluster_of_no_members_is_refused() {
        let err = EtcdCluster::start(0).expect_err("no members");
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
    }

    #[test]
    fn a_killed_and_restarted_member_keeps_its_acknowledged_writes_and_port() {
        let mut member = EtcdServer::start().expect("etcd (scripts/setup installs it)");
        let addr = member.addr();
        // "a2V5" is "key", "dmFsdWU=" is "value", base64 as the gateway wants.
        let put = gateway(addr, "/v3/kv/put", r#"{"key":"a2V5","value":"dmFsdWU="}"#);
        assert!(put.contains("\"revision\""), "{put}");
        let pid = member.pid();
        member.kill();
        assert!(
            !member.running() && has_exited(pid),
            "the member still runs"
        );
        assert!(TcpStream::connect(addr).is_err(), "a killed member answers");
        member.restart().expect("restarted");
        assert_eq!(member.addr(), addr, "the same port");
        let got = gateway(addr, "/v3/kv/range", r#"{"key":"a2V5"}"#);
        assert!(got.contains("dmFsdWU="), "the write was lost: {got}");
    }
}
