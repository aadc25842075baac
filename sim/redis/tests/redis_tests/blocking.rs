//! Blocking pops inside turmoil, in simulated time: a push (or a `ZADD`)
//! wakes a blocked client, the timeout passes exactly, clients are served
//! in the order they blocked, a failover unblocks them with Redis 7.0's
//! error, a client that disconnects is forgotten, a served pop is
//! replicated, a RESP3 client woken from a sorted set reads its score as
//! a double, and `CLIENT UNBLOCK` ends a wait as a timeout or an error.

use crate::common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{client_on, simulation};
use redis::Value;
use redis::aio::MultiplexedConnection;
use simredis::{NodeConfig, NodeHandle, serve};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::time::{Instant, sleep};

/// A simulation with a fixed 1 ms latency.
fn sim(seed: u64) -> turmoil::Sim<'static> {
    let one_ms = Duration::from_millis(1);
    simulation(seed, Duration::from_secs(60), one_ms..=one_ms)
}

/// A node named `name`, hosted in `sim`.
fn node(sim: &mut turmoil::Sim<'static>, config: NodeConfig) -> NodeHandle {
    let handle = NodeHandle::new(config);
    let h = handle.clone();
    let name = handle.name().to_string();
    sim.host(name, move || serve(h.clone()));
    handle
}

/// A client connection to `host` that waits up to 30 s for a reply (a
/// blocked pop answers late).
async fn connect(host: &str) -> redis::RedisResult<MultiplexedConnection> {
    let stream = turmoil::net::TcpStream::connect((host, 6379)).await?;
    client_on(stream, Duration::from_secs(30)).await
}

/// Runs `args` on `con`.
async fn run(con: &mut MultiplexedConnection, args: &[&str]) -> redis::RedisResult<Value> {
    let mut cmd = redis::cmd(args[0]);
    for a in &args[1..] {
        cmd.arg(*a);
    }
    cmd.query_async(con).await
}

/// A bulk string reply.
fn bulk(s: &str) -> Value {
    Value::BulkString(s.as_bytes().to_vec())
}

/// `[key, element]`, as `BLPOP` answers.
fn popped(key: &str, element: &str) -> Value {
    Value::Array(vec![bulk(key), bulk(element)])
}

/// What a waiter saw: its reply (or error text) and when, since it blocked.
type Seen = Arc<Mutex<Vec<(String, Result<Value, String>, Duration)>>>;

/// Adds a client `name` that connects to "redis", sleeps `after`, then
/// sends `args` and records the reply and how long it took in `seen`.
fn waiter(sim: &mut turmoil::Sim<'static>, seen: &Seen, name: &str, after: u64, args: &[&str]) {
    let seen = seen.clone();
    let who = name.to_string();
    let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    sim.client(name, async move {
        let mut con = connect("redis").await?;
        sleep(Duration::from_millis(after)).await;
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let t0 = Instant::now();
        let r = run(&mut con, &args).await.map_err(|e| e.to_string());
        seen.lock().unwrap().push((who, r, t0.elapsed()));
        Ok(())
    });
}

#[test]
fn a_client_blocked_for_two_seconds_is_woken_by_a_push_at_one_second() {
    let mut sim = sim(1);
    node(&mut sim, NodeConfig::new("redis"));
    let seen = Seen::default();
    waiter(&mut sim, &seen, "waiter", 0, &["BLPOP", "k", "2"]);
    sim.client("pusher", async {
        let mut con = connect("redis").await?;
        sleep(Duration::from_secs(1)).await;
        assert_eq!(run(&mut con, &["LPUSH", "k", "v"]).await?, Value::Int(1));
        sleep(Duration::from_millis(10)).await;
        // The pop emptied the list, which is gone.
        assert_eq!(run(&mut con, &["EXISTS", "k"]).await?, Value::Int(0));
        Ok(())
    });
    sim.run().unwrap();
    let seen = seen.lock().unwrap();
    let (_, reply, took) = &seen[0];
    assert_eq!(reply, &Ok(popped("k", "v")));
    assert!(
        *took >= Duration::from_secs(1) && *took < Duration::from_millis(1010),
        "{took:?}"
    );
}

#[test]
fn the_timeout_passes_exactly_in_simulated_time() {
    let mut sim = sim(2);
    node(&mut sim, NodeConfig::new("redis"));
    let seen = Seen::default();
    waiter(&mut sim, &seen, "brpop", 0, &["BRPOP", "k", "1.5"]);
    waiter(
        &mut sim,
        &seen,
        "blmove",
        0,
        &["BLMOVE", "k", "d", "LEFT", "RIGHT", "0.25"],
    );
    waiter(
        &mut sim,
        &seen,
        "blmpop",
        0,
        &["BLMPOP", "0.01", "1", "k", "LEFT"],
    );
    sim.run().unwrap();
    let mut seen = seen.lock().unwrap().clone();
    seen.sort_by_key(|(_, _, took)| *took);
    let expect = [("blmpop", 10), ("blmove", 250), ("brpop", 1500)];
    for ((who, reply, took), (name, ms)) in seen.iter().zip(expect) {
        assert_eq!(who, name);
        assert_eq!(reply, &Ok(Value::Nil), "{who}");
        // One request and one reply, 1 ms each, besides the timeout.
        assert!(
            *took >= Duration::from_millis(ms) && *took <= Duration::from_millis(ms + 3),
            "{who}: {took:?}"
        );
    }
}

#[test]
fn two_blocked_clients_are_served_in_the_order_they_blocked() {
    let mut sim = sim(3);
    node(&mut sim, NodeConfig::new("redis"));
    let seen = Seen::default();
    // "second" connects first but blocks later.
    waiter(&mut sim, &seen, "second", 200, &["BLPOP", "k", "0"]);
    waiter(&mut sim, &seen, "first", 100, &["BLPOP", "other", "k", "0"]);
    sim.client("pusher", async {
        let mut con = connect("redis").await?;
        sleep(Duration::from_secs(1)).await;
        // One push of two elements: each waiter gets one, first come first.
        assert_eq!(
            run(&mut con, &["RPUSH", "k", "x", "y"]).await?,
            Value::Int(2)
        );
        Ok(())
    });
    sim.run().unwrap();
    let seen = seen.lock().unwrap();
    let got: Vec<(&str, &Result<Value, String>)> =
        seen.iter().map(|(w, r, _)| (w.as_str(), r)).collect();
    let (x, y) = (Ok(popped("k", "x")), Ok(popped("k", "y")));
    assert!(got.contains(&("first", &x)), "{got:?}");
    assert!(got.contains(&("second", &y)), "{got:?}");
}

#[test]
fn a_push_from_a_script_and_a_move_wake_blocked_clients() {
    let mut sim = sim(4);
    node(&mut sim, NodeConfig::new("redis"));
    let seen = Seen::default();
    waiter(
        &mut sim,
        &seen,
        "mover",
        0,
        &["BLMOVE", "src", "dst", "RIGHT", "LEFT", "0"],
    );
    waiter(
        &mut sim,
        &seen,
        "popper",
        50,
        &["BLMPOP", "0", "1", "dst", "LEFT", "COUNT", "5"],
    );
    sim.client("scripter", async {
        let mut con = connect("redis").await?;
        sleep(Duration::from_secs(1)).await;
        let script = "redis.call('rpush', KEYS[1], 'a', 'b'); return redis.call('llen', KEYS[1])";
        assert_eq!(
            run(&mut con, &["EVAL", script, "1", "src"]).await?,
            Value::Int(2)
        );
        sleep(Duration::from_millis(10)).await;
        assert_eq!(
            run(&mut con, &["LRANGE", "src", "0", "-1"]).await?,
            Value::Array(vec![bulk("a")])
        );
        assert_eq!(run(&mut con, &["EXISTS", "dst"]).await?, Value::Int(0));
        Ok(())
    });
    sim.run().unwrap();
    let seen = seen.lock().unwrap();
    assert_eq!(seen[0].0, "mover");
    assert_eq!(seen[0].1, Ok(bulk("b")));
    assert_eq!(seen[1].0, "popper");
    let moved = Value::Array(vec![bulk("dst"), Value::Array(vec![bulk("b")])]);
    assert_eq!(seen[1].1, Ok(moved));
}

#[test]
fn a_failover_unblocks_blocked_clients_with_redis_error() {
    const UNBLOCKED: &str =
        "force unblock from blocking operation, instance state changed (master -> replica?)";
    for through_the_handle in [false, true] {
        let mut sim = sim(5);
        let redis = node(&mut sim, NodeConfig::new("redis"));
        let seen = Seen::default();
        waiter(&mut sim, &seen, "waiter", 0, &["BLPOP", "k", "0"]);
        sim.client("operator", async move {
            sleep(Duration::from_secs(1)).await;
            if through_the_handle {
                redis.replicaof(Some(simredis::MasterAddr::new("elsewhere", 6379)));
            } else {
                let mut con = connect("redis").await?;
                run(&mut con, &["REPLICAOF", "elsewhere", "6379"]).await?;
            }
            Ok(())
        });
        sim.run().unwrap();
        let seen = seen.lock().unwrap();
        let (_, reply, took) = &seen[0];
        let text = reply.as_ref().unwrap_err();
        assert!(
            text.contains("UNBLOCKED") && text.contains(UNBLOCKED),
            "{text}"
        );
        assert!(*took >= Duration::from_millis(990), "{took:?}");
    }
}

#[test]
fn a_client_that_disconnects_while_blocked_is_forgotten() {
    let mut sim = sim(6);
    node(&mut sim, NodeConfig::new("redis"));
    sim.client("leaver", async {
        let mut con = connect("redis").await?;
        // Gives up after 100 ms: its connection closes while it is blocked.
        let gave_up = tokio::time::timeout(
            Duration::from_millis(100),
            run(&mut con, &["BLPOP", "k", "0"]),
        )
        .await;
        assert!(gave_up.is_err());
        drop(con);
        Ok(())
    });
    sim.client("pusher", async {
        let mut con = connect("redis").await?;
        sleep(Duration::from_secs(1)).await;
        run(&mut con, &["RPUSH", "k", "x"]).await?;
        sleep(Duration::from_millis(10)).await;
        assert_eq!(run(&mut con, &["LLEN", "k"]).await?, Value::Int(1));
        Ok(())
    });
    sim.run().unwrap();
}

#[test]
fn a_served_pop_is_replicated_as_a_write() {
    let mut sim = sim(7);
    node(&mut sim, NodeConfig::new("master"));
    node(&mut sim, NodeConfig::new("replica").replica_of("master"));
    let seen = Seen::default();
    sim.client("waiter", {
        let seen = seen.clone();
        async move {
            sleep(Duration::from_millis(300)).await;
            let mut con = connect("master").await?;
            let r = run(&mut con, &["BLPOP", "k", "0"]).await;
            seen.lock().unwrap().push((
                "waiter".into(),
                r.map_err(|e| e.to_string()),
                Duration::ZERO,
            ));
            Ok(())
        }
    });
    sim.client("pusher", async {
        sleep(Duration::from_secs(1)).await;
        let mut con = connect("master").await?;
        run(&mut con, &["RPUSH", "k", "x", "y"]).await?;
        sleep(Duration::from_millis(100)).await;
        let mut replica = connect("replica").await?;
        let on_replica = run(&mut replica, &["LRANGE", "k", "0", "-1"]).await?;
        assert_eq!(on_replica, Value::Array(vec![bulk("y")]));
        Ok(())
    });
    sim.run().unwrap();
    assert_eq!(seen.lock().unwrap()[0].1, Ok(popped("k", "x")));
}

/// Sends `request` on `s` and reads one reply, as the bytes that came
/// (`buf` keeps what came after it).
async fn exchange(
    s: &mut turmoil::net::TcpStream,
    buf: &mut Vec<u8>,
    request: &[u8],
) -> std::io::Result<Vec<u8>> {
    s.write_all(request).await?;
    loop {
        if let Ok(Some((_, n))) = simredis::resp::parse_reply(buf) {
            return Ok(buf.drain(..n).collect());
        }
        let mut chunk = [0u8; 4096];
        let n = s.read(&mut chunk).await?;
        assert!(n > 0, "closed after {buf:?}");
        buf.extend_from_slice(&chunk[..n]);
    }
}

/// `[key, member, score]`, as `BZPOPMIN` answers (RESP2: the score a
/// bulk string).
fn zpopped(key: &str, member: &str, score: &str) -> Value {
    Value::Array(vec![bulk(key), bulk(member), bulk(score)])
}

/// `[key, [[member, score]...]]`, as `BZMPOP` answers.
fn zmpopped(key: &str, pairs: &[(&str, &str)]) -> Value {
    let pairs = pairs
        .iter()
        .map(|(m, s)| Value::Array(vec![bulk(m), bulk(s)]))
        .collect();
    Value::Array(vec![bulk(key), Value::Array(pairs)])
}

#[test]
fn a_client_blocked_on_a_sorted_set_is_woken_by_zadd_with_the_lowest_member() {
    let mut sim = sim(11);
    node(&mut sim, NodeConfig::new("redis"));
    let seen = Seen::default();
    waiter(&mut sim, &seen, "min", 0, &["BZPOPMIN", "nokey", "z", "5"]);
    waiter(&mut sim, &seen, "max", 10, &["BZPOPMAX", "z", "5"]);
    sim.client("adder", async {
        let mut con = connect("redis").await?;
        sleep(Duration::from_secs(1)).await;
        let added = run(&mut con, &["ZADD", "z", "3", "c", "-1.5", "a", "2", "b"]).await?;
        assert_eq!(added, Value::Int(3));
        sleep(Duration::from_millis(10)).await;
        assert_eq!(
            run(&mut con, &["ZRANGE", "z", "0", "-1"]).await?,
            Value::Array(vec![bulk("b")])
        );
        Ok(())
    });
    sim.run().unwrap();
    let seen = seen.lock().unwrap();
    for (who, reply, took) in seen.iter() {
        let expected = match who.as_str() {
            "min" => zpopped("z", "a", "-1.5"),
            _ => zpopped("z", "c", "3"),
        };
        assert_eq!(reply, &Ok(expected), "{who}");
        assert!(*took < Duration::from_millis(1010), "{who}: {took:?}");
    }
    assert_eq!(seen.len(), 2);
}

#[test]
fn sorted_set_pops_time_out_exactly_and_a_key_of_another_type_does_not_serve_them() {
    let mut sim = sim(12);
    node(&mut sim, NodeConfig::new("redis"));
    let seen = Seen::default();
    waiter(&mut sim, &seen, "bzpopmax", 0, &["BZPOPMAX", "k", "0.5"]);
    waiter(
        &mut sim,
        &seen,
        "bzmpop",
        0,
        &["BZMPOP", "0.25", "2", "j", "k", "MIN", "COUNT", "3"],
    );
    sim.client("writer", async {
        let mut con = connect("redis").await?;
        sleep(Duration::from_millis(100)).await;
        // A string, then a sorted set emptied in the same transaction:
        // neither serves the waiters.
        run(&mut con, &["SET", "k", "v"]).await?;
        run(&mut con, &["MULTI"]).await?;
        run(&mut con, &["DEL", "k"]).await?;
        run(&mut con, &["ZADD", "j", "1", "m"]).await?;
        run(&mut con, &["DEL", "j"]).await?;
        run(&mut con, &["EXEC"]).await?;
        Ok(())
    });
    sim.run().unwrap();
    let mut seen = seen.lock().unwrap().clone();
    seen.sort_by_key(|(_, _, took)| *took);
    assert_eq!(seen.len(), 2);
    let expect = [("bzmpop", 250), ("bzpopmax", 500)];
    for ((who, reply, took), (name, ms)) in seen.iter().zip(expect) {
        assert_eq!(who, name);
        assert_eq!(reply, &Ok(Value::Nil), "{who}");
        assert!(
            *took >= Duration::from_millis(ms) && *took <= Duration::from_millis(ms + 3),
            "{who}: {took:?}"
        );
    }
}

#[test]
fn clients_blocked_on_sorted_sets_are_served_in_the_order_they_blocked() {
    let mut sim = sim(13);
    node(&mut sim, NodeConfig::new("redis"));
    let seen = Seen::default();
    for (name, after, end, count) in [
        ("first", 100, "MIN", "1"),
        ("second", 200, "MAX", "10"),
        ("third", 300, "MIN", "10"),
        ("fourth", 400, "MAX", "1"),
    ] {
        let args = ["BZMPOP", "0", "2", "z1", "z2", end, "COUNT", count];
        waiter(&mut sim, &seen, name, after, &args);
    }
    sim.client("adder", async {
        let mut con = connect("redis").await?;
        sleep(Duration::from_secs(1)).await;
        // One transaction fills both keys: the first key serves the first
        // two waiters, the second the third; the fourth waits on.
        run(&mut con, &["MULTI"]).await?;
        run(&mut con, &["ZADD", "z1", "1", "a", "2", "b", "3", "c"]).await?;
        run(&mut con, &["ZADD", "z2", "1", "x", "2", "y"]).await?;
        run(&mut con, &["EXEC"]).await?;
        sleep(Duration::from_millis(100)).await;
        run(&mut con, &["ZADD", "z2", "5", "p", "6", "q"]).await?;
        Ok(())
    });
    sim.run().unwrap();
    let seen = seen.lock().unwrap();
    let got: Vec<(&str, &Result<Value, String>)> =
        seen.iter().map(|(w, r, _)| (w.as_str(), r)).collect();
    let expect = [
        ("first", zmpopped("z1", &[("a", "1")])),
        ("second", zmpopped("z1", &[("c", "3"), ("b", "2")])),
        ("third", zmpopped("z2", &[("x", "1"), ("y", "2")])),
        ("fourth", zmpopped("z2", &[("q", "6")])),
    ];
    for (name, value) in expect {
        assert!(got.contains(&(name, &Ok(value))), "{name}: {got:?}");
    }
}

#[test]
fn a_failover_unblocks_clients_blocked_on_sorted_sets() {
    let mut sim = sim(14);
    node(&mut sim, NodeConfig::new("redis"));
    let seen = Seen::default();
    waiter(&mut sim, &seen, "bzpopmin", 0, &["BZPOPMIN", "z", "0"]);
    waiter(
        &mut sim,
        &seen,
        "bzmpop",
        0,
        &["BZMPOP", "0", "1", "z", "MAX"],
    );
    sim.client("operator", async {
        let mut con = connect("redis").await?;
        sleep(Duration::from_secs(1)).await;
        run(&mut con, &["REPLICAOF", "elsewhere", "6379"]).await?;
        Ok(())
    });
    sim.run().unwrap();
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 2);
    for (who, reply, took) in seen.iter() {
        let text = reply.as_ref().unwrap_err();
        assert!(text.contains("UNBLOCKED"), "{who}: {text}");
        assert!(*took >= Duration::from_millis(990), "{who}: {took:?}");
    }
}

#[test]
fn a_resp3_client_woken_from_a_sorted_set_reads_its_score_as_a_double() {
    let mut sim = sim(15);
    node(&mut sim, NodeConfig::new("redis"));
    let got = Arc::new(Mutex::new(Vec::new()));
    let out = got.clone();
    sim.client("resp3", async move {
        let mut s = turmoil::net::TcpStream::connect(("redis", 6379)).await?;
        let mut buf = Vec::new();
        let hello = exchange(&mut s, &mut buf, b"HELLO 3\r\n").await?;
        assert!(hello.starts_with(b"%7\r\n"), "{hello:?}");
        for request in [
            &b"BZPOPMIN z 0.1\r\n"[..],
            b"BZPOPMIN z 0\r\n",
            b"BZMPOP 1 1 z MAX\r\n",
        ] {
            let reply = exchange(&mut s, &mut buf, request).await?;
            out.lock().unwrap().push(reply);
        }
        Ok(())
    });
    sim.client("adder", async {
        let mut con = connect("redis").await?;
        sleep(Duration::from_secs(1)).await;
        run(&mut con, &["ZADD", "z", "2.5", "a", "1e20", "b"]).await?;
        Ok(())
    });
    sim.run().unwrap();
    let got = got.lock().unwrap();
    let text: Vec<String> = got
        .iter()
        .map(|r| String::from_utf8_lossy(r).into_owned())
        .collect();
    assert_eq!(
        text,
        [
            "_\r\n",
            "*3\r\n$1\r\nz\r\n$1\r\na\r\n,2.5\r\n",
            "*2\r\n$1\r\nz\r\n*1\r\n*2\r\n$1\r\nb\r\n,1e+20\r\n",
        ]
    );
}

#[test]
fn client_unblock_ends_a_wait_as_a_timeout_or_with_an_error() {
    let mut sim = sim(16);
    node(&mut sim, NodeConfig::new("redis"));
    let got = Arc::new(Mutex::new(Vec::new()));
    let out = got.clone();
    sim.client("waiter", async move {
        let mut con = connect("redis").await?;
        let Value::Int(id) = run(&mut con, &["CLIENT", "ID"]).await? else {
            panic!("CLIENT ID is an integer");
        };
        out.lock().unwrap().push(Ok(Value::Int(id)));
        for args in [
            &["BZPOPMIN", "z", "0"][..],
            &["BLPOP", "l", "0"],
            &["BZMPOP", "0", "1", "z", "MIN"],
        ] {
            let r = run(&mut con, args).await.map_err(|e| e.to_string());
            out.lock().unwrap().push(r);
        }
        Ok(())
    });
    let ids = got.clone();
    sim.client("operator", async move {
        let mut con = connect("redis").await?;
        sleep(Duration::from_millis(100)).await;
        let Ok(Value::Int(id)) = ids.lock().unwrap()[0].clone() else {
            panic!("the waiter's id");
        };
        let id = id.to_string();
        for how in ["TIMEOUT", "ERROR", "timeout"] {
            let unblocked = run(&mut con, &["CLIENT", "UNBLOCK", &id, how]).await?;
            assert_eq!(unblocked, Value::Int(1), "{how}");
            sleep(Duration::from_millis(100)).await;
        }
        // No longer blocked.
        let again = run(&mut con, &["CLIENT", "UNBLOCK", &id]).await?;
        assert_eq!(again, Value::Int(0));
        Ok(())
    });
    sim.run().unwrap();
    let got = got.lock().unwrap();
    assert_eq!(got.len(), 4, "{got:?}");
    assert_eq!(got[1], Ok(Value::Nil));
    let error = got[2].as_ref().unwrap_err();
    assert!(
        error.contains("UNBLOCKED") && error.contains("client unblocked via CLIENT UNBLOCK"),
        "{error}"
    );
    assert_eq!(got[3], Ok(Value::Nil));
}
