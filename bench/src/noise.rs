//! What the machine was doing while the run measured: CPU time stolen by
//! the hypervisor and spent by every process (from `/proc/stat`), the load
//! average, and the modes of the round trip, found by splitting the `PING`
//! samples in two where they separate best.

use hdrhistogram::Histogram;
use serde::Serialize;
use std::collections::BTreeMap;

/// CPU time counters of one `cpu` line of `/proc/stat`, in clock ticks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CpuTicks {
    /// Every tick counted on the line.
    pub total: u64,
    /// Idle and waiting for I/O.
    pub idle: u64,
    /// Stolen by the hypervisor for other guests.
    pub steal: u64,
}

/// The `cpu` lines of a `/proc/stat` text, by name (`cpu` is the sum,
/// `cpu0`, `cpu1`, ... each CPU). Lines that do not parse are left out.
pub fn parse_proc_stat(text: &str) -> BTreeMap<String, CpuTicks> {
    let mut cpus = BTreeMap::new();
    for line in text.lines().filter(|l| l.starts_with("cpu")) {
        let mut fields = line.split_whitespace();
        let Some(name) = fields.next() else { continue };
        let Ok(ticks) = fields
            .map(str::parse::<u64>)
            .collect::<Result<Vec<u64>, _>>()
        else {
            continue;
        };
        // user nice system idle iowait irq softirq steal guest guest_nice;
        // guest time is already counted in user and nice.
        if ticks.len() < 8 {
            continue;
        }
        cpus.insert(
            name.to_string(),
            CpuTicks {
                total: ticks[..8].iter().sum(),
                idle: ticks[3] + ticks[4],
                steal: ticks[7],
            },
        );
    }
    cpus
}

/// The counters now (empty where `/proc/stat` cannot be read).
pub fn cpu_ticks_now() -> BTreeMap<String, CpuTicks> {
    parse_proc_stat(&std::fs::read_to_string("/proc/stat").unwrap_or_default())
}

/// How one CPU (or all) spent a stretch of time.
#[derive(Debug, Clone, Serialize, PartialEq, schemars::JsonSchema)]
pub struct CpuUse {
    /// `all`, or `cpu0`, `cpu1`, ...
    pub cpu: String,
    /// Share stolen by the hypervisor, %.
    pub steal_pct: f64,
    /// Share busy (every process, this run's included), %.
    pub busy_pct: f64,
}

/// How each CPU spent the time between two readings of the counters.
pub fn cpu_use(
    before: &BTreeMap<String, CpuTicks>,
    after: &BTreeMap<String, CpuTicks>,
) -> Vec<CpuUse> {
    after
        .iter()
        .filter_map(|(name, a)| {
            let b = before.get(name)?;
            let total = a.total.checked_sub(b.total)?;
            if total == 0 {
                return None;
            }
            let share = |x: u64| (x as f64 / total as f64 * 1000.0).round() / 10.0;
            let idle = a.idle.saturating_sub(b.idle);
            Some(CpuUse {
                cpu: if name == "cpu" {
                    "all".to_string()
                } else {
                    name.clone()
                },
                steal_pct: share(a.steal.saturating_sub(b.steal)),
                busy_pct: share(total.saturating_sub(idle)),
            })
        })
        .collect()
}

/// The 1-minute load average now (0 where it cannot be read).
pub fn load_average() -> f64 {
    harness::procfs::load_average().unwrap_or(0.0)
}

/// One mode of the round trip.
#[derive(Debug, Clone, Copy, Serialize, PartialEq, schemars::JsonSchema)]
pub struct Mode {
    /// The mode's median round trip, µs.
    pub median_us: u64,
    /// Its share of the samples, 0..1.
    pub share: f64,
}

/// The round trip's modes.
#[derive(Debug, Clone, Serialize, PartialEq, schemars::JsonSchema)]
pub struct Modes {
    /// The fast mode first; one mode when the samples do not separate.
    pub modes: Vec<Mode>,
    /// Whether there are two clear modes.
    pub bimodal: bool,
    /// The round trip that separates them, µs (the boundary between the
    /// two groups, also when they are not called two modes).
    pub split_us: u64,
}

impl Modes {
    /// The modes as the report writes them: `35 µs (60%), 112 µs (40%)`.
    pub fn describe(&self) -> String {
        self.modes
            .iter()
            .map(|m| format!("{} µs ({:.0}%)", m.median_us, m.share * 100.0))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// Smallest share of the samples a second mode must hold.
const MIN_MODE_SHARE: f64 = 0.05;
/// Smallest ratio of the two modes' medians.
const MIN_MODE_RATIO: f64 = 1.5;
/// Width of the density bins on the log scale: 6% steps of round trip
/// (ln 1.06).
const BIN_WIDTH: f64 = 0.058_268_908;
/// Deepest the valley between two modes may be, as a share of the lower
/// of their two peaks.
const MAX_VALLEY: f64 = 0.5;

/// How many samples `(ln µs, count)` hold.
fn count(samples: &[(f64, u64)]) -> u64 {
    samples.iter().map(|(_, c)| c).sum()
}

/// The median round trip of samples `(ln µs, count)` sorted by value, µs.
fn median_us(samples: &[(f64, u64)]) -> u64 {
    let half = count(samples).div_ceil(2);
    let mut seen = 0;
    for (x, c) in samples {
        seen += c;
        if seen >= half {
            return x.exp().round() as u64;
        }
    }
    0
}

/// The sample density over bins of [`BIN_WIDTH`] from the smallest
/// sample, smoothed over three bins.
fn density(samples: &[(f64, u64)]) -> Vec<f64> {
    let first = samples.first().map_or(0.0, |s| s.0);
    let bin = |x: f64| ((x - first) / BIN_WIDTH) as usize;
    let mut bins = vec![0.0; samples.last().map_or(0, |s| bin(s.0)) + 1];
    for (x, c) in samples {
        bins[bin(*x)] += *c as f64;
    }
    (0..bins.len())
        .map(|i| {
            let around = &bins[i.saturating_sub(1)..(i + 2).min(bins.len())];
            around.iter().sum::<f64>() / 3.0
        })
        .collect()
}

/// The modes of the round trips recorded in `hist` (µs): the samples are
/// split in two on the log scale where the variance between the two
/// groups is largest (Otsu's threshold), and the two groups are called two
/// modes when the smaller holds at least 5% of the samples, their medians
/// are 1.5× apart or more, and the sample density has a valley between
/// their two peaks at most half as high as the lower peak.
pub fn modes(hist: &Histogram<u64>) -> Modes {
    let samples: Vec<(f64, u64)> = hist
        .iter_recorded()
        .map(|v| {
            (
                (v.value_iterated_to().max(1) as f64).ln(),
                v.count_at_value(),
            )
        })
        .collect();
    let one_mode = |split_us| Modes {
        modes: vec![Mode {
            median_us: median_us(&samples),
            share: 1.0,
        }],
        bimodal: false,
        split_us,
    };
    let total = count(&samples);
    if samples.len() < 2 || total == 0 {
        return one_mode(0);
    }
    // Otsu: the cut maximising w0·w1·(m0 − m1)², with running sums.
    let s_all: f64 = samples.iter().map(|(x, c)| x * *c as f64).sum();
    let (mut w0, mut s0) = (0.0, 0.0);
    let mut best = (f64::NEG_INFINITY, 1);
    for cut in 1..samples.len() {
        let (x, c) = samples[cut - 1];
        w0 += c as f64;
        s0 += x * c as f64;
        let w1 = total as f64 - w0;
        let between = w0 * w1 * (s0 / w0 - (s_all - s0) / w1).powi(2);
        if between > best.0 {
            best = (between, cut);
        }
    }
    let cut = best.1;
    let (low, high) = (&samples[..cut], &samples[cut..]);
    let split_us = samples[cut].0.exp().round() as u64;
    let share = |g: &[(f64, u64)]| count(g) as f64 / total as f64;
    let (fast, slow) = (median_us(low), median_us(high));
    let dense = density(&samples);
    let cut_bin = ((samples[cut].0 - samples[0].0) / BIN_WIDTH) as usize;
    // The highest bin on each side of the cut: (height, bin).
    let peak = |bins: std::ops::Range<usize>| {
        bins.map(|i| (dense[i], i))
            .fold((0.0, 0), |best, b| if b.0 > best.0 { b } else { best })
    };
    let (low_peak, high_peak) = (peak(0..cut_bin), peak(cut_bin..dense.len()));
    let valley = dense[low_peak.1..=high_peak.1.max(low_peak.1)]
        .iter()
        .copied()
        .fold(f64::INFINITY, f64::min);
    let bimodal = share(low).min(share(high)) >= MIN_MODE_SHARE
        && slow as f64 >= fast as f64 * MIN_MODE_RATIO
        && valley <= MAX_VALLEY * low_peak.0.min(high_peak.0);
    if !bimodal {
        return one_mode(split_us);
    }
    Modes {
        modes: vec![
            Mode {
                median_us: fast,
                share: round2(share(low)),
            },
            Mode {
                median_us: slow,
                share: round2(share(high)),
            },
        ],
        bimodal,
        split_us,
    }
}

fn round2(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Seeded;
    use crate::stats::{histogram, record};

    const STAT: &str = "cpu  100 0 50 800 10 0 0 40 0 0\n\
                        cpu0 60 0 30 390 5 0 0 15 0 0\n\
                        cpu1 40 0 20 410 5 0 0 25 0 0\n\
                        intr 12345\n";

    #[test]
    fn proc_stat_lines_give_total_idle_and_steal() {
        let cpus = parse_proc_stat(STAT);
        assert_eq!(cpus.len(), 3);
        assert_eq!(
            cpus["cpu"],
            CpuTicks {
                total: 1000,
                idle: 810,
                steal: 40
            }
        );
    }

    #[test]
    fn cpu_use_is_the_share_of_the_ticks_in_between() {
        let before = parse_proc_stat(STAT);
        let after =
            parse_proc_stat("cpu  200 0 100 1500 10 0 0 190 0 0\ncpu0 60 0 30 390 5 0 0 15 0 0\n");
        let used = cpu_use(&before, &after);
        // 1000 ticks in between: 150 stolen, 700 idle.
        assert_eq!(
            used,
            [CpuUse {
                cpu: "all".to_string(),
                steal_pct: 15.0,
                busy_pct: 30.0
            }]
        );
    }

    /// `n` round trips around `median_us`, log-normal with spread `sigma`.
    fn around(rng: &mut Seeded, hist: &mut Histogram<u64>, n: usize, median_us: f64, sigma: f64) {
        for _ in 0..n {
            let (u1, u2) = (rng.unit().max(1e-12), rng.unit());
            let z = (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos();
            record(hist, (median_us * (sigma * z).exp()).round() as u64);
        }
    }

    /// The modes of round trips drawn with `seed` from log-normal `parts`,
    /// each `(n, median_us, sigma)` as [`around`] takes them.
    fn modes_of(seed: u64, parts: &[(usize, f64, f64)]) -> Modes {
        let (mut rng, mut hist) = (Seeded::new(seed), histogram());
        for &(n, median_us, sigma) in parts {
            around(&mut rng, &mut hist, n, median_us, sigma);
        }
        modes(&hist)
    }

    #[test]
    fn two_modes_of_the_round_trip_are_found_with_their_shares() {
        let m = modes_of(1, &[(6_000, 35.0, 0.1), (4_000, 112.0, 0.1)]);
        assert!(m.bimodal, "{m:?}");
        let [fast, slow] = m.modes[..] else {
            panic!("{m:?}")
        };
        assert!((33..=37).contains(&fast.median_us), "{m:?}");
        assert!((106..=118).contains(&slow.median_us), "{m:?}");
        assert!((fast.share - 0.6).abs() < 0.02, "{m:?}");
        assert!((35..=112).contains(&m.split_us), "{m:?}");
    }

    #[test]
    fn one_mode_with_a_long_thin_tail_is_not_two_modes() {
        let m = modes_of(2, &[(9_900, 57.0, 0.15), (100, 3_000.0, 0.3)]);
        assert!(!m.bimodal, "{m:?}");
        assert_eq!(m.modes.len(), 1);
        assert!((54..=60).contains(&m.modes[0].median_us), "{m:?}");
    }

    #[test]
    fn one_wide_mode_is_not_two_modes() {
        assert!(!modes_of(3, &[(10_000, 60.0, 0.4)]).bimodal);
        assert!(!modes(&histogram()).bimodal);
    }
}
