//! The search page of `locklab explore`, `explore-<rung>.html` in the
//! report folder (`explore-<rung>-shard-I-of-N.html` for a shard): what
//! was searched, how many cases ran and what they gave, and the
//! counterexample found (as generated and as shrunk), linked to its run
//! page and its scenario file, with the command that replays it.
//!
//! Wall-clock figures (cases per second) are left out, so that the same
//! search gives the same page.

use super::{href, key_values, page, run_href, text, verdict_badge};
use crate::search::{Counterexample, Search};
use judge::judged::describe_checks;
use model::search::Limit;
use std::fmt::Write as _;

/// The file a search's page goes to, in the report folder.
pub fn file_name(search: &Search<'_>) -> String {
    let (index, count) = search.shard;
    let rung = href(&[search.rung]);
    if count == 1 {
        format!("explore-{rung}.html")
    } else {
        format!("explore-{rung}-shard-{index}-of-{count}.html")
    }
}

/// What a search page is made of.
#[derive(Debug, Clone, Copy)]
pub struct ExplorePage<'a> {
    /// The search: what was searched and what it found.
    pub search: &'a Search<'a>,
    /// The counterexample's scenario file, relative to the report folder
    /// (`found/<rung>-<seed>.toml`), when one was written.
    pub found_file: Option<&'a str>,
}

/// The search page.
pub fn explore_page(explore: &ExplorePage<'_>) -> String {
    let search = explore.search;
    let title = format!("Search for counterexamples: {}", search.rung);
    let mut body = String::new();
    let _ = writeln!(body, "<header>\n<h1>{}</h1>", text(&title));
    if let Some(cause) = search.interrupted {
        let _ = writeln!(
            body,
            "<p class=\"partial\"><strong>Partial:</strong> the search was interrupted by {}; the totals count the {} cases finished before the stop.</p>",
            text(&cause.to_string()),
            search.stats.cases
        );
    }
    body.push_str(
        "<nav><a href=\"#searched\">What was searched</a><a href=\"#totals\">Totals</a>\
         <a href=\"#found\">What was found</a></nav>\n</header>\n",
    );
    body.push_str(&searched_section(search));
    body.push_str(&totals_section(search));
    body.push_str("<section id=\"found\">\n<h2>What was found</h2>\n");
    match &search.first {
        None => {
            let _ = writeln!(
                body,
                "<p>No counterexample in {} cases.</p>",
                search.stats.cases
            );
        }
        Some(f) => body.push_str(&found(f, explore.found_file)),
    }
    body.push_str("</section>\n");
    page(&title, &body, "")
}

/// The "What was searched" section: the rung, the faults, how long, the
/// seeds and the shrinking.
fn searched_section(search: &Search<'_>) -> String {
    let (index, count) = search.shard;
    let limit = match search.limit {
        Limit::Cases(n) => format!("{n} cases"),
        Limit::Time(d) => format!("for {} s of wall time", d.as_secs_f64()),
    };
    let shrink = if search.shrink {
        format!(
            "the first counterexample, in at most {} runs",
            search.shrink_runs
        )
    } else {
        "no (--no-shrink)".to_string()
    };
    let searched = [
        ("rung".to_string(), search.rung.to_string()),
        ("faults drawn".to_string(), search.faults.clone()),
        ("how long".to_string(), limit),
        (
            "seeds".to_string(),
            format!(
                "from {} (shard {index}/{count}: case k has seed {} + k·{count} + {index})",
                search.seed, search.seed
            ),
        ),
        ("shrinking".to_string(), shrink),
    ];
    let mut out = String::from("<section id=\"searched\">\n<h2>What was searched</h2>\n");
    out.push_str(
        "<p class=\"lede\">Each case is generated from its seed: a deployment, clients, and one to four faults drawn from the kinds allowed, each at a time or at a fault point of a client's cycle; it runs on the simulator and is judged like any run.</p>\n",
    );
    out.push_str(&key_values(&searched));
    out.push_str("</section>\n");
    out
}

/// The "Totals" section: the cases run and what they gave.
fn totals_section(search: &Search<'_>) -> String {
    let stats = &search.stats;
    let mut totals = vec![
        ("cases run".to_string(), stats.cases.to_string()),
        ("violated".to_string(), stats.violations.to_string()),
        ("deadlocked".to_string(), stats.deadlocks.to_string()),
        ("unknown".to_string(), stats.unknown.to_string()),
        (
            "not run (harness errors)".to_string(),
            stats.errors.to_string(),
        ),
        (
            "simulated time".to_string(),
            format!("{:.1} s", stats.sim_s),
        ),
    ];
    if stats.seeds_exhausted {
        totals.push((
            "note".to_string(),
            "the seeds ran out (each must be below 2^53): the search stopped early".to_string(),
        ));
    }
    let mut out = String::from("<section id=\"totals\">\n<h2>Totals</h2>\n");
    out.push_str(&key_values(&totals));
    out.push_str("</section>\n");
    out
}

/// The counterexample: the case as generated and as shrunk (linked to its
/// run page and to `found_file`), the command that replays it, and what
/// the checkers found.
fn found(f: &Counterexample<'_>, found_file: Option<&str>) -> String {
    let judged = f.judged;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "<p>The first counterexample (the lowest case index; a violation before any deadlock), seed {}: {}. The search keeps this one case; the totals above count every failing case.</p>",
        f.seed,
        verdict_badge(f.verdict)
    );
    let names = |faults: &[String]| {
        if faults.is_empty() {
            "none".to_string()
        } else {
            faults.join(", ")
        }
    };
    out.push_str("<table id=\"found-cases\">\n<tr><th>case</th><th>faults</th><th>clients</th><th>pages</th></tr>\n");
    let _ = writeln!(
        out,
        "<tr><td>as generated</td><td>{} ({})</td><td class=\"num\">{}</td><td></td></tr>",
        f.generated.faults.len(),
        text(&names(&f.generated.faults)),
        f.generated.clients
    );
    let mut links = format!(
        "<a class=\"run-link\" href=\"{}\">run page</a>",
        run_href(&judged.scenario, &judged.rung, judged.seed)
    );
    if let Some(file) = found_file {
        let _ = write!(
            links,
            " · <a class=\"file-link\" href=\"{}\">scenario file</a>",
            super::attr(file)
        );
    }
    let _ = writeln!(
        out,
        "<tr><td>as shrunk ({} runs)</td><td>{} ({})</td><td class=\"num\">{}</td><td>{links}</td></tr>\n</table>",
        f.shrink_runs,
        f.shrunk.faults.len(),
        text(&names(&f.shrunk.faults)),
        f.shrunk.clients
    );
    if let Some(note) = &f.shrink_note {
        let _ = writeln!(
            out,
            "<p class=\"partial\"><strong>Partial:</strong> {}</p>",
            text(note)
        );
    }
    if let Some(replay) = &f.replay {
        let _ = writeln!(out, "<p>Replay:</p>\n<pre>{}</pre>", text(replay));
    }
    let _ = writeln!(
        out,
        "<h3>What the checkers found</h3>\n<pre>{}</pre>",
        text(&describe_checks(judged))
    );
    out
}

/// Writes what a search leaves for people into the report folder `out`:
/// the run folder and page of its counterexample (from the scenario file
/// written to `found`, so that the page shows and replays exactly that
/// file), then the search page. Returns the search page's path.
pub fn write_pages(
    out: &std::path::Path,
    search: &Search<'_>,
    found: Option<&std::path::Path>,
) -> std::io::Result<std::path::PathBuf> {
    let mut found_file = None;
    if let (Some(f), Some(path)) = (&search.first, found) {
        let scenario_text = std::fs::read_to_string(path)?;
        let dir = crate::output::run_dir(out, f.judged);
        crate::output::write_run(&dir, f.judged, &scenario_text)?;
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        found_file = Some(href(&["found", &name]));
    }
    let html = explore_page(&ExplorePage {
        search,
        found_file: found_file.as_deref(),
    });
    std::fs::create_dir_all(out)?;
    let page_path = out.join(file_name(search));
    harness::atomic::write_whole(&page_path, &html)?;
    Ok(page_path)
}
