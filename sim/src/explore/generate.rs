//! The swarm generator: a seed in, a [`Case`] out.
//!
//! Swarm testing (Groce et al., 2012): rather than every case drawing a
//! little of every fault, each case first picks a random *subset* of the
//! fault kinds (each kind in or out with even odds) and then draws one to
//! four faults from that subset only, each with its own timing (a time, or
//! a fault point of some client's n-th lock cycle), target and size. The
//! timing is swarmed too: each case has its own share of aimed faults
//! (20, 50 or 90 %) and its own subset of fault points to aim at. The
//! workload is drawn the same way: a TTL, a few clients with their own
//! critical sections, cycles, think times and start offsets, sometimes
//! nested acquires; the topology follows the rung (Redlock: 3 or 5
//! independent masters; the single-node rungs: a master with replicas when
//! failover is in the subset).
//!
//! Everything comes from one ChaCha8 stream seeded by the case's seed, so a
//! seed names its case for ever (as long as this file does not change).
//! With [`FaultMode::Assumed`] every choice is bounded by the rung's
//! [`Assumptions`], and a final pass drops faults until the case is admitted.

use super::assumptions::{Assumptions, Budget, assumptions, round_trips};
use super::case::Case;
use super::kinds::{FaultKind, FaultMode};
use locks::FaultPoint;
use model::fault::{Draw, FaultAction, FaultSpec, Scene, Swarm};
use model::host::Host;
use model::scenario::Persistence;
use model::scenario::{ClientGroup, LockSpec, Topology, TopologyKind};

/// Seeds must stay below 2^53 (JSON readers keep them exact).
pub const SEED_LIMIT: u64 = 1 << 53;

/// The fault points the search aims at: every point a single-node rung
/// passes.
const DRAWN_POINTS: [FaultPoint; 5] = [
    FaultPoint::AcquireMid,
    FaultPoint::AfterAcquire,
    FaultPoint::BeforeWrite,
    FaultPoint::ReleaseStart,
    FaultPoint::ReleaseMid,
];

/// The points of a multi-node rung (Redlock and the libraries that
/// implement it): every point, `acquire-reply` included, passed as each
/// master's reply to a round comes in, so that a fault lands between the
/// replies of a quorum (its pass, `on.nth`, is drawn among the masters).
const ROUND_POINTS: [FaultPoint; 6] = FaultPoint::ALL;

/// Builds the case of `seed` for `rung` under `mode`. `rung` must be
/// a rung id (checked by the caller).
pub fn generate(rung: &str, mode: &FaultMode, seed: u64) -> Case {
    let mut d = Draw::from_seed(seed ^ 0x6c6f_636b_6c61_6221);
    let assumed = match mode {
        FaultMode::Assumed => assumptions(rung),
        _ => None,
    };
    let a = assumed.as_ref();
    let properties = locks::rung(rung);
    let multi_node = properties.is_some_and(|r| r.multi_node);

    // Swarm: a random subset of the allowed kinds.
    let subset: Vec<FaultKind> = mode
        .kinds()
        .into_iter()
        .filter(|k| a.is_none_or(|a| a.allows_kind(*k)))
        .filter(|_| d.chance(50))
        .collect();
    let swarm = draw_swarm(&mut d, multi_node);
    let failover = subset.contains(&FaultKind::Failover);
    let service = properties.map_or("redis", |r| r.service);
    let (lock, topology) = match service {
        "redis" => {
            let lock = draw_lock(&mut d);
            (lock, draw_topology(&mut d, multi_node, failover))
        }
        other => (
            draw_service_lock(&mut d, other),
            draw_service_topology(&mut d, other, failover),
        ),
    };
    let budget = a.and_then(|a| a.budget_ms(lock.ttl_ms));
    let clients = draw_clients(&mut d, a, lock.ttl_ms, budget);
    let mut case = Case {
        rung: rung.to_string(),
        seed,
        topology,
        lock,
        clients,
        fenced: properties.is_some_and(|r| r.fencing),
        faults: Vec::new(),
    };
    if !subset.is_empty() {
        draw_faults(&mut d, &mut case, &subset, a, budget, &swarm);
    }
    case
}

/// Swarm over timing too: how often faults are aimed at fault points,
/// and at which points.
fn draw_swarm(d: &mut Draw, multi_node: bool) -> Swarm {
    let drawn: &[FaultPoint] = if multi_node {
        &ROUND_POINTS
    } else {
        &DRAWN_POINTS
    };
    let mut points: Vec<FaultPoint> = drawn.iter().copied().filter(|_| d.chance(50)).collect();
    if points.is_empty() {
        points.push(d.pick(drawn));
    }
    Swarm {
        aim_percent: d.pick(&[20u64, 50, 90]),
        points,
    }
}

/// The lock's parameters.
fn draw_lock(d: &mut Draw) -> LockSpec {
    let ttl_ms = d.pick(&[300u64, 500, 1_000, 2_000]);
    let response_timeout_ms = d.pick(&[200u64, 500]);
    LockSpec {
        ttl_ms,
        max_wait_ms: 0,
        retry_ms: d.pick(&[5u64, 20, 50]),
        node_timeout_ms: 50,
        response_timeout_ms,
        ..LockSpec::default()
    }
}

/// The deployment: Redlock's independent masters, a master with replicas
/// when failover may be drawn, else one node.
fn draw_topology(d: &mut Draw, multi_node: bool, failover: bool) -> Topology {
    let persistence = d.pick(&[
        Persistence::None,
        Persistence::AofEverysec,
        Persistence::AofAlways,
    ]);
    if multi_node {
        Topology {
            kind: TopologyKind::Independent,
            masters: d.pick(&[3usize, 5]),
            persistence,
            ..Topology::default()
        }
    } else if failover {
        Topology {
            kind: TopologyKind::Replicated,
            replicas: d.range(1, 2) as usize,
            replication_delay_ms: d.pick(&[0u64, 20, 100, 300, 1_000]),
            persistence,
            ..Topology::default()
        }
    } else {
        Topology {
            persistence,
            ..Topology::default()
        }
    }
}

/// The lock's parameters on a service other than Redis: etcd's leases are
/// whole seconds (a TTL of 300 ms would be a 1 s lease, and its budget
/// wrong), ZooKeeper's session timeout and the databases' row TTL are
/// drawn from the same seconds.
fn draw_service_lock(d: &mut Draw, service: &str) -> LockSpec {
    let ttl_ms = match service {
        "etcd" | "zookeeper" => d.pick(&[1_000u64, 2_000, 3_000]),
        _ => d.pick(&[500u64, 1_000, 2_000, 5_000]),
    };
    LockSpec {
        ttl_ms,
        max_wait_ms: 0,
        retry_ms: d.pick(&[5u64, 20, 50]),
        node_timeout_ms: 50,
        response_timeout_ms: d.pick(&[200u64, 500]),
        ..LockSpec::default()
    }
}

/// The deployment of a service other than Redis: etcd and ZooKeeper run
/// an ensemble of three or five members (one when drawn so); PostgreSQL
/// a primary with a hot standby when failover may be drawn; MariaDB one
/// server. These services sync every write they acknowledge before they
/// answer, which the deployment says as Redis's `aof-always` (a restart
/// keeps what was acknowledged; the services themselves read nothing of
/// the setting).
fn draw_service_topology(d: &mut Draw, service: &str, failover: bool) -> Topology {
    let durable = Topology {
        persistence: Persistence::AofAlways,
        ..Topology::default()
    };
    match service {
        "etcd" | "zookeeper" if d.chance(85) => Topology {
            kind: TopologyKind::Cluster,
            members: Some(d.pick(&[3usize, 5])),
            ..durable
        },
        "postgres" if failover => Topology {
            kind: TopologyKind::Replicated,
            replicas: 1,
            replication_delay_ms: d.pick(&[0u64, 20, 100, 300, 1_000]),
            ..durable
        },
        _ => durable,
    }
}

/// The workload: a few clients, each its own group, within the budget.
fn draw_clients(
    d: &mut Draw,
    a: Option<&Assumptions>,
    ttl: u64,
    budget: Option<u64>,
) -> Vec<ClientGroup> {
    let max_clients = a.map_or(6, |a| a.max_clients.min(6));
    let n_clients = if max_clients <= 1 {
        1
    } else {
        d.range(2, max_clients as u64) as usize
    };
    let long_work = d.chance(40);
    let nested_ok = a.is_none_or(|a| a.nested);
    let nesting = nested_ok && d.chance(15);
    let lease_budget = a.is_some_and(|a| a.budget == Budget::Lease);
    let mut clients = Vec::new();
    for _ in 0..n_clients {
        let writes = d.range(1, 2) as u32;
        let cs = match (lease_budget, budget) {
            // Half the budget at most for the work itself.
            (true, Some(b)) => {
                let per = (b / 2 / u64::from(writes)).saturating_sub(4);
                d.scale(0, per)
            }
            _ if long_work => d.scale(ttl / 4, 2 * ttl),
            _ => d.scale(0, ttl / 5),
        };
        clients.push(ClientGroup {
            count: 1,
            cycles: d.range(1, 4) as u32,
            critical_section_ms: cs,
            think_ms: d.scale(0, 50),
            start_ms: d.scale(0, ttl),
            nested: nesting && d.chance(50),
            writes,
            pool_connections: None,
            mode: model::scenario::LockMode::Exclusive,
        });
    }
    clients
}

/// One to four faults from the subset; with assumptions, each kept only
/// if the case stays within them.
fn draw_faults(
    d: &mut Draw,
    case: &mut Case,
    subset: &[FaultKind],
    a: Option<&Assumptions>,
    budget: Option<u64>,
    swarm: &Swarm,
) {
    let n = d.range(1, 4);
    // Pauses and delays share what the workload left of the budget.
    let left = budget.map(|b| b.saturating_sub(a.map_or(0, |a| a.spent_ms(case))));
    let clients = case.clients.clone();
    let writes = clients.iter().map(|c| c.writes).max().unwrap_or(1);
    let scene = Scene {
        clients: &clients,
        nodes: case.topology.nodes(),
        ttl_ms: case.lock.ttl_ms,
        response_timeout_ms: case.lock.response_timeout_ms,
        persistence: case.topology.persistence,
        cycle_round_trips: round_trips(writes),
        share_ms: left.map(|l| l / n),
        bounds: a.map(|a| a.bounds(case.lock.ttl_ms)),
    };
    for _ in 0..n {
        let kind = d.pick(subset);
        if let Some(f) = FaultSpec::draw(kind, d, &scene, swarm) {
            // One crash per host: a crash of a host that is already
            // down, or a restart of one that is up, is no schedule a
            // machine can have.
            if crashed_host(&f).is_some()
                && case
                    .faults
                    .iter()
                    .any(|g| crashed_host(g) == crashed_host(&f))
            {
                continue;
            }
            case.faults.push(f);
            // Within the assumptions, or not at all.
            if a.is_some_and(|a| a.admits(case).is_err()) {
                case.faults.pop();
            }
        }
    }
}

/// The host a crash (or a failover: the first master) takes down.
fn crashed_host(fault: &FaultSpec) -> Option<Host> {
    match fault.action {
        FaultAction::Crash(_) => fault.target_host(),
        FaultAction::Failover(_) => Some(Host::Node(0)),
        _ => None,
    }
}
