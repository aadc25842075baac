//! The ERR packet: a command failed, with MariaDB's error number, the
//! five-character SQLSTATE (after a `#` marker, under the 4.1 protocol)
//! and the message. The `mariadb` client prints all three:
//! `ERROR 1064 (42000) at line 1: You have an error in your SQL syntax...`.

use bytes::BufMut;

use crate::error::{ProtoError, Result};
use crate::wire::Reader;

/// The header of an ERR packet.
pub const ERR_HEADER: u8 = 0xff;

/// An ERR packet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ErrPacket {
    /// MariaDB's error number.
    pub code: u16,
    /// The SQLSTATE (`42000`, `23000`, `HY000`, ...).
    pub sql_state: [u8; 5],
    /// The message.
    pub message: String,
}

impl ErrPacket {
    /// An error; `sql_state` must be five ASCII characters, anything else
    /// is sent as the catch-all `HY000`.
    pub fn new(code: u16, sql_state: &str, message: impl Into<String>) -> Self {
        let sql_state = match <[u8; 5]>::try_from(sql_state.as_bytes()) {
            Ok(s) if s.is_ascii() => s,
            _ => *b"HY000",
        };
        ErrPacket {
            code,
            sql_state,
            message: message.into(),
        }
    }

    /// 1047 (08S01) `Unknown command`: MariaDB's answer to a command it
    /// does not serve.
    pub fn unknown_command() -> Self {
        ErrPacket::new(1047, "08S01", "Unknown command")
    }

    /// 1835 (08S01) `Malformed communication packet`: MariaDB's answer to
    /// a command whose bytes make no sense.
    pub fn malformed_packet() -> Self {
        ErrPacket::new(1835, "08S01", "Malformed communication packet")
    }

    /// 1156 (08S01) `Got packets out of order`: the client lost count of
    /// sequence ids.
    pub fn out_of_order() -> Self {
        ErrPacket::new(1156, "08S01", "Got packets out of order")
    }

    /// The SQLSTATE as text.
    pub fn sql_state(&self) -> &str {
        // Only ASCII is ever stored.
        std::str::from_utf8(&self.sql_state).unwrap_or("HY000")
    }

    /// The payload, SQLSTATE marker included.
    pub fn encode(&self, out: &mut impl BufMut) {
        out.put_u8(ERR_HEADER);
        out.put_u16_le(self.code);
        out.put_u8(b'#');
        out.put_slice(&self.sql_state);
        out.put_slice(self.message.as_bytes());
    }

    /// Reads an ERR packet; one without the `#` marker (a pre-4.1 peer, or
    /// an error sent before the handshake settled the protocol) gets
    /// `HY000`.
    pub fn decode(payload: &[u8]) -> Result<Self> {
        let mut r = Reader::new(payload);
        let header = r.u8("ERR header")?;
        if header != ERR_HEADER {
            return Err(ProtoError::invalid(
                "ERR header",
                "0xff",
                format_args!("{header:#04x}"),
            ));
        }
        let code = r.u16("error number")?;
        let sql_state = if r.peek() == Some(b'#') {
            r.u8("SQLSTATE marker")?;
            let s: [u8; 5] = r.array("SQLSTATE")?;
            if !s.is_ascii() {
                return Err(ProtoError::invalid(
                    "SQLSTATE",
                    "five ASCII characters",
                    format_args!("{s:?}"),
                ));
            }
            s
        } else {
            *b"HY000"
        };
        let message = String::from_utf8_lossy(r.rest()).into_owned();
        Ok(ErrPacket {
            code,
            sql_state,
            message,
        })
    }
}

impl std::fmt::Display for ErrPacket {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "ERROR {} ({}): {}",
            self.code,
            self.sql_state(),
            self.message
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_has_the_marker() {
        let e = ErrPacket::new(1062, "23000", "Duplicate entry 'a' for key 'PRIMARY'");
        let mut b = Vec::new();
        e.encode(&mut b);
        assert_eq!(&b[..9], b"\xff\x26\x04#23000");
        assert_eq!(ErrPacket::decode(&b).unwrap(), e);
        assert_eq!(
            e.to_string(),
            "ERROR 1062 (23000): Duplicate entry 'a' for key 'PRIMARY'"
        );
    }

    #[test]
    fn a_bad_sqlstate_becomes_hy000() {
        assert_eq!(ErrPacket::new(1, "4200", "x").sql_state(), "HY000");
        assert_eq!(ErrPacket::new(1, "4200é", "x").sql_state(), "HY000");
    }

    #[test]
    fn no_marker_reads_as_hy000() {
        let e = ErrPacket::decode(b"\xff\x10\x04Too many connections").unwrap();
        assert_eq!(e.code, 1040);
        assert_eq!(e.sql_state(), "HY000");
        assert_eq!(e.message, "Too many connections");
    }

    #[test]
    fn malformed_errs_are_errors() {
        assert!(ErrPacket::decode(&[0x00, 1, 2]).is_err());
        assert!(ErrPacket::decode(&[0xff, 1]).is_err());
        assert!(ErrPacket::decode(b"\xff\x01\x00#42").is_err());
        assert!(ErrPacket::decode(b"\xff\x01\x00#\xff\xff\xff\xff\xff").is_err());
    }

    #[test]
    fn the_servers_own_errors() {
        assert_eq!(ErrPacket::unknown_command().code, 1047);
        assert_eq!(ErrPacket::unknown_command().message, "Unknown command");
        assert_eq!(ErrPacket::malformed_packet().code, 1835);
        assert_eq!(ErrPacket::out_of_order().code, 1156);
    }
}
