//! A hot standby on turmoil: it replays its primary's committed rows a lag
//! behind, refuses writes until promoted, never has the primary's advisory
//! locks, and loses in a failover what had not reached it.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::{Pg, WALL_CLOCK_MS, server};
use simpg::{Config, Server, serve_sim};
use turmoil::net::TcpStream;

const PORT: u16 = 5432;
const SEED: u64 = 11;
const LAG: Duration = Duration::from_millis(500);
const CREATE: &str = "CREATE TABLE locks (name text PRIMARY KEY, owner text NOT NULL)";

/// A simulation with a primary on host `primary` and its standby, `LAG`
/// behind, on host `standby`.
fn sim_with_pair() -> (turmoil::Sim<'static>, Server, Server) {
    let mut sim = turmoil::Builder::new()
        .simulation_duration(Duration::from_secs(60))
        .rng_seed(SEED)
        .build();
    let primary = server();
    let standby = Server::standby_of(Config::new(Arc::new(|| WALL_CLOCK_MS)), &primary);
    let p = primary.clone();
    sim.host("primary", move || serve_sim(p.clone(), PORT));
    let (s, of) = (standby.clone(), primary.clone());
    sim.host("standby", move || {
        let (s, of) = (s.clone(), of.clone());
        async move { tokio::join!(serve_sim(s.clone(), PORT), s.follow(of, LAG)).0 }
    });
    (sim, primary, standby)
}

async fn session(host: &str) -> std::io::Result<Pg<TcpStream>> {
    Pg::connect(TcpStream::connect((host, PORT)).await?).await
}

fn names(server: &Server) -> Vec<String> {
    (server.committed_rows("locks").unwrap_or_default().iter())
        .map(|row| row[0].to_text().unwrap_or_default())
        .collect()
}

#[test]
fn a_committed_row_reaches_the_standby_once_the_lag_has_passed_and_a_write_there_is_refused() {
    let (mut sim, _primary, standby) = sim_with_pair();
    sim.client("app", async {
        let mut p = session("primary").await?;
        p.query(CREATE).await?;
        p.query("INSERT INTO locks VALUES ('a', 'w1')").await?;
        let mut s = session("standby").await?;
        let early = s.query("SELECT name FROM locks").await?;
        assert!(early.error.is_some() || early.rows.is_empty(), "{early:?}");
        tokio::time::sleep(LAG * 2).await;
        let late = s.query("SELECT name FROM locks").await?;
        assert_eq!(late.rows, [[Some("a".to_string())]]);
        let refused = s.query("INSERT INTO locks VALUES ('b', 'w2')").await?;
        assert_eq!(refused.code(), Some("25006"));
        let recovery = s.query("SELECT pg_is_in_recovery()").await?;
        assert_eq!(recovery.value(), Some("t"));
        Ok(())
    });
    sim.run().unwrap();
    assert_eq!(names(&standby), ["a"]);
}

#[test]
fn a_promoted_standby_has_the_rows_that_reached_it_and_none_of_the_primarys_advisory_locks() {
    let (mut sim, primary, standby) = sim_with_pair();
    sim.client("setup", async {
        let mut p = session("primary").await?;
        p.query(CREATE).await?;
        p.query("INSERT INTO locks VALUES ('old', 'w1')").await?;
        tokio::time::sleep(LAG * 2).await;
        Ok(())
    });
    sim.run().unwrap();
    sim.host("holder", || async {
        let mut p = session("primary").await?;
        p.query("SELECT pg_advisory_lock(5)").await?;
        p.query("INSERT INTO locks VALUES ('new', 'w1')").await?;
        std::future::pending::<()>().await;
        Ok(())
    });
    for _ in 0..300 {
        sim.step().unwrap();
    }
    assert_eq!(
        primary.advisory_locks().len(),
        1,
        "{:?}",
        primary.session_pids()
    );
    assert_eq!(names(&primary), ["old", "new"]);
    // The primary dies before `new` is replayed: it never is.
    sim.crash("primary");
    for _ in 0..1000 {
        sim.step().unwrap();
    }
    standby.promote();
    sim.client("after", async {
        let mut s = session("standby").await?;
        assert_eq!(
            s.query("SELECT pg_is_in_recovery()").await?.value(),
            Some("f")
        );
        let lock = s.query("SELECT pg_try_advisory_lock(5)").await?;
        assert_eq!(lock.value(), Some("t"));
        let write = s.query("INSERT INTO locks VALUES ('newer', 'w2')").await?;
        assert_eq!(write.error, None);
        Ok(())
    });
    sim.run().unwrap();
    assert_eq!(names(&standby), ["old", "newer"]);
}

#[test]
fn a_standby_catches_up_when_its_primary_restarts_without_a_failover() {
    let (mut sim, _primary, standby) = sim_with_pair();
    sim.client("setup", async {
        let mut p = session("primary").await?;
        p.query(CREATE).await?;
        p.query("INSERT INTO locks VALUES ('a', 'w1')").await?;
        Ok(())
    });
    sim.run().unwrap();
    sim.crash("primary");
    for _ in 0..1000 {
        sim.step().unwrap();
    }
    assert!(names(&standby).is_empty());
    sim.bounce("primary");
    sim.client("wait", async {
        tokio::time::sleep(LAG * 2).await;
        Ok(())
    });
    sim.run().unwrap();
    assert_eq!(names(&standby), ["a"]);
}
