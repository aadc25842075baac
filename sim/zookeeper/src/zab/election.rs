//! Looking: ZooKeeper's `FastLeaderElection`.
//!
//! A Looking server proposes itself, then whichever server beats its
//! proposal in the notifications it receives, and tells everyone each time
//! its proposal changes. Notifications of a later round reset the tally;
//! those of an earlier round get this server's proposal back, so that
//! laggards catch up. Once a quorum of this round votes as this server
//! does, it waits the finalize wait for a better vote, then settles:
//! leading if the vote names it, following otherwise. A server that hears
//! from servers no longer Looking joins their leader once a quorum names
//! it and the leader itself says it leads.

use std::collections::BTreeMap;

use super::message::{Message, Notification, PeerState, Vote};
use super::node::{State, Zab};

/// The election's state; kept across roles, as ZooKeeper keeps its
/// `logicalclock` and current vote.
#[derive(Debug)]
pub(super) struct Election {
    /// The round (`logicalclock`); volatile, as in ZooKeeper.
    pub(super) logical_clock: u64,
    /// This server's proposal while Looking.
    proposal: Vote,
    /// Votes of this round, this server's own included.
    recv: BTreeMap<u64, (Vote, PeerState)>,
    /// Votes of servers that are no longer Looking, of any round.
    out_of_election: BTreeMap<u64, (Vote, PeerState)>,
    /// The vote this server settled on: what it tells Looking servers.
    settled: Vote,
    /// When to send the proposal to everyone again.
    next_notify: u64,
    /// When a quorum agreed with the proposal: settle at this tick unless
    /// the proposal changes first.
    finalize_at: Option<u64>,
}

impl Election {
    pub(super) fn new(id: u64) -> Election {
        let nobody = Vote {
            leader: id,
            zxid: 0,
            peer_epoch: 0,
        };
        Election {
            logical_clock: 0,
            proposal: nobody,
            recv: BTreeMap::new(),
            out_of_election: BTreeMap::new(),
            settled: nobody,
            next_notify: 0,
            finalize_at: None,
        }
    }
}

impl Zab {
    /// This server's own candidacy.
    fn own_vote(&self) -> Vote {
        Vote {
            leader: self.id(),
            zxid: self.durable.last_zxid(),
            peer_epoch: self.durable.current_epoch,
        }
    }

    /// Goes Looking: a new round with this server as its own proposal.
    pub(super) fn become_looking(&mut self) {
        self.set_state(State::Looking);
        let own = self.own_vote();
        let election = &mut self.election;
        election.logical_clock += 1;
        election.recv.clear();
        election.out_of_election.clear();
        election.finalize_at = None;
        self.set_proposal(own);
        self.check_own_quorum();
    }

    /// Adopts `vote` as the proposal and tells everyone.
    fn set_proposal(&mut self, vote: Vote) {
        let id = self.id();
        self.election.proposal = vote;
        self.election.recv.insert(id, (vote, PeerState::Looking));
        self.election.finalize_at = None;
        self.broadcast_proposal();
    }

    fn broadcast_proposal(&mut self) {
        let notification = self.looking_notification();
        for peer in self.peers() {
            self.send(peer, Message::Notification(notification));
        }
        let wait = self.jitter(1, 2);
        self.election.next_notify = self.now + wait;
    }

    fn looking_notification(&self) -> Notification {
        Notification {
            vote: self.election.proposal,
            election_epoch: self.election.logical_clock,
            state: PeerState::Looking,
        }
    }

    pub(super) fn looking_tick(&mut self) {
        if let Some(at) = self.election.finalize_at
            && self.now >= at
        {
            // No better vote came within the finalize wait.
            let leader = self.election.proposal.leader;
            self.settle(self.election.proposal, leader);
            return;
        }
        if self.now >= self.election.next_notify {
            // ZooKeeper sends again when no notification arrives in time;
            // here any may have been lost, so resend on a jittered timer.
            self.broadcast_proposal();
        }
    }

    pub(super) fn on_notification(&mut self, from: u64, n: Notification) {
        let State::Looking = self.state else {
            // Tell a Looking server whom this one follows or that it leads,
            // so that it can join.
            if n.state == PeerState::Looking {
                let state = match self.state {
                    State::Leading(_) => PeerState::Leading,
                    _ => PeerState::Following,
                };
                let reply = Notification {
                    vote: self.election.settled,
                    election_epoch: self.election.logical_clock,
                    state,
                };
                self.send(from, Message::Notification(reply));
            }
            return;
        };
        match n.state {
            PeerState::Looking => self.on_looking_vote(from, n),
            PeerState::Following | PeerState::Leading => self.on_settled_vote(from, n),
        }
    }

    fn on_looking_vote(&mut self, from: u64, n: Notification) {
        let clock = self.election.logical_clock;
        if n.election_epoch > clock {
            // A later round: join it, keeping the better of its vote and
            // this server's own.
            self.election.logical_clock = n.election_epoch;
            self.election.recv.clear();
            let own = self.own_vote();
            let best = if n.vote.beats(&own) { n.vote } else { own };
            self.set_proposal(best);
        } else if n.election_epoch < clock {
            // A laggard: show it this round.
            let reply = self.looking_notification();
            self.send(from, Message::Notification(reply));
            return;
        } else if n.vote.beats(&self.election.proposal) {
            self.set_proposal(n.vote);
        }
        self.election.recv.insert(from, (n.vote, n.state));
        self.check_own_quorum();
    }

    /// Settles at once if every voter agrees with the proposal; starts the
    /// finalize wait if a quorum does.
    fn check_own_quorum(&mut self) {
        let proposal = self.election.proposal;
        let agree = self
            .election
            .recv
            .values()
            .filter(|(vote, _)| *vote == proposal)
            .count();
        if agree >= self.voters.len() {
            self.settle(proposal, proposal.leader);
        } else if agree >= self.quorum() {
            if self.election.finalize_at.is_none() {
                self.election.finalize_at = Some(self.now + self.config.finalize_ticks());
            }
        } else {
            self.election.finalize_at = None;
        }
    }

    fn on_settled_vote(&mut self, from: u64, n: Notification) {
        let leader = n.vote.leader;
        if n.election_epoch == self.election.logical_clock {
            self.election.recv.insert(from, (n.vote, n.state));
            if self.named_by_quorum(&self.election.recv, leader)
                && self.leader_confirmed(&self.election.recv, leader, n.election_epoch)
            {
                self.settle(n.vote, leader);
                return;
            }
        }
        // Joining an ensemble that already runs: a quorum must name the
        // same leader.
        self.election
            .out_of_election
            .insert(from, (n.vote, n.state));
        if self.named_by_quorum(&self.election.out_of_election, leader)
            && self.leader_confirmed(&self.election.out_of_election, leader, n.election_epoch)
        {
            self.election.logical_clock = n.election_epoch;
            self.settle(n.vote, leader);
        }
    }

    fn named_by_quorum(&self, votes: &BTreeMap<u64, (Vote, PeerState)>, leader: u64) -> bool {
        let named = votes.values().filter(|(v, _)| v.leader == leader).count();
        named >= self.quorum()
    }

    /// ZooKeeper's `checkLeader`: another server must itself say it leads;
    /// this server may lead only if named in its own round.
    fn leader_confirmed(
        &self,
        votes: &BTreeMap<u64, (Vote, PeerState)>,
        leader: u64,
        election_epoch: u64,
    ) -> bool {
        if leader == self.id() {
            election_epoch == self.election.logical_clock
        } else {
            votes
                .get(&leader)
                .is_some_and(|(_, state)| *state == PeerState::Leading)
        }
    }

    /// Leaves the election for `leader`.
    fn settle(&mut self, vote: Vote, leader: u64) {
        self.election.settled = vote;
        self.election.finalize_at = None;
        self.election.recv.clear();
        self.election.out_of_election.clear();
        if leader == self.id() {
            self.become_leading();
        } else {
            self.become_following(leader);
        }
    }
}
