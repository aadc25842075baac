//! One benchmark run from start to end: servers and placement, the
//! measurement (stoppable with Ctrl-C or `SIGTERM`), the clean-up, and the
//! report, complete or partial.

use crate::assemble::{self, Context};
use crate::cleanup::delete_own_keys;
use crate::client::{self, Node, Service};
use crate::env::Machine;
use crate::error::BenchError;
use crate::measure::{Asked, Launcher, ServerAt, Session, TTL};
use crate::noise;
use crate::options::{BenchOptions, Sizes};
use crate::placement::Pinning;
use crate::report::{BesideRedis, Partial, Report, Settings, Touched};
use crate::servers::Servers;
use crate::sim_node::SimNode;
use crate::targets::Verdict;
use crate::write;
use harness::etcd::EtcdServer;
use harness::mariadb::MariaDbServer;
use harness::postgres::PgServer;
use harness::zookeeper::ZkServer;
use std::any::Any;
use std::time::Duration;
use tokio::runtime::Runtime;
use tokio::signal::unix::{Signal, SignalKind, signal};

/// Runs the benchmark and writes the report into `options.out`; returns
/// the report. Progress goes to standard error. Servers we started are
/// stopped on every outcome (also on panic, and by their watchers should
/// this process be killed); keys on servers we did not start are deleted
/// after success, failure and interruption alike. An unwritable `out`
/// fails before any server starts; a write that fails after measuring
/// keeps `bench.json` elsewhere and names both places.
///
/// Ctrl-C or `SIGTERM` stops the measuring: the servers are stopped, what
/// was measured so far goes to `bench-partial.json` and
/// `bench-partial.md` (marked partial; a complete report of an earlier
/// run is left alone), and the run ends with
/// [`BenchError::Interrupted`]. A measurement that fails keeps its partial
/// report the same way.
pub fn run(options: BenchOptions) -> Result<Report, BenchError> {
    run_keeping(options, &mut None)
}

/// As [`run`], and also leaves the report in `kept` whenever one was
/// assembled: when partial, or when its files could not be written, too
/// (for `locklab bench --json`, which prints it in every case).
pub fn run_keeping(options: BenchOptions, kept: &mut Option<Report>) -> Result<Report, BenchError> {
    let sizes = Sizes::from(&options);
    let machine = Machine::detect();
    // The report folder before anything else: minutes of measuring must
    // not end in a folder that cannot be written.
    write::check_writable(&options.out).map_err(BenchError::OutUnwritable)?;
    let load_at_start = noise::load_average();
    // The signals are caught from here on, so that one arriving while the
    // servers start still ends in a clean stop.
    let rt = runtime()?;
    let mut stop = Stop::install(&rt)?;
    // Servers next (ours are killed on drop), then the pinning.
    let servers = Servers::start_or_use(&options.redis)?;
    if !servers.are_own() {
        check_answering(&rt, &servers)?;
    }
    let mut pinning = Pinning::apply(options.pin, servers.pids(), machine.cpus);
    // After the pinning: its threads go on node 0's CPU, not the client's.
    let simulated = SimNode::start(pinning.simulated_node_cpu()).map_err(BenchError::Measure)?;
    pinning.note_simulated_node(simulated.threads());
    // Each service's server, stopped when its handle drops.
    let (beside_servers, beside_at): (Vec<_>, Vec<_>) = Service::ALL
        .into_iter()
        .map(|service| {
            let (server, at) = start_service(service, &mut pinning);
            (server, (service, at))
        })
        .unzip();
    let prefix = key_prefix();
    if !servers.are_own() {
        eprintln!(
            "bench: using {} server(s) not started here; touching only keys and channels under {prefix:?}, never flushing",
            servers.nodes().len()
        );
    }
    let mut session = Session::new(
        sizes,
        servers.nodes().to_vec(),
        prefix.clone(),
        pinning.clone(),
    )
    .with_progress(options.progress.clone())
    .with_fresh_servers(servers.are_own())
    .with_launcher(options.batch_exe.clone().map(|exe| Launcher {
        exe,
        asked: Asked::of(&options),
    }))
    .with_simulated_node(Some(simulated.node().clone()));
    for (service, at) in beside_at {
        session = session.with_beside(service, Some(at));
    }
    let outcome = rt.block_on(async {
        tokio::select! {
            measured = session.measure() => Outcome::Done(measured),
            stopped_by = stop.recv() => Outcome::Stopped(stopped_by),
        }
    });
    // Ctrl-C at a terminal reaches the servers and the batch's process
    // too, whose going away can fail the measurement a moment before the
    // signal is seen here: then the signal is what stopped it.
    let outcome = match outcome {
        Outcome::Done(Err(e)) => rt
            .block_on(tokio::time::timeout(SIGNAL_GRACE, stop.recv()))
            .map_or(Outcome::Done(Err(e)), Outcome::Stopped),
        done => done,
    };
    // Every task of an interrupted measurement goes with its runtime.
    drop(rt);
    // A batch's process stopped with node 0 beside it left it there.
    pinning.node0_home();
    let progress = session.take_progress();
    let keys_deleted = clean_up(&servers, &prefix, &options.redis)?;
    let partial = match &outcome {
        Outcome::Done(Ok(())) => None,
        Outcome::Done(Err(e)) => Some(format!("error: {e:#}")),
        Outcome::Stopped(signal) => Some(signal.to_string()),
    }
    .map(|stopped_by| Partial {
        stopped_by,
        after_s: (session.elapsed().as_secs_f64() * 10.0).round() / 10.0,
        completed: progress.completed.clone(),
    });
    let context = Context {
        machine,
        // Read back while the servers still run.
        placement: pinning.read_back(),
        settings: settings(&options, &sizes, servers.are_own()),
        sizes,
        batch_processes: options.batch_exe.is_some(),
        touched: Touched {
            key_prefix: prefix,
            external_servers: options.redis.clone(),
            keys_deleted,
        },
        load_average: [load_at_start, noise::load_average()],
        partial,
    };
    let (report, latency_cdf) = assemble::report(progress, context);
    *kept = Some(report.clone());
    drop(servers);
    drop(simulated);
    drop(beside_servers);
    let json = write::json(&report);
    if report.partial.is_some() {
        keep_partial(&options, &report, &json);
        return Err(match outcome {
            Outcome::Done(Err(e)) => BenchError::Measure(e),
            Outcome::Done(Ok(())) | Outcome::Stopped(_) => BenchError::Interrupted,
        });
    }
    if let Err(failed) = write::report_files(&options.out, &report, &json, &latency_cdf) {
        // The folder passed the check but failed now (a full disk): keep
        // the figures rather than lose the run.
        let saved = write::keep(&json);
        return Err(BenchError::Write { failed, saved });
    }
    print_targets(&report);
    Ok(report)
}

/// Measures the etcd rows alone (see [`crate::report::BesideRedis`]):
/// starts one redis-server and one etcd member on loopback, not pinned,
/// and measures uncontended slices of `slice` in `rounds` rounds and
/// hand-off slices of `handoff_slice` in `handoff_rounds` rounds. The
/// full run measures the same rows among the rest; this is for tests and
/// a quick look. Without etcd, the rows come back skipped, saying why;
/// without redis-server, the error says so.
pub fn etcd_rows(
    slice: Duration,
    rounds: u32,
    handoff_slice: Duration,
    handoff_rounds: u32,
) -> Result<BesideRedis, BenchError> {
    rows_beside_redis(Service::Etcd, slice, rounds, handoff_slice, handoff_rounds)
}

/// As [`etcd_rows`], the ZooKeeper rows, on a ZooKeeper server started
/// for speed. Without ZooKeeper, the rows come back skipped, saying why.
pub fn zookeeper_rows(
    slice: Duration,
    rounds: u32,
    handoff_slice: Duration,
    handoff_rounds: u32,
) -> Result<BesideRedis, BenchError> {
    rows_beside_redis(
        Service::ZooKeeper,
        slice,
        rounds,
        handoff_slice,
        handoff_rounds,
    )
}

/// As [`etcd_rows`], the PostgreSQL rows, on a PostgreSQL server of their
/// own. Without PostgreSQL, the rows come back skipped, saying why.
pub fn postgres_rows(
    slice: Duration,
    rounds: u32,
    handoff_slice: Duration,
    handoff_rounds: u32,
) -> Result<BesideRedis, BenchError> {
    rows_beside_redis(
        Service::Postgres,
        slice,
        rounds,
        handoff_slice,
        handoff_rounds,
    )
}

/// As [`etcd_rows`], the MariaDB row (`mysql-get-lock`), on a MariaDB
/// server of its own. Without MariaDB, the rows come back skipped, saying
/// why.
pub fn mysql_rows(
    slice: Duration,
    rounds: u32,
    handoff_slice: Duration,
    handoff_rounds: u32,
) -> Result<BesideRedis, BenchError> {
    rows_beside_redis(Service::MySql, slice, rounds, handoff_slice, handoff_rounds)
}

/// Measures the rows of `service` alone, as [`etcd_rows`] says.
fn rows_beside_redis(
    service: Service,
    slice: Duration,
    rounds: u32,
    handoff_slice: Duration,
    handoff_rounds: u32,
) -> Result<BesideRedis, BenchError> {
    let options = BenchOptions {
        slice_ms: Some(slice.as_millis().max(1) as u64),
        rounds: Some(rounds),
        pin: false,
        ..BenchOptions::default()
    };
    let mut sizes = Sizes::from(&options);
    sizes.contention_slice = handoff_slice;
    sizes.contention_rounds = handoff_rounds.max(1);
    let rt = runtime()?;
    let servers = Servers::start_fresh(1)?;
    let mut pinning = Pinning::apply(false, servers.pids(), Machine::detect().cpus);
    // The server is stopped when its handle drops, at return.
    let (_server, at) = start_service(service, &mut pinning);
    let session = Session::new(sizes, servers.nodes().to_vec(), key_prefix(), pinning)
        .with_beside(service, Some(at));
    let measured = rt
        .block_on(session.beside(service))
        .map_err(BenchError::Measure)?;
    measured.ok_or_else(|| {
        BenchError::Measure(anyhow::anyhow!(
            "the {} rows were not measured",
            service.name()
        ))
    })
}

/// The server of `service`'s rows, started and placed (see
/// [`start_beside`]); its handle stops it when dropped.
fn start_service(service: Service, pinning: &mut Pinning) -> (Option<Box<dyn Any>>, ServerAt) {
    fn boxed<S: Any>((server, at): (Option<S>, ServerAt)) -> (Option<Box<dyn Any>>, ServerAt) {
        (server.map(|s| Box::new(s) as Box<dyn Any>), at)
    }
    match service {
        Service::Etcd => boxed(start_etcd(pinning)),
        Service::ZooKeeper => boxed(start_zookeeper(pinning)),
        Service::Postgres => boxed(start_beside(
            service,
            "server",
            pinning,
            PgServer::start().map(|server| {
                let (pid, node) = (server.pid(), Node::postgres(&server));
                (server, pid, node)
            }),
        )),
        Service::MySql => boxed(start_beside(
            service,
            "server",
            pinning,
            MariaDbServer::start().map(|server| {
                let (pid, node) = (server.pid(), Node::mariadb(&server));
                (server, pid, node)
            }),
        )),
    }
}

/// Starts the etcd member of the etcd rows (see [`start_beside`]).
fn start_etcd(pinning: &mut Pinning) -> (Option<EtcdServer>, ServerAt) {
    start_beside(
        Service::Etcd,
        "member",
        pinning,
        EtcdServer::start().map(|member| {
            let (pid, node) = (member.pid(), Node::etcd(&member));
            (member, pid, node)
        }),
    )
}

/// Starts the ZooKeeper server of the ZooKeeper rows (see
/// [`start_beside`]), its JVM with the full JIT: the rows compare steady
/// states.
fn start_zookeeper(pinning: &mut Pinning) -> (Option<ZkServer>, ServerAt) {
    start_beside(
        Service::ZooKeeper,
        "server",
        pinning,
        ZkServer::start_for_speed().map(|server| {
            let (pid, node) = (server.pid(), Node::zookeeper(&server));
            (server, pid, node)
        }),
    )
}

/// Places the server `started` of `service` (a `what` of it) as `pinning`
/// says; when none could be started (the service not installed, or it
/// failed), its rows are skipped, saying why, and the run goes on. The
/// server is stopped, by its pid, when the returned handle drops.
fn start_beside<S>(
    service: Service,
    what: &str,
    pinning: &mut Pinning,
    started: std::io::Result<(S, u32, Node)>,
) -> (Option<S>, ServerAt) {
    let name = service.name();
    match started {
        Ok((server, pid, node)) => {
            eprintln!(
                "bench: {name} {what} pid {pid} on {} for the {name} rows",
                node.addr
            );
            pinning.place(service, pid);
            (Some(server), ServerAt::Server(node))
        }
        Err(e) => {
            let why = format!("no {name} {what} could be started: {e}");
            eprintln!("bench: {name} rows skipped: {why}");
            (None, ServerAt::Skipped(why))
        }
    }
}

/// How long a failed measurement waits for a signal that may have caused
/// the failure.
const SIGNAL_GRACE: std::time::Duration = std::time::Duration::from_millis(200);

/// How the measurement ended.
enum Outcome {
    /// It ran to its end, or failed.
    Done(anyhow::Result<()>),
    /// A signal stopped it; which.
    Stopped(&'static str),
}

/// Ctrl-C and `SIGTERM`, caught.
struct Stop {
    interrupt: Signal,
    terminate: Signal,
}

impl Stop {
    /// Catches both signals from now on (for the rest of the process: a
    /// second one during the clean-up is ignored, so the clean-up ends).
    fn install(rt: &Runtime) -> Result<Stop, BenchError> {
        let _in_runtime = rt.enter();
        let catch = |kind| signal(kind).map_err(|e| BenchError::Measure(e.into()));
        Ok(Stop {
            interrupt: catch(SignalKind::interrupt())?,
            terminate: catch(SignalKind::terminate())?,
        })
    }

    /// The next signal: `SIGINT` or `SIGTERM`.
    async fn recv(&mut self) -> &'static str {
        tokio::select! {
            _ = self.interrupt.recv() => "SIGINT (Ctrl-C)",
            _ = self.terminate.recv() => "SIGTERM",
        }
    }
}

/// Writes the partial report and says where; a failure to write it is
/// said too (the run fails either way).
fn keep_partial(options: &BenchOptions, report: &Report, json: &str) {
    let stopped_by = report
        .partial
        .as_ref()
        .map_or("", |p| p.stopped_by.as_str());
    eprintln!("bench: stopped by {stopped_by}; servers stopped");
    match write::partial_files(&options.out, report, json) {
        Ok(md) => eprintln!(
            "bench: what was measured until then is in {} and bench-partial.json (marked partial)",
            md.display()
        ),
        Err(e) => {
            let saved = write::keep(json);
            eprintln!("bench: writing the partial report: {e}; kept as {saved:?}");
        }
    }
}

/// A prefix no other run shares: every key and channel of this run
/// carries it, so that only those are deleted at the end.
fn key_prefix() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    format!("locklab:bench:{}-{nanos:x}:", std::process::id())
}

/// The client's runtime ([`client::runtime`]), its failure a measuring
/// error.
fn runtime() -> Result<Runtime, BenchError> {
    client::runtime().map_err(|e| BenchError::Measure(e.into()))
}

/// Deletes this run's keys from servers it did not start (in a fresh
/// runtime: an interrupted run's was dropped) and says what it touched;
/// returns how many keys were deleted. Our own servers need nothing: they
/// are stopped.
fn clean_up(servers: &Servers, prefix: &str, urls: &[String]) -> Result<u64, BenchError> {
    if servers.are_own() {
        return Ok(0);
    }
    let deleted = runtime()?.block_on(delete_own_keys(servers.nodes(), prefix));
    eprintln!(
        "bench: touched keys and channels under {prefix:?} on {}; deleted {deleted} keys; nothing else",
        urls.join(", ")
    );
    Ok(deleted)
}

/// Fails, naming the URL, unless every server given by URL answers within
/// [`ANSWER_WITHIN`](crate::client::ANSWER_WITHIN): a wrong URL is found
/// before anything is measured, and never hangs the run.
fn check_answering(rt: &Runtime, servers: &Servers) -> Result<(), BenchError> {
    for node in servers.nodes() {
        rt.block_on(node.check_answers())
            .map_err(BenchError::BadUrl)?;
    }
    Ok(())
}

/// How the run was sized, for the report.
fn settings(options: &BenchOptions, sizes: &Sizes, own_servers: bool) -> Settings {
    Settings {
        quick: options.quick,
        slice_ms: sizes.slice.as_millis() as u64,
        contention_slice_ms: sizes.contention_slice.as_millis() as u64,
        rounds: sizes.rounds,
        contention_rounds: sizes.contention_rounds,
        ttl_ms: TTL.as_millis() as u64,
        own_servers,
    }
}

/// One line per target on standard error.
fn print_targets(report: &Report) {
    for t in &report.targets {
        let figure = t
            .estimate
            .as_ref()
            .map_or("–".to_string(), crate::markdown::figure);
        eprintln!(
            "bench: target {}: {figure} (goal {}) {}{}",
            t.target,
            t.goal,
            if t.verdict == Verdict::NotMet {
                "NOT MET"
            } else {
                t.verdict.text()
            },
            if matches!(t.verdict, Verdict::Met | Verdict::NotMet) {
                String::new()
            } else {
                format!(": {}", t.reason)
            }
        );
    }
}
