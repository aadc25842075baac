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
use model::fault::CrashKind;
use model::fault::FaultSpec;
use model::host::Host;
use model::scenario::{Scenario, TopologyKind};
use model::scenario_text::scenario_toml;

/// Renumbers client `host` after client `gone` was removed; `None` when the
/// host was that client.
fn remap_host(host: Host, gone: usize) -> Option<Host> {
    match host.client() {
        Some(n) if n == gone => None,
        Some(n) if n > gone => Some(Host::Client(n - 1)),
        _ => Some(host),
    }
}

fn remap_side(side: &[Host], gone: usize) -> Vec<Host> {
    side.iter().filter_map(|&h| remap_host(h, gone)).collect()
}

/// The fault with client `gone` removed from it, or `None` if the fault
/// was about that client only.
fn remap_fault(fault: &FaultSpec, gone: usize) -> Option<FaultSpec> {
    let mut f = fault.clone();
    let on_ok = |on: &mut Option<model::fault::PointTrigger>| -> bool {
        if let Some(t) = on {
            if t.client == gone {
                return false;
            }
            if t.client > gone {
                t.client -= 1;
            }
        }
        true
    };
    let ok = match &mut f {
        FaultSpec::Pause { on, target, .. } | FaultSpec::Crash { on, target, .. } => {
            let keep_target = match target {
                Some(t) => match remap_host(*t, gone) {
                    Some(n) => {
                        *t = n;
                        true
                    }
                    None => false,
                },
                None => true,
            };
            keep_target && on_ok(on)
        }
        FaultSpec::Partition { on, a, b, .. }
        | FaultSpec::Delay { on, a, b, .. }
        | FaultSpec::SlowLink { on, a, b, .. } => {
            *a = remap_side(a, gone);
            *b = remap_side(b, gone);
            !a.is_empty() && !b.is_empty() && on_ok(on)
        }
        FaultSpec::ClockJump { on, target, .. } | FaultSpec::ClockDrift { on, target, .. } => {
            match remap_host(*target, gone) {
                Some(n) => {
                    *target = n;
                    on_ok(on)
                }
                None => false,
            }
        }
        FaultSpec::Failover { on, .. } => on_ok(on),
    };
    ok.then_some(f)
}

/// Simpler variants of one fault (shorter, earlier, narrower).
fn fault_variants(fault: &FaultSpec) -> Vec<FaultSpec> {
    let mut out = Vec::new();
    let mut push = |f: FaultSpec| {
        if &f != fault {
            out.push(f);
        }
    };
    // Aim at the first cycle; fire at time 0 / half the time.
    {
        let mut f = fault.clone();
        if let FaultSpec::Pause { on: Some(t), .. }
        | FaultSpec::Crash { on: Some(t), .. }
        | FaultSpec::Partition { on: Some(t), .. }
        | FaultSpec::Delay { on: Some(t), .. }
        | FaultSpec::SlowLink { on: Some(t), .. }
        | FaultSpec::ClockJump { on: Some(t), .. }
        | FaultSpec::ClockDrift { on: Some(t), .. }
        | FaultSpec::Failover { on: Some(t), .. } = &mut f
        {
            t.cycle = 1;
        }
        push(f);
    }
    for halve in [false, true] {
        let cut = |x: u64| if halve { x / 2 } else { 0 };
        let mut f = fault.clone();
        if let FaultSpec::Pause {
            at_ms: Some(at), ..
        }
        | FaultSpec::Crash {
            at_ms: Some(at), ..
        }
        | FaultSpec::Partition {
            at_ms: Some(at), ..
        }
        | FaultSpec::Delay {
            at_ms: Some(at), ..
        }
        | FaultSpec::SlowLink {
            at_ms: Some(at), ..
        }
        | FaultSpec::ClockJump {
            at_ms: Some(at), ..
        }
        | FaultSpec::ClockDrift {
            at_ms: Some(at), ..
        }
        | FaultSpec::Failover {
            at_ms: Some(at), ..
        } = &mut f
        {
            *at = cut(*at);
        }
        push(f);
    }
    let mut f = fault.clone();
    match &mut f {
        FaultSpec::Pause { duration_ms, .. } | FaultSpec::Delay { duration_ms, .. } => {
            *duration_ms = (*duration_ms / 2).max(1);
        }
        FaultSpec::Crash {
            restart_after_ms: Some(r),
            ..
        } => *r /= 2,
        FaultSpec::Partition {
            duration_ms: Some(d),
            ..
        }
        | FaultSpec::SlowLink {
            duration_ms: Some(d),
            ..
        } => *d = (*d / 2).max(1),
        FaultSpec::ClockJump { jump_ms, .. } => *jump_ms /= 2,
        FaultSpec::ClockDrift { ppm, .. } => *ppm /= 2,
        FaultSpec::Failover {
            promote_after_ms, ..
        } => *promote_after_ms /= 2,
        _ => {}
    }
    push(f);
    // Narrow a link fault to one host a side; two-way; a plain kill.
    match fault {
        FaultSpec::Partition { a, b, .. }
        | FaultSpec::Delay { a, b, .. }
        | FaultSpec::SlowLink { a, b, .. } => {
            for side_a in [true, false] {
                let len = if side_a { a.len() } else { b.len() };
                for j in 0..len {
                    let mut f = fault.clone();
                    if let FaultSpec::Partition { a, b, .. }
                    | FaultSpec::Delay { a, b, .. }
                    | FaultSpec::SlowLink { a, b, .. } = &mut f
                    {
                        let side = if side_a { a } else { b };
                        if side.len() > 1 {
                            side.remove(j);
                        }
                    }
                    push(f);
                }
            }
        }
        _ => {}
    }
    if let FaultSpec::SlowLink { latency_ms, .. } = fault {
        let mut f = fault.clone();
        if let FaultSpec::SlowLink { latency_ms: l, .. } = &mut f {
            *l = (*latency_ms / 2).max(1);
        }
        push(f);
    }
    if let FaultSpec::Partition { oneway: true, .. } = fault {
        let mut f = fault.clone();
        if let FaultSpec::Partition { oneway, .. } = &mut f {
            *oneway = false;
        }
        push(f);
    }
    if let FaultSpec::Crash { how, .. } = fault
        && *how != CrashKind::ProcessKill
    {
        let mut f = fault.clone();
        if let FaultSpec::Crash { how, .. } = &mut f {
            *how = CrashKind::ProcessKill;
        }
        push(f);
    }
    out
}

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
                .filter_map(|f| remap_fault(f, gone))
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
        for f in fault_variants(fault) {
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
