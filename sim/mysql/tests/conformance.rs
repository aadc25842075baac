//! simmysql against a real MariaDB 10.11, through the real `mariadb`
//! client: every session in `tests/conformance/cases.sql` is fed to
//! `mariadb --batch` against a MariaDB this test starts (a fresh data
//! directory in a temp dir, on a free loopback port) and against
//! simmysql's `serve_tcp`, and the client's output (errors included) must
//! be the same line for line. Nothing is masked: the cases compare
//! connection ids rather than print them. Skipped (with a message) when
//! MariaDB's binaries are not installed.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

const SERVER: &str = "/usr/sbin/mariadbd";
const INSTALL_DB: &str = "/usr/bin/mariadb-install-db";

/// A real MariaDB in a temp dir, stopped (by its pid) and removed when
/// dropped, a failing test included.
struct RealMariaDb {
    child: Child,
    dir: PathBuf,
    port: u16,
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

impl RealMariaDb {
    fn start() -> RealMariaDb {
        let dir = std::env::temp_dir().join(format!("simmysql-conformance-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let data = dir.join("data");
        let install = Command::new(INSTALL_DB)
            .arg("--no-defaults")
            .args(user_args())
            .arg(format!("--datadir={}", data.display()))
            .args(["--auth-root-authentication-method=normal", "--skip-test-db"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .unwrap();
        assert!(install.success(), "mariadb-install-db failed");
        let port = free_port();
        let child = Command::new(SERVER)
            .arg("--no-defaults")
            .args(user_args())
            .arg(format!("--datadir={}", data.display()))
            .arg(format!("--socket={}", dir.join("sock").display()))
            .arg(format!("--pid-file={}", dir.join("pid").display()))
            .arg(format!("--log-error={}", dir.join("err.log").display()))
            .arg(format!("--port={port}"))
            .args([
                "--bind-address=127.0.0.1",
                "--skip-grant-tables",
                "--skip-log-bin",
                "--default-time-zone=+00:00",
                "--innodb-buffer-pool-size=16M",
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let db = RealMariaDb { child, dir, port };
        let deadline = Instant::now() + Duration::from_secs(60);
        while mariadb(port, None, "CREATE DATABASE IF NOT EXISTS test;\n").contains("ERROR") {
            assert!(Instant::now() < deadline, "MariaDB did not start");
            std::thread::sleep(Duration::from_millis(200));
        }
        db
    }
}

impl Drop for RealMariaDb {
    fn drop(&mut self) {
        // SIGTERM: MariaDB's normal shutdown; then wait for it.
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let deadline = Instant::now() + Duration::from_secs(20);
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

fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

/// The client's output, stdout and stderr together (`--unbuffered`
/// keeps them in order), for `input` on `port`.
fn mariadb(port: u16, database: Option<&str>, input: &str) -> String {
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "mariadb --no-defaults --batch --unbuffered --force --skip-ssl --connect-timeout=5 \
             -h 127.0.0.1 -P {port} -u root {} 2>&1",
            database.unwrap_or("")
        ))
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

/// The sessions of the case file: each its client's input.
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
fn the_mariadb_client_prints_the_same_against_simmysql_as_against_mariadb_10_11() {
    let client_found = Command::new("mariadb").arg("--version").output().is_ok();
    if !(Path::new(SERVER).exists() && Path::new(INSTALL_DB).exists() && client_found) {
        eprintln!(
            "skipped: MariaDB ({SERVER}, {INSTALL_DB}) or the mariadb client is not installed"
        );
        return;
    }
    let real = RealMariaDb::start();

    // simmysql on its own runtime and port, for the same sessions.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let sim_port = listener.local_addr().unwrap().port();
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let server = simmysql::Server::new(simmysql::Config::new(Arc::new(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
    })));
    let runtime = std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let listener = tokio::net::TcpListener::from_std(listener).unwrap();
            simmysql::serve_tcp(server, listener, async {
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
        let want = mariadb(real.port, Some("test"), session);
        let got = mariadb(sim_port, Some("test"), session);
        transcript.push_str(&got);
        if want != got {
            mismatches.push(format!(
                "session {}:\n--- MariaDB 10.11\n{want}\n--- simmysql\n{got}",
                i + 1
            ));
        }
    }
    let _ = stop_tx.send(());
    // Both sides of every mismatch, for a diff by hand.
    let _ = std::fs::write(
        std::env::temp_dir().join("simmysql-conformance.txt"),
        mismatches.join("\n"),
    );
    // A run that compared two empty outputs would prove nothing.
    assert!(transcript.contains("GET_LOCK('a', 0)") && transcript.contains("ERROR 1062"));
    runtime.join().unwrap();
    assert!(lines >= 40, "the case file has {lines} SQL lines");
    assert!(mismatches.is_empty(), "{}", mismatches.join("\n"));
}
