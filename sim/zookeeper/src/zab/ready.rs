//! What a server hands its driver after some calls.

use super::message::Message;
use super::node::Role;

/// Everything produced since the last call to
/// [`Zab::ready`](super::Zab::ready).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Ready {
    /// Messages to send, in order, as `(to, message)`. Any may be lost,
    /// duplicated or reordered without harm.
    pub messages: Vec<(u64, Message)>,
    /// Newly committed transactions as `(zxid, data)`, to apply in order;
    /// each is handed out once, across restarts too.
    pub committed: Vec<(u64, Vec<u8>)>,
    /// The role now, when it changed (even if it came back to the same
    /// one): a server that stopped leading or lost its leader drops its
    /// clients.
    pub role_changed: Option<Role>,
    /// Whether the server now serves clients, when that changed: a
    /// follower from its leader's `UPTODATE`, a leader once a quorum took
    /// its history.
    pub serving_changed: Option<bool>,
    /// Syncs (by the id given to [`Zab::sync`](super::Zab::sync)) that are
    /// done once `committed` is applied.
    pub synced: Vec<u64>,
}
