//! What the database servers this crate starts share: a reserved
//! loopback port, a temporary folder with the server's log, and the
//! process under its watcher; stopped on drop by a signal the server
//! takes as a clean shutdown, then by the watcher's `SIGKILL`, and the
//! folder removed.

use crate::{ReservedPort, Watched, has_exited};
use std::io;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::thread;
use std::time::{Duration, Instant};

/// How many lines of a server's log an error shows.
const LOG_TAIL_LINES: usize = 30;
/// Tells apart the folders one process creates.
static FOLDERS: AtomicU64 = AtomicU64::new(0);

/// One server's port, folder and process.
#[derive(Debug)]
pub(crate) struct Served {
    /// What errors call it (`PostgreSQL`).
    kind: &'static str,
    /// Held for the server's life: the server sets `SO_REUSEADDR` and
    /// binds it all the same, while no other test is handed it.
    port: ReservedPort,
    /// The folder: the data, the socket, the log.
    pub(crate) dir: PathBuf,
    /// The log's file name in the folder.
    log: &'static str,
    /// The signal of a clean shutdown (`INT`, `TERM`).
    shutdown_signal: &'static str,
    /// How long a clean shutdown may take.
    shutdown_timeout: Duration,
    pub(crate) process: Option<Watched>,
}

impl Served {
    /// A fresh folder `locklab-<prefix>-<pid>-<n>` and a reserved port.
    pub(crate) fn new(
        kind: &'static str,
        prefix: &str,
        log: &'static str,
        shutdown_signal: &'static str,
        shutdown_timeout: Duration,
    ) -> io::Result<Served> {
        let serial = FOLDERS.fetch_add(1, Ordering::Relaxed);
        let dir =
            std::env::temp_dir().join(format!("locklab-{prefix}-{}-{serial}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir)?;
        Ok(Served {
            kind,
            port: ReservedPort::new()?,
            dir,
            log,
            shutdown_signal,
            shutdown_timeout,
            process: None,
        })
    }

    pub(crate) fn port(&self) -> u16 {
        self.port.port()
    }

    pub(crate) fn addr(&self) -> SocketAddr {
        self.port.addr()
    }

    /// The log, opened to append (the server's output goes there).
    pub(crate) fn log_file(&self) -> io::Result<std::fs::File> {
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.join(self.log))
    }

    /// Starts `bin` with `args` under a watcher, its output into the log.
    pub(crate) fn spawn(&mut self, bin: &str, args: &[&str]) -> io::Result<()> {
        self.process = Some(Watched::spawn(bin, args, self.log_file()?)?);
        Ok(())
    }

    /// Waits until `ready` says the server serves; an error with the end
    /// of its log if it died or `deadline` passed (the process is then
    /// killed).
    pub(crate) fn wait(
        &mut self,
        deadline: Instant,
        ready: impl Fn(SocketAddr) -> bool,
    ) -> io::Result<()> {
        loop {
            if self.died() {
                let e = self.failed("exited while starting");
                self.kill();
                return Err(e);
            }
            if ready(self.addr()) {
                return Ok(());
            }
            if Instant::now() >= deadline {
                let e = self.failed("did not serve in time");
                self.kill();
                return Err(e);
            }
            thread::sleep(Duration::from_millis(20));
        }
    }

    /// Whether the process was started and has ended on its own.
    pub(crate) fn died(&self) -> bool {
        self.process
            .as_ref()
            .is_some_and(|p| p.pid() == 0 || has_exited(p.pid()))
    }

    /// An error saying `what`, with the end of the log.
    pub(crate) fn failed(&self, what: &str) -> io::Error {
        let log = std::fs::read_to_string(self.dir.join(self.log)).unwrap_or_default();
        let lines: Vec<&str> = log.lines().collect();
        let tail = lines[lines.len().saturating_sub(LOG_TAIL_LINES)..].join("\n");
        io::Error::other(format!(
            "{} on {} {what}; the end of its log:\n{tail}",
            self.kind,
            self.addr()
        ))
    }

    pub(crate) fn pid(&self) -> u32 {
        self.process.as_ref().map_or(0, Watched::pid)
    }

    pub(crate) fn running(&self) -> bool {
        self.process.as_ref().is_some_and(|p| !has_exited(p.pid()))
    }

    /// `SIGKILL` through the watcher, and waits until it is gone.
    pub(crate) fn kill(&mut self) {
        if let Some(mut process) = self.process.take() {
            process.stop();
        }
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        // A clean shutdown first (nothing left in shared memory), then the
        // watcher's SIGKILL for a server that does not stop in time.
        let pid = self.pid();
        if pid != 0 && !has_exited(pid) {
            let _ = Command::new("kill")
                .args([&format!("-{}", self.shutdown_signal), &pid.to_string()])
                .stderr(Stdio::null())
                .status();
            let deadline = Instant::now() + self.shutdown_timeout;
            while !has_exited(pid) && Instant::now() < deadline {
                thread::sleep(Duration::from_millis(20));
            }
        }
        self.kill();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
