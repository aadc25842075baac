//! `locklab bench` stopped from outside, through the binary cargo built
//! for the tests: `SIGTERM` stops its servers and keeps what it measured
//! as a partial report (exit 130), as does Ctrl-C to the whole job (which
//! reaches its batch's client process and servers too); `SIGKILL`, which
//! it cannot handle, still leaves no server or client process running for
//! long. Each test stops the run a few seconds in; none measures anything
//! to its end.

use crate::common;

use common::{path, scratch};
use std::io::{BufRead, BufReader};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::time::{Duration, Instant};

/// Whether `redis-server` can be run here.
fn redis_installed() -> bool {
    Command::new("redis-server")
        .arg("--version")
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// `locklab bench --quick --no-pin --out OUT`, its standard error read
/// line by line into the receiver.
fn start_bench(out: &Path) -> (Child, Receiver<String>) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_locklab"))
        .args(["bench", "--quick", "--no-pin", "--out", path(out)])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        // A group of its own, as a terminal's job: a signal to the group
        // reaches it and everything it started, as Ctrl-C does.
        .process_group(0)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run locklab bench");
    let stderr = child.stderr.take().expect("stderr");
    let (tx, rx) = channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    (child, rx)
}

/// Lines from `rx` until one contains `wanted` (returned last); fails
/// after `within`, showing what came.
fn read_until(rx: &Receiver<String>, wanted: &str, within: Duration) -> Vec<String> {
    let deadline = Instant::now() + within;
    let mut seen = Vec::new();
    while let Some(left) = deadline.checked_duration_since(Instant::now()) {
        match rx.recv_timeout(left) {
            Ok(line) => {
                let done = line.contains(wanted);
                seen.push(line);
                if done {
                    return seen;
                }
            }
            Err(_) => break,
        }
    }
    panic!(
        "no line with {wanted:?} within {within:?}; got:\n{}",
        seen.join("\n")
    );
}

/// The servers' and watchers' pids of the line `bench` prints once its
/// servers are up.
fn started_pids(lines: &[String]) -> Vec<u32> {
    let line = lines
        .iter()
        .find(|l| l.contains("redis-server pids"))
        .expect("the pids line");
    line.split(|c: char| !c.is_ascii_digit())
        .filter_map(|w| w.parse().ok())
        .collect()
}

/// The pid of the batch client process named by the last line of `lines`
/// that names one, and the pids of that batch's fresh servers.
fn batch_pids(lines: &[String]) -> (u32, Vec<u32>) {
    let line = lines
        .iter()
        .rev()
        .find(|l| l.contains("in client process"))
        .expect("a batch's line");
    let (_, after) = line.split_once("in client process ").unwrap();
    let (client, servers) = after
        .split_once(", on fresh servers ")
        .unwrap_or((after, ""));
    let client = client
        .trim()
        .parse()
        .unwrap_or_else(|_| panic!("no pid in {line:?}"));
    let servers = servers
        .split_whitespace()
        .map(|w| w.parse().unwrap_or_else(|_| panic!("{line:?}")))
        .collect();
    (client, servers)
}

/// Whether `pid` is still a live process (not gone, not a zombie).
fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        let state = stat
            .rfind(')')
            .and_then(|i| stat[i + 1..].split_whitespace().next());
        !matches!(state, Some("Z" | "X") | None)
    })
}

/// Waits up to `within` for every pid in `pids` to end; the ones left.
fn left_after(pids: &[u32], within: Duration) -> Vec<u32> {
    let deadline = Instant::now() + within;
    loop {
        let left: Vec<u32> = pids.iter().copied().filter(|p| alive(*p)).collect();
        if left.is_empty() || Instant::now() >= deadline {
            return left;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Waits up to `within` for `child` to exit; its exit code.
fn exit_code(child: &mut Child, within: Duration) -> Option<i32> {
    let deadline = Instant::now() + within;
    loop {
        if let Some(status) = child.try_wait().expect("wait") {
            return status.code();
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("locklab bench did not exit within {within:?} of the signal");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A bench a test runs, once it printed a line with the text it waited
/// for: the run, the rest of its lines, the pids of every process that
/// must end with it (its servers, their watchers, the fresh servers of
/// the batch under way and that batch's client process), and that
/// client process's pid alone.
struct Running {
    child: Child,
    rx: Receiver<String>,
    pids: Vec<u32>,
    batch: u32,
}

impl Running {
    /// Fails unless the bench exits with 130 within 30 s; the rest of its
    /// lines, until its standard error closed.
    fn exits_130(&mut self) -> Vec<String> {
        assert_eq!(
            exit_code(&mut self.child, Duration::from_secs(30)),
            Some(130)
        );
        std::iter::from_fn(|| self.rx.recv_timeout(Duration::from_secs(10)).ok()).collect()
    }

    /// Fails unless every process that must end with the bench ended
    /// within `within`.
    fn assert_all_ended_within(&self, within: Duration) {
        assert_eq!(
            left_after(&self.pids, within),
            Vec::<u32>::new(),
            "servers, watchers or the batch's process outlived the bench"
        );
    }
}

/// Starts a bench into `out` and reads its lines until one with `wanted`.
fn run_until(out: &Path, wanted: &str) -> Running {
    let (child, rx) = start_bench(out);
    let mut lines = read_until(&rx, "redis-server pids", Duration::from_secs(30));
    let mut pids = started_pids(&lines);
    assert_eq!(pids.len(), 10, "five servers and five watchers: {pids:?}");
    assert!(pids.iter().all(|p| alive(*p)), "{pids:?}");
    lines.extend(read_until(&rx, wanted, Duration::from_secs(60)));
    let (batch, batch_servers) = batch_pids(&lines);
    assert_eq!(batch_servers.len(), 5, "{lines:?}");
    pids.extend(batch_servers);
    pids.push(batch);
    Running {
        child,
        rx,
        pids,
        batch,
    }
}

/// A bench into a fresh folder `name`, run until a line with `wanted`,
/// and the folder; `None` (the test is skipped) where `redis-server` is
/// not installed.
fn bench_until(name: &str, wanted: &str) -> Option<(Running, PathBuf)> {
    if !redis_installed() {
        eprintln!("redis-server not installed; skipped");
        return None;
    }
    let out = scratch(name);
    Some((run_until(&out, wanted), out))
}

/// The partial report a stopped bench wrote into `out`.
fn partial_report(out: &Path) -> serde_json::Value {
    serde_json::from_str(
        &std::fs::read_to_string(out.join("bench-partial.json")).expect("bench-partial.json"),
    )
    .expect("json")
}

/// Fails, showing `lines`, unless one of them contains `text`.
fn assert_a_line_says(lines: &[String], text: &str) {
    assert!(
        lines.iter().any(|l| l.contains(text)),
        "{}",
        lines.join("\n")
    );
}

/// Runs `kill` with `args` (a signal, then a pid or `--` and a group).
fn kill(args: &[&str]) {
    let status = Command::new("kill").args(args).status().expect("kill");
    assert!(status.success(), "kill {args:?}");
}

#[test]
fn sigterm_stops_the_servers_and_keeps_the_partial_report_with_exit_130() {
    // Stop it once it has measured some pairs.
    let Some((mut bench, out)) = bench_until("bench-sigterm", "targets round 1") else {
        return;
    };
    kill(&["-TERM", &bench.child.id().to_string()]);
    // Killed by the run, not left to notice on its own: gone (or a zombie
    // not yet reaped) by the time the run says it stopped.
    let mut rest = read_until(&bench.rx, "stopped by SIGTERM", Duration::from_secs(30));
    assert!(
        !alive(bench.batch),
        "the batch's client process outlived the stop"
    );
    rest.extend(bench.exits_130());
    bench.assert_all_ended_within(Duration::from_secs(2));
    assert_a_line_says(&rest, "stopped by SIGTERM");
    let json = partial_report(&out);
    assert_eq!(
        json["partial"]["stopped_by"], "SIGTERM",
        "{}",
        json["partial"]
    );
    assert!(
        json["partial"]["completed"]
            .as_array()
            .is_some_and(|c| c.iter().any(|p| p == "reference before")),
        "{}",
        json["partial"]
    );
    // The pairs measured before the stop are there.
    let pairs: usize = json["comparisons"]
        .as_array()
        .expect("comparisons")
        .iter()
        .map(|c| {
            c["pairs"].as_array().map_or(0, Vec::len)
                + c["warmup_pairs"].as_u64().unwrap_or(0) as usize
        })
        .sum();
    assert!(pairs > 0, "no pair kept: {}", json["comparisons"]);
    let md = std::fs::read_to_string(out.join("bench-partial.md")).expect("bench-partial.md");
    assert!(
        md.contains("Partial report") && md.contains("SIGTERM"),
        "{md}"
    );
    // A partial run never takes the place of a complete report.
    assert!(!out.join("bench.json").exists() && !out.join("bench.md").exists());
    let _ = std::fs::remove_dir_all(out);
}

#[test]
fn servers_do_not_outlive_a_bench_killed_outright() {
    let Some((mut bench, out)) = bench_until("bench-sigkill", "in client process") else {
        return;
    };
    // Its lines are kept being read (`bench.rx` lives on) until the end,
    // as the run writes on.
    // SIGKILL: no handler runs, nothing is dropped.
    bench.child.kill().expect("kill");
    let _ = bench.child.wait();
    bench.assert_all_ended_within(Duration::from_secs(5));
    let _ = std::fs::remove_dir_all(out);
}

#[test]
fn ctrl_c_to_the_whole_job_stops_it_as_sigint_with_exit_130_and_nothing_left() {
    let Some((mut bench, out)) = bench_until("bench-sigint", "targets round 1") else {
        return;
    };
    // SIGINT to the batch's process alone: it leaves Ctrl-C to the run,
    // and goes on measuring.
    kill(&["-INT", &bench.batch.to_string()]);
    read_until(&bench.rx, "targets round 2", Duration::from_secs(30));
    assert!(alive(bench.batch), "the batch's process ended on SIGINT");
    // What a terminal does on Ctrl-C: SIGINT to every process of the job,
    // the batch's client process and the servers included.
    kill(&["-INT", "--", &format!("-{}", bench.child.id())]);
    let rest = bench.exits_130();
    bench.assert_all_ended_within(Duration::from_secs(5));
    assert_a_line_says(&rest, "stopped by SIGINT");
    let json = partial_report(&out);
    assert!(
        json["partial"]["stopped_by"]
            .as_str()
            .is_some_and(|s| s.starts_with("SIGINT")),
        "{}",
        json["partial"]
    );
    let _ = std::fs::remove_dir_all(out);
}
