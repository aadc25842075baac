use super::*;

fn engine() -> LuaEngine {
    LuaEngine::new(Rc::new(|args: &[Vec<u8>]| match args[0].as_slice() {
        b"ping" => Reply::Status("PONG".into()),
        b"get" => Reply::Nil,
        b"echo" => Reply::Bulk(args[1].clone()),
        _ => Reply::err("ERR unknown"),
    }))
}

fn eval(e: &LuaEngine, body: &str) -> Reply {
    match e.load(body.as_bytes()) {
        Ok(sha) => e.run(&sha, &[], &[]).unwrap(),
        Err(r) => r,
    }
}

#[test]
fn lua_values_convert_to_replies_as_in_redis() {
    let e = engine();
    assert_eq!(eval(&e, "return 3.99"), Reply::Int(3));
    assert_eq!(eval(&e, "return true"), Reply::Int(1));
    assert_eq!(eval(&e, "return false"), Reply::Nil);
    assert_eq!(
        eval(&e, "return {1,'a',nil,4}"),
        Reply::Array(vec![Reply::Int(1), Reply::Bulk(b"a".to_vec())])
    );
    assert_eq!(eval(&e, "return redis.call('get','x')"), Reply::Nil);
    assert_eq!(
        eval(&e, "return redis.call('ping')"),
        Reply::Status("PONG".into())
    );
}

#[test]
fn a_runaway_script_is_aborted_after_the_instruction_limit_and_the_engine_goes_on() {
    let e = engine();
    e.set_instruction_limit(1_000_000);
    let before = aborted_scripts();
    for body in [
        "while true do end",
        "while true do pcall(function () while true do end end) end",
    ] {
        let sha = sha1_hex(body.as_bytes());
        assert_eq!(
            eval(&e, body),
            Reply::Error(format!("{SCRIPT_ABORTED} (script: {sha})"))
        );
        assert!(e.last_aborted());
    }
    assert_eq!(eval(&e, "return 1"), Reply::Int(1));
    assert!(!e.last_aborted());
    // What a simulation run checks to refuse judging a cut-short run.
    assert_eq!(aborted_scripts() - before, 2);
}

#[test]
fn numbers_passed_to_commands_print_as_percent_17g() {
    assert_eq!(fmt_g17(30.0), "30");
    assert_eq!(fmt_g17(0.1), "0.10000000000000001");
    assert_eq!(fmt_g17(1e20), "1e+20");
    assert_eq!(fmt_g17(-2.5), "-2.5");
    let e = engine();
    assert_eq!(
        eval(&e, "return redis.call('echo', 1.5)"),
        Reply::Bulk(b"1.5".to_vec())
    );
}

#[test]
fn script_errors_carry_the_script_sha_and_line() {
    let e = engine();
    let body = "error('x')";
    let sha = sha1_hex(body.as_bytes());
    assert_eq!(
        eval(&e, body),
        Reply::Error(format!(
            "ERR user_script:1: x script: {sha}, on @user_script:1."
        ))
    );
    let body = "\nreturn redis.call('nope')";
    let sha = sha1_hex(body.as_bytes());
    assert_eq!(
        eval(&e, body),
        Reply::Error(format!("ERR unknown script: {sha}, on @user_script:2."))
    );
}
