//! SVG plots of a run, drawn with plotters.
//!
//! The workspace builds plotters with its SVG backend only (no font
//! features): labels are written as `<text>` elements that the viewer lays
//! out, so no system font is needed and a plot is the same byte for byte on
//! every machine. The smoke test checks that the labels are there.

use crate::client::{Impl, Wait};
use crate::report::{ContentionRow, Report, UncontendedRow};
use hdrhistogram::Histogram;
use plotters::coord::Shift;
use plotters::coord::ranged1d::Ranged;
use plotters::prelude::*;
use std::path::Path;

const SIZE: (u32, u32) = (900, 560);

/// Line colour `i`, from a palette of twelve that stay apart on white.
fn color(i: usize) -> RGBColor {
    const PALETTE: [u32; 12] = [
        0x1f77b4, 0xff7f0e, 0x2ca02c, 0xd62728, 0x9467bd, 0x8c564b, 0xe377c2, 0x7f7f7f, 0xbcbd22,
        0x17becf, 0x000000, 0x5a5ac8,
    ];
    let rgb = PALETTE[i % PALETTE.len()];
    RGBColor((rgb >> 16) as u8, (rgb >> 8) as u8, rgb as u8)
}

/// What drawing a plot returns.
pub type PlotResult = Result<(), Box<dyn std::error::Error>>;

/// One implementation's cycle latencies, a line of the CDF plot.
#[derive(Debug, Clone)]
pub struct LatencySeries {
    /// The implementation's label.
    pub label: String,
    /// Every cycle's latency, µs.
    pub latency: Histogram<u64>,
}

/// Latency CDF (x: cycle latency µs, log; y: fraction of cycles) per
/// implementation.
pub fn latency_cdf(path: &Path, series: &[LatencySeries]) -> PlotResult {
    let root = SVGBackend::new(path, SIZE).into_drawing_area();
    root.fill(&WHITE)?;
    let drawn = || series.iter().filter(|s| !s.latency.is_empty());
    let lo = drawn().map(|s| s.latency.min()).min().unwrap_or(1).max(1) as f64;
    let hi = drawn()
        .map(|s| s.latency.value_at_quantile(0.9999))
        .max()
        .unwrap_or(10)
        .max(2) as f64;
    let mut chart = titled(&root, "Uncontended acquire + release: latency CDF", 60)
        .build_cartesian_2d((lo * 0.9..hi * 1.1).log_scale(), 0f64..1f64)?;
    chart
        .configure_mesh()
        .x_desc("cycle latency (µs, log scale)")
        .y_desc("fraction of cycles ≤ x")
        .draw()?;
    let lines = series
        .iter()
        .enumerate()
        .filter(|(_, s)| !s.latency.is_empty())
        .map(|(color, s)| Line {
            label: s.label.clone(),
            points: (0..=400)
                .map(|k| {
                    let q = k as f64 / 400.0 * 0.9999;
                    (s.latency.value_at_quantile(q).max(1) as f64, q)
                })
                .collect(),
            color,
        });
    draw_lines(&mut chart, lines, None, SeriesLabelPosition::LowerRight)?;
    root.present()?;
    Ok(())
}

/// One labelled line of a plot.
struct Line {
    label: String,
    points: Vec<(f64, f64)>,
    /// Index into the palette.
    color: usize,
}

/// A chart builder with the house layout and `title`.
fn titled<'a, 'b>(
    root: &'a DrawingArea<SVGBackend<'b>, Shift>,
    title: &str,
    y_label_area: u32,
) -> ChartBuilder<'a, 'b, SVGBackend<'b>> {
    let mut builder = ChartBuilder::on(root);
    builder
        .caption(title, ("sans-serif", 22))
        .margin(12)
        .x_label_area_size(45)
        .y_label_area_size(y_label_area);
    builder
}

/// Draws `lines`, a dot of `dot_radius` on each point when given, and
/// their legend at `legend_at`.
fn draw_lines<'a, 'b: 'a, X, Y>(
    chart: &mut ChartContext<'a, SVGBackend<'b>, Cartesian2d<X, Y>>,
    lines: impl IntoIterator<Item = Line>,
    dot_radius: Option<u32>,
    legend_at: SeriesLabelPosition,
) -> PlotResult
where
    X: Ranged<ValueType = f64>,
    Y: Ranged<ValueType = f64>,
{
    for line in lines {
        let c = color(line.color);
        chart
            .draw_series(LineSeries::new(line.points.clone(), c.stroke_width(2)))?
            .label(line.label)
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], c.stroke_width(2)));
        if let Some(radius) = dot_radius {
            chart.draw_series(
                line.points
                    .iter()
                    .map(|p| Circle::new(*p, radius, c.filled())),
            )?;
        }
    }
    chart
        .configure_series_labels()
        .position(legend_at)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()?;
    Ok(())
}

/// Points of `rows` in `x` order.
fn sorted_points<R>(rows: &[&R], point: impl Fn(&R) -> (f64, f64)) -> Vec<(f64, f64)> {
    let mut points: Vec<(f64, f64)> = rows.iter().map(|r| point(r)).collect();
    points.sort_by(|a, b| a.0.total_cmp(&b.0));
    points
}

/// The legend label of a contention row's implementation.
fn contender(row: &ContentionRow) -> String {
    format!("{} ({})", row.subject.impl_, row.subject.wait)
}

/// One line per implementation of `y(row)` against workers, one key.
fn versus_workers(
    path: &Path,
    report: &Report,
    title: &str,
    y_desc: &str,
    y: impl Fn(&ContentionRow) -> f64,
) -> PlotResult {
    let rows: Vec<_> = report
        .figures
        .contention
        .iter()
        .filter(|r| r.keys == 1)
        .collect();
    let mut labels: Vec<String> = Vec::new();
    for r in &rows {
        let l = contender(r);
        if !labels.contains(&l) {
            labels.push(l);
        }
    }
    let max_w = rows.iter().map(|r| r.workers).max().unwrap_or(64).max(2) as f64;
    let ys: Vec<f64> = rows.iter().map(|r| y(r)).filter(|v| *v > 0.0).collect();
    let lo = ys.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = ys.iter().copied().fold(0f64, f64::max);
    let (lo, hi) = if lo.is_finite() && hi > 0.0 {
        (lo * 0.7, hi * 1.4)
    } else {
        (1.0, 10.0)
    };
    let root = SVGBackend::new(path, SIZE).into_drawing_area();
    root.fill(&WHITE)?;
    let mut chart = titled(&root, title, 70)
        .build_cartesian_2d((1f64..max_w * 1.2).log_scale(), (lo..hi).log_scale())?;
    chart
        .configure_mesh()
        .x_desc("workers on one key (log scale)")
        .y_desc(y_desc)
        .draw()?;
    let lines = labels.into_iter().enumerate().map(|(color, label)| {
        let of_label: Vec<_> = rows
            .iter()
            .copied()
            .filter(|r| contender(r) == label)
            .collect();
        Line {
            points: sorted_points(&of_label, |r| (r.workers as f64, y(r).max(lo))),
            label,
            color,
        }
    });
    draw_lines(&mut chart, lines, Some(3), SeriesLabelPosition::UpperRight)?;
    root.present()?;
    Ok(())
}

/// Acquisitions per second against workers.
pub fn throughput(path: &Path, report: &Report) -> PlotResult {
    versus_workers(
        path,
        report,
        "Contention on one key: acquisitions per second",
        "acquisitions/s (log scale)",
        |r| r.acq_per_s,
    )
}

/// p99.9 wait against workers.
pub fn wait_p999(path: &Path, report: &Report) -> PlotResult {
    versus_workers(
        path,
        report,
        "Contention on one key: p99.9 wait, open waits included",
        "p99.9 wait (µs, log scale)",
        |r| r.wait_p999_us as f64,
    )
}

/// Cycles per second against the number of nodes.
pub fn redlock_scaling(path: &Path, report: &Report) -> PlotResult {
    let compared = [
        Impl::Floor,
        Impl::Rung("redlock", Wait::Fixed),
        Impl::Rslock,
        Impl::Rung("rslock", Wait::Fixed),
    ];
    let is = |r: &UncontendedRow, which: &Impl| {
        r.subject.impl_ == which.name() && r.subject.wait == which.wait()
    };
    let rows: Vec<_> = report
        .figures
        .uncontended
        .iter()
        .filter(|r| compared.iter().any(|which| is(r, which)))
        .collect();
    let hi = rows.iter().map(|r| r.cycles_per_s).fold(0f64, f64::max) * 1.2;
    let root = SVGBackend::new(path, SIZE).into_drawing_area();
    root.fill(&WHITE)?;
    let mut chart = titled(
        &root,
        "Uncontended cycles/s against the number of masters",
        70,
    )
    .build_cartesian_2d(0.5f64..5.5f64, 0f64..hi.max(1.0))?;
    chart
        .configure_mesh()
        .x_desc("nodes (N)")
        .y_desc("cycles/s")
        .x_labels(6)
        .draw()?;
    let lines = compared.iter().enumerate().map(|(color, which)| {
        let of_which: Vec<_> = rows.iter().copied().filter(|r| is(r, which)).collect();
        Line {
            label: which.name().to_string(),
            points: sorted_points(&of_which, |r| (r.subject.nodes as f64, r.cycles_per_s)),
            color,
        }
    });
    draw_lines(&mut chart, lines, Some(4), SeriesLabelPosition::UpperRight)?;
    root.present()?;
    Ok(())
}
