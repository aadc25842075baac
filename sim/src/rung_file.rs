//! Rungs from outside the ladder in scenarios: loading a rung file (its
//! Lua checked by the simulated node's own compiler, so a syntax error
//! names its line in the file) and registering it, and giving a
//! registered rung its part in a scenario.
//!
//! A registered rung that `plays` a ladder rung takes that rung's part in
//! every scenario that names it: the same deployment (`topology_for`),
//! faults (`faults_for`), resource (`resource_for`) and expected verdict,
//! so that its cell says whether it does as well. In a scenario that does
//! not name that rung, or for a rung that plays none, it runs on the
//! scenario's deployment, faults and resource as written, with no
//! expectation, like a rung of `suite --all`.

use locks::{RungFile, RungFileError};
use model::scenario::Scenario;
use std::path::Path;
use std::rc::Rc;

/// Reads, checks and registers the rung file at `path`; its id.
pub fn load(path: &Path) -> Result<&'static str, String> {
    use std::io::Read as _;
    let name = path.display().to_string();
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .and_then(|f| {
            f.take(locks::rungfile::MAX_FILE_BYTES as u64 + 1)
                .read_to_end(&mut bytes)
        })
        .map_err(|e| format!("{name}: {e}"))?;
    let text = String::from_utf8(bytes).map_err(|e| format!("{name}: not UTF-8 text ({e})"))?;
    load_text(&text, &name)
}

/// Checks and registers a rung file's text; `file` names it in errors.
pub fn load_text(text: &str, file: &str) -> Result<&'static str, String> {
    let rung_file = RungFile::parse(text, file).map_err(|e| e.to_string())?;
    check_lua(&rung_file).map_err(|e| e.to_string())?;
    let rung = rung_file.register().map_err(|e| format!("{file}: {e}"))?;
    Ok(rung.id)
}

/// Compiles every script of the file as a simulated node would; a
/// syntax error is reported at its line in the file.
pub fn check_lua(file: &RungFile) -> Result<(), RungFileError> {
    let engine = simredis::lua::LuaEngine::new(Rc::new(|_: &[Vec<u8>]| simredis::resp::Reply::Nil));
    for script in file.scripts() {
        if let Err(reply) = engine.load(script.text.as_bytes()) {
            let message = match reply {
                simredis::resp::Reply::Error(text) => text,
                other => format!("{other:?}"),
            };
            // "ERR Error compiling script (new function): user_script:3: ..."
            let script_line = message
                .split("user_script:")
                .nth(1)
                .and_then(|rest| rest.split(':').next())
                .and_then(|n| n.parse::<usize>().ok());
            let line = script_line.map_or(script.first_line, |n| script.first_line + n - 1);
            return Err(file.error_at(
                line,
                format!("`{}.script` does not compile: {message}", script.operation),
            ));
        }
    }
    Ok(())
}

/// `scenario` with the registered rung `id` in it: taking the part of the
/// ladder rung it plays if the scenario names that one, else as written
/// (see the module doc). A scenario that names `id` already is returned
/// as it is. An error when the rung cannot run on the deployment it gets.
pub fn adopt(scenario: &Scenario, id: &str) -> Result<Scenario, String> {
    let registration = locks::registration(id).ok_or_else(|| format!("unknown rung {id:?}"))?;
    let mut adopted = scenario.clone();
    if !adopted.rungs.iter().any(|r| r == id) {
        adopted.rungs.push(id.to_string());
        let part = registration
            .plays
            .filter(|plays| scenario.rungs.iter().any(|r| r == plays));
        if let Some(plays) = part {
            let plays = plays.to_string();
            let id = id.to_string();
            if let Some(t) = scenario.topology_for.get(&plays) {
                adopted.topology_for.insert(id.clone(), t.clone());
            }
            if let Some(f) = scenario.faults_for.get(&plays) {
                adopted.faults_for.insert(id.clone(), f.clone());
            }
            if let Some(r) = scenario.resource_for.get(&plays) {
                adopted.resource_for.insert(id.clone(), *r);
            }
            if let Some(v) = scenario.expect.get(&plays) {
                adopted.expect.insert(id, *v);
            }
        }
    }
    // The connections the rung gets: one per independent master, else one.
    let topology = adopted.topology_of(id);
    let nodes = match topology.kind {
        model::scenario::TopologyKind::Independent => topology.node_count(),
        _ => 1,
    };
    if nodes < registration.min_nodes {
        return Err(format!(
            "scenario {:?}: rung {id:?} needs at least {} independent nodes; it gets {nodes}",
            scenario.name, registration.min_nodes
        ));
    }
    Ok(adopted)
}

/// Whether the scenario gives `id` a part (it names it, or the ladder
/// rung it plays).
pub fn has_part(scenario: &Scenario, id: &str) -> bool {
    let plays = locks::registration(id).and_then(|r| r.plays);
    scenario
        .rungs
        .iter()
        .any(|r| r == id || Some(r.as_str()) == plays)
}
