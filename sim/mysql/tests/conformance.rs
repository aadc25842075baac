//! simmysql against a real MariaDB 10.11, through the real `mariadb`
//! client: every session in `tests/conformance/cases.sql` is fed to
//! `mariadb --batch` against a MariaDB this test starts
//! (`harness::mariadb`: a fresh data directory in a temp dir, on a
//! loopback port of its own) and against
//! simmysql's `serve_tcp`, and the client's output (errors included) must
//! be the same line for line. Nothing is masked: the cases compare
//! connection ids rather than print them. Skipped (with a message) when
//! MariaDB's binaries are not installed.

use harness::mariadb::MariaDbServer;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

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
    if !(harness::mariadb::installed() && client_found) {
        eprintln!(
            "skipped: MariaDB or the mariadb client is not installed (scripts/setup installs them)"
        );
        return;
    }
    let real = MariaDbServer::start().unwrap_or_else(|e| panic!("{e}"));
    // The cases run in a database of their own, as an application's would.
    let deadline = Instant::now() + Duration::from_secs(30);
    while mariadb(real.port(), None, "CREATE DATABASE IF NOT EXISTS test;\n").contains("ERROR") {
        assert!(
            Instant::now() < deadline,
            "MariaDB did not create the test database"
        );
        std::thread::sleep(Duration::from_millis(200));
    }

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
        let want = mariadb(real.port(), Some("test"), session);
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
