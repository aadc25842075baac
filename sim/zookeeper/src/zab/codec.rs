//! Messages to bytes and back: a kind byte, then each field in order,
//! integers big-endian, byte strings and lists behind a `u32` length.
//!
//! Decoding checks every length against the bytes left before it
//! allocates, so hostile bytes give a [`DecodeError`], never a panic or a
//! huge allocation.

use std::fmt;

use super::message::{Message, Notification, PeerState, SyncMode, Txn, Vote};

/// Why bytes are not a message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DecodeError {
    /// No bytes at all.
    Empty,
    /// The first byte names no kind of message.
    UnknownKind(u8),
    /// The bytes end inside a field.
    Truncated,
    /// A field holds a value it cannot have.
    BadValue(&'static str),
    /// Bytes are left over after the message.
    TrailingBytes(usize),
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DecodeError::Empty => write!(f, "empty ZAB message"),
            DecodeError::UnknownKind(kind) => write!(f, "unknown ZAB message kind {kind}"),
            DecodeError::Truncated => write!(f, "ZAB message cut short"),
            DecodeError::BadValue(what) => write!(f, "bad {what} in ZAB message"),
            DecodeError::TrailingBytes(n) => write!(f, "{n} bytes after the ZAB message"),
        }
    }
}

impl std::error::Error for DecodeError {}

const NOTIFICATION: u8 = 0;
const FOLLOWER_INFO: u8 = 1;
const LEADER_INFO: u8 = 2;
const ACK_EPOCH: u8 = 3;
const SYNC: u8 = 4;
const ACK_NEW_LEADER: u8 = 5;
const UP_TO_DATE: u8 = 6;
const PROPOSE: u8 = 7;
const ACK: u8 = 8;
const COMMIT: u8 = 9;
const PING: u8 = 10;
const SYNC_REQUEST: u8 = 11;
const SYNC_REPLY: u8 = 12;

struct Writer(Vec<u8>);

impl Writer {
    fn u8(&mut self, v: u8) -> &mut Self {
        self.0.push(v);
        self
    }
    fn u64(&mut self, v: u64) -> &mut Self {
        self.0.extend_from_slice(&v.to_be_bytes());
        self
    }
    fn len(&mut self, n: usize) -> &mut Self {
        // Lengths beyond u32 cannot be decoded; messages never come near.
        self.0.extend_from_slice(&(n as u32).to_be_bytes());
        self
    }
    fn txn(&mut self, txn: &Txn) -> &mut Self {
        self.u64(txn.zxid).len(txn.data.len());
        self.0.extend_from_slice(&txn.data);
        self
    }
}

struct Reader<'a>(&'a [u8]);

impl Reader<'_> {
    fn take(&mut self, n: usize) -> Result<&[u8], DecodeError> {
        if self.0.len() < n {
            return Err(DecodeError::Truncated);
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Ok(head)
    }
    fn u8(&mut self) -> Result<u8, DecodeError> {
        Ok(self.take(1)?[0])
    }
    fn u64(&mut self) -> Result<u64, DecodeError> {
        let mut bytes = [0; 8];
        bytes.copy_from_slice(self.take(8)?);
        Ok(u64::from_be_bytes(bytes))
    }
    /// A count of items at least `min_size` bytes each, checked against
    /// what is left.
    fn len(&mut self, min_size: usize) -> Result<usize, DecodeError> {
        let mut bytes = [0; 4];
        bytes.copy_from_slice(self.take(4)?);
        let n = u32::from_be_bytes(bytes) as usize;
        if n.saturating_mul(min_size) > self.0.len() {
            return Err(DecodeError::Truncated);
        }
        Ok(n)
    }
    fn txn(&mut self) -> Result<Txn, DecodeError> {
        let zxid = self.u64()?;
        let n = self.len(1)?;
        let data = self.take(n)?.to_vec();
        Ok(Txn { zxid, data })
    }
}

fn state_byte(state: PeerState) -> u8 {
    match state {
        PeerState::Looking => 0,
        PeerState::Following => 1,
        PeerState::Leading => 2,
    }
}

fn mode_byte(mode: SyncMode) -> u8 {
    match mode {
        SyncMode::Diff => 0,
        SyncMode::Trunc => 1,
        SyncMode::Snap => 2,
    }
}

impl Message {
    /// The message as bytes, for a datagram or a frame.
    pub fn encode(&self) -> Vec<u8> {
        let mut w = Writer(Vec::with_capacity(64));
        match self {
            Message::Notification(n) => {
                w.u8(NOTIFICATION)
                    .u64(n.vote.leader)
                    .u64(n.vote.zxid)
                    .u64(n.vote.peer_epoch)
                    .u64(n.election_epoch)
                    .u8(state_byte(n.state));
            }
            Message::FollowerInfo {
                attempt,
                accepted_epoch,
                last_zxid,
            } => {
                w.u8(FOLLOWER_INFO)
                    .u64(*attempt)
                    .u64(*accepted_epoch)
                    .u64(*last_zxid);
            }
            Message::LeaderInfo { attempt, epoch } => {
                w.u8(LEADER_INFO).u64(*attempt).u64(*epoch);
            }
            Message::AckEpoch {
                attempt,
                epoch,
                current_epoch,
                last_zxid,
                epoch_ends,
            } => {
                w.u8(ACK_EPOCH).u64(*attempt).u64(*epoch);
                match current_epoch {
                    Some(current) => w.u8(1).u64(*current),
                    None => w.u8(0),
                };
                w.u64(*last_zxid).len(epoch_ends.len());
                for end in epoch_ends {
                    w.u64(*end);
                }
            }
            Message::Sync {
                attempt,
                epoch,
                mode,
                trunc_to,
                txns,
                commit,
            } => {
                w.u8(SYNC)
                    .u64(*attempt)
                    .u64(*epoch)
                    .u8(mode_byte(*mode))
                    .u64(*trunc_to)
                    .len(txns.len());
                for txn in txns {
                    w.txn(txn);
                }
                w.u64(*commit);
            }
            Message::AckNewLeader {
                attempt,
                epoch,
                last_zxid,
            } => {
                w.u8(ACK_NEW_LEADER)
                    .u64(*attempt)
                    .u64(*epoch)
                    .u64(*last_zxid);
            }
            Message::UpToDate {
                attempt,
                epoch,
                commit,
            } => {
                w.u8(UP_TO_DATE).u64(*attempt).u64(*epoch).u64(*commit);
            }
            Message::Propose {
                attempt,
                epoch,
                prev,
                txn,
                commit,
            } => {
                w.u8(PROPOSE)
                    .u64(*attempt)
                    .u64(*epoch)
                    .u64(*prev)
                    .txn(txn)
                    .u64(*commit);
            }
            Message::Ack {
                attempt,
                epoch,
                last_zxid,
            } => {
                w.u8(ACK).u64(*attempt).u64(*epoch).u64(*last_zxid);
            }
            Message::Commit {
                attempt,
                epoch,
                zxid,
            } => {
                w.u8(COMMIT).u64(*attempt).u64(*epoch).u64(*zxid);
            }
            Message::Ping {
                attempt,
                epoch,
                commit,
            } => {
                w.u8(PING).u64(*attempt).u64(*epoch).u64(*commit);
            }
            Message::SyncRequest { attempt, epoch, id } => {
                w.u8(SYNC_REQUEST).u64(*attempt).u64(*epoch).u64(*id);
            }
            Message::SyncReply {
                attempt,
                epoch,
                id,
                zxid,
            } => {
                w.u8(SYNC_REPLY)
                    .u64(*attempt)
                    .u64(*epoch)
                    .u64(*id)
                    .u64(*zxid);
            }
        }
        w.0
    }

    /// Reads a message back from [`Message::encode`]'s bytes.
    pub fn decode(bytes: &[u8]) -> Result<Message, DecodeError> {
        let (&kind, rest) = bytes.split_first().ok_or(DecodeError::Empty)?;
        let mut r = Reader(rest);
        let message = match kind {
            NOTIFICATION => {
                let vote = Vote {
                    leader: r.u64()?,
                    zxid: r.u64()?,
                    peer_epoch: r.u64()?,
                };
                let election_epoch = r.u64()?;
                let state = match r.u8()? {
                    0 => PeerState::Looking,
                    1 => PeerState::Following,
                    2 => PeerState::Leading,
                    _ => return Err(DecodeError::BadValue("peer state")),
                };
                Message::Notification(Notification {
                    vote,
                    election_epoch,
                    state,
                })
            }
            FOLLOWER_INFO => Message::FollowerInfo {
                attempt: r.u64()?,
                accepted_epoch: r.u64()?,
                last_zxid: r.u64()?,
            },
            LEADER_INFO => Message::LeaderInfo {
                attempt: r.u64()?,
                epoch: r.u64()?,
            },
            ACK_EPOCH => {
                let attempt = r.u64()?;
                let epoch = r.u64()?;
                let current_epoch = match r.u8()? {
                    0 => None,
                    1 => Some(r.u64()?),
                    _ => return Err(DecodeError::BadValue("current epoch flag")),
                };
                let last_zxid = r.u64()?;
                let n = r.len(8)?;
                let epoch_ends = (0..n).map(|_| r.u64()).collect::<Result<_, _>>()?;
                Message::AckEpoch {
                    attempt,
                    epoch,
                    current_epoch,
                    last_zxid,
                    epoch_ends,
                }
            }
            SYNC => {
                let attempt = r.u64()?;
                let epoch = r.u64()?;
                let mode = match r.u8()? {
                    0 => SyncMode::Diff,
                    1 => SyncMode::Trunc,
                    2 => SyncMode::Snap,
                    _ => return Err(DecodeError::BadValue("sync mode")),
                };
                let trunc_to = r.u64()?;
                // A transaction is at least a zxid and a length.
                let n = r.len(12)?;
                let txns = (0..n).map(|_| r.txn()).collect::<Result<_, _>>()?;
                let commit = r.u64()?;
                Message::Sync {
                    attempt,
                    epoch,
                    mode,
                    trunc_to,
                    txns,
                    commit,
                }
            }
            ACK_NEW_LEADER => Message::AckNewLeader {
                attempt: r.u64()?,
                epoch: r.u64()?,
                last_zxid: r.u64()?,
            },
            UP_TO_DATE => Message::UpToDate {
                attempt: r.u64()?,
                epoch: r.u64()?,
                commit: r.u64()?,
            },
            PROPOSE => Message::Propose {
                attempt: r.u64()?,
                epoch: r.u64()?,
                prev: r.u64()?,
                txn: r.txn()?,
                commit: r.u64()?,
            },
            ACK => Message::Ack {
                attempt: r.u64()?,
                epoch: r.u64()?,
                last_zxid: r.u64()?,
            },
            COMMIT => Message::Commit {
                attempt: r.u64()?,
                epoch: r.u64()?,
                zxid: r.u64()?,
            },
            PING => Message::Ping {
                attempt: r.u64()?,
                epoch: r.u64()?,
                commit: r.u64()?,
            },
            SYNC_REQUEST => Message::SyncRequest {
                attempt: r.u64()?,
                epoch: r.u64()?,
                id: r.u64()?,
            },
            SYNC_REPLY => Message::SyncReply {
                attempt: r.u64()?,
                epoch: r.u64()?,
                id: r.u64()?,
                zxid: r.u64()?,
            },
            other => return Err(DecodeError::UnknownKind(other)),
        };
        if !r.0.is_empty() {
            return Err(DecodeError::TrailingBytes(r.0.len()));
        }
        Ok(message)
    }
}
