//! The records of ZooKeeper's client protocol (`zookeeper.jute`), with
//! its own field order and names. A request frame is a [`RequestHeader`]
//! then the operation's record; a reply frame is a [`ReplyHeader`] then
//! the operation's response, present only when the header's `err` is 0.
//! The handshake is the exception: [`ConnectRequest`] and
//! [`ConnectResponse`] travel without a header, each followed by a
//! read-only flag that old clients leave out.

use crate::codes::perms;
use crate::jute::{Buffer, Jute, JuteError, Reader};
use crate::record;

record! {
    /// A node's identity in an ACL: a scheme and an id (`world`, `anyone`).
    pub struct Id {
        /// The scheme.
        pub scheme: String,
        /// The id within it.
        pub id: String,
    }
}

record! {
    /// One ACL entry: permissions for an id.
    pub struct Acl {
        /// The permissions ([`perms`]).
        pub perms: i32,
        /// Who gets them.
        pub id: Id,
    }
}

/// `OPEN_ACL_UNSAFE`: everything for everyone, what `zkCli.sh` and
/// Curator send unless told otherwise.
pub fn open_acl_unsafe() -> Vec<Acl> {
    vec![Acl {
        perms: perms::ALL,
        id: Id {
            scheme: "world".into(),
            id: "anyone".into(),
        },
    }]
}

record! {
    /// A node's metadata, 68 bytes on the wire.
    pub struct Stat {
        /// The zxid of the transaction that created it.
        pub czxid: i64,
        /// The zxid of the last change to its data.
        pub mzxid: i64,
        /// When it was created, ms since the epoch (the leader's clock).
        pub ctime: i64,
        /// When its data last changed.
        pub mtime: i64,
        /// Changes to its data.
        pub version: i32,
        /// Children created under it (only creates count).
        pub cversion: i32,
        /// Changes to its ACL.
        pub aversion: i32,
        /// The session that owns it, if ephemeral; 0 otherwise.
        pub ephemeral_owner: i64,
        /// Length of its data.
        pub data_length: i32,
        /// How many children it has.
        pub num_children: i32,
        /// The zxid of the last change to its children.
        pub pzxid: i64,
    }
}

/// A client's first message: no header before it, and the read-only flag
/// after it (absent from old clients).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ConnectRequest {
    /// Always 0.
    pub protocol_version: i32,
    /// The last zxid the client saw (a server behind it refuses it).
    pub last_zxid_seen: i64,
    /// The session timeout it asks for, ms.
    pub time_out: i32,
    /// Its session, to resume; 0 for a new one.
    pub session_id: i64,
    /// The session's password (16 bytes; zeros for a new session).
    pub passwd: Buffer,
    /// Whether it accepts a read-only server; `None` from an old client.
    pub read_only: Option<bool>,
}

impl Jute for ConnectRequest {
    fn put(&self, out: &mut Vec<u8>) {
        self.protocol_version.put(out);
        self.last_zxid_seen.put(out);
        self.time_out.put(out);
        self.session_id.put(out);
        self.passwd.put(out);
        if let Some(flag) = self.read_only {
            flag.put(out);
        }
    }

    fn take(r: &mut Reader<'_>) -> Result<Self, JuteError> {
        Ok(ConnectRequest {
            protocol_version: r.field("protocolVersion")?,
            last_zxid_seen: r.field("lastZxidSeen")?,
            time_out: r.field("timeOut")?,
            session_id: r.field("sessionId")?,
            passwd: r.field("passwd")?,
            read_only: optional_flag(r)?,
        })
    }
}

/// The server's answer to [`ConnectRequest`]: a `time_out` of 0 means the
/// session is gone (expired, or unknown to the server).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ConnectResponse {
    /// Always 0.
    pub protocol_version: i32,
    /// The negotiated session timeout, ms; 0: the session is invalid.
    pub time_out: i32,
    /// The session; 0 when invalid.
    pub session_id: i64,
    /// Its password (16 bytes).
    pub passwd: Buffer,
    /// Whether the server is read-only; `None` to an old client.
    pub read_only: Option<bool>,
}

impl Jute for ConnectResponse {
    fn put(&self, out: &mut Vec<u8>) {
        self.protocol_version.put(out);
        self.time_out.put(out);
        self.session_id.put(out);
        self.passwd.put(out);
        if let Some(flag) = self.read_only {
            flag.put(out);
        }
    }

    fn take(r: &mut Reader<'_>) -> Result<Self, JuteError> {
        Ok(ConnectResponse {
            protocol_version: r.field("protocolVersion")?,
            time_out: r.field("timeOut")?,
            session_id: r.field("sessionId")?,
            passwd: r.field("passwd")?,
            read_only: optional_flag(r)?,
        })
    }
}

/// The trailing read-only flag of the handshake, if present.
fn optional_flag(r: &mut Reader<'_>) -> Result<Option<bool>, JuteError> {
    if r.remaining() == 0 {
        Ok(None)
    } else {
        r.field("readOnly").map(Some)
    }
}

record! {
    /// Before every request: its number and type.
    pub struct RequestHeader {
        /// The client's request number (or a special [`crate::codes::xid`]).
        pub xid: i32,
        /// The operation ([`crate::codes::OpCode`]).
        pub r#type: i32,
    }
}

record! {
    /// Before every reply: the request it answers, the server's last zxid,
    /// and the error (0: a response record follows).
    pub struct ReplyHeader {
        /// The request's number.
        pub xid: i32,
        /// The last zxid the server had applied when it answered.
        pub zxid: i64,
        /// The error ([`crate::codes::ErrorCode`]).
        pub err: i32,
    }
}

record! {
    /// `create`, `create2` and `createContainer`.
    pub struct CreateRequest {
        /// The node's path (for a sequential node, the prefix).
        pub path: String,
        /// Its data (null is not empty).
        pub data: Buffer,
        /// Its ACL.
        pub acl: Vec<Acl>,
        /// Its [`crate::codes::CreateMode`].
        pub flags: i32,
    }
}

record! {
    /// `createTTL`.
    pub struct CreateTtlRequest {
        /// The node's path.
        pub path: String,
        /// Its data.
        pub data: Buffer,
        /// Its ACL.
        pub acl: Vec<Acl>,
        /// Its create mode.
        pub flags: i32,
        /// Its time to live, ms.
        pub ttl: i64,
    }
}

record! {
    /// The answer to `create`: the path it got.
    pub struct CreateResponse {
        /// The path (with its sequence number, if sequential).
        pub path: String,
    }
}

record! {
    /// The answer to `create2`: the path and the node's stat.
    pub struct Create2Response {
        /// The path.
        pub path: String,
        /// The new node's stat.
        pub stat: Stat,
    }
}

record! {
    /// `delete`.
    pub struct DeleteRequest {
        /// The node.
        pub path: String,
        /// Its expected version; -1: any.
        pub version: i32,
    }
}

record! {
    /// `exists`, `getData`, `getChildren` and `getChildren2`: a path, and
    /// whether to leave a one-shot watch on it.
    pub struct PathWatchRequest {
        /// The node.
        pub path: String,
        /// Whether to watch it.
        pub watch: bool,
    }
}

record! {
    /// The answer to `exists` and `setData`: a stat.
    pub struct StatResponse {
        /// The node's stat.
        pub stat: Stat,
    }
}

record! {
    /// The answer to `getData`.
    pub struct GetDataResponse {
        /// The node's data.
        pub data: Buffer,
        /// Its stat.
        pub stat: Stat,
    }
}

record! {
    /// `setData`.
    pub struct SetDataRequest {
        /// The node.
        pub path: String,
        /// Its new data.
        pub data: Buffer,
        /// Its expected version; -1: any.
        pub version: i32,
    }
}

record! {
    /// The answer to `getChildren`: the children's names, in no order.
    pub struct GetChildrenResponse {
        /// The names.
        pub children: Vec<String>,
    }
}

record! {
    /// The answer to `getChildren2`: the names and the parent's stat.
    pub struct GetChildren2Response {
        /// The names.
        pub children: Vec<String>,
        /// The parent's stat.
        pub stat: Stat,
    }
}

record! {
    /// `sync`, `getACL`, `getAllChildrenNumber` and `getEphemerals`: a path
    /// alone (and `sync`'s answer).
    pub struct PathRequest {
        /// The path.
        pub path: String,
    }
}

record! {
    /// The answer to `getACL`.
    pub struct GetAclResponse {
        /// The node's ACL.
        pub acl: Vec<Acl>,
        /// Its stat.
        pub stat: Stat,
    }
}

record! {
    /// `check` (inside `multi`): the node's version must be this.
    pub struct CheckVersionRequest {
        /// The node.
        pub path: String,
        /// Its expected version.
        pub version: i32,
    }
}

record! {
    /// Before each operation of a `multi` and each of its results; a
    /// header with `done` set ends the list.
    pub struct MultiHeader {
        /// The operation ([`crate::codes::OpCode`]), -1 at the end.
        pub r#type: i32,
        /// Whether this is the end.
        pub done: bool,
        /// The error (results only), -1 at the end.
        pub err: i32,
    }
}

record! {
    /// An error result inside a `multi`'s answer, and `addWatch`'s answer.
    pub struct ErrorResponse {
        /// The error ([`crate::codes::ErrorCode`]).
        pub err: i32,
    }
}

record! {
    /// A watch notification: what happened to which node.
    pub struct WatcherEvent {
        /// The [`crate::codes::EventType`].
        pub r#type: i32,
        /// The [`crate::codes::KeeperState`] (the server sends 3).
        pub state: i32,
        /// The node.
        pub path: String,
    }
}

record! {
    /// `setWatches`: the watches a reconnecting client had, to be set again
    /// and fired for whatever changed after `relative_zxid`.
    pub struct SetWatches {
        /// The last zxid the client saw.
        pub relative_zxid: i64,
        /// Its data watches.
        pub data_watches: Vec<String>,
        /// Its exists watches.
        pub exist_watches: Vec<String>,
        /// Its child watches.
        pub child_watches: Vec<String>,
    }
}

record! {
    /// `setWatches2`: `setWatches` with the persistent watches too.
    pub struct SetWatches2 {
        /// The last zxid the client saw.
        pub relative_zxid: i64,
        /// Its data watches.
        pub data_watches: Vec<String>,
        /// Its exists watches.
        pub exist_watches: Vec<String>,
        /// Its child watches.
        pub child_watches: Vec<String>,
        /// Its persistent watches.
        pub persistent_watches: Vec<String>,
        /// Its persistent recursive watches.
        pub persistent_recursive_watches: Vec<String>,
    }
}

record! {
    /// An authentication packet (`addauth`): a scheme and its credentials.
    pub struct AuthPacket {
        /// Always 0.
        pub r#type: i32,
        /// The scheme (`digest`).
        pub scheme: String,
        /// The credentials (`user:password` for digest).
        pub auth: Buffer,
    }
}

record! {
    /// `setACL`.
    pub struct SetAclRequest {
        /// The node.
        pub path: String,
        /// Its new ACL.
        pub acl: Vec<Acl>,
        /// Its expected ACL version; -1: any.
        pub version: i32,
    }
}

record! {
    /// The answer to `getAllChildrenNumber`: how many nodes lie below.
    pub struct GetAllChildrenNumberResponse {
        /// The count.
        pub total_number: i32,
    }
}

record! {
    /// The answer to `getEphemerals`: the session's ephemeral nodes.
    pub struct GetEphemeralsResponse {
        /// Their paths.
        pub ephemerals: Vec<String>,
    }
}

record! {
    /// `addWatch`: a persistent watch on a path.
    pub struct AddWatchRequest {
        /// The node.
        pub path: String,
        /// 0: persistent, 1: persistent and recursive.
        pub mode: i32,
    }
}

record! {
    /// `checkWatches` and `removeWatches`.
    pub struct RemoveWatchesRequest {
        /// The node.
        pub path: String,
        /// 1: child watches, 2: data watches, 3: any.
        pub r#type: i32,
    }
}

record! {
    /// An authenticated identity, in `whoAmI`'s answer.
    pub struct ClientInfo {
        /// The scheme (`ip`, `digest`).
        pub auth_scheme: String,
        /// The identity within it.
        pub user: String,
    }
}

record! {
    /// The answer to `whoAmI`.
    pub struct WhoAmIResponse {
        /// The connection's identities.
        pub client_info: Vec<ClientInfo>,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jute::{decode, encode};

    #[test]
    fn a_stat_is_sixty_eight_bytes() {
        assert_eq!(encode(&Stat::default()).len(), 68);
    }

    #[test]
    fn a_connect_request_without_the_read_only_flag_is_an_old_clients() {
        let old = ConnectRequest {
            time_out: 30_000,
            passwd: Buffer(Some(vec![0; 16])),
            ..ConnectRequest::default()
        };
        let bytes = encode(&old);
        assert_eq!(bytes.len(), 4 + 8 + 4 + 8 + 4 + 16);
        assert_eq!(decode::<ConnectRequest>(&bytes), Ok(old.clone()));
        let new = ConnectRequest {
            read_only: Some(false),
            ..old
        };
        assert_eq!(decode::<ConnectRequest>(&encode(&new)), Ok(new));
    }

    #[test]
    fn a_create_request_round_trips_with_null_data_and_the_open_acl() {
        let create = CreateRequest {
            path: "/locks/lock-".into(),
            data: Buffer(None),
            acl: open_acl_unsafe(),
            flags: 3,
        };
        assert_eq!(decode::<CreateRequest>(&encode(&create)), Ok(create));
    }

    #[test]
    fn an_auth_packet_and_a_set_acl_request_round_trip() {
        let auth = AuthPacket {
            r#type: 0,
            scheme: "digest".into(),
            auth: Buffer(Some(b"u:p".to_vec())),
        };
        let bytes = encode(&auth);
        assert_eq!(bytes.len(), 4 + 4 + 6 + 4 + 3);
        assert_eq!(decode::<AuthPacket>(&bytes), Ok(auth));
        let set = SetAclRequest {
            path: "/a".into(),
            acl: open_acl_unsafe(),
            version: -1,
        };
        assert_eq!(decode::<SetAclRequest>(&encode(&set)), Ok(set));
    }

    #[test]
    fn a_bad_acl_names_where_it_broke() {
        let mut bytes = encode(&CreateRequest {
            path: "/a".into(),
            data: Buffer(None),
            acl: open_acl_unsafe(),
            flags: 0,
        });
        // Cut into the ACL's scheme.
        bytes.truncate(4 + 2 + 4 + 4 + 4 + 4 + 2);
        let err = decode::<CreateRequest>(&bytes).unwrap_err();
        assert_eq!(err.field, "CreateRequest.acl[0].id.scheme", "{err}");
    }
}
