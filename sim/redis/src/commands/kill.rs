//! `CLIENT KILL`, as Redis 7.0's `clientKillCommand` parses and runs it:
//! the filters `ID`, `TYPE`, `USER` and `SKIPME` (`ADDR`, `LADDR` and the
//! old `CLIENT KILL ip:port` form need client addresses, which a node
//! behind the real-TCP front or on the simulated network does not keep:
//! they are refused with an error that says so, never matched against
//! nothing).
//!
//! A killed client's connection ends at once, its unwritten replies
//! dropped ([`crate::client::KillSwitch`]); a client that kills itself
//! (`SKIPME no`) gets the reply first, then the connection closes.

use super::errors::syntax_error;
use super::{Out, is_option};
use crate::client::Client;
use crate::node::Node;
use crate::resp::{Reply, string2ll};

/// Which clients a `CLIENT KILL` ends.
#[derive(Debug, Default, PartialEq)]
struct Filter {
    /// `ID`: only this client.
    id: Option<u64>,
    /// `TYPE`: only clients of this kind.
    kind: Option<Kind>,
    /// `SKIPME` (default yes): spare the caller.
    skip_me: bool,
}

/// A client's kind, as `TYPE` names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// A client not subscribed to any channel.
    Normal,
    /// A client in subscribed mode.
    PubSub,
    /// A replica's link, or the link to this node's master: the node
    /// serves those outside the client list, so no client is of these.
    Replication,
}

/// The error for the filters that need a client's address.
fn no_addresses() -> Reply {
    Reply::err(
        "ERR the simulated node keeps no client addresses: use CLIENT KILL ID, TYPE, USER or SKIPME",
    )
}

/// Parses `CLIENT KILL`'s arguments (`a[0]` is `CLIENT`, `a[1]` `KILL`).
fn parse(a: &[Vec<u8>]) -> Result<Filter, Reply> {
    if a.len() == 3 {
        // The old form, `CLIENT KILL ip:port`.
        return Err(no_addresses());
    }
    let mut filter = Filter {
        skip_me: true,
        ..Filter::default()
    };
    for pair in a[2..].chunks(2) {
        let [name, value] = pair else {
            return Err(syntax_error());
        };
        if is_option(name, "id") {
            // Redis's `getRangeLongFromObjectOrReply` with this message,
            // for a value that is no integer as for one out of range.
            match string2ll(value) {
                Some(id) if id >= 1 => filter.id = Some(id as u64),
                _ => return Err(Reply::err("ERR client-id should be greater than 0")),
            }
        } else if is_option(name, "type") {
            filter.kind = Some(kind(value)?);
        } else if is_option(name, "user") {
            // The node has only Redis's `default` user, whom every client
            // is.
            if value.as_slice() != b"default" {
                return Err(Reply::err(format!(
                    "ERR No such user '{}'",
                    String::from_utf8_lossy(value)
                )));
            }
        } else if is_option(name, "skipme") {
            filter.skip_me = if is_option(value, "yes") {
                true
            } else if is_option(value, "no") {
                false
            } else {
                return Err(syntax_error());
            };
        } else if is_option(name, "addr") || is_option(name, "laddr") {
            return Err(no_addresses());
        } else {
            return Err(syntax_error());
        }
    }
    Ok(filter)
}

/// `TYPE`'s value, as Redis's `getClientTypeByName`.
fn kind(value: &[u8]) -> Result<Kind, Reply> {
    if is_option(value, "normal") {
        Ok(Kind::Normal)
    } else if is_option(value, "pubsub") {
        Ok(Kind::PubSub)
    } else if ["slave", "replica", "master"]
        .iter()
        .any(|k| is_option(value, k))
    {
        Ok(Kind::Replication)
    } else {
        Err(Reply::err(format!(
            "ERR Unknown client type '{}'",
            String::from_utf8_lossy(value)
        )))
    }
}

/// `CLIENT KILL <filter> <value> ...`: the number of clients ended.
pub(crate) fn client_kill(node: &Node, c: &Client, a: &[Vec<u8>]) -> Out {
    let filter = match parse(a) {
        Ok(f) => f,
        Err(e) => return Out::Reply(e),
    };
    let mut st = node.state.borrow_mut();
    let victims: Vec<u64> = st
        .connected
        .keys()
        .copied()
        .filter(|&id| filter.id.is_none_or(|want| want == id))
        .filter(|&id| !(filter.skip_me && id == c.id))
        .filter(|&id| {
            filter.kind.is_none_or(|kind| {
                let subscribed = if id == c.id {
                    c.is_subscribed()
                } else {
                    st.channels.has_subscriber(id)
                };
                match kind {
                    Kind::Normal => !subscribed,
                    Kind::PubSub => subscribed,
                    Kind::Replication => false,
                }
            })
        })
        .collect();
    let mut close_me = false;
    for id in &victims {
        if *id == c.id {
            close_me = true;
        } else if let Some(switch) = st.connected.remove(id) {
            switch.throw();
        }
    }
    let reply = Reply::Int(victims.len() as i64);
    if close_me {
        Out::Quit(reply)
    } else {
        Out::Reply(reply)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(words: &[&str]) -> Vec<Vec<u8>> {
        words.iter().map(|w| w.as_bytes().to_vec()).collect()
    }

    fn err(r: Result<Filter, Reply>) -> String {
        match r {
            Err(Reply::Error(e)) => e,
            other => panic!("expected an error, got {other:?}"),
        }
    }

    #[test]
    fn the_filters_parse_as_redis_parses_them() {
        let f = parse(&args(&["client", "kill", "id", "7", "skipme", "NO"])).unwrap();
        assert_eq!(
            f,
            Filter {
                id: Some(7),
                kind: None,
                skip_me: false
            }
        );
        let f = parse(&args(&[
            "client", "kill", "type", "pubsub", "user", "default",
        ]))
        .unwrap();
        assert_eq!(f.kind, Some(Kind::PubSub));
        assert!(f.skip_me);
    }

    #[test]
    fn bad_filters_get_redis_7_0_errors() {
        let cases = [
            (
                &["client", "kill", "id", "0"][..],
                "ERR client-id should be greater than 0",
            ),
            (
                &["client", "kill", "id", "x"],
                "ERR client-id should be greater than 0",
            ),
            (
                &["client", "kill", "type", "x"],
                "ERR Unknown client type 'x'",
            ),
            (&["client", "kill", "user", "bob"], "ERR No such user 'bob'"),
            (&["client", "kill", "skipme", "maybe"], "ERR syntax error"),
            (&["client", "kill", "id", "1", "skipme"], "ERR syntax error"),
            (&["client", "kill", "nope", "1"], "ERR syntax error"),
        ];
        for (words, want) in cases {
            assert_eq!(err(parse(&args(words))), want, "{words:?}");
        }
    }

    #[test]
    fn the_filters_that_need_addresses_are_refused_not_matched_against_nothing() {
        for words in [
            &["client", "kill", "127.0.0.1:5000"][..],
            &["client", "kill", "addr", "127.0.0.1:5000"],
            &["client", "kill", "laddr", "127.0.0.1:6379"],
        ] {
            assert!(
                err(parse(&args(words))).contains("no client addresses"),
                "{words:?}"
            );
        }
    }
}
