//! One member's Raft state machine: roles, terms, elections, replication,
//! reads and leader transfer. Pure: it acts only when called, and talks to
//! the world only through [`Ready`].

use std::collections::BTreeMap;

use rand_chacha::ChaCha8Rng;
use rand_core::{Rng, SeedableRng};

use super::config::Config;
use super::log::{AppendError, RaftLog};
use super::message::{Entry, HardState, Message, MessageType, TRANSFER_CONTEXT};
use super::progress::{Progress, SendMode};
use super::read_only::{PendingReads, ReadRequest};
use super::ready::{ReadState, Ready};

/// The most entries one append carries, so that a lagging follower is
/// caught up in datagrams of bounded size.
const MAX_ENTRIES_PER_APPEND: usize = 64;

/// What a member is doing in its current term.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// Follows a leader, or waits for one.
    Follower,
    /// Asks for votes to become leader.
    Candidate,
    /// Appends, replicates and commits.
    Leader,
}

/// Why a proposal or read was not accepted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProposeError {
    /// No leader is known to take it: retry later, perhaps elsewhere.
    NoLeader,
    /// The leader refused it: a leader transfer is under way, or a read
    /// came without a context to answer it by.
    Dropped,
}

/// Why a member campaigns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Campaign {
    /// Its election timeout passed without a leader.
    Election,
    /// The leader handed leadership over ([`MessageType::TimeoutNow`]).
    Transfer,
}

/// One member's Raft core.
#[derive(Debug)]
pub struct Raft {
    id: u64,
    /// Sorted, without duplicates.
    voters: Vec<u64>,
    election_ticks: u32,
    heartbeat_ticks: u32,
    check_quorum: bool,
    rng: ChaCha8Rng,

    // Durable: survives `restart`.
    term: u64,
    vote: u64,
    log: RaftLog,
    /// How far `ready` has handed committed entries out; the state machine
    /// they were applied to outlives a crash too.
    applied: u64,

    // Volatile: `restart` clears it.
    role: Role,
    leader: u64,
    election_elapsed: u32,
    heartbeat_elapsed: u32,
    randomized_election_timeout: u32,
    /// A candidate's tally: voter -> granted.
    votes: BTreeMap<u64, bool>,
    /// A leader's view of each other voter.
    progress: BTreeMap<u64, Progress>,
    /// The member a leader transfer hands over to (0 = none).
    transferee: u64,
    pending_reads: PendingReads,
    /// Reads that reached a leader before it committed an entry of its own
    /// term, when its commit index may still lag the previous leader's.
    reads_awaiting_commit: Vec<ReadRequest>,
    outbox: Vec<Message>,
    read_states: Vec<ReadState>,
}

impl Raft {
    /// A member with an empty log: a follower in term 0 with no leader.
    pub fn new(config: Config) -> Raft {
        let mut voters = config.voters;
        voters.retain(|&voter| voter != 0);
        voters.sort_unstable();
        voters.dedup();
        let mut raft = Raft {
            id: config.id,
            voters,
            election_ticks: config.election_ticks.max(1),
            heartbeat_ticks: config.heartbeat_ticks.max(1),
            check_quorum: config.check_quorum,
            rng: ChaCha8Rng::seed_from_u64(config.seed),
            term: 0,
            vote: 0,
            log: RaftLog::default(),
            applied: 0,
            role: Role::Follower,
            leader: 0,
            election_elapsed: 0,
            heartbeat_elapsed: 0,
            randomized_election_timeout: 0,
            votes: BTreeMap::new(),
            progress: BTreeMap::new(),
            transferee: 0,
            pending_reads: PendingReads::default(),
            reads_awaiting_commit: Vec::new(),
            outbox: Vec::new(),
            read_states: Vec::new(),
        };
        raft.become_follower(0, 0);
        raft
    }

    // ----- Time -----

    /// Advances the clock one tick: a leader heartbeats and checks its
    /// quorum; anyone else campaigns once its election timeout passes.
    pub fn tick(&mut self) {
        match self.role {
            Role::Leader => self.tick_leader(),
            Role::Follower | Role::Candidate => self.tick_election(),
        }
    }

    fn tick_election(&mut self) {
        self.election_elapsed = self.election_elapsed.saturating_add(1);
        if self.election_elapsed >= self.randomized_election_timeout {
            self.election_elapsed = 0;
            self.campaign_for(Campaign::Election);
        }
    }

    fn tick_leader(&mut self) {
        self.heartbeat_elapsed = self.heartbeat_elapsed.saturating_add(1);
        self.election_elapsed = self.election_elapsed.saturating_add(1);
        if self.election_elapsed >= self.election_ticks {
            self.election_elapsed = 0;
            if self.check_quorum && !self.quorum_recently_active() {
                // Cut off from a quorum: another leader may already serve
                // writes, so stop accepting them here (term unchanged).
                self.become_follower(self.term, 0);
                return;
            }
            // A transfer that has not finished in an election timeout
            // failed (the target is down or cut off): serve again.
            self.transferee = 0;
        }
        if self.heartbeat_elapsed >= self.heartbeat_ticks {
            self.heartbeat_elapsed = 0;
            self.broadcast_heartbeat();
        }
    }

    /// Whether a quorum (this leader included) was heard from since the
    /// last check; starts the next check period.
    fn quorum_recently_active(&mut self) -> bool {
        let mut active = 1;
        for progress in self.progress.values_mut() {
            if progress.recently_active {
                active += 1;
            }
            progress.recently_active = false;
        }
        active >= self.quorum()
    }

    // ----- Roles -----

    /// Clears what belongs to one role in one term. A vote belongs to its
    /// term, so it is forgotten only when the term changes.
    fn reset(&mut self, term: u64) {
        if term != self.term {
            self.term = term;
            self.vote = 0;
        }
        self.leader = 0;
        self.election_elapsed = 0;
        self.heartbeat_elapsed = 0;
        self.randomized_election_timeout = self.draw_election_timeout();
        self.votes.clear();
        self.progress.clear();
        self.transferee = 0;
        self.pending_reads = PendingReads::default();
        self.reads_awaiting_commit.clear();
    }

    /// Uniform in `[election_ticks, 2 * election_ticks)`.
    fn draw_election_timeout(&mut self) -> u32 {
        let span = u64::from(self.election_ticks);
        // The modulo's bias is below 2^-32 for any u32 span.
        let extra = self.rng.next_u64() % span;
        self.election_ticks + extra as u32
    }

    fn become_follower(&mut self, term: u64, leader: u64) {
        self.reset(term);
        self.role = Role::Follower;
        self.leader = leader;
    }

    fn become_candidate(&mut self) {
        self.reset(self.term + 1);
        self.role = Role::Candidate;
        self.vote = self.id;
    }

    fn become_leader(&mut self) {
        self.reset(self.term);
        self.role = Role::Leader;
        self.leader = self.id;
        let last_index = self.log.last_index();
        for peer in self.peers() {
            self.progress.insert(peer, Progress::new(last_index));
        }
        // Entries of earlier terms cannot be committed by counting
        // replicas; an entry of this term commits them along with it.
        self.append(vec![Vec::new()]);
    }

    /// Starts an election now, unless already leader or not a voter.
    pub fn campaign(&mut self) {
        self.campaign_for(Campaign::Election);
    }

    fn campaign_for(&mut self, campaign: Campaign) {
        if self.role == Role::Leader || !self.is_voter(self.id) {
            return;
        }
        self.become_candidate();
        if self.record_vote(self.id, true) == Tally::Won {
            self.become_leader();
            self.broadcast_append();
            return;
        }
        let context = match campaign {
            Campaign::Election => Vec::new(),
            Campaign::Transfer => TRANSFER_CONTEXT.to_vec(),
        };
        for peer in self.peers() {
            self.send(Message {
                to: peer,
                index: self.log.last_index(),
                log_term: self.log.last_term(),
                context: context.clone(),
                ..Message::of_type(MessageType::Vote)
            });
        }
    }

    fn record_vote(&mut self, voter: u64, granted: bool) -> Tally {
        self.votes.entry(voter).or_insert(granted);
        let granted = self.votes.values().filter(|&&granted| granted).count();
        let refused = self.votes.len() - granted;
        if granted >= self.quorum() {
            Tally::Won
        } else if refused >= self.quorum() {
            Tally::Lost
        } else {
            Tally::Pending
        }
    }

    // ----- Messages in -----

    /// Handles a message from another member. Messages not addressed to
    /// this member, from a non-voter, of an unknown kind or otherwise
    /// malformed are ignored, as are stale ones: the network may drop,
    /// duplicate and reorder anything.
    pub fn step(&mut self, message: Message) {
        let Ok(kind) = MessageType::try_from(message.msg_type) else {
            return;
        };
        if message.to != self.id || message.from == self.id || !self.is_voter(message.from) {
            return;
        }
        // Forwarded proposals and reads carry no term: they are requests
        // to whoever leads now, whatever term the forwarder is in.
        let forwarded = matches!(kind, MessageType::Prop | MessageType::ReadIndex);
        if !forwarded && !self.accepts_term(kind, &message) {
            return;
        }
        match kind {
            MessageType::Vote => self.handle_vote(&message),
            _ => match self.role {
                Role::Follower => self.step_follower(kind, message),
                Role::Candidate => self.step_candidate(kind, message),
                Role::Leader => self.step_leader(kind, message),
            },
        }
    }

    /// Applies the term rules; returns whether to go on handling the
    /// message in the (possibly new) current term.
    fn accepts_term(&mut self, kind: MessageType, message: &Message) -> bool {
        if message.term == 0 {
            return false;
        }
        if message.term < self.term {
            // Often just a delayed message. But it may come from a leader
            // that a member raised its term past while cut off: that member
            // cannot rejoin the old term, and in-lease voters ignore its
            // campaigns. The newer term in the answer deposes the old
            // leader, so that everyone moves on to a term all can join.
            if self.check_quorum && matches!(kind, MessageType::App | MessageType::Heartbeat) {
                self.send(Message {
                    to: message.from,
                    ..Message::of_type(MessageType::AppResp)
                });
            }
            return false;
        }
        if message.term > self.term {
            if kind == MessageType::Vote && self.in_lease() && message.context != TRANSFER_CONTEXT {
                // A member cut off for a while, campaigning with ever
                // higher terms, must not depose a leader a quorum hears.
                return false;
            }
            let leader = match kind {
                MessageType::App | MessageType::Heartbeat => message.from,
                _ => 0,
            };
            self.become_follower(message.term, leader);
        }
        true
    }

    /// Whether a leader was heard from within the last election timeout.
    fn in_lease(&self) -> bool {
        self.check_quorum && self.leader != 0 && self.election_elapsed < self.election_ticks
    }

    fn handle_vote(&mut self, message: &Message) {
        let free_to_vote = self.vote == message.from || (self.vote == 0 && self.leader == 0);
        let grant = free_to_vote && self.log.is_up_to_date(message.index, message.log_term);
        if grant {
            self.election_elapsed = 0;
            self.vote = message.from;
        }
        self.send(Message {
            to: message.from,
            reject: !grant,
            ..Message::of_type(MessageType::VoteResp)
        });
    }

    fn step_follower(&mut self, kind: MessageType, message: Message) {
        match kind {
            MessageType::App => {
                self.heard_from_leader(message.from);
                self.handle_append(message);
            }
            MessageType::Heartbeat => {
                self.heard_from_leader(message.from);
                self.handle_heartbeat(message);
            }
            MessageType::Prop | MessageType::ReadIndex if self.leader != 0 => {
                self.send(Message {
                    to: self.leader,
                    ..message
                });
            }
            MessageType::ReadIndexResp => self.read_states.push(ReadState {
                index: message.index,
                context: message.context,
            }),
            MessageType::TimeoutNow => self.campaign_for(Campaign::Transfer),
            _ => {}
        }
    }

    fn step_candidate(&mut self, kind: MessageType, message: Message) {
        match kind {
            MessageType::App | MessageType::Heartbeat => {
                // Someone won this term: follow it.
                self.become_follower(self.term, message.from);
                self.step_follower(kind, message);
            }
            MessageType::VoteResp => match self.record_vote(message.from, !message.reject) {
                Tally::Won => {
                    self.become_leader();
                    self.broadcast_append();
                }
                Tally::Lost => self.become_follower(self.term, 0),
                Tally::Pending => {}
            },
            _ => {}
        }
    }

    fn step_leader(&mut self, kind: MessageType, message: Message) {
        match kind {
            MessageType::Prop if self.transferee == 0 => {
                let data = message.entries.into_iter().map(|entry| entry.data);
                self.append(data.collect());
            }
            MessageType::ReadIndex if !message.context.is_empty() => {
                self.handle_read_request(ReadRequest {
                    from: message.from,
                    context: message.context,
                });
            }
            MessageType::AppResp => self.handle_append_response(&message),
            MessageType::HeartbeatResp => self.handle_heartbeat_response(&message),
            _ => {}
        }
    }

    fn heard_from_leader(&mut self, leader: u64) {
        self.election_elapsed = 0;
        self.leader = leader;
    }

    // ----- Replication, follower side -----

    fn handle_append(&mut self, message: Message) {
        let committed = self.log.committed();
        if message.index < committed {
            // Everything up to the commit index matches any leader's log.
            self.send(Message {
                to: message.from,
                index: committed,
                ..Message::of_type(MessageType::AppResp)
            });
            return;
        }
        match self
            .log
            .append_after(message.index, message.log_term, &message.entries)
        {
            Ok(last_new) => {
                self.log.commit_to(message.commit.min(last_new));
                self.send(Message {
                    to: message.from,
                    index: last_new,
                    ..Message::of_type(MessageType::AppResp)
                });
            }
            Err(AppendError::PrevMismatch) => self.send(Message {
                to: message.from,
                index: message.index,
                reject: true,
                reject_hint: self.log.last_index(),
                ..Message::of_type(MessageType::AppResp)
            }),
            Err(_) => {}
        }
    }

    fn handle_heartbeat(&mut self, message: Message) {
        self.log.commit_to(message.commit);
        self.send(Message {
            to: message.from,
            context: message.context,
            ..Message::of_type(MessageType::HeartbeatResp)
        });
    }

    // ----- Replication, leader side -----

    /// Appends proposals in this term and sends them on.
    fn append(&mut self, proposals: Vec<Vec<u8>>) {
        if proposals.is_empty() {
            return;
        }
        for data in proposals {
            self.log.push(self.term, data);
        }
        // A single voter commits on its own.
        if !self.maybe_commit() {
            self.broadcast_append();
        }
    }

    /// Commits the highest index a quorum holds, if it is of this term.
    /// On success, tells the followers (with any new entries).
    fn maybe_commit(&mut self) -> bool {
        let mut matched: Vec<u64> = self
            .voters
            .iter()
            .map(|&voter| match self.progress.get(&voter) {
                Some(progress) => progress.matched,
                None if voter == self.id => self.log.last_index(),
                None => 0,
            })
            .collect();
        matched.sort_unstable_by(|a, b| b.cmp(a));
        let Some(&quorum_index) = matched.get(self.quorum() - 1) else {
            return false;
        };
        if self.log.term(quorum_index) != Some(self.term) || !self.log.commit_to(quorum_index) {
            return false;
        }
        self.start_reads_awaiting_commit();
        self.broadcast_append();
        true
    }

    fn broadcast_append(&mut self) {
        for peer in self.peers() {
            self.send_append(peer);
        }
    }

    /// Sends `to` the entries from its `next` on (none if it is up to
    /// date: the append then carries only the commit index).
    fn send_append(&mut self, to: u64) {
        let Some(progress) = self.progress.get(&to) else {
            return;
        };
        if progress.is_paused() {
            return;
        }
        let from = progress.next;
        if let Some(last_sent) = self.send_entries_from(to, from)
            && let Some(progress) = self.progress.get_mut(&to)
        {
            progress.sent(last_sent);
        }
    }

    /// Sends `to` an append of the entries from `from` on; returns the
    /// index of the last one sent.
    fn send_entries_from(&mut self, to: u64, from: u64) -> Option<u64> {
        let prev_index = from.checked_sub(1)?;
        let prev_term = self.log.term(prev_index)?;
        let entries = self.log.slice(from, MAX_ENTRIES_PER_APPEND);
        let last_sent = prev_index + entries.len() as u64;
        self.send(Message {
            to,
            index: prev_index,
            log_term: prev_term,
            entries,
            commit: self.log.committed(),
            ..Message::of_type(MessageType::App)
        });
        Some(last_sent)
    }

    fn handle_append_response(&mut self, message: &Message) {
        let last_index = self.log.last_index();
        if message.index > last_index {
            return;
        }
        let Some(progress) = self.progress.get_mut(&message.from) else {
            return;
        };
        progress.recently_active = true;
        if message.reject {
            if progress.refused(message.index, message.reject_hint) {
                self.send_append(message.from);
            }
            return;
        }
        let was_paused = progress.is_paused();
        if progress.accepted(message.index) {
            // A follower that was waiting on a probe missed any commit
            // broadcast meanwhile: it gets the commit index now.
            let behind = progress.next <= last_index;
            if !self.maybe_commit() && (behind || was_paused) {
                self.send_append(message.from);
            }
            self.continue_transfer(message.from);
        } else if was_paused {
            self.send_append(message.from);
        }
    }

    fn handle_heartbeat_response(&mut self, message: &Message) {
        let last_index = self.log.last_index();
        let Some(progress) = self.progress.get_mut(&message.from) else {
            return;
        };
        progress.recently_active = true;
        progress.paused = false;
        if progress.matched < last_index {
            // Appends may have been lost on the way: send again what the
            // follower is not known to have.
            // A probe resumes from where it was; a stream resends from
            // the match without moving `next` (the rest may be in flight).
            let from = progress.matched + 1;
            if progress.mode == SendMode::Probe || progress.next <= from {
                self.send_append(message.from);
            } else {
                self.send_entries_from(message.from, from);
            }
        }
        // Unlike etcd, which sends it once, the order to campaign is
        // repeated while the transfer lasts: it may have been lost.
        self.continue_transfer(message.from);
        if !message.context.is_empty() {
            self.acknowledge_read(&message.context, message.from);
        }
    }

    fn broadcast_heartbeat(&mut self) {
        let context = self
            .pending_reads
            .last_context()
            .map(<[u8]>::to_vec)
            .unwrap_or_default();
        self.broadcast_heartbeat_with(&context);
    }

    fn broadcast_heartbeat_with(&mut self, context: &[u8]) {
        for peer in self.peers() {
            let matched = self.progress.get(&peer).map_or(0, |p| p.matched);
            // Never past what the follower is known to hold: its entries
            // beyond that may still differ from the leader's.
            self.send(Message {
                to: peer,
                commit: matched.min(self.log.committed()),
                context: context.to_vec(),
                ..Message::of_type(MessageType::Heartbeat)
            });
        }
    }

    // ----- Proposals -----

    /// Proposes `data` for the log: a leader appends it, a follower
    /// forwards it to its leader. Acceptance is no promise: the entry
    /// may still be lost; watch the committed entries for it.
    pub fn propose(&mut self, data: Vec<u8>) -> Result<(), ProposeError> {
        match self.role {
            Role::Leader if self.transferee != 0 => Err(ProposeError::Dropped),
            Role::Leader => {
                self.append(vec![data]);
                Ok(())
            }
            Role::Follower if self.leader != 0 => {
                self.send(Message {
                    to: self.leader,
                    entries: vec![Entry {
                        data,
                        ..Entry::default()
                    }],
                    ..Message::of_type(MessageType::Prop)
                });
                Ok(())
            }
            Role::Follower | Role::Candidate => Err(ProposeError::NoLeader),
        }
    }

    // ----- Reads -----

    /// Asks for a linearizable read named by `context` (non-empty, and
    /// unique among reads in flight): a [`ReadState`] with that context
    /// comes out of [`ready`](Raft::ready) once the leader has confirmed
    /// it still leads. A lost request yields nothing: retry after a while.
    pub fn read_index(&mut self, context: Vec<u8>) -> Result<(), ProposeError> {
        if context.is_empty() {
            return Err(ProposeError::Dropped);
        }
        match self.role {
            Role::Leader => {
                self.handle_read_request(ReadRequest {
                    from: self.id,
                    context,
                });
                Ok(())
            }
            Role::Follower if self.leader != 0 => {
                self.send(Message {
                    to: self.leader,
                    context,
                    ..Message::of_type(MessageType::ReadIndex)
                });
                Ok(())
            }
            Role::Follower | Role::Candidate => Err(ProposeError::NoLeader),
        }
    }

    fn handle_read_request(&mut self, request: ReadRequest) {
        if self.quorum() == 1 {
            let index = self.log.committed();
            self.answer_read(request, index);
            return;
        }
        if self.log.term(self.log.committed()) != Some(self.term) {
            // Until an entry of this term commits, this leader's commit
            // index may be behind writes its predecessor acknowledged.
            self.reads_awaiting_commit.push(request);
            return;
        }
        self.start_read(request);
    }

    fn start_read(&mut self, request: ReadRequest) {
        let context = request.context.clone();
        if self
            .pending_reads
            .add(request, self.log.committed(), self.id)
        {
            self.broadcast_heartbeat_with(&context);
        }
    }

    fn start_reads_awaiting_commit(&mut self) {
        for request in std::mem::take(&mut self.reads_awaiting_commit) {
            self.start_read(request);
        }
    }

    fn acknowledge_read(&mut self, context: &[u8], from: u64) {
        let Some(acks) = self.pending_reads.acknowledge(context, from) else {
            return;
        };
        if acks < self.quorum() {
            return;
        }
        for (request, index) in self.pending_reads.release_through(context) {
            self.answer_read(request, index);
        }
    }

    fn answer_read(&mut self, request: ReadRequest, index: u64) {
        if request.from == self.id {
            self.read_states.push(ReadState {
                index,
                context: request.context,
            });
        } else {
            self.send(Message {
                to: request.from,
                index,
                context: request.context,
                ..Message::of_type(MessageType::ReadIndexResp)
            });
        }
    }

    // ----- Leader transfer -----

    /// Hands leadership to voter `to`: stop taking proposals, bring `to`
    /// up to date, then tell it to campaign at once. Gives up after an
    /// election timeout. Only a leader acts on this; a transfer to itself
    /// or to a non-voter is ignored.
    pub fn transfer_leader(&mut self, to: u64) {
        if self.role != Role::Leader || to == self.id || !self.is_voter(to) {
            return;
        }
        if self.transferee == to {
            return;
        }
        // The transfer's deadline is the next quorum check.
        self.election_elapsed = 0;
        self.transferee = to;
        if !self.continue_transfer(to) {
            self.send_append(to);
        }
    }

    /// Tells the transferee to campaign once it holds the whole log;
    /// returns whether it did.
    fn continue_transfer(&mut self, peer: u64) -> bool {
        if self.transferee != peer {
            return false;
        }
        let up_to_date = self
            .progress
            .get(&peer)
            .is_some_and(|progress| progress.matched == self.log.last_index());
        if up_to_date {
            self.send(Message {
                to: peer,
                ..Message::of_type(MessageType::TimeoutNow)
            });
        }
        up_to_date
    }

    // ----- The driver's side -----

    /// Drains what was produced: messages to send, newly committed entries
    /// (which then count as applied) and reads that may be served.
    pub fn ready(&mut self) -> Ready {
        let committed = self.log.committed_after(self.applied);
        self.applied += committed.len() as u64;
        Ready {
            messages: std::mem::take(&mut self.outbox),
            committed,
            read_states: std::mem::take(&mut self.read_states),
        }
    }

    /// A crash and restart: keeps the term, the vote, the log, the commit
    /// index and `applied`; forgets the role, the leader, the followers'
    /// progress, unsent messages, reads and any transfer, and draws new
    /// timeouts.
    pub fn restart(&mut self) {
        self.become_follower(self.term, 0);
        self.outbox.clear();
        self.read_states.clear();
    }

    /// The durable term, vote and commit index.
    pub fn hard_state(&self) -> HardState {
        HardState {
            term: self.term,
            vote: self.vote,
            commit: self.log.committed(),
        }
    }

    /// Follower, candidate or leader.
    pub fn role(&self) -> Role {
        self.role
    }

    /// The leader of the current term, as far as known (0 = unknown).
    pub fn leader(&self) -> u64 {
        self.leader
    }

    /// The current term.
    pub fn term(&self) -> u64 {
        self.term
    }

    /// This member's id.
    pub fn id(&self) -> u64 {
        self.id
    }

    /// The highest index known to be committed.
    pub fn commit(&self) -> u64 {
        self.log.committed()
    }

    /// The highest index handed out by [`ready`](Raft::ready).
    pub fn applied(&self) -> u64 {
        self.applied
    }

    /// The index of the last log entry (0 when empty).
    pub fn last_index(&self) -> u64 {
        self.log.last_index()
    }

    /// The whole log, index 1 first.
    pub fn entries(&self) -> &[Entry] {
        self.log.entries()
    }

    // ----- Helpers -----

    fn send(&mut self, mut message: Message) {
        message.from = self.id;
        let forwarded = message.msg_type == MessageType::Prop as i32
            || message.msg_type == MessageType::ReadIndex as i32;
        message.term = if forwarded { 0 } else { self.term };
        self.outbox.push(message);
    }

    fn quorum(&self) -> usize {
        self.voters.len() / 2 + 1
    }

    fn is_voter(&self, id: u64) -> bool {
        self.voters.binary_search(&id).is_ok()
    }

    fn peers(&self) -> Vec<u64> {
        let me = self.id;
        self.voters.iter().copied().filter(|&v| v != me).collect()
    }
}

/// Where a candidate's election stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Tally {
    Won,
    Lost,
    Pending,
}
