//! Checks every kind shares: hosts a fault may name, and bounds on the
//! times and sizes it gives.

use crate::host::Host;
use crate::scenario::{MAX_MS, Scenario};

/// Bounds every time a fault gives (`None`: not given), so that no
/// accepted value wraps around when the simulator turns it into µs (see
/// [`MAX_MS`]).
pub(super) fn times(times: &[(&str, Option<u64>)]) -> Result<(), String> {
    match times
        .iter()
        .find(|(_, ms)| ms.is_some_and(|ms| ms > MAX_MS))
    {
        Some((name, Some(ms))) => Err(format!(
            "`{name}` is {ms}; expected at most {MAX_MS} (one simulated hour)"
        )),
        _ => Ok(()),
    }
}

/// A client of the scenario.
pub(super) fn client(host: Host, scenario: &Scenario) -> Result<(), String> {
    let n = host
        .client()
        .ok_or_else(|| format!("{host}; expected client-N"))?;
    if n >= scenario.client_count() {
        return Err(format!(
            "{host} does not exist (the scenario has {} clients)",
            scenario.client_count()
        ));
    }
    Ok(())
}

/// Hosts a fault may name: `client-N`, `redis-N` (N below the largest
/// deployment of any rung: a node a rung does not have is skipped for that
/// rung), `master` and `store`.
pub(super) fn host(host: Host, scenario: &Scenario) -> Result<(), String> {
    match host {
        Host::Store | Host::Master => Ok(()),
        Host::Client(_) => client(host, scenario),
        Host::Node(n) => {
            let most = std::iter::once(&scenario.topology)
                .chain(scenario.topology_for.values())
                .map(|t| t.node_count())
                .max()
                .unwrap_or(1);
            if n < most {
                Ok(())
            } else {
                Err(format!(
                    "\"{host}\" does not exist (the largest deployment has {most} nodes)"
                ))
            }
        }
    }
}

/// Renumbers client `host` after client `gone` was removed; `None` when the
/// host was that client.
pub(super) fn without_client(host: Host, gone: usize) -> Option<Host> {
    match host.client() {
        Some(n) if n == gone => None,
        Some(n) if n > gone => Some(Host::Client(n - 1)),
        _ => Some(host),
    }
}

/// An optional `target` once client `gone` is removed: `None` when it was
/// that client, `Some(None)` when no target was given.
pub(super) fn target_without_client(target: Option<Host>, gone: usize) -> Option<Option<Host>> {
    match target {
        Some(t) => without_client(t, gone).map(Some),
        None => Some(None),
    }
}
