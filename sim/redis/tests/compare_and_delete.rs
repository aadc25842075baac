//! The native compare-and-delete commands the simulated node answers
//! beyond Redis 7.0: `SET ... IFEQ` (Valkey 8.1, Redis 8.4), `SET ... IFNE`
//! and `DELEX` (Redis 8.4), `DELIFEQ` (Valkey 9.0). Each reply below is the
//! one those versions document; no such server runs here, so these pin the
//! node's answers instead of comparing them with a live one.

#[path = "common/real_tcp.rs"]
mod real_tcp;

use real_tcp::{run, serve};
use redis::Value;
use simredis::NodeConfig;

/// Sends one command and returns the raw reply (an error reply as
/// `Err(text)`).
async fn send(con: &mut redis::aio::MultiplexedConnection, args: &[&str]) -> Result<Value, String> {
    let mut cmd = redis::cmd(args[0]);
    for a in &args[1..] {
        cmd.arg(*a);
    }
    match cmd.query_async::<Value>(con).await {
        Ok(v @ Value::ServerError(_)) => Err(format!("{v:?}")),
        Ok(v) => Ok(v),
        Err(e) => Err(format!("{e} {e:?}")),
    }
}

/// Runs `talk` against a fresh simulated node on a loopback port.
fn with_node<F, Fut>(talk: F)
where
    F: FnOnce(redis::aio::MultiplexedConnection) -> Fut,
    Fut: Future<Output = ()>,
{
    run(async {
        let (addr, server) = serve(NodeConfig::new("cad")).await;
        let client = redis::Client::open(format!("redis://{addr}")).unwrap();
        tokio::select! {
            r = server => panic!("server ended: {r:?}"),
            _ = async {
                let con = client.get_multiplexed_async_connection().await.unwrap();
                talk(con).await;
            } => {}
        }
    });
}

fn int(n: i64) -> Result<Value, String> {
    Ok(Value::Int(n))
}

fn is_ok(reply: &Result<Value, String>) -> bool {
    matches!(reply, Ok(Value::Okay))
}

/// Sends `args` and fails unless the reply is an error whose text
/// contains `text` (in any case).
async fn assert_refused(con: &mut redis::aio::MultiplexedConnection, args: &[&str], text: &str) {
    let reply = send(con, args).await;
    assert!(
        matches!(&reply, Err(e) if e.to_lowercase().contains(&text.to_lowercase())),
        "{args:?}: {reply:?}"
    );
}

#[test]
fn set_ifeq_replaces_only_the_expected_value_and_never_creates_a_key() {
    with_node(|mut c| async move {
        assert_eq!(
            send(&mut c, &["SET", "k", "b", "IFEQ", "a"]).await,
            Ok(Value::Nil)
        );
        assert_eq!(send(&mut c, &["EXISTS", "k"]).await, int(0));
        assert!(is_ok(&send(&mut c, &["SET", "k", "a"]).await));
        assert_eq!(
            send(&mut c, &["SET", "k", "b", "IFEQ", "x"]).await,
            Ok(Value::Nil)
        );
        let set = send(&mut c, &["SET", "k", "a", "IFEQ", "a", "PX", "5000"]).await;
        assert!(is_ok(&set), "{set:?}");
        let Ok(Value::Int(ttl)) = send(&mut c, &["PTTL", "k"]).await else {
            panic!("a TTL")
        };
        assert!(ttl > 4000 && ttl <= 5000, "{ttl}");
        // With GET, the old value whether or not the condition held.
        let old = send(&mut c, &["SET", "k", "c", "IFEQ", "a", "GET"]).await;
        assert_eq!(old, Ok(Value::BulkString(b"a".to_vec())));
        let old = send(&mut c, &["SET", "k", "d", "IFEQ", "a", "GET"]).await;
        assert_eq!(old, Ok(Value::BulkString(b"c".to_vec())));
        assert_eq!(
            send(&mut c, &["GET", "k"]).await,
            Ok(Value::BulkString(b"c".to_vec()))
        );
    });
}

#[test]
fn set_ifne_creates_a_missing_key_and_skips_an_equal_one() {
    with_node(|mut c| async move {
        assert!(is_ok(&send(&mut c, &["SET", "k", "a", "IFNE", "a"]).await));
        assert_eq!(
            send(&mut c, &["SET", "k", "b", "IFNE", "a"]).await,
            Ok(Value::Nil)
        );
        assert!(is_ok(&send(&mut c, &["SET", "k", "b", "IFNE", "z"]).await));
    });
}

#[test]
fn set_conditions_exclude_nx_xx_and_each_other_and_refuse_a_hash() {
    with_node(|mut c| async move {
        for args in [
            &["SET", "k", "v", "NX", "IFEQ", "v"][..],
            &["SET", "k", "v", "IFEQ", "v", "XX"],
            &["SET", "k", "v", "IFEQ", "v", "IFNE", "w"],
            &["SET", "k", "v", "IFEQ"],
            &["SET", "k", "v", "IFDEQ", "0123456789abcdef"],
        ] {
            assert_refused(&mut c, args, "syntax error").await;
        }
        assert_eq!(send(&mut c, &["HSET", "h", "f", "1"]).await, int(1));
        assert_refused(&mut c, &["SET", "h", "v", "IFEQ", "v"], "WRONGTYPE").await;
    });
}

#[test]
fn delex_deletes_on_a_met_condition_or_unconditionally() {
    with_node(|mut c| async move {
        assert_eq!(send(&mut c, &["DELEX", "k", "IFEQ", "a"]).await, int(0));
        assert!(is_ok(&send(&mut c, &["SET", "k", "a"]).await));
        assert_eq!(send(&mut c, &["DELEX", "k", "IFEQ", "b"]).await, int(0));
        assert_eq!(send(&mut c, &["DELEX", "k", "IFNE", "a"]).await, int(0));
        assert_eq!(send(&mut c, &["DELEX", "k", "IFEQ", "a"]).await, int(1));
        assert_eq!(send(&mut c, &["EXISTS", "k"]).await, int(0));
        assert!(is_ok(&send(&mut c, &["SET", "k", "a"]).await));
        assert_eq!(send(&mut c, &["DELEX", "k", "IFNE", "b"]).await, int(1));
        // No condition: any type goes, like DEL of one key.
        assert_eq!(send(&mut c, &["HSET", "h", "f", "1"]).await, int(1));
        assert_eq!(send(&mut c, &["DELEX", "h"]).await, int(1));
        assert_eq!(send(&mut c, &["DELEX", "h"]).await, int(0));
    });
}

#[test]
fn delex_refuses_a_hash_under_a_condition_and_unknown_or_incomplete_options() {
    with_node(|mut c| async move {
        assert_eq!(send(&mut c, &["HSET", "h", "f", "1"]).await, int(1));
        assert_refused(&mut c, &["DELEX", "h", "IFEQ", "1"], "WRONGTYPE").await;
        for args in [
            &["DELEX", "k", "IFEQ"][..],
            &["DELEX", "k", "IFXX", "v"],
            &["DELEX", "k", "IFEQ", "v", "IFNE", "w"],
            &["DELEX", "k", "IFDEQ", "0123456789abcdef"],
        ] {
            assert_refused(&mut c, args, "syntax error").await;
        }
        assert_refused(&mut c, &["DELEX"], "wrong number of arguments").await;
    });
}

#[test]
fn delifeq_deletes_only_the_matching_string() {
    with_node(|mut c| async move {
        assert_eq!(send(&mut c, &["DELIFEQ", "k", "a"]).await, int(0));
        assert!(is_ok(&send(&mut c, &["SET", "k", "a"]).await));
        assert_eq!(send(&mut c, &["DELIFEQ", "k", "b"]).await, int(0));
        assert_eq!(send(&mut c, &["DELIFEQ", "k", "a"]).await, int(1));
        assert_eq!(send(&mut c, &["DELIFEQ", "k", "a"]).await, int(0));
        assert_eq!(send(&mut c, &["HSET", "h", "f", "1"]).await, int(1));
        assert_refused(&mut c, &["DELIFEQ", "h", "1"], "WRONGTYPE").await;
        assert_refused(&mut c, &["DELIFEQ", "k"], "wrong number of arguments").await;
    });
}

#[test]
fn the_commands_work_inside_a_script_as_a_lock_release_would_use_them() {
    with_node(|mut c| async move {
        assert!(is_ok(
            &send(&mut c, &["SET", "lock", "me", "PX", "10000"]).await
        ));
        let body = "return redis.call('DELIFEQ', KEYS[1], ARGV[1]) + redis.call('DELEX', KEYS[1], 'IFEQ', ARGV[1])";
        assert_eq!(
            send(&mut c, &["EVAL", body, "1", "lock", "me"]).await,
            int(1)
        );
    });
}

#[test]
fn the_native_cad_rung_locks_extends_and_releases_without_lua() {
    use locks::{ConnConfig, LockConfig, LockContext, Owner, ReconnectingConnection, TcpDialer};
    use std::sync::Arc;
    use std::time::Duration;
    run(async {
        let (addr, server) = serve(NodeConfig::new("cad")).await;
        let talk = async {
            let conn = ReconnectingConnection::new(
                TcpDialer::new(addr.to_string()),
                ConnConfig::default(),
            );
            let ctx = LockContext::new(Arc::new(locks::SystemClock::new()), 5);
            let config = LockConfig {
                ttl: Duration::from_millis(2_000),
                max_wait: Duration::from_millis(100),
                ..LockConfig::default()
            };
            let lock = locks::build("native-cad", vec![conn], ctx, config).expect("a rung");
            let mut lease = lock
                .acquire("lock", &Owner::new("a", 1))
                .await
                .expect("free");
            lock.extend(&mut lease).await.expect("still mine");
            let mut other = lease.clone();
            other.token = "someone else".into();
            assert!(matches!(
                lock.release(&other).await,
                Err(locks::LockError::NotHeld { .. })
            ));
            lock.release(&lease).await.expect("released with DELEX");
            assert!(matches!(
                lock.extend(&mut lease).await,
                Err(locks::LockError::NotHeld { .. })
            ));
        };
        tokio::select! {
            r = server => panic!("server ended: {r:?}"),
            () = talk => {}
        }
    });
}
