//! The native compare-and-delete commands the simulated node answers
//! when it is a server newer than Redis 7.0: `SET ... IFEQ` (Valkey 8.1,
//! Redis 8.4), `SET ... IFNE` and `DELEX` (Redis 8.4), `DELIFEQ` (Valkey
//! 9.0). Each reply below is the one those versions document; no such
//! server runs here, so these pin the node's answers instead of comparing
//! them with a live one. (A Redis 7.0 node refuses them all as
//! redis-server 7.0.15 does: the conformance cases compare that.)

use crate::common::real_tcp;

use real_tcp::{run, serve};
use redis::Value;
use simredis::{NodeConfig, ServerVersion};

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

/// Runs `talk` against a fresh simulated node of `version` on a loopback
/// port.
fn with_node<F, Fut>(version: ServerVersion, talk: F)
where
    F: FnOnce(redis::aio::MultiplexedConnection) -> Fut,
    Fut: Future<Output = ()>,
{
    run(async {
        let (addr, server) = serve(NodeConfig::new("cad").version(version)).await;
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
    with_node(ServerVersion::Valkey8_1, |mut c| async move {
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
    with_node(ServerVersion::Redis8_4, |mut c| async move {
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
    with_node(ServerVersion::Redis8_4, |mut c| async move {
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
    with_node(ServerVersion::Redis8_4, |mut c| async move {
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
    with_node(ServerVersion::Redis8_4, |mut c| async move {
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
    with_node(ServerVersion::Valkey9_0, |mut c| async move {
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
    for (version, delete) in [
        (
            ServerVersion::Redis8_4,
            "redis.call('DELEX', KEYS[1], 'IFEQ', ARGV[1])",
        ),
        (
            ServerVersion::Valkey9_0,
            "redis.call('DELIFEQ', KEYS[1], ARGV[1])",
        ),
    ] {
        with_node(version, |mut c| async move {
            assert!(is_ok(
                &send(&mut c, &["SET", "lock", "me", "PX", "10000"]).await
            ));
            let body = format!("return {delete}");
            assert_eq!(
                send(&mut c, &["EVAL", &body, "1", "lock", "me"]).await,
                int(1)
            );
        });
    }
}

#[test]
fn a_version_without_a_command_refuses_it_in_a_script_too() {
    with_node(ServerVersion::Valkey8_1, |mut c| async move {
        let body = "return redis.call('DELIFEQ', KEYS[1], ARGV[1])";
        assert_refused(
            &mut c,
            &["EVAL", body, "1", "lock", "me"],
            "Unknown Redis command called from script",
        )
        .await;
        assert_refused(&mut c, &["SET", "k", "v", "IFNE", "w"], "syntax error").await;
    });
}

/// Acquires, extends and releases with `native-cad` on a node of
/// `version`; the release's outcome is returned (acquiring and extending
/// must work, and where the release works, another owner's must not).
fn native_cad_cycle(version: ServerVersion) -> Result<(), locks::LockError> {
    use locks::{ConnConfig, LockConfig, LockContext, Owner, ReconnectingConnection, TcpDialer};
    use std::sync::Arc;
    use std::time::Duration;
    let mut released = None;
    run(async {
        let (addr, server) = serve(NodeConfig::new("cad").version(version)).await;
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
            let by_another = lock.release(&other).await;
            released = Some(lock.release(&lease).await);
            if released.as_ref().is_some_and(Result::is_ok) {
                assert!(
                    matches!(by_another, Err(locks::LockError::NotHeld { .. })),
                    "{by_another:?}"
                );
                assert!(matches!(
                    lock.extend(&mut lease).await,
                    Err(locks::LockError::NotHeld { .. })
                ));
            }
        };
        tokio::select! {
            r = server => panic!("server ended: {r:?}"),
            () = talk => {}
        }
    });
    released.expect("the cycle ran")
}

#[test]
fn the_native_cad_rung_locks_extends_and_releases_without_lua_on_redis_8_4_and_valkey_9_0() {
    native_cad_cycle(ServerVersion::Redis8_4).expect("released with DELEX");
    native_cad_cycle(ServerVersion::Valkey9_0).expect("released with DELIFEQ");
}

#[test]
fn the_native_cad_rung_cannot_release_on_valkey_8_1_which_has_neither_delete() {
    let released = native_cad_cycle(ServerVersion::Valkey8_1);
    assert!(
        matches!(&released, Err(e) if e.to_string().to_lowercase().contains("unknown command")),
        "{released:?}"
    );
}
