//! Packets on the stream: each a 3-byte little-endian payload length, a
//! 1-byte sequence id, then the payload. A payload of 16 MiB − 1 bytes or
//! more goes out in pieces of exactly 0xFF_FFFF bytes, the last piece
//! shorter (empty if need be); a reader puts them back together.
//!
//! Sequence ids count up (wrapping at 255) across one exchange, both
//! sides' packets together, and start at 0 again with each command the
//! client sends. [`PacketCodec`] keeps that count: it checks each incoming
//! id and stamps each outgoing one, and [`PacketCodec::reset`] starts a
//! new exchange. A wrong id is an error, as it is to MariaDB ("Got packets
//! out of order"): the peer has lost count, so nothing after it can be
//! trusted.

use bytes::{Buf, BufMut, Bytes, BytesMut};
use tokio_util::codec::{Decoder, Encoder};

use crate::error::ProtoError;

/// The largest piece: a longer payload continues in the next packet.
pub const MAX_PIECE: usize = 0xff_ffff;

/// The longest payload a codec takes by default: MariaDB 10.11's own
/// `max_allowed_packet` default, 16 MiB.
pub const DEFAULT_MAX_PAYLOAD: usize = 16 << 20;

/// Frames payloads as packets, and keeps the exchange's sequence ids.
#[derive(Debug, Clone)]
pub struct PacketCodec {
    /// The id the next packet, either way, carries.
    seq: u8,
    max_payload: usize,
}

impl Default for PacketCodec {
    fn default() -> Self {
        PacketCodec::new(DEFAULT_MAX_PAYLOAD)
    }
}

impl PacketCodec {
    /// A codec at the start of an exchange, taking payloads of at most
    /// `max_payload` bytes (longer ones are [`ProtoError::TooLarge`]).
    pub fn new(max_payload: usize) -> Self {
        PacketCodec {
            seq: 0,
            max_payload,
        }
    }

    /// Starts a new exchange: the next packet carries id 0. A server
    /// calls it before reading each command; a client before sending one.
    pub fn reset(&mut self) {
        self.seq = 0;
    }

    /// The id the next packet carries.
    pub fn seq(&self) -> u8 {
        self.seq
    }

    /// Sets the id the next packet carries: for a server that reads a
    /// client's first packet without checking it (the handshake response
    /// follows the server's greeting, so it carries 1).
    pub fn set_seq(&mut self, seq: u8) {
        self.seq = seq;
    }
}

impl Decoder for PacketCodec {
    type Item = Bytes;
    type Error = ProtoError;

    /// One whole payload, once all its pieces are in `src`.
    fn decode(&mut self, src: &mut BytesMut) -> Result<Option<Bytes>, ProtoError> {
        // First check that every piece is there, and their ids, without
        // consuming anything: a partial payload waits for more bytes.
        let mut at = 0;
        let mut total = 0usize;
        let mut seq = self.seq;
        loop {
            let Some(head) = src.get(at..at + 4) else {
                return Ok(None);
            };
            let len = usize::from(head[0]) | usize::from(head[1]) << 8 | usize::from(head[2]) << 16;
            if head[3] != seq {
                return Err(ProtoError::OutOfOrder {
                    expected: seq,
                    got: head[3],
                });
            }
            total += len;
            if total > self.max_payload {
                return Err(ProtoError::TooLarge {
                    len: total,
                    max: self.max_payload,
                });
            }
            seq = seq.wrapping_add(1);
            if src.len() < at + 4 + len {
                // Room for the rest, so it comes in one read.
                src.reserve(at + 4 + len - src.len());
                return Ok(None);
            }
            at += 4 + len;
            if len < MAX_PIECE {
                break;
            }
        }
        self.seq = seq;
        let mut frames = src.split_to(at);
        if at == 4 + total {
            // One piece: the payload without copying.
            frames.advance(4);
            return Ok(Some(frames.freeze()));
        }
        let mut payload = BytesMut::with_capacity(total);
        while !frames.is_empty() {
            let len =
                usize::from(frames[0]) | usize::from(frames[1]) << 8 | usize::from(frames[2]) << 16;
            frames.advance(4);
            payload.put_slice(&frames[..len]);
            frames.advance(len);
        }
        Ok(Some(payload.freeze()))
    }
}

/// Payloads go in as the `Vec<u8>` every encoder here writes to; one type
/// only, so that `Framed`'s `flush` and `close` need no annotation.
impl Encoder<Vec<u8>> for PacketCodec {
    type Error = ProtoError;

    /// `payload` as one packet, or as pieces if it is 16 MiB − 1 bytes or
    /// longer.
    fn encode(&mut self, payload: Vec<u8>, dst: &mut BytesMut) -> Result<(), ProtoError> {
        let mut payload = &payload[..];
        if payload.len() > self.max_payload {
            // The peer would refuse it; better said here.
            return Err(ProtoError::TooLarge {
                len: payload.len(),
                max: self.max_payload,
            });
        }
        dst.reserve(payload.len() + 4 * (payload.len() / MAX_PIECE + 1));
        loop {
            let piece = payload.len().min(MAX_PIECE);
            dst.put_uint_le(piece as u64, 3);
            dst.put_u8(self.seq);
            self.seq = self.seq.wrapping_add(1);
            dst.put_slice(&payload[..piece]);
            payload = &payload[piece..];
            // A piece of exactly MAX_PIECE bytes says "more follows", so
            // a payload that ends on one needs an empty last piece.
            if piece < MAX_PIECE {
                return Ok(());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn encode(codec: &mut PacketCodec, payload: &[u8]) -> BytesMut {
        let mut dst = BytesMut::new();
        codec.encode(payload.to_vec(), &mut dst).unwrap();
        dst
    }

    #[test]
    fn a_small_payload_is_one_packet_and_reads_back() {
        let mut tx = PacketCodec::default();
        let mut wire = encode(&mut tx, b"\x03SELECT 1");
        assert_eq!(&wire[..4], &[9, 0, 0, 0]);
        wire.extend_from_slice(&encode(&mut tx, b"")[..]);
        let mut rx = PacketCodec::default();
        assert_eq!(&rx.decode(&mut wire).unwrap().unwrap()[..], b"\x03SELECT 1");
        assert_eq!(&rx.decode(&mut wire).unwrap().unwrap()[..], b"");
        assert_eq!(rx.seq(), 2);
        assert!(rx.decode(&mut wire).unwrap().is_none());
    }

    #[test]
    fn a_partial_packet_waits_for_the_rest() {
        let mut tx = PacketCodec::default();
        let wire = encode(&mut tx, b"hello");
        let mut rx = PacketCodec::default();
        let mut buf = BytesMut::from(&wire[..6]);
        assert!(rx.decode(&mut buf).unwrap().is_none());
        buf.extend_from_slice(&wire[6..]);
        assert_eq!(&rx.decode(&mut buf).unwrap().unwrap()[..], b"hello");
    }

    #[test]
    fn long_payloads_go_in_pieces_and_come_back_whole() {
        for len in [MAX_PIECE - 1, MAX_PIECE, MAX_PIECE + 10, 2 * MAX_PIECE] {
            let payload: Vec<u8> = (0..len).map(|i| i as u8).collect();
            let mut tx = PacketCodec::new(32 << 20);
            let mut wire = encode(&mut tx, &payload);
            let pieces = len / MAX_PIECE + 1;
            assert_eq!(wire.len(), len + 4 * pieces, "{len}");
            assert_eq!(usize::from(tx.seq()), pieces);
            let mut rx = PacketCodec::new(32 << 20);
            let got = rx.decode(&mut wire).unwrap().unwrap();
            assert!(got[..] == payload[..], "{len}");
            assert!(wire.is_empty());
            assert_eq!(rx.seq(), tx.seq());
        }
    }

    #[test]
    fn a_payload_over_the_limit_is_refused_both_ways() {
        let mut tx = PacketCodec::new(10);
        let mut dst = BytesMut::new();
        let e = tx.encode(vec![0u8; 11], &mut dst).unwrap_err();
        assert!(matches!(e, ProtoError::TooLarge { len: 11, max: 10 }));
        // Refused from the header alone, before the bytes arrive.
        let mut rx = PacketCodec::new(10);
        let mut wire = BytesMut::from(&[11u8, 0, 0, 0][..]);
        let e = rx.decode(&mut wire).unwrap_err();
        assert_eq!(e.to_string(), "packet of 11 bytes is over the limit of 10");
    }

    #[test]
    fn a_wrong_sequence_id_is_an_error() {
        let mut rx = PacketCodec::default();
        let mut wire = BytesMut::from(&[1u8, 0, 0, 5, 1][..]);
        let e = rx.decode(&mut wire).unwrap_err();
        assert_eq!(
            e.to_string(),
            "packet out of order: sequence id 5, expected 0"
        );
        rx.set_seq(5);
        assert_eq!(&rx.decode(&mut wire).unwrap().unwrap()[..], &[1]);
        rx.reset();
        assert_eq!(rx.seq(), 0);
    }

    #[test]
    fn sequence_ids_wrap() {
        let mut tx = PacketCodec::default();
        tx.set_seq(255);
        let wire = encode(&mut tx, b"x");
        assert_eq!(wire[3], 255);
        assert_eq!(tx.seq(), 0);
    }
}
