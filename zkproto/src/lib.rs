//! ZooKeeper's client wire protocol, as ZooKeeper 3.8 speaks it, for a
//! simulated server and a client alike.
//!
//! - [`jute`]: the binary encoding (big-endian, length-prefixed strings
//!   and buffers, null apart from empty) and the [`record!`] macro that
//!   declares a record's fields in wire order;
//! - [`records`]: the records of `zookeeper.jute` a lock service needs:
//!   the handshake, the headers, create, delete, exists, getData,
//!   setData, getChildren(2), sync, getACL, multi, watch notifications,
//!   setWatches;
//! - [`codes`]: operation and error codes, create modes, watch event types
//!   and states, permissions, special request IDs;
//! - [`frame`]: the 4-byte length framing, with ZooKeeper's size limit;
//! - [`path`]: the rules a node path must follow, parents and names, and
//!   sequential names.
//!
//! No Rust crate offers these records to a server (the ZooKeeper clients
//! keep theirs private and open their own sockets), so they are written
//! here from `zookeeper.jute`, field for field.

pub mod codes;
pub mod frame;
pub mod jute;
pub mod path;
pub mod records;

pub use codes::{CreateMode, ErrorCode, EventType, KeeperState, OpCode};
pub use jute::{Buffer, Jute, JuteError, decode, encode};
