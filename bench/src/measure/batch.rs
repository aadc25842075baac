//! A batch of the paired stage in a client process of its own.
//!
//! Some of what makes one implementation faster than another stays the
//! same for a whole process: where its code, stack and heap landed, its
//! connections. Measured in one process, that part is the same for every
//! pair, so no interval over the pairs can show it, and the next run,
//! another process, lands elsewhere: its median falls outside. So
//! `locklab bench` measures each batch of pairs in a fresh client process
//! (measuring by invocations, as Kalibera and Jones advise), and the
//! spread of the batches' medians carries the spread between processes
//! into the interval ([`Estimate::median_over_batches`]).
//!
//! The run's own process starts the program named in
//! [`BenchOptions::batch_exe`](crate::BenchOptions::batch_exe) (locklab
//! itself) with [`BATCH_ENV`] set, writes one [`BatchSpec`] line to its
//! standard input, and reads [`BatchEvent`] lines from its standard
//! output, recording each as it comes: a run stopped half-way keeps every
//! pair its batches reported. The child uses the batch's servers (fresh
//! ones when the run's are its own), the run's key prefix and the
//! client's CPU (where it is born), and ignores Ctrl-C,
//! which the run's process handles: it kills the child (also when it
//! panics: the child is killed when its handle is dropped), puts node 0
//! back on its CPU and deletes the run's keys. The child's input stays
//! open while the run's process lives; should that process be killed
//! outright, the input closes and the child ends at once.
//!
//! [`Estimate::median_over_batches`]: crate::interval::Estimate::median_over_batches

use super::{RefPhase, Session};
use crate::client::Node;
use crate::options::{BenchOptions, Sizes};
use crate::placement::Pinning;
use crate::stats::{histogram, record_n};
use crate::targets::{self, PairSample, Placement};
use crate::workload::CycleSample;
use anyhow::Context as _;
use serde::{Deserialize, Serialize};
use std::io::{BufRead, Write};
use std::path::PathBuf;
use std::process::{ExitCode, Stdio};
use std::time::{Duration, Instant};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};

/// The environment variable that makes locklab a batch's client process.
pub const BATCH_ENV: &str = "LOCKLAB_BENCH_BATCH";

/// What the run was asked for that decides its sizes: the child derives
/// the same [`Sizes`] from it.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub struct Asked {
    quick: bool,
    slice_ms: Option<u64>,
    rounds: Option<u32>,
    target_budget_ms: Option<u64>,
}

impl Asked {
    /// What `options` ask for.
    pub fn of(options: &BenchOptions) -> Asked {
        Asked {
            quick: options.quick,
            slice_ms: options.slice_ms,
            rounds: options.rounds,
            target_budget_ms: options.target_budget.map(|d| d.as_millis() as u64),
        }
    }

    fn sizes(&self) -> Sizes {
        Sizes::from(&BenchOptions {
            quick: self.quick,
            slice_ms: self.slice_ms,
            rounds: self.rounds,
            target_budget: self.target_budget_ms.map(Duration::from_millis),
            ..BenchOptions::default()
        })
    }
}

/// How a run starts its batches' client processes.
#[derive(Debug, Clone)]
pub struct Launcher {
    /// The program: locklab.
    pub exe: PathBuf,
    /// The sizes asked for.
    pub asked: Asked,
}

/// What a batch's client process is to do, one JSON line on its input.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct BatchSpec {
    /// Which batch (from 0).
    pub batch: u32,
    /// How long it measures, ms.
    pub duration_ms: u64,
    /// The run's sizes.
    pub asked: Asked,
    /// `redis://host:port` of the batch's nodes, node 0 first.
    pub nodes: Vec<String>,
    /// The run's key prefix.
    pub prefix: String,
    /// Whether the run pinned its processes.
    pub pinned: bool,
    /// CPUs online.
    pub cpus: usize,
    /// The batch's servers, node 0 first, when they are ours (empty
    /// otherwise): node 0 is moved beside the client for the same-CPU
    /// comparisons.
    pub server_pids: Vec<u32>,
    /// The [`Comparison::id`](crate::targets::Comparison::id)s to measure.
    pub comparisons: Vec<String>,
}

/// A reference slice, as a batch reports it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RefSample {
    /// Where node 0 ran.
    pub placement: Placement,
    /// `PING`s answered.
    pub ops: u64,
    /// `PING`s failed.
    pub errors: u64,
    /// The slice's length, µs.
    pub elapsed_us: u64,
    /// The round trips: (µs, how many), from the histogram.
    pub round_trips: Vec<(u64, u64)>,
}

impl RefSample {
    /// `sample`, taken in `placement`.
    pub fn of(placement: Placement, sample: &CycleSample) -> RefSample {
        RefSample {
            placement,
            ops: sample.ops,
            errors: sample.errors,
            elapsed_us: sample.elapsed.as_micros() as u64,
            round_trips: sample
                .hist
                .iter_recorded()
                .map(|v| (v.value_iterated_to(), v.count_at_value()))
                .collect(),
        }
    }

    /// The slice again.
    pub fn sample(&self) -> CycleSample {
        let mut hist = histogram();
        for &(us, count) in &self.round_trips {
            record_n(&mut hist, us, count);
        }
        CycleSample {
            ops: self.ops,
            errors: self.errors,
            elapsed: Duration::from_micros(self.elapsed_us),
            hist,
            median_cycle: None,
        }
    }
}

/// What a batch measured, one at a time as it measures.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum BatchEvent {
    /// A reference `PING` slice, at the start of a round.
    Reference(RefSample),
    /// A warm-up pair of a comparison, discarded.
    Warmup {
        /// The comparison's id.
        comparison: String,
        /// The time it took, s.
        seconds: f64,
    },
    /// A pair that counts.
    Pair {
        /// The comparison's id.
        comparison: String,
        /// What both sides measured.
        pair: PairSample,
        /// The time it took, s.
        seconds: f64,
    },
    /// A round ended.
    Round {
        /// The batch (from 0).
        batch: u32,
        /// The round within it (from 1).
        round: u32,
    },
}

impl Session {
    /// Records `event` of a batch.
    pub(super) fn apply(&self, event: BatchEvent) {
        match event {
            BatchEvent::Reference(r) => {
                let sample = r.sample();
                self.with(|p| {
                    p.reference
                        .add(RefPhase::BetweenPairs, r.placement, &sample)
                });
            }
            BatchEvent::Warmup {
                comparison,
                seconds,
            } => self.with(|p| {
                if let Some(record) = p.comparisons.iter_mut().find(|c| c.id == comparison) {
                    record.warmup_pairs += 1;
                    record.seconds += seconds;
                }
            }),
            BatchEvent::Pair {
                comparison,
                pair,
                seconds,
            } => self.with(|p| {
                if let Some(record) = p.comparisons.iter_mut().find(|c| c.id == comparison) {
                    record.pairs.push(pair);
                    record.seconds += seconds;
                }
            }),
            BatchEvent::Round { batch, round } => self.report_round(batch, round),
        }
    }

    /// Runs batch `spec` in a fresh process of `launcher`, recording what
    /// it reports as it comes. The process is killed if this future is
    /// dropped (Ctrl-C); one that fails, says something unreadable, or
    /// outlasts its time by [`OVERRUN`] is killed and waited for, and
    /// fails the batch, naming it and how it ended.
    pub(super) async fn batch_in_child(
        &self,
        launcher: &Launcher,
        spec: &BatchSpec,
    ) -> anyhow::Result<()> {
        let which = format!("batch {} ({})", spec.batch + 1, launcher.exe.display());
        let mut child = tokio::process::Command::new(&launcher.exe)
            .env(BATCH_ENV, "1")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .with_context(|| format!("starting {which}"))?;
        let servers: Vec<String> = spec.server_pids.iter().map(u32::to_string).collect();
        self.progress(&format!(
            "targets: batch {} of {} in client process {}{}",
            spec.batch + 1,
            self.sizes.batches,
            child.id().unwrap_or(0),
            if servers.is_empty() {
                String::new()
            } else {
                format!(", on fresh servers {}", servers.join(" "))
            }
        ));
        let deadline =
            tokio::time::Instant::now() + Duration::from_millis(spec.duration_ms) + OVERRUN;
        // Its input stays open while it runs: when it closes (this
        // process gone, however), the child ends.
        let mut input = child.stdin.take().context("the batch's input")?;
        let output = child.stdout.take().context("the batch's output")?;
        let talk = async {
            let mut line = serde_json::to_string(spec)?;
            line.push('\n');
            input.write_all(line.as_bytes()).await?;
            input.flush().await?;
            let mut lines = BufReader::new(output).lines();
            while let Some(line) = lines.next_line().await? {
                let event: BatchEvent = serde_json::from_str(&line)
                    .with_context(|| format!("it said {line:?}, not an event"))?;
                self.apply(event);
            }
            anyhow::Ok(())
        };
        let talked = match tokio::time::timeout_at(deadline, talk).await {
            Ok(talked) => talked,
            Err(_) => Err(anyhow::anyhow!(
                "it was still measuring {} s after its time",
                OVERRUN.as_secs()
            )),
        };
        if let Err(e) = talked {
            // Killed and reaped before anyone moves node 0 back.
            let _ = child.kill().await;
            let status = child.wait().await.ok();
            anyhow::bail!(
                "{which} failed ({}): {e:#}",
                status.map_or("status unknown".to_string(), |s| s.to_string())
            );
        }
        let status = child.wait().await?;
        drop(input);
        anyhow::ensure!(status.success(), "{which} ended with {status}");
        Ok(())
    }
}

/// How long a batch's process may go on past its time before it is
/// killed: far more than one pair takes.
const OVERRUN: Duration = Duration::from_secs(30);

/// When this process was started as a batch's client process (with
/// [`BATCH_ENV`] set), runs the batch its input describes and returns the
/// exit code; `None` otherwise. Called first thing by locklab's `main`.
pub fn child_main() -> Option<ExitCode> {
    std::env::var_os(BATCH_ENV)?;
    Some(match run_child() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("bench batch: {e:#}");
            ExitCode::FAILURE
        }
    })
}

/// Reads the spec, measures the batch, writes its events.
fn run_child() -> anyhow::Result<()> {
    let rt = crate::client::runtime()?;
    // Ctrl-C reaches the whole process group; the run's process handles
    // it (and kills this one), so it must not end us first: caught before
    // anything else, and never read.
    let _ignore_interrupt = {
        let _in_runtime = rt.enter();
        tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt())?
    };
    let mut line = String::new();
    std::io::stdin().lock().read_line(&mut line)?;
    let spec: BatchSpec =
        serde_json::from_str(&line).with_context(|| format!("the batch spec {line:?}"))?;
    let comparisons = spec
        .comparisons
        .iter()
        .map(|id| targets::comparison(id).with_context(|| format!("no comparison {id:?}")))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let nodes = spec
        .nodes
        .iter()
        .map(|u| Node::from_url(u))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let pinning = Pinning::for_batch(spec.pinned, spec.cpus, spec.server_pids.clone());
    let session = Session::new(spec.asked.sizes(), nodes, spec.prefix.clone(), pinning);
    let measured = rt.block_on(async {
        // The run's process keeps our input open while it lives: its end
        // (killed outright, even) closes it, and this process ends too,
        // wherever it is waiting.
        tokio::spawn(async {
            let mut rest = Vec::new();
            let _ = tokio::io::stdin().read_to_end(&mut rest).await;
            eprintln!("bench batch: the run's process is gone; stopping");
            std::process::exit(2);
        });
        let until = Instant::now() + Duration::from_millis(spec.duration_ms);
        let reference = session.reference_floor().await?;
        let mut out = std::io::stdout();
        let mut emit = |event: BatchEvent| -> anyhow::Result<()> {
            let mut line = serde_json::to_string(&event)?;
            line.push('\n');
            // A failed write: the run's process is gone; so is this one.
            out.write_all(line.as_bytes())?;
            out.flush()?;
            Ok(())
        };
        session
            .batch(spec.batch, until, &comparisons, &reference, &mut emit)
            .await
    });
    // Not waiting for the read of the input, which ends only when the
    // run's process closes it, after this one has ended.
    rt.shutdown_background();
    measured
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::record;
    use crate::targets::SideSample;

    #[test]
    fn events_read_back_as_written() {
        let pair = PairSample {
            a: SideSample {
                rate: 1234.5,
                wait_p999_us: 77,
                wait_p999_lower_bound: true,
                fairness: 0.99,
                ..SideSample::default()
            },
            b: SideSample::default(),
            a_first: false,
            batch: 3,
        };
        let event = BatchEvent::Pair {
            comparison: "set-nx-px/floor split".to_string(),
            pair,
            seconds: 0.1,
        };
        let line = serde_json::to_string(&event).unwrap();
        match serde_json::from_str(&line).unwrap() {
            BatchEvent::Pair { pair: back, .. } => assert_eq!(back, pair),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_reference_slice_keeps_its_round_trips_across_processes() {
        let mut hist = histogram();
        for us in [30, 31, 31, 95, 120] {
            record(&mut hist, us);
        }
        let sample = CycleSample {
            ops: 5,
            errors: 1,
            elapsed: Duration::from_millis(50),
            hist,
            median_cycle: None,
        };
        let line = serde_json::to_string(&RefSample::of(Placement::SameCpu, &sample)).unwrap();
        let back: RefSample = serde_json::from_str(&line).unwrap();
        let again = back.sample();
        assert_eq!(back.placement, Placement::SameCpu);
        assert_eq!((again.ops, again.errors), (5, 1));
        assert_eq!(again.hist.len(), 5);
        for q in [0.0, 0.5, 0.8, 1.0] {
            assert_eq!(
                again.hist.value_at_quantile(q),
                sample.hist.value_at_quantile(q)
            );
        }
        assert!((again.rate() - sample.rate()).abs() < 1e-9);
    }
}
