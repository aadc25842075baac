//! The ladder itself: every rung's metadata, in order, and a way to build
//! any rung by its id.

use crate::lock::{Lock, LockConfig, LockContext};
use crate::redis_server::RedisServer;
use crate::registry::{self, RungParts};
use crate::rungs;
use redis::aio::ConnectionLike;
use serde::Serialize;

/// A rung's place on the ladder and what it teaches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Rung {
    /// The id used everywhere: CLI `--rung`, scenario files, reports.
    pub id: &'static str,
    /// Its number on the ladder, from 0.
    #[serde(rename = "rung")]
    pub number: u8,
    /// How it acquires.
    #[serde(skip)]
    pub acquire: &'static str,
    /// How it releases.
    #[serde(skip)]
    pub release: &'static str,
    /// What it fixes relative to the rung before.
    pub fixes: &'static str,
    /// The flaw that remains.
    pub flaw: &'static str,
    /// The scenario that demonstrates the flaw.
    #[serde(skip)]
    pub shown_by: &'static str,
    /// Whether it takes a lock over several independent nodes (Redlock)
    /// rather than one.
    #[serde(skip)]
    pub multi_node: bool,
    /// Whether it excludes at all (`no-lock` does not: it is the baseline
    /// that shows the damage a lock prevents).
    #[serde(skip)]
    pub excludes: bool,
    /// Whether its lease carries a fencing token that the guarded resource
    /// checks: for such a rung the resource, not overlapping holds, decides
    /// safety.
    #[serde(skip)]
    pub fencing: bool,
    /// Whether its release publishes on the lock's release channel, so that
    /// waiters using [`WaitStrategy::Notify`](crate::WaitStrategy::Notify)
    /// are woken; the others still work with it, by polling.
    #[serde(skip)]
    pub publishes: bool,
    /// Whether the same owner may acquire it again while holding it.
    #[serde(skip)]
    pub reentrant: bool,
    /// Whether it renews its own lease while held (a watchdog).
    #[serde(skip)]
    pub renews: bool,
    /// The lock service it keeps its state on: `redis`, `etcd` for the
    /// rungs of [`crate::etcd`], `zookeeper` for those of
    /// [`crate::zookeeper`], or `postgres` (`mysql` for MariaDB's named
    /// lock) for those of [`crate::database`].
    #[serde(skip)]
    pub service: &'static str,
    /// For a Redis rung, the oldest server it works on, which it runs on
    /// unless the scenario names another: Redis 7.0 for all but those
    /// built on newer servers' compare-and-set commands.
    #[serde(skip)]
    pub server: RedisServer,
}

impl Rung {
    /// What a rung is unless its metadata says otherwise: a lock on one
    /// node that excludes, with none of the extras (fencing, publishing,
    /// reentrancy, renewal). Each rung's metadata ends in `..Rung::PLAIN`,
    /// so it states only the properties in which it differs. Not a rung
    /// itself: its texts are empty.
    pub(crate) const PLAIN: Rung = Rung {
        id: "",
        number: 0,
        acquire: "",
        release: "",
        fixes: "",
        flaw: "",
        shown_by: "",
        multi_node: false,
        excludes: true,
        fencing: false,
        publishes: false,
        reentrant: false,
        renews: false,
        service: "redis",
        server: RedisServer::Redis7_0,
    };

    /// The start of the metadata of a rung registered outside the ladder
    /// ([`crate::register`]): as [`Rung::PLAIN`], numbered 255 (not a
    /// place on the ladder). Its texts are empty: give at least `id`.
    pub const OFF_LADDER: Rung = Rung {
        number: u8::MAX,
        ..Rung::PLAIN
    };
}

/// Every rung, in ladder order.
pub const LADDER: [&Rung; 11] = [
    &rungs::no_lock::RUNG,
    &rungs::setnx::RUNG,
    &rungs::setnx_expire::RUNG,
    &rungs::set_timestamp::RUNG,
    &rungs::set_nx_px::RUNG,
    &rungs::get_check_del::RUNG,
    &rungs::lua_release::RUNG,
    &rungs::reentrant::RUNG,
    &rungs::watchdog::RUNG,
    &rungs::redlock::RUNG,
    &rungs::fenced::RUNG,
];

/// Looks a rung up by id: a ladder rung, a library rung
/// ([`crate::LIBRARIES`]), or one registered in this process
/// ([`crate::register`]).
pub fn rung(id: &str) -> Option<&'static Rung> {
    built_in(id).or_else(|| registry::registration(id).map(|r| r.rung))
}

/// Looks a built-in rung up by id: the ladder's or a library's.
pub(crate) fn built_in(id: &str) -> Option<&'static Rung> {
    LADDER
        .iter()
        .chain(crate::libraries::LIBRARIES.iter())
        .chain(crate::etcd::rungs::RUNGS.iter())
        .chain(crate::zookeeper::rungs::RUNGS.iter())
        .chain(crate::database::rungs::RUNGS.iter())
        .copied()
        .find(|r| r.id == id)
}

/// Every built-in rung id: the ladder's in ladder order, then the library
/// rungs', then the etcd rungs', then the ZooKeeper rungs', then the
/// database rungs'.
pub fn all_ids() -> Vec<&'static str> {
    LADDER
        .iter()
        .chain(crate::libraries::LIBRARIES.iter())
        .chain(crate::etcd::rungs::RUNGS.iter())
        .chain(crate::zookeeper::rungs::RUNGS.iter())
        .chain(crate::database::rungs::RUNGS.iter())
        .map(|r| r.id)
        .collect()
}

/// The error of [`build`]: no rung has that id.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown rung {0:?}; expected one of: {ids}", ids = all_ids().join(", "))]
pub struct UnknownRung(pub String);

/// Every rung id, in ladder order.
pub fn ids() -> Vec<&'static str> {
    LADDER.iter().map(|r| r.id).collect()
}

/// The rungs that exclude (every rung but the `no-lock` baseline), in
/// ladder order.
pub fn excluding() -> impl Iterator<Item = &'static Rung> {
    LADDER.iter().copied().filter(|r| r.excludes)
}

/// Builds the rung `id` over `nodes` (one connection per independent node;
/// single-node rungs use the first): a ladder rung or a registered one,
/// through its [`Registration`](crate::Registration).
pub fn build<C>(
    id: &str,
    nodes: Vec<C>,
    ctx: LockContext,
    config: LockConfig,
) -> Result<Box<dyn Lock>, UnknownRung>
where
    C: ConnectionLike + Clone + Send + Sync + 'static,
{
    let registration = registry::registration(id).ok_or_else(|| UnknownRung(id.to_string()))?;
    Ok(registration.build(nodes, ctx, config))
}

/// The factory of every ladder rung: the lock `id` from its parts. Only
/// called with a ladder rung's id.
pub(crate) fn construct(id: &str, parts: RungParts) -> Box<dyn Lock> {
    let RungParts { nodes, ctx, config } = parts;
    let first = || nodes[0].clone();
    match id {
        "no-lock" => Box::new(rungs::no_lock::NoLock::new(ctx, config)),
        "setnx" => Box::new(rungs::setnx::Setnx::new(first(), ctx, config)),
        "setnx-expire" => Box::new(rungs::setnx_expire::SetnxExpire::new(first(), ctx, config)),
        "set-timestamp" => Box::new(rungs::set_timestamp::SetTimestamp::new(
            first(),
            ctx,
            config,
        )),
        "set-nx-px" => Box::new(rungs::set_nx_px::SetNxPx::new(first(), ctx, config)),
        "get-check-del" => Box::new(rungs::get_check_del::GetCheckDel::new(first(), ctx, config)),
        "lua-release" => Box::new(rungs::lua_release::LuaRelease::new(first(), ctx, config)),
        "reentrant" => Box::new(rungs::reentrant::Reentrant::new(first(), ctx, config)),
        "watchdog" => Box::new(rungs::watchdog::Watchdog::new(first(), ctx, config)),
        "redlock" => Box::new(rungs::redlock::Redlock::new(nodes, ctx, config)),
        "fenced" => Box::new(rungs::fenced::Fenced::new(first(), ctx, config)),
        other => crate::libraries::build(other, nodes, ctx, config)
            .unwrap_or_else(|| unreachable!("{other} is a built-in rung without a constructor")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ladder_lists_eleven_rungs_numbered_in_order() {
        assert_eq!(LADDER.len(), 11);
        for (i, rung) in LADDER.iter().enumerate() {
            assert_eq!(rung.number as usize, i, "{}", rung.id);
        }
        assert_eq!(ids().first(), Some(&"no-lock"));
        assert_eq!(ids().last(), Some(&"fenced"));
    }

    #[test]
    fn every_ladder_rung_is_built_through_its_registration() {
        use crate::clock::SystemClock;
        use std::sync::Arc;
        for rung in LADDER {
            let ctx = LockContext::new(Arc::new(SystemClock::new()), 1);
            let conn = crate::ReconnectingConnection::new(
                crate::TcpDialer::new("127.0.0.1:1"),
                crate::ConnConfig::default(),
            );
            let lock = build(rung.id, vec![conn], ctx, LockConfig::default()).expect("builds");
            assert_eq!(lock.rung().id, rung.id);
        }
    }

    #[test]
    fn every_rung_states_its_own_texts_rather_than_the_plain_defaults() {
        for rung in LADDER {
            let texts = [
                rung.id,
                rung.acquire,
                rung.release,
                rung.fixes,
                rung.flaw,
                rung.shown_by,
            ];
            assert!(texts.iter().all(|t| !t.is_empty()), "{rung:?}");
        }
    }
}
