//! Timelines of a run: who held the lock when, each client in its own view,
//! with the faults marked. [`ascii`] for the terminal, [`svg`] (plotters)
//! for `timeline.svg`. Both are pure functions of the history: the same
//! history gives the same bytes.
//!
//! ```text
//! client 0  ████████████████········································
//!   faults          PPPPPPPPPPPP
//! client 1  ················XXXX████████████························
//! ```

use judge::check::faults::{FaultSpan, fault_spans};
use judge::check::holds::{Hold, holds};
use judge::check::mutual_exclusion::{Overlap, overlaps};
use model::fault::FaultKind;
use model::history::FaultTarget;
use model::history::{EventKind, History};
use model::host::Host;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

/// The usual width of the ASCII timeline, in columns of time.
pub const DEFAULT_WIDTH: usize = 80;

/// Everything a timeline shows, gathered from a history.
#[derive(Debug, Clone, PartialEq)]
pub struct Timeline {
    /// End of the history, µs.
    pub end_us: u64,
    /// Every client seen, ascending.
    pub clients: Vec<usize>,
    /// Every hold.
    pub holds: Vec<Hold>,
    /// Every pair of overlapping holds.
    pub overlaps: Vec<Overlap>,
    /// Every fault, in the order it began.
    pub faults: Vec<FaultSpan>,
}

impl Timeline {
    /// Gathers the timeline of `history`. A fault that starts and never
    /// ends lasts until the end of the history.
    pub fn of(history: &History) -> Timeline {
        let faults = fault_spans(history);
        let mut clients = std::collections::BTreeSet::new();
        for event in history.events() {
            if let EventKind::Invoke { client, .. } | EventKind::Complete { client, .. } =
                &event.kind
            {
                clients.insert(*client);
            }
        }
        clients.extend(faults.iter().filter_map(|f| f.target.client()));
        Timeline {
            end_us: history.end_us(),
            clients: clients.into_iter().collect(),
            holds: holds(history),
            overlaps: overlaps(history),
            faults,
        }
    }

    /// Where a fault's span ends on the timeline, µs: its end, its own time
    /// for an instant, the history's end when it never ended.
    pub fn fault_end_us(&self, f: &FaultSpan) -> u64 {
        match (f.instant, f.end) {
            (true, _) => f.start_us,
            (false, Some((_, us))) => us,
            (false, None) => self.end_us,
        }
    }

    /// The rows below the clients: fault targets that are not clients, in
    /// the order their first fault began.
    fn other_targets(&self) -> Vec<&FaultTarget> {
        let mut seen: Vec<&FaultTarget> = Vec::new();
        for f in &self.faults {
            if f.target.client().is_none() && !seen.contains(&&f.target) {
                seen.push(&f.target);
            }
        }
        seen
    }
}

/// The letter that marks a fault in the ASCII timeline: `P` pause, `C`
/// crash, `R` restart, `J` clock jump, `D` clock drift, `F` failover, `|`
/// partition, `d` message delay, `s` slow link ([`FaultKind::mark`]).
pub fn fault_mark(fault: FaultKind) -> char {
    fault.mark()
}

/// Column arithmetic of the ASCII timeline.
struct Columns {
    width: usize,
    span_us: u64,
}

impl Columns {
    fn col(&self, t: u64) -> usize {
        let c = (u128::from(t) * self.width as u128 / u128::from(self.span_us)) as usize;
        c.min(self.width - 1)
    }

    /// Columns touched by [from, to); a zero-length span touches its column.
    fn range(&self, from: u64, to: u64) -> std::ops::RangeInclusive<usize> {
        let last = if to > from { to - 1 } else { from };
        self.col(from)..=self.col(last)
    }
}

/// µs as a short ms label: `1234`, `12.5`.
fn ms_label(us: u64) -> String {
    let s = format!("{}.{:03}", us / 1000, us % 1000);
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// The smallest of 1, 2 or 5 × 10^k that is at least `raw` (and at least 1).
fn nice_step(raw: u64) -> u64 {
    let mut base = 1u64;
    loop {
        for m in [1, 2, 5] {
            if base.saturating_mul(m) >= raw {
                return base.saturating_mul(m);
            }
        }
        base = base.saturating_mul(10);
    }
}

/// The ASCII timeline of `history`, `width` columns of time (at least 10):
/// one row per client (`█` holding, `·` not, `X` while another client holds
/// the same lock too), a `faults` row under each client a fault hit, one
/// row per other fault target (nodes, links), a time axis in ms and a
/// legend. Ends in a newline.
pub fn ascii(history: &History, width: usize) -> String {
    let tl = Timeline::of(history);
    let width = width.max(10);
    let cols = Columns {
        width,
        span_us: tl.end_us.max(1),
    };
    let mut rows: Vec<(String, Vec<char>)> = Vec::new();
    let mut used: Vec<(char, String)> = Vec::new();
    let fault_row = |target: &FaultTarget, used: &mut Vec<(char, String)>| -> Option<Vec<char>> {
        let mut row = vec![' '; width];
        let mut any = false;
        for f in tl.faults.iter().filter(|f| f.target == *target) {
            let mark = fault_mark(f.fault);
            if !used.iter().any(|(c, _)| *c == mark) {
                used.push((mark, f.fault.to_string()));
            }
            for c in cols.range(f.start_us, tl.fault_end_us(f)) {
                row[c] = mark;
            }
            any = true;
        }
        any.then_some(row)
    };
    for &client in &tl.clients {
        let mut row = vec!['·'; width];
        for h in tl.holds.iter().filter(|h| h.client == client) {
            for c in cols.range(h.start_us, h.end_us) {
                row[c] = '█';
            }
        }
        for o in &tl.overlaps {
            if o.first.client == client || o.second.client == client {
                let (from, to) = o.span_us();
                for c in cols.range(from, to) {
                    row[c] = 'X';
                }
            }
        }
        rows.push((format!("client {client}"), row));
        if let Some(row) = fault_row(&FaultTarget::Host(Host::Client(client)), &mut used) {
            rows.push(("  faults".to_string(), row));
        }
    }
    for target in tl.other_targets() {
        if let Some(row) = fault_row(target, &mut used) {
            rows.push((target.to_string(), row));
        }
    }

    let label_w = rows
        .iter()
        .map(|(l, _)| l.chars().count())
        .max()
        .unwrap_or(0)
        .max(6)
        + 2;
    let mut out = String::new();
    out.push_str(&format!(
        "timeline: 0 to {} ms, {} ms per column\n",
        ms_label(tl.end_us),
        ms_label(tl.end_us.max(1).div_ceil(width as u64))
    ));
    for (label, row) in &rows {
        let line: String = row.iter().collect();
        out.push_str(&format!("{label:<label_w$}{}\n", line.trim_end()));
    }
    // Axis: ticks at round times (1, 2 or 5 × 10^k µs apart, 8 to 20
    // columns apart), labelled in ms where there is room.
    let step = nice_step((u128::from(cols.span_us) * 8).div_ceil(width as u128) as u64);
    let mut ticks: Vec<char> = vec!['-'; width];
    let mut labels = String::new();
    let mut t = 0;
    while t <= tl.end_us {
        let c = cols.col(t);
        ticks[c] = '+';
        if labels.chars().count() <= c {
            while labels.chars().count() < c {
                labels.push(' ');
            }
            labels.push_str(&ms_label(t));
            labels.push(' ');
        }
        t += step;
    }
    let ticks: String = ticks.into_iter().collect();
    out.push_str(&format!("{:<label_w$}{ticks}\n", ""));
    out.push_str(&format!("{:<label_w$}{}ms\n", "", labels));
    let mut legend = String::from("legend: █ holding  · not holding  X two clients hold at once");
    for (mark, fault) in &used {
        legend.push_str(&format!("  {mark} {fault}"));
    }
    out.push_str(&legend);
    out.push('\n');
    out
}

const HOLD_COLOR: RGBColor = RGBColor(70, 130, 180);
const OVERLAP_COLOR: RGBColor = RGBColor(220, 40, 40);
const TEXT_COLOR: RGBColor = RGBColor(30, 30, 30);

/// Fill colour of a fault's span in the SVG timeline.
fn fault_color(fault: FaultKind) -> RGBColor {
    match fault_mark(fault) {
        'P' => RGBColor(245, 166, 35),
        'C' => RGBColor(60, 60, 60),
        'R' => RGBColor(120, 120, 120),
        'J' | 'D' => RGBColor(142, 68, 173),
        'F' => RGBColor(39, 174, 96),
        '|' => RGBColor(160, 160, 160),
        _ => RGBColor(200, 170, 80),
    }
}

/// A row of the SVG timeline: a client's holds, or the faults on one
/// target.
enum Row<'a> {
    Client(usize),
    Faults(&'a FaultTarget),
}

/// The SVG timeline's rows top to bottom, each with its label: every
/// client (followed by the faults on it, if any), then every other fault
/// target. `client_targets` are the clients as fault targets, in order.
fn svg_rows<'a>(tl: &'a Timeline, client_targets: &'a [FaultTarget]) -> Vec<(String, Row<'a>)> {
    let mut rows: Vec<(String, Row)> = Vec::new();
    for (&client, target) in tl.clients.iter().zip(client_targets) {
        rows.push((format!("client {client}"), Row::Client(client)));
        if tl.faults.iter().any(|f| &f.target == target) {
            rows.push((format!("faults on client {client}"), Row::Faults(target)));
        }
    }
    for target in tl.other_targets() {
        rows.push((target.to_string(), Row::Faults(target)));
    }
    rows
}

/// The y range of the part `lo..hi` of row `r` (from the top) of `n`: row
/// r spans y in [n-1-r, n-r].
fn band(n: usize, r: usize, lo: f64, hi: f64) -> (f64, f64) {
    let base = (n - 1 - r) as f64;
    (base + lo, base + hi)
}

/// µs as the chart's ms.
fn chart_ms(us: u64) -> f64 {
    us as f64 / 1000.0
}

/// The bars of the SVG timeline's rows, and the marks that name faults.
type RowBars<'a> = (
    Vec<Rectangle<(f64, f64)>>,
    Vec<Text<'a, (f64, f64), String>>,
);

/// The bars of the SVG timeline's rows (holds, overlaps, faults) and the
/// marks naming each fault; no bar is narrower than `min_w` ms.
fn row_bars<'a>(tl: &Timeline, rows: &[(String, Row<'_>)], min_w: f64) -> RowBars<'a> {
    let n = rows.len().max(1);
    let ms = chart_ms;
    let mut bars: Vec<Rectangle<(f64, f64)>> = Vec::new();
    let mut marks: Vec<Text<'_, (f64, f64), String>> = Vec::new();
    let mark_style = ("sans-serif", 12)
        .into_font()
        .color(&TEXT_COLOR)
        .pos(Pos::new(HPos::Left, VPos::Center));
    for (r, (_, row)) in rows.iter().enumerate() {
        match row {
            Row::Client(client) => {
                let (y0, y1) = band(n, r, 0.2, 0.8);
                for hold in tl.holds.iter().filter(|h| h.client == *client) {
                    let corners = [
                        (ms(hold.start_us), y0),
                        (ms(hold.end_us).max(ms(hold.start_us) + min_w), y1),
                    ];
                    bars.push(Rectangle::new(corners, HOLD_COLOR.filled()));
                    // A thin white edge keeps back-to-back holds apart.
                    bars.push(Rectangle::new(corners, WHITE.stroke_width(1)));
                }
                for o in &tl.overlaps {
                    if o.first.client == *client || o.second.client == *client {
                        let (from, to) = o.span_us();
                        let x1 = ms(to).max(ms(from) + min_w);
                        bars.push(Rectangle::new(
                            [(ms(from), y0), (x1, y1)],
                            OVERLAP_COLOR.filled(),
                        ));
                    }
                }
            }
            Row::Faults(target) => {
                let (y0, y1) = band(n, r, 0.3, 0.7);
                for f in tl.faults.iter().filter(|f| f.target == **target) {
                    let from = ms(f.start_us);
                    let to = ms(tl.fault_end_us(f)).max(from + min_w);
                    bars.push(Rectangle::new(
                        [(from, y0), (to, y1)],
                        fault_color(f.fault).filled(),
                    ));
                    let (_, ymid) = band(n, r, 0.0, 0.5);
                    marks.push(Text::new(
                        format!("{} {}", fault_mark(f.fault), f.fault),
                        (to + min_w, ymid),
                        mark_style.clone(),
                    ));
                }
            }
        }
    }
    (bars, marks)
}

/// The legend along the bottom of the SVG timeline: holds, overlaps, then
/// each fault kind shown.
fn draw_legend(lower: &DrawingArea<SVGBackend<'_>, Shift>, tl: &Timeline) -> Result<(), String> {
    let err = |e: DrawingAreaErrorKind<_>| e.to_string();
    let mut legend: Vec<(String, RGBColor)> = vec![
        ("holding (own view)".to_string(), HOLD_COLOR),
        ("two clients hold at once".to_string(), OVERLAP_COLOR),
    ];
    for f in &tl.faults {
        let name = format!("{} {}", fault_mark(f.fault), f.fault);
        if !legend.iter().any(|(n, _)| *n == name) {
            legend.push((name, fault_color(f.fault)));
        }
    }
    let legend_style = ("sans-serif", 12)
        .into_font()
        .color(&TEXT_COLOR)
        .pos(Pos::new(HPos::Left, VPos::Center));
    let y = 12;
    let mut x = 20;
    for (name, color) in legend {
        lower
            .draw(&Rectangle::new(
                [(x, y - 6), (x + 14, y + 6)],
                color.filled(),
            ))
            .map_err(err)?;
        let step = 44 + 7 * name.chars().count() as i32;
        lower
            .draw(&Text::new(name, (x + 20, y), legend_style.clone()))
            .map_err(err)?;
        x += step;
    }
    Ok(())
}

/// The SVG timeline of `history` (plotters' SVG backend): the same rows as
/// [`ascii`], time in ms on the x axis, holds as blue bars, overlaps in red,
/// faults as coloured bars marked with their letter, and a legend.
pub fn svg(history: &History, title: &str) -> Result<String, String> {
    let tl = Timeline::of(history);
    let client_targets: Vec<FaultTarget> = tl
        .clients
        .iter()
        .map(|&c| FaultTarget::Host(Host::Client(c)))
        .collect();
    let rows = svg_rows(&tl, &client_targets);
    let n = rows.len().max(1);
    let end_ms = (tl.end_us.max(1) as f64) / 1000.0;
    let (w, h) = (1000u32, 140 + 34 * n as u32);
    let label_w = 24 + 7 * rows.iter().map(|(l, _)| l.len() as u32).max().unwrap_or(8);

    let mut buf = String::new();
    {
        let root = SVGBackend::with_string(&mut buf, (w, h)).into_drawing_area();
        let err = |e: DrawingAreaErrorKind<_>| e.to_string();
        root.fill(&WHITE).map_err(err)?;
        let (upper, lower) = root.split_vertically(h - 30);
        let mut chart = ChartBuilder::on(&upper)
            .caption(title, ("sans-serif", 18).into_font().color(&TEXT_COLOR))
            .margin(12)
            .margin_right(30)
            .x_label_area_size(40)
            .y_label_area_size(label_w)
            .build_cartesian_2d(0f64..end_ms, 0f64..n as f64)
            .map_err(|e| e.to_string())?;
        chart
            .configure_mesh()
            .disable_y_mesh()
            .disable_y_axis()
            .x_desc("true time (ms)")
            .x_label_formatter(&|v: &f64| format!("{}", (v * 1000.0).round() / 1000.0))
            .label_style(("sans-serif", 13).into_font().color(&TEXT_COLOR))
            .draw()
            .map_err(|e| e.to_string())?;

        let (bars, marks) = row_bars(&tl, &rows, end_ms / 400.0);
        chart.draw_series(bars).map_err(|e| e.to_string())?;
        chart.draw_series(marks).map_err(|e| e.to_string())?;

        // Row labels, left of the plot.
        let label_style = ("sans-serif", 13)
            .into_font()
            .color(&TEXT_COLOR)
            .pos(Pos::new(HPos::Right, VPos::Center));
        for (r, (label, _)) in rows.iter().enumerate() {
            let (_, ymid) = band(n, r, 0.0, 0.5);
            let (px, py) = chart.backend_coord(&(0.0, ymid));
            upper
                .draw(&Text::new(label.clone(), (px - 8, py), label_style.clone()))
                .map_err(err)?;
        }
        draw_legend(&lower, &tl)?;
        root.present().map_err(err)?;
    }
    Ok(buf)
}
