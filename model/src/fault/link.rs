//! What the link faults (`partition`, `delay`, `slow-link`) share: two
//! sides of hosts, checked, drawn and narrowed the same way.

use super::check;
use super::draw::{Draw, Scene};
use crate::host::Host;
use crate::scenario::Scenario;

/// Both sides name at least one host the scenario has.
pub(super) fn validate(a: &[Host], b: &[Host], scenario: &Scenario) -> Result<(), String> {
    if a.is_empty() || b.is_empty() {
        return Err("`a` and `b` must each name at least one host".into());
    }
    for (side, hosts) in [("a", a), ("b", b)] {
        for host in hosts {
            check::host(*host, scenario).map_err(|e| format!("`{side}`: {e}"))?;
        }
    }
    Ok(())
}

/// Which link: client–Redis mostly; sometimes client–store or Redis–Redis
/// (replication). `lossy`: the fault loses messages. `None` when the
/// bounds leave no link to draw.
pub(super) fn draw_sides(
    d: &mut Draw,
    scene: &Scene,
    lossy: bool,
) -> Option<(Vec<Host>, Vec<Host>)> {
    let clients = scene.client_hosts();
    let nodes = &scene.nodes;
    let client_links_lossy = scene.bounds.as_ref().is_none_or(|b| b.lossy_client_links);
    let store_ok = scene.bounds.as_ref().is_none_or(|b| b.store_links);
    let client_node_ok = !lossy || client_links_lossy;
    let roll = d.below(100);
    let (a, b) = if roll < 70 && client_node_ok {
        (d.some_of(&clients), d.some_of(nodes))
    } else if roll < 85 && store_ok {
        (d.some_of(&clients), vec![Host::Store])
    } else if nodes.len() > 1 {
        let first = d.pick(nodes);
        let rest: Vec<Host> = nodes.iter().filter(|n| **n != first).copied().collect();
        (vec![first], d.some_of(&rest))
    } else if client_node_ok {
        (d.some_of(&clients), nodes.clone())
    } else {
        return None;
    };
    Some(if d.chance(50) { (b, a) } else { (a, b) })
}

/// Whether the bounds keep messages between clients and Redis within the
/// reply timeout.
pub(super) fn within_timeout(scene: &Scene) -> bool {
    scene.bounds.as_ref().is_some_and(|b| !b.lossy_client_links)
}

/// The sides with one host fewer, one variant per host (a side of one
/// host stays as it is): side `a`'s hosts first.
pub(super) fn narrowed(a: &[Host], b: &[Host]) -> Vec<(Vec<Host>, Vec<Host>)> {
    let mut out = Vec::new();
    for side_a in [true, false] {
        let len = if side_a { a.len() } else { b.len() };
        for j in 0..len {
            let (mut a, mut b) = (a.to_vec(), b.to_vec());
            let side = if side_a { &mut a } else { &mut b };
            if side.len() > 1 {
                side.remove(j);
            }
            out.push((a, b));
        }
    }
    out
}

/// The sides once client `gone` is removed; `None` when a side is left
/// empty.
pub(super) fn without_client(
    a: &[Host],
    b: &[Host],
    gone: usize,
) -> Option<(Vec<Host>, Vec<Host>)> {
    let remap = |side: &[Host]| -> Vec<Host> {
        side.iter()
            .filter_map(|&h| check::without_client(h, gone))
            .collect()
    };
    let (a, b) = (remap(a), remap(b));
    (!a.is_empty() && !b.is_empty()).then_some((a, b))
}
