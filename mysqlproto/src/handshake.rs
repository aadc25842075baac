//! The server's greeting, Initial Handshake Packet version 10: the first
//! packet of every connection (sequence id 0). It tells the client the
//! server's version, the connection id, the 20-byte scramble the password
//! is to be hashed with, the capabilities on offer and the default
//! authentication plugin.
//!
//! Its layout splits the scramble in two (8 bytes, then the other 12 and a
//! NUL) and the capabilities in two (the low 16 bits, then the high 16
//! after the character set and status), a legacy of older versions that
//! knew only the first halves. MariaDB fills the 10 reserved bytes with
//! zeros and, when its greeting leaves [`Capabilities::LONG_PASSWORD`]
//! unset, uses the last 4 of them for its own extended capabilities; this
//! greeting offers none.

use bytes::BufMut;

use crate::auth::NATIVE_PASSWORD;
use crate::error::{ProtoError, Result};
use crate::flags::{Capabilities, StatusFlags};
use crate::wire::{Reader, Writer, no_nul};

/// `utf8mb4_general_ci`, MariaDB 10.11's default for the connection.
pub const UTF8MB4_GENERAL_CI: u8 = 45;

/// The protocol version byte that opens the greeting.
pub const PROTOCOL_VERSION: u8 = 10;

/// Initial Handshake Packet v10.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Handshake {
    /// The server version, e.g. MariaDB 10.11's
    /// `5.5.5-10.11.19-MariaDB-0+deb12u1` (the `5.5.5-` prefix keeps old
    /// clients that parse the major version from treating it as 10.0).
    pub server_version: String,
    /// The connection id (`CONNECTION_ID()`).
    pub connection_id: u32,
    /// The scramble (salt) the password is hashed with; no NUL in it, as
    /// its second part is NUL-terminated.
    pub scramble: [u8; 20],
    /// What the server offers.
    pub capabilities: Capabilities,
    /// The server's default character set and collation.
    pub charset: u8,
    /// The server's status.
    pub status: StatusFlags,
    /// The authentication plugin the scramble is for.
    pub auth_plugin: String,
}

impl Handshake {
    /// The capabilities a lock service's server offers: the 4.1 protocol,
    /// plugin authentication with the response as a length-encoded string,
    /// a database and connection attributes in the response,
    /// transactions' status, and result sets without the EOF packets.
    /// Neither TLS nor compression.
    pub const SERVER_CAPABILITIES: Capabilities = Capabilities(
        Capabilities::CONNECT_WITH_DB.0
            | Capabilities::PROTOCOL_41.0
            | Capabilities::TRANSACTIONS.0
            | Capabilities::SECURE_CONNECTION.0
            | Capabilities::PLUGIN_AUTH.0
            | Capabilities::CONNECT_ATTRS.0
            | Capabilities::PLUGIN_AUTH_LENENC_CLIENT_DATA.0
            | Capabilities::DEPRECATE_EOF.0,
    );

    /// A greeting offering [`Handshake::SERVER_CAPABILITIES`] and
    /// `mysql_native_password`, autocommit on.
    pub fn new(server_version: impl Into<String>, connection_id: u32, scramble: [u8; 20]) -> Self {
        Handshake {
            server_version: server_version.into(),
            connection_id,
            scramble,
            capabilities: Handshake::SERVER_CAPABILITIES,
            charset: UTF8MB4_GENERAL_CI,
            status: StatusFlags::AUTOCOMMIT,
            auth_plugin: NATIVE_PASSWORD.into(),
        }
    }

    /// The packet's payload; fails if the version, scramble or plugin name
    /// holds a NUL (it would end the field early).
    pub fn encode(&self, out: &mut impl BufMut) -> Result<()> {
        no_nul(self.server_version.as_bytes(), "server version")?;
        no_nul(&self.scramble, "scramble")?;
        no_nul(self.auth_plugin.as_bytes(), "auth plugin name")?;
        let caps = self.capabilities.0.to_le_bytes();
        out.put_u8(PROTOCOL_VERSION);
        out.put_nul_bytes(self.server_version.as_bytes());
        out.put_u32_le(self.connection_id);
        out.put_slice(&self.scramble[..8]);
        out.put_u8(0);
        out.put_slice(&caps[..2]);
        out.put_u8(self.charset);
        out.put_u16_le(self.status.0);
        out.put_slice(&caps[2..]);
        // The scramble's length, its NUL included.
        out.put_u8(21);
        out.put_slice(&[0; 10]);
        out.put_nul_bytes(&self.scramble[8..]);
        if self.capabilities.contains(Capabilities::PLUGIN_AUTH) {
            out.put_nul_bytes(self.auth_plugin.as_bytes());
        }
        Ok(())
    }

    /// Reads a greeting; only version 10 with a 20-byte scramble (every
    /// server since MySQL 4.1) is taken.
    pub fn decode(payload: &[u8]) -> Result<Self> {
        let mut r = Reader::new(payload);
        let version = r.u8("protocol version")?;
        if version != PROTOCOL_VERSION {
            // 0xFF: the server refused the connection outright (too many
            // connections, host blocked) with an error packet.
            return Err(ProtoError::invalid(
                "protocol version",
                "10",
                if version == 0xff {
                    "an error packet".to_string()
                } else {
                    version.to_string()
                },
            ));
        }
        let server_version = r.nul_str("server version")?;
        let connection_id = r.u32("connection id")?;
        let mut scramble = [0; 20];
        scramble[..8].copy_from_slice(r.bytes(8, "scramble (first part)")?);
        r.u8("filler")?;
        let low = r.u16("capabilities (low half)")?;
        let charset = r.u8("character set")?;
        let status = StatusFlags(r.u16("status flags")?);
        let high = r.u16("capabilities (high half)")?;
        let capabilities = Capabilities(u32::from(low) | u32::from(high) << 16);
        let len = r.u8("scramble length")?;
        if capabilities.contains(Capabilities::PLUGIN_AUTH) && len != 21 {
            return Err(ProtoError::invalid(
                "scramble length",
                "21 (20 bytes and a NUL)",
                len,
            ));
        }
        r.bytes(10, "reserved bytes")?;
        scramble[8..].copy_from_slice(r.bytes(12, "scramble (second part)")?);
        // The second part's NUL; some servers end the packet instead.
        if r.peek() == Some(0) {
            r.u8("scramble's NUL")?;
        }
        let auth_plugin = if capabilities.contains(Capabilities::PLUGIN_AUTH) && !r.is_empty() {
            // Old servers leave the plugin name's NUL out: it ends the
            // packet anyway.
            let rest = r.rest();
            let name = rest.strip_suffix(&[0]).unwrap_or(rest);
            crate::wire::utf8(name, "auth plugin name")?
        } else {
            NATIVE_PASSWORD.into()
        };
        Ok(Handshake {
            server_version,
            connection_id,
            scramble,
            capabilities,
            charset,
            status,
            auth_plugin,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn greeting() -> Handshake {
        Handshake::new(
            "5.5.5-10.11.19-MariaDB-0+deb12u1",
            7,
            *b"abcdefghijklmnopqrst",
        )
    }

    #[test]
    fn round_trips() {
        let h = greeting();
        let mut b = Vec::new();
        h.encode(&mut b).unwrap();
        assert_eq!(b[0], 10);
        assert_eq!(&b[b.len() - 22..], b"mysql_native_password\0");
        assert_eq!(Handshake::decode(&b).unwrap(), h);
    }

    #[test]
    fn the_layout_is_the_documented_one() {
        let mut b = Vec::new();
        greeting().encode(&mut b).unwrap();
        let v = 1 + "5.5.5-10.11.19-MariaDB-0+deb12u1".len() + 1;
        assert_eq!(&b[v..v + 4], &7u32.to_le_bytes());
        assert_eq!(&b[v + 4..v + 12], b"abcdefgh");
        assert_eq!(b[v + 12], 0);
        let caps = Handshake::SERVER_CAPABILITIES.0.to_le_bytes();
        assert_eq!(&b[v + 13..v + 15], &caps[..2]);
        assert_eq!(b[v + 15], UTF8MB4_GENERAL_CI);
        assert_eq!(&b[v + 18..v + 20], &caps[2..]);
        assert_eq!(b[v + 20], 21);
        assert_eq!(&b[v + 31..v + 44], b"ijklmnopqrst\0");
    }

    #[test]
    fn a_nul_in_a_field_is_refused() {
        let mut h = greeting();
        h.scramble[3] = 0;
        assert!(h.encode(&mut Vec::new()).is_err());
    }

    #[test]
    fn malformed_greetings_are_errors() {
        let e = Handshake::decode(&[9]).unwrap_err();
        assert_eq!(e.to_string(), "bad protocol version: expected 10, found 9");
        let e = Handshake::decode(&[0xff, 0x10, 0x04]).unwrap_err();
        assert!(e.to_string().contains("an error packet"), "{e}");
        let mut b = Vec::new();
        greeting().encode(&mut b).unwrap();
        for cut in [1, 5, 40, 50] {
            assert!(Handshake::decode(&b[..cut]).is_err(), "{cut}");
        }
        let e = Handshake::decode(b"\x0a5.5.5").unwrap_err();
        assert!(e.to_string().contains("server version"), "{e}");
    }
}
