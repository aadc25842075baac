//! ZooKeeper cells of the safety matrix on a real ZooKeeper (Debian's
//! 3.8.0), with real faults: a create whose replies are held until the
//! connection has given up leaves the recipe waiting behind its own node
//! for real, while Curator's protected mode finds its node; and a holder
//! paused past its session fools Curator's mutex for real while the
//! fencing token refuses its write; and on an ensemble of three, a
//! follower cut off from its leader (through the proxy between members)
//! goes on answering its client after the leader expired the client's
//! session, which fools Curator's mutex for real. A server's clock cannot be moved
//! honestly, so such a cell is refused with the reason. Needs ZooKeeper
//! and redis-server (scripts/test installs them).

mod common;

use model::scenario::Scenario;
use model::verdict::Verdict;
use real::cell::{CellOutcome, describe_outcome, run_real_cell};

/// Runs one ZooKeeper cell on the simulator and on real servers, and
/// asserts that the simulator gives `expected` and reality agrees.
fn assert_agrees(name: &str, rung: &str, expected: Verdict) {
    assert!(
        harness::zookeeper::installed(),
        "ZooKeeper is not installed: run scripts/setup"
    );
    common::assert_agrees(&common::scenario("zookeeper", name), rung, expected);
}

#[test]
fn a_lost_create_reply_leaves_the_recipe_behind_its_orphan_for_real_and_not_curator() {
    assert_agrees("zk-lost-create-reply", "zk-recipe", Verdict::Deadlock);
    assert_agrees("zk-lost-create-reply", "curator-mutex", Verdict::Safe);
}

#[test]
fn a_holder_paused_past_its_session_fools_curator_for_real_and_the_fence_refuses_it() {
    assert_agrees("zk-holder-paused", "curator-mutex", Verdict::Violated);
    assert_agrees("zk-holder-paused", "zk-fenced", Verdict::Safe);
}

#[test]
fn a_follower_that_lags_the_expiry_fools_curator_on_a_real_ensemble() {
    assert_agrees(
        "zk-follower-lags-expiry",
        "curator-mutex",
        Verdict::Violated,
    );
}

#[test]
fn a_server_clock_jump_is_not_stageable_and_says_why() {
    let text = "rungs = [\"zk-recipe\"]\nduration_ms = 2000\n\
                [[clients]]\ncount = 1\n\
                [[faults]]\nkind = \"clock-jump\"\nat_ms = 100\ntarget = \"redis-0\"\njump_ms = 5000\n\
                [expect]\nzk-recipe = \"safe\"\n";
    let scenario = Scenario::parse(text, "jump.toml", "zk-server-clock-jump")
        .unwrap_or_else(|e| panic!("{e}"));
    let outcome = run_real_cell(&scenario, "zk-recipe", 1, 1, &mut |_, _| {})
        .unwrap_or_else(|e| panic!("{e}"));
    let CellOutcome::NotStageable(reasons) = &outcome else {
        panic!("the jump was staged: {}", describe_outcome(&outcome));
    };
    assert!(
        reasons.iter().any(|r| r.contains("monotonic clock")),
        "{reasons:?}"
    );
}
