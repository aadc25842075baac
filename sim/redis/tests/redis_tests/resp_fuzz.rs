//! The RESP server against random and adversarial byte streams.
//!
//! Inside turmoil (deterministic, simulated time), one connection sends a
//! generated stream, in chunks of random sizes with pauses between them,
//! and may shut its write side at the end, while a second, well-behaved
//! client works on its own keys the whole time. The properties:
//!
//! * the server never panics and never hangs: after the last byte (and the
//!   shutdown, if any) the adversarial connection answers everything it
//!   must within a bound, and closes within it when it must;
//! * a stream of well-formed requests (multibulk or inline, with odd but
//!   legal quoting and framing) gets exactly the replies a model of the
//!   commands predicts, whatever the chunking;
//! * a malformed request at the end of such a stream gets Redis 7.0's
//!   protocol error, after the replies to the requests before it, and the
//!   connection closes (the texts are compared with a real `redis-server`
//!   in the conformance suite);
//! * random bytes get only whole, well-formed replies;
//! * the well-behaved client is answered correctly and promptly
//!   throughout.
//!
//! Cases come from a fixed seed, so every run checks the same ones. A
//! small real-TCP variant checks half-closed sockets on the real server.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;
use std::time::Duration;

use proptest::prelude::*;
use proptest::test_runner::{Config, RngSeed};
use simredis::resp::{Reply, encode_request, parse_reply};
use simredis::{NodeConfig, NodeHandle, serve};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

use crate::common;
use crate::common::real_tcp;

/// The seed every property here draws its cases from.
const SEED: u64 = 20_261_124;
/// How long a connection may stay silent, after its client sent its last
/// byte, before the test decides it has answered all it will (simulated
/// time; the node answers within a millisecond).
const QUIET: Duration = Duration::from_millis(500);
/// Rounds of the well-behaved client in each case.
const GOOD_ROUNDS: usize = 20;

fn config(cases: u32) -> Config {
    Config {
        cases,
        rng_seed: RngSeed::Fixed(SEED),
        failure_persistence: None,
        max_shrink_iters: 200,
        ..Config::default()
    }
}

// ===== the model: requests and the replies they must get =====

/// One request of the adversarial client's well-formed part.
#[derive(Debug, Clone)]
enum Op {
    Ping(Option<Vec<u8>>),
    Echo(Vec<u8>),
    Set(u8, Vec<u8>),
    Get(u8),
    Del(u8),
    Strlen(u8),
    /// A command the node does not know (no arguments).
    Unknown(&'static str),
    /// `GET` without its key.
    WrongArity,
}

impl Op {
    /// The request's arguments; the command name's case is varied by
    /// `case_mask`.
    fn args(&self, case_mask: u8) -> Vec<Vec<u8>> {
        let key = |k: &u8| format!("adv:{k}").into_bytes();
        let (name, rest): (&str, Vec<Vec<u8>>) = match self {
            Op::Ping(None) => ("ping", vec![]),
            Op::Ping(Some(a)) => ("ping", vec![a.clone()]),
            Op::Echo(a) => ("echo", vec![a.clone()]),
            Op::Set(k, v) => ("set", vec![key(k), v.clone()]),
            Op::Get(k) => ("get", vec![key(k)]),
            Op::Del(k) => ("del", vec![key(k)]),
            Op::Strlen(k) => ("strlen", vec![key(k)]),
            Op::Unknown(name) => (name, vec![]),
            Op::WrongArity => ("get", vec![]),
        };
        let name: Vec<u8> = name
            .bytes()
            .enumerate()
            .map(|(i, c)| {
                if case_mask >> (i % 8) & 1 == 1 {
                    c.to_ascii_uppercase()
                } else {
                    c
                }
            })
            .collect();
        let mut args = vec![name];
        args.extend(rest);
        args
    }

    /// The reply the node must give to it sent with command name `name`,
    /// updating the model's keyspace.
    fn reply(&self, name: &[u8], keys: &mut BTreeMap<u8, Vec<u8>>) -> Reply {
        match self {
            Op::Ping(None) => Reply::Status("PONG".into()),
            Op::Ping(Some(a)) | Op::Echo(a) => Reply::Bulk(a.clone()),
            Op::Set(k, v) => {
                keys.insert(*k, v.clone());
                Reply::ok()
            }
            Op::Get(k) => keys.get(k).map_or(Reply::Nil, |v| Reply::Bulk(v.clone())),
            Op::Del(k) => Reply::Int(i64::from(keys.remove(k).is_some())),
            Op::Strlen(k) => Reply::Int(keys.get(k).map_or(0, |v| v.len() as i64)),
            Op::Unknown(_) => Reply::err(format!(
                "ERR unknown command '{}', with args beginning with: ",
                String::from_utf8_lossy(name)
            )),
            Op::WrongArity => Reply::err("ERR wrong number of arguments for 'get' command"),
        }
    }
}

/// How one request is framed on the wire.
#[derive(Debug, Clone)]
enum Framing {
    /// `*n` / `$len` frames; `odd_trailer` replaces the `\r\n` after each
    /// payload by two other bytes, which Redis skips unchecked.
    Multibulk { odd_trailer: Option<[u8; 2]> },
    /// One text line; each argument quoted by the style its seed picks
    /// among those that can carry it; `spaces` separate them; `lf_only`
    /// ends the line with `\n` alone.
    Inline {
        styles: Vec<u8>,
        spaces: u8,
        lf_only: bool,
    },
}

/// `arg` written inline in style `style` (bare, double or single quotes),
/// or in double quotes if that style cannot carry it.
fn inline_arg(arg: &[u8], style: u8) -> Vec<u8> {
    let bare_ok = !arg.is_empty()
        && arg
            .iter()
            .all(|c| c.is_ascii_alphanumeric() || b":_.-+*$%".contains(c));
    let single_ok = arg.iter().all(|c| (0x20..0x7f).contains(c)) && arg.last() != Some(&b'\\');
    match style % 3 {
        0 if bare_ok => arg.to_vec(),
        1 if single_ok => {
            let mut out = vec![b'\''];
            for &c in arg {
                if c == b'\'' {
                    out.extend_from_slice(b"\\'");
                } else {
                    out.push(c);
                }
            }
            out.push(b'\'');
            out
        }
        _ => {
            let mut out = vec![b'"'];
            for &c in arg {
                match c {
                    b'\n' => out.extend_from_slice(b"\\n"),
                    b'\r' => out.extend_from_slice(b"\\r"),
                    b'\t' => out.extend_from_slice(b"\\t"),
                    b'"' | b'\\' => out.extend_from_slice(&[b'\\', c]),
                    0x20..0x7f => out.push(c),
                    _ if style & 0x80 != 0 => {
                        out.extend_from_slice(format!("\\x{c:02X}").as_bytes())
                    }
                    _ => out.extend_from_slice(format!("\\x{c:02x}").as_bytes()),
                }
            }
            out.push(b'"');
            out
        }
    }
}

fn frame(args: &[Vec<u8>], framing: &Framing, out: &mut Vec<u8>) {
    match framing {
        Framing::Multibulk { odd_trailer } => {
            out.extend_from_slice(format!("*{}\r\n", args.len()).as_bytes());
            for a in args {
                out.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
                out.extend_from_slice(a);
                out.extend_from_slice(odd_trailer.as_ref().map_or(b"\r\n", |t| t));
            }
        }
        Framing::Inline {
            styles,
            spaces,
            lf_only,
        } => {
            let gap = vec![b' '; usize::from(spaces % 3) + 1];
            if spaces & 4 != 0 {
                out.push(b' ');
            }
            for (i, a) in args.iter().enumerate() {
                if i > 0 {
                    out.extend_from_slice(&gap);
                }
                let style = styles.get(i).copied().unwrap_or(0);
                // The command name stays bare: a quoted name is legal, but
                // keeps the model simple.
                let style = if i == 0 { 0 } else { style };
                out.extend_from_slice(&inline_arg(a, style));
            }
            if spaces & 8 != 0 {
                out.push(b'\t');
            }
            out.extend_from_slice(if *lf_only { b"\n" } else { b"\r\n" });
        }
    }
}

/// Bytes that must be ignored without a reply.
#[derive(Debug, Clone)]
enum Filler {
    EmptyLine,
    SpacesLine,
    ZeroCount,
    NegativeCount,
}

impl Filler {
    fn bytes(&self) -> &'static [u8] {
        match self {
            Filler::EmptyLine => b"\r\n",
            Filler::SpacesLine => b"   \r\n",
            Filler::ZeroCount => b"*0\r\n",
            Filler::NegativeCount => b"*-7\r\n",
        }
    }
}

/// How an adversarial stream ends.
#[derive(Debug, Clone)]
enum Tail {
    /// Nothing more.
    Nothing,
    /// A malformed request: this error, then the server closes.
    Malformed(Vec<u8>, &'static str),
    /// A request that can never complete here (truncated, or with a huge
    /// declared size): no reply, and the connection stays open.
    Unfinished(Vec<u8>),
    /// `QUIT`: `+OK`, then the server closes.
    Quit,
}

/// One generated connection: its stream, how it is delivered, and what
/// must come back.
#[derive(Debug, Clone)]
struct Plan {
    bytes: Vec<u8>,
    /// Chunk sizes (cycled) and the pause after each chunk, in ms.
    chunks: Vec<(usize, u64)>,
    /// Whether the client shuts its write side after its last byte.
    half_close: bool,
    expect: Expect,
}

impl Plan {
    /// `bytes` sent in chunks of `chunk` bytes 1 ms apart, expecting
    /// exactly `replies`, and the close when `closes`.
    fn exact(bytes: &[u8], chunk: usize, half_close: bool, replies: &[u8], closes: bool) -> Plan {
        Plan {
            bytes: bytes.to_vec(),
            chunks: vec![(chunk, 1)],
            half_close,
            expect: Expect::Exactly {
                replies: replies.to_vec(),
                closes,
            },
        }
    }
}

#[derive(Debug, Clone)]
enum Expect {
    /// Exactly these reply bytes; then the server closes, or stays open.
    Exactly { replies: Vec<u8>, closes: bool },
    /// Only whole, well-formed replies (random input).
    WellFormed,
}

fn op() -> impl Strategy<Value = Op> {
    let bytes = prop_oneof![
        4 => proptest::collection::vec(b'a'..=b'z', 0..12),
        2 => proptest::collection::vec(any::<u8>(), 0..24),
        1 => proptest::collection::vec(proptest::sample::select(b"\r\n\"'\\ \t$*\x00".to_vec()), 0..12),
    ];
    let key = 0u8..4;
    prop_oneof![
        proptest::option::of(bytes.clone()).prop_map(Op::Ping),
        bytes.clone().prop_map(Op::Echo),
        (key.clone(), bytes).prop_map(|(k, v)| Op::Set(k, v)),
        key.clone().prop_map(Op::Get),
        key.clone().prop_map(Op::Del),
        key.prop_map(Op::Strlen),
        proptest::sample::select(vec!["nosuchcommand", "+PING", "x"]).prop_map(Op::Unknown),
        Just(Op::WrongArity),
    ]
}

fn framing() -> impl Strategy<Value = Framing> {
    prop_oneof![
        3 => Just(Framing::Multibulk { odd_trailer: None }),
        1 => proptest::sample::select(vec![*b"XY", *b"\n\r", *b"  "])
            .prop_map(|t| Framing::Multibulk { odd_trailer: Some(t) }),
        3 => (proptest::collection::vec(any::<u8>(), 4), any::<u8>(), any::<bool>()).prop_map(
            |(styles, spaces, lf_only)| Framing::Inline { styles, spaces, lf_only }
        ),
    ]
}

fn filler() -> impl Strategy<Value = Filler> {
    prop_oneof![
        Just(Filler::EmptyLine),
        Just(Filler::SpacesLine),
        Just(Filler::ZeroCount),
        Just(Filler::NegativeCount),
    ]
}

fn tail() -> impl Strategy<Value = Tail> {
    let malformed = |bytes: &[u8], error: &'static str| Tail::Malformed(bytes.to_vec(), error);
    prop_oneof![
        4 => Just(Tail::Nothing),
        1 => Just(Tail::Quit),
        4 => proptest::sample::select(vec![
            malformed(b"*abc\r\n", "Protocol error: invalid multibulk length"),
            malformed(b"*01\r\n", "Protocol error: invalid multibulk length"),
            malformed(b"*2147483648\r\n", "Protocol error: invalid multibulk length"),
            malformed(b"*1\r\n$-5\r\n", "Protocol error: invalid bulk length"),
            malformed(b"*1\r\n$-1\r\n", "Protocol error: invalid bulk length"),
            malformed(b"*1\r\n$999999999999\r\n", "Protocol error: invalid bulk length"),
            malformed(b"*1\r\n$536870913\r\n", "Protocol error: invalid bulk length"),
            malformed(b"*1\r\n$03\r\nfoo\r\n", "Protocol error: invalid bulk length"),
            malformed(b"*2\r\n$4\r\nECHO\r\n$x\r\n", "Protocol error: invalid bulk length"),
            malformed(b"*1\r\n*1\r\n$4\r\nPING\r\n", "Protocol error: expected '$', got '*'"),
            malformed(b"*2\r\n$4\r\nECHO\r\n:5\r\n", "Protocol error: expected '$', got ':'"),
            malformed(b"*1\r\n+PING\r\n", "Protocol error: expected '$', got '+'"),
            malformed(b"*1\r\n\r\n", "Protocol error: expected '$', got ' '"),
            malformed(b"ECHO \"a\r\n", "Protocol error: unbalanced quotes in request"),
            malformed(b"ECHO \"a\"b\r\n", "Protocol error: unbalanced quotes in request"),
            malformed(b"ECHO 'a\r\n", "Protocol error: unbalanced quotes in request"),
            malformed(b"ECHO 'it\\'s\r\n", "Protocol error: unbalanced quotes in request"),
        ]),
        3 => proptest::sample::select(vec![
            b"*2147483647\r\n".to_vec(),
            b"*1\r\n$536870912\r\nsome of it".to_vec(),
            b"*3\r\n$3\r\nSET\r\n$1\r\nk".to_vec(),
            b"*2\r\n$4\r\nEC".to_vec(),
            b"*".to_vec(),
            b"PING".to_vec(),
            b"ECHO \"unfinished".to_vec(),
            b"PING\x00\r\n".to_vec(),
        ])
        .prop_map(Tail::Unfinished),
    ]
}

fn chunks() -> impl Strategy<Value = Vec<(usize, u64)>> {
    proptest::collection::vec(
        (
            prop_oneof![3 => 1usize..4, 2 => 4usize..32, 1 => 32usize..256],
            prop_oneof![2 => Just(0u64), 1 => 1u64..20],
        ),
        1..8,
    )
}

/// A stream of well-formed requests (with fillers), then a tail.
fn adversarial_plan() -> impl Strategy<Value = Plan> {
    (
        proptest::collection::vec(
            prop_oneof![
                6 => (op(), framing(), any::<u8>()).prop_map(|(o, f, m)| (Some((o, f, m)), None)),
                1 => filler().prop_map(|f| (None, Some(f))),
            ],
            0..12,
        ),
        tail(),
        chunks(),
        any::<bool>(),
    )
        .prop_map(|(items, tail, chunks, half_close)| {
            let mut bytes = Vec::new();
            let mut replies = Vec::new();
            let mut keys = BTreeMap::new();
            for (request, filler) in items {
                if let Some((op, framing, case_mask)) = request {
                    let args = op.args(case_mask);
                    frame(&args, &framing, &mut bytes);
                    op.reply(&args[0], &mut keys).encode(&mut replies);
                }
                if let Some(f) = filler {
                    bytes.extend_from_slice(f.bytes());
                }
            }
            let closes = match &tail {
                Tail::Nothing => half_close,
                Tail::Malformed(b, error) => {
                    bytes.extend_from_slice(b);
                    Reply::err(format!("ERR {error}")).encode(&mut replies);
                    true
                }
                Tail::Unfinished(b) => {
                    bytes.extend_from_slice(b);
                    half_close
                }
                Tail::Quit => {
                    bytes.extend_from_slice(b"QUIT\r\n");
                    Reply::ok().encode(&mut replies);
                    true
                }
            };
            Plan {
                bytes,
                chunks,
                half_close,
                expect: Expect::Exactly { replies, closes },
            }
        })
}

/// Random bytes, biased toward RESP's own characters.
fn random_plan() -> impl Strategy<Value = Plan> {
    let byte = prop_oneof![
        2 => any::<u8>(),
        3 => proptest::sample::select(b"*$:+-\r\n\"' \\0123456789xPINGECHO".to_vec()),
    ];
    (
        proptest::collection::vec(byte, 0..400),
        chunks(),
        any::<bool>(),
    )
        .prop_map(|(bytes, chunks, half_close)| Plan {
            bytes,
            chunks,
            half_close,
            expect: Expect::WellFormed,
        })
}

// ===== running a plan =====

/// What the adversarial connection got back.
#[derive(Debug, Default)]
struct Received {
    bytes: Vec<u8>,
    /// Whether the server closed the connection (EOF or reset) within
    /// the bound.
    closed: bool,
}

/// Sends `plan` over `stream` and reads until the server closes or stays
/// quiet for [`QUIET`].
async fn drive<S: AsyncRead + AsyncWrite + Unpin>(mut stream: S, plan: &Plan) -> Received {
    let mut got = Received::default();
    let mut sent = 0;
    let mut buf = [0u8; 4096];
    'send: for &(size, pause_ms) in plan.chunks.iter().cycle() {
        if sent >= plan.bytes.len() {
            break;
        }
        let end = (sent + size).min(plan.bytes.len());
        if stream.write_all(&plan.bytes[sent..end]).await.is_err() {
            break 'send;
        }
        sent = end;
        if pause_ms > 0 {
            tokio::time::sleep(Duration::from_millis(pause_ms)).await;
        }
        // Take what has arrived, so a closed connection is noticed.
        while let Ok(r) = tokio::time::timeout(Duration::ZERO, stream.read(&mut buf)).await {
            match r {
                Ok(0) | Err(_) => {
                    got.closed = true;
                    break 'send;
                }
                Ok(n) => got.bytes.extend_from_slice(&buf[..n]),
            }
        }
    }
    if plan.half_close && !got.closed {
        let _ = stream.shutdown().await;
    }
    while !got.closed {
        match tokio::time::timeout(QUIET, stream.read(&mut buf)).await {
            Ok(Ok(0) | Err(_)) => got.closed = true,
            Ok(Ok(n)) => got.bytes.extend_from_slice(&buf[..n]),
            Err(_) => break,
        }
    }
    got
}

/// Checks what came back against the plan.
fn check(plan: &Plan, got: &Received) -> Result<(), String> {
    match &plan.expect {
        Expect::Exactly { replies, closes } => {
            if got.bytes != *replies {
                return Err(format!(
                    "replies differ:\n  sent     {:?}\n  expected {:?}\n  got      {:?}",
                    String::from_utf8_lossy(&plan.bytes),
                    String::from_utf8_lossy(replies),
                    String::from_utf8_lossy(&got.bytes)
                ));
            }
            if got.closed != *closes {
                return Err(format!(
                    "the server {} the connection, expected it {}",
                    if got.closed { "closed" } else { "kept" },
                    if *closes { "closed" } else { "kept open" }
                ));
            }
        }
        Expect::WellFormed => {
            let mut rest = &got.bytes[..];
            while !rest.is_empty() {
                match parse_reply(rest) {
                    Ok(Some((_, used))) => rest = &rest[used..],
                    other => {
                        return Err(format!(
                            "not a whole reply: {:?} ({other:?})",
                            String::from_utf8_lossy(rest)
                        ));
                    }
                }
            }
        }
    }
    if plan.half_close && !got.closed {
        return Err("a half-closed connection was not closed within the bound".into());
    }
    Ok(())
}

/// The well-behaved client: sets, reads back and counts on its own keys,
/// each request answered within 100 ms.
async fn well_behaved<S: AsyncRead + AsyncWrite + Unpin>(mut stream: S) -> Result<(), String> {
    let mut buf = Vec::new();
    for i in 0..GOOD_ROUNDS {
        let value = format!("value-{i}");
        let key = format!("good:{}", i % 3);
        let steps: [(Vec<&[u8]>, Reply); 3] = [
            (vec![b"SET", key.as_bytes(), value.as_bytes()], Reply::ok()),
            (
                vec![b"GET", key.as_bytes()],
                Reply::Bulk(value.clone().into_bytes()),
            ),
            (vec![b"INCR", b"good:count"], Reply::Int(i as i64 + 1)),
        ];
        for (args, expected) in steps {
            let mut out = Vec::new();
            encode_request(&args, &mut out);
            stream.write_all(&out).await.map_err(|e| e.to_string())?;
            let reply = tokio::time::timeout(
                Duration::from_millis(100),
                read_reply(&mut stream, &mut buf),
            )
            .await
            .map_err(|_| format!("round {i}: no reply within 100 ms"))??;
            if reply != expected {
                return Err(format!("round {i}: {reply:?}, expected {expected:?}"));
            }
        }
        tokio::time::sleep(Duration::from_millis(3)).await;
    }
    Ok(())
}

async fn read_reply<S: AsyncRead + Unpin>(s: &mut S, buf: &mut Vec<u8>) -> Result<Reply, String> {
    loop {
        if let Some((r, n)) = parse_reply(buf)? {
            buf.drain(..n);
            return Ok(r);
        }
        let mut chunk = [0u8; 1024];
        match s.read(&mut chunk).await {
            Ok(0) => return Err("closed".into()),
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
            Err(e) => return Err(e.to_string()),
        }
    }
}

/// Runs `plan` against a node inside turmoil, beside the well-behaved
/// client.
fn run_in_turmoil(plan: &Plan) -> Result<(), String> {
    let mut sim = common::simulation(
        SEED,
        Duration::from_secs(600),
        Duration::ZERO..=Duration::from_millis(1),
    );
    let node = NodeHandle::new(NodeConfig::new("redis"));
    sim.host("redis", move || serve(node.clone()));
    let outcome: Rc<RefCell<Vec<Result<(), String>>>> = Rc::default();
    let (o, p) = (outcome.clone(), plan.clone());
    sim.client("adversary", async move {
        let stream = turmoil::net::TcpStream::connect(("redis", 6379)).await?;
        let got = drive(stream, &p).await;
        let result = check(&p, &got);
        o.borrow_mut().push(result);
        Ok(())
    });
    let o = outcome.clone();
    sim.client("good", async move {
        let stream = turmoil::net::TcpStream::connect(("redis", 6379)).await?;
        let result = well_behaved(stream).await;
        o.borrow_mut().push(result);
        Ok(())
    });
    sim.run()
        .map_err(|e| format!("the simulation failed: {e}"))?;
    let results = outcome.take();
    if results.len() != 2 {
        return Err(format!("{} of 2 clients finished", results.len()));
    }
    results.into_iter().collect()
}

proptest! {
    #![proptest_config(config(96))]

    #[test]
    fn well_formed_streams_get_exactly_the_modelled_replies_and_malformed_ends_get_redis_errors(
        plan in adversarial_plan()
    ) {
        run_in_turmoil(&plan).map_err(TestCaseError::fail)?;
    }
}

proptest! {
    #![proptest_config(config(64))]

    #[test]
    fn random_bytes_get_only_whole_replies_and_never_stop_the_node(plan in random_plan()) {
        run_in_turmoil(&plan).map_err(TestCaseError::fail)?;
    }
}

// ===== fixed streams =====

/// A pipeline of every framing, and the replies it must get.
fn pipeline() -> (Vec<u8>, Vec<u8>) {
    let bytes = b"*3\r\n$3\r\nSET\r\n$5\r\nadv:k\r\n$4\r\na\r\nb\r\n\
        GET adv:k\r\n\
        \r\n\
        *0\r\n\
        ECHO 'it\\'s' \r\n\
        echo \"\\x41\\tB\"\n\
        *2\r\n$4\r\nECHO\r\n$0\r\n\r\n\
        *1\r\n$4\r\nPINGXY\
        DEL adv:k\r\n"
        .to_vec();
    let mut replies = Vec::new();
    for r in [
        Reply::ok(),
        Reply::Bulk(b"a\r\nb".to_vec()),
        Reply::Bulk(b"it's".to_vec()),
        Reply::Bulk(b"A\tB".to_vec()),
        Reply::Bulk(Vec::new()),
        Reply::Status("PONG".into()),
        Reply::Int(1),
    ] {
        r.encode(&mut replies);
    }
    (bytes, replies)
}

#[test]
fn a_pipeline_split_at_every_byte_boundary_gets_the_same_replies() {
    let (bytes, replies) = pipeline();
    for split in 0..=bytes.len() {
        let plan = Plan {
            bytes: bytes.clone(),
            chunks: vec![(split.max(1), 7), (bytes.len(), 0)],
            half_close: split % 2 == 0,
            expect: Expect::Exactly {
                replies: replies.clone(),
                closes: split % 2 == 0,
            },
        };
        run_in_turmoil(&plan).unwrap_or_else(|e| panic!("split at {split}: {e}"));
    }
}

#[test]
fn a_pipeline_delivered_one_byte_at_a_time_gets_the_same_replies() {
    let (bytes, replies) = pipeline();
    run_in_turmoil(&Plan::exact(&bytes, 1, true, &replies, true)).unwrap();
}

#[test]
fn an_inline_request_past_64_kib_without_a_newline_is_refused() {
    let bytes = vec![b'a'; 64 * 1024 + 1];
    let error = b"-ERR Protocol error: too big inline request\r\n";
    run_in_turmoil(&Plan::exact(&bytes, 4096, false, error, true)).unwrap();
}

#[test]
fn count_and_length_lines_past_64_kib_are_refused() {
    for (prefix, error) in [
        (&b"*"[..], "too big mbulk count string"),
        (&b"*1\r\n$"[..], "too big bulk count string"),
    ] {
        let mut bytes = prefix.to_vec();
        bytes.extend(std::iter::repeat_n(b'1', 64 * 1024 + 1));
        let error = format!("-ERR Protocol error: {error}\r\n");
        run_in_turmoil(&Plan::exact(&bytes, 4096, false, error.as_bytes(), true)).unwrap();
    }
}

#[test]
fn a_byte_past_ascii_in_a_protocol_error_is_sent_as_is() {
    let error = b"-ERR Protocol error: expected '$', got '\xff'\r\n";
    run_in_turmoil(&Plan::exact(b"*1\r\n\xff\r\n", 64, false, error, true)).unwrap();
}

#[test]
fn a_client_blocked_in_wait_that_shuts_its_write_side_is_disconnected() {
    let bytes = b"PING\r\nWAIT 1 0\r\nPING\r\n";
    run_in_turmoil(&Plan::exact(bytes, 64, true, b"+PONG\r\n", true)).unwrap();
}

// ===== real TCP =====

#[test]
fn on_real_tcp_half_closed_connections_get_their_replies_then_close() {
    real_tcp::run(async {
        let (addr, server) = real_tcp::serve(NodeConfig::new("tcp")).await;
        let (pipeline, pipeline_replies) = pipeline();
        let plans = [
            // Complete requests, then the write side shut.
            Plan::exact(&pipeline, 5, true, &pipeline_replies, true),
            // A complete request, then half of one.
            Plan::exact(
                b"PING\r\n*2\r\n$4\r\nECHO\r\n$5\r\nab",
                3,
                true,
                b"+PONG\r\n",
                true,
            ),
            // A huge declared count that never completes.
            Plan::exact(b"*2147483647\r\n$4\r\nPING\r\n", 64, true, b"", true),
            // A protocol error: the error, then the server closes.
            Plan::exact(
                b"PING\r\n*1\r\n$-5\r\n",
                64,
                false,
                b"+PONG\r\n-ERR Protocol error: invalid bulk length\r\n",
                true,
            ),
        ];
        let talk = async {
            let good = async {
                let stream = tokio::net::TcpStream::connect(addr).await.unwrap();
                well_behaved(stream).await
            };
            let adversaries = async {
                let mut results = Vec::new();
                for plan in &plans {
                    let stream = tokio::net::TcpStream::connect(addr).await.unwrap();
                    let got = drive(stream, plan).await;
                    results.push(check(plan, &got));
                }
                results
            };
            let (good, adversaries) = tokio::join!(good, adversaries);
            good.unwrap();
            for (i, r) in adversaries.into_iter().enumerate() {
                r.unwrap_or_else(|e| panic!("plan {i}: {e}"));
            }
        };
        tokio::select! {
            r = server => panic!("server ended: {r:?}"),
            () = talk => {}
        }
    });
}
