//! The run page's timeline as inline SVG, drawn on the server side: an
//! axis of true time, a lane for the faults, one per client and one per
//! node ([`super::lanes`]), the faults as bands across every lane, and the
//! witness events of failed checks ringed in red with a dashed line.
//!
//! Every element placed in time carries its times (`data-t0`, `data-t1`,
//! µs), the events it stands for (`data-ev`) and a sentence (`data-tip`):
//! the page's script re-places the elements when the reader zooms, and
//! shows the sentence and the events in full on hover. Without the script
//! the whole run shows at once.

use super::lanes::{LaneRef, Lanes, Role, Span};
use super::{attr, text};
use model::history::{History, KeyChange, Op, Outcome};
use model::host::Host;
use std::collections::BTreeSet;
use std::fmt::Write as _;

/// Width of the drawing, in SVG units.
pub const WIDTH: f64 = 1200.0;
/// Where time begins on the x axis.
pub const PLOT_X0: f64 = 170.0;
/// Width of the time axis.
pub const PLOT_W: f64 = 1010.0;
/// Height of the time axis at the top.
const AXIS_H: f64 = 26.0;
/// Height of one client or node lane.
const LANE_H: f64 = 34.0;
/// Height of one row of the faults' lane.
const FAULT_ROW_H: f64 = 16.0;
/// The narrowest a span is drawn, in SVG units, so that an instant shows.
const MIN_W: f64 = 1.5;

/// Where the time axis maps true time: `[0, end_us]` onto the plot.
struct Scale {
    end_us: u64,
}

impl Scale {
    fn x(&self, t_us: u64) -> f64 {
        PLOT_X0 + t_us as f64 * PLOT_W / self.end_us as f64
    }
}

/// A number of SVG units, two decimals at most.
fn num(v: f64) -> String {
    let s = format!("{v:.2}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// The attributes that place an element in time and say what it is.
fn timed(from_us: u64, to_us: u64, events: &[usize], tip: &str) -> String {
    let ev: Vec<String> = events.iter().map(usize::to_string).collect();
    format!(
        "data-t0=\"{from_us}\" data-t1=\"{to_us}\" data-ev=\"{}\" data-tip=\"{}\"",
        ev.join(" "),
        attr(tip)
    )
}

/// A rectangle over a span, `y` to `y + h`.
fn span_rect(out: &mut String, scale: &Scale, class: &str, span: &Span, y: f64, h: f64) {
    let x0 = scale.x(span.from_us);
    let w = (scale.x(span.to_us) - x0).max(MIN_W);
    let _ = writeln!(
        out,
        "<rect class=\"{class}\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" {}/>",
        num(x0),
        num(y),
        num(w),
        num(h),
        timed(span.from_us, span.to_us, &span.events, &span.note)
    );
}

/// A vertical line at an instant, or a horizontal one over a span.
fn timed_line(
    out: &mut String,
    scale: &Scale,
    class: &str,
    (from_us, to_us): (u64, u64),
    (y1, y2): (f64, f64),
    events: &[usize],
    tip: &str,
) {
    let x1 = scale.x(from_us);
    let x2 = if to_us > from_us {
        scale.x(to_us).max(x1 + MIN_W)
    } else {
        x1
    };
    let _ = writeln!(
        out,
        "<line class=\"{class}\" x1=\"{}\" x2=\"{}\" y1=\"{}\" y2=\"{}\" {}/>",
        num(x1),
        num(x2),
        num(y1),
        num(y2),
        timed(from_us, to_us, events, tip)
    );
}

/// A label that follows a time, `dx` to its right.
fn timed_text(out: &mut String, scale: &Scale, class: &str, at_us: u64, y: f64, label: &str) {
    let _ = writeln!(
        out,
        "<text class=\"{class}\" x=\"{}\" y=\"{}\" data-t0=\"{at_us}\" data-dx=\"3\">{}</text>",
        num(scale.x(at_us) + 3.0),
        num(y),
        text(label)
    );
}

/// The smallest of 1, 2 or 5 × 10^k µs that is at least `raw`.
fn nice_step(raw: f64) -> u64 {
    let mut base = 1u64;
    loop {
        for m in [1, 2, 5] {
            if (base.saturating_mul(m)) as f64 >= raw {
                return base.saturating_mul(m);
            }
        }
        base = base.saturating_mul(10);
    }
}

/// The axis ticks and their labels for the whole run (the script draws
/// them again on zoom, by the same rule: about 8 ticks at round times).
fn axis(out: &mut String, scale: &Scale, height: f64) {
    let step = nice_step(scale.end_us as f64 / 8.0);
    out.push_str("<g class=\"axis\" id=\"axis\">\n");
    let mut t = 0;
    while t <= scale.end_us {
        let x = num(scale.x(t));
        let _ = writeln!(
            out,
            "<line class=\"tick\" x1=\"{x}\" x2=\"{x}\" y1=\"{}\" y2=\"{}\"/><text x=\"{x}\" y=\"16\" text-anchor=\"middle\">{}</text>",
            num(AXIS_H - 4.0),
            num(height),
            t as f64 / 1000.0
        );
        t += step;
    }
    out.push_str("</g>\n");
}

/// The faults' lane rows: a fault goes into the first row where it does
/// not meet an earlier one (its label counted at the full view's scale).
fn fault_rows(lanes: &Lanes, scale: &Scale) -> (Vec<usize>, usize) {
    let mut row_ends: Vec<f64> = Vec::new();
    let mut rows = Vec::new();
    for band in &lanes.faults {
        let x0 = scale.x(band.span.from_us);
        let x1 = scale.x(band.span.to_us).max(x0 + MIN_W) + 8.0 + 6.5 * label_of(band).len() as f64;
        let row = row_ends
            .iter()
            .position(|&end| end < x0)
            .unwrap_or_else(|| {
                row_ends.push(0.0);
                row_ends.len() - 1
            });
        row_ends[row] = x1;
        rows.push(row);
    }
    let count = row_ends.len().max(1);
    (rows, count)
}

fn label_of(band: &super::lanes::FaultBand) -> String {
    format!("{} {}", band.fault, band.target)
}

/// The y of each lane's top, and the drawing's height.
struct Layout {
    faults_top: f64,
    fault_rows: usize,
    clients_top: f64,
    nodes_top: f64,
    height: f64,
}

impl Layout {
    fn of(lanes: &Lanes, fault_rows: usize) -> Layout {
        let faults_top = AXIS_H;
        let clients_top = faults_top + FAULT_ROW_H * fault_rows as f64 + 8.0;
        let nodes_top = clients_top + LANE_H * lanes.clients.len() as f64;
        let height = nodes_top + LANE_H * lanes.nodes.len() as f64 + 4.0;
        Layout {
            faults_top,
            fault_rows,
            clients_top,
            nodes_top,
            height,
        }
    }

    /// The top and height of the lane an event is drawn on.
    fn lane(&self, lanes: &Lanes, lane: LaneRef) -> (f64, f64) {
        match lane {
            LaneRef::Faults => (self.faults_top, FAULT_ROW_H * self.fault_rows as f64),
            LaneRef::Client(c) => {
                let k = lanes
                    .clients
                    .iter()
                    .position(|l| l.client == c)
                    .unwrap_or(0);
                (self.clients_top + LANE_H * k as f64, LANE_H)
            }
            LaneRef::Node(host) => {
                let k = lanes.nodes.iter().position(|l| l.host == host).unwrap_or(0);
                (self.nodes_top + LANE_H * k as f64, LANE_H)
            }
        }
    }
}

/// The CSS class of an operation.
fn op_class(op: Op, outcome: Option<Outcome>) -> String {
    let name = match op {
        Op::Acquire => "acquire",
        Op::Release => "release",
        Op::Extend => "extend",
        Op::Check => "check",
        Op::Read => "read",
        Op::Write => "write",
    };
    let failed = if outcome == Some(Outcome::Ok) {
        ""
    } else {
        " op-fail"
    };
    format!("op op-{name}{failed}")
}

/// The class of a key record.
fn key_class(what: KeyChange) -> &'static str {
    match what {
        KeyChange::Set => "key-set",
        KeyChange::Expired => "key-expired",
        KeyChange::Deleted => "key-deleted",
    }
}

/// A node's label: its name and first role.
fn node_label(host: Host) -> String {
    match host {
        Host::Store => "store (resource)".to_string(),
        other => other.to_string(),
    }
}

/// The timeline of `history` as an `<svg>` element; `witness` holds the
/// events of failed checks, ringed and linked to their history rows.
pub fn svg(lanes: &Lanes, history: &History, witness: &BTreeSet<usize>) -> String {
    let scale = Scale {
        end_us: lanes.end_us,
    };
    let (rows, fault_row_count) = fault_rows(lanes, &scale);
    let layout = Layout::of(lanes, fault_row_count);
    let h = layout.height;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "<svg class=\"timeline\" id=\"timeline\" xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 {} {}\" data-end=\"{}\" data-x0=\"{}\" data-w=\"{}\" role=\"img\" aria-label=\"timeline of the run\">",
        num(WIDTH),
        num(h),
        lanes.end_us,
        num(PLOT_X0),
        num(PLOT_W)
    );
    let _ = writeln!(
        out,
        "<defs><clipPath id=\"plot-clip\"><rect x=\"{}\" y=\"0\" width=\"{}\" height=\"{}\"/></clipPath></defs>",
        num(PLOT_X0),
        num(PLOT_W),
        num(h)
    );
    lane_backgrounds(&mut out, lanes, &layout, fault_row_count);
    axis(&mut out, &scale, h);
    out.push_str("<g clip-path=\"url(#plot-clip)\" id=\"plot\">\n");
    fault_bands(&mut out, lanes, &rows, &scale, &layout);
    client_lanes(&mut out, lanes, &scale, &layout);
    node_lanes(&mut out, lanes, &scale, &layout);
    witness_marks(&mut out, lanes, history, witness, &scale, &layout);
    out.push_str("</g>\n</svg>\n");
    out
}

/// Every lane's background and label (not clipped, not placed in time):
/// the faults' lane first, then each client's, then each node's.
fn lane_backgrounds(out: &mut String, lanes: &Lanes, layout: &Layout, fault_row_count: usize) {
    let mut lane_tops: Vec<(f64, f64, String, String)> = vec![(
        layout.faults_top,
        FAULT_ROW_H * fault_row_count as f64,
        "faults".to_string(),
        "lane-faults".to_string(),
    )];
    for lane in &lanes.clients {
        let (y, lh) = layout.lane(lanes, LaneRef::Client(lane.client));
        lane_tops.push((
            y,
            lh,
            format!("client {}", lane.client),
            format!("lane-client-{}", lane.client),
        ));
    }
    for lane in &lanes.nodes {
        let (y, lh) = layout.lane(lanes, LaneRef::Node(lane.host));
        lane_tops.push((y, lh, node_label(lane.host), format!("lane-{}", lane.host)));
    }
    for (k, (y, lh, label, id)) in lane_tops.iter().enumerate() {
        let odd = if k % 2 == 1 { " odd" } else { "" };
        let _ = writeln!(
            out,
            "<g class=\"lane\" id=\"{}\"><rect class=\"lane-bg{odd}\" x=\"0\" y=\"{}\" width=\"{}\" height=\"{}\"/><text class=\"lane-label\" x=\"8\" y=\"{}\">{}</text></g>",
            attr(id),
            num(*y),
            num(WIDTH),
            num(*lh),
            num(y + lh / 2.0 + 4.0),
            text(label)
        );
    }
}

/// The faults: a faint band over every lane, a bar with its label on the
/// faults' lane (in its row, `rows`).
fn fault_bands(out: &mut String, lanes: &Lanes, rows: &[usize], scale: &Scale, layout: &Layout) {
    let h = layout.height;
    for (band, row) in lanes.faults.iter().zip(rows) {
        let class = format!("band f-{}", band.fault);
        span_rect(out, scale, &class, &band.span, AXIS_H, h - AXIS_H);
        let y = layout.faults_top + FAULT_ROW_H * *row as f64;
        let class = format!("fault f-{}", band.fault);
        span_rect(out, scale, &class, &band.span, y + 3.0, FAULT_ROW_H - 6.0);
        timed_text(
            out,
            scale,
            "fault-label",
            band.span.to_us,
            y + FAULT_ROW_H - 4.0,
            &label_of(band),
        );
    }
}

/// Each client's lane: its waits, holds, overlaps, pauses, crashes and
/// operations.
fn client_lanes(out: &mut String, lanes: &Lanes, scale: &Scale, layout: &Layout) {
    for lane in &lanes.clients {
        let (y, _) = layout.lane(lanes, LaneRef::Client(lane.client));
        for s in &lane.waits {
            span_rect(out, scale, "wait", s, y + 9.0, 12.0);
        }
        for s in &lane.holds {
            span_rect(out, scale, "hold", s, y + 5.0, 20.0);
        }
        for s in &lane.overlaps {
            span_rect(out, scale, "overlap", s, y + 5.0, 20.0);
        }
        for s in &lane.paused {
            span_rect(out, scale, "paused", s, y + 2.0, 6.0);
        }
        for s in &lane.crashed {
            span_rect(out, scale, "crashed", s, y + 2.0, 26.0);
        }
        for op in &lane.ops {
            let class = op_class(op.op, op.outcome);
            timed_line(
                out,
                scale,
                &class,
                (op.span.from_us, op.span.to_us),
                (y + 29.5, y + 29.5),
                &op.span.events,
                &op.span.note,
            );
        }
    }
}

/// Each node's lane: up and down, its roles, the lock key's changes and
/// the instant faults that hit it.
fn node_lanes(out: &mut String, lanes: &Lanes, scale: &Scale, layout: &Layout) {
    for lane in &lanes.nodes {
        let (y, _) = layout.lane(lanes, LaneRef::Node(lane.host));
        let up = Span {
            from_us: 0,
            to_us: lanes.end_us,
            events: Vec::new(),
            note: format!("{} up", lane.host),
        };
        span_rect(out, scale, "up", &up, y + 7.0, 20.0);
        for s in &lane.down {
            span_rect(out, scale, "down", s, y + 7.0, 20.0);
        }
        for change in &lane.roles {
            let label = match (change.role, change.event) {
                (Role::Master, Some(_)) => "promoted: master".to_string(),
                (role, _) => role.as_str().to_string(),
            };
            timed_text(out, scale, "role", change.from_us, y + 21.0, &label);
        }
        for mark in &lane.keys {
            let what = match mark.what {
                KeyChange::Set => "set",
                KeyChange::Expired => "expired",
                KeyChange::Deleted => "deleted",
            };
            timed_line(
                out,
                scale,
                key_class(mark.what),
                (mark.at_us, mark.at_us),
                (y + 3.0, y + 31.0),
                &[mark.event],
                &format!(
                    "{} {what} {:?} at {}",
                    lane.host,
                    mark.key,
                    super::ms(mark.at_us)
                ),
            );
        }
        for mark in &lane.instants {
            timed_line(
                out,
                scale,
                &format!("instant f-stroke-{}", mark.fault),
                (mark.at_us, mark.at_us),
                (y + 3.0, y + 31.0),
                &[mark.event],
                &mark.note,
            );
        }
    }
}

/// The witness: a dashed line across the lanes and a ring on the lane of
/// each event, linked to its row in the history.
fn witness_marks(
    out: &mut String,
    lanes: &Lanes,
    history: &History,
    witness: &BTreeSet<usize>,
    scale: &Scale,
    layout: &Layout,
) {
    let h = layout.height;
    for &i in witness {
        let Some(event) = history.events().get(i) else {
            continue;
        };
        let (y, lh) = layout.lane(lanes, lanes.lane_of(event));
        let tip = format!("witness: event {i} at {}", super::ms(event.at_us));
        timed_line(
            out,
            scale,
            "witness-line",
            (event.at_us, event.at_us),
            (AXIS_H, h),
            &[i],
            &tip,
        );
        let _ = writeln!(
            out,
            "<a href=\"#ev-{i}\" id=\"tl-ev-{i}\" class=\"witness-mark\"><circle class=\"witness\" cx=\"{}\" cy=\"{}\" r=\"7\" {}/></a>",
            num(scale.x(event.at_us)),
            num(y + lh / 2.0),
            timed(event.at_us, event.at_us, &[i], &tip)
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn axis_steps_are_round() {
        assert_eq!(nice_step(0.3), 1);
        assert_eq!(nice_step(1_300.0), 2_000);
        assert_eq!(nice_step(4_100.0), 5_000);
        assert_eq!(nice_step(6_000.0), 10_000);
    }

    #[test]
    fn numbers_have_at_most_two_decimals() {
        assert_eq!(num(170.0), "170");
        assert_eq!(num(1.005_1), "1.01");
        assert_eq!(num(12.5), "12.5");
    }
}
