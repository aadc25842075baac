//! The cells of `bench.md`: figures with their intervals, ratios, rates
//! and wait figures, each in the one form every table shows it.

use crate::interval::Estimate;
use crate::report::ContentionRow;
use crate::stats::round3;

/// A ratio with its interval, `0.97× [0.95–0.99]`; its range when there
/// are too few rounds for an interval; "too noisy" instead of a figure
/// when the interval is so wide the figure says nothing; `–` when there
/// is none.
pub(super) fn ratio(r: Option<Estimate>) -> String {
    match r {
        None => "–".to_string(),
        Some(e) if e.is_interval() && e.is_meaningless() => {
            format!("too noisy ({:.2}–{:.2})", e.low, e.high)
        }
        Some(e) if e.is_interval() => format!("{:.2}× [{:.2}–{:.2}]", e.median, e.low, e.high),
        Some(e) if e.n == 1 => format!("{:.2}× (1 round)", e.median),
        Some(e) => format!(
            "{:.2}× (range {:.2}–{:.2}, {} rounds)",
            e.median, e.low, e.high, e.n
        ),
    }
}

/// A figure with its interval, `0.970 [0.950–0.990]` (its range when
/// there are too few values for an interval), all three to the decimals
/// that show its precision ([`Estimate::decimals`]): `1.0234
/// [1.0213–1.0255]`, never `1.02 [1.02–1.02]`.
pub fn figure(e: &Estimate) -> String {
    let range = if e.is_interval() { "" } else { "range " };
    let d = e.decimals();
    format!("{:.d$} [{range}{:.d$}–{:.d$}]", e.median, e.low, e.high)
}

/// Where a repeat run's median should land, to the figure's decimals,
/// with the chance it does ("–" without one).
pub fn repeat_figure(e: &Estimate) -> String {
    let d = e.decimals();
    e.repeat.map_or("–".to_string(), |r| {
        format!("{:.d$}–{:.d$} ({:.1}%)", r.low, r.high, r.level * 100.0)
    })
}

/// Which of `batches` batch medians bound their interval, in words.
pub(super) fn batch_ranks(batches: usize) -> String {
    match crate::interval::quantile_ranks(batches, 0.5) {
        Some((1, u)) if u == batches => format!("with {batches} batches, their range"),
        Some((l, u)) => format!(
            "with {batches} batches, the {} lowest to the {} highest",
            ordinal(l),
            ordinal(batches + 1 - u)
        ),
        None => "with so few batches, none".to_string(),
    }
}

/// `n` as an ordinal: 1st, 2nd, 3rd, 4th, ..., 11th, 12th, 13th, 21st.
fn ordinal(n: usize) -> String {
    let suffix = match (n % 10, n % 100) {
        (_, 11..=13) => "th",
        (1, _) => "st",
        (2, _) => "nd",
        (3, _) => "rd",
        _ => "th",
    };
    format!("{n}{suffix}")
}

/// A rate, in thousands from 10 000 on.
pub(super) fn rate(x: f64) -> String {
    if x >= 10_000.0 {
        format!("{:.1}k", x / 1000.0)
    } else {
        format!("{}", round3(x))
    }
}

/// A median rate with its range over rounds.
pub(super) fn rate_range(median: f64, min: f64, max: f64) -> String {
    format!("{} [{}–{}]", rate(median), rate(min), rate(max))
}

/// A wait figure of `row`, marked `≥` when `field` is only a lower bound.
pub(super) fn wait_cell(row: &ContentionRow, field: &str, us: u64) -> String {
    if row.wait_lower_bounds.iter().any(|f| f == field) {
        format!("≥ {us}")
    } else {
        us.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::interval::IntervalKind;

    fn estimate(low: f64, median: f64, high: f64, n: usize) -> Estimate {
        Estimate {
            median,
            low,
            high,
            n,
            interval: if n >= crate::interval::MIN_FOR_INTERVAL {
                IntervalKind::Bootstrap95
            } else {
                IntervalKind::Range
            },
            repeat: None,
        }
    }

    #[test]
    fn the_method_names_the_batch_medians_that_bound_the_interval() {
        assert_eq!(batch_ranks(6), "with 6 batches, their range");
        assert_eq!(
            batch_ranks(12),
            "with 12 batches, the 3rd lowest to the 3rd highest"
        );
        assert_eq!(batch_ranks(3), "with so few batches, none");
        let ordinals: Vec<String> = [1, 2, 3, 4, 11, 12, 13, 21, 22, 101].map(ordinal).into();
        assert_eq!(
            ordinals,
            [
                "1st", "2nd", "3rd", "4th", "11th", "12th", "13th", "21st", "22nd", "101st"
            ]
        );
    }

    #[test]
    fn a_target_shows_where_a_repeat_run_should_land_beside_its_interval() {
        let mut e = estimate(0.9, 0.97, 1.0, 30);
        assert_eq!(repeat_figure(&e), "–");
        e.repeat = Some(crate::interval::Repeat {
            low: 0.85,
            high: 1.05,
            level: 0.994_44,
        });
        assert_eq!(repeat_figure(&e), "0.850–1.050 (99.4%)");
    }

    #[test]
    fn figures_show_three_digits_or_as_many_as_their_interval_needs() {
        assert_eq!(figure(&estimate(0.9, 0.97, 1.0, 30)), "0.970 [0.900–1.000]");
        assert_eq!(
            figure(&estimate(0.9, 0.97, 1.0, 3)),
            "0.970 [range 0.900–1.000]"
        );
        // An interval narrower than the median's third digit keeps two
        // digits of its width, so that its bounds do not print alike.
        assert_eq!(
            figure(&estimate(1.0213, 1.0234, 1.0255, 30)),
            "1.0234 [1.0213–1.0255]"
        );
        assert_eq!(
            figure(&estimate(0.00620, 0.00746, 0.00841, 30)),
            "0.00746 [0.00620–0.00841]"
        );
    }

    #[test]
    fn a_ratio_cell_says_too_noisy_instead_of_a_meaningless_figure() {
        assert_eq!(
            ratio(Some(estimate(0.95, 0.97, 0.99, 20))),
            "0.97× [0.95–0.99]"
        );
        assert_eq!(
            ratio(Some(estimate(0.6, 1.0, 1.4, 20))),
            "too noisy (0.60–1.40)"
        );
        assert_eq!(
            ratio(Some(estimate(0.9, 1.0, 1.1, 2))),
            "1.00× (range 0.90–1.10, 2 rounds)"
        );
        assert_eq!(ratio(None), "–");
    }
}
