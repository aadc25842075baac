//! How fast `locklab check` judges a large history, measured in one run,
//! side by side: for each model, a valid history of 100,000 operations in
//! Jepsen's EDN is read (parsed and checked well formed: the floor every
//! judgement pays) and read and judged, the two arms interleaved round by
//! round. The claim: a valid history of 100,000 operations is judged in
//! under 2 s on this machine. Each figure is the median of its rounds with
//! a distribution-free 95% interval for that median (order statistics of
//! the rounds: another run's median is expected within it), and the
//! verdict reads the interval's upper end, not the median.
//!
//! ```text
//! cargo bench -p interchange --bench check_speed
//! ```
//!
//! Writes `reports/check-speed.md`. Environment: `CHECK_ROUNDS` (default
//! 15). Wall-clock time is read only here, around whole judgements.

use interchange::checking::{judge_read, read_history_text};
use interchange::format::Format;
use interchange::judging::Model;
use std::fmt::Write as _;
use std::time::{Duration, Instant};

/// Operations in each history.
const OPS: usize = 100_000;
/// The claim's bound on judging one such history.
const BOUND: Duration = Duration::from_secs(2);
/// Clients taking turns at the lock.
const CLIENTS: u64 = 8;

/// A history being written, one EDN operation a line: the text, the
/// next line's index and the clock.
struct HistoryText {
    out: String,
    lines: usize,
    t_ns: u64,
}

impl HistoryText {
    /// One operation, 1 µs after the one before.
    fn op(&mut self, process: u64, kind: &str, f: &str, value: &str, extra: &str) {
        self.t_ns += 1_000;
        let _ = writeln!(
            self.out,
            "{{:type :{kind}, :f :{f}, :value {value}, :process {process}, :time {}, :index {}{extra}}}",
            self.t_ns, self.lines
        );
        self.lines += 1;
    }
}

/// A valid history of at least [`OPS`] operations for `model`: clients take
/// the lock in turn; while one holds, another's acquire fails; the holder
/// writes with its fencing token (fenced-writes) or adds an element
/// (lock-set); every so often a release times out (`info`) and its client
/// goes on as a new process, its lock released all the same.
fn valid_history(model: Model) -> String {
    let mut h = HistoryText {
        out: String::with_capacity(OPS * 90),
        lines: 0,
        t_ns: 0,
    };
    let mut process: Vec<u64> = (0..CLIENTS).collect();
    let mut cycle = 0u64;
    let mut added = Vec::new();
    while h.lines < OPS {
        let c = (cycle % CLIENTS) as usize;
        let other = ((cycle + 1) % CLIENTS) as usize;
        let fence = format!(", :fence {}", cycle + 1);
        h.op(process[c], "invoke", "acquire", "nil", "");
        h.op(process[c], "ok", "acquire", "nil", &fence);
        h.op(process[other], "invoke", "acquire", "nil", "");
        h.op(process[other], "fail", "acquire", "nil", "");
        match model {
            Model::FencedWrites => {
                let v = cycle.to_string();
                h.op(process[c], "invoke", "write", &v, &fence);
                h.op(process[c], "ok", "write", &v, &fence);
            }
            Model::LockSet => {
                let v = cycle.to_string();
                h.op(process[c], "invoke", "add", &v, "");
                h.op(process[c], "ok", "add", &v, "");
                added.push(v);
            }
            Model::Mutex | Model::OwnerMutex => {}
        }
        h.op(process[c], "invoke", "release", "nil", "");
        if cycle % 97 == 96 {
            // The release took effect but its reply was lost: the client
            // goes on as a new process, as Jepsen's clients do.
            h.op(process[c], "info", "release", "nil", "");
            process[c] += CLIENTS;
        } else {
            h.op(process[c], "ok", "release", "nil", "");
        }
        cycle += 1;
    }
    if model == Model::LockSet {
        let reader = process[0];
        h.op(reader, "invoke", "read", "nil", "");
        let set = format!("#{{{}}}", added.join(" "));
        h.op(reader, "ok", "read", &set, "");
    }
    h.out
}

/// The median of `samples` and a distribution-free 95% interval for it:
/// the order statistics whose ranks the binomial(n, ½) distribution puts
/// 2.5% beyond on each side.
fn median_interval(samples: &[f64]) -> (f64, f64, f64) {
    let mut sorted = samples.to_vec();
    sorted.sort_by(f64::total_cmp);
    let n = sorted.len();
    let median = sorted[n / 2];
    // P(Binomial(n, 1/2) < k) ≤ 2.5%: the largest such k.
    let mut cumulative = 0.0;
    let mut k = 0;
    for i in 0..n {
        cumulative += binomial_half(n, i);
        if cumulative > 0.025 {
            break;
        }
        k = i + 1;
    }
    let low = sorted[k.min(n - 1)];
    let high = sorted[n.saturating_sub(1 + k)];
    (median, low.min(median), high.max(median))
}

/// P(Binomial(n, ½) = i).
fn binomial_half(n: usize, i: usize) -> f64 {
    let mut ln = 0.0;
    for j in 0..i {
        ln += ((n - j) as f64).ln() - ((j + 1) as f64).ln();
    }
    (ln - n as f64 * std::f64::consts::LN_2).exp()
}

fn seconds(d: Duration) -> f64 {
    d.as_secs_f64()
}

fn main() {
    // `cargo test --benches` runs this without `--bench`: measure only
    // under `cargo bench`.
    if !std::env::args().any(|a| a == "--bench") {
        return;
    }
    let rounds: usize = std::env::var("CHECK_ROUNDS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(15);
    let mut report = String::from(
        "# `locklab check` speed\n\nWritten by `cargo bench -p interchange --bench check_speed` \
         (interchange/benches/check_speed.rs). For each model, a valid Jepsen EDN history of \
         100,000 operations (8 clients taking the lock in turn, a failed acquire beside each \
         hold, a release ending `info` every 97 cycles) is read (parsed and checked well \
         formed) and, in the other arm, read and judged; the arms alternate round by round. \
         Each figure is the median of its rounds with a distribution-free 95% interval for \
         the median (another run's median is expected within it); the claim is judged by the \
         interval's upper end.\n\n",
    );
    let _ = writeln!(
        report,
        "| model | rounds | read only, s | read and judged, s | judged / read | under 2 s |\n|---|---:|---:|---:|---:|---|"
    );
    let mut all_met = true;
    for model in Model::ALL {
        let text = valid_history(model);
        let mut read_s = Vec::new();
        let mut judged_s = Vec::new();
        let mut ratios = Vec::new();
        for round in 0..=rounds {
            let started = Instant::now();
            let read = read_history_text("bench.edn", &text, Format::JepsenEdn, None)
                .expect("the generated history reads");
            let read_took = started.elapsed();
            drop(read);
            let started = Instant::now();
            let read = read_history_text("bench.edn", &text, Format::JepsenEdn, None)
                .expect("the generated history reads");
            let judgement = judge_read(&read, Some(model), None).expect("it is judged");
            let judged_took = started.elapsed();
            assert_eq!(
                judgement.verdict,
                model::verdict::Verdict::Safe,
                "{model:?}: the generated history is valid"
            );
            // Round 0 warms the allocator and the caches.
            if round > 0 {
                read_s.push(seconds(read_took));
                judged_s.push(seconds(judged_took));
                ratios.push(seconds(judged_took) / seconds(read_took));
            }
        }
        let (read_median, read_low, read_high) = median_interval(&read_s);
        let (median, low, high) = median_interval(&judged_s);
        let (ratio, ratio_low, ratio_high) = median_interval(&ratios);
        let met = high < seconds(BOUND);
        all_met &= met;
        let _ = writeln!(
            report,
            "| `{}` | {rounds} | {read_median:.3} [{read_low:.3}–{read_high:.3}] | {median:.3} [{low:.3}–{high:.3}] | {ratio:.2} [{ratio_low:.2}–{ratio_high:.2}] | {} |",
            model.name(),
            if met { "yes" } else { "**no**" }
        );
        eprintln!(
            "{}: judged in {median:.3} s [{low:.3}–{high:.3}]",
            model.name()
        );
    }
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .unwrap_or_default()
        .lines()
        .find_map(|l| {
            l.strip_prefix("model name")
                .map(|m| m.trim_start_matches([' ', '\t', ':']).to_string())
        })
        .unwrap_or_else(|| "unknown".into());
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let _ = writeln!(
        report,
        "\nVerdict: {} (each model's interval lies below 2 s: {}).\n\n## Machine\n\n- CPU: {cpu} ({cpus} CPUs online); one thread judges\n- load average when done: {}\n",
        if all_met { "met" } else { "**not met**" },
        if all_met { "yes" } else { "no" },
        load.split_whitespace()
            .take(3)
            .collect::<Vec<_>>()
            .join(" ")
    );
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../reports/check-speed.md");
    std::fs::write(&path, &report).expect("reports/check-speed.md is written");
    print!("{report}");
}
