//! The conformance suite: one list of command sequences
//! (`tests/conformance/cases.txt`), replayed against a real `redis-server`
//! (started by `harness`) and against the simulated node inside turmoil;
//! the replies must be identical.
//!
//! Masking: a command prefixed with `?` is compared by reply shape only
//! (type and array length). The suite masks only what is random or
//! time-dependent by nature: TIME, CLIENT ID, INFO (run ids, sizes),
//! MEMORY USAGE's byte counts (an estimate on the node), and a
//! PTTL read right after a SET (real time passes between the two on a real
//! server). Everything else is compared byte for byte, error texts included.

use std::cell::RefCell;
use std::rc::Rc;
use std::time::{Duration, Instant};

use simredis::resp::{Reply, encode_request, parse_reply, split_args};
use simredis::{NodeConfig, NodeHandle, serve};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

use crate::common;
#[path = "conformance/scripts.rs"]
mod scripts;

/// The case files, one per command family after the first (the syntax is
/// described at the top of `cases.txt`).
const CASE_FILES: &[&str] = &[
    include_str!("conformance/cases.txt"),
    include_str!("conformance/strings_and_keys.txt"),
    include_str!("conformance/lists.txt"),
    include_str!("conformance/sets_and_sorted_sets.txt"),
    include_str!("conformance/transactions.txt"),
    include_str!("conformance/connection_and_server.txt"),
    include_str!("conformance/lua_libraries.txt"),
    include_str!("conformance/keyspace_events.txt"),
    include_str!("conformance/memory_and_hashes.txt"),
    include_str!("conformance/functions.txt"),
    include_str!("conformance/maxmemory.txt"),
    include_str!("conformance/sort.txt"),
];

#[derive(Debug, Clone)]
enum Step {
    Cmd {
        args: Vec<Vec<u8>>,
        compare: Compare,
        replies: usize,
    },
    Sleep(u64),
    Raw(Vec<u8>),
}

/// How a command's replies are compared.
#[derive(Debug, Clone, Copy)]
enum Compare {
    /// Byte for byte.
    Exact,
    /// By shape only (`?CMD`).
    Shape,
    /// As `COMMAND INFO`'s facts (`~CMD`): without key specs' `notes`
    /// (prose of Redis's docs that the node leaves out), with a command's
    /// subcommands sorted (Redis lists them in the order of a hash table
    /// seeded at random in each process).
    CommandFacts,
}

#[derive(Debug, Clone)]
struct Case {
    name: String,
    steps: Vec<Step>,
}

fn substitute(tok: Vec<u8>) -> Vec<u8> {
    let s = String::from_utf8_lossy(&tok);
    if let Some(name) = s.strip_prefix("$sha:") {
        let body = script(name);
        return simredis::lua::sha1_hex(body.as_bytes()).into_bytes();
    }
    if let Some(name) = s.strip_prefix('$')
        && !name.is_empty()
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
    {
        return script(name).as_bytes().to_vec();
    }
    tok
}

fn script(name: &str) -> &'static str {
    scripts::all()
        .into_iter()
        .find(|(n, _)| *n == name)
        .map(|(_, b)| b)
        .unwrap_or_else(|| panic!("unknown script ${name}"))
}

fn parse_cases() -> Vec<Case> {
    let mut cases: Vec<Case> = Vec::new();
    for line in CASE_FILES.iter().flat_map(|f| f.lines()) {
        if let Some(name) = line.strip_prefix("## ") {
            cases.push(Case {
                name: name.to_string(),
                steps: Vec::new(),
            });
            continue;
        }
        if line.trim().is_empty() || line.starts_with('#') {
            continue;
        }
        let case = cases.last_mut().expect("a command before the first case");
        if let Some(ms) = line.strip_prefix("!sleep ") {
            case.steps.push(Step::Sleep(ms.trim().parse().unwrap()));
        } else if let Some(raw) = line.strip_prefix("!raw ") {
            let mut args = split_args(raw.as_bytes()).unwrap();
            case.steps.push(Step::Raw(args.remove(0)));
        } else if let Some(cmd) = line.strip_prefix("!noreply ") {
            let args = split_args(cmd.as_bytes()).unwrap();
            case.steps.push(Step::Cmd {
                args: args.into_iter().map(substitute).collect(),
                compare: Compare::Exact,
                replies: 0,
            });
        } else if let Some(rest) = line.strip_prefix("!replies ") {
            let (n, cmd) = rest.split_once(' ').unwrap();
            let args = split_args(cmd.as_bytes()).unwrap();
            case.steps.push(Step::Cmd {
                args: args.into_iter().map(substitute).collect(),
                compare: Compare::Exact,
                replies: n.parse().unwrap(),
            });
        } else {
            let (compare, cmd) = if let Some(c) = line.strip_prefix('?') {
                (Compare::Shape, c)
            } else if let Some(c) = line.strip_prefix('~') {
                (Compare::CommandFacts, c)
            } else {
                (Compare::Exact, line)
            };
            let args = split_args(cmd.as_bytes()).unwrap_or_else(|| panic!("bad line {line:?}"));
            case.steps.push(Step::Cmd {
                args: args.into_iter().map(substitute).collect(),
                compare,
                replies: 1,
            });
        }
    }
    cases
}

fn render(r: &Reply) -> String {
    match r {
        Reply::Status(s) => format!("+{s}"),
        Reply::Error(s) => format!("-{s}"),
        Reply::Int(n) => format!(":{n}"),
        Reply::Bulk(b) => format!("{:?}", String::from_utf8_lossy(b)),
        Reply::Nil => "(nil)".into(),
        Reply::NilArray => "(nil array)".into(),
        Reply::Array(items) => format!(
            "[{}]",
            items.iter().map(render).collect::<Vec<_>>().join(", ")
        ),
        other => render_resp3(other),
    }
}

/// Renders RESP3's own types (apart from [`render`], whose recursion over
/// deeply nested arrays stays small for it).
#[inline(never)]
fn render_resp3(r: &Reply) -> String {
    match r {
        Reply::Null => "_".into(),
        Reply::Set(items) => format!("~[{}]", render_all(items)),
        Reply::Push(items) => format!(">[{}]", render_all(items)),
        Reply::Map(pairs) => format!(
            "{{{}}}",
            pairs
                .iter()
                .map(|(k, v)| format!("{}: {}", render(k), render(v)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        Reply::Double(text) => format!(",{text}"),
        Reply::Bool(b) => format!("#{}", if *b { 't' } else { 'f' }),
        Reply::Verbatim(text) => format!("=txt:{:?}", String::from_utf8_lossy(text)),
        other => render(other),
    }
}

/// Renders the elements of an aggregate, comma-separated.
fn render_all(items: &[Reply]) -> String {
    items.iter().map(render).collect::<Vec<_>>().join(", ")
}

fn shape(r: &Reply) -> String {
    match r {
        Reply::Status(_) => "status".into(),
        Reply::Error(_) => "error".into(),
        Reply::Int(_) => "integer".into(),
        Reply::Bulk(_) => "bulk".into(),
        Reply::Nil => "(nil)".into(),
        Reply::NilArray => "(nil array)".into(),
        Reply::Array(items) => format!("array of {}", items.len()),
        Reply::Null => "_".into(),
        Reply::Set(items) => format!("set of {}", items.len()),
        Reply::Push(items) => format!("push of {}", items.len()),
        Reply::Map(pairs) => format!("map of {}", pairs.len()),
        Reply::Double(_) => "double".into(),
        Reply::Bool(_) => "boolean".into(),
        Reply::Verbatim(..) => "verbatim".into(),
    }
}

/// The reply with every `"notes", text` pair taken out of its maps (and
/// of RESP2's flat arrays of pairs), and each `COMMAND INFO` entry's
/// subcommands sorted.
fn as_command_facts(r: &Reply) -> Reply {
    let is_notes = |k: &Reply| matches!(k, Reply::Bulk(b) if b == b"notes");
    match r {
        Reply::Map(pairs) => Reply::Map(
            pairs
                .iter()
                .filter(|(k, _)| !is_notes(k))
                .map(|(k, v)| (k.clone(), as_command_facts(v)))
                .collect(),
        ),
        Reply::Array(items) if items.first().is_some_and(is_notes) && items.len() % 2 == 0 => {
            Reply::Array(items[2..].iter().map(as_command_facts).collect())
        }
        Reply::Array(items) if items.len() == 10 && matches!(items[1], Reply::Int(_)) => {
            let mut entry: Vec<Reply> = items.iter().map(as_command_facts).collect();
            if let Reply::Array(subs) = &mut entry[9] {
                subs.sort_by_key(render);
            }
            Reply::Array(entry)
        }
        Reply::Array(items) => Reply::Array(items.iter().map(as_command_facts).collect()),
        Reply::Set(items) => Reply::Set(items.iter().map(as_command_facts).collect()),
        other => other.clone(),
    }
}

/// Reads one reply (or `None` at EOF / timeout).
async fn read_reply<S: AsyncRead + Unpin>(s: &mut S, buf: &mut Vec<u8>) -> Option<Reply> {
    loop {
        if let Ok(Some((r, n))) = parse_reply(buf) {
            buf.drain(..n);
            return Some(r);
        }
        let mut chunk = [0u8; 4096];
        match tokio::time::timeout(Duration::from_secs(5), s.read(&mut chunk)).await {
            Ok(Ok(n)) if n > 0 => buf.extend_from_slice(&chunk[..n]),
            _ => return None,
        }
    }
}

async fn request<S: AsyncRead + AsyncWrite + Unpin>(
    s: &mut S,
    buf: &mut Vec<u8>,
    args: &[Vec<u8>],
) -> Option<Reply> {
    send(s, args).await?;
    read_reply(s, buf).await
}

/// Sends one command, reading nothing.
async fn send<S: AsyncWrite + Unpin>(s: &mut S, args: &[Vec<u8>]) -> Option<()> {
    let mut out = Vec::new();
    let refs: Vec<&[u8]> = args.iter().map(|a| a.as_slice()).collect();
    encode_request(&refs, &mut out);
    s.write_all(&out).await.ok()
}

/// Runs every case over connections made by `connect`; returns one
/// transcript line per reply.
async fn run_all<S, F, Fut>(cases: &[Case], connect: F) -> Vec<String>
where
    S: AsyncRead + AsyncWrite + Unpin,
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = S>,
{
    let mut lines = Vec::new();
    for case in cases {
        let mut s = connect().await;
        let mut buf = Vec::new();
        request(&mut s, &mut buf, &[b"FLUSHALL".to_vec()]).await;
        request(&mut s, &mut buf, &[b"SCRIPT".to_vec(), b"FLUSH".to_vec()]).await;
        request(&mut s, &mut buf, &[b"FUNCTION".to_vec(), b"FLUSH".to_vec()]).await;
        lines.push(format!("## {}", case.name));
        for step in &case.steps {
            match step {
                Step::Sleep(ms) => tokio::time::sleep(Duration::from_millis(*ms)).await,
                Step::Raw(bytes) => {
                    let mut c = connect().await;
                    c.write_all(bytes).await.unwrap();
                    let mut b = Vec::new();
                    while let Some(r) = read_reply(&mut c, &mut b).await {
                        lines.push(format!("raw -> {}", render(&r)));
                    }
                    lines.push(format!("raw -> closed, {} stray bytes", b.len()));
                }
                Step::Cmd {
                    args,
                    compare,
                    replies,
                } => {
                    let shown: String = args
                        .iter()
                        .map(|a| {
                            let s = String::from_utf8_lossy(a);
                            if s.len() > 40 {
                                format!("{}…", s.chars().take(40).collect::<String>())
                            } else {
                                s.into_owned()
                            }
                        })
                        .collect::<Vec<_>>()
                        .join(" ");
                    if *replies == 0 {
                        send(&mut s, args).await;
                        continue;
                    }
                    let mut first = request(&mut s, &mut buf, args).await;
                    for i in 0..*replies {
                        let r = if i == 0 {
                            first.take()
                        } else {
                            read_reply(&mut s, &mut buf).await
                        };
                        let text = match (&r, compare) {
                            (Some(r), Compare::Shape) => format!("masked {}", shape(r)),
                            (Some(r), Compare::CommandFacts) => render(&as_command_facts(r)),
                            (Some(r), Compare::Exact) => render(r),
                            (None, _) => "(no reply)".into(),
                        };
                        lines.push(format!("{shown:?} -> {text}"));
                    }
                }
            }
        }
    }
    lines
}

fn real_transcript(cases: &[Case]) -> Option<Vec<String>> {
    let server = match harness::RedisServer::start() {
        Ok(s) => s,
        Err(e) => {
            eprintln!("real redis-server unavailable ({e:?}); skipping the real arm");
            return None;
        }
    };
    let addr = server.addr();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let lines = rt.block_on(run_all(cases, || async move {
        tokio::net::TcpStream::connect(addr).await.unwrap()
    }));
    drop(server);
    Some(lines)
}

fn sim_transcript(cases: &[Case]) -> Vec<String> {
    let mut sim = common::simulation(
        7,
        Duration::from_secs(3600),
        Duration::ZERO..=Duration::ZERO,
    );
    let handle = NodeHandle::new(NodeConfig::new("redis"));
    let h = handle.clone();
    sim.host("redis", move || serve(h.clone()));
    let out: Rc<RefCell<Vec<String>>> = Rc::default();
    let o = out.clone();
    let cases = cases.to_vec();
    sim.client("suite", async move {
        let lines = run_all(&cases, || async {
            turmoil::net::TcpStream::connect(("redis", 6379))
                .await
                .unwrap()
        })
        .await;
        *o.borrow_mut() = lines;
        Ok(())
    });
    sim.run().unwrap();
    out.take()
}

#[test]
fn the_simulated_node_answers_every_case_exactly_as_real_redis_does() {
    // Replies nest up to 7,995 deep (a script's table that contains
    // itself): rendering and dropping them recurses that deep, past a test
    // thread's default stack in a debug build.
    std::thread::Builder::new()
        .stack_size(256 << 20)
        .spawn(compare_every_case)
        .expect("a thread for the comparison")
        .join()
        .unwrap_or_else(|e| std::panic::resume_unwind(e));
}

/// Runs every case on both arms and asserts identical transcripts.
fn compare_every_case() {
    let cases = parse_cases();
    let commands: usize = cases
        .iter()
        .flat_map(|c| &c.steps)
        .filter(|s| !matches!(s, Step::Sleep(_)))
        .count();
    assert!(commands >= 200, "only {commands} commands");
    let t0 = Instant::now();
    let sim = sim_transcript(&cases);
    eprintln!("sim arm: {} lines in {:?}", sim.len(), t0.elapsed());
    let t0 = Instant::now();
    let Some(real) = real_transcript(&cases) else {
        return;
    };
    eprintln!("real arm: {} lines in {:?}", real.len(), t0.elapsed());
    assert_same_transcripts(&real, &sim);
}

/// Asserts two transcripts equal, naming each case that differs.
fn assert_same_transcripts(real: &[String], sim: &[String]) {
    // A step that waits for more replies than redis-server sends would
    // compare two time-outs: the case itself is wrong.
    let waiting: Vec<&String> = real.iter().filter(|l| l.ends_with("(no reply)")).collect();
    assert!(
        waiting.is_empty(),
        "steps wait for replies redis-server never sends: {waiting:?}"
    );
    let mut diffs = Vec::new();
    let mut case = String::new();
    for (r, s) in real.iter().zip(sim) {
        if r.starts_with("## ") {
            case = r.clone();
        }
        if r != s {
            diffs.push(format!("{case}\n  real: {r}\n  sim:  {s}"));
        }
    }
    if real.len() != sim.len() {
        diffs.push(format!(
            "transcripts differ in length: real {} sim {}",
            real.len(),
            sim.len()
        ));
    }
    if std::env::var_os("CONFORMANCE_DUMP").is_some() {
        for l in real {
            eprintln!("{l}");
        }
    }
    assert!(
        diffs.is_empty(),
        "{} differences:\n{}",
        diffs.len(),
        diffs.join("\n")
    );
}

#[test]
fn the_node_describes_every_command_it_knows_as_real_redis_does() {
    // The node's own list, read from its transcript (`"COMMAND LIST" ->
    // ["append", ...]`), then one `COMMAND INFO` per name on both arms.
    let list = Case {
        name: "command list".into(),
        steps: vec![Step::Cmd {
            args: vec![b"COMMAND".to_vec(), b"LIST".to_vec()],
            compare: Compare::Exact,
            replies: 1,
        }],
    };
    let listed = sim_transcript(&[list]);
    let names: Vec<String> = listed[1]
        .split_once(" -> [")
        .expect("a list of names")
        .1
        .trim_end_matches(']')
        .split(", ")
        .map(|n| n.trim_matches('"').to_string())
        .collect();
    assert!(names.len() > 150, "only {} names", names.len());
    // A container lists only the subcommands the node has, so it is
    // compared through each subcommand's own entry.
    let is_container = |n: &str| names.iter().any(|m| m.starts_with(&format!("{n}|")));
    let names: Vec<&String> = names.iter().filter(|n| !is_container(n)).collect();
    let info = |args: Vec<&str>| Step::Cmd {
        args: args.iter().map(|a| a.as_bytes().to_vec()).collect(),
        compare: Compare::CommandFacts,
        replies: 1,
    };
    let cases = vec![
        Case {
            name: "command info of each command, resp2".into(),
            steps: names
                .iter()
                .map(|n| info(vec!["COMMAND", "INFO", n]))
                .collect(),
        },
        Case {
            name: "command info of each command, resp3".into(),
            steps: std::iter::once(info(vec!["HELLO", "3"]).masked())
                .chain(names.iter().map(|n| info(vec!["COMMAND", "INFO", n])))
                .collect(),
        },
    ];
    let sim = sim_transcript(&cases);
    let Some(real) = real_transcript(&cases) else {
        return;
    };
    assert_same_transcripts(&real, &sim);
}

impl Step {
    /// The same command, compared by shape only.
    fn masked(self) -> Step {
        match self {
            Step::Cmd { args, replies, .. } => Step::Cmd {
                args,
                compare: Compare::Shape,
                replies,
            },
            other => other,
        }
    }
}
