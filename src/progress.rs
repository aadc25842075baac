//! Progress of the long commands (`suite`, `explore`, `bench`, and any
//! other long run: [`Progress`] is the hook): a bar with the time left on
//! a terminal, else the line-by-line progress on standard error as before.
//!
//! The bar is drawn only when standard error is a terminal and `--json` is
//! off; it is drawn on standard error alone, so it never changes standard
//! output or any file. Where it is not drawn, each step's line is printed
//! as it always was, so logs and tests that read them see no change.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal as _;
use std::time::Duration;

/// What a bar counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// Cells, cases or other steps: `done/total`.
    Steps,
    /// Seconds of a run planned to take `total` seconds.
    Seconds,
}

/// The progress of one long piece of work.
#[derive(Debug)]
pub struct Progress {
    /// The bar, when one is drawn.
    bar: Option<ProgressBar>,
}

impl Progress {
    /// Progress towards `total` units of `unit`, described by `what`: a
    /// bar on a terminal (without `--json`), else nothing drawn.
    pub fn new(what: &str, total: u64, unit: Unit) -> Progress {
        let drawn = std::io::stderr().is_terminal() && !crate::json::active();
        Progress {
            bar: drawn.then(|| bar(what, total, unit)),
        }
    }

    /// Whether a bar is drawn (the caller then prints no progress lines).
    pub fn drawn(&self) -> bool {
        self.bar.is_some()
    }

    /// Moves the bar to `done` units and shows `message` beside it; without
    /// a bar, prints `line` on standard error, as before bars.
    pub fn step(&self, done: u64, message: &str, line: impl FnOnce() -> String) {
        match &self.bar {
            Some(bar) => {
                bar.set_position(done);
                bar.set_message(message.to_string());
            }
            None => eprintln!("{}", line()),
        }
    }

    /// Shows `message` beside the bar, where it stands; without a bar,
    /// prints `line` on standard error.
    pub fn note(&self, message: &str, line: impl FnOnce() -> String) {
        match &self.bar {
            Some(bar) => bar.set_message(message.to_string()),
            None => eprintln!("{}", line()),
        }
    }

    /// Sets the total, for work whose size is known only once it started.
    pub fn set_total(&self, total: u64) {
        if let Some(bar) = &self.bar {
            bar.set_length(total);
        }
    }

    /// Prints `line` on standard error above the bar (or alone without
    /// one): for what must stay readable after the bar is gone.
    pub fn println(&self, line: &str) {
        match &self.bar {
            Some(bar) => bar.println(line),
            None => eprintln!("{line}"),
        }
    }

    /// Removes the bar (the lines printed above it stay).
    pub fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.finish();
    }
}

/// A bar on standard error: what, the bar, done/total, the time left.
fn bar(what: &str, total: u64, unit: Unit) -> ProgressBar {
    let counts = match unit {
        Unit::Steps => "{pos}/{len}",
        Unit::Seconds => "{elapsed}/~{duration}",
    };
    let template = format!("{what} [{{bar:30}}] {counts} ({{eta}} left) {{wide_msg}}");
    let style = ProgressStyle::with_template(&template)
        .unwrap_or_else(|_| ProgressStyle::default_bar())
        .progress_chars("=> ");
    let bar =
        ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr()).with_style(style);
    // Redrawn between steps too, so the time left moves on.
    bar.enable_steady_tick(Duration::from_millis(500));
    bar
}

/// `bench`'s bar: the time spent of the time the run plans to take.
#[derive(Debug)]
pub struct BenchBar(Progress);

impl BenchBar {
    /// The sink for [`bench::BenchOptions::progress`]: a bar when one is
    /// drawn, else `None` (bench prints its lines itself, as before).
    pub fn sink() -> Option<std::sync::Arc<dyn bench::progress::ProgressSink>> {
        let progress = Progress::new("bench", 1, Unit::Seconds);
        progress
            .drawn()
            .then(|| std::sync::Arc::new(BenchBar(progress)) as _)
    }
}

impl bench::progress::ProgressSink for BenchBar {
    fn step(&self, elapsed: Duration, planned: Duration, what: &str) {
        // A run may outlast its plan: the bar then stays full.
        self.0.set_total(planned.max(elapsed).as_secs().max(1));
        self.0.step(elapsed.as_secs(), what, || {
            bench::progress::line(elapsed, what)
        });
    }
}
