//! `--rung-file` on the command line: `run` treats the file's rung like a
//! built-in one and keeps the file for `replay`; errors in the file name
//! its line; `explore` searches it. About 3 s in release.

use crate::common;

use common::{assert_contains, locklab, locklab_line, locklab_out, path, scratch, stderr, stdout};

#[test]
fn run_with_a_rung_file_judges_its_rung_and_the_run_folder_replays() {
    let (out, out_dir) = locklab_out(
        "run scenarios/long-critical-section.toml --rung-file rungs/lua-release.toml --seed 1",
        "rung-file-run",
    );
    // lua-release's flaw, and so the file's: two holders.
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert_contains(&stdout(&out), "lua-release-file");
    let run = out_dir.join("runs/long-critical-section/lua-release-file/1");
    assert!(run.join("rung-file.toml").exists());
    let replay = locklab(&["replay", path(&run)]);
    assert_eq!(
        replay.status.code(),
        Some(0),
        "{}{}",
        stdout(&replay),
        stderr(&replay)
    );
    assert_contains(&stdout(&replay), "identical history");
}

#[test]
fn a_lua_syntax_error_in_a_rung_file_names_its_line_in_the_file() {
    let dir = scratch("rung-file-bad-lua");
    let text = std::fs::read_to_string("rungs/lua-release.toml").expect("reads");
    let broken = text.replacen("    return 0\nend", "    return 0 +\nend", 1);
    let line = broken
        .lines()
        .position(|l| l == "    return 0 +")
        .expect("the broken line")
        + 2; // Lua reports the `end` that follows
    let file = dir.join("bad.toml");
    std::fs::write(&file, broken).expect("writes");
    let out = locklab(&["run", "long-critical-section", "--rung-file", path(&file)]);
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains(&format!("bad.toml: line {line}")) && err.contains("does not compile"),
        "{err}"
    );
}

#[test]
fn explore_searches_a_rung_file_and_refuses_assumptions_it_cannot_know() {
    let (found, _) = locklab_out(
        "explore --rung-file rungs/lua-release.toml --cases 6 --jobs 2",
        "rung-file-explore",
    );
    let text = stdout(&found);
    assert!(
        text.contains("explore lua-release-file"),
        "{text}\n{}",
        stderr(&found)
    );
    if found.status.code() == Some(1) {
        assert_contains(&text, "--rung-file rungs/lua-release.toml");
    }
    let assumed = locklab_line("explore --rung-file rungs/lua-release.toml --faults assumed");
    assert_eq!(assumed.status.code(), Some(3));
    assert_contains(&stderr(&assumed), "--faults assumed");
}
