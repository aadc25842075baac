//! The OK packet: a command succeeded (rows affected, the last insert id,
//! the server's status, the warning count, an info text). Under
//! [`Capabilities::DEPRECATE_EOF`] it also ends a result set's rows, with
//! 0xFE in place of its 0x00 header.

use bytes::BufMut;

use crate::error::{ProtoError, Result};
use crate::flags::{Capabilities, StatusFlags};
use crate::wire::{Reader, Writer};

/// An OK packet.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct OkPacket {
    /// Rows the statement changed (or inserted, or deleted).
    pub affected_rows: u64,
    /// The AUTO_INCREMENT value the statement made, or 0.
    pub last_insert_id: u64,
    /// The server's status after the statement.
    pub status: StatusFlags,
    /// Warnings the statement raised.
    pub warnings: u16,
    /// Human-readable detail (`Rows matched: 1  Changed: 1 ...`).
    pub info: String,
}

/// The header of an OK packet answering a command.
pub const OK_HEADER: u8 = 0x00;
/// The header of an OK packet that ends a result set's rows (and of an
/// EOF packet).
pub const END_HEADER: u8 = 0xfe;

impl OkPacket {
    /// The payload, with `header` ([`OK_HEADER`], or [`END_HEADER`] after
    /// rows), as the 4.1 protocol lays it out. Session state tracking is
    /// not offered, so the info runs to the end of the packet.
    pub fn encode(&self, header: u8, out: &mut impl BufMut) {
        out.put_u8(header);
        out.put_lenenc_int(self.affected_rows);
        out.put_lenenc_int(self.last_insert_id);
        out.put_u16_le(self.status.0);
        out.put_u16_le(self.warnings);
        out.put_slice(self.info.as_bytes());
    }

    /// Reads an OK packet with either header, sent to a peer with
    /// `capabilities` (which decide how the info is laid out).
    pub fn decode(payload: &[u8], capabilities: Capabilities) -> Result<Self> {
        let mut r = Reader::new(payload);
        let header = r.u8("OK header")?;
        if header != OK_HEADER && header != END_HEADER {
            return Err(ProtoError::invalid(
                "OK header",
                "0x00 or 0xfe",
                format_args!("{header:#04x}"),
            ));
        }
        let affected_rows = r.lenenc_int("affected rows")?;
        let last_insert_id = r.lenenc_int("last insert id")?;
        let status = StatusFlags(r.u16("status flags")?);
        let warnings = r.u16("warning count")?;
        let info = if capabilities.contains(Capabilities::SESSION_TRACK) {
            // Then the info is length-encoded, and session state changes
            // (which this crate does not read) may follow.
            if r.is_empty() {
                String::new()
            } else {
                String::from_utf8_lossy(r.lenenc_bytes("info")?).into_owned()
            }
        } else {
            // The info is for people; a byte that is not UTF-8 is no
            // reason to fail the statement.
            String::from_utf8_lossy(r.rest()).into_owned()
        };
        Ok(OkPacket {
            affected_rows,
            last_insert_id,
            status,
            warnings,
            info,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_with_both_headers() {
        let ok = OkPacket {
            affected_rows: 300,
            last_insert_id: 5,
            status: StatusFlags::AUTOCOMMIT | StatusFlags::IN_TRANS,
            warnings: 1,
            info: "Rows matched: 1  Changed: 1  Warnings: 0".into(),
        };
        for header in [OK_HEADER, END_HEADER] {
            let mut b = Vec::new();
            ok.encode(header, &mut b);
            assert_eq!(b[0], header);
            assert_eq!(OkPacket::decode(&b, Capabilities::PROTOCOL_41).unwrap(), ok);
        }
    }

    #[test]
    fn the_plain_ok_is_seven_bytes() {
        let mut b = Vec::new();
        OkPacket {
            status: StatusFlags::AUTOCOMMIT,
            ..OkPacket::default()
        }
        .encode(OK_HEADER, &mut b);
        assert_eq!(b, [0, 0, 0, 2, 0, 0, 0]);
    }

    #[test]
    fn session_tracking_reads_a_length_encoded_info() {
        let b = [0, 1, 0, 2, 0, 0, 0, 2, b'h', b'i'];
        let caps = Capabilities::PROTOCOL_41 | Capabilities::SESSION_TRACK;
        assert_eq!(OkPacket::decode(&b, caps).unwrap().info, "hi");
    }

    #[test]
    fn malformed_oks_are_errors() {
        let e = OkPacket::decode(&[0xff, 0], Capabilities::PROTOCOL_41).unwrap_err();
        assert!(e.to_string().contains("OK header"), "{e}");
        for cut in [0, 1, 2, 4, 6] {
            let b = [0, 0, 0, 2, 0, 0, 0];
            assert!(OkPacket::decode(&b[..cut], Capabilities::PROTOCOL_41).is_err());
        }
    }
}
