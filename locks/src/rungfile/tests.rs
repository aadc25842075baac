use super::*;
use std::time::Duration;

const LUA_RELEASE: &str = include_str!("../../../rungs/lua-release.toml");
const REENTRANT: &str = include_str!("../../../rungs/reentrant.toml");
const WATCHDOG: &str = include_str!("../../../rungs/watchdog.toml");
const REDLOCK: &str = include_str!("../../../rungs/redlock.toml");

fn parse(text: &str) -> Result<RungFile, RungFileError> {
    RungFile::parse(text, "my-lock.toml")
}

/// The error of `text`, which must not load.
fn error(text: &str) -> RungFileError {
    parse(text).expect_err("must not load")
}

#[test]
fn the_shipped_rung_files_load_with_the_shape_of_the_rungs_they_play() {
    let lua = parse(LUA_RELEASE).expect("lua-release.toml");
    assert_eq!(lua.plays, Some("lua-release"));
    assert_eq!((lua.token, lua.nodes), (OwnerMark::Random, Nodes::Single));
    assert!(lua.reclaim.is_some() && lua.renewal.is_none());
    assert_eq!(lua.scripts().len(), 3);

    let reentrant = parse(REENTRANT).expect("reentrant.toml");
    assert_eq!(reentrant.token, OwnerMark::Owner);
    assert!(reentrant.acquire.captures(Outcome::Granted, Capture::Depth));

    let watchdog = parse(WATCHDOG).expect("watchdog.toml");
    assert_eq!(watchdog.renewal, Some(Interval::TtlOver(3)));
    assert_eq!(
        watchdog
            .renewal
            .map(|r| r.period(Duration::from_millis(900))),
        Some(Duration::from_millis(300))
    );

    let redlock = parse(REDLOCK).expect("redlock.toml");
    let Nodes::Independent { quorum, drift } = redlock.nodes else {
        panic!("redlock.toml is multi-node: {:?}", redlock.nodes);
    };
    assert_eq!(quorum.of(5), 3);
    // The ladder's Redlock allows ttl/100 + 2 ms, exactly.
    let ttl = Duration::from_millis(1_500);
    assert_eq!(drift.of(ttl), ttl / 100 + Duration::from_millis(2));
}

#[test]
fn a_script_is_handed_out_with_the_file_line_it_starts_on() {
    let lua = parse(LUA_RELEASE).expect("loads");
    let release = &lua.scripts()[0];
    assert_eq!(release.operation, "release");
    let line = LUA_RELEASE
        .lines()
        .position(|l| l.starts_with("if redis.call('get'"))
        .expect("the script's first line")
        + 1;
    assert_eq!(release.first_line, line);
    assert!(release.text.starts_with("if redis.call('get'"));
}

#[test]
fn a_reply_is_read_through_the_files_outcomes_in_order() {
    let reentrant = parse(REENTRANT).expect("loads");
    let release = &reentrant.release;
    assert_eq!(
        release.outcome_of(&redis::Value::Int(0)).map(|o| o.0),
        Some(Outcome::Released)
    );
    assert_eq!(
        release.outcome_of(&redis::Value::Int(2)).map(|o| o.0),
        Some(Outcome::StillHeld)
    );
    assert_eq!(
        release.outcome_of(&redis::Value::Int(-1)).map(|o| o.0),
        Some(Outcome::NotMine)
    );
    assert_eq!(release.outcome_of(&redis::Value::Nil), None);
    assert_eq!(
        release.expected(),
        "released = 0, still_held = holds, not_mine = -1"
    );
}

#[test]
fn placeholders_are_filled_and_braces_escaped() {
    let arg = Arg::parse("{{tag}}:{key}:{ttl_ms}").expect("parses");
    let values = Values {
        key: "k",
        token: "t",
        owner: "c:1",
        ttl: Duration::from_millis(250),
    };
    assert_eq!(arg.fill(&values), "{tag}:k:250");
    assert!(arg.uses(Placeholder::Key) && !arg.uses(Placeholder::Token));
    let unknown = Arg::parse("{tokn}").expect_err("unknown placeholder");
    assert!(unknown.contains("unknown placeholder {tokn}"), "{unknown}");
}

/// The 1-based number of the line of `text` that is exactly `line`.
fn line_of(text: &str, line: &str) -> usize {
    text.lines()
        .position(|l| l == line)
        .unwrap_or_else(|| panic!("no line {line:?}"))
        + 1
}

#[test]
fn errors_name_the_file_line_and_what_was_expected() {
    let cases: [(&str, usize, &str); 7] = [
        (
            "id = \"x\"\ntoken = \"random\"\ncolour = 1\n",
            3,
            "unknown field `colour`",
        ),
        (
            "id = \"x\"\ntoken = \"mine\"\n",
            2,
            "unknown variant `mine`",
        ),
        (
            &LUA_RELEASE.replace("argv = [\"{token}\"]", "argv = [\"{tokn}\"]"),
            line_of(LUA_RELEASE, "argv = [\"{token}\"]"),
            "`release.argv`: \"{tokn}\": unknown placeholder {tokn}",
        ),
        (
            &LUA_RELEASE.replace("taken = \"nil\"", "taken = \"none\""),
            line_of(LUA_RELEASE, "taken = \"nil\""),
            "`acquire.taken`: unknown pattern \"none\"",
        ),
        (
            &LUA_RELEASE.replace("taken = \"nil\"", "released = \"nil\""),
            line_of(LUA_RELEASE, "taken = \"nil\""),
            "`acquire.released`: acquire has no such outcome",
        ),
        (
            &REENTRANT.replace("token = \"owner\"", "token = \"owner\"\n[reclaim]\ncommand = [\"GET\", \"{key}\"]\ngranted = \"1\"\nnot_mine = \"0\""),
            line_of(REENTRANT, "token = \"owner\"") + 1,
            "`reclaim` needs `token = \"random\"`",
        ),
        (
            &REDLOCK.replace("quorum = \"majority\"", "quorum = \"most\""),
            line_of(REDLOCK, "quorum = \"majority\""),
            "`nodes.quorum`: expected \"majority\" or a number",
        ),
    ];
    for (text, line, message) in cases {
        let e = error(text);
        assert_eq!(e.file, "my-lock.toml");
        assert_eq!(e.line, line, "{e}");
        assert!(e.message.contains(message), "{e}");
        assert!(
            e.to_string()
                .starts_with(&format!("my-lock.toml: line {line}")),
            "{e}"
        );
    }
}

#[test]
fn an_operation_needs_exactly_one_call_and_its_required_outcomes() {
    let both = LUA_RELEASE.replace(
        "command = [\"SET\"",
        "script = \"return 1\"\ncommand = [\"SET\"",
    );
    assert!(error(&both).message.contains("exactly one of `script`"));
    let no_taken = LUA_RELEASE.replace("taken = \"nil\"\n", "");
    assert!(
        error(&no_taken)
            .message
            .contains("`acquire.taken` is missing")
    );
    let renew_without_extend = LUA_RELEASE
        .split("[extend]")
        .next()
        .map(|head| format!("{head}[renewal]\ninterval = \"ttl/3\"\n"))
        .expect("head");
    assert!(
        error(&renew_without_extend)
            .message
            .contains("needs an `[extend]`")
    );
}
