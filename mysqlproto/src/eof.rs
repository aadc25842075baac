//! The EOF packet: the end of a result set's column definitions and of
//! its rows, for a client without [`Capabilities::DEPRECATE_EOF`] (with
//! it, no EOF follows the columns and an OK packet ends the rows).
//!
//! Its 0xFE header is also the first byte of a length-encoded integer of
//! 8 bytes, so a row can start with it too; a row that does is at least
//! 2^24 + 9 bytes long, which is how a reader tells them apart
//! ([`is_end_of_rows`]).

use bytes::BufMut;

use crate::error::{ProtoError, Result};
#[cfg(doc)]
use crate::flags::Capabilities;
use crate::flags::StatusFlags;
use crate::ok::END_HEADER;
use crate::wire::Reader;

/// An EOF packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct EofPacket {
    /// Warnings raised.
    pub warnings: u16,
    /// The server's status.
    pub status: StatusFlags,
}

impl EofPacket {
    /// The payload: 0xFE, the warning count, the status.
    pub fn encode(&self, out: &mut impl BufMut) {
        out.put_u8(END_HEADER);
        out.put_u16_le(self.warnings);
        out.put_u16_le(self.status.0);
    }

    /// Reads an EOF packet (exactly five bytes).
    pub fn decode(payload: &[u8]) -> Result<Self> {
        let mut r = Reader::new(payload);
        let header = r.u8("EOF header")?;
        if header != END_HEADER {
            return Err(ProtoError::invalid(
                "EOF header",
                "0xfe",
                format_args!("{header:#04x}"),
            ));
        }
        let warnings = r.u16("warning count")?;
        let status = StatusFlags(r.u16("status flags")?);
        r.finish("EOF packet")?;
        Ok(EofPacket { warnings, status })
    }
}

/// Whether `payload`, read where a row or the end of the rows may be,
/// ends them: an EOF packet, or (under [`Capabilities::DEPRECATE_EOF`])
/// an OK packet with the 0xFE header; the rule is the same for both.
pub fn is_end_of_rows(payload: &[u8]) -> bool {
    payload.first() == Some(&END_HEADER) && payload.len() < 0xff_ffff
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips() {
        let eof = EofPacket {
            warnings: 2,
            status: StatusFlags::AUTOCOMMIT,
        };
        let mut b = Vec::new();
        eof.encode(&mut b);
        assert_eq!(b, [0xfe, 2, 0, 2, 0]);
        assert_eq!(EofPacket::decode(&b).unwrap(), eof);
    }

    #[test]
    fn malformed_eofs_are_errors() {
        assert!(EofPacket::decode(&[0xfe, 0, 0]).is_err());
        assert!(EofPacket::decode(&[0x00, 0, 0, 0, 0]).is_err());
        let e = EofPacket::decode(&[0xfe, 0, 0, 0, 0, 9]).unwrap_err();
        assert!(e.to_string().contains("after EOF packet"), "{e}");
    }

    #[test]
    fn rows_and_ends_are_told_apart() {
        assert!(is_end_of_rows(&[0xfe, 0, 0, 2, 0]));
        assert!(!is_end_of_rows(&[1, b'1']));
        assert!(!is_end_of_rows(&[0xfb]));
        assert!(!is_end_of_rows(&[]));
    }
}
