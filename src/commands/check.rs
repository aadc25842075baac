//! `locklab check FILE...`: lock histories recorded anywhere (a Jepsen
//! test's, a service's own log, a Porcupine harness's, a locklab run's),
//! judged by the same checkers and the same real-time order as a
//! simulated run, against a model (`docs/check.md`).

use super::{Outcome, run_exit, worst};
use crate::json::{CheckResult, CheckedEntry, CheckedFile};
use harness::atomic::write_whole;
use interchange::checking::{ReadHistory, judge_read, read_history_text};
use interchange::format::{Format, read_text};
use interchange::judging::{Judgement, Model};
use model::verdict::Verdict;
use report::html::run::ShownCheck;
use sim::exit::ExitCode;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The arguments of `locklab check`.
#[derive(Debug, Clone, clap::Args)]
pub struct Args {
    /// The histories: files, or run folders written by `locklab run`.
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// Their format: `locklab` (a run's `history.jsonl` or folder),
    /// `jepsen-edn`, `jepsen-json` (also the log format of docs/check.md)
    /// or `porcupine`. Default: by the name (`.edn`, `.json`/`.jsonl`,
    /// `history.jsonl` or a folder).
    #[arg(long, value_parser = parse_format)]
    pub format: Option<Format>,
    /// The model: `mutex` (Knossos's), `owner-mutex`, `fenced-writes` or
    /// `lock-set`. Default: the one a locklab history declares, else
    /// `owner-mutex`.
    #[arg(long, value_parser = parse_model)]
    pub model: Option<Model>,
    /// Also judge liveness: after the last fault heals, some waiting
    /// client acquires within this many ms (owner-mutex, fenced-writes).
    #[arg(long, value_name = "MS")]
    pub liveness_bound_ms: Option<u64>,
    /// Where the pages go (`<out>/checks/<file>/report.html`).
    #[arg(long, default_value = "reports")]
    pub out: PathBuf,
    /// Print one JSON document on standard output (docs/json.md); the
    /// human text goes to standard error.
    #[arg(long)]
    pub json: bool,
}

fn parse_format(name: &str) -> Result<Format, String> {
    Format::from_name(name).ok_or_else(|| {
        format!(
            "expected one of {}",
            Format::ALL.map(Format::name).join(", ")
        )
    })
}

fn parse_model(name: &str) -> Result<Model, String> {
    Model::from_name(name)
        .ok_or_else(|| format!("expected one of {}", Model::ALL.map(Model::name).join(", ")))
}

/// `locklab check FILE...`: each file judged, its page written, one line
/// per file in elle-cli's shape (`FILE<TAB>true|false|unknown`) on
/// standard output; the exit code is `run`'s for the worst verdict, 3 when
/// a file could not be judged.
pub fn execute(args: Args) -> Outcome<CheckResult> {
    let mut result = CheckResult::default();
    let mut failed = false;
    for path in &args.files {
        match check_one(path, &args) {
            Ok(checked) => result.files.push(checked),
            Err(e) => {
                crate::error!("{e}");
                failed = true;
            }
        }
    }
    for checked in &result.files {
        summary_line(checked);
    }
    let verdicts: Vec<Verdict> = result.files.iter().map(|f| f.verdict).collect();
    let code = if result.files.is_empty() {
        ExitCode::BadInput
    } else {
        run_exit(worst(&verdicts), failed)
    };
    Outcome::new(code, Some(result))
}

/// elle-cli's line: the file and whether it is valid (`unknown` when
/// that could not be decided), on standard output where scripts written
/// for elle-cli read it; with `--json`, which owns standard output, on
/// standard error with the rest of the text.
fn summary_line(checked: &CheckedFile) {
    let line = format!("{}\t{}", checked.file, checked.valid);
    if crate::json::active() {
        eprintln!("{line}");
    } else {
        println!("{line}");
    }
}

/// `true`, `false` or `unknown`, as elle-cli says it.
fn elle_valid(verdict: Verdict) -> &'static str {
    match verdict {
        Verdict::Safe => "true",
        Verdict::Violated | Verdict::Deadlock => "false",
        Verdict::Unknown => "unknown",
    }
}

/// Reads the history at `path`: a run folder (its `history.jsonl`, judged
/// as its cell was), or a file in `format` (else the format its name says).
fn read_history_at(path: &Path, format: Option<Format>) -> Result<ReadHistory, String> {
    if path.is_dir() {
        return read_run_folder(path);
    }
    let file = path.display().to_string();
    let Some(format) = format.or_else(|| Format::of_path(path)) else {
        return Err(format!(
            "{file}: cannot tell its format from its name: name it with --format ({})",
            Format::ALL.map(Format::name).join(", ")
        ));
    };
    let text = read_text(path).map_err(|e| e.to_string())?;
    read_history_text(&file, &text, format, None).map_err(|e| e.to_string())
}

/// A run folder's history, with its cell's configuration from the
/// scenario it ran and the rung its `verdict.json` names.
fn read_run_folder(dir: &Path) -> Result<ReadHistory, String> {
    let cell = report::replay::recorded(dir)?;
    let scenario = super::replay::recorded_scenario(dir, &cell)?;
    let history_path = dir.join("history.jsonl");
    let text = read_text(&history_path).map_err(|e| e.to_string())?;
    let config = super::replay::recorded_config(dir, &scenario, &cell.rung)?;
    read_history_text(
        &history_path.display().to_string(),
        &text,
        Format::Locklab,
        Some(config),
    )
    .map_err(|e| e.to_string())
}

/// Reads, judges and writes the page of one history.
fn check_one(path: &Path, args: &Args) -> Result<CheckedFile, String> {
    let read = read_history_at(path, args.format)?;
    let liveness_bound = args.liveness_bound_ms.map(Duration::from_millis);
    let judgement = judge_read(&read, args.model, liveness_bound).map_err(|e| e.to_string())?;
    let dir = page_dir(&args.out, path);
    let page = write_page(&dir, &read.file, read.format, &judgement)
        .map_err(|e| format!("{}: {e}", dir.display()))?;
    let checked = checked_file(&read.file, read.format, &judgement, Some(page));
    tell(&checked, &judgement);
    Ok(checked)
}

/// Where the page of `path` goes: `<out>/checks/<its name>/`.
fn page_dir(out: &Path, path: &Path) -> PathBuf {
    let name: String = path
        .to_string_lossy()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "-_.".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect();
    out.join("checks").join(name.trim_matches('_'))
}

/// Writes the history as judged (`history.jsonl`) and its page
/// (`report.html`) into `dir`; returns the page's path.
fn write_page(
    dir: &Path,
    file: &str,
    format: Format,
    judgement: &Judgement,
) -> std::io::Result<String> {
    std::fs::create_dir_all(dir)?;
    write_whole(&dir.join("history.jsonl"), judgement.history().to_jsonl())?;
    let mut facts = vec![
        ("format".to_string(), format.name().to_string()),
        ("model".to_string(), judgement.model.name().to_string()),
        (
            "operations".to_string(),
            format!(
                "{} read, {} events judged",
                judgement.ops.len(),
                judgement.history().len()
            ),
        ),
        (
            "clocks".to_string(),
            if judgement.clock_bounded {
                "each client's own, within its stated bound: judged by the recorded times \
                 and with every operation widened by its bound"
                    .to_string()
            } else {
                "one clock (no bound stated)".to_string()
            },
        ),
    ];
    let left_out = &judgement.converted.left_out;
    if !left_out.is_empty() {
        let counts: Vec<String> = left_out
            .iter()
            .map(|(what, count)| format!("{count} × {what}"))
            .collect();
        facts.push(("not judged".to_string(), counts.join(", ")));
    }
    let shown: Vec<ShownCheck<'_>> = judgement
        .checks
        .iter()
        .map(|c| ShownCheck {
            name: &c.name,
            check: &c.check,
            decides: !c.informational,
        })
        .collect();
    let damage = serde_json::Value::Object(judgement.damage.clone());
    let page = report::html::check_page(&report::html::check::CheckPage {
        file,
        model: judgement.model.name(),
        verdict: judgement.verdict,
        facts: &facts,
        history: judgement.history(),
        checks: &shown,
        damage: &damage,
    });
    let page_path = dir.join(report::output::REPORT_FILE);
    write_whole(&page_path, &page)?;
    Ok(page_path.display().to_string())
}

/// What `--json` says of one file; witnesses by the history's own index.
fn checked_file(
    file: &str,
    format: Format,
    judgement: &Judgement,
    page: Option<String>,
) -> CheckedFile {
    CheckedFile {
        file: file.to_string(),
        format: format.name().to_string(),
        model: judgement.model.name().to_string(),
        verdict: judgement.verdict,
        valid: elle_valid(judgement.verdict).to_string(),
        checks: judgement
            .checks
            .iter()
            .map(|c| {
                (
                    c.name.clone(),
                    CheckedEntry {
                        verdict: c.check.name().to_string(),
                        witness: c
                            .check
                            .witness()
                            .iter()
                            .filter_map(|&i| judgement.source_index(i))
                            .collect(),
                        why: c.check.why().map(str::to_string),
                        informational: c.informational,
                    },
                )
            })
            .collect(),
        damage: serde_json::Value::Object(judgement.damage.clone()),
        operations: judgement.ops.len(),
        events_judged: judgement.history().len(),
        left_out: judgement.converted.left_out.clone(),
        clock_bounded: judgement.clock_bounded,
        cut_short: judgement.claims.cut_short.is_some(),
        page,
    }
}

/// The judgement for people, on standard error (standard output carries
/// elle-cli's lines, or the `--json` document): the verdict, each checker
/// with its witness operations as the history gave them, the damage and
/// the page.
fn tell(checked: &CheckedFile, judgement: &Judgement) {
    eprintln!(
        "{} ({} as {}): {}",
        checked.file,
        checked.format,
        checked.model,
        checked.verdict.as_str()
    );
    for c in &judgement.checks {
        let note = if c.informational {
            " (information)"
        } else {
            ""
        };
        match c.check.why() {
            Some(why) => eprintln!("  {}: {}{note}: {why}", c.name, c.check.name()),
            None => eprintln!("  {}: {}{note}", c.name, c.check.name()),
        }
        for &i in c.check.witness() {
            let Some(pos) = judgement.converted.origin.get(i) else {
                continue;
            };
            if let Some(op) = judgement.ops.get(*pos) {
                eprintln!(
                    "    index {} (line {}): process {} {} {} {}",
                    op.index,
                    op.line,
                    op.process,
                    op.kind.name(),
                    op.f,
                    op.value
                );
            }
        }
    }
    for (what, count) in &checked.left_out {
        eprintln!("  not judged: {count} × {what}");
    }
    eprintln!("  damage: {}", checked.damage);
    if let Some(page) = &checked.page {
        eprintln!("  page: {page}");
    }
}
