//! Real `etcd` members for tests and benchmarks: one member on loopback,
//! its data in a fresh temporary folder, stopped (by pid, under the same
//! watcher as every server this crate starts) and its folder removed when
//! dropped.

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
    process: Watched,
    client_port: u16,
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
        let client = format!("http://127.0.0.1:{client_port}");
        let peer = format!("http://127.0.0.1:{peer_port}");
        let cluster = format!("default={peer}");
        let dir = data_dir.join("member").to_string_lossy().into_owned();
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
        let log = std::fs::File::create(data_dir.join("etcd.log"))?;
        let process = Watched::spawn(ETCD_BIN, &args, log)?;
        let mut server = EtcdServer {
            process,
            client_port,
            data_dir,
        };
        server.wait_healthy()?;
        Ok(server)
    }

    fn wait_healthy(&mut self) -> io::Result<()> {
        let deadline = Instant::now() + Duration::from_millis(STARTUP_TIMEOUT_MS);
        while Instant::now() < deadline {
            if self.process.pid() == 0 || has_exited(self.process.pid()) {
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

    /// The member's pid.
    pub fn pid(&self) -> u32 {
        self.process.pid()
    }
}

impl Drop for EtcdServer {
    fn drop(&mut self) {
        self.process.stop();
        let _ = std::fs::remove_dir_all(&self.data_dir);
    }
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
