//! Shrinking a failing case to a small one that still fails the same way:
//! fewer faults, fewer clients, fewer lock cycles, shorter durations.
//!
//! [`simplifications`] lists the one-step simpler neighbours of a case, the
//! boldest first (drop a fault, drop a client, then cut cycles, writes and
//! durations). [`shrink`] walks them greedily: it takes the first
//! neighbour that still fails and starts again from there, until none does
//! or the run budget is spent. The proptest value tree in
//! [`super::strategy`] walks the same neighbours under proptest's own
//! shrinking loop.

use super::case::Case;
use model::scenario::{Scenario, TopologyKind};
use model::scenario_text::scenario_toml;

/// Whether the case maps to a scenario that loads (every host and client
/// it names exists).
pub fn is_valid(case: &Case) -> bool {
    let scenario = case.to_scenario();
    let text = scenario_toml(&scenario, "");
    Scenario::parse(&text, "shrink", "shrink").is_ok()
}

/// The one-step simpler neighbours of a case, boldest first; all valid.
pub fn simplifications(case: &Case) -> Vec<Case> {
    let mut out: Vec<Case> = Vec::new();
    // Fewer faults.
    for i in 0..case.faults.len() {
        let mut c = case.clone();
        c.faults.remove(i);
        out.push(c);
    }
    // Fewer clients.
    if case.clients.len() > 1 {
        for gone in (0..case.clients.len()).rev() {
            let mut c = case.clone();
            c.clients.remove(gone);
            c.faults = case
                .faults
                .iter()
                .filter_map(|f| f.without_client(gone))
                .collect();
            out.push(c);
        }
    }
    // Fewer cycles, writes, nesting; shorter work.
    for (i, client) in case.clients.iter().enumerate() {
        let mut rungs = Vec::new();
        let mut v = client.clone();
        if v.cycles > 1 {
            v.cycles = 1;
            rungs.push(v.clone());
            v = client.clone();
            v.cycles -= 1;
            rungs.push(v.clone());
        }
        for edit in 0..6 {
            let mut v = client.clone();
            match edit {
                0 => v.writes = 1,
                1 => v.nested = false,
                2 => v.think_ms = 0,
                3 => v.start_ms /= 2,
                4 => v.critical_section_ms /= 2,
                _ => v.critical_section_ms = 0,
            }
            rungs.push(v);
        }
        for v in rungs {
            if &v != client {
                let mut c = case.clone();
                c.clients[i] = v;
                out.push(c);
            }
        }
    }
    // Smaller faults.
    for (i, fault) in case.faults.iter().enumerate() {
        for f in fault.simpler() {
            let mut c = case.clone();
            c.faults[i] = f;
            out.push(c);
        }
    }
    // A smaller deployment.
    let mut c = case.clone();
    match c.topology.kind {
        TopologyKind::Independent if c.topology.masters > 3 => c.topology.masters = 3,
        TopologyKind::Replicated if c.topology.replicas > 1 => c.topology.replicas = 1,
        _ => {}
    }
    if c.topology.replication_delay_ms > 0 {
        let mut d = c.clone();
        d.topology.replication_delay_ms /= 2;
        if d != *case {
            out.push(d);
        }
    }
    if c != *case {
        out.push(c);
    }
    out.retain(is_valid);
    out
}

/// Greedy shrinking: `fails` says whether a case still fails the same way.
/// Returns the smallest failing case found and how many runs it took; at
/// most `max_runs` runs.
pub fn shrink(case: &Case, max_runs: usize, mut fails: impl FnMut(&Case) -> bool) -> (Case, usize) {
    let mut current = case.clone();
    let mut runs = 0;
    'outer: loop {
        for candidate in simplifications(&current) {
            if runs >= max_runs {
                break 'outer;
            }
            runs += 1;
            if fails(&candidate) {
                current = candidate;
                continue 'outer;
            }
        }
        break;
    }
    (current, runs)
}
