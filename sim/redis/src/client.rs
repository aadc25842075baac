//! One connected client, as its commands see it.
//!
//! A client is born with its connection and dies with it. Besides its id
//! and name (`CLIENT ID`, `CLIENT SETNAME`), it carries the channels it
//! subscribed to, the sender through which those channels push messages to
//! its connection, and the replication offset `WAIT` waits for.

use std::collections::BTreeSet;

use tokio::sync::mpsc;

use crate::resp::Reply;

/// One connected client's state.
pub(crate) struct Client {
    /// Its `CLIENT ID`, unique on the node.
    pub(crate) id: u64,
    /// Its `CLIENT SETNAME` name, if any.
    pub(crate) name: Option<Vec<u8>>,
    /// The channels it subscribed to.
    pub(crate) subscriptions: BTreeSet<Vec<u8>>,
    /// Where published messages for it go (its connection writes them).
    pub(crate) push: mpsc::UnboundedSender<Reply>,
    /// The replication offset after its last keyspace command or script:
    /// what `WAIT` waits for replicas to acknowledge.
    pub(crate) woff: u64,
}

impl Client {
    /// A client with id `id` whose pushed messages go to `push`.
    pub(crate) fn new(id: u64, push: mpsc::UnboundedSender<Reply>) -> Client {
        Client {
            id,
            name: None,
            subscriptions: BTreeSet::new(),
            push,
            woff: 0,
        }
    }

    /// Whether the client is in subscribed mode (subscribed to a channel),
    /// where only a few commands are allowed.
    pub(crate) fn is_subscribed(&self) -> bool {
        !self.subscriptions.is_empty()
    }
}
