//! `locklab sim-server`, the built binary on a real port: a script that
//! loops for ever makes other clients `BUSY` past the threshold, and
//! Ctrl-C (SIGINT) or SIGTERM still stops the server, cleanly; and the
//! other services answer their own command-line clients (`etcdctl`,
//! `psql`, `mariadb`).

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::thread::sleep;
use std::time::{Duration, Instant};

const BUSY: &[u8] =
    b"-BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.\r\n";

/// A `locklab sim-server` process, killed (by its pid) if a test fails.
struct Server {
    child: Child,
    addr: SocketAddr,
    _port: harness::ReservedPort,
}

impl Server {
    /// Spawns `locklab sim-server` with `args` on a free loopback port (not
    /// yet answering).
    fn spawn(args: &[&str]) -> Server {
        // Held until the server is dropped, so that no other test's server
        // can take the port first and answer in this one's place.
        let reserved = harness::ReservedPort::new().expect("a free port");
        let port = reserved.port();
        let child = Command::new(env!("CARGO_BIN_EXE_locklab"))
            .args(["sim-server", "--port", &port.to_string()])
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn locklab sim-server");
        Server {
            child,
            addr: SocketAddr::from(([127, 0, 0, 1], port)),
            _port: reserved,
        }
    }

    /// Starts a Redis node and waits until it answers.
    fn start(busy_reply_threshold_ms: u64) -> Server {
        let threshold = busy_reply_threshold_ms.to_string();
        let server = Server::spawn(&["--busy-reply-threshold-ms", &threshold]);
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Ok(mut c) = server.connect()
                && exchange(&mut c, b"PING\r\n") == b"+PONG\r\n"
            {
                return server;
            }
            assert!(Instant::now() < deadline, "sim-server never answered");
            sleep(Duration::from_millis(20));
        }
    }

    fn connect(&self) -> std::io::Result<TcpStream> {
        let c = TcpStream::connect_timeout(&self.addr, Duration::from_secs(1))?;
        c.set_read_timeout(Some(Duration::from_secs(3)))?;
        Ok(c)
    }

    /// Sends `signal` (e.g. `-INT`) with `kill`, and waits at most five
    /// seconds for the process to exit.
    fn signal_and_wait(&mut self, signal: &str) -> Option<ExitStatus> {
        let sent = Command::new("kill")
            .args([signal, &self.child.id().to_string()])
            .status()
            .expect("run kill");
        assert!(sent.success(), "kill {signal} failed");
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if let Some(status) = self.child.try_wait().expect("try_wait") {
                return Some(status);
            }
            sleep(Duration::from_millis(10));
        }
        None
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Writes `request` and reads what comes back in one read (a short reply).
fn exchange(c: &mut TcpStream, request: &[u8]) -> Vec<u8> {
    if c.write_all(request).is_err() {
        return Vec::new();
    }
    let mut buf = [0u8; 512];
    match c.read(&mut buf) {
        Ok(n) => buf[..n].to_vec(),
        Err(_) => Vec::new(),
    }
}

/// Starts a server, loops a script on it, checks another client is told
/// `BUSY`, then sends `signal` and returns how the process ended and what
/// the script's caller read.
fn stop_mid_script(signal: &str) -> (Option<ExitStatus>, Vec<u8>) {
    let mut server = Server::start(100);
    let mut caller = server.connect().expect("connect");
    caller
        .write_all(b"EVAL \"while true do end\" 0\r\n")
        .expect("send EVAL");
    sleep(Duration::from_millis(150));
    let mut other = server.connect().expect("connect");
    assert_eq!(exchange(&mut other, b"PING\r\n"), BUSY);
    let status = server.signal_and_wait(signal);
    let mut rest = Vec::new();
    let _ = caller.read_to_end(&mut rest);
    (status, rest)
}

#[test]
fn sim_server_exits_cleanly_on_sigint_while_a_script_loops() {
    let (status, caller_read) = stop_mid_script("-INT");
    let status = status.expect("sim-server still running 5 s after SIGINT");
    assert!(status.success(), "{status}");
    // As when Redis exits mid-script: the connection closes, no reply.
    assert!(caller_read.is_empty(), "{caller_read:?}");
}

#[test]
fn sim_server_exits_cleanly_on_sigterm_while_a_script_loops() {
    let (status, _) = stop_mid_script("-TERM");
    let status = status.expect("sim-server still running 5 s after SIGTERM");
    assert!(status.success(), "{status}");
}

/// Runs `etcdctl` against `addr`; returns its standard output, or why not.
fn etcdctl(addr: SocketAddr, args: &[&str]) -> Result<String, String> {
    let mut etcdctl = Command::new(harness::etcd::ETCDCTL_BIN);
    etcdctl.arg("--endpoints").arg(addr.to_string()).args(args);
    output_or_error(&mut etcdctl)
}

/// What `command` prints on standard output when it succeeds, or on
/// standard error when it fails.
fn output_or_error(command: &mut Command) -> Result<String, String> {
    let out = command.output().map_err(|e| e.to_string())?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    }
}

#[test]
fn sim_server_speaks_etcd_to_etcdctl_and_stops_on_sigterm() {
    if !harness::etcd::installed() {
        eprintln!("etcdctl is not installed; skipping: scripts/setup installs it");
        return;
    }
    let mut server = Server::spawn(&["--service", "etcd"]);
    let deadline = Instant::now() + Duration::from_secs(10);
    while etcdctl(server.addr, &["put", "greeting", "hello"]).is_err() {
        assert!(
            Instant::now() < deadline,
            "the etcd sim-server never answered"
        );
        sleep(Duration::from_millis(50));
    }
    assert_eq!(
        etcdctl(server.addr, &["get", "greeting"]).unwrap(),
        "greeting\nhello\n"
    );
    let status = server
        .signal_and_wait("-TERM")
        .expect("it exits on SIGTERM");
    assert!(status.success(), "{status:?}");
}

/// `psql`'s unaligned, tuples-only answer to `sql` from the server at
/// `addr`, or its error.
fn psql(addr: SocketAddr, sql: &str) -> Result<String, String> {
    let mut psql = Command::new("psql");
    psql.args(["-X", "-A", "-t", "-h", "127.0.0.1", "-U", "postgres", "-p"])
        .arg(addr.port().to_string())
        .args(["-d", "postgres", "-c", sql]);
    output_or_error(&mut psql)
}

#[test]
fn sim_server_speaks_postgres_to_psql_and_a_session_lock_ends_with_its_connection() {
    if Command::new("psql").arg("--version").output().is_err() {
        eprintln!("psql is not installed; skipping: scripts/setup installs it");
        return;
    }
    let mut server = Server::spawn(&["--service", "postgres"]);
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut taken = psql(server.addr, "SELECT pg_try_advisory_lock(7)");
    while taken.is_err() {
        assert!(
            Instant::now() < deadline,
            "the postgres sim-server never answered: {taken:?}"
        );
        sleep(Duration::from_millis(50));
        taken = psql(server.addr, "SELECT pg_try_advisory_lock(7)");
    }
    assert_eq!(taken.unwrap(), "t\n");
    // That psql's session ended with its process, and its lock with it.
    assert_eq!(
        psql(server.addr, "SELECT pg_try_advisory_lock(7)").unwrap(),
        "t\n"
    );
    let unknown = psql(server.addr, "SELECT no_such_function()").unwrap_err();
    assert!(
        unknown.contains("function no_such_function() does not exist"),
        "{unknown}"
    );
    let status = server
        .signal_and_wait("-TERM")
        .expect("it exits on SIGTERM");
    assert!(status.success(), "{status:?}");
}

/// The `mariadb` client's batch answer to `sql` (no column names) from the
/// server at `addr`, or its error.
fn mariadb(addr: SocketAddr, sql: &str) -> Result<String, String> {
    let mut mariadb = Command::new("mariadb");
    mariadb
        .args([
            "--no-defaults",
            "--batch",
            "--skip-column-names",
            "--skip-ssl",
        ])
        .args(["--connect-timeout=2", "-h", "127.0.0.1", "-u", "root", "-P"])
        .arg(addr.port().to_string())
        .args(["-e", sql]);
    output_or_error(&mut mariadb)
}

#[test]
fn sim_server_speaks_mysql_to_the_mariadb_client_and_a_named_lock_ends_with_its_connection() {
    if Command::new("mariadb").arg("--version").output().is_err() {
        eprintln!("the mariadb client is not installed; skipping: scripts/setup installs it");
        return;
    }
    let mut server = Server::spawn(&["--service", "mysql"]);
    let deadline = Instant::now() + Duration::from_secs(10);
    let lock = "SELECT GET_LOCK('a', 0); SELECT IS_USED_LOCK('a') = CONNECTION_ID()";
    let mut taken = mariadb(server.addr, lock);
    while taken.is_err() {
        assert!(
            Instant::now() < deadline,
            "the mysql sim-server never answered: {taken:?}"
        );
        sleep(Duration::from_millis(50));
        taken = mariadb(server.addr, lock);
    }
    assert_eq!(taken.unwrap(), "1\n1\n");
    // That client's session ended with its process, and its lock with it.
    assert_eq!(
        mariadb(server.addr, "SELECT IS_FREE_LOCK('a')").unwrap(),
        "1\n"
    );
    let unknown = mariadb(server.addr, "SELECT no_such_function()").unwrap_err();
    assert!(
        unknown.contains("ERROR 1305 (42000) at line 1: FUNCTION no_such_function does not exist"),
        "{unknown}"
    );
    let status = server
        .signal_and_wait("-TERM")
        .expect("it exits on SIGTERM");
    assert!(status.success(), "{status:?}");
}
