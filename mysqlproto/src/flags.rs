//! The two flag sets of the protocol: capabilities, which the server
//! offers in its greeting and the client picks from in its response (the
//! pair's common set decides the shape of every later packet), and the
//! server's status, which OK and EOF packets carry.

use std::ops::{BitAnd, BitOr, BitOrAssign};

/// Capability flags (`CLIENT_*`), 32 bits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Capabilities(pub u32);

impl Capabilities {
    /// `CLIENT_LONG_PASSWORD` in MySQL; MariaDB servers leave it unset to
    /// say that MariaDB's extended capabilities follow.
    pub const LONG_PASSWORD: Capabilities = Capabilities(1);
    /// The client names a database to start in.
    pub const CONNECT_WITH_DB: Capabilities = Capabilities(1 << 3);
    /// The client wants TLS: it sends a short SSLRequest first.
    pub const SSL: Capabilities = Capabilities(1 << 11);
    /// The 4.1 protocol: SQLSTATE in errors, status and warnings in OK
    /// and EOF packets, column definitions of the 4.1 shape.
    pub const PROTOCOL_41: Capabilities = Capabilities(1 << 9);
    /// The client knows transactions: status flags in OK packets.
    pub const TRANSACTIONS: Capabilities = Capabilities(1 << 13);
    /// The auth response is length-prefixed (1 byte), not NUL-terminated.
    pub const SECURE_CONNECTION: Capabilities = Capabilities(1 << 15);
    /// The client may send several statements in one COM_QUERY.
    pub const MULTI_STATEMENTS: Capabilities = Capabilities(1 << 16);
    /// The client can take several result sets for one command.
    pub const MULTI_RESULTS: Capabilities = Capabilities(1 << 17);
    /// Authentication plugins are named in the greeting and the response.
    pub const PLUGIN_AUTH: Capabilities = Capabilities(1 << 19);
    /// The response carries connection attributes (program name, pid...).
    pub const CONNECT_ATTRS: Capabilities = Capabilities(1 << 20);
    /// The auth response is a length-encoded string (may be longer than
    /// 250 bytes).
    pub const PLUGIN_AUTH_LENENC_CLIENT_DATA: Capabilities = Capabilities(1 << 21);
    /// OK packets carry session state changes.
    pub const SESSION_TRACK: Capabilities = Capabilities(1 << 23);
    /// No EOF packet after a result set's column definitions, and an OK
    /// packet with an 0xFE header in place of the EOF after its rows.
    pub const DEPRECATE_EOF: Capabilities = Capabilities(1 << 24);

    /// No flag.
    pub const fn empty() -> Self {
        Capabilities(0)
    }

    /// Whether every flag of `other` is set.
    pub const fn contains(self, other: Capabilities) -> bool {
        self.0 & other.0 == other.0
    }
}

impl BitOr for Capabilities {
    type Output = Capabilities;
    fn bitor(self, rhs: Self) -> Self {
        Capabilities(self.0 | rhs.0)
    }
}

impl BitOrAssign for Capabilities {
    fn bitor_assign(&mut self, rhs: Self) {
        self.0 |= rhs.0;
    }
}

impl BitAnd for Capabilities {
    type Output = Capabilities;
    fn bitand(self, rhs: Self) -> Self {
        Capabilities(self.0 & rhs.0)
    }
}

/// Server status flags (`SERVER_STATUS_*`), 16 bits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct StatusFlags(pub u16);

impl StatusFlags {
    /// A transaction is open.
    pub const IN_TRANS: StatusFlags = StatusFlags(1);
    /// Autocommit is on.
    pub const AUTOCOMMIT: StatusFlags = StatusFlags(1 << 1);
    /// Another result set follows this one.
    pub const MORE_RESULTS_EXISTS: StatusFlags = StatusFlags(1 << 3);

    /// No flag.
    pub const fn empty() -> Self {
        StatusFlags(0)
    }

    /// Whether every flag of `other` is set.
    pub const fn contains(self, other: StatusFlags) -> bool {
        self.0 & other.0 == other.0
    }
}

impl BitOr for StatusFlags {
    type Output = StatusFlags;
    fn bitor(self, rhs: Self) -> Self {
        StatusFlags(self.0 | rhs.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_combine_and_test() {
        let c = Capabilities::PROTOCOL_41 | Capabilities::PLUGIN_AUTH;
        assert!(c.contains(Capabilities::PROTOCOL_41));
        assert!(!c.contains(Capabilities::DEPRECATE_EOF));
        assert_eq!((c & Capabilities::PLUGIN_AUTH), Capabilities::PLUGIN_AUTH);
        assert_eq!(Capabilities::PROTOCOL_41.0, 0x200);
        assert_eq!(Capabilities::DEPRECATE_EOF.0, 0x0100_0000);
        let s = StatusFlags::AUTOCOMMIT | StatusFlags::IN_TRANS;
        assert!(s.contains(StatusFlags::IN_TRANS));
        assert_eq!(s.0, 3);
    }
}
