//! The deadline shift that stages a node's clock jump on a real
//! redis-server (`real::service::redis::deadlines`): a forward jump shortens the keys
//! already there, one past its new deadline is gone, a backward jump
//! lengthens them, and keys that are not locklab's are left alone. Needs
//! redis-server (scripts/setup installs it); takes well under a second.

use harness::RedisServer;
use real::nodes::{command, parse_int_reply};
use real::service::redis::deadlines::{ShiftCount, shift_deadlines};
use std::net::SocketAddr;

fn set_px(addr: SocketAddr, key: &str, ttl_ms: u64) {
    command(addr, &["SET", key, "v", "PX", &ttl_ms.to_string()]).expect("SET PX");
}

fn pttl(addr: SocketAddr, key: &str) -> i64 {
    let reply = command(addr, &["PTTL", key]).expect("PTTL");
    parse_int_reply(&reply).expect("an integer PTTL")
}

/// Asserts `key`'s PTTL is within `range` ms.
fn assert_pttl_in(addr: SocketAddr, key: &str, range: std::ops::RangeInclusive<i64>) {
    let left = pttl(addr, key);
    assert!(
        range.contains(&left),
        "PTTL of {key} is {left}, expected {range:?}"
    );
}

fn lock_prefixes() -> Vec<String> {
    vec!["lock:stock".to_string()]
}

#[test]
fn a_forward_jump_shortens_locklab_keys_and_expires_those_past_their_new_deadline() {
    let server = RedisServer::start().expect("redis-server");
    let addr = server.addr();
    set_px(addr, "lock:stock", 5_000);
    set_px(addr, "lock:stock:short", 1_000);
    set_px(addr, "other:key", 5_000);
    command(addr, &["SET", "lock:stock:fence", "7"]).expect("SET");

    let count = shift_deadlines(addr, 3_000, &lock_prefixes()).expect("shift");

    assert_eq!(
        count,
        ShiftCount {
            shifted: 1,
            expired: 1
        }
    );
    assert_pttl_in(addr, "lock:stock", 1_500..=2_000);
    assert_eq!(
        pttl(addr, "lock:stock:short"),
        -2,
        "a key past its deadline is gone"
    );
    assert_eq!(
        pttl(addr, "lock:stock:fence"),
        -1,
        "a key without deadline keeps none"
    );
    assert_pttl_in(addr, "other:key", 4_500..=5_000);
    server.stop();
}

#[test]
fn a_backward_jump_lengthens_locklab_keys_only() {
    let server = RedisServer::start().expect("redis-server");
    let addr = server.addr();
    set_px(addr, "lock:stock", 5_000);
    set_px(addr, "other:key", 5_000);

    let count = shift_deadlines(addr, -3_000, &lock_prefixes()).expect("shift");

    assert_eq!(
        count,
        ShiftCount {
            shifted: 1,
            expired: 0
        }
    );
    assert_pttl_in(addr, "lock:stock", 7_500..=8_000);
    assert_pttl_in(addr, "other:key", 4_500..=5_000);
    server.stop();
}

#[test]
fn glob_characters_in_the_lock_key_match_only_themselves() {
    let server = RedisServer::start().expect("redis-server");
    let addr = server.addr();
    set_px(addr, "lock*", 5_000);
    set_px(addr, "lockX", 5_000);

    let count = shift_deadlines(addr, 1_000, &["lock*".to_string()]).expect("shift");

    assert_eq!(count.shifted, 1);
    assert!(pttl(addr, "lock*") <= 4_000);
    assert!(
        pttl(addr, "lockX") > 4_000,
        "lockX matched the literal key lock*"
    );
    server.stop();
}
