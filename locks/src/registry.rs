//! Rungs registered by name: the one entry point through which every rung
//! is built, the ladder's own and a user's.
//!
//! A rung is its [`Rung`] metadata plus a factory that makes the lock from
//! its [`RungParts`]: connections (one per independent node), the client's
//! [`LockContext`] (clock, fault hook, tokens) and the [`LockConfig`].
//! [`build`](crate::build) looks the id up here and calls the factory, for
//! the ladder's rungs too (their factories are made by the same
//! [`Registration::new`]), so this path is what every simulated run,
//! search and benchmark goes through.
//!
//! A lock written outside this crate joins the same way:
//!
//! ```
//! use locks::{Lock, Registration, Rung, RungParts};
//!
//! static MY_RUNG: Rung = Rung {
//!     id: "my-lock",
//!     acquire: "SET key token NX PX ttl",
//!     release: "owner-checked Lua",
//!     fixes: "",
//!     flaw: "",
//!     ..Rung::OFF_LADDER
//! };
//!
//! # fn make(parts: RungParts) -> Box<dyn Lock> { locks::build("lua-release", parts.nodes, parts.ctx, parts.config).unwrap() }
//! locks::register(Registration::new(&MY_RUNG, make).playing("lua-release")).unwrap();
//! assert_eq!(locks::rung("my-lock").map(|r| r.id), Some("my-lock"));
//! ```

use crate::ladder::{Rung, UnknownRung};
use crate::lock::{Lock, LockConfig, LockContext};
use redis::aio::ConnectionLike;
use redis::{Cmd, Pipeline, RedisFuture, Value};
use std::collections::BTreeMap;
use std::sync::{Arc, LazyLock, RwLock};

/// A connection to one Redis node, whatever its concrete type: what a
/// factory gets, so that one factory serves the simulator's connections,
/// real TCP ones and a benchmark's. Clones share the underlying connection,
/// as the rungs expect.
pub struct NodeConnection(Box<dyn SharedConnection>);

/// A connection that can be cloned behind a box.
trait SharedConnection: ConnectionLike + Send + Sync {
    fn clone_box(&self) -> Box<dyn SharedConnection>;
}

impl<C: ConnectionLike + Clone + Send + Sync + 'static> SharedConnection for C {
    fn clone_box(&self) -> Box<dyn SharedConnection> {
        Box::new(self.clone())
    }
}

impl NodeConnection {
    /// Wraps a connection.
    pub fn new<C: ConnectionLike + Clone + Send + Sync + 'static>(conn: C) -> Self {
        NodeConnection(Box::new(conn))
    }
}

impl Clone for NodeConnection {
    fn clone(&self) -> Self {
        NodeConnection(self.0.clone_box())
    }
}

impl ConnectionLike for NodeConnection {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        self.0.req_packed_command(cmd)
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        self.0.req_packed_commands(pipeline, offset, count)
    }

    fn get_db(&self) -> i64 {
        self.0.get_db()
    }
}

/// What a rung is built from.
pub struct RungParts {
    /// One connection per independent node, at least one; single-node
    /// rungs use the first.
    pub nodes: Vec<NodeConnection>,
    /// The client's clock, fault hook, tokens and release notifier.
    pub ctx: LockContext,
    /// TTL, wait budget, wait strategy, node timeout.
    pub config: LockConfig,
}

impl RungParts {
    /// The first node's connection: the one a single-node rung uses.
    pub fn first(&self) -> NodeConnection {
        self.nodes[0].clone()
    }
}

/// Makes a rung's lock from its parts.
pub type RungFactory = dyn Fn(RungParts) -> Box<dyn Lock> + Send + Sync;

/// A rung as the registry knows it: its metadata, the built-in rung whose
/// part it takes in scenarios (if any), and its factory.
#[derive(Clone)]
pub struct Registration {
    /// Its metadata; `rung.id` is the name it is registered by.
    pub rung: &'static Rung,
    /// The ladder rung whose part this one takes in a scenario that names
    /// that rung and not this one: its deployment, faults, resource and
    /// expected verdict (see `sim::stand_in`).
    pub plays: Option<&'static str>,
    /// The text it was defined by, for a rung read from a file: the same
    /// file registered twice is one rung.
    pub source: Option<Arc<str>>,
    /// The fewest independent nodes it works on (a fixed quorum); 1 by
    /// default.
    pub min_nodes: usize,
    factory: Arc<RungFactory>,
}

impl Registration {
    /// A rung made by `factory`.
    pub fn new(
        rung: &'static Rung,
        factory: impl Fn(RungParts) -> Box<dyn Lock> + Send + Sync + 'static,
    ) -> Self {
        Registration {
            rung,
            plays: None,
            source: None,
            min_nodes: 1,
            factory: Arc::new(factory),
        }
    }

    /// The same rung, taking the part of the ladder rung `id` in scenarios.
    pub fn playing(mut self, id: &'static str) -> Self {
        self.plays = Some(id);
        self
    }

    /// The same rung, working only on at least `nodes` independent nodes.
    pub fn needing(mut self, nodes: usize) -> Self {
        self.min_nodes = nodes.max(1);
        self
    }

    /// The same rung, defined by `text` (a rung file).
    pub fn from_source(mut self, text: &str) -> Self {
        self.source = Some(Arc::from(text));
        self
    }

    /// Builds the lock over `nodes` (at least one).
    pub fn build<C>(&self, nodes: Vec<C>, ctx: LockContext, config: LockConfig) -> Box<dyn Lock>
    where
        C: ConnectionLike + Clone + Send + Sync + 'static,
    {
        assert!(!nodes.is_empty(), "a lock needs at least one node");
        let nodes = nodes.into_iter().map(NodeConnection::new).collect();
        (self.factory)(RungParts { nodes, ctx, config })
    }
}

impl std::fmt::Debug for Registration {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Registration")
            .field("rung", &self.rung.id)
            .field("plays", &self.plays)
            .finish_non_exhaustive()
    }
}

/// Why a rung could not be registered.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RegisterError {
    /// The id is a ladder rung's.
    #[error(
        "rung id {0:?} is a built-in rung's; choose another id (`plays` takes its part in scenarios)"
    )]
    BuiltIn(String),
    /// Another rung is registered by that id.
    #[error("rung id {0:?} is already registered by a different definition")]
    Taken(String),
    /// The id cannot name a run's folder.
    #[error(
        "rung id {0:?} is not a plain name; expected 1 to 64 letters, digits, `-`, `_` or `.`, starting with a letter or digit (it names run folders)"
    )]
    BadId(String),
    /// `plays` names no ladder rung.
    #[error("`plays`: {0}")]
    Plays(UnknownRung),
}

/// The rungs registered in this process, by id (the ladder's are not kept
/// here: they are found by [`registration`] from the ladder itself).
static REGISTERED: LazyLock<RwLock<BTreeMap<&'static str, Registration>>> =
    LazyLock::new(|| RwLock::new(BTreeMap::new()));

/// Registers a rung, so that [`build`](crate::build), [`rung`](crate::rung),
/// scenarios and every command know it by its id. Registering the same
/// rung file again (the same text) is no change.
pub fn register(registration: Registration) -> Result<(), RegisterError> {
    let id = registration.rung.id;
    check_id(id)?;
    if crate::ladder::built_in(id).is_some() {
        return Err(RegisterError::BuiltIn(id.to_string()));
    }
    if let Some(plays) = registration.plays
        && crate::ladder::built_in(plays).is_none()
    {
        return Err(RegisterError::Plays(UnknownRung(plays.to_string())));
    }
    let mut all = REGISTERED.write().unwrap_or_else(|p| p.into_inner());
    if let Some(existing) = all.get(id) {
        let same_file = existing.source.is_some() && existing.source == registration.source;
        return if same_file {
            Ok(())
        } else {
            Err(RegisterError::Taken(id.to_string()))
        };
    }
    all.insert(id, registration);
    Ok(())
}

/// A registered rung that is already known by the same source text, if
/// any: lets a loader skip building (and leaking) its metadata again.
pub fn registered_source(id: &str, source: &str) -> Option<Registration> {
    let all = REGISTERED.read().unwrap_or_else(|p| p.into_inner());
    all.get(id)
        .filter(|r| r.source.as_deref() == Some(source))
        .cloned()
}

/// The registration of `id`: a ladder rung's, or one registered in this
/// process.
pub fn registration(id: &str) -> Option<Registration> {
    // An etcd rung is not built from Redis connections: the engines build
    // it over a channel to its member (`crate::etcd::rungs::EtcdLock`).
    if let Some(rung) = crate::ladder::built_in(id).filter(|r| r.service == "redis") {
        return Some(Registration::new(rung, move |parts| {
            crate::ladder::construct(rung.id, parts)
        }));
    }
    let all = REGISTERED.read().unwrap_or_else(|p| p.into_inner());
    all.get(id).cloned()
}

/// Every rung registered in this process outside the ladder, by id.
pub fn registered() -> Vec<&'static Rung> {
    let all = REGISTERED.read().unwrap_or_else(|p| p.into_inner());
    all.values().map(|r| r.rung).collect()
}

/// A rung id must name a folder: plain characters, bounded length.
fn check_id(id: &str) -> Result<(), RegisterError> {
    let plain = id
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    let starts_plain = id.chars().next().is_some_and(|c| c.is_ascii_alphanumeric());
    if plain && starts_plain && id.len() <= 64 {
        Ok(())
    } else {
        Err(RegisterError::BadId(id.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    static PLAIN_COPY: Rung = Rung {
        id: "registry-test-copy",
        ..Rung::OFF_LADDER
    };

    fn copy_of_lua_release(parts: RungParts) -> Box<dyn Lock> {
        crate::ladder::construct("lua-release", parts)
    }

    #[test]
    fn a_registered_rung_is_found_by_id_and_a_second_definition_is_refused() {
        register(Registration::new(&PLAIN_COPY, copy_of_lua_release).playing("lua-release"))
            .expect("registers");
        assert_eq!(crate::rung("registry-test-copy"), Some(&PLAIN_COPY));
        assert_eq!(
            registration("registry-test-copy").and_then(|r| r.plays),
            Some("lua-release")
        );
        let again = register(Registration::new(&PLAIN_COPY, copy_of_lua_release));
        assert_eq!(
            again,
            Err(RegisterError::Taken("registry-test-copy".into()))
        );
    }

    #[test]
    fn built_in_ids_bad_ids_and_unknown_parts_are_refused() {
        static LUA: Rung = Rung {
            id: "lua-release",
            ..Rung::OFF_LADDER
        };
        static SLASH: Rung = Rung {
            id: "../x",
            ..Rung::OFF_LADDER
        };
        static PLAYS: Rung = Rung {
            id: "registry-test-plays",
            ..Rung::OFF_LADDER
        };
        let err = |rung: &'static Rung| register(Registration::new(rung, copy_of_lua_release));
        assert!(matches!(err(&LUA), Err(RegisterError::BuiltIn(_))));
        assert!(matches!(err(&SLASH), Err(RegisterError::BadId(_))));
        let plays = register(Registration::new(&PLAYS, copy_of_lua_release).playing("nope"));
        assert!(matches!(plays, Err(RegisterError::Plays(_))), "{plays:?}");
    }
}
