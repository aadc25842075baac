//! Real `etcd` members for tests, real mode and benchmarks: one member on
//! loopback, its data in a fresh temporary folder, stopped (by pid, under
//! the same watcher as every server this crate starts) and its folder
//! removed when dropped. A member can be killed (`SIGKILL`, by its
//! watcher) and started again on the same ports and data, as a crashed
//! member restarts: etcd syncs every write to its log before it answers,
//! so the restarted member has every write it acknowledged.

use crate::{Watched, has_exited};
use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

/// How long a fresh member may take to report itself healthy.
const STARTUP_TIMEOUT_MS: u64 = 20_000;

/// The etcd binary.
pub const ETCD_BIN: &str = "etcd";

/// The etcd client.
pub const ETCDCTL_BIN: &str = "etcdctl";

/// A single-member etcd cluster this crate started.
#[derive(Debug)]
pub struct EtcdServer {
    /// The running process; `None` while killed.
    process: Option<Watched>,
    client_port: u16,
    peer_port: u16,
    data_dir: PathBuf,
}

impl EtcdServer {
    /// Starts a member named `default` on two free loopback ports (client
    /// and peer), with a fresh data folder.
    pub fn start() -> io::Result<EtcdServer> {
        if !installed() {
            return Err(io::Error::new(
                io::ErrorKind::NotFound,
                "etcd is not on PATH; install it with `sudo apt-get install -y etcd-server etcd-client` \
                 (Debian/Ubuntu) or run scripts/setup",
            ));
        }
        let mut last = None;
        // A port free now may be taken before etcd binds it: try again.
        for _attempt in 0..5 {
            match Self::spawn() {
                Ok(s) => return Ok(s),
                Err(e) => last = Some(e),
            }
        }
        Err(last.unwrap_or_else(|| io::Error::other("etcd did not start")))
    }

    fn spawn() -> io::Result<EtcdServer> {
        let client_port = free_port()?;
        let peer_port = free_port()?;
        let data_dir = std::env::temp_dir().join(format!("locklab-etcd-{client_port}"));
        let _ = std::fs::remove_dir_all(&data_dir);
        std::fs::create_dir_all(&data_dir)?;
        let mut server = EtcdServer {
            process: None,
            client_port,
            peer_port,
            data_dir,
        };
        server.launch()?;
        Ok(server)
    }

    /// Starts the process on the member's ports and data, and waits until
    /// it reports itself healthy.
    fn launch(&mut self) -> io::Result<()> {
        let client = format!("http://127.0.0.1:{}", self.client_port);
        let peer = format!("http://127.0.0.1:{}", self.peer_port);
        let cluster = format!("default={peer}");
        let dir = self.data_dir.join("member").to_string_lossy().into_owned();
        let args = [
            "--name",
            "default",
            "--data-dir",
            &dir,
            "--listen-client-urls",
            &client,
            "--advertise-client-urls",
            &client,
            "--listen-peer-urls",
            &peer,
            "--initial-advertise-peer-urls",
            &peer,
            "--initial-cluster",
            &cluster,
            "--log-level",
            "warn",
        ];
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.data_dir.join("etcd.log"))?;
        self.process = Some(Watched::spawn(ETCD_BIN, &args, log)?);
        self.wait_healthy()
    }

    /// Kills the member (`SIGKILL`) and waits until it is gone; its data
    /// stays for [`restart`](Self::restart).
    pub fn kill(&mut self) {
        if let Some(mut process) = self.process.take() {
            process.stop();
        }
    }

    /// Starts a killed member again on its own ports and data.
    pub fn restart(&mut self) -> io::Result<()> {
        if self.process.is_some() {
            return Ok(());
        }
        self.launch()
    }

    /// Whether the member's process is running.
    pub fn running(&self) -> bool {
        self.process.as_ref().is_some_and(|p| !has_exited(p.pid()))
    }

    fn wait_healthy(&mut self) -> io::Result<()> {
        let deadline = Instant::now() + Duration::from_millis(STARTUP_TIMEOUT_MS);
        while Instant::now() < deadline {
            let pid = self.pid();
            if pid == 0 || has_exited(pid) {
                break;
            }
            if healthy(self.addr()) {
                return Ok(());
            }
            thread::sleep(Duration::from_millis(20));
        }
        let log = std::fs::read_to_string(self.data_dir.join("etcd.log")).unwrap_or_default();
        Err(io::Error::other(format!(
            "etcd on 127.0.0.1:{} did not become healthy within {STARTUP_TIMEOUT_MS} ms; it printed: {log}",
            self.client_port
        )))
    }

    /// The client address, `127.0.0.1:port`.
    pub fn addr(&self) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], self.client_port))
    }

    /// The member's pid (0 while killed).
    pub fn pid(&self) -> u32 {
        self.process.as_ref().map_or(0, Watched::pid)
    }
}

impl Drop for EtcdServer {
    fn drop(&mut self) {
        self.kill();
        let _ = std::fs::remove_dir_all(&self.data_dir);
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

/// Whether the member at `addr` answers `GET /health` with health true.
fn healthy(addr: SocketAddr) -> bool {
    let Ok(mut s) = TcpStream::connect_timeout(&addr, Duration::from_millis(200)) else {
        return false;
    };
    let _ = s.set_read_timeout(Some(Duration::from_millis(1000)));
    let req = format!("GET /health HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    if s.write_all(req.as_bytes()).is_err() {
        return false;
    }
    let mut body = String::new();
    let _ = s.read_to_string(&mut body);
    body.contains("\"health\":\"true\"")
}

fn free_port() -> io::Result<u16> {
    let listener = TcpListener::bind("127.0.0.1:0")?;
    Ok(listener.local_addr()?.port())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One request to the member's JSON gateway (`/v3/kv/...`), the body
    /// of its answer.
    fn gateway(addr: SocketAddr, path: &str, body: &str) -> String {
        let mut s = TcpStream::connect(addr).expect("connect");
        s.set_read_timeout(Some(Duration::from_secs(5)))
            .expect("timeout");
        let req = format!(
            "POST {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
             Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        );
        s.write_all(req.as_bytes()).expect("send");
        let mut answer = String::new();
        let _ = s.read_to_string(&mut answer);
        answer
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
