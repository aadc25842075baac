//! The safety matrix: every rung (rows, in ladder order) against every
//! scenario (columns, in the order first given), each cell the verdict of
//! that rung in that scenario, marked `✗` when it differs from what the
//! scenario expects. Rendered as markdown ([`markdown`]), SVG ([`svg`],
//! plotters) and JSON ([`json`]); pure functions of the cells, so the same
//! cells give the same bytes. The caller writes the files.

use crate::cell::Judged;
use crate::check::Damage;
use crate::verdict::{CutShortEntry, Verdict};
use plotters::prelude::*;
use plotters::style::FontTransform;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use serde::{Deserialize, Serialize};

/// One cell: one rung in one scenario under one seed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Cell {
    /// The rung's id (`variant` in schema 1 of the JSON).
    #[serde(rename = "variant")]
    pub rung: String,
    /// The scenario's name.
    pub scenario: String,
    /// What the checkers found.
    pub verdict: Verdict,
    /// What the scenario expects.
    pub expected: Verdict,
    /// The seed it ran with.
    pub seed: u64,
    /// The damage figures.
    pub damage: Damage,
    /// Why that seed's run ended before its scenario did, when it did (its
    /// verdict is then `unknown`); absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cut_short: Option<CutShortEntry>,
}

impl Cell {
    /// The cell of one judged run, which the scenario expected to be
    /// `expected`.
    pub fn of(judged: &Judged, expected: Verdict) -> Cell {
        Cell {
            rung: judged.rung.clone(),
            scenario: judged.scenario.clone(),
            verdict: judged.verdict,
            expected,
            seed: judged.seed,
            damage: judged.results.damage.clone(),
            cut_short: judged.results.cut_short.clone().map(CutShortEntry::new),
        }
    }

    /// Whether the verdict is the expected one.
    pub fn as_expected(&self) -> bool {
        self.verdict == self.expected
    }
}

/// The whole of `safety-matrix.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MatrixDoc {
    /// Every cell, in the order given.
    pub cells: Vec<Cell>,
}

/// Whether every cell's verdict is the expected one (the suite's exit 0).
pub fn all_as_expected(cells: &[Cell]) -> bool {
    cells.iter().all(Cell::as_expected)
}

/// Rows: the ladder's rungs that occur, in ladder order, then any other
/// rung in the order first given. Columns: scenarios in the order first
/// given.
pub fn axes(cells: &[Cell]) -> (Vec<String>, Vec<String>) {
    let mut rows: Vec<String> = locks::ids()
        .into_iter()
        .filter(|id| cells.iter().any(|c| c.rung == *id))
        .map(str::to_string)
        .collect();
    let mut cols: Vec<String> = Vec::new();
    for c in cells {
        if !rows.contains(&c.rung) {
            rows.push(c.rung.clone());
        }
        if !cols.contains(&c.scenario) {
            cols.push(c.scenario.clone());
        }
    }
    (rows, cols)
}

/// The cells of one (rung, scenario) pair, in the order given.
fn at<'a>(cells: &'a [Cell], rung: &str, scenario: &str) -> Vec<&'a Cell> {
    cells
        .iter()
        .filter(|c| c.rung == rung && c.scenario == scenario)
        .collect()
}

/// A cell's text: the verdict, with `✗ (expected X)` when it differs.
fn cell_text(cell: &Cell) -> String {
    if cell.as_expected() {
        cell.verdict.to_string()
    } else {
        format!("{} ✗ (expected {})", cell.verdict, cell.expected)
    }
}

fn md_escape(s: &str) -> String {
    s.replace('|', "\\|")
}

/// `safety-matrix.md`: a title, a table (rows: rungs; columns: scenarios;
/// `—` where a rung was not run in a scenario; several seeds of one pair
/// are joined with ` / `) and a one-line summary. Ends in a newline.
pub fn markdown(cells: &[Cell]) -> String {
    let (rows, cols) = axes(cells);
    let mut out = String::from("# Safety matrix\n\n");
    out.push_str(
        "Rows: rungs, in ladder order. Columns: scenarios. Each cell is the verdict of \
         that rung in that scenario (`safe`, `violated`, `deadlock`, `unknown`); \
         ✗ marks a verdict that differs from the scenario's expectation.\n\n",
    );
    out.push_str("| rung |");
    for col in &cols {
        out.push_str(&format!(" {} |", md_escape(col)));
    }
    out.push_str("\n|---|");
    for _ in &cols {
        out.push_str("---|");
    }
    out.push('\n');
    for row in &rows {
        out.push_str(&format!("| `{}` |", md_escape(row)));
        for col in &cols {
            let here = at(cells, row, col);
            let text = if here.is_empty() {
                "—".to_string()
            } else {
                here.iter()
                    .map(|c| cell_text(c))
                    .collect::<Vec<_>>()
                    .join(" / ")
            };
            out.push_str(&format!(" {} |", md_escape(&text)));
        }
        out.push('\n');
    }
    let differ = cells.iter().filter(|c| !c.as_expected()).count();
    out.push('\n');
    if differ == 0 {
        out.push_str(&format!("{} cells, every one as expected.\n", cells.len()));
    } else {
        out.push_str(&format!(
            "{} cells, {differ} differing from expectation (✗).\n",
            cells.len()
        ));
    }
    let cut: Vec<&Cell> = cells.iter().filter(|c| c.cut_short.is_some()).collect();
    if !cut.is_empty() {
        out.push_str("\nRuns cut short (their verdict is `unknown`):\n\n");
        for c in cut {
            let why = c.cut_short.as_ref().map_or("", |e| e.why.as_str());
            out.push_str(&format!(
                "- `{}` in {}, seed {}: {}\n",
                md_escape(&c.rung),
                md_escape(&c.scenario),
                c.seed,
                md_escape(why)
            ));
        }
    }
    out
}

/// `safety-matrix.json`: `{"cells": [{"variant", "scenario", "verdict",
/// "expected", "seed", "damage": {...}}, ...]}`, pretty-printed, ending in
/// a newline.
pub fn json(cells: &[Cell]) -> String {
    let doc = MatrixDoc {
        cells: cells.to_vec(),
    };
    let mut text = serde_json::to_string_pretty(&doc).unwrap_or_default();
    text.push('\n');
    text
}

/// Reads `safety-matrix.json` back.
pub fn from_json(text: &str) -> Result<Vec<Cell>, String> {
    serde_json::from_str::<MatrixDoc>(text)
        .map(|doc| doc.cells)
        .map_err(|e| format!("safety matrix: {e}"))
}

/// A verdict's fill colour in the SVG matrix.
pub fn verdict_color(verdict: Verdict) -> RGBColor {
    match verdict {
        Verdict::Safe => RGBColor(165, 214, 167),
        Verdict::Violated => RGBColor(239, 154, 154),
        Verdict::Deadlock => RGBColor(255, 204, 128),
        Verdict::Unknown => RGBColor(207, 207, 207),
    }
}

/// `safety-matrix.svg` (plotters' SVG backend): a coloured grid, rungs down
/// the side, scenarios (rotated) along the top, each cell coloured by its
/// verdict and named; a cell that differs from expectation gets a thick
/// black border and `✗`. A legend runs along the bottom.
pub fn svg(cells: &[Cell]) -> Result<String, String> {
    let (rows, cols) = axes(cells);
    const CELL_W: i32 = 96;
    const CELL_H: i32 = 28;
    const CHAR_W: i32 = 7;
    let left = 24
        + CHAR_W
            * rows
                .iter()
                .map(|r| r.chars().count() as i32)
                .max()
                .unwrap_or(4);
    let top = 24
        + CHAR_W
            * cols
                .iter()
                .map(|c| c.chars().count() as i32)
                .max()
                .unwrap_or(4);
    let width = (left + CELL_W * cols.len() as i32 + 20).max(520);
    let height = top + CELL_H * rows.len() as i32 + 56;

    let mut buf = String::new();
    {
        let root =
            SVGBackend::with_string(&mut buf, (width as u32, height as u32)).into_drawing_area();
        let err = |e: DrawingAreaErrorKind<_>| e.to_string();
        root.fill(&WHITE).map_err(err)?;
        let text = RGBColor(30, 30, 30);
        let font = |size: i32| ("sans-serif", size).into_font().color(&text);
        let centered = font(12).pos(Pos::new(HPos::Center, VPos::Center));
        let right = font(13).pos(Pos::new(HPos::Right, VPos::Center));
        let header = font(13)
            .transform(FontTransform::Rotate270)
            .pos(Pos::new(HPos::Left, VPos::Center));

        for (j, col) in cols.iter().enumerate() {
            let x = left + CELL_W * j as i32 + CELL_W / 2;
            root.draw(&Text::new(col.clone(), (x, top - 8), header.clone()))
                .map_err(err)?;
        }
        for (i, row) in rows.iter().enumerate() {
            let y = top + CELL_H * i as i32;
            root.draw(&Text::new(
                row.clone(),
                (left - 8, y + CELL_H / 2),
                right.clone(),
            ))
            .map_err(err)?;
            for (j, col) in cols.iter().enumerate() {
                let x = left + CELL_W * j as i32;
                let here = at(cells, row, col);
                let corners = [(x + 1, y + 1), (x + CELL_W - 1, y + CELL_H - 1)];
                let Some(first) = here.iter().find(|c| !c.as_expected()).or(here.first()) else {
                    root.draw(&Rectangle::new(corners, RGBColor(245, 245, 245).filled()))
                        .map_err(err)?;
                    continue;
                };
                root.draw(&Rectangle::new(
                    corners,
                    verdict_color(first.verdict).filled(),
                ))
                .map_err(err)?;
                let mut label = first.verdict.to_string();
                if !first.as_expected() {
                    root.draw(&Rectangle::new(
                        [(x + 2, y + 2), (x + CELL_W - 2, y + CELL_H - 2)],
                        BLACK.stroke_width(3),
                    ))
                    .map_err(err)?;
                    label.push_str(" ✗");
                }
                root.draw(&Text::new(
                    label,
                    (x + CELL_W / 2, y + CELL_H / 2),
                    centered.clone(),
                ))
                .map_err(err)?;
            }
        }

        // Legend.
        let y = height - 22;
        let mut x = 16;
        let legend_style = font(12).pos(Pos::new(HPos::Left, VPos::Center));
        for v in Verdict::ALL {
            root.draw(&Rectangle::new(
                [(x, y - 7), (x + 14, y + 7)],
                verdict_color(v).filled(),
            ))
            .map_err(err)?;
            root.draw(&Text::new(v.to_string(), (x + 20, y), legend_style.clone()))
                .map_err(err)?;
            x += 28 + CHAR_W * v.as_str().len() as i32;
        }
        root.draw(&Rectangle::new(
            [(x, y - 7), (x + 14, y + 7)],
            BLACK.stroke_width(3),
        ))
        .map_err(err)?;
        root.draw(&Text::new(
            "✗ differs from expected".to_string(),
            (x + 20, y),
            legend_style,
        ))
        .map_err(err)?;
        root.present().map_err(err)?;
    }
    Ok(buf)
}
