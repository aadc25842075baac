//! What a run page's timeline shows, gathered from a history: one lane per
//! client (holding in its own view, waiting to acquire, its other
//! operations, paused, crashed, overlapping another holder), one lane per
//! node (up or down, its role, the lock key's set, expire and delete
//! events as the node recorded them) and the faults. A pure function of
//! the history and the deployment.

use judge::check::faults::fault_spans;
use judge::check::holds::{HoldEnd, holds};
use judge::check::mutual_exclusion::overlaps;
use model::fault::FaultKind;
use model::history::{Event, EventKind, FaultTarget, History, KeyChange, Op, Outcome, Phase};
use model::host::Host;
use model::scenario::{Topology, TopologyKind};
use std::collections::{BTreeMap, BTreeSet};

/// A stretch of true time, and the history events that make it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Span {
    /// Where it begins, µs.
    pub from_us: u64,
    /// Where it ends, µs (at least `from_us`).
    pub to_us: u64,
    /// The events it is made of (its start, then its end when it has one).
    pub events: Vec<usize>,
    /// What it is, in words, for the hover text.
    pub note: String,
}

/// An operation other than an acquire, from its invoke to its completion.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpSpan {
    /// When and which events.
    pub span: Span,
    /// The operation.
    pub op: Op,
    /// How it ended; `None` when it never completed.
    pub outcome: Option<Outcome>,
}

/// One client's lane.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ClientLane {
    /// The client's index.
    pub client: usize,
    /// Holding, in the client's own view.
    pub holds: Vec<Span>,
    /// Waiting: from an acquire's invoke to its completion.
    pub waits: Vec<Span>,
    /// Its other operations.
    pub ops: Vec<OpSpan>,
    /// Stop-the-world pauses.
    pub paused: Vec<Span>,
    /// Down: from a crash to its restart (or the end of the history).
    pub crashed: Vec<Span>,
    /// While another client held the same lock too.
    pub overlaps: Vec<Span>,
}

/// What a node is in its deployment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// Takes the lock's writes.
    Master,
    /// Copies a master.
    Replica,
    /// Holds the guarded resource.
    Store,
}

impl Role {
    /// The role's name.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Master => "master",
            Role::Replica => "replica",
            Role::Store => "store",
        }
    }
}

/// A node's role from a moment on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RoleChange {
    /// From when, µs.
    pub from_us: u64,
    /// The role.
    pub role: Role,
    /// The event that gave it (a promotion); `None` for the initial role.
    pub event: Option<usize>,
}

/// A node's own record of the lock key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyMark {
    /// When, µs.
    pub at_us: u64,
    /// Set, expired or deleted.
    pub what: KeyChange,
    /// The key.
    pub key: String,
    /// The event.
    pub event: usize,
}

/// An instant that happened to one host (a clock jump, a drift, a crash
/// for good).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Instant {
    /// When, µs.
    pub at_us: u64,
    /// The fault.
    pub fault: FaultKind,
    /// The event.
    pub event: usize,
    /// What happened, in words.
    pub note: String,
}

/// One node's lane.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeLane {
    /// The node (`redis-N` or `store`).
    pub host: Host,
    /// When it was down.
    pub down: Vec<Span>,
    /// Its role, from the start, then at each change.
    pub roles: Vec<RoleChange>,
    /// The lock key's events as the node recorded them.
    pub keys: Vec<KeyMark>,
    /// Instant faults on it.
    pub instants: Vec<Instant>,
}

/// A fault, as a band across the timeline.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FaultBand {
    /// Its kind.
    pub fault: FaultKind,
    /// What it hit.
    pub target: String,
    /// When, and the events that began and ended it.
    pub span: Span,
    /// Whether it happened at one instant.
    pub instant: bool,
}

/// Where an event is drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum LaneRef {
    /// The faults' lane.
    Faults,
    /// A client's lane.
    Client(usize),
    /// A node's lane.
    Node(Host),
}

/// Everything the timeline shows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lanes {
    /// The end of the history, µs (at least 1).
    pub end_us: u64,
    /// One lane per client, by index.
    pub clients: Vec<ClientLane>,
    /// One lane per node: the deployment's nodes, then the store.
    pub nodes: Vec<NodeLane>,
    /// Every fault, in the order it began.
    pub faults: Vec<FaultBand>,
}

impl Lanes {
    /// Gathers the lanes of `history`, run on `topology`.
    pub fn of(history: &History, topology: &Topology) -> Lanes {
        let end_us = history.end_us().max(1);
        let mut clients: BTreeMap<usize, ClientLane> = BTreeMap::new();
        let mut nodes = initial_nodes(topology);
        operations(history, end_us, &mut clients);
        for hold in holds(history) {
            let why = match hold.ended_by {
                HoldEnd::Release => "until its release began",
                HoldEnd::CheckFailed => "until its validity check failed",
                HoldEnd::Crash => "until it crashed",
                HoldEnd::ValidityExpired => "until the validity it computed ran out",
                HoldEnd::HistoryEnd => "to the end of the history",
            };
            let mut events = vec![hold.start];
            events.extend(hold.end);
            client_lane(&mut clients, hold.client).holds.push(Span {
                from_us: hold.start_us,
                to_us: hold.end_us.max(hold.start_us),
                events,
                note: format!(
                    "client {} holds {:?} in its own view, from {} {why} at {}",
                    hold.client,
                    hold.lock,
                    super::ms(hold.start_us),
                    super::ms(hold.end_us)
                ),
            });
        }
        for o in overlaps(history) {
            let (from_us, to_us) = o.span_us();
            for client in [o.first.client, o.second.client] {
                client_lane(&mut clients, client).overlaps.push(Span {
                    from_us,
                    to_us,
                    events: o.witness(),
                    note: format!(
                        "clients {} and {} both hold {:?} for {}",
                        o.first.client,
                        o.second.client,
                        o.first.lock,
                        super::ms(o.overlap_us)
                    ),
                });
            }
        }
        let mut faults = Vec::new();
        for f in fault_spans(history) {
            let to_us = match (f.instant, f.end) {
                (true, _) => f.start_us,
                (false, Some((_, us))) => us,
                (false, None) => end_us,
            };
            let mut events = vec![f.start];
            events.extend(f.end.map(|(i, _)| i));
            let detail = fault_detail(history, f.start);
            let span = Span {
                from_us: f.start_us,
                to_us,
                events,
                note: format!(
                    "{} on {}{}{}",
                    f.fault,
                    f.target,
                    if detail.is_empty() { "" } else { ": " },
                    detail
                ),
            };
            if let Some(client) = f.target.client() {
                let lane = client_lane(&mut clients, client);
                match f.fault {
                    FaultKind::Pause => lane.paused.push(span.clone()),
                    FaultKind::Crash => lane.crashed.push(Span {
                        note: if f.instant {
                            format!("client {client} crashed for good")
                        } else {
                            format!("client {client} down until it restarted")
                        },
                        to_us: if f.instant { end_us } else { to_us },
                        ..span.clone()
                    }),
                    _ => {}
                }
            }
            faults.push(FaultBand {
                fault: f.fault,
                target: f.target.to_string(),
                span,
                instant: f.instant,
            });
        }
        node_events(history, end_us, &mut nodes);
        Lanes {
            end_us,
            clients: clients.into_values().collect(),
            nodes,
            faults,
        }
    }

    /// The lane `event` is drawn on: a client's operations and faults on
    /// its lane, a node's records and faults on the node's, the resource's
    /// final state on the store's, link faults and the run's wake-up count
    /// on the faults' lane.
    pub fn lane_of(&self, event: &Event) -> LaneRef {
        let node = |host: Host| {
            if self.nodes.iter().any(|n| n.host == host) {
                LaneRef::Node(host)
            } else {
                LaneRef::Faults
            }
        };
        match &event.kind {
            EventKind::Invoke { client, .. } | EventKind::Complete { client, .. } => {
                LaneRef::Client(*client)
            }
            EventKind::Fault { target, .. } => match target {
                FaultTarget::Host(Host::Client(c)) => LaneRef::Client(*c),
                FaultTarget::Host(host) => node(*host),
                FaultTarget::Sides { .. } => LaneRef::Faults,
            },
            EventKind::Server { node: host, .. } => node(*host),
            EventKind::Final { .. } => node(Host::Store),
            // A count over the whole run, no host's: beside the faults.
            EventKind::Wakeups { .. } => LaneRef::Faults,
        }
    }
}

/// The client's lane, made when first needed.
fn client_lane(clients: &mut BTreeMap<usize, ClientLane>, client: usize) -> &mut ClientLane {
    clients.entry(client).or_insert_with(|| ClientLane {
        client,
        ..ClientLane::default()
    })
}

/// The `detail` of the fault event at `i`.
fn fault_detail(history: &History, i: usize) -> String {
    match history.events().get(i).map(|e| &e.kind) {
        Some(EventKind::Fault { detail, .. }) => detail.clone(),
        _ => String::new(),
    }
}

/// The deployment's nodes with their first roles, then the store.
fn initial_nodes(topology: &Topology) -> Vec<NodeLane> {
    let mut nodes: Vec<NodeLane> = topology
        .nodes()
        .into_iter()
        .map(|host| {
            let replica = topology.kind == TopologyKind::Replicated && host != Host::Node(0);
            (host, if replica { Role::Replica } else { Role::Master })
        })
        .chain([(Host::Store, Role::Store)])
        .map(|(host, role)| NodeLane {
            host,
            down: Vec::new(),
            roles: vec![RoleChange {
                from_us: 0,
                role,
                event: None,
            }],
            keys: Vec::new(),
            instants: Vec::new(),
        })
        .collect();
    nodes.sort_by_key(|n| n.host);
    nodes
}

/// Every operation of every client: acquires as waits, the others as
/// operation spans, paired as the checkers pair them
/// ([`judge::check::order::operations`]). An operation that never
/// completes ends at its client's next crash, or at the end of the
/// history.
fn operations(history: &History, end_us: u64, clients: &mut BTreeMap<usize, ClientLane>) {
    let events = history.events();
    let mut completed = BTreeSet::new();
    for operation in judge::check::order::operations(history) {
        completed.insert(operation.invoked);
        let from_us = events.get(operation.invoked).map_or(0, |e| e.at_us);
        let end = operation.complete;
        let outcome = match &end.kind {
            EventKind::Complete { outcome, .. } => Some(*outcome),
            _ => None,
        };
        add_operation(
            clients,
            end_us,
            (operation.invoked, from_us),
            end,
            Some(end),
            outcome,
        );
    }
    for (position, event) in events.iter().enumerate() {
        let EventKind::Invoke { client, .. } = &event.kind else {
            continue;
        };
        if completed.contains(&event.i) {
            continue;
        }
        let crash = events[position..]
            .iter()
            .find(|e| judge::check::holds::crashed_client(e) == Some(*client));
        add_operation(clients, end_us, (event.i, event.at_us), event, crash, None);
    }
}

/// Adds one operation to its client's lane: invoked at `(index, µs)`,
/// named by `who` (its invoke or completion), ended by `end` (its
/// completion, or the crash that cut it short; `None`: the history ended).
fn add_operation(
    clients: &mut BTreeMap<usize, ClientLane>,
    end_us: u64,
    (invoke, from_us): (usize, u64),
    who: &Event,
    end: Option<&Event>,
    outcome: Option<Outcome>,
) {
    let (EventKind::Invoke {
        client,
        op,
        lock,
        n,
        ..
    }
    | EventKind::Complete {
        client,
        op,
        lock,
        n,
        ..
    }) = &who.kind
    else {
        return;
    };
    let to_us = end.map_or(end_us, |e| e.at_us).max(from_us);
    let mut events = vec![invoke];
    events.extend(end.map(|e| e.i).filter(|&i| i != invoke));
    let how = match outcome {
        Some(Outcome::Ok) => "ok",
        Some(Outcome::Fail) => "failed",
        Some(Outcome::Unknown) => "outcome unknown",
        None if end.is_some() => "cut short by a crash",
        None => "never completed",
    };
    let op_name = serde_json::to_value(op)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default();
    let span = Span {
        from_us,
        to_us,
        events,
        note: format!(
            "client {client} {op_name} {lock:?} (cycle {n}): {how}, {} to {}",
            super::ms(from_us),
            super::ms(to_us)
        ),
    };
    let lane = client_lane(clients, *client);
    if *op == Op::Acquire {
        lane.waits.push(span);
    } else {
        lane.ops.push(OpSpan {
            span,
            op: *op,
            outcome,
        });
    }
}

/// Each node's downtime, role changes, lock key records and instant
/// faults, in history order.
fn node_events(history: &History, end_us: u64, nodes: &mut [NodeLane]) {
    // When each node went down, and the event, while it is down.
    let mut went_down: BTreeMap<Host, (u64, usize, String)> = BTreeMap::new();
    for event in history.events() {
        match &event.kind {
            EventKind::Server {
                node, what, key, ..
            } => {
                if let Some(lane) = nodes.iter_mut().find(|n| n.host == *node) {
                    lane.keys.push(KeyMark {
                        at_us: event.at_us,
                        what: *what,
                        key: key.clone(),
                        event: event.i,
                    });
                }
            }
            EventKind::Fault {
                fault,
                target: FaultTarget::Host(host),
                phase,
                detail,
            } if !matches!(host, Host::Client(_)) => {
                let Some(lane) = nodes.iter_mut().find(|n| n.host == *host) else {
                    continue;
                };
                match (fault, phase) {
                    // A crash, a failover's kill of the master, the loss
                    // of a master with no replica: the node goes down.
                    (FaultKind::Crash, Phase::Start | Phase::Instant)
                    | (FaultKind::Failover, Phase::Start | Phase::Instant) => {
                        went_down.entry(*host).or_insert((
                            event.at_us,
                            event.i,
                            format!("{host} down: {fault} ({detail})"),
                        ));
                    }
                    (FaultKind::Crash, Phase::End) => {
                        if let Some((from_us, i, note)) = went_down.remove(host) {
                            lane.down.push(Span {
                                from_us,
                                to_us: event.at_us.max(from_us),
                                events: vec![i, event.i],
                                note: format!("{note}, until it restarted"),
                            });
                        }
                    }
                    (FaultKind::Failover, Phase::End) => lane.roles.push(RoleChange {
                        from_us: event.at_us,
                        role: Role::Master,
                        event: Some(event.i),
                    }),
                    _ => lane.instants.push(Instant {
                        at_us: event.at_us,
                        fault: *fault,
                        event: event.i,
                        note: format!("{fault} on {host}: {detail}"),
                    }),
                }
            }
            _ => {}
        }
    }
    for (host, (from_us, i, note)) in went_down {
        if let Some(lane) = nodes.iter_mut().find(|n| n.host == host) {
            lane.down.push(Span {
                from_us,
                to_us: end_us.max(from_us),
                events: vec![i],
                note: format!("{note}, to the end of the history"),
            });
        }
    }
    for lane in nodes.iter_mut() {
        lane.down.sort_by_key(|s| s.from_us);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn invoke(client: usize, op: Op, n: u32) -> EventKind {
        EventKind::Invoke {
            client,
            op,
            lock: "lock".into(),
            n,
            value: None,
            shared: false,
        }
    }

    fn complete(client: usize, op: Op, n: u32, outcome: Outcome) -> EventKind {
        EventKind::Complete {
            client,
            op,
            lock: "lock".into(),
            n,
            outcome,
            token: None,
            fence: None,
            depth: None,
            valid_for_us: None,
            value: None,
            error: None,
            shared: false,
        }
    }

    fn fault(fault: FaultKind, target: Host, phase: Phase) -> EventKind {
        EventKind::Fault {
            fault,
            target: FaultTarget::Host(target),
            phase,
            detail: String::new(),
        }
    }

    fn replicated() -> Topology {
        Topology {
            kind: TopologyKind::Replicated,
            replicas: 1,
            ..Topology::default()
        }
    }

    #[test]
    fn a_client_lane_shows_its_wait_hold_pause_and_overlap() {
        let mut h = History::new();
        h.push(0, invoke(0, Op::Acquire, 1));
        h.push(1_000, complete(0, Op::Acquire, 1, Outcome::Ok));
        h.push(
            2_000,
            fault(FaultKind::Pause, Host::Client(0), Phase::Start),
        );
        h.push(2_500, invoke(1, Op::Acquire, 1));
        h.push(3_000, complete(1, Op::Acquire, 1, Outcome::Ok));
        h.push(5_000, fault(FaultKind::Pause, Host::Client(0), Phase::End));
        h.push(6_000, invoke(0, Op::Release, 1));
        h.push(7_000, complete(0, Op::Release, 1, Outcome::Fail));
        h.push(8_000, invoke(1, Op::Release, 1));
        h.push(9_000, complete(1, Op::Release, 1, Outcome::Ok));
        let lanes = Lanes::of(&h, &Topology::default());
        assert_eq!(lanes.clients.len(), 2);
        let c0 = &lanes.clients[0];
        assert_eq!((c0.waits[0].from_us, c0.waits[0].to_us), (0, 1_000));
        assert_eq!((c0.holds[0].from_us, c0.holds[0].to_us), (1_000, 6_000));
        assert_eq!(c0.holds[0].events, vec![1, 6]);
        assert_eq!((c0.paused[0].from_us, c0.paused[0].to_us), (2_000, 5_000));
        assert_eq!(c0.ops[0].op, Op::Release);
        assert_eq!(c0.ops[0].outcome, Some(Outcome::Fail));
        assert_eq!(
            (c0.overlaps[0].from_us, c0.overlaps[0].to_us),
            (3_000, 6_000)
        );
        assert_eq!(lanes.clients[1].overlaps, c0.overlaps);
        assert_eq!(lanes.faults.len(), 1);
        assert_eq!(lanes.faults[0].span.events, vec![2, 5]);
    }

    #[test]
    fn an_operation_a_crash_cuts_short_ends_at_the_crash() {
        let mut h = History::new();
        h.push(0, invoke(0, Op::Acquire, 1));
        h.push(
            400,
            fault(FaultKind::Crash, Host::Client(0), Phase::Instant),
        );
        h.push(900, invoke(1, Op::Acquire, 1));
        let lanes = Lanes::of(&h, &Topology::default());
        let c0 = &lanes.clients[0];
        assert_eq!(
            (c0.waits[0].to_us, c0.waits[0].events.clone()),
            (400, vec![0, 1])
        );
        assert_eq!((c0.crashed[0].from_us, c0.crashed[0].to_us), (400, 900));
        // Client 1's acquire never completed: it waits to the end.
        assert_eq!(lanes.clients[1].waits[0].to_us, 900);
    }

    #[test]
    fn a_failover_takes_the_master_down_and_promotes_the_replica() {
        let mut h = History::new();
        h.push(
            100,
            EventKind::Server {
                node: Host::Node(0),
                what: KeyChange::Set,
                key: "lock".into(),
                value: Some("t".into()),
            },
        );
        h.push(
            1_000,
            fault(FaultKind::Failover, Host::Node(0), Phase::Start),
        );
        h.push(3_000, fault(FaultKind::Failover, Host::Node(1), Phase::End));
        h.push(4_000, EventKind::Final { value: 7 });
        let lanes = Lanes::of(&h, &replicated());
        let hosts: Vec<Host> = lanes.nodes.iter().map(|n| n.host).collect();
        assert_eq!(hosts, vec![Host::Node(0), Host::Node(1), Host::Store]);
        let (n0, n1) = (&lanes.nodes[0], &lanes.nodes[1]);
        assert_eq!(n0.roles[0].role, Role::Master);
        assert_eq!((n0.down[0].from_us, n0.down[0].to_us), (1_000, 4_000));
        assert_eq!(n0.keys[0].what, KeyChange::Set);
        assert_eq!(n1.roles.len(), 2);
        assert_eq!(
            (n1.roles[1].from_us, n1.roles[1].role),
            (3_000, Role::Master)
        );
        assert_eq!(lanes.lane_of(&h.events()[3]), LaneRef::Node(Host::Store));
        assert_eq!(lanes.lane_of(&h.events()[0]), LaneRef::Node(Host::Node(0)));
    }

    #[test]
    fn a_node_crash_with_a_restart_is_down_between_them() {
        let mut h = History::new();
        h.push(500, fault(FaultKind::Crash, Host::Node(0), Phase::Start));
        h.push(1_500, fault(FaultKind::Crash, Host::Node(0), Phase::End));
        h.push(
            2_000,
            fault(FaultKind::ClockJump, Host::Node(0), Phase::Instant),
        );
        let lanes = Lanes::of(&h, &Topology::default());
        let n0 = &lanes.nodes[0];
        assert_eq!((n0.down[0].from_us, n0.down[0].to_us), (500, 1_500));
        assert_eq!(n0.instants[0].fault, FaultKind::ClockJump);
    }
}
