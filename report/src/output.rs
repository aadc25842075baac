//! What `locklab run` prints and writes for a judged cell.
//!
//! A run's folder, `reports/runs/<scenario>/<rung>/<seed>/`, holds
//! everything needed to replay and judge it again: `scenario.toml` (the
//! file as run), `history.jsonl`, `verdict.json` and `timeline.svg`, and
//! for people `report.html` ([`crate::html::run_page`]).

use crate::timeline;
use harness::atomic::write_whole;
use judge::judged::{Judged, describe_checks};
use judge::verdict::VerdictDoc;
use model::scenario::Scenario;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// The run page's file name in a run's folder.
pub const REPORT_FILE: &str = "report.html";

/// Width of the ASCII timeline, in characters of time.
pub(crate) const TIMELINE_WIDTH: usize = 72;

/// The folder of a run under `root`.
pub fn run_dir(root: &Path, judged: &Judged) -> PathBuf {
    root.join("runs")
        .join(&judged.scenario)
        .join(&judged.rung)
        .join(judged.seed.to_string())
}

/// Writes a run's folder; `scenario_text` is the scenario file as run.
pub fn write_run(dir: &Path, judged: &Judged, scenario_text: &str) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    write_whole(&dir.join("scenario.toml"), scenario_text)?;
    write_whole(&dir.join("history.jsonl"), judged.history.to_jsonl())?;
    write_whole(
        &dir.join("verdict.json"),
        verdict_file_text(&verdict_doc(judged)),
    )?;
    match timeline::svg(&judged.history, &timeline_title(judged)) {
        Ok(svg) => write_whole(&dir.join("timeline.svg"), &svg)?,
        Err(e) => eprintln!("warning: timeline.svg not drawn: {e}"),
    }
    // The text was parsed to run it, so it parses again; should it not,
    // the page is left out and the run folder is whole all the same.
    match Scenario::parse(scenario_text, "scenario.toml", &judged.scenario) {
        Ok(scenario) => {
            let page = crate::html::run_page(&crate::html::run::RunPage {
                judged,
                scenario: &scenario,
                scenario_text,
                dir,
            });
            write_whole(&dir.join(REPORT_FILE), &page)?;
        }
        Err(e) => eprintln!("warning: {REPORT_FILE} not written: {e}"),
    }
    Ok(())
}

/// The `verdict.json` document of a judged run.
pub fn verdict_doc(judged: &Judged) -> VerdictDoc {
    VerdictDoc::new(&judged.results, &judged.scenario, &judged.rung, judged.seed)
}

/// The text of `verdict.json` as a run folder holds it.
pub fn verdict_file_text(doc: &VerdictDoc) -> String {
    doc.to_json() + "\n"
}

/// The title of a run's timeline.
fn timeline_title(judged: &Judged) -> String {
    format!(
        "{} / {} / seed {}",
        judged.scenario, judged.rung, judged.seed
    )
}

/// The run's `timeline.svg`, or `None` when it cannot be drawn (then the
/// run folder has none).
pub(crate) fn timeline_svg(judged: &Judged) -> Option<String> {
    timeline::svg(&judged.history, &timeline_title(judged)).ok()
}

/// The human report of a judged cell: seed first, then verdict, witness,
/// damage and the timeline.
pub fn describe(judged: &Judged) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "seed {}", judged.seed);
    let _ = writeln!(
        out,
        "{} / {}: {}",
        judged.scenario,
        judged.rung,
        judged.verdict.as_str()
    );
    out.push_str(&describe_checks(judged));
    out.push_str(&timeline::ascii(&judged.history, TIMELINE_WIDTH));
    out
}
