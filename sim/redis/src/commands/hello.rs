//! `HELLO [protover [AUTH user pass] [SETNAME name]]`: the handshake that
//! picks the connection's protocol (RESP2 or RESP3) and describes the
//! server, as Redis 7.0's `helloCommand`.

use super::Out;
use super::is_option;
use crate::client::Client;
use crate::handle::Role;
use crate::node::Node;
use crate::resp::{Protocol, Reply, string2ll};

/// The protocol version `HELLO` names, checked as Redis checks it.
fn version(ver: &[u8]) -> Result<Protocol, Reply> {
    match string2ll(ver) {
        None => Err(Reply::err(
            "ERR Protocol version is not an integer or out of range",
        )),
        Some(2) => Ok(Protocol::Resp2),
        Some(3) => Ok(Protocol::Resp3),
        Some(_) => Err(Reply::err("NOPROTO unsupported protocol version")),
    }
}

/// `HELLO`: checks the version, then runs the options one by one in
/// Redis's order (so a `SETNAME` before a bad option still names the
/// client), and only then switches the protocol and answers the
/// server's map.
pub(crate) fn hello(node: &Node, c: &mut Client, a: &[Vec<u8>]) -> Out {
    Out::Reply(run(node, c, a).unwrap_or_else(|e| e))
}

fn run(node: &Node, c: &mut Client, a: &[Vec<u8>]) -> Result<Reply, Reply> {
    let proto = a.get(1).map(|v| version(v)).transpose()?;
    let mut j = 2;
    while j < a.len() {
        let more = a.len() - 1 - j;
        if is_option(&a[j], "auth") && more >= 2 {
            // Only `default` exists, and it has no password: any password
            // is good for it, as for Redis's `nopass` default user.
            if a[j + 1] != b"default" {
                return Err(Reply::err(
                    "WRONGPASS invalid username-password pair or user is disabled.",
                ));
            }
            j += 3;
        } else if is_option(&a[j], "setname") && more >= 1 {
            c.set_name(&a[j + 1])?;
            j += 2;
        } else {
            return Err(Reply::err(format!(
                "ERR Syntax error in HELLO option '{}'",
                String::from_utf8_lossy(&a[j])
            )));
        }
    }
    if let Some(proto) = proto {
        c.proto = proto;
    }
    let role = match node.state.borrow().role {
        Role::Master => "master",
        Role::Replica(_) => "replica",
    };
    let proto = match c.proto {
        Protocol::Resp2 => 2,
        Protocol::Resp3 => 3,
    };
    let bulk = |s: &str| Reply::Bulk(s.as_bytes().to_vec());
    Ok(Reply::Map(vec![
        (bulk("server"), bulk("redis")),
        (bulk("version"), bulk("7.0.15")),
        (bulk("proto"), Reply::Int(proto)),
        (bulk("id"), Reply::Int(c.id as i64)),
        (bulk("mode"), bulk("standalone")),
        (bulk("role"), bulk(role)),
        (bulk("modules"), Reply::Array(Vec::new())),
    ]))
}
