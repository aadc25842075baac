//! The MySQL client/server protocol, as MariaDB 10.11 speaks it, for a
//! simulated server and a client alike: the parts a lock service needs,
//! each a typed struct with an encoder and a decoder that fails with a
//! [`ProtoError`] naming what it expected rather than panicking.
//!
//! # How a connection goes
//!
//! Everything travels in packets ([`frame`]): a 3-byte length, a 1-byte
//! sequence id, the payload. [`PacketCodec`] frames them for tokio's
//! `Framed` and keeps the sequence ids, which count up across one
//! exchange and start again at 0 with each command.
//!
//! 1. The server speaks first: its greeting, [`Handshake`] (version,
//!    connection id, a 20-byte scramble, the [`Capabilities`] it offers,
//!    its authentication plugin).
//! 2. The client answers with a [`HandshakeResponse`]: the capabilities
//!    it uses, the user, the password hashed with the scramble
//!    ([`auth`]), maybe a database. From here on, both sides use the
//!    capabilities both have; they decide the shape of later packets.
//! 3. The server accepts with an [`OkPacket`] or refuses with an
//!    [`ErrPacket`] (or asks for another plugin with an [`AuthSwitch`]).
//! 4. The client sends [`Command`]s; each gets an OK, an ERR or, for a
//!    query that returns rows, a text [`ResultSet`]: the column count,
//!    a [`ColumnDefinition`] per column, [`TextRow`]s, and an
//!    [`EofPacket`] between and after (under
//!    [`Capabilities::DEPRECATE_EOF`], none between and an OK packet with
//!    the 0xFE header after). [`ReplyReader`] reads an answer for a client.
//! 5. `COM_QUIT`, or the connection closing, ends the session.
//!
//! # Example: a server's side of a connection, in payloads
//!
//! ```
//! use mysqlproto::{Command, Handshake, HandshakeResponse, OkPacket, auth};
//!
//! // 1. The greeting, with a scramble that is the same on every run.
//! let scramble = auth::scramble(7, 1);
//! let greeting = Handshake::new("5.5.5-10.11.19-MariaDB-0+deb12u1", 1, scramble);
//! let mut to_client = Vec::new();
//! greeting.encode(&mut to_client).unwrap();
//!
//! // 2. What a client answers (here built with this crate too).
//! let token = auth::native_password_token(b"secret", &scramble);
//! let response = HandshakeResponse::new(greeting.capabilities, "app", token, Some("test".into()));
//! let mut from_client = Vec::new();
//! response.encode(&mut from_client).unwrap();
//!
//! // 3. The server checks the password against what it stores.
//! let got = HandshakeResponse::decode(&from_client).unwrap();
//! let stored = auth::native_password_hash(b"secret");
//! assert!(auth::check_native_password(&got.auth_response, &scramble, Some(&stored)));
//! assert_eq!(got.database.as_deref(), Some("test"));
//!
//! // 4. A command.
//! let cmd = Command::decode(bytes::Bytes::from_static(b"\x03SELECT GET_LOCK('a', 0)")).unwrap();
//! assert_eq!(cmd, Command::Query("SELECT GET_LOCK('a', 0)".into()));
//! let mut ok = Vec::new();
//! OkPacket::default().encode(mysqlproto::OK_HEADER, &mut ok);
//! ```
//!
//! # What it leaves out
//!
//! TLS, compression, the binary protocol of prepared statements
//! (`COM_STMT_*`), session state tracking, LOCAL INFILE, and
//! authentication plugins other than `mysql_native_password`: a server
//! answers their commands with MariaDB's "Unknown command" and a client
//! never asks for them. Every type but the few a lock service uses is
//! [`ColumnType::Other`].
//!
//! `tests/malformed.rs` feeds every decoder truncated, corrupted and
//! random bytes: each returns, an error or a value, and never panics.
//!
//! No crate in this workspace's tree offered these pieces without a long
//! build (the MySQL crates bring decimal, time and compression libraries
//! along), so they are written here from the protocol's documentation and
//! checked against the `mariadb` client and MariaDB 10.11.

pub mod auth;
pub mod column;
pub mod command;
pub mod eof;
pub mod err;
pub mod error;
pub mod flags;
pub mod frame;
pub mod handshake;
pub mod ok;
pub mod response;
pub mod resultset;
pub mod row;
pub mod wire;

pub use auth::AuthSwitch;
pub use column::{ColumnDefinition, ColumnType};
pub use command::Command;
pub use eof::EofPacket;
pub use err::ErrPacket;
pub use error::ProtoError;
pub use flags::{Capabilities, StatusFlags};
pub use frame::PacketCodec;
pub use handshake::Handshake;
pub use ok::{END_HEADER, OK_HEADER, OkPacket};
pub use response::HandshakeResponse;
pub use resultset::{Reply, ReplyReader, ResultSet};
pub use row::TextRow;
