//! Pub/sub: `SUBSCRIBE`, `UNSUBSCRIBE`, `PUBLISH`, and the channels that
//! connect them.
//!
//! A subscribing client registers its push sender under each channel
//! ([`Channels`]); `PUBLISH` sends the message to every sender registered
//! under its channel, and each connection writes what it is pushed between
//! requests. A client with at least one subscription is in subscribed mode,
//! where the command table allows only a few commands (and `PING` answers
//! differently, see [`ping`]). Pattern and sharded channels are not
//! modelled.

use std::collections::BTreeMap;

use tokio::sync::mpsc;

use super::Out;
use crate::client::Client;
use crate::node::Node;
use crate::resp::Reply;

/// The node's channels: for each, the subscribed clients' push senders by
/// client id.
#[derive(Default)]
pub(crate) struct Channels(BTreeMap<Vec<u8>, BTreeMap<u64, mpsc::UnboundedSender<Reply>>>);

impl Channels {
    /// Registers `client` under `channel`.
    fn subscribe(&mut self, channel: &[u8], client: &Client) {
        self.0
            .entry(channel.to_vec())
            .or_default()
            .insert(client.id, client.push.clone());
    }

    /// Removes client `id` from `channel`; a channel without subscribers
    /// goes away.
    pub(crate) fn unsubscribe(&mut self, channel: &[u8], id: u64) {
        if let Some(subs) = self.0.get_mut(channel) {
            subs.remove(&id);
            if subs.is_empty() {
                self.0.remove(channel);
            }
        }
    }

    /// Whether client `id` is subscribed to any channel.
    pub(crate) fn has_subscriber(&self, id: u64) -> bool {
        self.0.values().any(|subs| subs.contains_key(&id))
    }

    /// Pushes `msg` to `channel`'s subscribers; returns how many got it.
    fn publish(&self, channel: &[u8], msg: &Reply) -> usize {
        self.0.get(channel).map_or(0, |subs| {
            subs.values()
                .filter(|tx| tx.send(msg.clone()).is_ok())
                .count()
        })
    }
}

/// A pub/sub confirmation or message: `[kind, channel, n]`, a push (an
/// array in RESP2).
fn notice(kind: &[u8], channel: Reply, n: Reply) -> Reply {
    Reply::Push(vec![Reply::Bulk(kind.to_vec()), channel, n])
}

/// `PUBLISH channel message`: the number of clients that received it.
pub(crate) fn publish(node: &Node, a: &[Vec<u8>]) -> Reply {
    let msg = notice(
        b"message",
        Reply::Bulk(a[1].clone()),
        Reply::Bulk(a[2].clone()),
    );
    let n = node.state.borrow().channels.publish(&a[1], &msg);
    Reply::Int(n as i64)
}

/// `SUBSCRIBE channel...`: one confirmation per channel, with the client's
/// subscription count.
pub(crate) fn subscribe(node: &Node, c: &mut Client, a: &[Vec<u8>]) -> Out {
    let mut out = Vec::new();
    let mut st = node.state.borrow_mut();
    for ch in &a[1..] {
        if c.subscriptions.insert(ch.clone()) {
            st.channels.subscribe(ch, c);
        }
        out.push(notice(
            b"subscribe",
            Reply::Bulk(ch.clone()),
            Reply::Int(c.subscriptions.len() as i64),
        ));
    }
    Out::Replies(out)
}

/// `UNSUBSCRIBE [channel...]`: without channels, from all of them.
pub(crate) fn unsubscribe(node: &Node, c: &mut Client, a: &[Vec<u8>]) -> Out {
    let chans: Vec<Vec<u8>> = if a.len() > 1 {
        a[1..].to_vec()
    } else {
        c.subscriptions.iter().cloned().collect()
    };
    if chans.is_empty() {
        return Out::Reply(notice(b"unsubscribe", Reply::Nil, Reply::Int(0)));
    }
    let mut out = Vec::new();
    let mut st = node.state.borrow_mut();
    for ch in chans {
        c.subscriptions.remove(&ch);
        st.channels.unsubscribe(&ch, c.id);
        out.push(notice(
            b"unsubscribe",
            Reply::Bulk(ch),
            Reply::Int(c.subscriptions.len() as i64),
        ));
    }
    Out::Replies(out)
}

/// `PING [message]` in subscribed mode: `["pong", message]` (empty if none).
pub(crate) fn ping(a: &[Vec<u8>]) -> Reply {
    let msg = a.get(1).cloned().unwrap_or_default();
    Reply::Array(vec![Reply::Bulk(b"pong".to_vec()), Reply::Bulk(msg)])
}
