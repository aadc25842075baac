//! Pub/sub: `SUBSCRIBE`, `UNSUBSCRIBE`, `PSUBSCRIBE`, `PUNSUBSCRIBE`,
//! `PUBLISH`, `PUBSUB`, and the channels and patterns that connect them.
//!
//! A subscribing client registers its push sender under each channel
//! ([`Channels`]); `PUBLISH` sends the message to every sender registered
//! under its channel, and each connection writes what it is pushed between
//! requests. A client with at least one subscription is in subscribed mode,
//! where the command table allows only a few commands (and `PING` answers
//! differently, see [`ping`]). A pattern subscriber gets a `pmessage` for
//! each message on a channel its glob matches. Sharded channels are not
//! modelled (`PUBSUB SHARDCHANNELS` and `SHARDNUMSUB` find none).

use std::collections::BTreeMap;

use tokio::sync::mpsc;

use super::Arity::{AtLeast, Exactly};
use super::{Out, Subcommand, is_option};
use crate::client::Client;
use crate::glob;
use crate::node::Node;
use crate::resp::Reply;

/// Subscribers by channel (or pattern): their push senders by client id.
type Subscribers = BTreeMap<Vec<u8>, BTreeMap<u64, mpsc::UnboundedSender<Reply>>>;

/// The node's channels and patterns, with their subscribers.
#[derive(Default)]
pub(crate) struct Channels {
    /// Clients subscribed to each channel.
    channels: Subscribers,
    /// Clients subscribed to each pattern.
    patterns: Subscribers,
}

impl Channels {
    /// Registers `client` under `channel`.
    fn subscribe(&mut self, channel: &[u8], client: &Client) {
        self.channels
            .entry(channel.to_vec())
            .or_default()
            .insert(client.id, client.push.clone());
    }

    /// Removes client `id` from `channel`; a channel without subscribers
    /// goes away.
    pub(crate) fn unsubscribe(&mut self, channel: &[u8], id: u64) {
        remove(&mut self.channels, channel, id);
    }

    /// Registers `client` under `pattern`.
    fn psubscribe(&mut self, pattern: &[u8], client: &Client) {
        self.patterns
            .entry(pattern.to_vec())
            .or_default()
            .insert(client.id, client.push.clone());
    }

    /// Removes client `id` from `pattern`.
    pub(crate) fn punsubscribe(&mut self, pattern: &[u8], id: u64) {
        remove(&mut self.patterns, pattern, id);
    }

    /// Channels with at least one subscriber (`pubsub_channels`).
    pub(crate) fn channel_count(&self) -> usize {
        self.channels.len()
    }

    /// Patterns with at least one subscriber (`pubsub_patterns`).
    pub(crate) fn pattern_count(&self) -> usize {
        self.patterns.len()
    }

    /// Whether client `id` is subscribed to any channel or pattern.
    pub(crate) fn has_subscriber(&self, id: u64) -> bool {
        self.channels
            .values()
            .chain(self.patterns.values())
            .any(|subs| subs.contains_key(&id))
    }

    /// How many messages a publish on `channel` sends client `id` (one for
    /// the channel, one per matching pattern it follows).
    pub(crate) fn reaches(&self, channel: &[u8], id: u64) -> usize {
        let direct = self
            .channels
            .get(channel)
            .is_some_and(|subs| subs.contains_key(&id));
        let patterns = self
            .patterns
            .iter()
            .filter(|(p, subs)| subs.contains_key(&id) && glob::matches(p, channel))
            .count();
        usize::from(direct) + patterns
    }

    /// Pushes `message` to `channel`'s subscribers, then as a `pmessage`
    /// to the subscribers of every pattern that matches it; returns how
    /// many messages went out (a client can get several).
    pub(crate) fn publish(&self, channel: &[u8], message: &[u8]) -> usize {
        let direct = notice(
            b"message",
            Reply::Bulk(channel.to_vec()),
            Reply::Bulk(message.to_vec()),
        );
        let mut sent = self.channels.get(channel).map_or(0, |subs| {
            subs.values()
                .filter(|tx| tx.send(direct.clone()).is_ok())
                .count()
        });
        for (pattern, subs) in &self.patterns {
            if !glob::matches(pattern, channel) {
                continue;
            }
            let msg = Reply::Push(vec![
                Reply::Bulk(b"pmessage".to_vec()),
                Reply::Bulk(pattern.clone()),
                Reply::Bulk(channel.to_vec()),
                Reply::Bulk(message.to_vec()),
            ]);
            sent += subs
                .values()
                .filter(|tx| tx.send(msg.clone()).is_ok())
                .count();
        }
        sent
    }
}

/// Removes client `id` from `name`'s subscribers; a channel or pattern
/// without subscribers goes away.
fn remove(subscribers: &mut Subscribers, name: &[u8], id: u64) {
    if let Some(subs) = subscribers.get_mut(name) {
        subs.remove(&id);
        if subs.is_empty() {
            subscribers.remove(name);
        }
    }
}

/// A pub/sub confirmation or message: `[kind, channel, n]`, a push (an
/// array in RESP2).
fn notice(kind: &[u8], channel: Reply, n: Reply) -> Reply {
    Reply::Push(vec![Reply::Bulk(kind.to_vec()), channel, n])
}

/// `PUBLISH channel message`: the number of clients that received it.
pub(crate) fn publish(node: &Node, a: &[Vec<u8>]) -> Reply {
    let n = node.state.borrow().channels.publish(&a[1], &a[2]);
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
            Reply::Int(c.subscription_count() as i64),
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
        return Out::Reply(notice(
            b"unsubscribe",
            Reply::Nil,
            Reply::Int(c.subscription_count() as i64),
        ));
    }
    let mut out = Vec::new();
    let mut st = node.state.borrow_mut();
    for ch in chans {
        c.subscriptions.remove(&ch);
        st.channels.unsubscribe(&ch, c.id);
        out.push(notice(
            b"unsubscribe",
            Reply::Bulk(ch),
            Reply::Int(c.subscription_count() as i64),
        ));
    }
    Out::Replies(out)
}

/// `PSUBSCRIBE pattern...`: one confirmation per pattern, with the
/// client's subscription count (channels and patterns).
pub(crate) fn psubscribe(node: &Node, c: &mut Client, a: &[Vec<u8>]) -> Out {
    let mut out = Vec::new();
    let mut st = node.state.borrow_mut();
    for pattern in &a[1..] {
        if c.patterns.insert(pattern.clone()) {
            st.channels.psubscribe(pattern, c);
        }
        out.push(notice(
            b"psubscribe",
            Reply::Bulk(pattern.clone()),
            Reply::Int(c.subscription_count() as i64),
        ));
    }
    Out::Replies(out)
}

/// `PUNSUBSCRIBE [pattern...]`: without patterns, from all of them.
pub(crate) fn punsubscribe(node: &Node, c: &mut Client, a: &[Vec<u8>]) -> Out {
    let patterns: Vec<Vec<u8>> = if a.len() > 1 {
        a[1..].to_vec()
    } else {
        c.patterns.iter().cloned().collect()
    };
    if patterns.is_empty() {
        return Out::Reply(notice(
            b"punsubscribe",
            Reply::Nil,
            Reply::Int(c.subscription_count() as i64),
        ));
    }
    let mut out = Vec::new();
    let mut st = node.state.borrow_mut();
    for pattern in patterns {
        c.patterns.remove(&pattern);
        st.channels.punsubscribe(&pattern, c.id);
        out.push(notice(
            b"punsubscribe",
            Reply::Bulk(pattern),
            Reply::Int(c.subscription_count() as i64),
        ));
    }
    Out::Replies(out)
}

/// `PUBSUB`'s subcommands (the command table checks their arities).
pub(crate) const PUBSUB: &[Subcommand] = &[
    Subcommand {
        name: "pubsub|channels",
        arity: AtLeast(2),
    },
    Subcommand {
        name: "pubsub|numpat",
        arity: Exactly(2),
    },
    Subcommand {
        name: "pubsub|numsub",
        arity: AtLeast(2),
    },
    Subcommand {
        name: "pubsub|shardchannels",
        arity: AtLeast(2),
    },
    Subcommand {
        name: "pubsub|shardnumsub",
        arity: AtLeast(2),
    },
];

/// `PUBSUB CHANNELS [pattern] | NUMSUB [channel...] | NUMPAT |
/// SHARDCHANNELS [pattern] | SHARDNUMSUB [channel...]`.
pub(crate) fn pubsub(node: &Node, a: &[Vec<u8>]) -> Reply {
    let st = node.state.borrow();
    let ch = &st.channels;
    let sub = &a[1];
    if is_option(sub, "channels") {
        let pattern = a.get(2);
        Reply::Array(
            ch.channels
                .keys()
                .filter(|c| pattern.is_none_or(|p| glob::matches(p, c)))
                .map(|c| Reply::Bulk(c.clone()))
                .collect(),
        )
    } else if is_option(sub, "numpat") {
        Reply::Int(ch.patterns.len() as i64)
    } else if is_option(sub, "numsub") || is_option(sub, "shardnumsub") {
        let sharded = is_option(sub, "shardnumsub");
        let mut out = Vec::new();
        for name in &a[2..] {
            let n = if sharded {
                0
            } else {
                ch.channels.get(name).map_or(0, BTreeMap::len)
            };
            out.push(Reply::Bulk(name.clone()));
            out.push(Reply::Int(n as i64));
        }
        Reply::Array(out)
    } else {
        // `shardchannels`: no sharded channel exists.
        Reply::Array(Vec::new())
    }
}

/// `PING [message]` in subscribed mode: `["pong", message]` (empty if none).
pub(crate) fn ping(a: &[Vec<u8>]) -> Reply {
    let msg = a.get(1).cloned().unwrap_or_default();
    Reply::Array(vec![Reply::Bulk(b"pong".to_vec()), Reply::Bulk(msg)])
}
