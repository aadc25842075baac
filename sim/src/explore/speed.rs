//! How fast the simulator and the search run: the figures that decide how
//! much of the space a user can search.
//!
//! The *standard case* is Redlock on 5 independent masters with 8 clients
//! contending for 30 simulated seconds (short critical sections, so the
//! lock changes hands all the time). [`standard_case`] measures it;
//! [`search_rate`] measures a plain search's cases per second.

use super::kinds::FaultMode;
use super::search::{Limit, SearchConfig, search};
use model::scenario::{ClientGroup, LockSpec, Scenario, Topology, TopologyKind};
use std::time::{Duration, Instant};

/// The standard case: Redlock, 5 masters, 8 clients, 30 simulated seconds.
pub fn standard_scenario() -> Scenario {
    Scenario {
        name: "speed-standard".into(),
        description: "Redlock on 5 masters, 8 clients, 30 simulated seconds".into(),
        rungs: vec!["redlock".into()],
        seeds: vec![1],
        duration_ms: 30_000,
        topology: Topology {
            kind: TopologyKind::Independent,
            masters: 5,
            ..Topology::default()
        },
        topology_for: Default::default(),
        network: Default::default(),
        lock: LockSpec {
            ttl_ms: 1_000,
            max_wait_ms: 30_000,
            ..LockSpec::default()
        },
        clients: vec![ClientGroup {
            count: 8,
            cycles: 100_000,
            critical_section_ms: 5,
            think_ms: 5,
            start_ms: 0,
            nested: false,
            writes: 1,
        }],
        resource: model::resource::ResourceSpec {
            kind: model::resource::ResourceKind::Inventory,
            stock: 1_000_000,
        },
        faults: Vec::new(),
        faults_for: Default::default(),
        resource_for: Default::default(),
        expect: Default::default(),
        liveness_bound_ms: None,
        notes: Vec::new(),
    }
}

/// One measurement of the standard case.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StandardRun {
    /// Wall time of the run alone.
    pub run_s: f64,
    /// Wall time of judging its history.
    pub check_s: f64,
    /// Simulated seconds.
    pub sim_s: f64,
    /// Events in its history.
    pub events: usize,
}

impl StandardRun {
    /// Simulated seconds per wall second, run and checks together.
    pub fn sim_per_wall(&self) -> f64 {
        self.sim_s / (self.run_s + self.check_s)
    }

    /// Standard cases per wall second.
    pub fn cases_per_s(&self) -> f64 {
        1.0 / (self.run_s + self.check_s)
    }
}

/// Runs the standard case once with `seed`.
pub fn standard_case(seed: u64) -> Result<StandardRun, String> {
    let scenario = standard_scenario();
    let t0 = Instant::now();
    let out = crate::run::run(&scenario, "redlock", seed).map_err(|e| e.to_string())?;
    let run_s = t0.elapsed().as_secs_f64();
    let t1 = Instant::now();
    let _ = crate::cell::judge(&scenario, "redlock", &out.history);
    let check_s = t1.elapsed().as_secs_f64();
    Ok(StandardRun {
        run_s,
        check_s,
        sim_s: out.sim_elapsed.as_secs_f64(),
        events: out.history.events().len(),
    })
}

/// A search's rate: (cases per s, simulated s per wall s) over `cases`
/// cases of `rung` with every fault kind, on `workers` threads.
pub fn search_rate(rung: &str, cases: u64, workers: usize) -> (f64, f64) {
    let config = SearchConfig {
        rung: rung.to_string(),
        mode: FaultMode::All,
        limit: Limit::Cases(cases),
        seed: 1,
        shard: (0, 1),
        workers,
        shrink: false,
        shrink_runs: 0,
    };
    let outcome = search(&config, &|_| {});
    (outcome.stats.cases_per_s(), outcome.stats.sim_per_wall())
}

/// Wall time of `f`, for phase timing.
pub fn time<T>(f: impl FnOnce() -> T) -> (T, Duration) {
    let t = Instant::now();
    let v = f();
    (v, t.elapsed())
}
