//! Leading: ZooKeeper's `Leader` and its `LearnerHandler`s.
//!
//! A new leader goes through discovery and synchronisation, each step
//! within `initLimit` ticks or it gives up:
//!
//! 1. a quorum's `FOLLOWERINFO`s give the new epoch, one past the highest
//!    accepted epoch among them (`getEpochToPropose`);
//! 2. a quorum's `ACKEPOCH`s promise it, and none of them may hold a more
//!    recent history than the leader's (`waitForEpochAck`);
//! 3. each follower is sent the leader's history (`syncFollower`), and a
//!    quorum's acknowledgement commits that whole history
//!    (`waitForNewLeaderAck`); the leader serves and sends `UPTODATE`.
//!
//! Then it broadcasts: a proposal is committed once a quorum, itself
//! included, has logged it. It pings every tick and steps down when it has
//! not heard from a quorum for `syncLimit` ticks. A follower that joins
//! later goes through the same handshake, without the quorum waits.

use std::collections::BTreeMap;

use super::message::{Message, SyncMode, Txn, counter_of, epoch_of, make_zxid};
use super::node::{NotLeader, State, Zab};

/// The most proposals resent to one follower per tick, so that a lagging
/// follower is caught up in bounded bursts.
const MAX_RESEND_PER_TICK: usize = 64;

/// Where a leader is in taking office.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum LeaderPhase {
    /// Waiting for a quorum's accepted epochs.
    Discovery,
    /// New epoch sent; waiting for a quorum to accept it.
    EpochAck,
    /// Histories sent; waiting for a quorum to take them.
    NewLeaderAck,
    /// Serving.
    Broadcast,
}

/// Where one follower is with this leader.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Stage {
    /// `FOLLOWERINFO` received; the epoch is not chosen yet.
    Info,
    /// `LEADERINFO` sent.
    EpochSent,
    /// `ACKEPOCH` received, waiting for the epoch quorum.
    EpochAcked {
        counted: bool,
        last_zxid: u64,
        epoch_ends: Vec<u64>,
    },
    /// History sent.
    Syncing,
    /// History taken: gets proposals and counts for commits.
    Synced,
}

/// A follower as its leader sees it.
#[derive(Clone, Debug)]
struct Peer {
    attempt: u64,
    accepted_epoch: u64,
    stage: Stage,
    /// The highest zxid it is known to have logged.
    acked: u64,
    /// It counts as in touch while `now < deadline` (ZooKeeper's
    /// `tickOfNextAckDeadline`).
    deadline: u64,
}

/// A leader's volatile state.
#[derive(Debug)]
pub(super) struct LeaderState {
    pub(super) phase: LeaderPhase,
    /// The new epoch, once chosen (0 before).
    epoch: u64,
    /// `(currentEpoch, last zxid)` when elected: no follower of the epoch
    /// quorum may be ahead of it.
    summary: (u64, u64),
    /// The end of `initLimit` for the current step of taking office.
    deadline: u64,
    peers: BTreeMap<u64, Peer>,
    /// Local syncs under way: id -> the zxid to apply.
    pub(super) syncs: BTreeMap<u64, Option<u64>>,
    /// The last zxid at the previous tick: a follower that has not
    /// acknowledged that far by now gets it again.
    resend_below: u64,
}

impl Zab {
    pub(super) fn become_leading(&mut self) {
        let state = LeaderState {
            phase: LeaderPhase::Discovery,
            epoch: 0,
            summary: (self.durable.current_epoch, self.durable.last_zxid()),
            deadline: self.now + u64::from(self.config.init_limit),
            peers: BTreeMap::new(),
            syncs: BTreeMap::new(),
            resend_below: 0,
        };
        self.set_state(State::Leading(state));
        self.try_choose_epoch();
    }

    fn leader_state(&mut self) -> Option<&mut LeaderState> {
        match &mut self.state {
            State::Leading(leader) => Some(leader),
            _ => None,
        }
    }

    /// Stops counting `peer` as a follower (its connection closed); the
    /// next tick steps down if that leaves no quorum.
    pub(super) fn leader_forget(&mut self, peer: u64) {
        if let Some(l) = self.leader_state() {
            l.peers.remove(&peer);
        }
    }

    pub(super) fn leader_tick(&mut self) {
        let now = self.now;
        let quorum = self.quorum();
        let Some(l) = self.leader_state() else { return };
        if l.phase != LeaderPhase::Broadcast {
            if now >= l.deadline {
                // No quorum took office with us within initLimit.
                self.become_looking();
            }
            return;
        }
        let in_touch = 1 + l
            .peers
            .values()
            .filter(|p| p.stage == Stage::Synced && now < p.deadline)
            .count();
        if in_touch < quorum {
            // Cut off from a quorum: another leader may be elected, so stop
            // taking writes here.
            self.become_looking();
            return;
        }
        let (epoch, resend_below) = (l.epoch, l.resend_below);
        let synced: Vec<(u64, u64, u64)> = l
            .peers
            .iter()
            .filter(|(_, p)| p.stage == Stage::Synced)
            .map(|(&id, p)| (id, p.attempt, p.acked))
            .collect();
        let commit = self.durable.committed;
        for (id, attempt, acked) in synced {
            self.send(
                id,
                Message::Ping {
                    attempt,
                    epoch,
                    commit,
                },
            );
            if acked < resend_below {
                self.resend(id, attempt, epoch, acked);
            }
        }
        let last = self.durable.last_zxid();
        if let Some(l) = self.leader_state() {
            l.resend_below = last;
        }
    }

    /// Sends follower `id` the proposals after `acked` again.
    fn resend(&mut self, id: u64, attempt: u64, epoch: u64, acked: u64) {
        let start = self.durable.count_through(acked);
        let end = (start + MAX_RESEND_PER_TICK).min(self.durable.log.len());
        let commit = self.durable.committed;
        for at in start..end {
            let prev = if at == 0 {
                0
            } else {
                self.durable.log[at - 1].zxid
            };
            let txn = self.durable.log[at].clone();
            self.send(
                id,
                Message::Propose {
                    attempt,
                    epoch,
                    prev,
                    txn,
                    commit,
                },
            );
        }
    }

    pub(super) fn leader_propose(&mut self, data: Vec<u8>) -> Result<u64, NotLeader> {
        let last = self.durable.last_zxid();
        let Some(l) = self.leader_state() else {
            let leader = match &self.state {
                State::Following(_) => self.leader(),
                _ => None,
            };
            return Err(NotLeader { leader });
        };
        if l.phase != LeaderPhase::Broadcast {
            return Err(NotLeader { leader: None });
        }
        let epoch = l.epoch;
        let zxid = if epoch_of(last) == epoch {
            if counter_of(last) >= 0xffff_fffe {
                // The counter would roll over: ZooKeeper forces an election
                // so that the next epoch starts counting again.
                self.become_looking();
                return Err(NotLeader { leader: None });
            }
            last + 1
        } else {
            make_zxid(epoch, 1)
        };
        let receivers: Vec<(u64, u64)> = l
            .peers
            .iter()
            .filter(|(_, p)| matches!(p.stage, Stage::Syncing | Stage::Synced))
            .map(|(&id, p)| (id, p.attempt))
            .collect();
        let txn = Txn { zxid, data };
        self.append(txn.clone());
        let commit = self.durable.committed;
        for (id, attempt) in receivers {
            self.send(
                id,
                Message::Propose {
                    attempt,
                    epoch,
                    prev: last,
                    txn: txn.clone(),
                    commit,
                },
            );
        }
        // Alone in its ensemble, the leader is its own quorum.
        self.advance_commit();
        Ok(zxid)
    }

    pub(super) fn leader_sync(&mut self, id: u64) -> Result<(), NotLeader> {
        let last = self.durable.last_zxid();
        let Some(l) = self.leader_state() else {
            return Err(NotLeader { leader: None });
        };
        if l.phase != LeaderPhase::Broadcast {
            return Err(NotLeader { leader: None });
        }
        l.syncs.insert(id, Some(last));
        Ok(())
    }

    pub(super) fn leader_step(&mut self, from: u64, message: Message) {
        if let Message::FollowerInfo {
            attempt,
            accepted_epoch,
            ..
        } = message
        {
            self.on_follower_info(from, attempt, accepted_epoch);
            return;
        }
        let now = self.now;
        let sync_limit = u64::from(self.config.sync_limit);
        let Some(l) = self.leader_state() else { return };
        let epoch = l.epoch;
        let Some(peer) = l.peers.get_mut(&from) else {
            return;
        };
        if epoch == 0 || message.attempt() != Some(peer.attempt) || message.epoch() != Some(epoch) {
            return;
        }
        peer.deadline = now + sync_limit;
        match message {
            Message::AckEpoch {
                current_epoch,
                last_zxid,
                epoch_ends,
                ..
            } => self.on_ack_epoch(from, current_epoch, last_zxid, epoch_ends),
            Message::AckNewLeader { last_zxid, .. } => self.on_synced(from, last_zxid, true),
            Message::Ack { last_zxid, .. } => {
                self.on_synced(from, last_zxid, false);
                self.on_ack(from, last_zxid);
            }
            Message::SyncRequest { attempt, id, .. } => {
                let synced = peer.stage == Stage::Synced;
                if synced && l.phase == LeaderPhase::Broadcast {
                    let zxid = self.durable.last_zxid();
                    self.send(
                        from,
                        Message::SyncReply {
                            attempt,
                            epoch,
                            id,
                            zxid,
                        },
                    );
                }
            }
            _ => {}
        }
    }

    fn on_follower_info(&mut self, from: u64, attempt: u64, accepted_epoch: u64) {
        let now = self.now;
        let sync_limit = u64::from(self.config.sync_limit);
        let Some(l) = self.leader_state() else { return };
        if l.epoch != 0 && accepted_epoch > l.epoch {
            // It promised a later epoch than ours (to a would-be leader
            // that never took office), so it can never follow us: in
            // ZooKeeper it would go back to Looking and find us again, for
            // as long as we reign. Step down instead, so that the next
            // election takes an epoch past its promise.
            self.durable.accepted_epoch = self.durable.accepted_epoch.max(accepted_epoch);
            self.become_looking();
            return;
        }
        if let Some(peer) = l.peers.get(&from) {
            if peer.attempt > attempt {
                return;
            }
            if peer.attempt == attempt {
                // Our LEADERINFO was lost.
                if matches!(peer.stage, Stage::EpochSent) {
                    let epoch = l.epoch;
                    self.send(from, Message::LeaderInfo { attempt, epoch });
                }
                return;
            }
        }
        // A new attempt replaces the old one, wherever it had got to.
        l.peers.insert(
            from,
            Peer {
                attempt,
                accepted_epoch,
                stage: Stage::Info,
                acked: 0,
                deadline: now + sync_limit,
            },
        );
        if l.phase == LeaderPhase::Discovery {
            self.try_choose_epoch();
        } else {
            let epoch = l.epoch;
            if let Some(peer) = l.peers.get_mut(&from) {
                peer.stage = Stage::EpochSent;
            }
            self.send(from, Message::LeaderInfo { attempt, epoch });
        }
    }

    /// Discovery: once a quorum has said which epochs it accepted, takes
    /// the next one.
    fn try_choose_epoch(&mut self) {
        let quorum = self.quorum();
        let now = self.now;
        let init_limit = u64::from(self.config.init_limit);
        let own = self.durable.accepted_epoch;
        let Some(l) = self.leader_state() else { return };
        if l.phase != LeaderPhase::Discovery || 1 + l.peers.len() < quorum {
            return;
        }
        let highest = l
            .peers
            .values()
            .map(|p| p.accepted_epoch)
            .fold(own, u64::max);
        let epoch = highest + 1;
        l.epoch = epoch;
        l.phase = LeaderPhase::EpochAck;
        l.deadline = now + init_limit;
        let mut infos = Vec::new();
        for (&id, peer) in &mut l.peers {
            peer.stage = Stage::EpochSent;
            infos.push((
                id,
                Message::LeaderInfo {
                    attempt: peer.attempt,
                    epoch,
                },
            ));
        }
        self.durable.accepted_epoch = epoch;
        for (id, message) in infos {
            self.send(id, message);
        }
        self.try_finish_epoch_ack();
    }

    fn on_ack_epoch(
        &mut self,
        from: u64,
        current_epoch: Option<u64>,
        last_zxid: u64,
        epoch_ends: Vec<u64>,
    ) {
        let Some(l) = self.leader_state() else { return };
        let summary = l.summary;
        let phase = l.phase;
        let Some(peer) = l.peers.get_mut(&from) else {
            return;
        };
        match (&peer.stage, phase) {
            (Stage::EpochSent, LeaderPhase::EpochAck) => {
                if let Some(current) = current_epoch
                    && (current, last_zxid) > summary
                {
                    // A follower of the epoch quorum has a more recent
                    // history: it, not us, must lead.
                    self.become_looking();
                    return;
                }
                peer.stage = Stage::EpochAcked {
                    counted: current_epoch.is_some(),
                    last_zxid,
                    epoch_ends,
                };
                self.try_finish_epoch_ack();
            }
            // A late joiner, or our history was lost on the way: (re)send
            // it, computed from what the follower holds now.
            (Stage::EpochSent | Stage::Syncing, LeaderPhase::NewLeaderAck)
            | (Stage::EpochSent | Stage::Syncing, LeaderPhase::Broadcast) => {
                self.send_history(from, last_zxid, &epoch_ends);
            }
            _ => {}
        }
    }

    /// Once a quorum promised the epoch, takes it as current and sends
    /// every follower that promised it the history.
    fn try_finish_epoch_ack(&mut self) {
        let quorum = self.quorum();
        let now = self.now;
        let init_limit = u64::from(self.config.init_limit);
        let Some(l) = self.leader_state() else { return };
        if l.phase != LeaderPhase::EpochAck {
            return;
        }
        let counted = l
            .peers
            .values()
            .filter(|p| matches!(p.stage, Stage::EpochAcked { counted: true, .. }))
            .count();
        if 1 + counted < quorum {
            return;
        }
        l.phase = LeaderPhase::NewLeaderAck;
        l.deadline = now + init_limit;
        let epoch = l.epoch;
        let acked: Vec<(u64, u64, Vec<u64>)> = l
            .peers
            .iter()
            .filter_map(|(&id, p)| match &p.stage {
                Stage::EpochAcked {
                    last_zxid,
                    epoch_ends,
                    ..
                } => Some((id, *last_zxid, epoch_ends.clone())),
                _ => None,
            })
            .collect();
        self.durable.current_epoch = epoch;
        for (id, last_zxid, epoch_ends) in acked {
            self.send_history(id, last_zxid, &epoch_ends);
        }
        self.try_establish();
    }

    /// `syncFollower`: DIFF, TRUNC or SNAP, from where the follower's
    /// history and ours part.
    fn send_history(&mut self, to: u64, last_zxid: u64, epoch_ends: &[u64]) {
        // Within an epoch, every log holds a prefix of that epoch's
        // leader's proposals; and two logs holding one zxid agree on all
        // before it. So they agree up to the highest zxid both hold, which
        // the last zxid of each of the follower's epochs shows.
        let common = epoch_ends
            .iter()
            .filter_map(|&end| {
                let ours = self.durable.end_of_epoch(epoch_of(end))?;
                Some(end.min(ours))
            })
            .max()
            .unwrap_or(0);
        let missing = self.durable.after(common);
        let (mode, trunc_to, txns) = if missing.len() > self.config.snap_threshold {
            (SyncMode::Snap, 0, self.durable.log.clone())
        } else if common == last_zxid {
            (SyncMode::Diff, common, missing.to_vec())
        } else {
            (SyncMode::Trunc, common, missing.to_vec())
        };
        let commit = self.durable.committed;
        let Some(l) = self.leader_state() else { return };
        let epoch = l.epoch;
        let Some(peer) = l.peers.get_mut(&to) else {
            return;
        };
        peer.stage = Stage::Syncing;
        let attempt = peer.attempt;
        self.send(
            to,
            Message::Sync {
                attempt,
                epoch,
                mode,
                trunc_to,
                txns,
                commit,
            },
        );
    }

    /// A follower took our history (`ACK` of `NEWLEADER`, or any later
    /// `ACK`, which implies it) and logged up to `last_zxid`: its own
    /// word, since of several histories sent it took the first to arrive.
    fn on_synced(&mut self, from: u64, last_zxid: u64, acked_new_leader: bool) {
        let last = self.durable.last_zxid();
        let Some(l) = self.leader_state() else { return };
        let phase = l.phase;
        let epoch = l.epoch;
        let Some(peer) = l.peers.get_mut(&from) else {
            return;
        };
        match peer.stage {
            Stage::Syncing => {
                peer.stage = Stage::Synced;
                peer.acked = peer.acked.max(last_zxid.min(last));
            }
            Stage::Synced => {}
            _ => return,
        }
        let attempt = peer.attempt;
        match phase {
            LeaderPhase::NewLeaderAck => self.try_establish(),
            LeaderPhase::Broadcast if acked_new_leader => {
                // A late joiner, or our UPTODATE was lost.
                let commit = self.durable.committed;
                self.send(
                    from,
                    Message::UpToDate {
                        attempt,
                        epoch,
                        commit,
                    },
                );
            }
            _ => {}
        }
    }

    /// Once a quorum took our history, it is committed: serve.
    fn try_establish(&mut self) {
        let quorum = self.quorum();
        let last = self.durable.last_zxid();
        let Some(l) = self.leader_state() else { return };
        if l.phase != LeaderPhase::NewLeaderAck {
            return;
        }
        let synced: Vec<(u64, u64)> = l
            .peers
            .iter()
            .filter(|(_, p)| p.stage == Stage::Synced)
            .map(|(&id, p)| (id, p.attempt))
            .collect();
        if 1 + synced.len() < quorum {
            return;
        }
        l.phase = LeaderPhase::Broadcast;
        l.resend_below = last;
        let epoch = l.epoch;
        self.serving_flipped();
        self.commit_to(last);
        for (id, attempt) in synced {
            self.send(
                id,
                Message::UpToDate {
                    attempt,
                    epoch,
                    commit: last,
                },
            );
        }
    }

    fn on_ack(&mut self, from: u64, last_zxid: u64) {
        let last = self.durable.last_zxid();
        let Some(l) = self.leader_state() else { return };
        let Some(peer) = l.peers.get_mut(&from) else {
            return;
        };
        if peer.stage == Stage::Synced {
            peer.acked = peer.acked.max(last_zxid.min(last));
        }
        if l.phase == LeaderPhase::Broadcast {
            self.advance_commit();
        }
    }

    /// Commits up to the highest zxid a quorum (us included) has logged,
    /// and tells the followers.
    fn advance_commit(&mut self) {
        let quorum = self.quorum();
        let last = self.durable.last_zxid();
        let committed = self.durable.committed;
        let Some(l) = self.leader_state() else { return };
        if l.phase != LeaderPhase::Broadcast {
            return;
        }
        let mut logged: Vec<u64> = l
            .peers
            .values()
            .filter(|p| p.stage == Stage::Synced)
            .map(|p| p.acked)
            .collect();
        logged.push(last);
        logged.sort_unstable_by(|a, b| b.cmp(a));
        let Some(&candidate) = logged.get(quorum - 1) else {
            return;
        };
        if candidate <= committed {
            return;
        }
        let epoch = l.epoch;
        let synced: Vec<(u64, u64)> = l
            .peers
            .iter()
            .filter(|(_, p)| p.stage == Stage::Synced)
            .map(|(&id, p)| (id, p.attempt))
            .collect();
        self.commit_to(candidate);
        for (id, attempt) in synced {
            self.send(
                id,
                Message::Commit {
                    attempt,
                    epoch,
                    zxid: candidate,
                },
            );
        }
    }
}
