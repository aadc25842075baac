//! What the search within the rungs' promises found (`scenarios/findings/`,
//! `reports/findings.md`): every finding is a scenario that says how it
//! was found, gives each rung it names its pinned verdict under every
//! seed, and shows a peer surviving the same fault. And the case the
//! search shrank it from, generated again, still fails the same way.

use crate::common;

use model::scenario::Scenario;
use model::verdict::Verdict;
use sim::cell::run_cell;
use sim::explore::{FaultMode, assumptions};
use std::path::PathBuf;

fn findings() -> Vec<(PathBuf, Scenario)> {
    common::scenarios_in("findings")
}

#[test]
fn every_finding_says_how_it_was_found_and_a_peer_survives_its_fault() {
    let found = findings();
    assert!(!found.is_empty(), "scenarios/findings/ is empty");
    for (file, scenario) in &found {
        assert!(
            scenario.description.contains("--faults assumed"),
            "{}: does not say the search found it",
            file.display()
        );
        assert!(
            scenario.expect.values().any(|v| *v == Verdict::Safe),
            "{}: no rung survives the fault",
            file.display()
        );
    }
}

#[test]
fn every_finding_gives_each_rung_its_pinned_verdict_under_every_seed() {
    for (_, scenario) in findings() {
        common::assert_pinned_verdicts(&scenario);
    }
}

#[test]
fn rslocks_silent_master_is_within_rslocks_assumptions_and_deadlocks_it() {
    // The case the property search first failed on, shrunk: one client,
    // one master of three without power for good, a reply timeout as long
    // as the TTL. It lies within rslock's written assumptions (a minority
    // of masters lost), so the deadlock breaks a promise.
    let text = "rungs = [\"rslock\"]\nduration_ms = 10000\n\
        [topology]\nkind = \"independent\"\nmasters = 3\n\
        [lock]\nttl_ms = 500\nmax_wait_ms = 3000\nresponse_timeout_ms = 500\n\
        [[clients]]\n\n\
        [[faults]]\nkind = \"crash\"\nat_ms = 0\ntarget = \"redis-1\"\nhow = \"power-loss\"\n";
    let scenario = Scenario::parse(text, "silent-master.toml", "s").expect("loads");
    let judged = run_cell(&scenario, "rslock", 1).expect("runs");
    assert_eq!(judged.verdict, Verdict::Deadlock, "{:?}", judged.results);
    let rslock = assumptions("rslock").expect("written");
    let mut case = sim::explore::generate("rslock", &FaultMode::Assumed, 1);
    case.topology = scenario.topology.clone();
    case.lock = scenario.lock.clone();
    case.clients = scenario.clients.clone();
    case.faults = scenario.faults.clone();
    assert_eq!(rslock.admits(&case), Ok(()));
}

/// Runs `text` (a scenario without its `rungs` line) on each of `rungs`
/// at `seed` and asserts each is safe.
fn assert_safe_on(text: &str, rungs: &[&str], seed: u64) {
    let text = format!("rungs = {rungs:?}\n{text}");
    let scenario = Scenario::parse(&text, "case.toml", "s").expect("loads");
    for rung in rungs {
        let judged = run_cell(&scenario, rung, seed).expect("runs");
        assert_eq!(
            judged.verdict,
            Verdict::Safe,
            "{rung}: {:?}",
            judged.results
        );
    }
}

#[test]
fn a_working_holders_lease_outlives_the_loss_of_the_leader_of_five() {
    // The etcd search's case, shrunk: five members, the first leader lost
    // for good while a client is about to write, no fault on any client.
    // The member that became leader answered a keep-alive before its
    // lessor's promotion, judged the lease by the expiry it held as a
    // follower, and said "no such lease": the session stopped, the lease
    // went, and a waiter took the lock beside a working holder. etcd
    // answers "not primary" there and asks again.
    let text = "duration_ms = 60000\nliveness_bound_ms = 9726\n\
        [topology]\nkind = \"cluster\"\nmembers = 5\n\
        [lock]\nttl_ms = 1000\nmax_wait_ms = 10226\nretry_ms = 50\nresponse_timeout_ms = 200\n\
        [[clients]]\ncritical_section_ms = 0\n\
        [[clients]]\ncritical_section_ms = 386\n\
        [[clients]]\ncritical_section_ms = 1343\nstart_ms = 159\nwrites = 2\n\
        [[clients]]\ncycles = 2\ncritical_section_ms = 773\n\
        [[faults]]\nkind = \"failover\"\n\
        [faults.on]\nclient = 3\ncycle = 1\npoint = \"before-write\"\n";
    assert_safe_on(
        text,
        &[
            "etcd-mutex",
            "etcd-mutex-3.4",
            "etcd-lock-rpc",
            "etcd-fenced",
        ],
        2004328,
    );
}

#[test]
fn curators_guaranteed_delete_outlives_a_restart_that_cut_the_release() {
    // The ZooKeeper search's case, shrunk: a standalone server killed as
    // the client releases, back 1.28 s later. The session outlives the
    // restart, so a delete given up after its retries left the node, and
    // the client's next acquire waited behind it. Curator keeps a failed
    // guaranteed delete going in the background until it succeeds or the
    // session ends.
    let text = "duration_ms = 60000\nliveness_bound_ms = 7030\n\
        [topology]\nkind = \"standalone\"\n\
        [lock]\nttl_ms = 2000\nmax_wait_ms = 7530\nretry_ms = 5\nresponse_timeout_ms = 500\n\
        [[clients]]\ncycles = 2\ncritical_section_ms = 0\n\
        [[faults]]\nkind = \"crash\"\ntarget = \"redis-0\"\nhow = \"kill\"\nrestart_after_ms = 1280\n\
        [faults.on]\nclient = 0\ncycle = 1\npoint = \"before-write\"\n";
    assert_safe_on(text, &["curator-mutex", "zk-fenced"], 2000634);
}

#[test]
fn a_protected_create_held_on_its_way_is_not_created_twice() {
    // The second ZooKeeper search's case, shrunk: five members, the
    // leader's links to three of them held for 1.5 s as the client creates
    // its lock node. The create reached the leader but could not commit;
    // the client timed out, resumed its session on a member cut off from
    // the leader, listed the children there, found nothing and created
    // again, and then waited behind its own first node. A ZooKeeper
    // follower asks its leader to revalidate a resumed session first, so
    // its listing comes after what the leader had committed, and the
    // leader refuses a write from a member the session has left.
    let text = "duration_ms = 60000\nliveness_bound_ms = 7030\n\
        [topology]\nkind = \"cluster\"\nmembers = 5\n\
        [lock]\nttl_ms = 1000\nmax_wait_ms = 7530\nretry_ms = 50\nnode_timeout_ms = 50\n\
        response_timeout_ms = 200\n\
        [[clients]]\ncycles = 3\ncritical_section_ms = 0\n\
        [resource]\nkind = \"fenced\"\n\
        [[faults]]\nkind = \"delay\"\na = [\"redis-1\", \"redis-2\", \"redis-3\"]\n\
        b = [\"redis-4\"]\nduration_ms = 1486\n\
        [faults.on]\nclient = 0\ncycle = 2\npoint = \"acquire-mid\"\n";
    assert_safe_on(text, &["zk-fenced", "curator-mutex"], 4002127);
}

#[test]
fn a_session_comes_back_within_the_bound_after_its_ensemble_lost_two_of_three() {
    // The same search's other case, shrunk: three members, the leader
    // killed and back 1.08 s later, another member lost for good meanwhile.
    // Before resumed sessions were revalidated by the leader, and before a
    // killed leader's followers learnt of it at once, the client's acquire
    // ended in a connection loss past the bound; now the lock comes inside
    // it. What remains of the wait is ZooKeeper's own: the survivor, elected
    // with the vote of the member then lost, waits its initLimit for
    // followers before it looks again.
    let text = "duration_ms = 60000\nliveness_bound_ms = 7044\n\
        [topology]\nkind = \"cluster\"\nmembers = 3\n\
        [lock]\nttl_ms = 1000\nmax_wait_ms = 7544\nretry_ms = 20\nnode_timeout_ms = 50\n\
        response_timeout_ms = 500\n\
        [[clients]]\ncycles = 3\ncritical_section_ms = 14\nthink_ms = 7\nstart_ms = 284\n\
        [[clients]]\ncritical_section_ms = 0\n\
        [resource]\nkind = \"fenced\"\n\
        [[faults]]\nkind = \"crash\"\nat_ms = 336\ntarget = \"redis-2\"\nhow = \"kill\"\n\
        restart_after_ms = 1083\n\
        [[faults]]\nkind = \"failover\"\nat_ms = 414\npromote_after_ms = 0\n";
    assert_safe_on(text, &["zk-fenced"], 4000484);
}

#[test]
fn a_session_taken_away_by_a_late_revalidation_comes_back_to_its_client() {
    // Found by searching again after resumed sessions were revalidated:
    // three of six clients' links to two of the three members slowed to
    // 517 ms for 2.9 s. A client gave up a handshake and went on to
    // another member; the revalidation of the one it left came later and
    // made that one the session's owner, and every write the client sent
    // after it came back as SessionMoved. ZooKeeper closes the connection
    // on SessionMoved, so the client's next server revalidates the session
    // and owns it again.
    let mut text = String::from(
        "duration_ms = 60000\nliveness_bound_ms = 10400\n\
        [topology]\nkind = \"cluster\"\nmembers = 3\n\
        [lock]\nttl_ms = 2000\nmax_wait_ms = 10900\nretry_ms = 50\nnode_timeout_ms = 50\n\
        response_timeout_ms = 200\n\
        [resource]\nkind = \"fenced\"\n",
    );
    for (critical_section_ms, start_ms) in [(0, 15), (1, 6), (280, 0), (67, 7), (124, 6)] {
        text += &format!(
            "[[clients]]\ncritical_section_ms = {critical_section_ms}\nstart_ms = {start_ms}\n"
        );
    }
    text += "[[clients]]\ncycles = 4\ncritical_section_ms = 180\nthink_ms = 16\nstart_ms = 750\n\
        writes = 2\n\
        [[faults]]\nkind = \"slow-link\"\na = [\"client-0\", \"client-1\", \"client-5\"]\n\
        b = [\"redis-0\", \"redis-2\"]\nlatency_ms = 517\nduration_ms = 2853\n\
        [faults.on]\nclient = 1\ncycle = 1\npoint = \"release-start\"\n";
    assert_safe_on(&text, &["zk-fenced"], 4000587);
}

/// The generated case `scenario` is for `rung`: its deployment, lock,
/// clients and faults.
fn case_of(scenario: &Scenario, rung: &str) -> sim::explore::Case {
    let mut case = sim::explore::generate(rung, &FaultMode::Assumed, 1);
    case.topology = scenario.topology.clone();
    case.lock = scenario.lock.clone();
    case.clients = scenario.clients.clone();
    case.faults = scenario.faults.clone();
    case
}

/// `text` (a scenario without its `rungs` line) for `rung`.
fn scenario_for(text: &str, rung: &str) -> Scenario {
    Scenario::parse(&format!("rungs = [{rung:?}]\n{text}"), "case.toml", "s").expect("loads")
}

/// Why `rung`'s assumptions refuse the case of `scenario`.
fn refusal(scenario: &Scenario, rung: &str) -> String {
    assumptions(rung)
        .expect("written")
        .admits(&case_of(scenario, rung))
        .expect_err("outside the assumptions")
}

/// Runs `text` on `rung` at `seed`, asserts `verdict`, and asserts that
/// `rung`'s assumptions now refuse it, saying `why`.
fn assert_refused_after_breaking(text: &str, rung: &str, seed: u64, verdict: Verdict, why: &str) {
    let scenario = scenario_for(text, rung);
    let judged = run_cell(&scenario, rung, seed).expect("runs");
    assert_eq!(judged.verdict, verdict, "{rung}: {:?}", judged.results);
    let refused = refusal(&scenario, rung);
    assert!(refused.contains(why), "{rung}: {refused}");
}

#[test]
fn a_request_and_its_reply_delayed_together_past_the_reply_timeout_are_outside_setnxs_assumptions()
{
    // The ladder search's cases, shrunk: each delay alone is shorter than
    // the reply timeout, together they are longer; the SETNX lands, its
    // reply is given up on, and with no expiry nobody ever gets the lock.
    let delay_and_slow_link = "duration_ms = 60000\nliveness_bound_ms = 2606\n\
        [lock]\nttl_ms = 500\nmax_wait_ms = 3106\nretry_ms = 5\nresponse_timeout_ms = 200\n\
        [[clients]]\nstart_ms = 116\nwrites = 2\n\
        [[clients]]\ncycles = 2\ncritical_section_ms = 33\nthink_ms = 10\nstart_ms = 46\nwrites = 2\n\
        [[faults]]\nkind = \"delay\"\na = [\"client-1\"]\nb = [\"redis-0\"]\nduration_ms = 179\n\
        [faults.on]\nclient = 0\ncycle = 1\npoint = \"release-start\"\n\
        [[faults]]\nkind = \"slow-link\"\na = [\"redis-0\"]\nb = [\"client-1\"]\nlatency_ms = 21\nduration_ms = 293\n\
        [faults.on]\nclient = 0\ncycle = 1\npoint = \"release-start\"\n";
    let adding_up = "adding up to";
    assert_refused_after_breaking(
        delay_and_slow_link,
        "setnx",
        3000410,
        Verdict::Deadlock,
        adding_up,
    );
    let request_and_reply = "duration_ms = 60000\nliveness_bound_ms = 4123\n\
        [lock]\nttl_ms = 1000\nmax_wait_ms = 4623\nresponse_timeout_ms = 200\n\
        [[clients]]\ncycles = 2\ncritical_section_ms = 93\nthink_ms = 17\nstart_ms = 44\n\
        [[clients]]\nstart_ms = 58\n\
        [[faults]]\nkind = \"delay\"\na = [\"client-0\"]\nb = [\"redis-0\"]\nduration_ms = 179\n\
        [faults.on]\nclient = 0\ncycle = 1\npoint = \"release-mid\"\n\
        [[faults]]\nkind = \"delay\"\na = [\"redis-0\"]\nb = [\"client-0\"]\nduration_ms = 167\n\
        [faults.on]\nclient = 0\ncycle = 1\npoint = \"release-mid\"\n";
    let refused = refusal(
        &scenario_for(request_and_reply, "setnx-expire"),
        "setnx-expire",
    );
    assert!(refused.contains(adding_up), "{refused}");
    // And a client paused longer than the reply timeout right after its
    // SETNX landed reads the reply too late (the second search, seed
    // 5000867): the same lost reply.
    let paused = "duration_ms = 60000\nliveness_bound_ms = 2658\n\
        [lock]\nttl_ms = 500\nmax_wait_ms = 3158\nresponse_timeout_ms = 200\n\
        [[clients]]\n\
        [[faults]]\nkind = \"pause\"\nat_ms = 100\ntarget = \"client-0\"\nduration_ms = 277\n";
    let refused = refusal(&scenario_for(paused, "setnx"), "setnx");
    assert!(refused.contains(adding_up), "{refused}");
}

#[test]
fn a_node_down_while_a_holder_nests_spends_reentrants_lease_budget() {
    // The ladder search's case, shrunk: the holder's nested acquire meets
    // its node killed, restarted after more than the TTL; the nested
    // acquire waits out the outage, the lease expires under the outer
    // hold, and a second client takes the lock: the rung's own flaw (the
    // lease can expire while the holder works), reached by an outage the
    // budget did not count.
    let text = "duration_ms = 60000\nliveness_bound_ms = 7030\n\
        [topology]\nkind = \"standalone\"\npersistence = \"aof-always\"\n\
        [lock]\nttl_ms = 2000\nmax_wait_ms = 7530\nretry_ms = 50\nresponse_timeout_ms = 500\n\
        [[clients]]\nstart_ms = 464\n\
        [[clients]]\nstart_ms = 277\nnested = true\n\
        [[faults]]\nkind = \"crash\"\ntarget = \"redis-0\"\nhow = \"kill\"\nrestart_after_ms = 2111\n\
        [faults.on]\nclient = 1\ncycle = 1\npoint = \"after-acquire\"\n";
    assert_refused_after_breaking(text, "reentrant", 3000005, Verdict::Violated, "budget");
}

#[test]
fn rslocks_extension_short_of_a_quorum_lies_within_its_assumptions() {
    // Two of five masters lost for good (a minority), one restarted empty
    // past the TTL, a holder working within its lease budget: inside what
    // rslock promises, and rslock is violated all the same.
    let (_, scenario) = findings()
        .into_iter()
        .find(|(file, _)| file.ends_with("rslock-extension-short-of-quorum.toml"))
        .expect("the finding's scenario");
    let rslock = assumptions("rslock").expect("written");
    assert_eq!(rslock.admits(&case_of(&scenario, "rslock")), Ok(()));
}
