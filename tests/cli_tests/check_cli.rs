//! `locklab check`: histories recorded anywhere judged by locklab's
//! checkers; locklab's own histories exported in Jepsen's format and
//! checked back to the verdict and witness of their run.

use crate::common;

use common::{assert_contains, document, locklab, path, root, scratch, stderr, stdout};
use interchange::checking::judge_text;
use interchange::export::{Header, to_ops, write_edn, write_json};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// The hand-written Jepsen histories, one valid and one invalid per model.
fn hand_written(name: &str) -> PathBuf {
    root().join("interchange/tests/histories").join(name)
}

/// The `:index` numbers a hand-written history's opening comment names
/// as its witness (`Witness: :index 1 3 4 6`), if it names them.
fn witness_in_comment(file: &Path) -> Option<Vec<u64>> {
    let text = std::fs::read_to_string(file).unwrap();
    let comment = text.lines().next()?;
    let (_, after) = comment.split_once("Witness: :index ")?;
    Some(
        after
            .split(|c: char| !c.is_ascii_digit())
            .take_while(|w| !w.is_empty())
            .map(|w| w.parse().unwrap())
            .collect(),
    )
}

#[test]
fn each_hand_written_history_is_judged_as_its_comment_says_by_its_model() {
    let out_dir = scratch("check-hand-written");
    for model in ["mutex", "owner-mutex", "fenced-writes", "lock-set"] {
        for (validity, code, elle) in [("valid", 0, "true"), ("invalid", 1, "false")] {
            let file = hand_written(&format!("{model}-{validity}.edn"));
            let out = locklab(&[
                "check",
                path(&file),
                "--model",
                model,
                "--out",
                path(&out_dir),
                "--json",
            ]);
            assert_eq!(out.status.code(), Some(code), "{file:?}\n{}", stderr(&out));
            // elle-cli's line goes to standard error beside the document.
            assert_contains(&stderr(&out), &format!("{}\t{elle}", path(&file)));
            let doc = document(&out);
            let checked = &doc["result"]["files"][0];
            assert_eq!(checked["model"], model);
            assert_eq!(checked["valid"], elle, "{checked}");
            let deciding: Vec<&serde_json::Value> = checked["checks"]
                .as_object()
                .unwrap()
                .values()
                .filter(|c| c["informational"] == false)
                .collect();
            let invalid: Vec<&&serde_json::Value> = deciding
                .iter()
                .filter(|c| c["verdict"] == "invalid")
                .collect();
            if validity == "valid" {
                assert!(invalid.is_empty(), "{checked}");
                continue;
            }
            assert_eq!(invalid.len(), 1, "{checked}");
            let witness: Vec<u64> = invalid[0]["witness"]
                .as_array()
                .unwrap()
                .iter()
                .map(|w| w.as_u64().unwrap())
                .collect();
            match witness_in_comment(&file) {
                Some(said) => assert_eq!(witness, said, "{file:?}"),
                // The lock-set file names the lost add (index 5) in words.
                None => assert!(witness.contains(&5), "{file:?}: {witness:?}"),
            }
            let page = checked["page"].as_str().unwrap();
            let html = std::fs::read_to_string(page).unwrap();
            assert_contains(&html, "class=\"witness\"");
        }
    }
    let _ = std::fs::remove_dir_all(out_dir);
}

#[test]
fn elle_clis_lines_alone_go_to_standard_output_one_per_file() {
    let out_dir = scratch("check-elle-lines");
    let valid = hand_written("owner-mutex-valid.edn");
    let invalid = hand_written("owner-mutex-invalid.edn");
    let out = locklab(&[
        "check",
        path(&valid),
        path(&invalid),
        "--out",
        path(&out_dir),
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert_eq!(
        stdout(&out),
        format!("{}\ttrue\n{}\tfalse\n", path(&valid), path(&invalid))
    );
    assert_contains(&stderr(&out), "mutual-exclusion: invalid");
    let _ = std::fs::remove_dir_all(out_dir);
}

/// A log of two clients on clocks that may be `bound_ns` off, whose holds
/// overlap by `overlap_ns` as recorded (a gap, when negative).
fn two_clocks_log(overlap_ns: i64, bound_ns: u64) -> String {
    let op = |process: u64, kind: &str, f: &str, time: u64| {
        format!(
            "{{\"process\":{process},\"type\":\"{kind}\",\"f\":\"{f}\",\"lock\":\"orders\",\
             \"time\":{time},\"clock-bound\":{bound_ns}}}\n"
        )
    };
    let ms = 1_000_000;
    let second_acquired: u64 = 20 * ms;
    let first_releases = second_acquired.saturating_add_signed(overlap_ns);
    [
        op(0, "invoke", "acquire", ms),
        op(0, "ok", "acquire", 2 * ms),
        op(1, "invoke", "acquire", 3 * ms),
        op(1, "ok", "acquire", second_acquired),
        op(0, "invoke", "release", first_releases),
        op(0, "ok", "release", first_releases + ms),
        op(1, "invoke", "release", 60 * ms),
        op(1, "ok", "release", 61 * ms),
    ]
    .concat()
}

#[test]
fn an_overlap_within_the_clocks_bound_is_unknown_and_one_beyond_it_is_a_violation() {
    let dir = scratch("check-clock-bound");
    let ms: u64 = 1_000_000;
    let signed_ms = 1_000_000i64;
    for (overlap_ns, bound_ns, code, verdict) in [
        // 5 ms of overlap with clocks 1 ms off: both would have to be off
        // by 2.5 ms to make it vanish.
        (5 * signed_ms, ms, 1, "violated"),
        // 1 ms of overlap with clocks 2 ms off: the bound decides.
        (signed_ms, 2 * ms, 2, "unknown"),
        // A gap of 1 ms, one clock.
        (-signed_ms, 0, 0, "safe"),
    ] {
        let log = dir.join(format!("log-{overlap_ns}-{bound_ns}.jsonl"));
        std::fs::write(&log, two_clocks_log(overlap_ns, bound_ns)).unwrap();
        let out = locklab(&["check", path(&log), "--out", path(&dir), "--json"]);
        assert_eq!(out.status.code(), Some(code), "{}", stderr(&out));
        let checked = &document(&out)["result"]["files"][0];
        assert_eq!(checked["verdict"], verdict, "{checked}");
        assert_eq!(checked["clock_bounded"], bound_ns > 0);
        if verdict == "unknown" {
            let why = checked["checks"]["mutual-exclusion"]["why"]
                .as_str()
                .unwrap();
            assert_contains(why, "the clocks' bound decides");
        }
    }
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn a_malformed_history_is_refused_by_its_line_and_gets_no_verdict() {
    let dir = scratch("check-malformed");
    let log = dir.join("orphan.jsonl");
    std::fs::write(
        &log,
        "{\"process\":0,\"type\":\"invoke\",\"f\":\"acquire\",\"time\":1}\n\
         {\"process\":1,\"type\":\"ok\",\"f\":\"acquire\",\"time\":2}\n",
    )
    .unwrap();
    let out = locklab(&["check", path(&log), "--out", path(&dir)]);
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert_contains(&stderr(&out), "orphan.jsonl line 2");
    assert_eq!(stdout(&out), "", "no verdict line for a refused history");
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn run_exports_one_run_in_jepsens_format_and_check_gives_back_its_verdict() {
    let dir = scratch("check-export");
    let edn = dir.join("pause.edn");
    let out = locklab(&[
        "run",
        "scenarios/pause-at-release-start.toml",
        "--rung",
        "set-nx-px",
        "--out",
        path(&dir),
        "--export",
        "jepsen-edn",
        path(&edn),
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let checked = locklab(&["check", path(&edn), "--out", path(&dir)]);
    assert_eq!(checked.status.code(), Some(1), "{}", stderr(&checked));
    assert_contains(&stderr(&checked), "as owner-mutex): violated");
    // The run's folder is checked as its cell was judged, and replay
    // exports the recorded history the same way.
    let folder = dir.join("runs/pause-at-release-start/set-nx-px/1");
    let by_folder = locklab(&["check", path(&folder), "--out", path(&dir), "--json"]);
    assert_eq!(by_folder.status.code(), Some(1), "{}", stderr(&by_folder));
    let verdict: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(folder.join("verdict.json")).unwrap())
            .unwrap();
    let checked_back = &document(&by_folder)["result"]["files"][0];
    assert_eq!(checked_back["format"], "locklab");
    for (name, entry) in verdict["checkers"].as_object().unwrap() {
        assert_eq!(
            checked_back["checks"][name]["witness"], entry["witness"],
            "{name}"
        );
    }
    let json = dir.join("replayed.json");
    let replayed = locklab(&[
        "replay",
        path(&folder),
        "--export",
        "jepsen-json",
        path(&json),
    ]);
    assert_eq!(replayed.status.code(), Some(0), "{}", stderr(&replayed));
    let by_json = locklab(&["check", path(&json), "--out", path(&dir)]);
    assert_eq!(by_json.status.code(), Some(1), "{}", stderr(&by_json));
    // Several runs cannot go to one file.
    let several = locklab(&[
        "run",
        "scenarios/pause-at-release-start.toml",
        "--out",
        path(&dir),
        "--export",
        "jepsen-json",
        path(&dir.join("x.json")),
    ]);
    assert_eq!(several.status.code(), Some(3), "{}", stderr(&several));
    assert_contains(&stderr(&several), "--export writes one run");
    let _ = std::fs::remove_dir_all(dir);
}

/// Why a cell's exported history, checked back, differs from its run.
fn round_trip_difference(
    scenario: &model::scenario::Scenario,
    judged: &sim::cell::Judged,
) -> Option<String> {
    let config = judge::check::CheckConfig {
        cut_short: judged.results.cut_short.clone(),
        ..sim::cell::check_config(scenario, &judged.rung)
    };
    let header = Header::of_cell(
        scenario,
        &judged.rung,
        judged.seed,
        &config,
        &judged.history,
    );
    let ops = to_ops(&judged.history, &header);
    for (format, text) in [
        (interchange::format::Format::JepsenEdn, write_edn(&ops)),
        (interchange::format::Format::JepsenJson, write_json(&ops)),
    ] {
        let cell = format!(
            "{} / {} / {} as {format}",
            judged.scenario, judged.rung, judged.seed
        );
        let judgement = match judge_text(&cell, &text, format) {
            Ok(judgement) => judgement,
            Err(e) => return Some(format!("{cell}: {e}")),
        };
        if judgement.verdict != judged.verdict {
            return Some(format!(
                "{cell}: {} checked back, {} when run",
                judgement.verdict, judged.verdict
            ));
        }
        for (checker, check) in judged.results.all() {
            let Some(back) = judgement.checks.iter().find(|c| c.name == checker.name()) else {
                return Some(format!("{cell}: no {checker} checked back"));
            };
            let witness: Vec<u64> = back
                .check
                .witness()
                .iter()
                .filter_map(|&i| judgement.source_index(i))
                .collect();
            let run_witness: Vec<u64> = check.witness().iter().map(|&i| i as u64).collect();
            if back.check.name() != check.name() || witness != run_witness {
                return Some(format!(
                    "{cell}: {checker} checked back {} {witness:?}, {} {run_witness:?} when run",
                    back.check.name(),
                    check.name()
                ));
            }
        }
    }
    None
}

#[test]
fn every_cell_of_the_safety_matrix_exported_and_checked_back_gets_its_verdict_and_witness() {
    let scenarios = sim::suite::load_all(&root().join("scenarios")).unwrap();
    let differences = Mutex::new(Vec::new());
    let cells = Mutex::new(0usize);
    let workers = std::thread::available_parallelism().map_or(1, |n| n.get());
    sim::suite::run_suite_keeping(
        &scenarios,
        sim::suite::Grid::Named,
        workers,
        &|_, _, _| {},
        &|scenario, judged| {
            *cells.lock().unwrap() += 1;
            if let Some(difference) = round_trip_difference(scenario, judged) {
                differences.lock().unwrap().push(difference);
            }
        },
    )
    .unwrap();
    let committed: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(root().join("reports/safety-matrix.json")).unwrap(),
    )
    .unwrap();
    let matrix_cells = committed["cells"].as_array().unwrap().len();
    assert_eq!(
        *cells.lock().unwrap(),
        matrix_cells,
        "every cell of the matrix ran"
    );
    let differences = differences.into_inner().unwrap();
    assert!(differences.is_empty(), "{differences:#?}");
}
