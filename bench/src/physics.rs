//! What the network allows: each implementation's round trips per
//! uncontended cycle, the fastest rate a measured round trip allows, and
//! the check that flags a figure beating the floor when it cannot.
//!
//! The table is read off each implementation's code path (one successful
//! acquire and its release, after warm-up: scripts are cached, so
//! `redis::Script` sends one `EVALSHA`); commands sent to several nodes at
//! once count as one round trip. `bench/tests/bench_tests/round_trips.rs` counts the
//! commands a real server sees per cycle and holds this table to it; for
//! the etcd rows, whose commands are gRPC requests, `bench/tests/bench_tests/etcd_rows.rs`
//! counts them in the member's own request counters, and for the
//! ZooKeeper rows `bench/tests/bench_tests/zookeeper_rows.rs` in the server's count
//! of the requests it received. The database rows' statements are read
//! off `locks::database::rungs` the same way; what each costs the server's
//! disk is counted by the run itself (`wal_fsyncs_per_cycle`).

use crate::client::{Impl, RSLOCK_MODEL};

/// One implementation's uncontended cycle.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cycle {
    /// `floor`, `rslock` or a rung id.
    pub name: &'static str,
    /// The commands of one cycle on one node, in order.
    pub commands: &'static [&'static str],
    /// Round trips one after the other per cycle (on N nodes the commands
    /// of a round go to every node at once).
    pub round_trips: u32,
}

impl Cycle {
    /// A row of [`CYCLES`].
    const fn new(name: &'static str, commands: &'static [&'static str], round_trips: u32) -> Cycle {
        Cycle {
            name,
            commands,
            round_trips,
        }
    }
}

/// Every implementation's cycle: the one table of round trips.
pub const CYCLES: [Cycle; 35] = [
    Cycle::new("floor", &["SET NX PX", "EVALSHA release"], 2),
    Cycle::new("rslock", &["SET NX PX", "EVALSHA unlock"], 2),
    Cycle::new("setnx", &["SETNX", "DEL"], 2),
    Cycle::new("setnx-expire", &["SETNX", "EXPIRE", "DEL"], 3),
    Cycle::new("set-timestamp", &["SET NX PX", "GET", "DEL"], 3),
    Cycle::new("set-nx-px", &["SET NX PX", "DEL"], 2),
    Cycle::new("get-check-del", &["SET NX PX", "GET", "DEL"], 3),
    Cycle::new("lua-release", &["SET NX PX", "EVALSHA release"], 2),
    Cycle::new("reentrant", &["EVALSHA acquire", "EVALSHA release"], 2),
    Cycle::new("watchdog", &["EVALSHA acquire", "EVALSHA release"], 2),
    Cycle::new("redlock", &["SET NX PX", "EVALSHA release"], 2),
    Cycle::new(
        "fenced",
        &["EVALSHA acquire + INCR fence", "EVALSHA release"],
        2,
    ),
    // The library rungs measured on real Redis (`LIBRARY_ROWS`). Redisson,
    // after a grant, asks ROLE whether the master has replicas to WAIT for
    // (none here, so no WAIT).
    Cycle::new(
        "redisson",
        &["EVALSHA acquire", "ROLE", "EVALSHA release"],
        3,
    ),
    // The fair lock, uncontended: nobody queued, so its acquire script
    // grants at once; then ROLE, as `redisson`.
    Cycle::new(
        "redisson-fair",
        &["EVALSHA fair acquire", "ROLE", "EVALSHA fair release"],
        3,
    ),
    // The read-write lock's write lock, uncontended: its acquire script
    // grants at once; then ROLE, as `redisson`. (The benchmark's clients
    // all write; its read lock is not measured.)
    Cycle::new(
        "redisson-rw",
        &["EVALSHA write acquire", "ROLE", "EVALSHA write release"],
        3,
    ),
    // The semaphore of one permit, as users call it: trySetPermits(1)
    // before every acquire (a script that finds the counter there and
    // leaves it), the try script, then ROLE as `redisson` (the same synced
    // evaluation); the release script is not followed by a WAIT.
    Cycle::new(
        "redisson-semaphore",
        &[
            "EVALSHA trySetPermits",
            "EVALSHA try",
            "ROLE",
            "EVALSHA release",
        ],
        4,
    ),
    Cycle::new("redsync", &["SET NX PX", "EVALSHA release"], 2),
    Cycle::new("node-redlock", &["SET NX PX", "EVALSHA release"], 2),
    // The `rslock` library rung, named apart from the crate it models: the
    // crate's `lock()` and `unlock()` round for round. Its `using()`
    // extension is due 500 ms before the validity ends, long after an
    // uncontended cycle has released, so it sends nothing here.
    Cycle::new(RSLOCK_MODEL, &["SET NX PX", "EVALSHA release"], 2),
    // python-redis-lock asks whether the lock is already its own before
    // its SET; uncontended it never pops the signal list, and its renewal
    // (every TTL × 2/3) is not due before the release.
    Cycle::new(
        "python-redis-lock",
        &["GET", "SET NX PX", "EVALSHA release"],
        3,
    ),
    // Measured on locklab's simulated node (`SIMULATED_NODE_ROWS`).
    Cycle::new("native-cad", &["SET NX PX", "DELEX IFEQ"], 2),
    // The etcd rungs (`ETCD_ROWS`), on a real etcd member: every acquire
    // opens a session (a lease grant) and every release closes it (a
    // revoke), each one more request, and one more Raft entry, than the
    // lock itself needs. Uncontended, the Mutex's one transaction (put if
    // absent + read the oldest key) finds its own key first and neither
    // watches nor reads its key again. The session's keep-alive stream
    // (`ETCD_SESSION_ALONGSIDE`) is opened beside the cycle, off its path.
    Cycle::new(
        "etcd-mutex-3.4",
        &["LeaseGrant", "Txn", "DeleteRange", "LeaseRevoke"],
        4,
    ),
    Cycle::new(
        "etcd-mutex",
        &["LeaseGrant", "Txn", "DeleteRange", "LeaseRevoke"],
        4,
    ),
    Cycle::new(
        "etcd-lock-rpc",
        &["LeaseGrant", "Lock", "Unlock", "LeaseRevoke"],
        4,
    ),
    Cycle::new(
        "etcd-fenced",
        &["LeaseGrant", "Txn", "DeleteRange", "LeaseRevoke"],
        4,
    ),
    // The ZooKeeper rungs (`ZOOKEEPER_ROWS`), on a real ZooKeeper server:
    // each lock keeps its session from cycle to cycle (the pings that keep
    // it alive are off the cycle's path), and its parent node stays, so
    // an uncontended cycle creates its node, lists the parent's children
    // (its own is the lowest: no watch is set) and deletes its node.
    // `zk-fenced` creates with `create2`, whose reply carries the node's
    // stat, the token's `czxid`.
    Cycle::new("zk-recipe", &["create", "getChildren", "delete"], 3),
    Cycle::new("zk-herd", &["create", "getChildren", "delete"], 3),
    Cycle::new("curator-mutex", &["create", "getChildren", "delete"], 3),
    Cycle::new("zk-fenced", &["create2", "getChildren", "delete"], 3),
    // The database rungs (`POSTGRES_ROWS`, `MYSQL_ROWS`), on real servers:
    // each lock keeps one session (its connection) from cycle to cycle and
    // sends one statement per round trip, as a simple query; its table is
    // made once, with the session. The rows' writes are transactions of
    // one statement each, committed (and so fsynced) before the answer.
    Cycle::new("db-unique-row", &["INSERT", "DELETE"], 2),
    Cycle::new(
        "db-unique-row-expiry",
        &["DELETE expired", "INSERT", "DELETE if owner"],
        3,
    ),
    Cycle::new(
        "pg-advisory",
        &["SELECT pg_try_advisory_lock", "SELECT pg_advisory_unlock"],
        2,
    ),
    Cycle::new(
        "pg-advisory-xact",
        &["BEGIN", "SELECT pg_try_advisory_xact_lock", "COMMIT"],
        3,
    ),
    Cycle::new(
        "db-fenced",
        &[
            "INSERT ... ON CONFLICT DO UPDATE ... RETURNING version",
            "UPDATE owner = NULL",
        ],
        2,
    ),
    Cycle::new(
        "mysql-get-lock",
        &["SELECT GET_LOCK", "SELECT RELEASE_LOCK"],
        2,
    ),
];

/// The etcd rungs the benchmark measures on a real etcd member, beside
/// the floor and `lua-release` on redis-server in the same rounds.
pub const ETCD_ROWS: [&str; 4] = [
    "etcd-mutex-3.4",
    "etcd-mutex",
    "etcd-lock-rpc",
    "etcd-fenced",
];

/// The ZooKeeper rungs the benchmark measures on a real ZooKeeper server,
/// beside the floor and `lua-release` on redis-server in the same rounds.
pub const ZOOKEEPER_ROWS: [&str; 4] = ["zk-recipe", "zk-herd", "curator-mutex", "zk-fenced"];

/// The PostgreSQL rungs the benchmark measures on a real PostgreSQL
/// server, beside the floor and `lua-release` on redis-server in the same
/// rounds. `pg-advisory-pooled` has no row of its own: it sends
/// `pg-advisory`'s statements, through a pool.
pub const POSTGRES_ROWS: [&str; 5] = [
    "db-unique-row",
    "db-unique-row-expiry",
    "pg-advisory",
    "pg-advisory-xact",
    "db-fenced",
];

/// The MySQL rungs the benchmark measures on a real MariaDB server, the
/// same way.
pub const MYSQL_ROWS: [&str; 1] = ["mysql-get-lock"];

/// The request each etcd session sends beside its cycle, not in turn with
/// it: the keep-alive stream, opened by a task of its own as the lease is
/// granted (and at most once per cycle: a cycle that ends first cancels
/// it before it is sent).
pub const ETCD_SESSION_ALONGSIDE: &str = "LeaseKeepAlive";

/// The library rungs the benchmark measures on redis-server beside the
/// floor and rslock (the `rslock` rung as [`RSLOCK_MODEL`], beside the
/// crate it models).
pub const LIBRARY_ROWS: [&str; 8] = [
    "redisson",
    "redisson-fair",
    "redisson-rw",
    "redisson-semaphore",
    "redsync",
    "node-redlock",
    "rslock",
    "python-redis-lock",
];

/// The library rungs measured on locklab's simulated node over TCP instead
/// (see [`crate::sim_node`]), beside the floor and `lua-release` there:
/// `native-cad` releases with `DELEX` (Redis 8.4) or `DELIFEQ` (Valkey
/// 9.0), which no server on this machine answers.
pub const SIMULATED_NODE_ROWS: [&str; 1] = ["native-cad"];

/// Whether the cycle of `name` runs on redis-server: every row but those
/// of the simulated node, etcd, ZooKeeper, PostgreSQL and MariaDB.
pub fn on_redis_server(name: &str) -> bool {
    ![
        &SIMULATED_NODE_ROWS[..],
        &ETCD_ROWS,
        &ZOOKEEPER_ROWS,
        &POSTGRES_ROWS,
        &MYSQL_ROWS,
    ]
    .iter()
    .any(|rows| rows.contains(&name))
}

/// The cycle of `name` (`floor`, `rslock`, [`RSLOCK_MODEL`] or a rung id).
pub fn cycle(name: &str) -> Option<&'static Cycle> {
    CYCLES.iter().find(|c| c.name == name)
}

/// Round trips per uncontended cycle of `which`.
pub fn round_trips(which: Impl) -> Option<u32> {
    cycle(which.name()).map(|c| c.round_trips)
}

/// How much faster than the floor a rung with as many round trips may
/// honestly be: a cheaper command on the same round trip (`DEL` instead
/// of the floor's `EVALSHA`) saves server CPU, which matters when client
/// and server share a CPU (measured at about 6% of a cycle there).
pub const SAME_TRIPS_ALLOWANCE: f64 = 0.10;

/// Whether a rate ratio to the floor whose interval starts at `low` is a
/// measurement anomaly: an implementation with `trips` round trips per
/// cycle cannot beat the floor's `floor_trips` beyond its interval when it
/// needs more round trips, nor by more than [`SAME_TRIPS_ALLOWANCE`] with
/// as many. Fewer round trips than the floor may be faster: no anomaly.
pub fn beats_the_floor_impossibly(trips: u32, floor_trips: u32, low: f64) -> bool {
    if trips > floor_trips {
        low > 1.0
    } else if trips == floor_trips {
        low > 1.0 + SAME_TRIPS_ALLOWANCE
    } else {
        false
    }
}

/// The most cycles per second `round_trips` round trips of `rtt_us` each
/// allow (0 when either is unknown).
pub fn bound_per_s(round_trips: u32, rtt_us: f64) -> f64 {
    if round_trips == 0 || rtt_us <= 0.0 {
        0.0
    } else {
        1e6 / (round_trips as f64 * rtt_us)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_rung_that_excludes_and_both_baselines_have_a_cycle() {
        for rung in locks::excluding() {
            let c = cycle(rung.id).unwrap_or_else(|| panic!("{} has no round trips", rung.id));
            assert!(c.round_trips >= 1 && c.commands.len() >= c.round_trips as usize);
        }
        assert!(cycle("floor").is_some() && cycle("rslock").is_some());
        for id in LIBRARY_ROWS.into_iter().chain(SIMULATED_NODE_ROWS) {
            let rung = locks::rung(id).unwrap_or_else(|| panic!("{id} is not a rung"));
            let which = Impl::Rung(rung.id, crate::client::Wait::Fixed);
            assert!(round_trips(which).is_some(), "{id} has no round trips");
        }
        assert_eq!(
            CYCLES.len(),
            locks::excluding().count()
                + 2
                + LIBRARY_ROWS.len()
                + SIMULATED_NODE_ROWS.len()
                + ETCD_ROWS.len()
                + ZOOKEEPER_ROWS.len()
                + POSTGRES_ROWS.len()
                + MYSQL_ROWS.len()
        );
    }

    #[test]
    fn every_library_rung_has_a_row_and_the_rslock_rung_its_own_name() {
        let mut measured: Vec<&str> = LIBRARY_ROWS
            .into_iter()
            .chain(SIMULATED_NODE_ROWS)
            .collect();
        let mut libraries: Vec<&str> = locks::libraries::LIBRARIES.iter().map(|r| r.id).collect();
        measured.sort_unstable();
        libraries.sort_unstable();
        assert_eq!(measured, libraries);
        let model = Impl::Rung("rslock", crate::client::Wait::Fixed);
        assert_eq!(model.name(), RSLOCK_MODEL);
        assert_ne!(model.name(), Impl::Rslock.name());
        assert_eq!(Impl::named(RSLOCK_MODEL), Some(model));
    }

    #[test]
    fn every_etcd_rung_has_a_row_and_is_named_as_an_etcd_implementation() {
        let etcd: Vec<&str> = locks::etcd::rungs::RUNGS.iter().map(|r| r.id).collect();
        assert_eq!(ETCD_ROWS.to_vec(), etcd);
        for id in ETCD_ROWS {
            let which = Impl::named(id).unwrap_or_else(|| panic!("{id} is not named"));
            assert_eq!(which, Impl::Etcd(id));
            assert_eq!(round_trips(which), Some(4), "{id}");
        }
    }

    #[test]
    fn every_zookeeper_rung_has_a_row_and_is_named_as_a_zookeeper_implementation() {
        let zk: Vec<&str> = locks::zookeeper::rungs::RUNGS
            .iter()
            .map(|r| r.id)
            .collect();
        assert_eq!(ZOOKEEPER_ROWS.to_vec(), zk);
        for id in ZOOKEEPER_ROWS {
            let which = Impl::named(id).unwrap_or_else(|| panic!("{id} is not named"));
            assert_eq!(which, Impl::ZooKeeper(id));
            assert_eq!(round_trips(which), Some(3), "{id}");
        }
        assert_eq!(Impl::ZooKeeper("zk-herd").wait(), "watch-parent");
        assert_eq!(Impl::ZooKeeper("zk-recipe").wait(), "watch");
    }

    #[test]
    fn every_database_rung_has_a_row_and_is_named_as_its_services_implementation() {
        let rows = |service: &str| -> Vec<&str> {
            // A pooled rung sends pg-advisory's statements through a pool:
            // with one caller per process, pg-advisory's row is its cost.
            locks::database::rungs::RUNGS
                .iter()
                .filter(|r| r.service == service && !locks::database::rungs::is_pooled(r.id))
                .map(|r| r.id)
                .collect()
        };
        assert_eq!(
            POSTGRES_ROWS.to_vec(),
            rows(locks::database::rungs::SERVICE)
        );
        assert_eq!(
            MYSQL_ROWS.to_vec(),
            rows(locks::database::rungs::MYSQL_SERVICE)
        );
        for id in POSTGRES_ROWS {
            assert_eq!(Impl::named(id), Some(Impl::Postgres(id)), "{id}");
        }
        assert_eq!(
            Impl::named("mysql-get-lock"),
            Some(Impl::MySql("mysql-get-lock"))
        );
        for id in POSTGRES_ROWS.into_iter().chain(MYSQL_ROWS) {
            let c = cycle(id).unwrap_or_else(|| panic!("{id} has no round trips"));
            // One statement per round trip: a session answers one at a time.
            assert_eq!(c.commands.len(), c.round_trips as usize, "{id}");
        }
        assert_eq!(Impl::Postgres("pg-advisory").wait(), "fixed");
    }

    #[test]
    fn more_round_trips_than_the_floor_may_never_beat_it() {
        assert!(beats_the_floor_impossibly(3, 2, 1.01));
        assert!(!beats_the_floor_impossibly(3, 2, 0.99));
    }

    #[test]
    fn as_many_round_trips_may_beat_the_floor_only_by_cheaper_commands() {
        assert!(!beats_the_floor_impossibly(2, 2, 1.05));
        assert!(beats_the_floor_impossibly(
            2,
            2,
            1.0 + SAME_TRIPS_ALLOWANCE + 0.01
        ));
    }

    #[test]
    fn fewer_round_trips_may_beat_the_floor_by_any_margin() {
        assert!(!beats_the_floor_impossibly(1, 2, 1.9));
    }

    #[test]
    fn the_bound_is_one_cycle_per_round_trips_times_rtt() {
        assert_eq!(bound_per_s(2, 50.0), 10_000.0);
        assert_eq!(bound_per_s(0, 50.0), 0.0);
        assert_eq!(bound_per_s(2, 0.0), 0.0);
    }
}
