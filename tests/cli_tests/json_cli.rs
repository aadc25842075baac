//! `--json` through the binary: every command prints one document on
//! standard output that its schema under `docs/schema/` accepts, and the
//! schema rejects a field it does not name, at the top and deep inside.

use crate::common;

use common::{document, locklab, locklab_in, locklab_out, path, root, scratch, stderr, words};
use serde_json::Value;
use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Command, Stdio};
use std::time::Duration;

/// The validator of `docs/schema/<command>.json`.
fn validator(command: &str) -> jsonschema::Validator {
    let file = root().join(format!("docs/schema/{command}.json"));
    let text = std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{file:?}: {e}"));
    let schema: Value = serde_json::from_str(&text).expect("the schema is JSON");
    jsonschema::validator_for(&schema).unwrap_or_else(|e| panic!("{file:?}: {e}"))
}

/// Fails, naming every error, unless `command`'s schema accepts `doc`.
fn assert_valid(command: &str, doc: &Value) {
    assert_eq!(doc["command"], command, "{doc}");
    let errors: Vec<String> = validator(command)
        .iter_errors(doc)
        .map(|e| {
            format!(
                "{} at {} (schema {})",
                e.masked(),
                e.instance_path(),
                e.schema_path()
            )
        })
        .collect();
    assert!(errors.is_empty(), "{command}: {errors:#?}\n{doc}");
}

/// Fails unless `command`'s schema refuses `doc` with a field `stray`
/// added to the object at `pointer` (JSON pointer).
fn assert_stray_field_rejected(command: &str, doc: &Value, pointer: &str) {
    let mut changed = doc.clone();
    let object = changed
        .pointer_mut(pointer)
        .and_then(Value::as_object_mut)
        .unwrap_or_else(|| panic!("{command}: no object at {pointer:?} in {doc}"));
    object.insert("stray".into(), 1.into());
    assert!(
        !validator(command).is_valid(&changed),
        "{command}: a stray field at {pointer:?} was accepted"
    );
}

/// Runs `args` (with `--json`), expects `code`, validates the document and
/// returns it.
fn valid_document(args: &[&str], code: i32) -> Value {
    let out = locklab(args);
    assert_eq!(out.status.code(), Some(code), "{args:?}\n{}", stderr(&out));
    let doc = document(&out);
    assert_valid(args[0], &doc);
    assert_eq!(doc["exit_code"], code, "{doc}");
    doc
}

#[test]
fn ladder_json_is_valid_and_closed() {
    let doc = valid_document(&["ladder", "--json"], 0);
    assert_eq!(doc["result"]["rungs"].as_array().unwrap().len(), 11);
    assert_eq!(doc["errors"], serde_json::json!([]));
    assert_stray_field_rejected("ladder", &doc, "");
    assert_stray_field_rejected("ladder", &doc, "/result/rungs/0");
}

#[test]
fn run_and_replay_json_are_valid_and_human_text_goes_to_stderr() {
    let (out, dir) = locklab_out(
        "run scenarios/pause-at-release-start.toml --rung set-nx-px --json",
        "json-run",
    );
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("pause-at-release-start / set-nx-px: violated"),
        "the human report is on standard error"
    );
    let doc = document(&out);
    assert_valid("run", &doc);
    let runs = doc["result"]["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0]["verdict_json"]["verdict"], "violated");
    let folder = runs[0]["folder"].as_str().unwrap();
    // The document holds what the run folder's verdict.json holds.
    let written: Value = serde_json::from_str(
        &std::fs::read_to_string(std::path::Path::new(folder).join("verdict.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(runs[0]["verdict_json"], written);
    assert_stray_field_rejected("run", &doc, "/result");
    assert_stray_field_rejected("run", &doc, "/result/runs/0/verdict_json/damage");
    assert_stray_field_rejected("run", &doc, "/result/runs/0/verdict_json/checkers/liveness");

    let replayed = valid_document(&["replay", folder, "--json"], 0);
    assert_eq!(replayed["result"]["identical"], true);
    assert_eq!(replayed["result"]["variant"], "set-nx-px");
    assert_stray_field_rejected("replay", &replayed, "/result");
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn bad_input_still_prints_one_valid_document_naming_the_error() {
    let doc = valid_document(&["run", "no-such-scenario.toml", "--json"], 3);
    assert!(doc["result"].is_null(), "{doc}");
    let errors = doc["errors"].as_array().unwrap();
    assert!(
        errors.len() == 1
            && errors[0]
                .as_str()
                .unwrap()
                .contains("no-such-scenario.toml"),
        "{doc}"
    );
}

#[test]
fn an_unreadable_rung_file_is_named_in_the_documents_errors_of_every_command_that_takes_one() {
    let runs = [
        vec!["run", "scenarios/pause-at-release-start.toml"],
        vec!["suite", "--scenarios", "scenarios"],
        vec!["explore", "--cases", "1"],
    ];
    for mut args in runs {
        args.extend(["--rung-file", "no-such-rung-file.toml", "--json"]);
        let doc = valid_document(&args, 3);
        let errors = doc["errors"].as_array().unwrap();
        assert!(
            errors.len() == 1
                && errors[0].as_str().unwrap().starts_with("--rung-file: ")
                && errors[0]
                    .as_str()
                    .unwrap()
                    .contains("no-such-rung-file.toml"),
            "{args:?}: {doc}"
        );
    }
}

#[test]
fn suite_json_is_valid_with_every_cell() {
    let scenarios = scratch("json-suite-scenarios");
    for name in ["pause-at-release-start.toml", "nested-acquire.toml"] {
        std::fs::copy(root().join("scenarios").join(name), scenarios.join(name)).unwrap();
    }
    let out_dir = scratch("json-suite");
    let junit = out_dir.join("junit.xml");
    let doc = valid_document(
        &[
            "suite",
            "--scenarios",
            path(&scenarios),
            "--out",
            path(&out_dir),
            "--junit",
            path(&junit),
            "--json",
        ],
        0,
    );
    let result = &doc["result"];
    assert_eq!(result["grid"], "named");
    assert_eq!(
        result["cells"].as_array().unwrap().len(),
        result["cells_planned"]
    );
    assert_eq!(result["unexpected"], 0);
    assert_eq!(result["junit"], path(&junit));
    // The cells are those of safety-matrix.json.
    let matrix: Value =
        serde_json::from_str(&std::fs::read_to_string(out_dir.join("safety-matrix.json")).unwrap())
            .unwrap();
    assert_eq!(result["cells"], matrix["cells"]);
    assert_stray_field_rejected("suite", &doc, "/result/cells/0");
    assert_stray_field_rejected("suite", &doc, "/result/cells/0/damage");
    let _ = std::fs::remove_dir_all(scenarios);
    let _ = std::fs::remove_dir_all(out_dir);
}

#[test]
fn tour_and_scenarios_json_are_valid_from_any_folder() {
    // From an empty folder: the built-in scenarios.
    let empty = scratch("json-tour");
    let out = locklab_in(&empty, &["tour", "--rung", "set-nx-px", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let doc = document(&out);
    assert_valid("tour", &doc);
    let stop = &doc["result"]["stops"][0];
    assert_eq!(stop["variant"], "set-nx-px");
    assert_eq!(stop["broken"]["verdict"], "violated");
    assert_eq!(stop["next"]["variant"], "get-check-del");
    assert_stray_field_rejected("tour", &doc, "/result/stops/0");

    let listed = valid_document(&["scenarios", "--json"], 0);
    assert!(listed["result"]["scenarios"].as_array().unwrap().len() > 10);
    assert_stray_field_rejected("scenarios", &listed, "/result/scenarios/0");
    let exported = valid_document(
        &["scenarios", "--export", path(&empty.join("x")), "--json"],
        0,
    );
    let written = exported["result"]["written"].as_array().unwrap();
    assert_eq!(
        written.len(),
        listed["result"]["scenarios"].as_array().unwrap().len()
    );
    let _ = std::fs::remove_dir_all(empty);
}

#[test]
fn explore_json_is_one_valid_document_even_with_a_finding() {
    let dir = scratch("json-explore");
    let line = format!(
        "explore --rung set-nx-px --cases 10 --json --out {}",
        path(&dir)
    );
    let doc = valid_document(&words(&line), 1);
    assert!(doc["result"]["first"]["replay"].is_string(), "{doc}");
    assert_stray_field_rejected("explore", &doc, "/result");
    assert_stray_field_rejected("explore", &doc, "/result/first");
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn sim_server_json_says_the_address_once_it_listens() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_locklab"))
        .args(["sim-server", "--port", "0", "--json"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn sim-server");
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    stdout.read_line(&mut line).expect("the ready line");
    let doc: Value = serde_json::from_str(&line).expect("JSON");
    assert_valid("sim-server", &doc);
    assert!(doc.get("exit_code").is_none(), "printed before it exits");
    assert_eq!(doc["result"]["pid"], child.id());
    let port = doc["result"]["port"].as_u64().unwrap();
    assert_ne!(port, 0, "the port the system chose");
    // The address it says answers at once.
    let mut conn = std::net::TcpStream::connect(doc["result"]["address"].as_str().unwrap())
        .expect("connect to the address said");
    conn.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    conn.write_all(b"PING\r\n").unwrap();
    let mut reply = [0u8; 7];
    conn.read_exact(&mut reply).unwrap();
    assert_eq!(&reply, b"+PONG\r\n");
    assert_stray_field_rejected("sim-server", &doc, "/result");
    let killed = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .expect("kill");
    assert!(killed.success());
    let status = child.wait().expect("wait");
    assert!(status.success(), "{status}");
    let mut rest = String::new();
    stdout.read_to_string(&mut rest).unwrap();
    assert_eq!(rest, "", "one document only");
}

#[test]
fn bench_json_of_a_run_stopped_by_sigterm_is_a_valid_partial_result() {
    let installed = Command::new("redis-server")
        .arg("--version")
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !installed {
        eprintln!("redis-server not installed; skipped");
        return;
    }
    let out = scratch("json-bench");
    let mut child = Command::new(env!("CARGO_BIN_EXE_locklab"))
        .args(words("bench --quick --no-pin --json --out"))
        .arg(&out)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run locklab bench");
    // Standard error read to its end on a thread (a closed pipe would
    // fail the bench's own writes); stopped once the first pairs are
    // measured (a full run takes minutes).
    let stderr = BufReader::new(child.stderr.take().unwrap());
    let (lines, received) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in stderr.lines().map_while(Result::ok) {
            let _ = lines.send(line);
        }
    });
    let mut seen = Vec::new();
    while let Ok(line) = received.recv_timeout(Duration::from_secs(120)) {
        let measured = line.contains("targets round 1");
        seen.push(line);
        if measured {
            break;
        }
    }
    let killed = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .expect("kill");
    assert!(killed.success(), "{seen:#?}");
    let ended = child.wait_with_output().expect("wait");
    assert_eq!(ended.status.code(), Some(130), "{seen:#?}");
    let doc = document(&ended);
    assert_valid("bench", &doc);
    assert_eq!(doc["exit_code"], 130);
    assert_eq!(doc["result"]["partial"]["stopped_by"], "SIGTERM");
    assert_stray_field_rejected("bench", &doc, "/result/partial");
    assert_stray_field_rejected("bench", &doc, "/result/machine");
    let _ = std::fs::remove_dir_all(out);
}

#[test]
fn check_json_is_valid_and_closed() {
    let out_dir = common::scratch("json-check");
    let file = common::root().join("interchange/tests/histories/owner-mutex-invalid.edn");
    let doc = valid_document(
        &[
            "check",
            common::path(&file),
            "--out",
            common::path(&out_dir),
            "--json",
        ],
        1,
    );
    let checked = &doc["result"]["files"][0];
    assert_eq!(checked["valid"], "false", "{doc}");
    assert_eq!(
        checked["checks"]["mutual-exclusion"]["witness"],
        serde_json::json!([1, 3, 4, 6])
    );
    assert_stray_field_rejected("check", &doc, "/result");
    assert_stray_field_rejected("check", &doc, "/result/files/0");
    assert_stray_field_rejected("check", &doc, "/result/files/0/checks/mutual-exclusion");
    let _ = std::fs::remove_dir_all(out_dir);
}
