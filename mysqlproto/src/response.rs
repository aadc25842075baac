//! The client's answer to the greeting, Handshake Response 41: the
//! capabilities it picked, its packet size limit and character set, the
//! user, the auth response (the password hashed with the scramble), and,
//! as the capabilities say, the database to start in, the plugin that
//! hashed the password and connection attributes.
//!
//! A client asking for TLS sends, before this, a 32-byte SSLRequest (this
//! packet's first fields only); a server that offered no TLS gets it only
//! from a client that ignored its offer, and [`HandshakeResponse::decode`]
//! says so.

use bytes::BufMut;

use crate::auth::NATIVE_PASSWORD;
use crate::error::{ProtoError, Result};
use crate::flags::Capabilities;
use crate::handshake::UTF8MB4_GENERAL_CI;
use crate::wire::{Reader, Writer, no_nul};

/// Handshake Response 41.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HandshakeResponse {
    /// The capabilities the client uses: both sides then use what both
    /// have.
    pub capabilities: Capabilities,
    /// The longest packet the client takes.
    pub max_packet: u32,
    /// The client's character set and collation.
    pub charset: u8,
    /// The user name.
    pub user: String,
    /// The auth response: for `mysql_native_password`, 20 bytes, or none
    /// for an empty password.
    pub auth_response: Vec<u8>,
    /// The database to start in (with [`Capabilities::CONNECT_WITH_DB`]).
    pub database: Option<String>,
    /// The plugin the auth response is for (with
    /// [`Capabilities::PLUGIN_AUTH`]).
    pub auth_plugin: Option<String>,
    /// Connection attributes, in the order sent (with
    /// [`Capabilities::CONNECT_ATTRS`]).
    pub attributes: Vec<(String, String)>,
}

impl HandshakeResponse {
    /// A response for `user` with `auth_response` (made for
    /// `mysql_native_password`), starting in `database` if given, using
    /// what the client offers of `server`'s capabilities.
    pub fn new(
        server: Capabilities,
        user: impl Into<String>,
        auth_response: Vec<u8>,
        database: Option<String>,
    ) -> Self {
        let mut wanted = Capabilities::PROTOCOL_41
            | Capabilities::TRANSACTIONS
            | Capabilities::SECURE_CONNECTION
            | Capabilities::PLUGIN_AUTH
            | Capabilities::PLUGIN_AUTH_LENENC_CLIENT_DATA
            | Capabilities::DEPRECATE_EOF;
        if database.is_some() {
            wanted |= Capabilities::CONNECT_WITH_DB;
        }
        HandshakeResponse {
            capabilities: wanted & server,
            max_packet: 16 << 20,
            charset: UTF8MB4_GENERAL_CI,
            user: user.into(),
            auth_response,
            database,
            auth_plugin: Some(NATIVE_PASSWORD.into()),
            attributes: Vec::new(),
        }
    }

    /// The packet's payload; the fields its capabilities leave out are
    /// not sent. Fails on a NUL in a NUL-terminated field, an auth
    /// response too long for its length byte, or a field present without
    /// its capability (it could not be read back).
    pub fn encode(&self, out: &mut impl BufMut) -> Result<()> {
        let caps = self.capabilities;
        if !caps.contains(Capabilities::PROTOCOL_41) {
            return Err(ProtoError::invalid(
                "capabilities",
                "PROTOCOL_41 set",
                format_args!("{:#010x}", caps.0),
            ));
        }
        no_nul(self.user.as_bytes(), "user name")?;
        out.put_u32_le(caps.0);
        out.put_u32_le(self.max_packet);
        out.put_u8(self.charset);
        out.put_slice(&[0; 23]);
        out.put_nul_bytes(self.user.as_bytes());
        if caps.contains(Capabilities::PLUGIN_AUTH_LENENC_CLIENT_DATA) {
            out.put_lenenc_bytes(&self.auth_response);
        } else if caps.contains(Capabilities::SECURE_CONNECTION) {
            let len = u8::try_from(self.auth_response.len()).map_err(|_| {
                ProtoError::invalid(
                    "auth response",
                    "at most 255 bytes",
                    self.auth_response.len(),
                )
            })?;
            out.put_u8(len);
            out.put_slice(&self.auth_response);
        } else {
            no_nul(&self.auth_response, "auth response")?;
            out.put_nul_bytes(&self.auth_response);
        }
        match (&self.database, caps.contains(Capabilities::CONNECT_WITH_DB)) {
            (Some(db), true) => {
                no_nul(db.as_bytes(), "database")?;
                out.put_nul_bytes(db.as_bytes());
            }
            (None, false) => {}
            (None, true) => out.put_nul_bytes(b""),
            (Some(_), false) => {
                return Err(ProtoError::invalid(
                    "database",
                    "CONNECT_WITH_DB set to send one",
                    "it unset",
                ));
            }
        }
        if caps.contains(Capabilities::PLUGIN_AUTH) {
            let plugin = self.auth_plugin.as_deref().unwrap_or(NATIVE_PASSWORD);
            no_nul(plugin.as_bytes(), "auth plugin name")?;
            out.put_nul_bytes(plugin.as_bytes());
        }
        if caps.contains(Capabilities::CONNECT_ATTRS) {
            let mut attrs = Vec::new();
            for (k, v) in &self.attributes {
                attrs.put_lenenc_bytes(k.as_bytes());
                attrs.put_lenenc_bytes(v.as_bytes());
            }
            out.put_lenenc_bytes(&attrs);
        } else if !self.attributes.is_empty() {
            return Err(ProtoError::invalid(
                "connection attributes",
                "CONNECT_ATTRS set to send them",
                "it unset",
            ));
        }
        Ok(())
    }

    /// Reads a response. A database or plugin name the client's
    /// capabilities announce but the packet ends before is taken as
    /// absent, as MariaDB takes it.
    pub fn decode(payload: &[u8]) -> Result<Self> {
        let mut r = Reader::new(payload);
        let capabilities = Capabilities(r.u32("client capabilities")?);
        if !capabilities.contains(Capabilities::PROTOCOL_41) {
            return Err(ProtoError::invalid(
                "client capabilities",
                "PROTOCOL_41 (a client of MySQL 4.1 or later)",
                format_args!("{:#010x}", capabilities.0),
            ));
        }
        let max_packet = r.u32("max packet size")?;
        let charset = r.u8("character set")?;
        r.bytes(23, "reserved bytes")?;
        if capabilities.contains(Capabilities::SSL) && r.is_empty() {
            return Err(ProtoError::invalid(
                "handshake response",
                "a response without TLS (none was offered)",
                "an SSLRequest",
            ));
        }
        let user = r.nul_str("user name")?;
        let auth_response =
            if capabilities.contains(Capabilities::PLUGIN_AUTH_LENENC_CLIENT_DATA) {
                r.lenenc_bytes("auth response")?
            } else if capabilities.contains(Capabilities::SECURE_CONNECTION) {
                let len = r.u8("auth response length")?;
                r.bytes(usize::from(len), "auth response")?
            } else {
                r.nul_bytes("auth response")?
            }
            .to_vec();
        let database = if capabilities.contains(Capabilities::CONNECT_WITH_DB) && !r.is_empty() {
            Some(r.nul_str("database")?).filter(|d| !d.is_empty())
        } else {
            None
        };
        let auth_plugin = if capabilities.contains(Capabilities::PLUGIN_AUTH) && !r.is_empty() {
            Some(r.nul_str("auth plugin name")?)
        } else {
            None
        };
        let mut attributes = Vec::new();
        if capabilities.contains(Capabilities::CONNECT_ATTRS) && !r.is_empty() {
            let mut a = Reader::new(r.lenenc_bytes("connection attributes")?);
            while !a.is_empty() {
                let k = a.lenenc_str("connection attribute name")?;
                let v = a.lenenc_str("connection attribute value")?;
                attributes.push((k, v));
            }
        }
        Ok(HandshakeResponse {
            capabilities,
            max_packet,
            charset,
            user,
            auth_response,
            database,
            auth_plugin,
            attributes,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::handshake::Handshake;

    fn response() -> HandshakeResponse {
        let mut r = HandshakeResponse::new(
            Handshake::SERVER_CAPABILITIES,
            "root",
            vec![7; 20],
            Some("test".into()),
        );
        r.capabilities |= Capabilities::CONNECT_ATTRS;
        r.attributes = vec![("_client_name".into(), "libmariadb".into())];
        r
    }

    fn round_trip(r: &HandshakeResponse) {
        let mut b = Vec::new();
        r.encode(&mut b).unwrap();
        assert_eq!(&HandshakeResponse::decode(&b).unwrap(), r);
    }

    #[test]
    fn round_trips_with_every_auth_response_shape() {
        let mut r = response();
        round_trip(&r);
        r.capabilities =
            r.capabilities & Capabilities(!Capabilities::PLUGIN_AUTH_LENENC_CLIENT_DATA.0);
        round_trip(&r);
        r.capabilities = r.capabilities & Capabilities(!Capabilities::SECURE_CONNECTION.0);
        r.auth_response = b"old".to_vec();
        round_trip(&r);
    }

    #[test]
    fn round_trips_without_the_optional_fields() {
        let mut r = HandshakeResponse::new(Handshake::SERVER_CAPABILITIES, "u", Vec::new(), None);
        round_trip(&r);
        r.capabilities = r.capabilities & Capabilities(!Capabilities::PLUGIN_AUTH.0);
        r.auth_plugin = None;
        round_trip(&r);
    }

    #[test]
    fn takes_only_what_the_server_offers() {
        let r = HandshakeResponse::new(Capabilities::PROTOCOL_41, "u", Vec::new(), None);
        assert_eq!(r.capabilities, Capabilities::PROTOCOL_41);
    }

    #[test]
    fn fields_without_their_capability_are_refused() {
        let mut r = response();
        r.capabilities = r.capabilities & Capabilities(!Capabilities::CONNECT_WITH_DB.0);
        assert!(r.encode(&mut Vec::new()).is_err());
        let mut r = response();
        r.capabilities = Capabilities::PROTOCOL_41;
        r.database = None;
        assert!(r.encode(&mut Vec::new()).is_err());
    }

    #[test]
    fn malformed_responses_are_errors() {
        let mut b = Vec::new();
        response().encode(&mut b).unwrap();
        for cut in [0, 3, 20, 33, 36, 40] {
            assert!(HandshakeResponse::decode(&b[..cut]).is_err(), "{cut}");
        }
        // A 4.0 client.
        let e = HandshakeResponse::decode(&[0; 32]).unwrap_err();
        assert!(e.to_string().contains("PROTOCOL_41"), "{e}");
        // An SSLRequest, when no TLS was offered.
        let mut ssl = (Capabilities::PROTOCOL_41 | Capabilities::SSL)
            .0
            .to_le_bytes()
            .to_vec();
        ssl.extend_from_slice(&[0; 28]);
        let e = HandshakeResponse::decode(&ssl).unwrap_err();
        assert!(e.to_string().contains("SSLRequest"), "{e}");
        // Attributes whose length runs past the packet.
        let mut b = Vec::new();
        response().encode(&mut b).unwrap();
        let last = b.len() - 1;
        b.truncate(last);
        assert!(HandshakeResponse::decode(&b).is_err());
    }
}
