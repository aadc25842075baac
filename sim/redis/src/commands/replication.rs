//! The replication commands: `ROLE`, `WAIT`, `REPLICAOF` / `SLAVEOF`, and
//! `PSYNC`, with which a replica's link turns its connection into a
//! replication stream.
//!
//! The link itself (snapshot, batches, acknowledgements) is
//! [`crate::replication`]; these commands only read or switch the node's
//! role and tell the connection what to do next.

use std::time::Duration;

use super::errors::{int_arg, timeout_arg};
use super::{Out, is_option};
use crate::client::Client;
use crate::handle::{MasterAddr, Role};
use crate::node::Node;
use crate::resp::{Reply, string2ll};

/// `ROLE`: master with its offset and replicas, or replica with its master
/// and link state.
pub(crate) fn role(node: &Node, _: &[Vec<u8>]) -> Reply {
    let st = node.state.borrow();
    let bulk = |s: &str| Reply::Bulk(s.as_bytes().to_vec());
    match &st.role {
        Role::Master => Reply::Array(vec![
            bulk("master"),
            Reply::Int(st.offset as i64),
            Reply::Array(
                st.replicas
                    .values()
                    .map(|l| {
                        Reply::Array(vec![bulk(&l.addr), bulk("6379"), bulk(&l.ack.to_string())])
                    })
                    .collect(),
            ),
        ]),
        Role::Replica(m) => Reply::Array(vec![
            bulk("slave"),
            bulk(&m.host),
            Reply::Int(i64::from(m.port)),
            bulk(if st.link_up { "connected" } else { "connect" }),
            Reply::Int(st.offset as i64),
        ]),
    }
}

/// `WAIT numreplicas timeout`: answers at once if enough replicas already
/// acknowledged the client's last write, else the connection blocks.
pub(crate) fn wait(node: &Node, c: &mut Client, a: &[Vec<u8>]) -> Out {
    if node.state.borrow().role != Role::Master {
        return Out::Reply(Reply::err(
            "ERR WAIT cannot be used with replica instances. Please also note that since Redis 4.0 if a replica is configured to be writable (which is not the default) writes to replicas are just local and are not propagated.",
        ));
    }
    let parsed = int_arg(&a[1]).and_then(|n| Ok((n, timeout_arg(&a[2])?)));
    let (numreplicas, timeout_ms) = match parsed {
        Ok(p) => p,
        Err(e) => return Out::Reply(e),
    };
    let acked = node.acked(c.woff);
    if acked >= numreplicas {
        return Out::Reply(Reply::Int(acked));
    }
    Out::Wait {
        numreplicas,
        timeout_ms,
    }
}

/// `REPLICAOF host port | NO ONE` (and its old name `SLAVEOF`). The port
/// must be an integer from 0 to 65535, as Redis's `replicaofCommand`
/// checks it; the node then dials that port on `host`. The switch to a new
/// master happens at once; the link starts from the node's control task.
pub(crate) fn replicaof(node: &Node, _: &mut Client, a: &[Vec<u8>]) -> Out {
    if is_option(&a[1], "no") && is_option(&a[2], "one") {
        node.replicaof_from_client(None);
        return Out::Reply(Reply::ok());
    }
    let Some(port) = string2ll(&a[2]).and_then(|p| u16::try_from(p).ok()) else {
        return Out::Reply(Reply::err("ERR Invalid master port"));
    };
    let host = String::from_utf8_lossy(&a[1]).into_owned();
    if let Role::Replica(m) = &node.state.borrow().role
        && m.is(&host, port)
    {
        return Out::Reply(Reply::Status(
            "OK Already connected to specified master".into(),
        ));
    }
    node.replicaof_from_client(Some(MasterAddr::new(host, port)));
    Out::Reply(Reply::ok())
}

/// `PSYNC replid offset [LAG-MS ms]`: the caller is a replica; the
/// connection becomes its replication stream. The simulated replica names
/// its lag (its `replication_delay`) in the trailing option, which Redis's
/// own `PSYNC` would ignore, since the master is where the lag is spent.
pub(crate) fn psync(_: &Node, _: &mut Client, a: &[Vec<u8>]) -> Out {
    let lag = match a {
        [_, _, _, opt, ms] if is_option(opt, "lag-ms") => string2ll(ms).unwrap_or(0).max(0),
        _ => 0,
    };
    Out::Psync {
        lag: Duration::from_millis(lag as u64),
    }
}
