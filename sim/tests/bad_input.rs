//! Bad scenario input: every input gets either a run to a verdict or a
//! clear error naming the file, line and field and what was expected;
//! never a panic, a hang or a silent change of meaning.

use sim::cell::run_cell;
use sim::scenario::Scenario;

/// A small valid scenario: one line per field, so that a test can replace
/// one line and know which line the error must name.
const BASE: &str = r#"rungs = ["set-nx-px", "fenced"]
seeds = [1]
duration_ms = 2000

[network]
latency_ms = 1
jitter_ms = 1

[lock]
ttl_ms = 1000
max_wait_ms = 500
retry_ms = 20
node_timeout_ms = 50
response_timeout_ms = 500

[[clients]]
count = 2
cycles = 1
critical_section_ms = 10
think_ms = 0
start_ms = 0

[resource]
kind = "inventory"
stock = 200

[resource_for.fenced]
kind = "fenced"
stock = 50

[[faults]]
kind = "pause"
on = { client = 0, cycle = 1, point = "release-start" }
duration_ms = 100

[[faults_for.fenced]]
kind = "clock-jump"
at_ms = 5
target = "redis-0"
jump_ms = 1
"#;

/// `BASE` with the first line that starts with `old` replaced by `new`.
fn with(old: &str, new: &str) -> String {
    let line = BASE
        .lines()
        .find(|l| l.starts_with(old))
        .unwrap_or_else(|| panic!("no line starting with {old:?}"));
    BASE.replacen(line, new, 1)
}

/// The 1-based line of `BASE` that starts with `start`.
fn line_of(text: &str, start: &str) -> usize {
    text.lines()
        .position(|l| l.starts_with(start))
        .unwrap_or_else(|| panic!("no line starting with {start:?}"))
        + 1
}

/// Parses `text` and returns the error message, which must name the file.
fn error(text: &str) -> String {
    match Scenario::parse(text, "bad.toml", "bad") {
        Ok(_) => panic!("accepted:\n{text}"),
        Err(e) => {
            let message = e.to_string();
            assert!(message.starts_with("bad.toml: "), "{message}");
            message
        }
    }
}

/// Asserts that `text` is refused with a message naming `line` and
/// containing every one of `words`.
fn refused(text: &str, line: usize, words: &[&str]) {
    let message = error(text);
    assert!(
        message.contains(&format!("line {line},")),
        "expected line {line}: {message}"
    );
    for word in words {
        assert!(message.contains(word), "expected {word:?} in: {message}");
    }
}

#[test]
fn the_base_scenario_loads_so_each_refusal_below_is_for_its_one_change() {
    Scenario::parse(BASE, "base.toml", "base").unwrap_or_else(|e| panic!("{e}"));
}

#[test]
fn an_empty_seeds_list_is_refused_rather_than_running_nothing() {
    let text = with("seeds", "seeds = []");
    refused(&text, 2, &["`seeds`", "at least one seed"]);
}

#[test]
fn a_negative_stock_is_refused_in_resource_and_in_resource_for() {
    let text = with("stock = 200", "stock = -1");
    refused(
        &text,
        line_of(&text, "stock = -1"),
        &["`resource.stock`", "-1"],
    );
    let text = with("stock = 50", "stock = -5");
    refused(
        &text,
        line_of(&text, "stock = -5"),
        &["`resource_for.fenced.stock`", "between 0 and"],
    );
}

#[test]
fn zero_reply_and_node_timeouts_are_refused_but_zero_max_wait_means_one_attempt() {
    let text = with("response_timeout_ms", "response_timeout_ms = 0");
    refused(
        &text,
        line_of(&text, "response_timeout_ms"),
        &["`lock.response_timeout_ms`", "at least 1"],
    );
    let text = with("node_timeout_ms", "node_timeout_ms = 0");
    refused(
        &text,
        line_of(&text, "node_timeout_ms"),
        &["`lock.node_timeout_ms`", "at least 1"],
    );
    let text = with("max_wait_ms", "max_wait_ms = 0");
    let scenario = Scenario::parse(&text, "ok.toml", "ok").unwrap_or_else(|e| panic!("{e}"));
    run_cell(&scenario, "set-nx-px", 1).unwrap_or_else(|e| panic!("{e}"));
}

#[test]
fn zero_latency_runs_to_a_verdict() {
    let text = with("latency_ms", "latency_ms = 0").replace("jitter_ms = 1", "jitter_ms = 0");
    let scenario = Scenario::parse(&text, "ok.toml", "ok").unwrap_or_else(|e| panic!("{e}"));
    for rung in ["set-nx-px", "fenced"] {
        run_cell(&scenario, rung, 1).unwrap_or_else(|e| panic!("{rung}: {e}"));
    }
}

#[test]
fn a_fault_timed_at_or_after_the_end_of_the_run_is_refused() {
    let text = with("at_ms = 5", "at_ms = 2000");
    refused(
        &text,
        line_of(&text, "[[faults_for.fenced]]"),
        &["`faults_for.fenced[0]`", "`at_ms` is 2000", "below 2000"],
    );
    let timed = BASE.replace(
        "on = { client = 0, cycle = 1, point = \"release-start\" }",
        "at_ms = 99999",
    );
    refused(
        &timed,
        line_of(&timed, "[[faults]]"),
        &["`faults[0]`", "`at_ms`", "never fires"],
    );
}

#[test]
fn a_fault_aimed_at_a_cycle_its_client_never_runs_is_refused() {
    let text = BASE.replace("cycle = 1,", "cycle = 2,");
    refused(
        &text,
        line_of(&text, "[[faults]]"),
        &[
            "`faults[0]`",
            "`on.cycle`",
            "runs 1 lock cycle",
            "expected 1 to 1",
        ],
    );
    // The same in a per-rung list, with two groups: client 2 is in the
    // second group, which runs three cycles.
    let groups = BASE.replace(
        "[resource]",
        "[[clients]]\ncount = 1\ncycles = 3\n\n[resource]",
    ) + "\n[[faults_for.fenced]]\nkind = \"pause\"\non = { client = 2, cycle = 4, point = \"before-write\" }\nduration_ms = 10\n";
    let message = error(&groups);
    assert!(
        message.contains("`faults_for.fenced[1]`") && message.contains("expected 1 to 3"),
        "{message}"
    );
    let fine = groups.replace("cycle = 4", "cycle = 3");
    Scenario::parse(&fine, "ok.toml", "ok").unwrap_or_else(|e| panic!("{e}"));
}

#[test]
fn huge_values_are_refused_naming_the_field_instead_of_wrapping_around() {
    let huge = "9300000000";
    for (line, field) in [
        ("ttl_ms", "`lock.ttl_ms`"),
        ("max_wait_ms", "`lock.max_wait_ms`"),
        ("retry_ms", "`lock.retry_ms`"),
        ("node_timeout_ms", "`lock.node_timeout_ms`"),
        ("response_timeout_ms", "`lock.response_timeout_ms`"),
        ("latency_ms", "`network.latency_ms`"),
        ("jitter_ms", "`network.jitter_ms`"),
        ("critical_section_ms", "`clients[0]` `critical_section_ms`"),
        ("think_ms", "`clients[0]` `think_ms`"),
        ("start_ms", "`clients[0]` `start_ms`"),
        ("duration_ms = 2000", "`duration_ms`"),
    ] {
        let name = line.split(' ').next().unwrap_or(line);
        let text = with(line, &format!("{name} = {huge}"));
        let message = error(&text);
        assert!(message.contains(field), "{field}: {message}");
        assert!(message.contains("3600000"), "{field}: {message}");
        let at = if field.starts_with("`clients") {
            line_of(&text, "[[clients]]")
        } else {
            line_of(&text, &format!("{name} = {huge}"))
        };
        assert!(
            message.contains(&format!("line {at},")),
            "{field}: {message}"
        );
    }
    let text = with("stock = 200", "stock = 9223372036854775807");
    refused(&text, line_of(&text, "stock = 92"), &["`resource.stock`"]);
    let text = BASE.to_string() + "liveness_bound_ms = 9223372036854775807\n";
    let message = error(&text);
    assert!(message.contains("`liveness_bound_ms`"), "{message}");
    let text = BASE.replace(
        "[[clients]]",
        "[topology]\nreplication_delay_ms = 9300000000\n\n[[clients]]",
    );
    let message = error(&text);
    assert!(
        message.contains("`topology.replication_delay_ms`"),
        "{message}"
    );
    // A group's count is bounded before the groups are added up, so that
    // two enormous groups cannot wrap around to a small total.
    let text = with("count = 2", "count = 9223372036854775807").replace(
        "[resource]",
        "[[clients]]\ncount = 9223372036854775807\n\n[resource]",
    );
    let message = error(&text);
    assert!(
        message.contains("`clients[0]`") && message.contains("256"),
        "{message}"
    );
}

#[test]
fn huge_fault_sizes_are_refused_naming_the_fault_and_the_field() {
    let fault = |body: &str| format!("{BASE}\n[[faults]]\n{body}\n");
    for (body, field) in [
        (
            "kind = \"pause\"\nat_ms = 1\ntarget = \"client-0\"\nduration_ms = 9300000000",
            "`duration_ms`",
        ),
        (
            "kind = \"crash\"\nat_ms = 1\ntarget = \"redis-0\"\nrestart_after_ms = 9300000000",
            "`restart_after_ms`",
        ),
        (
            "kind = \"partition\"\nat_ms = 1\na = [\"client-0\"]\nb = [\"redis-0\"]\nduration_ms = 9300000000",
            "`duration_ms`",
        ),
        (
            "kind = \"delay\"\nat_ms = 1\na = [\"client-0\"]\nb = [\"redis-0\"]\nduration_ms = 9300000000",
            "`duration_ms`",
        ),
        (
            "kind = \"slow-link\"\nat_ms = 1\na = [\"client-0\"]\nb = [\"redis-0\"]\nlatency_ms = 9300000000",
            "`latency_ms`",
        ),
        (
            "kind = \"clock-jump\"\nat_ms = 1\ntarget = \"client-0\"\njump_ms = -9223372036854775808",
            "`jump_ms`",
        ),
        (
            "kind = \"clock-jump\"\nat_ms = 1\ntarget = \"redis-0\"\njump_ms = 3600001",
            "`jump_ms`",
        ),
        (
            "kind = \"clock-drift\"\nat_ms = 1\ntarget = \"client-0\"\nppm = 1000001",
            "`ppm`",
        ),
        (
            "kind = \"clock-drift\"\nat_ms = 1\ntarget = \"client-0\"\nppm = -9223372036854775808",
            "`ppm`",
        ),
        (
            "kind = \"failover\"\nat_ms = 1\npromote_after_ms = 9300000000",
            "`promote_after_ms`",
        ),
    ] {
        let text = fault(body);
        // The second `[[faults]]` header is the one added here.
        let header = text
            .lines()
            .enumerate()
            .filter(|(_, l)| *l == "[[faults]]")
            .nth(1)
            .map(|(i, _)| i + 1)
            .unwrap_or(0);
        refused(&text, header, &["`faults[1]`", field, "expected"]);
    }
    // The largest accepted values load.
    let text = fault("kind = \"clock-drift\"\nat_ms = 1\ntarget = \"client-0\"\nppm = -1000000");
    Scenario::parse(&text, "ok.toml", "ok").unwrap_or_else(|e| panic!("{e}"));
}

#[test]
fn a_critical_section_of_an_hour_runs_to_a_verdict_with_a_drifting_clock() {
    // The largest accepted time, through the clock's drift arithmetic.
    let text = with("critical_section_ms", "critical_section_ms = 3600000")
        + "\n[[faults]]\nkind = \"clock-drift\"\nat_ms = 0\ntarget = \"client-0\"\nppm = -1000000\n";
    let scenario = Scenario::parse(&text, "ok.toml", "ok").unwrap_or_else(|e| panic!("{e}"));
    run_cell(&scenario, "set-nx-px", 1).unwrap_or_else(|e| panic!("{e}"));
}

#[test]
fn a_name_that_is_not_a_plain_file_name_is_refused() {
    for name in [
        "../escape",
        "a/b",
        "a\\\\b",
        "/tmp/abs",
        "..",
        ".",
        "x y",
        "",
    ] {
        let text = format!("name = \"{name}\"\n{BASE}");
        if name.is_empty() {
            // An empty name means the default: the file's stem.
            let s = Scenario::parse(&text, "ok.toml", "ok").unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(s.name, "ok");
            continue;
        }
        refused(&text, 1, &["`name`", "plain file name"]);
    }
    let text = format!("name = \"my-scenario_2.v1\"\n{BASE}");
    Scenario::parse(&text, "ok.toml", "ok").unwrap_or_else(|e| panic!("{e}"));
}

#[test]
fn two_hundred_fifty_six_clients_run_to_a_verdict() {
    let text = with("count = 2", "count = 256")
        .replace("duration_ms = 2000", "duration_ms = 300")
        .replace("max_wait_ms = 500", "max_wait_ms = 50")
        .replace("at_ms = 5", "at_ms = 1");
    let scenario = Scenario::parse(&text, "many.toml", "many").unwrap_or_else(|e| panic!("{e}"));
    run_cell(&scenario, "set-nx-px", 1).unwrap_or_else(|e| panic!("{e}"));
    let mut redlock = scenario.clone();
    redlock.rungs = vec!["redlock".into()];
    redlock.faults_for.clear();
    redlock.resource_for.clear();
    redlock.topology.kind = sim::scenario::TopologyKind::Independent;
    redlock.topology.masters = 5;
    run_cell(&redlock, "redlock", 1).unwrap_or_else(|e| panic!("{e}"));
}

#[test]
fn a_topology_field_the_deployment_ignores_is_refused() {
    let text = BASE.replacen(
        "[network]",
        "[topology]\nkind = \"standalone\"\nreplicas = 2\n\n[network]",
        1,
    );
    refused(
        &text,
        line_of(&text, "replicas"),
        &["`topology.replicas`", "standalone"],
    );
    let text = BASE.replacen(
        "[network]",
        "[topology]\nkind = \"independent\"\nmasters = 3\nreplication_delay_ms = 5\n\n[network]",
        1,
    );
    refused(
        &text,
        line_of(&text, "replication_delay_ms"),
        &["`topology.replication_delay_ms`", "independent"],
    );
}

#[test]
fn clients_that_would_start_after_the_run_ends_are_refused() {
    let text = with("start_ms", "start_ms = 2000");
    let message = error(&text);
    assert!(message.contains("`clients[0].start_ms`"), "{message}");
    assert!(message.contains("never start"), "{message}");
}
