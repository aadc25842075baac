//! Where scenario errors are placed, for the shapes of TOML a search of
//! the text used to miss; `sim/tests/simulator/bad_input.rs` covers the common ones.

use super::Scenario;

/// A scenario that loads: one client, no faults.
const SMALL: &str = "rungs = [\"setnx\"]\nduration_ms = 100\n[[clients]]\n";

fn message(text: &str) -> String {
    match Scenario::parse(text, "f.toml", "f") {
        Ok(_) => panic!("accepted:\n{text}"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn a_quoted_key_is_placed_at_its_own_line() {
    let text = format!("{SMALL}[lock]\n\"ttl_ms\" = 0\n");
    assert_eq!(
        message(&text),
        "f.toml: line 5, column 1: `lock.ttl_ms` must be at least 1"
    );
    let text = "\"rungs\" = []\nduration_ms = 100\n[[clients]]\n";
    assert_eq!(
        message(text),
        "f.toml: line 1, column 1: `rungs` is empty; expected at least one rung id"
    );
}

#[test]
fn a_fault_in_an_inline_array_is_placed_at_the_field_its_error_names() {
    let text = "rungs = [\"setnx\"]\nduration_ms = 100\nclients = [{ count = 1 }]\n\
                faults = [{ kind = \"pause\", on = { client = 0, cycle = 3, point = \"after-acquire\" }, duration_ms = 5 }]\n";
    assert_eq!(
        message(text),
        "f.toml: line 4, column 29: `faults[0]` (pause): `on.cycle`: client 0 runs 1 lock cycle(s), so cycle 3 never comes; expected 1 to 1"
    );
}

#[test]
fn a_value_in_a_sub_table_of_a_fault_names_the_fault_by_its_index() {
    let fault = "[[faults]]\nkind = \"crash\"\nat_ms = 1\ntarget = \"redis-0\"\n";
    let text = format!("{SMALL}{fault}{fault}[faults.on]\nclient = 0\npoint = \"x\"\n");
    assert!(
        message(&text).starts_with(
            "f.toml: line 14, column 9: `faults[1].on.point`: unknown fault point \"x\""
        ),
        "{}",
        message(&text)
    );
}

#[test]
fn a_duplicate_header_is_named_by_its_header() {
    let text = format!("{SMALL}count = 1\n[clients]\ncount = 2\n");
    assert!(
        message(&text).ends_with("`clients`: duplicate key"),
        "{}",
        message(&text)
    );
}

#[test]
fn an_old_spelling_is_noted_at_the_line_of_its_first_use() {
    let text = "variants = [\"setnx\"]\nduration_ms = 100\n[[clients]]\n[[clients]]\nops = 2\n";
    let scenario = Scenario::parse(text, "f.toml", "f").unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        scenario.notes,
        [
            "line 1: `variants` is the old spelling of `rungs`; it still loads",
            "line 5: `ops` is the old spelling of `cycles`; it still loads",
        ]
    );
}

#[test]
fn a_member_count_belongs_to_a_cluster_only_and_within_the_node_limit() {
    let standalone = format!("{SMALL}[topology]\nkind = \"standalone\"\nmembers = 3\n");
    let said = message(&standalone);
    assert!(
        said.contains("`topology.members`: a standalone deployment has no use for it"),
        "{said}"
    );
    let huge = format!("{SMALL}[topology]\nkind = \"cluster\"\nmembers = 10\n");
    let said = message(&huge);
    assert!(
        said.contains("`topology.members` is 10, which makes 10 nodes"),
        "{said}"
    );
    let cluster = format!("{SMALL}[topology]\nkind = \"cluster\"\n");
    let parsed = Scenario::parse(&cluster, "f.toml", "f").unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(parsed.topology.node_count(), 3);
}

#[test]
fn a_fault_aimed_at_a_caller_in_a_pooled_process_is_refused_where_it_is_written() {
    let pooled = "rungs = [\"pg-advisory-pooled\"]\nduration_ms = 1000\n\
                  [[clients]]\ncount = 2\npool_connections = 1\n[[clients]]\n";
    let paused = format!(
        "{pooled}[[faults]]\nkind = \"pause\"\nat_ms = 10\ntarget = \"client-1\"\nduration_ms = 5\n"
    );
    let error = message(&paused);
    assert!(error.starts_with("f.toml: line 7, column 1: `faults[0]` (pause) names client-1, a caller in a pooled process"), "{error}");
    // The client of the group of its own may be paused.
    let other = paused.replace("client-1", "client-2");
    assert!(Scenario::parse(&other, "f.toml", "f").is_ok());
    let empty = pooled.replace("pool_connections = 1", "pool_connections = 0");
    assert_eq!(
        message(&empty),
        "f.toml: line 5, column 1: `clients[0].pool_connections` is 0; expected at least one connection"
    );
}

#[test]
fn a_client_group_reads_shared_when_its_mode_says_so_and_an_unknown_mode_is_refused_at_its_line() {
    let text = format!("{SMALL}mode = \"shared\"\n");
    let scenario = Scenario::parse(&text, "f.toml", "f").unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(scenario.clients[0].mode, super::LockMode::Shared);
    let scenario = Scenario::parse(SMALL, "f.toml", "f").unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(scenario.clients[0].mode, super::LockMode::Exclusive);
    let text = format!("{SMALL}mode = \"read\"\n");
    let refused = message(&text);
    assert!(
        refused.starts_with("f.toml: line 4, column 8:")
            && refused.contains("`read`")
            && refused.contains("expected `exclusive` or `shared`"),
        "{refused}"
    );
}
