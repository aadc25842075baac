//! The safety matrix: every rung (rows, in ladder order) against every
//! scenario (columns, in the order first given), each cell the verdict of
//! that rung in that scenario, marked `✗` when it differs from what the
//! scenario expects. A cell whose scenario states no expectation for its
//! rung (`suite --all` runs rungs a scenario does not name) is shown as
//! found, in italics (pale in the SVG), and judges nothing. Rendered as
//! markdown ([`markdown`]), SVG ([`svg`], plotters) and JSON ([`json`]);
//! pure functions of the cells, so the same cells give the same bytes.
//! [`crate::suite`] writes the files.

use judge::matrix::{Cell, MatrixDoc};
use model::verdict::Verdict;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::FontTransform;
use plotters::style::text_anchor::{HPos, Pos, VPos};

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

/// A row's label: the rung, and the server its cells ran on when that is
/// one newer than Redis 7.0 shared by all of them (a cell on another
/// server names its own: [`cell_text`]).
fn row_label(cells: &[Cell], rung: &str) -> String {
    match row_server(cells, rung) {
        Some(server) => format!("{rung} ({server})"),
        None => rung.to_string(),
    }
}

/// The server every cell of `rung` ran on, when it is the same newer one.
fn row_server<'a>(cells: &'a [Cell], rung: &str) -> Option<&'a str> {
    let mut servers = cells
        .iter()
        .filter(|c| c.rung == rung)
        .map(|c| c.server.as_deref());
    let first = servers.next()??;
    servers.all(|s| s == Some(first)).then_some(first)
}

/// The cells of one (rung, scenario) pair, in the order given.
fn at<'a>(cells: &'a [Cell], rung: &str, scenario: &str) -> Vec<&'a Cell> {
    cells
        .iter()
        .filter(|c| c.rung == rung && c.scenario == scenario)
        .collect()
}

/// A cell's text: the verdict, with `✗ (expected X)` when it differs, in
/// italics when nothing is expected, and the server it ran on when that is
/// not its row's.
fn cell_text(cell: &Cell, row_server: Option<&str>) -> String {
    let verdict = verdict_text(cell);
    match cell.server.as_deref() {
        Some(server) if Some(server) != row_server => format!("{verdict} ({server})"),
        _ => verdict,
    }
}

/// A cell's verdict as [`cell_text`] shows it.
fn verdict_text(cell: &Cell) -> String {
    match cell.expected {
        None => format!("*{}*", cell.verdict),
        Some(expected) if expected != cell.verdict => {
            format!("{} ✗ (expected {expected})", cell.verdict)
        }
        Some(_) => cell.verdict.to_string(),
    }
}

fn md_escape(s: &str) -> String {
    s.replace('|', "\\|")
}

/// The title of `safety-matrix.md`.
pub const TITLE: &str = "Safety matrix";

/// The title of the full grid, `safety-matrix-all.md`.
pub const TITLE_ALL: &str = "Safety matrix, every rung in every scenario";

/// `safety-matrix.md`: a title, a table (rows: rungs; columns: scenarios;
/// `—` where a rung was not run in a scenario; several seeds of one pair
/// are joined with ` / `) and a one-line summary. Ends in a newline.
pub fn markdown(cells: &[Cell]) -> String {
    markdown_titled(TITLE, cells)
}

/// [`markdown`] under another title. When some cell has no expectation, a
/// sentence says what its italics mean and the summary counts it apart.
pub fn markdown_titled(title: &str, cells: &[Cell]) -> String {
    let (rows, cols) = axes(cells);
    let unexpected_free = cells.iter().filter(|c| c.expected.is_none()).count();
    let mut out = format!("# {title}\n\n");
    out.push_str(
        "Rows: rungs, in ladder order. Columns: scenarios. Each cell is the verdict of \
         that rung in that scenario (`safe`, `violated`, `deadlock`, `unknown`); \
         ✗ marks a verdict that differs from the scenario's expectation. A rung's nodes are \
         Redis 7.0 unless its row or cell names another server (the oldest the rung works on, \
         or the one its scenario names).",
    );
    if unexpected_free > 0 {
        out.push_str(
            " A verdict in *italics* is of a rung the scenario does not name: it states no \
             expectation for it, so the verdict is shown as found and judges nothing.",
        );
    }
    out.push_str("\n\n");
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
        let server = row_server(cells, row);
        match server {
            Some(server) => out.push_str(&format!("| `{}` ({server}) |", md_escape(row))),
            None => out.push_str(&format!("| `{}` |", md_escape(row))),
        }
        for col in &cols {
            let here = at(cells, row, col);
            let text = if here.is_empty() {
                "—".to_string()
            } else {
                here.iter()
                    .map(|c| cell_text(c, server))
                    .collect::<Vec<_>>()
                    .join(" / ")
            };
            out.push_str(&format!(" {} |", md_escape(&text)));
        }
        out.push('\n');
    }
    let differ = cells.iter().filter(|c| c.differs()).count();
    out.push('\n');
    let judged = cells.len() - unexpected_free;
    let counted = if unexpected_free == 0 {
        format!("{} cells", cells.len())
    } else {
        format!(
            "{} cells ({unexpected_free} without an expectation, in italics); of the {judged} \
             with one",
            cells.len()
        )
    };
    if differ == 0 {
        out.push_str(&format!("{counted}, every one as expected.\n"));
    } else {
        out.push_str(&format!(
            "{counted}, {differ} differing from expectation (✗).\n"
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

/// A colour halfway to white: the fill of a cell with no expectation.
fn pale(color: RGBColor) -> RGBColor {
    let half = |c: u8| c + (255 - c) / 2;
    RGBColor(half(color.0), half(color.1), half(color.2))
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

/// A cell's width in the SVG matrix.
const CELL_W: i32 = 96;
/// A cell's height in the SVG matrix.
const CELL_H: i32 = 28;
/// The width of a character of the SVG matrix's labels.
const CHAR_W: i32 = 7;

/// `safety-matrix.svg` (plotters' SVG backend): a coloured grid, rungs down
/// the side, scenarios (rotated) along the top, each cell coloured by its
/// verdict and named; a cell that differs from expectation gets a thick
/// black border and `✗`. A legend runs along the bottom.
pub fn svg(cells: &[Cell]) -> Result<String, String> {
    let (rows, cols) = axes(cells);
    let row_labels: Vec<String> = rows.iter().map(|r| row_label(cells, r)).collect();
    // Room for the longest label of an axis, in pixels.
    let margin = |labels: &[String]| {
        let longest = labels.iter().map(|l| l.chars().count() as i32).max();
        24 + CHAR_W * longest.unwrap_or(4)
    };
    let (left, top) = (margin(row_labels.as_slice()), margin(cols.as_slice()));
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
                row_labels[i].clone(),
                (left - 8, y + CELL_H / 2),
                right.clone(),
            ))
            .map_err(err)?;
            for (j, col) in cols.iter().enumerate() {
                let x = left + CELL_W * j as i32;
                let here = at(cells, row, col);
                let corners = [(x + 1, y + 1), (x + CELL_W - 1, y + CELL_H - 1)];
                let Some(first) = here.iter().find(|c| c.differs()).or(here.first()) else {
                    root.draw(&Rectangle::new(corners, RGBColor(245, 245, 245).filled()))
                        .map_err(err)?;
                    continue;
                };
                let fill = match first.expected {
                    Some(_) => verdict_color(first.verdict),
                    None => pale(verdict_color(first.verdict)),
                };
                root.draw(&Rectangle::new(corners, fill.filled()))
                    .map_err(err)?;
                let mut label = first.verdict.to_string();
                if first.differs() {
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

        draw_legend(&root, cells, height)?;
        root.present().map_err(err)?;
    }
    Ok(buf)
}

/// The matrix's legend along the bottom of a drawing `height` high: each
/// verdict's colour, the mark of a differing cell, and (when some cell has
/// no expectation) the pale fill.
fn draw_legend(
    root: &DrawingArea<SVGBackend<'_>, Shift>,
    cells: &[Cell],
    height: i32,
) -> Result<(), String> {
    let err = |e: DrawingAreaErrorKind<_>| e.to_string();
    let text = RGBColor(30, 30, 30);
    let legend_style = ("sans-serif", 12)
        .into_font()
        .color(&text)
        .pos(Pos::new(HPos::Left, VPos::Center));
    let y = height - 22;
    let mut x = 16;
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
        legend_style.clone(),
    ))
    .map_err(err)?;
    if cells.iter().any(|c| c.expected.is_none()) {
        x += 28 + CHAR_W * 23;
        root.draw(&Rectangle::new(
            [(x, y - 7), (x + 14, y + 7)],
            pale(verdict_color(Verdict::Safe)).filled(),
        ))
        .map_err(err)?;
        root.draw(&Text::new(
            "pale: no expectation (rung not named)".to_string(),
            (x + 20, y),
            legend_style,
        ))
        .map_err(err)?;
    }
    Ok(())
}
