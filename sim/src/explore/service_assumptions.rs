//! The assumptions of the rungs on etcd, ZooKeeper and the databases, and
//! of `native-cad`: what each service documents and promises, in the
//! vocabulary of [`super::assumptions`] (sources cited in docs/ladder.md
//! §12, "The services").
//!
//! | rung | assumptions |
//! |---|---|
//! | `native-cad` | as `lua-release` (Redis's lease, the same single-instance pattern with native commands) |
//! | `etcd-mutex`, `etcd-mutex-3.4`, `etcd-lock-rpc` | the renewal budget (a keep-alive every TTL/3): pauses, delays and the ensemble's faults (a member down or cut off stalls the keep-alives) within 2·TTL/3 − margin; no partition between clients and members; any member crash and restart, a minority lost for good, partitions among members; any clock jump (leases run on monotonic clocks), drift ≤ 1000 ppm; client crashes allowed; no nested acquire |
//! | `zk-fenced` | a fenced resource; the token (a creation zxid) only grows: anything the ensemble survives (a minority lost), any pause, delay, partition or clock fault, also on the store's links |
//! | `etcd-fenced` | as `zk-fenced` (the token a create revision), but no partition between clients and members: it wedges the simulated gRPC connection for good, which no real network does; and no member loses power: clientv3's defaults send no gRPC keep-alive, so its clients would stay on the silent member (both found by this search) |
//! | `curator-mutex` | as `etcd-mutex` (a session is a lease, pinged every TTL/3) |
//! | `zk-recipe`, `zk-herd` | as `curator-mutex`, but no member crash and no fault on the links among members: either can lose a create's reply, and these rungs do not do the recipe's recovery of it (their documented flaw) |
//! | `db-unique-row` | no client crash (nothing removes a dead holder's row); no lost or late reply between clients and the database; no server crash (a restart keeps the row, but a release it cuts is lost, and then nothing removes the row: found by this search); no failover; any pause or clock fault |
//! | `db-unique-row-expiry` | the lease budget, its clock the server's; client crashes and lost replies allowed; the server may restart; no failover |
//! | `pg-advisory`, `pg-advisory-xact`, `pg-advisory-pooled`, `mysql-get-lock` | no server crash (a restart ends every session and its locks); no lost reply between clients and the database and no delay as long as the reply timeout (either can end the holder's session under it); no failover; any pause (the session outlives it) or clock fault; client crashes allowed |
//! | `db-fenced` | a fenced resource; the row's version only grows: the server may restart, no failover; anything else, also on the store's links |

use super::assumptions::{Assumptions, Budget, ClientLinks, NodeFaults, SINGLE_NODE_LEASE};

/// The assumptions of a rung on etcd, ZooKeeper or a database, or of
/// `native-cad`; `None` for any other.
pub fn service_assumptions(rung: &str) -> Option<Assumptions> {
    let a = match rung {
        // The single-instance pattern of the Redlock page, with the release
        // and the extension done by the server's own compare-and-delete.
        "native-cad" => Assumptions {
            rung: "native-cad",
            summary: "as lua-release: hold + pauses + delays within TTL - allowance - margin; \
                      no failover; node restarts only persistent or delayed; no nested acquire",
            ..SINGLE_NODE_LEASE
        },
        // etcd's "Notes on the usage of lock and lease": a lock is held
        // while its lease lives, and a holder whose lease expired (a pause,
        // lost keep-alives) no longer holds it. etcd tolerates the loss of
        // a minority and keeps what it acknowledged; a new leader extends
        // every lease. The keep-alive is sent every TTL/3.
        "etcd-mutex" | "etcd-mutex-3.4" | "etcd-lock-rpc" => Assumptions {
            rung: locks::rung(rung).map(|r| r.id).unwrap_or(""),
            summary: "pauses + delays + the ensemble's faults within 2 TTL/3 - margin; no \
                      partition between clients and members; any member crash, a minority \
                      lost; any clock jump; no nested acquire",
            ..LEASED_SESSION
        },
        "curator-mutex" => Assumptions {
            rung: "curator-mutex",
            summary: "as etcd-mutex: pauses + delays + the ensemble's faults within 2 TTL/3 - \
                      margin; no partition between clients and servers; any server crash, a \
                      minority lost; no nested acquire",
            ..LEASED_SESSION
        },
        // The ZooKeeper recipe asks a client whose create failed with a
        // lost connection to look for its own node; these rungs do not
        // (their documented flaw), so no fault may lose a create's reply.
        "zk-recipe" | "zk-herd" => Assumptions {
            rung: locks::rung(rung).map(|r| r.id).unwrap_or(""),
            summary: "as curator-mutex, but no server crash and no fault among the servers \
                      (either can lose a create's reply, which these rungs do not recover)",
            nodes: NodeFaults::Never,
            node_links: false,
            ..LEASED_SESSION
        },
        "zk-fenced" => Assumptions {
            rung: "zk-fenced",
            summary: "a fenced resource and a token that only grows: a minority of servers \
                      lost at most; anything else",
            budget: Budget::None,
            client_links: ClientLinks::Any,
            store_links: true,
            ..LEASED_SESSION
        },
        // As zk-fenced, but a partition between a client and its member
        // wedges the simulated gRPC connection for good (the simulated TCP
        // does not resend what a partition dropped, and the channel has
        // no keep-alive to notice): the client's later requests all time
        // out, which no real network does. Left out, found by this search.
        // And no member loses power: clientv3 with its defaults (which the
        // client here follows) sends no gRPC keep-alive, so a client whose
        // member goes silent stays on it, its lease expires and its waits
        // never end; etcd's maintainers answer such reports with "set
        // DialKeepAliveTime". The other etcd rungs leave it out through
        // their budget (a silent member spends all of it). Found by this
        // search too.
        "etcd-fenced" => Assumptions {
            rung: "etcd-fenced",
            summary: "a fenced resource and a token that only grows: a minority of members \
                      lost at most, by a process's death, never a power loss; no partition \
                      between clients and members; anything else",
            budget: Budget::None,
            store_links: true,
            silent_nodes: false,
            ..LEASED_SESSION
        },
        // A committed row outlives restarts, but a release cut by one is
        // lost, and then nothing removes the row (the rung's flaw): the
        // restart is left out, found by this search.
        "db-unique-row" => Assumptions {
            rung: "db-unique-row",
            summary: "no client crash; no lost or late reply between clients and the \
                      database; no server crash (a release it cuts is lost, and nothing \
                      removes the row); no failover",
            budget: Budget::None,
            client_crashes: false,
            client_links: ClientLinks::NoLossWithinTimeout,
            nodes: NodeFaults::Never,
            node_forward_jumps: true,
            ..SINGLE_NODE_LEASE
        },
        "db-unique-row-expiry" => Assumptions {
            rung: "db-unique-row-expiry",
            summary: "hold + pauses + delays within TTL - allowance - margin; server restarts \
                      keep the row; no failover",
            nodes: NodeFaults::RestartIfPersistent,
            ..SINGLE_NODE_LEASE
        },
        "pg-advisory" | "pg-advisory-xact" | "pg-advisory-pooled" | "mysql-get-lock" => {
            Assumptions {
                rung: locks::rung(rung).map(|r| r.id).unwrap_or(""),
                summary: "no server crash; no lost or late reply between clients and the \
                          database; no failover; any pause",
                ..SESSION_LOCK
            }
        }
        "db-fenced" => Assumptions {
            rung: "db-fenced",
            summary: "a fenced resource and a row version that only grows: server restarts \
                      keep it, no failover; anything else",
            budget: Budget::None,
            store_links: true,
            nodes: NodeFaults::RestartIfPersistent,
            node_forward_jumps: true,
            ..SINGLE_NODE_LEASE
        },
        _ => return None,
    };
    Some(a)
}

/// A lock held while a session lives, the session a lease its client keeps
/// alive every TTL/3 (etcd's lease, ZooKeeper's session), on an ensemble.
const LEASED_SESSION: Assumptions = Assumptions {
    rung: "",
    summary: "",
    budget: Budget::Renewal,
    client_links: ClientLinks::NoLoss,
    nodes: NodeFaults::Quorum,
    node_forward_jumps: true,
    ..SINGLE_NODE_LEASE
};

/// A lock held while a database session lives, with no TTL.
const SESSION_LOCK: Assumptions = Assumptions {
    rung: "",
    summary: "",
    budget: Budget::None,
    client_links: ClientLinks::NoLossWithinTimeout,
    nodes: NodeFaults::Never,
    node_forward_jumps: true,
    ..SINGLE_NODE_LEASE
};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::explore::{FaultMode, generate};
    use model::fault::{Crash, CrashKind, FaultAction, FaultSpec, Trigger};
    use model::host::Host;

    fn with_fault(rung: &str, seed: u64, action: FaultAction) -> crate::explore::Case {
        let mut case = generate(rung, &FaultMode::Assumed, seed);
        case.faults = vec![FaultSpec {
            when: Trigger {
                at_ms: Some(100),
                on: None,
            },
            action,
        }];
        case
    }

    #[test]
    fn a_server_restart_is_outside_db_unique_rows_assumptions_as_it_can_cut_a_release() {
        let restart = FaultAction::Crash(Crash {
            target: Some(Host::Node(0)),
            how: CrashKind::ProcessKill,
            restart_after_ms: Some(50),
        });
        let case = with_fault("db-unique-row", 1, restart.clone());
        let why = service_assumptions("db-unique-row")
            .expect("written")
            .admits(&case)
            .expect_err("refused");
        assert!(why.contains("no node crashes"), "{why}");
        let expiry = with_fault("db-unique-row-expiry", 1, restart);
        assert_eq!(
            service_assumptions("db-unique-row-expiry")
                .expect("written")
                .admits(&expiry),
            Ok(())
        );
    }

    #[test]
    fn a_members_power_loss_is_outside_etcd_fenceds_assumptions_and_a_kill_inside() {
        let crash = |how| {
            FaultAction::Crash(Crash {
                target: Some(Host::Node(0)),
                how,
                restart_after_ms: None,
            })
        };
        let fenced = service_assumptions("etcd-fenced").expect("written");
        let silent = with_fault("etcd-fenced", 1, crash(CrashKind::PowerLoss));
        let why = fenced.admits(&silent).expect_err("refused");
        assert!(why.contains("loses power"), "{why}");
        let killed = with_fault("etcd-fenced", 1, crash(CrashKind::ProcessKill));
        assert_eq!(fenced.admits(&killed), Ok(()));
        let zk = with_fault("zk-fenced", 1, crash(CrashKind::PowerLoss));
        assert_eq!(
            service_assumptions("zk-fenced")
                .expect("written")
                .admits(&zk),
            Ok(()),
            "a ZooKeeper client's own read timeout notices a silent server"
        );
    }

    #[test]
    fn a_client_partition_is_outside_etcd_fenceds_assumptions_and_inside_zk_fenceds() {
        let cut = FaultAction::Partition(model::fault::Partition {
            a: vec![Host::Client(0)],
            b: vec![Host::Node(0)],
            oneway: false,
            duration_ms: Some(500),
        });
        let etcd = with_fault("etcd-fenced", 1, cut.clone());
        assert!(
            service_assumptions("etcd-fenced")
                .expect("written")
                .admits(&etcd)
                .is_err()
        );
        let zk = with_fault("zk-fenced", 1, cut);
        assert_eq!(
            service_assumptions("zk-fenced")
                .expect("written")
                .admits(&zk),
            Ok(())
        );
    }
}
