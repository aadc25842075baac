//! The page of a history judged by `locklab check`, `report.html` beside
//! the history as locklab read it: the verdict; the timeline (a lane per
//! client, the witness ringed), drawn from the history's own times; each
//! checker's result with its witness; the damage; and the history. The
//! same pieces as a run page, without a scenario: the history came from
//! elsewhere, so there is nothing to replay.

use super::lanes::Lanes;
use super::run::{ShownCheck, TIMELINE_SCRIPT, checks, damage, history_section, timeline_section};
use super::{key_values, page, text, verdict_badge};
use model::history::History;
use model::scenario::Topology;
use model::verdict::Verdict;
use std::collections::BTreeSet;
use std::fmt::Write as _;

/// What a check page is made of.
#[derive(Debug, Clone, Copy)]
pub struct CheckPage<'a> {
    /// The file judged, as the user named it.
    pub file: &'a str,
    /// The model it was judged against.
    pub model: &'a str,
    /// The verdict.
    pub verdict: Verdict,
    /// Facts about the judgement, for the summary (format, operations,
    /// what was left out, the clocks).
    pub facts: &'a [(String, String)],
    /// The history as locklab judged it.
    pub history: &'a History,
    /// Every checker's result.
    pub checks: &'a [ShownCheck<'a>],
    /// The damage figures (`null`: not measured).
    pub damage: &'a serde_json::Value,
}

/// The page of `judged`.
pub fn check_page(judged: &CheckPage<'_>) -> String {
    let title = format!("{} ({}): {}", judged.file, judged.model, judged.verdict);
    let mut body = String::new();
    let _ = writeln!(
        body,
        "<header>\n<h1>{} <span class=\"muted\">as {}</span> {}</h1>",
        text(judged.file),
        text(judged.model),
        verdict_badge(judged.verdict)
    );
    body.push_str(
        "<nav><a href=\"#timeline-section\">Timeline</a><a href=\"#checks\">Checks</a>\
         <a href=\"#damage\">Damage</a><a href=\"#history\">History</a></nav>\n</header>\n",
    );
    body.push_str(&key_values(judged.facts));
    let witness: BTreeSet<usize> = judged
        .checks
        .iter()
        .flat_map(|c| c.check.witness().iter().copied())
        .collect();
    // The history names no deployment: a node gets a lane only where the
    // history recorded something of it (a history locklab exported).
    let mut lanes = Lanes::of(judged.history, &Topology::default());
    lanes
        .nodes
        .retain(|n| !(n.keys.is_empty() && n.instants.is_empty() && n.down.is_empty()));
    timeline_section(&mut body, judged.history, &lanes, &witness);
    checks(&mut body, judged.history, judged.checks);
    damage(&mut body, judged.damage);
    history_section(&mut body, judged.history, &witness);
    body.push_str("<div id=\"tip\" role=\"tooltip\"></div>\n");
    page(&title, &body, TIMELINE_SCRIPT)
}
