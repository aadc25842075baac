//! The Curator transcript test: Apache Curator's `InterProcessMutex` (the
//! lock recipe most Java users of ZooKeeper take) run by
//! `tests/curator/CuratorProbe.java` against a real ZooKeeper 3.8.0 and
//! against the simulated server; the transcripts must be the same line for
//! line.
//!
//! The probe is compiled with `javac` against Debian's Curator 5.4.0 and
//! ZooKeeper jars into a temporary folder, then run once per server (one
//! JVM each, both at once): three clients with sessions of their own
//! contend in a forced order, one times out, one acquires re-entrantly,
//! and a holder's session is ended from outside while another waits. Each
//! run takes about 2 to 3 s.

use harness::zookeeper::{self, ZkServer};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

const PROBE: &str = include_str!("curator/CuratorProbe.java");

/// Debian's Curator jars (`libcurator-recipes-java` and what it depends
/// on); their manifests name guava and the rest.
const CURATOR_JARS: [&str; 3] = [
    "/usr/share/java/curator-recipes.jar",
    "/usr/share/java/curator-framework.jar",
    "/usr/share/java/curator-client.jar",
];

/// How long one run of the probe may take.
const PROBE_TIMEOUT: Duration = Duration::from_secs(90);

/// Why the test cannot run here, if it cannot.
fn missing() -> Option<String> {
    if !zookeeper::installed() {
        return Some("ZooKeeper is not installed".into());
    }
    if let Some(jar) = CURATOR_JARS.iter().find(|j| !Path::new(j).is_file()) {
        return Some(format!("{jar} is missing (libcurator-recipes-java)"));
    }
    let javac = Command::new("javac")
        .arg("-version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
    if !javac.is_ok_and(|s| s.success()) {
        return Some("javac is not on PATH (default-jdk-headless)".into());
    }
    None
}

/// The class path the probe compiles and runs with: Curator, and
/// ZooKeeper's class path with a binding that drops the log lines.
fn classpath() -> String {
    let mut cp = CURATOR_JARS.join(":");
    cp.push(':');
    cp.push_str(&zookeeper::classpath_with_logging(false));
    cp
}

/// A temporary folder removed when dropped.
struct TempDir(PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Compiles the probe into a fresh folder.
fn compile() -> TempDir {
    let dir = std::env::temp_dir().join(format!("locklab-curator-probe-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("a temporary folder");
    let dir = TempDir(dir);
    let source = dir.0.join("CuratorProbe.java");
    std::fs::write(&source, PROBE).expect("the probe's source written");
    let out = Command::new("javac")
        .arg("-cp")
        .arg(classpath())
        .arg("-d")
        .arg(&dir.0)
        .arg(&source)
        .output()
        .expect("javac runs");
    assert!(
        out.status.success(),
        "javac failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    dir
}

/// Runs the probe against `addr`: its standard output, or a line saying
/// how it failed.
fn run_probe(classes: &Path, addr: SocketAddr) -> Vec<String> {
    let cp = format!("{}:{}", classes.display(), classpath());
    let mut child = Command::new(zookeeper::JAVA_BIN)
        .args(["-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-cp", &cp])
        .arg("CuratorProbe")
        .arg(addr.to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("java runs");
    let deadline = Instant::now() + PROBE_TIMEOUT;
    let mut timed_out = false;
    while child.try_wait().ok().flatten().is_none() {
        if Instant::now() >= deadline {
            // By its own pid.
            let _ = child.kill();
            timed_out = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().expect("the probe's output");
    let mut lines: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_string)
        .collect();
    if timed_out {
        lines.push(format!("[killed after {PROBE_TIMEOUT:?}]"));
    } else if !out.status.success() {
        lines.push(format!(
            "[exited with {}: {}]",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    lines
}

fn wall_clock_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

#[test]
fn curators_lock_recipe_runs_the_same_on_real_zookeeper_and_the_simulated_server() {
    if let Some(why) = missing() {
        eprintln!("{why}; skipping: scripts/setup installs it");
        return;
    }
    let started = Instant::now();
    let classes = compile();
    let compiled = started.elapsed();
    let real = ZkServer::start().expect("ZooKeeper starts");
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port");
    let sim_addr = listener.local_addr().expect("its address");
    listener.set_nonblocking(true).expect("non-blocking");
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("a runtime");
    rt.spawn(async move {
        let listener = tokio::net::TcpListener::from_std(listener).expect("a tokio listener");
        let server = simzk::Server::new(simzk::Config::new(Arc::new(wall_clock_ms)));
        let _ = simzk::serve_tcp(server, listener, std::future::pending()).await;
    });
    let (a, b) = std::thread::scope(|s| {
        let a = s.spawn(|| run_probe(&classes.0, real.addr()));
        let b = s.spawn(|| run_probe(&classes.0, sim_addr));
        (
            a.join().expect("real run"),
            b.join().expect("simulated run"),
        )
    });
    eprintln!(
        "compiled in {compiled:?}; both runs done {:?} after the start",
        started.elapsed()
    );
    if std::env::var_os("LOCKLAB_CONFORMANCE_SHOW").is_some() {
        println!("{}", b.join("\n"));
    }
    assert!(
        a.last().map(String::as_str) == Some("done"),
        "the probe failed on real ZooKeeper:\n{}",
        a.join("\n")
    );
    let differences: Vec<String> = (0..a.len().max(b.len()))
        .filter(|&i| a.get(i) != b.get(i))
        .map(|i| {
            format!(
                "line {}:\n  real ZooKeeper: {:?}\n  simulated:      {:?}",
                i + 1,
                a.get(i),
                b.get(i)
            )
        })
        .collect();
    assert!(
        differences.is_empty(),
        "the transcripts differ:\n{}\nreal ZooKeeper's:\n{}\nthe simulated server's:\n{}",
        differences.join("\n"),
        a.join("\n"),
        b.join("\n")
    );
}
