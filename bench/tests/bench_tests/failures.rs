//! How `bench` fails: at once, naming what is wrong, never hanging, and
//! leaving no process it started behind. No test here measures anything.

use bench::{BenchError, BenchOptions};
use std::path::{Path, PathBuf};

/// A fresh temporary path unique to this process and `name`.
fn temp(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("locklab-bench-fail-{}-{name}", std::process::id()))
}

/// Options for a run that must fail before measuring.
fn options(out: PathBuf, redis: &[&str]) -> BenchOptions {
    BenchOptions {
        quick: true,
        redis: redis.iter().map(|u| u.to_string()).collect(),
        out,
        pin: false,
        slice_ms: Some(1),
        rounds: Some(1),
        ..Default::default()
    }
}

/// The error of a run against `url` alone, which must fail it as a bad
/// URL, in full.
fn bad_url_error(out: &Path, url: &str) -> String {
    match bench::run(options(out.to_path_buf(), &[url])) {
        Err(BenchError::BadUrl(e)) => format!("{e:#}"),
        other => panic!("{url}: expected BadUrl, got {other:?}"),
    }
}

#[test]
fn an_unwritable_out_fails_naming_the_path_before_any_server_is_asked() {
    // A folder under a regular file cannot be made by any user (root
    // included, unlike a read-only folder).
    let file = temp("a-file");
    std::fs::write(&file, b"not a folder").unwrap();
    let out = file.join("reports");
    // Port 1 answers nobody: were the servers asked first, the error
    // would be about the URL.
    match bench::run(options(out.clone(), &["redis://127.0.0.1:1"])) {
        Err(BenchError::OutUnwritable(e)) => {
            assert_eq!(e.path, out);
            let shown = BenchError::OutUnwritable(e).to_string();
            assert!(shown.contains(out.to_str().unwrap()), "{shown}");
        }
        other => panic!("expected OutUnwritable, got {other:?}"),
    }
    let _ = std::fs::remove_file(file);
}

#[test]
fn a_malformed_url_is_named_with_the_form_expected() {
    let out = temp("bad-url");
    for url in [
        "",
        "http://127.0.0.1:6379",
        "redis://127.0.0.1",
        "redis://127.0.0.1:notaport",
        "redis://127.0.0.1:70000",
        "redis://:secret@127.0.0.1:6379",
        "redis://127.0.0.1:6379/2",
        "redis://:6379",
    ] {
        let shown = bad_url_error(&out, url);
        assert!(shown.contains(&format!("{url:?}")), "{shown}");
        assert!(shown.contains("redis://host:port"), "{shown}");
    }
    let _ = std::fs::remove_dir_all(out);
}

#[test]
fn a_server_that_accepts_but_never_answers_fails_the_run_naming_its_url() {
    // The kernel completes the handshake for the backlog; nothing ever
    // reads or replies. Without a bound the run would wait forever.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("redis://{}", silent.local_addr().unwrap());
    let out = temp("silent");
    let shown = bad_url_error(&out, &url);
    assert!(shown.contains(&url), "{shown}");
    assert!(
        !out.join("bench.json").exists(),
        "nothing was measured, so nothing is reported"
    );
    drop(silent);
    let _ = std::fs::remove_dir_all(out);
}

#[test]
fn a_server_nobody_listens_on_fails_the_run_naming_its_url() {
    // Bound, never listening: the port refuses connections, and no other
    // test's server can be given it meanwhile.
    let port = harness::ReservedPort::new().unwrap();
    let url = format!("redis://{}", port.addr());
    let out = temp("refused");
    let shown = bad_url_error(&out, &url);
    assert!(shown.contains(&url), "{shown}");
    let _ = std::fs::remove_dir_all(out);
}

/// Whether `pid` is a live `redis-server` (not a reused pid of another
/// program, and not a reaped one).
fn is_redis_server(pid: u32) -> bool {
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .is_ok_and(|c| String::from_utf8_lossy(&c).contains("redis-server"))
}

#[test]
fn servers_started_here_are_stopped_when_a_panic_unwinds_past_them() {
    if !harness::installed() {
        eprintln!("redis-server not installed; skipped");
        return;
    }
    let mut pids = Vec::new();
    let unwound = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let servers = bench::servers::Servers::start_or_use(&[]).expect("start servers");
        pids = servers.pids();
        assert!(pids.iter().all(|&p| is_redis_server(p)), "started");
        panic!("a failure mid-run, with the servers up");
    }));
    assert!(unwound.is_err());
    assert!(!pids.is_empty());
    for pid in pids {
        assert!(!is_redis_server(pid), "redis-server {pid} outlived the run");
    }
}
