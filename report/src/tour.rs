//! The tour's text (`locklab tour`): each rung told from its live runs
//! (what it fixes, its flaw, the scenario that breaks it, the timeline of
//! the break, the next rung under the same fault), then each library
//! rung's chapter. The engine makes the runs; these functions tell them.

use crate::output::TIMELINE_WIDTH;
use crate::timeline;
use judge::check::{Check, Checker};
use judge::judged::Judged;
use model::history::{EventKind, Op, Outcome};
use model::scenario::Scenario;
use std::fmt::Write as _;

/// One stop of the tour, as it is told.
#[derive(Debug, Clone, Copy)]
pub struct Stop<'a> {
    /// The rung.
    pub rung: &'a locks::Rung,
    /// The name of the scenario that breaks it.
    pub scenario: &'a str,
    /// The rung in that scenario.
    pub broken: &'a Judged,
    /// The next rung in the same scenario, when the scenario names it.
    pub next: Option<&'a Judged>,
}

/// One library rung's chapter, as it is told.
#[derive(Debug, Clone, Copy)]
pub struct LibraryStop<'a> {
    /// The library rung.
    pub rung: &'a locks::Rung,
    /// Each scenario naming it (by name), and the rung judged there.
    pub runs: &'a [(String, Judged)],
}

/// The finding to show: the damage to the resource first (what a user
/// sees), then mutual exclusion, then liveness.
fn first_finding(judged: &Judged) -> String {
    let mut checks = judged.results.all();
    checks.sort_by_key(|(checker, _)| match checker {
        Checker::Resource => 0,
        Checker::MutualExclusion => 1,
        Checker::Liveness => 2,
    });
    checks
        .into_iter()
        .find_map(|(name, check)| match check {
            Check::Invalid { why, .. } if judged.results.decides(name) => {
                Some(format!("{name}: {why}"))
            }
            _ => None,
        })
        .unwrap_or_else(|| survived(judged))
}

/// Hand-offs from which a safe stop names what waiting cost: a crowd
/// waited its turn there, and how many waiters each hand-off woke is the
/// lesson (one per hand-off, or the whole herd). Below it the figure
/// would only clutter the line.
const CROWD_HANDOFFS: u64 = 10;

/// How a rung that came out safe got through: what the holders saw, and
/// what the lock or the store refused.
fn survived(judged: &Judged) -> String {
    let (mut refused_writes, mut lost_leases, mut failed_releases) = (0, 0, 0);
    for event in judged.history.events() {
        if let EventKind::Complete { op, outcome, .. } = &event.kind
            && *outcome == Outcome::Fail
        {
            match op {
                Op::Write => refused_writes += 1,
                Op::Check => lost_leases += 1,
                Op::Release => failed_releases += 1,
                _ => {}
            }
        }
    }
    let mut notes = Vec::new();
    if judged.results.mutual_exclusion.is_invalid()
        && !judged.results.decides(Checker::MutualExclusion)
    {
        notes.push("holders overlapped (information only)".to_string());
    }
    if refused_writes > 0 {
        notes.push(format!("the store refused {refused_writes} stale write(s)"));
    }
    if lost_leases > 0 {
        notes.push(format!(
            "{lost_leases} holder(s) found their lease gone before writing and stayed out"
        ));
    }
    if failed_releases > 0 {
        notes.push(format!(
            "{failed_releases} release(s) found the lock no longer theirs and left it alone"
        ));
    }
    let waiting = &judged.results.damage.waiting;
    if let Some(per) = waiting.wakeups_per_handoff
        && waiting.handoffs >= CROWD_HANDOFFS
    {
        notes.push(format!(
            "{} hand-offs, {per:.1} wake-up(s) each",
            waiting.handoffs
        ));
    }
    if notes.is_empty() {
        "every checker passed".to_string()
    } else {
        format!("every checker passed: {}", notes.join("; "))
    }
}

/// Renders one stop as text; `file` is the path of the stop's scenario
/// file as the reader would open it (`scenarios/libraries/NAME.toml` for
/// one in a subfolder).
pub fn render_stop(stop: &Stop<'_>, scenarios: &[Scenario], file: &str) -> String {
    let mut out = String::new();
    let rung = stop.rung;
    let _ = writeln!(out, "━━ rung {}: {} ━━", rung.number, rung.id);
    let _ = writeln!(out, "acquire: {}", rung.acquire);
    let _ = writeln!(out, "release: {}", rung.release);
    let _ = writeln!(out, "fixes:   {}", rung.fixes);
    let _ = writeln!(out, "flaw:    {}", rung.flaw);
    let description = scenarios
        .iter()
        .find(|s| s.name == stop.scenario)
        .map(|s| {
            s.description
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ")
        })
        .unwrap_or_default();
    let _ = writeln!(out, "\nthe fault: {file}");
    let _ = writeln!(out, "  {description}");
    let _ = writeln!(
        out,
        "\n{} → {} (seed {})\n  {}",
        rung.id,
        stop.broken.verdict.as_str().to_uppercase(),
        stop.broken.seed,
        first_finding(stop.broken)
    );
    out.push_str(&timeline::ascii(&stop.broken.history, TIMELINE_WIDTH));
    if let Some(next) = stop.next {
        let _ = writeln!(
            out,
            "\nthe next rung, {}, under the same fault → {}\n  {}",
            next.rung,
            next.verdict.as_str().to_uppercase(),
            first_finding(next)
        );
        out.push_str(&timeline::ascii(&next.history, TIMELINE_WIDTH));
    }
    out.push('\n');
    out
}

/// The heading of the libraries chapter.
pub const LIBRARIES_HEADING: &str = "━━ libraries ━━\n\
     The locks people deploy, modelled from each library's own algorithm, under the \
     faults their users reported (scenarios/libraries/) and the ladder's: which \
     faults each survives, and why.\n";

/// The heading of the etcd chapter.
pub const ETCD_HEADING: &str = "━━ etcd ━━\n\
     The same question on etcd: a lease that the client keeps alive instead of a TTL \
     to guess, a revision on every key that only grows, and a watch on the key ahead \
     instead of polling (scenarios/etcd/), on a cluster that survives its leader's \
     crash. What that fixes, and what it does not: a lease still ends while its \
     holder is paused or cut off (with its member, when the majority is on the other \
     side), and etcd 3.4's Mutex tells a waiter whose lease ended that it holds the \
     lock.\n";

/// The heading of the ZooKeeper chapter.
pub const ZOOKEEPER_HEADING: &str = "━━ ZooKeeper ━━\n\
     The lock service built for the job: a session kept alive by the client's pings, \
     ephemeral nodes that go with it, sequential nodes that line the waiters up, and a \
     watch on the node just ahead (scenarios/zookeeper/), on an ensemble that survives \
     its leader's crash. What that fixes, and what it does not: a session is a lease, \
     so it still ends under a holder that is paused or cut off; a create whose reply \
     was lost leaves the recipe waiting behind its own node; only a client that \
     watches its connection state stops writing when it may have lost the lock; and \
     even that client is fooled when its own server, cut off from the leader, goes on \
     answering it after the leader ended its session.\n";

/// The heading of the databases chapter.
pub const DATABASES_HEADING: &str = "━━ databases ━━\n\
     Where many teams start: the PostgreSQL or MySQL they already run \
     (scenarios/databases/). A row under a unique key is committed, so it outlives \
     its holder's connection and the server's restarts, and a holder that dies \
     leaves it for ever; an expiry column and a reaper bring back every lease \
     problem. An advisory lock, like MariaDB's named lock (GET_LOCK), belongs to \
     a session and lives in the server's memory: it goes the moment its holder's \
     connection does, which frees a dead holder's lock at once and a working \
     holder's lock with no warning when the server restarts. Neither is a lease the \
     server can end while a holder is silent: a cut that reaps a row leaves an \
     advisory lock alone.\n";

/// Renders one library's chapter: what it does, then one line per
/// scenario: the verdict and its reason (the finding, or how it got
/// through).
pub fn render_library_stop(stop: &LibraryStop<'_>) -> String {
    let mut out = String::new();
    let rung = stop.rung;
    let _ = writeln!(out, "── {} ──", rung.id);
    let _ = writeln!(out, "acquire: {}", rung.acquire);
    let _ = writeln!(out, "release: {}", rung.release);
    let _ = writeln!(out, "flaw:    {}", rung.flaw);
    let width = stop
        .runs
        .iter()
        .map(|(name, _)| name.len())
        .max()
        .unwrap_or(0);
    for (name, judged) in stop.runs {
        let _ = writeln!(
            out,
            "  {name:<width$}  {:<8}  {}",
            judged.verdict.as_str().to_uppercase(),
            first_finding(judged)
        );
    }
    out.push('\n');
    out
}
