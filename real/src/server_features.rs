//! Server commands newer than Redis 7.0 that a rung relies on, and
//! whether the real server knows them.
//!
//! The simulated node answers a few commands that only later servers have
//! (`DELEX`, `DELIFEQ`, `SET ... IFEQ`, `SET ... IFNE`; see
//! `sim/redis/README.md`). A rung sending one of them to a server that
//! lacks it gets an error where the simulator got a reply, and its real
//! verdict would be about that error, not about the fault. So real mode
//! asks the server first (one scratch server, before the run) and refuses
//! such a cell as not stageable, naming the command.
//!
//! What a rung relies on is read from the words of its definition: a
//! rung file's text (its TOML comments left out), or a built-in rung's
//! own description of its acquire and release (`native-cad` names its
//! commands there).

use crate::nodes::{Nodes, ServerBin, command};
use model::host::Host;
use model::scenario::Persistence;
use std::sync::atomic::{AtomicU64, Ordering};

/// A server feature newer than Redis 7.0.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Feature {
    /// A command of its own, by name.
    Command(&'static str),
    /// An option of `SET`, by name.
    SetOption(&'static str),
}

impl std::fmt::Display for Feature {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Feature::Command(name) => write!(f, "{name}"),
            Feature::SetOption(name) => write!(f, "SET ... {name}"),
        }
    }
}

/// One feature the simulator knows beyond Redis 7.0: the word that names
/// it, which servers have it, and the family of commands that stand in for
/// each other (a rung that tries `DELEX` and falls back to `DELIFEQ` needs
/// only one of them).
struct Known {
    word: &'static str,
    feature: Feature,
    servers: &'static str,
    family: Option<&'static str>,
}

const KNOWN: [Known; 4] = [
    Known {
        word: "DELEX",
        feature: Feature::Command("DELEX"),
        servers: "Redis 8.4",
        family: Some("compare-and-delete"),
    },
    Known {
        word: "DELIFEQ",
        feature: Feature::Command("DELIFEQ"),
        servers: "Valkey 9.0",
        family: Some("compare-and-delete"),
    },
    Known {
        word: "IFEQ",
        feature: Feature::SetOption("IFEQ"),
        servers: "Valkey 8.1, Redis 8.4",
        family: None,
    },
    Known {
        word: "IFNE",
        feature: Feature::SetOption("IFNE"),
        servers: "Redis 8.4",
        family: None,
    },
];

/// The features newer than Redis 7.0 that `text` names, as whole words,
/// case-insensitively; lines that are TOML comments do not count.
pub fn named_in(text: &str) -> Vec<Feature> {
    let words: std::collections::BTreeSet<String> = text
        .lines()
        .filter(|line| !line.trim_start().starts_with('#'))
        .flat_map(|line| line.split(|c: char| !c.is_ascii_alphanumeric()))
        .map(str::to_ascii_uppercase)
        .collect();
    KNOWN
        .iter()
        .filter(|k| words.contains(k.word))
        .map(|k| k.feature)
        .collect()
}

/// The features newer than Redis 7.0 the registered rung `id` relies on.
pub fn needed_by(id: &str) -> Vec<Feature> {
    match locks::registration(id) {
        Some(registration) => match &registration.source {
            Some(source) => named_in(source),
            None => named_in(&format!(
                "{}\n{}",
                registration.rung.acquire, registration.rung.release
            )),
        },
        None => Vec::new(),
    }
}

/// Of `needed`, what a server with the features `has` cannot serve, in
/// words: one entry per missing feature (or family of stand-ins).
pub fn missing(needed: &[Feature], has: &dyn Fn(Feature) -> bool) -> Vec<String> {
    let known = |f: &Feature| KNOWN.iter().find(|k| k.feature == *f);
    let mut out = Vec::new();
    let mut families_done = Vec::new();
    for feature in needed {
        let Some(k) = known(feature) else { continue };
        match k.family {
            Some(family) => {
                if families_done.contains(&family) {
                    continue;
                }
                families_done.push(family);
                let members: Vec<&Known> = needed
                    .iter()
                    .filter_map(known)
                    .filter(|m| m.family == Some(family))
                    .collect();
                if !members.iter().any(|m| has(m.feature)) {
                    let names: Vec<String> = members
                        .iter()
                        .map(|m| format!("{} ({})", m.feature, m.servers))
                        .collect();
                    out.push(names.join(" or "));
                }
            }
            None if !has(*feature) => out.push(format!("{} ({})", feature, k.servers)),
            None => {}
        }
    }
    out
}

/// Whether the server at `addr` knows `feature`, asked without changing
/// anything: a command is sent without arguments (an unknown command and
/// a wrong number of arguments are different errors), a `SET` option on a
/// key nobody uses, with a condition an absent key never meets.
fn knows(addr: std::net::SocketAddr, feature: Feature) -> Result<bool, String> {
    match feature {
        Feature::Command(name) => match command(addr, &[name]) {
            Ok(_) => Ok(true),
            Err(e) => Ok(!e.to_ascii_lowercase().contains("unknown command")),
        },
        Feature::SetOption(option) => {
            let key = format!("locklab:probe:{option}");
            let known = match command(addr, &["SET", &key, "v", option, "v"]) {
                Ok(_) => true,
                Err(e) if e.to_ascii_lowercase().contains("syntax error") => false,
                Err(e) => return Err(e),
            };
            command(addr, &["DEL", &key])?;
            Ok(known)
        }
    }
}

/// What of `needed` the real server lacks (empty when nothing is needed,
/// without starting a server); each entry names the command and the
/// servers that have it.
pub fn lacking(needed: &[Feature], bin: &ServerBin) -> Result<Vec<String>, String> {
    if needed.is_empty() {
        return Ok(Vec::new());
    }
    static PROBE: AtomicU64 = AtomicU64::new(0);
    let mut nodes = Nodes::new(
        &format!("probe-{}", PROBE.fetch_add(1, Ordering::SeqCst)),
        bin.clone(),
    )
    .map_err(|e| format!("a scratch server to ask for commands: {e}"))?;
    let addr = nodes.start(Host::Store, Persistence::None, &[])?;
    let mut answers = Vec::new();
    for &feature in needed {
        answers.push((feature, knows(addr, feature)?));
    }
    let has = |f: Feature| answers.iter().any(|&(g, known)| g == f && known);
    Ok(missing(needed, &has))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_words_of_a_definition_name_its_features_and_comments_do_not() {
        let text = "# unlike DELIFEQ, this file...\n[release]\ncommand = [\"delex\", \"{key}\", \"IFEQ\", \"{token}\"]\n";
        assert_eq!(
            named_in(text),
            vec![Feature::Command("DELEX"), Feature::SetOption("IFEQ")]
        );
        assert!(named_in("redis.call('del', KEYS[1]) -- DELEXTRA").is_empty());
    }

    #[test]
    fn native_cad_needs_a_compare_and_delete_command_and_set_ifeq() {
        assert_eq!(
            needed_by("native-cad"),
            vec![
                Feature::Command("DELEX"),
                Feature::Command("DELIFEQ"),
                Feature::SetOption("IFEQ")
            ]
        );
        assert!(needed_by("lua-release").is_empty());
    }

    #[test]
    fn one_member_of_a_family_is_enough_and_each_missing_feature_is_named() {
        let needed = needed_by("native-cad");
        let redis_7 = missing(&needed, &|_| false);
        assert_eq!(
            redis_7,
            vec![
                "DELEX (Redis 8.4) or DELIFEQ (Valkey 9.0)".to_string(),
                "SET ... IFEQ (Valkey 8.1, Redis 8.4)".to_string()
            ]
        );
        let valkey_9 = |f: Feature| f != Feature::Command("DELEX");
        assert!(missing(&needed, &valkey_9).is_empty());
    }
}
