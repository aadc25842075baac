//! Checks that a scenario holds together, each error naming the field it
//! is about with a [`FieldPath`], so that it can be placed in the file.

use super::document::{Document, entry};
use super::path::FieldPath;
use super::{MAX_MS, MAX_NODES, MAX_STOCK, MAX_TRIP_MS, Scenario, TopologyKind};
use crate::host::Host;
use std::collections::BTreeMap;
use toml::de::DeValue;

/// A scenario that does not hold together: what is wrong, and the field
/// to point at.
#[derive(Debug)]
pub(crate) struct Invalid {
    /// The field the error is about.
    pub(crate) at: FieldPath,
    /// What is wrong and what was expected.
    pub(crate) message: String,
}

impl Invalid {
    fn new(at: FieldPath, message: String) -> Invalid {
        Invalid { at, message }
    }
}

type Checked = Result<(), Invalid>;

/// Runs every check, in the order their errors are reported.
pub(crate) fn validate(s: &Scenario) -> Checked {
    check_rungs(s)?;
    check_seeds(s)?;
    check_duration(s)?;
    check_client_counts(s)?;
    check_lock_timeouts(s)?;
    check_times(s)?;
    check_trip(s)?;
    check_stocks(s)?;
    check_topologies(s)?;
    check_client_starts(s)?;
    check_faults(s)?;
    check_pools(s)
}

/// The rungs are known, and every per-rung table names one of them.
fn check_rungs(s: &Scenario) -> Checked {
    let rungs = FieldPath::key("rungs");
    if s.rungs.is_empty() {
        return Err(Invalid::new(
            rungs,
            "`rungs` is empty; expected at least one rung id".into(),
        ));
    }
    if let Some(r) = s.rungs.iter().find(|r| locks::rung(r).is_none()) {
        let message = format!(
            "`rungs`: unknown rung {r:?}; expected one of {}",
            locks::all_ids().join(", ")
        );
        return Err(Invalid::new(rungs, message));
    }
    for (table, keys) in [
        ("expect", s.expect.keys().collect::<Vec<_>>()),
        ("topology_for", s.topology_for.keys().collect()),
        ("faults_for", s.faults_for.keys().collect()),
        ("resource_for", s.resource_for.keys().collect()),
    ] {
        if let Some(r) = keys.into_iter().find(|r| !s.rungs.contains(r)) {
            let at = FieldPath::key(table).then(r);
            return Err(Invalid::new(
                at,
                format!("`{table}.{r}`: {r:?} is not in `rungs`"),
            ));
        }
    }
    Ok(())
}

/// At least one seed, each exact in JSON.
fn check_seeds(s: &Scenario) -> Checked {
    let seeds = FieldPath::key("seeds");
    if s.seeds.is_empty() {
        let message = "`seeds` is empty; expected at least one seed, such as [1]";
        return Err(Invalid::new(seeds, message.into()));
    }
    if s.seeds.iter().any(|&seed| seed >= 1 << 53) {
        let message = "`seeds`: every seed must be below 2^53 (JSON readers keep them exact)";
        return Err(Invalid::new(seeds, message.into()));
    }
    Ok(())
}

fn check_duration(s: &Scenario) -> Checked {
    if s.duration_ms == 0 || s.duration_ms > MAX_MS {
        let message = "`duration_ms` must be between 1 and 3600000";
        return Err(Invalid::new(FieldPath::key("duration_ms"), message.into()));
    }
    Ok(())
}

/// Between 1 and 256 clients. Each group is bounded before the groups are
/// summed, so that the sum cannot wrap around.
fn check_client_counts(s: &Scenario) -> Checked {
    let clients = FieldPath::key("clients");
    if let Some((i, g)) = s.clients.iter().enumerate().find(|(_, g)| g.count > 256) {
        let message = format!(
            "`clients[{i}]`: `count` is {}; expected at most 256 clients",
            g.count
        );
        return Err(Invalid::new(clients.at(i).then("count"), message));
    }
    if s.clients.is_empty() || s.client_count() == 0 {
        let message = "`clients`: expected at least one client";
        return Err(Invalid::new(clients, message.into()));
    }
    if s.client_count() > 256 {
        return Err(Invalid::new(
            clients,
            "`clients`: at most 256 clients".into(),
        ));
    }
    Ok(())
}

/// No lock timing that makes every attempt fail. A zero timeout fails
/// every request before its reply can arrive (a reply takes at least one
/// 1 ms step): nothing could ever be acquired. `max_wait_ms = 0` is
/// meaningful: one attempt.
fn check_lock_timeouts(s: &Scenario) -> Checked {
    let lock = &s.lock;
    for (field, value, why) in [
        ("ttl_ms", lock.ttl_ms, ""),
        ("retry_ms", lock.retry_ms, ""),
        (
            "response_timeout_ms",
            lock.response_timeout_ms,
            " (0 would time out every reply)",
        ),
        (
            "node_timeout_ms",
            lock.node_timeout_ms,
            " (0 would time out every node)",
        ),
    ] {
        if value == 0 {
            let at = FieldPath::key("lock").then(field);
            return Err(Invalid::new(
                at.clone(),
                format!("`{at}` must be at least 1{why}"),
            ));
        }
    }
    Ok(())
}

/// Every time the scenario gives (besides the faults') is at most
/// [`MAX_MS`].
fn check_times(s: &Scenario) -> Checked {
    let in_table = |table: &str, field: &str, ms: u64| {
        let at = FieldPath::key(table).then(field);
        (at.to_string(), at, ms)
    };
    let mut times = vec![
        in_table("lock", "ttl_ms", s.lock.ttl_ms),
        in_table("lock", "max_wait_ms", s.lock.max_wait_ms),
        in_table("lock", "retry_ms", s.lock.retry_ms),
        in_table("lock", "node_timeout_ms", s.lock.node_timeout_ms),
        in_table("lock", "response_timeout_ms", s.lock.response_timeout_ms),
        in_table("network", "latency_ms", s.network.latency_ms),
        in_table("network", "jitter_ms", s.network.jitter_ms),
    ];
    if let Some(bound) = s.liveness_bound_ms {
        let at = FieldPath::key("liveness_bound_ms");
        times.push((at.to_string(), at, bound));
    }
    for (i, g) in s.clients.iter().enumerate() {
        for (field, ms) in [
            ("critical_section_ms", g.critical_section_ms),
            ("think_ms", g.think_ms),
            ("start_ms", g.start_ms),
        ] {
            let at = FieldPath::key("clients").at(i).then(field);
            times.push((format!("clients[{i}]` `{field}"), at, ms));
        }
    }
    for (at, topology) in topologies(s) {
        let at = at.then("replication_delay_ms");
        times.push((at.to_string(), at, topology.replication_delay_ms));
    }
    match times.into_iter().find(|(_, _, ms)| *ms > MAX_MS) {
        Some((name, at, ms)) => Err(Invalid::new(
            at,
            format!("`{name}` is {ms}; expected at most {MAX_MS} (one simulated hour)"),
        )),
        None => Ok(()),
    }
}

/// A one-way trip of at most [`MAX_TRIP_MS`].
fn check_trip(s: &Scenario) -> Checked {
    let trip_ms = s.network.latency_ms + s.network.jitter_ms;
    if trip_ms > MAX_TRIP_MS {
        return Err(Invalid::new(
            FieldPath::key("network").then("latency_ms"),
            format!(
                "`network.latency_ms` plus `network.jitter_ms` is {trip_ms}; expected at most {MAX_TRIP_MS} (ten seconds one way: every request, even stocking the store before the run, takes several trips)"
            ),
        ));
    }
    Ok(())
}

fn check_stocks(s: &Scenario) -> Checked {
    for (at, resource) in and_per_rung("resource", &s.resource, &s.resource_for) {
        if !(0..=MAX_STOCK).contains(&resource.stock) {
            let at = at.then("stock");
            let message = format!(
                "`{at}` is {}; expected between 0 and {MAX_STOCK}",
                resource.stock
            );
            return Err(Invalid::new(at, message));
        }
    }
    Ok(())
}

/// A table and then its per-rung versions (`resource`, then each of
/// `resource_for`), each with its path.
fn and_per_rung<'a, T>(
    key: &str,
    shared: &'a T,
    per_rung: &'a BTreeMap<String, T>,
) -> impl Iterator<Item = (FieldPath, &'a T)> {
    let per_rung_key = FieldPath::key(&format!("{key}_for"));
    let per_rung = per_rung
        .iter()
        .map(move |(rung, t)| (per_rung_key.clone().then(rung), t));
    std::iter::once((FieldPath::key(key), shared)).chain(per_rung)
}

/// The deployments: `topology`, then each of `topology_for`.
fn topologies(s: &Scenario) -> impl Iterator<Item = (FieldPath, &super::Topology)> {
    and_per_rung("topology", &s.topology, &s.topology_for)
}

/// Every deployment has 1 to [`MAX_NODES`] nodes and no field its kind
/// ignores.
fn check_topologies(s: &Scenario) -> Checked {
    for (path, topo) in topologies(s) {
        if topo.node_count() == 0 || topo.node_count() > MAX_NODES {
            let (field, value) = match topo.kind {
                TopologyKind::Replicated => ("replicas", topo.replicas),
                TopologyKind::Standalone | TopologyKind::Independent => ("masters", topo.masters),
                TopologyKind::Cluster => ("members", topo.node_count()),
            };
            let at = path.then(field);
            let message = format!(
                "`{at}` is {value}, which makes {} nodes; expected between 1 and {MAX_NODES} nodes",
                topo.node_count()
            );
            return Err(Invalid::new(at, message));
        }
        if let Some(field) = topo.ignored_field() {
            let at = path.then(field);
            let message = format!(
                "`{at}`: a {} deployment has no use for it; remove it or change `kind`",
                format!("{:?}", topo.kind).to_lowercase()
            );
            return Err(Invalid::new(at, message));
        }
    }
    Ok(())
}

fn check_client_starts(s: &Scenario) -> Checked {
    for (i, group) in s.clients.iter().enumerate() {
        if group.start_ms >= s.duration_ms {
            let at = FieldPath::key("clients").at(i).then("start_ms");
            let message = format!(
                "`{at}` is {}, but the run lasts {} ms, so these clients never start; expected below {}",
                group.start_ms, s.duration_ms, s.duration_ms
            );
            return Err(Invalid::new(at, message));
        }
    }
    Ok(())
}

/// Every fault fits the scenario; an error points at the field of the
/// fault that its message names first.
fn check_faults(s: &Scenario) -> Checked {
    for (list, faults) in and_per_rung("faults", &s.faults, &s.faults_for) {
        for (i, fault) in faults.iter().enumerate() {
            if let Err(e) = fault.validate(s) {
                let fault_at = list.clone().at(i);
                let at = match first_named(&e) {
                    Some(field) => fault_at.clone().then(field),
                    None => fault_at.clone(),
                };
                let message = format!("`{fault_at}` ({}): {e}", fault.name());
                return Err(Invalid::new(at, message));
            }
        }
    }
    Ok(())
}

/// A pool has at least one connection, and no fault is aimed at a
/// client that is a caller in a pooled process: such a client has no
/// process, machine or link of its own to pause, crash or cut.
fn check_pools(s: &Scenario) -> Checked {
    for (i, group) in s.clients.iter().enumerate() {
        if group.pool_connections == Some(0) {
            let at = FieldPath::key("clients").at(i).then("pool_connections");
            let message = format!("`{at}` is 0; expected at least one connection");
            return Err(Invalid::new(at, message));
        }
    }
    let pooled = |host: &Host| match host {
        Host::Client(c) => s.group_of(*c).is_some_and(|g| g.pool_connections.is_some()),
        _ => false,
    };
    for (list, faults) in and_per_rung("faults", &s.faults, &s.faults_for) {
        for (i, fault) in faults.iter().enumerate() {
            if let Some(host) = fault.hosts_named().into_iter().find(pooled) {
                let at = list.clone().at(i);
                let message = format!(
                    "`{at}` ({}) names {host}, a caller in a pooled process (`pool_connections`); \
                     expected a fault aimed at a client with a process of its own, or at a server",
                    fault.name()
                );
                return Err(Invalid::new(at, message));
            }
        }
    }
    Ok(())
}

/// The first field a message names in backticks, without what follows a
/// dot (`on` of `on.cycle`): the field a fault's error is about.
pub(crate) fn first_named(message: &str) -> Option<&str> {
    let name = message.split('`').nth(1)?;
    name.split('.').next().filter(|n| !n.is_empty())
}

/// Checks a `name` given in a scenario file: a plain file name of ASCII
/// letters, digits, `-`, `_` and `.`, not `.` or `..`, because it names
/// the run's folder.
pub(crate) fn check_name(name: &str) -> Checked {
    let plain = name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if !plain || name == "." || name == ".." || name.len() > 100 {
        return Err(Invalid::new(
            FieldPath::key("name"),
            format!(
                "`name`: {name:?} is not a plain file name; expected up to 100 letters, digits, `-`, `_` or `.` (not `.` or `..` alone), because it names the run's folder"
            ),
        ));
    }
    Ok(())
}

/// Checks that each table of the file has its shape: one table
/// (`[lock]`) or an array of tables (`[[clients]]`). Read as the other
/// shape, a table's fields would be taken for something else and the error
/// would make no sense. A text that is not TOML at all is left to the
/// parser, whose error says where.
pub(crate) fn check_shapes(doc: &Document<'_>) -> Checked {
    if !doc.is_valid() {
        return Ok(());
    }
    let one = |at: FieldPath, value: &DeValue<'_>| match value {
        DeValue::Array(_) => Err(Invalid::new(
            at.clone(),
            format!("`{at}`: expected one table, `[{at}]`, not an array of tables, `[[{at}]]`"),
        )),
        _ => Ok(()),
    };
    let many = |at: FieldPath, value: &DeValue<'_>| match value {
        DeValue::Table(_) => Err(Invalid::new(
            at.clone(),
            format!(
                "`{at}`: expected an array of tables, `[[{at}]]` (one per item), not one table, `[{at}]`"
            ),
        )),
        _ => Ok(()),
    };
    let root = doc.root();
    let value = |key: &str| entry(root, key).map(|(_, v)| v.get_ref());
    for key in ["topology", "network", "lock", "resource", "expect"] {
        value(key).map_or(Ok(()), |v| one(FieldPath::key(key), v))?;
    }
    for key in ["clients", "faults"] {
        value(key).map_or(Ok(()), |v| many(FieldPath::key(key), v))?;
    }
    for (key, shape) in [
        (
            "topology_for",
            &one as &dyn Fn(FieldPath, &DeValue<'_>) -> Checked,
        ),
        ("resource_for", &one),
        ("faults_for", &many),
    ] {
        if let Some(DeValue::Table(per_rung)) = value(key) {
            for (rung, v) in per_rung.iter() {
                shape(FieldPath::key(key).then(rung.get_ref()), v.get_ref())?;
            }
        }
    }
    Ok(())
}
