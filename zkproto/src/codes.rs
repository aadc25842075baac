//! ZooKeeper's numbers: operation codes, error codes, create modes, watch
//! event types and states, permissions, and the special request IDs
//! (`ZooDefs`, `KeeperException.Code`, `CreateMode`, `Watcher.Event`).

/// Declares a code enum with its wire values and ZooKeeper's names.
macro_rules! codes {
    ($(#[$m:meta])* pub enum $name:ident { $($(#[$vm:meta])* $variant:ident = $value:expr => $text:literal),* $(,)? }) => {
        $(#[$m])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum $name {
            $($(#[$vm])* $variant),*
        }

        impl $name {
            /// Every value, in declaration order.
            pub const ALL: &'static [$name] = &[$($name::$variant),*];

            /// The value on the wire.
            pub fn code(self) -> i32 {
                match self {
                    $($name::$variant => $value),*
                }
            }

            /// The value with wire code `code`, if there is one.
            pub fn from_code(code: i32) -> Option<$name> {
                match code {
                    $(c if c == $value => Some($name::$variant),)*
                    _ => None,
                }
            }

            /// ZooKeeper's name for it.
            pub fn name(self) -> &'static str {
                match self {
                    $($name::$variant => $text),*
                }
            }
        }
    };
}

codes! {
    /// A request's type (`ZooDefs.OpCode`).
    pub enum OpCode {
        /// A watch notification (server to client).
        Notification = 0 => "notification",
        /// `create`.
        Create = 1 => "create",
        /// `delete`.
        Delete = 2 => "delete",
        /// `exists`.
        Exists = 3 => "exists",
        /// `getData`.
        GetData = 4 => "getData",
        /// `setData`.
        SetData = 5 => "setData",
        /// `getACL`.
        GetAcl = 6 => "getACL",
        /// `setACL`.
        SetAcl = 7 => "setACL",
        /// `getChildren`.
        GetChildren = 8 => "getChildren",
        /// `sync`.
        Sync = 9 => "sync",
        /// A ping.
        Ping = 11 => "ping",
        /// `getChildren2` (children and the parent's stat).
        GetChildren2 = 12 => "getChildren2",
        /// `check` (a version check inside `multi`).
        Check = 13 => "check",
        /// `multi`.
        Multi = 14 => "multi",
        /// `create2` (the path and the new node's stat).
        Create2 = 15 => "create2",
        /// `reconfig`.
        Reconfig = 16 => "reconfig",
        /// `checkWatches`.
        CheckWatches = 17 => "checkWatches",
        /// `removeWatches`.
        RemoveWatches = 18 => "removeWatches",
        /// `createContainer`.
        CreateContainer = 19 => "createContainer",
        /// `deleteContainer`.
        DeleteContainer = 20 => "deleteContainer",
        /// `createTTL`.
        CreateTtl = 21 => "createTTL",
        /// `multiRead`.
        MultiRead = 22 => "multiRead",
        /// An authentication packet.
        Auth = 100 => "auth",
        /// `setWatches` (after a reconnect).
        SetWatches = 101 => "setWatches",
        /// SASL.
        Sasl = 102 => "sasl",
        /// `getEphemerals`.
        GetEphemerals = 103 => "getEphemerals",
        /// `getAllChildrenNumber`.
        GetAllChildrenNumber = 104 => "getAllChildrenNumber",
        /// `setWatches2`.
        SetWatches2 = 105 => "setWatches2",
        /// `addWatch`.
        AddWatch = 106 => "addWatch",
        /// `whoAmI`.
        WhoAmI = 107 => "whoAmI",
        /// A new session (a transaction of its own).
        CreateSession = -10 => "createSession",
        /// `closeSession`.
        CloseSession = -11 => "closeSession",
        /// A failed write, logged as a transaction of its own.
        Error = -1 => "error",
    }
}

codes! {
    /// A reply's error (`KeeperException.Code`).
    pub enum ErrorCode {
        /// Success.
        Ok = 0 => "OK",
        /// A system error.
        SystemError = -1 => "SystemError",
        /// A runtime inconsistency.
        RuntimeInconsistency = -2 => "RuntimeInconsistency",
        /// A data inconsistency.
        DataInconsistency = -3 => "DataInconsistency",
        /// The connection was lost (the client's own; never on the wire).
        ConnectionLoss = -4 => "ConnectionLoss",
        /// A message could not be read.
        MarshallingError = -5 => "MarshallingError",
        /// An operation the server does not implement.
        Unimplemented = -6 => "Unimplemented",
        /// An operation timed out.
        OperationTimeout = -7 => "OperationTimeout",
        /// Bad arguments (a bad path).
        BadArguments = -8 => "BadArguments",
        /// An unknown session.
        UnknownSession = -12 => "UnknownSession",
        /// A reconfiguration without a quorum.
        NewConfigNoQuorum = -13 => "NewConfigNoQuorum",
        /// A reconfiguration in progress.
        ReconfigInProgress = -14 => "ReconfigInProgress",
        /// An API error.
        ApiError = -100 => "APIError",
        /// No node at the path.
        NoNode = -101 => "NoNode",
        /// Not authorized.
        NoAuth = -102 => "NoAuth",
        /// The version did not match.
        BadVersion = -103 => "BadVersion",
        /// An ephemeral node cannot have children.
        NoChildrenForEphemerals = -108 => "NoChildrenForEphemerals",
        /// The node exists.
        NodeExists = -110 => "NodeExists",
        /// The node has children.
        NotEmpty = -111 => "Directory not empty",
        /// The session expired.
        SessionExpired = -112 => "Session expired",
        /// An invalid callback.
        InvalidCallback = -113 => "InvalidCallback",
        /// An invalid ACL.
        InvalidAcl = -114 => "InvalidACL",
        /// Authentication failed.
        AuthFailed = -115 => "AuthFailed",
        /// The session moved to another server.
        SessionMoved = -118 => "Session moved",
        /// A write to a read-only server.
        NotReadOnly = -119 => "Not a read-only call",
        /// An ephemeral on a local session.
        EphemeralOnLocalSession = -120 => "Ephemeral node on local session",
        /// No such watcher.
        NoWatcher = -121 => "No such watcher",
        /// A request timed out.
        RequestTimeout = -122 => "Request timeout",
        /// Reconfiguration is disabled.
        ReconfigDisabled = -123 => "Reconfig is disabled",
        /// The session was closed: SASL authentication is required.
        SessionClosedRequireSaslAuth = -124 => "Session closed because client failed to authenticate",
        /// A quota was exceeded.
        QuotaExceeded = -125 => "Quota has exceeded",
        /// The operation was throttled.
        ThrottledOp = -127 => "Op throttled due to high load",
    }
}

codes! {
    /// How a node is created (`CreateMode`), the `flags` of a create.
    pub enum CreateMode {
        /// Stays until deleted.
        Persistent = 0 => "PERSISTENT",
        /// Deleted with its session.
        Ephemeral = 1 => "EPHEMERAL",
        /// Persistent, its name suffixed with the parent's sequence.
        PersistentSequential = 2 => "PERSISTENT_SEQUENTIAL",
        /// Ephemeral and sequential: what locks are made of.
        EphemeralSequential = 3 => "EPHEMERAL_SEQUENTIAL",
        /// Deleted by the server once it has had children and has none.
        Container = 4 => "CONTAINER",
        /// Persistent with a time to live.
        PersistentWithTtl = 5 => "PERSISTENT_WITH_TTL",
        /// Persistent, sequential, with a time to live.
        PersistentSequentialWithTtl = 6 => "PERSISTENT_SEQUENTIAL_WITH_TTL",
    }
}

impl CreateMode {
    /// Whether the node dies with its session.
    pub fn is_ephemeral(self) -> bool {
        matches!(
            self,
            CreateMode::Ephemeral | CreateMode::EphemeralSequential
        )
    }

    /// Whether its name gets the parent's sequence number.
    pub fn is_sequential(self) -> bool {
        matches!(
            self,
            CreateMode::PersistentSequential
                | CreateMode::EphemeralSequential
                | CreateMode::PersistentSequentialWithTtl
        )
    }
}

codes! {
    /// What a watch notification reports (`Watcher.Event.EventType`).
    pub enum EventType {
        /// A change of the connection's state, no node.
        None = -1 => "None",
        /// The node was created.
        NodeCreated = 1 => "NodeCreated",
        /// The node was deleted.
        NodeDeleted = 2 => "NodeDeleted",
        /// The node's data changed.
        NodeDataChanged = 3 => "NodeDataChanged",
        /// The node's children changed.
        NodeChildrenChanged = 4 => "NodeChildrenChanged",
        /// A data watch was removed.
        DataWatchRemoved = 5 => "DataWatchRemoved",
        /// A child watch was removed.
        ChildWatchRemoved = 6 => "ChildWatchRemoved",
        /// A persistent watch was removed.
        PersistentWatchRemoved = 7 => "PersistentWatchRemoved",
    }
}

codes! {
    /// A connection's state as a notification reports it
    /// (`Watcher.Event.KeeperState`); the server only ever sends
    /// `SyncConnected`, the client makes up the others.
    pub enum KeeperState {
        /// Disconnected.
        Disconnected = 0 => "Disconnected",
        /// Connected.
        SyncConnected = 3 => "SyncConnected",
        /// Authentication failed.
        AuthFailed = 4 => "AuthFailed",
        /// Connected to a read-only server.
        ConnectedReadOnly = 5 => "ConnectedReadOnly",
        /// SASL authenticated.
        SaslAuthenticated = 6 => "SaslAuthenticated",
        /// The session expired.
        Expired = -112 => "Expired",
        /// The client closed.
        Closed = 7 => "Closed",
    }
}

/// Special request IDs (`xid`s) that are not a client's numbered request.
pub mod xid {
    /// A watch notification.
    pub const NOTIFICATION: i32 = -1;
    /// A ping.
    pub const PING: i32 = -2;
    /// An authentication packet.
    pub const AUTH: i32 = -4;
    /// `setWatches` sent while a reconnect is primed.
    pub const SET_WATCHES: i32 = -8;
}

/// ACL permissions (`ZooDefs.Perms`).
pub mod perms {
    /// Read a node's data and list its children.
    pub const READ: i32 = 1;
    /// Set its data.
    pub const WRITE: i32 = 2;
    /// Create children.
    pub const CREATE: i32 = 4;
    /// Delete children.
    pub const DELETE: i32 = 8;
    /// Set its ACL.
    pub const ADMIN: i32 = 16;
    /// Everything.
    pub const ALL: i32 = READ | WRITE | CREATE | DELETE | ADMIN;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_code_maps_back_to_itself() {
        for op in OpCode::ALL {
            assert_eq!(OpCode::from_code(op.code()), Some(*op));
        }
        for err in ErrorCode::ALL {
            assert_eq!(ErrorCode::from_code(err.code()), Some(*err));
        }
        assert_eq!(ErrorCode::from_code(-9999), None);
    }

    #[test]
    fn the_lock_modes_are_ephemeral_and_sequential() {
        let mode = CreateMode::from_code(3);
        assert_eq!(mode, Some(CreateMode::EphemeralSequential));
        assert!(mode.is_some_and(|m| m.is_ephemeral() && m.is_sequential()));
        assert!(!CreateMode::Container.is_ephemeral());
    }
}
