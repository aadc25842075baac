//! SVG plots of a run, drawn with plotters.
//!
//! The workspace builds plotters with its SVG backend only (no font
//! features): labels are written as `<text>` elements that the viewer lays
//! out, so no system font is needed and a plot is the same byte for byte on
//! every machine. The smoke test checks that the labels are there.

use crate::report::Report;
use hdrhistogram::Histogram;
use plotters::prelude::*;
use std::path::Path;

const SIZE: (u32, u32) = (900, 560);

fn color(i: usize) -> RGBColor {
    const PALETTE: [RGBColor; 12] = [
        RGBColor(31, 119, 180),
        RGBColor(255, 127, 14),
        RGBColor(44, 160, 44),
        RGBColor(214, 39, 40),
        RGBColor(148, 103, 189),
        RGBColor(140, 86, 75),
        RGBColor(227, 119, 194),
        RGBColor(127, 127, 127),
        RGBColor(188, 189, 34),
        RGBColor(23, 190, 207),
        RGBColor(0, 0, 0),
        RGBColor(90, 90, 200),
    ];
    PALETTE[i % PALETTE.len()]
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
    let mut chart = ChartBuilder::on(&root)
        .caption(
            "Uncontended acquire + release: latency CDF",
            ("sans-serif", 22),
        )
        .margin(12)
        .x_label_area_size(45)
        .y_label_area_size(60)
        .build_cartesian_2d((lo * 0.9..hi * 1.1).log_scale(), 0f64..1f64)?;
    chart
        .configure_mesh()
        .x_desc("cycle latency (µs, log scale)")
        .y_desc("fraction of cycles ≤ x")
        .draw()?;
    for (i, LatencySeries { label, latency: h }) in series.iter().enumerate() {
        if h.is_empty() {
            continue;
        }
        let points: Vec<(f64, f64)> = (0..=400)
            .map(|k| {
                let q = k as f64 / 400.0 * 0.9999;
                (h.value_at_quantile(q).max(1) as f64, q)
            })
            .collect();
        let c = color(i);
        chart
            .draw_series(LineSeries::new(points, c.stroke_width(2)))?
            .label(label.clone())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], c.stroke_width(2)));
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::LowerRight)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()?;
    root.present()?;
    Ok(())
}

/// One line per implementation of `y(row)` against workers, one key.
fn versus_workers(
    path: &Path,
    report: &Report,
    title: &str,
    y_desc: &str,
    y: impl Fn(&crate::report::ContentionRow) -> f64,
) -> PlotResult {
    let rows: Vec<_> = report
        .figures
        .contention
        .iter()
        .filter(|r| r.keys == 1)
        .collect();
    let mut labels: Vec<String> = Vec::new();
    for r in &rows {
        let l = format!("{} ({})", r.impl_, r.wait);
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
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 22))
        .margin(12)
        .x_label_area_size(45)
        .y_label_area_size(70)
        .build_cartesian_2d((1f64..max_w * 1.2).log_scale(), (lo..hi).log_scale())?;
    chart
        .configure_mesh()
        .x_desc("workers on one key (log scale)")
        .y_desc(y_desc)
        .draw()?;
    for (i, label) in labels.iter().enumerate() {
        let mut points: Vec<(f64, f64)> = rows
            .iter()
            .filter(|r| &format!("{} ({})", r.impl_, r.wait) == label)
            .map(|r| (r.workers as f64, y(r).max(lo)))
            .collect();
        points.sort_by(|a, b| a.0.total_cmp(&b.0));
        let c = color(i);
        chart
            .draw_series(LineSeries::new(points.clone(), c.stroke_width(2)))?
            .label(label.clone())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], c.stroke_width(2)));
        chart.draw_series(points.iter().map(|p| Circle::new(*p, 3, c.filled())))?;
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()?;
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
        "Contention on one key: p99.9 wait",
        "p99.9 wait (µs, log scale)",
        |r| r.wait_p999_us as f64,
    )
}

/// Cycles per second against the number of nodes.
pub fn redlock_scaling(path: &Path, report: &Report) -> PlotResult {
    let names = ["floor", "redlock", "rslock"];
    let rows: Vec<_> = report
        .figures
        .uncontended
        .iter()
        .filter(|r| names.contains(&r.impl_.as_str()) && r.wait == wait_of(&r.impl_))
        .collect();
    let hi = rows.iter().map(|r| r.cycles_per_s).fold(0f64, f64::max) * 1.2;
    let root = SVGBackend::new(path, SIZE).into_drawing_area();
    root.fill(&WHITE)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(
            "Uncontended cycles/s against the number of masters",
            ("sans-serif", 22),
        )
        .margin(12)
        .x_label_area_size(45)
        .y_label_area_size(70)
        .build_cartesian_2d(0.5f64..5.5f64, 0f64..hi.max(1.0))?;
    chart
        .configure_mesh()
        .x_desc("nodes (N)")
        .y_desc("cycles/s")
        .x_labels(6)
        .draw()?;
    for (i, name) in names.iter().enumerate() {
        let mut points: Vec<(f64, f64)> = rows
            .iter()
            .filter(|r| r.impl_ == *name)
            .map(|r| (r.nodes as f64, r.cycles_per_s))
            .collect();
        points.sort_by(|a, b| a.0.total_cmp(&b.0));
        let c = color(i);
        chart
            .draw_series(LineSeries::new(points.clone(), c.stroke_width(2)))?
            .label(name.to_string())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], c.stroke_width(2)));
        chart.draw_series(points.iter().map(|p| Circle::new(*p, 4, c.filled())))?;
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()?;
    root.present()?;
    Ok(())
}

fn wait_of(name: &str) -> &'static str {
    match name {
        "floor" => "poll-1ms",
        "rslock" => "rslock-default",
        _ => "fixed",
    }
}
