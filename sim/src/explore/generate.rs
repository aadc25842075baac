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

use super::assumptions::{
    Assumptions, Budget, ClientLinks, MAX_DRIFT_PPM, assumptions, margin_ms, round_trips,
};
use super::case::Case;
use super::kinds::{FaultKind, FaultMode};
use locks::FaultPoint;
use model::fault::CrashKind;
use model::fault::{FaultSpec, PointTrigger};
use model::host::Host;
use model::scenario::Persistence;
use model::scenario::{ClientGroup, LockSpec, Topology, TopologyKind};
use rand_chacha::ChaCha8Rng;
use rand_core::{Rng, SeedableRng};

/// Seeds must stay below 2^53 (JSON readers keep them exact).
pub const SEED_LIMIT: u64 = 1 << 53;

/// A small drawing helper over the seeded stream.
struct Draw(ChaCha8Rng);

impl Draw {
    fn below(&mut self, n: u64) -> u64 {
        if n <= 1 { 0 } else { self.0.next_u64() % n }
    }
    /// Uniform in `lo..=hi` (`lo` when `hi < lo`).
    fn range(&mut self, lo: u64, hi: u64) -> u64 {
        if hi <= lo {
            lo
        } else {
            lo + self.below(hi - lo + 1)
        }
    }
    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
    fn pick<T: Clone>(&mut self, items: &[T]) -> T {
        items[self.below(items.len() as u64) as usize].clone()
    }
    /// Log-uniform-ish: small values as likely as large ones.
    fn scale(&mut self, lo: u64, hi: u64) -> u64 {
        let hi = hi.max(lo);
        let steps = 8;
        let k = self.below(steps + 1);
        let top = lo + (hi - lo) * k / steps;
        self.range(lo, top.max(lo))
    }
}

/// The fault points the search aims at: every point a single-node rung
/// passes (`acquire-reply`, inside a multi-node round, is left to scenario
/// files; drawing it would also change every case a seed generates).
const DRAWN_POINTS: [FaultPoint; 5] = [
    FaultPoint::AcquireMid,
    FaultPoint::AfterAcquire,
    FaultPoint::BeforeWrite,
    FaultPoint::ReleaseStart,
    FaultPoint::ReleaseMid,
];

/// Builds the case of `seed` for `rung` under `mode`. `rung` must be
/// a rung id (checked by the caller).
pub fn generate(rung: &str, mode: &FaultMode, seed: u64) -> Case {
    let mut d = Draw(ChaCha8Rng::seed_from_u64(seed ^ 0x6c6f_636b_6c61_6221));
    let assumed = match mode {
        FaultMode::Assumed => assumptions(rung),
        _ => None,
    };
    let a = assumed.as_ref();
    let properties = locks::rung(rung);
    let multi_node = properties.is_some_and(|r| r.multi_node);

    // Swarm: a random subset of the allowed kinds.
    let allowed: Vec<FaultKind> = mode
        .kinds()
        .into_iter()
        .filter(|k| a.is_none_or(|a| a.allows_kind(*k)))
        .collect();
    let subset: Vec<FaultKind> = allowed.iter().copied().filter(|_| d.chance(50)).collect();
    // Swarm over timing too: how often faults are aimed at fault points,
    // and at which points.
    let mut points: Vec<FaultPoint> = DRAWN_POINTS.into_iter().filter(|_| d.chance(50)).collect();
    if points.is_empty() {
        points.push(d.pick(&DRAWN_POINTS));
    }
    let swarm = Swarm {
        aim_percent: d.pick(&[20u64, 50, 90]),
        points,
    };

    let ttl = d.pick(&[300u64, 500, 1_000, 2_000]);
    let response_timeout_ms = d.pick(&[200u64, 500]);
    let lock = LockSpec {
        ttl_ms: ttl,
        max_wait_ms: 0,
        retry_ms: d.pick(&[5u64, 20, 50]),
        node_timeout_ms: 50,
        response_timeout_ms,
        ..LockSpec::default()
    };

    let persistence = d.pick(&[
        Persistence::None,
        Persistence::AofEverysec,
        Persistence::AofAlways,
    ]);
    let topology = if multi_node {
        Topology {
            kind: TopologyKind::Independent,
            masters: d.pick(&[3usize, 5]),
            persistence,
            ..Topology::default()
        }
    } else if subset.contains(&FaultKind::Failover) {
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
    };

    // The workload.
    let max_clients = a.map_or(6, |a| a.max_clients.min(6));
    let n_clients = if max_clients <= 1 {
        1
    } else {
        d.range(2, max_clients as u64) as usize
    };
    let long_work = d.chance(40);
    let nested_ok = a.is_none_or(|a| a.nested);
    let nesting = nested_ok && d.chance(15);
    let budget = a.and_then(|a| a.budget_ms(ttl));
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
        });
    }
    let mut case = Case {
        rung: rung.to_string(),
        seed,
        topology,
        lock,
        clients,
        fenced: properties.is_some_and(|r| r.fencing),
        faults: Vec::new(),
    };

    // The faults.
    if !subset.is_empty() {
        let n = d.range(1, 4);
        // Pauses and delays share what the workload left of the budget.
        let left = budget.map(|b| b.saturating_sub(a.map_or(0, |a| a.spent_ms(&case))));
        let share = left.map(|l| l / n);
        for _ in 0..n {
            let kind = d.pick(&subset);
            if let Some(f) = draw_fault(&mut d, &case, kind, a, share, &swarm) {
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
                if a.is_some_and(|a| a.admits(&case).is_err()) {
                    case.faults.pop();
                }
            }
        }
    }
    case
}

/// The host a crash (or a failover: the first master) takes down.
fn crashed_host(fault: &FaultSpec) -> Option<Host> {
    match fault {
        FaultSpec::Crash { .. } => fault.target_host(),
        FaultSpec::Failover { .. } => Some(Host::Node(0)),
        _ => None,
    }
}

/// The per-case timing choices of the swarm.
struct Swarm {
    /// Percent of faults aimed at fault points (the rest fire at a time).
    aim_percent: u64,
    /// The points aimed faults pick from.
    points: Vec<FaultPoint>,
}

/// A non-empty random subset of `items`, in order.
fn some_of(d: &mut Draw, items: &[Host]) -> Vec<Host> {
    let mut out: Vec<Host> = items.iter().filter(|_| d.chance(50)).copied().collect();
    if out.is_empty() {
        out.push(d.pick(items));
    }
    out
}

fn draw_fault(
    d: &mut Draw,
    case: &Case,
    kind: FaultKind,
    a: Option<&Assumptions>,
    share: Option<u64>,
    swarm: &Swarm,
) -> Option<FaultSpec> {
    let ttl = case.lock.ttl_ms;
    let clients: Vec<Host> = (0..case.clients.len()).map(Host::Client).collect();
    let nodes = case.topology.nodes();
    let client = d.below(clients.len() as u64) as usize;

    // When: a fault point of some cycle of some client, or a time.
    let aimed = d.chance(swarm.aim_percent);
    let (mut at_ms, mut on) = (None, None);
    if aimed {
        let cycles = case.clients[client].cycles;
        let mut point = d.pick(&swarm.points);
        if kind == FaultKind::Pause
            && let Some(a) = a
            && a.no_pause_at.contains(&point)
        {
            point = FaultPoint::AfterAcquire;
        }
        on = Some(PointTrigger {
            client,
            cycle: d.range(1, u64::from(cycles)) as u32,
            point,
            nth: 1,
        });
    } else {
        at_ms = Some(d.scale(0, 4 * ttl));
    }
    // A size within the budget share, or unbounded.
    let size = |d: &mut Draw, lo: u64, hi: u64| match share {
        Some(s) => d.scale(1, s.max(1)),
        None => d.scale(lo, hi),
    };
    let client_links = a.map_or(ClientLinks::Any, |a| a.client_links);
    let store_ok = a.is_none_or(|a| a.store_links);
    let target_client = Host::Client(client);

    let spec = match kind {
        FaultKind::Pause => FaultSpec::Pause {
            at_ms,
            target: on.is_none().then_some(target_client),
            on,
            duration_ms: size(d, 1, 3 * ttl),
        },
        FaultKind::Crash | FaultKind::Restart => {
            let client_ok = a.is_none_or(|a| a.client_crashes);
            let on_client = client_ok && d.chance(60);
            let restart = kind == FaultKind::Restart;
            let target = if on_client {
                on.is_none().then_some(target_client)
            } else {
                Some(d.pick(&nodes))
            };
            let mut restart_after_ms = restart.then(|| {
                if d.chance(50) {
                    d.scale(1, 100)
                } else {
                    d.scale(ttl, 2 * ttl)
                }
            });
            if let (Some(_), Some(after)) = (a, restart_after_ms.as_mut())
                && !on_client
                && case.topology.persistence != Persistence::AofAlways
            {
                // A node comes back only after every lease it gave expired.
                *after = (*after).max(ttl + margin_ms(ttl) + 1);
            }
            FaultSpec::Crash {
                at_ms,
                on,
                target,
                how: if d.chance(30) {
                    CrashKind::PowerLoss
                } else {
                    CrashKind::ProcessKill
                },
                restart_after_ms,
            }
        }
        FaultKind::Partition | FaultKind::Delay | FaultKind::SlowLink => {
            // Which link: client–Redis mostly; sometimes client–store or
            // Redis–Redis (replication).
            let lossy = kind == FaultKind::Partition;
            let client_node_ok = !lossy || client_links == ClientLinks::Any;
            let roll = d.below(100);
            let (a_side, b_side) = if roll < 70 && client_node_ok {
                (some_of(d, &clients), some_of(d, &nodes))
            } else if roll < 85 && store_ok {
                (some_of(d, &clients), vec![Host::Store])
            } else if nodes.len() > 1 {
                let first = d.pick(&nodes);
                let rest: Vec<Host> = nodes.iter().filter(|n| **n != first).copied().collect();
                (vec![first], some_of(d, &rest))
            } else if client_node_ok {
                (some_of(d, &clients), nodes.clone())
            } else {
                return None;
            };
            let (a_side, b_side) = if d.chance(50) {
                (b_side, a_side)
            } else {
                (a_side, b_side)
            };
            let timeout = case.lock.response_timeout_ms;
            let within_timeout = client_links != ClientLinks::Any && a.is_some();
            match kind {
                FaultKind::Partition => FaultSpec::Partition {
                    at_ms,
                    on,
                    a: a_side,
                    b: b_side,
                    oneway: d.chance(20),
                    duration_ms: if a.is_none() && d.chance(10) {
                        None
                    } else {
                        Some(d.scale(10, 3 * ttl))
                    },
                },
                FaultKind::Delay => {
                    let mut duration = size(d, 1, 2 * ttl);
                    if within_timeout {
                        duration = duration.min(timeout.saturating_sub(21)).max(1);
                    }
                    FaultSpec::Delay {
                        at_ms,
                        on,
                        a: a_side,
                        b: b_side,
                        oneway: false,
                        duration_ms: duration,
                    }
                }
                _ => {
                    let writes = case.clients.iter().map(|c| c.writes).max().unwrap_or(1);
                    let mut latency = match share {
                        Some(s) => 1 + d.scale(0, s / (2 * round_trips(writes))),
                        None => d.scale(2, ttl / 2),
                    };
                    if within_timeout {
                        latency = latency.min(timeout.saturating_sub(20) / 2).max(1);
                    }
                    FaultSpec::SlowLink {
                        at_ms,
                        on,
                        a: a_side,
                        b: b_side,
                        latency_ms: latency,
                        duration_ms: Some(d.scale(10, 3 * ttl)),
                    }
                }
            }
        }
        FaultKind::ClockJump => {
            let on_node = d.chance(50);
            let target = if on_node {
                d.pick(&nodes)
            } else {
                target_client
            };
            let forward = d.chance(60);
            let magnitude = match a {
                None => d.scale(1, 3 * ttl),
                Some(a) if on_node && forward && !a.node_forward_jumps => {
                    d.scale(1, (ttl / 200).min(share.unwrap_or(u64::MAX)).max(1))
                }
                Some(_) if on_node && !forward => d.scale(1, ttl / 2),
                Some(a) if !on_node && a.client_wall_clock => {
                    d.scale(1, (ttl / 200).min(share.unwrap_or(u64::MAX)).max(1))
                }
                Some(_) => d.scale(1, 3 * ttl),
            };
            FaultSpec::ClockJump {
                at_ms,
                on,
                target,
                jump_ms: if forward {
                    magnitude as i64
                } else {
                    -(magnitude as i64)
                },
            }
        }
        FaultKind::ClockDrift => {
            let target = if d.chance(50) {
                d.pick(&nodes)
            } else {
                target_client
            };
            let limit = if a.is_some() {
                MAX_DRIFT_PPM as u64
            } else {
                200_000
            };
            let ppm = d.scale(100.min(limit), limit) as i64;
            FaultSpec::ClockDrift {
                at_ms,
                on,
                target,
                ppm: if d.chance(50) { ppm } else { -ppm },
            }
        }
        FaultKind::Failover => FaultSpec::Failover {
            at_ms,
            on,
            promote_after_ms: d.scale(0, 300),
        },
    };
    Some(spec)
}
