//! simpg as a turmoil host: sessions contending for advisory locks,
//! transactions and the lock table's visibility and row locks, a crash of
//! the server's host, and the same transcript from the same seed.

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{Answer, Pg, server};
use simpg::{AdvisoryKey, Change, ReleaseReason, RowChange, serve_sim};
use turmoil::net::TcpStream;

const PORT: u16 = 5432;

/// The seed every simulation here runs on: turmoil draws its message
/// latencies from its seed, which is random unless set.
const SEED: u64 = 7;

fn sim() -> turmoil::Sim<'static> {
    turmoil::Builder::new()
        .simulation_duration(Duration::from_secs(60))
        .rng_seed(SEED)
        .build()
}

/// A simulation with a fresh server on host `pg`.
fn sim_with_server() -> (turmoil::Sim<'static>, simpg::Server) {
    let mut sim = sim();
    let server = server();
    let s = server.clone();
    sim.host("pg", move || serve_sim(s.clone(), PORT));
    (sim, server)
}

async fn session() -> std::io::Result<Pg<TcpStream>> {
    Pg::connect(TcpStream::connect(("pg", PORT)).await?).await
}

/// Whether `pending` is still unanswered after a simulated second.
async fn still_waiting(pg: &mut Pg<TcpStream>) -> bool {
    tokio::time::timeout(Duration::from_secs(1), pg.recv())
        .await
        .is_err()
}

#[test]
fn a_client_that_sends_its_startup_without_asking_for_ssl_gets_a_session() {
    let (mut sim, _server) = sim_with_server();
    sim.client("c", async {
        let mut pg = Pg::start(TcpStream::connect(("pg", PORT)).await?).await?;
        assert!(pg.pid > 0);
        pg.send("SELECT pg_try_advisory_lock(1)").await?;
        assert_eq!(pg.recv().await?.value(), Some("t"));
        Ok(())
    });
    sim.run().unwrap();
}

#[test]
fn a_try_lock_fails_while_another_session_holds_the_key_and_a_blocking_lock_waits_for_its_unlock() {
    let (mut sim, _) = sim_with_server();
    sim.client("c", async {
        let mut a = session().await?;
        let mut b = session().await?;
        assert_ne!(a.pid, b.pid);
        assert_eq!(
            a.query("SELECT pg_try_advisory_lock(1)").await?.value(),
            Some("t")
        );
        assert_eq!(
            b.query("SELECT pg_try_advisory_lock(1)").await?.value(),
            Some("f")
        );
        b.send("SELECT pg_advisory_lock(1)").await?;
        assert!(still_waiting(&mut b).await, "b waits while a holds the key");
        // Other sessions go on meanwhile.
        assert_eq!(
            a.query("SELECT pg_try_advisory_lock(2)").await?.value(),
            Some("t")
        );
        assert_eq!(
            a.query("SELECT pg_advisory_unlock(1)").await?.value(),
            Some("t")
        );
        let granted = b.recv().await?;
        assert_eq!(granted.columns, ["pg_advisory_lock"]);
        assert_eq!(granted.value(), Some(""));
        assert_eq!(
            a.query("SELECT pg_try_advisory_lock(1)").await?.value(),
            Some("f")
        );
        Ok(())
    });
    sim.run().unwrap();
}

#[test]
fn a_blocking_lock_is_granted_when_the_holders_connection_drops() {
    let (mut sim, server) = sim_with_server();
    let changes = Arc::new(Mutex::new(Vec::new()));
    let seen = changes.clone();
    server.observe(Arc::new(move |c: &Change| {
        seen.lock().unwrap().push(c.clone())
    }));
    sim.client("c", async {
        let mut a = session().await?;
        let mut b = session().await?;
        a.query("SELECT pg_advisory_lock(9)").await?;
        b.send("SELECT pg_advisory_lock(9)").await?;
        assert!(still_waiting(&mut b).await);
        drop(a);
        assert_eq!(b.recv().await?.value(), Some(""));
        Ok(())
    });
    sim.run().unwrap();
    let changes = changes.lock().unwrap();
    let released = changes.iter().find_map(|c| match c {
        Change::LockReleased { key, why, .. } => Some((*key, *why)),
        _ => None,
    });
    assert_eq!(
        released,
        Some((AdvisoryKey::Big(9), ReleaseReason::SessionEnded))
    );
    let grants = changes
        .iter()
        .filter(|c| matches!(c, Change::LockGranted { .. }))
        .count();
    assert_eq!(grants, 2);
}

#[test]
fn session_locks_are_reentrant_so_a_key_locked_twice_needs_two_unlocks() {
    let (mut sim, _) = sim_with_server();
    sim.client("c", async {
        let mut a = session().await?;
        let mut b = session().await?;
        a.query("SELECT pg_advisory_lock(3)").await?;
        a.query("SELECT pg_advisory_lock(3)").await?;
        assert_eq!(
            a.query("SELECT pg_advisory_unlock(3)").await?.value(),
            Some("t")
        );
        assert_eq!(
            b.query("SELECT pg_try_advisory_lock(3)").await?.value(),
            Some("f")
        );
        assert_eq!(
            a.query("SELECT pg_advisory_unlock(3)").await?.value(),
            Some("t")
        );
        let third = a.query("SELECT pg_advisory_unlock(3)").await?;
        assert_eq!(third.value(), Some("f"));
        assert_eq!(third.notices[0].0, "01000");
        assert_eq!(
            b.query("SELECT pg_try_advisory_lock(3)").await?.value(),
            Some("t")
        );
        Ok(())
    });
    sim.run().unwrap();
}

#[test]
fn transaction_locks_go_at_commit_and_rollback_and_at_once_outside_a_transaction_block() {
    let (mut sim, _) = sim_with_server();
    sim.client("c", async {
        let mut a = session().await?;
        let mut b = session().await?;
        let try_b = "SELECT pg_try_advisory_lock(4)";
        // Outside BEGIN the statement is its own transaction.
        a.query("SELECT pg_advisory_xact_lock(4)").await?;
        assert_eq!(b.query(try_b).await?.value(), Some("t"));
        b.query("SELECT pg_advisory_unlock(4)").await?;
        for end in ["COMMIT", "ROLLBACK"] {
            assert_eq!(a.query("BEGIN").await?.status, 'T');
            a.query("SELECT pg_advisory_xact_lock(4)").await?;
            assert_eq!(b.query(try_b).await?.value(), Some("f"));
            assert_eq!(a.query(end).await?.tags, [end]);
            assert_eq!(b.query(try_b).await?.value(), Some("t"));
            b.query("SELECT pg_advisory_unlock(4)").await?;
        }
        Ok(())
    });
    sim.run().unwrap();
}

#[test]
fn a_failed_transaction_ignores_statements_until_it_ends_and_its_commit_rolls_back() {
    let (mut sim, _) = sim_with_server();
    sim.client("c", async {
        let mut a = session().await?;
        a.query("BEGIN").await?;
        let failed = a.query("SELECT nosuch()").await?;
        assert_eq!((failed.code(), failed.status), (Some("42883"), 'E'));
        let ignored = a.query("SELECT 1").await?;
        assert_eq!(ignored.code(), Some("25P02"));
        let commit = a.query("COMMIT").await?;
        assert_eq!((commit.tags[0].as_str(), commit.status), ("ROLLBACK", 'I'));
        let warned = a.query("COMMIT").await?;
        assert_eq!(warned.notices[0].0, "25P01");
        Ok(())
    });
    sim.run().unwrap();
}

const CREATE: &str = "CREATE TABLE locks (name text PRIMARY KEY, owner text NOT NULL, token bigint, expires_at timestamptz)";

#[test]
fn a_second_insert_of_the_same_key_fails_with_23505_unless_it_does_nothing_on_conflict() {
    let (mut sim, _) = sim_with_server();
    sim.client("c", async {
        let mut a = session().await?;
        a.query(CREATE).await?;
        let insert = "INSERT INTO locks (name, owner) VALUES ('a', 'w1')";
        assert_eq!(a.query(insert).await?.tags, ["INSERT 0 1"]);
        let dup = a.query(insert).await?;
        assert_eq!(dup.code(), Some("23505"));
        let quiet = a
            .query("INSERT INTO locks (name, owner) VALUES ('a', 'w2') ON CONFLICT DO NOTHING")
            .await?;
        assert_eq!(quiet.tags, ["INSERT 0 0"]);
        Ok(())
    });
    sim.run().unwrap();
}

#[test]
fn a_row_inserted_in_a_transaction_is_invisible_to_other_sessions_until_commit() {
    let (mut sim, _) = sim_with_server();
    sim.client("c", async {
        let mut a = session().await?;
        let mut b = session().await?;
        a.query(CREATE).await?;
        a.query("BEGIN").await?;
        a.query("INSERT INTO locks (name, owner, expires_at) VALUES ('a', 'w1', now() + interval '10 seconds')")
            .await?;
        let select = "SELECT owner FROM locks WHERE name = 'a' AND expires_at > now()";
        assert_eq!(a.query(select).await?.rows.len(), 1, "a sees its own row");
        assert_eq!(b.query(select).await?.tags, ["SELECT 0"]);
        // b's insert of the same key waits for a's transaction, then fails.
        b.send("INSERT INTO locks (name, owner) VALUES ('a', 'w2')").await?;
        assert!(still_waiting(&mut b).await);
        a.query("COMMIT").await?;
        assert_eq!(b.recv().await?.code(), Some("23505"));
        assert_eq!(b.query(select).await?.value(), Some("w1"));
        Ok(())
    });
    sim.run().unwrap();
}

#[test]
fn select_for_update_waits_until_the_rows_holder_ends_its_transaction() {
    let (mut sim, _) = sim_with_server();
    sim.client("c", async {
        let mut a = session().await?;
        let mut b = session().await?;
        a.query(CREATE).await?;
        a.query("INSERT INTO locks (name, owner, token) VALUES ('a', 'w1', 1)")
            .await?;
        a.query("BEGIN").await?;
        a.query("SELECT * FROM locks WHERE name = 'a' FOR UPDATE")
            .await?;
        b.query("BEGIN").await?;
        b.send("SELECT token FROM locks WHERE name = 'a' FOR UPDATE")
            .await?;
        assert!(still_waiting(&mut b).await);
        a.query("UPDATE locks SET token = token + 1 WHERE name = 'a'")
            .await?;
        a.query("COMMIT").await?;
        assert_eq!(
            b.recv().await?.value(),
            Some("2"),
            "b reads the committed row"
        );
        let blocked = b.query("COMMIT").await?;
        assert_eq!(blocked.tags, ["COMMIT"]);
        Ok(())
    });
    sim.run().unwrap();
}

#[test]
fn a_crash_of_the_server_host_loses_sessions_and_advisory_locks_and_keeps_committed_rows() {
    let (mut sim, server) = sim_with_server();
    sim.client("writer", async {
        let mut a = session().await?;
        a.query(CREATE).await?;
        a.query("INSERT INTO locks (name, owner) VALUES ('kept', 'w1')")
            .await?;
        a.query("BEGIN").await?;
        a.query("INSERT INTO locks (name, owner) VALUES ('lost', 'w1')")
            .await?;
        Ok(())
    });
    sim.host("app", || async {
        let mut a = session().await?;
        a.query("SELECT pg_advisory_lock(5)").await?;
        // Holds the lock for as long as the server lets it.
        std::future::pending::<()>().await;
        Ok(())
    });
    sim.run().unwrap();
    for _ in 0..100 {
        sim.step().unwrap();
    }
    assert_eq!(server.advisory_locks().len(), 1);
    sim.crash("pg");
    sim.step().unwrap();
    sim.bounce("pg");
    sim.client("after", async {
        let mut b = session().await?;
        assert_eq!(
            b.query("SELECT pg_try_advisory_lock(5)").await?.value(),
            Some("t")
        );
        let names = b.query("SELECT name FROM locks").await?;
        assert_eq!(names.rows, [[Some("kept".to_string())]]);
        Ok(())
    });
    sim.run().unwrap();
}

#[test]
fn a_malformed_message_ends_its_connection_only() {
    let (mut sim, _) = sim_with_server();
    sim.client("c", async {
        let mut a = session().await?;
        let mut b = session().await?;
        a.query("SELECT pg_advisory_lock(1)").await?;
        // A Query whose length is shorter than its own header.
        b.send_raw(b"Q\x00\x00\x00\x02").await?;
        assert!(b.recv().await.is_err(), "the server hung up");
        assert_eq!(
            a.query("SELECT pg_advisory_unlock(1)").await?.value(),
            Some("t")
        );
        Ok(())
    });
    sim.run().unwrap();
}

/// A contended run's transcript: every answer, in order.
fn transcript() -> Vec<Answer> {
    let (mut sim, _) = sim_with_server();
    let out = Arc::new(Mutex::new(Vec::new()));
    for name in ["w1", "w2", "w3"] {
        let out = out.clone();
        sim.client(name, async move {
            let mut pg = session().await?;
            for round in 0..3 {
                let sql = format!("SELECT pg_advisory_lock({round}), pg_backend_pid()");
                let got = pg.query(&sql).await?;
                out.lock().unwrap().push(got);
                let unlock = pg
                    .query(&format!("SELECT pg_advisory_unlock({round})"))
                    .await?;
                out.lock().unwrap().push(unlock);
            }
            Ok(())
        });
    }
    sim.run().unwrap();
    Arc::try_unwrap(out).unwrap().into_inner().unwrap()
}

#[test]
fn a_run_with_the_same_seed_gives_the_same_transcript() {
    let first = transcript();
    assert_eq!(first.len(), 18);
    assert_eq!(first, transcript());
}

#[test]
fn observers_see_a_row_write_only_when_its_transaction_commits() {
    let (mut sim, server) = sim_with_server();
    let changes = Arc::new(Mutex::new(Vec::new()));
    let seen = changes.clone();
    server.observe(Arc::new(move |c: &Change| {
        if let Change::RowCommitted { kind, key, .. } = c {
            seen.lock().unwrap().push((*kind, key.clone()));
        }
    }));
    let during = changes.clone();
    sim.client("c", async move {
        let mut a = session().await?;
        a.query(CREATE).await?;
        a.query("BEGIN").await?;
        a.query("INSERT INTO locks (name, owner) VALUES ('a', 'w1')")
            .await?;
        a.query("UPDATE locks SET owner = 'w2' WHERE name = 'a'")
            .await?;
        assert!(
            during.lock().unwrap().is_empty(),
            "nothing is committed yet"
        );
        a.query("COMMIT").await?;
        a.query("DELETE FROM locks WHERE owner = 'w2'").await?;
        Ok(())
    });
    sim.run().unwrap();
    let key = Some(simpg::Value::Text("a".into()));
    assert_eq!(
        *changes.lock().unwrap(),
        [(RowChange::Insert, key.clone()), (RowChange::Delete, key)]
    );
}

#[test]
fn odd_statements_get_postgresqls_errors_and_the_session_goes_on() {
    let (mut sim, _) = sim_with_server();
    sim.client("c", async {
        let mut a = session().await?;
        for (sql, code) in [
            ("SELEC 1", "42601"),
            ("SELECT 'unterminated", "42601"),
            ("SELECT (1", "42601"),
            ("SELECT * FROM", "42601"),
            ("SELECT ~", "42601"),
            ("SELECT 99999999999999999999", "0A000"),
            ("SELECT 'x' + 1", "22P02"),
            ("SELECT nosuch()", "42883"),
            ("SELECT * FROM nope", "42P01"),
            ("SELECT pg_advisory_lock_shared(1)", "0A000"),
            ("SELECT pg_sleep(1)", "0A000"),
            ("SHOW server_version", "0A000"),
            ("CREATE INDEX i ON t (c)", "0A000"),
            ("INSERT INTO", "42601"),
            ("UPDATE x SET", "42601"),
            ("SELECT interval 'soon'", "22007"),
            ("SELECT 9223372036854775807 + 1", "22003"),
        ] {
            let answer = a.query(sql).await?;
            assert_eq!(answer.code(), Some(code), "{sql}");
        }
        let empty = a.query(" ; ").await?;
        assert_eq!((empty.error, empty.status), (None, 'I'));
        assert_eq!(a.query("SELECT 1").await?.value(), Some("1"));
        Ok(())
    });
    sim.run().unwrap();
}

#[test]
fn a_multi_row_insert_that_waits_on_its_second_row_inserts_both_once_the_other_transaction_rolls_back()
 {
    let (mut sim, _) = sim_with_server();
    sim.client("c", async {
        let mut a = session().await?;
        let mut b = session().await?;
        a.query(CREATE).await?;
        a.query("BEGIN").await?;
        a.query("INSERT INTO locks (name, owner) VALUES ('y', 'a')")
            .await?;
        b.query("BEGIN").await?;
        b.send("INSERT INTO locks (name, owner) VALUES ('x', 'b'), ('y', 'b')")
            .await?;
        assert!(still_waiting(&mut b).await);
        a.query("ROLLBACK").await?;
        assert_eq!(b.recv().await?.tags, ["INSERT 0 2"]);
        b.query("COMMIT").await?;
        let rows = a.query("SELECT name, owner FROM locks").await?;
        assert_eq!(rows.tags, ["SELECT 2"]);
        Ok(())
    });
    sim.run().unwrap();
}

#[test]
fn two_sessions_waiting_on_each_others_advisory_locks_fail_the_first_waiter_with_40p01() {
    let (mut sim, _) = sim_with_server();
    sim.client("c", async {
        let mut a = session().await?;
        let mut b = session().await?;
        a.query("SELECT pg_advisory_lock(1)").await?;
        b.query("SELECT pg_advisory_lock(2)").await?;
        a.send("SELECT pg_advisory_lock(2)").await?;
        assert!(still_waiting(&mut a).await);
        b.send("SELECT pg_advisory_lock(1)").await?;
        assert_eq!(a.recv().await?.code(), Some("40P01"));
        assert!(still_waiting(&mut b).await, "a still holds key 1");
        a.query("SELECT pg_advisory_unlock(1)").await?;
        assert_eq!(b.recv().await?.value(), Some(""));
        Ok(())
    });
    sim.run().unwrap();
}
