//! One server's ZAB state machine: its role, its durable state, and the
//! calls its driver makes. The election, the follower and the leader live
//! in their own files as further `impl Zab` blocks.

use std::fmt;

use rand_chacha::ChaCha8Rng;
use rand_chacha::rand_core::{Rng, SeedableRng};

use super::config::Config;
use super::durable::Durable;
use super::election::Election;
use super::follower::{FollowerPhase, FollowerState};
use super::leader::{LeaderPhase, LeaderState};
use super::message::{Message, Txn};
use super::ready::Ready;

/// What a server is doing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// Electing a leader; serves no client.
    Looking,
    /// Following the leader with this id (serving once up to date).
    Following(u64),
    /// Leading (serving once a quorum took its history).
    Leading,
}

/// A write or sync was refused: this server cannot take it now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NotLeader {
    /// The leader this server follows, if it knows one to forward to.
    pub leader: Option<u64>,
}

impl fmt::Display for NotLeader {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.leader {
            Some(leader) => write!(f, "not the leader (server {leader} leads)"),
            None => write!(f, "not serving: no leader"),
        }
    }
}

impl std::error::Error for NotLeader {}

/// The role's volatile state.
#[derive(Debug)]
pub(super) enum State {
    Looking,
    Following(FollowerState),
    Leading(LeaderState),
}

/// One server's ZAB core.
#[derive(Debug)]
pub struct Zab {
    pub(super) config: Config,
    /// Sorted, without duplicates.
    pub(super) voters: Vec<u64>,
    pub(super) rng: ChaCha8Rng,
    pub(super) durable: Durable,
    /// Ticks since this incarnation started.
    pub(super) now: u64,
    pub(super) state: State,
    pub(super) election: Election,
    pub(super) outbox: Vec<(u64, Message)>,
    /// Whether the role changed since the last `ready`.
    role_dirty: bool,
    /// The serving flag last reported, and whether it flipped since.
    reported_serving: bool,
    serving_flipped: bool,
}

impl Zab {
    /// A server with an empty history, Looking.
    pub fn new(config: Config) -> Zab {
        Zab::restart(Durable::default(), config)
    }

    /// A server back from a crash with the durable state it had: Looking,
    /// with a new election round; everything volatile is forgotten.
    pub fn restart(durable: Durable, config: Config) -> Zab {
        let mut voters = config.voters.clone();
        voters.retain(|&voter| voter != 0);
        voters.sort_unstable();
        voters.dedup();
        let mut zab = Zab {
            rng: ChaCha8Rng::seed_from_u64(config.seed),
            voters,
            election: Election::new(config.id),
            config,
            durable,
            now: 0,
            state: State::Looking,
            outbox: Vec::new(),
            role_dirty: false,
            reported_serving: false,
            serving_flipped: false,
        };
        zab.become_looking();
        zab.role_dirty = false;
        zab
    }

    // ----- The driver's calls -----

    /// Advances time one tick: a leader pings and checks its quorum, a
    /// follower checks its leader, a Looking server sends its vote again
    /// and settles once its finalize wait is over.
    pub fn tick(&mut self) {
        self.now += 1;
        match self.state {
            State::Looking => self.looking_tick(),
            State::Following(_) => self.follower_tick(),
            State::Leading(_) => self.leader_tick(),
        }
    }

    /// Handles a message from server `from`. Messages from a non-voter, of
    /// another attempt or epoch, or that do not fit the current phase are
    /// ignored: the network may lose, duplicate and reorder anything.
    pub fn step(&mut self, from: u64, message: Message) {
        if from == self.id() || !self.is_voter(from) {
            return;
        }
        match message {
            Message::Notification(notification) => self.on_notification(from, notification),
            message => match self.state {
                State::Looking => {}
                State::Following(_) => self.follower_step(from, message),
                State::Leading(_) => self.leader_step(from, message),
            },
        }
    }

    /// Server `peer`'s connections were reset: its process died while its
    /// machine stayed up, and its kernel closed them. A follower of it
    /// looks for a new leader at once and a leader stops counting it, as
    /// ZooKeeper's do when the socket closes, instead of waiting out the
    /// sync limit (which is what a silent peer, one without power or cut
    /// off, costs).
    pub fn peer_reset(&mut self, peer: u64) {
        match &self.state {
            State::Following(follower) if follower.leader == peer => self.become_looking(),
            State::Leading(_) => self.leader_forget(peer),
            _ => {}
        }
    }

    /// Proposes a transaction; returns its zxid. Only a serving leader
    /// takes writes; it is committed when [`Zab::ready`] hands it out.
    pub fn propose(&mut self, data: Vec<u8>) -> Result<u64, NotLeader> {
        self.leader_propose(data)
    }

    /// Starts a client's `sync`, named `id`: [`Ready::synced`] reports it
    /// once this server has applied everything the leader had proposed
    /// when the sync reached it. Refused unless serving; a sync under way
    /// is forgotten when the server stops serving (its clients are dropped
    /// then).
    pub fn sync(&mut self, id: u64) -> Result<(), NotLeader> {
        match &self.state {
            State::Leading(_) => self.leader_sync(id),
            State::Following(_) => self.follower_sync(id),
            State::Looking => Err(NotLeader { leader: None }),
        }
    }

    /// Takes everything produced since the last call: messages to send,
    /// committed transactions to apply, role changes, syncs done.
    pub fn ready(&mut self) -> Ready {
        let from = self.durable.count_through(self.durable.delivered);
        let to = self.durable.count_through(self.durable.committed);
        let committed = self.durable.log[from..to.max(from)]
            .iter()
            .map(|txn| (txn.zxid, txn.data.clone()))
            .collect();
        self.durable.delivered = self.durable.delivered.max(self.durable.committed);
        let synced = self.take_synced();
        let role_changed = std::mem::take(&mut self.role_dirty).then(|| self.role());
        let serving = self.is_serving();
        let serving_changed = (std::mem::take(&mut self.serving_flipped)
            || serving != self.reported_serving)
            .then_some(serving);
        self.reported_serving = serving;
        Ready {
            messages: std::mem::take(&mut self.outbox),
            committed,
            role_changed,
            serving_changed,
            synced,
        }
    }

    // ----- What the driver may look at -----

    /// This server's id.
    pub fn id(&self) -> u64 {
        self.config.id
    }

    /// Looking, following whom, or leading.
    pub fn role(&self) -> Role {
        match &self.state {
            State::Looking => Role::Looking,
            State::Following(follower) => Role::Following(follower.leader),
            State::Leading(_) => Role::Leading,
        }
    }

    /// Whether clients may be served: a follower up to date with its
    /// leader, or a leader a quorum follows.
    pub fn is_serving(&self) -> bool {
        match &self.state {
            State::Looking => false,
            State::Following(follower) => follower.phase == FollowerPhase::Broadcast,
            State::Leading(leader) => leader.phase == LeaderPhase::Broadcast,
        }
    }

    /// The serving leader's id as far as this server knows, itself
    /// included: where a follower forwards writes.
    pub fn leader(&self) -> Option<u64> {
        self.is_serving().then(|| match &self.state {
            State::Following(follower) => follower.leader,
            _ => self.id(),
        })
    }

    /// The epoch of the history this server holds (`currentEpoch`).
    pub fn current_epoch(&self) -> u64 {
        self.durable.current_epoch
    }

    /// The last logged zxid.
    pub fn last_zxid(&self) -> u64 {
        self.durable.last_zxid()
    }

    /// The highest zxid known committed.
    pub fn committed_zxid(&self) -> u64 {
        self.durable.committed
    }

    /// The durable state, to keep outside a host that may crash.
    pub fn durable(&self) -> &Durable {
        &self.durable
    }

    /// The durable state, for [`Zab::restart`].
    pub fn into_durable(self) -> Durable {
        self.durable
    }

    /// The election round (ZooKeeper's `logicalclock`).
    pub fn election_epoch(&self) -> u64 {
        self.election.logical_clock
    }

    // ----- Shared by the roles -----

    pub(super) fn is_voter(&self, id: u64) -> bool {
        self.voters.binary_search(&id).is_ok()
    }

    /// The other voters.
    pub(super) fn peers(&self) -> Vec<u64> {
        let id = self.id();
        self.voters.iter().copied().filter(|&v| v != id).collect()
    }

    pub(super) fn quorum(&self) -> usize {
        self.voters.len() / 2 + 1
    }

    pub(super) fn send(&mut self, to: u64, message: Message) {
        self.outbox.push((to, message));
    }

    /// A draw in `[low, low + span)`.
    pub(super) fn jitter(&mut self, low: u64, span: u64) -> u64 {
        low + self.rng.next_u64() % span.max(1)
    }

    /// Commits up to `zxid`, as far as the log goes; never backwards.
    pub(super) fn commit_to(&mut self, zxid: u64) {
        let zxid = zxid.min(self.durable.last_zxid());
        if zxid > self.durable.committed {
            self.durable.committed = zxid;
        }
    }

    pub(super) fn append(&mut self, txn: Txn) {
        debug_assert!(txn.zxid > self.durable.last_zxid());
        self.durable.log.push(txn);
    }

    /// Notes that the serving flag may have flipped.
    pub(super) fn set_state(&mut self, state: State) {
        let was_serving = self.is_serving();
        self.state = state;
        self.role_dirty = true;
        if self.is_serving() != was_serving {
            self.serving_flipped = true;
        }
    }

    /// Notes a flip of the serving flag within the same role.
    pub(super) fn serving_flipped(&mut self) {
        self.serving_flipped = true;
    }

    fn take_synced(&mut self) -> Vec<u64> {
        let committed = self.durable.committed;
        let pending = match &mut self.state {
            State::Looking => return Vec::new(),
            State::Following(follower) => &mut follower.syncs,
            State::Leading(leader) => &mut leader.syncs,
        };
        let done: Vec<u64> = pending
            .iter()
            .filter(|(_, target)| target.is_some_and(|t| t <= committed))
            .map(|(&id, _)| id)
            .collect();
        for id in &done {
            pending.remove(id);
        }
        done
    }
}
