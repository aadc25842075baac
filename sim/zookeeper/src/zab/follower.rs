//! Following: ZooKeeper's `Follower` and `Learner`.
//!
//! A follower joins its leader in three steps, each message resent every
//! tick until the leader answers, and all within `initLimit` ticks:
//! `FOLLOWERINFO` (my accepted epoch), `ACKEPOCH` (I accept your epoch;
//! here is my history), then the `Sync` that makes its history the
//! leader's, acknowledged as ZooKeeper acknowledges `NEWLEADER`. The
//! leader's `UPTODATE` lets it serve. From then on it logs proposals in
//! order, acknowledges them, commits what the leader commits, and goes
//! back to Looking when the leader falls silent for `syncLimit` ticks.

use std::collections::BTreeMap;

use super::message::{Message, SyncMode, Txn, epoch_of};
use super::node::{NotLeader, State, Zab};

/// Where a follower is in joining its leader.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum FollowerPhase {
    /// `FOLLOWERINFO` sent; waiting for the leader's epoch.
    Connecting,
    /// `ACKEPOCH` sent; waiting for the history.
    AwaitSync,
    /// History taken and acknowledged; waiting for `UPTODATE`.
    AwaitUpToDate,
    /// Serving.
    Broadcast,
}

/// A follower's volatile state.
#[derive(Debug)]
pub(super) struct FollowerState {
    pub(super) leader: u64,
    /// This attempt's number, from [`Durable::attempts`](super::Durable).
    pub(super) attempt: u64,
    pub(super) phase: FollowerPhase,
    /// The leader's epoch, once known.
    epoch: u64,
    /// Whether this attempt raised the accepted epoch (only then does the
    /// `ACKEPOCH` count towards the leader's quorum).
    accepted_here: bool,
    /// The end of `initLimit`, while joining.
    deadline: u64,
    /// When the leader was last heard from.
    last_heard: u64,
    /// Syncs under way: id -> the zxid to apply, once the leader said.
    pub(super) syncs: BTreeMap<u64, Option<u64>>,
}

impl Zab {
    /// Sets out to join `leader`, as a new attempt.
    pub(super) fn become_following(&mut self, leader: u64) {
        self.durable.attempts += 1;
        let state = FollowerState {
            leader,
            attempt: self.durable.attempts,
            phase: FollowerPhase::Connecting,
            epoch: 0,
            accepted_here: false,
            deadline: self.now + u64::from(self.config.init_limit),
            last_heard: self.now,
            syncs: BTreeMap::new(),
        };
        self.set_state(State::Following(state));
        self.send_handshake();
    }

    fn follower(&mut self) -> Option<&mut FollowerState> {
        match &mut self.state {
            State::Following(follower) => Some(follower),
            _ => None,
        }
    }

    /// (Re)sends the message the leader has yet to answer.
    fn send_handshake(&mut self) {
        let Some(f) = self.follower() else { return };
        let (leader, attempt, epoch, accepted_here, phase) =
            (f.leader, f.attempt, f.epoch, f.accepted_here, f.phase);
        let message = match phase {
            FollowerPhase::Connecting => Message::FollowerInfo {
                attempt,
                accepted_epoch: self.durable.accepted_epoch,
                last_zxid: self.durable.last_zxid(),
            },
            FollowerPhase::AwaitSync => Message::AckEpoch {
                attempt,
                epoch,
                current_epoch: accepted_here.then_some(self.durable.current_epoch),
                last_zxid: self.durable.last_zxid(),
                epoch_ends: self.durable.epoch_ends(),
            },
            FollowerPhase::AwaitUpToDate => Message::AckNewLeader {
                attempt,
                epoch,
                last_zxid: self.durable.last_zxid(),
            },
            FollowerPhase::Broadcast => return,
        };
        self.send(leader, message);
    }

    pub(super) fn follower_tick(&mut self) {
        let now = self.now;
        let sync_limit = u64::from(self.config.sync_limit);
        let Some(f) = self.follower() else { return };
        if f.phase != FollowerPhase::Broadcast {
            if now >= f.deadline {
                // Not in sync within initLimit: elect again.
                self.become_looking();
            } else {
                self.send_handshake();
            }
            return;
        }
        if now >= f.last_heard + sync_limit {
            // The leader fell silent (crashed, or cut off from us): stop
            // serving and look for a leader.
            self.become_looking();
            return;
        }
        let (leader, attempt, epoch) = (f.leader, f.attempt, f.epoch);
        let unanswered: Vec<u64> = f
            .syncs
            .iter()
            .filter(|(_, target)| target.is_none())
            .map(|(&id, _)| id)
            .collect();
        for id in unanswered {
            self.send(leader, Message::SyncRequest { attempt, epoch, id });
        }
    }

    pub(super) fn follower_sync(&mut self, id: u64) -> Result<(), NotLeader> {
        let Some(f) = self.follower() else {
            return Err(NotLeader { leader: None });
        };
        if f.phase != FollowerPhase::Broadcast {
            return Err(NotLeader { leader: None });
        }
        f.syncs.insert(id, None);
        let (leader, attempt, epoch) = (f.leader, f.attempt, f.epoch);
        self.send(leader, Message::SyncRequest { attempt, epoch, id });
        Ok(())
    }

    pub(super) fn follower_step(&mut self, from: u64, message: Message) {
        let now = self.now;
        let Some(f) = self.follower() else { return };
        if from != f.leader || message.attempt() != Some(f.attempt) {
            return;
        }
        if let Some(epoch) = message.epoch()
            && (f.phase == FollowerPhase::Connecting || epoch != f.epoch)
        {
            return;
        }
        f.last_heard = now;
        let phase = f.phase;
        let serving = matches!(
            phase,
            FollowerPhase::AwaitUpToDate | FollowerPhase::Broadcast
        );
        match message {
            Message::LeaderInfo { epoch, .. } => self.on_leader_info(epoch),
            Message::Sync {
                mode,
                trunc_to,
                txns,
                commit,
                ..
            } => match phase {
                FollowerPhase::AwaitSync => self.on_sync(mode, trunc_to, txns, commit),
                // Our acknowledgement was lost.
                FollowerPhase::AwaitUpToDate => self.send_handshake(),
                _ => {}
            },
            Message::UpToDate { commit, .. } if serving => {
                if let Some(f) = self.follower() {
                    f.phase = FollowerPhase::Broadcast;
                }
                if phase == FollowerPhase::AwaitUpToDate {
                    self.serving_flipped();
                }
                self.commit_to(commit);
            }
            Message::Propose {
                prev, txn, commit, ..
            } if serving => self.on_propose(prev, txn, commit),
            Message::Commit { zxid, .. } if serving => self.commit_to(zxid),
            Message::Ping { commit, .. } if serving => {
                self.commit_to(commit);
                self.send_ack();
            }
            Message::SyncReply { id, zxid, .. } => {
                if let Some(target) = self.follower().and_then(|f| f.syncs.get_mut(&id))
                    && target.is_none()
                {
                    *target = Some(zxid);
                }
            }
            _ => {}
        }
    }

    fn on_leader_info(&mut self, epoch: u64) {
        let accepted = self.durable.accepted_epoch;
        let Some(f) = self.follower() else { return };
        match f.phase {
            FollowerPhase::Connecting => {}
            // Our ACKEPOCH was lost.
            FollowerPhase::AwaitSync if epoch == f.epoch => return self.send_handshake(),
            _ => return,
        }
        if epoch < accepted {
            // Promised a later leader already: this one cannot win.
            self.become_looking();
            return;
        }
        if epoch > accepted {
            f.accepted_here = true;
        }
        f.epoch = epoch;
        f.phase = FollowerPhase::AwaitSync;
        self.durable.accepted_epoch = epoch;
        self.send_handshake();
    }

    /// Takes the leader's history (DIFF, TRUNC or SNAP) and its epoch.
    fn on_sync(&mut self, mode: SyncMode, trunc_to: u64, txns: Vec<Txn>, commit: u64) {
        let ordered = txns.windows(2).all(|pair| pair[0].zxid < pair[1].zxid);
        let committed = self.durable.committed;
        let base = match mode {
            SyncMode::Diff => self.durable.last_zxid(),
            SyncMode::Trunc => trunc_to,
            SyncMode::Snap => 0,
        };
        let fits = ordered
            && txns.first().is_none_or(|first| first.zxid > base)
            && self.durable.contains(base)
            // What is committed stays: a TRUNC never reaches below it, and
            // a SNAP holds it.
            && (base >= committed || txns.iter().any(|txn| txn.zxid == committed));
        if !fits {
            // Not a history this server can take safely: start over.
            self.become_looking();
            return;
        }
        let keep = self.durable.count_through(base);
        self.durable.log.truncate(keep);
        self.durable.log.extend(txns);
        let Some(f) = self.follower() else { return };
        f.phase = FollowerPhase::AwaitUpToDate;
        let epoch = f.epoch;
        // NEWLEADER: this server's history is now the new epoch's.
        self.durable.current_epoch = epoch;
        self.commit_to(commit);
        self.send_handshake();
    }

    fn on_propose(&mut self, prev: u64, txn: Txn, commit: u64) {
        let last = self.durable.last_zxid();
        let epoch = self.follower().map_or(0, |f| f.epoch);
        // Log only the proposal that follows our last one: anything else
        // came out of order, and the leader sends it again.
        if prev == last && txn.zxid > last && epoch_of(txn.zxid) == epoch {
            self.append(txn);
        }
        self.commit_to(commit);
        self.send_ack();
    }

    fn send_ack(&mut self) {
        let last_zxid = self.durable.last_zxid();
        let Some(f) = self.follower() else { return };
        let (leader, attempt, epoch) = (f.leader, f.attempt, f.epoch);
        self.send(
            leader,
            Message::Ack {
                attempt,
                epoch,
                last_zxid,
            },
        );
    }
}
