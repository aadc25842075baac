//! How fast the simulator and the search run: the figures that decide how
//! much of the space a user can search.
//!
//! The *standard case* is Redlock on 5 independent masters with 8 clients
//! contending for 30 simulated seconds (short critical sections, so the
//! lock changes hands all the time). [`standard_case`] measures it;
//! [`search_rate`] measures a plain search's cases per second; the
//! [`client_sweep`] measures how the cost grows with the clients.

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
            pool_connections: None,
            mode: model::scenario::LockMode::Exclusive,
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

/// The clients of the sweep's points.
pub const SWEEP_CLIENTS: [usize; 3] = [16, 64, 256];

/// Simulated seconds of each point of the sweep.
pub const SWEEP_SIM_S: u64 = 5;

/// The sweep's scenario with `clients` clients: standalone Redis,
/// `set-nx-px` with a 1 s lease, every client one lock cycle with a 100 ms
/// critical section, all starting at once, for [`SWEEP_SIM_S`] simulated
/// seconds (most clients are still waiting when it ends: the cost is the
/// crowd's, not the lock's turns).
pub fn sweep_scenario(clients: usize) -> Scenario {
    Scenario {
        name: format!("speed-sweep-{clients}"),
        description: format!("set-nx-px on one node, {clients} clients, one cycle each"),
        rungs: vec!["set-nx-px".into()],
        duration_ms: SWEEP_SIM_S * 1_000,
        topology: Topology::default(),
        lock: LockSpec {
            ttl_ms: 1_000,
            ..LockSpec::default()
        },
        clients: vec![ClientGroup {
            count: clients,
            cycles: 1,
            critical_section_ms: 100,
            think_ms: 0,
            start_ms: 0,
            nested: false,
            writes: 1,
            pool_connections: None,
            mode: model::scenario::LockMode::Exclusive,
        }],
        ..standard_scenario()
    }
}

/// One point of the sweep.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SweepPoint {
    /// Clients.
    pub clients: usize,
    /// Wall time of the run, s.
    pub wall_s: f64,
    /// Simulated seconds.
    pub sim_s: f64,
    /// Events in its history.
    pub events: usize,
}

impl SweepPoint {
    /// Wall µs per history event.
    pub fn us_per_event(&self) -> f64 {
        self.wall_s * 1e6 / self.events.max(1) as f64
    }

    /// Wall µs per client per simulated second.
    pub fn us_per_client_s(&self) -> f64 {
        self.wall_s * 1e6 / (self.clients as f64 * self.sim_s.max(1e-9))
    }
}

/// Runs the sweep's scenario with `clients` clients once (seed 1).
pub fn sweep_point(clients: usize) -> Result<SweepPoint, String> {
    let scenario = sweep_scenario(clients);
    let t0 = Instant::now();
    let out = crate::run::run(&scenario, "set-nx-px", 1).map_err(|e| e.to_string())?;
    Ok(SweepPoint {
        clients,
        wall_s: t0.elapsed().as_secs_f64(),
        sim_s: out.sim_elapsed.as_secs_f64(),
        events: out.history.events().len(),
    })
}

/// The exponent `k` of the best fit of wall time ∝ clients^k over the
/// points (least squares on the logarithms); `None` with fewer than two
/// distinct client counts.
pub fn fitted_exponent(points: &[SweepPoint]) -> Option<f64> {
    let logs: Vec<(f64, f64)> = points
        .iter()
        .filter(|p| p.clients > 0 && p.wall_s > 0.0)
        .map(|p| ((p.clients as f64).ln(), p.wall_s.ln()))
        .collect();
    let n = logs.len() as f64;
    let mean_x = logs.iter().map(|(x, _)| x).sum::<f64>() / n;
    let mean_y = logs.iter().map(|(_, y)| y).sum::<f64>() / n;
    let sxx: f64 = logs.iter().map(|(x, _)| (x - mean_x).powi(2)).sum();
    let sxy: f64 = logs.iter().map(|(x, y)| (x - mean_x) * (y - mean_y)).sum();
    (logs.len() >= 2 && sxx > 0.0).then(|| sxy / sxx)
}

/// Wall time of `f`, for phase timing.
pub fn time<T>(f: impl FnOnce() -> T) -> (T, Duration) {
    let t = Instant::now();
    let v = f();
    (v, t.elapsed())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(clients: usize, wall_s: f64) -> SweepPoint {
        SweepPoint {
            clients,
            wall_s,
            sim_s: 5.0,
            events: 100,
        }
    }

    #[test]
    fn the_fitted_exponent_of_a_square_law_is_two() {
        let points = [point(16, 1.0), point(64, 16.0), point(256, 256.0)];
        let k = fitted_exponent(&points).expect("a fit");
        assert!((k - 2.0).abs() < 1e-9, "{k}");
    }

    #[test]
    fn one_client_count_has_no_fitted_exponent() {
        assert_eq!(fitted_exponent(&[point(16, 1.0), point(16, 2.0)]), None);
        assert_eq!(fitted_exponent(&[]), None);
    }

    #[test]
    fn each_sweep_point_is_a_valid_scenario_with_its_client_count() {
        for clients in SWEEP_CLIENTS {
            let text = model::scenario_text::scenario_toml(&sweep_scenario(clients), "sweep");
            let scenario = Scenario::parse(&text, "sweep.toml", "sweep")
                .unwrap_or_else(|e| panic!("{clients} clients: {e}"));
            assert_eq!(scenario.client_count(), clients);
            assert_eq!(scenario.duration_ms, SWEEP_SIM_S * 1_000);
        }
    }
}
