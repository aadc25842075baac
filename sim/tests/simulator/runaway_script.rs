//! A node that aborts a runaway Lua script cuts its run short: the run is
//! judged on the history up to the cut, its verdict is `unknown`, and
//! every place that shows a verdict (`run`'s report, the run folder,
//! `replay`, the suite's matrix, `explore`'s summary) says why.
//!
//! No rung's script loops, and no scenario file can send a node a script
//! of its own, so these tests add a host of their own to the world before
//! it runs ([`World::sim`], then [`run_world`]): an "intruder" that sends a
//! node `EVAL "while true do end" 0`. The node runs it until its
//! instruction limit (`simredis::handle::SCRIPT_INSTRUCTION_LIMIT`, about a
//! second of a tight loop) and aborts it; the lock scripts themselves are
//! left exactly as they are.

use crate::common;

use judge::matrix::Cell;
use model::cut_short::CutShort;
use model::host::Host;
use model::scenario::Scenario;
use model::verdict::Verdict;
use report::matrix;
use report::replay::{Replayed, replay_with};
use sim::cell::{Judged, judge_output};
use sim::explore::search::{CutShortCase, Outcome, Stats};
use sim::run::{RunError, run_world};
use sim::world::World;
use std::path::PathBuf;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// The endless script.
const ENDLESS: &str = "while true do end";

/// The words every report of such a run carries.
const REASON: &str =
    "aborted a Lua script that ran past 100000000 instructions: the run is cut short";

fn scenario(name: &str) -> (Scenario, String) {
    common::scenario_with_text(name)
}

/// Runs `rung` in `scenario` with a host that sends `node` the endless
/// script `after_ms` into the run.
fn run_with_endless_script(
    scenario: &Scenario,
    rung: &str,
    seed: u64,
    node: &'static str,
    after_ms: u64,
) -> Result<Judged, RunError> {
    let mut world = World::build(scenario, rung, seed)?;
    let host: Host = node.parse().expect("a host name");
    let (machine, port) = world.address(host);
    world.sim().client("intruder", async move {
        tokio::time::sleep(Duration::from_millis(after_ms)).await;
        let mut stream = turmoil::net::TcpStream::connect((machine.as_str(), port)).await?;
        let request = format!(
            "*3\r\n$4\r\nEVAL\r\n${}\r\n{ENDLESS}\r\n$1\r\n0\r\n",
            ENDLESS.len()
        );
        stream.write_all(request.as_bytes()).await?;
        // The run stops in the step in which the node aborts the script:
        // this reply is never read.
        let mut reply = [0u8; 128];
        let _ = stream.read(&mut reply).await?;
        Ok(())
    });
    Ok(judge_output(scenario, rung, seed, run_world(world)?))
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("sim-runaway-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

fn cut_of(judged: &Judged) -> CutShort {
    judged
        .results
        .cut_short
        .clone()
        .unwrap_or_else(|| panic!("not cut short: {:?}", judged.verdict))
}

#[test]
fn a_runaway_script_on_the_lock_node_ends_the_run_unknown_naming_the_node_and_the_limit() {
    let (s, _) = scenario("pause-at-release-start");
    let judged = run_with_endless_script(&s, "set-nx-px", 1, "redis-0", 30)
        .unwrap_or_else(|e| panic!("{e}"));
    let cut = cut_of(&judged);
    let CutShort::ScriptAborted {
        node,
        instruction_limit,
        at_us,
    } = cut.clone();
    assert_eq!(node, Host::Node(0));
    assert_eq!(
        instruction_limit,
        simredis::handle::SCRIPT_INSTRUCTION_LIMIT
    );
    assert_eq!(judged.verdict, Verdict::Unknown);
    // The history is kept up to the cut, and the run stopped there: the
    // same scenario runs on for seconds when nothing cuts it.
    assert!(!judged.history.is_empty());
    assert!(judged.history.end_us() <= at_us, "{at_us}");
    assert!(judged.sim_elapsed.as_micros() as u64 <= at_us + 1_000);
    assert!(at_us < 1_000_000, "{at_us}");
    // `locklab run` prints the reason under the verdict.
    let report = report::output::describe(&judged);
    assert!(
        report.contains(&format!(
            "set-nx-px: unknown\n  cut short: redis-0 {REASON}"
        )),
        "{report}"
    );
    // The same seed cuts the same run at the same instant, byte for byte.
    let again = run_with_endless_script(&s, "set-nx-px", 1, "redis-0", 30)
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(again.history.to_jsonl(), judged.history.to_jsonl());
    assert_eq!(cut_of(&again), cut);
}

#[test]
fn a_run_cut_short_is_written_and_replays_identically_and_its_folder_says_why() {
    let (s, text) = scenario("pause-at-release-start");
    let runner =
        |s: &Scenario, rung: &str, seed: u64| run_with_endless_script(s, rung, seed, "redis-0", 30);
    let judged = runner(&s, "set-nx-px", 1).unwrap_or_else(|e| panic!("{e}"));
    let dir = scratch("folder");
    report::output::write_run(&dir, &judged, &text).unwrap_or_else(|e| panic!("{e}"));
    let verdict: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("verdict.json")).unwrap()).unwrap();
    assert_eq!(verdict["verdict"], "unknown");
    assert_eq!(verdict["cut_short"]["kind"], "script-aborted");
    assert_eq!(verdict["cut_short"]["node"], "redis-0");
    let why = verdict["cut_short"]["why"].as_str().unwrap_or_default();
    assert!(why.contains(REASON), "{why}");
    let history = std::fs::read_to_string(dir.join("history.jsonl")).unwrap();
    assert_eq!(history, judged.history.to_jsonl());
    // Replayed the way it was recorded, every file is the same...
    assert_eq!(replay_with(&dir, runner), Ok(Replayed::Identical));
    // ...and replayed from the scenario file alone, which cannot say what
    // the intruder did, the difference is found and named.
    match replay_with(&dir, sim::cell::run_cell) {
        Ok(Replayed::Differs(diff)) => assert!(diff.contains("first difference"), "{diff}"),
        other => panic!("{other:?}"),
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_suite_matrix_and_the_explore_summary_name_the_run_cut_short() {
    let (s, _) = scenario("pause-at-release-start");
    // The store is a node too: a runaway script there cuts the run short.
    let judged = run_with_endless_script(&s, "get-check-del", 1, "store", 20)
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(matches!(
        cut_of(&judged),
        CutShort::ScriptAborted {
            node: Host::Store,
            ..
        }
    ));
    let cell = Cell::of(&judged, Some(Verdict::Safe));
    assert!(!cell.as_expected());
    let text = matrix::markdown(std::slice::from_ref(&cell));
    assert!(
        text.contains(&format!(
            "- `get-check-del` in pause-at-release-start, seed 1: store {REASON}"
        )),
        "{text}"
    );
    let json = matrix::json(std::slice::from_ref(&cell));
    // The findings are for people and not part of the JSON.
    let mut read_back = cell.clone();
    read_back.findings.clear();
    assert_eq!(matrix::from_json(&json), Ok(vec![read_back]));
    let outcome = Outcome {
        stats: Stats {
            cases: 1,
            unknown: 1,
            ..Stats::default()
        },
        first: None,
        interrupted: None,
        first_cut_short: Some(CutShortCase {
            seed: 1,
            cut_short: cut_of(&judged),
        }),
        first_error: None,
        counterexamples: Vec::new(),
    };
    let note = outcome.cut_short_note().unwrap_or_default();
    assert!(note.contains(&format!("seed 1: store {REASON}")), "{note}");
    assert_eq!(outcome.exit_code(), sim::exit::ExitCode::Success);
}

#[test]
fn runs_without_a_runaway_script_say_nothing_about_being_cut_short() {
    let (s, _) = scenario("pause-at-release-start");
    let judged = sim::cell::run_cell(&s, "set-nx-px", 1).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(judged.results.cut_short, None);
    assert!(!report::output::describe(&judged).contains("cut short"));
    let text = report::output::verdict_file_text(&report::output::verdict_doc(&judged));
    assert!(!text.contains("cut_short"));
}
