//! The commands a client sends once connected, each the first packet of
//! a new exchange (sequence id 0): its first byte says which. A lock
//! service needs four; the rest are kept as they came, for the server to
//! answer with MariaDB's "Unknown command" ([`crate::ErrPacket::unknown_command`]).

use bytes::{BufMut, Bytes};

use crate::error::{ProtoError, Result};
use crate::wire::utf8;

/// `COM_QUIT`: the client is leaving; no answer.
pub const COM_QUIT: u8 = 0x01;
/// `COM_INIT_DB`: `USE db`.
pub const COM_INIT_DB: u8 = 0x02;
/// `COM_QUERY`: a statement as text.
pub const COM_QUERY: u8 = 0x03;
/// `COM_PING`: is the server alive (an OK packet).
pub const COM_PING: u8 = 0x0e;

/// A command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    /// `COM_QUIT`.
    Quit,
    /// `COM_INIT_DB` with the database's name.
    InitDb(String),
    /// `COM_QUERY` with the statement.
    Query(String),
    /// `COM_PING`.
    Ping,
    /// Any other command: its byte and the rest of the packet.
    Other(u8, Bytes),
}

impl Command {
    /// The packet's payload.
    pub fn encode(&self, out: &mut impl BufMut) {
        match self {
            Command::Quit => out.put_u8(COM_QUIT),
            Command::InitDb(db) => {
                out.put_u8(COM_INIT_DB);
                out.put_slice(db.as_bytes());
            }
            Command::Query(sql) => {
                out.put_u8(COM_QUERY);
                out.put_slice(sql.as_bytes());
            }
            Command::Ping => out.put_u8(COM_PING),
            Command::Other(code, rest) => {
                out.put_u8(*code);
                out.put_slice(rest);
            }
        }
    }

    /// Reads a command. The text of a query or a database name must be
    /// UTF-8 (the connection's character set); an empty packet is no
    /// command at all.
    pub fn decode(payload: Bytes) -> Result<Self> {
        let Some(&code) = payload.first() else {
            return Err(ProtoError::Short {
                what: "command byte",
                needed: 1,
                left: 0,
            });
        };
        let rest = payload.slice(1..);
        Ok(match code {
            COM_QUIT => Command::Quit,
            COM_INIT_DB => Command::InitDb(utf8(&rest, "database name")?),
            COM_QUERY => Command::Query(utf8(&rest, "query text")?),
            COM_PING => Command::Ping,
            other => Command::Other(other, rest),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(c: Command) {
        let mut b = Vec::new();
        c.encode(&mut b);
        assert_eq!(Command::decode(Bytes::from(b)).unwrap(), c);
    }

    #[test]
    fn every_command_round_trips() {
        round_trip(Command::Quit);
        round_trip(Command::Ping);
        round_trip(Command::InitDb("test".into()));
        round_trip(Command::Query("SELECT GET_LOCK('a', 0)".into()));
        round_trip(Command::Query(String::new()));
        // COM_STMT_PREPARE, kept for the server to refuse.
        round_trip(Command::Other(0x16, Bytes::from_static(b"SELECT ?")));
    }

    #[test]
    fn the_wire_bytes_are_mysqls() {
        let mut b = Vec::new();
        Command::Query("SELECT 1".into()).encode(&mut b);
        assert_eq!(b, b"\x03SELECT 1");
    }

    #[test]
    fn malformed_commands_are_errors() {
        let e = Command::decode(Bytes::new()).unwrap_err();
        assert!(e.to_string().contains("command byte"), "{e}");
        let e = Command::decode(Bytes::from_static(b"\x03SELECT \xff")).unwrap_err();
        assert!(e.to_string().contains("query text"), "{e}");
    }
}
