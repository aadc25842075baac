//! Bad scenario input: every input gets either a run to a verdict or a
//! clear error naming the file, line and field and what was expected;
//! never a panic, a hang or a silent change of meaning.

use model::scenario::Scenario;
use sim::cell::run_cell;

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

/// Asserts that `text` is refused with a message naming the line that
/// starts with `start` and containing every one of `words`.
fn refused_at(text: &str, start: &str, words: &[&str]) {
    refused(text, line_of(text, start), words);
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
    refused_at(&text, "stock = -1", &["`resource.stock`", "-1"]);
    let text = with("stock = 50", "stock = -5");
    refused_at(
        &text,
        "stock = -5",
        &["`resource_for.fenced.stock`", "between 0 and"],
    );
}

#[test]
fn zero_reply_and_node_timeouts_are_refused_but_zero_max_wait_means_one_attempt() {
    let text = with("response_timeout_ms", "response_timeout_ms = 0");
    refused_at(
        &text,
        "response_timeout_ms",
        &["`lock.response_timeout_ms`", "at least 1"],
    );
    let text = with("node_timeout_ms", "node_timeout_ms = 0");
    refused_at(
        &text,
        "node_timeout_ms",
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
    refused_at(
        &text,
        "at_ms = 2000",
        &["`faults_for.fenced[0]`", "`at_ms` is 2000", "below 2000"],
    );
    let timed = BASE.replace(
        "on = { client = 0, cycle = 1, point = \"release-start\" }",
        "at_ms = 99999",
    );
    refused_at(
        &timed,
        "at_ms = 99999",
        &["`faults[0]`", "`at_ms`", "never fires"],
    );
}

#[test]
fn a_fault_aimed_at_a_cycle_its_client_never_runs_is_refused() {
    let text = BASE.replace("cycle = 1,", "cycle = 2,");
    refused_at(
        &text,
        "on = ",
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
        let at = line_of(&text, &format!("{name} = {huge}"));
        assert!(
            message.contains(&format!("line {at},")),
            "{field}: {message}"
        );
    }
    let text = with("stock = 200", "stock = 9223372036854775807");
    refused_at(&text, "stock = 92", &["`resource.stock`"]);
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
        // The field's own line, in the fault added here (the second).
        let header = text
            .lines()
            .enumerate()
            .filter(|(_, l)| *l == "[[faults]]")
            .nth(1)
            .map(|(i, _)| i)
            .unwrap_or(0);
        let key = field.trim_matches('`');
        let at = text
            .lines()
            .enumerate()
            .skip(header)
            .find(|(_, l)| l.starts_with(&format!("{key} =")))
            .map_or(0, |(i, _)| i + 1);
        refused(&text, at, &["`faults[1]`", field, "expected"]);
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
    redlock.topology.kind = model::scenario::TopologyKind::Independent;
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
    refused_at(&text, "replicas", &["`topology.replicas`", "standalone"]);
    let text = BASE.replacen(
        "[network]",
        "[topology]\nkind = \"independent\"\nmasters = 3\nreplication_delay_ms = 5\n\n[network]",
        1,
    );
    refused_at(
        &text,
        "replication_delay_ms",
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

#[test]
fn an_error_in_a_value_names_its_field_and_points_at_its_line() {
    // Inside a fault, too: each field is read on its own, so the error
    // points at the field's line, not at the fault's header.
    let fault = |body: &str| format!("{BASE}\n[[faults]]\n{body}\n");
    for (body, bad_line, field) in [
        (
            "kind = \"pause\"\nat_ms = 1.5\ntarget = \"client-0\"\nduration_ms = 5",
            "at_ms = 1.5",
            "`faults[1].at_ms`",
        ),
        (
            "kind = \"pause\"\nat_ms = 1\ntarget = \"client-01\"\nduration_ms = 5",
            "target = \"client-01\"",
            "`faults[1].target`",
        ),
        (
            "kind = \"partition\"\nat_ms = 1\na = [\"client-+0\"]\nb = [\"redis-0\"]",
            "a = [\"client-+0\"]",
            "`faults[1].a`",
        ),
        (
            "kind = \"clock-drift\"\nat_ms = 1\ntarget = \"client-0\"\nppm = nan",
            "ppm = nan",
            "`faults[1].ppm`",
        ),
        (
            "kind = \"pause\"\non = { client = 0, cycle = 1, point = \"nowhere\" }\nduration_ms = 5",
            "on = { client = 0, cycle = 1, point = \"nowhere\" }",
            "`faults[1].on.point`",
        ),
    ] {
        let text = fault(body);
        refused_at(&text, bad_line, &[field]);
    }
    for (old, new, field) in [
        ("count = 2", "count = 1.5", "`clients[0].count`"),
        ("stock = 200", "stock = 1e3", "`resource.stock`"),
        ("ttl_ms", "ttl_ms = -1", "`lock.ttl_ms`"),
        ("seeds", "seeds = [1, -1]", "`seeds`"),
    ] {
        let text = with(old, new);
        refused_at(&text, new, &[field]);
    }
}

#[test]
fn a_field_of_another_fault_kind_is_refused_at_its_line() {
    let text = format!(
        "{BASE}\n[[faults]]\nkind = \"pause\"\nat_ms = 1\ntarget = \"client-0\"\nppm = 5\nduration_ms = 5\n"
    );
    refused_at(&text, "ppm = 5", &["unknown field `ppm`", "a pause fault"]);
}

#[test]
fn a_table_of_the_wrong_shape_is_refused_naming_it() {
    let text = BASE.replacen("[lock]", "[[lock]]", 1);
    refused_at(&text, "[[lock]]", &["`lock`", "one table"]);
    let text = BASE.replacen("[[clients]]", "[clients]", 1);
    refused_at(&text, "[clients]", &["`clients`", "an array of tables"]);
    let text = BASE.replacen("[resource_for.fenced]", "[[resource_for.fenced]]", 1);
    refused_at(&text, "[[resource_for.fenced]]", &["`resource_for.fenced`"]);
}

#[test]
fn too_many_nodes_names_the_field_that_counts_them_without_wrapping_around() {
    for (topology, field) in [
        (
            "kind = \"independent\"\nmasters = 10",
            "`topology.masters` is 10",
        ),
        (
            "kind = \"independent\"\nmasters = 0",
            "`topology.masters` is 0",
        ),
        (
            "kind = \"replicated\"\nreplicas = 9",
            "`topology.replicas` is 9",
        ),
        (
            "kind = \"replicated\"\nreplicas = 18446744073709551615",
            "`topology.replicas` is 18446744073709551615",
        ),
    ] {
        let text = BASE.replacen(
            "[network]",
            &format!("[topology]\n{topology}\n\n[network]"),
            1,
        );
        let at = line_of(&text, topology.lines().nth(1).unwrap_or(topology));
        refused(&text, at, &[field, "between 1 and 9"]);
    }
}

#[test]
fn a_host_a_fault_names_on_either_side_is_checked_naming_the_side() {
    let text = format!(
        "{BASE}\n[[faults]]\nkind = \"partition\"\nat_ms = 1\na = [\"client-0\"]\nb = [\"redis-5\"]\n"
    );
    refused_at(
        &text,
        "b = ",
        &["`faults[1]` (partition): `b`:", "redis-5", "does not exist"],
    );
    let text = format!("{BASE}\n[[faults]]\nkind = \"crash\"\nat_ms = 1\ntarget = \"client-9\"\n");
    refused_at(&text, "target = \"client-9\"", &["`target`: client-9"]);
}

#[test]
fn a_slow_network_runs_to_a_verdict_and_one_slower_than_ten_seconds_is_refused() {
    // The driver's own requests (stocking the store, reading it at the
    // end) wait as long as the network needs: they used to time out after
    // a second, failing every run with a latency of 400 ms or more.
    let text =
        with("latency_ms", "latency_ms = 400").replace("duration_ms = 2000", "duration_ms = 300");
    let scenario = Scenario::parse(&text, "slow.toml", "slow").unwrap_or_else(|e| panic!("{e}"));
    run_cell(&scenario, "set-nx-px", 1).unwrap_or_else(|e| panic!("{e}"));
    let text = with("latency_ms", "latency_ms = 9999");
    Scenario::parse(&text, "ok.toml", "ok").unwrap_or_else(|e| panic!("{e}"));
    let text = with("latency_ms", "latency_ms = 10000");
    refused_at(
        &text,
        "latency_ms = 10000",
        &[
            "`network.latency_ms` plus `network.jitter_ms` is 10001",
            "at most 10000",
        ],
    );
}

#[test]
fn a_client_that_redials_a_node_it_cannot_reach_in_time_runs_out_of_ports_without_a_panic() {
    // The node is down for good, every dial to it is given up after 1 ms,
    // and each one given up keeps a turmoil port: after some 16,000 the
    // machine is out of ports, which made turmoil panic. Now its dials fail
    // at once, and the run goes on to a verdict.
    let text = "rungs = [\"set-nx-px\"]\nduration_ms = 60000\n\
                [lock]\nresponse_timeout_ms = 1\nretry_ms = 1\n\
                [[clients]]\ncount = 1\ncycles = 4294967295\n\
                [[faults]]\nkind = \"crash\"\nat_ms = 0\ntarget = \"redis-0\"\n";
    let scenario = Scenario::parse(text, "ports.toml", "ports").unwrap_or_else(|e| panic!("{e}"));
    let judged = run_cell(&scenario, "set-nx-px", 1).unwrap_or_else(|e| panic!("{e}"));
    let out_of_ports = judged.history.events().iter().any(|e| {
        matches!(&e.kind, model::history::EventKind::Complete { error: Some(error), .. }
            if error.contains("no ephemeral port left"))
    });
    assert!(out_of_ports, "the client never ran out of ports");
}

#[test]
fn an_empty_rung_list_in_its_old_spelling_is_refused_at_its_line() {
    let text = BASE.replacen("rungs = [\"set-nx-px\", \"fenced\"]", "variants = []", 1)
        .replace("\n[resource_for.fenced]\nkind = \"fenced\"\nstock = 50\n", "")
        .replace("\n[[faults_for.fenced]]\nkind = \"clock-jump\"\nat_ms = 5\ntarget = \"redis-0\"\njump_ms = 1\n", "");
    refused(&text, 1, &["`rungs` is empty"]);
}

#[test]
fn a_client_whose_every_request_fails_at_once_does_not_stop_simulated_time() {
    // The store and the node are down for good and the client thinks not
    // at all: each cycle fails within the same instant. It used to run its
    // 2^32 - 1 cycles inside one step of the simulation, which never ended.
    let text = "rungs = [\"no-lock\", \"set-nx-px\"]\nduration_ms = 1500\n\
                [[clients]]\ncount = 1\ncycles = 4294967295\n\
                [[faults]]\nkind = \"crash\"\nat_ms = 0\ntarget = \"store\"\n\
                [[faults]]\nkind = \"crash\"\nat_ms = 0\ntarget = \"redis-0\"\n";
    let scenario = Scenario::parse(text, "down.toml", "down").unwrap_or_else(|e| panic!("{e}"));
    for rung in ["no-lock", "set-nx-px"] {
        let judged = run_cell(&scenario, rung, 1).unwrap_or_else(|e| panic!("{rung}: {e}"));
        // About one cycle per simulated millisecond, each recorded.
        assert!(
            judged.history.len() < 20_000,
            "{rung}: {}",
            judged.history.len()
        );
    }
}
