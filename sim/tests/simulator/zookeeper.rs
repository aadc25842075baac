//! The ZooKeeper scenarios (`scenarios/zookeeper/`): every expectation
//! holds under every seed each scenario lists, and what each one teaches
//! is pinned: the herd's wake-ups, the orphan of a lost create reply, and
//! what Curator's state handling does and does not save.

use crate::common;

use judge::check::Check;
use model::history::{EventKind, KeyChange, Op, Outcome};
use model::scenario::Scenario;
use model::verdict::Verdict;
use sim::cell::{Judged, run_cell};
use std::collections::BTreeSet;

fn scenario(name: &str) -> Scenario {
    common::scenario(&format!("zookeeper/{name}"))
}

fn judge(name: &str, rung: &str, seed: u64) -> Judged {
    run_cell(&scenario(name), rung, seed).unwrap_or_else(|e| panic!("{name}/{rung}: {e}"))
}

/// The lock nodes created during the run, in order: (key, owner text).
fn nodes_created(judged: &Judged) -> Vec<(String, String)> {
    (judged.history.events().iter())
        .filter_map(|e| match &e.kind {
            EventKind::Server {
                what: KeyChange::Set,
                key,
                value: Some(owner),
                ..
            } if key.contains("/") => Some((key.clone(), owner.clone())),
            _ => None,
        })
        .collect()
}

#[test]
fn every_zookeeper_scenario_meets_its_expectations_under_every_seed() {
    common::assert_every_expectation("zookeeper", 4, 90);
}

#[test]
fn each_recipe_hand_off_wakes_one_waiter_and_each_herd_hand_off_wakes_them_all() {
    for rung in ["zk-recipe", "curator-mutex", "zk-fenced", "zk-herd"] {
        let judged = judge("zk-herd", rung, 1);
        let waiting = &judged.results.damage.waiting;
        assert_eq!(
            waiting.handoffs, 32,
            "{rung}: every waiter gets the lock once"
        );
        let per = waiting
            .wakeups_per_handoff
            .unwrap_or_else(|| panic!("{rung}: no wake-ups counted"));
        if rung == "zk-herd" {
            assert!(
                per >= 16.0,
                "{rung}: {per} wake-ups per hand-off; a waiter watching the parent wakes at every change"
            );
        } else {
            assert_eq!(per, 1.0, "{rung}: one watch event per hand-off");
        }
    }
}

#[test]
fn a_lost_create_reply_leaves_the_recipe_behind_its_own_orphan_and_curator_finds_its_node() {
    let recipe = judge("zk-lost-create-reply", "zk-recipe", 1);
    assert_eq!(recipe.verdict, Verdict::Deadlock);
    // A's session made two nodes in its second cycle: the orphan of the
    // lost reply, then the one it waits with, right behind it.
    let created = nodes_created(&recipe);
    let session_of_a = &created[0].1;
    let by_a: Vec<&String> = (created.iter())
        .filter(|(_, owner)| owner == session_of_a)
        .map(|(key, _)| key)
        .collect();
    assert!(by_a.len() >= 3, "{created:?}");
    // Nobody acquires until A's session has ended and its orphan expired.
    let orphan_expired = (recipe.history.events().iter()).any(|e| {
        matches!(&e.kind, EventKind::Server { what: KeyChange::Expired, key, .. } if key == by_a[1])
    });
    assert!(
        orphan_expired,
        "the orphan {} goes only with its session",
        by_a[1]
    );

    let curator = judge("zk-lost-create-reply", "curator-mutex", 1);
    assert_eq!(curator.verdict, Verdict::Safe);
    // Its protected node was found again: one node per acquire, and every
    // acquire of both clients succeeded.
    let acquired: usize = (curator.history.events().iter())
        .filter(|e| {
            matches!(
                &e.kind,
                EventKind::Complete {
                    op: Op::Acquire,
                    outcome: Outcome::Ok,
                    ..
                }
            )
        })
        .count();
    assert_eq!(acquired, 4, "both cycles of both clients");
    assert_eq!(
        nodes_created(&curator).len(),
        4,
        "{:?}",
        nodes_created(&curator)
    );
}

#[test]
fn a_partition_breaks_the_recipes_stock_and_curators_state_handling_refuses_the_stale_write() {
    let recipe = judge("zk-holder-partitioned", "zk-recipe", 1);
    assert_eq!(recipe.verdict, Verdict::Violated);
    assert!(matches!(
        recipe.results.resource,
        Some(Check::Invalid { .. })
    ));
    assert_eq!(recipe.results.damage.resource.lost_updates, Some(1));

    // Curator's holder refuses its own write once its connection is
    // SUSPENDED: the stock stays right, yet both believed they held.
    let curator = judge("zk-holder-partitioned", "curator-mutex", 1);
    assert_eq!(curator.verdict, Verdict::Violated);
    assert!(matches!(curator.results.resource, Some(Check::Valid)));
    assert!(matches!(
        curator.results.mutual_exclusion,
        Check::Invalid { .. }
    ));
    let refused_check = (curator.history.events().iter()).any(|e| {
        matches!(
            &e.kind,
            EventKind::Complete {
                client: 0,
                op: Op::Check,
                outcome: Outcome::Fail,
                ..
            }
        )
    });
    assert!(refused_check, "the cut-off holder's check fails");
}

#[test]
fn a_paused_holder_fools_every_zookeeper_mutex_and_the_fence_refuses_its_write() {
    for rung in ["zk-recipe", "zk-herd", "curator-mutex"] {
        let judged = judge("zk-holder-paused", rung, 1);
        assert_eq!(judged.verdict, Verdict::Violated, "{rung}");
        assert!(
            matches!(judged.results.resource, Some(Check::Invalid { .. })),
            "{rung}: the paused holder's write lands"
        );
        // The holder's node went with its session, as an expiry.
        let expired: BTreeSet<&String> = (judged.history.events().iter())
            .filter_map(|e| match &e.kind {
                EventKind::Server {
                    what: KeyChange::Expired,
                    key,
                    ..
                } => Some(key),
                _ => None,
            })
            .collect();
        assert_eq!(expired.len(), 1, "{rung}: {expired:?}");
    }
    let fenced = judge("zk-holder-paused", "zk-fenced", 1);
    assert_eq!(fenced.verdict, Verdict::Safe);
    assert_eq!(
        fenced.results.damage.resource.stale_writes_accepted,
        Some(0)
    );
}

/// The servers that recorded a change to a lock node, in order, from `from_us` on.
fn servers_recording_after(judged: &Judged, from_us: u64) -> Vec<model::host::Host> {
    (judged.history.events().iter())
        .filter(|e| e.at_us >= from_us)
        .filter_map(|e| match &e.kind {
            EventKind::Server { node, key, .. } if key.contains('/') => Some(*node),
            _ => None,
        })
        .collect()
}

/// Whether client 0's check before its write completed with `outcome`.
fn holder_check_was(judged: &Judged, outcome: Outcome) -> bool {
    (judged.history.events().iter()).any(|e| {
        matches!(
            &e.kind,
            EventKind::Complete { client: 0, op: Op::Check, outcome: o, .. } if *o == outcome
        )
    })
}

#[test]
fn a_leaders_crash_hands_the_ensemble_to_a_new_leader_and_no_session_expires() {
    for rung in ["zk-recipe", "curator-mutex"] {
        let judged = judge("zk-leader-crash", rung, 1);
        assert_eq!(judged.verdict, Verdict::Safe, "{rung}");
        let expired = (judged.history.events().iter()).any(|e| {
            matches!(
                &e.kind,
                EventKind::Server {
                    what: KeyChange::Expired,
                    ..
                }
            )
        });
        assert!(!expired, "{rung}: no session outlived its timeout");
        // The crash is at 1 s: every change after it is a survivor's.
        let after = servers_recording_after(&judged, 1_000_000);
        assert!(
            !after.is_empty(),
            "{rung}: the holder's release is recorded"
        );
        assert!(
            after.iter().all(|h| *h != model::host::Host::Node(2)),
            "{rung}: {after:?}"
        );
    }
}

#[test]
fn a_follower_cut_off_with_its_holder_serves_it_after_the_leader_expired_its_session() {
    let curator = judge("zk-follower-lags-expiry", "curator-mutex", 1);
    assert_eq!(curator.verdict, Verdict::Violated);
    assert!(matches!(
        curator.results.resource,
        Some(Check::Invalid { .. })
    ));
    // The leader expired the holder's node before the holder wrote...
    let events = curator.history.events();
    let expired_at = (events.iter())
        .find(|e| {
            matches!(
                &e.kind,
                EventKind::Server {
                    what: KeyChange::Expired,
                    ..
                }
            )
        })
        .map(|e| e.at_us)
        .expect("the holder's node expires on the leader");
    let wrote_at = (events.iter())
        .find(|e| {
            matches!(
                &e.kind,
                EventKind::Complete {
                    client: 0,
                    op: Op::Write,
                    outcome: Outcome::Ok,
                    ..
                }
            )
        })
        .map(|e| e.at_us)
        .expect("the holder writes");
    assert!(
        expired_at < wrote_at,
        "expired {expired_at}, wrote {wrote_at}"
    );
    // ...yet its own follower still answered it: Curator saw it Connected.
    assert!(holder_check_was(&curator, Outcome::Ok));
    assert!(!holder_check_was(&curator, Outcome::Fail));

    let fenced = judge("zk-follower-lags-expiry", "zk-fenced", 1);
    assert_eq!(fenced.verdict, Verdict::Safe);
}
