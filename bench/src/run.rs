//! One benchmark run from start to end: servers and placement, the
//! measurement (stoppable with Ctrl-C), the clean-up, and the report.

use crate::cleanup::delete_own_keys;
use crate::env::Machine;
use crate::error::BenchError;
use crate::measure::{Measurement, Session, TTL};
use crate::options::{BenchOptions, Sizes};
use crate::placement::Pinning;
use crate::report::{Report, Settings, Touched};
use crate::servers::Servers;
use crate::stats::round3;
use crate::{targets, write};
use tokio::runtime::Runtime;

/// Runs the benchmark and writes the report into `options.out`; returns
/// the report. Progress goes to standard error; with `json`, `bench.json`
/// is also the last line of standard output. Servers we started are
/// stopped on every outcome (also on panic); keys on servers we did not
/// start are deleted after success, failure and Ctrl-C alike. An
/// unwritable `out` fails before any server starts; a write that fails
/// after measuring keeps `bench.json` elsewhere and names both places.
pub fn run(options: BenchOptions) -> Result<Report, BenchError> {
    let sizes = Sizes::from(&options);
    let machine = Machine::detect();
    // The report folder before anything else: minutes of measuring must
    // not end in a folder that cannot be written.
    write::check_writable(&options.out).map_err(BenchError::OutUnwritable)?;
    // Servers next (ours are killed on drop), then the pinning.
    let servers = Servers::start_or_use(&options.redis)?;
    if !servers.are_own() {
        check_answering(&servers)?;
    }
    let pinning = Pinning::apply(options.pin, servers.pids(), machine.cpus);
    let prefix = key_prefix();
    if !servers.are_own() {
        eprintln!(
            "bench: using {} server(s) not started here; touching only keys and channels under {prefix:?}, never flushing",
            servers.nodes().len()
        );
    }
    let session = Session::new(
        sizes,
        servers.nodes().to_vec(),
        prefix.clone(),
        pinning.clone(),
    );
    let outcome = measure_until_interrupted(&session)?;
    let keys_deleted = clean_up(&servers, &prefix, &options.redis)?;
    let measurement = outcome
        .ok_or(BenchError::Interrupted)?
        .map_err(BenchError::Measure)?;
    let report = Report {
        machine,
        // Read back while the servers still run.
        placement: pinning.read_back(),
        versions: measurement.versions,
        settings: settings(&options, &sizes, servers.are_own()),
        targets: targets::evaluate(&measurement.figures),
        figures: measurement.figures,
        touched: Touched {
            key_prefix: prefix,
            external_servers: options.redis.clone(),
            keys_deleted,
        },
    };
    drop(servers);
    let json = write::json(&report);
    if let Err(failed) = write::report_files(&options.out, &report, &json, &measurement.latency_cdf)
    {
        // The folder passed the check but failed now (a full disk): keep
        // the figures rather than lose the run.
        let saved = write::keep(&json);
        // `--json` promised the figures on standard output: keep that too,
        // once.
        if options.json && saved != write::Saved::Stdout {
            println!("{json}");
        }
        return Err(BenchError::Write { failed, saved });
    }
    print_targets(&report);
    if options.json {
        println!("{json}");
    }
    Ok(report)
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

/// The client's runtime: one thread runs every task, connection driver
/// and timer, so the client occupies exactly the CPU it is pinned to.
fn runtime() -> Result<Runtime, BenchError> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| BenchError::Measure(e.into()))
}

/// Measures until done or Ctrl-C (`None`). The runtime, and with it every
/// task of an interrupted run, is dropped before this returns.
fn measure_until_interrupted(
    session: &Session,
) -> Result<Option<anyhow::Result<Measurement>>, BenchError> {
    let rt = runtime()?;
    Ok(rt.block_on(async {
        tokio::select! {
            measured = session.measure() => Some(measured),
            _ = tokio::signal::ctrl_c() => None,
        }
    }))
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
fn check_answering(servers: &Servers) -> Result<(), BenchError> {
    let rt = runtime()?;
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
        ttl_ms: TTL.as_millis() as u64,
        own_servers,
    }
}

/// One line per target on standard error.
fn print_targets(report: &Report) {
    for t in &report.targets {
        eprintln!(
            "bench: target {}: {} (goal {}) {}",
            t.target,
            round3(t.measured),
            t.goal,
            if t.met { "met" } else { "NOT met" }
        );
    }
}
