//! A suite's files in its report folder: the matrix (`<stem>.md`, `.svg`,
//! `.json`, [`stem`]) and the suite page, the partial matrix an
//! interrupted suite leaves beside them, and the folder of the run behind
//! each cell.

use crate::matrix;
use judge::judged::Judged;
use judge::matrix::{Cell, Grid, SuiteRun};
use model::interrupt::Cause;
use model::scenario::Scenario;
use model::scenario_text::scenario_toml;
use std::path::{Path, PathBuf};

/// The stem of the matrix files: `safety-matrix` or `safety-matrix-all`.
pub fn stem(grid: Grid) -> &'static str {
    match grid {
        Grid::Named => "safety-matrix",
        Grid::All => "safety-matrix-all",
    }
}

/// The markdown matrix's title.
pub(crate) fn title(grid: Grid) -> &'static str {
    match grid {
        Grid::Named => matrix::TITLE,
        Grid::All => matrix::TITLE_ALL,
    }
}

/// The complete matrix's markdown.
pub fn markdown(grid: Grid, cells: &[Cell]) -> String {
    matrix::markdown_titled(title(grid), cells)
}

/// The files of a partial matrix: [`PARTIAL_FILES`] for the named
/// grid, `safety-matrix-all.partial.{md,json}` for the full one.
fn partial_files(grid: Grid) -> [String; 2] {
    ["md", "json"].map(|ext| format!("{}.partial.{ext}", stem(grid)))
}

/// The files of a partial matrix, beside the complete ones: an
/// interrupted suite never overwrites a complete matrix.
pub const PARTIAL_FILES: [&str; 2] = ["safety-matrix.partial.md", "safety-matrix.partial.json"];

/// Writes `<stem>.{md,svg,json}` ([`stem`]) and the suite page
/// ([`crate::html::suite::file_name`]) into `out`, and removes the partial
/// matrix an earlier interrupted suite of the same grid may have left
/// there (it would be older than this one). Returns the partial files
/// removed.
pub fn write_matrix(out: &Path, grid: Grid, cells: &[Cell]) -> std::io::Result<Vec<PathBuf>> {
    std::fs::create_dir_all(out)?;
    let file = |ext: &str| out.join(format!("{}.{ext}", stem(grid)));
    harness::atomic::write_whole(&file("md"), markdown(grid, cells))?;
    harness::atomic::write_whole(&file("json"), matrix::json(cells))?;
    match matrix::svg(cells) {
        Ok(svg) => harness::atomic::write_whole(&file("svg"), &svg)?,
        Err(e) => eprintln!("warning: {}.svg not drawn: {e}", stem(grid)),
    }
    harness::atomic::write_whole(
        &out.join(crate::html::suite::file_name(grid)),
        crate::html::suite_page(grid, cells),
    )?;
    let mut removed = Vec::new();
    for name in partial_files(grid) {
        let stale = out.join(name);
        if stale.exists() {
            std::fs::remove_file(&stale)?;
            removed.push(stale);
        }
    }
    Ok(removed)
}

/// The markdown of a partial matrix: the finished cells' table under a
/// title and a notice that say it is partial and why, then the cells that
/// were not run.
pub fn partial_markdown(run: &SuiteRun, cause: Cause) -> String {
    let title = title(run.grid);
    let table = matrix::markdown_titled(title, &run.cells);
    let table = table
        .strip_prefix(&format!("# {title}\n"))
        .unwrap_or(&table);
    let mut out = format!(
        "# {title} (partial)\n\n**Partial: the suite was interrupted by {cause} after {} \
         of {} cells.** The cells not run are listed at the end (`—` in the table, or no \
         column at all); `{}.md`, if there is one, is from an earlier complete \
         suite and was left as it was.\n",
        run.cells.len(),
        run.planned.len(),
        stem(run.grid)
    );
    out.push_str(table);
    out.push_str("\nNot run:\n\n");
    for (scenario, rung) in run.not_run() {
        out.push_str(&format!("- {scenario} / `{rung}`\n"));
    }
    out
}

/// The JSON of a partial matrix: the cells of `safety-matrix.json` (so
/// [`matrix::from_json`] reads it), plus `partial`, `interrupted_by`,
/// `cells_planned` and `not_run`.
fn partial_json(run: &SuiteRun, cause: Cause) -> String {
    let not_run: Vec<serde_json::Value> = run
        .not_run()
        .into_iter()
        .map(|(scenario, rung)| serde_json::json!({ "variant": rung, "scenario": scenario }))
        .collect();
    let doc = serde_json::json!({
        "partial": true,
        "interrupted_by": cause.name(),
        "cells_planned": run.planned.len(),
        "cells": run.cells,
        "not_run": not_run,
    });
    let mut text = serde_json::to_string_pretty(&doc).unwrap_or_default();
    text.push('\n');
    text
}

/// Writes the partial matrix of an interrupted suite to
/// [`PARTIAL_FILES`] in `out`, leaving any complete matrix alone; returns
/// the markdown file's path.
pub fn write_partial_matrix(out: &Path, run: &SuiteRun, cause: Cause) -> std::io::Result<PathBuf> {
    std::fs::create_dir_all(out)?;
    let [md, json] = partial_files(run.grid).map(|name| out.join(name));
    harness::atomic::write_whole(&md, partial_markdown(run, cause))?;
    harness::atomic::write_whole(&json, partial_json(run, cause))?;
    Ok(md)
}

/// Writes the folder of the run behind a cell, under `out` as `locklab
/// run` would ([`crate::output::run_dir`]), with its page: the scenario
/// file in it is the scenario as run (for a rung the scenario does not
/// name, naming it too), so that `locklab replay` runs it again. Returns
/// the folder.
pub fn write_cell_run(
    out: &Path,
    scenario: &Scenario,
    judged: &Judged,
) -> std::io::Result<PathBuf> {
    let dir = crate::output::run_dir(out, judged);
    let header = format!(
        "Written by locklab suite: scenario {:?} as it ran rung {} with seed {}.\n\
         Replay: locklab replay {}",
        scenario.name,
        judged.rung,
        judged.seed,
        dir.display()
    );
    let text = scenario_toml(scenario, &header);
    crate::output::write_run(&dir, judged, &text)?;
    Ok(dir)
}
