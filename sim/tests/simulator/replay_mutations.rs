//! `locklab replay` on damaged run folders. A few real runs are recorded
//! (the folders `locklab run` writes), then copies of them are damaged one
//! way each: a file deleted, emptied, truncated, a byte flipped, inserted
//! or deleted, one history event changed, the verdict changed, CRLF line
//! endings, a file far over the read bound, a folder where a file should
//! be, bytes that are not UTF-8. The property: the replay never panics or
//! hangs; it reports "identical" for an untouched folder and for nothing
//! else, but for two edits that change nothing it vouches for: a
//! `scenario.toml` edited so that the cell still runs the same (a comment,
//! the description, a `max_wait_ms` longer than any client waited: replay
//! checks that the file reproduces the run, and a run of the edited file
//! apart from the replay confirms it does), and a `verdict.json` written by
//! another locklab version; otherwise it reports a difference, or an error
//! naming the damaged file.
//!
//! The damage is drawn from a fixed seed: every run of the test command
//! checks the same folders.

use crate::common;

use model::scenario::Scenario;
use proptest::prelude::*;
use proptest::test_runner::{Config, RngSeed, TestCaseError, TestRunner};
use report::replay::{MAX_RUN_FILE_BYTES, Replayed, replay_with};
use sim::cell::run_cell;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

/// The seed the damage is drawn from.
const SEED: u64 = 20_261_125;
/// How many damaged folders (each replayed: about 5 s).
const CASES: u32 = 150;
/// The most history events a replayed run may record. A run's cost is its
/// events, so this bounds a replay's time without reading the machine's
/// clock, which a loaded machine slows. Damage that leaves a valid
/// scenario may still grow a run (a longer duration, more clients); the
/// largest of the 150 replays records 73 events.
const MOST_EVENTS: usize = 10_000;
/// The files of a run folder.
const FILES: [&str; 4] = [
    "scenario.toml",
    "history.jsonl",
    "verdict.json",
    "timeline.svg",
];
/// The recorded runs: scenario, rung (the seed is the scenario's first).
const RUNS: [(&str, &str); 4] = [
    ("pause-at-release-start", "set-nx-px"),
    ("crash-in-critical-section", "setnx"),
    ("failover-loses-fence-counter", "fenced"),
    ("nested-acquire", "reentrant"),
];

/// One way to damage a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Damage {
    Delete,
    Empty,
    Truncate(u64),
    FlipBit(u64, u8),
    InsertByte(u64, u8),
    DeleteByte(u64),
    /// History only: one field of one event.
    ChangeEvent(u64),
    /// `verdict.json` only: another verdict.
    ChangeVerdict(u64),
    Crlf,
    /// Longer than [`MAX_RUN_FILE_BYTES`] (a sparse file: nothing written).
    Huge,
    /// A folder where the file was.
    Folder,
    /// A byte that is not UTF-8.
    NotUtf8(u64),
}

fn damage() -> impl Strategy<Value = (usize, usize, Damage)> {
    let at = any::<u64>();
    let kind = prop_oneof![
        Just(Damage::Delete),
        Just(Damage::Empty),
        at.prop_map(Damage::Truncate),
        (any::<u64>(), 0u8..8).prop_map(|(p, b)| Damage::FlipBit(p, b)),
        (any::<u64>(), any::<u8>()).prop_map(|(p, b)| Damage::InsertByte(p, b)),
        any::<u64>().prop_map(Damage::DeleteByte),
        any::<u64>().prop_map(Damage::ChangeEvent),
        any::<u64>().prop_map(Damage::ChangeVerdict),
        Just(Damage::Crlf),
        Just(Damage::Huge),
        Just(Damage::Folder),
        any::<u64>().prop_map(Damage::NotUtf8),
    ];
    (0..RUNS.len(), 0..FILES.len(), kind)
}

/// Replays `dir` on the simulator, as `locklab replay` does.
fn replay(dir: &Path) -> Result<Replayed, String> {
    replay_with(dir, run_cell)
}

/// The most events any replay of this test recorded, for its summary line.
static MOST_EVENTS_RECORDED: AtomicUsize = AtomicUsize::new(0);

/// [`replay`], and how many events the replayed run recorded (0 when the
/// folder did not get as far as a run).
fn replay_counting(dir: &Path) -> (Result<Replayed, String>, usize) {
    let events = std::cell::Cell::new(0);
    let replayed = replay_with(dir, |scenario: &Scenario, rung: &str, seed: u64| {
        run_cell(scenario, rung, seed).inspect(|judged| events.set(judged.history.events().len()))
    });
    MOST_EVENTS_RECORDED.fetch_max(events.get(), Ordering::Relaxed);
    (replayed, events.get())
}

fn scratch() -> PathBuf {
    std::env::temp_dir().join(format!("sim-replay-mutations-{}", std::process::id()))
}

/// Records the runs; returns their folders and seeds.
fn record(root: &Path) -> Vec<(PathBuf, u64)> {
    RUNS.iter()
        .map(|(name, rung)| {
            let (scenario, text) = common::scenario_with_text(name);
            let judged = run_cell(&scenario, rung, scenario.seeds[0])
                .unwrap_or_else(|e| panic!("{name}/{rung}: {e}"));
            let dir = report::output::run_dir(root, &judged);
            report::output::write_run(&dir, &judged, &text).unwrap_or_else(|e| panic!("{e}"));
            (dir, judged.seed)
        })
        .collect()
}

fn copy_folder(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for file in FILES {
        std::fs::copy(from.join(file), to.join(file)).unwrap();
    }
}

/// Applies `damage` to `path`; false when it does not apply to this file
/// (it would leave the bytes as they are).
fn apply(path: &Path, damage: Damage) -> bool {
    let bytes = std::fs::read(path).unwrap();
    let len = bytes.len() as u64;
    let at = |p: u64| (p % len.max(1)) as usize;
    let text = String::from_utf8_lossy(&bytes).into_owned();
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    let new: Vec<u8> = match damage {
        Damage::Delete => {
            std::fs::remove_file(path).unwrap();
            return true;
        }
        Damage::Folder => {
            std::fs::remove_file(path).unwrap();
            std::fs::create_dir(path).unwrap();
            return true;
        }
        Damage::Huge => {
            std::fs::File::options()
                .write(true)
                .open(path)
                .and_then(|f| f.set_len(MAX_RUN_FILE_BYTES + 1))
                .unwrap();
            return true;
        }
        Damage::Empty => Vec::new(),
        Damage::Truncate(p) => bytes[..at(p)].to_vec(),
        Damage::FlipBit(p, b) => {
            let mut v = bytes.clone();
            v[at(p)] ^= 1 << b;
            v
        }
        Damage::InsertByte(p, b) => {
            let mut v = bytes.clone();
            v.insert(at(p), b);
            v
        }
        Damage::DeleteByte(p) => {
            let mut v = bytes.clone();
            v.remove(at(p));
            v
        }
        Damage::NotUtf8(p) => {
            let mut v = bytes.clone();
            v.insert(at(p), 0xff);
            v
        }
        Damage::Crlf => text.replace('\n', "\r\n").into_bytes(),
        Damage::ChangeEvent(p) if name == "history.jsonl" => {
            let lines: Vec<&str> = text.lines().collect();
            let i = (p % lines.len() as u64) as usize;
            let mut event: serde_json::Value = serde_json::from_str(lines[i]).unwrap();
            let at_us = event["at_us"].as_u64().unwrap_or(0);
            event["at_us"] = serde_json::json!(at_us + 1 + p % 1000);
            let mut out: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
            out[i] = serde_json::to_string(&event).unwrap();
            (out.join("\n") + "\n").into_bytes()
        }
        Damage::ChangeVerdict(p) if name == "verdict.json" => {
            let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
            let old = doc["verdict"].as_str().unwrap_or("safe").to_string();
            let others: Vec<&str> = ["safe", "violated", "deadlock", "unknown"]
                .into_iter()
                .filter(|v| *v != old)
                .collect();
            let new = others[(p % others.len() as u64) as usize];
            text.replacen(
                &format!("\"verdict\": \"{old}\""),
                &format!("\"verdict\": \"{new}\""),
                1,
            )
            .into_bytes()
        }
        Damage::ChangeEvent(_) | Damage::ChangeVerdict(_) => return false,
    };
    if new == bytes {
        return false;
    }
    std::fs::write(path, new).unwrap();
    true
}

/// Whether a damaged `scenario.toml` still runs `rung` with `seed` as the
/// original did: every field a run reads is the same, or the fields that
/// changed made no difference to this run (a longer `max_wait_ms` than any
/// client waited, a comment, the description, `expect`), which a run of
/// it, apart from the replay, shows.
fn runs_the_same(
    original: &str,
    damaged: &Path,
    (name, rung, seed): (&str, &str, u64),
    history: &str,
) -> bool {
    let Ok(text) = std::fs::read_to_string(damaged) else {
        return false;
    };
    let (Ok(a), Ok(b)) = (
        Scenario::parse(original, "a", name),
        Scenario::parse(&text, "b", name),
    ) else {
        return false;
    };
    if !b.rungs.iter().any(|r| r == rung) {
        return false;
    }
    let same_fields = a.name == b.name
        && a.duration_ms == b.duration_ms
        && a.topology_of(rung) == b.topology_of(rung)
        && a.network == b.network
        && a.lock == b.lock
        && a.clients == b.clients
        && a.resource_of(rung) == b.resource_of(rung)
        && a.faults_of(rung) == b.faults_of(rung)
        && a.liveness_bound_ms() == b.liveness_bound_ms();
    same_fields
        || (a.name == b.name
            && run_cell(&b, rung, seed).is_ok_and(|j| j.history.to_jsonl() == history))
}

/// Whether a damaged `verdict.json` differs from the original only in the
/// version of locklab that wrote it.
fn only_the_version(original: &str, damaged: &Path) -> bool {
    let Ok(text) = std::fs::read_to_string(damaged) else {
        return false;
    };
    let version = |t: &str| {
        serde_json::from_str::<serde_json::Value>(t)
            .ok()
            .and_then(|v| v["locklab"].as_str().map(str::to_string))
    };
    match (version(original), version(&text)) {
        (Some(old), Some(new)) => {
            text.replacen(
                &format!("\"locklab\": {}", serde_json::json!(new)),
                &format!("\"locklab\": {}", serde_json::json!(old)),
                1,
            ) == original
        }
        _ => false,
    }
}

#[test]
fn a_damaged_run_folder_replays_to_a_difference_or_an_error_naming_the_file_never_a_panic() {
    let started = Instant::now();
    let root = scratch();
    let _ = std::fs::remove_dir_all(&root);
    let (recorded, seeds): (Vec<PathBuf>, Vec<u64>) =
        record(&root.join("recorded")).into_iter().unzip();
    // Untouched, every recorded folder replays identically.
    for dir in &recorded {
        assert_eq!(replay(dir), Ok(Replayed::Identical), "{}", dir.display());
    }
    let originals: Vec<[String; 4]> = recorded
        .iter()
        .map(|dir| FILES.map(|f| std::fs::read_to_string(dir.join(f)).unwrap()))
        .collect();
    let mut runner = TestRunner::new(Config {
        cases: CASES,
        rng_seed: RngSeed::Fixed(SEED),
        failure_persistence: None,
        max_shrink_iters: 50,
        ..Config::default()
    });
    let next = std::cell::Cell::new(0u32);
    let outcomes = std::cell::RefCell::new([0u32; 3]);
    let result = runner.run(&damage(), |(run, file, damage)| {
        next.set(next.get() + 1);
        let dir = root.join(format!("case-{}", next.get()));
        copy_folder(&recorded[run], &dir);
        let path = dir.join(FILES[file]);
        if !apply(&path, damage) {
            let _ = std::fs::remove_dir_all(&dir);
            return Err(TestCaseError::reject(
                "this damage leaves this file as it is",
            ));
        }
        let (replayed, events) = std::panic::catch_unwind(|| replay_counting(&dir))
            .map_err(|_| TestCaseError::fail(format!("{damage:?} of {}: panicked", FILES[file])))?;
        prop_assert!(
            events <= MOST_EVENTS,
            "{damage:?} of {}: the replay recorded {events} events, over {MOST_EVENTS}",
            FILES[file]
        );
        let (name, rung) = RUNS[run];
        match &replayed {
            Ok(Replayed::Identical) => {
                outcomes.borrow_mut()[0] += 1;
                let harmless = match FILES[file] {
                    "scenario.toml" => runs_the_same(
                        &originals[run][0],
                        &path,
                        (name, rung, seeds[run]),
                        &originals[run][1],
                    ),
                    "verdict.json" => only_the_version(&originals[run][2], &path),
                    _ => false,
                };
                prop_assert!(
                    harmless,
                    "{damage:?} of {} replayed as identical",
                    FILES[file]
                );
            }
            Ok(Replayed::Differs(diff)) => {
                outcomes.borrow_mut()[1] += 1;
                prop_assert!(!diff.is_empty());
            }
            Err(message) => {
                outcomes.borrow_mut()[2] += 1;
                prop_assert!(
                    message.contains(&path.display().to_string()),
                    "{damage:?} of {}: the error does not name it: {message}",
                    FILES[file]
                );
            }
        }
        let _ = std::fs::remove_dir_all(&dir);
        Ok(())
    });
    let [same, differ, errors] = *outcomes.borrow();
    eprintln!(
        "{} damaged folders: {same} identical (harmless edits), {differ} differ, {errors} errors; \
         the largest replay recorded {} events; {:.1} s",
        same + differ + errors,
        MOST_EVENTS_RECORDED.load(Ordering::Relaxed),
        started.elapsed().as_secs_f64()
    );
    let _ = std::fs::remove_dir_all(&root);
    if let Err(e) = result {
        panic!("{e}");
    }
    assert!(differ > 10 && errors > 10, "{same} {differ} {errors}");
}

#[test]
fn a_folder_that_does_not_exist_is_an_error_naming_its_scenario_file() {
    let dir = scratch().join("nowhere");
    match replay(&dir) {
        Err(message) => assert!(
            message.contains(&dir.join("scenario.toml").display().to_string()),
            "{message}"
        ),
        other => panic!("{other:?}"),
    }
}
