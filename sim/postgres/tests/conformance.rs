//! simpg against a real PostgreSQL 15, through the real psql: every
//! session in `tests/conformance/cases.sql` is fed to psql against a
//! PostgreSQL this test starts (initdb in a temp dir, on a free loopback
//! port) and against simpg's `serve_tcp`, and psql's output must be the
//! same line for line. Skipped (with a message) when PostgreSQL 15's
//! binaries are not installed.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

const PG_BIN: &str = "/usr/lib/postgresql/15/bin";

/// A real PostgreSQL in a temp dir, stopped (by its pid) and removed when
/// dropped, a failing test included.
struct RealPostgres {
    child: Child,
    dir: PathBuf,
    port: u16,
}

impl RealPostgres {
    fn start() -> RealPostgres {
        let dir = std::env::temp_dir().join(format!("simpg-conformance-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let data = dir.join("data");
        if as_root() {
            // PostgreSQL refuses to run as root: the server runs as the
            // `postgres` user the Debian packages create, in a dir it owns.
            let status = Command::new("chown")
                .arg("postgres:")
                .arg(&dir)
                .status()
                .unwrap();
            assert!(status.success(), "chown to postgres failed");
        }
        let initdb = pg_command("initdb")
            .args(["-A", "trust", "-U", "postgres", "--no-sync", "-D"])
            .arg(&data)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .unwrap();
        assert!(initdb.success(), "initdb failed");
        let port = free_port();
        let child = pg_command("postgres")
            .arg("-D")
            .arg(&data)
            .arg("-k")
            .arg(&dir)
            .args([
                "-h",
                "127.0.0.1",
                "-p",
                &port.to_string(),
                "-c",
                "fsync=off",
                "-c",
                "TimeZone=UTC",
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let pg = RealPostgres { child, dir, port };
        let deadline = Instant::now() + Duration::from_secs(30);
        while psql(port, "SELECT 1;").trim() != "?column? \n----------\n        1\n(1 row)".trim() {
            assert!(Instant::now() < deadline, "PostgreSQL did not start");
            std::thread::sleep(Duration::from_millis(100));
        }
        pg
    }
}

impl Drop for RealPostgres {
    fn drop(&mut self) {
        // SIGINT: PostgreSQL's fast shutdown; then wait for it.
        let _ = Command::new("kill")
            .args(["-INT", &self.child.id().to_string()])
            .status();
        let deadline = Instant::now() + Duration::from_secs(10);
        while self.child.try_wait().ok().flatten().is_none() {
            if Instant::now() > deadline {
                let _ = self.child.kill();
                let _ = self.child.wait();
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn as_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| o.stdout.trim_ascii() == b"0")
}

/// A PostgreSQL binary, run as `postgres` when this test runs as root
/// (`setpriv` execs it, so the child's pid is the server's own).
fn pg_command(bin: &str) -> Command {
    let path = Path::new(PG_BIN).join(bin);
    if as_root() {
        let mut c = Command::new("setpriv");
        c.args(["--reuid=postgres", "--regid=postgres", "--init-groups"])
            .arg(path);
        c
    } else {
        Command::new(path)
    }
}

fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

/// psql's output (stdout and stderr together) for `input` on `port`.
fn psql(port: u16, input: &str) -> String {
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "psql -X -v ON_ERROR_STOP=0 -h 127.0.0.1 -p {port} -U postgres -d postgres 2>&1"
        ))
        .env("PGCONNECT_TIMEOUT", "5")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The sessions of the case file: each its psql input.
fn sessions() -> Vec<String> {
    let text = include_str!("conformance/cases.sql");
    let mut sessions: Vec<String> = Vec::new();
    for line in text.lines() {
        if line.trim() == "-- session" {
            sessions.push(String::new());
        } else if let Some(s) = sessions.last_mut()
            && !line.starts_with("--")
        {
            s.push_str(line);
            s.push('\n');
        }
    }
    sessions
}

#[test]
fn psql_prints_the_same_against_simpg_as_against_postgresql_15() {
    let have = |bin: &str| Path::new(PG_BIN).join(bin).exists();
    let psql_found = Command::new("psql").arg("--version").output().is_ok();
    if !(have("initdb") && have("postgres") && psql_found) {
        eprintln!(
            "skipped: PostgreSQL 15 (initdb, postgres under {PG_BIN}) or psql is not installed"
        );
        return;
    }
    let real = RealPostgres::start();

    // simpg on its own runtime and port, for the same sessions.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let sim_port = listener.local_addr().unwrap().port();
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let server = simpg::Server::new(simpg::Config::new(Arc::new(|| 1_800_000_000_000)));
    let runtime = std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let listener = tokio::net::TcpListener::from_std(listener).unwrap();
            simpg::serve_tcp(server, listener, async {
                let _ = stop_rx.await;
            })
            .await
            .unwrap();
        });
    });

    let mut mismatches = Vec::new();
    let mut transcript = String::new();
    let mut lines = 0;
    for (i, session) in sessions().iter().enumerate() {
        lines += session.lines().count();
        let want = psql(real.port, session);
        let got = psql(sim_port, session);
        transcript.push_str(&got);
        if want != got {
            mismatches.push(format!(
                "session {}:\n--- PostgreSQL 15\n{want}\n--- simpg\n{got}",
                i + 1
            ));
        }
    }
    let _ = stop_tx.send(());
    // Both sides of every mismatch, for a diff by hand.
    let _ = std::fs::write(
        std::env::temp_dir().join("simpg-conformance.txt"),
        mismatches.join("\n"),
    );
    // A run that compared two empty outputs would prove nothing.
    assert!(transcript.contains("INSERT 0 1") && transcript.contains("pg_advisory_unlock"));
    runtime.join().unwrap();
    assert!(lines >= 40, "the case file has {lines} psql lines");
    assert!(mismatches.is_empty(), "{}", mismatches.join("\n"));
}
