//! simmysql as a turmoil host: sessions contending for named locks,
//! transactions and the lock table's visibility and row locks, a crash of
//! the server's host, and the same transcript from the same seed.

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{My, server};
use simmysql::{Change, ReleaseReason, RowChange, Value, serve_sim};
use turmoil::net::TcpStream;

const PORT: u16 = 3306;

/// The seed every simulation here runs on: turmoil draws its message
/// latencies from its seed, which is random unless set.
const SEED: u64 = 7;

fn sim() -> turmoil::Sim<'static> {
    turmoil::Builder::new()
        .simulation_duration(Duration::from_secs(300))
        .rng_seed(SEED)
        .build()
}

/// A simulation with a fresh server on host `db`.
fn sim_with_server() -> (turmoil::Sim<'static>, simmysql::Server) {
    let mut sim = sim();
    let server = server();
    let s = server.clone();
    sim.host("db", move || serve_sim(s.clone(), PORT));
    (sim, server)
}

async fn session() -> std::io::Result<My<TcpStream>> {
    My::connect(TcpStream::connect(("db", PORT)).await?, Some("test")).await
}

/// Whether the answer to what `my` sent is still missing after a
/// simulated second.
async fn still_waiting(my: &mut My<TcpStream>) -> bool {
    tokio::time::timeout(Duration::from_secs(1), my.recv())
        .await
        .is_err()
}

#[test]
fn a_try_lock_fails_while_another_session_holds_it_and_a_waiting_get_lock_is_granted_at_release() {
    let (mut sim, _) = sim_with_server();
    sim.client("c", async {
        let mut a = session().await?;
        let mut b = session().await?;
        assert_ne!(a.id, b.id);
        assert_eq!(a.version, "5.5.5-10.11.19-MariaDB-0+deb12u1");
        let got = a.query("SELECT GET_LOCK('a', 0)").await?;
        assert_eq!(got.columns, ["GET_LOCK('a', 0)"]);
        assert_eq!(got.value(), Some("1"));
        assert_eq!(b.query("SELECT GET_LOCK('a', 0)").await?.value(), Some("0"));
        b.send("SELECT GET_LOCK('a', 10)").await?;
        assert!(
            still_waiting(&mut b).await,
            "b waits while a holds the lock"
        );
        assert_eq!(a.query("SELECT GET_LOCK('b', 0)").await?.value(), Some("1"));
        assert_eq!(
            a.query("SELECT RELEASE_LOCK('a')").await?.value(),
            Some("1")
        );
        assert_eq!(b.recv().await?.value(), Some("1"));
        let used = a.query("SELECT IS_USED_LOCK('a')").await?;
        assert_eq!(used.value(), Some(b.id.to_string().as_str()));
        assert_eq!(
            a.query("SELECT IS_FREE_LOCK('a')").await?.value(),
            Some("0")
        );
        assert_eq!(a.query("SELECT IS_USED_LOCK('zz')").await?.value(), None);
        Ok(())
    });
    sim.run().unwrap();
}

#[test]
fn a_waiting_get_lock_times_out_with_0_on_simulated_time() {
    let (mut sim, _) = sim_with_server();
    sim.client("c", async {
        let mut a = session().await?;
        let mut b = session().await?;
        a.query("SELECT GET_LOCK('a', 0)").await?;
        let started = tokio::time::Instant::now();
        assert_eq!(b.query("SELECT GET_LOCK('a', 5)").await?.value(), Some("0"));
        let waited = started.elapsed();
        assert!(waited >= Duration::from_secs(5), "{waited:?}");
        assert!(waited < Duration::from_secs(6), "{waited:?}");
        Ok(())
    });
    sim.run().unwrap();
}

#[test]
fn a_waiting_get_lock_is_granted_when_the_holder_disconnects() {
    let (mut sim, server) = sim_with_server();
    let changes = Arc::new(Mutex::new(Vec::new()));
    let seen = changes.clone();
    server.observe(Arc::new(move |c: &Change| {
        seen.lock().unwrap().push(c.clone())
    }));
    sim.client("c", async move {
        let mut a = session().await?;
        let mut b = session().await?;
        let (a_id, b_id) = (a.id, b.id);
        a.query("SELECT GET_LOCK('a', 0)").await?;
        b.send("SELECT GET_LOCK('a', 100)").await?;
        assert!(still_waiting(&mut b).await);
        a.quit().await?;
        assert_eq!(b.recv().await?.value(), Some("1"));
        let name = "a".to_owned();
        assert_eq!(
            *changes.lock().unwrap(),
            [
                Change::LockGranted {
                    name: name.clone(),
                    id: a_id
                },
                Change::LockReleased {
                    name: name.clone(),
                    id: a_id,
                    why: ReleaseReason::SessionEnded
                },
                Change::LockGranted { name, id: b_id },
            ]
        );
        Ok(())
    });
    sim.run().unwrap();
}

#[test]
fn named_locks_are_re_entrant_and_release_lock_answers_1_0_or_null() {
    let (mut sim, server) = sim_with_server();
    sim.client("c", async move {
        let mut a = session().await?;
        let mut b = session().await?;
        assert_eq!(a.query("SELECT GET_LOCK('a', 0)").await?.value(), Some("1"));
        assert_eq!(a.query("SELECT GET_LOCK('a', 0)").await?.value(), Some("1"));
        assert_eq!(a.query("SELECT GET_LOCK('b', 0)").await?.value(), Some("1"));
        assert_eq!(
            b.query("SELECT RELEASE_LOCK('a')").await?.value(),
            Some("0")
        );
        assert_eq!(
            b.query("SELECT RELEASE_LOCK('nobody')").await?.value(),
            None
        );
        assert_eq!(
            a.query("SELECT RELEASE_LOCK('a')").await?.value(),
            Some("1")
        );
        assert_eq!(
            b.query("SELECT GET_LOCK('a', 0)").await?.value(),
            Some("0"),
            "one level is left"
        );
        assert_eq!(
            a.query("SELECT RELEASE_ALL_LOCKS()").await?.value(),
            Some("2")
        );
        assert_eq!(b.query("SELECT GET_LOCK('a', 0)").await?.value(), Some("1"));
        assert_eq!(server.named_locks(), [("a".to_owned(), b.id)]);
        // A negative timeout: MariaDB 10.11 answers NULL and takes nothing.
        assert_eq!(a.query("SELECT GET_LOCK('n', -1)").await?.value(), None);
        assert_eq!(
            a.query("SELECT IS_FREE_LOCK('n')").await?.value(),
            Some("1")
        );
        // Transactions leave named locks alone.
        b.query("BEGIN").await?;
        b.query("ROLLBACK").await?;
        assert_eq!(
            a.query("SELECT IS_FREE_LOCK('a')").await?.value(),
            Some("0")
        );
        Ok(())
    });
    sim.run().unwrap();
}

#[test]
fn a_duplicate_key_is_error_1062_and_insert_ignore_skips_it() {
    let (mut sim, _) = sim_with_server();
    sim.client("c", async {
        let mut a = session().await?;
        let created = a
            .query("CREATE TABLE locks (name VARCHAR(64) PRIMARY KEY, owner VARCHAR(64), expires DATETIME)")
            .await?;
        assert_eq!(created.error, None);
        let ins = a.query("INSERT INTO locks VALUES ('a', 'x', NOW())").await?;
        assert_eq!(ins.affected, Some(1));
        let dup = a.query("INSERT INTO locks VALUES ('a', 'y', NOW())").await?;
        assert_eq!(
            dup.error,
            Some((1062, "Duplicate entry 'a' for key 'PRIMARY'".into()))
        );
        let ign = a
            .query("INSERT IGNORE INTO locks VALUES ('a', 'y', NOW()), ('b', 'y', NOW())")
            .await?;
        assert_eq!(ign.affected, Some(1));
        let rows = a.query("SELECT owner, expires FROM locks WHERE name = 'a'").await?;
        assert_eq!(rows.rows, [[Some("x".into()), Some("2027-01-15 08:00:00".into())]]);
        let upd = a.query("UPDATE locks SET owner = 'z' WHERE name <> 'c' AND expires <= NOW()").await?;
        assert_eq!(upd.affected, Some(2));
        let same = a.query("UPDATE locks SET owner = 'z'").await?;
        assert_eq!(same.affected, Some(0), "MariaDB counts changed rows");
        Ok(())
    });
    sim.run().unwrap();
}

#[test]
fn uncommitted_writes_are_private_until_commit_and_for_update_waits_for_the_writer() {
    let (mut sim, server) = sim_with_server();
    sim.client("c", async move {
        let mut a = session().await?;
        let mut b = session().await?;
        a.query("CREATE TABLE locks (name VARCHAR(64) PRIMARY KEY, owner VARCHAR(64))")
            .await?;
        a.query("INSERT INTO locks VALUES ('a', 'x')").await?;
        a.query("START TRANSACTION").await?;
        assert_eq!(
            a.query("UPDATE locks SET owner = 'y' WHERE name = 'a'")
                .await?
                .affected,
            Some(1)
        );
        assert_eq!(a.query("SELECT owner FROM locks").await?.value(), Some("y"));
        assert_eq!(b.query("SELECT owner FROM locks").await?.value(), Some("x"));
        b.send("SELECT owner FROM locks WHERE name = 'a' FOR UPDATE")
            .await?;
        assert!(
            still_waiting(&mut b).await,
            "the row is locked until a commits"
        );
        a.query("COMMIT").await?;
        assert_eq!(b.recv().await?.value(), Some("y"));
        assert_eq!(
            server.committed_rows("locks"),
            Some(vec![vec![Value::Str("a".into()), Value::Str("y".into())]])
        );
        // A rolled-back delete leaves the row.
        a.query("BEGIN").await?;
        a.query("DELETE FROM locks").await?;
        a.query("ROLLBACK").await?;
        assert_eq!(b.query("SELECT name FROM locks").await?.rows.len(), 1);
        Ok(())
    });
    sim.run().unwrap();
}

#[test]
fn a_row_lock_wait_fails_with_1205_after_50_seconds() {
    let (mut sim, _) = sim_with_server();
    sim.client("c", async {
        let mut a = session().await?;
        let mut b = session().await?;
        a.query("CREATE TABLE t (k INT PRIMARY KEY)").await?;
        a.query("BEGIN").await?;
        a.query("INSERT INTO t VALUES (1)").await?;
        let started = tokio::time::Instant::now();
        let e = b.query("INSERT INTO t VALUES (1)").await?;
        assert_eq!(e.code(), Some(1205));
        assert!(started.elapsed() >= Duration::from_secs(50));
        Ok(())
    });
    sim.run().unwrap();
}

#[test]
fn errors_are_mariadbs_own() {
    let (mut sim, _) = sim_with_server();
    sim.client("c", async {
        let mut a = session().await?;
        let e = a.query("SELECT foo()").await?;
        assert_eq!(
            e.error,
            Some((1305, "FUNCTION test.foo does not exist".into()))
        );
        let e = a.query("SELEC 1").await?;
        assert_eq!(e.code(), Some(1064));
        assert!(e.error.unwrap().1.ends_with("near 'SELEC 1' at line 1"));
        let e = a.query("SELECT * FROM nope").await?;
        assert_eq!(
            e.error,
            Some((1146, "Table 'test.nope' doesn't exist".into()))
        );
        let e = a.query("SELECT GET_LOCK('a')").await?;
        assert_eq!(e.code(), Some(1582));
        let mut nodb = My::connect(TcpStream::connect(("db", PORT)).await?, None).await?;
        let e = nodb.query("SELECT foo()").await?;
        assert_eq!(e.error, Some((1305, "FUNCTION foo does not exist".into())));
        // Junk and malformed packets are answered or end the connection;
        // the server goes on.
        for junk in [
            "",
            "'",
            "SELECT (((",
            "SELECT 99999999999999999999",
            "\u{0}\u{1}",
            "UPDATE t SET",
        ] {
            let _ = a.query(junk).await?;
        }
        nodb.send_raw(&[1, 0, 0, 0, 0x99]).await?;
        let mut c = session().await?;
        assert_eq!(c.query("SELECT 1 + 1").await?.value(), Some("2"));
        Ok(())
    });
    sim.run().unwrap();
}

#[test]
fn committed_rows_survive_a_crash_of_the_host_but_sessions_and_their_locks_do_not() {
    let (mut sim, server) = sim_with_server();
    sim.client("c", async {
        let mut a = session().await?;
        a.query("CREATE TABLE t (k INT PRIMARY KEY, v INT)").await?;
        a.query("INSERT INTO t VALUES (1, 10)").await?;
        a.query("BEGIN").await?;
        a.query("INSERT INTO t VALUES (2, 20)").await?;
        a.query("SELECT GET_LOCK('a', 0)").await?;
        tokio::time::sleep(Duration::from_secs(10)).await;
        Ok(())
    });
    // Run until the client holds the lock (it then sleeps), then crash
    // the host.
    for _ in 0..5_000 {
        if !server.named_locks().is_empty() {
            break;
        }
        sim.step().unwrap();
    }
    assert_eq!(server.named_locks().len(), 1);
    assert_eq!(server.committed_rows("t").map(|r| r.len()), Some(1));
    sim.crash("db");
    sim.bounce("db");
    sim.client("after", async {
        let mut b = session().await?;
        assert_eq!(
            b.query("SELECT k, v FROM t").await?.rows,
            [[Some("1".into()), Some("10".into())]]
        );
        assert_eq!(
            b.query("SELECT IS_FREE_LOCK('a')").await?.value(),
            Some("1")
        );
        Ok(())
    });
    sim.run().unwrap();
    assert!(server.named_locks().is_empty());
}

/// One run of a small contended workload: every answer in order.
fn transcript() -> Vec<String> {
    let (mut sim, server) = sim_with_server();
    let log = Arc::new(Mutex::new(Vec::new()));
    let seen = log.clone();
    server.observe(Arc::new(move |c: &Change| {
        seen.lock().unwrap().push(format!("{c:?}"))
    }));
    for n in 0..3 {
        let log = log.clone();
        sim.client(format!("c{n}"), async move {
            let mut s = session().await?;
            s.query("CREATE TABLE IF NOT EXISTS t (k INT PRIMARY KEY, who INT)")
                .await?;
            for round in 0..3 {
                let got = s.query("SELECT GET_LOCK('x', 2)").await?;
                log.lock()
                    .unwrap()
                    .push(format!("c{n} round {round}: {:?}", got.value()));
                if got.value() == Some("1") {
                    s.query(&format!("INSERT INTO t VALUES ({}, {n})", n * 10 + round))
                        .await?;
                    tokio::time::sleep(Duration::from_millis(700)).await;
                    s.query("SELECT RELEASE_LOCK('x')").await?;
                }
            }
            Ok(())
        });
    }
    sim.run().unwrap();
    log.lock().unwrap().clone()
}

#[test]
fn the_same_seed_gives_the_same_transcript() {
    let first = transcript();
    assert!(first.iter().any(|l| l.contains("RowCommitted")));
    assert_eq!(first, transcript());
}

#[test]
fn observers_see_committed_row_writes_only() {
    let (mut sim, server) = sim_with_server();
    let changes = Arc::new(Mutex::new(Vec::new()));
    let seen = changes.clone();
    server.observe(Arc::new(move |c: &Change| {
        seen.lock().unwrap().push(c.clone())
    }));
    sim.client("c", async move {
        let mut a = session().await?;
        a.query("CREATE TABLE t (k INT PRIMARY KEY)").await?;
        a.query("BEGIN").await?;
        a.query("INSERT INTO t VALUES (1)").await?;
        a.query("ROLLBACK").await?;
        a.query("INSERT INTO t VALUES (2)").await?;
        a.query("DELETE FROM t WHERE k = 2").await?;
        let kinds: Vec<_> = changes
            .lock()
            .unwrap()
            .iter()
            .map(|c| match c {
                Change::RowCommitted { kind, key, .. } => (*kind, key.clone()),
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(
            kinds,
            [
                (RowChange::Insert, Some(Value::Int(2))),
                (RowChange::Delete, Some(Value::Int(2)))
            ]
        );
        Ok(())
    });
    sim.run().unwrap();
}
