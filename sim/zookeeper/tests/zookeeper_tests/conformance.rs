//! The zkCli conformance suite: the command lines of
//! `tests/conformance/cases.txt`, each case run with ZooKeeper's own
//! command-line client against a fresh real ZooKeeper 3.8.0 (started by
//! `harness`) and a fresh simulated server on a real TCP port; every
//! line's output must be the same.
//!
//! zkCli is driven the fastest way measured: one process per session, its
//! commands written to its standard input (not a terminal: no prompt, no
//! line editing) one at a time. A JVM start costs about 0.5 s, so one
//! process per command would take about 25 s per server for this list,
//! against about 2 s per case with one per session; a session with watches
//! needs a process that lives on anyway. After each command the driver
//! writes `printwatches`, which zkCli answers at once without asking the
//! server (`printwatches is on`): the lines before that answer are the
//! command's output, so no command is timed.
//!
//! Watch events come on zkCli's event thread, whenever the server's
//! notification arrives, and may land before or after the output of the
//! command running then. They are therefore taken out of the output (the
//! `WATCHER::` blocks) and compared as each session's own stream, in
//! order, by `!event` lines and at the session's close.
//!
//! zkCli runs as `zkCli.sh` runs it (`java -cp <zkEnv.sh's class path>
//! org.apache.zookeeper.ZooKeeperMain -server HOST:PORT`) with an SLF4J
//! binding that drops its log lines (and its banner lines are left out),
//! standard error merged into standard output in the order written.
//!
//! Masked in both outputs: ephemeral owners (session IDs, numbered in order
//! of first sight) and ctime and mtime dates. Zxids are compared as they
//! are: both servers start empty and see the same transactions (sessions
//! open one after another).

use harness::zookeeper::{self, ZkServer};
use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Write};
use std::net::SocketAddr;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::Arc;
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::{Duration, Instant};

const CASES: &str = include_str!("conformance/cases.txt");

/// How long a command may take to answer.
const COMMAND_TIMEOUT: Duration = Duration::from_secs(10);

/// How long `!event` waits for a watch event.
const EVENT_TIMEOUT: Duration = Duration::from_secs(5);

/// zkCli's answer to `printwatches`, the end of every command's output.
const MARKER: &str = "printwatches is on";

/// One line of the cases file.
#[derive(Debug, Clone)]
enum Step {
    /// A zkCli command for a session.
    Command { session: String, text: String },
    /// `!event NAME`.
    Event(String),
    /// `!close NAME`.
    Close(String),
    /// `!sleep MS`.
    Sleep(u64),
}

#[derive(Debug, Clone)]
struct Line {
    number: usize,
    text: String,
    step: Step,
}

#[derive(Debug, Clone)]
struct Case {
    name: String,
    lines: Vec<Line>,
}

fn parse(text: &str) -> Result<Vec<Case>, String> {
    let mut cases: Vec<Case> = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let number = i + 1;
        let t = raw.trim();
        if let Some(name) = t.strip_prefix("## ") {
            cases.push(Case {
                name: name.to_string(),
                lines: Vec::new(),
            });
            continue;
        }
        if t.is_empty() || t.starts_with('#') {
            continue;
        }
        let at = |e: &str| format!("cases.txt line {number}: {e}");
        let step = if let Some(rest) = t.strip_prefix('!') {
            let words: Vec<&str> = rest.split_whitespace().collect();
            match words[..] {
                ["event", name] => Step::Event(name.to_string()),
                ["close", name] => Step::Close(name.to_string()),
                ["sleep", ms] => Step::Sleep(ms.parse().map_err(|_| at("no number of ms"))?),
                _ => return Err(at(&format!("unknown directive `{t}`"))),
            }
        } else if let Some(rest) = t.strip_prefix('@') {
            let (session, text) = rest
                .split_once(' ')
                .ok_or_else(|| at("`@NAME` without a command"))?;
            Step::Command {
                session: session.to_string(),
                text: text.trim().to_string(),
            }
        } else {
            Step::Command {
                session: "a".to_string(),
                text: t.to_string(),
            }
        };
        let case = cases
            .last_mut()
            .ok_or_else(|| at("a line before the first `## case`"))?;
        case.lines.push(Line {
            number,
            text: t.to_string(),
            step,
        });
    }
    Ok(cases)
}

/// What zkCli printed, sorted by its reader thread.
enum Out {
    /// A line of output (not a watch event, banner or log line).
    Line(String),
    /// A watch event, `WatchedEvent state:... type:... path:...`.
    Event(String),
    /// zkCli has exited.
    End,
}

/// Lines zkCli prints about itself, not about any command.
fn is_noise(line: &str) -> bool {
    line.starts_with("Connecting to ")
        || line == "Welcome to ZooKeeper!"
        || line == "JLine support is disabled"
        || line.starts_with("SLF4J:")
}

/// One zkCli process: one session.
struct Cli {
    child: Child,
    stdin: Option<ChildStdin>,
    out: Receiver<Out>,
    /// Watch events read and not yet compared.
    events: VecDeque<String>,
    ended: bool,
}

impl Cli {
    /// Starts zkCli on `addr` and waits for its session (the
    /// `SyncConnected` event): what it printed until then.
    fn open(addr: SocketAddr) -> Cli {
        let cp = zookeeper::classpath_with_logging(false);
        // `exec` keeps the pid the JVM's; `2>&1` keeps the order in which
        // zkCli wrote its two streams (each line is flushed as written).
        let mut child = Command::new("sh")
            .arg("-c")
            .arg("exec \"$0\" \"$@\" 2>&1")
            .arg(zookeeper::JAVA_BIN)
            .args(["-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-cp", &cp])
            .arg("org.apache.zookeeper.ZooKeeperMain")
            .arg("-server")
            .arg(addr.to_string())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("zkCli starts");
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().expect("zkCli's output");
        let (tx, rx) = channel();
        std::thread::spawn(move || {
            // A `WATCHER::` block is printed as "\nWATCHER::" and
            // "\nWatchedEvent ...": one blank line before each of its two
            // lines is the block's own, other blank lines are output.
            let mut blanks = 0usize;
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if line.is_empty() {
                    blanks += 1;
                    continue;
                }
                let event = line == "WATCHER::" || line.starts_with("WatchedEvent ");
                if event {
                    blanks = blanks.saturating_sub(1);
                }
                for _ in 0..std::mem::take(&mut blanks) {
                    let _ = tx.send(Out::Line(String::new()));
                }
                if line.starts_with("WatchedEvent ") {
                    let _ = tx.send(Out::Event(line));
                } else if !event && !is_noise(&line) {
                    let _ = tx.send(Out::Line(line));
                }
            }
            for _ in 0..blanks {
                let _ = tx.send(Out::Line(String::new()));
            }
            let _ = tx.send(Out::End);
        });
        Cli {
            child,
            stdin,
            out: rx,
            events: VecDeque::new(),
            ended: false,
        }
    }

    /// The next thing zkCli printed, within `timeout`.
    fn next(&mut self, timeout: Duration) -> Option<Out> {
        if self.ended {
            return None;
        }
        match self.out.recv_timeout(timeout) {
            Ok(Out::End) | Err(RecvTimeoutError::Disconnected) => {
                self.ended = true;
                Some(Out::End)
            }
            Ok(out) => Some(out),
            Err(RecvTimeoutError::Timeout) => None,
        }
    }

    fn write(&mut self, text: &str) {
        if let Some(stdin) = self.stdin.as_mut() {
            let _ = stdin.write_all(text.as_bytes());
            let _ = stdin.flush();
        }
    }

    /// Waits for the session's `SyncConnected` event: the text of the
    /// session's opening (its first event, and any line before it).
    fn connected(&mut self) -> String {
        let mut text = String::new();
        let deadline = Instant::now() + COMMAND_TIMEOUT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.next(left) {
                Some(Out::Line(l)) => text.push_str(&format!("{l}\n")),
                Some(Out::Event(e)) => return format!("{text}[opened] {e}\n"),
                Some(Out::End) => return format!("{text}[zkCli exited]\n"),
                None => return format!("{text}[no session within {COMMAND_TIMEOUT:?}]\n"),
            }
        }
    }

    /// Runs one command: what it printed, its watch events set aside.
    fn command(&mut self, text: &str) -> String {
        self.write(&format!("{text}\nprintwatches\n"));
        let mut out = String::new();
        let deadline = Instant::now() + COMMAND_TIMEOUT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.next(left) {
                Some(Out::Line(l)) if l == MARKER => return out,
                Some(Out::Line(l)) => out.push_str(&format!("{l}\n")),
                Some(Out::Event(e)) => self.events.push_back(e),
                Some(Out::End) => return format!("{out}[zkCli exited]\n"),
                None => return format!("{out}[no answer within {COMMAND_TIMEOUT:?}]\n"),
            }
        }
    }

    /// The session's next watch event, waiting at most [`EVENT_TIMEOUT`].
    fn event(&mut self) -> String {
        let mut out = String::new();
        let deadline = Instant::now() + EVENT_TIMEOUT;
        while self.events.is_empty() {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.next(left) {
                Some(Out::Line(l)) => out.push_str(&format!("[unasked] {l}\n")),
                Some(Out::Event(e)) => self.events.push_back(e),
                Some(Out::End) => return format!("{out}[zkCli exited]\n"),
                None => return format!("{out}[no event within {EVENT_TIMEOUT:?}]\n"),
            }
        }
        let event = self.events.pop_front().unwrap_or_default();
        format!("{out}{event}\n")
    }

    /// `quit`: everything it printed from here to its exit, watch events
    /// not yet compared first.
    fn close(&mut self) -> String {
        self.write("quit\n");
        drop(self.stdin.take());
        let mut lines = String::new();
        let deadline = Instant::now() + COMMAND_TIMEOUT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.next(left) {
                Some(Out::Line(l)) => lines.push_str(&format!("{l}\n")),
                Some(Out::Event(e)) => self.events.push_back(e),
                Some(Out::End) => break,
                None => {
                    lines.push_str(&format!("[still running after {COMMAND_TIMEOUT:?}]\n"));
                    break;
                }
            }
        }
        self.stop();
        // The `Closed` event is the client's own, made when `quit` closes
        // its handle, and zkCli exits in a race with the thread that would
        // print it: whether it shows is up to the client, not the server.
        let events: String = (self.events.drain(..))
            .filter(|e| !e.contains("state:Closed"))
            .map(|e| format!("{e}\n"))
            .collect();
        format!("{events}{lines}")
    }

    fn stop(&mut self) {
        drop(self.stdin.take());
        // By its own pid (the JVM's: `exec`), and reaped.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Cli {
    fn drop(&mut self) {
        self.stop();
    }
}

/// One server as the suite drives it: its zkCli sessions, and the session
/// IDs seen, for masking.
struct Arm {
    addr: SocketAddr,
    /// Open sessions, in the order they were opened.
    sessions: Vec<(String, Cli)>,
    owners: Vec<String>,
}

impl Arm {
    fn new(addr: SocketAddr) -> Arm {
        Arm {
            addr,
            sessions: Vec::new(),
            owners: Vec::new(),
        }
    }

    fn session(&mut self, name: &str) -> (&mut Cli, String) {
        let mut opening = String::new();
        let i = match self.sessions.iter().position(|(n, _)| n == name) {
            Some(i) => i,
            None => {
                let mut cli = Cli::open(self.addr);
                opening = cli.connected();
                self.sessions.push((name.to_string(), cli));
                self.sessions.len() - 1
            }
        };
        (&mut self.sessions[i].1, opening)
    }

    fn step(&mut self, step: &Step) -> Option<String> {
        let out = match step {
            Step::Command { session, text } => {
                let (cli, opening) = self.session(session);
                let out = cli.command(text);
                format!("{opening}{out}")
            }
            Step::Event(session) => {
                let (cli, opening) = self.session(session);
                let out = cli.event();
                format!("{opening}{out}")
            }
            Step::Close(session) => match self.sessions.iter().position(|(n, _)| n == session) {
                Some(i) => self.sessions.remove(i).1.close(),
                None => "[no such session]\n".to_string(),
            },
            Step::Sleep(ms) => {
                std::thread::sleep(Duration::from_millis(*ms));
                return None;
            }
        };
        Some(self.mask(&out))
    }

    /// Closes every session in the order they were opened: what each
    /// printed from its `quit` on.
    fn close_all(&mut self) -> Vec<(String, String)> {
        let sessions = std::mem::take(&mut self.sessions);
        let closed: Vec<(String, String)> = (sessions.into_iter())
            .map(|(name, mut cli)| (name, cli.close()))
            .collect();
        (closed.into_iter())
            .map(|(name, out)| (name, self.mask(&out)))
            .collect()
    }

    /// Masks ephemeral owners (by order of first sight) and dates.
    fn mask(&mut self, text: &str) -> String {
        let mut out = String::new();
        for line in text.lines() {
            if let Some(owner) = line.strip_prefix("ephemeralOwner = ")
                && owner != "0x0"
            {
                let k = match self.owners.iter().position(|o| o == owner) {
                    Some(k) => k,
                    None => {
                        self.owners.push(owner.to_string());
                        self.owners.len() - 1
                    }
                };
                out.push_str(&format!("ephemeralOwner = <session {k}>\n"));
            } else if line.starts_with("ctime = ") || line.starts_with("mtime = ") {
                out.push_str(&format!("{}= <date>\n", &line[..6]));
            } else {
                out.push_str(line);
                out.push('\n');
            }
        }
        out
    }
}

/// What one case printed on one server: an output per line, then what
/// each session printed at its close.
struct Transcript {
    lines: Vec<Option<String>>,
    closes: Vec<(String, String)>,
}

fn run_case(addr: SocketAddr, case: &Case) -> Transcript {
    let mut arm = Arm::new(addr);
    let lines = case.lines.iter().map(|l| arm.step(&l.step)).collect();
    let closes = arm.close_all();
    Transcript { lines, closes }
}

fn wall_clock_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// A fresh simulated server on a free loopback port, served on `rt` until
/// the returned sender is dropped.
fn start_simulated(rt: &tokio::runtime::Runtime) -> (SocketAddr, tokio::sync::oneshot::Sender<()>) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port");
    let addr = listener.local_addr().expect("its address");
    listener.set_nonblocking(true).expect("non-blocking");
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    rt.spawn(async move {
        let listener = tokio::net::TcpListener::from_std(listener).expect("a tokio listener");
        let server = simzk::Server::new(simzk::Config::new(Arc::new(wall_clock_ms)));
        let _ = simzk::serve_tcp(server, listener, async {
            let _ = stopped.await;
        })
        .await;
    });
    (addr, stop)
}

#[test]
fn the_cases_file_parses_and_holds_at_least_forty_five_commands() {
    let cases = parse(CASES).unwrap();
    let commands = (cases.iter().flat_map(|c| &c.lines))
        .filter(|l| matches!(l.step, Step::Command { .. }))
        .count();
    assert!(commands >= 45, "only {commands} commands");
    assert!(cases.iter().all(|c| !c.lines.is_empty()), "an empty case");
}

#[test]
fn zkcli_prints_the_same_against_real_zookeeper_and_the_simulated_server() {
    if !zookeeper::installed() {
        eprintln!("ZooKeeper is not installed; skipping: scripts/setup installs it");
        return;
    }
    let started = Instant::now();
    let cases = parse(CASES).unwrap();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("a runtime");
    let show = std::env::var_os("LOCKLAB_CONFORMANCE_SHOW").is_some();
    let mut differences = Vec::new();
    let mut compared = 0;
    for case in &cases {
        let real = ZkServer::start().expect("ZooKeeper starts (scripts/setup installs it)");
        let (sim_addr, stop_sim) = start_simulated(&rt);
        // The two servers are independent: run the case on both at once.
        let (a, b) = std::thread::scope(|s| {
            let a = s.spawn(|| run_case(real.addr(), case));
            let b = s.spawn(|| run_case(sim_addr, case));
            (
                a.join().expect("real arm"),
                b.join().expect("simulated arm"),
            )
        });
        drop(stop_sim);
        drop(real);
        for (i, line) in case.lines.iter().enumerate() {
            if show {
                println!(
                    "[{}] {}\n{}",
                    case.name,
                    line.text,
                    b.lines[i].clone().unwrap_or_default()
                );
            }
            compared += 1;
            if a.lines[i] != b.lines[i] {
                differences.push(format!(
                    "[{}] line {}: {}\n  real ZooKeeper: {:?}\n  simulated:      {:?}",
                    case.name, line.number, line.text, a.lines[i], b.lines[i]
                ));
            }
        }
        if a.closes != b.closes {
            differences.push(format!(
                "[{}] the sessions' close (quit):\n  real ZooKeeper: {:?}\n  simulated:      {:?}",
                case.name, a.closes, b.closes
            ));
        }
    }
    eprintln!(
        "{compared} lines in {} cases compared in {:?}",
        cases.len(),
        started.elapsed()
    );
    assert!(
        differences.is_empty(),
        "{} of {compared} lines differ:\n{}",
        differences.len(),
        differences.join("\n")
    );
}

/// The masks leave everything else alone, and number owners by first
/// sight.
#[test]
fn masking_numbers_session_owners_and_hides_dates_only() {
    let mut arm = Arm::new(SocketAddr::from(([127, 0, 0, 1], 1)));
    let text = "cZxid = 0x5\nctime = Fri Nov 27 17:36:07 UTC 2026\n\
                ephemeralOwner = 0x100ab\nephemeralOwner = 0x0\nephemeralOwner = 0x100ab\n";
    assert_eq!(
        arm.mask(text),
        "cZxid = 0x5\nctime = <date>\nephemeralOwner = <session 0>\n\
         ephemeralOwner = 0x0\nephemeralOwner = <session 0>\n"
    );
}
