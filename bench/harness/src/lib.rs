//! Real `redis-server` processes for tests and benchmarks.
//!
//! Every server this crate starts listens on `127.0.0.1` only, on a free
//! port, with persistence off, and is stopped (by its pid, never by name)
//! when its [`RedisServer`] is dropped, which also happens while a test
//! panics and unwinds.
//!
//! ```no_run
//! let server = harness::RedisServer::start().expect("redis-server");
//! println!("talk to {}", server.url());
//! // dropped here: the process is killed and reaped
//! ```

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

/// How long a freshly started server may take to answer `PING`.
const STARTUP_TIMEOUT_MS: u64 = 10_000;

/// Why a server could not be started.
#[derive(Debug)]
pub enum Error {
    /// `redis-server` is not on `PATH`.
    NotInstalled,
    /// Spawning or talking to the process failed.
    Io(io::Error),
    /// The process started but never answered `PING`.
    NotReady {
        /// The port it was told to listen on.
        port: u16,
        /// What it printed, to show why.
        output: String,
    },
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Error::NotInstalled => write!(
                f,
                "redis-server is not on PATH; install it with `sudo apt-get install -y redis-server` \
                 (Debian/Ubuntu) or run scripts/test, which installs it"
            ),
            Error::Io(e) => write!(f, "could not run redis-server: {e}"),
            Error::NotReady { port, output } => write!(
                f,
                "redis-server on 127.0.0.1:{port} did not answer PING within {STARTUP_TIMEOUT_MS} ms; it printed: {output}"
            ),
        }
    }
}

impl std::error::Error for Error {}

impl From<io::Error> for Error {
    fn from(e: io::Error) -> Self {
        Error::Io(e)
    }
}

/// A `redis-server` process this crate started; killed when dropped.
#[derive(Debug)]
pub struct RedisServer {
    child: Child,
    port: u16,
}

impl RedisServer {
    /// Starts one server on a free loopback port, persistence off.
    pub fn start() -> Result<RedisServer, Error> {
        Self::start_with_args(&[])
    }

    /// Starts `n` independent servers (Redlock needs five).
    pub fn start_many(n: usize) -> Result<Vec<RedisServer>, Error> {
        (0..n).map(|_| Self::start()).collect()
    }

    /// Starts one server with extra `redis-server` arguments such as
    /// `["--appendonly", "yes"]` (they come after the defaults, so they win).
    pub fn start_with_args(extra: &[&str]) -> Result<RedisServer, Error> {
        if !installed() {
            return Err(Error::NotInstalled);
        }
        // A port that is free now may be taken before the server binds it;
        // retry a few times with a new port rather than fail the test.
        let mut last = None;
        for _attempt in 0..5 {
            let port = free_port()?;
            match Self::spawn_on(port, extra) {
                Ok(server) => return Ok(server),
                Err(e) => last = Some(e),
            }
        }
        Err(last.unwrap_or(Error::NotInstalled))
    }

    fn spawn_on(port: u16, extra: &[&str]) -> Result<RedisServer, Error> {
        let port_arg = port.to_string();
        // Persistence is off; the file name is only set so that a stray
        // SAVE cannot clobber another server's file.
        let dbfile = format!("locklab-{port}.rdb");
        let mut args: Vec<&str> = vec![
            "--port",
            &port_arg,
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
            "--daemonize",
            "no",
            "--protected-mode",
            "yes",
            "--dir",
            "/tmp",
            "--dbfilename",
            &dbfile,
            "--loglevel",
            "warning",
        ];
        args.extend_from_slice(extra);
        // Output goes to a file, not a pipe: a pipe nobody reads would
        // block a long-running server once it fills.
        let log = std::fs::File::create(log_path(port))?;
        let child = Command::new("redis-server")
            .args(&args)
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            .spawn()?;
        let mut server = RedisServer { child, port };
        server.wait_ready()?;
        Ok(server)
    }

    fn wait_ready(&mut self) -> Result<(), Error> {
        let deadline = Instant::now() + Duration::from_millis(STARTUP_TIMEOUT_MS);
        while Instant::now() < deadline {
            if let Ok(Some(_status)) = self.child.try_wait() {
                return Err(self.not_ready());
            }
            if ping(self.addr()).is_ok() {
                return Ok(());
            }
            thread::sleep(Duration::from_millis(10));
        }
        Err(self.not_ready())
    }

    fn not_ready(&mut self) -> Error {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let output = std::fs::read_to_string(log_path(self.port)).unwrap_or_default();
        Error::NotReady {
            port: self.port,
            output,
        }
    }

    /// The loopback port it listens on.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The process id (to pin it to a CPU, or to stop it by pid).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// `127.0.0.1:port`.
    pub fn addr(&self) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], self.port))
    }

    /// `redis://127.0.0.1:port/`.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }

    /// Stops the server now (Redlock tests stop some masters on purpose).
    pub fn stop(mut self) {
        self.kill();
    }

    fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_file(format!("/tmp/locklab-{}.rdb", self.port));
        let _ = std::fs::remove_file(log_path(self.port));
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Whether `redis-server` can be run.
pub fn installed() -> bool {
    Command::new("redis-server")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map(|s| s.success())
        .unwrap_or(false)
}

/// The version `redis-server --version` reports, e.g. `7.0.15`.
pub fn version() -> Option<String> {
    let out = Command::new("redis-server")
        .arg("--version")
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    text.split_whitespace()
        .find_map(|w| w.strip_prefix("v="))
        .map(str::to_string)
}

fn log_path(port: u16) -> std::path::PathBuf {
    std::env::temp_dir().join(format!("locklab-redis-{port}.log"))
}

fn free_port() -> io::Result<u16> {
    let listener = TcpListener::bind("127.0.0.1:0")?;
    Ok(listener.local_addr()?.port())
}

/// One `PING` over a plain socket: used to wait for readiness without
/// pulling an async client into this crate.
fn ping(addr: SocketAddr) -> io::Result<()> {
    let mut stream = TcpStream::connect_timeout(&addr, Duration::from_millis(200))?;
    stream.set_read_timeout(Some(Duration::from_millis(500)))?;
    stream.write_all(b"*1\r\n$4\r\nPING\r\n")?;
    let mut buf = [0u8; 64];
    let n = stream.read(&mut buf)?;
    if buf[..n].starts_with(b"+PONG") {
        Ok(())
    } else {
        Err(io::Error::other("not ready"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_started_server_answers_ping_and_is_gone_after_drop() {
        let server = RedisServer::start().expect("start redis-server");
        let addr = server.addr();
        ping(addr).expect("ping");
        drop(server);
        assert!(ping(addr).is_err(), "server still answers after drop");
    }

    #[test]
    fn start_many_gives_distinct_ports() {
        let servers = RedisServer::start_many(3).expect("start");
        let mut ports: Vec<u16> = servers.iter().map(|s| s.port()).collect();
        ports.sort_unstable();
        ports.dedup();
        assert_eq!(ports.len(), 3);
    }
}
