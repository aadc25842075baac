//! simpg against a real PostgreSQL 15, through the real psql: every
//! session in `tests/conformance/cases.sql` is fed to psql against a
//! PostgreSQL this test starts (`harness::postgres`: initdb in a temp
//! dir, on a loopback port of its own) and against simpg's `serve_tcp`,
//! and psql's output must be the same line for line. Skipped (with a
//! message) when PostgreSQL 15's binaries are not installed.

use harness::postgres::PgServer;
use std::process::{Command, Stdio};
use std::sync::Arc;

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
    let psql_found = Command::new("psql").arg("--version").output().is_ok();
    if !(harness::postgres::installed() && psql_found) {
        eprintln!("skipped: PostgreSQL 15 or psql is not installed (scripts/setup installs them)");
        return;
    }
    let real = PgServer::start().unwrap_or_else(|e| panic!("{e}"));

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
        let want = psql(real.port(), session);
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
