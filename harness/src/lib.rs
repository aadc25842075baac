//! Real `redis-server` processes (and, in [`etcd`], etcd members, in
//! [`zookeeper`], ZooKeeper servers) for tests and benchmarks.
//!
//! Every server this crate starts listens on `127.0.0.1` only, on a free
//! port, with persistence off, and is stopped (by its pid, never by name)
//! when its [`RedisServer`] is dropped, which also happens while a test
//! panics and unwinds.
//!
//! A server must not outlive the process that started it even when that
//! process gets no chance to drop it (killed with `SIGKILL`, or a signal it
//! does not handle). Each `redis-server` is therefore started by a small
//! `sh` watcher (see [`WATCHER`]) that holds the read end of a pipe whose
//! only write end this process holds: when this process ends, however it
//! ends, the kernel closes that end, the watcher reads end-of-file and
//! kills its server at once. (`prctl(PR_SET_PDEATHSIG)` would need
//! `unsafe` code, and fires when the spawning *thread* ends, not the
//! process.) Dropping a [`RedisServer`] closes the pipe the same way, then
//! waits until the watcher has reaped its server.
//!
//! ```no_run
//! let server = harness::RedisServer::start().expect("redis-server");
//! println!("talk to {}", server.url());
//! // dropped here: the process is killed and reaped
//! ```

pub mod atomic;
pub mod etcd;
pub mod mariadb;
pub mod postgres;
pub mod procfs;
mod reserved_port;
mod served;
pub mod zookeeper;

pub use reserved_port::ReservedPort;

use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

/// How long a freshly started server may take to answer `PING`.
const STARTUP_TIMEOUT_MS: u64 = 10_000;

/// How long a watcher may take to kill and reap its server once told to.
const STOP_TIMEOUT_MS: u64 = 5_000;

/// The server binary started when none is named.
pub const DEFAULT_BIN: &str = "redis-server";

/// The watcher each `redis-server` runs under (`sh -c WATCHER watcher
/// BIN ARGS...`): it starts the server `BIN` (`redis-server`, or another
/// binary speaking its protocol and options, such as `valkey-server`) in
/// the background with `ARGS` (its
/// output into the watcher's standard error, the log file), prints the
/// server's pid, then blocks reading its standard input, a pipe from the
/// process that started it. End-of-file (that process dropped the server,
/// exited or was killed) or `SIGTERM`/`SIGHUP` make it kill the server
/// with `SIGKILL` and reap it. The server stays the watcher's child, so its
/// pid cannot be reused by another process before the watcher kills it.
/// `SIGINT` is ignored: Ctrl-C in a terminal reaches the whole process
/// group, and stopping the servers is then the starting process's job (a
/// background job of `sh` ignores `SIGINT` already).
pub const WATCHER: &str = r#"trap '' INT
bin=$1
shift
"$bin" "$@" </dev/null >&2 &
server=$!
trap 'kill -9 "$server" 2>/dev/null; exit 143' TERM HUP
echo "$server"
read -r _ignored
kill -9 "$server" 2>/dev/null
wait "$server" 2>/dev/null
exit 0
"#;

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
    /// The server, under its watcher.
    process: Watched,
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
        Self::start_bin(DEFAULT_BIN, extra)
    }

    /// Starts one server of binary `bin` (a path, or a name on `PATH`)
    /// with extra arguments, as [`RedisServer::start_with_args`] does.
    pub fn start_bin(bin: &str, extra: &[&str]) -> Result<RedisServer, Error> {
        if !installed_bin(bin) {
            return Err(Error::NotInstalled);
        }
        // A port that is free now may be taken before the server binds it;
        // retry a few times with a new port rather than fail the test.
        let mut last = None;
        for _attempt in 0..5 {
            let port = free_port()?;
            match Self::spawn_on(bin, port, extra) {
                Ok(server) => return Ok(server),
                Err(e) => last = Some(e),
            }
        }
        Err(last.unwrap_or(Error::NotInstalled))
    }

    /// Starts one server on a given loopback port (a node restarted with
    /// the same data directory and config must come back where its peers
    /// and proxies look for it). One attempt: the port was this server's.
    pub fn start_on(port: u16, extra: &[&str]) -> Result<RedisServer, Error> {
        Self::start_bin_on(DEFAULT_BIN, port, extra)
    }

    /// [`RedisServer::start_on`] for binary `bin`.
    pub fn start_bin_on(bin: &str, port: u16, extra: &[&str]) -> Result<RedisServer, Error> {
        if !installed_bin(bin) {
            return Err(Error::NotInstalled);
        }
        Self::spawn_on(bin, port, extra)
    }

    fn spawn_on(bin: &str, port: u16, extra: &[&str]) -> Result<RedisServer, Error> {
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
        let process = Watched::spawn(bin, &args, log)?;
        let mut server = RedisServer { process, port };
        if server.process.pid == 0 {
            return Err(server.not_ready());
        }
        server.wait_ready()?;
        Ok(server)
    }

    fn wait_ready(&mut self) -> Result<(), Error> {
        let deadline = Instant::now() + Duration::from_millis(STARTUP_TIMEOUT_MS);
        while Instant::now() < deadline {
            // A server that could not start (its port was taken) has
            // exited: a zombie, as its watcher waits for end-of-file.
            if has_exited(self.process.pid) {
                return Err(self.not_ready());
            }
            // Ready once the server answering on the port is this one: a
            // PING alone would also be answered by another process's
            // server that took the port first (ours then exits, unable to
            // bind), and the caller would talk to a stranger.
            if answering_pid(self.addr()).is_ok_and(|pid| pid == self.process.pid) {
                return Ok(());
            }
            thread::sleep(Duration::from_millis(10));
        }
        Err(self.not_ready())
    }

    fn not_ready(&mut self) -> Error {
        self.stop_process();
        let output = std::fs::read_to_string(log_path(self.port)).unwrap_or_default();
        self.remove_files();
        Error::NotReady {
            port: self.port,
            output,
        }
    }

    /// The loopback port it listens on.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The server's process id (to pin it to a CPU, or to stop it by pid).
    pub fn pid(&self) -> u32 {
        self.process.pid
    }

    /// The process id of the `sh` watcher that stops the server when this
    /// process ends (see [`WATCHER`]).
    pub fn watcher_pid(&self) -> u32 {
        self.process.watcher.id()
    }

    /// `127.0.0.1:port`.
    pub fn addr(&self) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], self.port))
    }

    /// `redis://127.0.0.1:port/`.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }

    /// Stops the server now: its port is free again, for anyone to take.
    pub fn stop(mut self) {
        self.kill();
    }

    /// Freezes the server where it stands (`SIGSTOP`): it answers nothing
    /// and connections to it wait, like a machine cut off, while it keeps
    /// its port, so no other server (another test's, started at the same
    /// moment) can take the port and answer in its place, as it could
    /// after [`RedisServer::stop`]. Dropping the server kills it as usual.
    pub fn freeze(&self) -> Result<(), Error> {
        let status = Command::new("kill")
            .args(["-STOP", &self.process.pid.to_string()])
            .stderr(Stdio::null())
            .status()?;
        if status.success() {
            Ok(())
        } else {
            Err(Error::Io(io::Error::other(format!(
                "kill -STOP {} failed: {status}",
                self.process.pid
            ))))
        }
    }

    fn kill(&mut self) {
        self.stop_process();
        self.remove_files();
    }

    fn stop_process(&mut self) {
        self.process.stop();
    }

    fn remove_files(&self) {
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
    installed_bin(DEFAULT_BIN)
}

/// Whether server binary `bin` (a path, or a name on `PATH`) can be run.
pub fn installed_bin(bin: &str) -> bool {
    Command::new(bin)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map(|s| s.success())
        .unwrap_or(false)
}

/// The version `redis-server --version` reports, e.g. `7.0.15`.
pub fn version() -> Option<String> {
    version_of(DEFAULT_BIN)
}

/// The version server binary `bin` reports (`Redis server v=7.0.15 ...`,
/// `Valkey server v=8.1.8 ...`): the word after `v=`.
pub fn version_of(bin: &str) -> Option<String> {
    let out = Command::new(bin).arg("--version").output().ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    text.split_whitespace()
        .find_map(|w| w.strip_prefix("v="))
        .map(str::to_string)
}

/// Whether process `pid` has ended: gone, or a zombie waiting to be
/// reaped (its state in `/proc/<pid>/stat` is `Z` or `X`).
pub fn has_exited(pid: u32) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return true;
    };
    // The command name may contain spaces and parentheses: the state is
    // the first field after the last ')'.
    let state = stat
        .rfind(')')
        .and_then(|i| stat[i + 1..].split_whitespace().next());
    matches!(state, Some("Z" | "X") | None)
}

fn log_path(port: u16) -> std::path::PathBuf {
    std::env::temp_dir().join(format!("locklab-redis-{port}.log"))
}

fn free_port() -> io::Result<u16> {
    let listener = TcpListener::bind("127.0.0.1:0")?;
    Ok(listener.local_addr()?.port())
}

/// One `PING` over a plain socket: whether anything answers `+PONG` at
/// `addr` (not which server: see `answering_pid`).
pub fn ping(addr: SocketAddr) -> io::Result<()> {
    let mut stream = TcpStream::connect_timeout(&addr, Duration::from_millis(200))?;
    stream.set_read_timeout(Some(Duration::from_millis(500)))?;
    stream.write_all(b"*1\r\n$4\r\nPING\r\n")?;
    let mut buf = [0u8; 64];
    let n = stream.read(&mut buf)?;
    if buf[..n].starts_with(b"+PONG") {
        Ok(())
    } else {
        Err(io::Error::other(format!(
            "answered {:?}",
            String::from_utf8_lossy(&buf[..n])
        )))
    }
}

/// The process id of the server answering at `addr` (`INFO server`'s
/// `process_id`, which redis-server and Valkey both report).
fn answering_pid(addr: SocketAddr) -> io::Result<u32> {
    let mut stream = TcpStream::connect_timeout(&addr, Duration::from_millis(200))?;
    stream.set_read_timeout(Some(Duration::from_millis(500)))?;
    stream.write_all(b"*2\r\n$4\r\nINFO\r\n$6\r\nserver\r\n")?;
    let mut reply = Vec::new();
    let mut chunk = [0u8; 4096];
    // The section is a few hundred bytes; read until the field's line is
    // whole, or give up at 64 KiB.
    while reply.len() < 64 * 1024 {
        let n = stream.read(&mut chunk)?;
        if n == 0 {
            break;
        }
        reply.extend_from_slice(&chunk[..n]);
        let text = String::from_utf8_lossy(&reply);
        if let Some(rest) = text.split("process_id:").nth(1)
            && let Some((pid, _)) = rest.split_once("\r\n")
        {
            return pid
                .trim()
                .parse()
                .map_err(|_| io::Error::other(format!("process_id {pid:?} is not a number")));
        }
    }
    Err(io::Error::other("no process_id in INFO server"))
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
    fn a_started_server_is_known_by_its_own_pid_on_its_port() {
        let server = RedisServer::start().expect("start redis-server");
        assert_eq!(answering_pid(server.addr()).expect("INFO"), server.pid());
    }

    #[test]
    fn a_server_whose_port_another_server_holds_is_not_taken_for_ready() {
        let first = RedisServer::start().expect("start redis-server");
        let second = RedisServer::start_on(first.addr().port(), &[]);
        assert!(
            second.is_err(),
            "the first server's answer was taken for the second's"
        );
        assert_eq!(answering_pid(first.addr()).expect("INFO"), first.pid());
    }

    #[test]
    fn dropping_a_server_reaps_both_it_and_its_watcher() {
        let server = RedisServer::start().expect("start redis-server");
        let (pid, watcher) = (server.pid(), server.watcher_pid());
        assert_ne!(pid, watcher, "the pid is the server's own");
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap();
        assert!(String::from_utf8_lossy(&cmdline).contains("redis-server"));
        drop(server);
        assert!(has_exited(pid) && has_exited(watcher));
    }

    #[test]
    fn a_server_whose_lifeline_closes_is_killed_by_its_watcher() {
        // What happens when the starting process dies: the watcher sees
        // end-of-file on its standard input.
        let mut server = RedisServer::start().expect("start redis-server");
        let (addr, pid) = (server.addr(), server.pid());
        drop(server.process.lifeline.take());
        let deadline = Instant::now() + Duration::from_secs(5);
        while !has_exited(pid) && Instant::now() < deadline {
            thread::sleep(Duration::from_millis(5));
        }
        assert!(has_exited(pid), "redis-server {pid} outlived its lifeline");
        assert!(ping(addr).is_err());
    }

    #[test]
    fn a_server_that_cannot_start_fails_fast_with_its_output() {
        let started = Instant::now();
        let e = RedisServer::start_with_args(&["--no-such-option", "yes"])
            .expect_err("redis-server refuses an unknown option");
        assert!(
            started.elapsed() < Duration::from_millis(STARTUP_TIMEOUT_MS),
            "waited for the whole start-up timeout"
        );
        assert!(e.to_string().contains("no-such-option"), "{e}");
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

/// A server process started under the `sh` watcher ([`WATCHER`]): it ends
/// when this process ends, however that happens.
#[derive(Debug)]
pub struct Watched {
    /// The `sh` watcher whose child the server is.
    watcher: Child,
    /// The write end of the watcher's standard input: closing it (here, or
    /// by this process's end) stops the server.
    lifeline: Option<ChildStdin>,
    /// The server's own pid, as the watcher printed it (0 if it printed
    /// none).
    pid: u32,
}

impl Watched {
    /// Starts `bin` with `args` under a watcher, its output into `log`.
    pub fn spawn(bin: &str, args: &[&str], log: std::fs::File) -> io::Result<Watched> {
        let mut watcher = Command::new("sh")
            .arg("-c")
            .arg(WATCHER)
            .arg("locklab-watcher")
            .arg(bin)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(log)
            .spawn()?;
        let lifeline = watcher.stdin.take();
        // The watcher's first line is the server's pid; nothing else is
        // ever written to that pipe.
        let pid = watcher
            .stdout
            .take()
            .and_then(|out| {
                let mut line = String::new();
                BufReader::new(out).read_line(&mut line).ok()?;
                line.trim().parse::<u32>().ok()
            })
            .unwrap_or(0);
        Ok(Watched {
            watcher,
            lifeline,
            pid,
        })
    }

    /// The server's pid (0 if the watcher could not start it).
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// The watcher's pid.
    pub fn watcher_pid(&self) -> u32 {
        self.watcher.id()
    }

    /// Closes the lifeline, so the watcher kills and reaps the server, and
    /// waits for the watcher. Should the watcher not end in time, it is
    /// killed, and the server by its pid (still ours: unreaped, it keeps
    /// its pid).
    pub fn stop(&mut self) {
        drop(self.lifeline.take());
        let deadline = Instant::now() + Duration::from_millis(STOP_TIMEOUT_MS);
        let ended = loop {
            match self.watcher.try_wait() {
                Ok(Some(_)) | Err(_) => break true,
                Ok(None) if Instant::now() >= deadline => break false,
                Ok(None) => thread::sleep(Duration::from_millis(2)),
            }
        };
        if !ended {
            let _ = self.watcher.kill();
            let _ = self.watcher.wait();
            if self.pid != 0 && !has_exited(self.pid) {
                let _ = Command::new("kill")
                    .args(["-9", &self.pid.to_string()])
                    .stderr(Stdio::null())
                    .status();
            }
        }
    }
}
