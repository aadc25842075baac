use super::*;

fn scenario_with(fault: &str) -> Result<Scenario, String> {
    let text = format!(
        "rungs = [\"setnx\"]\nduration_ms = 60000\n[[clients]]\ncount = 2\ncycles = 2\n\n[[faults]]\n{fault}\n",
    );
    Scenario::parse(&text, "test.toml", "test").map_err(|e| e.to_string())
}

#[test]
fn restart_is_a_drawn_kind_that_scenario_files_refuse() {
    assert_eq!(FaultKind::from_name("restart"), Some(FaultKind::Restart));
    let err = scenario_with("kind = \"restart\"\nat_ms = 5").unwrap_err();
    assert!(
        err.contains(
            "unknown variant `restart`, expected one of `pause`, `crash`, `partition`, \
             `delay`, `slow-link`, `clock-jump`, `clock-drift`, `failover`"
        ),
        "{err}"
    );
}

#[test]
fn every_kind_is_found_by_its_name() {
    for kind in FaultKind::ALL {
        assert_eq!(FaultKind::from_name(kind.name()), Some(kind));
    }
}

#[test]
fn a_fault_is_written_in_the_order_scenario_files_give_it() {
    let scenario = scenario_with(
        "kind = \"crash\"\non = { client = 1, cycle = 2, point = \"release-start\" }\n\
         how = \"power-loss\"\nrestart_after_ms = 40",
    )
    .unwrap();
    let fault = &scenario.faults[0];
    assert_eq!(fault.name(), FaultKind::Crash);
    assert_eq!(fault.target_host(), Some(Host::Client(1)));
    let written = toml::to_string(fault).unwrap();
    assert_eq!(
        written,
        "kind = \"crash\"\nhow = \"power-loss\"\nrestart_after_ms = 40\n\n[on]\nclient = 1\ncycle = 2\npoint = \"release-start\"\n"
    );
}

#[test]
fn a_shrunk_fault_keeps_its_trigger_or_its_action() {
    let scenario =
        scenario_with("kind = \"pause\"\nat_ms = 10\ntarget = \"client-1\"\nduration_ms = 9")
            .unwrap();
    let fault = &scenario.faults[0];
    let simpler: Vec<(Option<u64>, u64)> = fault
        .simpler()
        .iter()
        .map(|f| match &f.action {
            FaultAction::Pause(p) => (f.when.at_ms, p.duration_ms),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(simpler, [(Some(0), 9), (Some(5), 9), (Some(10), 4)]);
    assert_eq!(fault.without_client(1), None);
    let moved = fault.without_client(0).unwrap();
    assert_eq!(moved.target_host(), Some(Host::Client(0)));
}
