//! Hot standbys of a [`PgServer`], and their promotion: PostgreSQL's own
//! streaming replication, asynchronous as it is by default.
//!
//! A standby starts from a base backup of its primary (`pg_basebackup`,
//! taken straight from the primary's port with an immediate checkpoint,
//! so that it does not wait for a spread one), then streams the WAL from
//! the address it is given, not the primary's own: real mode gives the
//! proxy's link, so that the stream can be delayed (the scenario's
//! replication lag) and cut (a partition). `standby.signal` keeps it a
//! standby across a kill and restart; `primary_conninfo` goes into
//! `postgresql.auto.conf`, where `ALTER SYSTEM` changes it later (a
//! standby re-pointed at a promoted one, [`PgServer::follow`]).
//!
//! A standby is a [`PgServer`] like its primary, under the same watcher
//! and drop rules: killed with `SIGKILL`, restarted on its own data (still
//! a standby), stopped and its folder removed when dropped.
//!
//! A promotion is `SELECT pg_promote(true, ...)`: the server ends
//! recovery, writes an end-of-recovery record on a new timeline and takes
//! writes; it is over when `pg_is_in_recovery()` is false. It keeps every
//! row it had replayed and nothing it had not received. Advisory locks
//! are never WAL-logged, so a promoted standby holds none, whatever the
//! old primary's sessions held. A promoted server forgets that it was a
//! standby (`standby.signal` is gone): a restart brings it back as a
//! primary.

use super::{
    PG_BIN, PG_USER, PgServer, STARTUP_TIMEOUT_MS, as_root, give_to_postgres, pg_program, run,
};
use std::io;
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

/// How long `pg_promote` waits for the end of recovery, in seconds.
const PROMOTE_WAIT_S: u32 = 30;

impl PgServer {
    /// Starts a hot standby of `primary` on a free loopback port of its
    /// own: a base backup of `primary`, then the WAL streamed from
    /// `upstream` (the primary's address, or a proxy's link to it).
    /// Waits until it streams and accepts read-only sessions.
    ///
    /// Takes about 1 s on top of the primary's start.
    pub fn start_standby(primary: &PgServer, upstream: SocketAddr) -> io::Result<PgServer> {
        for bin in ["pg_basebackup", "psql"] {
            if !Path::new(PG_BIN).join(bin).is_file() {
                return Err(io::Error::new(
                    io::ErrorKind::NotFound,
                    format!("{PG_BIN}/{bin} is not installed (postgresql-client-15)"),
                ));
            }
        }
        let mut standby = PgServer::prepare()?;
        let data = standby.data();
        let (program, mut args) = pg_program("pg_basebackup");
        args.extend(
            [
                "-h",
                "127.0.0.1",
                "-p",
                &primary.port().to_string(),
                "-U",
                PG_USER,
                "-w",
                // The WAL written while the backup runs comes along, so the
                // copy is consistent on its own.
                "-X",
                "stream",
                // An immediate checkpoint: a spread one would take minutes.
                "-c",
                "fast",
                // As initdb's --no-sync: the copy is fsynced by nobody,
                // which only a power loss of the machine would tell.
                "--no-sync",
                "-D",
            ]
            .map(String::from),
        );
        args.push(data.to_string_lossy().into_owned());
        run(&program, &args, "pg_basebackup")?;
        std::fs::write(data.join("standby.signal"), "")?;
        let mut auto = std::fs::OpenOptions::new()
            .append(true)
            .open(data.join("postgresql.auto.conf"))?;
        io::Write::write_all(
            &mut auto,
            format!("primary_conninfo = '{}'\n", conninfo(upstream)).as_bytes(),
        )?;
        if as_root() {
            give_to_postgres(&data)?;
        }
        standby.launch()?;
        standby.wait_until(Duration::from_millis(STARTUP_TIMEOUT_MS), "streams", |s| {
            Ok(query(s.addr(), "SELECT status FROM pg_stat_wal_receiver")? == "streaming")
        })?;
        Ok(standby)
    }

    /// Whether the server is replaying WAL (a standby not yet promoted).
    pub fn in_recovery(&self) -> io::Result<bool> {
        Ok(query(self.addr(), "SELECT pg_is_in_recovery()")? == "t")
    }

    /// Promotes a standby: it ends recovery and takes writes. Waits until
    /// it is out of recovery (0.1 to 0.4 s here). A server that is
    /// not a standby is left as it is.
    pub fn promote(&self) -> io::Result<()> {
        if !self.in_recovery()? {
            return Ok(());
        }
        let promoted = query(
            self.addr(),
            &format!("SELECT pg_promote(true, {PROMOTE_WAIT_S})"),
        )?;
        if promoted != "t" {
            return Err(self
                .served
                .failed(&format!("was not promoted in {PROMOTE_WAIT_S} s")));
        }
        self.wait_until(
            Duration::from_secs(PROMOTE_WAIT_S.into()),
            "ends recovery",
            |s| Ok(!s.in_recovery()?),
        )
    }

    /// Re-points a standby's stream at `upstream` (a promoted server, or a
    /// link to it): `ALTER SYSTEM` and a reload, which restarts its WAL
    /// receiver. It follows the new primary's timeline only if it had not
    /// replayed past the point where that one was promoted.
    pub fn follow(&self, upstream: SocketAddr) -> io::Result<()> {
        query(
            self.addr(),
            &format!(
                "ALTER SYSTEM SET primary_conninfo = '{}'",
                conninfo(upstream).replace('\'', "''")
            ),
        )?;
        query(self.addr(), "SELECT pg_reload_conf()").map(drop)
    }

    /// Waits until this standby has replayed everything `primary` had
    /// written when called.
    pub fn wait_caught_up(&self, primary: SocketAddr, timeout: Duration) -> io::Result<()> {
        let written = query(primary, "SELECT pg_current_wal_lsn()")?;
        let sql = format!("SELECT pg_last_wal_replay_lsn() >= '{written}'::pg_lsn");
        self.wait_until(timeout, "catches up", |s| Ok(query(s.addr(), &sql)? == "t"))
    }

    /// Polls `done` until it holds; an error with the end of the log once
    /// `timeout` has passed or the server has died (`what` says what it
    /// did not do).
    fn wait_until(
        &self,
        timeout: Duration,
        what: &str,
        done: impl Fn(&PgServer) -> io::Result<bool>,
    ) -> io::Result<()> {
        let deadline = Instant::now() + timeout;
        loop {
            if self.served.died() {
                return Err(self.served.failed(&format!("exited before it {what}")));
            }
            let last = match done(self) {
                Ok(true) => return Ok(()),
                Ok(false) => String::new(),
                Err(e) => format!(" ({e})"),
            };
            if Instant::now() >= deadline {
                return Err(self.served.failed(&format!("never {what}{last}")));
            }
            thread::sleep(Duration::from_millis(20));
        }
    }
}

/// The connection string of a stream from `upstream`.
fn conninfo(upstream: SocketAddr) -> String {
    format!(
        "host={} port={} user={PG_USER} connect_timeout=2 application_name=locklab",
        upstream.ip(),
        upstream.port()
    )
}

/// Runs `sql` in a new session on the server at `addr` (`psql`, unaligned
/// and without headers) and gives its output, trimmed: `t`, a number, a
/// row's columns joined by `|`.
pub fn query(addr: SocketAddr, sql: &str) -> io::Result<String> {
    let out = Command::new(Path::new(PG_BIN).join("psql"))
        .args(["-X", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-h"])
        .arg(addr.ip().to_string())
        .arg("-p")
        .arg(addr.port().to_string())
        .args(["-U", PG_USER, "-d", "postgres", "-c", sql])
        // A server that accepts connections but never answers is an
        // error, not a hang.
        .env("PGCONNECT_TIMEOUT", "5")
        .stdin(Stdio::null())
        .output()?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
    } else {
        Err(io::Error::other(format!(
            "`{sql}` on {addr}: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        )))
    }
}
