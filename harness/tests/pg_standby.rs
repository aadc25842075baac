//! A PostgreSQL primary and its hot standby: a committed row reaches the
//! standby; once the primary is killed and the standby promoted, the row
//! is there, the advisory lock a session of the primary held is not (it
//! was never in the WAL), and the promoted server takes writes.

use harness::postgres::standby::query;
use harness::postgres::{PG_BIN, PG_USER, PgServer, installed};
use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Generous: CI runs this on a loaded two-core machine.
const CATCH_UP: Duration = Duration::from_secs(30);

#[test]
fn a_promoted_standby_keeps_the_rows_and_none_of_the_advisory_locks() {
    if !installed() {
        eprintln!("skipped: PostgreSQL 15 is not installed (scripts/setup installs it)");
        return;
    }
    let started = Instant::now();
    let mut primary = PgServer::start().expect("a primary");
    let standby = PgServer::start_standby(&primary, primary.addr()).expect("a standby");
    eprintln!("primary and standby up in {:?}", started.elapsed());
    assert!(standby.in_recovery().expect("asked"));

    query(
        primary.addr(),
        "CREATE TABLE fences (id int PRIMARY KEY, token bigint); \
         INSERT INTO fences VALUES (1, 7)",
    )
    .expect("a row on the primary");
    standby
        .wait_caught_up(primary.addr(), CATCH_UP)
        .expect("caught up");
    let row = "SELECT token FROM fences WHERE id = 1";
    assert_eq!(query(standby.addr(), row).expect("read"), "7");
    assert!(
        query(standby.addr(), "INSERT INTO fences VALUES (2, 8)").is_err(),
        "a standby takes no writes"
    );

    // A session that holds the advisory lock until its server dies.
    let mut holder = Command::new(format!("{PG_BIN}/psql"))
        .args(["-X", "-A", "-t", "-h", "127.0.0.1", "-p"])
        .arg(primary.port().to_string())
        .args(["-U", PG_USER, "-d", "postgres"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("psql");
    let mut to_holder = holder.stdin.take().expect("its input");
    writeln!(to_holder, "SELECT pg_advisory_lock(42), 'held';").expect("sent");
    let mut line = String::new();
    BufReader::new(holder.stdout.take().expect("its output"))
        .read_line(&mut line)
        .expect("an answer");
    assert_eq!(line.trim(), "|held");
    let try_lock = "SELECT pg_try_advisory_lock(42)";
    assert_eq!(query(primary.addr(), try_lock).expect("tried"), "f");

    let failover = Instant::now();
    primary.kill();
    standby.promote().expect("promoted");
    eprintln!("standby promoted {:?} after the kill", failover.elapsed());
    assert!(!standby.in_recovery().expect("asked"));
    assert_eq!(query(standby.addr(), row).expect("read"), "7");
    assert_eq!(query(standby.addr(), try_lock).expect("tried"), "t");
    query(standby.addr(), "INSERT INTO fences VALUES (2, 8)").expect("a write");
    assert_eq!(
        query(standby.addr(), "SELECT count(*) FROM fences").expect("read"),
        "2"
    );

    // The holder's server is gone: its psql ends with its input.
    drop(to_holder);
    let _ = holder.kill();
    let _ = holder.wait();
    eprintln!("the whole test took {:?}", started.elapsed());
}
