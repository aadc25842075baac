//! The HTML pages as text, without a browser (`tests/html_reports.rs` at
//! the root opens them in Chromium): the same run gives the same page, a
//! run page has a lane for every client and node of its deployment and
//! marks every witness event in three places (ringed on the timeline,
//! listed under its check, marked in the history), its in-page links all
//! have targets, and every scenario file survives the round trip through
//! TOML that the suite's run folders rely on.

use crate::common;

use model::scenario::Scenario;
use report::html::run::RunPage;
use sim::cell::run_cell;
use std::collections::BTreeSet;
use std::path::Path;

use common::scenarios_dir;

/// The run page of `name` / `rung` / its first seed, and the run.
fn page_of(name: &str, rung: &str) -> (String, sim::cell::Judged) {
    let path = scenarios_dir().join(format!("{name}.toml"));
    let (scenario, text) = Scenario::load_text(&path).unwrap();
    let judged = run_cell(&scenario, rung, scenario.seeds[0]).unwrap();
    let html = report::html::run_page(&RunPage {
        judged: &judged,
        scenario: &scenario,
        scenario_text: &text,
        dir: Path::new("reports/runs/x"),
    });
    (html, judged)
}

/// The values of `name="..."` in `html`.
fn values(html: &str, name: &str) -> Vec<String> {
    let needle = format!(" {name}=\"");
    html.split(&needle)
        .skip(1)
        .map(|rest| rest[..rest.find('"').unwrap()].to_string())
        .collect()
}

#[test]
fn the_same_run_gives_the_same_page_byte_for_byte() {
    let (first, _) = page_of("pause-at-release-mid", "get-check-del");
    let (second, _) = page_of("pause-at-release-mid", "get-check-del");
    assert!(first == second, "two runs of one seed gave different pages");
}

#[test]
fn every_witness_event_is_ringed_listed_and_marked_in_the_history() {
    let (html, judged) = page_of("pause-at-release-mid", "get-check-del");
    assert_eq!(judged.verdict, model::verdict::Verdict::Violated);
    let witness: BTreeSet<usize> = judged
        .results
        .all()
        .into_iter()
        .flat_map(|(_, c)| c.witness().to_vec())
        .collect();
    assert!(!witness.is_empty());
    for i in &witness {
        assert!(
            html.contains(&format!("id=\"tl-ev-{i}\"")),
            "event {i} not ringed"
        );
        assert!(
            html.contains(&format!("href=\"#ev-{i}\">event {i}</a>")),
            "event {i} not listed"
        );
        assert!(
            html.contains(&format!("<tr id=\"ev-{i}\" class=\"witness\">")),
            "event {i} not marked"
        );
    }
    let ids: BTreeSet<String> = values(&html, "id").into_iter().collect();
    for link in values(&html, "href") {
        let anchor = link
            .strip_prefix('#')
            .expect("a run page links only within itself");
        assert!(ids.contains(anchor), "#{anchor} has no target");
    }
}

#[test]
fn a_run_page_has_a_lane_for_every_client_and_node() {
    // Redlock on five independent masters.
    let (html, judged) = page_of("clock-jump-on-majority-node", "redlock");
    let clients: BTreeSet<usize> = judged
        .history
        .events()
        .iter()
        .filter_map(|e| match &e.kind {
            model::history::EventKind::Invoke { client, .. } => Some(*client),
            _ => None,
        })
        .collect();
    for c in clients {
        assert!(
            html.contains(&format!("id=\"lane-client-{c}\"")),
            "no lane for client {c}"
        );
    }
    for n in 0..5 {
        assert!(
            html.contains(&format!("id=\"lane-redis-{n}\"")),
            "no lane for redis-{n}"
        );
    }
    assert!(html.contains("id=\"lane-store\""));
    assert!(
        html.contains("class=\"key-set\""),
        "the nodes' key records are drawn"
    );
}

#[test]
fn every_scenario_survives_the_round_trip_through_toml() {
    for entry in std::fs::read_dir(scenarios_dir()).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|x| x != "toml") {
            continue;
        }
        let mut scenario = Scenario::load(&path).unwrap();
        // Notes on old spellings are about the file, not the scenario.
        scenario.notes.clear();
        let text = model::scenario_text::scenario_toml(&scenario, "round trip");
        let again =
            Scenario::parse(&text, "again.toml", "unused").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(again, scenario, "{}", path.display());
    }
}
