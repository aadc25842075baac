//! The run page, `report.html` in a run's folder: the verdict; a zoomable
//! timeline (a lane per client and per node, the faults as bands, the
//! witness ringed); each checker's result with the history events behind
//! it, listed and linked; the damage figures; the exact commands that
//! replay the run; the scenario as run; and the whole history, each event
//! an anchor (`#ev-N`).

use super::lanes::Lanes;
use super::{key_values, ms, page, text, verdict_badge};
use judge::check::Check;
use judge::judged::Judged;
use model::history::History;
use model::scenario::Scenario;
use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::path::Path;

/// The timeline's script.
pub(crate) const TIMELINE_SCRIPT: &str = include_str!("timeline.js");

/// What a run page is made of.
#[derive(Debug, Clone, Copy)]
pub struct RunPage<'a> {
    /// The run, judged.
    pub judged: &'a Judged,
    /// Its scenario, as parsed.
    pub scenario: &'a Scenario,
    /// The scenario file as run.
    pub scenario_text: &'a str,
    /// The run's folder, as the replay commands name it.
    pub dir: &'a Path,
}

/// A path or word as one shell argument: as it is when it needs no
/// quoting, else in single quotes.
pub fn shell_word(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_./=:,+@%".contains(&b));
    if plain {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', "'\\''"))
    }
}

/// The commands that replay the run: from its folder, and from its
/// scenario file.
pub fn replay_commands(dir: &Path, rung: &str, seed: u64) -> [String; 2] {
    let folder = dir.display().to_string();
    let file = dir.join("scenario.toml").display().to_string();
    [
        format!("locklab replay {}", shell_word(&folder)),
        format!(
            "locklab run {} --rung {} --seed {seed}",
            shell_word(&file),
            shell_word(rung)
        ),
    ]
}

/// Every event of every failed check's witness.
fn witness_events(judged: &Judged) -> BTreeSet<usize> {
    judged
        .results
        .all()
        .into_iter()
        .flat_map(|(_, check)| check.witness().iter().copied())
        .collect()
}

/// One event as the history file has it.
fn event_json(history: &History, i: usize) -> Option<(u64, String)> {
    let event = history.events().get(i)?;
    Some((
        event.at_us,
        serde_json::to_string(event).unwrap_or_default(),
    ))
}

/// One checker's result as a page shows it: its name, the result, and
/// whether it decides the verdict.
#[derive(Debug, Clone, Copy)]
pub struct ShownCheck<'a> {
    /// The checker's name.
    pub name: &'a str,
    /// Its result.
    pub check: &'a Check,
    /// Whether it decides the verdict (else it is information).
    pub decides: bool,
}

/// The checks of a judged run.
fn run_checks(judged: &Judged) -> Vec<ShownCheck<'_>> {
    judged
        .results
        .all()
        .into_iter()
        .map(|(checker, check)| ShownCheck {
            name: checker.name(),
            check,
            decides: judged.results.decides(checker),
        })
        .collect()
}

/// The checks: each checker's result, its reason, and its witness events
/// with links to their place on the timeline and in the history.
pub(crate) fn checks(out: &mut String, history: &History, shown: &[ShownCheck<'_>]) {
    out.push_str("<section id=\"checks\">\n<h2>Checks</h2>\n");
    for &ShownCheck {
        name,
        check,
        decides,
    } in shown
    {
        let note = if decides {
            ""
        } else {
            " <span class=\"muted\">(information: does not decide the verdict)</span>"
        };
        let _ = writeln!(
            out,
            "<h3 id=\"check-{name}\">{name}: <span class=\"c-{c}\">{c}</span>{note}</h3>",
            c = check.name()
        );
        if let Some(why) = check.why() {
            let _ = writeln!(out, "<p>{}</p>", text(why));
        }
        let Check::Invalid { witness, .. } = check else {
            continue;
        };
        let times: Vec<u64> = witness
            .iter()
            .filter_map(|&i| event_json(history, i).map(|(t, _)| t))
            .collect();
        if let (Some(from), Some(to)) = (times.iter().min(), times.iter().max()) {
            let _ = writeln!(
                out,
                "<p>The witness: {} events. <button type=\"button\" data-zoom-from=\"{from}\" data-zoom-to=\"{to}\">Zoom the timeline to it</button></p>",
                witness.len()
            );
        }
        let _ = writeln!(out, "<ul class=\"witness-events\" id=\"witness-{name}\">");
        for &i in witness {
            let Some((at_us, json)) = event_json(history, i) else {
                continue;
            };
            let _ = writeln!(
                out,
                "<li id=\"w-{name}-{i}\"><a href=\"#ev-{i}\">event {i}</a> at {} (<a href=\"#tl-ev-{i}\">on the timeline</a>): <code>{}</code></li>",
                ms(at_us),
                text(&json)
            );
        }
        out.push_str("</ul>\n");
    }
    out.push_str("</section>\n");
}

/// The damage figures, `not measured` where a figure is `null`.
pub(crate) fn damage(out: &mut String, value: &serde_json::Value) {
    out.push_str("<section id=\"damage\">\n<h2>Damage</h2>\n");
    let rows: Vec<(String, String)> = value
        .as_object()
        .map(|fields| {
            fields
                .iter()
                .map(|(name, v)| {
                    let shown = match v {
                        serde_json::Value::Null => "not measured".to_string(),
                        other => other.to_string(),
                    };
                    (name.clone(), shown)
                })
                .collect()
        })
        .unwrap_or_default();
    out.push_str(&key_values(&rows));
    out.push_str("</section>\n");
}

/// The legend of the timeline.
const LEGEND: &str = "<div class=\"legend\">\
<span><span class=\"sw\" style=\"background:#4682b4\"></span>holding (own view)</span>\
<span><span class=\"sw\" style=\"background:#c9d6e3\"></span>waiting to acquire</span>\
<span><span class=\"sw\" style=\"background:#dc2828\"></span>two clients hold at once</span>\
<span><span class=\"sw\" style=\"background:#f5a623\"></span>paused</span>\
<span><span class=\"sw\" style=\"background:#3c3c3c\"></span>crashed / down</span>\
<span><span class=\"sw\" style=\"background:#e3f1e3\"></span>node up</span>\
<span><span class=\"sw\" style=\"background:#1565c0\"></span>key set</span>\
<span><span class=\"sw\" style=\"background:#ef6c00\"></span>key expired</span>\
<span><span class=\"sw\" style=\"background:#616161\"></span>key deleted</span>\
<span><span class=\"sw\" style=\"background:#fff;border:2px solid #d50000\"></span>witness event</span>\
<span>under each client: release, extend, check, read, write (dashed: not ok)</span>\
</div>\n";

/// The run page of `run`.
pub fn run_page(run: &RunPage<'_>) -> String {
    let judged = run.judged;
    let title = format!(
        "{} / {} / seed {}: {}",
        judged.scenario, judged.rung, judged.seed, judged.verdict
    );
    let mut body = String::new();
    let _ = writeln!(
        body,
        "<header>\n<h1>{} / {} / seed {} {}</h1>",
        text(&judged.scenario),
        text(&judged.rung),
        judged.seed,
        verdict_badge(judged.verdict)
    );
    if !run.scenario.description.is_empty() {
        let _ = writeln!(
            body,
            "<p class=\"lede\">{}</p>",
            text(&run.scenario.description)
        );
    }
    body.push_str(
        "<nav><a href=\"#timeline-section\">Timeline</a><a href=\"#checks\">Checks</a>\
         <a href=\"#damage\">Damage</a><a href=\"#replay\">Replay</a>\
         <a href=\"#scenario\">Scenario</a><a href=\"#history\">History</a></nav>\n</header>\n",
    );
    let expected = match run.scenario.expect.get(&judged.rung) {
        None => "nothing stated for this rung".to_string(),
        Some(e) if *e == judged.verdict => format!("{e} (as expected)"),
        Some(e) => format!("{e} (this run differs)"),
    };
    let topology = run.scenario.topology_of(&judged.rung);
    let summary = [
        ("verdict".to_string(), judged.verdict.to_string()),
        ("expected".to_string(), expected),
        (
            "deployment".to_string(),
            format!(
                "{} ({} node{})",
                serde_json::to_value(topology.kind)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_string))
                    .unwrap_or_default(),
                topology.node_count(),
                if topology.node_count() == 1 { "" } else { "s" }
            ),
        ),
        (
            "history".to_string(),
            format!(
                "{} events over {} of true time",
                judged.history.len(),
                ms(judged.history.end_us())
            ),
        ),
    ];
    body.push_str(&key_values(&summary));

    let witness = witness_events(judged);
    let lanes = Lanes::of(&judged.history, topology);
    timeline_section(&mut body, &judged.history, &lanes, &witness);

    checks(&mut body, &judged.history, &run_checks(judged));
    damage(
        &mut body,
        &serde_json::to_value(&judged.results.damage).unwrap_or_default(),
    );

    body.push_str("<section id=\"replay\">\n<h2>Replay</h2>\n<p>The same seed gives the same history, byte for byte:</p>\n<pre>");
    for command in replay_commands(run.dir, &judged.rung, judged.seed) {
        body.push_str(&text(&command));
        body.push('\n');
    }
    body.push_str("</pre>\n</section>\n");

    let _ = writeln!(
        body,
        "<section id=\"scenario\">\n<h2>Scenario</h2>\n<pre>{}</pre>\n</section>",
        text(run.scenario_text)
    );

    history_section(&mut body, &judged.history, &witness);
    body.push_str("<div id=\"tip\" role=\"tooltip\"></div>\n");
    page(&title, &body, TIMELINE_SCRIPT)
}

/// The zoomable timeline with its controls and legend, the witness
/// events ringed.
pub(crate) fn timeline_section(
    out: &mut String,
    history: &History,
    lanes: &Lanes,
    witness: &BTreeSet<usize>,
) {
    out.push_str("<section id=\"timeline-section\">\n<h2>Timeline</h2>\n");
    out.push_str(
        "<div class=\"controls\"><button type=\"button\" id=\"zoom-in\">Zoom in</button>\
         <button type=\"button\" id=\"zoom-out\">Zoom out</button>\
         <button type=\"button\" id=\"zoom-reset\">Whole run</button>\
         <span class=\"muted\" id=\"view\"></span>\
         <span class=\"muted\">Scroll over the timeline to zoom, drag to move, hover an event to see it in full; a red ring is a witness event (click it for its history row).</span></div>\n",
    );
    out.push_str("<div class=\"timeline-box\">\n");
    out.push_str(&super::timeline::svg(lanes, history, witness));
    out.push_str("</div>\n");
    out.push_str(LEGEND);
    out.push_str("</section>\n");
}

/// The whole history, each event an anchor (`#ev-N`), the witness rows
/// marked.
pub(crate) fn history_section(out: &mut String, history: &History, witness: &BTreeSet<usize>) {
    let _ = writeln!(
        out,
        "<section>\n<h2>History</h2>\n<details id=\"history\"{}>\n<summary>All {} events (<code>history.jsonl</code>); the witness rows are marked</summary>\n<table class=\"history\">\n<tr><th>#</th><th>true time</th><th>event</th></tr>",
        if history.len() <= 400 { " open" } else { "" },
        history.len()
    );
    for event in history.events() {
        let class = if witness.contains(&event.i) {
            " class=\"witness\""
        } else {
            ""
        };
        let json = serde_json::to_string(event).unwrap_or_default();
        let _ = writeln!(
            out,
            "<tr id=\"ev-{i}\"{class}><td class=\"num\">{i}</td><td class=\"num\">{}</td><td class=\"json mono\">{}</td></tr>",
            ms(event.at_us),
            text(&json),
            i = event.i
        );
    }
    out.push_str("</table>\n</details>\n</section>\n");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shell_words_are_quoted_only_when_needed() {
        assert_eq!(shell_word("reports/runs/a/b/1"), "reports/runs/a/b/1");
        assert_eq!(shell_word("my runs/x"), "'my runs/x'");
        assert_eq!(shell_word("it's"), "'it'\\''s'");
    }

    #[test]
    fn the_replay_commands_name_the_folder_and_its_scenario_file() {
        let [replay, run] =
            replay_commands(Path::new("reports/runs/s/lua-release/7"), "lua-release", 7);
        assert_eq!(replay, "locklab replay reports/runs/s/lua-release/7");
        assert_eq!(
            run,
            "locklab run reports/runs/s/lua-release/7/scenario.toml --rung lua-release --seed 7"
        );
    }
}
