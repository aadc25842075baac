//! The suite page, `report.html` (`report-all.html` for `suite --all`)
//! beside the matrix files: the safety matrix, each cell coloured by its
//! verdict and linked to the run page of the run behind it (the seed the
//! cell kept); the cells that differ from their expectation with what the
//! checkers found; the ladder; and the verdict rules.

use super::{page, run_href, text, verdict_badge};
use crate::matrix::axes;
use judge::matrix::{Cell, Grid};
use std::fmt::Write as _;

/// The verdict rules (`docs/ladder.md`, section 8), as the page states
/// them.
const VERDICT_RULES: &str = "<ol>\
<li><strong>violated</strong>: a safety checker that decides the verdict (mutual exclusion: two clients holding the same lock at one instant of true time, each in its own view; the guarded resource: lost updates, oversold stock, a stale or repeated fencing token accepted) found a violation;</li>\
<li>else <strong>deadlock</strong>: after the last fault healed, no waiting client acquired within the liveness bound, or a holder blocked on itself;</li>\
<li>else <strong>unknown</strong>: a deciding checker could not decide;</li>\
<li>else <strong>safe</strong>.</li>\
</ol>\
<p>For the <code>fenced</code> rung the resource decides safety; overlapping holds are reported as information. A cell runs every seed of its scenario and keeps the most severe verdict (violated, deadlock, unknown, safe) with the first seed that gave it: that seed's run is the one its link opens. A cell is as expected when its verdict is the scenario's <code>expect</code> for the rung; a rung the scenario does not name (<code>suite --all</code>) has no expectation and judges nothing.</p>\n";

/// The file the suite page of `grid` is written to.
pub fn file_name(grid: Grid) -> &'static str {
    match grid {
        Grid::Named => "report.html",
        Grid::All => "report-all.html",
    }
}

/// A cell's hover text: seed, expectation and damage.
fn cell_title(cell: &Cell) -> String {
    let expected = match cell.expected {
        None => "no expectation".to_string(),
        Some(e) => format!("expected {e}"),
    };
    let damage = serde_json::to_value(&cell.damage)
        .ok()
        .and_then(|v| {
            v.as_object().map(|fields| {
                fields
                    .iter()
                    .filter(|(_, v)| !v.is_null())
                    .map(|(k, v)| format!("{k} {v}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            })
        })
        .unwrap_or_default();
    format!(
        "{} / {}: {}, seed {} ({expected}); {damage}",
        cell.scenario, cell.rung, cell.verdict, cell.seed
    )
}

/// The matrix as a table: rungs down, scenarios across.
fn matrix_table(out: &mut String, cells: &[Cell]) {
    let (rows, cols) = axes(cells);
    out.push_str("<table class=\"matrix\" id=\"matrix\">\n<tr><th>rung</th>");
    for col in &cols {
        let _ = write!(out, "<th class=\"scenario\">{}</th>", text(col));
    }
    out.push_str("</tr>\n");
    for row in &rows {
        let _ = write!(out, "<tr><th><code>{}</code></th>", text(row));
        for col in &cols {
            let Some(cell) = cells
                .iter()
                .filter(|c| &c.rung == row && &c.scenario == col)
                .find(|c| c.differs())
                .or_else(|| cells.iter().find(|c| &c.rung == row && &c.scenario == col))
            else {
                out.push_str("<td class=\"none\">—</td>");
                continue;
            };
            let mut class = format!("v-{}", cell.verdict);
            let mut label = cell.verdict.to_string();
            if cell.expected.is_none() {
                class.push_str(" noexp");
            } else if cell.differs() {
                class.push_str(" differs");
                label.push_str(" ✗");
            }
            let _ = write!(
                out,
                "<td class=\"{class}\"><a href=\"{}\" title=\"{}\">{}</a></td>",
                run_href(&cell.scenario, &cell.rung, cell.seed),
                super::attr(&cell_title(cell)),
                text(&label)
            );
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</table>\n");
    let legend: String = model::verdict::Verdict::ALL
        .iter()
        .map(|v| verdict_badge(*v))
        .collect::<Vec<_>>()
        .join(" ");
    let _ = writeln!(
        out,
        "<p class=\"muted\">{legend} — a thick border and ✗: differs from the scenario's expectation; pale italics: no expectation. Each cell opens the run page of its run.</p>"
    );
}

/// The suite page of `cells`, run as `grid`.
pub fn suite_page(grid: Grid, cells: &[Cell]) -> String {
    let title = crate::suite::title(grid);
    let mut body = String::new();
    let _ = writeln!(body, "<header>\n<h1>{}</h1>", text(title));
    let differ: Vec<&Cell> = cells.iter().filter(|c| c.differs()).collect();
    let no_expectation = cells.iter().filter(|c| c.expected.is_none()).count();
    let judged = cells.len() - no_expectation;
    let mut summary = format!(
        "{} cells: {} with an expectation, {} of them as expected",
        cells.len(),
        judged,
        judged - differ.len()
    );
    if !differ.is_empty() {
        let _ = write!(summary, ", <strong>{} differing</strong>", differ.len());
    }
    if no_expectation > 0 {
        let _ = write!(summary, "; {no_expectation} without one (shown as found)");
    }
    let _ = writeln!(
        body,
        "<p class=\"lede\">Rows: rungs, in ladder order. Columns: scenarios. Each cell is the verdict of that rung in that scenario. {summary}.</p>"
    );
    body.push_str(
        "<nav><a href=\"#matrix\">Matrix</a><a href=\"#differing\">Differing cells</a>\
         <a href=\"#ladder\">Ladder</a><a href=\"#rules\">Verdict rules</a></nav>\n</header>\n",
    );
    body.push_str("<section>\n<h2>Matrix</h2>\n");
    matrix_table(&mut body, cells);
    body.push_str("</section>\n");

    body.push_str(
        "<section id=\"differing\">\n<h2>Cells that differ from their expectation</h2>\n",
    );
    if differ.is_empty() {
        body.push_str("<p>None: every cell with an expectation is as expected.</p>\n");
    }
    for cell in &differ {
        let _ = writeln!(
            body,
            "<h3><a href=\"{}\">{} / {}</a>: {} (expected {})</h3>\n<pre>{}</pre>",
            run_href(&cell.scenario, &cell.rung, cell.seed),
            text(&cell.scenario),
            text(&cell.rung),
            verdict_badge(cell.verdict),
            cell.expected.map(|e| e.to_string()).unwrap_or_default(),
            text(&cell.findings)
        );
    }
    body.push_str("</section>\n");

    body.push_str("<section id=\"ladder\">\n<h2>The ladder</h2>\n<table>\n<tr><th>#</th><th>id</th><th>fixes</th><th>flaw that remains</th><th>broken by</th></tr>\n");
    for rung in locks::LADDER {
        let _ = writeln!(
            body,
            "<tr><td class=\"num\">{}</td><td><code>{}</code></td><td>{}</td><td>{}</td><td>{}</td></tr>",
            rung.number,
            text(rung.id),
            text(rung.fixes),
            text(rung.flaw),
            text(rung.shown_by)
        );
    }
    body.push_str("</table>\n</section>\n");
    let _ = writeln!(
        body,
        "<section id=\"rules\">\n<h2>Verdict rules</h2>\n{VERDICT_RULES}</section>"
    );
    page(title, &body, "")
}

#[cfg(test)]
mod tests {
    use super::*;
    use judge::check::Damage;
    use model::verdict::Verdict;

    fn cell(rung: &str, scenario: &str, verdict: Verdict, expected: Option<Verdict>) -> Cell {
        Cell {
            rung: rung.into(),
            scenario: scenario.into(),
            verdict,
            expected,
            seed: 3,
            damage: Damage::default(),
            cut_short: None,
            findings: "clients 0 and 1 <both> held".into(),
            server: None,
            wall_ms: 0,
        }
    }

    #[test]
    fn each_cell_links_to_its_run_page_and_a_differing_one_is_marked() {
        let cells = vec![
            cell(
                "set-nx-px",
                "pause <x>",
                Verdict::Violated,
                Some(Verdict::Violated),
            ),
            cell(
                "watchdog",
                "pause <x>",
                Verdict::Violated,
                Some(Verdict::Safe),
            ),
            cell("fenced", "pause <x>", Verdict::Safe, None),
        ];
        let html = suite_page(Grid::All, &cells);
        assert!(html.contains("href=\"runs/pause%20%3Cx%3E/set-nx-px/3/report.html\""));
        assert!(html.contains("<td class=\"v-violated differs\">"));
        assert!(html.contains("<td class=\"v-safe noexp\">"));
        assert!(html.contains("<th class=\"scenario\">pause &lt;x&gt;</th>"));
        assert!(html.contains("clients 0 and 1 &lt;both&gt; held"));
        assert!(!html.contains("<x>"));
        assert!(html.contains("1 differing"));
    }
}
