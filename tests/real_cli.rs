//! Real mode through the binary leaves nothing behind: every
//! `redis-server` (and its `sh` watcher) that `locklab run --real` starts
//! is gone, and its port closed, after a run that ends normally, after
//! SIGINT in the middle of a run, and after the process is killed with
//! SIGKILL (its watchers stop the servers). The proxy lives inside the
//! locklab process, so its ports close with it; the test checks that no
//! process of the run survives. Needs redis-server (scripts/test installs
//! it). About 10 s.

mod common;

use common::{path, root, scratch};
use std::collections::BTreeMap;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Every process on the machine: pid → (parent pid, command line).
fn processes() -> BTreeMap<u32, (u32, String)> {
    let mut out = BTreeMap::new();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return out;
    };
    for entry in entries.flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        let Some(after) = stat.rfind(')').map(|i| &stat[i + 1..]) else {
            continue;
        };
        let fields: Vec<&str> = after.split_whitespace().collect();
        // State, then the parent's pid.
        if fields.first() == Some(&"Z") {
            continue;
        }
        let Some(ppid) = fields.get(1).and_then(|p| p.parse().ok()) else {
            continue;
        };
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline"))
            .map(|b| String::from_utf8_lossy(&b).replace('\0', " "))
            .unwrap_or_default();
        out.insert(pid, (ppid, cmdline));
    }
    out
}

/// Every live descendant of `root`: pid → command line.
fn descendants(root_pid: u32) -> BTreeMap<u32, String> {
    let all = processes();
    let mut found = BTreeMap::new();
    let mut frontier = vec![root_pid];
    while let Some(parent) = frontier.pop() {
        for (&pid, (ppid, cmd)) in &all {
            if *ppid == parent && !found.contains_key(&pid) {
                found.insert(pid, cmd.clone());
                frontier.push(pid);
            }
        }
    }
    found
}

/// The ports the `redis-server` command lines name.
fn server_ports(procs: &BTreeMap<u32, String>) -> Vec<u16> {
    procs
        .values()
        .filter(|cmd| cmd.starts_with("redis-server"))
        .filter_map(|cmd| {
            cmd.split_whitespace()
                .find_map(|w| w.rsplit_once(':').and_then(|(_, p)| p.parse().ok()))
        })
        .collect()
}

/// Starts a real run of `set-nx-px` in `pause-at-release-start`.
fn start(out: &std::path::Path) -> Child {
    Command::new(env!("CARGO_BIN_EXE_locklab"))
        .args([
            "run",
            "pause-at-release-start",
            "--rung",
            "set-nx-px",
            "--real",
            "--repeat",
            "1",
            "--out",
            path(out),
        ])
        .current_dir(root())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("run locklab")
}

/// Waits until the run has its servers up, and returns its processes.
fn wait_for_servers(child: &Child) -> BTreeMap<u32, String> {
    let deadline = Instant::now() + Duration::from_secs(30);
    while Instant::now() < deadline {
        let procs = descendants(child.id());
        // The store and redis-0, each under its watcher.
        if server_ports(&procs).len() >= 2 {
            return procs;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("locklab --real started no servers within 30 s");
}

/// Asserts every process in `procs` is gone and every server port closed.
fn assert_gone(procs: &BTreeMap<u32, String>) {
    let deadline = Instant::now() + Duration::from_secs(5);
    let alive = || {
        let now = processes();
        procs
            .keys()
            .filter(|pid| now.contains_key(pid))
            .copied()
            .collect::<Vec<_>>()
    };
    while !alive().is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(
        alive().is_empty(),
        "left behind: {:?}",
        alive().iter().map(|p| &procs[p]).collect::<Vec<_>>()
    );
    for port in server_ports(procs) {
        assert!(
            std::net::TcpStream::connect(("127.0.0.1", port)).is_err(),
            "port {port} still open"
        );
    }
}

fn signal(child: &Child, name: &str) {
    let status = Command::new("kill")
        .args([name, &child.id().to_string()])
        .status()
        .expect("kill");
    assert!(status.success());
}

fn wait_exit(child: &mut Child, within: Duration) -> Option<i32> {
    let deadline = Instant::now() + within;
    loop {
        if let Some(status) = child.try_wait().expect("wait") {
            return status.code();
        }
        assert!(Instant::now() < deadline, "locklab did not end in time");
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn a_real_run_leaves_no_server_or_port_behind_on_success_sigint_and_sigkill() {
    let out = scratch("real-leftovers");

    // Success: the run ends by itself (a violation: exit 1).
    let mut child = start(&out);
    let procs = wait_for_servers(&child);
    let code = wait_exit(&mut child, Duration::from_secs(60));
    assert_eq!(code, Some(1), "set-nx-px is violated in this scenario");
    assert_gone(&procs);
    let folder = out.join("real-runs/pause-at-release-start/set-nx-px/run-1");
    assert!(folder.join("real.json").is_file());
    assert!(folder.join("history.jsonl").is_file());

    // SIGINT in the middle of the run: exit 130 within seconds.
    let mut child = start(&out);
    let procs = wait_for_servers(&child);
    std::thread::sleep(Duration::from_millis(300));
    signal(&child, "-INT");
    let code = wait_exit(&mut child, Duration::from_secs(10));
    assert_eq!(code, Some(130));
    assert_gone(&procs);

    // SIGKILL: locklab cannot clean up; the watchers stop the servers.
    let mut child = start(&out);
    let procs = wait_for_servers(&child);
    signal(&child, "-KILL");
    let _ = wait_exit(&mut child, Duration::from_secs(10));
    assert_gone(&procs);
}
