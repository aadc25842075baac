//! The built-in scenarios: `tour` and `run` work from a folder with no
//! `scenarios/`, giving what the project's folder gives (`suite` is held
//! to the same in `tests/cli_tests/committed_reports.rs`);
//! `scenarios --export` writes the folder back byte for byte and
//! overwrites nothing; a scenarios folder's subfolders count, and a
//! scenario name given twice is refused naming both files.

use crate::common;

use common::{assert_contains, locklab, locklab_in, path, root, scratch, stderr, stdout, words};
use std::path::{Path, PathBuf};

/// Every `*.toml` under `dir`, as (path relative to `dir`, contents).
fn toml_files(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut found = Vec::new();
    let mut folders = vec![dir.to_path_buf()];
    while let Some(folder) = folders.pop() {
        for entry in std::fs::read_dir(&folder).unwrap() {
            let p = entry.unwrap().path();
            if p.is_dir() {
                folders.push(p);
            } else if p.extension().is_some_and(|x| x == "toml") {
                let bytes = std::fs::read(&p).unwrap();
                found.push((p.strip_prefix(dir).unwrap().to_path_buf(), bytes));
            }
        }
    }
    found.sort();
    found
}

/// `suite` from an empty folder is `tests/cli_tests/committed_reports.rs`: its
/// reports, written from an empty folder on the built-in scenarios, must
/// be the committed ones, which the project's folder gives.
#[test]
fn the_tour_from_an_empty_folder_uses_the_built_in_scenarios_and_matches_the_project_folder() {
    let empty = scratch("builtin-empty");
    let on_disk = root().join("scenarios");

    let tour = locklab_in(&empty, &["tour"]);
    assert!(tour.status.success(), "{}", stderr(&tour));
    let count = toml_files(&on_disk).len();
    assert_contains(
        &stderr(&tour),
        &format!("using the {count} built-in scenarios"),
    );
    let tour_on_disk = locklab(&["tour", "--scenarios", path(&on_disk)]);
    assert!(tour_on_disk.status.success(), "{}", stderr(&tour_on_disk));
    assert_eq!(stdout(&tour), stdout(&tour_on_disk));
    assert!(!stderr(&tour_on_disk).contains("built-in"));
    // Nothing was written into the folder it ran from.
    assert_eq!(std::fs::read_dir(&empty).unwrap().count(), 0);
}

#[test]
fn run_takes_a_built_in_scenario_by_name_when_no_such_file_exists() {
    let empty = scratch("builtin-run");
    let out = empty.join("out");
    let run = locklab_in(
        &empty,
        &words(&format!(
            "run stop-the-world-pause --rung redlock --out {}",
            path(&out)
        )),
    );
    assert!(run.status.success(), "{}", stderr(&run));
    assert_contains(&stderr(&run), "built-in scenario stop-the-world-pause");
    let kept =
        std::fs::read(out.join("runs/stop-the-world-pause/redlock/1/scenario.toml")).unwrap();
    assert_eq!(
        kept,
        std::fs::read(root().join("scenarios/stop-the-world-pause.toml")).unwrap()
    );
    let unknown = locklab_in(&empty, &["run", "no-such-scenario"]);
    assert_eq!(unknown.status.code(), Some(3));
    assert_contains(&stderr(&unknown), "no-such-scenario");
}

#[test]
fn export_writes_the_scenarios_folder_back_byte_for_byte_and_overwrites_nothing() {
    let dir = scratch("builtin-export");
    let target = dir.join("mine");
    let first = locklab_in(&dir, &["scenarios", "--export", "mine"]);
    assert!(first.status.success(), "{}", stderr(&first));
    let exported = toml_files(&target);
    assert_eq!(exported, toml_files(&root().join("scenarios")));
    assert_eq!(stdout(&first).lines().count(), exported.len());

    // One file edited, one removed: a second export refuses, naming the
    // files in the way, and writes nothing (not even the missing one).
    let edited = target.join("stop-the-world-pause.toml");
    std::fs::write(&edited, "edited").unwrap();
    std::fs::remove_file(target.join("nested-acquire.toml")).unwrap();
    let again = locklab_in(&dir, &["scenarios", "--export", "mine"]);
    assert_eq!(again.status.code(), Some(3));
    let message = stderr(&again);
    let in_the_way = format!("{} file(s) exist already", exported.len() - 1);
    assert!(message.contains(&in_the_way), "{message}");
    assert_contains(&message, "stop-the-world-pause.toml");
    assert!(!message.contains("nested-acquire.toml"), "{message}");
    assert_eq!(std::fs::read(&edited).unwrap(), b"edited");
    assert!(!target.join("nested-acquire.toml").exists());
    let leftovers: Vec<_> = std::fs::read_dir(&target)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .filter(|n| n.to_string_lossy().ends_with(".partial"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

#[test]
fn a_scenarios_folder_counts_its_subfolders_and_refuses_a_name_given_twice() {
    let dir = scratch("builtin-subfolders");
    let scenarios = dir.join("scenarios");
    std::fs::create_dir_all(scenarios.join("more/deeper")).unwrap();
    let copy = |name: &str, to: &Path| {
        std::fs::copy(root().join("scenarios").join(name), to).unwrap();
    };
    copy(
        "nested-acquire.toml",
        &scenarios.join("nested-acquire.toml"),
    );
    copy(
        "stop-the-world-pause.toml",
        &scenarios.join("more/deeper/stop-the-world-pause.toml"),
    );
    // The folder here overrides the built-in set without --scenarios.
    let suite = locklab_in(&dir, &["suite", "--out", "out"]);
    assert!(suite.status.success(), "{}", stderr(&suite));
    assert!(!stderr(&suite).contains("built-in"));
    let md = std::fs::read_to_string(dir.join("out/safety-matrix.md")).unwrap();
    let header = md.lines().find(|l| l.starts_with("| rung |")).unwrap();
    // Path order: `more/` sorts before `nested-acquire.toml`.
    assert_eq!(header, "| rung | stop-the-world-pause | nested-acquire |");

    // The same name in a second file: refused, naming both files.
    copy(
        "stop-the-world-pause.toml",
        &scenarios.join("more/stop-the-world-pause.toml"),
    );
    let twice = locklab_in(&dir, &["suite", "--out", "out"]);
    assert_eq!(twice.status.code(), Some(3));
    let message = stderr(&twice);
    assert!(
        message.contains("scenarios/more/stop-the-world-pause.toml")
            && message.contains("scenarios/more/deeper/stop-the-world-pause.toml")
            && message.contains("\"stop-the-world-pause\""),
        "{message}"
    );
}

#[test]
fn the_tour_names_a_scenario_in_a_subfolder_by_its_path_there() {
    let dir = scratch("tour-subfolder");
    let scenarios = dir.join("scenarios");
    std::fs::create_dir_all(scenarios.join("deeper")).unwrap();
    std::fs::copy(
        root().join("scenarios/long-critical-section.toml"),
        scenarios.join("deeper/long-critical-section.toml"),
    )
    .unwrap();
    let tour = locklab_in(&dir, &["tour", "--rung", "lua-release"]);
    assert!(tour.status.success(), "{}", stderr(&tour));
    assert_contains(
        &stdout(&tour),
        "the fault: scenarios/deeper/long-critical-section.toml",
    );
}

#[test]
fn the_tour_tells_a_library_in_every_scenario_that_names_it() {
    let empty = scratch("tour-library");
    let tour = locklab_in(&empty, &["tour", "--rung", "node-redlock"]);
    assert!(tour.status.success(), "{}", stderr(&tour));
    let text = stdout(&tour);
    assert_contains(&text, "━━ libraries ━━");
    assert_contains(&text, "── node-redlock ──");
    let line = |name: &str| {
        text.lines()
            .find(|l| l.trim_start().starts_with(name))
            .unwrap_or_else(|| panic!("no line for {name}: {text}"))
            .to_string()
    };
    assert!(line("node-redlock-expired-on-return").contains("SAFE"));
    assert!(line("redsync-quorum-loss").contains("VIOLATED"));
}
