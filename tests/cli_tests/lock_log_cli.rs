//! The users' example (`examples/lock_log/`): a service with its own Redis
//! lock records a log in the users' format against a real `redis-server`,
//! and `locklab check` judges it: safe as recorded, violated once a
//! release is cut out of it. The test runs the example's service (the same
//! file) in-process. Needs redis-server (scripts/test installs it);
//! skipped, with the reason printed, where it is not installed. About 1 s.

#[path = "../../examples/lock_log/service.rs"]
mod service;

use crate::common;

use common::{assert_contains, locklab, path, scratch, stderr, stdout};
use std::path::Path;

/// Clients and cycles of each run: enough hand-offs to be a test, few
/// enough to take well under a second.
const CLIENTS: u64 = 4;
const CYCLES: u64 = 20;

/// A redis-server of its own, or `None` (the test is skipped) where
/// redis-server is not installed.
fn redis_server() -> Option<harness::RedisServer> {
    match harness::RedisServer::start() {
        Ok(server) => Some(server),
        Err(harness::Error::NotInstalled) => {
            eprintln!("redis-server not installed; skipped");
            None
        }
        Err(e) => panic!("could not start redis-server: {e}"),
    }
}

/// Runs the example's service against `server`, writing its log to `log`.
fn record(server: &harness::RedisServer, log: &Path) -> service::Summary {
    let config = service::Config {
        redis: format!("127.0.0.1:{}", server.port()),
        out: log.to_path_buf(),
        clients: CLIENTS,
        cycles: CYCLES,
    };
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime")
        .block_on(service::run(&config))
        .expect("the service runs")
}

/// `locklab check` of `log` against `model`, pages into `out`: its
/// summary line (`FILE<TAB>true|false|unknown`), after checking the exit
/// code agrees with it.
fn check(log: &Path, model: &str, out: &Path) -> String {
    let done = locklab(&[
        "check",
        path(log),
        "--format",
        "jepsen-json",
        "--model",
        model,
        "--out",
        path(out),
    ]);
    let said = stdout(&done);
    assert_eq!(
        done.status.success(),
        said.contains("\ttrue"),
        "{model}: {said}{}",
        stderr(&done)
    );
    said
}

#[test]
fn a_services_own_log_recorded_against_redis_server_is_judged_safe() {
    let Some(server) = redis_server() else {
        return;
    };
    let dir = scratch("lock-log-safe");
    let log = dir.join("service.jsonl");
    let done = record(&server, &log);
    // Every cycle wrote, and the counter counts them all: the lock held.
    assert_eq!(done.written, CLIENTS * CYCLES);
    assert_eq!(done.counter, (CLIENTS * CYCLES) as i64);
    assert_eq!(done.lines as u64, CLIENTS * CYCLES * 8);
    for model in ["owner-mutex", "mutex"] {
        let said = check(&log, model, &dir.join(model));
        assert_contains(&said, &format!("{}\ttrue", path(&log)));
    }
}

#[test]
fn a_services_own_log_with_a_release_cut_out_is_judged_violated() {
    let Some(server) = redis_server() else {
        return;
    };
    let dir = scratch("lock-log-cut");
    let recorded = dir.join("service.jsonl");
    record(&server, &recorded);
    // The first release's invoke and completion taken out: its holder
    // now holds on while the next client acquires.
    let text = std::fs::read_to_string(&recorded).expect("the log");
    let mut lines: Vec<&str> = text.lines().collect();
    let release = lines
        .iter()
        .position(|l| l.contains(r#""f":"release""#))
        .expect("a release");
    let process =
        serde_json::from_str::<serde_json::Value>(lines[release]).expect("a JSON line")["process"]
            .clone();
    lines.remove(release);
    let completion = lines[release..]
        .iter()
        .position(|l| {
            l.contains(r#""f":"release""#)
                && serde_json::from_str::<serde_json::Value>(l).expect("a JSON line")["process"]
                    == process
        })
        .expect("its completion");
    lines.remove(release + completion);
    let cut = dir.join("cut.jsonl");
    std::fs::write(&cut, lines.join("\n") + "\n").expect("write the cut log");
    for model in ["owner-mutex", "mutex"] {
        let said = check(&cut, model, &dir.join(model));
        assert_contains(&said, &format!("{}\tfalse", path(&cut)));
    }
}
