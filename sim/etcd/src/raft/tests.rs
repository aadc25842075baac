//! One test per rule of the core, each driving members by hand.

use prost::Message as _;

use super::*;

const ELECTION_TICKS: u32 = 10;

fn config(id: u64, voters: &[u64]) -> Config {
    Config {
        id,
        voters: voters.to_vec(),
        election_ticks: ELECTION_TICKS,
        heartbeat_ticks: 1,
        check_quorum: true,
        seed: id,
    }
}

/// Members 1..=size, all voters.
fn cluster(size: u64) -> Vec<Raft> {
    let voters: Vec<u64> = (1..=size).collect();
    voters
        .iter()
        .map(|&id| Raft::new(config(id, &voters)))
        .collect()
}

fn member(cluster: &mut [Raft], id: u64) -> &mut Raft {
    &mut cluster[(id - 1) as usize]
}

/// Delivers every message, and every message those produce, until quiet;
/// returns the reads served meanwhile, by member.
fn settle(cluster: &mut [Raft]) -> Vec<(u64, ReadState)> {
    let mut reads = Vec::new();
    loop {
        let mut messages = Vec::new();
        for raft in cluster.iter_mut() {
            let ready = raft.ready();
            messages.extend(ready.messages);
            reads.extend(ready.read_states.into_iter().map(|r| (raft.id(), r)));
        }
        if messages.is_empty() {
            return reads;
        }
        for message in messages {
            let to = message.to;
            member(cluster, to).step(message);
        }
    }
}

/// Member `id` campaigns and the cluster settles: it leads.
fn elected(size: u64, id: u64) -> Vec<Raft> {
    let mut cluster = cluster(size);
    member(&mut cluster, id).campaign();
    settle(&mut cluster);
    assert_eq!(member(&mut cluster, id).role(), Role::Leader);
    cluster
}

fn message(kind: MessageType, from: u64, to: u64, term: u64) -> Message {
    Message {
        from,
        to,
        term,
        ..Message::of_type(kind)
    }
}

fn entry(term: u64, index: u64) -> Entry {
    Entry {
        term,
        index,
        data: Vec::new(),
    }
}

fn sent(raft: &mut Raft) -> Vec<Message> {
    raft.ready().messages
}

fn of_kind(messages: &[Message], kind: MessageType) -> Vec<Message> {
    messages
        .iter()
        .filter(|m| m.msg_type == kind as i32)
        .cloned()
        .collect()
}

fn terms(raft: &Raft) -> Vec<u64> {
    raft.entries().iter().map(|e| e.term).collect()
}

/// A follower (id 1 of 3) whose log holds entries of `log_terms`, in the
/// term of its last entry, following `leader`.
fn follower_with_log(log_terms: &[u64], leader: u64) -> Raft {
    let mut raft = Raft::new(config(1, &[1, 2, 3]));
    let term = log_terms.last().copied().unwrap_or(1);
    let entries: Vec<Entry> = log_terms
        .iter()
        .zip(1..)
        .map(|(&t, i)| entry(t, i))
        .collect();
    raft.step(Message {
        entries,
        ..message(MessageType::App, leader, 1, term)
    });
    sent(&mut raft);
    raft
}

fn ticks(raft: &mut Raft, count: u32) {
    for _ in 0..count {
        raft.tick();
    }
}

// ----- Elections -----

#[test]
fn election_timeouts_are_drawn_between_one_and_two_election_timeouts() {
    let mut seen = std::collections::BTreeSet::new();
    for seed in 0..200 {
        let mut raft = Raft::new(Config {
            seed,
            ..config(1, &[1, 2, 3])
        });
        let mut waited = 0;
        while raft.role() == Role::Follower {
            raft.tick();
            waited += 1;
        }
        assert!((ELECTION_TICKS..2 * ELECTION_TICKS).contains(&waited));
        seen.insert(waited);
    }
    assert_eq!(seen.len(), ELECTION_TICKS as usize, "every wait occurs");
}

#[test]
fn a_single_voter_becomes_leader_on_its_first_election_timeout() {
    let mut raft = Raft::new(config(1, &[1]));
    ticks(&mut raft, 2 * ELECTION_TICKS);
    assert_eq!(raft.role(), Role::Leader);
    assert_eq!(raft.term(), 1);
    assert_eq!(raft.commit(), 1, "its empty entry commits at once");
}

#[test]
fn a_candidate_with_a_quorum_of_votes_leads_and_appends_an_empty_entry() {
    let mut cluster = elected(3, 1);
    for raft in cluster.iter_mut() {
        assert_eq!(raft.term(), 1);
        assert_eq!(raft.leader(), 1);
        assert_eq!(raft.entries(), &[entry(1, 1)]);
        assert_eq!(raft.commit(), 1);
    }
    assert_eq!(member(&mut cluster, 2).hard_state().vote, 1);
}

#[test]
fn a_member_votes_once_per_term() {
    let mut raft = Raft::new(config(1, &[1, 2, 3]));
    raft.step(message(MessageType::Vote, 2, 1, 1));
    raft.step(message(MessageType::Vote, 3, 1, 1));
    raft.step(message(MessageType::Vote, 2, 1, 1));
    let answers = of_kind(&sent(&mut raft), MessageType::VoteResp);
    let granted: Vec<(u64, bool)> = answers.iter().map(|m| (m.to, !m.reject)).collect();
    assert_eq!(granted, vec![(2, true), (3, false), (2, true)]);
    assert_eq!(raft.hard_state().vote, 2);
}

#[test]
fn a_vote_is_refused_to_a_candidate_whose_log_is_behind() {
    let mut raft = follower_with_log(&[1, 2], 2);
    ticks(&mut raft, 2 * ELECTION_TICKS);
    raft.restart(); // out of lease
    let shorter = Message {
        index: 1,
        log_term: 2,
        ..message(MessageType::Vote, 3, 1, 5)
    };
    let older = Message {
        index: 9,
        log_term: 1,
        ..message(MessageType::Vote, 3, 1, 6)
    };
    raft.step(shorter);
    raft.step(older);
    let answers = of_kind(&sent(&mut raft), MessageType::VoteResp);
    assert!(answers.iter().all(|m| m.reject));
    assert_eq!(answers.len(), 2);
}

#[test]
fn granting_a_vote_resets_the_election_timer() {
    let mut raft = Raft::new(config(1, &[1, 2, 3]));
    ticks(&mut raft, ELECTION_TICKS - 1);
    raft.step(message(MessageType::Vote, 2, 1, 1));
    ticks(&mut raft, ELECTION_TICKS - 1);
    assert_eq!(raft.role(), Role::Follower);
}

#[test]
fn a_follower_in_lease_ignores_a_vote_request() {
    let mut raft = follower_with_log(&[1], 2);
    raft.step(Message {
        index: 5,
        log_term: 5,
        ..message(MessageType::Vote, 3, 1, 5)
    });
    assert!(sent(&mut raft).is_empty(), "no answer");
    assert_eq!(raft.term(), 1, "no new term");
    assert_eq!(raft.leader(), 2);
}

#[test]
fn a_follower_out_of_lease_grants_a_vote_request() {
    let mut raft = follower_with_log(&[1], 2);
    ticks(&mut raft, ELECTION_TICKS);
    raft.step(Message {
        index: 1,
        log_term: 1,
        ..message(MessageType::Vote, 3, 1, 2)
    });
    let answers = of_kind(&sent(&mut raft), MessageType::VoteResp);
    assert_eq!(answers.len(), 1);
    assert!(!answers[0].reject);
    assert_eq!(raft.term(), 2);
}

#[test]
fn a_transfer_campaign_is_granted_in_lease() {
    let mut raft = follower_with_log(&[1], 2);
    raft.step(Message {
        index: 1,
        log_term: 1,
        context: TRANSFER_CONTEXT.to_vec(),
        ..message(MessageType::Vote, 3, 1, 2)
    });
    let answers = of_kind(&sent(&mut raft), MessageType::VoteResp);
    assert_eq!(answers.len(), 1);
    assert!(!answers[0].reject);
}

#[test]
fn a_candidate_refused_by_a_quorum_becomes_a_follower() {
    let mut raft = Raft::new(config(1, &[1, 2, 3]));
    raft.campaign();
    assert_eq!(raft.role(), Role::Candidate);
    raft.step(Message {
        reject: true,
        ..message(MessageType::VoteResp, 2, 1, 1)
    });
    assert_eq!(raft.role(), Role::Candidate, "one refusal is no quorum");
    raft.step(Message {
        reject: true,
        ..message(MessageType::VoteResp, 3, 1, 1)
    });
    assert_eq!(raft.role(), Role::Follower);
    assert_eq!(raft.term(), 1);
}

#[test]
fn a_duplicated_vote_counts_once() {
    let mut raft = Raft::new(config(1, &[1, 2, 3, 4, 5]));
    raft.campaign();
    raft.step(message(MessageType::VoteResp, 2, 1, 1));
    raft.step(message(MessageType::VoteResp, 2, 1, 1));
    assert_eq!(raft.role(), Role::Candidate);
    raft.step(message(MessageType::VoteResp, 3, 1, 1));
    assert_eq!(raft.role(), Role::Leader);
}

#[test]
fn a_candidate_follows_a_leader_of_its_term() {
    let mut raft = Raft::new(config(1, &[1, 2, 3]));
    raft.campaign();
    raft.step(message(MessageType::Heartbeat, 2, 1, 1));
    assert_eq!(raft.role(), Role::Follower);
    assert_eq!(raft.leader(), 2);
}

// ----- Terms -----

#[test]
fn a_higher_term_append_makes_a_leader_follow_its_sender() {
    let mut cluster = elected(3, 1);
    let leader = member(&mut cluster, 1);
    leader.step(message(MessageType::App, 2, 1, 7));
    assert_eq!(leader.role(), Role::Follower);
    assert_eq!(leader.term(), 7);
    assert_eq!(leader.leader(), 2);
}

#[test]
fn a_higher_term_answer_makes_a_leader_follow_nobody() {
    let mut cluster = elected(3, 1);
    let leader = member(&mut cluster, 1);
    leader.step(message(MessageType::AppResp, 2, 1, 7));
    assert_eq!(leader.role(), Role::Follower);
    assert_eq!(leader.term(), 7);
    assert_eq!(leader.leader(), 0);
}

#[test]
fn a_stale_append_is_answered_with_the_higher_term_and_deposes_its_sender() {
    let mut cluster = elected(3, 1);
    member(&mut cluster, 2).step(message(MessageType::Heartbeat, 3, 2, 4));
    sent(member(&mut cluster, 2));
    member(&mut cluster, 2).step(message(MessageType::Heartbeat, 1, 2, 1));
    let answers = sent(member(&mut cluster, 2));
    assert_eq!(answers.len(), 1);
    assert_eq!(answers[0].msg_type, MessageType::AppResp as i32);
    assert_eq!(answers[0].term, 4);
    member(&mut cluster, 1).step(answers[0].clone());
    assert_eq!(member(&mut cluster, 1).role(), Role::Follower);
    assert_eq!(member(&mut cluster, 1).term(), 4);
}

#[test]
fn without_check_quorum_a_stale_append_is_ignored() {
    let mut raft = Raft::new(Config {
        check_quorum: false,
        ..config(1, &[1, 2, 3])
    });
    raft.step(message(MessageType::Heartbeat, 3, 1, 4));
    sent(&mut raft);
    raft.step(message(MessageType::App, 2, 1, 1));
    assert!(sent(&mut raft).is_empty());
}

// ----- CheckQuorum -----

#[test]
fn a_leader_without_a_quorum_steps_down_after_an_election_timeout() {
    let mut cluster = elected(3, 1);
    let leader = member(&mut cluster, 1);
    // The election's answers count for the first check period.
    ticks(leader, 2 * ELECTION_TICKS - 1);
    assert_eq!(leader.role(), Role::Leader);
    leader.tick();
    assert_eq!(leader.role(), Role::Follower);
    assert_eq!(leader.term(), 1, "stepping down keeps the term");
}

#[test]
fn a_leader_that_hears_from_a_quorum_stays_leader() {
    let mut cluster = elected(3, 1);
    for _ in 0..5 * ELECTION_TICKS {
        member(&mut cluster, 1).tick();
        // Member 3 is cut off: only member 2's answers arrive.
        let messages = sent(member(&mut cluster, 1));
        for m in messages.into_iter().filter(|m| m.to == 2) {
            member(&mut cluster, 2).step(m);
        }
        let answers = sent(member(&mut cluster, 2));
        for m in answers {
            member(&mut cluster, 1).step(m);
        }
    }
    assert_eq!(member(&mut cluster, 1).role(), Role::Leader);
}

// ----- Replication -----

#[test]
fn a_follower_refuses_entries_whose_predecessor_it_lacks() {
    let mut raft = follower_with_log(&[1, 1], 2);
    raft.step(Message {
        index: 5,
        log_term: 1,
        entries: vec![entry(1, 6)],
        ..message(MessageType::App, 2, 1, 1)
    });
    let answers = sent(&mut raft);
    assert_eq!(answers.len(), 1);
    assert!(answers[0].reject);
    assert_eq!((answers[0].index, answers[0].reject_hint), (5, 2));
    assert_eq!(raft.last_index(), 2);
}

#[test]
fn a_follower_replaces_a_conflicting_suffix() {
    let mut raft = follower_with_log(&[1, 1, 1], 2);
    raft.step(Message {
        index: 1,
        log_term: 1,
        entries: vec![entry(2, 2)],
        ..message(MessageType::App, 3, 1, 2)
    });
    assert_eq!(terms(&raft), vec![1, 2]);
    let answers = sent(&mut raft);
    assert_eq!((answers[0].index, answers[0].reject), (2, false));
}

#[test]
fn a_follower_commits_no_further_than_the_last_entry_the_append_vouches_for() {
    let mut raft = follower_with_log(&[1, 1, 1], 2);
    raft.step(Message {
        index: 1,
        log_term: 1,
        commit: 3,
        ..message(MessageType::App, 2, 1, 1)
    });
    assert_eq!(
        raft.commit(),
        1,
        "entries 2 and 3 may differ from the leader's"
    );
}

#[test]
fn duplicated_and_reordered_appends_leave_the_log_unchanged() {
    let mut raft = follower_with_log(&[1], 2);
    let first = Message {
        index: 1,
        log_term: 1,
        entries: vec![entry(1, 2)],
        ..message(MessageType::App, 2, 1, 1)
    };
    let second = Message {
        index: 2,
        log_term: 1,
        entries: vec![entry(1, 3)],
        ..message(MessageType::App, 2, 1, 1)
    };
    raft.step(first.clone());
    raft.step(second.clone());
    raft.step(first);
    raft.step(second);
    assert_eq!(terms(&raft), vec![1, 1, 1]);
}

#[test]
fn an_append_below_the_commit_index_is_answered_with_the_commit_index() {
    let mut raft = follower_with_log(&[1, 1, 1], 2);
    raft.step(Message {
        index: 3,
        log_term: 1,
        commit: 3,
        ..message(MessageType::App, 2, 1, 1)
    });
    sent(&mut raft);
    raft.step(Message {
        index: 1,
        log_term: 1,
        ..message(MessageType::App, 2, 1, 1)
    });
    assert_eq!(sent(&mut raft)[0].index, 3);
}

#[test]
fn a_refused_append_makes_the_leader_retry_from_the_hint() {
    let mut cluster = elected(3, 1);
    let leader = member(&mut cluster, 1);
    for _ in 0..5 {
        leader.propose(b"x".to_vec()).unwrap();
    }
    sent(leader);
    // Member 2 has only entry 1 and refuses a probe at index 4.
    leader.step(Message {
        reject: true,
        index: 6,
        reject_hint: 1,
        ..message(MessageType::AppResp, 2, 1, 1)
    });
    let retries = of_kind(&sent(leader), MessageType::App);
    assert_eq!(retries.len(), 1);
    assert_eq!(retries[0].index, 1, "resent right after its last entry");
    assert_eq!(retries[0].entries.len(), 5);
}

#[test]
fn a_leader_commits_an_earlier_terms_entries_only_with_one_of_its_own() {
    // Member 1 holds entries of term 1 that member 2 has too, and wins
    // term 3 with member 2's vote; member 3 is unreachable.
    let mut raft = follower_with_log(&[1, 1], 2);
    raft.step(message(MessageType::Heartbeat, 2, 1, 2));
    ticks(&mut raft, 2 * ELECTION_TICKS);
    assert_eq!(raft.role(), Role::Candidate);
    let term = raft.term();
    raft.step(message(MessageType::VoteResp, 2, 1, term));
    assert_eq!(raft.role(), Role::Leader);
    sent(&mut raft);
    // Member 2 acknowledges only the old entries: nothing commits.
    raft.step(Message {
        index: 2,
        ..message(MessageType::AppResp, 2, 1, term)
    });
    assert_eq!(raft.commit(), 0);
    // With the leader's own entry, everything before it commits.
    raft.step(Message {
        index: 3,
        ..message(MessageType::AppResp, 2, 1, term)
    });
    assert_eq!(raft.commit(), 3);
}

#[test]
fn a_heartbeat_answer_from_a_lagging_follower_resends_the_missing_entries() {
    let mut cluster = elected(3, 1);
    let leader = member(&mut cluster, 1);
    leader.propose(b"lost".to_vec()).unwrap();
    sent(leader); // the appends are lost
    leader.step(message(MessageType::HeartbeatResp, 2, 1, 1));
    let resent = of_kind(&sent(leader), MessageType::App);
    assert_eq!(resent.len(), 1);
    assert_eq!(resent[0].to, 2);
    assert_eq!(resent[0].index, 1);
    assert_eq!(resent[0].entries[0].data, b"lost");
}

#[test]
fn a_heartbeat_carries_no_commit_beyond_the_followers_match() {
    let mut cluster = elected(3, 1);
    member(&mut cluster, 1).propose(b"x".to_vec()).unwrap();
    let appends = sent(member(&mut cluster, 1));
    // Only member 2 gets and acknowledges entry 2, which commits.
    for m in appends.into_iter().filter(|m| m.to == 2) {
        member(&mut cluster, 2).step(m);
    }
    for m in sent(member(&mut cluster, 2)) {
        member(&mut cluster, 1).step(m);
    }
    assert_eq!(member(&mut cluster, 1).commit(), 2);
    sent(member(&mut cluster, 1));
    member(&mut cluster, 1).tick();
    let heartbeats = of_kind(&sent(member(&mut cluster, 1)), MessageType::Heartbeat);
    let commits: Vec<(u64, u64)> = heartbeats.iter().map(|m| (m.to, m.commit)).collect();
    assert_eq!(commits, vec![(2, 2), (3, 1)]);
}

#[test]
fn a_heartbeat_resets_the_followers_election_timer_and_raises_its_commit() {
    let mut raft = follower_with_log(&[1, 1], 2);
    for _ in 0..3 * ELECTION_TICKS {
        raft.tick();
        raft.step(Message {
            commit: 2,
            ..message(MessageType::Heartbeat, 2, 1, 1)
        });
    }
    assert_eq!(raft.role(), Role::Follower);
    assert_eq!(raft.commit(), 2);
}

#[test]
fn ready_hands_each_committed_entry_out_once() {
    let mut raft = Raft::new(config(1, &[1]));
    raft.campaign();
    raft.propose(b"a".to_vec()).unwrap();
    let data: Vec<Vec<u8>> = raft.ready().committed.into_iter().map(|e| e.data).collect();
    assert_eq!(data, vec![Vec::new(), b"a".to_vec()]);
    assert_eq!(raft.applied(), 2);
    assert!(raft.ready().committed.is_empty());
    raft.propose(b"b".to_vec()).unwrap();
    let next: Vec<u64> = raft.ready().committed.iter().map(|e| e.index).collect();
    assert_eq!(next, vec![3]);
}

// ----- Proposals -----

#[test]
fn a_follower_forwards_a_proposal_to_its_leader() {
    let mut cluster = elected(3, 1);
    member(&mut cluster, 2).propose(b"via 2".to_vec()).unwrap();
    let forwarded = sent(member(&mut cluster, 2));
    assert_eq!(forwarded.len(), 1);
    assert_eq!(forwarded[0].msg_type, MessageType::Prop as i32);
    assert_eq!((forwarded[0].to, forwarded[0].term), (1, 0));
    member(&mut cluster, 1).step(forwarded[0].clone());
    settle(&mut cluster);
    assert_eq!(member(&mut cluster, 1).commit(), 2);
    assert_eq!(member(&mut cluster, 1).entries()[1].data, b"via 2");
}

#[test]
fn a_proposal_without_a_known_leader_fails() {
    let mut raft = Raft::new(config(1, &[1, 2, 3]));
    assert_eq!(raft.propose(b"x".to_vec()), Err(ProposeError::NoLeader));
    raft.campaign();
    assert_eq!(raft.propose(b"x".to_vec()), Err(ProposeError::NoLeader));
}

// ----- Leader transfer -----

#[test]
fn a_leader_drops_proposals_during_a_transfer() {
    let mut cluster = elected(3, 1);
    member(&mut cluster, 1).transfer_leader(2);
    assert_eq!(
        member(&mut cluster, 1).propose(b"x".to_vec()),
        Err(ProposeError::Dropped)
    );
}

#[test]
fn a_leader_transfer_brings_the_target_up_to_date_and_makes_it_leader() {
    let mut cluster = elected(3, 1);
    member(&mut cluster, 1).propose(b"x".to_vec()).unwrap();
    // Member 2 misses the new entry.
    for m in sent(member(&mut cluster, 1)) {
        if m.to == 3 {
            member(&mut cluster, 3).step(m);
        }
    }
    settle(&mut cluster);
    member(&mut cluster, 1).transfer_leader(2);
    settle(&mut cluster);
    assert_eq!(member(&mut cluster, 2).role(), Role::Leader);
    assert_eq!(member(&mut cluster, 2).term(), 2);
    assert_eq!(member(&mut cluster, 1).role(), Role::Follower);
    assert_eq!(member(&mut cluster, 1).leader(), 2);
    assert_eq!(member(&mut cluster, 2).entries()[1].data, b"x");
}

#[test]
fn a_leader_transfer_is_abandoned_after_an_election_timeout() {
    let mut cluster = elected(3, 1);
    member(&mut cluster, 1).transfer_leader(2);
    for _ in 0..ELECTION_TICKS {
        member(&mut cluster, 1).tick();
        // Member 3 answers the heartbeats; member 2 is gone.
        for m in sent(member(&mut cluster, 1)) {
            if m.to == 3 {
                member(&mut cluster, 3).step(m);
            }
        }
        for m in sent(member(&mut cluster, 3)) {
            member(&mut cluster, 1).step(m);
        }
    }
    let leader = member(&mut cluster, 1);
    assert_eq!(leader.role(), Role::Leader);
    assert_eq!(leader.propose(b"x".to_vec()), Ok(()));
}

#[test]
fn a_lost_order_to_campaign_is_repeated_while_the_transfer_lasts() {
    let mut cluster = elected(3, 1);
    let leader = member(&mut cluster, 1);
    leader.transfer_leader(2);
    let first = of_kind(&sent(leader), MessageType::TimeoutNow);
    assert_eq!(first.len(), 1, "member 2 is up to date: it is told at once");
    leader.step(message(MessageType::HeartbeatResp, 2, 1, 1));
    let again = of_kind(&sent(leader), MessageType::TimeoutNow);
    assert_eq!(again.len(), 1);
    assert_eq!(again[0].to, 2);
}

#[test]
fn a_timeout_now_makes_a_follower_campaign_at_once() {
    let mut raft = follower_with_log(&[1], 2);
    raft.step(message(MessageType::TimeoutNow, 2, 1, 1));
    assert_eq!(raft.role(), Role::Candidate);
    let votes = of_kind(&sent(&mut raft), MessageType::Vote);
    assert_eq!(votes.len(), 2);
    assert!(votes.iter().all(|m| m.context == TRANSFER_CONTEXT));
}

// ----- Reads -----

#[test]
fn a_read_is_served_after_a_quorum_answers_its_heartbeat() {
    let mut cluster = elected(3, 1);
    let leader = member(&mut cluster, 1);
    leader.read_index(b"r1".to_vec()).unwrap();
    let heartbeats = of_kind(&sent(leader), MessageType::Heartbeat);
    assert_eq!(heartbeats.len(), 2);
    assert!(heartbeats.iter().all(|m| m.context == b"r1"));
    assert!(leader.ready().read_states.is_empty());
    leader.step(Message {
        context: b"r1".to_vec(),
        ..message(MessageType::HeartbeatResp, 3, 1, 1)
    });
    let reads = leader.ready().read_states;
    assert_eq!(
        reads,
        vec![ReadState {
            index: 1,
            context: b"r1".to_vec()
        }]
    );
}

#[test]
fn a_single_voter_serves_a_read_at_once() {
    let mut raft = Raft::new(config(1, &[1]));
    raft.campaign();
    raft.read_index(b"r".to_vec()).unwrap();
    assert_eq!(raft.ready().read_states.len(), 1);
}

#[test]
fn a_read_waits_until_the_leader_commits_an_entry_of_its_term() {
    let mut cluster = cluster(3);
    member(&mut cluster, 1).campaign();
    for m in sent(member(&mut cluster, 1)) {
        let to = m.to;
        member(&mut cluster, to).step(m);
    }
    for m in sent(member(&mut cluster, 2)) {
        member(&mut cluster, 1).step(m);
    }
    let leader = member(&mut cluster, 1);
    assert_eq!(leader.role(), Role::Leader);
    assert_eq!(leader.commit(), 0);
    leader.read_index(b"early".to_vec()).unwrap();
    let messages = leader.ready().messages;
    assert!(
        of_kind(&messages, MessageType::Heartbeat).is_empty(),
        "not yet"
    );
    for m in messages {
        let to = m.to;
        member(&mut cluster, to).step(m);
    }
    let early = ReadState {
        index: 1,
        context: b"early".to_vec(),
    };
    assert_eq!(settle(&mut cluster), vec![(1, early)]);
}

#[test]
fn a_follower_read_is_forwarded_and_answered() {
    let mut cluster = elected(3, 1);
    member(&mut cluster, 2).read_index(b"r2".to_vec()).unwrap();
    let r2 = ReadState {
        index: 1,
        context: b"r2".to_vec(),
    };
    assert_eq!(settle(&mut cluster), vec![(2, r2)]);
}

#[test]
fn a_read_without_a_leader_or_a_context_fails() {
    let mut raft = Raft::new(config(1, &[1, 2, 3]));
    assert_eq!(raft.read_index(b"r".to_vec()), Err(ProposeError::NoLeader));
    let mut cluster = elected(3, 1);
    assert_eq!(
        member(&mut cluster, 1).read_index(Vec::new()),
        Err(ProposeError::Dropped)
    );
}

// ----- Restarts, bad input, determinism -----

#[test]
fn a_restart_keeps_the_durable_state_and_forgets_the_rest() {
    let mut cluster = elected(3, 1);
    member(&mut cluster, 1).propose(b"x".to_vec()).unwrap();
    settle(&mut cluster);
    let leader = member(&mut cluster, 1);
    leader.read_index(b"r".to_vec()).unwrap();
    let before = leader.hard_state();
    let log = leader.entries().to_vec();
    let applied = leader.applied();
    leader.restart();
    assert_eq!(leader.hard_state(), before);
    assert_eq!(leader.entries(), log.as_slice());
    assert_eq!(leader.applied(), applied);
    assert_eq!(leader.role(), Role::Follower);
    assert_eq!(leader.leader(), 0);
    let ready = leader.ready();
    assert!(ready.messages.is_empty() && ready.read_states.is_empty());
    assert!(ready.committed.is_empty(), "nothing is handed out twice");
}

#[test]
fn misaddressed_unknown_and_malformed_messages_are_ignored() {
    let mut raft = follower_with_log(&[1, 1], 2);
    let before = (raft.hard_state(), raft.entries().to_vec());
    let bad = [
        message(MessageType::App, 2, 9, 5),
        message(MessageType::App, 9, 1, 5),
        message(MessageType::App, 1, 1, 5),
        message(MessageType::App, 2, 1, 0),
        Message {
            msg_type: 77,
            ..message(MessageType::App, 2, 1, 5)
        },
        Message {
            index: 2,
            log_term: 1,
            entries: vec![entry(1, 9)],
            ..message(MessageType::App, 2, 1, 1)
        },
        Message {
            index: 0,
            log_term: 0,
            entries: vec![entry(1, 1), entry(1, 3)],
            ..message(MessageType::App, 2, 1, 1)
        },
    ];
    for m in bad {
        raft.step(m);
    }
    assert_eq!((raft.hard_state(), raft.entries().to_vec()), before);
    let mut cluster = elected(3, 1);
    let leader = member(&mut cluster, 1);
    leader.step(Message {
        index: 99,
        ..message(MessageType::AppResp, 2, 1, 1)
    });
    leader.step(Message {
        reject: true,
        index: 99,
        reject_hint: u64::MAX,
        ..message(MessageType::AppResp, 2, 1, 1)
    });
    leader.step(message(MessageType::Prop, 2, 1, 0));
    assert_eq!(leader.role(), Role::Leader);
    assert_eq!(leader.last_index(), 1);
}

#[test]
fn messages_survive_a_round_trip_through_prost() {
    let original = Message {
        index: 4,
        log_term: 2,
        entries: vec![Entry {
            term: 2,
            index: 5,
            data: b"put k v".to_vec(),
        }],
        commit: 3,
        reject: true,
        reject_hint: 7,
        context: b"ctx".to_vec(),
        ..message(MessageType::App, 1, 2, 2)
    };
    let decoded = Message::decode(original.encode_to_vec().as_slice()).unwrap();
    assert_eq!(decoded, original);
    assert!(Message::decode(&b"\xff\xff\xff"[..]).is_err());
}

#[test]
fn a_seed_replays_a_run_exactly() {
    let run = || {
        let mut cluster = cluster(3);
        let mut trace = Vec::new();
        for round in 0..200 {
            for raft in cluster.iter_mut() {
                raft.tick();
                if round % 7 == 0 {
                    let _ = raft.propose(vec![round as u8]);
                }
            }
            let messages: Vec<Message> = cluster
                .iter_mut()
                .flat_map(|raft| raft.ready().messages)
                .collect();
            for (i, m) in messages.into_iter().enumerate() {
                trace.extend(m.encode_to_vec());
                if (i + round) % 5 != 0 {
                    let to = m.to;
                    member(&mut cluster, to).step(m);
                }
            }
        }
        trace
    };
    assert_eq!(run(), run());
}
