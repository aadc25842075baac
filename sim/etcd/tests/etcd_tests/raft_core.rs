//! Three Raft cores on a simulated lossy network, driven by schedules that
//! proptest generates: ticks, deliveries in any order, drops, duplicates,
//! partitions, restarts, proposals, reads, transfers and campaigns.
//!
//! After every step the run checks Raft's safety properties:
//!
//! - Election Safety: at most one leader per term;
//! - Log Matching: two logs with an entry of the same index and term are
//!   identical up to it;
//! - Leader Completeness: an entry committed (as any member knows it) is
//!   in every later leader's log, at its index;
//! - State Machine Safety: the entries each member's `ready()` handed out
//!   are prefixes of one another;
//! - linearizable reads: a read is served at an index no lower than any
//!   commit index known anywhere when it was asked.
//!
//! Then the network heals and stays healthy, and the run checks liveness:
//! a leader emerges, a proposal commits on all three, and a read on each
//! member is served.

use std::collections::{BTreeMap, BTreeSet};

use proptest::collection::vec;
use proptest::prelude::*;
use proptest::test_runner::{Config as ProptestConfig, RngSeed};
use prost::Message as _;
use simetcd::raft::{Config, Entry, Message, Raft, ReadState, Role};

const MEMBERS: usize = 3;
/// Shorter than etcd's 10, so that a schedule sees many elections.
const ELECTION_TICKS: u32 = 5;
/// The network holds at most this many datagrams; beyond it, the oldest
/// are lost.
const NETWORK_CAPACITY: usize = 300;
/// Healthy rounds (one tick of every member, then every message
/// delivered) allowed for each liveness goal.
const LIVENESS_ROUNDS: usize = 300;
/// Within one healthy round, messages answer messages; this many
/// deliveries without the network falling quiet is a message storm.
const MAX_DELIVERIES_PER_ROUND: usize = 10_000;

/// One thing that happens to the cluster. Member and message positions
/// are taken modulo the number there are.
#[derive(Clone, Debug)]
enum Step {
    Tick(usize),
    TickAll,
    Deliver(usize),
    DeliverAll,
    Drop(usize),
    Duplicate(usize),
    Isolate(usize),
    CutLink(usize, usize),
    Heal,
    Restart(usize),
    Propose(usize),
    Read(usize),
    Transfer(usize, usize),
    Campaign(usize),
}

fn step() -> impl Strategy<Value = Step> {
    let member = || 0..MEMBERS;
    prop_oneof![
        10 => member().prop_map(Step::Tick),
        5 => Just(Step::TickAll),
        60 => any::<usize>().prop_map(Step::Deliver),
        6 => Just(Step::DeliverAll),
        6 => any::<usize>().prop_map(Step::Drop),
        4 => any::<usize>().prop_map(Step::Duplicate),
        3 => member().prop_map(Step::Isolate),
        3 => (member(), member()).prop_map(|(from, to)| Step::CutLink(from, to)),
        4 => Just(Step::Heal),
        4 => member().prop_map(Step::Restart),
        12 => member().prop_map(Step::Propose),
        3 => member().prop_map(Step::Read),
        2 => (member(), member()).prop_map(|(from, to)| Step::Transfer(from, to)),
        4 => member().prop_map(Step::Campaign),
    ]
}

/// The cluster, its network, and what has been observed so far.
struct World {
    members: Vec<Raft>,
    in_flight: Vec<Message>,
    /// Links (from, to) that lose every datagram.
    cut: BTreeSet<(u64, u64)>,
    /// What each member's `ready()` handed out, in order.
    applied: Vec<Vec<Entry>>,
    /// The leader seen in each term.
    leaders: BTreeMap<u64, u64>,
    /// Every committed entry by index, with the lowest term at which a
    /// member knew it committed: every leader of that term or later holds
    /// it.
    committed: BTreeMap<u64, (Entry, u64)>,
    /// For each read asked, the highest commit index known anywhere then.
    reads_asked: BTreeMap<Vec<u8>, u64>,
    /// Reads served: by member index.
    reads_served: Vec<(usize, ReadState)>,
    proposals: u64,
}

fn id_of(member: usize) -> u64 {
    member as u64 + 1
}

impl World {
    fn new(seed: u64) -> World {
        let voters: Vec<u64> = (0..MEMBERS).map(id_of).collect();
        let members = voters
            .iter()
            .map(|&id| {
                Raft::new(Config {
                    id,
                    voters: voters.clone(),
                    election_ticks: ELECTION_TICKS,
                    heartbeat_ticks: 1,
                    check_quorum: true,
                    seed: seed.wrapping_add(id),
                })
            })
            .collect();
        World {
            members,
            in_flight: Vec::new(),
            cut: BTreeSet::new(),
            applied: vec![Vec::new(); MEMBERS],
            leaders: BTreeMap::new(),
            committed: BTreeMap::new(),
            reads_asked: BTreeMap::new(),
            reads_served: Vec::new(),
            proposals: 0,
        }
    }

    /// Takes one step, collects what it produced, checks every property.
    fn run(&mut self, step: &Step) -> Result<(), String> {
        self.take(step);
        self.collect();
        self.check()
    }

    fn take(&mut self, step: &Step) {
        match *step {
            Step::Tick(member) => self.members[member].tick(),
            Step::TickAll => self.members.iter_mut().for_each(Raft::tick),
            Step::Deliver(position) => self.deliver(position),
            Step::DeliverAll => {
                while !self.in_flight.is_empty() {
                    self.deliver(0);
                }
            }
            Step::Drop(position) => {
                if let Some(position) = self.position(position) {
                    self.in_flight.remove(position);
                }
            }
            Step::Duplicate(position) => {
                if let Some(position) = self.position(position) {
                    let copy = self.in_flight[position].clone();
                    self.in_flight.push(copy);
                }
            }
            Step::Isolate(member) => {
                for other in 0..MEMBERS {
                    if other != member {
                        self.cut.insert((id_of(member), id_of(other)));
                        self.cut.insert((id_of(other), id_of(member)));
                    }
                }
            }
            Step::CutLink(from, to) => {
                self.cut.insert((id_of(from), id_of(to)));
            }
            Step::Heal => self.cut.clear(),
            Step::Restart(member) => self.members[member].restart(),
            Step::Propose(member) => {
                self.proposals += 1;
                let data = format!("p{}", self.proposals).into_bytes();
                let _ = self.members[member].propose(data);
            }
            Step::Read(member) => {
                self.read(member);
            }
            Step::Transfer(from, to) => self.members[from].transfer_leader(id_of(to)),
            Step::Campaign(member) => self.members[member].campaign(),
        }
    }

    fn position(&self, position: usize) -> Option<usize> {
        (!self.in_flight.is_empty()).then(|| position % self.in_flight.len())
    }

    /// Delivers one datagram (through the wire encoding), unless its link
    /// is cut.
    fn deliver(&mut self, position: usize) {
        let Some(position) = self.position(position) else {
            return;
        };
        let message = self.in_flight.remove(position);
        if self.cut.contains(&(message.from, message.to)) {
            return;
        }
        let Ok(decoded) = Message::decode(message.encode_to_vec().as_slice()) else {
            return;
        };
        let Some(member) = self.members.iter_mut().find(|m| m.id() == decoded.to) else {
            return;
        };
        member.step(decoded);
    }

    /// Asks member `member` for a read; returns its context if taken.
    fn read(&mut self, member: usize) -> Option<Vec<u8>> {
        let context = format!("r{}", self.reads_asked.len()).into_bytes();
        let known = self.members.iter().map(Raft::commit).max().unwrap_or(0);
        self.reads_asked.insert(context.clone(), known);
        self.members[member]
            .read_index(context.clone())
            .ok()
            .map(|()| context)
    }

    /// Drains every member's `ready()` into the network and the records.
    fn collect(&mut self) {
        for (member, raft) in self.members.iter_mut().enumerate() {
            let ready = raft.ready();
            self.in_flight.extend(ready.messages);
            self.applied[member].extend(ready.committed);
            let served = ready.read_states.into_iter().map(|read| (member, read));
            self.reads_served.extend(served);
        }
        if self.in_flight.len() > NETWORK_CAPACITY {
            let excess = self.in_flight.len() - NETWORK_CAPACITY;
            self.in_flight.drain(..excess);
        }
    }

    fn check(&mut self) -> Result<(), String> {
        self.check_one_leader_per_term()?;
        self.check_log_matching()?;
        self.check_committed_entries_stay()?;
        self.check_applied_prefixes()?;
        self.check_reads()
    }

    fn check_one_leader_per_term(&mut self) -> Result<(), String> {
        for raft in self.members.iter().filter(|r| r.role() == Role::Leader) {
            let leader = *self.leaders.entry(raft.term()).or_insert(raft.id());
            if leader != raft.id() {
                return Err(format!(
                    "two leaders in term {}: {} and {}",
                    raft.term(),
                    leader,
                    raft.id()
                ));
            }
        }
        Ok(())
    }

    fn check_log_matching(&self) -> Result<(), String> {
        for (a, first) in self.members.iter().enumerate() {
            for second in &self.members[a + 1..] {
                let (x, y) = (first.entries(), second.entries());
                let common = x.len().min(y.len());
                let Some(last_shared) = (0..common).rev().find(|&i| x[i].term == y[i].term) else {
                    continue;
                };
                if x[..=last_shared] != y[..=last_shared] {
                    return Err(format!(
                        "members {} and {} agree on entry {} but not before",
                        first.id(),
                        second.id(),
                        last_shared + 1
                    ));
                }
            }
        }
        Ok(())
    }

    fn check_committed_entries_stay(&mut self) -> Result<(), String> {
        for raft in &self.members {
            for entry in &raft.entries()[..raft.commit() as usize] {
                let known = self
                    .committed
                    .entry(entry.index)
                    .or_insert_with(|| (entry.clone(), raft.term()));
                if known.0 != *entry {
                    return Err(format!(
                        "member {} committed {:?} where {:?} was committed",
                        raft.id(),
                        entry,
                        known.0
                    ));
                }
                known.1 = known.1.min(raft.term());
            }
        }
        for leader in self.members.iter().filter(|r| r.role() == Role::Leader) {
            for (index, (entry, term)) in &self.committed {
                if *term > leader.term() {
                    continue;
                }
                if leader.entries().get(*index as usize - 1) != Some(entry) {
                    return Err(format!(
                        "leader {} of term {} lacks committed entry {:?}",
                        leader.id(),
                        leader.term(),
                        entry
                    ));
                }
            }
        }
        Ok(())
    }

    fn check_applied_prefixes(&self) -> Result<(), String> {
        for (member, applied) in self.applied.iter().enumerate() {
            if self.members[member].applied() != applied.len() as u64 {
                return Err(format!("member {member}'s applied index drifted"));
            }
            for other in &self.applied[member + 1..] {
                let common = applied.len().min(other.len());
                if applied[..common] != other[..common] {
                    return Err(format!("member {member} applied a different sequence"));
                }
            }
        }
        Ok(())
    }

    fn check_reads(&self) -> Result<(), String> {
        for (member, read) in &self.reads_served {
            let Some(&known) = self.reads_asked.get(&read.context) else {
                return Err(format!("member {member} served an unknown read {read:?}"));
            };
            if read.index < known {
                return Err(format!(
                    "member {member} served {read:?}, but {known} was committed when it was asked"
                ));
            }
        }
        Ok(())
    }

    // ----- A healthy network -----

    /// Every member ticks once, then every datagram is delivered, in order,
    /// until the network is quiet.
    fn healthy_round(&mut self) -> Result<(), String> {
        self.run(&Step::TickAll)?;
        for _ in 0..MAX_DELIVERIES_PER_ROUND {
            if self.in_flight.is_empty() {
                return Ok(());
            }
            self.run(&Step::Deliver(0))?;
        }
        Err(format!("the network never quiets: {}", self.describe()))
    }

    /// The leader all members follow, if there is one.
    fn agreed_leader(&self) -> Option<usize> {
        let leader = self.members.iter().position(|r| r.role() == Role::Leader)?;
        let term = self.members[leader].term();
        self.members
            .iter()
            .all(|r| r.term() == term && r.leader() == id_of(leader))
            .then_some(leader)
    }

    /// Heals the network and requires, within bounded time, a leader, a
    /// proposal applied on every member, and a read served on each.
    fn recover(&mut self) -> Result<(), String> {
        self.run(&Step::Heal)?;
        let committed = self.commit_a_proposal_everywhere()?;
        self.serve_a_read_everywhere(committed)
    }

    /// Returns the index of the proposal applied everywhere.
    fn commit_a_proposal_everywhere(&mut self) -> Result<u64, String> {
        let mut last_try = None;
        for round in 0..LIVENESS_ROUNDS {
            self.healthy_round()?;
            if let Some(index) = self.live_entry_applied_everywhere() {
                return Ok(index);
            }
            let retry = last_try.is_none_or(|at| round >= at + 2 * ELECTION_TICKS as usize);
            if let Some(leader) = self.agreed_leader().filter(|_| retry) {
                self.proposals += 1;
                let data = format!("live{}", self.proposals).into_bytes();
                if self.members[leader].propose(data).is_ok() {
                    last_try = Some(round);
                }
                self.collect();
            }
        }
        Err(format!(
            "no proposal committed everywhere after {LIVENESS_ROUNDS} healthy rounds: {}",
            self.describe()
        ))
    }

    fn live_entry_applied_everywhere(&self) -> Option<u64> {
        let shortest = self.applied.iter().min_by_key(|applied| applied.len())?;
        shortest
            .iter()
            .find(|entry| entry.data.starts_with(b"live"))
            .map(|entry| entry.index)
    }

    fn serve_a_read_everywhere(&mut self, committed: u64) -> Result<(), String> {
        let mut pending: BTreeMap<usize, Vec<u8>> = BTreeMap::new();
        let served_before = self.reads_served.len();
        for round in 0..LIVENESS_ROUNDS {
            for member in 0..MEMBERS {
                let retry = round % (2 * ELECTION_TICKS as usize) == 0;
                if !pending.contains_key(&member) || retry {
                    if let Some(context) = self.read(member) {
                        pending.insert(member, context);
                    }
                    self.collect();
                }
            }
            self.healthy_round()?;
            for (member, read) in &self.reads_served[served_before..] {
                if read.index < committed {
                    return Err(format!("read {read:?} misses entry {committed}"));
                }
                if pending.get(member) == Some(&read.context) {
                    pending.insert(*member, Vec::new());
                }
            }
            if pending.len() == MEMBERS && pending.values().all(Vec::is_empty) {
                return Ok(());
            }
        }
        Err(format!("reads not served: {}", self.describe()))
    }

    fn describe(&self) -> String {
        let members: Vec<String> = self
            .members
            .iter()
            .map(|r| {
                format!(
                    "{}: {:?} term {} leader {} last {} commit {}",
                    r.id(),
                    r.role(),
                    r.term(),
                    r.leader(),
                    r.last_index(),
                    r.commit()
                )
            })
            .collect();
        members.join("; ")
    }
}

fn schedule_is_safe_and_recovers(seed: u64, steps: &[Step]) -> Result<(), TestCaseError> {
    let mut world = World::new(seed);
    for (at, step) in steps.iter().enumerate() {
        world
            .run(step)
            .map_err(|why| TestCaseError::fail(format!("after step {at} ({step:?}): {why}")))?;
    }
    world
        .recover()
        .map_err(|why| TestCaseError::fail(format!("after healing: {why}")))
}

fn config(cases: u32, seed: u64) -> ProptestConfig {
    ProptestConfig {
        cases,
        failure_persistence: None,
        rng_seed: RngSeed::Fixed(seed),
        ..ProptestConfig::default()
    }
}

proptest! {
    #![proptest_config(config(1200, 0x5eed_0001))]

    /// Many short schedules: elections under loss, early crashes.
    #[test]
    fn short_schedules_stay_safe_and_recover(
        seed in any::<u64>(),
        steps in vec(step(), 1..400),
    ) {
        schedule_is_safe_and_recovers(seed, &steps)?;
    }
}

proptest! {
    #![proptest_config(config(120, 0x5eed_0002))]

    /// Fewer long schedules: many terms, long logs, repeated partitions.
    #[test]
    fn long_schedules_stay_safe_and_recover(
        seed in any::<u64>(),
        steps in vec(step(), 1000..5000),
    ) {
        schedule_is_safe_and_recovers(seed, &steps)?;
    }
}

/// A healthy cluster elects a leader and commits without any help.
#[test]
fn a_healthy_cluster_elects_a_leader_and_commits() {
    let mut world = World::new(7);
    world.recover().unwrap();
    let leaders = world.leaders.len();
    assert!(leaders >= 1);
}
