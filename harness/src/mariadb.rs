//! Real MariaDB servers for tests and real mode: Debian's MariaDB 10.11
//! (`/usr/sbin/mariadbd`), a fresh data folder (`mariadb-install-db`) in
//! a temporary folder, served on a loopback port of its own with grant
//! tables off (any user, no password: loopback only), stopped (by pid,
//! under the same watcher as every server this crate starts) and its
//! folder removed when dropped.
//!
//! `SIGKILL` to the server is a crash: InnoDB recovers every committed
//! row from its redo log at the restart (`innodb_flush_log_at_trx_commit`
//! is 1 by default: a commit is on disk before it is acknowledged), and
//! no session, nor any named lock (`GET_LOCK`), survives it.

#[cfg(test)]
use crate::has_exited;
use crate::served::Served;
use std::io::{self, Read};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The server binary, where Debian's `mariadb-server` puts it.
pub const SERVER: &str = "/usr/sbin/mariadbd";
/// The tool that makes a data folder.
pub const INSTALL_DB: &str = "/usr/bin/mariadb-install-db";
/// How long a fresh or restarted server may take to greet a client.
const STARTUP_TIMEOUT_MS: u64 = 60_000;
/// How long a normal shutdown may take before the server is killed.
const SHUTDOWN_TIMEOUT_MS: u64 = 20_000;

/// Whether MariaDB can be run here.
pub fn installed() -> bool {
    Path::new(SERVER).is_file() && Path::new(INSTALL_DB).is_file()
}

/// The installed server's version as reports name servers
/// (`mariadb 10.11.19`); `None` when it is not installed.
pub fn version() -> Option<String> {
    let out = Command::new(SERVER).arg("--version").output().ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    // "/usr/sbin/mariadbd  Ver 10.11.19-MariaDB-0+deb12u1 for ..."
    let version = text.split_whitespace().skip_while(|w| *w != "Ver").nth(1)?;
    let number = version.split('-').next()?;
    Some(format!("mariadb {number}"))
}

/// MariaDB refuses to run as root unless told to.
fn user_args() -> Vec<String> {
    let root = Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| o.stdout.trim_ascii() == b"0");
    if root {
        vec!["--user=root".into()]
    } else {
        Vec::new()
    }
}

fn not_installed() -> io::Error {
    io::Error::new(
        io::ErrorKind::NotFound,
        format!(
            "MariaDB is not installed ({SERVER} and {INSTALL_DB}); install it with `sudo \
             apt-get install -y mariadb-server` (Debian) or run scripts/setup"
        ),
    )
}

/// One MariaDB server this crate started, on its own loopback port and
/// data folder; stopped and its folder removed when dropped.
///
/// Starting one takes about 3 to 5 s (`mariadb-install-db`, then the
/// server).
#[derive(Debug)]
pub struct MariaDbServer {
    served: Served,
}

impl MariaDbServer {
    /// Makes a data folder in a fresh folder and starts a server on it,
    /// on a free loopback port; waits until it greets clients.
    pub fn start() -> io::Result<MariaDbServer> {
        if !installed() {
            return Err(not_installed());
        }
        let served = Served::new(
            "MariaDB",
            "mariadb",
            "error.log",
            // SIGTERM: MariaDB's normal shutdown.
            "TERM",
            Duration::from_millis(SHUTDOWN_TIMEOUT_MS),
        )?;
        let mut server = MariaDbServer { served };
        let install = Command::new(INSTALL_DB)
            .arg("--no-defaults")
            .args(user_args())
            .arg(format!("--datadir={}", server.data().display()))
            .args(["--auth-root-authentication-method=normal", "--skip-test-db"])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .output()?;
        if !install.status.success() {
            return Err(io::Error::other(format!(
                "mariadb-install-db failed: {}",
                String::from_utf8_lossy(&install.stderr)
            )));
        }
        server.launch()?;
        Ok(server)
    }

    fn data(&self) -> PathBuf {
        self.served.dir.join("data")
    }

    /// Starts the server under a watcher and waits until it greets a
    /// client.
    fn launch(&mut self) -> io::Result<()> {
        let dir = &self.served.dir;
        let mut args: Vec<String> = vec!["--no-defaults".into()];
        args.extend(user_args());
        args.extend([
            format!("--datadir={}", self.data().display()),
            format!("--socket={}", dir.join("sock").display()),
            format!("--pid-file={}", dir.join("pid").display()),
            format!("--port={}", self.served.port()),
            "--bind-address=127.0.0.1".into(),
            "--skip-grant-tables".into(),
            "--skip-log-bin".into(),
            "--default-time-zone=+00:00".into(),
            "--innodb-buffer-pool-size=16M".into(),
            "--max-connections=200".into(),
        ]);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        self.served.spawn(SERVER, &args)?;
        let deadline = Instant::now() + Duration::from_millis(STARTUP_TIMEOUT_MS);
        self.served.wait(deadline, greets)
    }

    /// The loopback port it listens on.
    pub fn port(&self) -> u16 {
        self.served.port()
    }

    /// `127.0.0.1:port`.
    pub fn addr(&self) -> SocketAddr {
        self.served.addr()
    }

    /// The server's pid (0 while killed).
    pub fn pid(&self) -> u32 {
        self.served.pid()
    }

    /// Whether the server is running.
    pub fn running(&self) -> bool {
        self.served.running()
    }

    /// Kills the server (`SIGKILL`), a crash: every session ends, and
    /// every named lock with it.
    pub fn kill(&mut self) {
        self.served.kill();
    }

    /// Starts a killed server again on its own data and port: InnoDB's
    /// recovery brings back every committed row.
    pub fn restart(&mut self) -> io::Result<()> {
        self.kill();
        self.launch()
    }
}

/// Whether a server at `addr` sends its greeting (a protocol 10
/// handshake) to a new connection: it accepts clients.
pub fn greets(addr: SocketAddr) -> bool {
    let Ok(mut s) = TcpStream::connect_timeout(&addr, Duration::from_millis(500)) else {
        return false;
    };
    let _ = s.set_read_timeout(Some(Duration::from_millis(2_000)));
    let mut head = [0u8; 5];
    // Three bytes of length, the sequence id 0, then the protocol version.
    s.read_exact(&mut head).is_ok() && head[3] == 0 && head[4] == 10
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_server_starts_is_killed_restarts_on_its_port_and_is_gone_when_dropped() {
        if !installed() {
            eprintln!("skipped: MariaDB is not installed (scripts/setup installs it)");
            return;
        }
        let mut server = MariaDbServer::start().expect("a server");
        let (addr, dir) = (server.addr(), server.served.dir.clone());
        assert!(server.running() && greets(addr));
        assert!(
            version().is_some_and(|v| v.starts_with("mariadb 10.")),
            "{:?}",
            version()
        );
        let pid = server.pid();
        server.kill();
        assert!(has_exited(pid) && !greets(addr));
        server.restart().expect("restarts");
        assert!(greets(addr));
        let pid = server.pid();
        drop(server);
        assert!(has_exited(pid));
        assert!(!dir.exists());
    }
}
