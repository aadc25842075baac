//! Where the node's Lua knowingly differs from Redis 7.0.15 (listed in the
//! crate's README): each difference pinned, so that a change to it is a
//! decision, not an accident. What matches Redis is checked against a real
//! `redis-server` in the conformance suite instead.

use std::rc::Rc;

use simredis::lua::{LuaEngine, sha1_hex};
use simredis::resp::Reply;

fn engine() -> LuaEngine {
    LuaEngine::new(Rc::new(|_: &[Vec<u8>]| Reply::ok()))
}

fn eval(e: &LuaEngine, body: &str) -> Reply {
    match e.load(body.as_bytes()) {
        Ok(sha) => e.run(&sha, &[], &[]).expect("a loaded script runs"),
        Err(r) => r,
    }
}

fn script_error(body: &str, text: &str) -> Reply {
    let sha = sha1_hex(body.as_bytes());
    Reply::Error(format!("{text} script: {sha}, on @user_script:1."))
}

#[test]
fn cmsgpack_unpack_fails_a_few_values_short_of_redis_7999() {
    let e = engine();
    let fits = "local t = {cmsgpack.unpack(string.rep('\\1', 7000))} return #t";
    assert_eq!(eval(&e, fits), Reply::Int(7000));
    // Redis answers 7999 (and raises its own stack overflow from 8000 on):
    // a Rust function needs a few stack slots more than lua-cmsgpack does
    // to return its values (how many depends on mlua's own use).
    let redis_max = "local t = {cmsgpack.unpack(string.rep('\\1', 7999))} return #t";
    match eval(&e, redis_max) {
        Reply::Error(text) => assert!(text.contains("stack"), "{text}"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn redis_acl_check_cmd_is_missing_where_redis_has_it() {
    let e = engine();
    let body = "return type(redis.acl_check_cmd)";
    // Redis answers "function".
    assert_eq!(eval(&e, body), Reply::Bulk(b"nil".to_vec()));
}

#[test]
fn cjson_refuses_arrays_past_a_hundred_million_elements_even_when_sparseness_is_allowed() {
    let e = engine();
    // With sparse arrays allowed (ratio 0), Redis would write every
    // `null` of a 200-million-element array; the node refuses it.
    let body = "cjson.encode_sparse_array(false, 0) return cjson.encode({[200000000] = 1})";
    assert_eq!(
        eval(&e, body),
        script_error(
            body,
            "ERR user_script:1: Cannot serialise table: excessively sparse array"
        )
    );
    // Below the bound, sparse arrays are written out as Redis writes them.
    let body = "return cjson.encode({[5] = 1})";
    assert_eq!(
        eval(&e, body),
        Reply::Bulk(b"[null,null,null,null,1]".to_vec())
    );
}

#[test]
fn a_coroutine_resume_sees_an_error_of_redis_call_as_an_mlua_error_object() {
    let e = engine();
    let body = "local co = coroutine.create(function () redis.call() end)\n\
                local ok, err = coroutine.resume(co)\n\
                return type(err)";
    // Redis answers "table" (its error table); pcall and xpcall handlers
    // do get Redis's values (checked in the conformance suite).
    assert_eq!(eval(&e, body), Reply::Bulk(b"userdata".to_vec()));
}
