//! `suite --junit` and `explore --junit`, read back with a real XML
//! parser: the counts, a failing cell's message and witness, a cell with
//! no expectation that passes, and a search's failure with its replay
//! command.

use crate::common;

use common::{assert_contains, locklab_line, path, root, scratch, stderr};

/// An attribute every report element must have.
fn attribute<'a>(node: roxmltree::Node<'a, '_>, name: &str) -> &'a str {
    node.attribute(name)
        .unwrap_or_else(|| panic!("<{}> without {name}", node.tag_name().name()))
}

#[test]
fn suite_junit_has_a_case_per_cell_and_a_failure_for_the_cell_that_differs() {
    let dir = scratch("junit-suite");
    let scenarios = dir.join("scenarios");
    std::fs::create_dir_all(&scenarios).unwrap();
    let text = std::fs::read_to_string(root().join("scenarios/stop-the-world-pause.toml")).unwrap();
    // The watchdog is violated here: expecting it safe makes its cell differ.
    let edited = text.replace("watchdog = \"violated\"", "watchdog = \"safe\"");
    assert_ne!(edited, text);
    std::fs::write(scenarios.join("gc-pause.toml"), edited).unwrap();
    let report = dir.join("reports/junit.xml");
    let out = locklab_line(&format!(
        "suite --all --scenarios {} --out {} --junit {}",
        path(&scenarios),
        path(&dir.join("out")),
        path(&report)
    ));
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));

    let xml = std::fs::read_to_string(&report).unwrap();
    let doc = roxmltree::Document::parse(&xml).expect("well-formed XML");
    let suites = doc.root_element();
    assert_eq!(suites.tag_name().name(), "testsuites");
    // Every rung: the ladder's, the libraries' and every other service's
    // (the scenario is standalone, which etcd and ZooKeeper run too).
    assert_eq!(
        attribute(suites, "tests"),
        locks::all_ids().len().to_string()
    );
    assert_eq!(attribute(suites, "failures"), "1");
    assert_eq!(attribute(suites, "skipped"), "0");
    assert!(attribute(suites, "time").parse::<f64>().is_ok());
    let cases: Vec<_> = doc
        .descendants()
        .filter(|n| n.has_tag_name("testcase"))
        .collect();
    let names: Vec<&str> = cases.iter().map(|c| attribute(*c, "name")).collect();
    assert_eq!(names, locks::all_ids());
    assert!(
        cases
            .iter()
            .all(|c| attribute(*c, "classname") == "gc-pause")
    );
    assert!(!xml.contains("name=\"partial\""));

    let failures: Vec<_> = doc
        .descendants()
        .filter(|n| n.has_tag_name("failure"))
        .collect();
    assert_eq!(failures.len(), 1);
    let failure = failures[0];
    assert_eq!(attribute(failure.parent().unwrap(), "name"), "watchdog");
    assert_eq!(
        attribute(failure, "message"),
        "gc-pause / watchdog: violated, expected safe (seed 1)"
    );
    // The text names the failed check and its witness events (JSON lines,
    // quotes and all, unescaped by the parser).
    let body = failure.text().unwrap();
    assert_contains(body, "INVALID");
    assert_contains(body, "\"at_us\":");

    // A rung the scenario does not name (no-lock is violated) passes.
    let no_lock = cases[0];
    assert!(no_lock.children().all(|c| !c.has_tag_name("failure")));
}

#[test]
fn explore_junit_fails_the_rung_with_the_counterexample_and_its_replay_command() {
    let dir = scratch("junit-explore");
    let report = dir.join("explore.xml");
    let out = locklab_line(&format!(
        "explore --rung no-lock --cases 4 --seed 5 --jobs 1 --out {} --junit {}",
        path(&dir),
        path(&report)
    ));
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let xml = std::fs::read_to_string(&report).unwrap();
    let doc = roxmltree::Document::parse(&xml).expect("well-formed XML");
    let suites = doc.root_element();
    assert_eq!(attribute(suites, "tests"), "1");
    assert_eq!(attribute(suites, "failures"), "1");
    let case = doc
        .descendants()
        .find(|n| n.has_tag_name("testcase"))
        .unwrap();
    assert_eq!(attribute(case, "name"), "no-lock");
    assert_eq!(attribute(case, "classname"), "explore --faults all");
    let failure = case.children().find(|n| n.has_tag_name("failure")).unwrap();
    assert_eq!(attribute(failure, "type"), "violation");
    assert!(attribute(failure, "message").contains("first counterexample: seed 5, violated"));
    let replay = format!(
        "replay: locklab run {} --rung no-lock --seed 5",
        dir.join("found/no-lock-5.toml").display()
    );
    assert!(failure.text().unwrap().contains(&replay), "{xml}");
    let cases = doc
        .descendants()
        .find(|n| n.has_tag_name("property") && n.attribute("name") == Some("cases"))
        .unwrap();
    assert_eq!(attribute(cases, "value"), "4");
}
