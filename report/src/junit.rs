//! JUnit XML reports, for CI systems that show test results: `suite
//! --junit FILE` (a test case per cell, classname the scenario, name the
//! rung) and `explore --junit FILE` (a test case for the rung searched).
//! A cell whose verdict differs from its expectation, and a search that
//! found a violation or a deadlock, is a `<failure>` whose text says what
//! the checkers found. An interrupted suite or search says so in a
//! `partial` property, and the cells it did not run are `<skipped>`.
//!
//! The `time` attributes are wall seconds (JUnit's meaning), so these
//! files, unlike the matrix, differ from run to run in those figures.

use crate::search::Search;
use judge::judged::describe_checks;
use judge::matrix::{Cell, Grid, SuiteRun};
use model::interrupt::Cause;
use std::fmt::Write as _;
use std::path::Path;

/// Text made safe for an XML 1.0 attribute value: the five markup
/// characters become entities, tabs and line ends (which a parser would
/// otherwise fold to spaces) character references, and the control
/// characters XML 1.0 cannot carry at all U+FFFD.
pub fn escape(text: &str) -> String {
    escape_as(text, true)
}

/// Text made safe for XML 1.0 element content: as [`escape`], but tabs
/// and newlines stay as they are, so the report reads well as text.
pub fn escape_text(text: &str) -> String {
    escape_as(text, false)
}

fn escape_as(text: &str, in_attribute: bool) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\n' | '\t' if !in_attribute => out.push(c),
            '\n' => out.push_str("&#10;"),
            '\r' => out.push_str("&#13;"),
            '\t' => out.push_str("&#9;"),
            c if (c as u32) < 0x20 || c == '\u{FFFE}' || c == '\u{FFFF}' => out.push('\u{FFFD}'),
            c => out.push(c),
        }
    }
    out
}

/// Seconds with millisecond precision, as JUnit's `time` attribute.
fn seconds(ms: u64) -> String {
    format!("{}.{:03}", ms / 1000, ms % 1000)
}

/// One `<property>` line.
fn property(out: &mut String, name: &str, value: &str) {
    let _ = writeln!(
        out,
        "      <property name=\"{}\" value=\"{}\"/>",
        escape(name),
        escape(value)
    );
}

/// The `<properties>` of a report: the given ones, then `partial` and
/// `interrupted_by` when a signal cut the run short.
fn properties(pairs: &[(&str, String)], interrupted: Option<Cause>) -> String {
    let mut out = String::from("    <properties>\n");
    for (name, value) in pairs {
        property(&mut out, name, value);
    }
    if let Some(cause) = interrupted {
        property(&mut out, "partial", "true");
        property(&mut out, "interrupted_by", cause.name());
    }
    out.push_str("    </properties>\n");
    out
}

/// The whole document around one `<testsuite>`'s properties and cases.
fn document(name: &str, counts: Counts, body: &str) -> String {
    let Counts {
        tests,
        failures,
        skipped,
        time_ms,
    } = counts;
    let attributes = format!(
        "name=\"{}\" tests=\"{tests}\" failures=\"{failures}\" errors=\"0\" \
         skipped=\"{skipped}\" time=\"{}\"",
        escape(name),
        seconds(time_ms)
    );
    format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites {attributes}>\n  \
         <testsuite {attributes}>\n{body}  </testsuite>\n</testsuites>\n"
    )
}

/// The counts of a report's root elements.
#[derive(Debug, Clone, Copy, Default)]
struct Counts {
    tests: usize,
    failures: usize,
    skipped: usize,
    time_ms: u64,
}

/// One `<testcase>`; `inner` is its child elements (possibly none).
fn testcase(out: &mut String, classname: &str, name: &str, time_ms: u64, inner: &str) {
    let _ = write!(
        out,
        "    <testcase classname=\"{}\" name=\"{}\" time=\"{}\"",
        escape(classname),
        escape(name),
        seconds(time_ms)
    );
    if inner.is_empty() {
        out.push_str("/>\n");
    } else {
        let _ = write!(out, ">\n{inner}    </testcase>\n");
    }
}

/// A cell's child elements: a `<failure>` when it differs from its
/// expectation, a `<system-out>` saying it judges nothing when it has
/// none, nothing when it is as expected.
fn cell_inner(cell: &Cell) -> String {
    match cell.expected {
        Some(expected) if expected != cell.verdict => format!(
            "      <failure message=\"{}\" type=\"unexpected verdict\">{}</failure>\n",
            escape(&format!(
                "{} / {}: {}, expected {expected} (seed {})",
                cell.scenario, cell.rung, cell.verdict, cell.seed
            )),
            escape_text(&cell.findings)
        ),
        Some(_) => String::new(),
        None => format!(
            "      <system-out>{}</system-out>\n",
            escape_text(&format!(
                "{}: the scenario states no expectation for this rung, so it judges nothing",
                cell.verdict
            ))
        ),
    }
}

/// The JUnit report of a suite: a test case per planned cell, in matrix
/// order; when interrupted, the cells not run are skipped.
pub fn suite_xml(run: &SuiteRun) -> String {
    let mut body = properties(
        &[(
            "grid",
            match run.grid {
                Grid::Named => "named rungs",
                Grid::All => "every rung",
            }
            .to_string(),
        )],
        run.interrupted,
    );
    let mut counts = Counts::default();
    for (scenario, rung) in &run.planned {
        counts.tests += 1;
        match run
            .cells
            .iter()
            .find(|c| &c.scenario == scenario && &c.rung == rung)
        {
            Some(cell) => {
                counts.failures += usize::from(cell.differs());
                counts.time_ms += cell.wall_ms;
                testcase(&mut body, scenario, rung, cell.wall_ms, &cell_inner(cell));
            }
            None => {
                counts.skipped += 1;
                let why = match run.interrupted {
                    Some(cause) => format!("not run: the suite was interrupted by {cause}"),
                    None => "not run".to_string(),
                };
                let inner = format!("      <skipped message=\"{}\"/>\n", escape(&why));
                testcase(&mut body, scenario, rung, 0, &inner);
            }
        }
    }
    document("locklab suite", counts, &body)
}

/// The JUnit report of a search: one test case for the rung searched,
/// classname `explore --faults MODE`, failing when a violation or a
/// deadlock was found; the failure's text is what the checkers found in
/// the (shrunk) counterexample and the command that replays it. `path` is
/// where the counterexample was written.
pub fn explore_xml(search: &Search<'_>, path: Option<&Path>) -> String {
    let st = &search.stats;
    let mut body = properties(
        &[
            ("faults", search.faults.clone()),
            ("first_seed", search.seed.to_string()),
            ("shard", format!("{}/{}", search.shard.0, search.shard.1)),
            ("cases", st.cases.to_string()),
            ("violations", st.violations.to_string()),
            ("deadlocks", st.deadlocks.to_string()),
            ("unknown", st.unknown.to_string()),
            ("errors", st.errors.to_string()),
        ],
        search.interrupted,
    );
    let time_ms = (st.wall_s * 1000.0).round() as u64;
    let found = st.violations + st.deadlocks > 0 || search.first.is_some();
    let mut inner = String::new();
    if found {
        let mut message = format!(
            "{} violations, {} deadlocks in {} cases",
            st.violations, st.deadlocks, st.cases
        );
        let mut text = String::new();
        if let Some(f) = &search.first {
            let _ = write!(
                message,
                "; first counterexample: seed {}, {}",
                f.seed, f.judged.verdict
            );
            let _ = writeln!(
                text,
                "seed {}\n{} / {}: {} (faults: {})",
                f.seed,
                f.judged.scenario,
                f.judged.rung,
                f.judged.verdict,
                f.shrunk.faults.join(", ")
            );
            text.push_str(&describe_checks(f.judged));
            if let Some(note) = &f.shrink_note {
                let _ = writeln!(text, "PARTIAL: {note}");
            }
            if let (Some(p), Some(replay)) = (path, &f.replay) {
                let _ = writeln!(text, "written to {}", p.display());
                let _ = writeln!(text, "replay: {replay}");
            }
        }
        let kind = if st.violations > 0 {
            "violation"
        } else {
            "deadlock"
        };
        let _ = writeln!(
            inner,
            "      <failure message=\"{}\" type=\"{kind}\">{}</failure>",
            escape(&message),
            escape_text(&text)
        );
    }
    let classname = format!("explore --faults {}", search.faults);
    testcase(&mut body, &classname, search.rung, time_ms, &inner);
    let counts = Counts {
        tests: 1,
        failures: usize::from(found),
        skipped: 0,
        time_ms,
    };
    document("locklab explore", counts, &body)
}
