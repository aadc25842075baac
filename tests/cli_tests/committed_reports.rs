//! Every committed report that the code regenerates deterministically is
//! what a fresh run writes today: the safety matrix of `suite` and the full
//! grid of `suite --all`, in each of their forms. A change that moves a
//! verdict or a damage figure fails here until the reports are written
//! again, so the committed files never describe an older locklab.
//!
//! Both run from an empty folder, on the built-in scenarios, and write
//! nothing where they run: so the same two runs also show that the
//! binary alone gives what the project's folder gives (the built-in
//! scenarios are the folder's files byte for byte: `tests/cli_tests/builtin_cli.rs`).
//!
//! (The benchmark's, the reality suite's and the speed reports measure real
//! time and real servers: they are dated measurements, not regenerable.)

use crate::common;

use common::{assert_contains, locklab_in, path, root, scratch, stderr, stdout};
use std::path::Path;

/// The first line where `fresh` and `committed` differ, both shown.
fn first_difference(fresh: &str, committed: &str) -> String {
    let line = fresh
        .lines()
        .zip(committed.lines())
        .position(|(a, b)| a != b)
        .unwrap_or_else(|| fresh.lines().count().min(committed.lines().count()));
    format!(
        "line {}:\n  fresh:     {:?}\n  committed: {:?}",
        line + 1,
        fresh.lines().nth(line).unwrap_or("(end of file)"),
        committed.lines().nth(line).unwrap_or("(end of file)")
    )
}

/// Runs `locklab suite` with `extra` arguments into a fresh folder and
/// requires each of `files` to equal its committed copy in `reports/`.
fn suite_writes_the_committed(extra: &[&str], files: &[&str], regenerate: &str) {
    let dir = scratch(&format!("committed{}", extra.join("")));
    let empty = scratch(&format!("committed-from{}", extra.join("")));
    let mut args = vec!["suite", "--out", path(&dir)];
    args.extend_from_slice(extra);
    let out = locklab_in(&empty, &args);
    assert!(out.status.success(), "{}\n{}", stdout(&out), stderr(&out));
    assert_contains(&stderr(&out), "built-in scenarios");
    assert_eq!(
        std::fs::read_dir(&empty).unwrap().count(),
        0,
        "suite wrote into the folder it ran from"
    );
    for file in files {
        let fresh = std::fs::read_to_string(dir.join(file))
            .unwrap_or_else(|e| panic!("{file} not written: {e}"));
        let committed = std::fs::read_to_string(root().join("reports").join(file))
            .unwrap_or_else(|e| panic!("reports/{file}: {e}"));
        assert!(
            fresh == committed,
            "reports/{file} is not what `{regenerate}` writes today; run it and commit the result. First difference at {}",
            first_difference(&fresh, &committed)
        );
    }
    let _ = std::fs::remove_dir_all(Path::new(&dir));
    let _ = std::fs::remove_dir_all(Path::new(&empty));
}

#[test]
fn the_committed_safety_matrix_is_what_suite_writes_today() {
    suite_writes_the_committed(
        &[],
        &[
            "safety-matrix.md",
            "safety-matrix.json",
            "safety-matrix.svg",
        ],
        "cargo run --release -- suite",
    );
}

#[test]
fn the_committed_full_grid_is_what_suite_all_writes_today() {
    suite_writes_the_committed(
        &["--all"],
        &[
            "safety-matrix-all.md",
            "safety-matrix-all.json",
            "safety-matrix-all.svg",
        ],
        "cargo run --release -- suite --all",
    );
}
