//! How fast the simulator runs, measured in one run, side by side.
//!
//! 1. Request/response round trips per wall second: `PING` from the `redis`
//!    crate client through a simulated node, versus the same client against
//!    a bare turmoil echo host that answers `+PONG` to every request. Same
//!    simulation settings (zero link latency, 1 ms tick). The ratio
//!    node / echo is what the simulated node costs (target ≥ 0.7).
//! 2. Lock cycles per wall second (`SET key token NX PX 30000`, then the
//!    owner-checked release `locks::scripts::RELEASE` by EVALSHA): through a
//!    simulated node versus a real `redis-server` on loopback.
//!
//! The arms run interleaved (A B A B ...) for several rounds and each figure
//! is the median of its rounds. Before measuring, the process (all its
//! threads) and the `redis-server` are pinned to one CPU with `taskset` when
//! it is available; the placement is recorded either way.
//!
//! ```text
//! cargo bench -p simredis --bench speed
//! ```
//!
//! Writes `reports/sim-speed.md` and `reports/sim-speed.json`. Environment:
//! `SPEED_ROUNDS` (default 15), `SPEED_SCALE` (work per measurement, default
//! 1.0), `SPEED_CPU` (CPU to pin to, default 0; `none` to leave placement to
//! the OS).
//!
//! Wall-clock time is read only here, around whole simulations, never inside
//! simulated code.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use redis::aio::{ConnectionLike, MultiplexedConnection};
use simredis::{NodeConfig, NodeHandle, serve};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

#[path = "speed/placement.rs"]
mod placement;

#[path = "../tests/redis_tests/common/mod.rs"]
mod common;

use placement::{cpu_model, loadavg, pinned_or_noted, where_they_ran};

/// Round trips per measurement of arm 1.
const ROUND_TRIPS: f64 = 25_000.0;
/// Lock cycles per measurement of arm 2.
const LOCK_CYCLES: f64 = 5_000.0;
const PORT: u16 = 6379;

/// The simulation every arm runs in: zero link latency, a 1 ms tick.
fn sim() -> turmoil::Sim<'static> {
    common::simulation(
        7,
        Duration::from_secs(24 * 3600),
        Duration::ZERO..=Duration::ZERO,
    )
}

/// How long a client of the arms waits for a reply.
const RESPONSE_TIMEOUT: Duration = Duration::from_secs(5);

async fn sim_client(host: &str) -> redis::RedisResult<MultiplexedConnection> {
    let stream = turmoil::net::TcpStream::connect((host, PORT)).await?;
    common::client_on(stream, RESPONSE_TIMEOUT).await
}

async fn pings<C: ConnectionLike>(con: &mut C, n: u64) -> redis::RedisResult<()> {
    for _ in 0..n {
        let pong: String = redis::cmd("PING").query_async(con).await?;
        assert_eq!(pong, "PONG");
    }
    Ok(())
}

async fn lock_cycles<C: ConnectionLike>(con: &mut C, n: u64) -> redis::RedisResult<()> {
    let release = &*locks::scripts::RELEASE;
    for i in 0..n {
        let token = format!("token-{i}");
        let got: Option<String> = redis::cmd("SET")
            .arg("speed:lock")
            .arg(&token)
            .arg("NX")
            .arg("PX")
            .arg(30_000)
            .query_async(con)
            .await?;
        assert!(got.is_some(), "cycle {i}: the lock was not free");
        let released: i64 = release
            .key("speed:lock")
            .arg(&token)
            .invoke_async(con)
            .await?;
        assert_eq!(released, 1, "cycle {i}: release did not delete");
    }
    Ok(())
}

/// Length of the first complete RESP request (`*n` of `$len` bulks) in
/// `buf`, if it is all there. Enough for the `redis` crate's requests.
fn frame_len(buf: &[u8]) -> Option<usize> {
    fn line(buf: &[u8], at: usize, tag: u8) -> Option<(usize, usize)> {
        if *buf.get(at)? != tag {
            panic!("echo: not a RESP request");
        }
        let end = at + buf[at..].windows(2).position(|w| w == b"\r\n")?;
        let n = std::str::from_utf8(&buf[at + 1..end]).ok()?.parse().ok()?;
        Some((n, end + 2))
    }
    let (items, mut at) = line(buf, 0, b'*')?;
    for _ in 0..items {
        let (len, data) = line(buf, at, b'$')?;
        at = data + len + 2;
        if at > buf.len() {
            return None;
        }
    }
    Some(at)
}

/// The bare echo host: answers `+PONG` to each complete request.
async fn echo_server() -> turmoil::Result {
    let listener = turmoil::net::TcpListener::bind(("0.0.0.0", PORT)).await?;
    loop {
        let (stream, _) = listener.accept().await?;
        tokio::task::spawn_local(echo_connection(stream));
    }
}

async fn echo_connection(mut stream: turmoil::net::TcpStream) {
    let mut buf = Vec::with_capacity(4096);
    let mut out = Vec::with_capacity(4096);
    loop {
        let mut used = 0;
        while let Some(n) = frame_len(&buf[used..]) {
            used += n;
            out.extend_from_slice(b"+PONG\r\n");
        }
        buf.drain(..used);
        if !out.is_empty() {
            if stream.write_all(&out).await.is_err() {
                return;
            }
            out.clear();
        }
        match stream.read_buf(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
    }
}

/// Which server a simulated arm talks to.
#[derive(Clone, Copy)]
enum SimServer {
    Node,
    Echo,
}

/// Runs one whole simulation of `work` against `server`: wall seconds and
/// simulated seconds.
fn run_sim(server: SimServer, work: Work) -> (f64, f64) {
    let start = Instant::now();
    let mut sim = sim();
    match server {
        SimServer::Node => {
            let node = NodeHandle::new(NodeConfig::new("server"));
            sim.host("server", move || serve(node.clone()));
        }
        SimServer::Echo => sim.host("server", echo_server),
    }
    sim.client("app", async move {
        let mut con = sim_client("server").await?;
        match work {
            Work::Pings(n) => pings(&mut con, n).await?,
            Work::LockCycles(n) => lock_cycles(&mut con, n).await?,
        }
        Ok(())
    });
    sim.run().expect("simulation failed");
    (start.elapsed().as_secs_f64(), sim.elapsed().as_secs_f64())
}

#[derive(Clone, Copy)]
enum Work {
    Pings(u64),
    LockCycles(u64),
}

/// Lock cycles against a real server on a current-thread runtime; wall
/// seconds, connection setup included (as in the simulated arm).
fn run_real(rt: &tokio::runtime::Runtime, addr: std::net::SocketAddr, n: u64) -> f64 {
    let start = Instant::now();
    rt.block_on(async {
        let stream = tokio::net::TcpStream::connect(addr).await?;
        stream.set_nodelay(true)?;
        let mut con = common::client_on(stream, RESPONSE_TIMEOUT).await?;
        lock_cycles(&mut con, n).await
    })
    .expect("real redis lock cycles");
    start.elapsed().as_secs_f64()
}

fn median(xs: &[f64]) -> f64 {
    let mut v = xs.to_vec();
    v.sort_by(f64::total_cmp);
    let m = v.len() / 2;
    if v.len() % 2 == 1 {
        v[m]
    } else {
        (v[m - 1] + v[m]) / 2.0
    }
}

fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

struct Arm {
    name: &'static str,
    what: &'static str,
    ops: u64,
    /// Wall seconds per round.
    secs: Vec<f64>,
    /// Simulated (or, for the real arm, wall) seconds per round.
    sim_secs: Vec<f64>,
}

impl Arm {
    fn new(name: &'static str, what: &'static str, ops: u64) -> Arm {
        Arm {
            name,
            what,
            ops,
            secs: Vec::new(),
            sim_secs: Vec::new(),
        }
    }
    fn record(&mut self, (wall, simulated): (f64, f64)) {
        self.secs.push(wall);
        self.sim_secs.push(simulated);
    }
    /// Median simulated milliseconds per operation.
    fn sim_ms_per_op(&self) -> f64 {
        median(&self.sim_secs) * 1000.0 / self.ops as f64
    }
    /// Median over rounds of this arm's rate over `other`'s in the same
    /// round (a paired estimate, robust to load that changes between rounds).
    fn paired_ratio(&self, other: &Arm) -> f64 {
        let r: Vec<f64> = self
            .rates()
            .iter()
            .zip(other.rates())
            .map(|(a, b)| a / b)
            .collect();
        median(&r)
    }
    fn rates(&self) -> Vec<f64> {
        self.secs.iter().map(|s| self.ops as f64 / s).collect()
    }
    fn median_rate(&self) -> f64 {
        median(&self.rates())
    }
}

/// What one bench run measures, from the environment.
struct Settings {
    rounds: usize,
    /// The CPU to pin to; `None`: placement left to the OS.
    pin_cpu: Option<usize>,
    round_trips: u64,
    cycles: u64,
}

impl Settings {
    fn from_env() -> Settings {
        let rounds: usize = env_or("SPEED_ROUNDS", 15).max(1);
        let scale: f64 = env_or("SPEED_SCALE", 1.0_f64).max(0.01);
        let cpu_choice = std::env::var("SPEED_CPU").unwrap_or_else(|_| "0".into());
        let pin_cpu: Option<usize> = if cpu_choice == "none" {
            None
        } else {
            Some(cpu_choice.parse().unwrap_or(0))
        };
        Settings {
            rounds,
            pin_cpu,
            round_trips: (ROUND_TRIPS * scale) as u64,
            cycles: (LOCK_CYCLES * scale) as u64,
        }
    }
}

fn main() {
    // `cargo bench` passes `--bench`; `cargo test --benches` passes no
    // flag of its own but may pass a filter. Only a real bench run measures.
    let args: Vec<String> = std::env::args().skip(1).collect();
    if !args.iter().any(|a| a == "--bench") {
        println!("speed: not measuring (run with `cargo bench -p simredis --bench speed`)");
        return;
    }
    let settings = Settings::from_env();
    let cores = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(0);
    let load_before = loadavg();

    // For profiling one arm alone (no report): SPEED_ONLY=node|echo|lock.
    if let Ok(only) = std::env::var("SPEED_ONLY") {
        profile_one_arm(&only, &settings);
        return;
    }

    let me = std::process::id();
    let mut placement = Vec::new();
    let pinned = settings
        .pin_cpu
        .is_some_and(|cpu| pinned_or_noted(me, cpu, "the benchmark", &mut placement));
    let server = match harness::RedisServer::start() {
        Ok(s) => Some(s),
        Err(e) => {
            eprintln!("speed: real arm skipped: {e}");
            placement.push(format!("real arm skipped: {e}"));
            None
        }
    };
    let server_pinned = match (settings.pin_cpu, &server) {
        (Some(cpu), Some(s)) => pinned_or_noted(s.pid(), cpu, "redis-server", &mut placement),
        _ => false,
    };
    let server_addr = server.as_ref().map(|s| s.addr());
    let (arms, measured_secs) = measure(&settings, server_addr);

    let version = match &server {
        Some(_) => harness::version().unwrap_or_else(|| "unknown".into()),
        None => "not installed".into(),
    };
    let placement_line = match (pinned, server_pinned, server.is_some()) {
        (true, true, _) => format!(
            "benchmark and redis-server pinned with `taskset -a -p -c {}` (one CPU, shared)",
            settings.pin_cpu.unwrap_or(0)
        ),
        (true, false, false) => format!(
            "benchmark pinned with `taskset -a -p -c {}`",
            settings.pin_cpu.unwrap_or(0)
        ),
        _ => "not pinned (placement left to the OS)".into(),
    };
    placement.insert(0, placement_line);
    placement.push(format!(
        "1-minute load average {load_before} before, {} after (other processes on the \
         machine share the CPUs)",
        loadavg()
    ));
    placement.push(where_they_ran(me, server.as_ref().map(|s| s.pid())));

    let model = cpu_model();
    let [node, echo, sim_lock, real_lock] = &arms;
    let lock_ratio = (!real_lock.secs.is_empty()).then(|| {
        (
            sim_lock.median_rate() / real_lock.median_rate(),
            sim_lock.paired_ratio(real_lock),
        )
    });
    let arms = [node, echo, sim_lock, real_lock];
    write_report(&Report {
        model: &model,
        cores,
        version: &version,
        placement: &placement,
        rounds: settings.rounds,
        measured_secs,
        arms: &arms,
        rtt_ratio: node.median_rate() / echo.median_rate(),
        rtt_paired: node.paired_ratio(echo),
        lock_ratio,
    });
}

/// `SPEED_ONLY`: runs one arm for every round and prints its rate, for a
/// profiler; no report.
fn profile_one_arm(only: &str, settings: &Settings) {
    let (round_trips, cycles) = (settings.round_trips, settings.cycles);
    for _ in 0..settings.rounds {
        let secs = match only {
            "node" => run_sim(SimServer::Node, Work::Pings(round_trips)).0,
            "echo" => run_sim(SimServer::Echo, Work::Pings(round_trips)).0,
            _ => run_sim(SimServer::Node, Work::LockCycles(cycles)).0,
        };
        let ops = if only == "lock" { cycles } else { round_trips };
        eprintln!("{only}: {:.0}/s", ops as f64 / secs);
    }
}

/// The arms (simulated node, echo host, simulated lock cycles, real lock
/// cycles) after a warm-up and every round, interleaved; and the wall
/// seconds the rounds took. The real arm has no rounds without a server.
fn measure(settings: &Settings, server: Option<std::net::SocketAddr>) -> ([Arm; 4], f64) {
    let (rounds, round_trips, cycles) = (settings.rounds, settings.round_trips, settings.cycles);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    let mut node = Arm::new(
        "sim_node_ping",
        "PING round trips/s, simulated node",
        round_trips,
    );
    let mut echo = Arm::new(
        "sim_echo_ping",
        "PING round trips/s, bare turmoil echo",
        round_trips,
    );
    let mut sim_lock = Arm::new("sim_lock_cycles", "lock cycles/s, simulated node", cycles);
    let mut real_lock = Arm::new(
        "real_lock_cycles",
        "lock cycles/s, real redis-server on loopback",
        cycles,
    );

    // Warm-up: code paths, allocator, the server's script cache.
    run_sim(SimServer::Node, Work::Pings(round_trips / 10));
    run_sim(SimServer::Echo, Work::Pings(round_trips / 10));
    run_sim(SimServer::Node, Work::LockCycles(cycles / 10));
    if let Some(addr) = server {
        run_real(&rt, addr, cycles / 10);
    }

    let total = Instant::now();
    for round in 0..rounds {
        node.record(run_sim(SimServer::Node, Work::Pings(round_trips)));
        echo.record(run_sim(SimServer::Echo, Work::Pings(round_trips)));
        sim_lock.record(run_sim(SimServer::Node, Work::LockCycles(cycles)));
        if let Some(addr) = server {
            let secs = run_real(&rt, addr, cycles);
            real_lock.record((secs, secs));
        }
        eprintln!(
            "round {}/{rounds}: node {:.0}/s, echo {:.0}/s, sim lock {:.0}/s{}",
            round + 1,
            round_trips as f64 / node.secs[round],
            round_trips as f64 / echo.secs[round],
            cycles as f64 / sim_lock.secs[round],
            real_lock
                .secs
                .get(round)
                .map(|s| format!(", real lock {:.0}/s", cycles as f64 / s))
                .unwrap_or_default(),
        );
    }
    let measured_secs = total.elapsed().as_secs_f64();
    ([node, echo, sim_lock, real_lock], measured_secs)
}

/// Writes `reports/sim-speed.md` and `.json`, and prints the markdown.
fn write_report(report: &Report<'_>) {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../reports");
    std::fs::create_dir_all(&dir).expect("reports dir");
    let md = report.markdown();
    std::fs::write(dir.join("sim-speed.md"), &md).expect("write sim-speed.md");
    std::fs::write(dir.join("sim-speed.json"), report.json()).expect("write sim-speed.json");
    println!("{md}");
    println!("wrote reports/sim-speed.md and reports/sim-speed.json");
}

struct Report<'a> {
    model: &'a str,
    cores: usize,
    version: &'a str,
    placement: &'a [String],
    rounds: usize,
    measured_secs: f64,
    arms: &'a [&'a Arm],
    rtt_ratio: f64,
    rtt_paired: f64,
    /// Ratio of medians, median of per-round ratios.
    lock_ratio: Option<(f64, f64)>,
}

impl Report<'_> {
    fn markdown(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(s, "# Simulator speed\n");
        let _ = writeln!(
            s,
            "Written by `cargo bench -p simredis --bench speed` \
             (sim/redis/benches/speed.rs). All arms run in one process, interleaved \
             round by round ({} rounds; each figure is the median of its rounds, \
             min and max alongside). Simulated arms: turmoil, zero link latency, \
             1 ms tick, the unmodified `redis` crate client (`MultiplexedConnection`); \
             wall time of the whole simulation, build and connect included. Real arm: \
             the same client on a tokio current-thread runtime over loopback TCP, \
             connect included.\n",
            self.rounds
        );
        let _ = writeln!(
            s,
            "| per wall second | median | min | max | ops per round | simulated ms per op |"
        );
        let _ = writeln!(s, "|---|---:|---:|---:|---:|---:|");
        for a in self.arms.iter().filter(|a| !a.secs.is_empty()) {
            let r = a.rates();
            let sim_ms = if a.name.starts_with("sim") {
                format!("{:.2}", a.sim_ms_per_op())
            } else {
                "(real time)".into()
            };
            let _ = writeln!(
                s,
                "| {} | {:.0} | {:.0} | {:.0} | {} | {sim_ms} |",
                a.what,
                a.median_rate(),
                r.iter().copied().fold(f64::INFINITY, f64::min),
                r.iter().copied().fold(0.0, f64::max),
                a.ops
            );
        }
        let _ = writeln!(s);
        let _ = writeln!(
            s,
            "- **Simulated node / bare echo (round trips): {:.2}** (ratio of medians; \
             median of per-round ratios {:.2}; target ≥ 0.70: {}).",
            self.rtt_ratio,
            self.rtt_paired,
            if self.rtt_ratio >= 0.7 {
                "met"
            } else {
                "NOT met"
            }
        );
        match self.lock_ratio {
            Some((r, paired)) => {
                let _ = writeln!(
                    s,
                    "- **Simulator / real Redis (lock cycles): {r:.2}** (ratio of medians; \
                     median of per-round ratios {paired:.2}; one lock cycle = `SET key token NX PX 30000` + owner-checked \
                     release by EVALSHA of `locks::scripts::RELEASE`)."
                );
            }
            None => {
                let _ = writeln!(
                    s,
                    "- Simulator / real Redis: not measured (no redis-server)."
                );
            }
        }
        let _ = writeln!(s, "\n## Machine and placement\n");
        let _ = writeln!(s, "- CPU: {} ({} CPUs online)", self.model, self.cores);
        let _ = writeln!(s, "- redis-server: {}", self.version);
        for p in self.placement {
            let _ = writeln!(s, "- {p}");
        }
        let _ = writeln!(
            s,
            "- measured rounds took {:.1} s of wall time (warm-up excluded)",
            self.measured_secs
        );
        let _ = writeln!(
            s,
            "\nThe echo host is a minimal RESP framer that answers `+PONG` to each \
             request; the node runs the full server (parser, command table, \
             keyspace, clock, replication offset, event commit). A simulated round \
             trip costs turmoil ticks, not link latency, so these figures say how \
             many requests per wall second a simulation can push, not how fast \
             Redis is."
        );
        s
    }

    fn json(&self) -> String {
        let mut s = String::from("{\n");
        let _ = writeln!(s, "  \"cpu_model\": {:?},", self.model);
        let _ = writeln!(s, "  \"cpus\": {},", self.cores);
        let _ = writeln!(s, "  \"redis_server\": {:?},", self.version);
        let placement: Vec<String> = self.placement.iter().map(|p| format!("{p:?}")).collect();
        let _ = writeln!(s, "  \"placement\": [{}],", placement.join(", "));
        let _ = writeln!(s, "  \"rounds\": {},", self.rounds);
        let _ = writeln!(
            s,
            "  \"sim_settings\": {{\"link_latency_ms\": 0, \"tick_ms\": 1}},"
        );
        let _ = writeln!(s, "  \"arms\": {{");
        let arms: Vec<String> = self
            .arms
            .iter()
            .filter(|a| !a.secs.is_empty())
            .map(|a| {
                let rates: Vec<String> = a.rates().iter().map(|r| format!("{r:.0}")).collect();
                let sim_ms = if a.name.starts_with("sim") {
                    format!("{:.3}", a.sim_ms_per_op())
                } else {
                    "null".into()
                };
                format!(
                    "    {:?}: {{\"what\": {:?}, \"ops_per_round\": {}, \"median_per_sec\": {:.0}, \"per_round_per_sec\": [{}], \"simulated_ms_per_op\": {sim_ms}}}",
                    a.name,
                    a.what,
                    a.ops,
                    a.median_rate(),
                    rates.join(", ")
                )
            })
            .collect();
        let _ = writeln!(s, "{}", arms.join(",\n"));
        let _ = writeln!(s, "  }},");
        let _ = writeln!(s, "  \"ratio_node_over_echo\": {:.3},", self.rtt_ratio);
        let _ = writeln!(
            s,
            "  \"ratio_node_over_echo_paired_median\": {:.3},",
            self.rtt_paired
        );
        let _ = writeln!(s, "  \"ratio_target\": 0.7,");
        let (lock, lock_paired) = match self.lock_ratio {
            Some((r, p)) => (format!("{r:.3}"), format!("{p:.3}")),
            None => ("null".into(), "null".into()),
        };
        let _ = writeln!(s, "  \"ratio_sim_over_real_lock_cycles\": {lock},");
        let _ = writeln!(
            s,
            "  \"ratio_sim_over_real_lock_cycles_paired_median\": {lock_paired}"
        );
        s.push_str("}\n");
        s
    }
}
