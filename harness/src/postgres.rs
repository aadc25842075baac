//! Real PostgreSQL servers for tests and real mode: Debian's PostgreSQL
//! 15 (`/usr/lib/postgresql/15/bin`), a fresh cluster (`initdb`, trust
//! authentication for the `postgres` role) in a temporary folder, served
//! on a loopback port of its own, stopped (by pid, under the same watcher
//! as every server this crate starts) and its folder removed when dropped.
//!
//! PostgreSQL refuses to run as root: when this process is root, the
//! folder is given to the `postgres` user Debian's packages create and
//! the binaries run as that user through `setpriv`, which execs them, so
//! the pid the watcher reports is the postmaster's own and `SIGKILL` to
//! it is a crash. A killed postmaster's backends notice its death and
//! exit; a restart waits until they have (PostgreSQL will not start
//! while a backend of the old server still holds its shared memory),
//! then replays its WAL: every committed row comes back, and no session.
//!
//! `fsync` stays on: a commit is on disk before it is acknowledged, as
//! in the deployments the lock designs run on.
//!
//! Every server is started ready to replicate ([`standby`]): a hot
//! standby of one is [`PgServer::start_standby`], promoted by
//! [`PgServer::promote`].

pub mod standby;

#[cfg(test)]
use crate::has_exited;
use crate::served::Served;
use std::io;
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

/// Where Debian puts PostgreSQL 15's server binaries.
pub const PG_BIN: &str = "/usr/lib/postgresql/15/bin";
/// The role every session logs in as (trust authentication, loopback
/// only).
pub const PG_USER: &str = "postgres";
/// How long a fresh or restarted server may take to accept sessions.
const STARTUP_TIMEOUT_MS: u64 = 30_000;
/// How long a fast shutdown may take before the server is killed.
const SHUTDOWN_TIMEOUT_MS: u64 = 10_000;
/// What every server runs with so that it can serve a standby, be one,
/// and be promoted ([`standby`]).
const REPLICATION_SETTINGS: &[&str] = &[
    // WAL with what a standby needs to replay it (PostgreSQL 15's default,
    // said so that a change of default does not silently break standbys).
    "wal_level=replica",
    // Room for a base backup's stream and every standby's.
    "max_wal_senders=10",
    // WAL kept for a standby cut off by a partition, so that it can catch
    // up when the partition heals rather than need a new base backup.
    "wal_keep_size=256MB",
    // A standby answers read-only sessions while it replays: the tests
    // and the run see what it has received.
    "hot_standby=on",
    // A standby whose stream was cut (a killed primary, a partition) tries
    // again every 200 ms rather than every 5 s.
    "wal_retrieve_retry_interval=200ms",
];

/// Whether PostgreSQL 15 can be run here.
pub fn installed() -> bool {
    ["initdb", "postgres"]
        .iter()
        .all(|b| Path::new(PG_BIN).join(b).is_file())
}

/// The installed server's version as reports name servers
/// (`postgresql 15.18`); `None` when it is not installed.
pub fn version() -> Option<String> {
    let out = Command::new(Path::new(PG_BIN).join("postgres"))
        .arg("--version")
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    let version = text.split_whitespace().nth(2)?;
    Some(format!("postgresql {version}"))
}

fn as_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| o.stdout.trim_ascii() == b"0")
}

/// The program and leading arguments that run PostgreSQL's `bin`: as
/// the `postgres` user through `setpriv` when this process is root.
fn pg_program(bin: &str) -> (String, Vec<String>) {
    let path = Path::new(PG_BIN).join(bin).to_string_lossy().into_owned();
    if as_root() {
        let args = ["--reuid=postgres", "--regid=postgres", "--init-groups"];
        let mut all: Vec<String> = args.iter().map(|a| a.to_string()).collect();
        all.push(path);
        ("setpriv".into(), all)
    } else {
        (path, Vec::new())
    }
}

/// Gives `path` (and what is in it) to the `postgres` user.
fn give_to_postgres(path: &Path) -> io::Result<()> {
    let owned = Command::new("chown")
        .args(["-R", "postgres:"])
        .arg(path)
        .status()?;
    if owned.success() {
        Ok(())
    } else {
        Err(io::Error::other(format!(
            "could not give {} to the postgres user",
            path.display()
        )))
    }
}

/// Runs `program` with `args` to its end; an error with its output when
/// it fails (`what` names it).
fn run(program: &str, args: &[String], what: &str) -> io::Result<()> {
    let out = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .output()?;
    if out.status.success() {
        Ok(())
    } else {
        Err(io::Error::other(format!(
            "{what} failed: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )))
    }
}

fn not_installed() -> io::Error {
    io::Error::new(
        io::ErrorKind::NotFound,
        format!(
            "PostgreSQL 15 is not installed ({PG_BIN}/initdb and postgres); install it with \
             `sudo apt-get install -y postgresql-15` (Debian) or run scripts/setup"
        ),
    )
}

/// One PostgreSQL server this crate started, on its own loopback port and
/// data folder; stopped and its folder removed when dropped.
///
/// Starting one takes about 1 to 2 s (`initdb`, then the server).
#[derive(Debug)]
pub struct PgServer {
    served: Served,
}

impl PgServer {
    /// Creates a cluster in a fresh folder and starts a server on it, on
    /// a free loopback port; waits until it accepts sessions.
    pub fn start() -> io::Result<PgServer> {
        let mut server = PgServer::prepare()?;
        let (program, mut args) = pg_program("initdb");
        args.extend(["-A", "trust", "-U", PG_USER, "--no-sync", "-D"].map(String::from));
        args.push(server.data().to_string_lossy().into_owned());
        run(&program, &args, "initdb")?;
        // A standby's base backup and stream log in from 127.0.0.1 as a
        // replication connection: initdb's pg_hba.conf lets them in today
        // (trust for every local line), said here so that standbys do not
        // depend on that default.
        let mut hba = std::fs::OpenOptions::new()
            .append(true)
            .open(server.data().join("pg_hba.conf"))?;
        io::Write::write_all(
            &mut hba,
            format!("host replication {PG_USER} 127.0.0.1/32 trust\n").as_bytes(),
        )?;
        server.launch()?;
        Ok(server)
    }

    /// A server not yet started: its port and folder, the folder given to
    /// the `postgres` user when this process is root.
    fn prepare() -> io::Result<PgServer> {
        if !installed() {
            return Err(not_installed());
        }
        let served = Served::new(
            "PostgreSQL",
            "pg",
            "postgres.log",
            // SIGINT: PostgreSQL's fast shutdown.
            "INT",
            Duration::from_millis(SHUTDOWN_TIMEOUT_MS),
        )?;
        if as_root() {
            give_to_postgres(&served.dir)?;
        }
        Ok(PgServer { served })
    }

    fn data(&self) -> PathBuf {
        self.served.dir.join("data")
    }

    /// Starts the postmaster under a watcher and waits until it accepts
    /// sessions. A start right after a kill may find the old server's
    /// backends still exiting: PostgreSQL then refuses to start, and the
    /// start is tried again until the startup timeout.
    fn launch(&mut self) -> io::Result<()> {
        let deadline = Instant::now() + Duration::from_millis(STARTUP_TIMEOUT_MS);
        loop {
            let (program, mut args) = pg_program("postgres");
            args.extend([
                "-D".to_string(),
                self.data().to_string_lossy().into_owned(),
                "-k".into(),
                self.served.dir.to_string_lossy().into_owned(),
                "-h".into(),
                "127.0.0.1".into(),
                "-p".into(),
                self.served.port().to_string(),
                "-c".into(),
                "TimeZone=UTC".into(),
                "-c".into(),
                "max_connections=200".into(),
                // Crash recovery starts by syncing the data folder: one
                // syncfs rather than an fsync per file (2 s here).
                "-c".into(),
                "recovery_init_sync_method=syncfs".into(),
            ]);
            // Every server can be a primary (a standby becomes one when
            // promoted) or a hot standby (`standby`).
            for setting in REPLICATION_SETTINGS {
                args.extend(["-c".to_string(), setting.to_string()]);
            }
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            self.served.spawn(&program, &args)?;
            match self.served.wait(deadline, accepts_sessions) {
                Ok(()) => return Ok(()),
                Err(_) if Instant::now() < deadline => thread::sleep(Duration::from_millis(100)),
                Err(e) => return Err(e),
            }
        }
    }

    /// The loopback port it listens on.
    pub fn port(&self) -> u16 {
        self.served.port()
    }

    /// `127.0.0.1:port`.
    pub fn addr(&self) -> SocketAddr {
        self.served.addr()
    }

    /// The postmaster's pid (0 while killed).
    pub fn pid(&self) -> u32 {
        self.served.pid()
    }

    /// Whether the postmaster is running.
    pub fn running(&self) -> bool {
        self.served.running()
    }

    /// Kills the postmaster (`SIGKILL`), a crash: its backends end as
    /// they notice, and with them every session.
    pub fn kill(&mut self) {
        self.served.kill();
    }

    /// Starts a killed server again on its own data and port: crash
    /// recovery replays the WAL, so every committed row is back.
    pub fn restart(&mut self) -> io::Result<()> {
        self.kill();
        self.launch()
    }
}

/// Whether a server at `addr` answers a startup message for
/// [`PG_USER`] with AuthenticationOk (`R`, code 0): it accepts sessions
/// (not only connections, as while it starts or recovers).
pub fn accepts_sessions(addr: SocketAddr) -> bool {
    use std::io::{Read, Write};
    let Ok(mut s) = TcpStream::connect_timeout(&addr, Duration::from_millis(500)) else {
        return false;
    };
    let _ = s.set_read_timeout(Some(Duration::from_millis(2_000)));
    let mut body = vec![0, 3, 0, 0];
    for part in ["user", PG_USER, "database", "postgres", ""] {
        body.extend_from_slice(part.as_bytes());
        body.push(0);
    }
    let mut message = ((body.len() + 4) as u32).to_be_bytes().to_vec();
    message.extend_from_slice(&body);
    if s.write_all(&message).is_err() {
        return false;
    }
    let mut head = [0u8; 9];
    let ok = s.read_exact(&mut head).is_ok() && head[0] == b'R' && head[5..9] == [0, 0, 0, 0];
    // Terminate, so the server logs no broken connection.
    let _ = s.write_all(&[b'X', 0, 0, 0, 4]);
    ok
}

#[cfg(test)]
mod tests {
    use super::*;

    fn skipped() -> bool {
        let missing = !installed();
        if missing {
            eprintln!("skipped: PostgreSQL 15 is not installed (scripts/setup installs it)");
        }
        missing
    }

    #[test]
    fn a_server_starts_is_killed_restarts_on_its_port_and_is_gone_when_dropped() {
        if skipped() {
            return;
        }
        let mut server = PgServer::start().expect("a server");
        let (addr, dir) = (server.addr(), server.served.dir.clone());
        assert!(server.running() && accepts_sessions(addr));
        assert!(version().is_some_and(|v| v.starts_with("postgresql 15")));
        let pid = server.pid();
        server.kill();
        assert!(has_exited(pid) && !accepts_sessions(addr));
        server.restart().expect("restarts");
        assert!(accepts_sessions(addr));
        let pid = server.pid();
        drop(server);
        assert!(has_exited(pid));
        assert!(!dir.exists());
    }
}
