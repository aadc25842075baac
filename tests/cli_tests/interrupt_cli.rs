//! SIGINT and SIGTERM through the binary: `run`, `suite` and `explore`
//! (while searching and while shrinking) stop within seconds, in the
//! middle of a simulation that would take far longer, keep and write what
//! is finished, say it is partial, and exit 130.
//!
//! Each test starts the command, waits for its first progress line, then
//! sends the signal with `kill`; none waits blindly.

use crate::common;

use common::{assert_contains, locklab_line, path, scratch, words};
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The most an interrupted command may take to end after the signal;
/// every uninterrupted command below would take far longer.
const STOP_WITHIN: Duration = Duration::from_secs(5);

/// How long a command may take to print the line a test waits for.
const START_WITHIN: Duration = Duration::from_secs(60);

/// A running `locklab`, its output read on threads (so it never blocks on
/// a full pipe) and its lines sent to the test as they come.
struct Running {
    child: Child,
    lines: Receiver<String>,
    stdout: JoinHandle<String>,
    stderr: JoinHandle<String>,
}

/// What an interrupted command left.
struct Ended {
    status: ExitStatus,
    /// From the signal to the exit.
    took: Duration,
    stdout: String,
    stderr: String,
}

/// Reads a stream to its end, sending each line on and returning it all.
fn drain(
    stream: impl Read + Send + 'static,
    lines: std::sync::mpsc::Sender<String>,
) -> JoinHandle<String> {
    std::thread::spawn(move || {
        let mut all = String::new();
        for line in BufReader::new(stream).lines().map_while(Result::ok) {
            all.push_str(&line);
            all.push('\n');
            let _ = lines.send(line);
        }
        all
    })
}

fn start(args: &[&str]) -> Running {
    let mut child = Command::new(env!("CARGO_BIN_EXE_locklab"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start locklab");
    let (send, lines) = channel();
    let stdout = drain(child.stdout.take().expect("stdout"), send.clone());
    let stderr = drain(child.stderr.take().expect("stderr"), send);
    Running {
        child,
        lines,
        stdout,
        stderr,
    }
}

/// Starts `locklab` with the words of `line` and `--out` a fresh
/// [`scratch`] folder `name`; the run and the folder.
fn start_out(line: &str, name: &str) -> (Running, PathBuf) {
    let dir = scratch(name);
    let mut args = words(line);
    args.extend(["--out", path(&dir)]);
    (start(&args), dir)
}

impl Running {
    /// Waits until a line (on either stream) contains `text`.
    fn wait_for(&mut self, text: &str) {
        let deadline = Instant::now() + START_WITHIN;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) if line.contains(text) => return,
                Ok(_) => {}
                Err(_) => {
                    let _ = self.child.kill();
                    panic!("no line with {text:?} within {START_WITHIN:?}");
                }
            }
        }
    }

    /// Sends `signal` (`INT` or `TERM`) and waits for the exit.
    fn interrupt(mut self, signal: &str) -> Ended {
        let sent = Instant::now();
        let kill = Command::new("kill")
            .args([format!("-{signal}"), self.child.id().to_string()])
            .status()
            .expect("run kill");
        assert!(kill.success(), "kill -{signal} failed");
        let status = loop {
            if let Some(status) = self.child.try_wait().expect("wait") {
                break status;
            }
            if sent.elapsed() > STOP_WITHIN * 4 {
                let _ = self.child.kill();
                panic!("still running {:?} after SIG{signal}", sent.elapsed());
            }
            std::thread::sleep(Duration::from_millis(10));
        };
        let took = sent.elapsed();
        Ended {
            status,
            took,
            stdout: self.stdout.join().expect("stdout reader"),
            stderr: self.stderr.join().expect("stderr reader"),
        }
    }
}

impl Ended {
    /// Exit 130, promptly, and a notice on standard error that the result
    /// is partial and why.
    fn assert_interrupted(&self, signal: &str) {
        assert_eq!(
            self.status.code(),
            Some(130),
            "stdout:\n{}\nstderr:\n{}",
            self.stdout,
            self.stderr
        );
        assert!(
            self.took < STOP_WITHIN,
            "took {:?} to stop after the signal",
            self.took
        );
        assert!(
            self.stderr.contains(&format!("interrupted by SIG{signal}"))
                && self.stderr.contains("PARTIAL"),
            "{}",
            self.stderr
        );
    }
}

/// A scenario whose `lua-release` cell simulates half an hour of two
/// clients contending (most of a minute of wall time, or more), while its
/// `set-nx-px` cell ends at once: both clients crash for good at 10 ms.
const SLOW: &str = r#"
rungs = ["set-nx-px", "lua-release"]
duration_ms = 1800000
[[clients]]
count = 2
cycles = 1000000
critical_section_ms = 5
think_ms = 5
[[faults_for.set-nx-px]]
kind = "crash"
at_ms = 10
target = "client-0"
[[faults_for.set-nx-px]]
kind = "crash"
at_ms = 10
target = "client-1"
"#;

/// A scenario that runs in milliseconds.
const FAST: &str = r#"
rungs = ["set-nx-px"]
duration_ms = 2000
expect = { set-nx-px = "safe" }
[[clients]]
count = 2
cycles = 3
"#;

fn write(dir: &Path, name: &str, text: &str) -> String {
    let file = dir.join(name);
    std::fs::write(&file, text).expect("write a scenario");
    path(&file).to_string()
}

#[test]
fn run_interrupted_keeps_the_finished_run_folders_and_exits_130() {
    let dir = scratch("sigint-run");
    let scenario = write(&dir, "slow.toml", SLOW);
    let out = dir.join("reports");
    let mut running = start(&["run", &scenario, "--out", path(&out)]);
    running.wait_for("written to");
    let ended = running.interrupt("INT");
    ended.assert_interrupted("INT");
    assert_contains(&ended.stderr, "1 of 2 runs finished");
    assert_contains(&ended.stderr, "lua-release seed 1 abandoned");
    let runs = out.join("runs").join("slow");
    assert!(runs.join("set-nx-px/1/history.jsonl").exists());
    assert!(runs.join("set-nx-px/1/verdict.json").exists());
    assert!(
        !runs.join("lua-release").exists(),
        "no folder for the abandoned run"
    );
}

#[test]
fn suite_interrupted_writes_a_partial_matrix_beside_the_complete_one_and_exits_130() {
    let dir = scratch("sigint-suite");
    let scenarios = dir.join("scenarios");
    std::fs::create_dir_all(&scenarios).unwrap();
    write(&scenarios, "a-fast.toml", FAST);
    write(&scenarios, "b-slow.toml", SLOW);
    let out = dir.join("reports");
    std::fs::create_dir_all(&out).unwrap();
    let complete = "an earlier complete matrix\n";
    std::fs::write(out.join("safety-matrix.md"), complete).unwrap();
    let mut running = start(&words(&format!(
        "suite --scenarios {} --out {} --jobs 1",
        path(&scenarios),
        path(&out)
    )));
    // Cells run in order: the fast one, then b-slow's quick set-nx-px
    // cell; the signal lands in its half-hour lua-release cell.
    running.wait_for("[2/3]");
    let ended = running.interrupt("INT");
    ended.assert_interrupted("INT");
    assert_contains(&ended.stderr, "2 of 3 cells finished");
    assert_eq!(
        std::fs::read_to_string(out.join("safety-matrix.md")).unwrap(),
        complete,
        "the complete matrix is left alone"
    );
    let md = std::fs::read_to_string(out.join("safety-matrix.partial.md")).unwrap();
    assert!(md.starts_with("# Safety matrix (partial)\n"), "{md}");
    assert_contains(&md, "interrupted by SIGINT after 2 of 3 cells");
    assert_contains(&md, "| `set-nx-px` | safe | ");
    assert_contains(&md, "- b-slow / `lua-release`");
    let json: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(out.join("safety-matrix.partial.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(json["partial"], true);
    assert_eq!(json["interrupted_by"], "SIGINT");
    assert_eq!(json["cells_planned"], 3);
    assert_eq!(json["cells"].as_array().unwrap().len(), 2);
    assert_eq!(
        json["not_run"],
        serde_json::json!([{"variant": "lua-release", "scenario": "b-slow"}])
    );

    // A complete suite afterwards replaces the complete matrix and removes
    // the partial one, which is older.
    std::fs::remove_file(scenarios.join("b-slow.toml")).unwrap();
    let again = locklab_line(&format!(
        "suite --scenarios {} --out {}",
        path(&scenarios),
        path(&out)
    ));
    assert_eq!(again.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&again.stderr).contains("safety-matrix.partial.md"));
    assert!(!out.join("safety-matrix.partial.md").exists());
    assert!(!out.join("safety-matrix.partial.json").exists());
    assert_ne!(
        std::fs::read_to_string(out.join("safety-matrix.md")).unwrap(),
        complete
    );
}

#[test]
fn explore_interrupted_by_sigterm_prints_its_totals_so_far_and_exits_130() {
    let (mut running, _) = start_out(
        "explore --rung fenced --faults assumed --time 60s --jobs 1 --json",
        "sigterm-explore",
    );
    // The totals come once a second.
    running.wait_for(" cases, ");
    let ended = running.interrupt("TERM");
    ended.assert_interrupted("TERM");
    assert!(
        ended
            .stderr
            .contains("explore fenced (faults assumed; PARTIAL: interrupted by SIGTERM): "),
        "with --json the human text is on standard error: {}",
        ended.stderr
    );
    let doc = common::document_of(&ended.stdout);
    assert_eq!(doc["exit_code"], 130);
    let summary = &doc["result"];
    assert_eq!(summary["partial"], true);
    assert_eq!(summary["interrupted_by"], "SIGTERM");
    assert!(summary["wall_s"].as_f64().unwrap() < 30.0, "{summary}");
}

#[test]
fn explore_interrupted_while_shrinking_writes_the_counterexample_as_far_as_shrunk() {
    let (mut running, dir) = start_out("explore --rung set-nx-px --cases 2", "sigint-shrink");
    running.wait_for("shrinking the first counterexample");
    let ended = running.interrupt("INT");
    ended.assert_interrupted("INT");
    assert_contains(&ended.stdout, "first counterexample: seed 0: violated");
    assert!(
        ended
            .stdout
            .contains("PARTIAL: Shrinking was interrupted by SIGINT")
    );
    let found = dir.join("found/set-nx-px-0.toml");
    let text = std::fs::read_to_string(&found).expect("the counterexample is written");
    assert!(
        text.starts_with("# PARTIAL: Shrinking was interrupted by SIGINT"),
        "{text}"
    );
    // As far as it was shrunk, it is still a counterexample.
    let runs = dir.join("runs");
    let replay = locklab_line(&format!(
        "run {} --rung set-nx-px --seed 0 --out {}",
        path(&found),
        path(&runs)
    ));
    assert_eq!(replay.status.code(), Some(1), "violated again");
}

#[test]
fn tour_interrupted_keeps_the_stops_shown_and_exits_130() {
    let dir = scratch("sigint-tour");
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let contention =
        std::fs::read_to_string(root.join("scenarios/inventory-contention.toml")).unwrap();
    write(&dir, "inventory-contention.toml", &contention);
    // The scenario that shows setnx's flaw, made slow: the signal lands
    // in the tour's second stop.
    let slow = SLOW
        .replace(
            r#"["set-nx-px", "lua-release"]"#,
            r#"["setnx", "setnx-expire"]"#,
        )
        .replace("faults_for.set-nx-px", "faults_for.setnx-expire");
    write(&dir, "crash-in-critical-section.toml", &slow);
    let mut running = start(&["tour", "--scenarios", path(&dir)]);
    running.wait_for("━━ rung 0: no-lock ━━");
    let ended = running.interrupt("INT");
    ended.assert_interrupted("INT");
    assert_contains(&ended.stdout, "no-lock → VIOLATED");
    assert!(!ended.stdout.contains("━━ rung 1"), "{}", ended.stdout);
    assert_contains(
        &ended.stderr,
        "1 stop(s) shown; the stop of `setnx` was abandoned",
    );
}
