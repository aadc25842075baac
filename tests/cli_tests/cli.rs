//! The `locklab` command line, driven through the binary cargo built for
//! the tests (no second release build).

use crate::common;

use common::{
    assert_contains, document, locklab, locklab_line, locklab_out, path, scratch, stderr, stdout,
    words,
};
use std::path::{Path, PathBuf};
use std::process::Output;

#[test]
fn ladder_json_lists_the_eleven_rungs_in_ladder_order() {
    let out = locklab(&["ladder", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let doc = document(&out);
    assert_eq!(doc["command"], "ladder");
    let rungs = doc["result"]["rungs"].as_array().expect("array");
    let ids: Vec<&str> = rungs.iter().map(|r| r["id"].as_str().unwrap()).collect();
    assert_eq!(ids, locks::ids());
    assert_eq!(ids.len(), 11);
    for (i, rung) in rungs.iter().enumerate() {
        assert_eq!(rung["rung"].as_u64(), Some(i as u64));
        assert!(rung["fixes"].is_string() && rung["flaw"].is_string());
    }
}

#[test]
fn the_suite_passes_with_every_cell_as_its_scenario_expects() {
    let dir = scratch("suite");
    let out = locklab(&["suite", "--out", path(&dir)]);
    assert!(out.status.success(), "{}\n{}", stdout(&out), stderr(&out));
    // No scenario shipped here is long enough for a note on its cost.
    assert!(!stderr(&out).contains("expect about"), "{}", stderr(&out));
    for file in [
        "safety-matrix.md",
        "safety-matrix.json",
        "safety-matrix.svg",
    ] {
        assert!(dir.join(file).exists(), "{file} not written");
    }
    // That the committed reports are what it wrote: tests/cli_tests/committed_reports.rs.
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("safety-matrix.json")).unwrap())
            .unwrap();
    let cells = json["cells"].as_array().expect("cells");
    assert!(cells.len() >= 30);
    for cell in cells {
        for field in ["variant", "scenario", "verdict", "expected", "seed"] {
            assert!(!cell[field].is_null(), "cell without {field}: {cell}");
        }
        assert_eq!(cell["verdict"], cell["expected"], "{cell}");
    }
}

#[test]
fn run_prints_the_seed_first_writes_the_run_folder_and_exits_1_on_a_violation() {
    let (out, run) = record_run("run");
    let text = stdout(&out);
    assert!(text.starts_with("seed 1\n"), "{text}");
    assert!(!stderr(&out).contains("expect about"), "{}", stderr(&out));
    assert_contains(&text, "violated");
    for file in [
        "scenario.toml",
        "history.jsonl",
        "verdict.json",
        "timeline.svg",
    ] {
        assert!(run.join(file).exists(), "{file} not written");
    }
    let verdict: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("verdict.json")).unwrap()).unwrap();
    assert_eq!(verdict["schema"], model::history::SCHEMA_VERSION);
    assert_eq!(verdict["verdict"], "violated");
    assert_eq!(verdict["variant"], "set-nx-px");
    assert_eq!(verdict["seed"], 1);
    assert!(verdict["checkers"]["mutual-exclusion"]["witness"].is_array());

    // The recorded run replays byte for byte...
    let replay = locklab(&["replay", path(&run)]);
    assert_eq!(replay.status.code(), Some(0), "{}", stdout(&replay));
    // ...and a tampered history is caught, naming the event.
    let history = std::fs::read_to_string(run.join("history.jsonl")).unwrap();
    std::fs::write(
        run.join("history.jsonl"),
        history.replacen("\"ok\"", "\"fail\"", 1),
    )
    .unwrap();
    let replay = locklab(&["replay", path(&run)]);
    assert_eq!(replay.status.code(), Some(1));
    assert!(stdout(&replay).contains("first difference at event"));
}

#[test]
fn run_exits_0_when_safe_and_4_on_a_deadlock() {
    let (safe, dir) = locklab_out(
        "run scenarios/pause-at-release-start.toml --rung get-check-del",
        "codes",
    );
    assert_eq!(safe.status.code(), Some(0), "{}", stdout(&safe));
    let deadlock = locklab_line(&format!(
        "run scenarios/crash-in-critical-section.toml --rung setnx --out {}",
        path(&dir)
    ));
    assert_eq!(deadlock.status.code(), Some(4), "{}", stdout(&deadlock));
}

#[test]
fn bad_input_gets_exit_3_and_a_message_naming_what_was_expected() {
    let dir = scratch("bad");
    let file = dir.join("broken.toml");
    std::fs::write(&file, "rungs = [\"setnx\"]\nduration_ms = -5\n").unwrap();
    let out = locklab(&["run", path(&file)]);
    assert_eq!(out.status.code(), Some(3));
    let err = stderr(&out);
    assert_contains(&err, "broken.toml: line 2");

    let out = locklab(&["run", "scenarios/nested-acquire.toml", "--rung", "redlock"]);
    assert_eq!(out.status.code(), Some(3));
    assert_contains(&stderr(&out), "not in this scenario");

    let out = locklab(&["run", "no/such/file.toml"]);
    assert_eq!(out.status.code(), Some(3));
    assert_contains(&stderr(&out), "cannot read");

    let out = locklab(&["replay", path(&dir)]);
    assert_eq!(out.status.code(), Some(3));

    // Zero workers would run nothing: refused, not quietly taken as one.
    let out = locklab(&["suite", "--jobs", "0", "--out", path(&dir)]);
    assert_eq!(out.status.code(), Some(3));
    assert_contains(&stderr(&out), "--jobs");
}

#[test]
fn the_tour_tells_every_rung_from_live_runs() {
    let out = locklab(&["tour"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    for rung in locks::ids() {
        assert!(text.contains(&format!(": {rung} ━━")), "no stop for {rung}");
    }
    assert!(text.contains("VIOLATED") && text.contains("DEADLOCK") && text.contains("SAFE"));
    assert!(text.contains("the next rung"));
}

/// `locklab tour --rung RUNG`'s text, which must hold the chapter under
/// `heading` and the rung's stop.
fn tour_chapter(rung: &str, heading: &str) -> String {
    let out = locklab(&["tour", "--rung", rung]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains(heading), "{text}");
    assert!(text.contains(&format!("── {rung} ──")), "{text}");
    text
}

/// The line of a tour stop's `text` about `scenario`.
fn scenario_line(text: &str, scenario: &str) -> String {
    text.lines()
        .find(|l| l.trim_start().starts_with(scenario))
        .map(str::to_string)
        .unwrap_or_else(|| panic!("no line for {scenario}:\n{text}"))
}

#[test]
fn the_tours_etcd_chapter_shows_3_4_fooled_by_an_expired_waiter_3_5_not_and_the_cluster_failing_over()
 {
    let tour = |rung: &str| tour_chapter(rung, "━━ etcd ━━");
    let (old, new) = (tour("etcd-mutex-3.4"), tour("etcd-mutex"));
    assert!(scenario_line(&old, "etcd-waiter-lease-expires").contains("VIOLATED"));
    assert!(scenario_line(&new, "etcd-waiter-lease-expires").contains("SAFE"));
    // The cluster: its leader's crash is survived, a partition that leaves
    // the holder with the old leader is not.
    assert!(scenario_line(&new, "etcd-leader-crash").contains("SAFE"));
    assert!(scenario_line(&new, "etcd-leader-partitioned").contains("VIOLATED"));
    // The herd: each of the 32 hand-offs wakes one waiter.
    let herd = scenario_line(&new, "etcd-herd");
    assert!(
        herd.contains("SAFE") && herd.contains("32 hand-offs, 1.0 wake-up(s) each"),
        "{herd}"
    );
}

#[test]
fn the_tours_zookeeper_chapter_shows_the_recipe_behind_its_orphan_curator_not_and_the_fence_holding()
 {
    let tour = |rung: &str| tour_chapter(rung, "━━ ZooKeeper ━━");
    let (recipe, curator, fenced, herd) = (
        tour("zk-recipe"),
        tour("curator-mutex"),
        tour("zk-fenced"),
        tour("zk-herd"),
    );
    // A lost create reply: the recipe waits behind its own node, Curator's
    // protected mode finds it.
    assert!(scenario_line(&recipe, "zk-lost-create-reply").contains("DEADLOCK"));
    assert!(scenario_line(&curator, "zk-lost-create-reply").contains("SAFE"));
    // A session is a lease: a paused holder fools every mutex; its stale
    // write is a lost update, and the fence refuses it.
    assert!(scenario_line(&recipe, "zk-holder-paused").contains("lost update"));
    assert!(scenario_line(&curator, "zk-holder-paused").contains("VIOLATED"));
    assert!(scenario_line(&fenced, "zk-holder-paused").contains("SAFE"));
    // Cut off: Curator's holder refuses its own write, so the stock stays
    // right, yet both believed they held.
    assert!(scenario_line(&recipe, "zk-holder-partitioned").contains("lost update"));
    let cut = scenario_line(&curator, "zk-holder-partitioned");
    assert!(
        cut.contains("VIOLATED") && cut.contains("mutual-exclusion"),
        "{cut}"
    );
    // The herd: one wake-up per hand-off for the recipe, all for zk-herd.
    let one = scenario_line(&recipe, "zk-herd");
    assert!(
        one.contains("SAFE") && one.contains("32 hand-offs, 1.0 wake-up(s) each"),
        "{one}"
    );
    assert!(!scenario_line(&herd, "zk-herd").contains(" 1.0 wake-up(s)"));
    // The ensemble: its leader's crash harms no rung; a follower that lags
    // the expiry fools even Curator, and the fence still holds.
    assert!(scenario_line(&curator, "zk-leader-crash").contains("SAFE"));
    let lag = scenario_line(&curator, "zk-follower-lags-expiry");
    assert!(
        lag.contains("VIOLATED") && lag.contains("lost update"),
        "{lag}"
    );
    assert!(scenario_line(&fenced, "zk-follower-lags-expiry").contains("SAFE"));
}

#[test]
fn the_tours_database_chapter_shows_the_row_left_by_a_dead_holder_and_the_advisory_lock_lost_with_its_connection()
 {
    let tour = |rung: &str| tour_chapter(rung, "━━ databases ━━");
    let (row, expiry, advisory, fenced) = (
        tour("db-unique-row"),
        tour("db-unique-row-expiry"),
        tour("pg-advisory"),
        tour("db-fenced"),
    );
    // A dead holder's row stays; its reaped row and its closed session
    // free the lock.
    assert!(scenario_line(&row, "db-holder-crashes").contains("DEADLOCK"));
    assert!(scenario_line(&expiry, "db-holder-crashes").contains("SAFE"));
    assert!(scenario_line(&advisory, "db-holder-crashes").contains("SAFE"));
    // The reaper is a lease: a paused holder writes beside the next one,
    // and the row's version fences it off.
    assert!(scenario_line(&expiry, "db-holder-paused").contains("VIOLATED"));
    assert!(scenario_line(&fenced, "db-holder-paused").contains("SAFE"));
    // A restart ends every session: the advisory lock, and MariaDB's
    // named lock, go under their holder; the committed row does not.
    assert!(scenario_line(&advisory, "db-restart-under-holder").contains("VIOLATED"));
    let named = tour("mysql-get-lock");
    assert!(scenario_line(&named, "db-restart-under-holder").contains("VIOLATED"));
    assert!(scenario_line(&named, "db-holder-crashes").contains("SAFE"));
    assert!(scenario_line(&row, "db-restart-under-holder").contains("SAFE"));
    // A cut reaps the row but leaves the session, and its lock, alone.
    assert!(scenario_line(&expiry, "db-partitioned-from-holder").contains("VIOLATED"));
    assert!(scenario_line(&advisory, "db-partitioned-from-holder").contains("SAFE"));
}

#[test]
fn run_reads_a_piped_scenario_once_and_its_run_folder_replays() {
    let dir = scratch("pipe");
    let source =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/pause-at-release-start.toml");
    let text = std::fs::read_to_string(&source).unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_locklab"))
        .args(words("run /dev/stdin --rung set-nx-px --out"))
        .arg(&dir)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stdin(std::fs::File::open(&source).unwrap())
        .output()
        .expect("run locklab");
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let run = dir.join("runs/stdin/set-nx-px/1");
    let kept = std::fs::read_to_string(run.join("scenario.toml")).unwrap();
    assert_eq!(kept, text, "the run folder must keep the text that was run");
    let replay = locklab(&["replay", path(&run)]);
    assert_eq!(replay.status.code(), Some(0), "{}", stdout(&replay));
}

#[test]
fn run_refuses_a_scenario_larger_than_1_mib_and_an_endless_one() {
    let dir = scratch("large");
    let file = dir.join("large.toml");
    let mut text = std::fs::read_to_string("scenarios/pause-at-release-start.toml").unwrap();
    text.push_str(&format!("# {}\n", "x".repeat(1 << 20)));
    std::fs::write(&file, text).unwrap();
    for input in [path(&file), "/dev/zero"] {
        let out = locklab(&["run", input, "--out", path(&dir)]);
        assert_eq!(out.status.code(), Some(3), "{input}: {}", stderr(&out));
        let err = stderr(&out);
        assert_contains(&err, input);
        assert_contains(&err, "file too large: more than 1 MiB");
    }
}

#[test]
fn an_empty_seeds_list_is_bad_input_naming_the_line() {
    let dir = scratch("seeds");
    let file = dir.join("noseeds.toml");
    std::fs::write(
        &file,
        "rungs = [\"setnx\"]\nseeds = []\nduration_ms = 100\n[[clients]]\ncount = 1\n",
    )
    .unwrap();
    let out = locklab(&["run", path(&file), "--out", path(&dir)]);
    assert_eq!(out.status.code(), Some(3), "{}", stdout(&out));
    let err = stderr(&out);
    assert_contains(&err, "noseeds.toml: line 2");
    assert_contains(&err, "`seeds`");
}

#[test]
fn explore_with_a_huge_time_is_bad_input_not_a_panic() {
    for time in [
        "99999999999999999999999h",
        "1000000000000000000000s",
        "8785h",
    ] {
        let out = locklab(&["explore", "--rung", "set-nx-px", "--time", time]);
        assert_eq!(out.status.code(), Some(3), "{time}: {}", stderr(&out));
        let err = stderr(&out);
        assert!(
            err.contains("--time") && err.contains("too long") && !err.contains("panicked"),
            "{err}"
        );
    }
}

#[test]
fn a_run_folder_that_cannot_be_written_hides_no_verdict_and_skips_no_rung() {
    let dir = scratch("unwritable");
    let file = dir.join("a-file");
    std::fs::write(&file, "not a folder").unwrap();
    let out = locklab(&[
        "run",
        "scenarios/pause-at-release-start.toml",
        "--out",
        path(&file.join("runs")),
    ]);
    // set-nx-px is violated, get-check-del safe: both are judged and shown,
    // the write errors are named, and the violation decides the exit.
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let text = stdout(&out);
    assert_contains(&text, "set-nx-px: violated");
    assert_contains(&text, "get-check-del: safe");
    assert_eq!(
        stderr(&out).matches("cannot write").count(),
        2,
        "{}",
        stderr(&out)
    );
}

#[test]
fn bench_to_an_unwritable_out_is_bad_input_naming_the_path_before_measuring() {
    let dir = scratch("bench-unwritable");
    // A folder under a regular file cannot be made, whoever runs this.
    let file = dir.join("a-file");
    std::fs::write(&file, b"not a folder").unwrap();
    let target = file.join("reports");
    let out = locklab(&["bench", "--quick", "--no-pin", "--out", path(&target)]);
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains(path(&target)), "{err}");
    assert_contains(&err, "nothing was measured");
    assert!(!err.contains("starting"), "servers were started: {err}");
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn bench_with_a_malformed_redis_url_is_bad_input_naming_the_url() {
    let (out, dir) = locklab_out(
        "bench --quick --no-pin --redis redis://127.0.0.1:notaport",
        "bench-bad-url",
    );
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    let err = stderr(&out);
    assert_contains(&err, "redis://127.0.0.1:notaport");
    assert_contains(&err, "redis://host:port");
    let _ = std::fs::remove_dir_all(dir);
}

/// Runs set-nx-px in pause-at-release-start (violated: exit 1) into a
/// fresh folder; its output and its run folder.
fn record_run(name: &str) -> (Output, PathBuf) {
    let (out, dir) = locklab_out(
        "run scenarios/pause-at-release-start.toml --rung set-nx-px",
        name,
    );
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    (out, dir.join("runs/pause-at-release-start/set-nx-px/1"))
}

/// Replays a fresh [`record_run`] after `edit` rewrote the run folder's
/// `file`; the replay's output and the file's path.
fn replay_edited(name: &str, file: &str, edit: impl FnOnce(String) -> String) -> (Output, PathBuf) {
    let run = record_run(name).1;
    let file = run.join(file);
    let text = std::fs::read_to_string(&file).unwrap();
    std::fs::write(&file, edit(text)).unwrap();
    (locklab(&["replay", path(&run)]), file)
}

#[test]
fn replay_finds_a_verdict_json_edited_after_the_run() {
    let (out, _) = replay_edited("replay-verdict", "verdict.json", |text| {
        text.replacen("\"violated\"", "\"safe\"", 1)
    });
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    assert_contains(&stdout(&out), "is not what it gets now");
}

#[test]
fn replay_of_a_history_with_crlf_line_endings_says_so() {
    let (out, _) = replay_edited("replay-crlf", "history.jsonl", |text| {
        text.replace('\n', "\r\n")
    });
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    assert_contains(&stdout(&out), "CRLF line endings");
    assert!(
        !stdout(&out).contains("(end of history)"),
        "{}",
        stdout(&out)
    );
}

#[test]
fn replay_names_the_file_whose_field_is_missing() {
    let (out, file) = replay_edited("replay-field", "verdict.json", |_| {
        "{\"seed\": 1}".to_string()
    });
    assert_eq!(out.status.code(), Some(3));
    assert_contains(&stderr(&out), path(&file));
}

#[test]
fn run_of_a_big_scenario_says_how_long_to_expect_before_it_starts() {
    use std::io::BufRead as _;
    let dir = scratch("big");
    let file = dir.join("big.toml");
    std::fs::write(
        &file,
        "rungs = [\"set-nx-px\", \"lua-release\", \"watchdog\"]\nseeds = [1, 2, 3, 4, 5]\n\
         duration_ms = 3600000\n[[clients]]\ncount = 256\ncycles = 100\nthink_ms = 36000\n",
    )
    .unwrap();
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_locklab"))
        .args(["run", path(&file), "--out", path(&dir)])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start locklab");
    let err = child.stderr.take().expect("stderr");
    let (lines, first) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(err).lines() {
            if lines.send(line).is_err() {
                break;
            }
        }
    });
    // The note comes before the first step; the run itself (days) is
    // stopped as soon as it is read.
    let note = first.recv_timeout(std::time::Duration::from_secs(60));
    let _ = child.kill();
    let _ = child.wait();
    let note = note.expect("a line on stderr").expect("text");
    assert!(
        note.starts_with(&format!(
            "note: {}: simulates 60 min with 256 clients for 5 seeds × 3 rungs; expect about ",
            path(&file)
        )),
        "{note}"
    );
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn ladder_lists_the_libraries_and_the_etcd_zookeeper_and_database_locks_as_groups_of_their_own_after_the_ladder()
 {
    let out = locklab(&["ladder"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    let (ladder, groups) = text
        .split_once("\nlibraries:\n")
        .expect("a libraries group");
    let (libraries, services) = groups.split_once("\netcd:\n").expect("an etcd group");
    let (etcd, zookeeper) = (services.split_once("\nzookeeper:\n")).expect("a zookeeper group");
    let (zookeeper, databases) =
        (zookeeper.split_once("\ndatabases:\n")).expect("a databases group");
    for rung in locks::LADDER {
        assert!(ladder.contains(rung.id), "{}", rung.id);
    }
    let ids = |group: &str| -> Vec<String> {
        group
            .lines()
            .filter_map(|l| l.split_whitespace().nth(1))
            .map(str::to_string)
            .collect()
    };
    let expected: Vec<String> = locks::LIBRARIES.iter().map(|r| r.id.to_string()).collect();
    assert_eq!(ids(libraries), expected);
    let expected: Vec<String> = (locks::etcd::rungs::RUNGS.iter())
        .map(|r| r.id.to_string())
        .collect();
    assert_eq!(ids(etcd), expected);
    let expected: Vec<String> = (locks::zookeeper::rungs::RUNGS.iter())
        .map(|r| r.id.to_string())
        .collect();
    assert_eq!(ids(zookeeper), expected);
    let expected: Vec<String> = (locks::database::rungs::RUNGS.iter())
        .map(|r| r.id.to_string())
        .collect();
    assert_eq!(ids(databases), expected);
}
